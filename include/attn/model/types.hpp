#pragma once
// The model layer's plain types: what a manifest declares (ModelSettings), how a forward
// pass is asked for (ForwardOptions) and what it returns (ForwardResult, ModelAttention).
// No file I/O and no JSON here, so the analysis layer can use them without the loader.

#include <Eigen/Core>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/head_statistics.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/types.hpp"
#include "attn/core/workers.hpp"
#include "attn/detail/causal_kernel.hpp"
#include "attn/detail/check.hpp"

namespace attn {

namespace detail {
template <class T>
class FastForward;
}

/// The MLP's activation, decided when the manifest is read.
enum class Activation {
    gelu_erf,   ///< x · ½ · (1 + erf(x / √2)): PyTorch's nn.GELU()
    gelu_tanh,  ///< the tanh approximation: GPT-2's "gelu_new"
};

/// What manifest.json's "settings" declare. Only what the forward pass implements is accepted.
struct ModelSettings {
    Index layers = 0;
    Index heads = 0;
    Index dimensions = 0;  ///< model width C
    Index head_size = 0;   ///< C / heads
    Index mlp_width = 0;
    Index longest = 0;  ///< context length: the most positions a forward pass takes
    Index vocabulary_size = 0;
    double norm_epsilon = 1e-5;
    double rope_base = 10000.0;
    RopePairing rope_pairing = RopePairing::rotate_half;
    Activation activation = Activation::gelu_erf;
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

struct ForwardOptions {
    bool keep_attention = false;   ///< return every layer's attention weights
    std::vector<HeadId> ablate{};  ///< heads whose output is zeroed before the output projection
    /// Threads for the whole pass: 1 runs on the calling thread; 0 uses one per hardware
    /// thread. Each owns a share of the positions for the whole pass, at least 16
    /// positions each. Results are bit-identical for every thread count.
    int threads = 1;
    /// Threads kept by the caller (attn/core/workers.hpp): if set, the pass runs on them, as
    /// many as workers->size() (at least 16 positions each), and `threads` is not used.
    /// Saves starting and joining threads in every call; the results are the same bits.
    Workers* workers = nullptr;
    /// Keep, per layer, each row's log-sum-exp and the rotated queries and keys: O(layers ×
    /// positions × C), from which attention_rows (model/attention_rows.hpp) gives any heads'
    /// rows of exact weights afterwards.
    bool keep_log_sum_exp = false;
    /// If set, measure every head of every layer in the attention kernel (head_statistics.hpp).
    const HeadStatisticsRequest* statistics = nullptr;
};

/// Model::forward_into's working memory, kept in its ForwardResult between calls: with the
/// same number of positions a repeated call allocates nothing. Its contents are internal.
template <class T>
struct ForwardWorkspace {
    Matrix<T> x, normed, qkv[2], attended, written, hidden;  ///< the pass's (positions × …) buffers
    std::vector<detail::KernelMemory<T>> kernels;            ///< the attention kernel's, one per worker
    std::vector<std::vector<bool>> silenced;                 ///< (layers × heads): ablated heads
    std::vector<Index> markers;                              ///< the statistics' markers, sorted
    std::vector<detail::StatisticsTarget<T>> targets;        ///< per layer, if statistics are asked
};

template <class T>
struct ForwardResult {
    Matrix<T> logits;                           ///< (positions × vocabulary): next-token scores at every position
    ModelAttention<T> attention;                ///< layers × heads × (positions × positions), if kept
    std::vector<Matrix<T>> log_sum_exp;         ///< per layer (heads × positions), if keep_log_sum_exp
    std::vector<Matrix<T>> queries_keys;        ///< per layer (positions × 2C): rotated queries | keys, if kept
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
