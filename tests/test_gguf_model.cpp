// Model::load on GGUF files (model/gguf_architectures.hpp, formats/gguf_tensors.hpp): the tiny Hugging
// Face checkpoints of tests/data/hf converted as the pinned llama.cpp converter lays them out
// (tools/references/gguf_models.py writes tests/data/gguf/models), loaded and compared with the
// checkpoints themselves — settings, every weight bit for bit, logits and every hook — and the
// quantized files against the float64 reference forward of their dequantized weights; then files
// with one thing wrong, each refused by name.
#include <doctest/doctest.h>
#include <attn/formats/gguf.hpp>
#include <attn/formats/gguf_tensors.hpp>
#include <attn/hooks/interventions.hpp>
#include <attn/model/model.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf_writer.hpp"
#include "support.hpp"

using attn::test::same_bits;

using attn::Index;
using attn::LayerSlot;

namespace {

const std::filesystem::path kHfDirectories = std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf";
const std::filesystem::path kGgufModels = std::filesystem::path(ATTN_TEST_DATA_DIR) / "gguf" / "models";

/// A converted checkpoint: the Hugging Face directory, the GGUF type it was written at, and
/// whether the GGUF describes the same model (the converter keeps every key that matters).
struct Converted {
    const char* checkpoint;
    const char* type;
    bool same_model;
};

const Converted kConverted[] = {
    {"gpt2_prefixed_f32", "F32", true},
    {"gpt2_f16", "F16", false},           // erf GELU and scores ÷ (layer + 1): not in GGUF
    {"gpt2_unscaled_f32", "F32", false},  // scale_attn_weights false: not in GGUF
    {"llama_gqa_bf16_shards", "BF16", true},
    {"llama_head_dim_untied", "F32", true},
    {"qwen2_bias", "F32", true},
    {"gpt_neox_parallel", "F32", true},
    {"gpt_neox_sequential", "F32", true},
    {"llama3_rope_scaling", "F32", true},
    {"llama_linear_rope_parameters", "F32", true},
    {"llama_linear_rope_scaling_type", "F32", true},
    {"qwen3_qk_norm", "F32", true},
    {"olmo2_post_norm", "F32", true},
    {"phi3_fused_partial", "F32", true},
};

std::filesystem::path gguf_file(const std::string& checkpoint, const std::string& type) {
    return kGgufModels / (checkpoint + "." + type + ".gguf");
}

template <class T>
const attn::Model<T>& loaded(const std::filesystem::path& path) {
    static std::map<std::string, std::unique_ptr<attn::Model<T>>> models;
    auto& model = models[path.string()];
    if (!model) model = std::make_unique<attn::Model<T>>(attn::Model<T>::load(path));
    return *model;
}

template <class T>
const attn::Model<T>& from_gguf(const Converted& c) {
    return loaded<T>(gguf_file(c.checkpoint, c.type));
}
template <class T>
const attn::Model<T>& from_hf(const Converted& c) {
    return loaded<T>(kHfDirectories / c.checkpoint);
}

/// The whole context of seeded ids.
std::vector<int> prompt(const attn::ModelSettings& s) {
    std::vector<int> ids;
    for (Index i = 0; i < s.longest; ++i) ids.push_back(int((i * 37 + 11) % s.vocabulary_size));
    return ids;
}

/// max |a − b| over max |b|.
template <class A, class B>
double gguf_relative_error(const A& actual, const B& expected) {
    REQUIRE(actual.rows() == expected.rows());
    REQUIRE(actual.cols() == expected.cols());
    const double scale = std::max(1e-300, double(expected.template cast<double>().cwiseAbs().maxCoeff()));
    return double((actual.template cast<double>() - expected.template cast<double>()).cwiseAbs().maxCoeff()) / scale;
}

/// Every weight of a equal to b's, bit for bit, slot by slot.
template <class T>
void check_same_weights(const attn::Model<T>& a, const attn::Model<T>& b) {
    CHECK(same_bits(a.embedding(), b.embedding()));
    CHECK(same_bits(a.unembedding(), b.unembedding()));
    CHECK(same_bits(a.position_embedding(), b.position_embedding()));
    CHECK(same_bits(a.final_norm_weight(), b.final_norm_weight()));
    CHECK(same_bits(a.final_norm_bias(), b.final_norm_bias()));
    for (Index l = 0; l < a.settings().layers; ++l) {
        typename attn::Model<T>::Layer x = a.layer(l), y = b.layer(l);
        for (int slot = 0; slot < attn::kLayerSlots; ++slot) {
            CAPTURE(l);
            CAPTURE(slot);
            if (attn::is_matrix_slot(LayerSlot(slot)))
                CHECK(same_bits(x.matrix(LayerSlot(slot)), y.matrix(LayerSlot(slot))));
            else
                CHECK(same_bits(x.vector(LayerSlot(slot)), y.vector(LayerSlot(slot))));
        }
    }
}

}  // namespace

