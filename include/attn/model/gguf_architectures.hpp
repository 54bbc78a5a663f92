#pragma once
// The architectures attn opens from a GGUF file (llama.cpp's format), each mapped onto the same
// ModelSettings and LayerDescriptions its Hugging Face config gives (model/architectures.hpp),
// from general.architecture, the `{arch}.*` keys and the tensors the file holds, as llama.cpp
// (the pinned tree: src/models/<arch>.cpp, src/llama-model.cpp) reads them:
//
//   general.architecture  Hugging Face        tensors (blk.L. …)                         what the converter changed
//   gpt2                  GPT2LMHeadModel     attn_qkv (fused [Q; K; V]), attn_output,   Conv1D weights transposed
//                                             ffn_up, ffn_down, biases; position_embd    to (out × in)
//   llama                 LlamaForCausalLM    attn_q, attn_k, attn_v (or attn_qkv),      q and k rows permuted per
//                                             attn_output, ffn_gate/up/down; rope_freqs  head for ggml's adjacent
//                                             (Llama 3.1's divisors); biases if present  pairs: undone as read
//   qwen2, qwen3, olmo2   Qwen2/Qwen3/Olmo2   as llama, not permuted (rotate-half rope);  names only
//                                             attn_q_norm/attn_k_norm (qwen3 per head,
//                                             olmo2 whole); post_attention_norm and
//                                             post_ffw_norm, no attn_norm/ffn_norm (olmo2)
//   phi3                  Phi3ForCausalLM     attn_qkv (or q, k, v), ffn_up of 2M rows    names only
//                                             ([gate; up]), rope.dimension_count < d
//   gptneox               GPTNeoXForCausalLM  attn_qkv fused [Q; K; V], biases, LayerNorm per-head [q_h; k_h; v_h]
//                                             biases, use_parallel_residual               regrouped to [Q; K; V]
//   gemma2, gemma3        Gemma2/Gemma3       attn_norm, attn_q/k/v, attn_output,          every norm weight stored
//                                             post_attention_norm, ffn_norm, ffn_gate/up/  as 1 + w: read as is
//                                             down, post_ffw_norm; attn_q/k_norm (gemma3)
//
// Gemma, as llama.cpp's gemma2.cpp and gemma3.cpp read it: scores × 1/√key_length (the converter
// drops query_pre_attn_scalar; llama.cpp uses 1/√(embedding_length / head_count) for 46- and
// 62-layer models, Gemma 2 and 3 27B, whose scalar that is), the embedding × sqrtf(C) (float32,
// not rounded to the original's type), .attention.sliding_window (Gemma 2: 4096 if absent;
// Gemma 3: no window if absent), .attention.sliding_window_pattern (a period P, layer i sliding
// iff i % P < P − 1, default 2 for Gemma 2 and 6 for Gemma 3, or one flag per layer),
// .rope.freq_base_swa on sliding layers (Gemma 2: freq_base; Gemma 3: 10000 if absent),
// .attn_logit_softcapping (Gemma 2 only; 50 if absent) and .final_logit_softcapping (Gemma 2: 30
// if absent; Gemma 3: none).
//
// Keys: {arch}.block_count, .context_length, .embedding_length, .feed_forward_length,
// .attention.head_count, .attention.head_count_kv (default: head_count), .attention.key_length
// (default: embedding_length / head_count; value_length must equal it),
// .attention.layer_norm_epsilon or .attention.layer_norm_rms_epsilon, .rope.freq_base (default
// 10000), .rope.dimension_count (default: the head), .rope.scaling.type ("none" or "linear") and
// .rope.scaling.factor, .use_parallel_residual (gptneox), .vocab_size (must be the token
// embedding's rows, which give V). Read and harmless: .rope.scaling.original_context_length,
// .rope.scaling.finetuned; read and checked to be what attn computes: .attention.causal (true),
// .expert_count and .expert_used_count (0), .attention.sliding_window (0, or at least the
// context). Any other `{arch}.*` key may change the maths and is a format_error naming it; so
// are a missing or mistyped key, an architecture, rope scaling or tensor attn does not read, and
// (in Model::read_weights) a missing, unexpected or misshapen tensor. general.* and tokenizer.*
// keys are not read (the tokenizer is not taken from GGUF yet), but for the end token.
//
// What GGUF does not say, the Hugging Face defaults of each architecture supply: scores scaled
// by 1/√d (llama.cpp's kq_scale for all of these); GPT-2's GELU the tanh approximation
// (gelu_new, which ggml_gelu computes), GPT-NeoX's the erf GELU (Pythia's "gelu"; llama.cpp
// approximates it with ggml_gelu's tanh form). A GPT-2 converted from a checkpoint with
// scale_attn_by_inverse_layer_idx, scale_attn_weights false or an erf GELU therefore computes
// another model than its Hugging Face original: the converter drops those keys.
//
// Floating keys are float32 in GGUF: a config's 1e-5 is stored as 9.99999974738e-06. Each is
// read back as the shortest decimal that rounds to that float, the number the config held.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "attn/core/rope.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/formats/gguf.hpp"
#include "attn/model/architectures.hpp"
#include "attn/model/types.hpp"

