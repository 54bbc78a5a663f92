#pragma once
// Model::forward, the fast forward pass. It computes what reference_forward
// (model/reference_forward.hpp) computes, tested equal to it, with fewer copies:
//   - one (C × (H + 2 H_kv)·d) product for q, k and v, whose heads the fused attention kernel
//     reads in place (a group of query heads sharing one key/value head) and writes side by
//     side into one (n × H·d) matrix;
//   - with rotary positions, layer 0's q, k, v looked up per token: that layer sees only the
//     embeddings, so they depend on the token alone (Model::load computes the table once);
//   - every product on the register-tiled kernel (detail/kernels/tiles.hpp), into buffers kept in the
//     result (ForwardResult::workspace), so that a repeated call allocates nothing;
//   - with several threads, each owns a share of the positions through every layer,
//     attention included (causal queries read only earlier keys), and the threads meet
//     once per layer, when every position's keys and values are ready;
//   - with several threads and too few positions to share (a decoding step), they share
//     every product's columns and attention's heads instead, and meet between dependent steps.

#include <Eigen/Core>

#include <algorithm>
#include <vector>

#include "attn/core/activation.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/embedding.hpp"
#include "attn/core/kv_cache.hpp"
#include "attn/core/norm.hpp"
#include "attn/core/scoring.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/kernels/causal_kernel.hpp"
#include "attn/detail/kernels/large_arrays.hpp"
#include "attn/detail/kernels/tiles.hpp"
#include "attn/detail/kernels/weight_panels.hpp"
#include "attn/hooks/activations.hpp"
#include "attn/model/types.hpp"
#include "attn/threads.hpp"

namespace attn {

template <class T>
class Model;  // model.hpp, which includes this header: the pass reads a Model's weights

namespace detail {

/// The fast pass's working memory (ForwardWorkspace, held by a ForwardResult between calls).
template <class T>
struct ForwardMemory {
    Matrix<T> x, normed, qkv[2], attended, written, aside, hidden,
        hidden_linear;                         ///< the pass's (positions × …) buffers
    std::vector<Matrix<T>> worker_normed;      ///< (n × C) each: workers 1 … sharing columns, their own norm(x)
    std::vector<KernelMemory<T>> kernels;      ///< the attention kernel's, one per worker
    std::vector<std::vector<bool>> silenced;   ///< (layers × heads): ablated heads
    std::vector<Index> markers;                ///< the statistics' markers, sorted
    std::vector<StatisticsTarget<T>> targets;  ///< per layer, if statistics are asked
};

/// buffer.resize(rows, cols); storage allocated anew is mapped in one system call rather than a
/// page fault per 4 KiB as the workers first write it (populate_pages).
template <class T>
void size_buffer(Matrix<T>& buffer, Index rows, Index cols) {
    const bool anew = buffer.rows() * buffer.cols() != rows * cols;  // else Eigen keeps the storage
    buffer.resize(rows, cols);
    if (anew) populate_pages(buffer.data(), std::size_t(buffer.size()) * sizeof(T));
}

/// Sizes a pass's (n × width) buffers for n positions of a model with settings s (those whose
/// size already fits keep their storage): a pass of n positions does it first, and
/// Decoder::reserve ahead of one.
template <class T>
void size_pass_buffers(ForwardMemory<T>& memory, const ModelSettings& s, Index n) {
    const Index c = s.dimensions;
    for (Matrix<T>* buffer : {&memory.x, &memory.normed, &memory.written}) size_buffer(*buffer, n, c);
    size_buffer(memory.attended, n, s.query_width());
    for (Matrix<T>& buffer : memory.qkv) size_buffer(buffer, n, s.query_key_value_width());
    size_buffer(memory.hidden, n, s.mlp_width);
    size_buffer(memory.hidden_linear, s.any_gated_mlp() ? n : 0, s.mlp_width);
    size_buffer(memory.aside, s.any_parallel_residual() ? n : 0, c);
}

/// A share of the positions: rows first … last − 1.
struct Rows {
    Index first = 0;
    Index last = 0;
    Index count() const { return last - first; }
};

/// A pass that resumes at layer `layer` from its residual stream (n × C) and, if z is
/// given, with that layer's head outputs (n × C) instead of its attention: what an
/// activation-patching run shares with the run it patches is not computed again.
template <class T>
struct Resume {
    Index layer = 0;
    const Matrix<T>* resid_pre = nullptr;
    const Matrix<T>* z = nullptr;
};

/// How a pass with several workers shares its work: as measured to be fastest (the default),
/// or, where the pass allows it, by positions or by columns whatever the model and the text
/// (for the tests: every way gives the same bits).
enum class SplitRule { measured, positions, columns };

/// What a pass does beyond Model::forward over a whole text.
template <class T>
struct PassSetup {
    /// Per layer, holding first_position positions each: the pass is over positions
    /// first_position … first_position + n − 1, attends to the cached ones too and writes its own
    /// keys and values into the caches (the caller extends them once the pass is done).
    std::vector<KeyValueCache<T>>* caches = nullptr;
    Index first_position = 0;
    bool last_logits_only = false;     ///< logits of the last position only
    bool last_attention_only = false;  ///< with keep_attention, the last position's rows only
    Hooks<T>* hooks = nullptr;         ///< activations to keep and change
    const Resume<T>* resume = nullptr;
    SplitRule split = SplitRule::measured;
};

/// One forward pass of a Model on the fast path: its working memory and its steps, each on
/// one worker's share of the rows.
template <class T>
class FastForward {
public:
    FastForward(const Model<T>& model, const std::vector<int>& ids, const ForwardOptions& options,
                ForwardResult<T>& result, const PassSetup<T>& setup = {})
        : model_(model),
          settings_(model.settings_),
          ids_(ids),
          n_(static_cast<Index>(ids.size())),
          p0_(setup.first_position),
          caches_(setup.caches),
          first_logit_(setup.last_logits_only ? n_ - 1 : 0),
          first_kept_row_(setup.last_attention_only ? n_ - 1 : 0),
          hooks_(setup.hooks),
          resume_(setup.resume),
          split_(setup.split),
          first_layer_(resume_ ? std::size_t(resume_->layer) : 0),
          look_up_first_layer_(
              model.first_layer_qkv_.size() != 0 && !resume_ &&
              !(hooks_ && (hooks_->changes({Point::embed, 0}) || hooks_->changes({Point::resid_pre, 0})))),
          memory_(result.workspace.get()),
          silenced_(memory_.silenced),
          x_(memory_.x),
          normed_(memory_.normed),
          qkv_(memory_.qkv),
          attended_(memory_.attended),
          written_(memory_.written),
          aside_(memory_.aside),
          hidden_(memory_.hidden),
          hidden_linear_(memory_.hidden_linear),
          logits_(result.logits),
          kept_(result.attention.layers_),
          kept_windows_(result.attention.windows_),
          log_sum_exp_(result.log_sum_exp),
          queries_keys_(result.queries_keys),
          targets_(memory_.targets) {
        // The result's and the workspace's storage is reused where its shape fits (no
        // allocation), resized where it does not, and what is not asked for is dropped.
        silenced_heads_into("Model::forward", settings_, options.ablate, memory_.silenced);
        const Index layers = settings_.layers;
        size_pass_buffers(memory_, settings_, n_);
        size_buffer(logits_, n_ - first_logit_, settings_.vocabulary_size);
        if (options.keep_attention) {
            const auto fits = [&](const AttentionWeights<T>& layer) {
                return layer.heads() == settings_.heads && layer.rows() == n_ - first_kept_row_ &&
                       layer.cols() == p0_ + n_;
            };
            // Reused weights are not known to be zero (the caller may have written to them).
            weights_zeroed_ = kept_.size() != std::size_t(layers) || !std::all_of(kept_.begin(), kept_.end(), fits);
            if (weights_zeroed_)
                kept_.assign(std::size_t(layers), AttentionWeights<T>(settings_.heads, n_ - first_kept_row_, p0_ + n_));
        } else {
            kept_.clear();
        }
        // The windows travel with the weights (ModelAttention::visible); resized in place, so a
        // reused result allocates nothing.
        const bool windowed = options.keep_attention &&
                              std::any_of(settings_.layer_descriptions.begin(), settings_.layer_descriptions.end(),
                                          [](const auto& layer) { return layer.window > 0; });
        kept_windows_.resize(windowed ? std::size_t(layers) : 0);
        for (std::size_t l = 0; l < kept_windows_.size(); ++l) kept_windows_[l] = settings_.layer(Index(l)).window;
        log_sum_exp_.resize(options.keep_log_sum_exp ? std::size_t(layers) : 0);
        queries_keys_.resize(options.keep_log_sum_exp ? std::size_t(layers) : 0);
        result.bfloat16_attention = model_.bfloat16_attention();
        for (Matrix<T>& layer : log_sum_exp_) layer.resize(settings_.heads, n_);
        for (Matrix<T>& layer : queries_keys_) layer.resize(n_, settings_.query_width() + settings_.key_value_width());
        targets_.clear();
        result.statistics.resize(options.statistics ? std::size_t(layers) : 0);
        if (options.statistics) {
            checked_markers_into("Model::forward", *options.statistics, memory_.markers);
            for (HeadStatistics<T>& layer : result.statistics)
                targets_.push_back(statistics_target(layer, *options.statistics, memory_.markers, settings_.heads, n_,
                                                     n_, Index(0), true,
                                                     settings_.layer(Index(&layer - result.statistics.data())).window));
        }
    }

