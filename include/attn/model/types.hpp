#pragma once
// The model layer's plain types: what a config or manifest declares (ModelSettings), how a forward
// pass is asked for (ForwardOptions) and what it returns (ForwardResult, ModelAttention).
// No file I/O and no JSON here, so the analysis layer can use them without the loader.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/head_statistics.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/threads.hpp"

namespace attn {

namespace detail {
template <class T>
class FastForward;
}
template <class T>
class Decoder;

/// The family a model's layers follow: which tensors it has and how they are laid out
/// (model/architectures.hpp describes each).
enum class Architecture {
    store,     ///< attn's own manifest (manifest.json): the store model
    gpt2,      ///< Hugging Face GPT2LMHeadModel
    llama,     ///< Hugging Face LlamaForCausalLM: Llama 1–3, SmolLM/SmolLM2, TinyLlama
    qwen2,     ///< Hugging Face Qwen2ForCausalLM
    gpt_neox,  ///< Hugging Face GPTNeoXForCausalLM: Pythia
    qwen3,     ///< Hugging Face Qwen3ForCausalLM
    olmo2,     ///< Hugging Face Olmo2ForCausalLM
    phi3,      ///< Hugging Face Phi3ForCausalLM: Phi-3, Phi-4-mini
    mistral,   ///< Hugging Face MistralForCausalLM: a sliding window in every layer
    gemma2,    ///< Hugging Face Gemma2ForCausalLM: norms around both blocks, soft caps, even layers slide
    gemma3,    ///< Hugging Face Gemma3ForCausalLM (model_type gemma3_text): Gemma 2's layers with q/k norms
};

/// The name a config or manifest gives the architecture: "store", "gpt2", "llama", …, its
/// config.json model_type.
inline const char* architecture_name(Architecture architecture) {
    switch (architecture) {
        case Architecture::store:
            return "store";
        case Architecture::gpt2:
            return "gpt2";
        case Architecture::llama:
            return "llama";
        case Architecture::qwen2:
            return "qwen2";
        case Architecture::gpt_neox:
            return "gpt_neox";
        case Architecture::qwen3:
            return "qwen3";
        case Architecture::olmo2:
            return "olmo2";
        case Architecture::phi3:
            return "phi3";
        case Architecture::mistral:
            return "mistral";
        case Architecture::gemma2:
            return "gemma2";
        case Architecture::gemma3:
            return "gemma3_text";
    }
    return "?";
}

/// How a norm normalises a row.
enum class Norm {
    layer_norm,  ///< (x − mean) / √(variance + ε) · weight + bias (GPT-2, GPT-NeoX, the store model)
    rms_norm,    ///< x / √(mean(x²) + ε) · weight (Llama, Qwen, OLMo-2, Phi-3, Gemma: its weights read as 1 + w)
};

/// Where positions enter the model.
enum class PositionEncoding {
    rotary,   ///< queries and keys rotated in every head (core/rope.hpp)
    learned,  ///< a learned vector per position added to the token embedding (GPT-2)
};

/// The MLP's nonlinearity, decided when the model is loaded.
enum class MlpActivation {
    gelu_erf,   ///< x · ½ · (1 + erf(x / √2)): PyTorch's nn.GELU()
    gelu_tanh,  ///< the tanh approximation: GPT-2's "gelu_new", the gate of Gemma's GeGLU
    silu,       ///< x · sigmoid(x): the gate of Llama's SwiGLU
};

/// How attention and the MLP add into the residual stream.
enum class Residual {
    sequential,  ///< x += attn(norm1(x)); x += mlp(norm2(x))
    parallel,    ///< x += attn(norm1(x)) + mlp(norm2(x)), both from the same x (GPT-NeoX, GPT-J)
};

/// Where a layer normalises queries and keys after their projection, before the rotation.
enum class QueryKeyNorm {
    none,
    per_head,  ///< RMSNorm over each head's d numbers, one (d) weight shared by the heads (Qwen3)
    whole,     ///< RMSNorm over all H·d (queries) and H_kv·d (keys) numbers (OLMo-2)
};

/// A place a layer keeps a parameter: where each tensor of the checkpoint is read into.
/// Matrices are (in × out), as a projection reads x · W; vectors are one number per column.
enum class LayerSlot {
    attention_norm,         ///< (C) the norm before attention
    attention_norm_bias,    ///< (C) LayerNorm only
    query_key_value,        ///< (C × (H + 2 H_kv)·d) [Wq Wk Wv]
    query_key_value_bias,   ///< ((H + 2 H_kv)·d) [bq bk bv]
    query_norm,             ///< (d) per head or (H·d) whole
    key_norm,               ///< (d) per head or (H_kv·d) whole
    output,                 ///< (H·d × C) Wo
    output_bias,            ///< (C)
    attention_output_norm,  ///< (C) the norm of attention's output, before it is added (OLMo-2, Gemma)
    mlp_norm,               ///< (C) the norm before the MLP
    mlp_norm_bias,          ///< (C) LayerNorm only
    gate,                   ///< (C × M) gated MLPs
    gate_bias,              ///< (M)
    up,                     ///< (C × M)
    up_bias,                ///< (M)
    down,                   ///< (M × C)
    down_bias,              ///< (C)
    mlp_output_norm,        ///< (C) the norm of the MLP's output, before it is added (OLMo-2, Gemma)
};
inline constexpr int kLayerSlots = int(LayerSlot::mlp_output_norm) + 1;

/// The slots that hold a matrix (the projections) rather than a vector.
inline constexpr LayerSlot kMatrixSlots[] = {LayerSlot::query_key_value, LayerSlot::output, LayerSlot::gate,
                                             LayerSlot::up, LayerSlot::down};

/// Whether a slot holds a matrix (kMatrixSlots) rather than a vector.
inline bool is_matrix_slot(LayerSlot slot) {
    for (LayerSlot matrix : kMatrixSlots)
        if (slot == matrix) return true;
    return false;
}

namespace detail {

/// The member of a layer's five projections a matrix slot names, in any storage: float
/// (Model::Layer), 16-bit or quantized, each a struct with members of these names.
template <class Layer>
auto& matrix_in_slot(Layer& layer, LayerSlot slot) {
    switch (slot) {
        case LayerSlot::query_key_value:
            return layer.query_key_value;
        case LayerSlot::output:
            return layer.output;
        case LayerSlot::gate:
            return layer.gate;
        case LayerSlot::up:
            return layer.up;
        default:  // LayerSlot::down; callers pass matrix slots only
            return layer.down;
    }
}

}  // namespace detail

/// A run of a tensor's outputs read into a slot: its outputs from … from + count − 1 (rows of
/// a Linear's (out × in) weight, columns of an (in × out) one, entries of a vector) go to the
/// slot's columns (or entries) to … to + count − 1. A fused tensor has several pieces.
struct TensorPiece {
    LayerSlot slot = LayerSlot::attention_norm;
    Index from = 0;
    Index count = 0;
    Index to = 0;
};

/// One tensor of a layer in a checkpoint: its name, its shape as stored, and where it goes.
struct LayerTensor {
    std::string name;
    std::vector<std::int64_t> shape;  ///< as the checkpoint stores it
    bool out_in = false;              ///< stored (out × in), PyTorch's Linear: read transposed
    std::vector<TensorPiece> pieces;
    /// Added to every number of a vector as it is read: Gemma's norms store w and scale by
    /// 1 + w (computed in float32 by transformers, as here in T), so the model keeps 1 + w, as
    /// TransformerLens's weights do.
    double offset = 0.0;
};

/// One layer's structure, built once from the config (model/architectures.hpp): what it
/// computes and the tensors it reads. Every pass (reference_forward, the fast pass, decoding,
/// hooks, attribution) follows it; nothing else in attn branches on an architecture.
///
///   h = input_norms ? norm(x) : x                                (n × C)  ln1
///   q, k, v = h · [Wq Wk Wv] (+ b)                               (n × H·d), (n × H_kv·d) ×2
///   q, k = query_key_norm(q), query_key_norm(k)                  if any
///   q, k = rotate(q), rotate(k)                                  the first rotary.rotated numbers of each head
///   a = attention(q, k, v; score_scale, window, cap) · Wo (+ bo)          (n × C)
///   a = norm(a)                                                  if output_norms (both: Gemma's sandwich)
///   sequential: x += a; m = mlp(input_norms ? norm(x) : x); m = norm(m) if output_norms; x += m
///   parallel:   m = mlp(norm(x_before)); x += a + m
///   mlp(h) = act(h · W_up + b) · W_down + b, or gated: (act(h · W_gate + b) ⊙ (h · W_up + b)) · W_down + b
struct LayerDescription {
    Norm norm = Norm::layer_norm;  ///< every norm of the layer
    double norm_epsilon = 1e-5;
    bool input_norms = true;    ///< norms before attention and the MLP (pre-norm)
    bool output_norms = false;  ///< norms on attention's and the MLP's outputs (OLMo-2; Gemma has both)
    Residual residual = Residual::sequential;
    QueryKeyNorm query_key_norm = QueryKeyNorm::none;
    bool gated_mlp = false;  ///< down(act(x · W_gate) ⊙ (x · W_up)), else down(act(x · W_up))
    MlpActivation activation = MlpActivation::gelu_erf;
    RotarySpec rotary{};       ///< rotary.rotated = 0: nothing turns (learned positions)
    double score_scale = 1.0;  ///< what scores are multiplied by: 1/√d, unless the config says otherwise
    /// A sliding window (Mistral, Gemma's local layers): if > 0, position p sees keys p − window < j ≤ p.
    Index window = 0;
    double score_cap = 0.0;  ///< if > 0, scores become cap · tanh(score / cap) before the softmax (Gemma 2)
    std::vector<LayerTensor> tensors;