TEST_CASE("GGUF: a converted checkpoint declares its Hugging Face config's settings") {
    for (const Converted& c : kConverted) {
        if (!c.same_model) continue;
        CAPTURE(c.checkpoint);
        const attn::ModelSettings& g = from_gguf<float>(c).settings();
        const attn::ModelSettings& h = from_hf<float>(c).settings();
        CHECK(g.architecture == h.architecture);
        CHECK(g.layers == h.layers);
        CHECK(g.heads == h.heads);
        CHECK(g.key_value_heads == h.key_value_heads);
        CHECK(g.dimensions == h.dimensions);
        CHECK(g.head_size == h.head_size);
        CHECK(g.mlp_width == h.mlp_width);
        CHECK(g.longest == h.longest);
        CHECK(g.vocabulary_size == h.vocabulary_size);
        CHECK(g.position_encoding == h.position_encoding);
        CHECK(g.final_norm == h.final_norm);
        CHECK(g.final_norm_epsilon == h.final_norm_epsilon);  // float32 1e-5 read back as the double 1e-5
        CHECK(g.tied_embeddings == h.tied_embeddings);
        for (Index l = 0; l < g.layers; ++l) {
            const attn::LayerDescription &a = g.layer(l), &b = h.layer(l);
            CHECK(a.norm == b.norm);
            CHECK(a.norm_epsilon == b.norm_epsilon);
            CHECK(a.input_norms == b.input_norms);
            CHECK(a.output_norms == b.output_norms);
            CHECK(a.residual == b.residual);
            CHECK(a.query_key_norm == b.query_key_norm);
            CHECK(a.gated_mlp == b.gated_mlp);
            CHECK(a.activation == b.activation);
            CHECK(a.score_scale == b.score_scale);
            CHECK(a.rotary.rotated == b.rotary.rotated);
            CHECK(a.rotary.pairing == b.rotary.pairing);
            CHECK(a.rotary.base == b.rotary.base);
            if (b.rotary.scaling.kind == attn::RopeScaling::Kind::llama3) {
                // GGUF keeps the converter's table of divisors, not the four numbers it came from
                REQUIRE(a.rotary.scaling.kind == attn::RopeScaling::Kind::divisors);
                const auto x = attn::rope_frequencies(a.rotary.rotated, a.rotary.base, a.rotary.scaling);
                const auto y = attn::rope_frequencies(b.rotary.rotated, b.rotary.base, b.rotary.scaling);
                for (std::size_t j = 0; j < y.size(); ++j) CHECK(x[j] == doctest::Approx(y[j]).epsilon(1e-7));
            } else {
                CHECK(a.rotary.scaling.kind == b.rotary.scaling.kind);
                CHECK(a.rotary.scaling.factor == b.rotary.scaling.factor);
            }
        }
    }
    CHECK(from_gguf<float>(kConverted[0]).tokenizer().size() == 0);  // the converter wrote no vocabulary ("none")
}

TEST_CASE("GGUF: every weight is the checkpoint's, bit for bit, whatever the converter reordered") {
    // F32, BF16 and F16 files of checkpoints in the same types: q and k rows un-permuted (Llama),
    // Conv1D weights transposed back (GPT-2), [Q; K; V] regrouped per head (GPT-NeoX), fused
    // qkv and [gate; up] split (Phi-3), q/k and output norms (Qwen3, OLMo-2) where they belong.
    for (const Converted& c : kConverted) {
        CAPTURE(c.checkpoint);
        check_same_weights(from_gguf<float>(c), from_hf<float>(c));
        check_same_weights(from_gguf<double>(c), from_hf<double>(c));
    }
}

TEST_CASE("GGUF: Llama's q and k rows, permuted by the converter for ggml's adjacent pairs, are undone") {
    const Converted c{"llama_head_dim_untied", "F32", true};
    const attn::GgufTensors file(attn::GgufFile::open(gguf_file(c.checkpoint, c.type)));
    const attn::ModelSettings& s = from_gguf<float>(c).settings();
    const attn::Matrix<float> stored = file.transposed_matrix<float>("blk.0.attn_q.weight");  // (C × H·d) as stored
    const auto query = from_hf<float>(c).layer(0).query();
    CHECK_FALSE(same_bits(stored, query));                          // the file's columns are permuted …
    CHECK(same_bits(from_gguf<float>(c).layer(0).query(), query));  // … and read back in place
    for (Index h = 0; h < s.heads; ++h)
        for (Index r = 0; r < s.head_size / 2; ++r) {  // pair r of head h: stored side by side
            CHECK(same_bits(stored.col(h * s.head_size + 2 * r), query.col(h * s.head_size + r)));
            CHECK(same_bits(stored.col(h * s.head_size + 2 * r + 1), query.col(h * s.head_size + s.head_size / 2 + r)));
        }
    const attn::Matrix<float> stored_key = file.transposed_matrix<float>("blk.1.attn_k.weight");
    CHECK_FALSE(same_bits(stored_key, from_hf<float>(c).layer(1).key()));
    CHECK(same_bits(from_gguf<float>(c).layer(1).key(), from_hf<float>(c).layer(1).key()));
    // the biases (this checkpoint has every one) the same way
    CHECK(
        same_bits(from_gguf<float>(c).layer(0).query_key_value_bias, from_hf<float>(c).layer(0).query_key_value_bias));
    // the pieces themselves: head 1 of 4 numbers stored (a0 b0 a1 b1) → (a0 a1 b0 b1)
    const auto pieces = attn::detail::layers::rotary_pairs_per_head(LayerSlot::query_key_value, 2, 4, 0, 8);
    REQUIRE(pieces.size() == 8);
    const Index expected_to[] = {8, 10, 9, 11, 12, 14, 13, 15};
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        CHECK(pieces[i].from == Index(i));
        CHECK(pieces[i].count == 1);
        CHECK(pieces[i].to == expected_to[i]);
    }
}