    /// The whole pass on `kept` threads (or threads started for it, or the caller's alone),
    /// as many as are useful of `available`.
    void run(Workers* kept, int available);  // defined below

private:
    /// How one worker takes part in the pass: by positions (its rows of every product, the
    /// default) or by columns (every row, its columns of every product: a decoding step, or a
    /// large model's short text). The layer step is written once over it.
    struct Share {
        Team* team = nullptr;
        int worker = 0;
        bool by_columns = false;
        Rows mine;                      // its positions: by positions, every step's; by columns, the row-wise steps'
        Rows all;                       // 0 … n: the rows a norm covers when shared by columns
        Matrix<T>* normed;              // its norm(x): normed_, or with columns its own copy
        bool attends_rows = true;       // by columns: attention shared by queries (else by key/value heads)
        bool activates_columns = true;  // by columns: the MLP's activation on its columns (else on its rows)

        /// The rows a row-wise step of every column (a norm) covers for this worker.
        Rows norm_rows() const { return by_columns ? all : mine; }
        /// With columns shared, all workers wait here until every column of the last product is
        /// written (by positions each worker's rows depend on its own work only).
        void meet() const {
            if (by_columns) team->sync();
        }
    };

    /// The whole pass as worker `worker` of `team`: its positions through every layer, then
    /// its share of the unembedding.
    void run(int worker, Team& team) {
        Share share;
        share.team = &team;
        share.worker = worker;
        share.mine = share_of_layers(worker, team.size());
        share.all = Rows{0, n_};
        share.normed = &normed_;
        for (std::size_t l = first_layer_; l < std::size_t(settings_.layers); ++l) layer(l, share);
        team.sync();  // every position's residual stream is final
        const Index first = first_logit_, count = n_ - first_logit_;
        unembed(Rows{first + count * worker / team.size(), first + count * (worker + 1) / team.size()});
    }

    /// The pass as worker `worker` of `team` when the positions are too few to share (a
    /// decoding step): every product's columns are shared instead, and attention's heads. A
    /// step reads every weight once, so each worker streams its share of them. Each worker
    /// normalises every row into its own copy and adds its own columns of what attention and
    /// the MLP write to the residual stream, so the workers meet only where a product needs
    /// another's columns: 5 times a layer. Each entry of every product is the same fused
    /// multiply-add chain as on one thread, so the bits are those of run(worker, team).
    void run_by_columns(int worker, Team& team) {
        const int workers = team.size();
        Share share;
        share.team = &team;
        share.worker = worker;
        share.by_columns = true;
        share.mine = Rows{n_ * worker / workers, n_ * (worker + 1) / workers};
        share.all = Rows{0, n_};
        share.normed = &normed_of(worker);
        // Attention by heads leaves a worker idle when the key/value heads do not share out evenly
        // (SmolLM2: 3 among 2); with positions enough, each worker attends its share of the
        // queries in every head instead, meeting once more (docs/DESIGN.md).
        share.attends_rows = n_ >= kPositionsPerThread * workers;
        // The activation is elementwise, but Eigen's packets and its scalar tail may round it
        // differently: by columns only where each column falls where it falls in a whole row's.
        share.activates_columns = n_ == 1 || settings_.mlp_width % RegisterTile<T>::kLanes == 0;
        for (std::size_t l = 0; l < std::size_t(settings_.layers); ++l) layer(l, share);
        const Index first = first_logit_, count = n_ - first_logit_;
        Matrix<T>& normed = *share.normed;
        final_normalize(Rows{first, n_}, normed);
        const Rows vocabulary = share_of_columns(logits_.cols(), worker, workers);
        multiply_rows(normed.block(first, 0, count, normed.cols()),
                      model_.unembedding_rows().middleCols(vocabulary.first, vocabulary.count()),
                      logits_.middleCols(vocabulary.first, vocabulary.count()), false);
        cap_logits(logits_.middleCols(vocabulary.first, vocabulary.count()));
    }