    /// Whether some tensor is read into the slot (a bias, a norm or the gate the layer has).
    bool has(LayerSlot slot) const {
        for (const LayerTensor& tensor : tensors)
            for (const TensorPiece& piece : tensor.pieces)
                if (piece.slot == slot) return true;
        return false;
    }
    bool rotates() const { return rotary.rotated > 0; }
    /// Norms both before and after each block (Gemma): TransformerLens then names the ones
    /// after ln1_post and ln2_post, and hook_attn_out / hook_mlp_out are after them.
    bool norms_around_blocks() const { return input_norms && output_norms; }
};

/// The tensors outside the layers, by name in the checkpoint ("" where the model has none).
struct ModelTensors {
    std::string embedding;           ///< (V × C)
    std::string position_embedding;  ///< (longest × C), learned positions only
    std::string final_norm_weight, final_norm_bias;
    double final_norm_offset = 0.0;  ///< added to the final norm's weight as it is read (Gemma: 1 + w)
    std::string unembedding;         ///< untied only, (V × C) as a Linear stores it
    /// Tensors that may be present and are skipped: GPT-2's saved attention-mask buffers, a
    /// tied model's copy of its embedding as lm_head.weight.
    std::vector<std::string> skipped;
};

/// What a model's config declares: its sizes, and each layer's structure. Only what the
/// forward pass implements is accepted.
struct ModelSettings {
    Architecture architecture = Architecture::store;
    Index layers = 0;
    Index heads = 0;            ///< query heads H per layer
    Index key_value_heads = 0;  ///< key/value heads per layer: H, or a divisor (grouped-query attention)
    Index dimensions = 0;       ///< model width C (the residual stream)
    Index head_size = 0;        ///< d; H · d need not be C (Llama's head_dim)
    Index mlp_width = 0;        ///< M
    Index longest = 0;          ///< context length: the most positions a forward pass takes
    Index vocabulary_size = 0;  ///< V: rows of the embedding, columns of the logits
    PositionEncoding position_encoding = PositionEncoding::rotary;
    Norm final_norm = Norm::layer_norm;  ///< the norm before the unembedding
    double final_norm_epsilon = 1e-5;
    bool tied_embeddings = true;  ///< the unembedding is the embedding's transpose
    /// x = E[id] · embedding_scale (Gemma: √C rounded to the checkpoint's type, as transformers
    /// rounds it); the unembedding is not scaled.
    double embedding_scale = 1.0;
    double logit_cap = 0.0;  ///< if > 0, logits become cap · tanh(logit / cap) (Gemma 2's final soft cap)
    int end_token = -1;      ///< the end-of-text id generation stops at (−1: none declared)
    std::vector<LayerDescription> layer_descriptions;  ///< one per layer
    ModelTensors tensors;                              ///< the checkpoint's names outside the layers

