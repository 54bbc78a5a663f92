// Head statistics (core/head_statistics.hpp) measured in the fused kernel's streaming pass,
// against the same statistics computed in double from the full weights.
#include <doctest/doctest.h>
#include <attn/core/attention.hpp>

#include <cmath>
#include <vector>

#include "support.hpp"

using attn::Index;
using attn::test::random_stack;

namespace {

/// The statistics of head h, row i, from its full weights row, in double with loops.
struct Expected {
    double previous = 0, first = 0, self = 0, back = 0, markers = 0, largest = -1, entropy = 0, distance = 0;
    Index argmax = 0;
};

template <class T>
Expected from_weights(const attn::AttentionWeights<T>& weights, Index h, Index i, Index position,
                      const attn::HeadStatisticsRequest& request) {
    Expected e;
    const auto is_marker = [&](Index j) {
        return std::find(request.markers.begin(), request.markers.end(), j) != request.markers.end();
    };
    for (Index j = 0; j < weights.cols(); ++j) {
        const double w = double(weights(h, i, j));
        if (j == position - 1) e.previous = w;
        if (j == 0) e.first = w;
        if (j == position) e.self = w;
        if (j <= position - request.back && !(request.back_excludes_markers && is_marker(j))) e.back += w;
        if (is_marker(j)) e.markers += w;
        if (w > e.largest) e.largest = w, e.argmax = j;
        if (w > 0) e.entropy -= w * std::log(w);
        e.distance += w * double(position - j);
    }
    return e;
}

template <class T>
void check_statistics(const attn::HeadStatistics<T>& s, const attn::AttentionWeights<T>& weights, Index first_position,
                      const attn::HeadStatisticsRequest& request) {
    const double tolerance = std::is_same_v<T, float> ? 2e-5 : 1e-10;
    REQUIRE(s.heads() == weights.heads());
    REQUIRE(s.queries() == weights.rows());
    Index argmax_differences = 0;
    for (Index h = 0; h < s.heads(); ++h)
        for (Index i = 0; i < s.queries(); ++i) {
            CAPTURE(h);
            CAPTURE(i);
            const Index position = first_position + i;
            const Expected e = from_weights(weights, h, i, position, request);
            CHECK(double(s.previous(h, i)) == doctest::Approx(e.previous).epsilon(tolerance).scale(1));
            CHECK(double(s.first(h, i)) == doctest::Approx(e.first).epsilon(tolerance).scale(1));
            CHECK(double(s.self(h, i)) == doctest::Approx(e.self).epsilon(tolerance).scale(1));
            CHECK(double(s.back(h, i)) == doctest::Approx(e.back).epsilon(tolerance).scale(1));
            CHECK(double(s.markers(h, i)) == doctest::Approx(e.markers).epsilon(tolerance).scale(1));
            CHECK(double(s.largest(h, i)) == doctest::Approx(e.largest).epsilon(tolerance).scale(1));
            CHECK(double(s.entropy(h, i)) == doctest::Approx(e.entropy).epsilon(tolerance).scale(1));
            CHECK(double(s.distance(h, i)) ==
                  doctest::Approx(e.distance).epsilon(tolerance).scale(1 + double(position)));
            // ties within rounding may pick another key of the same weight
            if (s.argmax(h, i) != e.argmax) {
                ++argmax_differences;
                CHECK(double(weights(h, i, s.argmax(h, i))) == doctest::Approx(e.largest).epsilon(tolerance));
            }
        }
    CHECK(argmax_differences <= s.queries() * s.heads() / 100);
}

}  // namespace

TEST_CASE_TEMPLATE("head statistics from the streaming pass equal those of the full weights on many shapes", T, float,
                   double) {
    attn::HeadStatisticsRequest request;
    request.back = 4;
    request.markers = {0, 7, 130, 3};
    for (Index n : {1, 5, 95, 97, 129, 300})
        for (Index d : {32, 64, 128})
            for (bool excluded : {false, true}) {
                CAPTURE(n);
                CAPTURE(d);
                request.back_excludes_markers = excluded;
                request.back = excluded ? 4 : 1 + n / 3;
                const auto q = random_stack<T>(2, n, d, 1, 0.3), k = random_stack<T>(2, n, d, 11),
                           v = random_stack<T>(2, n, d, 21);
                attn::AttentionOptions<T> options;
                options.statistics = &request;
                const auto streamed = attn::attend_heads(q, k, v, options);
                options.statistics = nullptr;
                options.keep_weights = true;
                const auto exact = attn::attend_heads(q, k, v, options);
                check_statistics(streamed.statistics, exact.weights, 0, request);
            }
}

