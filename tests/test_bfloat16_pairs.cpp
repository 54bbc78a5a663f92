// Activations rounded to bfloat16 for BF16 weights (detail/kernels/bfloat16_pairs.hpp): the
// rounding against one written here from the definition, the products against a double reference
// on the rounded numbers (and far enough from the unrounded product that a product which skipped
// the rounding fails), the same bits however the columns or rows are shared. A model loaded with
// LoadOptions::bfloat16_activations is tested in test_half_weights.cpp.
#include <doctest/doctest.h>
#include <attn/detail/kernels/bfloat16_pairs.hpp>
#include <attn/detail/kernels/weight_panels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "half_numbers.hpp"
#include "support.hpp"

using attn::Index;
using attn::detail::HalfFormat;
using attn::detail::HalfMatrix;
using attn::detail::WeightRows;
using attn::test::same_bits;

namespace {

float float_of_bits(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

/// f rounded to the nearest bfloat16, ties to the even one, from the definition: the two
/// bfloat16 numbers either side of f (its upper 16 bits, and the next number away from 0)
/// compared in double. Finite f only.
double nearest_bfloat16_by_definition(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const std::uint32_t below = bits & 0xFFFF0000u, above = below + 0x10000u;  // toward 0, away from 0
    if (((bits >> 23) & 0xFFu) == 0xFFu) return double(f);                     // infinity
    const double low = double(float_of_bits(below));
    // past the largest finite bfloat16 the number away from 0 is 2^128, which rounds to infinity
    const bool overflows = ((above >> 23) & 0xFFu) == 0xFFu;
    const double high = overflows ? std::copysign(std::ldexp(1.0, 128), double(f)) : double(float_of_bits(above));
    const double to_low = std::abs(double(f) - low), to_high = std::abs(high - double(f));
    const bool up = to_high < to_low || (to_high == to_low && ((below >> 16) & 1u) != 0);  // a tie: the even one
    if (!up) return low;
    return overflows ? std::copysign(std::numeric_limits<double>::infinity(), double(f)) : high;
}

/// A BF16 number's value from its bits (half_numbers.hpp: not the library's conversion).
double bfloat16_of_bits(std::uint16_t bits) {
    return attn::test::independent_half_value(bits, HalfFormat::bfloat16);
}

}  // namespace

TEST_CASE("bfloat16 activations: a float rounds to the nearest bfloat16, ties to even") {
    // every upper half, with lower halves at and around the halfway point and the ends
    const std::uint32_t lower_halves[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
    for (std::uint32_t upper = 0; upper < 65536; ++upper)
        for (std::uint32_t lower : lower_halves) {
            const std::uint32_t bits = upper << 16 | lower;
            const float f = float_of_bits(bits);
            CAPTURE(bits);
            const float rounded = attn::detail::rounded_to_bfloat16(f);
            if (std::isnan(f)) {
                REQUIRE(std::isnan(rounded));
                continue;
            }
            REQUIRE(double(rounded) == nearest_bfloat16_by_definition(f));
            REQUIRE(attn::detail::float_to_bfloat16_nearest(f) == attn::detail::float_to_bfloat16_exact(rounded));
        }
}

TEST_CASE("bfloat16 activations: products on BF16 weights multiply the rounded activations") {
    const Index panel = HalfMatrix::kPanel;
    for (Index rows : {Index(1), Index(2), Index(3), Index(7), Index(13), Index(50)})
        for (Index depth : {Index(0), Index(1), Index(2), Index(19), Index(300)})
            for (Index cols : {Index(1), Index(15), Index(16), Index(17), Index(64), Index(100), Index(200)})
                // the block's first column: a panel's first, a packet's inside a panel, and one inside a packet
                for (Index offset : {Index(0), panel - 16, Index(3)}) {
                    CAPTURE(rows);
                    CAPTURE(depth);
                    CAPTURE(cols);
                    CAPTURE(offset);
                    const unsigned seed = unsigned(rows * 1000003 + depth * 1009 + cols + offset * 7);
                    const attn::Matrix<float> a = attn::test::random_matrix<float>(rows, depth, seed);
                    const Index width = offset + cols + 5;
                    std::vector<std::uint16_t> numbers;
                    const HalfMatrix w =
                        attn::test::random_half_matrix(depth, width, HalfFormat::bfloat16, seed + 1, &numbers);
                    auto block = WeightRows<float>::of(w).middleCols(offset, cols);
                    block.bfloat16_activations = true;
                    for (bool accumulate : {false, true}) {
                        CAPTURE(accumulate);
                        const attn::Matrix<float> start = attn::test::random_matrix<float>(rows, cols, seed + 2);
                        attn::Matrix<float> product = start;
                        attn::detail::multiply_rows(a, block, product, accumulate);
                        double worst = 0.0, unrounded_gap = 0.0;
                        for (Index r = 0; r < rows; ++r)
                            for (Index c = 0; c < cols; ++c) {
                                double sum = accumulate ? double(start(r, c)) : 0.0, scale = std::abs(sum);
                                double unrounded = sum;
                                for (Index t = 0; t < depth; ++t) {
                                    const double weight =
                                        bfloat16_of_bits(numbers[std::size_t(t * width + offset + c)]);
                                    const double term = nearest_bfloat16_by_definition(a(r, t)) * weight;
                                    sum += term;
                                    unrounded += double(a(r, t)) * weight;
                                    scale += std::abs(term);
                                }
                                worst = std::max(worst, std::abs(double(product(r, c)) - sum) / (scale + 1e-30));
                                unrounded_gap = std::max(unrounded_gap, std::abs(unrounded - sum) / (scale + 1e-30));
                            }
                        CHECK(worst < 1e-5);
                        // the rounding moves these products further than float rounding does: a
                        // product that skipped it would miss the rounded reference by that much
                        if (depth >= 19 && rows * cols >= 16) {
                            CHECK(unrounded_gap > 1e-5);
                            CHECK(unrounded_gap > 10 * worst);
                        }
                    }
                }
}

TEST_CASE("bfloat16 activations: a product shared by columns or rows gives the whole product's bits") {
    std::vector<std::uint16_t> numbers;
    const HalfMatrix w = attn::test::random_half_matrix(301, 200, HalfFormat::bfloat16, 11, &numbers);
    const attn::Matrix<float> a = attn::test::random_matrix<float>(40, 301, 12);
    auto whole = WeightRows<float>::of(w);
    whole.bfloat16_activations = true;
    attn::Matrix<float> expected(40, 200), shared(40, 200);
    attn::detail::multiply_rows(a, whole, expected, false);
    // columns cut inside a panel and inside a packet, rows cut into pieces of more than two
    for (Index cut : {Index(16), Index(80), Index(37)}) {
        CAPTURE(cut);
        shared.setConstant(-1.0f);
        attn::detail::multiply_rows(a, whole.middleCols(0, cut), shared.leftCols(cut), false);
        attn::detail::multiply_rows(a, whole.middleCols(cut, 200 - cut), shared.rightCols(200 - cut), false);
        CHECK(same_bits(shared, expected));
    }
    shared.setConstant(-1.0f);
    attn::detail::multiply_rows(a.topRows(17), whole, shared.topRows(17), false);
    attn::detail::multiply_rows(a.bottomRows(23), whole, shared.bottomRows(23), false);
    CHECK(same_bits(shared, expected));

    // a long depth: a's pairs laid out in chunks of rows (kPairChunkBytes), the same chains
    std::vector<std::uint16_t> deep_numbers;
    const HalfMatrix deep = attn::test::random_half_matrix(3001, 80, HalfFormat::bfloat16, 13, &deep_numbers);
    auto deep_rows = WeightRows<float>::of(deep);
    deep_rows.bfloat16_activations = true;
    const Index tile_bytes = (3001 + 1) / 2 * attn::detail::kernel::kPairTileRows * Index(sizeof(std::uint32_t));
    REQUIRE(attn::detail::kPairChunkBytes / tile_bytes * attn::detail::kernel::kPairTileRows < 200);
    const attn::Matrix<float> long_a = attn::test::random_matrix<float>(200, 3001, 14);
    attn::Matrix<float> in_chunks(200, 80), by_pieces(200, 80);
    attn::detail::multiply_rows(long_a, deep_rows, in_chunks, false);
    for (Index first = 0; first < 200; first += 50)
        attn::detail::multiply_rows(long_a.middleRows(first, 50), deep_rows, by_pieces.middleRows(first, 50), false);
    CHECK(same_bits(in_chunks, by_pieces));
    double worst = 0.0;
    for (Index r = 0; r < 200; r += 7)
        for (Index c = 0; c < 80; ++c) {
            double sum = 0.0, scale = 0.0;
            for (Index t = 0; t < 3001; ++t) {
                const double term = nearest_bfloat16_by_definition(long_a(r, t)) *
                                    bfloat16_of_bits(deep_numbers[std::size_t(t * 80 + c)]);
                sum += term;
                scale += std::abs(term);
            }
            worst = std::max(worst, std::abs(double(in_chunks(r, c)) - sum) / scale);
        }
    CHECK(worst < 1e-5);

    // a block of w's rows (a head's rows of Wo) is the product on a matrix of those rows alone
    const std::vector<std::uint16_t> block_numbers(numbers.begin() + 16 * 200, numbers.begin() + 56 * 200);
    const HalfMatrix block = HalfMatrix::packed(HalfFormat::bfloat16, 40, 200, block_numbers.data());
    auto rows_of_block = WeightRows<float>::of(block);
    rows_of_block.bfloat16_activations = true;
    const attn::Matrix<float> a_block = a.middleCols(16, 40);
    attn::Matrix<float> from_rows(40, 200), from_block(40, 200);
    attn::detail::multiply_rows(a_block, whole.middleRows(16, 40), from_rows, false);
    attn::detail::multiply_rows(a_block, rows_of_block, from_block, false);
    CHECK(same_bits(from_rows, from_block));
}