    /// Layer l as its description says (model/types.hpp), for this worker's share: the one
    /// layer step of every pass. Hooks see it only by positions (splits_columns refuses them).
    void layer(std::size_t l, const Share& share) {
        const LayerDescription& describe = settings_.layer(Index(l));
        const auto& weights_l = model_.layers_[l];
        const auto weights = model_.weights_of(l);
        const Rows mine = share.mine;
        Matrix<T>& qkv = qkv_of(l);
        if (l == first_layer_) enter(l, mine);
        if (l == first_layer_ && resume_ && resume_->z) {
            take_head_outputs(l, mine);  // a resumed layer's head outputs, given: attention is not run again
        } else {
            // q, k, v = norm(x) · [Wq Wk Wv] (+ b), or looked up per token in layer 0
            if (l != first_layer_) hook(Point::resid_pre, l, mine, x_.middleRows(mine.first, mine.count()));
            if (describe.input_norms) hook_scale(Point::ln1_scale, l, mine, x_);
            if (l == 0 && look_up_first_layer_) {
                for (Index i = mine.first; i < mine.last; ++i)
                    qkv.row(i) = model_.first_layer_qkv_.row(ids_[std::size_t(i)]);
            } else {
                if (share.by_columns && l == 0) share.team->sync();  // every position's embedding is in x
                const Matrix<T>& input =
                    normalized(describe, share, weights_l.attention_norm_weight, weights_l.attention_norm_bias);
                project(share, input, weights.query_key_value, weights_l.query_key_value_bias, qkv);
            }
            share.meet();  // every column of q, k and v is ready
            hook(Point::q, l, mine, queries_of(qkv, mine));
            hook(Point::k, l, mine, keys_of(qkv, mine));
            hook(Point::v, l, mine, values_of(qkv, mine));
            if (describe.query_key_norm != QueryKeyNorm::none) {
                normalize_queries_keys(l, qkv, mine);
                share.meet();  // every row's queries and keys are normalised
            }
            attention(l, share);
        }

        // attention's output, normalised if the layer says so, into x (or set aside: parallel)
        const bool parallel = describe.residual == Residual::parallel;
        Matrix<T>& attention_out = parallel ? aside_ : written_;
        share.meet();  // every head's output is ready
        project(share, attended_, weights.output, weights_l.output_bias, attention_out);
        // hook_attn_out: before a norm after the block (OLMo-2), after it where there are norms
        // both sides (Gemma), as TransformerLens places it: what each block adds to x, there
        const bool around = describe.norms_around_blocks();
        if (!around) hook(Point::attn_out, l, mine, attention_out.middleRows(mine.first, mine.count()));
        if (describe.output_norms)
            hook_scale(around ? Point::ln1_post_scale : Point::ln1_scale, l, mine, attention_out);
        Matrix<T>& attention_added = block_output(describe, share, weights_l.attention_output_norm, attention_out);
        if (around) hook(Point::attn_out, l, mine, attention_added.middleRows(mine.first, mine.count()));
        if (!parallel) {
            add_to_x(share, attention_added);
            hook(Point::resid_mid, l, mine, x_.middleRows(mine.first, mine.count()));
            share.meet();  // every column of x after attention is ready
        }

        // the MLP, on x after attention (or on the layer's x: parallel)
        if (describe.input_norms) hook_scale(Point::ln2_scale, l, mine, x_);
        const Matrix<T>& input = normalized(describe, share, weights_l.mlp_norm_weight, weights_l.mlp_norm_bias);
        if (describe.gated_mlp) {  // down(act(x · W_gate + b) ⊙ (x · W_up + b))
            project(share, input, weights.gate, weights_l.gate_bias, hidden_);
            hook(Point::mlp_pre, l, mine, hidden_.middleRows(mine.first, mine.count()));
            project(share, input, weights.up, weights_l.up_bias, hidden_linear_);
            hook(Point::mlp_pre_linear, l, mine, hidden_linear_.middleRows(mine.first, mine.count()));
        } else {  // down(act(x · W_up + b))
            project(share, input, weights.up, weights_l.up_bias, hidden_);
            hook(Point::mlp_pre, l, mine, hidden_.middleRows(mine.first, mine.count()));
        }
        activate_mlp(describe, share);
        hook(Point::mlp_post, l, mine, hidden_.middleRows(mine.first, mine.count()));
        share.meet();  // every column of the MLP's hidden rows is ready
        project(share, hidden_, weights.down, weights_l.down_bias, written_);
        if (!around) hook(Point::mlp_out, l, mine, written_.middleRows(mine.first, mine.count()));
        if (describe.output_norms) hook_scale(around ? Point::ln2_post_scale : Point::ln2_scale, l, mine, written_);
        Matrix<T>& mlp_added = block_output(describe, share, weights_l.mlp_output_norm, written_);
        if (around) hook(Point::mlp_out, l, mine, mlp_added.middleRows(mine.first, mine.count()));
        if (parallel) add_to_x(share, aside_);
        add_to_x(share, mlp_added);
        hook(Point::resid_post, l, mine, x_.middleRows(mine.first, mine.count()));
        share.meet();  // every column of x after the layer is ready
    }

    /// A block's input: norm(x) of the share's rows in the worker's buffer, or x itself for a
    /// layer without input norms (OLMo-2).
    const Matrix<T>& normalized(const LayerDescription& describe, const Share& share, const Vector<T>& weight,
                                const Vector<T>& bias) {
        if (!describe.input_norms) return x_;
        normalize(describe, x_, share.norm_rows(), weight, bias, *share.normed);
        return *share.normed;
    }