    /// Layer l's structure (unchecked: 0 ≤ l < layers).
    const LayerDescription& layer(Index l) const { return layer_descriptions[static_cast<std::size_t>(l)]; }
    /// H · d: the queries' (and the head outputs') width.
    Index query_width() const { return heads * head_size; }
    /// H_kv · d: the keys' and the values' width.
    Index key_value_width() const { return key_value_heads * head_size; }
    /// (H + 2 H_kv) · d: queries, keys and values side by side.
    Index query_key_value_width() const { return query_width() + 2 * key_value_width(); }
    /// What layer l's scores are multiplied by.
    double score_scale(Index l) const { return layer(l).score_scale; }
    /// Whether any layer has a gated MLP (the fast pass's buffers).
    bool any_gated_mlp() const {
        for (const LayerDescription& layer : layer_descriptions)
            if (layer.gated_mlp) return true;
        return false;
    }
    /// Whether any layer adds attention and MLP to the same input (the fast pass's buffers).
    bool any_parallel_residual() const {
        for (const LayerDescription& layer : layer_descriptions)
            if (layer.residual == Residual::parallel) return true;
        return false;
    }
};

/// The shape (rows × cols) of a layer's slot in a model of these settings: matrices (in × out),
/// vectors (1 × count).
inline std::pair<Index, Index> slot_shape(LayerSlot slot, const ModelSettings& s, const LayerDescription& layer) {
    const Index c = s.dimensions, m = s.mlp_width, qkv = s.query_key_value_width();
    const bool per_head = layer.query_key_norm == QueryKeyNorm::per_head;
    switch (slot) {
        case LayerSlot::query_key_value:
            return {c, qkv};
        case LayerSlot::query_key_value_bias:
            return {1, qkv};
        case LayerSlot::query_norm:
            return {1, per_head ? s.head_size : s.query_width()};
        case LayerSlot::key_norm:
            return {1, per_head ? s.head_size : s.key_value_width()};
        case LayerSlot::output:
            return {s.query_width(), c};
        case LayerSlot::gate:
        case LayerSlot::up:
            return {c, m};
        case LayerSlot::gate_bias:
        case LayerSlot::up_bias:
            return {1, m};
        case LayerSlot::down:
            return {m, c};
        default:  // the norms, output_bias, down_bias
            return {1, c};
    }
}

/// A model's attention weights, layers × heads × (rows × positions): row i is what the query at
/// position positions() − rows() + i attends to, column j is key position j. Model::forward's
/// has every position's row (rows() == positions()); a Decoder step's the new positions' rows;
/// each token generate writes the one row that chose it. Each layer's sliding window travels
/// with the weights, so a 0 before a row's window reads as unreachable (visible), not unattended.
template <class T>
class ModelAttention {
public:
    ModelAttention() = default;
    /// layers: heads × (rows × positions) each, all of one shape, rows ≤ positions. windows:
    /// empty (no layer has one) or one per layer, 0 for a full layer (layer_windows(settings));
    /// all 0 is kept as empty. shape_error if they disagree.
    explicit ModelAttention(std::vector<AttentionWeights<T>> layers, std::vector<Index> windows = {})
        : layers_(std::move(layers)), windows_(std::move(windows)) {
        constexpr const char* function = "ModelAttention";
        for (const AttentionWeights<T>& layer : layers_)
            if (layer.heads() != heads() || layer.rows() != rows() || layer.cols() != positions())
                throw shape_error(detail::message(function, ": a layer is ", layer.heads(), " heads × (", layer.rows(),
                                                  " × ", layer.cols(), "), layer 0 ", heads(), " × (", rows(), " × ",
                                                  positions(), "); every layer has the same shape"));
        if (rows() > positions())
            throw shape_error(detail::message(function, ": ", rows(), " rows over ", positions(),
                                              " positions; a row's query is one of the positions"));
        if (!windows_.empty() && windows_.size() != layers_.size())
            throw shape_error(detail::message(function, ": windows has ", windows_.size(), " entries for ",
                                              layers_.size(), " layers (empty, or one per layer)"));
        for (Index window : windows_)
            if (window < 0) throw argument_error(detail::message(function, ": a window is ", window, "; 0 is none"));
        if (std::all_of(windows_.begin(), windows_.end(), [](Index window) { return window == 0; }))
            windows_.clear();  // one spelling of "no window", as Model::forward gives it
    }

