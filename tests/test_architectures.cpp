// Model::load on Hugging Face checkpoints (GPT-2, Llama, Qwen2 in their exact layout, written by
// tools/references/hf_checkpoints.py) against the float64 PyTorch reference written from the Hugging Face
// formulas (tools/references/hf_reference.py): logits, attention and every TransformerLens activation; and
// everything built on the model (the fast forward on any threads, decoding, attribution, the
// logit lens, patching) on each architecture.
#include <doctest/doctest.h>
#include <attn/hooks/interventions.hpp>
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>
#include <attn/model/reference_forward.hpp>
#include <attn/store.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support.hpp"

using attn::Index;

namespace {

const std::filesystem::path kCheckpoints = std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf";

// What each test checkpoint exercises (tools/references/hf_reference.py --regenerate writes them).
const char* const kNames[] = {
    "gpt2_prefixed_f32",      // transformer. prefix, saved mask buffers, gelu_new, tied
    "gpt2_f16",               // F16, erf GELU, scores scaled by 1 / (layer + 1), n_inner
    "gpt2_unscaled_f32",      // scale_attn_weights false, gelu_pytorch_tanh
    "llama_gqa_bf16_shards",  // 4 heads over 2 key/value heads, BF16, two shards, tied
    "llama_head_dim_untied",  // head_dim ≠ width / heads, one key/value head, untied, every bias
    "qwen2_bias",             // q/k/v biases, rope_theta 1e6, 6 heads over 2
    "gpt_neox_parallel",      // parallel residual, 4 of 16 numbers rotate, qkv interleaved per head, saved buffers
    "gpt_neox_sequential",    // use_parallel_residual false, half the head rotates, rotary_emb_base 1000
    "llama3_rope_scaling",    // rope_scaling llama3: frequencies kept, smoothed and divided
    "llama_linear_rope_parameters",    // transformers v5's rope_parameters, linear scaling, "dtype"
    "llama_linear_rope_scaling_type",  // the oldest spelling: rope_scaling {"type": "linear"}
    "qwen3_qk_norm",                   // RMSNorm over each query and key head, head_dim 16 ≠ 32 / 4
    "olmo2_post_norm",                 // norms after attention and the MLP, q/k norms over the whole width
    "phi3_fused_partial",              // qkv_proj and gate_up_proj fused, half of each head rotates
    "mistral_window",                  // a sliding window of 5 keys in every layer, 24 positions
    "gemma2_softcap_window",           // (1 + w) norms around both blocks, GeGLU, √C, soft caps, even layers slide
    "gemma3_pattern",                  // q/k norms per head, sliding_window_pattern 3, a θ per layer kind
    "gemma3_layer_types",              // layer_types, BF16 (√40 rounded to 6.3125), head_dim 12 ≠ 40 / 4
};

template <class T>
const attn::Model<T>& checkpoint(const std::string& name) {
    static std::map<std::string, std::unique_ptr<attn::Model<T>>> loaded;
    auto& model = loaded[name];
    if (!model) model = std::make_unique<attn::Model<T>>(attn::Model<T>::load(kCheckpoints / name));
    return *model;
}

/// A checkpoint's goldens: the prompts and, per prompt, logits, attention and activations.
struct CheckpointGolden {
    explicit CheckpointGolden(const std::string& name) : CheckpointGolden(kCheckpoints / name, 0) {}
    CheckpointGolden(const std::filesystem::path& directory, int)
        : file(attn::SafeTensors::open(directory / "golden.safetensors")) {
        std::ifstream in(directory / "golden.json");
        const nlohmann::json json = nlohmann::json::parse(in);
        for (const auto& prompt : json["prompts"]) {
            keys.push_back(prompt["key"].get<std::string>());
            prompts.push_back(prompt["ids"].get<std::vector<int>>());
        }
        hooks = json["hooks"].get<std::vector<std::string>>();
    }
    attn::SafeTensors file;
    std::vector<std::string> keys;
    std::vector<std::vector<int>> prompts;
    std::vector<std::string> hooks;
};

/// max |a − b| over max |b|: the error relative to the tensor's scale.
template <class A, class B>
double scaled_error(const A& actual, const B& expected) {
    REQUIRE(actual.rows() == expected.rows());
    REQUIRE(actual.cols() == expected.cols());
    const double scale = std::max(1e-300, double(expected.cwiseAbs().maxCoeff()));
    return double((actual.template cast<double>() - expected).cwiseAbs().maxCoeff()) / scale;
}

template <class T>
constexpr double checkpoint_bound() {
    return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

/// The prompt's full-context random ids, the longest golden prompt.
std::vector<int> longest_prompt(const CheckpointGolden& golden) {
    return *std::max_element(golden.prompts.begin(), golden.prompts.end(),
                             [](const auto& a, const auto& b) { return a.size() < b.size(); });
}

}  // namespace

TEST_CASE("Hugging Face checkpoints: the settings each config declares") {
    const auto& gpt2 = checkpoint<float>("gpt2_prefixed_f32").settings();
    CHECK(gpt2.architecture == attn::Architecture::gpt2);
    CHECK(gpt2.position_encoding == attn::PositionEncoding::learned);
    CHECK(gpt2.layer(0).norm == attn::Norm::layer_norm);
    CHECK(gpt2.final_norm == attn::Norm::layer_norm);
    CHECK(gpt2.layer(1).activation == attn::MlpActivation::gelu_tanh);
    CHECK_FALSE(gpt2.layer(0).rotates());
    CHECK(gpt2.tied_embeddings);
    CHECK(gpt2.key_value_heads == gpt2.heads);
    CHECK(gpt2.head_size * gpt2.heads == gpt2.dimensions);
    const auto& f16 = checkpoint<float>("gpt2_f16").settings();
    CHECK(f16.layer(0).activation == attn::MlpActivation::gelu_erf);
    CHECK(f16.score_scale(2) == doctest::Approx(1.0 / (std::sqrt(double(f16.head_size)) * 3)));  // ÷ (layer + 1)
    CHECK(f16.mlp_width == 3 * f16.dimensions);
    CHECK(checkpoint<float>("gpt2_unscaled_f32").settings().score_scale(1) == 1.0);
    const auto& grouped = checkpoint<float>("llama_gqa_bf16_shards").settings();
    CHECK(grouped.architecture == attn::Architecture::llama);
    CHECK(grouped.heads == 4);
    CHECK(grouped.key_value_heads == 2);
    CHECK(grouped.layer(0).norm == attn::Norm::rms_norm);
    CHECK(grouped.layer(0).gated_mlp);
    CHECK(grouped.layer(1).activation == attn::MlpActivation::silu);
    CHECK(grouped.layer(1).rotary.rotated == grouped.head_size);
    const auto& untied = checkpoint<float>("llama_head_dim_untied").settings();
    CHECK_FALSE(untied.tied_embeddings);
    CHECK(untied.key_value_heads == 1);
    CHECK(untied.head_size * untied.heads != untied.dimensions);
    for (attn::LayerSlot bias : {attn::LayerSlot::query_key_value_bias, attn::LayerSlot::output_bias,
                                 attn::LayerSlot::gate_bias, attn::LayerSlot::up_bias, attn::LayerSlot::down_bias})
        CHECK(untied.layer(1).has(bias));
    const auto& qwen = checkpoint<float>("qwen2_bias").settings();
    CHECK(qwen.architecture == attn::Architecture::qwen2);
    CHECK(qwen.layer(0).rotary.base == 1e6);
    CHECK(qwen.layer(0).has(attn::LayerSlot::query_key_value_bias));
    CHECK_FALSE(qwen.layer(0).has(attn::LayerSlot::output_bias));
    CHECK_THROWS_WITH_AS(checkpoint<float>("gpt2_f16").rope(), doctest::Contains("learned positions"),
                         attn::argument_error);

    // The newer architectures, each through its layers' descriptions.
    const auto& neox = checkpoint<float>("gpt_neox_parallel").settings();
    CHECK(neox.architecture == attn::Architecture::gpt_neox);
    CHECK(neox.layer(0).residual == attn::Residual::parallel);
    CHECK(neox.layer(1).rotary.rotated == 4);  // int(16 · 0.25)
    CHECK(neox.layer(0).activation == attn::MlpActivation::gelu_erf);
    CHECK_FALSE(neox.tied_embeddings);
    const auto& sequential = checkpoint<float>("gpt_neox_sequential").settings();
    CHECK(sequential.layer(0).residual == attn::Residual::sequential);
    CHECK(sequential.layer(0).rotary.rotated == 8);
    CHECK(sequential.layer(0).rotary.base == 1000.0);
    const auto& llama3 = checkpoint<float>("llama3_rope_scaling").settings().layer(0).rotary;
    CHECK(llama3.scaling.kind == attn::RopeScaling::Kind::llama3);
    CHECK(llama3.scaling.factor == 32.0);
    CHECK(llama3.scaling.original_context == 256.0);
    const auto& linear = checkpoint<float>("llama_linear_rope_parameters").settings().layer(1).rotary;
    CHECK(linear.scaling.kind == attn::RopeScaling::Kind::linear);
    CHECK(linear.scaling.factor == 4.0);
    CHECK(checkpoint<float>("llama_linear_rope_scaling_type").settings().layer(0).rotary.scaling.factor == 2.0);
    const auto& qwen3 = checkpoint<float>("qwen3_qk_norm").settings();
    CHECK(qwen3.layer(0).query_key_norm == attn::QueryKeyNorm::per_head);
    CHECK(qwen3.head_size == 16);
    const auto& olmo2 = checkpoint<float>("olmo2_post_norm").settings();
    CHECK(olmo2.layer(1).query_key_norm == attn::QueryKeyNorm::whole);
    CHECK_FALSE(olmo2.layer(1).input_norms);
    CHECK(olmo2.layer(1).output_norms);
    const auto& phi3 = checkpoint<float>("phi3_fused_partial").settings();
    CHECK(phi3.layer(0).rotary.rotated == 8);
    CHECK(phi3.layer(0).tensors.size() == 6);  // two norms, qkv_proj, o_proj, gate_up_proj, down_proj
    const auto& mistral = checkpoint<float>("mistral_window").settings();
    CHECK(mistral.architecture == attn::Architecture::mistral);
    CHECK(mistral.layer(1).window == 5);
    const auto& gemma2 = checkpoint<float>("gemma2_softcap_window").settings();
    CHECK(gemma2.architecture == attn::Architecture::gemma2);
    CHECK(gemma2.layer(0).window == 4);  // even layers slide
    CHECK(gemma2.layer(1).window == 0);
    CHECK(gemma2.layer(0).norms_around_blocks());
    CHECK(gemma2.layer(1).score_cap == 2.5);
    CHECK(gemma2.logit_cap == 8.0);
    CHECK(gemma2.layer(0).score_scale == doctest::Approx(1.0 / 8.0));  // query_pre_attn_scalar 64, not d = 16
    CHECK(gemma2.layer(0).activation == attn::MlpActivation::gelu_tanh);
    CHECK(gemma2.layer(0).gated_mlp);
    CHECK(gemma2.embedding_scale == double(float(std::sqrt(32.0))));
    // norms keep 1 + w: the stored weights are 0.1·N (tests/data/hf/README.md)
    const attn::Model<float>& gemma2_model = checkpoint<float>("gemma2_softcap_window");
    CHECK(std::abs(gemma2_model.final_norm_weight().mean() - 1.0f) < 0.1f);
    CHECK(std::abs(gemma2_model.layer(1).mlp_output_norm.mean() - 1.0f) < 0.1f);
    const auto& pattern = checkpoint<float>("gemma3_pattern").settings();
    CHECK(pattern.architecture == attn::Architecture::gemma3);
    CHECK(pattern.layer(0).window == 7);
    CHECK(pattern.layer(1).window == 7);
    CHECK(pattern.layer(2).window == 0);         // (2 + 1) % 3 == 0: global
    CHECK(pattern.layer(0).rotary.base == 1e4);  // rope_local_base_freq
    CHECK(pattern.layer(2).rotary.base == 1e6);  // rope_theta
    CHECK(pattern.layer(0).query_key_norm == attn::QueryKeyNorm::per_head);
    CHECK(pattern.layer(0).score_cap == 0.0);
    CHECK(pattern.logit_cap == 0.0);
    const auto& types = checkpoint<float>("gemma3_layer_types").settings();
    CHECK(types.layer(0).window == 5);
    CHECK(types.layer(1).window == 0);
    CHECK(types.layer(2).window == 5);
    CHECK(types.layer(1).rotary.base == 1e6);
    CHECK(types.layer(2).rotary.base == 1e3);
    CHECK(types.embedding_scale == 6.3125);  // √40 as a BF16 number
}

TEST_CASE(
    "Gemma configs: transformers' class defaults for absent keys, null caps off, v5's rope_parameters by layer type") {
    std::ifstream in(kCheckpoints / "gemma3_pattern" / "config.json");
    const nlohmann::json stored = nlohmann::json::parse(in);
    nlohmann::json config = stored;
    config.erase("rope_theta");
    config.erase("rope_local_base_freq");
    config["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                                 {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    const attn::ModelSettings v5 = attn::settings_from_config(config, "config.json");
    const attn::ModelSettings v4 = attn::settings_from_config(stored, "config.json");
    for (Index l = 0; l < 3; ++l) CHECK(v5.layer(l).rotary.base == v4.layer(l).rotary.base);
    CHECK(v5.layer(2).rotary.base == 1e6);

    std::ifstream in2(kCheckpoints / "gemma2_softcap_window" / "config.json");
    nlohmann::json gemma2 = nlohmann::json::parse(in2);
    for (const char* key :
         {"final_logit_softcapping", "attn_logit_softcapping", "query_pre_attn_scalar", "sliding_window"})
        gemma2.erase(key);
    const attn::ModelSettings defaults = attn::settings_from_config(gemma2, "config.json");
    CHECK(defaults.logit_cap == 30.0);  // Gemma2Config's defaults
    CHECK(defaults.layer(0).score_cap == 50.0);
    CHECK(defaults.layer(0).score_scale == doctest::Approx(1.0 / 16.0));  // 256^-1/2
    CHECK(defaults.layer(0).window == 4096);
    gemma2["final_logit_softcapping"] = nullptr;
    gemma2["attn_logit_softcapping"] = nullptr;
    const attn::ModelSettings uncapped = attn::settings_from_config(gemma2, "config.json");
    CHECK(uncapped.logit_cap == 0.0);
    CHECK(uncapped.layer(0).score_cap == 0.0);
}

TEST_CASE("Rotary frequencies: Llama 3's scaling keeps short wavelengths, divides long ones, blends between") {
    attn::RopeScaling llama3;
    llama3.kind = attn::RopeScaling::Kind::llama3;
    llama3.factor = 32;
    llama3.original_context = 256;
    const std::vector<double> plain = attn::rope_frequencies(32, 5e5, {});
    const std::vector<double> scaled = attn::rope_frequencies(32, 5e5, llama3);
    const double pi = 3.14159265358979323846;
    int kept = 0, divided = 0, blended = 0;
    for (std::size_t j = 0; j < plain.size(); ++j) {
        const double wavelength = 2 * pi / plain[j];
        if (wavelength < 256.0 / 4) {
            CHECK(scaled[j] == plain[j]);
            ++kept;
        } else if (wavelength > 256.0) {
            CHECK(scaled[j] == doctest::Approx(plain[j] / 32).epsilon(1e-15));
            ++divided;
        } else {
            CHECK(scaled[j] < plain[j]);
            CHECK(scaled[j] > plain[j] / 32);
            ++blended;
        }
    }
    CHECK((kept > 0 && divided > 0 && blended > 0));
    attn::RopeScaling linear;
    linear.kind = attn::RopeScaling::Kind::linear;
    linear.factor = 4;
    CHECK(attn::rope_frequencies(8, 1e4, linear)[1] == doctest::Approx(std::pow(1e4, -0.25) / 4));  // pair 1 of 8
    // A partial rotation leaves the rest of the head as it was.
    const attn::Rope<double> partial(16, attn::RotarySpec{4, attn::RopePairing::rotate_half, 1e4, {}}, 8);
    attn::Matrix<double> x = attn::Matrix<double>::Random(8, 16);
    const attn::Matrix<double> before = x;
    partial.apply(x);
    CHECK(x.rightCols(12) == before.rightCols(12));
    CHECK(x.row(0) == before.row(0));  // position 0 turns by 0
    CHECK(x.row(3).leftCols(4) != before.row(3).leftCols(4));
    CHECK_THROWS_WITH_AS(attn::Rope<double>(16, attn::RotarySpec{5, attn::RopePairing::rotate_half, 1e4, {}}),
                         doctest::Contains("must be even"), attn::argument_error);
}

TEST_CASE_TEMPLATE("Hugging Face checkpoints: logits, attention and every activation agree with the float64 reference",
                   T, float, double) {
    double worst = 0.0;
    const auto agree = [&](double error) {
        worst = std::max(worst, error);
        return error < checkpoint_bound<T>();
    };
    for (const char* name : kNames) {
        CAPTURE(name);
        const attn::Model<T>& model = checkpoint<T>(name);
        const CheckpointGolden golden(name);
        for (std::size_t p = 0; p < golden.prompts.size(); ++p) {
            const std::vector<int>& ids = golden.prompts[p];
            const std::string key = golden.keys[p] + ".";
            CAPTURE(ids.size());
            attn::ForwardOptions options;
            options.keep_attention = true;
            const attn::ForwardResult<T> fast = model.forward(ids, options);
            const attn::ForwardResult<T> reference = attn::reference_forward(model, ids, options);
            const attn::Matrix<double> logits = golden.file.matrix<double>(key + "logits");
            CHECK(agree(scaled_error(fast.logits, logits)));
            CHECK(agree(scaled_error(reference.logits, logits)));
            const attn::TensorData<double> attention = golden.file.tensor<double>(key + "attention");
            const Index n = Index(ids.size());
            REQUIRE(attention.shape ==
                    std::vector<std::int64_t>{model.settings().layers, model.settings().heads, n, n});
            for (Index l = 0; l < model.settings().layers; ++l)
                for (Index h = 0; h < model.settings().heads; ++h) {
                    const Eigen::Map<const attn::Matrix<double>> expected(
                        attention.values.data() + (l * model.settings().heads + h) * n * n, n, n);
                    CHECK(agree(scaled_error(fast.attention.head(l, h), expected)));
                    CHECK(agree(scaled_error(reference.attention.head(l, h), expected)));
                }

            attn::HookOptions<T> hooks;
            hooks.keep = {"*"};
            const attn::HookedResult<T> run = attn::run_with_hooks(model, ids, hooks);
            std::vector<std::string> kept = run.cache.names(), expected_names = golden.hooks;
            std::sort(kept.begin(), kept.end());
            std::sort(expected_names.begin(), expected_names.end());
            CHECK(kept == expected_names);  // the architecture's points, no more, no fewer
            for (const std::string& hook : golden.hooks) {
                CAPTURE(hook);
                CHECK(agree(scaled_error(run.cache[hook], golden.file.matrix<double>(key + hook))));
            }
            CHECK(run.result.logits == model.forward(ids).logits);  // keeping activations changes no bit
        }
    }
    MESSAGE(std::string(sizeof(T) == 4 ? "float" : "double")
            << ": worst error relative to a tensor's scale over logits, "
               "attention and activations of every checkpoint: "
            << worst);
}

// The fast forward equals reference_forward on every architecture with ablated heads, and its
// bits are the same on 1–4 started threads and on kept workers.
TEST_CASE_TEMPLATE("Hugging Face checkpoints threads: fast = reference, 1–4 threads and kept workers", T, float,
                   double) {
    const double bound = sizeof(T) == 4 ? 5e-6 : 1e-13;
    attn::Workers workers(2);
    for (const char* name : kNames) {
        CAPTURE(name);
        const attn::Model<T>& model = checkpoint<T>(name);
        const std::vector<int> ids = longest_prompt(CheckpointGolden(name));
        attn::ForwardOptions options;
        options.keep_attention = true;
        // pushed one by one: gcc 12 finds a null memmove in the initializer list's assignment (-Wnonnull)
        options.ablate.push_back({0, 1});
        options.ablate.push_back({model.settings().layers - 1, 0});
        const attn::ForwardResult<T> reference = attn::reference_forward(model, ids, options);
        const attn::ForwardResult<T> one = model.forward(ids, options);
        CHECK(scaled_error(one.logits, reference.logits.template cast<double>()) < bound);
        for (Index l = 0; l < model.settings().layers; ++l)
            for (Index h = 0; h < model.settings().heads; ++h)
                CHECK(scaled_error(one.attention.head(l, h), reference.attention.head(l, h).template cast<double>()) <
                      bound);
        for (int threads : {2, 3, 4}) {
            CAPTURE(threads);
            options.threads = threads;
            const attn::ForwardResult<T> many = model.forward(ids, options);
            CHECK(many.logits == one.logits);  // bit-identical for every thread count
            CHECK(many.attention.layer(model.settings().layers - 1) ==
                  one.attention.layer(model.settings().layers - 1));
        }
        options.threads = workers;
        CHECK(model.forward(ids, options).logits == one.logits);
    }
}

TEST_CASE_TEMPLATE(
    "Hugging Face checkpoints: decoding step by step gives the forward's rows (grouped heads in the "
    "cache, learned positions)",
    T, float, double) {
    const double bound = sizeof(T) == 4 ? 2e-5 : 1e-12;
    for (const char* name : kNames) {
        CAPTURE(name);
        const attn::Model<T>& model = checkpoint<T>(name);
        const std::vector<int> ids = longest_prompt(CheckpointGolden(name));
        attn::ForwardOptions keep;
        keep.keep_attention = true;
        const attn::ForwardResult<T> whole = model.forward(ids, keep);
        attn::Decoder<T> decoder(model);
        CHECK(decoder.cache(0).heads() == model.settings().key_value_heads);
        attn::DecodeOptions options;
        options.keep_attention = true;
        options.all_logits = true;
        const std::size_t prefix = ids.size() / 2;
        const attn::DecodeResult<T> first = decoder.append({ids.begin(), ids.begin() + long(prefix)}, options);
        CHECK(scaled_error(first.logits, whole.logits.topRows(Index(prefix)).template cast<double>()) < bound);
        for (std::size_t i = prefix; i < ids.size(); ++i) {
            const attn::DecodeResult<T> step = decoder.step(ids[i], options);
            CHECK(scaled_error(step.logits, whole.logits.row(Index(i)).template cast<double>()) < bound);
            const Index last = model.settings().layers - 1, h = model.settings().heads - 1;
            CHECK(scaled_error(
                      step.attention.head(last, h).leftCols(Index(i) + 1),
                      whole.attention.head(last, h).row(Index(i)).leftCols(Index(i) + 1).template cast<double>()) <
                  bound);
        }
    }
}

TEST_CASE("Hugging Face checkpoints: logit attribution's components sum to the metric exactly, named by architecture") {
    for (const char* name : kNames) {
        CAPTURE(name);
        const attn::Model<double>& model = checkpoint<double>(name);
        const attn::ModelSettings& s = model.settings();
        const std::vector<int> ids = longest_prompt(CheckpointGolden(name));
        attn::HookOptions<double> hooks;
        hooks.keep = attn::attribution_activations(s);
        const attn::HookedResult<double> run = attn::run_with_hooks(model, ids, hooks);
        const Index position = Index(ids.size()) - 2;
        const attn::AttributionResult<double> attribution =
            attn::logit_attribution(model, run, {position, ids.back(), ids.front()});
        CHECK(attribution.shares.sum() == doctest::Approx(attribution.metric).epsilon(1e-12));
        const auto has = [&](const std::string& component) {
            return std::find(attribution.components.begin(), attribution.components.end(), component) !=
                   attribution.components.end();
        };
        const bool output_bias = s.layer(0).has(attn::LayerSlot::output_bias);
        const bool whole_attention = s.layer(0).output_norms;  // heads not separable: one "attn0"
        CHECK(has("pos_embed") == (s.position_encoding == attn::PositionEncoding::learned));
        CHECK(has("attn_bias0") == (output_bias && !whole_attention));
        CHECK(has("attn0") == whole_attention);
        CHECK(has("bias") == (s.final_norm == attn::Norm::layer_norm));
        const Index per_layer = whole_attention ? 2 : s.heads + 1 + Index(output_bias);
        CHECK(Index(attribution.shares.size()) ==
              1 + Index(has("pos_embed")) + s.layers * per_layer + Index(has("bias")));

        // The logit lens's last stage is the model's own prediction.
        attn::HookOptions<double> lens_hooks;
        lens_hooks.keep = {"*"};
        const attn::HookedResult<double> all = attn::run_with_hooks(model, ids, lens_hooks);
        const attn::LensResult<double> lens = attn::logit_lens(model, all, position);
        attn::Matrix<double> probabilities = all.result.logits.row(position);
        attn::softmax_rows_in_place(probabilities);
        CHECK(scaled_error(lens.probabilities.bottomRows(1), probabilities) < 1e-12);
    }
}

TEST_CASE("Hugging Face checkpoints: interventions and patching on every architecture") {
    for (const char* name : kNames) {
        CAPTURE(name);
        const attn::Model<float>& model = checkpoint<float>(name);
        const attn::ModelSettings& s = model.settings();
        std::vector<int> clean = longest_prompt(CheckpointGolden(name)), corrupted = clean;
        // the token before the last: within every layer's window (Mistral's 5 keys reach 8 back in 2 layers)
        const std::size_t changed = clean.size() - 2;
        corrupted[changed] = (corrupted[changed] + 1) % int(s.vocabulary_size);
        // Replacing a point with its own values changes no bit.
        const std::string point =
            s.position_encoding == attn::PositionEncoding::rotary ? "blocks.0.attn.hook_rot_k" : "hook_pos_embed";
        attn::HookOptions<float> keep;
        keep.keep = {point};
        const attn::HookedResult<float> run = attn::run_with_hooks(model, clean, keep);
        attn::HookOptions<float> replace;
        replace.interventions = {attn::Intervention<float>::replace(point, run.cache[point])};
        CHECK(attn::run_with_hooks(model, clean, replace).result.logits == run.result.logits);
        // Zeroing one key/value head of the keys changes the logits after the first position.
        attn::HookOptions<float> zero;
        zero.interventions = {attn::Intervention<float>::zero("blocks.0.attn.hook_k", s.key_value_heads - 1)};
        CHECK(attn::run_with_hooks(model, clean, zero).result.logits != run.result.logits);
        attn::HookOptions<float> past_the_heads;
        past_the_heads.interventions = {attn::Intervention<float>::zero("blocks.0.attn.hook_k", s.key_value_heads)};
        CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, clean, past_the_heads), doctest::Contains("intervention head"),
                             attn::argument_error);

        const attn::LogitMetric metric{Index(clean.size()) - 1, clean.back(), -1};
        const attn::PatchingResult<float> heads = attn::patch_heads(model, clean, corrupted, metric);
        CHECK(heads.scores.rows() == s.layers);
        CHECK(heads.scores.cols() == s.heads);
        CHECK(heads.scores.allFinite());
        const attn::PatchingResult<float> residual = attn::patch_residual(model, clean, corrupted, metric);
        // PatchingResult the whole residual stream at the corrupted position restores the clean run.
        CHECK(residual.scores(0, Index(changed)) == doctest::Approx(1.0).epsilon(1e-4));
    }
}