TEST_CASE("GGUF: fused and regrouped tensors land in their slots") {
    SUBCASE("GPT-2: attn_qkv (3C × C), the Conv1D weight transposed by the converter") {
        const Converted c{"gpt2_prefixed_f32", "F32", true};
        CHECK(same_bits(from_gguf<float>(c).layer(1).query_key_value, from_hf<float>(c).layer(1).query_key_value));
        CHECK(same_bits(from_gguf<float>(c).layer(1).query_key_value_bias,
                        from_hf<float>(c).layer(1).query_key_value_bias));
        CHECK(same_bits(from_gguf<float>(c).layer(0).up, from_hf<float>(c).layer(0).up));
    }
    SUBCASE("GPT-NeoX: attn_qkv regrouped from per-head [q_h; k_h; v_h] to [Q; K; V]") {
        for (const char* name : {"gpt_neox_parallel", "gpt_neox_sequential"}) {
            const Converted c{name, "F32", true};
            CHECK(same_bits(from_gguf<float>(c).layer(0).query_key_value, from_hf<float>(c).layer(0).query_key_value));
            CHECK(same_bits(from_gguf<float>(c).layer(1).query_key_value_bias,
                            from_hf<float>(c).layer(1).query_key_value_bias));
        }
    }
    SUBCASE("Phi-3: attn_qkv and ffn_up holding [gate; up]") {
        const Converted c{"phi3_fused_partial", "F32", true};
        const auto &g = from_gguf<float>(c).layer(1), &h = from_hf<float>(c).layer(1);
        CHECK(same_bits(g.query_key_value, h.query_key_value));
        CHECK(same_bits(g.gate, h.gate));
        CHECK(same_bits(g.up, h.up));
        CHECK_FALSE(same_bits(g.gate, g.up));
    }
    SUBCASE("Qwen3's per-head and OLMo-2's whole q/k norms, OLMo-2's norms after the blocks") {
        const Converted qwen3{"qwen3_qk_norm", "F32", true}, olmo2{"olmo2_post_norm", "F32", true};
        CHECK(from_gguf<float>(qwen3).layer(0).query_norm.size() == from_gguf<float>(qwen3).settings().head_size);
        CHECK(same_bits(from_gguf<float>(qwen3).layer(1).key_norm, from_hf<float>(qwen3).layer(1).key_norm));
        const auto &g = from_gguf<float>(olmo2).layer(1), &h = from_hf<float>(olmo2).layer(1);
        CHECK(g.query_norm.size() == from_gguf<float>(olmo2).settings().query_width());
        CHECK(same_bits(g.key_norm, h.key_norm));
        CHECK(same_bits(g.attention_output_norm, h.attention_output_norm));
        CHECK(same_bits(g.mlp_output_norm, h.mlp_output_norm));
        CHECK(g.attention_norm_weight.size() == 0);
    }
}

TEST_CASE("GGUF: logits and every hook equal the Hugging Face checkpoint's") {
    // Measured (whole context): 0 in float and double for every file but llama3_rope_scaling,
    // whose float32 table of frequency divisors moves its logits by 4.3e-7 (float) and 1.8e-8
    // (double) of their scale, and a hook by up to 1.01e-6 of its own (blocks.1.hook_mlp_out, an
    // AVX2 build; under 1e-6 in SSE2 and AVX-512 builds): 2e-6 for that file, 1e-6 for the others.
    double worst_float = 0, worst_double = 0, worst_hook = 0;
    std::string worst, worst_hook_at;
    for (const Converted& c : kConverted) {
        if (!c.same_model) continue;
        const std::string checkpoint = c.checkpoint;
        CAPTURE(checkpoint);
        const std::vector<int> ids = prompt(from_hf<float>(c).settings());
        attn::HookOptions<float> keep;
        keep.keep = {"*"};
        const auto g = attn::run_with_hooks(from_gguf<float>(c), ids, keep);
        const auto h = attn::run_with_hooks(from_hf<float>(c), ids, keep);
        const double error = gguf_relative_error(g.result.logits, h.result.logits);
        CHECK(error <= 1e-6);
        if (error > worst_float) worst = c.checkpoint;
        worst_float = std::max(worst_float, error);
        const std::vector<std::string> names = h.cache.names();
        CHECK(g.cache.names() == names);
        for (const std::string& name : names) {
            CAPTURE(name);
            const double hook_error = gguf_relative_error(g.cache[name], h.cache[name]);
            CHECK(hook_error <= (checkpoint == "llama3_rope_scaling" ? 2e-6 : 1e-6));
            if (hook_error > worst_hook) worst_hook_at = checkpoint + " " + name;
            worst_hook = std::max(worst_hook, hook_error);
        }
        const double error64 =
            gguf_relative_error(from_gguf<double>(c).forward(ids).logits, from_hf<double>(c).forward(ids).logits);
        CHECK(error64 <= 1e-7);
        worst_double = std::max(worst_double, error64);
    }
    MESSAGE("GGUF vs Hugging Face, relative to the logits' scale: float ", worst_float, " (", worst, "), double ",
            worst_double, "; hooks (float) ", worst_hook, " (", worst_hook_at, ")");
}