    Index layers() const { return static_cast<Index>(layers_.size()); }
    Index heads() const { return layers_.empty() ? 0 : layers_.front().heads(); }
    /// Query rows per head: the positions these weights are for, the last rows() positions.
    Index rows() const { return layers_.empty() ? 0 : layers_.front().rows(); }
    /// Key positions per row: every position up to the last row's.
    Index positions() const { return layers_.empty() ? 0 : layers_.front().cols(); }
    bool empty() const { return layers_.empty(); }

    /// Layer l's weights, heads × (rows × positions); layers count from 0.
    const AttentionWeights<T>& layer(Index l) const {
        detail::check_index("ModelAttention::layer", "layer", l, layers());
        return layers_[static_cast<std::size_t>(l)];
    }
    /// Head h of layer l, (rows × positions): row i is what position positions() − rows() + i
    /// attends to.
    typename AttentionWeights<T>::ConstHeadMap head(Index l, Index h) const { return layer(l).head(h); }
    /// Weight of row i on key position j in head h of layer l (unchecked).
    T operator()(Index l, Index h, Index i, Index j) const { return layers_[static_cast<std::size_t>(l)](h, i, j); }

    /// Layer l's sliding window, 0 if it sees the whole prefix.
    Index window(Index l) const {
        detail::check_index("ModelAttention::window", "layer", l, layers());
        return windows_.empty() ? 0 : windows_[static_cast<std::size_t>(l)];
    }
    /// Every layer's window (empty if none has one), as layer_windows gives them.
    const std::vector<Index>& windows() const { return windows_; }
    /// The key positions row i of layer l could see, first … last − 1: its own position p and
    /// before, from p − window + 1 in a sliding layer. Weights outside are 0 because the key
    /// was unreachable, not because it was given no weight.
    KeyRange visible(Index l, Index i) const {
        const Index window = this->window(l);
        detail::check_index("ModelAttention::visible", "row", i, rows());
        const Index p = positions() - rows() + i;
        return {window > 0 ? std::max<Index>(0, p - window + 1) : 0, p + 1};
    }

