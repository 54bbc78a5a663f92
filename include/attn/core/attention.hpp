#pragma once
// Scaled dot-product attention, single-head and multi-head, built from the public
// steps: projection, rotary positions, scaled scores, masks, softmax, heads.
//
//   weights = softmax(mask(q kᵀ · scale)),  output = weights · v
//
// Causal or full attention without a custom mask runs on a fused, tiled kernel
// (detail/causal_kernel.hpp) that never computes the masked upper triangle and,
// unless the weights are kept, never stores the (queries × keys) matrix. With
// AttentionOptions::mask set, or fused = false, the steps above run one after the
// other (the plain path, the reference the kernel is tested against). Both give the
// same results to rounding: masked weights are exactly 0 and each row sums to 1.

#include <Eigen/Core>

#include <optional>
#include <type_traits>

#include "attn/core/heads.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/projection.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/scoring.hpp"
#include "attn/core/softmax.hpp"
#include "attn/core/types.hpp"
#include "attn/core/workers.hpp"
#include "attn/detail/causal_kernel.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// How attention is computed. The defaults are the chapter's: causal, scaled by
/// 1/√(head size), no positions, weights not kept.
template <class T>
struct AttentionOptions {
    bool causal = true;                 ///< hide every key later than its query
    bool keep_weights = false;          ///< return the weights as well as the output
    std::optional<T> scale;             ///< default 1/√(head size)
    const Rope<T>* rope = nullptr;      ///< if set, rotate queries and keys in every head
    const AllowedMask* mask = nullptr;  ///< if set, also hide where mask(i, j) is false (queries × keys)
    Index first_position = 0;           ///< position of query row 0 (the key cache length when decoding)
    /// Threads for the fused kernel: 1 runs on the calling thread only; 0 uses one per
    /// hardware thread (std::thread::hardware_concurrency()). They are started for the
    /// call and joined before it returns, and only when the work pays for them: below
    /// about 50 MFLOP of useful work per extra thread (4 heads × 64 numbers: below about
    /// 400 positions) the call stays on one thread. Results are bit-identical for every
    /// thread count. The plain path ignores it.
    int threads = 1;
    /// Threads kept by the caller (attn/core/workers.hpp): if set, the kernel runs on up
    /// to workers->size() of them and `threads` is not used; the results are the same bits.
    Workers* workers = nullptr;
    /// Use the fused kernel where it applies (no `mask`). false forces the plain
    /// step-by-step path: full scores matrix, masks, softmax, weights · values.
    bool fused = true;
};

/// One head's result. output: (queries × value size); weights: (queries × keys), or empty
/// unless keep_weights was set.
template <class T>
struct HeadAttention {
    Matrix<T> output;
    Matrix<T> weights;
};

namespace detail {

/// The plain path: every step of the chapter in turn, on the full (queries × keys) scores.
template <class DQ, class DK, class DV>
HeadAttention<typename DQ::Scalar> plain_attention(const Eigen::MatrixBase<DQ>& queries,
                                                   const Eigen::MatrixBase<DK>& keys,
                                                   const Eigen::MatrixBase<DV>& values,
                                                   const AttentionOptions<typename DQ::Scalar>& options) {
    using T = typename DQ::Scalar;
    static_assert(std::is_same_v<T, typename DV::Scalar>, "attention: queries and values scalar types differ");
    detail::check_not_empty("attention", "values", values);
    detail::check_rows("attention", "values", values, keys.rows(), "one value per key");
    if (options.first_position < 0) throw argument_error("attention: first_position must be ≥ 0");

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
    if (options.causal) apply_causal_mask(weights, options.first_position);
    if (options.mask) apply_mask(weights, *options.mask);
    softmax_rows_in_place(weights);

    HeadAttention<T> result;
    result.output.noalias() = weights * values;
    if (options.keep_weights) result.weights = std::move(weights);
    return result;
}

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
    if (options.rope)
        check_cols(function, "queries", queries, options.rope->head_size(),
                   "RoPE rotates queries and keys of its head size");
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
    problem.rope = options.rope;
    problem.threads = resolve_threads("attention", options.threads);
    problem.workers = options.workers;
    return problem;
}

}  // namespace detail