TEST_CASE("GGUF: what the converter drops of GPT-2's config makes another model") {
    // gpt2_f16's erf GELU and ÷ (layer + 1), gpt2_unscaled_f32's unscaled scores: GGUF's gpt2 has
    // neither key, and llama.cpp computes GPT-2's defaults. The weights are the same (above).
    for (const char* name : {"gpt2_f16", "gpt2_unscaled_f32"}) {
        const Converted c{name, std::string(name) == "gpt2_f16" ? "F16" : "F32", false};
        CAPTURE(name);
        const attn::ModelSettings& s = from_gguf<float>(c).settings();
        CHECK(s.layer(1).activation == attn::MlpActivation::gelu_tanh);
        CHECK(s.score_scale(1) == doctest::Approx(1 / std::sqrt(double(s.head_size))));
        const std::vector<int> ids = prompt(s);
        CHECK(gguf_relative_error(from_gguf<float>(c).forward(ids).logits, from_hf<float>(c).forward(ids).logits) >
              1e-3);
    }
}

TEST_CASE("GGUF: Gemma files, norms stored as 1 + w, give the checkpoint's logits and attention") {
    // tools/references/gguf_models.py converts the copy of each checkpoint llama.cpp's gemma2 /
    // gemma3 graphs compute the same function of (query_pre_attn_scalar and the BF16-rounded √C
    // folded into the weights: GGUF cannot say them), so the file read as llama.cpp reads it
    // (scores × 1/√key_length, the embedding × sqrtf(C), norm weights as stored) must give the
    // checkpoint's own goldens. What remains is float32's rounding of the folded weights.
    double worst32 = 0, worst64 = 0;
    for (const char* name : {"gemma2_softcap_window", "gemma3_pattern", "gemma3_layer_types"}) {
        CAPTURE(name);
        const Converted c{name, "F32", false};
        const attn::SafeTensors golden = attn::SafeTensors::open(kHfDirectories / name / "golden.safetensors");
        std::ifstream in(kHfDirectories / name / "golden.json");
        const nlohmann::json prompts = nlohmann::json::parse(in)["prompts"];
        const nlohmann::json& longest = prompts.back();
        const std::vector<int> ids = longest["ids"].get<std::vector<int>>();
        const std::string key = longest["key"].get<std::string>() + ".";
        attn::ForwardOptions keep;
        keep.keep_attention = true;
        const attn::ForwardResult<float> result32 = from_gguf<float>(c).forward(ids, keep);
        const double error32 = gguf_relative_error(result32.logits, golden.matrix<double>(key + "logits"));
        const double error64 =
            gguf_relative_error(from_gguf<double>(c).forward(ids).logits, golden.matrix<double>(key + "logits"));
        CHECK(error32 <= 1e-5);
        CHECK(error64 <= 1e-6);
        worst32 = std::max(worst32, error32);
        worst64 = std::max(worst64, error64);
        const attn::TensorData<double> attention = golden.tensor<double>(key + "attention");
        const attn::ModelSettings& s = from_gguf<float>(c).settings();
        const Index n = Index(ids.size());
        for (Index l = 0; l < s.layers; ++l) {
            const Eigen::Map<const attn::Matrix<double>> expected(attention.values.data() + l * s.heads * n * n, n, n);
            CHECK(gguf_relative_error(result32.attention.head(l, 0), expected) <= 1e-5);
        }
        // the layers' structure as the Hugging Face config gives it, but for what GGUF cannot say
        const attn::ModelSettings& hf = from_hf<float>(c).settings();
        for (Index l = 0; l < s.layers; ++l) {
            CAPTURE(l);
            CHECK(s.layer(l).window == hf.layer(l).window);
            CHECK(s.layer(l).score_cap == doctest::Approx(hf.layer(l).score_cap));
            CHECK(s.layer(l).rotary.base == hf.layer(l).rotary.base);
            CHECK(s.layer(l).norms_around_blocks());
            CHECK(s.layer(l).query_key_norm == hf.layer(l).query_key_norm);
            CHECK(s.layer(l).score_scale == doctest::Approx(1 / std::sqrt(double(s.head_size))));
        }
        CHECK(s.logit_cap == hf.logit_cap);
        CHECK(s.embedding_scale == double(std::sqrt(float(s.dimensions))));
    }
    // gemma2_softcap_window's norms were not folded: stored 1 + w in the file is the checkpoint's
    // w read as 1 + w, bit for bit in float
    const Converted gemma2{"gemma2_softcap_window", "F32", false};
    CHECK(same_bits(from_gguf<float>(gemma2).final_norm_weight(), from_hf<float>(gemma2).final_norm_weight()));
    for (const LayerSlot slot : {LayerSlot::attention_norm, LayerSlot::attention_output_norm, LayerSlot::mlp_norm,
                                 LayerSlot::mlp_output_norm}) {
        typename attn::Model<float>::Layer g = from_gguf<float>(gemma2).layer(1), h = from_hf<float>(gemma2).layer(1);
        CHECK(same_bits(g.vector(slot), h.vector(slot)));
    }
    MESSAGE("Gemma GGUF against the checkpoints' goldens: float ", worst32, ", double ", worst64);
}

