#include <doctest/doctest.h>
#include <attn/core/mask.hpp>
#include <attn/core/softmax.hpp>

#include <cmath>
#include <limits>

#include "support.hpp"

TEST_CASE_TEMPLATE("softmax_rows: every row is positive and sums to 1, matching exp/sum", T, float, double) {
    const auto scores = attn::test::random_matrix<T>(7, 9, 11, 3.0);
    const attn::Matrix<T> w = attn::softmax_rows(scores);
    for (attn::Index i = 0; i < 7; ++i) {
        CHECK(double(w.row(i).sum()) == doctest::Approx(1.0).epsilon(1e-6));
        const double total = scores.row(i).template cast<double>().array().exp().sum();
        for (attn::Index j = 0; j < 9; ++j) {
            CHECK(w(i, j) > T(0));
            CHECK(double(w(i, j)) == doctest::Approx(std::exp(double(scores(i, j))) / total).epsilon(1e-5));
        }
    }
}

TEST_CASE_TEMPLATE("softmax_rows stays finite for scores of ±1e30", T, float, double) {
    attn::Matrix<T> scores(2, 3);
    scores << T(1e30), T(-1e30), T(0), T(1e30), T(1e30), T(-1e30);
    const attn::Matrix<T> w = attn::softmax_rows(scores);
    CHECK(w.allFinite());
    CHECK(w(0, 0) == T(1));
    CHECK(w(0, 1) == T(0));
    CHECK(w(1, 0) == T(0.5));
    CHECK(w(1, 1) == T(0.5));
}

TEST_CASE_TEMPLATE("softmax_rows: a row with one unmasked entry is one-hot; a fully masked row is zeros", T, float,
                   double) {
    const T inf = std::numeric_limits<T>::infinity();
    attn::Matrix<T> scores(3, 3);
    scores << T(5), -inf, -inf,  //
        -inf, -inf, -inf,        //
        -inf, T(-1e30), -inf;
    const attn::Matrix<T> w = attn::softmax_rows(scores);
    CHECK(w.allFinite());
    CHECK(w.row(0) == (attn::Matrix<T>(1, 3) << T(1), T(0), T(0)).finished());
    CHECK(w.row(1).isZero(0));
    CHECK(w.row(2) == (attn::Matrix<T>(1, 3) << T(0), T(1), T(0)).finished());
}

TEST_CASE("softmax_rows: NaN or +∞ among the scores raise numeric_error naming the row") {
    attn::Matrix<double> scores = attn::Matrix<double>::Zero(3, 2);
    scores(2, 1) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(attn::softmax_rows(scores), doctest::Contains("row 2 of the scores contains NaN"),
                         attn::numeric_error);
    scores(2, 1) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(attn::softmax_rows(scores), doctest::Contains("+infinity"), attn::numeric_error);
}

TEST_CASE("softmax_rows_in_place works on a block and leaves the rest alone") {
    attn::Matrix<double> m = attn::Matrix<double>::Zero(2, 4);
    attn::softmax_rows_in_place(m.leftCols(2));
    CHECK(m(0, 0) == 0.5);
    CHECK(m(1, 1) == 0.5);
    CHECK(m(0, 2) == 0.0);
}