/// Single-head attention. queries: (queries × d), keys: (keys × d), values: (keys × dv)
/// → output (queries × dv) and, if asked, weights (queries × keys).
template <class DQ, class DK, class DV>
HeadAttention<typename DQ::Scalar> attention(const Eigen::MatrixBase<DQ>& queries, const Eigen::MatrixBase<DK>& keys,
                                             const Eigen::MatrixBase<DV>& values,
                                             const AttentionOptions<typename DQ::Scalar>& options = {}) {
    using T = typename DQ::Scalar;
    static_assert(std::is_same_v<T, typename DV::Scalar>, "attention: queries and values scalar types differ");
    static_assert(std::is_same_v<T, typename DK::Scalar>, "attention: queries and keys scalar types differ");
    if (!detail::fused_applies(options)) return detail::plain_attention(queries, keys, values, options);
    detail::check_fused_inputs("attention", queries, keys, values, options);

    detail::FusedProblem<T> problem =
        detail::fused_problem(1, queries.rows(), keys.rows(), queries.cols(), values.cols(), options);
    HeadAttention<T> result;
    result.output.resize(queries.rows(), values.cols());
    problem.outputs = result.output.data();
    if (options.keep_weights) {
        result.weights.resize(queries.rows(), keys.rows());
        problem.weights = result.weights.data();
    }
    // Row-major views of the inputs where they allow it, else row-major copies.
    using View = Eigen::Ref<const Matrix<T>, 0, Eigen::OuterStride<>>;
    const View q(queries.derived()), k(keys.derived()), v(values.derived());
    problem.inputs = {{{q.data(), q.outerStride()}, {k.data(), k.outerStride()}, {v.data(), v.outerStride()}}};
    detail::fused_attention(problem);
    return result;
}

/// Every head's result. outputs: heads × (queries × value size); weights: heads ×
/// (queries × keys), or empty unless keep_weights was set.
template <class T>
struct HeadsAttention {
    HeadStack<T> outputs;
    AttentionWeights<T> weights;
};

/// Attention in every head of already split queries, keys and values.
/// queries: heads × (queries × d), keys: heads × (keys × d), values: heads × (keys × dv).
template <class T>
HeadsAttention<T> attend_heads(const HeadStack<T>& queries, const HeadStack<T>& keys, const HeadStack<T>& values,
                               const AttentionOptions<T>& options = {}) {
    if (keys.heads() != queries.heads() || values.heads() != queries.heads())
        throw shape_error(detail::message("attend_heads: queries, keys and values have ", queries.heads(), ", ",
                                          keys.heads(), " and ", values.heads(), " heads"));
    if (queries.empty()) throw shape_error("attend_heads: queries are empty");
    HeadsAttention<T> result{HeadStack<T>(queries.heads(), queries.rows(), values.cols()), AttentionWeights<T>()};
    if (options.keep_weights) result.weights = AttentionWeights<T>(queries.heads(), queries.rows(), keys.rows());
    if (detail::fused_applies(options)) {
        // Every head in one parallel region: the tasks are heads × query blocks.
        detail::check_fused_inputs("attend_heads", queries.head(0), keys.head(0), values.head(0), options);
        detail::FusedProblem<T> problem =
            detail::fused_problem(queries.heads(), queries.rows(), keys.rows(), queries.cols(), values.cols(), options);
        problem.outputs = result.outputs.data();
        if (options.keep_weights) {
            problem.weights = result.weights.data();
            problem.weights_zeroed = true;  // HeadStack starts zero-filled
        }
        for (Index h = 0; h < queries.heads(); ++h)
            problem.inputs.push_back({{queries.head(h).data(), queries.cols()},
                                      {keys.head(h).data(), keys.cols()},
                                      {values.head(h).data(), values.cols()}});
        detail::fused_attention(problem);
        return result;
    }
    for (Index h = 0; h < queries.heads(); ++h) {
        HeadAttention<T> head = attention(queries.head(h), keys.head(h), values.head(h), options);
        result.outputs.head(h) = head.output;
        if (options.keep_weights) result.weights.head(h) = head.weights;
    }
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

/// Multi-head attention's result. output: (positions × out); weights: heads ×
/// (positions × positions), or empty unless keep_weights was set.
template <class T>
struct MultiHeadAttention {
    Matrix<T> output;
    AttentionWeights<T> weights;
};

/// Multi-head self-attention with output projection:
/// x: (positions × width) → project → split into `heads` → attention in each head →
/// merge (positions × heads·dv) → · output → (positions × out).
template <class D>
MultiHeadAttention<typename D::Scalar> multi_head_attention(const Eigen::MatrixBase<D>& x,
                                                            const AttentionProjections<typename D::Scalar>& projections,
                                                            Index heads,
                                                            const AttentionOptions<typename D::Scalar>& options = {}) {
    using T = typename D::Scalar;
    detail::check_positive("multi_head_attention", "heads", heads);
    if (projections.query.cols() % heads != 0 || projections.value.cols() % heads != 0)
        throw shape_error(detail::message("multi_head_attention: heads = ", heads, " does not divide the query width ",
                                          projections.query.cols(), " or the value width ", projections.value.cols()));
    QueryKeyValue<T> qkv = project_qkv(x, projections.query, projections.key, projections.value);
    HeadsAttention<T> attended = attend_heads(split_heads(qkv.queries, heads), split_heads(qkv.keys, heads),
                                              split_heads(qkv.values, heads), options);
    MultiHeadAttention<T> result;
    result.output = project(merge_heads(attended.outputs), projections.output);
    result.weights = std::move(attended.weights);
    return result;
}

}  // namespace attn