namespace attn {

namespace detail::gguf_config {

/// The shortest decimal that rounds to the float32 `value`, as a double.
inline double float32_decimal(float value) {
    char text[40];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, double(value));
        if (std::strtof(text, nullptr) == value) return std::strtod(text, nullptr);
    }
    return double(value);
}

/// Reads one file's `{arch}.*` keys, each error naming the file and the key; remembers which
/// keys it was asked about, so that every other `{arch}.*` key can be refused by name.
class Keys {
public:
    Keys(const GgufFile& file, std::string architecture) : file_(file), architecture_(std::move(architecture)) {}

    const GgufFile& file() const { return file_; }
    const std::string& architecture() const { return architecture_; }
    std::string key(const std::string& suffix) const { return architecture_ + "." + suffix; }

    bool has(const std::string& suffix) {
        read_.insert(key(suffix));
        return file_.contains(key(suffix));
    }

    /// A required count: an integer of any type, 1 … 2^24.
    Index count(const std::string& suffix) {
        has(suffix);
        return checked_count(suffix, file_.integer(key(suffix)));
    }
    Index count(const std::string& suffix, Index fallback) { return has(suffix) ? count(suffix) : fallback; }

    /// A positive, finite float32 or float64 (a float32 read back as its shortest decimal).
    double number(const std::string& suffix) {
        has(suffix);
        const GgufValue& value = file_.value(key(suffix));
        const double number = value.type() == GgufType::float32 ? float32_decimal(float(file_.floating(key(suffix))))
                                                                : file_.floating(key(suffix));
        if (!(number > 0.0) || !std::isfinite(number))
            throw format_error(message(file_.source(), ": metadata key '", key(suffix), "' is ", number,
                                       ", expected a positive number"));
        return number;
    }
    double number(const std::string& suffix, double fallback) { return has(suffix) ? number(suffix) : fallback; }

    bool flag(const std::string& suffix, bool fallback) { return has(suffix) ? file_.boolean(key(suffix)) : fallback; }
    std::string text(const std::string& suffix, const std::string& fallback) {
        return has(suffix) ? file_.string(key(suffix)) : fallback;
    }

    [[noreturn]] void unsupported(const std::string& suffix, const std::string& value,
                                  const std::string& supported) const {
        throw format_error(message(file_.source(), ": metadata key '", key(suffix), "' = ", value,
                                   " is not supported (attn supports ", supported, ")"));
    }

    /// Every `{arch}.*` key of the file is one this reader was asked about; else format_error
    /// naming it: a key attn does not read may change what the model computes.
    void only_read_keys() const {
        const std::string prefix = architecture_ + ".";
        for (const std::string& name : file_.keys())
            if (name.compare(0, prefix.size(), prefix) == 0 && !read_.count(name)) {
                std::string known;
                for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
                throw format_error(message(file_.source(), ": metadata key '", name, "' (",
                                           file_.value(name).describe(), ") is not supported for ", architecture_,
                                           ": it may change what the model computes (attn reads ", known, ")"));
            }
    }

private:
    Index checked_count(const std::string& suffix, std::int64_t value) const {
        if (value <= 0 || value > (1 << 24))
            throw format_error(message(file_.source(), ": metadata key '", key(suffix), "' is ", value,
                                       ", expected a positive count (at most 2^24)"));
        return Index(value);
    }

    const GgufFile& file_;
    std::string architecture_;
    std::set<std::string> read_;
};

