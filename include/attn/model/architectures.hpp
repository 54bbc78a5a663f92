#pragma once
// The architectures attn opens, each described once: the config.json keys it reads, and for
// every layer a LayerDescription (model/types.hpp): what the layer computes (norms, residual,
// q/k norms, rotation, MLP, score scale) and the table of tensors it reads, each with its name,
// stored shape and where its numbers go. Model::load reads the tensors these tables name in one
// loop; the passes follow the descriptions; nothing else in attn knows an architecture.
//
//   architecture  model_type / class                norms                 residual    positions         MLP
//   store         (manifest.json)                   LayerNorm             sequential  rotary            GELU
//   gpt2          "gpt2" GPT2LMHeadModel            LayerNorm, biases     sequential  learned           GELU
//   llama         "llama" LlamaForCausalLM          RMSNorm               sequential  rotary (scaled)   SwiGLU
//   qwen2         "qwen2" Qwen2ForCausalLM          RMSNorm, q/k/v biases sequential  rotary            SwiGLU
//   qwen3         "qwen3" Qwen3ForCausalLM          RMSNorm, q/k per head sequential  rotary            SwiGLU
//   olmo2         "olmo2" Olmo2ForCausalLM          RMSNorm after blocks, sequential  rotary            SwiGLU
//                                                   q/k over the width
//   phi3          "phi3" Phi3ForCausalLM            RMSNorm               sequential  rotary (partial)  SwiGLU, fused
//   mistral       "mistral" MistralForCausalLM      RMSNorm               sequential  rotary, window    SwiGLU
//   gpt_neox      "gpt_neox" GPTNeoXForCausalLM     LayerNorm, biases     parallel or rotary (partial)  GELU
//                                                                         sequential
//   gemma2        "gemma2" Gemma2ForCausalLM        RMSNorm (1 + w)       sequential  rotary, windows   GeGLU
//                                                   before and after      on even layers
//                                                   each block; soft caps
//   gemma3        "gemma3_text" Gemma3ForCausalLM   Gemma 2's, q/k per    sequential  rotary, windows,  GeGLU
//                                                   head; no caps                     θ per layer kind
//
// Adding an architecture: a function here that reads its config into ModelSettings and builds
// each layer's description (its tensors with the helpers below), one line in `kKnown`, its
// tiny checkpoint and reference in tools/references, and a public step in core/ for any
// operation attn does not have yet (docs/DESIGN.md walks through one).
//
// Weights are kept (in × out), so that a projection reads x · W. GPT-2's Conv1D weights and
// the store model's are stored that way; PyTorch's Linear weights are (out × in) and are
// transposed as they are read.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/rope.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"

namespace attn {

namespace detail::config {

/// Reads one config.json's keys, each error naming the file, the key and its value.
class Reader {
public:
    Reader(const nlohmann::json& config, std::string file) : config_(config), file_(std::move(file)) {}

    const std::string& file() const { return file_; }
    /// Whether the key is there with a value (null counts as absent).
    bool has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }
    /// Whether the key is there at all, null included (a null cap is off, an absent one the default).
    bool present(const char* key) const { return config_.contains(key); }

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

    /// The value of a key that must be a JSON object (rope_scaling, rope_parameters).
    const nlohmann::json& object(const char* key) const {
        if (!config_[key].is_object())
            throw format_error(message(file_, ": \"", key, "\" must be an object or null, got ", config_[key].dump()));
        return config_[key];
    }

    /// Every key of the object is one of `known`; else format_error naming the key and value.
    void only_keys(const std::vector<std::string>& known, const std::string& what) const {
        for (const auto& [key, value] : config_.items())
            if (std::find(known.begin(), known.end(), key) == known.end())
                throw format_error(message(file_, ": \"", key, "\" = ", value.dump(), " is not supported in ", what,
                                           " (attn reads ", join(known), ")"));
    }

    [[noreturn]] void unsupported(const char* key, const std::string& supported) const {
        throw format_error(message(file_, ": \"", key, "\" = ", config_[key].dump(),
                                   " is not supported (attn supports ", supported, ")"));
    }

private:
    static std::string join(const std::vector<std::string>& keys) {
        std::string text;
        for (const std::string& key : keys) text += (text.empty() ? "\"" : ", \"") + key + "\"";
        return text;
    }

    Index checked_integer(const char* key, const nlohmann::json& value) const {
        if (!value.is_number_integer() || value.get<std::int64_t>() <= 0 || value.get<std::int64_t>() > (1 << 24))
            throw format_error(message(file_, ": \"", key, "\" must be a positive integer, got ", value.dump()));
        return static_cast<Index>(value.get<std::int64_t>());
    }

    const nlohmann::json& config_;
    std::string file_;
};

}  // namespace detail::config