    /// A block's output as it is added to x: as projected, or normalised by `weight` where the
    /// layer norms its blocks' outputs (OLMo-2). By columns the norm needs whole rows: after a
    /// meeting, each worker normalises every row into its own buffer.
    Matrix<T>& block_output(const LayerDescription& describe, const Share& share, const Vector<T>& weight,
                            Matrix<T>& out) {
        if (!describe.output_norms) return out;
        share.meet();  // every column of the block's output is ready
        normalize(describe, out, share.norm_rows(), weight, Vector<T>(), *share.normed);
        return *share.normed;
    }

    /// x += added: the worker's rows, or its columns.
    void add_to_x(const Share& share, const Matrix<T>& added) {
        if (share.by_columns) {
            const Rows width = share_of_columns(settings_.dimensions, share.worker, share.team->size());
            x_.middleCols(width.first, width.count()) += added.middleCols(width.first, width.count());
        } else {
            x_.middleRows(share.mine.first, share.mine.count()) +=
                added.middleRows(share.mine.first, share.mine.count());
        }
    }

    /// out = a · w (+ bias): the worker's rows of every column, or every row of its columns.
    template <class A>
    void project(const Share& share, const A& a, const WeightRows<T>& w, const Vector<T>& bias, Matrix<T>& out) {
        if (share.by_columns) {
            project_columns(a, w, bias, out, share_of_columns(out.cols(), share.worker, share.team->size()));
        } else {
            const Rows rows = share.mine;
            project_rows(a.middleRows(rows.first, rows.count()), w, bias, out.middleRows(rows.first, rows.count()));
        }
    }

    /// The MLP's activation in place (times the linear half if gated): on the worker's rows, or
    /// its columns where that rounds as whole rows do (else on its rows, after a meeting).
    void activate_mlp(const LayerDescription& describe, const Share& share) {
        const bool gated = describe.gated_mlp;  // else hidden_linear_ may be empty: a block of nothing at 0
        if (share.by_columns && share.activates_columns) {
            const Rows columns = share_of_columns(hidden_.cols(), share.worker, share.team->size());
            activate_mlp(describe, hidden_.middleCols(columns.first, columns.count()),
                         hidden_linear_.middleCols(gated ? columns.first : 0, gated ? columns.count() : 0));
            return;
        }
        share.meet();  // by columns: every column of the hidden rows is ready: activated a row at a time
        const Rows rows = share.mine;
        activate_mlp(describe, hidden_.middleRows(rows.first, rows.count()),
                     hidden_linear_.middleRows(gated ? rows.first : 0, gated ? rows.count() : 0));
    }

    /// Rotary positions, the keys and values into the caches, and causal attention in every
    /// head, for the worker's share: by positions, its queries (after every worker's keys are
    /// ready); by columns, its queries in every head, or its key/value heads' every query.
    void attention(std::size_t l, const Share& share) {
        KernelMemory<T>& memory = memory_.kernels[std::size_t(share.worker)];
        const Index kv_heads = settings_.key_value_heads, group = settings_.heads / kv_heads;
        Matrix<T>& qkv = qkv_of(l);
        if (!share.by_columns) {
            rotate_heads(l, qkv, share.mine, 0, kv_heads);
            hook(Point::rot_q, l, share.mine, queries_of(qkv, share.mine));
            hook(Point::rot_k, l, share.mine, keys_of(qkv, share.mine));
            // an intervention's numbers rounded as the rotated ones were: every path of the kernel
            // then reads the same keys, and the caches hold bfloat16 numbers
            if (hooks_ && (hooks_->changes({Point::rot_q, Index(l)}) || hooks_->changes({Point::rot_k, Index(l)})))
                round_heads(qkv, share.mine, 0, kv_heads);
            store_keys_values(l, share.mine);
            share.team->sync();  // every position's keys and values of layer l are ready
            attend(l, share.mine, memory);
        } else if (share.attends_rows) {  // every head, this worker's queries; they see the others' keys
            const Rows queries = share_of_attention(share.worker, share.team->size());
            rotate_heads(l, qkv, queries, 0, kv_heads);
            store_keys_values(l, queries);
            share.team->sync();  // every position's keys are rotated (and in the cache)
            attend_heads(l, queries, memory, 0, settings_.heads);
        } else {  // this worker's key/value heads and their query heads, every position: it alone reads them
            const int workers = share.team->size();
            const Index first = kv_heads * share.worker / workers, last = kv_heads * (share.worker + 1) / workers;
            rotate_heads(l, qkv, share.all, first, last);
            store_keys_values(l, share.all, first, last);
            attend_heads(l, share.all, memory, first * group, last * group);
        }
    }

    /// The final norm of these rows of x into the same rows of `out`.
    void final_normalize(Rows rows, Matrix<T>& out) {
        normalize(settings_.final_norm, settings_.final_norm_epsilon, x_, rows, model_.final_norm_weight_,
                  model_.final_norm_bias_, out);
    }

    /// Worker `worker`'s copy of norm(x) when the workers share columns: each reads all of it.
    Matrix<T>& normed_of(int worker) { return worker == 0 ? normed_ : memory_.worker_normed[std::size_t(worker - 1)]; }

    /// Whether run_by_columns runs the pass: several workers, nothing asked that needs the
    /// layers' steps one at a time (hooks, a resumed pass) or a worker's whole positions in
    /// attention (statistics, log-sum-exps), and either too few positions to share (with kept
    /// workers, or weights enough to pay for starting threads) or a large model's short text:
    /// shared by positions, every worker would pack the same blocks of every weight matrix for
    /// its few rows, and the weights come from memory.
    bool splits_columns(int available, bool kept) const {
        const ModelSettings& s = settings_;
        const double weights =
            double(s.dimensions) * layer_products(s) + double(s.vocabulary_size) * double(s.dimensions);
        const bool large = weights >= kColumnSplitWeights;
        const bool too_few = useful_workers(n_, available) == 1;
        const bool measured = (too_few && (kept || large)) || (large && n_ <= kColumnSplitPositions);
        return available > 1 && (split_ == SplitRule::columns || (split_ == SplitRule::measured && measured)) &&
               !hooks_ && !resume_ && targets_.empty() && log_sum_exp_.empty();
    }

    /// The columns of every layer's products together (FLOPs per position ÷ 2C).
    static double layer_products(const ModelSettings& s) {
        double columns = 0;
        for (const LayerDescription& layer : s.layer_descriptions)
            columns += double(s.query_key_value_width() + s.query_width()) +
                       (layer.gated_mlp ? 3.0 : 2.0) * double(s.mlp_width);
        return columns;
    }