/// How a GGUF architecture's layers differ from Llama's (the ones with RMSNorm and SwiGLU).
struct GgufLlamaStyle {
    bool permuted_query_key = false;  ///< llama: q and k rows in ggml's adjacent-pair rope layout
    bool rope_divisors = false;       ///< llama: rope_freqs.weight may hold per-pair frequency divisors
    bool partial_rotation = false;    ///< phi3: rope.dimension_count may be less than the head
    QueryKeyNorm query_key_norm = QueryKeyNorm::none;
    bool output_norms = false;   ///< olmo2: post_attention_norm, post_ffw_norm; no attn_norm, ffn_norm
    bool fused_gate_up = false;  ///< phi3: ffn_up holds [gate; up], 2M rows
};

/// The sizes every architecture reads, and the keys that must hold attn's (and llama.cpp's
/// defaults for these architectures): causal attention, no experts, no sliding window (unless
/// the architecture reads its windows itself: Gemma).
inline void gguf_sizes(Keys& keys, ModelSettings& s, bool sliding_windows = false) {
    s.layers = keys.count("block_count");
    s.longest = keys.count("context_length");
    s.dimensions = keys.count("embedding_length");
    s.mlp_width = keys.count("feed_forward_length");
    s.heads = keys.count("attention.head_count");
    s.key_value_heads = keys.count("attention.head_count_kv", s.heads);
    if (!keys.has("attention.key_length") && s.dimensions % s.heads != 0)
        throw format_error(message(keys.file().source(), ": ", s.heads, " heads do not divide embedding_length ",
                                   s.dimensions, " (and no attention.key_length is given)"));
    s.head_size = keys.count("attention.key_length", s.dimensions / s.heads);
    if (keys.count("attention.value_length", s.head_size) != s.head_size)
        keys.unsupported("attention.value_length", std::to_string(keys.count("attention.value_length")),
                         message("values as long as keys (key_length ", s.head_size, ")"));
    if (!keys.flag("attention.causal", true)) keys.unsupported("attention.causal", "false", "causal attention");
    for (const char* experts : {"expert_count", "expert_used_count"})
        if (keys.has(experts) && keys.file().integer(keys.key(experts)) != 0)
            keys.unsupported(experts, std::to_string(keys.file().integer(keys.key(experts))), "dense MLPs: no experts");
    if (keys.has("attention.sliding_window") && !sliding_windows) {
        const std::int64_t window = keys.file().integer(keys.key("attention.sliding_window"));
        if (window != 0 && window < s.longest)
            keys.unsupported("attention.sliding_window", std::to_string(window),
                             "no sliding window shorter than context_length");
    }
    keys.has("rope.scaling.original_context_length");  // only yarn and longrope read it
    keys.has("rope.scaling.finetuned");                // informational
}

/// V from the token embedding's rows (checked against {arch}.vocab_size if given).
inline Index gguf_vocabulary(Keys& keys, const ModelSettings& s) {
    const GgufFile& file = keys.file();
    const GgufTensorInfo& embedding = file.tensor("token_embd.weight");
    if (embedding.dims.size() != 2 || embedding.dims[0] != std::uint64_t(s.dimensions) ||
        embedding.dims[1] > (1u << 24))
        throw format_error(message(file.source(), ": tensor 'token_embd.weight' has ggml dims [",
                                   embedding.dims.front(), embedding.dims.size() > 1 ? ", …" : "",
                                   "], expected {embedding_length ", s.dimensions, ", vocabulary} (V × C)"));
    const auto vocabulary = Index(embedding.dims[1]);
    if (keys.count("vocab_size", vocabulary) != vocabulary)
        keys.unsupported("vocab_size", std::to_string(keys.count("vocab_size")),
                         message("the token embedding's ", vocabulary, " rows"));
    return vocabulary;
}

