#pragma once
// Scaled dot-product attention, single-head and multi-head, built from the public
// steps: projection, rotary positions, scaled scores, masks, softmax, heads.
//
//   weights = softmax(mask(q kᵀ · scale)),  output = weights · v
//
// Causal or full attention without a custom mask runs on a fused, tiled kernel
// (detail/kernels/causal_kernel.hpp) that never computes the masked upper triangle and,
// unless the weights are kept, never stores the (queries × keys) matrix. With
// AttentionOptions::mask set, or fused = false, the steps above run one after the
// other (the plain path, the reference the kernel is tested against). Both give the
// same results to rounding: masked weights are exactly 0 and each row sums to 1.

#include <Eigen/Core>

#include <optional>
#include <type_traits>
#include <vector>

#include "attn/core/head_statistics.hpp"
#include "attn/core/heads.hpp"
#include "attn/core/kv_cache.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/projection.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/scoring.hpp"
#include "attn/core/softmax.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/kernels/causal_kernel.hpp"
#include "attn/threads.hpp"

namespace attn {

/// The working memory of an `_into` call, kept in its result (the library's one rule for
/// reusable memory: a result passed again to the same call with the same shapes is written in
/// place and nothing is allocated). Functions that return a fresh result return it empty.
/// Its contents are internal.
template <class T>
struct AttentionWorkspace {
    detail::KernelMemory<T> kernel;                       ///< the fused kernel's
    detail::AlignedBuffer<T> queries, keys, panel, tile;  ///< weights on demand's (weights_on_demand.hpp)
    HeadStack<T> rotated_queries;                         ///< attend_cache's, with RoPE
    /// multi_head_attention_into's: one projection at a time (positions × heads·d), then the
    /// projected queries, keys and values split into heads, every head's output (heads ×
    /// (positions × dv)) and the outputs merged (positions × heads·dv).
    Matrix<T> projected;
    HeadStack<T> projected_queries, projected_keys, projected_values, head_outputs;
    Matrix<T> merged;
};

/// How attention is computed. The defaults are the chapter's: causal, scaled by
/// 1/√(head size), no window, no cap, no positions, weights not kept.
template <class T>
struct AttentionOptions {
    bool causal = true;         ///< hide every key later than its query
    bool keep_weights = false;  ///< return the weights as well as the output
    std::optional<T> scale;     ///< default 1/√(head size)
    /// Sliding window (Mistral's, and Gemma 2's local layers', `sliding_window`): if > 0, the
    /// query at position p sees only keys p − window < j ≤ p, itself and the window − 1 before
    /// it (apply_sliding_window_mask, mask.hpp: Hugging Face's convention). Positions are
    /// absolute: first_position counts, and a cache's keys sit at 0 … cache size − 1. 0: none.
    /// Needs causal. The fused kernel skips every key block wholly outside the window.
    Index window = 0;
    /// Soft cap (Gemma 2's attn_logit_softcapping): if > 0, every scaled score s becomes
    /// score_cap · tanh(s / score_cap) before the masks and the softmax (soft_cap_in_place,
    /// scoring.hpp). 0: none.
    T score_cap = T(0);
    const Rope<T>* rope = nullptr;      ///< if set, rotate queries and keys in every head
    const AllowedMask* mask = nullptr;  ///< if set, also hide where mask(i, j) is false (queries × keys)
    Index first_position = 0;           ///< position of query row 0 (the key cache length when decoding)
    /// Threads for the fused kernel (attn/threads.hpp): a count started for the call, or kept
    /// Workers. Extra threads run only when the work pays for them (docs/DESIGN.md); results
    /// are bit-identical for every choice. The plain path runs on the caller.
    Threads threads;
    /// Use the fused kernel where it applies (no `mask`). false forces the plain
    /// step-by-step path: full scores matrix, masks, softmax, weights · values.
    bool fused = true;
    /// Return each query row's log Σ exp(score) over its visible keys, (heads × queries):
    /// O(positions), and what attention_rows (weights_on_demand.hpp) needs to give
    /// any rows' exact weights afterwards.
    bool keep_log_sum_exp = false;
    /// If set, measure every head's rows (head_statistics.hpp); on the streaming path
    /// without any (queries × keys) storage.
    const HeadStatisticsRequest* statistics = nullptr;
};

/// One head's result. output: (queries × value size); weights: (queries × keys), or empty
/// unless keep_weights was set; log_sum_exp (1 × queries) and statistics (1 head), if asked.
template <class T>
struct AttentionResult {
    Matrix<T> output;
    Matrix<T> weights;
    Matrix<T> log_sum_exp;
    HeadStatistics<T> statistics;
    AttentionWorkspace<T> workspace;  ///< attention_into's memory for the next call
};

namespace detail {

/// The window and the soft cap of `options`, checked (argument_error naming them).
template <class T>
void check_window_and_cap(const char* function, const AttentionOptions<T>& options) {
    if (options.window < 0)
        throw argument_error(message(function, ": window must be ≥ 0 (0: none), got ", options.window));
    if (options.window > 0 && !options.causal)
        throw argument_error(message(function, ": window = ", options.window,
                                     " needs causal attention (it counts keys back from each query)"));
    if (!std::isfinite(options.score_cap) || options.score_cap < T(0))
        throw argument_error(
            message(function, ": score_cap must be finite and ≥ 0 (0: none), got ", options.score_cap));
}

/// Each row's log Σ exp(s) of masked scores (queries × keys) → (queries); −∞ for a fully masked row.
template <class T>
Vector<T> log_sum_exp_rows(const Matrix<T>& scores) {
    Vector<T> out(scores.rows());
    for (Index i = 0; i < scores.rows(); ++i) {
        const T largest = scores.row(i).maxCoeff();
        out(i) = largest == -std::numeric_limits<T>::infinity()
                     ? largest
                     : largest + std::log((scores.row(i).array() - largest).exp().sum());
    }
    return out;
}

/// The plain path: every step of the chapter in turn, on the full (queries × keys) scores.
template <class DQ, class DK, class DV>
AttentionResult<typename DQ::Scalar> plain_attention(const Eigen::MatrixBase<DQ>& queries,
                                                     const Eigen::MatrixBase<DK>& keys,
                                                     const Eigen::MatrixBase<DV>& values,
                                                     const AttentionOptions<typename DQ::Scalar>& options) {
    using T = typename DQ::Scalar;
    static_assert(std::is_same_v<T, typename DV::Scalar>, "attention: queries and values scalar types differ");
    detail::check_not_empty("attention", "values", values);
    detail::check_rows("attention", "values", values, keys.rows(), "one value per key");
    if (options.first_position < 0) throw argument_error("attention: first_position must be ≥ 0");
    check_window_and_cap("attention", options);

    Matrix<T> weights;
    if (options.rope) {
        Matrix<T> rotated_queries = queries;
        Matrix<T> rotated_keys = keys;
        options.rope->apply(rotated_queries, options.first_position);
        options.rope->apply(rotated_keys, 0);
        weights = scaled_scores(rotated_queries, rotated_keys, options.scale);
    } else {
        weights = scaled_scores(queries, keys, options.scale);
    }
    if (options.score_cap > T(0)) soft_cap_in_place(weights, options.score_cap);
    if (options.causal) apply_causal_mask(weights, options.first_position);
    if (options.window > 0) apply_sliding_window_mask(weights, options.window, options.first_position);
    if (options.mask) apply_mask(weights, *options.mask);
    AttentionResult<T> result;
    if (options.keep_log_sum_exp) result.log_sum_exp = log_sum_exp_rows(weights).transpose();
    softmax_rows_in_place(weights);

    result.output.noalias() = weights * values;
    if (options.statistics) {
        const std::vector<Index> markers = checked_markers("attention", *options.statistics);
        const StatisticsTarget<T> target =
            statistics_target(result.statistics, *options.statistics, markers, 1, weights.rows(), weights.cols(),
                              options.first_position, options.causal, options.window);
        for (Index i = 0; i < weights.rows(); ++i)
            row_statistics(weights.row(i).data(), weights.cols(), options.first_position + i, target, 0, i);
    }
    if (options.keep_weights) result.weights = std::move(weights);
    return result;
}

/// Sizes caller storage for `rows` × `cols`: empty storage is allocated, storage of that size
/// reused, any other size refused (it is the caller's and may be viewed elsewhere).
template <class T>
void reuse_storage(const char* function, const char* what, Matrix<T>& storage, Index rows, Index cols) {
    if (storage.size() == 0) storage.resize(rows, cols);
    if (storage.rows() != rows || storage.cols() != cols)
        throw shape_error(message(function, ": ", what, " storage is ", storage.rows(), " × ", storage.cols(),
                                  ", expected ", rows, " × ", cols, " (or empty, to be allocated)"));
}

template <class T>
void reuse_storage(const char* function, const char* what, HeadStack<T>& storage, Index heads, Index rows, Index cols) {
    if (storage.empty()) storage = HeadStack<T>(heads, rows, cols);
    if (storage.heads() != heads || storage.rows() != rows || storage.cols() != cols)
        throw shape_error(message(function, ": ", what, " storage is ", storage.heads(), " × (", storage.rows(), " × ",
                                  storage.cols(), "), expected ", heads, " × (", rows, " × ", cols,
                                  ") (or empty, to be allocated)"));
}

/// Runs the fused kernel on the inputs add_inputs(inputs) appends, working in `workspace`: its
/// memory, and the capacity of its inputs, lent for the call, so that a repeated call allocates
/// nothing.
template <class T, class AddInputs>
void run_fused(FusedProblem<T>& problem, AttentionWorkspace<T>& workspace, AddInputs add_inputs) {
    KernelMemory<T>* memory = &workspace.kernel;
    problem.memory = memory;
    const LentInputs<T> lent(problem.inputs, &memory->inputs);
    add_inputs(problem.inputs);
    fused_attention(problem);
}

/// What the fused kernel needs to measure statistics and keep log-sum-exps, held for a call.
template <class T>
struct SightOutputs {
    std::vector<Index> markers;
    StatisticsTarget<T> target;

