#pragma once
// Attention scores: every query against every key, scaled; and the soft cap some models
// (Gemma 2) put on them.

#include <Eigen/Core>

#include <cmath>
#include <optional>
#include <type_traits>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// The transformer's default scale for queries and keys of `size` numbers: 1 / √size.
template <class T>
T default_scale(Index size) {
    detail::check_positive("default_scale", "size", size);
    return T(1) / std::sqrt(static_cast<T>(size));
}

/// queries · keysᵀ · scale. queries: (query positions × d), keys: (key positions × d)
/// → (query positions × key positions). scale defaults to 1/√d; pass 1 for models that
/// fold the factor into their query weights (T5).
template <class DQ, class DK>
Matrix<typename DQ::Scalar> scaled_scores(const Eigen::MatrixBase<DQ>& queries, const Eigen::MatrixBase<DK>& keys,
                                          std::optional<typename DQ::Scalar> scale = std::nullopt) {
    using T = typename DQ::Scalar;
    static_assert(std::is_same_v<T, typename DK::Scalar>, "scaled_scores: queries and keys scalar types differ");
    detail::check_not_empty("scaled_scores", "queries", queries);
    detail::check_not_empty("scaled_scores", "keys", keys);
    detail::check_cols("scaled_scores", "keys", keys, queries.cols(), "keys must be as wide as queries");
    const T factor = scale.value_or(default_scale<T>(queries.cols()));
    if (!std::isfinite(factor)) throw argument_error("scaled_scores: scale must be finite");
    Matrix<T> scores(queries.rows(), keys.rows());
    scores.noalias() = (queries * factor) * keys.transpose();
    return scores;
}

/// Soft cap, Gemma 2's attn_logit_softcapping: each score s becomes cap · tanh(s / cap), so
/// that scores stay within (−cap, cap) while small ones barely change. scores: (queries ×
/// keys), modified in place. Applied to the scaled scores before any mask and the softmax,
/// in transformers' order (modeling_gemma2.py, eager_attention_forward: scores · scaling, then
/// / softcap, tanh, · softcap, then + the mask). cap = 0 means no cap (the scores are left as
/// they are); a negative or non-finite cap is an argument_error. +∞ becomes cap; NaN stays NaN.
template <class D>
void soft_cap_in_place(const Eigen::MatrixBase<D>& scores, typename D::Scalar cap) {
    using T = typename D::Scalar;
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);  // Eigen's idiom for writable expressions
    if (!std::isfinite(cap) || cap < T(0))
        throw argument_error(detail::message("soft_cap_in_place: cap must be finite and ≥ 0 (0: none), got ", cap));
    if (cap == T(0)) return;
    s = s.unaryExpr([cap](T x) { return cap * std::tanh(x / cap); });
}

}  // namespace attn
