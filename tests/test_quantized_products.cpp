// The products on weights kept in GGUF's blocks (detail/kernels/quantized_weights.hpp): each
// format's in-register decoding gives quantized.hpp's reference values bit for bit, and each
// product, matrix × vector (a decoding step) and matrix × matrix (a prefill), equals
// dequantize-then-multiply within float summation's bound over the depth K:
//
//   |ĉ − c| ≤ γ_K · Σ_t |a_t| · |w_t|,   γ_K = K·u / (1 − K·u),   u = 2⁻²⁴,
//
// c the float64 product of a and the dequantized matrix (the values are exact in float, so the
// only error is the float sums'). Every partial sum of a product is a float addition or fused
// multiply-add of the terms a_t · w_t (each exact with a fused multiply-add, or rounded once)
// and of earlier partial sums, with at most K roundings on any term's path (a chain over the
// depth: K; packet lanes then a horizontal sum: K/L + log₂ L); the standard bound of such sums
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1) is γ_K Σ|a_t w_t|. A decoding
// step on a format with a min (Q4_1, Q5_1, Q4_K, Q5_K) sums s Σ a v and o Σ a apart: γ_{K+2}
// Σ|a_t| (|w_t| + 2|o_t|) there (check_product). Where a decoding step multiplies the codes by
// activation digits (quantized_digits.hpp, AVX-512 VNNI), a_t is replaced by its digits' value,
// within δ_t = max |a over t's chunk of 32| / (63.75 · 2^15) of it, before the exact integer sums:
// the bound gains Σ_t (|w_t| + |o_t|) · δ_t. The prefill path is also the float kernel's
// product on the dequantized matrix, bit for bit. Measured: see the MESSAGEs.
#include <doctest/doctest.h>
#include <attn/detail/kernels/quantized.hpp>
#include <attn/detail/kernels/quantized_digits.hpp>
#include <attn/detail/kernels/quantized_weights.hpp>
#include <attn/detail/kernels/tiles.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace quantized_kernels {

using attn::detail::Index;
using attn::detail::QuantFormat;
using attn::detail::QuantizedMatrix;

constexpr QuantFormat kFormats[] = {QuantFormat::q8_0, QuantFormat::q4_0, QuantFormat::q4_1, QuantFormat::q5_0,
                                    QuantFormat::q5_1, QuantFormat::q4_k, QuantFormat::q5_k, QuantFormat::q6_k};

/// A random finite F16 number of magnitude 2^-10 … 2^-1 (or, one time in eight, subnormal).
std::uint16_t random_half(std::mt19937& engine) {
    const std::uint32_t sign = engine() & 1u;
    const std::uint32_t exponent = engine() % 8 == 0 ? 0 : 5 + engine() % 10;
    return std::uint16_t(sign << 15 | exponent << 10 | (engine() & 0x3FFu));
}

void put_half(std::uint8_t* p, std::uint16_t bits) {
    p[0] = std::uint8_t(bits & 0xFF);
    p[1] = std::uint8_t(bits >> 8);
}

/// A (rows × cols) matrix in one format or in runs of several: every code, scale and min
/// random bytes (every bit pattern is a valid code), every F16 scale random and finite.
QuantizedMatrix random_matrix(Index cols, const std::vector<std::pair<QuantFormat, Index>>& runs, unsigned seed) {
    std::mt19937 engine(seed);
    QuantizedMatrix m = QuantizedMatrix::sized(cols, runs);
    for (std::uint8_t& byte : m.bytes) byte = std::uint8_t(engine());
    for (const attn::detail::QuantizedRun& run : m.runs) {
        const Index blocks = run.rows * cols / attn::detail::quant_block_values(run.format);
        const Index width = attn::detail::quant_block_bytes(run.format);
        for (Index b = 0; b < blocks; ++b) {
            std::uint8_t* block = m.bytes.data() + run.offset + std::size_t(b * width);
            if (run.format == QuantFormat::q6_k) {
                put_half(block + 208, random_half(engine));
            } else {
                put_half(block, random_half(engine));
                if (attn::detail::has_min(run.format)) put_half(block + 2, random_half(engine));
            }
        }
    }
    return m;
}