TEST_CASE("GGUF: Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 files against the float64 forward of their dequantized weights") {
    // The goldens: hf_reference.py's float64 forward of the weights gguf-py dequantizes from each
    // file, with the q/k permutation undone in NumPy (tools/references/gguf_models.py). What
    // remains is float32's rounding, and the float32 rope divisors against the reference's llama3
    // formula (9.4e-9 above). Bounds: float 1e-5, double 1e-7; measured below.
    const Converted original{"llama3_rope_scaling", "F32", true};
    const std::map<std::string, attn::GgmlType> types = {{"Q8_0", attn::GgmlType::Q8_0},
                                                         {"Q4_0", attn::GgmlType::Q4_0},
                                                         {"Q4_1", attn::GgmlType::Q4_1},
                                                         {"Q5_0", attn::GgmlType::Q5_0},
                                                         {"Q5_1", attn::GgmlType::Q5_1}};
    for (const auto& entry : types) {
        const std::string type = entry.first;  // not a structured binding: CAPTURE's lambda captures it
        const attn::GgmlType ggml_type = entry.second;
        CAPTURE(type);
        const auto path = gguf_file(original.checkpoint, type);
        const attn::SafeTensors golden = attn::SafeTensors::open(
            kGgufModels / (std::string(original.checkpoint) + "." + type + ".golden.safetensors"));
        std::vector<int> ids;
        for (const std::int64_t id : golden.integers("ids")) ids.push_back(int(id));
        const attn::Matrix<double> expected = golden.matrix<double>("logits");
        const double error32 = gguf_relative_error(loaded<float>(path).forward(ids).logits, expected);
        const double error64 = gguf_relative_error(loaded<double>(path).forward(ids).logits, expected);
        CHECK(error32 <= 1e-5);
        CHECK(error64 <= 1e-7);
        // how far quantization moved the model (not bounded by attn: the random weights' own error)
        const double from_original = gguf_relative_error(loaded<double>(path).forward(ids).logits,
                                                         from_hf<double>(original).forward(ids).logits);
        MESSAGE(type, ": float ", error32, ", double ", error64, " from the golden; ", from_original,
                " from the unquantized checkpoint");
        const attn::GgufFile file = attn::GgufFile::open(path);
        CHECK(file.tensor("blk.0.attn_q.weight").type == ggml_type);
    }
}

TEST_CASE("GGUF: WeightStorage::stored_16_bit keeps BF16 and F16 files' matrices in 16 bits") {
    attn::LoadOptions half;
    half.weights = attn::WeightStorage::stored_16_bit;
    const Converted bf16{"llama_gqa_bf16_shards", "BF16", true}, f16{"gpt2_f16", "F16", false};
    const auto gguf = attn::Model<float>::load(gguf_file(bf16.checkpoint, bf16.type), half);
    const auto hf = attn::Model<float>::load(kHfDirectories / bf16.checkpoint, half);
    const std::vector<int> ids = prompt(hf.settings());
    CHECK(same_bits(gguf.forward(ids).logits, hf.forward(ids).logits));
    CHECK(same_bits(gguf.forward(ids).logits, from_gguf<float>(bf16).forward(ids).logits));
    const auto gpt2 = attn::Model<float>::load(gguf_file(f16.checkpoint, f16.type), half);
    const std::vector<int> gpt2_ids = prompt(gpt2.settings());
    CHECK(same_bits(gpt2.forward(gpt2_ids).logits, from_gguf<float>(f16).forward(gpt2_ids).logits));
    for (const char* type : {"Q8_0", "F32"}) {
        const std::string message = attn::test::thrown_format_error(
            [&] { (void)attn::Model<float>::load(gguf_file("llama3_rope_scaling", type), half); });
        CHECK(attn::test::contains(message, std::string("' is ") + type));
        CHECK(attn::test::contains(message, "stored_16_bit"));
    }
}

namespace {

/// A converted file written again with changes, into a scratch directory: keys dropped or
/// replaced, tensors dropped, reshaped (F32: values cut or zero-filled) or added.
struct Rewrite {
    std::set<std::string> drop_keys;
    std::map<std::string, std::function<void(attn::test::GgufWriter&)>> replace_keys;
    std::vector<std::function<void(attn::test::GgufWriter&)>> add_keys;
    std::set<std::string> drop_tensors;
    std::map<std::string, std::vector<std::uint64_t>> reshape;
    std::vector<std::string> add_tensors;  // F32, dims {4}

