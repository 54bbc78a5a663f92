#pragma once
// Masks applied to scores before softmax. A masked score becomes −∞, so softmax
// gives it a weight of exactly 0 and the rest of its row still sums to 1.

#include <Eigen/Core>

#include <algorithm>
#include <limits>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// Boolean mask: true where a query may look at a key.
using AllowedMask = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Query position i (0-based, plus first_position) may look at key positions 0 … i.
/// (queries × keys) → true on and below the shifted diagonal.
inline AllowedMask causal_allowed(Index queries, Index keys, Index first_position = 0) {
    detail::check_positive("causal_allowed", "queries", queries);
    detail::check_positive("causal_allowed", "keys", keys);
    if (first_position < 0) throw argument_error("causal_allowed: first_position must be ≥ 0");
    AllowedMask allowed(queries, keys);
    for (Index i = 0; i < queries; ++i)
        for (Index j = 0; j < keys; ++j) allowed(i, j) = j <= i + first_position;
    return allowed;
}

/// Sets scores(i, j) = −∞ for every key j later than query i. scores: (queries × keys),
/// modified in place; query row i sits at position first_position + i (0 for a whole
/// text; the cache length when new queries attend to cached keys).
template <class D>
void apply_causal_mask(const Eigen::MatrixBase<D>& scores, Index first_position = 0) {
    using T = typename D::Scalar;
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);  // Eigen's idiom for writable expressions
    if (first_position < 0) throw argument_error("apply_causal_mask: first_position must be ≥ 0");
    const T minus_infinity = -std::numeric_limits<T>::infinity();
    for (Index i = 0; i < s.rows(); ++i) {
        const Index first_hidden = i + first_position + 1;
        if (first_hidden < s.cols()) s.row(i).tail(s.cols() - first_hidden).setConstant(minus_infinity);
    }
}

/// Sliding window, Mistral's and Gemma 2's `sliding_window`: query row i, at position
/// p = first_position + i, keeps only the `window` latest keys up to its own position, and
/// scores(i, j) = −∞ for every key j ≤ p − window (those `window` or more positions back).
/// scores: (queries × keys), modified in place; keys sit at positions 0 … keys − 1.
///
/// With apply_causal_mask (which hides the keys after p) query p sees keys j with
/// p − window < j ≤ p: itself and the window − 1 before it. That is Hugging Face's convention:
/// transformers' masking_utils.py, `sliding_window_overlay`, keeps kv_idx > q_idx −
/// sliding_window on top of the causal kv_idx ≤ q_idx. window = 0 means no window (nothing is
/// hidden); a negative window or first_position is an argument_error.
template <class D>
void apply_sliding_window_mask(const Eigen::MatrixBase<D>& scores, Index window, Index first_position = 0) {
    using T = typename D::Scalar;
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);  // Eigen's idiom for writable expressions
    if (window < 0)
        throw argument_error(detail::message("apply_sliding_window_mask: window must be ≥ 0 (0: none), got ", window));
    if (first_position < 0) throw argument_error("apply_sliding_window_mask: first_position must be ≥ 0");
    if (window == 0) return;
    const T minus_infinity = -std::numeric_limits<T>::infinity();
    for (Index i = 0; i < s.rows(); ++i) {
        const Index hidden =
            std::min(s.cols(), std::max<Index>(0, first_position + i - window + 1));  // keys 0 … hidden − 1
        s.row(i).head(hidden).setConstant(minus_infinity);
    }
}

/// Sets scores(i, j) = −∞ wherever allowed(i, j) is false (padding, custom patterns).
/// scores: (queries × keys) in place; allowed: (queries × keys).
template <class D, class DM>
void apply_mask(const Eigen::MatrixBase<D>& scores, const Eigen::DenseBase<DM>& allowed) {
    using T = typename D::Scalar;
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);
    if (allowed.rows() != s.rows() || allowed.cols() != s.cols())
        throw shape_error(detail::message("apply_mask: allowed is ", allowed.rows(), " × ", allowed.cols(),
                                          " but scores are ", s.rows(), " × ", s.cols()));
    s = allowed.derived().select(s, Matrix<T>::Constant(s.rows(), s.cols(), -std::numeric_limits<T>::infinity()));
}

/// scores += additive, the form PyTorch's attn_mask takes (0 to keep, −∞ to hide, or a bias).
/// scores: (queries × keys) in place; additive: (queries × keys).
template <class D, class DA>
void apply_additive_mask(const Eigen::MatrixBase<D>& scores, const Eigen::MatrixBase<DA>& additive) {
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);
    if (additive.rows() != s.rows() || additive.cols() != s.cols())
        throw shape_error(detail::message("apply_additive_mask: additive is ", additive.rows(), " × ", additive.cols(),
                                          " but scores are ", s.rows(), " × ", s.cols()));
    s += additive;
}

}  // namespace attn