TEST_CASE("Model::load names what a Hugging Face directory gets wrong") {
    attn::test::TempDir temp;
    const auto copy = [&](const std::string& name) {
        const std::filesystem::path dir = temp.path / name;
        std::filesystem::remove_all(dir);
        std::filesystem::copy(kCheckpoints / name, dir);
        return dir;
    };
    const auto edit_config = [](const std::filesystem::path& dir, const auto& change) {
        nlohmann::json config;
        {
            std::ifstream in(dir / "config.json");
            config = nlohmann::json::parse(in);
        }
        change(config);
        std::ofstream(dir / "config.json") << config.dump(2);
    };
    const auto config_error = [&](const char* name, const auto& change, const std::string& message) {
        CAPTURE(message);
        const std::filesystem::path dir = copy(name);
        edit_config(dir, change);
        CHECK_THROWS_WITH_AS(attn::Model<float>::load(dir), doctest::Contains(message.c_str()), attn::format_error);
    };
    using json = nlohmann::json;
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["model_type"] = "bert"; },
        "\"model_type\" = \"bert\" is not supported (attn opens \"gpt2\", \"llama\", \"qwen2\", \"qwen3\", \"olmo2\", "
        "\"phi3\", \"gpt_neox\", \"mistral\", \"gemma2\", \"gemma3_text\")");
    // Gemma's keys, each by name.
    config_error(
        "gemma3_layer_types",
        [](json& c) {
            c["layer_types"] = {"sliding_attention", "full_attention"};
        },
        "\"layer_types\" must list 3 layers' types");
    config_error(
        "gemma3_layer_types", [](json& c) { c["layer_types"][1] = "chunked_attention"; },
        "\"layer_types\"[1] = \"chunked_attention\" is not supported");
    config_error(
        "gemma3_pattern",
        [](json& c) {
            c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
        },
        "\"rope_scaling\" = {\"factor\":8.0,\"rope_type\":\"linear\"} is not supported (attn supports Gemma's rotary "
        "positions without frequency scaling)");
    config_error(
        "gemma2_softcap_window", [](json& c) { c["attention_bias"] = true; },
        "\"attention_bias\" = true is not supported");
    config_error(
        "gemma2_softcap_window", [](json& c) { c["hidden_activation"] = "relu"; },
        "\"hidden_activation\" = \"relu\" is not supported");
    config_error(
        "gemma2_softcap_window", [](json& c) { c["torch_dtype"] = "int8"; },
        "\"torch_dtype\" = \"int8\" is not supported");
    config_error(
        "gemma2_softcap_window", [](json& c) { c["attn_logit_softcapping"] = -1.0; },
        "\"attn_logit_softcapping\" must be a positive number, got -1.0");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["architectures"] = {"GPT2ForSequenceClassification"}; },
        "is not supported for model_type \"gpt2\" (attn reads GPT2LMHeadModel");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c.erase("n_head"); }, "config.json: missing \"n_head\"");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["n_layer"] = -2; }, "\"n_layer\" must be a positive integer, got -2");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["n_head"] = 5; }, "n_head = 5 does not divide n_embd");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["activation_function"] = "relu"; },
        "\"activation_function\" = \"relu\" is not supported");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["scale_attn_weights"] = "yes"; },
        "\"scale_attn_weights\" must be true or false");
    // Rotary scalings attn does not implement, and keys that would change the maths, by name.
    config_error(
        "llama_gqa_bf16_shards",
        [](json& c) {
            c["rope_scaling"] = {{"rope_type", "llama3"}};
        },
        "\"rope_scaling\": missing \"factor\"");
    for (const char* type : {"dynamic", "yarn", "longrope", "su"})
        config_error(
            "llama_gqa_bf16_shards",
            [&](json& c) {
                c["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
            },
            std::string("\"rope_type\" = \"") + type + "\" is not supported (attn supports \"default\", \"linear\"");
    config_error(
        "llama_gqa_bf16_shards",
        [](json& c) {
            c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}, {"attention_factor", 0.5}};
        },
        "\"attention_factor\" = 0.5 is not supported in linear rope scaling");
    config_error(
        "llama_linear_rope_parameters", [](json& c) { c["rope_parameters"]["rope_type"] = "longrope"; },
        "\"rope_parameters\": \"rope_type\" = \"longrope\" is not supported");
    config_error(
        "llama3_rope_scaling", [](json& c) { c["rope_scaling"]["high_freq_factor"] = 0.5; },
        "high_freq_factor must exceed low_freq_factor");
    config_error(
        "phi3_fused_partial", [](json& c) { c["partial_rotary_factor"] = 1.5; },
        "the rotary fraction of a head must be in (0, 1], got 1.5");
    config_error(
        "phi3_fused_partial", [](json& c) { c["sliding_window"] = 8; }, "\"sliding_window\" = 8 is not supported");
    config_error(
        "gpt_neox_parallel",
        [](json& c) {
            c["rotary_pct"] = 0.1;
            c["partial_rotary_factor"] = 0.1;  // transformers writes both spellings
        },
        "1 rotated numbers of a head of 16: rotary positions turn an even number of them");
    config_error(
        "gpt_neox_parallel", [](json& c) { c["partial_rotary_factor"] = 0.5; },
        "rotary_pct and partial_rotary_factor differ");
    config_error(
        "gpt_neox_parallel", [](json& c) { c["rope_theta"] = 500.0; }, "rotary_emb_base and rope_theta differ");
    config_error(
        "gpt_neox_parallel", [](json& c) { c["hidden_act"] = "relu"; }, "\"hidden_act\" = \"relu\" is not supported");
    config_error(
        "olmo2_post_norm", [](json& c) { c["clip_qkv"] = 8.0; }, "\"clip_qkv\" = 8.0 is not supported");
    config_error(
        "qwen3_qk_norm", [](json& c) { c["use_sliding_window"] = true; },
        "\"use_sliding_window\" = true is not supported");
    config_error(
        "llama_gqa_bf16_shards", [](json& c) { c["hidden_act"] = "gelu"; },
        "\"hidden_act\" = \"gelu\" is not supported (attn supports \"silu\")");
    config_error(
        "llama_gqa_bf16_shards", [](json& c) { c["num_key_value_heads"] = 3; },
        "3 key/value heads do not divide 4 attention heads");
    config_error(
        "llama_gqa_bf16_shards", [](json& c) { c["head_dim"] = 15; },
        "15 rotated numbers of a head of 15: rotary positions turn an even number of them");
    config_error(
        "qwen2_bias", [](json& c) { c["use_sliding_window"] = true; },
        "\"use_sliding_window\" = true is not supported");
    config_error(
        "gpt2_prefixed_f32", [](json& c) { c["n_positions"] = 16; }, "wpe.weight is [32, 32], expected [16, 32]");

    {
        const std::filesystem::path dir = copy("qwen2_bias");
        std::ofstream(dir / "config.json") << "{ not json";
        CHECK_THROWS_WITH_AS(attn::Model<float>::load(dir), doctest::Contains("config.json: not valid JSON"),
                             attn::format_error);
        std::filesystem::remove(dir / "config.json");
        CHECK_THROWS_WITH_AS(attn::Model<float>::load(dir),
                             doctest::Contains("neither manifest.json (an attn model) nor config.json"),
                             attn::io_error);
    }

    // Tensors: the checkpoint rewritten with one tensor removed, added, reshaped or poisoned.
    const auto rewrite = [&](const char* name, const auto& change) {
        const std::filesystem::path dir = copy(name);
        const attn::SafeTensors file = attn::SafeTensors::open(dir / "model.safetensors");
        std::map<std::string, attn::TensorData<float>> tensors;
        for (const std::string& tensor : file.names()) tensors[tensor] = file.tensor<float>(tensor);
        change(tensors);
        std::vector<attn::SafeTensorsEntry> entries;
        for (const auto& [tensor, data] : tensors)
            entries.push_back(attn::safetensors_entry(tensor, data.shape, data.values));
        attn::write_safetensors(dir / "model.safetensors", entries);
        return dir;
    };
    using Tensors = std::map<std::string, attn::TensorData<float>>;
    const std::filesystem::path missing_and_extra = rewrite("qwen2_bias", [](Tensors& t) {
        t.erase("model.layers.1.self_attn.k_proj.bias");
        t["model.layers.0.self_attn.o_proj.bias"] = {{t["model.norm.weight"].shape}, t["model.norm.weight"].values};
    });
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(missing_and_extra),
                         doctest::Contains("the weights do not fit the config; missing: "
                                           "model.layers.1.self_attn.k_proj.bias; unexpected: "
                                           "model.layers.0.self_attn.o_proj.bias"),
                         attn::format_error);
    const std::filesystem::path misshapen = rewrite("llama_head_dim_untied", [](Tensors& t) {
        std::swap(t["model.layers.0.self_attn.q_proj.weight"].shape[0],
                  t["model.layers.0.self_attn.q_proj.weight"].shape[1]);
    });
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(misshapen),
                         doctest::Contains("wrong shape: model.layers.0.self_attn.q_proj.weight is"),
                         attn::format_error);
    const std::filesystem::path poisoned = rewrite("gpt2_prefixed_f32", [](Tensors& t) {
        t["transformer.h.1.mlp.c_fc.weight"].values[5] = std::numeric_limits<float>::quiet_NaN();
    });
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(poisoned),
                         doctest::Contains("tensor 'transformer.h.1.mlp.c_fc.weight' holds NaN or infinity"),
                         attn::format_error);
    // Without the prefix and without the mask buffers, GPT-2 loads the same model.
    const std::filesystem::path plain = rewrite("gpt2_prefixed_f32", [](Tensors& t) {
        Tensors renamed;
        for (auto& [name, data] : t)
            if (name.find(".attn.bias") == std::string::npos && name.find("masked_bias") == std::string::npos)
                renamed[name.substr(std::string("transformer.").size())] = data;
        t = renamed;
    });
    const std::vector<int> ids = {3, 1, 4, 1, 5};
    CHECK(attn::Model<float>::load(plain).forward(ids).logits ==
          checkpoint<float>("gpt2_prefixed_f32").forward(ids).logits);

    // A shard the index lists but the directory lacks.
    const std::filesystem::path sharded = copy("llama_gqa_bf16_shards");
    std::filesystem::remove(sharded / "model-00002-of-00002.safetensors");
    CHECK_THROWS_WITH(attn::Model<float>::load(sharded), doctest::Contains("model-00002-of-00002.safetensors"));
}

