#include <doctest/doctest.h>
#include <attn/analysis/head_scores.hpp>
#include <attn/core/attention.hpp>

#include <string>
#include <utility>
#include <vector>

#include "support.hpp"

using attn::Index;

namespace {
// One layer, heads built by hand: each row i of a head is a distribution over 0 … i.
attn::ModelAttention<double> hand_made(Index n) {
    attn::AttentionWeights<double> layer(3, n, n);
    for (Index i = 0; i < n; ++i) {
        layer.head(0)(i, i > 0 ? i - 1 : 0) = 1.0;                                 // a pure previous-token head
        for (Index j = 0; j <= i; ++j) layer.head(1)(i, j) = 1.0 / double(i + 1);  // an even spread
        layer.head(2)(i, i) = 1.0;                                                 // a pure current-token head
    }
    return attn::ModelAttention<double>({layer});
}
}  // namespace

TEST_CASE("previous-token score: a pure previous-token head scores 1, an even spread its baseline") {
    const auto attention = hand_made(6);
    const auto scores = attn::score_heads(attention, attn::query_range(1, 6), attn::KeyPattern::previous_token());
    CHECK(scores.queries == 5);
    CHECK(scores.average()(0, 0) == doctest::Approx(1.0));
    CHECK(scores.average()(0, 1) == doctest::Approx(scores.even_average()));
    CHECK(scores.average()(0, 2) == doctest::Approx(0.0));
    // the chapter's baseline: mean of 1 / (i + 1) for i = 1 … n − 1
    CHECK(scores.even_average() == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5));
}

TEST_CASE("current-token and marker scores against their baselines") {
    const auto attention = hand_made(5);
    const auto current = attn::score_heads(attention, attn::query_range(0, 5), attn::KeyPattern::current_token());
    CHECK(current.average()(0, 2) == doctest::Approx(1.0));
    CHECK(current.average()(0, 1) == doctest::Approx(current.even_average()));
    const auto markers = attn::score_heads(attention, attn::query_range(2, 5), attn::KeyPattern::positions({0, 2}));
    CHECK(markers.even == doctest::Approx(2.0 / 3 + 2.0 / 4 + 2.0 / 5));
    CHECK(markers.weight(0, 1) == doctest::Approx(markers.even));
    CHECK(markers.weight(0, 0) == doctest::Approx(1.0));  // queries 2, 3, 4 look at 1, 2, 3: marker 2 once
}

TEST_CASE("k-or-more-back score excludes markers and matches the even spread on an even head") {
    const auto attention = hand_made(8);
    const attn::KeyPattern far = attn::KeyPattern::at_least_back(4, {0});
    CHECK(far.keys(7) == std::vector<Index>{1, 2, 3});
    CHECK(far.keys(3).empty());
    const auto scores = attn::score_heads(attention, attn::query_range(0, 8), far);
    CHECK(scores.weight(0, 0) == doctest::Approx(0.0));  // the previous token is never 4 back
    CHECK(scores.weight(0, 1) == doctest::Approx(scores.even));
    CHECK(scores.even == doctest::Approx(1.0 / 6 + 2.0 / 7 + 3.0 / 8));
}

TEST_CASE("induction score detects attention to the token after an earlier occurrence") {
    // tokens: A B C A B C — an induction head at the second A looks at the first B.
    const std::vector<int> ids = {10, 11, 12, 10, 11, 12};
    attn::AttentionWeights<double> layer(2, 6, 6);
    for (Index i = 0; i < 6; ++i) {
        layer.head(0)(i, i >= 3 ? i - 2 : i) = 1.0;  // induction: position i − 3 + 1
        layer.head(1)(i, i) = 1.0;
    }
    const attn::ModelAttention<double> attention({layer});
    const attn::KeyPattern induction = attn::KeyPattern::induction(ids);
    CHECK(induction.keys(3) == std::vector<Index>{1});
    CHECK(induction.keys(2).empty());
    CHECK_THROWS_WITH_AS(
        attn::score_heads(attention, {3}, attn::KeyPattern::induction({10, 11, 12, 10})),
        doctest::Contains("score_heads: KeyPattern::induction(4 ids) has 4 ids, but the attention has 6"),
        attn::shape_error);
    const auto scores = attn::score_heads(attention, attn::query_range(3, 6), induction);
    CHECK(scores.average()(0, 0) == doctest::Approx(1.0));
    CHECK(scores.average()(0, 1) == doctest::Approx(0.0));
}