namespace detail::layers {

/// A vector tensor (norm weight or bias) of `size` read whole into `slot`.
inline LayerTensor vector_tensor(std::string name, LayerSlot slot, Index size) {
    return {std::move(name), {size}, false, {{slot, 0, size, 0}}};
}

/// A weight (in × out) read whole into columns `to` … of `slot`; stored (out × in) if out_in.
inline LayerTensor weight_tensor(std::string name, LayerSlot slot, Index in, Index out, bool out_in, Index to = 0) {
    return {std::move(name),
            out_in ? std::vector<std::int64_t>{out, in} : std::vector<std::int64_t>{in, out},
            out_in,
            {{slot, 0, out, to}}};
}

/// A tensor whose outputs are several slots' (fused: Phi-3's qkv_proj and gate_up_proj, GPT-2's c_attn).
inline LayerTensor fused_tensor(std::string name, std::vector<std::int64_t> shape, bool out_in,
                                std::vector<TensorPiece> pieces) {
    return {std::move(name), std::move(shape), out_in, std::move(pieces)};
}

/// [q k v] with the heads' queries, keys and values interleaved per head, (q_0 k_0 v_0 q_1 …),
/// d outputs each (GPT-NeoX's query_key_value), into the slot's [Wq Wk Wv] columns.
inline std::vector<TensorPiece> per_head_query_key_value(LayerSlot slot, Index heads, Index d) {
    std::vector<TensorPiece> pieces;
    for (Index h = 0; h < heads; ++h)
        for (Index part = 0; part < 3; ++part)
            pieces.push_back({slot, (3 * h + part) * d, d, part * heads * d + h * d});
    return pieces;
}

/// `heads` heads of d outputs each, stored from output `from` on in ggml's rotary layout — each
/// head's pairs adjacent, (x₀, x_{d/2}, x₁, x_{d/2+1}, …), as llama.cpp's converter permutes
/// Llama's q and k rows (LlamaModel.permute) for ggml's adjacent-pair rope — into the slot's
/// columns `to` … in the rotate-half order the descriptions use (x₀ … x_{d/2−1}, x_{d/2} …):
/// output h·d + 2r + t goes to column h·d + t·d/2 + r. Undone as the tensor is read, the
/// layer's queries and keys (and every hook on them) are those of the Hugging Face checkpoint.
inline std::vector<TensorPiece> rotary_pairs_per_head(LayerSlot slot, Index heads, Index d, Index from, Index to) {
    std::vector<TensorPiece> pieces;
    for (Index h = 0; h < heads; ++h)
        for (Index r = 0; r < d / 2; ++r)
            for (Index t = 0; t < 2; ++t)
                pieces.push_back({slot, from + h * d + 2 * r + t, 1, to + h * d + t * d / 2 + r});
    return pieces;
}

/// The three q, k, v tensors of a layer (names given) into [Wq Wk Wv] (weights, out × in) or
/// [bq bk bv] (biases).
inline void add_query_key_value(std::vector<LayerTensor>& tensors, const ModelSettings& s, const std::string& q,
                                const std::string& k, const std::string& v, bool biases) {
    const Index c = s.dimensions, qw = s.query_width(), kv = s.key_value_width();
    if (!biases) {
        tensors.push_back(weight_tensor(q, LayerSlot::query_key_value, c, qw, true, 0));
        tensors.push_back(weight_tensor(k, LayerSlot::query_key_value, c, kv, true, qw));
        tensors.push_back(weight_tensor(v, LayerSlot::query_key_value, c, kv, true, qw + kv));
    } else {
        const LayerSlot b = LayerSlot::query_key_value_bias;
        tensors.push_back({q, {qw}, false, {{b, 0, qw, 0}}});
        tensors.push_back({k, {kv}, false, {{b, 0, kv, qw}}});
        tensors.push_back({v, {kv}, false, {{b, 0, kv, qw + kv}}});
    }
}

/// The score scale: 1/√d unless `scale` is off, also ÷ (layer + 1) if `by_layer` (GPT-2's options).
inline double score_scale(Index head_size, bool scale, bool by_layer, Index layer) {
    double value = scale ? 1.0 / std::sqrt(static_cast<double>(head_size)) : 1.0;
    if (by_layer) value /= static_cast<double>(layer + 1);
    return value;
}

/// A LayerNorm-family layer's structure (GPT-2, GPT-NeoX, the store model), its tensors still to
/// be listed: LayerNorm with biases (ε given), an ungated MLP, `rotary` (rotated 0: learned
/// positions), scores × `scale`.
inline LayerDescription layer_norm_style_layer(double epsilon, MlpActivation activation, const RotarySpec& rotary,
                                               double scale, Residual residual = Residual::sequential) {
    LayerDescription layer;
    layer.norm = Norm::layer_norm;
    layer.norm_epsilon = epsilon;
    layer.residual = residual;
    layer.activation = activation;
    layer.rotary = rotary;
    layer.score_scale = scale;
    return layer;
}

/// The unembedding of an untied model, tensor `name`; a tied one may still save that copy, skipped.
inline void unembedding_or_skipped(ModelSettings& s, const std::string& name) {
    if (s.tied_embeddings)
        s.tensors.skipped.push_back(name);
    else
        s.tensors.unembedding = name;
}

/// A Llama-family layer's structure, its tensors still to be listed: RMSNorm (ε of the final
/// norm), SwiGLU, `rotary`, scores × 1/√d; norms before the blocks, or after them if
/// `output_norms` (OLMo-2). From a config.json or a GGUF file alike.
inline LayerDescription llama_style_layer(const ModelSettings& s, const RotarySpec& rotary, QueryKeyNorm query_key_norm,
                                          bool output_norms) {
    LayerDescription layer;
    layer.norm = Norm::rms_norm;
    layer.norm_epsilon = s.final_norm_epsilon;
    layer.gated_mlp = true;
    layer.activation = MlpActivation::silu;
    layer.rotary = rotary;
    layer.score_scale = score_scale(s.head_size, true, false, 0);
    layer.query_key_norm = query_key_norm;
    layer.input_norms = !output_norms;
    layer.output_norms = output_norms;
    return layer;
}

}  // namespace detail::layers

