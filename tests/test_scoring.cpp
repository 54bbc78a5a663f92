#include <doctest/doctest.h>
#include <attn/attn.hpp>
#include <attn/core/scoring.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "support.hpp"

using attn::test::random_matrix;

TEST_CASE_TEMPLATE("scaled_scores: q kᵀ / √d by default, scale overridable", T, float, double) {
    const auto q = random_matrix<T>(3, 5, 1), k = random_matrix<T>(4, 5, 2);
    auto expected = attn::test::naive_matmul(attn::test::to_table(q), attn::test::to_table(k.transpose()));
    for (auto& row : expected)
        for (auto& s : row) s /= std::sqrt(5.0);
    const attn::Matrix<T> scores = attn::scaled_scores(q, k);
    CHECK(scores.rows() == 3);
    CHECK(scores.cols() == 4);
    CHECK(attn::test::max_abs_difference(scores, expected) < attn::test::tolerance<T>());
    const attn::Matrix<T> unscaled = attn::scaled_scores(q, k, T(1));
    CHECK(attn::test::max_abs_difference(unscaled * (T(1) / std::sqrt(T(5))), expected) < attn::test::tolerance<T>());
    CHECK(attn::default_scale<T>(16) == T(0.25));
}

TEST_CASE("scaled_scores: keys narrower than queries raise shape_error naming keys") {
    CHECK_THROWS_WITH_AS(attn::scaled_scores(random_matrix<float>(3, 5, 1), random_matrix<float>(3, 4, 2)),
                         doctest::Contains("keys has 4 columns, expected 5"), attn::shape_error);
    CHECK_THROWS_AS(attn::scaled_scores(attn::Matrix<float>(0, 5), random_matrix<float>(3, 5, 2)), attn::shape_error);
    CHECK_THROWS_AS(attn::default_scale<float>(0), attn::argument_error);
}

namespace {
// The chapter's measurement: 1,000 random queries against 16 random keys; the
// average of each row's largest weight.
double average_largest_weight(attn::Index size, bool scaled, unsigned seed) {
    const auto queries = random_matrix<double>(1000, size, seed);
    const auto keys = random_matrix<double>(16, size, seed + 1);
    attn::Matrix<double> weights =
        attn::softmax_rows(attn::scaled_scores(queries, keys, scaled ? std::nullopt : std::optional<double>(1.0)));
    return weights.rowwise().maxCoeff().mean();
}
}  // namespace

TEST_CASE("scaling keeps the average largest weight near 0.25 at sizes 4, 32, 256; unscaled it grows") {
    double previous_unscaled = 0.0;
    for (attn::Index size : {4, 32, 256}) {
        const double scaled = average_largest_weight(size, true, unsigned(size));
        const double unscaled = average_largest_weight(size, false, unsigned(size));
        CAPTURE(size);
        CHECK(scaled == doctest::Approx(0.25).epsilon(0.2));  // within 20 %: 0.2 … 0.3
        CHECK(unscaled > previous_unscaled);
        if (size >= 32) CHECK(unscaled > 0.7);
        previous_unscaled = unscaled;
    }
}

TEST_CASE_TEMPLATE("soft_cap_in_place: cap · tanh(s / cap) on every score, as Gemma 2's attn_logit_softcapping", T,
                   float, double) {
    const auto original = random_matrix<T>(4, 7, 5, 30.0);  // scores of spread 30 around a cap of 50
    attn::Matrix<T> scores = original;
    attn::soft_cap_in_place(scores, T(50));
    const double slack = std::is_same_v<T, float> ? 1e-5 : 1e-13;
    for (attn::Index i = 0; i < 4; ++i)
        for (attn::Index j = 0; j < 7; ++j) {
            const double expected = 50.0 * std::tanh(double(original(i, j)) / 50.0);
            CHECK(double(scores(i, j)) == doctest::Approx(expected).epsilon(slack));
            CHECK(std::abs(scores(i, j)) < T(50));
        }
    // small scores barely change; huge ones and +∞ reach the cap; NaN stays NaN; cap 0 is none
    attn::Matrix<T> edges(1, 5);
    edges << T(1e-3), T(1e6), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
        std::numeric_limits<T>::quiet_NaN();
    attn::soft_cap_in_place(edges, T(20));
    CHECK(edges(0, 0) == doctest::Approx(1e-3).epsilon(1e-6));
    CHECK(edges(0, 1) == T(20));
    CHECK(edges(0, 2) == T(20));
    CHECK(edges(0, 3) == T(-20));
    CHECK(std::isnan(edges(0, 4)));
    scores = original;
    attn::soft_cap_in_place(scores, T(0));
    CHECK(scores == original);
    // a block of a larger matrix, in place
    attn::Matrix<T> big = attn::Matrix<T>::Constant(3, 3, T(100));
    attn::soft_cap_in_place(big.col(1), T(1));
    CHECK(big(0, 0) == T(100));
    CHECK(big(2, 1) == doctest::Approx(1.0));
}

TEST_CASE("soft_cap_in_place: a negative or non-finite cap is an argument_error naming it") {
    attn::Matrix<float> scores = attn::Matrix<float>::Zero(2, 2);
    for (float cap : {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
        CHECK_THROWS_WITH_AS(attn::soft_cap_in_place(scores, cap), doctest::Contains("cap must be finite and ≥ 0"),
                             attn::argument_error);
}