    friend bool operator==(const ModelAttention& a, const ModelAttention& b) {
        return a.layers_ == b.layers_ && a.windows_ == b.windows_;
    }
    friend bool operator!=(const ModelAttention& a, const ModelAttention& b) { return !(a == b); }

private:
    friend class detail::FastForward<T>;  // fills the layers in place (Model::forward_into)

    std::vector<AttentionWeights<T>> layers_;
    std::vector<Index> windows_;  // empty, or one per layer
};

/// A head, by 0-based layer and head.
struct HeadId {
    Index layer = 0;
    Index head = 0;
    friend bool operator<(const HeadId& a, const HeadId& b) {
        return std::pair(a.layer, a.head) < std::pair(b.layer, b.head);
    }
    friend bool operator==(const HeadId& a, const HeadId& b) { return a.layer == b.layer && a.head == b.head; }
};

/// One number per head, (layers × heads), row-major: entry (l, h) is head h of layer l.
using HeadTable = Matrix<double>;

struct ForwardOptions {
    bool keep_attention = false;   ///< return every layer's attention weights
    std::vector<HeadId> ablate{};  ///< heads whose output is zeroed before the output projection
    /// Threads for the whole pass (attn/threads.hpp): each owns a share of the positions for
    /// the whole pass, at least 16 positions each. Bit-identical for every choice.
    Threads threads;
    /// Keep, per layer, each row's log-sum-exp and the rotated queries and keys: O(layers ×
    /// positions × C), from which attention_rows (model/attention_rows.hpp) gives any heads'
    /// rows of exact weights afterwards.
    bool keep_log_sum_exp = false;
    /// If set, measure every head of every layer in the attention kernel (head_statistics.hpp).
    const HeadStatisticsRequest* statistics = nullptr;
};

namespace detail {

template <class T>
struct ForwardMemory;  // model/forward.hpp: the fast pass's buffers

/// Working memory a result holds for the next call into it: made by the call that uses it (where
/// W is complete, so this header needs none of the kernel's types), moved with the result and
/// never copied (a copy starts empty).
template <class W>
class HeldMemory {
public:
    HeldMemory() = default;
    HeldMemory(const HeldMemory&) {}
    HeldMemory& operator=(const HeldMemory&) {
        held_.reset();
        return *this;
    }
    HeldMemory(HeldMemory&&) noexcept = default;
    HeldMemory& operator=(HeldMemory&&) noexcept = default;
    ~HeldMemory() = default;

