// Activations rounded to bfloat16 for BF16 weights (LoadOptions::bfloat16_activations,
// detail/kernels/bfloat16_pairs.hpp): the rounding against one written here from the
// definition, the products against a double reference on the rounded numbers (and far enough
// from the unrounded product that a product which skipped the rounding fails), the same bits
// however the columns are shared, and a model loaded with the option: every product of a
// prefill and of a decoding step rounds (the two agree to float rounding, where the converted
// model is a bfloat16 rounding away), one and two threads give the same bits, and the option
// is refused where it cannot apply.
#include <doctest/doctest.h>
#include <attn/detail/kernels/bfloat16_pairs.hpp>
#include <attn/detail/kernels/weight_panels.hpp>
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>
#include <attn/threads.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

using attn::Index;
using attn::detail::HalfFormat;
using attn::detail::HalfMatrix;
using attn::detail::WeightRows;
using attn::test::same_bits;

namespace {

const std::filesystem::path kBfloat16Checkpoints = std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf";

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

/// A (rows × cols) BF16 matrix of random numbers around 1 (2^-7 … 2^2, no subnormals), as
/// the row-major bits and packed.
HalfMatrix random_bfloat16(Index rows, Index cols, unsigned seed, std::vector<std::uint16_t>& row_major) {
    std::mt19937 engine(seed);
    row_major.resize(std::size_t(rows * cols));
    for (std::uint16_t& bits : row_major) {
        const std::uint32_t sign = engine() & 1u, exponent = 120 + engine() % 10;
        bits = std::uint16_t(sign << 15 | exponent << 7 | (engine() & 0x7Fu));
    }
    return HalfMatrix::packed(HalfFormat::bfloat16, rows, cols, row_major.data());
}

double bfloat16_value(std::uint16_t bits) {
    return double(attn::detail::bfloat16_to_float(bits));
}

const attn::Model<float>& loaded_bfloat16(bool rounded) {
    static std::unique_ptr<attn::Model<float>> models[2];
    auto& model = models[rounded ? 1 : 0];
    if (!model) {
        attn::LoadOptions options;
        options.weights = attn::WeightStorage::stored_16_bit;
        options.bfloat16_activations = rounded;
        model = std::make_unique<attn::Model<float>>(
            attn::Model<float>::load(kBfloat16Checkpoints / "llama_gqa_bf16_shards", options));
    }
    return *model;
}

/// max |x − y| / max |y| over the entries.
double relative_gap(const attn::Matrix<float>& x, const attn::Matrix<float>& y) {
    return double((x - y).cwiseAbs().maxCoeff() / y.cwiseAbs().maxCoeff());
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
                    const HalfMatrix w = random_bfloat16(depth, width, seed + 1, numbers);
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
                                    const double weight = bfloat16_value(numbers[std::size_t(t * width + offset + c)]);
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
    const HalfMatrix w = random_bfloat16(301, 200, 11, numbers);
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
}

TEST_CASE("bfloat16 activations: every product of a prefill and a decoding step rounds, on one or two threads") {
    const attn::Model<float>& exact = loaded_bfloat16(false);
    const attn::Model<float>& rounded = loaded_bfloat16(true);
    CHECK(rounded.bfloat16_activations());
    CHECK_FALSE(exact.bfloat16_activations());
    const Index vocabulary = rounded.settings().vocabulary_size;
    std::vector<int> ids;
    for (Index i = 0; i < std::min<Index>(rounded.settings().longest, 24); ++i)
        ids.push_back(int((i * 37 + 11) % vocabulary));
    attn::Workers two(2);
    attn::ForwardOptions one_thread, two_threads;
    two_threads.threads = two;
    const attn::Matrix<float> logits = rounded.forward(ids, one_thread).logits;
    // two workers share the products' columns: the same chains, the same bits
    CHECK(same_bits(rounded.forward(ids, two_threads).logits, logits));
    // a bfloat16 rounding from the converted model's logits
    const double from_exact = relative_gap(logits, exact.forward(ids, one_thread).logits);
    CHECK(from_exact > 1e-4);
    CHECK(from_exact < 5e-2);

    // decoding: each step's products (one row: the rounded numbers in float) against the
    // prefill's last row (pairs of depths where the build has them): float rounding apart
    for (attn::Workers* workers : {static_cast<attn::Workers*>(nullptr), &two}) {
        CAPTURE(workers != nullptr);
        attn::Decoder<float> decoder(rounded);
        attn::DecodeOptions options;
        if (workers) options.threads = *workers;
        decoder.append(std::vector<int>(ids.begin(), ids.begin() + 4), options);
        for (std::size_t i = 4; i < ids.size(); ++i) {
            CAPTURE(i);
            const attn::Matrix<float> step = decoder.step(ids[i], options).logits;
            const attn::Matrix<float> prefix_logits =
                rounded.forward(std::vector<int>(ids.begin(), ids.begin() + std::ptrdiff_t(i) + 1), one_thread)
                    .logits.bottomRows(1);
            CHECK(relative_gap(step, prefix_logits) < 1e-5);
        }
    }
}

TEST_CASE("bfloat16 activations: the option is refused without 16-bit storage or BF16 weights") {
    attn::LoadOptions options;
    options.bfloat16_activations = true;
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kBfloat16Checkpoints / "llama_gqa_bf16_shards", options),
                         doctest::Contains("LoadOptions::bfloat16_activations is for WeightStorage::stored_16_bit; "),
                         attn::argument_error);
    options.weights = attn::WeightStorage::stored_16_bit;
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kBfloat16Checkpoints / "gpt2_f16", options),
                         doctest::Contains("LoadOptions::bfloat16_activations is for BF16 weights; "),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kBfloat16Checkpoints / "gpt2_f16", options),
                         doctest::Contains("gpt2_f16 holds F16"), attn::argument_error);
}
