#pragma once
// The architectures attn opens, each described once: the config.json keys it reads, the
// tensors its checkpoint holds and how each is laid out. Model::load (model/model.hpp) reads
// the tensors these tables name; nothing else in attn knows an architecture's names.
//
//   architecture   config.json model_type       layers                              positions  MLP
//   store          (manifest.json)               LayerNorm, no attention biases      rotary     GELU
//   gpt2           "gpt2"  GPT2LMHeadModel       LayerNorm, biases everywhere        learned    GELU
//   llama          "llama" LlamaForCausalLM      RMSNorm, biases if the config says  rotary     SwiGLU
//   qwen2          "qwen2" Qwen2ForCausalLM      RMSNorm, q/k/v biases               rotary     SwiGLU
//
// Weights are kept (in × out), so that a projection reads x · W. GPT-2's Conv1D weights and
// the store model's are stored that way; PyTorch's Linear weights (Llama, Qwen2) are
// (out × in) and are transposed as they are read.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/rope.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// How a checkpoint stores a weight matrix.
enum class WeightLayout {
    in_out,  ///< (in × out): GPT-2's Conv1D, the store model
    out_in,  ///< (out × in): PyTorch's Linear (Llama, Qwen2)
};

/// One layer's tensor names in a checkpoint; an empty name is a tensor the layer does not have.
struct LayerTensorNames {
    std::string attention_norm_weight, attention_norm_bias;
    /// [Wq Wk Wv] as one tensor (GPT-2's c_attn, (C × 3C)) or three (q, k, v).
    std::vector<std::string> query_key_value;
    std::vector<std::string> query_key_value_bias;  ///< none, one fused, or three
    std::string output, output_bias;
    std::string mlp_norm_weight, mlp_norm_bias;
    std::string up, up_bias;      ///< GPT-2's c_fc, Llama's up_proj
    std::string gate, gate_bias;  ///< gated MLPs only: Llama's gate_proj
    std::string down, down_bias;
};

/// Every tensor name of a checkpoint, and what else it may hold that the model does not use.
struct TensorNames {
    WeightLayout layout = WeightLayout::in_out;
    std::string embedding;           ///< (V × C)
    std::string position_embedding;  ///< (longest × C), learned positions only
    std::vector<LayerTensorNames> layers;
    std::string final_norm_weight, final_norm_bias;
    std::string unembedding;  ///< untied only: stored as the layout says, (V × C) for a Linear
    /// Tensors that may be present and are skipped: GPT-2's saved attention-mask buffers, a
    /// tied model's copy of its embedding as lm_head.weight.
    std::vector<std::string> skipped;
};

namespace detail::config {

/// Reads one config.json's keys, each error naming the file, the key and its value.
class Reader {
public:
    Reader(const nlohmann::json& config, std::string file) : config_(config), file_(std::move(file)) {}

    const std::string& file() const { return file_; }
    bool has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }

    const nlohmann::json& required(const char* key) const {
        if (!config_.contains(key)) throw format_error(message(file_, ": missing \"", key, "\""));
        return config_[key];
    }

    Index positive_integer(const char* key) const { return checked_integer(key, required(key)); }
    Index positive_integer(const char* key, Index fallback) const {
        return has(key) ? checked_integer(key, config_[key]) : fallback;
    }

    double positive_number(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const nlohmann::json& value = config_[key];
        if (!value.is_number() || !(value.get<double>() > 0.0) || !std::isfinite(value.get<double>()))
            throw format_error(message(file_, ": \"", key, "\" must be a positive number, got ", value.dump()));
        return value.get<double>();
    }

    bool flag(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        if (!config_[key].is_boolean())
            throw format_error(message(file_, ": \"", key, "\" must be true or false, got ", config_[key].dump()));
        return config_[key].get<bool>();
    }

    std::string text(const char* key, const char* fallback) const {
        if (!has(key)) return fallback;
        if (!config_[key].is_string())
            throw format_error(message(file_, ": \"", key, "\" must be a string, got ", config_[key].dump()));
        return config_[key].get<std::string>();
    }

