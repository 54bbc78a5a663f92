#pragma once
// Model::forward, the fast forward pass. It computes what reference_forward
// (model/reference_forward.hpp) computes, tested equal to it, with fewer copies:
//   - one (C × 3C) product for q, k and v, whose heads the fused attention kernel reads in
//     place and writes side by side into one (n × C) matrix;
//   - layer 0's q, k, v looked up per token: that layer sees only the embeddings, so they
//     depend on the token alone (Model::load computes the table once);
//   - every product on the register-tiled kernel (detail/tiles.hpp), into buffers
//     allocated once per call;
//   - with several threads, each owns a share of the positions through every layer,
//     attention included (causal queries read only earlier keys), and the threads meet
//     once per layer, when every position's keys and values are ready.

#include <Eigen/Core>

#include <algorithm>
#include <vector>

#include "attn/core/activation.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/kv_cache.hpp"
#include "attn/core/norm.hpp"
#include "attn/core/types.hpp"
#include "attn/core/workers.hpp"
#include "attn/detail/causal_kernel.hpp"
#include "attn/detail/parallel.hpp"
#include "attn/detail/tiles.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"

namespace attn {

namespace detail {

/// A share of the positions: rows first … last − 1.
struct Rows {
    Index first = 0;
    Index last = 0;
    Index count() const { return last - first; }
};

/// One forward pass of a Model on the fast path: its working memory and its steps, each on
/// one worker's share of the rows.
template <class T>
class FastForward {
public:
    /// A pass over ids at positions 0 … n − 1, or, with `caches` (one per layer, holding
    /// first_position positions each), over ids at positions first_position … first_position
    /// + n − 1 that attends to the cached ones too and writes its own keys and values into the
    /// caches (after positions first_position …; the caller extends them once the pass is done).
    /// With caches, `logits` may be limited to the last position (last_logits_only).
    FastForward(const Model<T>& model, const std::vector<int>& ids, const ForwardOptions& options,
                ForwardResult<T>& result, std::vector<KeyValueCache<T>>* caches = nullptr, Index first_position = 0,
                bool last_logits_only = false)
        : model_(model),
          settings_(model.settings_),
          ids_(ids),
          n_(static_cast<Index>(ids.size())),
          p0_(first_position),
          caches_(caches),
          first_logit_(last_logits_only ? n_ - 1 : 0),
          silenced_(silenced_heads("Model::forward", settings_, options.ablate)),
          x_(n_, settings_.dimensions),
          normed_(n_, settings_.dimensions),
          qkv_{Matrix<T>(n_, 3 * settings_.dimensions), Matrix<T>(n_, 3 * settings_.dimensions)},
          attended_(n_, settings_.dimensions),
          hidden_(n_, settings_.mlp_width),
          logits_(result.logits),
          log_sum_exp_(result.log_sum_exp),
          queries_keys_(result.queries_keys) {
        logits_.resize(n_ - first_logit_, settings_.vocabulary_size);
        if (options.keep_attention)
            kept_.assign(std::size_t(settings_.layers), AttentionWeights<T>(settings_.heads, n_, p0_ + n_));
        if (options.keep_log_sum_exp) {
            result.log_sum_exp.assign(std::size_t(settings_.layers), Matrix<T>(settings_.heads, n_));
            result.queries_keys.assign(std::size_t(settings_.layers), Matrix<T>(n_, 2 * settings_.dimensions));
        }
        if (options.statistics) {
            markers_ = checked_markers("Model::forward", *options.statistics);
            result.statistics.resize(std::size_t(settings_.layers));
            for (HeadStatistics<T>& layer : result.statistics)
                targets_.push_back(
                    statistics_target(layer, *options.statistics, markers_, settings_.heads, n_, n_, Index(0), true));
        }
    }

