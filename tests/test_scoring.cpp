#include <doctest/doctest.h>
#include <attn/attn.hpp>
#include <attn/core/scoring.hpp>

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