/// Row r of m decoded by quantized.hpp's reference decoders, one block at a time.
std::vector<float> reference_row(const QuantizedMatrix& m, Index r) {
    const QuantFormat format = m.run_of(r).format;
    const Index values = attn::detail::quant_block_values(format), width = attn::detail::quant_block_bytes(format);
    std::vector<float> out(std::size_t(m.cols));
    for (Index b = 0; b < m.cols / values; ++b) {
        const std::uint8_t* block = m.row(r) + b * width;
        float* o = out.data() + b * values;
        switch (format) {
            case QuantFormat::q8_0:
                attn::detail::dequantize_q8_0_block(block, o);
                break;
            case QuantFormat::q4_0:
                attn::detail::dequantize_q4_0_block(block, o);
                break;
            case QuantFormat::q4_1:
                attn::detail::dequantize_q4_1_block(block, o);
                break;
            case QuantFormat::q5_0:
                attn::detail::dequantize_q5_0_block(block, o);
                break;
            case QuantFormat::q5_1:
                attn::detail::dequantize_q5_1_block(block, o);
                break;
            case QuantFormat::q4_k:
                attn::detail::dequantize_q4_k_block(block, o);
                break;
            case QuantFormat::q5_k:
                attn::detail::dequantize_q5_k_block(block, o);
                break;
            case QuantFormat::q6_k:
                attn::detail::dequantize_q6_k_block(block, o);
                break;
        }
    }
    return out;
}

/// |o| of every value of row r: the min its format adds (Q4_1, Q5_1: m; Q4_K, Q5_K: dmin times its
/// sub-block's min), 0 for the formats without one.
std::vector<double> row_mins(const QuantizedMatrix& m, Index r) {
    const QuantFormat format = m.run_of(r).format;
    std::vector<double> out(std::size_t(m.cols), 0.0);
    if (!attn::detail::has_min(format)) return out;
    const Index values = attn::detail::quant_block_values(format), width = attn::detail::quant_block_bytes(format);
    for (Index b = 0; b < m.cols / values; ++b) {
        const std::uint8_t* block = m.row(r) + b * width;
        for (Index i = 0; i < values; ++i) {
            const double min = values == 32 ? double(attn::detail::load_half(block + 2))
                                            : double(attn::detail::load_half(block + 2)) *
                                                  attn::detail::k_scale_and_min(block + 4, std::size_t(i / 32)).min;
            out[std::size_t(b * values + i)] = std::abs(min);
        }
    }
    return out;
}

/// The dequantized matrix, transposed: (cols × rows), as the float kernel reads weights (in × out).
attn::detail::RowMajorMatrix<float> dequantized_transposed(const QuantizedMatrix& m) {
    attn::detail::RowMajorMatrix<float> out(m.cols, m.rows);
    for (Index r = 0; r < m.rows; ++r) {
        const std::vector<float> row = reference_row(m, r);
        for (Index t = 0; t < m.cols; ++t) out(t, r) = row[std::size_t(t)];
    }
    return out;
}