    /// A key whose only supported value is `supported` (absent and null count as `absent_ok`).
    void expect(const char* key, const nlohmann::json& supported, const char* what, bool absent_ok = true) const {
        if (!has(key)) {
            if (absent_ok) return;
            throw format_error(message(file_, ": missing \"", key, "\""));
        }
        if (config_[key] != supported)
            throw format_error(
                message(file_, ": \"", key, "\" = ", config_[key].dump(), " is not supported (", what, ")"));
    }

    /// An id, or −1 if the key is absent or null; a list (several end tokens) gives its first.
    int token_id(const char* key) const {
        if (!has(key)) return -1;
        const nlohmann::json& value = config_[key].is_array() && !config_[key].empty() ? config_[key][0] : config_[key];
        if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > (1 << 24))
            throw format_error(message(file_, ": \"", key, "\" must be a token id, got ", config_[key].dump()));
        return static_cast<int>(value.get<std::int64_t>());
    }

    [[noreturn]] void unsupported(const char* key, const std::string& supported) const {
        throw format_error(message(file_, ": \"", key, "\" = ", config_[key].dump(),
                                   " is not supported (attn supports ", supported, ")"));
    }

private:
    Index checked_integer(const char* key, const nlohmann::json& value) const {
        if (!value.is_number_integer() || value.get<std::int64_t>() <= 0 || value.get<std::int64_t>() > (1 << 24))
            throw format_error(message(file_, ": \"", key, "\" must be a positive integer, got ", value.dump()));
        return static_cast<Index>(value.get<std::int64_t>());
    }

    const nlohmann::json& config_;
    std::string file_;
};

/// The sizes every architecture must agree on, checked once settings are read.
inline void check_sizes(const ModelSettings& s, const std::string& file) {
    if (s.heads % s.key_value_heads != 0)
        throw format_error(
            message(file, ": ", s.key_value_heads, " key/value heads do not divide ", s.heads, " attention heads"));
    if (s.positions == PositionEncoding::rotary && s.head_size % 2 != 0)
        throw format_error(message(file, ": the head size ", s.head_size, " must be even for rotary positions"));
}

/// GPT2LMHeadModel: learned positions, LayerNorm, a GELU MLP, biases on every projection.
inline ModelSettings gpt2_settings(const Reader& config) {
    ModelSettings s;
    s.architecture = Architecture::gpt2;
    s.dimensions = config.positive_integer("n_embd");
    s.heads = config.positive_integer("n_head");
    s.layers = config.positive_integer("n_layer");
    s.longest = config.positive_integer("n_positions");
    s.vocabulary_size = config.positive_integer("vocab_size");
    if (s.dimensions % s.heads != 0)
        throw format_error(message(config.file(), ": n_head = ", s.heads, " does not divide n_embd = ", s.dimensions));
    s.key_value_heads = s.heads;
    s.head_size = s.dimensions / s.heads;
    s.mlp_width = config.positive_integer("n_inner", 4 * s.dimensions);
    s.norm = Norm::layer_norm;
    s.norm_epsilon = config.positive_number("layer_norm_epsilon", 1e-5);
    s.positions = PositionEncoding::learned;
    const std::string activation = config.text("activation_function", "gelu_new");
    if (activation == "gelu_new" || activation == "gelu_pytorch_tanh" || activation == "gelu_fast")
        s.activation = Activation::gelu_tanh;
    else if (activation == "gelu")
        s.activation = Activation::gelu_erf;
    else
        config.unsupported("activation_function", "\"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\" and \"gelu_fast\"");
    s.scale_scores = config.flag("scale_attn_weights", true);
    s.scale_by_layer = config.flag("scale_attn_by_inverse_layer_idx", false);
    config.expect("add_cross_attention", false, "a decoder without cross-attention");
    s.tied_embeddings = config.flag("tie_word_embeddings", true);
    s.attention_bias = s.output_bias = s.mlp_bias = true;
    return s;
}