TEST_CASE_TEMPLATE(
    "models/store-llama: the store corpus trained as a Llama checkpoint, opened as a downloaded one, "
    "agrees with the float64 reference and copies from the name",
    T, float, double) {
    const attn::Model<T> model =
        attn::Model<T>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store-llama");
    CHECK(model.settings().architecture == attn::Architecture::llama);
    CHECK(model.settings().key_value_heads == 2);
    CHECK(model.tokenizer().kind() == attn::Tokenizer::Kind::store);
    const CheckpointGolden golden(std::filesystem::path(ATTN_TEST_DATA_DIR) / "store_llama", 0);
    const std::vector<int> exemplar = attn::store::product_ids(
        model, "double chaise patio furniture cover",
        "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.");
    CHECK(exemplar == golden.prompts[0]);
    for (std::size_t p = 0; p < golden.prompts.size(); ++p) {
        const std::vector<int>& ids = golden.prompts[p];
        const std::string key = golden.keys[p] + ".";
        attn::ForwardOptions options;
        options.keep_attention = true;
        const attn::ForwardResult<T> result = model.forward(ids, options);
        CHECK(scaled_error(result.logits, golden.file.matrix<double>(key + "logits")) < checkpoint_bound<T>());
        attn::HookOptions<T> hooks;
        hooks.keep = {"*"};
        const attn::HookedResult<T> run = attn::run_with_hooks(model, ids, hooks);
        for (const std::string& hook : golden.hooks) {
            CAPTURE(hook);
            CHECK(scaled_error(run.cache[hook], golden.file.matrix<double>(key + hook)) < checkpoint_bound<T>());
        }
    }
    // At the description's second "furniture" the model writes the name's "cover" (the chapter's
    // copy), and some head puts most of its weight on the name's "cover" (position 6) to do it.
    attn::ForwardOptions options;
    options.keep_attention = true;
    const attn::ForwardResult<T> result = model.forward(exemplar, options);
    const Index furniture = 22, cover = 6;
    REQUIRE(exemplar[std::size_t(furniture) + 1] == exemplar[std::size_t(cover)]);
    attn::Matrix<double> probabilities = result.logits.row(furniture).template cast<double>();
    attn::softmax_rows_in_place(probabilities);
    CHECK(probabilities(0, exemplar[std::size_t(cover)]) > 0.99);
    double strongest = 0.0;
    for (Index l = 0; l < model.settings().layers; ++l)
        for (Index h = 0; h < model.settings().heads; ++h)
            strongest = std::max(strongest, double(result.attention(l, h, furniture, cover)));
    CHECK(strongest > 0.8);
}
