// detail/kernels/tiles.hpp: the register-tiled row-major product the forward pass shares out between threads,
// against the naive product.
#include <doctest/doctest.h>
#include <attn/detail/kernels/tiles.hpp>

#include <algorithm>
#include <vector>

#include "support.hpp"

using attn::Index;
using attn::test::random_matrix;

TEST_CASE_TEMPLATE("multiply_rows: c (+)= a · b matches the naive product for tile-sized and odd shapes", T, float,
                   double) {
    for (Index rows : {1, 2, 3, 5, 6, 7, 13, 24})
        for (Index depth : {1, 3, 32, 129, 300})
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

TEST_CASE_TEMPLATE("multiply_rows: one or two rows, c in L1 or wider, any rows of b per pass give the tiles' bits", T,
                   float, double) {
    // 9,000 columns make c wider than kStreamedNarrowBytes (four rows of b a pass, nothing
    // prefetched); slices of 300 keep it in L1 (the source's way). A depth of 131 ends every
    // grouping short.
    const Index depth = 131, cols = 9000, slice = 300;
    const auto a = random_matrix<T>(8, depth, 8), b = random_matrix<T>(depth, cols, 9);
    attn::Matrix<T> tiled(8, cols);
    attn::detail::multiply_rows(a, b, tiled, false);  // 8 rows: the register tiles
    const attn::detail::DenseRows<T> rows_of_b{b.data(), cols};
    for (Index count : {1, 2}) {
        CAPTURE(count);
        const auto a_rows = a.topRows(count);
        attn::Matrix<T> wide(count, cols), sliced(count, cols), one(count, cols), four(count, cols);
        attn::detail::multiply_rows(a_rows, b, wide, false);
        for (Index first = 0; first < cols; first += slice) {
            auto block = sliced.middleCols(first, slice);
            attn::detail::multiply_rows(a_rows, b.middleCols(first, slice), block, false);
        }
        attn::detail::stream_few_rows<T, attn::detail::DenseRows<T>, 1, false>(count, depth, cols, a.data(), depth,
                                                                               rows_of_b, one.data(), cols, false);
        attn::detail::stream_few_rows<T, attn::detail::DenseRows<T>, 4, true>(count, depth, cols, a.data(), depth,
                                                                              rows_of_b, four.data(), cols, false);
        CHECK(wide == tiled.topRows(count));
        CHECK(sliced == tiled.topRows(count));
        CHECK(one == tiled.topRows(count));
        CHECK(four == tiled.topRows(count));
    }
}

TEST_CASE_TEMPLATE("multiply_rows: b copied side by side into panels gives the bits of b read in place", T, float,
                   double) {
    // A block of b is copied into a panel first when many row tiles read it (800 rows), or when
    // b's rows lie a multiple of 4 KiB apart (with 16 registers, from 8 row tiles) or of 64 KiB;
    // a share of 30 rows (5 tiles) with 16 bytes more between b's rows reads it where it lies.
    // Each row of c is the same multiply-add chains either way.
    const Index rows = 800, depth = 70, cols = 300, share = 30;
    const Index aliased = 4096 / Index(sizeof(T)), apart = aliased + 16 / Index(sizeof(T));
    const auto a = random_matrix<T>(rows, depth, 6), values = random_matrix<T>(depth, cols, 7);
    attn::Matrix<T> wide_aliased = attn::Matrix<T>::Zero(depth, aliased),
                    wide_apart = attn::Matrix<T>::Zero(depth, apart);
    wide_aliased.leftCols(cols) = values;
    wide_apart.leftCols(cols) = values;
    attn::Matrix<T> many_aliased(rows, cols), many_apart(rows, cols), in_place(rows, cols), shares_aliased(rows, cols);
    attn::detail::multiply_rows(a, wide_aliased.leftCols(cols), many_aliased, false);
    attn::detail::multiply_rows(a, wide_apart.leftCols(cols), many_apart, false);
    for (Index first = 0; first < rows; first += share) {
        const Index count = std::min(share, rows - first);
        attn::detail::multiply_rows(a.middleRows(first, count), wide_apart.leftCols(cols),
                                    in_place.middleRows(first, count), false);
        attn::detail::multiply_rows(a.middleRows(first, count), wide_aliased.leftCols(cols),
                                    shares_aliased.middleRows(first, count), false);
    }
    CHECK(many_aliased == in_place);
    CHECK(many_apart == in_place);
    CHECK(shares_aliased == in_place);
    // rows 64 KiB apart (an unembedding's 16,384 or 49,152 floats) share L2 sets too: copied from
    // 8 row tiles (60 rows) whatever the registers
    attn::Matrix<T> wide_l2_aliased = attn::Matrix<T>::Zero(depth, 65536 / Index(sizeof(T)));
    wide_l2_aliased.leftCols(cols) = values;
    attn::Matrix<T> l2_shares(rows, cols);
    for (Index first = 0; first < rows; first += 2 * share) {
        const Index count = std::min(2 * share, rows - first);
        attn::detail::multiply_rows(a.middleRows(first, count), wide_l2_aliased.leftCols(cols),
                                    l2_shares.middleRows(first, count), false);
    }
    CHECK(l2_shares == in_place);
    const auto expected = attn::test::naive_matmul(attn::test::to_table(a), attn::test::to_table(values));
    CHECK(attn::test::max_abs_difference(in_place, expected) < attn::test::tolerance<T>() * double(depth));
}

TEST_CASE_TEMPLATE(
    "multiply_rows: a's rows copied tile by tile, in one chunk or several, give the bits of a read in "
    "place",
    T, float, double) {
    // A product copies a's rows tile by tile when it has 256 rows or more, b has 1,024 columns or
    // more, or a's rows lie a multiple of 4 KiB apart; shares of 30 rows with 100 columns read a
    // where it lies. Rows 300 and 13 end their last tile short; 100 and 1,030 columns end with
    // columns past the last whole packet.
    const Index depth = 70, share = 30;
    const auto in_shares = [&](const attn::Matrix<T>& a, const attn::Matrix<T>& b) {
        attn::Matrix<T> c(a.rows(), b.cols());
        for (Index first = 0; first < a.rows(); first += share) {
            const Index count = std::min(share, a.rows() - first);
            for (Index col = 0; col < b.cols(); col += 100) {
                const Index width = std::min<Index>(100, b.cols() - col);
                auto block = c.block(first, col, count, width);
                attn::detail::multiply_rows(a.middleRows(first, count), b.middleCols(col, width), block, false);
            }
        }
        return c;
    };
    const auto a = random_matrix<T>(300, depth, 11), b = random_matrix<T>(depth, 100, 12);
    const attn::Matrix<T> expected = in_shares(a, b);
    attn::Matrix<T> long_a(300, 100);
    attn::detail::multiply_rows(a, b, long_a, false);
    CHECK(long_a == expected);
    const auto wide_b = random_matrix<T>(depth, 1030, 13), short_a = random_matrix<T>(13, depth, 14);
    attn::Matrix<T> wide(13, 1030);
    attn::detail::multiply_rows(short_a, wide_b, wide, false);
    CHECK(wide == in_shares(short_a, wide_b));
    attn::Matrix<T> apart = attn::Matrix<T>::Zero(20, 4096 / Index(sizeof(T)));  // rows 4 KiB apart
    apart.leftCols(depth) = a.topRows(20);
    attn::Matrix<T> aliased(20, 100);
    attn::detail::multiply_rows(apart.leftCols(depth), b, aliased, false);
    CHECK(aliased == expected.topRows(20));
    // several chunks: 16 tiles of 70 floats or doubles a chunk, so 300 rows take four
    const Index chunk_bytes = 16 * 6 * depth * Index(sizeof(T));
    attn::Matrix<T> chunked = random_matrix<T>(300, 100, 15), accumulated = chunked;
    attn::detail::multiply_many_rows_from(300, depth, 100, a.data(), depth, attn::detail::DenseRows<T>{b.data(), 100},
                                          chunked.data(), 100, false, chunk_bytes);
    CHECK(chunked == expected);
    attn::detail::multiply_many_rows_from(300, depth, 100, a.data(), depth, attn::detail::DenseRows<T>{b.data(), 100},
                                          accumulated.data(), 100, true, chunk_bytes);
    const auto start = random_matrix<T>(300, 100, 15);
    CHECK(attn::test::max_abs_difference(attn::Matrix<T>(accumulated - start), attn::test::to_table(expected)) <
          attn::test::tolerance<T>() * double(depth));
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

TEST_CASE_TEMPLATE("pack_tile_rows: a tile's rows side by side, short tiles padded with zeros, any depth", T, float,
                   double) {
    // Whole tiles of floats go four entries at a time (SSE): depths 0 … 13 end on every remainder
    constexpr Index kRows = attn::detail::RegisterTile<T>::kRows;
    const Index a_row = 17;  // rows further apart than the depth
    const auto a = random_matrix<T>(kRows, a_row, 21);
    for (Index in_tile = 1; in_tile <= kRows; ++in_tile)
        for (Index depth = 0; depth <= 13; ++depth) {
            CAPTURE(in_tile);
            CAPTURE(depth);
            std::vector<T> out(std::size_t(depth * kRows + 1), T(-7));  // one past the tile: never written
            attn::detail::pack_tile_rows(a.data(), a_row, in_tile, depth, out.data());
            for (Index t = 0; t < depth; ++t)
                for (Index r = 0; r < kRows; ++r)
                    REQUIRE(out[std::size_t(t * kRows + r)] == (r < in_tile ? a(r, t) : T(0)));
            CHECK(out.back() == T(-7));
        }
}