    /// Fewest weights a pass reads for threads to be started only to share its columns: starting
    /// one, and every layer's meetings (5 a layer), cost more than a small model's step (the store model's
    /// 1 M weights lose by it, GPT-2 small's 124 M gain; docs/DESIGN.md has the measurements).
    static constexpr double kColumnSplitWeights = double(1 << 22);

    /// Most positions a large model's pass shares by columns rather than by positions
    /// (docs/DESIGN.md: GPT-2 small and SmolLM2-135M prefill, 64 … 512 positions on 2 threads).
    static constexpr Index kColumnSplitPositions = 192;

    /// Worker `worker`'s columns of `count`, of `workers`: whole packets, so that every column
    /// is summed by the same code (packets, then the scalar tail) whatever the share.
    static Rows share_of_columns(Index count, int worker, int workers) {
        constexpr Index lanes = RegisterTile<T>::kLanes;
        const Index packets = (count + lanes - 1) / lanes;
        const auto boundary = [&](int w) { return std::min(count, packets * w / workers * lanes); };
        return Rows{boundary(worker), boundary(worker + 1)};
    }

    /// These columns of out (n × cols) = a · w (+ bias): a (n × depth), w (depth × cols).
    template <class A>
    static void project_columns(const A& a, const WeightRows<T>& w, const Vector<T>& bias, Matrix<T>& out,
                                Rows columns) {
        if (columns.count() == 0) return;
        const auto bias_columns =
            bias.segment(bias.size() != 0 ? columns.first : 0, bias.size() != 0 ? columns.count() : 0);
        project_rows(a, w.middleCols(columns.first, columns.count()), bias_columns,
                     out.middleCols(columns.first, columns.count()));
    }

    /// How many workers are worth their start: at least kPositionsPerThread positions each.
    static int useful_workers(Index positions, int available) {
        return static_cast<int>(std::min<Index>(available, std::max<Index>(1, positions / kPositionsPerThread)));
    }

    /// Fewest positions per thread: below this, starting a thread costs more than it saves.
    static constexpr Index kPositionsPerThread = 16;
    /// How much more a FLOP of attention costs than a FLOP of the products (short rows of
    /// keys, exponentials, another thread's keys); docs/DESIGN.md has how it was measured.
    static constexpr double kAttentionCost = 2.0;

    const Matrix<T>& qkv_of(std::size_t l) const { return qkv_[l % 2]; }
    // Layer l's q, k, v alternate between two buffers: a worker projecting layer l + 1 never
    // overwrites keys another worker is still reading in layer l.
    Matrix<T>& qkv_of(std::size_t l) { return qkv_[l % 2]; }

    /// Hands these rows of activation (point, l) to the hooks, if they want it.
    template <class Block>
    void hook(Point point, std::size_t l, Rows rows, Block&& block) {
        if (hooks_ && rows.count() > 0 && hooks_->wants({point, Index(l)}))
            hooks_->at({point, Index(l)}, rows.first, block);
    }

    /// A norm's divisor of these rows of `of` (x, or a block's output), for the hooks that keep
    /// it: LayerNorm's √(variance + ε), RMSNorm's √(mean(x²) + ε); layer l's norm, or the final
    /// one; with `groups` > 1, one divisor per group of columns (q/k norms per head).
    template <class Of>
    void hook_scale(Point point, std::size_t l, Rows rows, const Of& of, Index groups = 1) {
        if (!hooks_ || rows.count() == 0 || !hooks_->keeps({point, Index(l)})) return;
        const bool final = point == Point::final_scale;
        const Norm norm = final ? settings_.final_norm : settings_.layer(Index(l)).norm;
        const double epsilon = final ? settings_.final_norm_epsilon : settings_.layer(Index(l)).norm_epsilon;
        const Index width = of.cols() / groups;
        Matrix<T> scale(rows.count(), groups);  // (rows × groups)
        for (Index i = 0; i < rows.count(); ++i)
            for (Index g = 0; g < groups; ++g) {
                const auto row = of.row(rows.first + i).segment(g * width, width).array();
                scale(i, g) =
                    norm == Norm::rms_norm ? root_mean_square(row, epsilon) : mean_and_scale(row, epsilon).second;
            }
        hooks_->at({point, Index(l)}, rows.first, scale);
    }

    /// A norm (weight, bias) of these rows of `in` into the same rows of `out` (n × C).
    static void normalize(Norm norm, double epsilon, const Matrix<T>& in, Rows rows, const Vector<T>& weight,
                          const Vector<T>& bias, Matrix<T>& out) {
        const auto x = in.middleRows(rows.first, rows.count());
        auto normed = out.middleRows(rows.first, rows.count());
        if (norm == Norm::rms_norm)
            rms_norm_into(x, weight, epsilon, normed);
        else
            layer_norm_into(x, weight, bias, epsilon, normed);
    }
    /// Layer `describe`'s norm.
    static void normalize(const LayerDescription& describe, const Matrix<T>& in, Rows rows, const Vector<T>& weight,
                          const Vector<T>& bias, Matrix<T>& out) {
        normalize(describe.norm, describe.norm_epsilon, in, rows, weight, bias, out);
    }

    /// out = a · w, plus the bias on every row if there is one (bias: w.cols() entries, or none).
    template <class A, class W, class Bias, class Out>
    static void project_rows(const A& a, const W& w, const Bias& bias, Out&& out) {
        if (bias.size() != 0) out.rowwise() = bias.transpose();
        multiply_rows(a, w, out, bias.size() != 0);
    }

    /// x at the first layer: the tokens' embeddings (and their positions', if learned), or
    /// the resumed pass's residual stream.
    void enter(std::size_t l, Rows rows) {
        auto x = x_.middleRows(rows.first, rows.count());  // (rows × C)
        if (resume_) {
            x = resume_->resid_pre->middleRows(rows.first, rows.count());
        } else {
            for (Index i = rows.first; i < rows.last; ++i) model_.embed_into(ids_[std::size_t(i)], x_.row(i));
            hook(Point::embed, 0, rows, x);
            if (settings_.position_encoding == PositionEncoding::learned) {
                auto positions = written_.middleRows(rows.first, rows.count());  // (rows × C)
                positions = model_.position_embedding_.middleRows(p0_ + rows.first, rows.count());
                hook(Point::pos_embed, 0, rows, positions);
                x += positions;
            }
        }
        hook(Point::resid_pre, l, rows, x);
    }

