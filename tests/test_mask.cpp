#include <doctest/doctest.h>
#include <attn/core/mask.hpp>

#include <cmath>

#include "support.hpp"

TEST_CASE_TEMPLATE("apply_causal_mask: −∞ strictly above the diagonal, scores elsewhere untouched", T, float, double) {
    const auto original = attn::test::random_matrix<T>(5, 5, 3);
    attn::Matrix<T> scores = original;
    attn::apply_causal_mask(scores);
    for (attn::Index i = 0; i < 5; ++i)
        for (attn::Index j = 0; j < 5; ++j) {
            if (j > i) {
                CHECK(std::isinf(scores(i, j)));
                CHECK(scores(i, j) < 0);
            } else {
                CHECK(scores(i, j) == original(i, j));
            }
        }
}

TEST_CASE("apply_causal_mask: first_position shifts the diagonal for queries after cached keys") {
    attn::Matrix<double> scores = attn::Matrix<double>::Zero(2, 5);
    attn::apply_causal_mask(scores, 3);  // queries at positions 3 and 4
    CHECK(scores.row(0).head(4).isZero());
    CHECK(std::isinf(scores(0, 4)));
    CHECK(scores.row(1).isZero());
    CHECK(attn::causal_allowed(2, 5, 3) == (scores.array() == 0.0).matrix());
    CHECK_THROWS_AS(attn::apply_causal_mask(scores, -1), attn::argument_error);
}

TEST_CASE("apply_causal_mask works on a block of a larger matrix in place") {
    attn::Matrix<float> big = attn::Matrix<float>::Zero(6, 6);
    attn::apply_causal_mask(big.bottomRightCorner(3, 3));
    CHECK(std::isinf(big(3, 4)));
    CHECK(big(2, 3) == 0.0f);  // outside the block
    CHECK(big(4, 3) == 0.0f);
}

TEST_CASE("apply_mask: a boolean mask hides padding; apply_additive_mask adds PyTorch-style masks") {
    attn::Matrix<double> scores = attn::Matrix<double>::Ones(3, 3);
    attn::AllowedMask allowed = attn::AllowedMask::Constant(3, 3, true);
    allowed.col(2).setConstant(false);  // the third key is padding
    attn::apply_mask(scores, allowed);
    CHECK(std::isinf(scores(0, 2)));
    CHECK(scores(0, 1) == 1.0);

    attn::Matrix<double> additive = attn::Matrix<double>::Zero(3, 3);
    additive(1, 0) = -2.0;
    attn::Matrix<double> more = attn::Matrix<double>::Ones(3, 3);
    attn::apply_additive_mask(more, additive);
    CHECK(more(1, 0) == -1.0);
    CHECK(more(1, 1) == 1.0);

    CHECK_THROWS_WITH_AS(attn::apply_mask(scores, attn::AllowedMask::Constant(2, 3, true)),
                         doctest::Contains("allowed is 2 × 3 but scores are 3 × 3"), attn::shape_error);
    CHECK_THROWS_AS(attn::apply_additive_mask(scores, attn::Matrix<double>::Zero(3, 2)), attn::shape_error);
}