TEST_CASE_TEMPLATE("head statistics: the weights path, the plain path and cached keys agree with the full weights", T,
                   float, double) {
    attn::HeadStatisticsRequest request;
    request.markers = {2, 50};
    request.back_excludes_markers = true;
    const Index nq = 140, nk = 200, d = 64;
    const auto q = random_stack<T>(3, nq, d, 2, 0.5), k = random_stack<T>(3, nk, d, 12),
               v = random_stack<T>(3, nk, d, 22);
    for (bool fused : {true, false})
        for (bool weights : {true, false}) {
            CAPTURE(fused);
            CAPTURE(weights);
            attn::AttentionOptions<T> options;
            options.first_position = nk - nq;
            options.fused = fused;
            options.keep_weights = weights;
            options.statistics = &request;
            const auto measured = attn::attend_heads(q, k, v, options);
            options.keep_weights = true;
            options.statistics = nullptr;
            const auto exact = attn::attend_heads(q, k, v, options);
            check_statistics(measured.statistics, exact.weights, nk - nq, request);
        }
}

TEST_CASE("head statistics: peaked scores that move the running maximum, many times per row") {
    // growing scores: the maximum moves in every block, the sums are rescaled each time
    const Index n = 700, d = 32;
    attn::HeadStack<float> q(1, n, d), k(1, n, d), v = random_stack<float>(1, n, d, 3);
    for (Index i = 0; i < n; ++i) {
        q(0, i, 0) = 1.0f;
        k(0, i, 0) = float(i % 97) * 0.4f;
        k(0, i, 1) = float(i);
    }
    attn::HeadStatisticsRequest request;
    attn::AttentionOptions<float> options;
    options.statistics = &request;
    const auto streamed = attn::attend_heads(q, k, v, options);
    options.keep_weights = true;
    options.statistics = nullptr;
    check_statistics(streamed.statistics, attn::attend_heads(q, k, v, options).weights, 0, request);
}

TEST_CASE("head statistics are bit-identical for any thread count") {
    attn::HeadStatisticsRequest request;
    request.markers = {1};
    const auto q = random_stack<float>(4, 700, 64, 4), k = random_stack<float>(4, 700, 64, 14),
               v = random_stack<float>(4, 700, 64, 24);
    attn::AttentionOptions<float> options;
    options.statistics = &request;
    options.keep_log_sum_exp = true;
    const auto one = attn::attend_heads(q, k, v, options);
    options.threads = 2;
    const auto two = attn::attend_heads(q, k, v, options);
    CHECK(one.log_sum_exp == two.log_sum_exp);
    CHECK(one.statistics.entropy == two.statistics.entropy);
    CHECK(one.statistics.back == two.statistics.back);
    CHECK(one.statistics.argmax == two.statistics.argmax);
}

TEST_CASE("head statistics: an even spread gives the even-spread baseline, and averages over rows") {
    // zero queries: every score is 0, every row spreads its weight evenly
    const Index n = 50, d = 32;
    attn::HeadStack<double> q(2, n, d), k = random_stack<double>(2, n, d, 5), v = random_stack<double>(2, n, d, 6);
    attn::HeadStatisticsRequest request;
    request.back = 3;
    request.markers = {0, 10};
    request.back_excludes_markers = true;
    attn::AttentionOptions<double> options;
    options.statistics = &request;
    const auto summary = attn::attend_heads(q, k, v, options).statistics.summary();
    REQUIRE(summary.heads.size() == 2);
    CHECK(summary.rows == n);
    for (const auto& head : summary.heads) {
        CHECK(head.previous == doctest::Approx(summary.even.previous));
        CHECK(head.first == doctest::Approx(summary.even.first));
        CHECK(head.self == doctest::Approx(summary.even.self));
        CHECK(head.back == doctest::Approx(summary.even.back));
        CHECK(head.markers == doctest::Approx(summary.even.markers));
        CHECK(head.largest == doctest::Approx(summary.even.largest));
        CHECK(head.entropy == doctest::Approx(summary.even.entropy));
        CHECK(head.distance == doctest::Approx(summary.even.distance));
    }
    double first = 0;
    for (Index i = 0; i < n; ++i) first += 1.0 / double(i + 1);
    CHECK(summary.even.first == doctest::Approx(first / double(n)));
    CHECK(summary.even.distance == doctest::Approx(double(n - 1) / 4.0));
}

