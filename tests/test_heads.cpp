#include <doctest/doctest.h>
#include <attn/core/heads.hpp>

#include "support.hpp"

TEST_CASE_TEMPLATE("split_heads: head h holds columns h·size … (h+1)·size − 1; merge_heads inverts it", T, float,
                   double) {
    const auto m = attn::test::random_matrix<T>(5, 12, 21);
    const attn::HeadStack<T> stack = attn::split_heads(m, 3);
    CHECK(stack.heads() == 3);
    CHECK(stack.rows() == 5);
    CHECK(stack.cols() == 4);
    for (attn::Index h = 0; h < 3; ++h) CHECK(stack.head(h) == m.middleCols(h * 4, 4));
    CHECK(stack(2, 4, 1) == m(4, 9));
    CHECK(attn::merge_heads(stack) == m);
}

TEST_CASE("split_heads matches NumPy's reshape(positions, heads, size).transpose(1, 0, 2)") {
    attn::Matrix<double> m(2, 4);
    m << 0, 1, 2, 3,  //
        4, 5, 6, 7;
    const auto stack = attn::split_heads(m, 2);
    // numpy: [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]
    const double expected[] = {0, 1, 4, 5, 2, 3, 6, 7};
    for (std::size_t i = 0; i < 8; ++i) CHECK(stack.data()[i] == expected[i]);
}

TEST_CASE("split_heads: heads not dividing the width, zero heads or empty input raise") {
    const auto m = attn::test::random_matrix<float>(3, 10, 1);
    CHECK_THROWS_WITH_AS(attn::split_heads(m, 4), doctest::Contains("heads = 4 does not divide the width 10"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::split_heads(m, 0), doctest::Contains("heads must be positive"), attn::argument_error);
    CHECK_THROWS_AS(attn::split_heads(attn::Matrix<float>(0, 4), 2), attn::shape_error);
    CHECK_THROWS_AS(attn::merge_heads(attn::HeadStack<float>()), attn::shape_error);
}
