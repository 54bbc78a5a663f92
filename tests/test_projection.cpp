#include <doctest/doctest.h>
#include <attn/core/projection.hpp>

#include "support.hpp"

using attn::test::random_matrix;

TEST_CASE_TEMPLATE("project: x · W matches the naive product, with and without bias", T, float, double) {
    const auto x = random_matrix<T>(5, 8, 1);
    const auto w = random_matrix<T>(8, 3, 2);
    const attn::Vector<T> bias = random_matrix<T>(3, 1, 3);
    const auto expected = attn::test::naive_matmul(attn::test::to_table(x), attn::test::to_table(w));
    CHECK(attn::test::max_abs_difference(attn::project(x, w), expected) < attn::test::tolerance<T>());
    const attn::Matrix<T> biased = attn::project(x, w, bias);
    const attn::Matrix<T> row_biased = attn::project(x, w, bias.transpose());
    CHECK(biased == row_biased);
    for (attn::Index i = 0; i < 5; ++i)
        for (attn::Index j = 0; j < 3; ++j)
            CHECK(std::abs(double(biased(i, j)) - (expected[i][j] + double(bias(j)))) < attn::test::tolerance<T>());
}

TEST_CASE("project: accepts expressions without copying them first") {
    const auto x = random_matrix<double>(6, 8, 4);
    const auto w = random_matrix<double>(8, 8, 5);
    const attn::Matrix<double> a = attn::project(x.topRows(3), w.leftCols(4));
    const attn::Matrix<double> b =
        attn::project(attn::Matrix<double>(x.topRows(3)), attn::Matrix<double>(w.leftCols(4)));
    CHECK(a == b);
}

TEST_CASE("project_qkv keeps queries, keys and values as separate matrices") {
    const auto x = random_matrix<float>(4, 8, 6);
    const auto wq = random_matrix<float>(8, 4, 7), wk = random_matrix<float>(8, 4, 8),
               wv = random_matrix<float>(8, 6, 9);
    const auto qkv = attn::project_qkv(x, wq, wk, wv);
    CHECK(qkv.queries == attn::project(x, wq));
    CHECK(qkv.keys == attn::project(x, wk));
    CHECK(qkv.values == attn::project(x, wv));
    CHECK(qkv.values.cols() == 6);
}

TEST_CASE("project: mismatched or empty shapes raise shape_error naming the argument") {
    const auto x = random_matrix<float>(4, 8, 1);
    CHECK_THROWS_WITH_AS(attn::project(x, random_matrix<float>(7, 3, 2)),
                         doctest::Contains("weight has 7 rows, expected 8"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::project(attn::Matrix<float>(0, 8), random_matrix<float>(8, 3, 2)),
                         doctest::Contains("x is empty"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::project(x, random_matrix<float>(8, 3, 2), attn::Vector<float>::Zero(4)),
                         doctest::Contains("bias must be a vector of 3"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::project_qkv(x, random_matrix<float>(8, 4, 2), random_matrix<float>(8, 5, 3),
                                           random_matrix<float>(8, 4, 4)),
                         doctest::Contains("w_key"), attn::shape_error);
}
