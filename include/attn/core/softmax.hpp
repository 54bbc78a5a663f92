#pragma once
// Numerically stable row-wise softmax.
//
// Each row's largest score is subtracted before exponentiating, so scores of ±1e30
// give finite weights. A row whose every score is −∞ (fully masked, e.g. a padding
// query) becomes all zeros rather than NaN: such a position takes nothing from any
// other, and its attention output is the zero vector. NaN or +∞ among the scores
// cannot be turned into weights and raise attn::numeric_error naming the row.
//
// A weight below the smallest normal number of T (about 1e-38 in float, 2e-308 in
// double) is returned as exactly 0. That keeps every masked weight exactly 0 (Eigen's
// vectorised exp clamps its argument, so exp(−∞) would otherwise be a tiny subnormal)
// and keeps subnormals out of weights · values; each row still sums to 1.

#include <Eigen/Core>

#include <cmath>
#include <limits>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// Softmax along each row of scores, in place. scores: (queries × keys).
template <class D>
void softmax_rows_in_place(const Eigen::MatrixBase<D>& scores) {
    using T = typename D::Scalar;
    auto& s = const_cast<Eigen::MatrixBase<D>&>(scores);  // Eigen's idiom for writable expressions
    for (Index i = 0; i < s.rows(); ++i) {
        auto row = s.row(i);
        const T largest = row.template maxCoeff<Eigen::PropagateNaN>();
        if (std::isnan(largest) || largest == std::numeric_limits<T>::infinity())
            throw numeric_error(detail::message("softmax_rows: row ", i, " of the scores contains ",
                                                std::isnan(largest) ? "NaN" : "+infinity"));
        if (largest == -std::numeric_limits<T>::infinity()) {
            row.setZero();
            continue;
        }
        const T cutoff = std::log(std::numeric_limits<T>::min());  // below: exp underflows to subnormal
        row = (row.array() - largest < cutoff).select(T(0), (row.array() - largest).exp());
        row /= row.sum();  // ≥ 1: the largest entry contributes exp(0)
    }
}

/// Softmax along each row. scores: (queries × keys) → weights (queries × keys), rows sum to 1.
template <class D>
Matrix<typename D::Scalar> softmax_rows(const Eigen::MatrixBase<D>& scores) {
    Matrix<typename D::Scalar> weights = scores;
    softmax_rows_in_place(weights);
    return weights;
}

}  // namespace attn