attn::detail::RowMajorMatrix<float> random_activations(Index n, Index depth, unsigned seed) {
    std::mt19937 engine(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    attn::detail::RowMajorMatrix<float> a(n, depth);
    for (Index i = 0; i < a.size(); ++i) a.data()[i] = normal(engine);
    return a;
}

/// The same numbers: equal bits, but for the sign of a zero (d · 0 is −0 for a negative d in the
/// reference decoders, d · u − d · u is +0 in registers: the same weight).
bool same_values(const float* a, const float* b, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
        if (!(a[i] == b[i]) || (a[i] != 0 && std::memcmp(a + i, b + i, sizeof(float)) != 0)) {
            INFO("value ", i, ": ", a[i], " against ", b[i]);
            CHECK(a[i] == b[i]);
            return false;
        }
    return true;
}

/// δ of the chunk of 32 values of row r of a from column `first`: max |a| / (63.75 · 2^15), how far
/// the activation digits may be from each of its values.
double digit_resolution(const attn::detail::RowMajorMatrix<float>& a, Index r, Index first) {
    double largest = 0;
    for (Index t = first; t < first + 32 && t < a.cols(); ++t) largest = std::max(largest, std::abs(double(a(r, t))));
    return largest / (63.75 * 32768.0);
}

struct Checked {
    double worst = 0;  ///< the largest |ĉ − c| / (γ_K Σ|a w|) seen
};

/// c (+)= a · W(first_row …, from …)ᵀ against the float64 product of the dequantized values, within
/// γ_K Σ|a_t w_t| (onto c₀: γ_{K+1} (|c₀| + Σ|a_t w_t|), c₀ one term more). A decoding step on a
/// format with a min sums the codes' products and the min's apart (Σ a w = s Σ a v + o Σ a), which
/// may cancel, and its w is the exact s·v + o, not the decoders' rounded one: γ_{K+2} Σ|a_t| (|w_t| +
/// 2|o_t|) there. On activation digits, Σ_t (|w_t| + |o_t|) δ_t more (see the top of the file).
void check_product(const QuantizedMatrix& m, const attn::detail::RowMajorMatrix<float>& w, Index n, Index first_row,
                   Index count, Index from, Index depth, bool accumulate, Checked& checked) {
    INFO("first row ", first_row, ", count ", count, ", from ", from, ", depth ", depth, ", accumulate ", accumulate);
    const auto a = random_activations(n, depth + 3, unsigned(n * 131 + count * 7 + from));
    attn::detail::RowMajorMatrix<float> c(n, count + 2);
    const auto start = random_activations(n, count + 2, 99);
    c = start;
    attn::detail::multiply_quantized(n, depth, a.data() + 3, a.cols(), m, first_row, count, from, c.data(), c.cols(),
                                     accumulate);
    // accumulating onto c, its number is one term more: γ_{K+1} (|c₀| + Σ|a w|)
    const double u = std::ldexp(1.0, -24);
    for (Index r = 0; r < n; ++r) {
        for (Index j = 0; j < count; ++j) {
            const bool streamed_min =
                n <= attn::detail::kStreamedRows && attn::detail::has_min(m.run_of(first_row + j).format);
            const std::vector<double> mins =
                streamed_min ? row_mins(m, first_row + j) : std::vector<double>(std::size_t(m.cols), 0.0);
            const double terms = double(depth + (accumulate ? 1 : 0) + (streamed_min ? 2 : 0));
            const double gamma = terms * u / (1.0 - terms * u);
            const bool digits = attn::detail::quant::takes_digits(m.run_of(first_row + j).format, n, from, depth);
            double exact = 0, magnitude = 0, digits_error = 0;
            for (Index t = 0; t < depth; ++t) {
                const double weight = double(w(from + t, first_row + j)), min = mins[std::size_t(from + t)];
                const double term = double(a(r, t + 3)) * weight;
                exact += term;
                magnitude += std::abs(term) + 2 * std::abs(double(a(r, t + 3))) * min;
                if (digits) digits_error += (std::abs(weight) + min) * digit_resolution(a, r, 3 + t / 32 * 32);
            }
            const double base = accumulate ? double(start(r, j)) : 0.0;
            const double error = std::abs(double(c(r, j)) - (base + exact));
            const double bound = gamma * (magnitude + std::abs(base)) + digits_error;
            if (bound > 0) checked.worst = std::max(checked.worst, error / bound);
            if (!(error <= bound)) {
                INFO("row ", r, " column ", j, ": ", c(r, j), " against ", base + exact, ", bound ", bound);
                CHECK(error <= bound);
                return;
            }
        }
        for (Index j = count; j < count + 2; ++j) CHECK(c(r, j) == start(r, j));  // nothing past the columns written
    }
}

TEST_CASE("quantized weights: in-register decoding gives the reference decoders' values, bit for bit") {
    for (const QuantFormat format : kFormats) {
        INFO(std::string(attn::detail::quant_format_name(format)));
        const QuantizedMatrix m = random_matrix(512, {{format, 6}}, 7);
        for (Index r = 0; r < m.rows; ++r) {
            const std::vector<float> reference = reference_row(m, r);
            std::vector<float> decoded(std::size_t(m.cols));
            attn::detail::dequantize_row(m, r, 0, m.cols, decoded.data());
            CHECK(same_values(decoded.data(), reference.data(), decoded.size()));
            std::vector<float> part(45);  // a span across chunk and block boundaries
            attn::detail::dequantize_row(m, r, 243, 45, part.data());
            CHECK(same_values(part.data(), reference.data() + 243, part.size()));
        }
    }
}

TEST_CASE("quantized weights: a decoding step's integer codes times their factors are the reference decoders' values") {
    // The streamed product multiplies a chunk's codes v (chunk_code_packets, signed where the
    // format's offset is a whole multiple of its scale) by their scale and adds the offset (a min)
    // apart: scale · v + offset must be each value the reference decoders give, exactly.
    namespace quant = attn::detail::quant;
    for (const QuantFormat format : kFormats) {
        INFO(std::string(attn::detail::quant_format_name(format)));
        const QuantizedMatrix m = random_matrix(512, {{format, 6}}, 17);
        quant::with_format(format, [&](auto tag) {
            constexpr QuantFormat F = decltype(tag)::value;
            for (Index r = 0; r < m.rows; ++r) {
                const std::vector<float> reference = reference_row(m, r);
                for (Index chunk = 0; chunk < m.cols / 32; ++chunk) {
                    Index sub = 0;
                    const std::uint8_t* block = quant::chunk_block<F>(m.row(r), chunk, sub);
                    const quant::ChunkFactors factors = quant::chunk_factors<F>(block, sub);
                    alignas(64) float codes[32];
                    quant::Packet packets[quant::kChunkPackets];
                    quant::chunk_code_packets<F>(block, sub, packets);
                    for (int p = 0; p < quant::kChunkPackets; ++p)
                        Eigen::internal::pstore(codes + p * quant::kLanes, packets[p]);
                    for (Index i = 0; i < 32; ++i) {
                        const float value = factors.scale[i / 16] * codes[i] + factors.offset;
                        const float expected = reference[std::size_t(chunk * 32 + i)];
                        if (value != expected) {
                            INFO("row ", r, ", value ", chunk * 32 + i, ": code ", codes[i]);
                            CHECK(value == expected);
                            return;
                        }
                    }
                }
            }
        });
    }
}

TEST_CASE("quantized weights: each product equals dequantize-then-multiply within float summation's bound") {
    for (const QuantFormat format : kFormats) {
        INFO(std::string(attn::detail::quant_format_name(format)));
        for (const Index cols : {Index(256), Index(768)}) {
            const Index rows = 37;  // 9 groups of 4 rows and one more; 2 packets and more, and a tail
            const QuantizedMatrix m = random_matrix(cols, {{format, rows}}, unsigned(cols));
            const auto w = dequantized_transposed(m);
            Checked checked;
            for (const Index n : {Index(1), Index(2), Index(3), Index(7), Index(13)}) {
                INFO("rows of a: ", n, ", depth ", cols);
                check_product(m, w, n, 0, rows, 0, cols, false, checked);
                check_product(m, w, n, 5, 19, 0, cols, true, checked);         // some rows, onto c
                check_product(m, w, n, 3, 17, 64, cols - 96, false, checked);  // a window of the depth
                check_product(m, w, n, 2, 11, 64, cols - 128, true, checked);  // whole groups of 64, mid-block
                check_product(m, w, n, 1, 9, 40, 70, false, checked);          // not on chunk boundaries
                check_product(m, w, n, 0, 6, 33, 20, true, checked);           // inside one chunk
                check_product(m, w, n, 0, 4, 0, 0, false, checked);            // no depth: zeros
            }
            MESSAGE(std::string(attn::detail::quant_format_name(format)), ", depth ", cols, ": largest error ",
                    checked.worst, " of the bound");
        }
    }
}

TEST_CASE("quantized weights: a prefill's product has the float kernel's bits on the dequantized matrix") {
    // rows of a 4 KiB apart (their copy tile by tile), 260 rows (the copy again, a's rows
    // unaligned), a window of W's columns from 256, columns past the last whole packet, a depth
    // longer than a column's piece, accumulating
    struct Case {
        Index n, a_row, depth, count, from, cols;
        bool accumulate;
    };
    for (const Case& k : {Case{11, 1024, 1024, 70, 0, 1024, false}, Case{260, 515, 512, 37, 256, 768, true},
                          Case{7, 600, 256, 19, 512, 768, false}}) {
        for (const QuantFormat format : kFormats) {
            INFO(std::string(attn::detail::quant_format_name(format)), ": ", k.n, " rows, depth ", k.depth, ", ",
                 k.count, " columns from ", k.from);
            const QuantizedMatrix m = random_matrix(k.cols, {{format, k.count}}, 3);
            const auto w = dequantized_transposed(m);  // (cols × count)
            const auto a = random_activations(k.n, k.a_row, 5);
            const auto start = random_activations(k.n, k.count, 9);
            attn::detail::RowMajorMatrix<float> quantized = start, dense = start;
            attn::detail::multiply_quantized(k.n, k.depth, a.data(), k.a_row, m, 0, k.count, k.from, quantized.data(),
                                             k.count, k.accumulate);
            attn::detail::multiply_rows(a.leftCols(k.depth), w.middleRows(k.from, k.depth), dense, k.accumulate);
            CHECK(std::memcmp(quantized.data(), dense.data(), std::size_t(dense.size()) * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("quantized weights: shared by columns or rows, every entry has the same bits") {
    const QuantizedMatrix m =
        random_matrix(512, {{QuantFormat::q4_k, 8}, {QuantFormat::q6_k, 12}, {QuantFormat::q8_0, 5}}, 11);
    CHECK(m.runs.size() == 3);
    const auto w = dequantized_transposed(m);
    for (const Index n : {Index(1), Index(2), Index(40)}) {
        const auto a = random_activations(n, 512, 17);
        attn::detail::RowMajorMatrix<float> whole(n, 25), shared(n, 25);
        attn::detail::multiply_quantized(n, 512, a.data(), 512, m, 0, 25, 0, whole.data(), 25, false);
        for (const Index cut : {Index(0), Index(3), Index(10), Index(16), Index(25)}) {
            shared.setConstant(-1.0f);
            attn::detail::multiply_quantized(n, 512, a.data(), 512, m, 0, cut, 0, shared.data(), 25, false);
            attn::detail::multiply_quantized(n, 512, a.data(), 512, m, cut, 25 - cut, 0, shared.data() + cut, 25,
                                             false);
            CHECK(std::memcmp(whole.data(), shared.data(), std::size_t(whole.size()) * sizeof(float)) == 0);
        }
        if (n > 2) {  // rows shared: each share's entries as in the whole (a share of more than 2 rows)
            attn::detail::multiply_quantized(n / 2, 512, a.data(), 512, m, 0, 25, 0, shared.data(), 25, false);
            attn::detail::multiply_quantized(n - n / 2, 512, a.data() + n / 2 * 512, 512, m, 0, 25, 0,
                                             shared.data() + n / 2 * 25, 25, false);
            CHECK(std::memcmp(whole.data(), shared.data(), std::size_t(whole.size()) * sizeof(float)) == 0);
        }
        Checked checked;
        check_product(m, w, n, 0, 25, 0, 512, false, checked);
    }
}

TEST_CASE("quantized weights: activation digits keep each value within max |chunk| / (63.75 · 2^15)") {
#if defined(ATTN_DETAIL_QUANTIZED_DIGITS)
    using attn::detail::quant::ActivationDigits;
    std::mt19937 engine(23);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    // chunks of 32: ordinary, scaled far up and down, all zero, largest at the edges of the
    // range (2^-100, just under 2^100), at 127.5 · 2^k (X1 would round to 128: the exponent
    // steps up), subnormals beside a normal value, a lone nonzero value
    std::vector<float> x(64 * 8);
    for (float& v : x) v = normal(engine);
    for (Index i = 32; i < 64; ++i) x[std::size_t(i)] *= 1e20f;
    for (Index i = 64; i < 96; ++i) x[std::size_t(i)] *= 1e-20f;
    for (Index i = 96; i < 128; ++i) x[std::size_t(i)] = 0.0f;
    for (Index i = 128; i < 160; ++i) x[std::size_t(i)] = std::ldexp(x[std::size_t(i)], -103);
    x[128] = std::ldexp(1.0f, -100);
    for (Index i = 160; i < 192; ++i) x[std::size_t(i)] = std::ldexp(x[std::size_t(i)], 95);
    x[160] = std::nextafter(std::ldexp(1.0f, 100), 0.0f);
    for (Index i = 192; i < 224; ++i) x[std::size_t(i)] = std::ldexp(x[std::size_t(i)], 9);
    x[200] = -127.5f * 512.0f;
    x[201] = 127.49999f * 512.0f;
    for (Index i = 224; i < 256; ++i) x[std::size_t(i)] = std::numeric_limits<float>::denorm_min() * float(i);
    x[230] = 1.0f;
    for (Index i = 256; i < 288; ++i) x[std::size_t(i)] = 0.0f;
    x[270] = -3.0f;
    const Index count = Index(x.size());
    REQUIRE(ActivationDigits::representable(x.data(), count));
    auto digits = std::make_unique<ActivationDigits>();
    for (const int bias : {0, 16, 32}) {
        digits->prepare(x.data(), count, bias);
        for (Index c = 0; c < count / 32; ++c) {
            double largest = 0, sum = 0;
            for (Index t = 32 * c; t < 32 * c + 32; ++t) {
                largest = std::max(largest, std::abs(double(x[std::size_t(t)])));
                sum += double(x[std::size_t(t)]);
            }
            const double unit = double(digits->scale[c * 8]);  // 2^(e − 14)
            for (Index t = 32 * c; t < 32 * c + 32; ++t) {
                const int d1 = digits->digit[0][t], d2 = digits->digit[1][t], d3 = digits->digit[2][t];
                CHECK(std::abs(d1) <= 127);
                CHECK(std::abs(d2) <= 64);
                CHECK(std::abs(d3) <= 64);
                const double value = unit * (double(d1) * 16384.0 + double(d2) * 128.0 + double(d3));
                const double error = std::abs(value - double(x[std::size_t(t)]));
                if (!(error <= largest / (63.75 * 32768.0))) {
                    INFO("value ", t, ": ", x[std::size_t(t)], " as ", value, ", chunk's largest ", largest);
                    CHECK(error <= largest / (63.75 * 32768.0));
                }
            }
            // a chunk's lanes of 4 share its scale; its float sum within float summation's bound
            for (Index l = c * 8; l < c * 8 + 8; ++l) CHECK(digits->scale[l] == digits->scale[c * 8]);
            double magnitude = 0;
            for (Index t = 32 * c; t < 32 * c + 32; ++t) magnitude += std::abs(double(x[std::size_t(t)]));
            CHECK(std::abs(double(*digits->chunk_sum(c)) - sum) <= 32 * std::ldexp(1.0, -23) * magnitude);
        }
        if (bias != 0)
            for (Index l = 0; l < count / 4; ++l) {
                std::int64_t lane = 0;
                for (Index t = 4 * l; t < 4 * l + 4; ++t)
                    lane += std::int64_t(digits->digit[0][t]) * 16384 + digits->digit[1][t] * 128 + digits->digit[2][t];
                CHECK(digits->bias_sum[l] == bias * lane);
            }
    }
    CHECK(*digits->chunk_sum(-8) == 0.0f);  // the padding a K block's chunks may reach
    CHECK(*digits->chunk_sum(count / 32 + 7) == 0.0f);
    // outside the range: not finite, 2^100 and more, a nonzero chunk under 2^-100
    const auto outside = [&](float value, Index at) {
        std::vector<float> y(x.begin(), x.begin() + 64);
        y[std::size_t(at)] = value;
        if (value != 0 && std::abs(value) < 1.0f)
            for (Index t = at / 32 * 32; t < at / 32 * 32 + 32; ++t) y[std::size_t(t)] = t == at ? value : 0.0f;
        return !ActivationDigits::representable(y.data(), 64);
    };
    CHECK(outside(std::numeric_limits<float>::infinity(), 3));
    CHECK(outside(-std::numeric_limits<float>::infinity(), 40));
    CHECK(outside(std::numeric_limits<float>::quiet_NaN(), 63));
    CHECK(outside(std::ldexp(1.0f, 100), 0));
    CHECK(outside(std::ldexp(1.0f, -101), 33));
    CHECK_FALSE(outside(std::ldexp(1.0f, -100), 33));
#else
    MESSAGE("this build has no activation digits (AVX-512 VNNI): nothing to test");
#endif
}

TEST_CASE(
    "quantized weights: a decoding step on digits takes a long depth in pieces; values outside their range take the "
    "float product") {
    namespace quant = attn::detail::quant;
    for (const QuantFormat format : kFormats) {
        INFO(std::string(attn::detail::quant_format_name(format)));
        // more than ActivationDigits::kDepth (4,096) values: two pieces, which may meet or end mid-block
        const Index cols = 4096 + 768, rows = 9;
        const QuantizedMatrix m = random_matrix(cols, {{format, rows}}, 29);
        const auto w = dequantized_transposed(m);
        Checked checked;
        for (const Index n : {Index(1), Index(2)}) {
            check_product(m, w, n, 0, rows, 0, cols, false, checked);
            check_product(m, w, n, 1, 5, 256, cols - 320, true, checked);
            check_product(m, w, n, 2, 4, 64, cols - 128, false, checked);  // the pieces meet mid-block
        }
        MESSAGE(std::string(attn::detail::quant_format_name(format)), ", depth ", cols, ": largest error ",
                checked.worst, " of the bound");
        // one row of a with a value outside the digits' range: the float product's bits, which carry
        // an infinity or NaN on, and are within their bound for a large or tiny value
        quant::with_format(format, [&](auto tag) {
            constexpr QuantFormat F = decltype(tag)::value;
            for (const float value : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                      std::ldexp(1.0f, 101), std::ldexp(1.0f, -110)}) {
                INFO("a value ", value);
                auto a = random_activations(2, cols, 31);
                if (std::abs(value) < 1.0f) a.row(1).segment(64, 32).setZero();
                a(1, 77) = value;
                attn::detail::RowMajorMatrix<float> c(2, rows), float_path(2, rows);
                attn::detail::multiply_quantized(2, cols, a.data(), cols, m, 0, rows, 0, c.data(), rows, false);
                quant::few_rows<F>(m, 0, rows, 0, cols, 2, a.data(), cols, float_path.data(), rows, false);
                CHECK(std::memcmp(c.data(), float_path.data(), sizeof(float) * std::size_t(c.size())) == 0);
                if (!std::isfinite(value)) CHECK_FALSE(c.row(1).allFinite());
            }
        });
    }
}

}  // namespace quantized_kernels