TEST_CASE("HeadAverage: per-text and per-query weighting, without keeping attention") {
    const auto short_text = hand_made(3), long_text = hand_made(9);
    attn::HeadAverage per_text(attn::HeadAverage::Weighting::per_text);
    attn::HeadAverage per_query(attn::HeadAverage::Weighting::per_query);
    for (const auto* attention : {&short_text, &long_text}) {
        const auto scores = attn::score_heads(*attention, attn::query_range(1, attention->positions()),
                                              attn::KeyPattern::previous_token());
        per_text.add(scores);
        per_query.add(scores);
    }
    CHECK(per_text.texts() == 2);
    CHECK(per_query.queries() == 2 + 8);
    CHECK(per_text.mean()(0, 0) == doctest::Approx(1.0));
    const double even_short = (1.0 / 2 + 1.0 / 3) / 2;
    double even_long = 0;
    for (int i = 1; i < 9; ++i) even_long += 1.0 / (i + 1);
    CHECK(per_text.even() == doctest::Approx((even_short + even_long / 8) / 2));
    CHECK(per_query.even() == doctest::Approx((even_short * 2 + even_long) / 10));
    CHECK(attn::strongest_head(per_text.mean()).head == 0);
    attn::HeadAverage empty(attn::HeadAverage::Weighting::per_text);
    CHECK_THROWS_AS(empty.mean(), attn::argument_error);
    CHECK_THROWS_AS(attn::score_heads(attn::ModelAttention<double>(), {0}, attn::KeyPattern::current_token()),
                    attn::argument_error);
    CHECK_THROWS_AS(attn::score_heads(short_text, {3}, attn::KeyPattern::current_token()), attn::argument_error);
}

namespace {
/// Random attention of two layers of three heads over 70 positions, its weights and the kernel's
/// statistics for `request`.
template <class T>
std::pair<attn::ModelAttention<T>, std::vector<attn::HeadStatistics<T>>> random_attention_and_statistics(
    const attn::HeadStatisticsRequest& request) {
    std::vector<attn::HeadStatistics<T>> statistics;
    std::vector<attn::AttentionWeights<T>> layers;
    for (unsigned layer = 0; layer < 2; ++layer) {
        attn::HeadStack<T> q(3, 70, 32), k(3, 70, 32), v(3, 70, 32);
        for (Index h = 0; h < 3; ++h) {
            q.head(h) = attn::Matrix<T>::Random(70, 32);
            k.head(h) = attn::Matrix<T>::Random(70, 32);
            v.head(h) = attn::Matrix<T>::Random(70, 32);
        }
        attn::AttentionOptions<T> options;
        options.keep_weights = true;
        options.statistics = &request;
        auto result = attn::attend_heads(q, k, v, options);
        statistics.push_back(std::move(result.statistics));
        layers.push_back(std::move(result.weights));
    }
    return {attn::ModelAttention<T>(layers), std::move(statistics)};
}

}  // namespace

