#include <doctest/doctest.h>
#include <attn/core/mask.hpp>

#include <cmath>
#include <limits>

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

TEST_CASE("apply_sliding_window_mask: each query keeps the window's latest keys, Hugging Face's convention") {
    // transformers' sliding_window_overlay keeps kv_idx > q_idx − sliding_window; with the causal
    // mask query i sees keys i − window < j ≤ i: here window 2, itself and the key before.
    attn::Matrix<double> scores = attn::Matrix<double>::Zero(5, 5);
    attn::apply_causal_mask(scores);
    attn::apply_sliding_window_mask(scores, 2);
    for (attn::Index i = 0; i < 5; ++i)
        for (attn::Index j = 0; j < 5; ++j) {
            CAPTURE(i);
            CAPTURE(j);
            const bool seen = i - 2 < j && j <= i;
            CHECK((scores(i, j) == 0.0) == seen);
            if (!seen) CHECK(scores(i, j) == -std::numeric_limits<double>::infinity());
        }
}

TEST_CASE_TEMPLATE("apply_sliding_window_mask: first_position for cached keys; window 1, 0 and beyond the keys", T,
                   float, double) {
    const auto original = attn::test::random_matrix<T>(3, 10, 4);
    const T minus_infinity = -std::numeric_limits<T>::infinity();
    // queries at positions 6, 7, 8, window 4: keys 3 … 6, 4 … 7, 5 … 8 (and any later ones: the
    // causal mask's to hide)
    attn::Matrix<T> scores = original;
    attn::apply_sliding_window_mask(scores, 4, 6);
    for (attn::Index i = 0; i < 3; ++i)
        for (attn::Index j = 0; j < 10; ++j) {
            CAPTURE(i);
            CAPTURE(j);
            CHECK(scores(i, j) == (j >= i + 3 ? original(i, j) : minus_infinity));
        }
    // window 1: only the query's own position
    scores = original;
    attn::apply_causal_mask(scores, 6);
    attn::apply_sliding_window_mask(scores, 1, 6);
    for (attn::Index i = 0; i < 3; ++i) {
        CHECK(scores(i, i + 6) == original(i, i + 6));
        CHECK((scores.row(i).array() == minus_infinity).count() == 9);
    }
    // window 0 is none; a window reaching past key 0 hides nothing
    scores = original;
    attn::apply_sliding_window_mask(scores, 0, 6);
    CHECK(scores == original);
    attn::apply_sliding_window_mask(scores, 7, 6);  // position 6 − 7 < 0
    CHECK(scores.row(0) == original.row(0));
    CHECK(std::isinf(scores(1, 0)));  // position 7: key 0 is 7 back
    // on a block of a larger matrix, in place
    attn::Matrix<T> big = attn::Matrix<T>::Zero(6, 6);
    attn::apply_sliding_window_mask(big.bottomRows(2), 2, 4);  // positions 4, 5: keys 3 … and 4 …
    CHECK(big.topRows(4).isZero());
    CHECK((big.row(4).array() == minus_infinity).count() == 3);
    CHECK((big.row(5).array() == minus_infinity).count() == 4);
}

TEST_CASE("apply_sliding_window_mask: a negative window or first position is an argument_error naming it") {
    attn::Matrix<float> scores = attn::Matrix<float>::Zero(2, 2);
    CHECK_THROWS_WITH_AS(attn::apply_sliding_window_mask(scores, -1), doctest::Contains("window must be ≥ 0"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::apply_sliding_window_mask(scores, 2, -3), doctest::Contains("first_position"),
                         attn::argument_error);
}
