// Quantized weights kept in GGUF's blocks in a model: WeightStorage::stored_quantized, a quantized
// GGUF file's large matrices kept in their blocks and dequantized in registers inside the products
// (detail/kernels/quantized_weights.hpp; its kernels' own tests: test_quantized_products.cpp),
// against the same file loaded as float (WeightStorage::converted, every weight dequantized once).
// Named to sort after every other test that runs a model, so that the unity build's groups
// (tests/CMakeLists.txt) stay as they were; its helpers are in their own namespace for the same reason.
//
// What must hold: a prefill's products (more than kStreamedRows positions) are the float kernel's
// on the dequantized matrices, so a whole text's logits are the converted model's bit for bit; a
// decoding step's products (one position) sum each output in another order (and, with AVX-512
// VNNI, multiply the codes by activation digits in integers), each within its bound of the exact
// product (test_quantized_products.cpp), and the logits of a step stay within 1e-5 of the logits'
// scale of the converted model's (the float model's own distance from the float64 forward is
// bounded at 1e-5 in test_gguf_model.cpp). Measured: see the MESSAGEs.
#include <doctest/doctest.h>
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