TEST_CASE_TEMPLATE("score_heads, the fast route: each pattern the statistics hold equals plain sums of the weights", T,
                   float, double) {
    attn::HeadStatisticsRequest request;
    request.back = 4;
    request.markers = {9, 0};  // unsorted: the statistics keep them sorted
    request.back_excludes_markers = true;
    const auto [attention, statistics] = random_attention_and_statistics<T>(request);
    const std::vector<Index> queries = attn::query_range(10, 70);
    // each pattern with its definition, written as a test on (query i, key j)
    struct Case {
        attn::KeyPattern pattern;
        bool (*counts)(Index i, Index j);
    };
    const std::vector<Case> cases = {
        {attn::KeyPattern::previous_token(), [](Index i, Index j) { return j == i - 1; }},
        {attn::KeyPattern::current_token(), [](Index i, Index j) { return j == i; }},
        {attn::KeyPattern::first_token(), [](Index, Index j) { return j == 0; }},
        {attn::KeyPattern::positions({0, 9}), [](Index, Index j) { return j == 0 || j == 9; }},
        {attn::KeyPattern::at_least_back(4, {9, 0}), [](Index i, Index j) { return i - j >= 4 && j != 0 && j != 9; }}};
    for (const Case& c : cases) {
        CAPTURE(c.pattern.describe());
        const attn::ScoreResult fast = attn::score_heads(statistics, queries, c.pattern);
        const attn::ScoreResult full = attn::score_heads(attention, queries, c.pattern);
        double even = 0;
        attn::HeadTable weight = attn::HeadTable::Zero(2, 3);
        for (Index i : queries)
            for (Index j = 0; j <= i; ++j)
                if (c.counts(i, j)) {
                    even += 1.0 / double(i + 1);
                    for (Index l = 0; l < 2; ++l)
                        for (Index h = 0; h < 3; ++h) weight(l, h) += double(attention(l, h, i, j));
                }
        for (const attn::ScoreResult* scores : {&fast, &full}) {
            CHECK(scores->queries == Index(queries.size()));
            CHECK(scores->even == doctest::Approx(even));
            REQUIRE(scores->weight.rows() == 2);
            REQUIRE(scores->weight.cols() == 3);
            for (Index l = 0; l < 2; ++l)
                for (Index h = 0; h < 3; ++h)
                    CHECK(scores->weight(l, h) == doctest::Approx(weight(l, h)).epsilon(1e-5));
        }
    }
    CHECK_THROWS_AS(attn::score_heads(std::vector<attn::HeadStatistics<T>>{}, queries, attn::KeyPattern::first_token()),
                    attn::argument_error);
    CHECK_THROWS_AS(attn::score_heads(statistics, {70}, attn::KeyPattern::first_token()), attn::argument_error);
}

TEST_CASE("score_heads, the fast route: patterns the statistics were not measured for are refused by name") {
    attn::HeadStatisticsRequest request;
    request.back = 4;
    request.markers = {0, 9};
    request.back_excludes_markers = true;
    const auto statistics = random_attention_and_statistics<double>(request).second;
    const std::vector<Index> queries = attn::query_range(10, 70);
    const std::string measured =
        "measured for previous_token(), current_token(), first_token(), positions({0, 9}) and "
        "at_least_back(4, {0, 9})";
    const std::vector<int> ids(70, 3);
    for (const attn::KeyPattern& refused :
         {attn::KeyPattern::duplicate_token(ids), attn::KeyPattern::induction(ids), attn::KeyPattern::positions({0}),
          attn::KeyPattern::positions({0, 9, 12}), attn::KeyPattern::at_least_back(3, {0, 9}),
          attn::KeyPattern::at_least_back(4), attn::KeyPattern::at_least_back(4, {0})}) {
        const std::string message =
            attn::test::thrown_message<attn::argument_error>([&] { attn::score_heads(statistics, queries, refused); });
        CHECK(message.find("score_heads: " + refused.describe() + " cannot be read from the kernel's statistics") !=
              std::string::npos);
        CHECK(message.find(measured) != std::string::npos);
    }
    // the back statistic without excluded markers is at_least_back(k) with nothing left out
    request.back_excludes_markers = false;
    const auto plain = random_attention_and_statistics<double>(request);
    CHECK(attn::test::thrown_message<attn::argument_error>([&] {
              attn::score_heads(plain.second, queries, attn::KeyPattern::at_least_back(4, {0, 9}));
          }).find("at_least_back(4, {})") != std::string::npos);
    double beyond = 0;  // at_least_back(4): every key 4 or more back, markers included
    for (Index i : queries)
        for (Index j = 0; j <= i - 4; ++j) beyond += plain.first(1, 2, i, j);
    CHECK(attn::score_heads(plain.second, queries, attn::KeyPattern::at_least_back(4)).weight(1, 2) ==
          doctest::Approx(beyond).epsilon(1e-9));
    // layers that disagree: different statistics parameters, or different sizes
    std::vector<attn::HeadStatistics<double>> mixed = {statistics[0], plain.second[1]};
    CHECK_THROWS_AS(attn::score_heads(mixed, queries, attn::KeyPattern::at_least_back(4, {0, 9})),
                    attn::argument_error);
    CHECK(attn::score_heads(mixed, queries, attn::KeyPattern::previous_token()).queries == Index(queries.size()));
    mixed[1].resize(3, 69);
    CHECK_THROWS_WITH_AS(attn::score_heads(mixed, queries, attn::KeyPattern::previous_token()),
                         doctest::Contains("layer 1's statistics are 3 × 69 (heads × queries), layer 0's 3 × 70"),
                         attn::shape_error);
}