TEST_CASE("head statistics: a bad request is an argument_error naming it") {
    const auto q = random_stack<float>(1, 8, 32, 1), k = random_stack<float>(1, 8, 32, 2), v = q;
    attn::HeadStatisticsRequest request;
    request.back = 0;
    attn::AttentionOptions<float> options;
    options.statistics = &request;
    CHECK_THROWS_WITH_AS(attn::attend_heads(q, k, v, options), doctest::Contains("back distance must be ≥ 1, got 0"),
                         attn::argument_error);
    request.back = 2;
    request.markers = {-1};
    CHECK_THROWS_WITH_AS(attn::attend_heads(q, k, v, options), doctest::Contains("marker -1 is negative"),
                         attn::argument_error);
}

namespace {

template <class T>
void check_same_bits(const attn::HeadStatistics<T>& a, const attn::HeadStatistics<T>& b) {
    CHECK(a.previous == b.previous);
    CHECK(a.first == b.first);
    CHECK(a.self == b.self);
    CHECK(a.back == b.back);
    CHECK(a.markers == b.markers);
    CHECK(a.largest == b.largest);
    CHECK(a.argmax == b.argmax);
    CHECK(a.entropy == b.entropy);
    CHECK(a.distance == b.distance);
}

}  // namespace

TEST_CASE_TEMPLATE("attention_statistics without outputs: the bits of attend_heads's statistics, on 1 and 2 threads", T,
                   float, double) {
    attn::HeadStatisticsRequest request;
    request.markers = {0, 3};
    const attn::Rope<T> rope(64, attn::RopePairing::rotate_half);
    for (Index n : {1, 95, 97, 300})
        for (Index d : {32, 64, 128})
            for (Index key_value_heads : {4, 2})
                for (int threads : {1, 2}) {
                    CAPTURE(n);
                    CAPTURE(d);
                    CAPTURE(key_value_heads);
                    CAPTURE(threads);
                    const auto q = random_stack<T>(4, n, d, 5), k = random_stack<T>(key_value_heads, n, d, 15),
                               v = random_stack<T>(key_value_heads, n, d, 25);
                    attn::AttentionOptions<T> options;
                    options.statistics = &request;
                    options.keep_log_sum_exp = true;
                    options.threads = threads;
                    options.causal = n != 97;
                    if (d == 64) options.rope = &rope;
                    const auto full = attn::attend_heads(q, k, v, options);
                    const attn::HeadsResult<T> only = attn::attention_statistics(q, k, options);
                    check_same_bits(only.statistics, full.statistics);
                    CHECK(only.log_sum_exp == full.log_sum_exp);
                    CHECK(only.outputs.empty());
                }
}

TEST_CASE("attention_statistics: the plain path (a mask) agrees, storage is reused, bad requests are errors") {
    attn::HeadStatisticsRequest request;
    const Index n = 60, d = 32;
    const auto q = random_stack<float>(2, n, d, 7), k = random_stack<float>(2, n, d, 8),
               v = random_stack<float>(2, n, d, 9);
    attn::AllowedMask mask = attn::AllowedMask::Constant(n, n, true);
    for (Index i = 0; i < n; ++i) mask(i, i / 3) = false;
    attn::AttentionOptions<float> options;
    options.statistics = &request;
    options.mask = &mask;
    check_same_bits(attn::attention_statistics(q, k, options).statistics,
                    attn::attend_heads(q, k, v, options).statistics);

    options.mask = nullptr;
    attn::HeadsResult<float> result;
    attn::attention_statistics_into(q, k, options, result);
    const float* kept = result.statistics.entropy.data();
    attn::attention_statistics_into(q, k, options, result);
    CHECK(result.statistics.entropy.data() == kept);
    CHECK(result.log_sum_exp.size() == 0);  // not asked for
    CHECK(result.outputs.empty());

    options.statistics = nullptr;
    CHECK_THROWS_WITH_AS(attn::attention_statistics(q, k, options), doctest::Contains("options.statistics is not set"),
                         attn::argument_error);
    options.statistics = &request;
    options.keep_weights = true;
    CHECK_THROWS_AS(attn::attention_statistics(q, k, options), attn::argument_error);
    options.keep_weights = false;
    CHECK_THROWS_WITH_AS(attn::attention_statistics(q, random_stack<float>(3, n, d, 1), options),
                         doctest::Contains("keys have 3 heads, queries 2"), attn::shape_error);
    CHECK_THROWS_AS(attn::attention_statistics(q, random_stack<float>(2, n, 16, 1), options), attn::shape_error);
}
