#include <doctest/doctest.h>
#include <attn/analysis/head_scores.hpp>
#include <attn/core/attention.hpp>

#include <utility>
#include <vector>

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
    const auto scores = attn::measure(attention, attn::query_range(1, 6), attn::KeyPattern::previous_token());
    CHECK(scores.queries == 5);
    CHECK(scores.average()(0, 0) == doctest::Approx(1.0));
    CHECK(scores.average()(0, 1) == doctest::Approx(scores.even_average()));
    CHECK(scores.average()(0, 2) == doctest::Approx(0.0));
    // the chapter's baseline: mean of 1 / (i + 1) for i = 1 … n − 1
    CHECK(scores.even_average() == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5));
}

TEST_CASE("current-token and marker scores against their baselines") {
    const auto attention = hand_made(5);
    const auto current = attn::measure(attention, attn::query_range(0, 5), attn::KeyPattern::current_token());
    CHECK(current.average()(0, 2) == doctest::Approx(1.0));
    CHECK(current.average()(0, 1) == doctest::Approx(current.even_average()));
    const auto markers = attn::measure(attention, attn::query_range(2, 5), attn::KeyPattern::positions({0, 2}));
    CHECK(markers.even == doctest::Approx(2.0 / 3 + 2.0 / 4 + 2.0 / 5));
    CHECK(markers.weight(0, 1) == doctest::Approx(markers.even));
    CHECK(markers.weight(0, 0) == doctest::Approx(1.0));  // queries 2, 3, 4 look at 1, 2, 3: marker 2 once
}

TEST_CASE("k-or-more-back score excludes markers and matches the even spread on an even head") {
    const auto attention = hand_made(8);
    const attn::KeyPattern far = attn::KeyPattern::at_least_back(4, {0});
    CHECK(far.keys(7) == std::vector<Index>{1, 2, 3});
    CHECK(far.keys(3).empty());
    const auto scores = attn::measure(attention, attn::query_range(0, 8), far);
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
    const auto scores = attn::measure(attention, attn::query_range(3, 6), induction);
    CHECK(scores.average()(0, 0) == doctest::Approx(1.0));
    CHECK(scores.average()(0, 1) == doctest::Approx(0.0));
}

TEST_CASE("HeadAverage: per-text and per-query weighting, without keeping attention") {
    const auto short_text = hand_made(3), long_text = hand_made(9);
    attn::HeadAverage per_text(attn::HeadAverage::Weighting::per_text);
    attn::HeadAverage per_query(attn::HeadAverage::Weighting::per_query);
    for (const auto* attention : {&short_text, &long_text}) {
        const auto scores =
            attn::measure(*attention, attn::query_range(1, attention->positions()), attn::KeyPattern::previous_token());
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
    CHECK_THROWS_AS(attn::measure(attn::ModelAttention<double>(), {0}, attn::KeyPattern::current_token()),
                    attn::argument_error);
    CHECK_THROWS_AS(attn::measure(short_text, {3}, attn::KeyPattern::current_token()), attn::argument_error);
}

TEST_CASE_TEMPLATE("the fast route: measure() on the kernel's statistics equals measure() on the full weights", T,
                   float, double) {
    // two layers of random heads: queries, keys and values 3 × (70 × 32)
    std::vector<attn::HeadStatistics<T>> statistics;
    std::vector<attn::AttentionWeights<T>> layers;
    attn::HeadStatisticsRequest request;
    request.back = 4;
    request.markers = {0, 9};
    request.back_excludes_markers = true;
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
    const attn::ModelAttention<T> attention(layers);
    const std::vector<Index> queries = attn::query_range(10, 70);
    const std::vector<std::pair<attn::HeadStatistic, attn::KeyPattern>> pairs = {
        {attn::HeadStatistic::previous, attn::KeyPattern::previous_token()},
        {attn::HeadStatistic::self, attn::KeyPattern::current_token()},
        {attn::HeadStatistic::markers, attn::KeyPattern::positions({0, 9})},
        {attn::HeadStatistic::back, attn::KeyPattern::at_least_back(4, {0, 9})}};
    for (const auto& [which, pattern] : pairs) {
        const attn::HeadScores fast = attn::measure(statistics, queries, which);
        const attn::HeadScores full = attn::measure(attention, queries, pattern);
        CHECK(fast.queries == full.queries);
        CHECK(fast.even == doctest::Approx(full.even));
        for (Index l = 0; l < 2; ++l)
            for (Index h = 0; h < 3; ++h) CHECK(fast.weight(l, h) == doctest::Approx(full.weight(l, h)).epsilon(1e-5));
    }
    CHECK_THROWS_AS(attn::measure(std::vector<attn::HeadStatistics<T>>{}, queries, attn::HeadStatistic::first),
                    attn::argument_error);
}
