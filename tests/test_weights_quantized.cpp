// Quantized weights kept in GGUF's blocks: the kernels (detail/kernels/quantized_weights.hpp) and a
// model loaded with WeightStorage::stored_quantized (model/model.hpp). One file for both, named to sort
// after every other test that runs a model, so that the unity build's groups (tests/CMakeLists.txt)
// stay as they were; its helpers are in their own namespaces for the same reason.
//
// The kernels: each format's
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
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1) is γ_K Σ|a_t w_t|. A decoding
// step on a format with a min (Q4_1, Q5_1, Q4_K, Q5_K) sums s Σ a v and o Σ a apart: γ_{K+2}
// Σ|a_t| (|w_t| + 2|o_t|) there (check_product). The prefill path is also the float kernel's
// product on the dequantized matrix, bit for bit.
//
// The model: WeightStorage::stored_quantized, a quantized GGUF file's large matrices kept in
// their blocks and dequantized in registers inside the products (detail/kernels/quantized_weights.hpp),
// against the same file loaded as float (WeightStorage::converted, every weight dequantized once).
//
// What must hold: a prefill's products (more than kStreamedRows positions) are the float kernel's
// on the dequantized matrices, so a whole text's logits are the converted model's bit for bit; a
// decoding step's products (one position) sum each output in another order, each within
// γ_K Σ|a w| of the exact product (the kernels' tests above), and the logits of a step
// stay within 1e-5 of the logits' scale of the converted model's (the float model's own distance
// from the float64 forward is bounded at 1e-5 in test_gguf_model.cpp). Measured: see the MESSAGEs.
#include <doctest/doctest.h>
#include <attn/detail/kernels/quantized.hpp>
#include <attn/detail/kernels/quantized_weights.hpp>
#include <attn/detail/kernels/tiles.hpp>
#include <attn/formats/gguf.hpp>
#include <attn/formats/safetensors.hpp>
#include <attn/hooks/interventions.hpp>
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>
#include <attn/threads.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

using attn::test::same_bits;

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

struct Checked {
    double worst = 0;  ///< the largest |ĉ − c| / (γ_K Σ|a w|) seen
};

/// c (+)= a · W(first_row …, from …)ᵀ against the float64 product of the dequantized values, within
/// γ_K Σ|a_t w_t| (onto c₀: γ_{K+1} (|c₀| + Σ|a_t w_t|), c₀ one term more). A decoding step on a
/// format with a min sums the codes' products and the min's apart (Σ a w = s Σ a v + o Σ a), which
/// may cancel, and its w is the exact s·v + o, not the decoders' rounded one: γ_{K+2} Σ|a_t| (|w_t| +
/// 2|o_t|) there.
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
            double exact = 0, magnitude = 0;
            for (Index t = 0; t < depth; ++t) {
                const double term = double(a(r, t + 3)) * double(w(from + t, first_row + j));
                exact += term;
                magnitude += std::abs(term) + 2 * std::abs(double(a(r, t + 3))) * mins[std::size_t(from + t)];
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

}  // namespace quantized_kernels