    /// A resumed layer's head outputs, given: attention is not run again.
    void take_head_outputs(std::size_t l, Rows rows) {
        if (settings_.layer(Index(l)).input_norms) hook_scale(Point::ln1_scale, l, rows, x_);
        attended_.middleRows(rows.first, rows.count()) = resume_->z->middleRows(rows.first, rows.count());
        hook(Point::z, l, rows, attended_.middleRows(rows.first, rows.count()));
        hook_results(l, rows);
    }

    /// These rows' queries (H·d columns of qkv from 0), keys and values (H_kv·d each after them).
    auto queries_of(Matrix<T>& qkv, Rows rows) const {
        return qkv.block(rows.first, 0, rows.count(), settings_.query_width());
    }
    auto keys_of(Matrix<T>& qkv, Rows rows) const {
        return qkv.block(rows.first, settings_.query_width(), rows.count(), settings_.key_value_width());
    }
    auto values_of(Matrix<T>& qkv, Rows rows) const {
        return qkv.block(rows.first, settings_.query_width() + settings_.key_value_width(), rows.count(),
                         settings_.key_value_width());
    }

    /// RMSNorm of these rows' queries and keys in place, over each head or over all of them,
    /// as layer l's description says (Qwen3, OLMo-2).
    void normalize_queries_keys(std::size_t l, Matrix<T>& qkv, Rows rows) {
        if (rows.count() == 0) return;
        const LayerDescription& describe = settings_.layer(Index(l));
        const auto& layer = model_.layers_[l];
        const double epsilon = describe.norm_epsilon;
        auto queries = queries_of(qkv, rows);
        auto keys = keys_of(qkv, rows);
        const bool per_head = describe.query_key_norm == QueryKeyNorm::per_head;
        const auto all_rows = [&](auto block) { return qkv.middleCols(block.startCol(), block.cols()); };
        hook_scale(Point::q_norm_scale, l, rows, all_rows(queries), per_head ? settings_.heads : 1);
        hook_scale(Point::k_norm_scale, l, rows, all_rows(keys), per_head ? settings_.key_value_heads : 1);
        if (!per_head) {
            rms_norm_into(queries, layer.query_norm, epsilon, queries);
            rms_norm_into(keys, layer.key_norm, epsilon, keys);
            return;
        }
        const Index d = settings_.head_size;
        for (Index h = 0; h < settings_.heads; ++h)
            rms_norm_into(queries.middleCols(h * d, d), layer.query_norm, epsilon, queries.middleCols(h * d, d));
        for (Index g = 0; g < settings_.key_value_heads; ++g)
            rms_norm_into(keys.middleCols(g * d, d), layer.key_norm, epsilon, keys.middleCols(g * d, d));
    }

    /// Layer l's rotary positions in the query heads of key/value heads first_group …
    /// last_group − 1 and in those key heads, for these rows (nothing if the layer rotates nothing);
    /// then, with bfloat16 attention, those queries, keys and values rounded to bfloat16: the
    /// attention's products read them so (FusedProblem::bfloat16), and the caches keep them so.
    void rotate_heads(std::size_t l, Matrix<T>& qkv, Rows rows, Index first_group, Index last_group) {
        if (rows.count() == 0) return;
        const Index d = settings_.head_size, group = settings_.heads / settings_.key_value_heads;
        if (settings_.layer(Index(l)).rotates()) {
            const Rope<T>& rope = model_.rope(Index(l));
            auto queries = queries_of(qkv, rows);
            auto keys = keys_of(qkv, rows);
            for (Index h = first_group * group; h < last_group * group; ++h)
                rope.apply(queries.middleCols(h * d, d), p0_ + rows.first);
            for (Index g = first_group; g < last_group; ++g) rope.apply(keys.middleCols(g * d, d), p0_ + rows.first);
        }
        round_heads(qkv, rows, first_group, last_group);
    }

    /// With bfloat16 attention, these rows' queries, keys and values of key/value heads
    /// first_group … last_group − 1 (and their query heads) rounded to bfloat16, in place: the
    /// numbers the caches keep and the kernel multiplies (FusedProblem::bfloat16).
    void round_heads(Matrix<T>& qkv, Rows rows, Index first_group, Index last_group) {
        if (!model_.bfloat16_attention()) return;
        const Index d = settings_.head_size, group = settings_.heads / settings_.key_value_heads;
        const Index query_width = settings_.query_width(), key_value_width = settings_.key_value_width();
        for (Index r = rows.first; r < rows.last; ++r) {  // the row's three runs of these heads
            T* row = &qkv(r, 0);
            kernel::round_to_bfloat16(row + first_group * group * d, (last_group - first_group) * group * d);
            for (T* heads : {row + query_width, row + query_width + key_value_width})
                kernel::round_to_bfloat16(heads + first_group * d, (last_group - first_group) * d);
        }
    }

    /// With caches: these rows' keys and values of layer l, copied to their positions in the cache.
    void store_keys_values(std::size_t l, Rows rows) { store_keys_values(l, rows, 0, settings_.key_value_heads); }

    /// store_keys_values for key/value heads first_group … last_group − 1 only.
    void store_keys_values(std::size_t l, Rows rows, Index first_group, Index last_group) {
        if (!caches_) return;
        Matrix<T>& qkv = qkv_of(l);
        const Index d = settings_.head_size;
        KeyValueCache<T>& cache = (*caches_)[l];
        const auto keys = keys_of(qkv, rows);
        const auto values = values_of(qkv, rows);
        const Index row = p0_ + rows.first - cache.origin();  // a sliding layer's storage starts past 0
        for (Index g = first_group; g < last_group; ++g) {
            cache.key_rows(g).middleRows(row, rows.count()) = keys.middleCols(g * d, d);
            cache.value_rows(g).middleRows(row, rows.count()) = values.middleCols(g * d, d);
        }
    }

    /// Layer l's attention in every head for these query rows, which see keys
    /// 0 … rows.last − 1: their rows of attended (silenced heads' columns zero) and, if
    /// kept, their rows of every head's weights. `memory`: the kernel's, this worker's own.
    void attend(std::size_t l, Rows rows, KernelMemory<T>& memory) {
        if (rows.count() == 0) return;
        attend_heads(l, rows, memory, 0, settings_.heads);
        hook(Point::z, l, rows, attended_.middleRows(rows.first, rows.count()));
        hook_results(l, rows);
    }