/// LlamaForCausalLM and Qwen2ForCausalLM: rotary positions, RMSNorm, SwiGLU, grouped-query heads.
inline ModelSettings llama_settings(const Reader& config, Architecture architecture) {
    ModelSettings s;
    s.architecture = architecture;
    s.dimensions = config.positive_integer("hidden_size");
    s.heads = config.positive_integer("num_attention_heads");
    s.layers = config.positive_integer("num_hidden_layers");
    s.longest = config.positive_integer("max_position_embeddings");
    s.vocabulary_size = config.positive_integer("vocab_size");
    s.mlp_width = config.positive_integer("intermediate_size");
    s.key_value_heads = config.positive_integer("num_key_value_heads", s.heads);
    if (!config.has("head_dim") && s.dimensions % s.heads != 0)
        throw format_error(message(config.file(), ": num_attention_heads = ", s.heads,
                                   " does not divide hidden_size = ", s.dimensions, " (and no head_dim is given)"));
    s.head_size = config.positive_integer("head_dim", s.dimensions / s.heads);
    s.norm = Norm::rms_norm;
    s.norm_epsilon = config.positive_number("rms_norm_eps", 1e-6);
    s.positions = PositionEncoding::rotary;
    s.rope_base = config.positive_number("rope_theta", 10000.0);
    s.rope_pairing = RopePairing::rotate_half;
    config.expect("rope_scaling", nullptr, "rope_scaling must be null: no scaled rotary positions");
    if (config.text("hidden_act", "silu") != "silu") config.unsupported("hidden_act", "\"silu\"");
    s.activation = Activation::silu;
    s.gated_mlp = true;
    s.tied_embeddings = config.flag("tie_word_embeddings", false);
    if (architecture == Architecture::qwen2) {
        config.expect("use_sliding_window", false, "sliding-window attention must be off");
        s.attention_bias = true;  // Qwen2 has q, k, v biases and no others
    } else {
        s.attention_bias = s.output_bias = config.flag("attention_bias", false);
        s.mlp_bias = config.flag("mlp_bias", false);
    }
    return s;
}

}  // namespace detail::config

/// The settings config.json declares, for the architectures attn implements; format_error
/// naming the file, the key and its value for anything else.
inline ModelSettings settings_from_config(const nlohmann::json& config, const std::string& file) {
    if (!config.is_object()) throw format_error(file + ": config.json must be a JSON object");
    const detail::config::Reader reader(config, file);
    const std::string model_type = reader.text("model_type", "");
    struct Known {
        const char* model_type;
        const char* class_name;
    };
    static constexpr Known known[] = {
        {"gpt2", "GPT2LMHeadModel"}, {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}};
    const Known* match = nullptr;
    for (const Known& k : known)
        if (model_type == k.model_type) match = &k;
    if (!match)
        throw format_error(detail::message(
            file, ": \"model_type\" = ", reader.has("model_type") ? config["model_type"].dump() : "(missing)",
            " is not supported (attn opens \"gpt2\", \"llama\" and \"qwen2\")"));
    if (reader.has("architectures")) {
        const nlohmann::json& classes = config["architectures"];
        if (!classes.is_array() || std::find(classes.begin(), classes.end(), match->class_name) == classes.end())
            throw format_error(detail::message(file, ": \"architectures\" = ", classes.dump(),
                                               " is not supported for model_type \"", model_type, "\" (attn reads ",
                                               match->class_name, ", a causal language model)"));
    }
    ModelSettings settings =
        model_type == std::string("gpt2")
            ? detail::config::gpt2_settings(reader)
            : detail::config::llama_settings(
                  reader, model_type == std::string("qwen2") ? Architecture::qwen2 : Architecture::llama);
    // An end token past the vocabulary (a small model configured from a larger one's defaults)
    // can never be written: generation then stops at the context's end or max_tokens.
    settings.end_token = reader.token_id("eos_token_id");
    if (settings.end_token >= settings.vocabulary_size) settings.end_token = -1;
    detail::config::check_sizes(settings, file);
    return settings;
}