/// The rotation rope.* keys (and, for llama, rope_freqs.weight) declare, of `rotated` numbers
/// of each head: freq_base; scaling type "none" or "linear" with factor (llama.cpp's default
/// type is linear: a factor without a type scales linearly); per-pair frequency divisors.
inline RotarySpec gguf_rotary(Keys& keys, Index rotated, bool divisors_allowed, std::vector<std::string>& skipped) {
    RotarySpec spec;
    spec.rotated = rotated;
    spec.pairing = RopePairing::rotate_half;
    spec.base = keys.number("rope.freq_base", 10000.0);
    const std::string type = keys.text("rope.scaling.type", keys.has("rope.scaling.factor") ? "linear" : "none");
    if (type == "linear") {
        spec.scaling.kind = RopeScaling::Kind::linear;
        spec.scaling.factor = keys.number("rope.scaling.factor", 1.0);
        if (spec.scaling.factor == 1.0) spec.scaling.kind = RopeScaling::Kind::none;
    } else if (type == "none") {
        if (keys.has("rope.scaling.factor") && keys.number("rope.scaling.factor") != 1.0)
            keys.unsupported("rope.scaling.factor", std::to_string(keys.number("rope.scaling.factor")),
                             "no factor with rope.scaling.type \"none\"");
    } else {
        keys.unsupported("rope.scaling.type", "\"" + type + "\"", "\"none\" and \"linear\"; not yarn or longrope");
    }
    if (keys.has("rope.scaling.attn_factor") && keys.number("rope.scaling.attn_factor") != 1.0)
        keys.unsupported("rope.scaling.attn_factor", std::to_string(keys.number("rope.scaling.attn_factor")), "1");
    const GgufFile& file = keys.file();
    if (file.has_tensor("rope_freqs.weight") && divisors_allowed) {
        const GgufTensorInfo& table = file.tensor("rope_freqs.weight");
        if (table.dims.size() != 1 || table.dims[0] != std::uint64_t(rotated / 2))
            throw format_error(message(file.source(), ": tensor 'rope_freqs.weight' has ", table.elements,
                                       " values in ", table.dims.size(), " dims, expected one per rotated pair (",
                                       rotated / 2, ")"));
        if (spec.scaling.kind != RopeScaling::Kind::none)
            throw format_error(message(file.source(), ": rope_freqs.weight and rope.scaling.type \"", type,
                                       "\" together are not supported (attn applies one frequency scaling)"));
        spec.scaling.kind = RopeScaling::Kind::divisors;
        for (const float divisor : file.dequantize("rope_freqs.weight")) {
            if (!(divisor > 0.0f) || !std::isfinite(divisor))
                throw format_error(message(file.source(), ": tensor 'rope_freqs.weight' holds ", divisor,
                                           ", expected positive frequency divisors"));
            spec.scaling.divisors.push_back(double(divisor));
        }
        skipped.push_back("rope_freqs.weight");  // read here, into the description
    }
    return spec;
}

/// blk.L.<name>
inline std::string block(Index l, const char* name) {
    return message("blk.", l, ".", name);
}

/// [Q; K; V] of one fused tensor or three, weights (out × in) or biases, into the slot's
/// [q k v] columns, q and k rows un-permuted if the converter permuted them.
inline void add_gguf_query_key_value(std::vector<LayerTensor>& t, const ModelSettings& s, Index l, bool fused,
                                     bool bias, bool permuted) {
    using namespace detail::layers;
    const Index c = s.dimensions, q = s.query_width(), kv = s.key_value_width(), d = s.head_size;
    const LayerSlot slot = bias ? LayerSlot::query_key_value_bias : LayerSlot::query_key_value;
    const char* suffix = bias ? ".bias" : ".weight";
    const auto shape = [&](Index outputs) {
        return bias ? std::vector<std::int64_t>{outputs} : std::vector<std::int64_t>{outputs, c};
    };
    const auto part = [&](Index heads, Index from, Index to) {
        return permuted ? rotary_pairs_per_head(slot, heads, d, from, to)
                        : std::vector<TensorPiece>{{slot, from, heads * d, to}};
    };
    if (fused) {
        std::vector<TensorPiece> pieces = part(s.heads, 0, 0);
        for (const TensorPiece& piece : part(s.key_value_heads, q, q)) pieces.push_back(piece);
        pieces.push_back({slot, q + kv, kv, q + kv});
        t.push_back(fused_tensor(block(l, "attn_qkv") + suffix, shape(q + 2 * kv), !bias, std::move(pieces)));
    } else {
        t.push_back(fused_tensor(block(l, "attn_q") + suffix, shape(q), !bias, part(s.heads, 0, 0)));
        t.push_back(fused_tensor(block(l, "attn_k") + suffix, shape(kv), !bias, part(s.key_value_heads, 0, q)));
        t.push_back(fused_tensor(block(l, "attn_v") + suffix, shape(kv), !bias, {{slot, 0, kv, q + kv}}));
    }
}