    /// attend's work for query heads first_head … last_head − 1 only, whole groups of query
    /// heads sharing a key/value head, and without the hooks, which want every head's output.
    void attend_heads(std::size_t l, Rows rows, KernelMemory<T>& memory, Index first_head, Index last_head) {
        if (rows.count() == 0 || first_head == last_head) return;
        // Rows whose weights are not kept take the streaming kernel, which keeps none; with the
        // last position's rows only, that position runs alone on the path that keeps them.
        const bool keeps = !kept_.empty() && rows.last > first_kept_row_;
        if (keeps && rows.first < first_kept_row_) {
            attend_rows(l, Rows{rows.first, first_kept_row_}, memory, first_head, last_head, false);
            attend_rows(l, Rows{first_kept_row_, rows.last}, memory, first_head, last_head, true);
        } else {
            attend_rows(l, rows, memory, first_head, last_head, keeps);
        }
    }

    /// attend_heads for rows that all keep their weights (keeps) or none do.
    void attend_rows(std::size_t l, Rows rows, KernelMemory<T>& memory, Index first_head, Index last_head, bool keeps) {
        const Matrix<T>& qkv = qkv_of(l);
        const Index d = settings_.head_size, width = settings_.query_key_value_width();
        const Index query_width = settings_.query_width(), key_value_width = settings_.key_value_width();
        const Index group = settings_.heads / settings_.key_value_heads;
        AttentionOptions<T> options;  // causal; queries and keys are already rotated
        options.scale = T(settings_.score_scale(Index(l)));
        options.window = settings_.layer(Index(l)).window;
        options.score_cap = T(settings_.layer(Index(l)).score_cap);
        // A sliding layer's cache holds positions from its origin on: the kernel numbers keys from
        // there, and the query positions with them (its masks depend on their differences only).
        const Index origin = caches_ ? (*caches_)[l].origin() : 0;
        const Index keys = p0_ + rows.last;  // what the last of these rows sees
        FusedProblem<T> problem = fused_problem(last_head - first_head, rows.count(), keys - origin, d, d, options);
        problem.key_value_heads = (last_head - first_head) / group;
        problem.first_position = p0_ + rows.first - origin;
        problem.first_row = p0_ + rows.first;  // errors name the position and head, whichever thread finds them
        problem.first_head = first_head;
        problem.memory = &memory;
        problem.bfloat16 = model_.bfloat16_attention();  // rotate_heads rounded the keys and values
        // A decoding step's one query is scored along d, keys across a packet's lanes
        // (FusedProblem::few_queries), rather than alone in a packet of query lanes. Only for a
        // pass of one position: that route's bits depend on how many rows it takes together, and
        // a text's rows must give the same bits however they are appended or shared out.
        problem.few_queries = n_ == 1;
        problem.weights_when_decoding = true;  // a step's kept rows: not the exact path's key panels
        const LentInputs<T> lent(problem.inputs, &memory.inputs);
        for (Index h = first_head; h < last_head; ++h) {
            const T* queries = qkv.data() + rows.first * width + h * d;  // row stride (H + 2 H_kv)·d
            const Index g = h / group;                                   // its key/value head
            if (caches_) {
                KeyValueCache<T>& cache = (*caches_)[l];
                problem.inputs.push_back(
                    {{queries, width}, {cache.key_rows(g).data(), d}, {cache.value_rows(g).data(), d}});
            } else {
                const T* head_keys = qkv.data() + query_width + g * d;
                problem.inputs.push_back({{queries, width}, {head_keys, width}, {head_keys + key_value_width, width}});
            }
        }
        problem.outputs = attended_.data() + rows.first * query_width + first_head * d;
        problem.output_row_stride = query_width;
        problem.output_head_stride = d;
        if (keeps) {
            const Index columns = p0_ + n_, row = rows.first - first_kept_row_;  // its row of the kept ones
            problem.weights = kept_[l].head(first_head).data() + row * columns + origin;
            problem.weights_row_stride = columns;
            problem.weights_head_stride = (n_ - first_kept_row_) * columns;
            problem.weights_zeroed = weights_zeroed_;
            // The kernel writes these rows from the cache's origin up to the keys they see; reused
            // storage outside may hold anything (the caller's), and masked weights are exact zeros.
            if (!weights_zeroed_)
                for (Index h = first_head; h < last_head; ++h) {
                    kept_[l].head(h).block(row, keys, rows.count(), columns - keys).setZero();
                    kept_[l].head(h).block(row, 0, rows.count(), origin).setZero();
                }
        }
        if (!log_sum_exp_.empty()) {  // this share's rows, for attention_rows afterwards
            eigen_assert(first_head == 0 && last_head == settings_.heads);
            problem.log_sum_exp = log_sum_exp_[l].data() + rows.first;
            problem.log_sum_exp_head_stride = n_;
            queries_keys_[l].middleRows(rows.first, rows.count()) =
                qkv.block(rows.first, 0, rows.count(), query_width + key_value_width);
        }
        StatisticsTarget<T> statistics;  // this share's rows of layer l's statistics
        if (!targets_.empty()) {
            eigen_assert(first_head == 0 && last_head == settings_.heads);
            statistics = targets_[l];
            for (T*& plane : statistics.planes) plane += rows.first;
            statistics.argmax += rows.first;
            problem.statistics = &statistics;
        }
        fused_attention(problem);
        for (Index h = first_head; h < last_head; ++h)
            if (silenced_[l][std::size_t(h)]) attended_.block(rows.first, h * d, rows.count(), d).setZero();
    }

    /// What each head writes into the residual stream, z_h · Wo_h, for the hooks that keep it.
    void hook_results(std::size_t l, Rows rows) {
        if (!hooks_ || rows.count() == 0 || !hooks_->keeps({Point::result, Index(l)})) return;
        const Index c = settings_.dimensions, d = settings_.head_size;
        Matrix<T> results(rows.count(), settings_.heads * c);  // (rows × H·C)
        for (Index h = 0; h < settings_.heads; ++h)
            multiply_rows(attended_.block(rows.first, h * d, rows.count(), d),
                          model_.weights_of(l).output.middleRows(h * d, d), results.middleCols(h * c, c), false);
        hooks_->at({Point::result, Index(l)}, rows.first, results);
    }