/// The tensor names of a Hugging Face checkpoint of `s.architecture`. GPT-2's names are
/// found with or without the "transformer." prefix: `prefix` is "" or "transformer.".
inline TensorNames hugging_face_tensor_names(const ModelSettings& s, const std::string& prefix = "") {
    using detail::message;
    TensorNames names;
    const auto optional = [](bool present, std::string name) { return present ? name : std::string(); };
    if (s.architecture == Architecture::gpt2) {
        names.layout = WeightLayout::in_out;
        names.embedding = prefix + "wte.weight";
        names.position_embedding = prefix + "wpe.weight";
        names.final_norm_weight = prefix + "ln_f.weight";
        names.final_norm_bias = prefix + "ln_f.bias";
        for (Index l = 0; l < s.layers; ++l) {
            const std::string h = message(prefix, "h.", l, ".");
            LayerTensorNames layer;
            layer.attention_norm_weight = h + "ln_1.weight";
            layer.attention_norm_bias = h + "ln_1.bias";
            layer.query_key_value = {h + "attn.c_attn.weight"};
            layer.query_key_value_bias = {h + "attn.c_attn.bias"};
            layer.output = h + "attn.c_proj.weight";
            layer.output_bias = h + "attn.c_proj.bias";
            layer.mlp_norm_weight = h + "ln_2.weight";
            layer.mlp_norm_bias = h + "ln_2.bias";
            layer.up = h + "mlp.c_fc.weight";
            layer.up_bias = h + "mlp.c_fc.bias";
            layer.down = h + "mlp.c_proj.weight";
            layer.down_bias = h + "mlp.c_proj.bias";
            names.layers.push_back(layer);
            names.skipped.push_back(h + "attn.bias");         // the causal mask, saved as a buffer
            names.skipped.push_back(h + "attn.masked_bias");  // the masked score, saved as a buffer
        }
    } else {
        names.layout = WeightLayout::out_in;
        names.embedding = "model.embed_tokens.weight";
        names.final_norm_weight = "model.norm.weight";
        for (Index l = 0; l < s.layers; ++l) {
            const std::string p = message("model.layers.", l, ".");
            LayerTensorNames layer;
            layer.attention_norm_weight = p + "input_layernorm.weight";
            layer.query_key_value = {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                                     p + "self_attn.v_proj.weight"};
            if (s.attention_bias)
                layer.query_key_value_bias = {p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias",
                                              p + "self_attn.v_proj.bias"};
            layer.output = p + "self_attn.o_proj.weight";
            layer.output_bias = optional(s.output_bias, p + "self_attn.o_proj.bias");
            layer.mlp_norm_weight = p + "post_attention_layernorm.weight";
            layer.gate = p + "mlp.gate_proj.weight";
            layer.gate_bias = optional(s.mlp_bias, p + "mlp.gate_proj.bias");
            layer.up = p + "mlp.up_proj.weight";
            layer.up_bias = optional(s.mlp_bias, p + "mlp.up_proj.bias");
            layer.down = p + "mlp.down_proj.weight";
            layer.down_bias = optional(s.mlp_bias, p + "mlp.down_proj.bias");
            names.layers.push_back(layer);
            names.skipped.push_back(p + "self_attn.rotary_emb.inv_freq");  // older checkpoints save it
        }
    }
    if (s.tied_embeddings)
        names.skipped.push_back("lm_head.weight");
    else
        names.unembedding = "lm_head.weight";
    return names;
}

/// The store model's tensor names (manifest.json's models: tools/training/export.py writes them).
inline TensorNames store_tensor_names(const ModelSettings& s) {
    TensorNames names;
    names.layout = WeightLayout::in_out;
    names.embedding = "embedding";
    names.final_norm_weight = "final_norm.weight";
    names.final_norm_bias = "final_norm.bias";
    for (Index l = 0; l < s.layers; ++l) {
        const std::string p = detail::message("layers.", l, ".");
        LayerTensorNames layer;
        layer.attention_norm_weight = p + "attention_norm.weight";
        layer.attention_norm_bias = p + "attention_norm.bias";
        layer.query_key_value = {p + "attention.query", p + "attention.key", p + "attention.value"};
        layer.output = p + "attention.output";
        layer.mlp_norm_weight = p + "mlp_norm.weight";
        layer.mlp_norm_bias = p + "mlp_norm.bias";
        layer.up = p + "mlp.up.weight";
        layer.up_bias = p + "mlp.up.bias";
        layer.down = p + "mlp.down.weight";
        layer.down_bias = p + "mlp.down.bias";
        names.layers.push_back(layer);
    }
    return names;
}

}  // namespace attn
