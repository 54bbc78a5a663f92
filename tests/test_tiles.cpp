// detail/tiles.hpp: the register-tiled row-major product the forward pass shares out between threads,
// against the naive product.
#include <doctest/doctest.h>
#include <attn/detail/tiles.hpp>

#include <vector>

#include "support.hpp"

using attn::Index;
using attn::test::random_matrix;

TEST_CASE_TEMPLATE("multiply_rows: c (+)= a · b matches the naive product for tile-sized and odd shapes", T, float,
                   double) {
    for (Index rows : {1, 2, 3, 5, 6, 7, 13, 24})
        for (Index depth : {1, 3, 32, 129})
            for (Index cols : {1, 7, 16, 33, 64, 100, 130}) {
                CAPTURE(rows);
                CAPTURE(depth);
                CAPTURE(cols);
                const auto a = random_matrix<T>(rows, depth, 1), b = random_matrix<T>(depth, cols, 2);
                const auto start = random_matrix<T>(rows, cols, 3);
                const auto expected = attn::test::naive_matmul(attn::test::to_table(a), attn::test::to_table(b));
                attn::Matrix<T> c(rows, cols);
                attn::detail::multiply_rows(a, b, c, false);
                const double tolerance = attn::test::tolerance<T>() * double(depth);
                CHECK(attn::test::max_abs_difference(c, expected) < tolerance);
                attn::Matrix<T> accumulated = start;
                attn::detail::multiply_rows(a, b, accumulated, true);
                CHECK(attn::test::max_abs_difference(attn::Matrix<T>(accumulated - start), expected) < tolerance);
            }
}

TEST_CASE_TEMPLATE("multiply_rows: blocks of rows and columns give the whole product's bits", T, float, double) {
    // a depth of 131: the tiles' blocks and a decoding step's groups of rows of b both end short
    const auto a = random_matrix<T>(160, 131, 4), b = random_matrix<T>(131, 384, 5);
    attn::Matrix<T> whole(160, 384), pieces(160, 384);
    attn::detail::multiply_rows(a, b, whole, false);
    const Index row_cuts[] = {0, 7, 80, 151, 160}, column_cuts[] = {0, 64, 128, 320, 384};
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            const Index rows = row_cuts[r + 1] - row_cuts[r], cols = column_cuts[c + 1] - column_cuts[c];
            auto block = pieces.block(row_cuts[r], column_cuts[c], rows, cols);
            attn::detail::multiply_rows(a.middleRows(row_cuts[r], rows), b.middleCols(column_cuts[c], cols), block,
                                        false);
        }
    CHECK(pieces == whole);
    // one or two rows (a decoding step) stream b row by row: still the whole product's bits
    for (Index row : {0, 5, 159}) {
        attn::Matrix<T> one(1, 384), two(2, 384);
        attn::detail::multiply_rows(a.middleRows(row, 1), b, one, false);
        CHECK(one == whole.middleRows(row, 1));
        if (row + 2 > 160) continue;
        attn::detail::multiply_rows(a.middleRows(row, 2), b, two, false);
        CHECK(two == whole.middleRows(row, 2));
    }
}

TEST_CASE_TEMPLATE("multiply_rows: b's rows 4 KiB apart, copied side by side, give the bits of b read in place", T,
                   float, double) {
    // With rows a multiple of 4 KiB apart and row tiles enough (800 rows), a block of b is
    // copied into a panel first; 16 bytes more between the rows and it is read where it lies.
    const Index rows = 800, depth = 70, cols = 300;
    const Index aliased = 4096 / Index(sizeof(T)), apart = aliased + 16 / Index(sizeof(T));
    const auto a = random_matrix<T>(rows, depth, 6), values = random_matrix<T>(depth, cols, 7);
    attn::Matrix<T> wide_aliased = attn::Matrix<T>::Zero(depth, aliased),
                    wide_apart = attn::Matrix<T>::Zero(depth, apart);
    wide_aliased.leftCols(cols) = values;
    wide_apart.leftCols(cols) = values;
    attn::Matrix<T> copied(rows, cols), in_place(rows, cols);
    attn::detail::multiply_rows(a, wide_aliased.leftCols(cols), copied, false);
    attn::detail::multiply_rows(a, wide_apart.leftCols(cols), in_place, false);
    CHECK(copied == in_place);
    const auto expected = attn::test::naive_matmul(attn::test::to_table(a), attn::test::to_table(values));
    CHECK(attn::test::max_abs_difference(copied, expected) < attn::test::tolerance<T>() * double(depth));
}

TEST_CASE_TEMPLATE("multiply_rows: empty shares (no rows, no columns, no depth) are accepted", T, float, double) {
    const auto a = random_matrix<T>(4, 3, 1), b = random_matrix<T>(3, 5, 2);
    attn::Matrix<T> c = random_matrix<T>(4, 5, 3);
    const attn::Matrix<T> before = c;
    attn::detail::multiply_rows(a.topRows(0), b, c.topRows(0), false);  // a thread's empty share of positions
    attn::detail::multiply_rows(a, b.leftCols(0), c.leftCols(0), true);
    CHECK(c == before);
    attn::detail::multiply_rows(a.leftCols(0), b.topRows(0), c, true);  // depth 0, accumulating: unchanged
    CHECK(c == before);
    attn::detail::multiply_rows(a.leftCols(0), b.topRows(0), c, false);  // depth 0: the empty sum
    CHECK(c.isZero(0));
}