namespace quantized_model {

using attn::Index;

const std::filesystem::path kGgufModels = std::filesystem::path(ATTN_TEST_DATA_DIR) / "gguf" / "models";

/// The quantized files: tiny Llama checkpoints written by tools/references/gguf_models.py (Q8_0,
/// Q4_0, Q4_1, Q5_0, Q5_1: width 64) and gguf_kquant_models.py (llama.cpp's Q4_K_M, Q5_K_M and Q6_K:
/// width 256; Q4_K_M's last layer fuses Q4_K queries and keys with Q6_K values; and Q4_K_M and Q5_K_M
/// at width 96, not whole K blocks, where llama.cpp falls back to Q5_0, Q5_1 and Q8_0 beside K blocks
/// in the MLP's down projection, as it does for SmolLM2-135M's width 576), each with the float64
/// forward of its dequantized weights (.golden.safetensors).
struct QuantizedFile {
    const char* name;  ///< <checkpoint>.<type>
};

const QuantizedFile kFiles[] = {
    {"llama3_rope_scaling.Q8_0"},   {"llama3_rope_scaling.Q4_0"}, {"llama3_rope_scaling.Q4_1"},
    {"llama3_rope_scaling.Q5_0"},   {"llama3_rope_scaling.Q5_1"}, {"llama_kquant.Q4_K_M"},
    {"llama_kquant.Q5_K_M"},        {"llama_kquant.Q6_K"},        {"llama_kquant_narrow.Q4_K_M"},
    {"llama_kquant_narrow.Q5_K_M"},
};

std::filesystem::path path_of(const QuantizedFile& file) {
    return kGgufModels / (std::string(file.name) + ".gguf");
}

const attn::Model<float>& loaded(const QuantizedFile& file, attn::WeightStorage storage) {
    static std::map<std::pair<std::string, attn::WeightStorage>, std::unique_ptr<attn::Model<float>>> models;
    auto& model = models[{file.name, storage}];
    if (!model) {
        attn::LoadOptions options;
        options.weights = storage;
        model = std::make_unique<attn::Model<float>>(attn::Model<float>::load(path_of(file), options));
    }
    return *model;
}

/// max |a − b| over max |b|.
template <class A, class B>
double relative_error(const A& actual, const B& expected) {
    REQUIRE(actual.rows() == expected.rows());
    REQUIRE(actual.cols() == expected.cols());
    const double scale = std::max(1e-300, double(expected.template cast<double>().cwiseAbs().maxCoeff()));
    return double((actual.template cast<double>() - expected.template cast<double>()).cwiseAbs().maxCoeff()) / scale;
}

std::vector<int> golden_ids(const QuantizedFile& file) {
    const attn::SafeTensors golden =
        attn::SafeTensors::open(kGgufModels / (std::string(file.name) + ".golden.safetensors"));
    std::vector<int> ids;
    for (const std::int64_t id : golden.integers("ids")) ids.push_back(int(id));
    return ids;
}

TEST_CASE("GGUF stored_quantized: a whole text's logits are the converted model's, bit for bit") {
    for (const QuantizedFile& file : kFiles) {
        CAPTURE(std::string(file.name));
        const auto& quantized = loaded(file, attn::WeightStorage::stored_quantized);
        const auto& converted = loaded(file, attn::WeightStorage::converted);
        CHECK(quantized.weight_storage() == attn::WeightStorage::stored_quantized);
        CHECK(quantized.parameters() == converted.parameters());
        const std::vector<int> ids = golden_ids(file);
        const attn::Matrix<double> expected =
            attn::SafeTensors::open(kGgufModels / (std::string(file.name) + ".golden.safetensors"))
                .matrix<double>("logits");
        for (const int threads : {1, 2}) {
            attn::ForwardOptions options;
            options.threads = threads;
            const auto logits = quantized.forward(ids, options).logits;
            CHECK(same_bits(logits, converted.forward(ids, options).logits));
            CHECK(relative_error(logits, expected) <= 1e-5);
            if (threads == 1)
                MESSAGE(std::string(file.name), ": logits within ", relative_error(logits, expected),
                        " of the float64 forward's scale");
        }
        // a short text (3 positions) is a prefill too; 2 positions stream like a step
        const std::vector<int> three(ids.begin(), ids.begin() + 3);
        CHECK(same_bits(quantized.forward(three).logits, converted.forward(three).logits));
    }
}

TEST_CASE("GGUF stored_quantized: decoding steps within 1e-5 of the converted model's logits") {
    for (const QuantizedFile& file : kFiles) {
        CAPTURE(std::string(file.name));
        const auto& quantized = loaded(file, attn::WeightStorage::stored_quantized);
        const auto& converted = loaded(file, attn::WeightStorage::converted);
        const std::vector<int> ids = golden_ids(file);
        const std::vector<int> prompt(ids.begin(), ids.begin() + 5);
        attn::Decoder<float> a(quantized), b(converted);
        attn::DecodeResult<float> x, y;
        attn::DecodeOptions all;
        all.all_logits = true;  // the unembedding of 5 rows is a prefill's product too
        a.append_into(prompt, all, x);
        b.append_into(prompt, all, y);
        CHECK(same_bits(x.logits, y.logits));  // a prefill of 5 positions
        double worst = 0;
        for (std::size_t i = prompt.size(); i < prompt.size() + 12; ++i) {
            a.step_into(ids[i], {}, x);
            b.step_into(ids[i], {}, y);
            worst = std::max(worst, relative_error(x.logits, y.logits));
        }
        CHECK(worst <= 1e-5);
        // a step on two kept threads shares the products by columns: the same bits as one
        attn::Decoder<float> c(quantized);
        attn::Workers workers(2);
        attn::DecodeOptions two;
        two.threads = workers;
        attn::DecodeResult<float> z;
        c.append_into(prompt, two, z);
        attn::Decoder<float> d(quantized);
        attn::DecodeResult<float> w;
        d.append_into(prompt, {}, w);
        for (std::size_t i = prompt.size(); i < prompt.size() + 4; ++i) {
            c.step_into(ids[i], two, z);
            d.step_into(ids[i], {}, w);
            CHECK(same_bits(z.logits, w.logits));
        }
        MESSAGE(std::string(file.name), ": decoding steps within ", worst, " of the converted model's logits' scale");
    }
}

/// a and b of one shape, each entry the same bits or both zero (of either sign): the accessors
/// dequantize a K block through the in-register decoders, the converted model through the reference
/// ones, and a weight of exactly 0 (a code times the scale minus the min) came out +0 from one and −0
/// from the other (seen when the tests' comparison became bitwise, 2026-12-03). No product sees it:
/// the logits above are bit for bit.
template <class A, class B>
bool same_bits_but_zero_signs(const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Index j = 0; j < a.cols(); ++j)
        for (Index i = 0; i < a.rows(); ++i)
            if (!same_bits(a.block(i, j, 1, 1), b.block(i, j, 1, 1)) && !(a(i, j) == 0 && b(i, j) == 0)) return false;
    return true;
}