/// llama, qwen2, qwen3, olmo2, phi3: RMSNorm, SwiGLU, rotary positions, grouped-query heads;
/// biases wherever the file has them (llama.cpp reads them as optional tensors).
inline ModelSettings gguf_llama_style(Keys& keys, Architecture architecture, const GgufLlamaStyle& style) {
    using namespace detail::layers;
    const GgufFile& file = keys.file();
    ModelSettings s;
    s.architecture = architecture;
    gguf_sizes(keys, s);
    s.vocabulary_size = gguf_vocabulary(keys, s);
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::rms_norm;
    s.final_norm_epsilon = keys.number("attention.layer_norm_rms_epsilon");
    const Index rotated = keys.count("rope.dimension_count", s.head_size);
    if (rotated != s.head_size && !style.partial_rotation)
        keys.unsupported("rope.dimension_count", std::to_string(rotated),
                         message("the whole head (", s.head_size, ") for ", keys.architecture()));
    const RotarySpec rotary = gguf_rotary(keys, rotated, style.rope_divisors, s.tensors.skipped);
    s.tied_embeddings = !file.has_tensor("output.weight");
    s.tensors.embedding = "token_embd.weight";
    s.tensors.final_norm_weight = "output_norm.weight";
    if (!s.tied_embeddings) s.tensors.unembedding = "output.weight";
    const Index c = s.dimensions, m = s.mlp_width, q = s.query_width();
    const auto present = [&](Index l, const char* name) { return file.has_tensor(block(l, name)); };
    for (Index l = 0; l < s.layers; ++l) {
        LayerDescription layer = llama_style_layer(s, rotary, style.query_key_norm, style.output_norms);
        std::vector<LayerTensor>& t = layer.tensors;
        if (layer.input_norms) t.push_back(vector_tensor(block(l, "attn_norm.weight"), LayerSlot::attention_norm, c));
        const bool fused = present(l, "attn_qkv.weight");
        add_gguf_query_key_value(t, s, l, fused, false, style.permuted_query_key);
        if (present(l, fused ? "attn_qkv.bias" : "attn_q.bias"))
            add_gguf_query_key_value(t, s, l, fused, true, style.permuted_query_key);
        if (style.query_key_norm != QueryKeyNorm::none) {
            const bool per_head = style.query_key_norm == QueryKeyNorm::per_head;
            t.push_back(
                vector_tensor(block(l, "attn_q_norm.weight"), LayerSlot::query_norm, per_head ? s.head_size : q));
            t.push_back(vector_tensor(block(l, "attn_k_norm.weight"), LayerSlot::key_norm,
                                      per_head ? s.head_size : s.key_value_width()));
        }
        t.push_back(weight_tensor(block(l, "attn_output.weight"), LayerSlot::output, q, c, true));
        if (present(l, "attn_output.bias"))
            t.push_back(vector_tensor(block(l, "attn_output.bias"), LayerSlot::output_bias, c));
        if (style.output_norms) {
            t.push_back(vector_tensor(block(l, "post_attention_norm.weight"), LayerSlot::attention_output_norm, c));
            t.push_back(vector_tensor(block(l, "post_ffw_norm.weight"), LayerSlot::mlp_output_norm, c));
        } else {
            t.push_back(vector_tensor(block(l, "ffn_norm.weight"), LayerSlot::mlp_norm, c));
        }
        if (style.fused_gate_up) {  // [gate; up]: llama.cpp's swiglu takes the first half as the gate
            t.push_back(fused_tensor(block(l, "ffn_up.weight"), {2 * m, c}, true,
                                     {{LayerSlot::gate, 0, m, 0}, {LayerSlot::up, m, m, 0}}));
        } else {
            t.push_back(weight_tensor(block(l, "ffn_gate.weight"), LayerSlot::gate, c, m, true));
            t.push_back(weight_tensor(block(l, "ffn_up.weight"), LayerSlot::up, c, m, true));
        }
        t.push_back(weight_tensor(block(l, "ffn_down.weight"), LayerSlot::down, m, c, true));
        if (!style.fused_gate_up && present(l, "ffn_gate.bias"))
            t.push_back(vector_tensor(block(l, "ffn_gate.bias"), LayerSlot::gate_bias, m));
        if (!style.fused_gate_up && present(l, "ffn_up.bias"))
            t.push_back(vector_tensor(block(l, "ffn_up.bias"), LayerSlot::up_bias, m));
        if (present(l, "ffn_down.bias")) t.push_back(vector_tensor(block(l, "ffn_down.bias"), LayerSlot::down_bias, c));
        s.layer_descriptions.push_back(std::move(layer));
    }
    return s;
}

