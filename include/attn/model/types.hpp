#pragma once
// The model layer's plain types: what a config or manifest declares (ModelSettings), how a forward
// pass is asked for (ForwardOptions) and what it returns (ForwardResult, ModelAttention).
// No file I/O and no JSON here, so the analysis layer can use them without the loader.

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
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
    store,  ///< attn's own manifest (manifest.json): the store model
    gpt2,   ///< Hugging Face GPT2LMHeadModel
    llama,  ///< Hugging Face LlamaForCausalLM: Llama, SmolLM/SmolLM2, TinyLlama
    qwen2,  ///< Hugging Face Qwen2ForCausalLM
};

/// The name a config or manifest gives the architecture: "store", "gpt2", "llama", "qwen2".
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
    }
    return "?";
}

/// How each layer normalises its input.
enum class Norm {
    layer_norm,  ///< (x − mean) / √(variance + ε) · weight + bias (GPT-2, the store model)
    rms_norm,    ///< x / √(mean(x²) + ε) · weight (Llama, Qwen2)
};

/// Where positions enter the model.
enum class PositionEncoding {
    rotary,   ///< queries and keys rotated in every head (core/rope.hpp)
    learned,  ///< a learned vector per position added to the token embedding (GPT-2)
};

/// The MLP's activation, decided when the model is loaded.
enum class Activation {
    gelu_erf,   ///< x · ½ · (1 + erf(x / √2)): PyTorch's nn.GELU()
    gelu_tanh,  ///< the tanh approximation: GPT-2's "gelu_new"
    silu,       ///< x · sigmoid(x): the gate of Llama's SwiGLU
};

/// What a model's config declares. Only what the forward pass implements is accepted.
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
    double norm_epsilon = 1e-5;
    Norm norm = Norm::layer_norm;
    PositionEncoding positions = PositionEncoding::rotary;
    double rope_base = 10000.0;  ///< rotary only
    RopePairing rope_pairing = RopePairing::rotate_half;
    Activation activation = Activation::gelu_erf;
    bool gated_mlp = false;       ///< down(act(x · W_gate) ⊙ (x · W_up)), else down(act(x · W_up))
    bool tied_embeddings = true;  ///< the unembedding is the embedding's transpose
    bool scale_scores = true;     ///< scores divided by √d (GPT-2's scale_attn_weights)
    bool scale_by_layer = false;  ///< and by layer + 1 (GPT-2's scale_attn_by_inverse_layer_idx)
    bool attention_bias = false;  ///< biases on the queries, keys and values
    bool output_bias = false;     ///< a bias on the attention's output projection
    bool mlp_bias = false;        ///< biases on the MLP's projections
    int end_token = -1;           ///< the end-of-text id generation stops at (−1: none declared)

    /// H · d: the queries' (and the head outputs') width.
    Index query_width() const { return heads * head_size; }
    /// H_kv · d: the keys' and the values' width.
    Index key_value_width() const { return key_value_heads * head_size; }
    /// (H + 2 H_kv) · d: queries, keys and values side by side.
    Index query_key_value_width() const { return query_width() + 2 * key_value_width(); }
    /// What layer l's scores are multiplied by: 1/√d, 1/(√d · (l + 1)) or 1 as the config says.
    double score_scale(Index layer) const {
        double scale = scale_scores ? 1.0 / std::sqrt(static_cast<double>(head_size)) : 1.0;
        if (scale_by_layer) scale /= static_cast<double>(layer + 1);
        return scale;
    }
};

/// Every layer's attention weights: layers × heads × (positions × positions).
template <class T>
class ModelAttention {
public:
    ModelAttention() = default;
    explicit ModelAttention(std::vector<AttentionWeights<T>> layers) : layers_(std::move(layers)) {}

    Index layers() const { return static_cast<Index>(layers_.size()); }
    Index heads() const { return layers_.empty() ? 0 : layers_.front().heads(); }
    Index positions() const { return layers_.empty() ? 0 : layers_.front().positions(); }
    bool empty() const { return layers_.empty(); }

    /// Layer l's weights, heads × (positions × positions); layers count from 0.
    const AttentionWeights<T>& layer(Index l) const {
        detail::check_index("ModelAttention::layer", "layer", l, layers());
        return layers_[static_cast<std::size_t>(l)];
    }
    /// Head h of layer l, (positions × positions): row i is what position i attends to.
    typename AttentionWeights<T>::ConstHeadMap head(Index l, Index h) const { return layer(l).head(h); }
    /// Weight of query position i on key position j in head h of layer l (unchecked).
    T operator()(Index l, Index h, Index i, Index j) const { return layers_[static_cast<std::size_t>(l)](h, i, j); }

private:
    friend class detail::FastForward<T>;  // fills the layers in place (Model::forward_into)
    friend class Decoder<T>;              // lends a DecodeResult's rows to its pass

    std::vector<AttentionWeights<T>> layers_;
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

}  // namespace attn