TEST_CASE("GGUF stored_quantized: the accessors give the matrices dequantized; other files refuse it by name") {
    for (const QuantizedFile& file : {kFiles[0], kFiles[5]}) {  // Q8_0, Q4_K_M (with Q6_K)
        CAPTURE(std::string(file.name));
        const auto& quantized = loaded(file, attn::WeightStorage::stored_quantized);
        const auto& converted = loaded(file, attn::WeightStorage::converted);  // dequantized at load
        for (Index l = 0; l < quantized.settings().layers; ++l) {
            attn::Model<float>::Layer a = quantized.layer(l), b = converted.layer(l);
            for (attn::LayerSlot slot : attn::kMatrixSlots)
                CHECK(same_bits_but_zero_signs(a.matrix(slot), b.matrix(slot)));
        }
        CHECK(same_bits_but_zero_signs(quantized.embedding(), converted.embedding()));
        CHECK(same_bits_but_zero_signs(quantized.unembedding(), converted.unembedding()));
        CHECK(same_bits_but_zero_signs(quantized.unembedding_column(3), converted.unembedding().col(3)));
    }
    const QuantizedFile& file = kFiles[0];
    attn::LoadOptions options;
    options.weights = attn::WeightStorage::stored_quantized;
    CHECK(attn::test::contains(attn::test::thrown_message<attn::argument_error>(
                                   [&] { (void)attn::Model<double>::load(path_of(file), options); }),
                               "Model<float>"));
    CHECK(attn::test::contains(attn::test::thrown_message<attn::argument_error>([&] {
                                   (void)attn::Model<float>::load(
                                       std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf" / "llama3_rope_scaling",
                                       options);
                               }),
                               "GGUF"));
    // an F32 file loads: its matrices are converted, as they would be anyway
    const auto f32 = attn::Model<float>::load(kGgufModels / "llama3_rope_scaling.F32.gguf", options);
    const auto reference = attn::Model<float>::load(kGgufModels / "llama3_rope_scaling.F32.gguf");
    const std::vector<int> ids = golden_ids(file);
    CHECK(same_bits(f32.forward(ids).logits, reference.forward(ids).logits));
}

TEST_CASE("GGUF stored_quantized: GPT-2's fused qkv, GPT-NeoX's regrouped heads and Phi-3's [gate; up] in blocks") {
    // Q8_0 files of the tests' checkpoints (tools/references/gguf_kquant_models.py), F16 or F32 where a
    // matrix's rows are not whole blocks: a fused tensor's pieces are runs of its rows, kept in blocks;
    // every hook, each head's output through a window of the output projection's depth included, is the
    // converted model's bit for bit on a whole text, and a step within 1e-5.
    for (const char* name : {"gpt2_prefixed_f32.Q8_0", "gpt_neox_parallel.Q8_0", "phi3_fused_partial.Q8_0"}) {
        CAPTURE(std::string(name));
        const QuantizedFile file{name};
        const auto& quantized = loaded(file, attn::WeightStorage::stored_quantized);
        const auto& converted = loaded(file, attn::WeightStorage::converted);
        std::vector<int> ids;
        for (Index i = 0; i < quantized.settings().longest; ++i)
            ids.push_back(int((i * 37 + 11) % quantized.settings().vocabulary_size));
        attn::HookOptions<float> options;
        options.keep = {"*"};
        const auto a = attn::run_with_hooks(quantized, ids, options), b = attn::run_with_hooks(converted, ids, options);
        CHECK(same_bits(a.result.logits, b.result.logits));
        CHECK(a.cache.names() == b.cache.names());
        for (const std::string& activation : b.cache.names()) {
            CAPTURE(activation);
            CHECK(same_bits(a.cache[activation], b.cache[activation]));
        }
        attn::Decoder<float> x(quantized), y(converted);
        x.append(std::vector<int>(ids.begin(), ids.begin() + 4));
        y.append(std::vector<int>(ids.begin(), ids.begin() + 4));
        CHECK(relative_error(x.step(ids[4]).logits, y.step(ids[4]).logits) <= 1e-5);
    }
}

}  // namespace quantized_model
