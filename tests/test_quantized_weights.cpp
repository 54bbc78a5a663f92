// Quantized weights kept in GGUF's blocks (detail/kernels/quantized_weights.hpp): each format's
// in-register decoding gives quantized.hpp's reference values bit for bit, and each product,
// matrix × vector (a decoding step) and matrix × matrix (a prefill), equals dequantize-then-
// multiply within float summation's bound over the depth K:
//
//   |ĉ − c| ≤ γ_K · Σ_t |a_t| · |w_t|,   γ_K = K·u / (1 − K·u),   u = 2⁻²⁴,
//
// c the float64 product of a and the dequantized matrix (the values are exact in float, so the
// only error is the float sums'). Every partial sum of a product is a float addition or fused
// multiply-add of the terms a_t · w_t (each exact with a fused multiply-add, or rounded once)
// and of earlier partial sums, with at most K roundings on any term's path (a chain over the
// depth: K; packet lanes then a horizontal sum: K/L + log₂ L); the standard bound of such sums
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1) is γ_K Σ|a_t w_t|. The prefill
// path is also the float kernel's product on the dequantized matrix, bit for bit.
#include <doctest/doctest.h>
#include <attn/detail/kernels/quantized.hpp>
#include <attn/detail/kernels/quantized_weights.hpp>
#include <attn/detail/kernels/tiles.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using attn::detail::Index;
using attn::detail::QuantFormat;
using attn::detail::QuantizedMatrix;

namespace {

constexpr QuantFormat kFormats[] = {QuantFormat::q8_0, QuantFormat::q4_0, QuantFormat::q4_k, QuantFormat::q5_k,
                                    QuantFormat::q6_k};

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
                if (run.format == QuantFormat::q4_k || run.format == QuantFormat::q5_k)
                    put_half(block + 2, random_half(engine));
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

struct Checked {
    double worst = 0;  ///< the largest |ĉ − c| / (γ_K Σ|a w|) seen
};

/// c (+)= a · W(first_row …, from …)ᵀ against the float64 product of the dequantized values, within
/// γ_K Σ|a_t w_t| (onto c₀: γ_{K+1} (|c₀| + Σ|a_t w_t|), c₀ one term more).
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
    const double u = std::ldexp(1.0, -24), terms = double(depth + (accumulate ? 1 : 0));
    const double gamma = terms * u / (1.0 - terms * u);
    for (Index r = 0; r < n; ++r) {
        for (Index j = 0; j < count; ++j) {
            double exact = 0, magnitude = 0;
            for (Index t = 0; t < depth; ++t) {
                const double term = double(a(r, t + 3)) * double(w(from + t, first_row + j));
                exact += term;
                magnitude += std::abs(term);
            }
            const double base = accumulate ? double(start(r, j)) : 0.0;
            const double error = std::abs(double(c(r, j)) - (base + exact));
            const double bound = gamma * (magnitude + std::abs(base));
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

}  // namespace

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
    for (const QuantFormat format : kFormats) {
        INFO(std::string(attn::detail::quant_format_name(format)));
        const QuantizedMatrix m = random_matrix(1024, {{format, 70}}, 3);
        const auto w = dequantized_transposed(m);  // (1024 × 70)
        const auto a = random_activations(11, 1024, 5);
        attn::detail::RowMajorMatrix<float> quantized(11, 70), dense(11, 70);
        attn::detail::multiply_quantized(11, 1024, a.data(), 1024, m, 0, 70, 0, quantized.data(), 70, false);
        attn::detail::multiply_rows(a, w, dense, false);
        CHECK(std::memcmp(quantized.data(), dense.data(), std::size_t(dense.size()) * sizeof(float)) == 0);
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
