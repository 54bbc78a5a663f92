#pragma once
// Layer normalisation over each row (each position's vector).

#include <Eigen/Core>

#include <cmath>
#include <utility>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

namespace detail {

/// A row's mean and √(biased variance + ε): what layer norm subtracts and divides by
/// (TransformerLens's hook_scale is the second).
template <class Row>
std::pair<typename Row::Scalar, typename Row::Scalar> mean_and_scale(const Eigen::ArrayBase<Row>& row, double epsilon) {
    using T = typename Row::Scalar;
    const T width = static_cast<T>(row.size());
    const T mean = row.sum() / width;
    const T variance = (row - mean).square().sum() / width;
    return {mean, std::sqrt(variance + static_cast<T>(epsilon))};
}

/// layer_norm's arithmetic, written into out (positions × width, already sized); unchecked.
template <class D, class DW, class DB, class DO>
void layer_norm_into(const Eigen::MatrixBase<D>& x, const Eigen::MatrixBase<DW>& weight,
                     const Eigen::MatrixBase<DB>& bias, double epsilon, const Eigen::MatrixBase<DO>& out) {
    using T = typename D::Scalar;
    auto& result = const_cast<Eigen::MatrixBase<DO>&>(out);  // Eigen's idiom for writable expressions
    const auto scale = weight.reshaped().transpose().array();
    const auto shift = bias.reshaped().transpose().array();
    for (Index i = 0; i < x.rows(); ++i) {
        const auto row = x.row(i).array();
        const auto [mean, deviation] = mean_and_scale(row, epsilon);
        const T inverse = T(1) / deviation;
        result.row(i) = ((row - mean) * inverse * scale + shift).matrix();
    }
}

}  // namespace detail

/// (x − mean) / √(variance + epsilon) · weight + bias along each row, with the biased
/// variance, as PyTorch's LayerNorm. x: (positions × width); weight, bias: width entries
/// → (positions × width).
template <class D, class DW, class DB>
Matrix<typename D::Scalar> layer_norm(const Eigen::MatrixBase<D>& x, const Eigen::MatrixBase<DW>& weight,
                                      const Eigen::MatrixBase<DB>& bias, double epsilon = 1e-5) {
    detail::check_not_empty("layer_norm", "x", x);
    detail::check_vector_size("layer_norm", "weight", weight, x.cols());
    detail::check_vector_size("layer_norm", "bias", bias, x.cols());
    // epsilon 0 would turn a constant row into 0 / 0 = NaN
    if (!(epsilon > 0.0) || !std::isfinite(epsilon))
        throw argument_error(detail::message("layer_norm: epsilon must be positive and finite, got ", epsilon));
    Matrix<typename D::Scalar> out(x.rows(), x.cols());
    detail::layer_norm_into(x, weight, bias, epsilon, out);
    return out;
}

}  // namespace attn
