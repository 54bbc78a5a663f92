// Weights on demand (core/weights_on_demand.hpp): chosen rows' exact weights from queries,
// keys and the log-sum-exps a pass kept, against the weights path and a double reference.
#include <doctest/doctest.h>
#include <attn/core/weights_on_demand.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "support.hpp"

using attn::Index;
using attn::test::random_stack;

namespace {

/// a equals b to `relative` for every weight ≥ 1e-6 and to 1e-12 absolute below, where the
/// weights path's own exp(s − m), with s − m rounded to float, is off by |s − m|·2⁻²⁴ relative.
template <class T>
void check_close(const attn::HeadStack<T>& a, const attn::HeadStack<T>& b, double relative) {
    REQUIRE(a.heads() == b.heads());
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    double worst = 0, worst_small = 0;
    for (std::size_t e = 0; e < a.size(); ++e) {
        const double x = double(a.data()[e]), y = double(b.data()[e]);
        if (std::abs(y) >= 1e-6)
            worst = std::max(worst, std::abs(x - y) / std::abs(y));
        else
            worst_small = std::max(worst_small, std::abs(x - y));
    }
    CHECK(worst <= relative);
    CHECK(worst_small <= 1e-12);
}

/// The weights path (its exponent's argument exact, its sum compensated) is within ~3.3e-7 (float)
/// of the softmax taken in double of the same float scores; whole rows on demand, renormalised,
/// within ~1.3e-7 (measured on such shapes, 2,048 positions). A tile of keys rests on the lse
/// alone, rounded to float: half a unit in its last place more, 2.4e-7 relative for |lse| < 8,
/// as in these tests.
template <class T>
double tolerance() {
    return std::is_same_v<T, float> ? 1e-6 : 1e-13;
}

/// Every head's whole rows two ways, causal, on 2 threads: the weights path's, and on demand from
/// the streaming pass's log-sum-exps.
template <class T>
struct Routes {
    attn::HeadStack<T> weights_path, on_demand;
    Routes(const attn::HeadStack<T>& q, const attn::HeadStack<T>& k, const attn::HeadStack<T>& v) {
        attn::AttentionOptions<T> options;
        options.keep_log_sum_exp = true;
        options.threads = 2;
        const attn::Matrix<T> lse = attn::attend_heads(q, k, v, options).log_sum_exp;
        options.keep_weights = true;
        weights_path = attn::attend_heads(q, k, v, options).weights;
        options.keep_weights = false;
        on_demand = attn::attention_rows(q, k, lse, {}, {}, {}, options).weights;
    }
};

}  // namespace

TEST_CASE_TEMPLATE("weights on demand equal the weights path on many shapes, from either pass's log-sum-exp", T, float,
                   double) {
    const attn::Rope<T> rope(64, attn::RopePairing::rotate_half);
    for (Index n : {1, 5, 95, 97, 129, 300})
        for (Index d : {32, 64, 128})
            for (bool causal : {true, false}) {
                CAPTURE(n);
                CAPTURE(d);
                CAPTURE(causal);
                const auto q = random_stack<T>(3, n, d, 1), k = random_stack<T>(3, n, d, 11),
                           v = random_stack<T>(3, n, d, 21);
                attn::AttentionOptions<T> options;
                options.causal = causal;
                if (d == 64) options.rope = &rope;
                options.keep_log_sum_exp = true;
                const auto streamed = attn::attend_heads(q, k, v, options);
                options.keep_weights = true;
                const auto exact = attn::attend_heads(q, k, v, options);
                REQUIRE(streamed.log_sum_exp.rows() == 3);
                REQUIRE(streamed.log_sum_exp.cols() == n);
                options.keep_weights = false;
                check_close(attn::attention_rows(q, k, streamed.log_sum_exp, {}, {}, {}, options).weights,
                            exact.weights, tolerance<T>());
                check_close(attn::attention_rows(q, k, exact.log_sum_exp, {}, {}, {}, options).weights, exact.weights,
                            tolerance<T>());
            }
}