/// gpt2 and gptneox: LayerNorm with biases, [Q; K; V] in one tensor with its bias, an ungated
/// GELU MLP with biases; GPT-2's learned positions, GPT-NeoX's rotary ones and residual.
inline ModelSettings gguf_gpt_style(Keys& keys, Architecture architecture) {
    using namespace detail::layers;
    const GgufFile& file = keys.file();
    const bool neox = architecture == Architecture::gpt_neox;
    ModelSettings s;
    s.architecture = architecture;
    gguf_sizes(keys, s);
    if (s.key_value_heads != s.heads)
        keys.unsupported("attention.head_count_kv", std::to_string(s.key_value_heads),
                         message("as many key/value heads as heads (", s.heads, ") for ", keys.architecture()));
    s.vocabulary_size = gguf_vocabulary(keys, s);
    s.final_norm = Norm::layer_norm;
    s.final_norm_epsilon = keys.number("attention.layer_norm_epsilon");
    s.tied_embeddings = !file.has_tensor("output.weight");
    s.tensors.embedding = "token_embd.weight";
    s.tensors.final_norm_weight = "output_norm.weight";
    s.tensors.final_norm_bias = "output_norm.bias";
    if (!s.tied_embeddings) s.tensors.unembedding = "output.weight";
    RotarySpec rotary;
    Residual residual = Residual::sequential;
    if (neox) {
        s.position_encoding = PositionEncoding::rotary;
        rotary = gguf_rotary(keys, keys.count("rope.dimension_count", s.head_size), false, s.tensors.skipped);
        if (!keys.has("use_parallel_residual"))
            throw format_error(message(file.source(), ": missing metadata key '", keys.key("use_parallel_residual"),
                                       "' (llama.cpp requires it for gptneox)"));
        residual = keys.flag("use_parallel_residual", true) ? Residual::parallel : Residual::sequential;
    } else {
        s.position_encoding = PositionEncoding::learned;
        s.tensors.position_embedding = "position_embd.weight";
    }
    const Index c = s.dimensions, m = s.mlp_width, qkv = s.query_key_value_width();
    for (Index l = 0; l < s.layers; ++l) {
        LayerDescription layer =
            layer_norm_style_layer(s.final_norm_epsilon, neox ? MlpActivation::gelu_erf : MlpActivation::gelu_tanh,
                                   rotary, score_scale(s.head_size, true, false, l), residual);
        layer.tensors = {vector_tensor(block(l, "attn_norm.weight"), LayerSlot::attention_norm, c),
                         vector_tensor(block(l, "attn_norm.bias"), LayerSlot::attention_norm_bias, c),
                         weight_tensor(block(l, "attn_qkv.weight"), LayerSlot::query_key_value, c, qkv, true),
                         vector_tensor(block(l, "attn_qkv.bias"), LayerSlot::query_key_value_bias, qkv),
                         weight_tensor(block(l, "attn_output.weight"), LayerSlot::output, c, c, true),
                         vector_tensor(block(l, "attn_output.bias"), LayerSlot::output_bias, c),
                         vector_tensor(block(l, "ffn_norm.weight"), LayerSlot::mlp_norm, c),
                         vector_tensor(block(l, "ffn_norm.bias"), LayerSlot::mlp_norm_bias, c),
                         weight_tensor(block(l, "ffn_up.weight"), LayerSlot::up, c, m, true),
                         vector_tensor(block(l, "ffn_up.bias"), LayerSlot::up_bias, m),
                         weight_tensor(block(l, "ffn_down.weight"), LayerSlot::down, m, c, true),
                         vector_tensor(block(l, "ffn_down.bias"), LayerSlot::down_bias, c)};
        s.layer_descriptions.push_back(std::move(layer));
    }
    return s;
}

/// Which layers of a Gemma file slide: attention.sliding_window_pattern as a period P (layer i
/// slides iff i % P < P − 1; 0: every layer) or one flag per layer, else the default period.
inline std::vector<bool> gguf_sliding_layers(Keys& keys, Index layers, Index default_period) {
    std::vector<bool> sliding(std::size_t(layers), false);
    const std::string key = "attention.sliding_window_pattern";
    if (keys.has(key) && keys.file().value(keys.key(key)).is_array()) {
        sliding = keys.file().boolean_array(keys.key(key));
        if (Index(sliding.size()) != layers)
            keys.unsupported(key, message(sliding.size(), " flags"), message("one flag per layer (", layers, ")"));
        return sliding;
    }
    const std::int64_t period = keys.has(key) ? keys.file().integer(keys.key(key)) : default_period;
    if (period < 0 || period > (1 << 24)) keys.unsupported(key, std::to_string(period), "a period 0 … 2^24");
    for (Index l = 0; l < layers; ++l) sliding[std::size_t(l)] = period == 0 || l % period < period - 1;
    return sliding;
}