namespace detail::config {

/// The sizes every architecture must agree on, checked once settings are read.
inline void check_sizes(const ModelSettings& s, const std::string& file) {
    if (s.heads % s.key_value_heads != 0)
        throw format_error(
            message(file, ": ", s.key_value_heads, " key/value heads do not divide ", s.heads, " attention heads"));
    for (const LayerDescription& layer : s.layer_descriptions)
        if (layer.rotates() && (layer.rotary.rotated % 2 != 0 || layer.rotary.rotated > s.head_size))
            throw format_error(message(file, ": ", layer.rotary.rotated, " rotated numbers of a head of ", s.head_size,
                                       ": rotary positions turn an even number of them, at most the whole head"));
}

/// The rotary positions a config declares: rope_theta (base), a fraction of the head that turns,
/// and the frequency scaling, in either spelling transformers writes: "rope_theta" and
/// "rope_scaling" {"type" or "rope_type", …}, or (newer) "rope_parameters" {"rope_type",
/// "rope_theta", …}. Scalings attn does not implement (dynamic, yarn, longrope, …) and keys that
/// would change the maths are format_errors naming them.
inline RotarySpec rotary_spec(const Reader& config, Index head_size, double fraction, double default_base) {
    RotarySpec spec;
    spec.pairing = RopePairing::rotate_half;
    spec.base = config.positive_number("rope_theta", default_base);
    const char* scaling_key = config.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
    if (config.has("rope_parameters") && config.has("rope_scaling"))
        config.expect("rope_scaling", nullptr, "rope_scaling and rope_parameters both given; attn reads one");
    if (config.has(scaling_key)) {
        const Reader scaling(config.object(scaling_key), detail::message(config.file(), ": \"", scaling_key, "\""));
        const bool has_rope_type = scaling.has("rope_type");
        const std::string type = has_rope_type ? scaling.text("rope_type", "default") : scaling.text("type", "default");
        spec.base = scaling.positive_number("rope_theta", spec.base);
        fraction = scaling.positive_number("partial_rotary_factor", fraction);
        const std::vector<std::string> common = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
        const auto keys = [&](std::vector<std::string> more) {
            more.insert(more.end(), common.begin(), common.end());
            return more;
        };
        if (type == "default") {
            scaling.only_keys(keys({}), "default rotary positions");
        } else if (type == "linear") {
            scaling.only_keys(keys({"factor"}), "linear rope scaling");
            spec.scaling.kind = RopeScaling::Kind::linear;
            spec.scaling.factor = scaling.positive_number("factor", 0.0);
            if (!scaling.has("factor")) scaling.required("factor");
        } else if (type == "llama3") {
            scaling.only_keys(
                keys({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}),
                "llama3 rope scaling");
            for (const char* key :
                 {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
                scaling.required(key);
            spec.scaling.kind = RopeScaling::Kind::llama3;
            spec.scaling.factor = scaling.positive_number("factor", 1.0);
            spec.scaling.low_frequency_factor = scaling.positive_number("low_freq_factor", 1.0);
            spec.scaling.high_frequency_factor = scaling.positive_number("high_freq_factor", 4.0);
            spec.scaling.original_context = double(scaling.positive_integer("original_max_position_embeddings"));
            if (!(spec.scaling.high_frequency_factor > spec.scaling.low_frequency_factor))
                throw format_error(detail::message(scaling.file(), ": high_freq_factor must exceed low_freq_factor"));
        } else {
            scaling.unsupported(has_rope_type ? "rope_type" : "type",
                                "\"default\", \"linear\" and \"llama3\"; not dynamic, yarn, longrope or others");
        }
    }
    if (!(fraction > 0.0) || fraction > 1.0)
        throw format_error(
            detail::message(config.file(), ": the rotary fraction of a head must be in (0, 1], got ", fraction));
    spec.rotated = static_cast<Index>(static_cast<double>(head_size) * fraction);  // as transformers: int(d · f)
    return spec;
}

/// An MLP activation by its Hugging Face name.
inline MlpActivation mlp_activation(const Reader& config, const char* key, const char* fallback, bool silu_allowed) {
    const std::string name = config.text(key, fallback);
    if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return MlpActivation::gelu_tanh;
    if (name == "gelu") return MlpActivation::gelu_erf;
    if (silu_allowed && (name == "silu" || name == "swish")) return MlpActivation::silu;
    config.unsupported(key, silu_allowed ? "\"silu\", \"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\" and \"gelu_fast\""
                                         : "\"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\" and \"gelu_fast\"");
}

/// The sizes of a Llama-style config (hidden_size, num_attention_heads, …).
inline void llama_sizes(const Reader& config, ModelSettings& s) {
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
}

/// GPT2LMHeadModel: learned positions, LayerNorm, a GELU MLP, biases on every projection.
inline ModelSettings gpt2_settings(const Reader& config) {
    using namespace detail::layers;
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
    s.position_encoding = PositionEncoding::learned;
    s.final_norm = Norm::layer_norm;
    s.final_norm_epsilon = config.positive_number("layer_norm_epsilon", 1e-5);
    const MlpActivation activation = mlp_activation(config, "activation_function", "gelu_new", false);
    const bool scale = config.flag("scale_attn_weights", true);
    const bool by_layer = config.flag("scale_attn_by_inverse_layer_idx", false);
    config.expect("add_cross_attention", false, "a decoder without cross-attention");
    s.tied_embeddings = config.flag("tie_word_embeddings", true);
    const Index c = s.dimensions, m = s.mlp_width;
    s.tensors.embedding = "wte.weight";
    s.tensors.position_embedding = "wpe.weight";
    s.tensors.final_norm_weight = "ln_f.weight";
    s.tensors.final_norm_bias = "ln_f.bias";
    for (Index l = 0; l < s.layers; ++l) {
        const std::string h = message("h.", l, ".");
        LayerDescription layer = layer_norm_style_layer(s.final_norm_epsilon, activation, RotarySpec{},
                                                        score_scale(s.head_size, scale, by_layer, l));
        layer.tensors = {vector_tensor(h + "ln_1.weight", LayerSlot::attention_norm, c),
                         vector_tensor(h + "ln_1.bias", LayerSlot::attention_norm_bias, c),
                         weight_tensor(h + "attn.c_attn.weight", LayerSlot::query_key_value, c, 3 * c, false),
                         vector_tensor(h + "attn.c_attn.bias", LayerSlot::query_key_value_bias, 3 * c),
                         weight_tensor(h + "attn.c_proj.weight", LayerSlot::output, c, c, false),
                         vector_tensor(h + "attn.c_proj.bias", LayerSlot::output_bias, c),
                         vector_tensor(h + "ln_2.weight", LayerSlot::mlp_norm, c),
                         vector_tensor(h + "ln_2.bias", LayerSlot::mlp_norm_bias, c),
                         weight_tensor(h + "mlp.c_fc.weight", LayerSlot::up, c, m, false),
                         vector_tensor(h + "mlp.c_fc.bias", LayerSlot::up_bias, m),
                         weight_tensor(h + "mlp.c_proj.weight", LayerSlot::down, m, c, false),
                         vector_tensor(h + "mlp.c_proj.bias", LayerSlot::down_bias, c)};
        s.layer_descriptions.push_back(std::move(layer));
        s.tensors.skipped.push_back(h + "attn.bias");         // the causal mask, saved as a buffer
        s.tensors.skipped.push_back(h + "attn.masked_bias");  // the masked score, saved as a buffer
    }
    unembedding_or_skipped(s, "lm_head.weight");
    return s;
}

/// What distinguishes the Llama-style architectures' layers (Llama, Qwen2, Qwen3, OLMo-2, Phi-3).
struct LlamaStyle {
    bool query_key_value_bias = false;  ///< q, k, v biases
    bool output_bias = false;           ///< o_proj's bias
    bool mlp_bias = false;              ///< gate, up and down biases
    QueryKeyNorm query_key_norm = QueryKeyNorm::none;
    Index window = 0;           ///< every layer's sliding window (Mistral), 0: none
    bool output_norms = false;  ///< OLMo-2: post_attention_layernorm and post_feedforward_layernorm after the blocks
    bool fused = false;         ///< Phi-3: qkv_proj and gate_up_proj
    double rotary_fraction = 1.0;
};

/// The Llama family's config and layers: rotary positions, RMSNorm, SwiGLU, grouped-query heads,
/// with what `style` adds. Names under "model.layers.L.", as transformers writes them.
inline ModelSettings llama_style_settings(const Reader& config, Architecture architecture, const LlamaStyle& style,
                                          bool tied_by_default, double default_epsilon) {
    using namespace detail::layers;
    ModelSettings s;
    s.architecture = architecture;
    llama_sizes(config, s);
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::rms_norm;
    s.final_norm_epsilon = config.positive_number("rms_norm_eps", default_epsilon);
    if (config.text("hidden_act", "silu") != "silu") config.unsupported("hidden_act", "\"silu\"");
    s.tied_embeddings = config.flag("tie_word_embeddings", tied_by_default);
    const RotarySpec rotary = rotary_spec(config, s.head_size, style.rotary_fraction, 10000.0);
    const Index c = s.dimensions, m = s.mlp_width, q = s.query_width(), kv = s.key_value_width();
    s.tensors.embedding = "model.embed_tokens.weight";
    s.tensors.final_norm_weight = "model.norm.weight";
    for (Index l = 0; l < s.layers; ++l) {
        const std::string p = message("model.layers.", l, ".");
        LayerDescription layer = llama_style_layer(s, rotary, style.query_key_norm, style.output_norms);
        layer.window = style.window;
        std::vector<LayerTensor>& t = layer.tensors;
        if (layer.input_norms) t.push_back(vector_tensor(p + "input_layernorm.weight", LayerSlot::attention_norm, c));
        if (style.fused) {
            t.push_back(
                weight_tensor(p + "self_attn.qkv_proj.weight", LayerSlot::query_key_value, c, q + 2 * kv, true));
        } else {
            add_query_key_value(t, s, p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                                p + "self_attn.v_proj.weight", false);
        }
        if (style.query_key_value_bias)
            add_query_key_value(t, s, p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias",
                                p + "self_attn.v_proj.bias", true);
        if (style.query_key_norm != QueryKeyNorm::none) {
            const bool per_head = style.query_key_norm == QueryKeyNorm::per_head;
            t.push_back(
                vector_tensor(p + "self_attn.q_norm.weight", LayerSlot::query_norm, per_head ? s.head_size : q));
            t.push_back(vector_tensor(p + "self_attn.k_norm.weight", LayerSlot::key_norm, per_head ? s.head_size : kv));
        }
        t.push_back(weight_tensor(p + "self_attn.o_proj.weight", LayerSlot::output, q, c, true));
        if (style.output_bias) t.push_back(vector_tensor(p + "self_attn.o_proj.bias", LayerSlot::output_bias, c));
        if (style.output_norms) {
            t.push_back(vector_tensor(p + "post_attention_layernorm.weight", LayerSlot::attention_output_norm, c));
            t.push_back(vector_tensor(p + "post_feedforward_layernorm.weight", LayerSlot::mlp_output_norm, c));
        } else {
            t.push_back(vector_tensor(p + "post_attention_layernorm.weight", LayerSlot::mlp_norm, c));
        }
        if (style.fused) {  // gate_up_proj: (2M × C), the gate's M rows first
            t.push_back(fused_tensor(p + "mlp.gate_up_proj.weight", {2 * m, c}, true,
                                     {{LayerSlot::gate, 0, m, 0}, {LayerSlot::up, m, m, 0}}));
        } else {
            t.push_back(weight_tensor(p + "mlp.gate_proj.weight", LayerSlot::gate, c, m, true));
            t.push_back(weight_tensor(p + "mlp.up_proj.weight", LayerSlot::up, c, m, true));
        }
        t.push_back(weight_tensor(p + "mlp.down_proj.weight", LayerSlot::down, m, c, true));
        if (style.mlp_bias) {
            t.push_back(vector_tensor(p + "mlp.gate_proj.bias", LayerSlot::gate_bias, m));
            t.push_back(vector_tensor(p + "mlp.up_proj.bias", LayerSlot::up_bias, m));
            t.push_back(vector_tensor(p + "mlp.down_proj.bias", LayerSlot::down_bias, c));
        }
        s.layer_descriptions.push_back(std::move(layer));
        s.tensors.skipped.push_back(p + "self_attn.rotary_emb.inv_freq");  // older checkpoints save it
    }
    unembedding_or_skipped(s, "lm_head.weight");
    return s;
}

/// LlamaForCausalLM: optional attention and MLP biases; rope scaling linear or llama3.
inline ModelSettings llama_settings(const Reader& config) {
    LlamaStyle style;
    style.query_key_value_bias = style.output_bias = config.flag("attention_bias", false);
    style.mlp_bias = config.flag("mlp_bias", false);
    return llama_style_settings(config, Architecture::llama, style, false, 1e-6);
}

/// MistralForCausalLM: Llama's layers, each attending over a sliding window (sliding_window,
/// null for none) of the last keys.
inline ModelSettings mistral_settings(const Reader& config) {
    LlamaStyle style;
    style.window = config.has("sliding_window") ? config.positive_integer("sliding_window") : 0;
    return llama_style_settings(config, Architecture::mistral, style, false, 1e-6);
}

/// Qwen2ForCausalLM: q, k, v biases and no others.
inline ModelSettings qwen2_settings(const Reader& config) {
    config.expect("use_sliding_window", false, "sliding-window attention must be off");
    LlamaStyle style;
    style.query_key_value_bias = true;
    return llama_style_settings(config, Architecture::qwen2, style, false, 1e-6);
}

/// Qwen3ForCausalLM: RMSNorm over each query and key head before the rotation, head_dim given.
inline ModelSettings qwen3_settings(const Reader& config) {
    config.expect("use_sliding_window", false, "sliding-window attention must be off");
    LlamaStyle style;
    style.query_key_value_bias = style.output_bias = config.flag("attention_bias", false);
    style.query_key_norm = QueryKeyNorm::per_head;
    return llama_style_settings(config, Architecture::qwen3, style, false, 1e-6);
}

/// Olmo2ForCausalLM: no norm before attention or the MLP; one after each, inside the residual;
/// RMSNorm over the whole query and key projections before the rotation.
inline ModelSettings olmo2_settings(const Reader& config) {
    config.expect("clip_qkv", nullptr, "OLMo-2 does not clip q, k and v");
    LlamaStyle style;
    style.query_key_value_bias = style.output_bias = config.flag("attention_bias", false);
    style.query_key_norm = QueryKeyNorm::whole;
    style.output_norms = true;
    return llama_style_settings(config, Architecture::olmo2, style, false, 1e-5);
}

/// Phi3ForCausalLM: fused qkv_proj and gate_up_proj; a fraction of each head rotates.
inline ModelSettings phi3_settings(const Reader& config) {
    if (config.has("sliding_window") &&
        config.positive_integer("sliding_window") < config.positive_integer("max_position_embeddings"))
        config.unsupported("sliding_window", "no sliding window shorter than max_position_embeddings");
    LlamaStyle style;
    style.fused = true;
    style.rotary_fraction = config.positive_number("partial_rotary_factor", 1.0);
    return llama_style_settings(config, Architecture::phi3, style, false, 1e-5);
}

/// GPTNeoXForCausalLM (Pythia): LayerNorm with biases, q, k, v in one tensor interleaved per
/// head, a fraction of each head rotating (rotary_pct), attention and the MLP reading the same
/// x in parallel (use_parallel_residual), an erf GELU, an untied embed_out.
inline ModelSettings gpt_neox_settings(const Reader& config) {
    using namespace detail::layers;
    ModelSettings s;
    s.architecture = Architecture::gpt_neox;
    s.dimensions = config.positive_integer("hidden_size");
    s.heads = config.positive_integer("num_attention_heads");
    s.layers = config.positive_integer("num_hidden_layers");
    s.longest = config.positive_integer("max_position_embeddings");
    s.vocabulary_size = config.positive_integer("vocab_size");
    s.mlp_width = config.positive_integer("intermediate_size");
    if (s.dimensions % s.heads != 0)
        throw format_error(message(config.file(), ": num_attention_heads = ", s.heads,
                                   " does not divide hidden_size = ", s.dimensions));
    s.key_value_heads = s.heads;
    s.head_size = s.dimensions / s.heads;
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::layer_norm;
    s.final_norm_epsilon = config.positive_number("layer_norm_eps", 1e-5);
    s.tied_embeddings = config.flag("tie_word_embeddings", false);
    const bool biases = config.flag("attention_bias", true);
    const MlpActivation activation = mlp_activation(config, "hidden_act", "gelu", false);
    const Residual residual = config.flag("use_parallel_residual", true) ? Residual::parallel : Residual::sequential;
    // rotary_pct and rotary_emb_base, or the newer partial_rotary_factor and rope_theta
    if (config.has("rotary_pct") && config.has("partial_rotary_factor") &&
        config.positive_number("rotary_pct", 1.0) != config.positive_number("partial_rotary_factor", 1.0))
        config.unsupported("partial_rotary_factor", "one rotary fraction: rotary_pct and partial_rotary_factor differ");
    const double fraction = config.positive_number("rotary_pct", config.positive_number("partial_rotary_factor", 0.25));
    if (config.has("rotary_emb_base") && config.has("rope_theta") &&
        config.positive_number("rotary_emb_base", 1.0) != config.positive_number("rope_theta", 1.0))
        config.unsupported("rope_theta", "one rotary base: rotary_emb_base and rope_theta differ");
    const RotarySpec rotary =
        rotary_spec(config, s.head_size, fraction, config.positive_number("rotary_emb_base", 10000.0));
    const Index c = s.dimensions, m = s.mlp_width, d = s.head_size;
    s.tensors.embedding = "gpt_neox.embed_in.weight";
    s.tensors.final_norm_weight = "gpt_neox.final_layer_norm.weight";
    s.tensors.final_norm_bias = "gpt_neox.final_layer_norm.bias";
    for (Index l = 0; l < s.layers; ++l) {
        const std::string p = message("gpt_neox.layers.", l, ".");
        LayerDescription layer =
            layer_norm_style_layer(s.final_norm_epsilon, activation, rotary, score_scale(d, true, false, l), residual);
        std::vector<LayerTensor>& t = layer.tensors;
        t.push_back(vector_tensor(p + "input_layernorm.weight", LayerSlot::attention_norm, c));
        t.push_back(vector_tensor(p + "input_layernorm.bias", LayerSlot::attention_norm_bias, c));
        t.push_back(fused_tensor(p + "attention.query_key_value.weight", {3 * c, c}, true,
                                 per_head_query_key_value(LayerSlot::query_key_value, s.heads, d)));
        if (biases)
            t.push_back(fused_tensor(p + "attention.query_key_value.bias", {3 * c}, false,
                                     per_head_query_key_value(LayerSlot::query_key_value_bias, s.heads, d)));
        t.push_back(weight_tensor(p + "attention.dense.weight", LayerSlot::output, c, c, true));
        if (biases) t.push_back(vector_tensor(p + "attention.dense.bias", LayerSlot::output_bias, c));
        t.push_back(vector_tensor(p + "post_attention_layernorm.weight", LayerSlot::mlp_norm, c));
        t.push_back(vector_tensor(p + "post_attention_layernorm.bias", LayerSlot::mlp_norm_bias, c));
        t.push_back(weight_tensor(p + "mlp.dense_h_to_4h.weight", LayerSlot::up, c, m, true));
        t.push_back(vector_tensor(p + "mlp.dense_h_to_4h.bias", LayerSlot::up_bias, m));
        t.push_back(weight_tensor(p + "mlp.dense_4h_to_h.weight", LayerSlot::down, m, c, true));
        t.push_back(vector_tensor(p + "mlp.dense_4h_to_h.bias", LayerSlot::down_bias, c));
        s.layer_descriptions.push_back(std::move(layer));
        for (const char* buffer : {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"})
            s.tensors.skipped.push_back(p + buffer);  // buffers older transformers saved
    }
    unembedding_or_skipped(s, "embed_out.weight");
    return s;
}

/// Which of a Gemma model's layers slide: as `layer_types` lists them ("sliding_attention" or
/// "full_attention") where the config has it, else Gemma 2's even layers, or Gemma 3's all but
/// every sliding_window_pattern-th ((l + 1) % pattern ≠ 0).
inline std::vector<bool> sliding_layers(const Reader& config, Index layers, bool gemma3) {
    std::vector<bool> sliding(std::size_t(layers), false);
    if (config.has("layer_types")) {
        const nlohmann::json& types = config.required("layer_types");
        if (!types.is_array() || Index(types.size()) != layers)
            throw format_error(
                message(config.file(), ": \"layer_types\" must list ", layers, " layers' types, got ", types.dump()));
        for (std::size_t l = 0; l < sliding.size(); ++l) {
            if (types[l] != "sliding_attention" && types[l] != "full_attention")
                throw format_error(
                    message(config.file(), ": \"layer_types\"[", l, "] = ", types[l].dump(),
                            " is not supported (attn reads \"sliding_attention\" and \"full_attention\")"));
            sliding[l] = types[l] == "sliding_attention";
        }
        return sliding;
    }
    const Index pattern = gemma3 ? config.positive_integer("sliding_window_pattern", 6) : 2;
    for (Index l = 0; l < layers; ++l) sliding[std::size_t(l)] = gemma3 ? (l + 1) % pattern != 0 : l % 2 == 0;
    return sliding;
}

/// √C as transformers multiplies Gemma's embedding by it: a number of the checkpoint's type
/// (torch_dtype, or v5's dtype), so √40 is 6.3125 in a BF16 model, not 6.3245553.
inline double embedding_normalizer(const Reader& config, Index width) {
    const char* key = config.has("torch_dtype") ? "torch_dtype" : "dtype";
    const std::string type = config.text(key, "float32");
    const double root = std::sqrt(static_cast<double>(width));
    if (type == "float32") return double(float(root));
    if (type == "bfloat16") return double(static_cast<float>(Eigen::bfloat16(float(root))));
    if (type == "float16") return double(static_cast<float>(Eigen::half(float(root))));
    if (type == "float64") return root;
    config.unsupported(key, "\"float32\", \"bfloat16\", \"float16\" and \"float64\"");
}

/// A Gemma model's rotary positions on its global and its sliding layers: rope_theta and
/// (Gemma 3) rope_local_base_freq, or v5's rope_parameters by layer type. No scaling: Gemma 3's
/// larger models scale their global layers' frequencies, which attn does not implement.
inline std::pair<RotarySpec, RotarySpec> gemma_rotary(const Reader& config, Index head_size, bool gemma3) {
    const auto unscaled = [&](const RotarySpec& spec, const char* key) {
        if (spec.scaling.kind != RopeScaling::Kind::none)
            config.unsupported(key, "Gemma's rotary positions without frequency scaling");
        return spec;
    };
    const bool by_layer_type = config.has("rope_parameters") && config.required("rope_parameters").is_object() &&
                               (config.required("rope_parameters").contains("full_attention") ||
                                config.required("rope_parameters").contains("sliding_attention"));
    if (by_layer_type) {
        const auto of = [&](const char* type) {
            nlohmann::json one = nlohmann::json::object();
            const nlohmann::json& all = config.required("rope_parameters");
            if (all.contains(type)) one["rope_parameters"] = all[type];
            const Reader reader(one, message(config.file(), ": \"rope_parameters\".\"", type, "\""));
            return unscaled(rotary_spec(reader, head_size, 1.0, gemma3 ? 1e6 : 1e4), "rope_parameters");
        };
        return {of("full_attention"), of("sliding_attention")};
    }
    const RotarySpec global = unscaled(rotary_spec(config, head_size, 1.0, gemma3 ? 1e6 : 1e4), "rope_scaling");
    RotarySpec local = global;
    if (gemma3) local.base = config.positive_number("rope_local_base_freq", 10000.0);
    return {global, local};
}

/// Gemma2ForCausalLM and Gemma3ForCausalLM (text): RMSNorm whose weights act as 1 + w, a norm
/// before and after each block, GeGLU, the embedding × √C, scores × query_pre_attn_scalar^-1/2
/// (Gemma 2: soft-capped by attn_logit_softcapping), sliding layers (sliding_layers), Gemma 3's
/// q/k norms per head and rope_local_base_freq on its sliding layers, logits soft-capped by
/// final_logit_softcapping where given.
inline ModelSettings gemma_settings(const Reader& config, Architecture architecture) {
    using namespace detail::layers;
    const bool gemma3 = architecture == Architecture::gemma3;
    config.expect("attention_bias", false, "Gemma's projections have no biases");
    config.expect("use_bidirectional_attention", false, "causal attention");
    ModelSettings s;
    s.architecture = architecture;
    llama_sizes(config, s);
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::rms_norm;
    s.final_norm_epsilon = config.positive_number("rms_norm_eps", 1e-6);
    s.tensors.final_norm_offset = 1.0;
    s.tied_embeddings = config.flag("tie_word_embeddings", true);
    s.embedding_scale = embedding_normalizer(config, s.dimensions);
    // An absent key takes transformers' default for the class; null turns a cap off.
    const auto cap = [&](const char* key, double absent) {
        return config.present(key) ? config.positive_number(key, 0.0) : absent;
    };
    s.logit_cap = cap("final_logit_softcapping", gemma3 ? 0.0 : 30.0);
    const MlpActivation activation = mlp_activation(config, "hidden_activation", "gelu_pytorch_tanh", true);
    const double scale = 1.0 / std::sqrt(config.positive_number("query_pre_attn_scalar", 256.0));
    const double score_cap = cap("attn_logit_softcapping", gemma3 ? 0.0 : 50.0);
    const Index window = config.positive_integer("sliding_window", 4096);  // transformers' default
    const std::vector<bool> sliding = sliding_layers(config, s.layers, gemma3);
    const auto [global, local] = gemma_rotary(config, s.head_size, gemma3);
    const Index c = s.dimensions, m = s.mlp_width, d = s.head_size;
    const auto norm_weight = [](std::string name, LayerSlot slot, Index size) {  // stored w, kept as 1 + w
        LayerTensor tensor = vector_tensor(std::move(name), slot, size);
        tensor.offset = 1.0;
        return tensor;
    };
    s.tensors.embedding = "model.embed_tokens.weight";
    s.tensors.final_norm_weight = "model.norm.weight";
    for (Index l = 0; l < s.layers; ++l) {
        const std::string p = message("model.layers.", l, ".");
        const bool slides = sliding[std::size_t(l)];
        LayerDescription layer =
            llama_style_layer(s, slides ? local : global, gemma3 ? QueryKeyNorm::per_head : QueryKeyNorm::none, false);
        layer.output_norms = true;  // and the input norms: four per layer
        layer.activation = activation;
        layer.score_scale = scale;
        layer.score_cap = score_cap;
        layer.window = slides ? window : 0;
        std::vector<LayerTensor>& t = layer.tensors;
        t.push_back(norm_weight(p + "input_layernorm.weight", LayerSlot::attention_norm, c));
        add_query_key_value(t, s, p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                            p + "self_attn.v_proj.weight", false);
        if (gemma3) {
            t.push_back(norm_weight(p + "self_attn.q_norm.weight", LayerSlot::query_norm, d));
            t.push_back(norm_weight(p + "self_attn.k_norm.weight", LayerSlot::key_norm, d));
        }
        t.push_back(weight_tensor(p + "self_attn.o_proj.weight", LayerSlot::output, s.query_width(), c, true));
        t.push_back(norm_weight(p + "post_attention_layernorm.weight", LayerSlot::attention_output_norm, c));
        t.push_back(norm_weight(p + "pre_feedforward_layernorm.weight", LayerSlot::mlp_norm, c));
        t.push_back(weight_tensor(p + "mlp.gate_proj.weight", LayerSlot::gate, c, m, true));
        t.push_back(weight_tensor(p + "mlp.up_proj.weight", LayerSlot::up, c, m, true));
        t.push_back(weight_tensor(p + "mlp.down_proj.weight", LayerSlot::down, m, c, true));
        t.push_back(norm_weight(p + "post_feedforward_layernorm.weight", LayerSlot::mlp_output_norm, c));
        s.layer_descriptions.push_back(std::move(layer));
    }
    unembedding_or_skipped(s, "lm_head.weight");
    return s;
}

inline ModelSettings gemma2_settings(const Reader& config) {
    return gemma_settings(config, Architecture::gemma2);
}
inline ModelSettings gemma3_settings(const Reader& config) {
    return gemma_settings(config, Architecture::gemma3);
}

/// One architecture attn opens: its config.json model_type, the class it must name, its reader.
struct Known {
    const char* model_type;
    const char* class_name;
    ModelSettings (*read)(const Reader&);
};

inline constexpr Known kKnown[] = {
    {"gpt2", "GPT2LMHeadModel", gpt2_settings},
    {"llama", "LlamaForCausalLM", llama_settings},
    {"qwen2", "Qwen2ForCausalLM", qwen2_settings},
    {"qwen3", "Qwen3ForCausalLM", qwen3_settings},
    {"olmo2", "Olmo2ForCausalLM", olmo2_settings},
    {"phi3", "Phi3ForCausalLM", phi3_settings},
    {"gpt_neox", "GPTNeoXForCausalLM", gpt_neox_settings},
    {"mistral", "MistralForCausalLM", mistral_settings},
    {"gemma2", "Gemma2ForCausalLM", gemma2_settings},
    {"gemma3_text", "Gemma3ForCausalLM", gemma3_settings},
};

}  // namespace detail::config

/// The settings and layer descriptions config.json declares, for the architectures attn
/// implements; format_error naming the file, the key and its value for anything else.
inline ModelSettings settings_from_config(const nlohmann::json& config, const std::string& file) {
    if (!config.is_object()) throw format_error(file + ": config.json must be a JSON object");
    const detail::config::Reader reader(config, file);
    const std::string model_type = reader.text("model_type", "");
    const detail::config::Known* match = nullptr;
    std::string names;
    for (const detail::config::Known& known : detail::config::kKnown) {
        if (model_type == known.model_type) match = &known;
        names += detail::message(names.empty() ? "\"" : ", \"", known.model_type, "\"");
    }
    if (!match)
        throw format_error(detail::message(
            file, ": \"model_type\" = ", reader.has("model_type") ? config["model_type"].dump() : "(missing)",
            " is not supported (attn opens ", names, ")"));
    if (reader.has("architectures")) {
        const nlohmann::json& classes = config["architectures"];
        if (!classes.is_array() || std::find(classes.begin(), classes.end(), match->class_name) == classes.end())
            throw format_error(detail::message(file, ": \"architectures\" = ", classes.dump(),
                                               " is not supported for model_type \"", model_type, "\" (attn reads ",
                                               match->class_name, ", a causal language model)"));
    }
    ModelSettings settings = match->read(reader);
    // An end token past the vocabulary (a small model configured from a larger one's defaults)
    // can never be written: generation then stops at the context's end or max_tokens.
    settings.end_token = reader.token_id("eos_token_id");
    if (settings.end_token >= settings.vocabulary_size) settings.end_token = -1;
    detail::config::check_sizes(settings, file);
    return settings;
}

/// The same settings with every tensor name prefixed (GPT-2 checkpoints saved from
/// GPT2Model carry "transformer.").
inline ModelSettings with_tensor_prefix(ModelSettings s, const std::string& prefix) {
    for (std::string* name : {&s.tensors.embedding, &s.tensors.position_embedding, &s.tensors.final_norm_weight,
                              &s.tensors.final_norm_bias})
        if (!name->empty()) *name = prefix + *name;
    for (std::string& name : s.tensors.skipped)
        if (name != "lm_head.weight") name = prefix + name;
    for (LayerDescription& layer : s.layer_descriptions)
        for (LayerTensor& tensor : layer.tensors) tensor.name = prefix + tensor.name;
    return s;
}

/// The store model's layers (manifest.json; tools/training/export.py writes them): LayerNorm,
/// no attention biases, an ungated GELU MLP with biases, rotary positions over the whole head.
inline void describe_store_layers(ModelSettings& s, double norm_epsilon, MlpActivation activation,
                                  const RotarySpec& rotary) {
    using namespace detail::layers;
    const Index c = s.dimensions, m = s.mlp_width;
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::layer_norm;
    s.final_norm_epsilon = norm_epsilon;
    s.tied_embeddings = true;
    s.tensors = {};
    s.tensors.embedding = "embedding";
    s.tensors.final_norm_weight = "final_norm.weight";
    s.tensors.final_norm_bias = "final_norm.bias";
    s.layer_descriptions.clear();
    for (Index l = 0; l < s.layers; ++l) {
        const std::string p = detail::message("layers.", l, ".");
        LayerDescription layer =
            layer_norm_style_layer(norm_epsilon, activation, rotary, score_scale(s.head_size, true, false, l));
        layer.tensors = {vector_tensor(p + "attention_norm.weight", LayerSlot::attention_norm, c),
                         vector_tensor(p + "attention_norm.bias", LayerSlot::attention_norm_bias, c),
                         weight_tensor(p + "attention.query", LayerSlot::query_key_value, c, c, false, 0),
                         weight_tensor(p + "attention.key", LayerSlot::query_key_value, c, c, false, c),
                         weight_tensor(p + "attention.value", LayerSlot::query_key_value, c, c, false, 2 * c),
                         weight_tensor(p + "attention.output", LayerSlot::output, c, c, false),
                         vector_tensor(p + "mlp_norm.weight", LayerSlot::mlp_norm, c),
                         vector_tensor(p + "mlp_norm.bias", LayerSlot::mlp_norm_bias, c),
                         weight_tensor(p + "mlp.up.weight", LayerSlot::up, c, m, false),
                         vector_tensor(p + "mlp.up.bias", LayerSlot::up_bias, m),
                         weight_tensor(p + "mlp.down.weight", LayerSlot::down, m, c, false),
                         vector_tensor(p + "mlp.down.bias", LayerSlot::down_bias, c)};
        s.layer_descriptions.push_back(std::move(layer));
    }
}

}  // namespace attn