    /// The MLP's activation of a block of its hidden rows, in place, times the same block of
    /// the linear ones if the MLP is gated (else `linear` is empty).
    template <class Hidden, class Linear>
    static void activate_mlp(const LayerDescription& describe, Hidden hidden, const Linear& linear) {
        switch (describe.activation) {
            case MlpActivation::gelu_tanh:
                gelu_tanh_in_place(hidden);
                break;
            case MlpActivation::gelu_erf:
                gelu_in_place(hidden);
                break;
            case MlpActivation::silu:
                silu_in_place(hidden);
                break;
        }
        if (describe.gated_mlp) hidden.array() *= linear.array();
    }

    /// logits = norm(x) · U, for the positions from first_logit_ on.
    void unembed(Rows rows) {
        hook_scale(Point::final_scale, 0, rows, x_);
        final_normalize(rows, normed_);
        multiply_rows(normed_.middleRows(rows.first, rows.count()), model_.unembedding_rows(),
                      logits_.middleRows(rows.first - first_logit_, rows.count()), false);
        cap_logits(logits_.middleRows(rows.first - first_logit_, rows.count()));
    }

    /// The final soft cap (Gemma 2), cap · tanh(logit / cap), on a block of the logits, if the model has one.
    template <class Block>
    void cap_logits(Block&& logits) const {
        if (settings_.logit_cap > 0.0) soft_cap_in_place(logits, T(settings_.logit_cap));
    }

    /// Worker `worker`'s positions in the layers, of `workers`, cut so that the work is
    /// even: every position costs the same in the products, and a later one more in causal
    /// attention (it sees more keys), so earlier shares are a little longer.
    Rows share_of_layers(int worker, int workers) const {
        // FLOPs per position ÷ 2C in the products of the layers (layer 0's q, k, v may be looked up)
        const ModelSettings& s = settings_;
        const double per_position =
            layer_products(s) - (look_up_first_layer_ ? double(s.query_key_value_width()) : 0.0);
        // attention's FLOPs per visible key (4·H·d per layer) ÷ 2C, weighted by kAttentionCost
        const double per_key = double(s.layers) * 2.0 * double(s.query_width()) / double(s.dimensions) * kAttentionCost;
        return share_by_cost(worker, workers,
                             [&](Index i) { return per_position * double(i) + per_key * keys_seen_by(i); });
    }

    /// Worker `worker`'s queries in attention alone, of `workers`: a position sees one key more
    /// than the one before it, so earlier shares are longer.
    Rows share_of_attention(int worker, int workers) const {
        return share_by_cost(worker, workers, [&](Index i) { return keys_seen_by(i); });
    }

    /// The keys positions p0 … p0 + i − 1 see between them: p0 + 1 … p0 + i.
    double keys_seen_by(Index i) const { return double(p0_) * double(i) + double(i) * double(i + 1) / 2; }

    /// Worker `worker`'s share of the positions, of `workers`: cut where cost_before(i), the
    /// cost of the first i positions (increasing in i), reaches the worker's part of the whole's.
    template <class Cost>
    Rows share_by_cost(int worker, int workers, const Cost& cost_before) const {
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
    const Index p0_;                                  // the position of ids[0]
    std::vector<KeyValueCache<T>>* const caches_;     // per layer, or null (a whole text)
    const Index first_logit_;                         // logits_ row 0's row of x: 0, or n − 1 (last only)
    const Index first_kept_row_;                      // kept_ row 0's row of x: 0, or n − 1 (last only)
    Hooks<T>* const hooks_;                           // activations kept and changed, or null
    const Resume<T>* const resume_;                   // where a resumed pass starts, or null
    const SplitRule split_;                           // how several workers share the pass
    const std::size_t first_layer_;                   // the first layer the pass runs
    const bool look_up_first_layer_;                  // layer 0's q, k, v by token (its input is unchanged)
    ForwardMemory<T>& memory_;                        // the result's: the buffers below, kernels' memory
    const std::vector<std::vector<bool>>& silenced_;  // (layers × heads): ablated heads
    Matrix<T>& x_;                                    // (n × C) the residual stream
    Matrix<T>& normed_;                               // (n × C) layer_norm(x)
    Matrix<T> (&qkv_)[2];                             // (n × (H + 2 H_kv)·d) queries | keys | values
    Matrix<T>& attended_;                             // (n × H·d) every head's output, side by side
    Matrix<T>& written_;                              // (n × C) what attention, then the MLP, add to x
    Matrix<T>& aside_;                                // (n × C) a parallel layer's attention output, or empty
    Matrix<T>& hidden_;                               // (n × M)
    Matrix<T>& hidden_linear_;                        // (n × M): a gated MLP's x · W_up
    Matrix<T>& logits_;                               // (n × vocabulary)
    std::vector<AttentionWeights<T>>& kept_;          // per layer, heads × ((n − first kept) × (p0 + n)), if kept
    std::vector<Index>& kept_windows_;                // per layer its window, if kept and any layer has one
    bool weights_zeroed_ = false;                     // kept_ was allocated (zero-filled) for this pass
    std::vector<Matrix<T>>& log_sum_exp_;             // per layer (heads × n), if kept
    std::vector<Matrix<T>>& queries_keys_;            // per layer (n × (H + H_kv)·d), if kept
    std::vector<StatisticsTarget<T>>& targets_;       // per layer, if statistics are asked
};

// Defined outside the class, so not inline: where `extern template class FastForward<float>` is
// declared (the store examples, the test runner), the pass is not compiled again; without it,
// gcc compiles an inline member for inlining even so.
template <class T>
void FastForward<T>::run(Workers* kept, int available) {
    const bool by_columns = splits_columns(available, kept != nullptr);
    const int workers = by_columns ? available : useful_workers(n_, available);
    if (memory_.kernels.size() < std::size_t(workers)) memory_.kernels.resize(std::size_t(workers));
    if (by_columns) {
        if (memory_.worker_normed.size() < std::size_t(workers - 1))
            memory_.worker_normed.resize(std::size_t(workers - 1));
        for (int w = 1; w < workers; ++w)
            size_buffer(memory_.worker_normed[std::size_t(w - 1)], n_, settings_.dimensions);
    }
    if (by_columns)
        run_team(kept, workers, [&](int worker, Team& team) { run_by_columns(worker, team); });
    else
        run_team(kept, workers, [&](int worker, Team& team) { run(worker, team); });
}

}  // namespace detail

}  // namespace attn