/// gemma2 and gemma3: RMSNorm whose stored weights are already 1 + w, norms before and after each
/// block, GeGLU, the embedding × sqrtf(C), sliding layers with their own rotary base, soft caps
/// (see the header comment for what llama.cpp assumes where the file says nothing).
inline ModelSettings gguf_gemma(Keys& keys, Architecture architecture) {
    using namespace detail::layers;
    const GgufFile& file = keys.file();
    const bool gemma3 = architecture == Architecture::gemma3;
    ModelSettings s;
    s.architecture = architecture;
    gguf_sizes(keys, s, true);
    Index window = gemma3 ? 0 : 4096;  // llama.cpp's defaults
    if (keys.has("attention.sliding_window")) {
        const std::int64_t stored = file.integer(keys.key("attention.sliding_window"));
        if (stored < 0 || stored > (1 << 24))
            keys.unsupported("attention.sliding_window", std::to_string(stored), "a window of 0 … 2^24 keys");
        window = Index(stored);
    }
    s.vocabulary_size = gguf_vocabulary(keys, s);
    s.position_encoding = PositionEncoding::rotary;
    s.final_norm = Norm::rms_norm;
    s.final_norm_epsilon = keys.number("attention.layer_norm_rms_epsilon");
    s.embedding_scale = double(std::sqrt(float(s.dimensions)));
    if (keys.count("rope.dimension_count", s.head_size) != s.head_size)
        keys.unsupported("rope.dimension_count", std::to_string(keys.count("rope.dimension_count")),
                         message("the whole head (", s.head_size, ") for ", keys.architecture()));
    const RotarySpec global = gguf_rotary(keys, s.head_size, false, s.tensors.skipped);
    RotarySpec local = global;
    local.base = keys.number("rope.freq_base_swa", gemma3 ? 10000.0 : global.base);
    const std::vector<bool> sliding =
        window > 0 ? gguf_sliding_layers(keys, s.layers, gemma3 ? 6 : 2) : std::vector<bool>(std::size_t(s.layers));
    const auto cap = [&](const char* key, double absent) { return keys.has(key) ? keys.number(key) : absent; };
    const double score_cap = gemma3 ? 0.0 : cap("attn_logit_softcapping", 50.0);
    if (gemma3 && keys.has("attn_logit_softcapping"))
        keys.unsupported("attn_logit_softcapping", std::to_string(keys.number("attn_logit_softcapping")),
                         "no attention soft cap for gemma3 (llama.cpp's graph has none)");
    s.logit_cap = cap("final_logit_softcapping", gemma3 ? 0.0 : 30.0);
    const bool large = s.layers == (gemma3 ? 62 : 46);  // the 27B models: scores × 1/√(C / H)
    const double scale = 1.0 / std::sqrt(large ? double(s.dimensions / s.heads) : double(s.head_size));
    s.tied_embeddings = !file.has_tensor("output.weight");
    s.tensors.embedding = "token_embd.weight";
    s.tensors.final_norm_weight = "output_norm.weight";
    if (!s.tied_embeddings) s.tensors.unembedding = "output.weight";
    const Index c = s.dimensions, m = s.mlp_width, d = s.head_size;
    for (Index l = 0; l < s.layers; ++l) {
        const bool slides = sliding[std::size_t(l)];
        LayerDescription layer =
            llama_style_layer(s, slides ? local : global, gemma3 ? QueryKeyNorm::per_head : QueryKeyNorm::none, false);
        layer.output_norms = true;
        layer.activation = MlpActivation::gelu_tanh;  // ggml_geglu
        layer.score_scale = scale;
        layer.score_cap = score_cap;
        layer.window = slides ? window : 0;
        std::vector<LayerTensor>& t = layer.tensors;
        t.push_back(vector_tensor(block(l, "attn_norm.weight"), LayerSlot::attention_norm, c));
        add_gguf_query_key_value(t, s, l, false, false, false);
        if (gemma3) {
            t.push_back(vector_tensor(block(l, "attn_q_norm.weight"), LayerSlot::query_norm, d));
            t.push_back(vector_tensor(block(l, "attn_k_norm.weight"), LayerSlot::key_norm, d));
        }
        t.push_back(weight_tensor(block(l, "attn_output.weight"), LayerSlot::output, s.query_width(), c, true));
        t.push_back(vector_tensor(block(l, "post_attention_norm.weight"), LayerSlot::attention_output_norm, c));
        t.push_back(vector_tensor(block(l, "ffn_norm.weight"), LayerSlot::mlp_norm, c));
        t.push_back(weight_tensor(block(l, "ffn_gate.weight"), LayerSlot::gate, c, m, true));
        t.push_back(weight_tensor(block(l, "ffn_up.weight"), LayerSlot::up, c, m, true));
        t.push_back(weight_tensor(block(l, "ffn_down.weight"), LayerSlot::down, m, c, true));
        t.push_back(vector_tensor(block(l, "post_ffw_norm.weight"), LayerSlot::mlp_output_norm, c));
        s.layer_descriptions.push_back(std::move(layer));
    }
    return s;
}