    /// The memory, made empty on first use.
    W& get() {
        if (!held_) held_ = Owner(new W(), [](W* memory) { delete memory; });
        return *held_;
    }
    bool empty() const { return !held_; }

private:
    using Owner = std::unique_ptr<W, void (*)(W*)>;
    Owner held_{nullptr, nullptr};
};

}  // namespace detail

/// Model::forward_into's working memory, kept in its ForwardResult between calls: with the same
/// number of positions a repeated call allocates nothing. Its contents are internal.
template <class T>
using ForwardWorkspace = detail::HeldMemory<detail::ForwardMemory<T>>;

template <class T>
struct ForwardResult {
    Matrix<T> logits;                     ///< (positions × vocabulary): next-token scores at every position
    ModelAttention<T> attention;          ///< layers × heads × (positions × positions), if kept
    std::vector<Matrix<T>> log_sum_exp;   ///< per layer (heads × positions), if keep_log_sum_exp
    std::vector<Matrix<T>> queries_keys;  ///< per layer (positions × (H + H_kv)·d): rotated queries | keys, if kept
    /// Whether the pass's attention ran on bfloat16 numbers (Model::bfloat16_attention): its
    /// queries, keys and values were rounded, and attention_rows rounds its scaled queries too.
    bool bfloat16_attention = false;
    std::vector<HeadStatistics<T>> statistics;  ///< per layer, heads × positions, if asked
    /// Model::forward_into's working memory for the next call into this result; Model::forward
    /// returns it empty.
    ForwardWorkspace<T> workspace;
};

namespace detail {

/// `function`'s checks of a forward pass's ids against the model: 1 … longest ids, each a
/// token of the vocabulary.
inline void check_token_ids(const char* function, const ModelSettings& settings, const std::vector<int>& ids) {
    if (ids.empty()) throw argument_error(message(function, ": ids is empty; a text has at least one token"));
    if (static_cast<Index>(ids.size()) > settings.longest)
        throw argument_error(message(function, ": ", ids.size(), " ids, but the model's context (longest) is ",
                                     settings.longest, " positions"));
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= settings.vocabulary_size)
            throw argument_error(message(function, ": ids[", i, "] = ", ids[i], " is not a token id (vocabulary of ",
                                         settings.vocabulary_size, ")"));
}

/// (layers × heads) flags of the heads in `ablate`, each checked to exist, into `silenced`
/// (no allocation if it has that shape already).
inline void silenced_heads_into(const char* function, const ModelSettings& settings, const std::vector<HeadId>& ablate,
                                std::vector<std::vector<bool>>& silenced) {
    silenced.resize(static_cast<std::size_t>(settings.layers));
    for (std::vector<bool>& layer : silenced) layer.assign(static_cast<std::size_t>(settings.heads), false);
    for (const HeadId& id : ablate) {
        check_index(function, "ablated layer", id.layer, settings.layers);
        check_index(function, "ablated head", id.head, settings.heads);
        silenced[std::size_t(id.layer)][std::size_t(id.head)] = true;
    }
}

/// silenced_heads_into into fresh flags.
inline std::vector<std::vector<bool>> silenced_heads(const char* function, const ModelSettings& settings,
                                                     const std::vector<HeadId>& ablate) {
    std::vector<std::vector<bool>> silenced;
    silenced_heads_into(function, settings, ablate, silenced);
    return silenced;
}

}  // namespace detail

/// Each layer's sliding window (LayerDescription::window; 0 for a full layer), one per layer:
/// what the views and the head scores take to tell unreachable keys from unattended ones.
inline std::vector<Index> layer_windows(const ModelSettings& settings) {
    std::vector<Index> windows;
    for (Index l = 0; l < settings.layers; ++l) windows.push_back(settings.layer(l).window);
    return windows;
}

}  // namespace attn