    std::filesystem::path write(const std::filesystem::path& from, const std::filesystem::path& to) const {
        using attn::test::GgufWriter;
        namespace type = attn::test::gguf_type;
        const attn::GgufFile file = attn::GgufFile::open(from);
        GgufWriter out;
        for (const std::string& key : file.keys()) {
            if (drop_keys.count(key)) continue;
            if (replace_keys.count(key)) {
                replace_keys.at(key)(out);
                continue;
            }
            const attn::GgufValue& v = file.value(key);
            const auto width = [](attn::GgufType t) {
                switch (t) {
                    case attn::GgufType::uint8:
                    case attn::GgufType::int8:
                        return 1;
                    case attn::GgufType::uint16:
                    case attn::GgufType::int16:
                        return 2;
                    case attn::GgufType::uint32:
                    case attn::GgufType::int32:
                        return 4;
                    default:
                        return 8;
                }
            };
            const auto id = std::uint32_t(v.type());
            switch (v.type()) {
                case attn::GgufType::float32:
                    out.entry_with(key, id, [&](attn::test::LittleEndianBytes& o) { o.f32(float(v.as_floating())); });
                    break;
                case attn::GgufType::float64:
                    out.entry_with(key, id, [&](attn::test::LittleEndianBytes& o) { o.f64(v.as_floating()); });
                    break;
                case attn::GgufType::boolean:
                    out.entry_with(key, id, [&](attn::test::LittleEndianBytes& o) { o.u8(v.as_boolean()); });
                    break;
                case attn::GgufType::string:
                    out.string(key, v.as_string());
                    break;
                case attn::GgufType::array:
                    REQUIRE(v.element_type() == attn::GgufType::string);
                    out.string_array(key, v.strings());
                    break;
                case attn::GgufType::int8:
                case attn::GgufType::int16:
                case attn::GgufType::int32:
                case attn::GgufType::int64:
                    out.entry_with(key, id, [&](attn::test::LittleEndianBytes& o) {
                        o.unsigned_field(std::uint64_t(v.as_integer()), width(v.type()));
                    });
                    break;
                default:
                    out.entry_with(key, id, [&](attn::test::LittleEndianBytes& o) {
                        o.unsigned_field(v.as_unsigned(), width(v.type()));
                    });
            }
            (void)type::uint8;
        }
        for (const auto& add : add_keys) add(out);
        for (const attn::GgufTensorInfo& t : file.tensors()) {
            if (drop_tensors.count(t.name)) continue;
            std::vector<std::uint8_t> bytes = file.tensor_bytes(t.name);
            std::vector<std::uint64_t> dims = t.dims;
            if (reshape.count(t.name)) {
                REQUIRE(t.type == attn::GgmlType::F32);
                dims = reshape.at(t.name);
                std::uint64_t elements = 1;
                for (const std::uint64_t d : dims) elements *= d;
                bytes.resize(std::size_t(elements * 4), 0);
            }
            out.tensor(t.name, dims, std::uint32_t(t.type), bytes);
        }
        for (const std::string& name : add_tensors)
            out.tensor(name, {4}, attn::test::ggml_id::F32, std::vector<std::uint8_t>(16, 0));
        const std::vector<std::uint8_t> bytes = out.bytes();
        std::ofstream(to, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return to;
    }
};

/// The format_error Model::load throws for qwen3_qk_norm.F32.gguf (or `source`) rewritten so.
std::string refusal(const Rewrite& rewrite, const std::string& source = "qwen3_qk_norm") {
    attn::test::TempDir dir;
    const auto path = rewrite.write(gguf_file(source, "F32"), dir.path / "changed.gguf");
    return attn::test::thrown_format_error([&] { (void)attn::Model<float>::load(path); });
}

void set_u32(Rewrite& r, const std::string& key, std::uint32_t value) {
    r.replace_keys[key] = [key, value](attn::test::GgufWriter& w) { w.u32(key, value); };
}
void set_string(Rewrite& r, const std::string& key, const std::string& value) {
    r.replace_keys[key] = [key, value](attn::test::GgufWriter& w) { w.string(key, value); };
}

}  // namespace

TEST_CASE("GGUF: a file rewritten unchanged loads to the same model") {
    attn::test::TempDir dir;
    const auto path = Rewrite{}.write(gguf_file("qwen3_qk_norm", "F32"), dir.path / "same.gguf");
    const auto model = attn::Model<float>::load(path);
    check_same_weights(model, from_hf<float>({"qwen3_qk_norm", "F32", true}));
}

TEST_CASE("GGUF: Gemma keys attn does not compute are refused by name") {
    using attn::test::contains;
    SUBCASE("a sliding-window period past 2^24") {
        Rewrite r;
        set_u32(r, "gemma3.attention.sliding_window_pattern", 1u << 25);
        CHECK(contains(refusal(r, "gemma3_pattern"),
                       "metadata key 'gemma3.attention.sliding_window_pattern' = 33554432 is not supported (attn "
                       "supports a period 0 … 2^24)"));
    }
    SUBCASE("one flag per layer, but a flag too many") {  // the file has 3 layers
        Rewrite r;
        r.drop_keys.insert("gemma3.attention.sliding_window_pattern");
        r.add_keys.push_back([](attn::test::GgufWriter& w) {
            w.entry_with("gemma3.attention.sliding_window_pattern", attn::test::gguf_type::array,
                         [](attn::test::LittleEndianBytes& o) {
                             o.u32(attn::test::gguf_type::boolean);
                             o.u64(4);
                             for (int flag : {1, 1, 0, 1}) o.u8(std::uint8_t(flag));
                         });
        });
        CHECK(contains(refusal(r, "gemma3_pattern"),
                       "metadata key 'gemma3.attention.sliding_window_pattern' = 4 flags is not supported (attn "
                       "supports one flag per layer (3))"));
    }
    SUBCASE("a window past 2^24 keys") {
        Rewrite r;
        set_u32(r, "gemma3.attention.sliding_window", 1u << 25);
        CHECK(contains(refusal(r, "gemma3_pattern"),
                       "metadata key 'gemma3.attention.sliding_window' = 33554432 is not supported"));
    }
    SUBCASE("an attention soft cap on gemma3, whose llama.cpp graph has none") {
        Rewrite r;
        r.add_keys.push_back([](attn::test::GgufWriter& w) {
            w.entry_with("gemma3.attn_logit_softcapping", attn::test::gguf_type::float32,
                         [](attn::test::LittleEndianBytes& o) { o.f32(50.0f); });
        });
        CHECK(contains(refusal(r, "gemma3_pattern"), "metadata key 'gemma3.attn_logit_softcapping'"));
        CHECK(contains(refusal(r, "gemma3_pattern"), "no attention soft cap for gemma3"));
    }
}

TEST_CASE("GGUF: files that do not describe a model attn computes are refused by name") {
    using attn::test::contains;
    SUBCASE("a missing key") {
        Rewrite r;
        r.drop_keys = {"qwen3.block_count"};
        const std::string message = refusal(r);
        CHECK(contains(message, "no metadata key 'qwen3.block_count'"));
        CHECK(contains(message, "changed.gguf"));
    }
    SUBCASE("a key of the wrong type") {
        Rewrite r;
        set_string(r, "qwen3.attention.head_count", "4");
        CHECK(contains(refusal(r), "metadata key 'qwen3.attention.head_count' is a string, expected an integer"));
    }
    SUBCASE("a count out of range") {
        Rewrite r;
        set_u32(r, "qwen3.embedding_length", 0);
        CHECK(contains(refusal(r), "'qwen3.embedding_length' is 0, expected a positive count"));
    }
    SUBCASE("a tensor of the wrong shape") {
        Rewrite r;
        r.reshape["blk.1.attn_output.weight"] = {32, 32};  // {H·d = 64, C = 32} in ggml's order
        CHECK(contains(refusal(r), "wrong shape: blk.1.attn_output.weight is [32, 32], expected [32, 64]"));
    }
    SUBCASE("a missing tensor") {
        Rewrite r;
        r.drop_tensors = {"blk.1.ffn_down.weight"};
        CHECK(contains(refusal(r), "missing: blk.1.ffn_down.weight"));
    }
    SUBCASE("an extra tensor") {
        Rewrite r;
        r.add_tensors = {"blk.0.attn_rot_embd.weight"};
        CHECK(contains(refusal(r), "unexpected: blk.0.attn_rot_embd.weight"));
    }
    SUBCASE("an unknown architecture") {
        Rewrite r;
        set_string(r, "general.architecture", "mamba");
        const std::string message = refusal(r);
        CHECK(contains(message, "general.architecture \"mamba\" is not supported"));
        CHECK(contains(message, "\"gptneox\""));
    }
    SUBCASE("no general.architecture") {
        Rewrite r;
        r.drop_keys = {"general.architecture"};
        CHECK(contains(refusal(r), "no metadata key 'general.architecture'"));
    }
    SUBCASE("a key attn does not read, which may change the maths") {
        Rewrite r;
        r.add_keys.push_back([](attn::test::GgufWriter& w) { w.u32("qwen3.attention.output_group_count", 2); });
        CHECK(contains(refusal(r), "metadata key 'qwen3.attention.output_group_count' (a uint32) is not supported"));
    }
    SUBCASE("a sliding window shorter than the context") {
        Rewrite r;
        r.add_keys.push_back([](attn::test::GgufWriter& w) { w.u32("qwen3.attention.sliding_window", 8); });
        CHECK(contains(refusal(r), "'qwen3.attention.sliding_window' = 8 is not supported"));
    }
    SUBCASE("experts") {
        Rewrite r;
        r.add_keys.push_back([](attn::test::GgufWriter& w) { w.u32("qwen3.expert_count", 8); });
        CHECK(contains(refusal(r), "'qwen3.expert_count' = 8 is not supported (attn supports dense MLPs"));
    }
    SUBCASE("a rope scaling attn does not implement") {
        Rewrite r;
        r.add_keys.push_back([](attn::test::GgufWriter& w) { w.string("qwen3.rope.scaling.type", "yarn"); });
        CHECK(contains(refusal(r), "'qwen3.rope.scaling.type' = \"yarn\" is not supported"));
    }
    SUBCASE("values shorter than keys") {
        Rewrite r;
        set_u32(r, "qwen3.attention.value_length", 8);
        CHECK(contains(refusal(r), "'qwen3.attention.value_length' = 8 is not supported"));
    }
    SUBCASE("a vocabulary size other than the embedding's") {
        Rewrite r;
        set_u32(r, "qwen3.vocab_size", 95);
        CHECK(contains(refusal(r),
                       "'qwen3.vocab_size' = 95 is not supported (attn supports the token embedding's 96 rows)"));
    }
    SUBCASE("Llama: a partial rotation, rope_freqs of the wrong length") {
        Rewrite partial;
        set_u32(partial, "llama.rope.dimension_count", 16);
        CHECK(contains(refusal(partial, "llama3_rope_scaling"), "'llama.rope.dimension_count' = 16 is not supported"));
        Rewrite table;
        table.reshape["rope_freqs.weight"] = {8};
        CHECK(contains(refusal(table, "llama3_rope_scaling"), "tensor 'rope_freqs.weight' has 8 values"));
        Rewrite both;
        both.add_keys.push_back([](attn::test::GgufWriter& w) { w.string("llama.rope.scaling.type", "linear"); });
        both.add_keys.push_back([](attn::test::GgufWriter& w) {
            w.entry_with("llama.rope.scaling.factor", attn::test::gguf_type::float32,
                         [](attn::test::LittleEndianBytes& o) { o.f32(2.0f); });
        });
        CHECK(contains(refusal(both, "llama3_rope_scaling"), "rope_freqs.weight and rope.scaling.type \"linear\""));
    }
    SUBCASE("GPT-NeoX without use_parallel_residual") {
        Rewrite r;
        r.drop_keys = {"gptneox.use_parallel_residual"};
        CHECK(contains(refusal(r, "gpt_neox_parallel"), "missing metadata key 'gptneox.use_parallel_residual'"));
    }
}

TEST_CASE("GGUF: a linear rope scaling factor and an end token are read") {
    const Converted linear{"llama_linear_rope_scaling_type", "F32", true};
    const attn::RotarySpec& spec = from_gguf<float>(linear).settings().layer(0).rotary;
    CHECK(spec.scaling.kind == attn::RopeScaling::Kind::linear);
    CHECK(spec.scaling.factor == from_hf<float>(linear).settings().layer(0).rotary.scaling.factor);
    Rewrite r;
    r.add_keys.push_back([](attn::test::GgufWriter& w) { w.u32("tokenizer.ggml.eos_token_id", 7); });
    attn::test::TempDir dir;
    const auto model = attn::Model<float>::load(r.write(gguf_file("qwen3_qk_norm", "F32"), dir.path / "eos.gguf"));
    CHECK(model.settings().end_token == 7);
    CHECK(from_gguf<float>(linear).settings().end_token == -1);
}

TEST_CASE("GGUF: Model::load brings the file's tokenizer, checked against the embedding's rows") {
    CHECK(from_gguf<float>({"qwen3_qk_norm", "F32", true}).tokenizer().kind() == attn::Tokenizer::Kind::none);
    const auto with_tokens = [](std::vector<std::string> tokens) {
        Rewrite r;
        r.replace_keys["tokenizer.ggml.model"] = [](attn::test::GgufWriter& w) {
            w.string("tokenizer.ggml.model", "gpt2");
        };
        r.add_keys.push_back([tokens](attn::test::GgufWriter& w) {
            w.string("tokenizer.ggml.pre", "qwen2");
            w.string_array("tokenizer.ggml.tokens", tokens);
            w.string_array("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"});
        });
        return r;
    };
    attn::test::TempDir dir;
    const std::vector<std::string> tokens = {"a", "b", "ab", "\xC4\xA0",
                                             "\xC4\xA0"
                                             "ab"};
    const auto model = attn::Model<float>::load(
        with_tokens(tokens).write(gguf_file("qwen3_qk_norm", "F32"), dir.path / "tokens.gguf"));
    CHECK(model.tokenizer().kind() == attn::Tokenizer::Kind::byte_level);
    CHECK(model.tokenizer().encode("ab ab ba") == std::vector<int>{2, 4, 3, 1, 0});
    std::vector<std::string> too_many = tokens;
    for (int i = 0; i < 92; ++i) too_many.push_back("t" + std::to_string(i));  // 97 tokens, 96 embedding rows
    const std::string message = attn::test::thrown_format_error([&] {
        (void)attn::Model<float>::load(
            with_tokens(too_many).write(gguf_file("qwen3_qk_norm", "F32"), dir.path / "many.gguf"));
    });
    CHECK(attn::test::contains(message, "tokenizer.ggml.tokens has 97 tokens, more than the 96 rows"));
}

TEST_CASE("RopeScaling::Kind::divisors: each pair's frequency divided by its own number") {
    attn::RopeScaling scaling;
    scaling.kind = attn::RopeScaling::Kind::divisors;
    scaling.divisors = {1.0, 2.0, 8.0};
    const std::vector<double> plain = attn::rope_frequencies(6, 100.0, {});
    const std::vector<double> divided = attn::rope_frequencies(6, 100.0, scaling);
    REQUIRE(divided.size() == 3);
    for (std::size_t j = 0; j < 3; ++j) CHECK(divided[j] == plain[j] / scaling.divisors[j]);
    CHECK_THROWS_AS(attn::rope_frequencies(8, 100.0, scaling), attn::argument_error);  // 4 pairs, 3 divisors
    attn::RotarySpec spec{6, attn::RopePairing::rotate_half, 100.0, scaling};
    CHECK(attn::Rope<double>(6, spec, 4).rotated() == 6);
    spec.scaling.divisors[1] = 0.0;
    CHECK_THROWS_AS(attn::Rope<double>(6, spec, 4), attn::argument_error);
}