TEST_CASE_TEMPLATE("weights on demand: chosen heads, rows and a tile of keys, after cached keys", T, float, double) {
    const Index nq = 150, nk = 170, d = 32;
    const auto q = random_stack<T>(4, nq, d, 3), k = random_stack<T>(4, nk, d, 13), v = random_stack<T>(4, nk, d, 23);
    attn::AttentionOptions<T> options;
    options.first_position = nk - nq;
    options.keep_log_sum_exp = true;
    options.keep_weights = true;
    const auto exact = attn::attend_heads(q, k, v, options);
    const std::vector<Index> heads = {3, 1}, rows = {149, 0, 77, 96};
    const attn::KeyRange range{60, 140};
    const auto tile = attn::attention_rows(q, k, exact.log_sum_exp, heads, rows, range, options).weights;
    REQUIRE(tile.heads() == 2);
    REQUIRE(tile.rows() == 4);
    REQUIRE(tile.cols() == 80);
    attn::HeadStack<T> expected(2, 4, 80);
    for (Index a = 0; a < 2; ++a)
        for (Index b = 0; b < 4; ++b)
            for (Index c = 0; c < 80; ++c)
                expected(a, b, c) = exact.weights(heads[std::size_t(a)], rows[std::size_t(b)], 60 + c);
    check_close(tile, expected, tolerance<T>());
}

TEST_CASE("weights on demand: the log-sum-exp matches a double loop, and one head from attention()") {
    const Index n = 200, d = 64;
    const attn::Matrix<float> q = attn::test::random_matrix<float>(n, d, 5),
                              k = attn::test::random_matrix<float>(n, d, 6),
                              v = attn::test::random_matrix<float>(n, d, 7);
    attn::AttentionOptions<float> options;
    options.keep_log_sum_exp = true;
    const auto streamed = attn::attention(q, k, v, options);
    REQUIRE(streamed.log_sum_exp.rows() == 1);
    for (Index i = 0; i < n; ++i) {
        double largest = -1e300;
        std::vector<double> s;
        for (Index j = 0; j <= i; ++j) {
            double dot = 0;
            for (Index c = 0; c < d; ++c) dot += double(q(i, c)) * double(k(j, c));
            s.push_back(dot / 8.0);
            largest = std::max(largest, s.back());
        }
        double sum = 0;
        for (double x : s) sum += std::exp(x - largest);
        CHECK(double(streamed.log_sum_exp(0, i)) == doctest::Approx(largest + std::log(sum)).epsilon(1e-5));
    }
    options.keep_weights = true;
    const auto exact = attn::attention(q, k, v, options);
    const attn::Matrix<float> rows = attn::attention_rows(q, k, streamed.log_sum_exp, {0, 199, 100});
    for (Index j = 0; j < n; ++j) {
        CHECK(rows(0, j) == doctest::Approx(exact.weights(0, j)).epsilon(1e-6));
        CHECK(rows(1, j) == doctest::Approx(exact.weights(199, j)).epsilon(1e-6));
        CHECK(rows(2, j) == doctest::Approx(exact.weights(100, j)).epsilon(1e-6));
    }
}

TEST_CASE_TEMPLATE("weights on demand: whole rows within 1e-6 of the weights path at 1,000 positions, scores far apart",
                   T, float, double) {
    const Index n = 1000, d = 64;
    // stddev 2: scores spread over ±20, where an inexact exponent argument would cost ~1e-6
    const auto q = random_stack<T>(2, n, d, 31, 2.0), k = random_stack<T>(2, n, d, 41, 2.0),
               v = random_stack<T>(2, n, d, 51);
    const Routes<T> routes(q, k, v);
    check_close(routes.on_demand, routes.weights_path, tolerance<T>());
}