    /// The whole pass as worker `worker` of `team`: its positions through every layer, then
    /// its share of the unembedding.
    void run(int worker, Team& team) {
        const Rows mine = share_of_layers(worker, team.size());
        for (std::size_t l = 0; l < std::size_t(settings_.layers); ++l) {
            if (l == 0)
                look_up_first_layer_qkv(mine);
            else
                project_qkv(l, mine);
            store_keys_values(l, mine);
            team.sync();  // every position's keys and values of layer l are ready
            attend(l, mine);
            project_output_and_mlp(l, mine);
        }
        team.sync();  // every position's residual stream is final
        const Index first = first_logit_, count = n_ - first_logit_;
        unembed(Rows{first + count * worker / team.size(), first + count * (worker + 1) / team.size()});
    }

    /// How many workers are worth their start: at least kPositionsPerThread positions each.
    static int useful_workers(Index positions, int available) {
        return static_cast<int>(std::min<Index>(available, std::max<Index>(1, positions / kPositionsPerThread)));
    }

    std::vector<AttentionWeights<T>>& kept_attention() { return kept_; }

private:
    /// Fewest positions per thread: below this, starting a thread costs more than it saves.
    static constexpr Index kPositionsPerThread = 16;
    /// How much more a FLOP of attention costs than a FLOP of the products (short rows of
    /// keys, exponentials, another thread's keys); docs/bench/performance.md has how it was
    /// measured.
    static constexpr double kAttentionCost = 2.0;

    const Matrix<T>& qkv_of(std::size_t l) const { return qkv_[l % 2]; }
    // Layer l's q, k, v alternate between two buffers: a worker projecting layer l + 1 never
    // overwrites keys another worker is still reading in layer l.
    Matrix<T>& qkv_of(std::size_t l) { return qkv_[l % 2]; }

    /// x = the tokens' embeddings, and layer 0's q, k, v looked up in first_layer_qkv_ (what
    /// project_qkv would compute for each token), then rotated.
    void look_up_first_layer_qkv(Rows rows) {
        Matrix<T>& qkv = qkv_of(0);
        for (Index i = rows.first; i < rows.last; ++i) {
            const Index id = ids_[std::size_t(i)];
            x_.row(i) = model_.embedding_.row(id);
            qkv.row(i) = model_.first_layer_qkv_.row(id);
        }
        rotate(qkv, rows);
    }

    /// q, k, v = layer_norm(x) · [Wq Wk Wv] of layer l, queries and keys rotated.
    void project_qkv(std::size_t l, Rows rows) {
        const auto& layer = model_.layers_[l];
        auto normed = normed_.middleRows(rows.first, rows.count());  // (rows × C)
        layer_norm_into(x_.middleRows(rows.first, rows.count()), layer.attention_norm_weight, layer.attention_norm_bias,
                        settings_.norm_epsilon, normed);
        Matrix<T>& qkv = qkv_of(l);
        multiply_rows(normed, model_.query_key_value_[l], qkv.middleRows(rows.first, rows.count()), false);
        rotate(qkv, rows);
    }

    /// Rotary positions for the queries and keys of these rows, in every head.
    void rotate(Matrix<T>& qkv, Rows rows) const {
        const Index c = settings_.dimensions, d = settings_.head_size;
        for (Index h = 0; h < settings_.heads; ++h) {
            model_.rope_.apply(qkv.block(rows.first, h * d, rows.count(), d), p0_ + rows.first);
            model_.rope_.apply(qkv.block(rows.first, c + h * d, rows.count(), d), p0_ + rows.first);
        }
    }

    /// With caches: these rows' keys and values of layer l, copied to their positions in the cache.
    void store_keys_values(std::size_t l, Rows rows) {
        if (!caches_) return;
        const Matrix<T>& qkv = qkv_of(l);
        const Index c = settings_.dimensions, d = settings_.head_size;
        KeyValueCache<T>& cache = (*caches_)[l];
        for (Index h = 0; h < settings_.heads; ++h) {
            cache.key_rows(h).middleRows(p0_ + rows.first, rows.count()) =
                qkv.block(rows.first, c + h * d, rows.count(), d);
            cache.value_rows(h).middleRows(p0_ + rows.first, rows.count()) =
                qkv.block(rows.first, 2 * c + h * d, rows.count(), d);
        }
    }