/// One architecture attn opens from GGUF: its general.architecture and its reader.
struct GgufKnown {
    const char* name;
    ModelSettings (*read)(Keys&);
};

inline ModelSettings gguf_llama(Keys& keys) {
    GgufLlamaStyle style;
    style.permuted_query_key = style.rope_divisors = true;
    return gguf_llama_style(keys, Architecture::llama, style);
}
inline ModelSettings gguf_qwen2(Keys& keys) {
    return gguf_llama_style(keys, Architecture::qwen2, {});
}
inline ModelSettings gguf_qwen3(Keys& keys) {
    GgufLlamaStyle style;
    style.query_key_norm = QueryKeyNorm::per_head;
    return gguf_llama_style(keys, Architecture::qwen3, style);
}
inline ModelSettings gguf_olmo2(Keys& keys) {
    GgufLlamaStyle style;
    style.query_key_norm = QueryKeyNorm::whole;
    style.output_norms = true;
    return gguf_llama_style(keys, Architecture::olmo2, style);
}
inline ModelSettings gguf_phi3(Keys& keys) {
    GgufLlamaStyle style;
    style.partial_rotation = style.fused_gate_up = true;
    return gguf_llama_style(keys, Architecture::phi3, style);
}
inline ModelSettings gguf_gpt2(Keys& keys) {
    return gguf_gpt_style(keys, Architecture::gpt2);
}
inline ModelSettings gguf_gpt_neox(Keys& keys) {
    return gguf_gpt_style(keys, Architecture::gpt_neox);
}

inline ModelSettings gguf_gemma2(Keys& keys) {
    return gguf_gemma(keys, Architecture::gemma2);
}
inline ModelSettings gguf_gemma3(Keys& keys) {
    return gguf_gemma(keys, Architecture::gemma3);
}

inline constexpr GgufKnown kGgufKnown[] = {
    {"gpt2", gguf_gpt2},        {"llama", gguf_llama},   {"qwen2", gguf_qwen2},
    {"qwen3", gguf_qwen3},      {"olmo2", gguf_olmo2},   {"phi3", gguf_phi3},
    {"gptneox", gguf_gpt_neox}, {"gemma2", gguf_gemma2}, {"gemma3", gguf_gemma3},
};

}  // namespace detail::gguf_config

/// The settings and layer descriptions a GGUF file declares (general.architecture, its
/// `{arch}.*` keys and which tensors it holds), for the architectures attn implements:
/// the same descriptions as the Hugging Face checkpoint it was converted from, with tensor
/// names and shapes as GGUF stores them (row-major: ggml's dims reversed). format_error naming
/// the file and the key, value or tensor for anything else.
inline ModelSettings settings_from_gguf(const GgufFile& file) {
    const std::string architecture = file.string("general.architecture");
    const detail::gguf_config::GgufKnown* match = nullptr;
    std::string names;
    for (const detail::gguf_config::GgufKnown& known : detail::gguf_config::kGgufKnown) {
        if (architecture == known.name) match = &known;
        names += detail::message(names.empty() ? "\"" : ", \"", known.name, "\"");
    }
    if (!match)
        throw format_error(detail::message(file.source(), ": general.architecture \"", architecture,
                                           "\" is not supported (attn opens ", names, ")"));
    detail::gguf_config::Keys keys(file, architecture);
    ModelSettings settings = match->read(keys);
    keys.only_read_keys();
    if (file.contains("tokenizer.ggml.eos_token_id")) {
        const std::int64_t id = file.integer("tokenizer.ggml.eos_token_id");
        settings.end_token = id >= 0 && id < settings.vocabulary_size ? int(id) : -1;
    }
    detail::config::check_sizes(settings, file.source());
    return settings;
}

}  // namespace attn