    /// Points `problem` at lse (heads × queries) and statistics as `options` ask.
    void attach(const char* function, const AttentionOptions<T>& options, FusedProblem<T>& problem, Matrix<T>& lse,
                HeadStatistics<T>& statistics) {
        if (options.keep_log_sum_exp) {
            lse.resize(problem.heads, problem.queries);
            problem.log_sum_exp = lse.data();
        }
        if (options.statistics) {
            markers = checked_markers(function, *options.statistics);
            target = statistics_target(statistics, *options.statistics, markers, problem.heads, problem.queries,
                                       problem.keys, problem.first_position, problem.causal, problem.window);
            problem.statistics = &target;
        }
    }
};

/// Whether the fused kernel computes this call (see the header comment).
template <class T>
bool fused_applies(const AttentionOptions<T>& options) {
    return options.fused && options.mask == nullptr;
}

/// The plain path's checks, made up front for the fused kernel (before any thread starts).
template <class DQ, class DK, class DV>
void check_fused_inputs(const char* function, const Eigen::MatrixBase<DQ>& queries, const Eigen::MatrixBase<DK>& keys,
                        const Eigen::MatrixBase<DV>& values, const AttentionOptions<typename DQ::Scalar>& options) {
    using T = typename DQ::Scalar;
    check_not_empty(function, "queries", queries);
    check_not_empty(function, "keys", keys);
    check_not_empty(function, "values", values);
    check_rows(function, "values", values, keys.rows(), "one value per key");
    check_cols(function, "keys", keys, queries.cols(), "keys must be as wide as queries");
    if (options.first_position < 0) throw argument_error(message(function, ": first_position must be ≥ 0"));
    if (!std::isfinite(options.scale.value_or(T(1)))) throw argument_error(message(function, ": scale must be finite"));
    check_window_and_cap(function, options);
    if (options.rope)
        check_cols(function, "queries", queries, options.rope->head_size(),
                   "RoPE rotates queries and keys of its head size");
}

/// The kernel's view of `rope`: rows of its head size rotated at their positions.
template <class T>
RotateRows<T> rotate_rows(const Rope<T>& rope) {
    RotateRows<T> rotate;
    rotate.rope = &rope;
    rotate.rotate = [](const void* context, T* rows, Index count, Index first_position) {
        const Rope<T>& r = *static_cast<const Rope<T>*>(context);
        r.apply(Eigen::Map<Matrix<T>>(rows, count, r.head_size()), first_position);
    };
    return rotate;
}

template <class T>
FusedProblem<T> fused_problem(Index heads, Index queries, Index keys, Index depth, Index value_size,
                              const AttentionOptions<T>& options) {
    FusedProblem<T> problem;
    problem.heads = heads;
    problem.queries = queries;
    problem.keys = keys;
    problem.depth = depth;
    problem.value_size = value_size;
    problem.causal = options.causal;
    problem.first_position = options.first_position;
    problem.scale = options.scale.value_or(default_scale<T>(depth));
    problem.window = options.window;
    problem.score_cap = options.score_cap;
    if (options.rope) problem.rope = rotate_rows(*options.rope);
    problem.threads = detail::available_threads(options.threads, "attention");
    problem.workers = options.threads.kept();
    return problem;
}

}  // namespace detail

/// Single-head attention into `result`, whose storage is reused: queries: (queries × d),
/// keys: (keys × d), values: (keys × dv) → result.output (queries × dv) and, if asked,
/// result.weights (queries × keys), result.log_sum_exp (1 × queries), result.statistics.
/// output and weights must be empty (then they are allocated) or of those shapes
/// (shape_error otherwise). A repeated call into the same result, with one thread or kept
/// Workers, allocates nothing on the fused path.
template <class DQ, class DK, class DV>
void attention_into(const Eigen::MatrixBase<DQ>& queries, const Eigen::MatrixBase<DK>& keys,
                    const Eigen::MatrixBase<DV>& values, const AttentionOptions<typename DQ::Scalar>& options,
                    AttentionResult<typename DQ::Scalar>& result) {
    using T = typename DQ::Scalar;
    static_assert(std::is_same_v<T, typename DV::Scalar>, "attention: queries and values scalar types differ");
    static_assert(std::is_same_v<T, typename DK::Scalar>, "attention: queries and keys scalar types differ");
    if (!detail::fused_applies(options)) {
        result = detail::plain_attention(queries, keys, values, options);
        return;
    }
    detail::check_fused_inputs("attention", queries, keys, values, options);

    detail::FusedProblem<T> problem =
        detail::fused_problem(1, queries.rows(), keys.rows(), queries.cols(), values.cols(), options);
    detail::reuse_storage("attention", "output", result.output, queries.rows(), values.cols());
    problem.outputs = result.output.data();
    if (options.keep_weights) {
        detail::reuse_storage("attention", "weights", result.weights, queries.rows(), keys.rows());
        problem.weights = result.weights.data();
    }
    detail::SightOutputs<T> sight;
    sight.attach("attention", options, problem, result.log_sum_exp, result.statistics);
    // Row-major views of the inputs where they allow it, else row-major copies.
    using View = Eigen::Ref<const Matrix<T>, 0, Eigen::OuterStride<>>;
    const View q(queries.derived()), k(keys.derived()), v(values.derived());
    detail::run_fused(problem, result.workspace, [&](std::vector<detail::HeadInputs<T>>& inputs) {
        inputs.push_back({{q.data(), q.outerStride()}, {k.data(), k.outerStride()}, {v.data(), v.outerStride()}});
    });
}

/// Single-head attention. queries: (queries × d), keys: (keys × d), values: (keys × dv)
/// → output (queries × dv) and, if asked, weights (queries × keys), log_sum_exp
/// (1 × queries), statistics.
template <class DQ, class DK, class DV>
AttentionResult<typename DQ::Scalar> attention(const Eigen::MatrixBase<DQ>& queries, const Eigen::MatrixBase<DK>& keys,
                                               const Eigen::MatrixBase<DV>& values,
                                               const AttentionOptions<typename DQ::Scalar>& options = {}) {
    AttentionResult<typename DQ::Scalar> result;
    attention_into(queries, keys, values, options, result);
    result.workspace = {};  // the numbers, not the call's memory
    return result;
}

/// Every head's result. outputs: heads × (queries × value size); weights: heads ×
/// (queries × keys), or empty unless keep_weights was set; log_sum_exp (heads × queries)
/// and statistics, if asked.
template <class T>
struct HeadsResult {
    HeadStack<T> outputs;
    AttentionWeights<T> weights;
    Matrix<T> log_sum_exp;
    HeadStatistics<T> statistics;
    AttentionWorkspace<T> workspace;  ///< the `_into` calls' memory for the next call
};

namespace detail {

/// Sizes result.outputs (heads × (queries × value_size)) and, if kept, result.weights (heads ×
/// (queries × keys)) as reuse_storage does; returns whether the weights were freshly allocated.
template <class T>
bool size_result(const char* function, const AttentionOptions<T>& options, Index heads, Index queries, Index keys,
                 Index value_size, HeadsResult<T>& result) {
    reuse_storage(function, "outputs", result.outputs, heads, queries, value_size);
    const bool fresh_weights = result.weights.empty();
    if (options.keep_weights) reuse_storage(function, "weights", result.weights, heads, queries, keys);
    return fresh_weights;
}

/// Whether key/value heads can serve `query_heads`: as many, or a divisor (grouped-query
/// attention; 1 head is multi-query attention).
inline bool serves(Index key_value_heads, Index query_heads) {
    return key_value_heads > 0 && query_heads % key_value_heads == 0;
}

/// attend_heads_into's and attend_cache_into's work, their own checks made: query head h reads
/// key/value head h / group through keys_of and values_of, (keys × d) and (keys × dv) views.
/// few_queries: FusedProblem's (decoding).
template <class T, class KeysOf, class ValuesOf>
void attend_grouped(const char* function, const HeadStack<T>& queries, Index key_value_heads, Index keys,
                    Index value_size, KeysOf keys_of, ValuesOf values_of, const AttentionOptions<T>& options,
                    HeadsResult<T>& result, bool few_queries = false) {
    const Index heads = queries.heads(), group = heads / key_value_heads;
    const bool fresh_weights = size_result(function, options, heads, queries.rows(), keys, value_size, result);
    if (fused_applies(options)) {
        // Every head in one parallel region: the tasks are heads × query blocks.
        check_fused_inputs(function, queries.head(0), keys_of(0), values_of(0), options);
        FusedProblem<T> problem = fused_problem(heads, queries.rows(), keys, queries.cols(), value_size, options);
        problem.key_value_heads = key_value_heads;
        problem.few_queries = few_queries;
        problem.outputs = result.outputs.data();
        if (options.keep_weights) {
            problem.weights = result.weights.data();
            problem.weights_zeroed = fresh_weights;  // a new HeadStack starts zero-filled
        }
        SightOutputs<T> sight;
        sight.attach(function, options, problem, result.log_sum_exp, result.statistics);
        run_fused(problem, result.workspace, [&](std::vector<HeadInputs<T>>& inputs) {
            for (Index h = 0; h < heads; ++h) {
                const auto k = keys_of(h / group);
                const auto v = values_of(h / group);
                inputs.push_back({{queries.head(h).data(), queries.cols()},
                                  {k.data(), k.outerStride()},
                                  {v.data(), v.outerStride()}});
            }
        });
        return;
    }
    if (options.keep_log_sum_exp) result.log_sum_exp.resize(heads, queries.rows());
    for (Index h = 0; h < heads; ++h) {
        AttentionResult<T> head = attention(queries.head(h), keys_of(h / group), values_of(h / group), options);
        result.outputs.head(h) = head.output;
        if (options.keep_weights) result.weights.head(h) = head.weights;
        if (options.keep_log_sum_exp) result.log_sum_exp.row(h) = head.log_sum_exp;
        if (options.statistics) copy_head_statistics(head.statistics, h, heads, result.statistics);
    }
}

}  // namespace detail

/// attend_heads into `result`, whose storage is reused: outputs and weights must be empty
/// (then they are allocated) or of the shapes attend_heads returns (shape_error otherwise).
/// A repeated fused call into the same result, with one thread or kept Workers, allocates
/// nothing: repeated calls touch no fresh pages.
template <class T>
void attend_heads_into(const HeadStack<T>& queries, const HeadStack<T>& keys, const HeadStack<T>& values,
                       const AttentionOptions<T>& options, HeadsResult<T>& result) {
    if (keys.heads() != values.heads() || !detail::serves(keys.heads(), queries.heads()))
        throw shape_error(detail::message("attend_heads: queries, keys and values have ", queries.heads(), ", ",
                                          keys.heads(), " and ", values.heads(),
                                          " heads; keys and values need as many heads as the queries, or a divisor "
                                          "of them (grouped-query attention)"));
    if (queries.empty()) throw shape_error("attend_heads: queries are empty");
    detail::attend_grouped(
        "attend_heads", queries, keys.heads(), keys.rows(), values.cols(), [&](Index g) { return keys.head(g); },
        [&](Index g) { return values.head(g); }, options, result);
}

/// Head statistics without the attention's output: the streaming pass's scores and softmax,
/// no values and no weights · values (half of attend_heads's arithmetic), no (queries × keys)
/// storage. queries: heads × (queries × d), keys: kv heads × (keys × d) (kv heads = heads or a
/// divisor) → statistics as options.statistics asks (it must be set) and, with
/// options.keep_log_sum_exp, log_sum_exp (heads × queries), else left as it is. The same bits
/// as attend_heads's statistics and log-sum-exps with the same options. A mask or fused = false
/// takes the plain path (with values of zeros). keep_weights is an argument_error: use
/// attend_heads. result.outputs and result.weights are left empty. A repeated call into the
/// same result, with one thread or kept Workers, allocates nothing.
template <class T>
void attention_statistics_into(const HeadStack<T>& queries, const HeadStack<T>& keys,
                               const AttentionOptions<T>& options, HeadsResult<T>& result) {
    const char* function = "attention_statistics";
    if (!options.statistics)
        throw argument_error(detail::message(function, ": options.statistics is not set: nothing to measure"));
    if (options.keep_weights)
        throw argument_error(detail::message(function, ": keep_weights is attend_heads's; statistics need no weights"));
    if (queries.empty() || keys.empty())
        throw shape_error(detail::message(function, ": queries and keys must not be empty"));
    if (!detail::serves(keys.heads(), queries.heads()))
        throw shape_error(detail::message(function, ": keys have ", keys.heads(), " heads, queries ", queries.heads(),
                                          "; keys need as many heads as the queries, or a divisor of them"));
    const Index heads = queries.heads(), group = heads / keys.heads();
    if (!detail::fused_applies(options)) {
        const HeadStack<T> zeros(keys.heads(), keys.rows(), 1);
        result.outputs = HeadStack<T>();
        detail::attend_grouped(
            function, queries, keys.heads(), keys.rows(), 1, [&](Index g) { return keys.head(g); },
            [&](Index g) { return zeros.head(g); }, options, result);
        result.outputs = HeadStack<T>();
        return;
    }
    detail::check_fused_inputs(function, queries.head(0), keys.head(0), keys.head(0), options);
    detail::FusedProblem<T> problem =
        detail::fused_problem(heads, queries.rows(), keys.rows(), queries.cols(), 0, options);
    problem.key_value_heads = keys.heads();
    detail::SightOutputs<T> sight;
    sight.attach(function, options, problem, result.log_sum_exp, result.statistics);
    detail::run_fused(problem, result.workspace, [&](std::vector<detail::HeadInputs<T>>& inputs) {
        for (Index h = 0; h < heads; ++h)
            inputs.push_back(
                {{queries.head(h).data(), queries.cols()}, {keys.head(h / group).data(), keys.cols()}, {nullptr, 0}});
    });
}

/// attention_statistics_into into a fresh result: statistics of heads × queries, and
/// log_sum_exp (heads × queries) with options.keep_log_sum_exp, else empty.
template <class T>
HeadsResult<T> attention_statistics(const HeadStack<T>& queries, const HeadStack<T>& keys,
                                    const AttentionOptions<T>& options) {
    HeadsResult<T> result;
    attention_statistics_into(queries, keys, options, result);
    result.workspace = {};
    return result;
}

/// Attention in every head of already split queries, keys and values.
/// queries: heads × (queries × d), keys: kv heads × (keys × d), values: kv heads × (keys × dv),
/// where kv heads = heads, or a divisor of it (grouped-query attention: query head h reads
/// key/value head h / (heads / kv heads); 1 is multi-query attention).
template <class T>
HeadsResult<T> attend_heads(const HeadStack<T>& queries, const HeadStack<T>& keys, const HeadStack<T>& values,
                            const AttentionOptions<T>& options = {}) {
    HeadsResult<T> result;
    attend_heads_into(queries, keys, values, options, result);
    result.workspace = {};  // the numbers, not the call's memory
    return result;
}

namespace detail {

/// attend_cache's checks: see attend_cache_into.
template <class T>
void check_cache_inputs(const HeadStack<T>& queries, const KeyValueCache<T>& cache,
                        const AttentionOptions<T>& options) {
    if (cache.empty())
        throw argument_error("attend_cache: the cache is empty (append the new positions' keys and values first)");
    if (queries.heads() == 0 || queries.rows() == 0)
        throw argument_error(
            message("attend_cache: no queries (", queries.heads(), " heads × ", queries.rows(), " positions)"));
    if (!serves(cache.heads(), queries.heads()))
        throw shape_error(message("attend_cache: ", queries.heads(), " query heads are not a multiple of the cache's ",
                                  cache.heads(), " key/value heads"));
    if (queries.cols() != cache.head_size())
        throw shape_error(message("attend_cache: queries are ", queries.cols(), " wide; the cache's keys are ",
                                  cache.head_size(), " (head size)"));
    if (queries.rows() > cache.held())
        throw argument_error(message("attend_cache: ", queries.rows(), " query positions but the cache holds only ",
                                     cache.held(), " (the queries' positions must be appended first)"));
    const Index first_needed = cache.size() - queries.rows() - options.window + 1;  // the earliest query's window
    if (cache.first() > 0 && (options.window <= 0 || first_needed < cache.first()))
        throw argument_error(message("attend_cache: the cache keeps positions ", cache.first(), " … ", cache.size() - 1,
                                     " only (its window of ", cache.window(), "); options.window = ", options.window,
                                     " sees further back"));
    if (options.statistics && cache.first() > 0)
        throw argument_error(message("attend_cache: statistics count keys from position 0; the cache's window ",
                                     "has dropped positions 0 … ", cache.first() - 1));
    if (options.first_position != 0)
        throw argument_error(message("attend_cache: first_position = ", options.first_position,
                                     " must be 0: the queries are the cache's newest positions"));
    if (options.rope && options.rope->head_size() != queries.cols())
        throw shape_error(message("attend_cache: RoPE rotates heads of ", options.rope->head_size(),
                                  " numbers; the queries have ", queries.cols()));
}

/// Decoding's hot case, one new position with grouped-query attention: a group's query heads
/// are the query rows of one problem per key/value head (a single position sees the whole
/// cache, so causality does not matter), and each key/value head is read once, not once per
/// query head. queries: heads × (1 × d), already rotated; each problem row is a query head,
/// so outputs, weights and log-sum-exps land in attend_cache's layout unchanged.
template <class T>
void attend_cache_folded(const HeadStack<T>& queries, const KeyValueCache<T>& cache, const AttentionOptions<T>& options,
                         HeadsResult<T>& result) {
    const Index kv_heads = cache.heads(), group = queries.heads() / kv_heads;
    check_fused_inputs("attend_cache", queries.head(0), cache.keys(0), cache.values(0), options);
    FusedProblem<T> problem =
        fused_problem(kv_heads, group, cache.held(), cache.head_size(), cache.value_size(), options);
    problem.causal = false;
    problem.first_position = cache.held() - 1;  // every row's: the new position (a window counts back from it)
    problem.few_queries = true;
    problem.folded_heads = group;
    problem.outputs = result.outputs.data();
    if (options.keep_weights) problem.weights = result.weights.data();
    if (options.keep_log_sum_exp) {
        result.log_sum_exp.resize(queries.heads(), 1);
        problem.log_sum_exp = result.log_sum_exp.data();
    }
    run_fused(problem, result.workspace, [&](std::vector<HeadInputs<T>>& inputs) {
        for (Index g = 0; g < kv_heads; ++g)
            inputs.push_back({{queries.head(g * group).data(), queries.cols()},
                              {cache.keys(g).data(), cache.head_size()},
                              {cache.values(g).data(), cache.value_size()}});
    });
}

}  // namespace detail

/// Attention of the n newest positions over a key/value cache, into `result`, whose storage
/// is reused as in attend_heads_into. queries: query heads × (n × d), the positions
/// cache.size() − n … cache.size() − 1, already appended to the cache; query heads must be a
/// multiple of cache.heads() (query head h reads key/value head h / (query heads / cache
/// heads)). → outputs: query heads × (n × value size); weights (if keep_weights): query heads ×
/// (n × cache.held()), column j at position cache.first() + j (first() = 0 unless the cache
/// has a window); log_sum_exp (query heads × n) and statistics as attend_heads gives them
/// (statistics need first() = 0: argument_error otherwise).
///
/// options.rope, if set, rotates a copy of the queries at their positions; the cached keys were
/// rotated when appended and are read in place, never copied or rotated again.
/// options.first_position must be 0 (the cache decides the positions). Causal within the new
/// block, every earlier position visible (with options.window, the last window ones: a
/// cache with a window holds them); causal = false lets every query see the whole cache. The
/// plain path runs when fused = false or a mask (n × cache.held()) is given.
template <class T>
void attend_cache_into(const HeadStack<T>& queries, const KeyValueCache<T>& cache, const AttentionOptions<T>& options,
                       HeadsResult<T>& result) {
    detail::check_cache_inputs(queries, cache, options);
    const Index n = queries.rows(), group = queries.heads() / cache.heads();
    AttentionOptions<T> at_cache = options;
    at_cache.rope = nullptr;
    // Keys are numbered from the first one held, and the queries' positions with them: the
    // masks depend on differences of positions only.
    at_cache.first_position = cache.held() - n;
    const HeadStack<T>* rotated = &queries;
    if (options.rope) {
        HeadStack<T>& copy = result.workspace.rotated_queries;
        if (copy.heads() != queries.heads() || copy.rows() != n || copy.cols() != queries.cols()) copy = queries;
        for (Index h = 0; h < queries.heads(); ++h) {
            copy.head(h) = queries.head(h);
            options.rope->apply(copy.head(h), cache.size() - n);  // absolute positions
        }
        rotated = &copy;
    }
    if (n == 1 && group > 1 && detail::fused_applies(options) && !options.statistics) {
        detail::size_result("attend_cache", options, queries.heads(), n, cache.held(), cache.value_size(), result);
        detail::attend_cache_folded(*rotated, cache, at_cache, result);
        return;
    }
    detail::attend_grouped(
        "attend_cache", *rotated, cache.heads(), cache.held(), cache.value_size(),
        [&](Index g) { return cache.keys(g); }, [&](Index g) { return cache.values(g); }, at_cache, result, true);
}

/// attend_cache_into into a fresh result: query heads × (n × d) queries of the cache's n newest
/// positions → outputs query heads × (n × value size), and what options ask for.
template <class T>
HeadsResult<T> attend_cache(const HeadStack<T>& queries, const KeyValueCache<T>& cache,
                            const AttentionOptions<T>& options = {}) {
    HeadsResult<T> result;
    attend_cache_into(queries, cache, options, result);
    result.workspace = {};  // the numbers, not the call's memory
    return result;
}

/// The four projections of a multi-head attention layer, (in × out) each, viewed
/// without copying. query, key: (width × heads·d); value: (width × heads·dv);
/// output: (heads·dv × out).
template <class T>
struct AttentionProjections {
    Eigen::Ref<const Matrix<T>> query;
    Eigen::Ref<const Matrix<T>> key;
    Eigen::Ref<const Matrix<T>> value;
    Eigen::Ref<const Matrix<T>> output;
};

/// A layer's heads: `query` heads and `key_value` heads, 0 meaning as many as the queries, else
/// a divisor of them (grouped-query attention: key/value head g serves query heads
/// g·group … (g + 1)·group − 1; 1 is multi-query attention). Converts from one count: `4`.
struct HeadCount {
    HeadCount(Index heads, Index key_value_heads = 0) : query(heads), key_value(key_value_heads) {}  // NOLINT
    Index query;
    Index key_value;
};

/// Multi-head attention's result. output: (positions × out); weights: heads ×
/// (positions × positions), or empty unless keep_weights was set.
template <class T>
struct MultiHeadResult {
    Matrix<T> output;
    AttentionWeights<T> weights;
    Matrix<T> log_sum_exp;            ///< (heads × positions), if keep_log_sum_exp
    HeadStatistics<T> statistics;     ///< if options.statistics
    AttentionWorkspace<T> workspace;  ///< multi_head_attention_into's memory for the next call
};

/// Multi-head self-attention into `result`, whose storage is reused: the shapes and checks of
/// multi_head_attention (below), the same bits. result.output (positions × out) and, if kept,
/// result.weights (heads × (positions × positions)) must be empty (then they are allocated) or
/// of those shapes (shape_error otherwise); log_sum_exp and statistics are resized. The
/// intermediates (projections, heads, merged outputs) live in result.workspace, so that a
/// repeated call of the same shape, with one thread or kept Workers, allocates nothing (Eigen's products take their
/// blocks from the stack up to EIGEN_STACK_ALLOCATION_LIMIT, 128 kB by default, and from the heap beyond).
template <class D>
void multi_head_attention_into(const Eigen::MatrixBase<D>& x,
                               const AttentionProjections<typename D::Scalar>& projections, HeadCount head_count,
                               const AttentionOptions<typename D::Scalar>& options,
                               MultiHeadResult<typename D::Scalar>& result) {
    using T = typename D::Scalar;
    const char* function = "multi_head_attention";
    const Index heads = head_count.query;
    detail::check_positive(function, "heads", heads);
    const Index key_value_heads = head_count.key_value == 0 ? heads : head_count.key_value;
    if (!detail::serves(key_value_heads, heads))
        throw shape_error(
            detail::message(function, ": key_value_heads = ", key_value_heads, " does not divide heads = ", heads));
    if (projections.query.cols() % heads != 0 || projections.value.cols() % key_value_heads != 0)
        throw shape_error(detail::message(function, ": heads = ", heads, " does not divide the query width ",
                                          projections.query.cols(), " or key_value_heads = ", key_value_heads,
                                          " the value width ", projections.value.cols()));
    const Index head_size = projections.query.cols() / heads;
    detail::check_cols(function, "projections.key", projections.key, key_value_heads * head_size,
                       "one key of the query head size per key/value head");

    AttentionWorkspace<T>& memory = result.workspace;
    // projected one by one: with fewer key/value heads the keys are narrower than the queries
    detail::project_into(x, projections.query, memory.projected);
    detail::split_heads_into(memory.projected, heads, memory.projected_queries);
    detail::project_into(x, projections.key, memory.projected);
    detail::split_heads_into(memory.projected, key_value_heads, memory.projected_keys);
    detail::project_into(x, projections.value, memory.projected);
    detail::split_heads_into(memory.projected, key_value_heads, memory.projected_values);
    const HeadStack<T>&queries = memory.projected_queries, &keys = memory.projected_keys,
          &values = memory.projected_values;
    detail::check_not_empty("project", "weight", projections.output);
    detail::check_rows("project", "weight", projections.output, heads * values.cols(),
                       "weight is (in × out) and x has `in` columns");
    detail::reuse_storage(function, "output", result.output, x.rows(), projections.output.cols());
    detail::fit(memory.head_outputs, heads, queries.rows(), values.cols());

    // The result's storage, lent to attend_grouped's result for the call.
    HeadsResult<T> attended;
    const auto lend = [&] {
        std::swap(attended.outputs, memory.head_outputs);
        std::swap(attended.weights, result.weights);
        std::swap(attended.log_sum_exp, result.log_sum_exp);
        std::swap(attended.statistics, result.statistics);
        std::swap(attended.workspace.kernel, memory.kernel);
    };
    lend();
    try {
        detail::attend_grouped(
            function, queries, key_value_heads, keys.rows(), values.cols(), [&](Index g) { return keys.head(g); },
            [&](Index g) { return values.head(g); }, options, attended);
    } catch (...) {
        lend();  // back to their owners
        throw;
    }
    lend();
    detail::merge_heads_into(memory.head_outputs, memory.merged);
    result.output.noalias() = memory.merged * projections.output;
    if (!options.keep_weights) result.weights = AttentionWeights<T>();
    if (!options.keep_log_sum_exp) result.log_sum_exp.resize(0, 0);
    if (!options.statistics) result.statistics = HeadStatistics<T>();
}

/// Multi-head self-attention with output projection:
/// x: (positions × width) → project → split into heads.query heads → attention in each head →
/// merge (positions × heads·dv) → · output → (positions × out). With heads.key_value a divisor of
/// heads.query, the key and value projections are (width × kv heads·d) and (width × kv heads·dv):
/// grouped-query attention.
template <class D>
MultiHeadResult<typename D::Scalar> multi_head_attention(const Eigen::MatrixBase<D>& x,
                                                         const AttentionProjections<typename D::Scalar>& projections,
                                                         HeadCount heads,
                                                         const AttentionOptions<typename D::Scalar>& options = {}) {
    MultiHeadResult<typename D::Scalar> result;
    multi_head_attention_into(x, projections, heads, options, result);
    result.workspace = {};  // the numbers, not the call's memory
    return result;
}

}  // namespace attn