    /// Layer l's attention in every head for these query rows, which see keys
    /// 0 … rows.last − 1: their rows of attended (silenced heads' columns zero) and, if
    /// kept, their rows of every head's weights.
    void attend(std::size_t l, Rows rows) {
        if (rows.count() == 0) return;
        const Matrix<T>& qkv = qkv_of(l);
        const Index c = settings_.dimensions, d = settings_.head_size;
        const AttentionOptions<T> options;   // causal; queries and keys are already rotated
        const Index keys = p0_ + rows.last;  // what the last of these rows sees
        FusedProblem<T> problem = fused_problem(settings_.heads, rows.count(), keys, d, d, options);
        problem.first_position = p0_ + rows.first;
        problem.first_row = p0_ + rows.first;  // errors name the position, whichever thread finds them
        for (Index h = 0; h < settings_.heads; ++h) {
            const T* queries = qkv.data() + rows.first * 3 * c + h * d;  // row stride 3C
            if (caches_) {
                KeyValueCache<T>& cache = (*caches_)[l];
                problem.inputs.push_back(
                    {{queries, 3 * c}, {cache.key_rows(h).data(), d}, {cache.value_rows(h).data(), d}});
            } else {
                const T* head_keys = qkv.data() + c + h * d;
                problem.inputs.push_back({{queries, 3 * c}, {head_keys, 3 * c}, {head_keys + c, 3 * c}});
            }
        }
        problem.outputs = attended_.data() + rows.first * c;
        problem.output_row_stride = c;
        problem.output_head_stride = d;
        if (!kept_.empty()) {
            const Index columns = p0_ + n_;
            problem.weights = kept_[l].data() + rows.first * columns;
            problem.weights_row_stride = columns;
            problem.weights_head_stride = n_ * columns;
            problem.weights_zeroed = true;  // AttentionWeights start zero-filled
        }
        if (!log_sum_exp_.empty()) {  // this share's rows, for attention_rows afterwards
            problem.log_sum_exp = log_sum_exp_[l].data() + rows.first;
            problem.log_sum_exp_head_stride = n_;
            queries_keys_[l].middleRows(rows.first, rows.count()) = qkv.block(rows.first, 0, rows.count(), 2 * c);
        }
        StatisticsTarget<T> statistics;  // this share's rows of layer l's statistics
        if (!targets_.empty()) {
            statistics = targets_[l];
            for (T*& plane : statistics.planes) plane += rows.first;
            statistics.argmax += rows.first;
            problem.statistics = &statistics;
        }
        fused_attention(problem);
        for (Index h = 0; h < settings_.heads; ++h)
            if (silenced_[l][std::size_t(h)]) attended_.block(rows.first, h * d, rows.count(), d).setZero();
    }

    /// x += attended · Wo, then x += gelu(layer_norm(x) · W1 + b1) · W2 + b2.
    void project_output_and_mlp(std::size_t l, Rows rows) {
        const auto& layer = model_.layers_[l];
        auto x = x_.middleRows(rows.first, rows.count());            // (rows × C)
        auto normed = normed_.middleRows(rows.first, rows.count());  // (rows × C)
        auto hidden = hidden_.middleRows(rows.first, rows.count());  // (rows × mlp width)
        multiply_rows(attended_.middleRows(rows.first, rows.count()), layer.output, x, true);
        layer_norm_into(x, layer.mlp_norm_weight, layer.mlp_norm_bias, settings_.norm_epsilon, normed);
        hidden.rowwise() = layer.up_bias.transpose();
        multiply_rows(normed, layer.up, hidden, true);
        if (settings_.activation == Activation::gelu_tanh)
            gelu_tanh_in_place(hidden);
        else
            gelu_in_place(hidden);
        x.rowwise() += layer.down_bias.transpose();
        multiply_rows(hidden, layer.down, x, true);
    }