TEST_CASE("weights path and whole rows on demand against the softmax of exact scores, in float") {
    // Inputs in quarters and d = 64 (scale 1/8): every float score is exact, so a double softmax of
    // them is the truth both routes aim at, and what is left is each route's own rounding.
    const Index n = 1000, d = 64, heads = 2;
    attn::HeadStack<float> q = random_stack<float>(heads, n, d, 71, 2.0), k = random_stack<float>(heads, n, d, 81, 2.0);
    for (attn::HeadStack<float>* stack : {&q, &k})
        for (std::size_t e = 0; e < stack->size(); ++e) stack->data()[e] = std::round(stack->data()[e] * 4) / 4;
    const auto v = random_stack<float>(heads, n, d, 91);
    const Routes<float> routes(q, k, v);
    const attn::HeadStack<float>&exact = routes.weights_path, &rows = routes.on_demand;
    double worst_path = 0, worst_rows = 0;
    std::vector<double> scores;
    for (Index h = 0; h < heads; ++h)
        for (Index i = 0; i < n; ++i) {
            scores.assign(std::size_t(i + 1), 0.0);
            double largest = -std::numeric_limits<double>::infinity();
            for (Index j = 0; j <= i; ++j) {
                for (Index c = 0; c < d; ++c) scores[std::size_t(j)] += double(q(h, i, c)) * double(k(h, j, c));
                scores[std::size_t(j)] /= 8.0;
                largest = std::max(largest, scores[std::size_t(j)]);
            }
            double sum = 0;
            for (double s : scores) sum += std::exp(s - largest);
            for (Index j = 0; j <= i; ++j) {
                const double truth = std::exp(scores[std::size_t(j)] - largest) / sum;
                if (truth < 1e-6) continue;
                worst_path = std::max(worst_path, std::abs(double(exact(h, i, j)) - truth) / truth);
                worst_rows = std::max(worst_rows, std::abs(double(rows(h, i, j)) - truth) / truth);
            }
        }
    CHECK(worst_path <= 5e-7);    // measured 3.3e-7: exp, the compensated sum and 1/sum, each rounded
    CHECK(worst_rows <= 2.5e-7);  // measured 1.3e-7: rounded once from double, and once when rescaled
}

TEST_CASE("weights on demand: a custom mask on the plain path") {
    const Index n = 40, d = 32;
    const auto q = random_stack<float>(1, n, d, 8), k = random_stack<float>(1, n, d, 9),
               v = random_stack<float>(1, n, d, 10);
    attn::AllowedMask mask = attn::AllowedMask::Constant(n, n, true);
    for (Index i = 0; i < n; ++i) mask(i, i / 2) = false;
    attn::AttentionOptions<float> options;
    options.mask = &mask;
    options.keep_weights = true;
    options.keep_log_sum_exp = true;
    const auto exact = attn::attend_heads(q, k, v, options);
    // The plain path's scores are Eigen's product (scaled_scores), not the kernel's tiles: the two
    // have the same bits where neither fuses a multiply-add (SSE2), but with FMA instructions
    // (AVX2, AVX-512) each score rounds differently, and its weight moves by as much relative
    // (1.03e-6 measured there, against the kernel's 1e-6 bound above).
    check_close(attn::attention_rows(q, k, exact.log_sum_exp, {}, {}, {}, options).weights, exact.weights, 2e-6);
}

TEST_CASE("weights on demand: bad rows, heads, key ranges, log-sum-exps and storage are attn:: errors") {
    const auto q = random_stack<float>(2, 10, 32, 1), k = random_stack<float>(2, 10, 32, 2);
    const attn::Matrix<float> lse = attn::Matrix<float>::Zero(2, 10);
    CHECK_THROWS_WITH_AS(attn::attention_rows(q, k, lse, {}, {10}), doctest::Contains("row = 10"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::attention_rows(q, k, lse, {2}, {}), doctest::Contains("head = 2"), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::attention_rows(q, k, lse, {}, {}, attn::KeyRange{4, 11}),
                         doctest::Contains("key range [4, 11)"), attn::argument_error);
    CHECK_THROWS_AS(attn::attention_rows(q, k, lse, {}, {}, attn::KeyRange{5, 5}), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::attention_rows(q, k, attn::Matrix<float>(attn::Matrix<float>::Zero(2, 9)), {}, {}),
                         doctest::Contains("log_sum_exp is 2 × 9, expected heads × queries = 2 × 10"),
                         attn::shape_error);
    attn::WeightRowsResult<float> wrong;
    wrong.weights = attn::HeadStack<float>(1, 1, 1);
    CHECK_THROWS_WITH_AS(attn::attention_rows_into(q, k, lse, {}, {}, {}, {}, wrong),
                         doctest::Contains("weights storage is 1 × (1 × 1), expected 2 × (10 × 10)"),
                         attn::shape_error);
    attn::Matrix<float> nan_lse = lse;
    nan_lse(1, 3) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(attn::attention_rows(q, k, nan_lse, {1}, {3}), doctest::Contains("row 3"),
                         attn::argument_error);
}
