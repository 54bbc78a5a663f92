// attn/analysis/key_pattern.hpp: each head pattern's keys against its definition written as
// plain loops, TransformerLens's duplicate and induction matrices built its way, and errors.
#include <doctest/doctest.h>
#include <attn/analysis/key_pattern.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using attn::Index;
using attn::KeyPattern;

namespace {
/// Ids with repeats, including a token repeated right after itself (positions 3 and 4).
const std::vector<int> repeating_ids = {0, 7, 8, 9, 9, 7, 8, 9, 5, 7, 7, 7};

/// The keys j ≤ i for which `counts(i, j)` holds, by brute force.
template <class F>
std::vector<Index> keys_where(Index i, F counts) {
    std::vector<Index> out;
    for (Index j = 0; j <= i; ++j)
        if (counts(i, j)) out.push_back(j);
    return out;
}

/// TransformerLens's patterns as it builds them: the duplicate matrix is (ids[i] == ids[j])
/// strictly below the diagonal; the induction matrix is it shifted one column right, then
/// kept on and below the diagonal.
std::vector<std::vector<int>> transformer_lens_pattern(const std::vector<int>& ids, bool induction) {
    const std::size_t n = ids.size();
    std::vector<std::vector<int>> duplicate(n, std::vector<int>(n, 0)), shifted(n, std::vector<int>(n, 0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j) duplicate[i][j] = ids[i] == ids[j];
    if (!induction) return duplicate;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 1; j <= i; ++j) shifted[i][j] = duplicate[i][j - 1];
    return shifted;
}
}  // namespace

TEST_CASE("KeyPattern (head patterns): previous, current, first, positions and k back against their definitions") {
    const Index n = 12;
    for (Index i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(KeyPattern::previous_token().keys(i) == keys_where(i, [](Index q, Index k) { return k + 1 == q; }));
        CHECK(KeyPattern::current_token().keys(i) == keys_where(i, [](Index q, Index k) { return k == q; }));
        CHECK(KeyPattern::first_token().keys(i) == std::vector<Index>{0});
        // markers given unsorted and repeated; only the visible ones count
        CHECK(KeyPattern::positions({9, 0, 4, 9}).keys(i) ==
              keys_where(i, [](Index, Index k) { return k == 0 || k == 4 || k == 9; }));
        CHECK(KeyPattern::at_least_back(3, {4, 0}).keys(i) ==
              keys_where(i, [](Index q, Index k) { return q - k >= 3 && k != 0 && k != 4; }));
        CHECK(KeyPattern::at_least_back(1).keys(i) == keys_where(i, [](Index q, Index k) { return k < q; }));
    }
    CHECK(KeyPattern::previous_token().keys(0).empty());
    CHECK(KeyPattern::positions({9, 0, 4, 9}).listed() == std::vector<Index>{0, 4, 9});
    CHECK(KeyPattern::at_least_back(3, {4, 0}).distance() == 3);
}

TEST_CASE("KeyPattern (head patterns): duplicate_token and induction keys are TransformerLens's detection patterns") {
    std::mt19937 random(7);
    std::uniform_int_distribution<int> token(0, 3);  // few distinct tokens: many repeats, some back to back
    std::vector<std::vector<int>> texts = {repeating_ids};
    for (int t = 0; t < 5; ++t) {
        std::vector<int> ids(20);
        for (int& id : ids) id = token(random);
        texts.push_back(ids);
    }
    for (const std::vector<int>& ids : texts) {
        const KeyPattern duplicate = KeyPattern::duplicate_token(ids), induction = KeyPattern::induction(ids);
        const auto d = transformer_lens_pattern(ids, false), s = transformer_lens_pattern(ids, true);
        for (Index i = 0; i < Index(ids.size()); ++i) {
            CAPTURE(i);
            CHECK(duplicate.keys(i) ==
                  keys_where(i, [&](Index q, Index k) { return d[std::size_t(q)][std::size_t(k)]; }));
            CHECK(induction.keys(i) ==
                  keys_where(i, [&](Index q, Index k) { return s[std::size_t(q)][std::size_t(k)]; }));
            for (Index j = 0; j < Index(ids.size()); ++j) {
                CHECK(duplicate.selects(i, j) == (j <= i && d[std::size_t(i)][std::size_t(j)] == 1));
                CHECK(induction.selects(i, j) == (j <= i && s[std::size_t(i)][std::size_t(j)] == 1));
            }
        }
    }
    // <s> A B C C A: the second A's earlier copy is at 1, so induction's key is 2 (B); the second C
    // follows the first C directly, so the token after that copy is the query itself
    const std::vector<int> ids = {0, 5, 6, 7, 7, 5};
    CHECK(KeyPattern::duplicate_token(ids).keys(5) == std::vector<Index>{1});
    CHECK(KeyPattern::induction(ids).keys(5) == std::vector<Index>{2});
    CHECK(KeyPattern::duplicate_token(ids).keys(4) == std::vector<Index>{3});
    CHECK(KeyPattern::induction(ids).keys(4) == std::vector<Index>{4});
    CHECK(KeyPattern::induction(ids).keys(3).empty());
    CHECK(KeyPattern::induction(ids).ids() == ids);
}

TEST_CASE("KeyPattern (head patterns): describe() writes the pattern as code") {
    CHECK(KeyPattern::previous_token().describe() == "KeyPattern::previous_token()");
    CHECK(KeyPattern::current_token().describe() == "KeyPattern::current_token()");
    CHECK(KeyPattern::first_token().describe() == "KeyPattern::first_token()");
    CHECK(KeyPattern::positions({9, 0}).describe() == "KeyPattern::positions({0, 9})");
    CHECK(KeyPattern::at_least_back(4).describe() == "KeyPattern::at_least_back(4, {})");
    CHECK(KeyPattern::at_least_back(4, {9, 0}).describe() == "KeyPattern::at_least_back(4, {0, 9})");
    CHECK(KeyPattern::duplicate_token({1, 2, 3}).describe() == "KeyPattern::duplicate_token(3 ids)");
    CHECK(KeyPattern::induction({1, 2}).describe() == "KeyPattern::induction(2 ids)");
    CHECK(KeyPattern::induction({1, 2}).kind() == KeyPattern::Kind::induction);
}

TEST_CASE("KeyPattern (head patterns): bad parameters and queries are refused by name") {
    CHECK_THROWS_WITH_AS(KeyPattern::at_least_back(0), doctest::Contains("distance must be positive, got 0"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(KeyPattern::positions({0, -2}), doctest::Contains("marker -2 is negative"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(KeyPattern::current_token().keys(-1), doctest::Contains("KeyPattern::keys: query -1"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(KeyPattern::induction({4, 5, 4}).keys(3),
                         doctest::Contains("query 3 is past the 3 ids of KeyPattern::induction(3 ids)"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(KeyPattern::duplicate_token({4, 5}).selects(2, 0),
                         doctest::Contains("KeyPattern::selects: query 2 is past the 2 ids"), attn::argument_error);
    CHECK_FALSE(KeyPattern::current_token().selects(2, 3));  // keys after the query never count
    CHECK_FALSE(KeyPattern::positions({0}).selects(2, -1));
}