    /// logits = layer_norm(x) · Eᵀ, for the positions from first_logit_ on.
    void unembed(Rows rows) {
        auto normed = normed_.middleRows(rows.first, rows.count());
        layer_norm_into(x_.middleRows(rows.first, rows.count()), model_.final_norm_weight_, model_.final_norm_bias_,
                        settings_.norm_epsilon, normed);
        multiply_rows(normed, model_.unembedding_, logits_.middleRows(rows.first - first_logit_, rows.count()), false);
    }

    /// Worker `worker`'s positions in the layers, of `workers`, cut so that the work is
    /// even: every position costs the same in the products, and a later one more in causal
    /// attention (it sees more keys), so earlier shares are a little longer.
    Rows share_of_layers(int worker, int workers) const {
        // FLOPs per position ÷ 2C in the products of the layers (layer 0's q, k, v are looked up)
        const double per_position =
            double(settings_.layers) * double(4 * settings_.dimensions + 2 * settings_.mlp_width) -
            double(3 * settings_.dimensions);
        // attention's FLOPs per visible key (4C per layer) ÷ 2C, weighted by kAttentionCost
        const double per_key = double(settings_.layers) * 2.0 * kAttentionCost;
        const auto cost_before = [&](Index i) {  // positions p0 … p0 + i − 1 see p0 + 1 … p0 + i keys
            return per_position * double(i) + per_key * (double(p0_) * double(i) + double(i) * double(i + 1) / 2);
        };
        const auto boundary = [&](int w) {  // the first position of worker w's share
            if (w <= 0) return Index(0);
            if (w >= workers) return n_;
            const double target = cost_before(n_) * double(w) / double(workers);
            Index i = 0;
            while (i < n_ && cost_before(i + 1) <= target) ++i;
            return i;
        };
        return Rows{boundary(worker), boundary(worker + 1)};
    }

    const Model<T>& model_;
    const ModelSettings& settings_;
    const std::vector<int>& ids_;
    const Index n_;
    const Index p0_;                                 // the position of ids[0]
    std::vector<KeyValueCache<T>>* const caches_;    // per layer, or null (a whole text)
    const Index first_logit_;                        // logits_ row 0's row of x: 0, or n − 1 (last only)
    const std::vector<std::vector<bool>> silenced_;  // (layers × heads): ablated heads
    Matrix<T> x_;                                    // (n × C) the residual stream
    Matrix<T> normed_;                               // (n × C) layer_norm(x)
    Matrix<T> qkv_[2];                               // (n × 3C) queries | keys | values, heads side by side
    Matrix<T> attended_;                             // (n × C) every head's output, side by side
    Matrix<T> hidden_;                               // (n × mlp width)
    Matrix<T>& logits_;                              // (n × vocabulary)
    std::vector<AttentionWeights<T>> kept_;          // per layer, heads × (n × (p0 + n)), if kept
    std::vector<Matrix<T>>& log_sum_exp_;            // per layer (heads × n), if kept
    std::vector<Matrix<T>>& queries_keys_;           // per layer (n × 2C), if kept
    std::vector<Index> markers_;                     // the statistics' markers, sorted
    std::vector<StatisticsTarget<T>> targets_;       // per layer, if statistics are asked
};

}  // namespace detail

template <class T>
ForwardResult<T> Model<T>::forward(const std::vector<int>& ids, const ForwardOptions& options) const {
    detail::check_token_ids("Model::forward", settings_, ids);
    const int available =
        options.workers ? options.workers->size() : detail::resolve_threads("Model::forward", options.threads);
    ForwardResult<T> result;
    detail::FastForward<T> pass(*this, ids, options, result);
    const int workers = detail::FastForward<T>::useful_workers(static_cast<Index>(ids.size()), available);
    detail::run_team(options.workers, workers, [&](int worker, detail::Team& team) { pass.run(worker, team); });
    if (options.keep_attention) result.attention = ModelAttention<T>(std::move(pass.kept_attention()));
    return result;
}

}  // namespace attn
