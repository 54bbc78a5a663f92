#pragma once
// Normalisation over each row (each position's vector): LayerNorm (GPT-2, the store model)
// and RMSNorm (Llama, Qwen2).

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

/// A row's √(mean(x²) + ε): what RMS norm divides by (TransformerLens's hook_scale).
template <class Row>
typename Row::Scalar root_mean_square(const Eigen::ArrayBase<Row>& row, double epsilon) {
    using T = typename Row::Scalar;
    return std::sqrt(row.square().sum() / static_cast<T>(row.size()) + static_cast<T>(epsilon));
}

/// rms_norm's arithmetic, written into out (positions × width, already sized); unchecked.
template <class D, class DW, class DO>
void rms_norm_into(const Eigen::MatrixBase<D>& x, const Eigen::MatrixBase<DW>& weight, double epsilon,
                   const Eigen::MatrixBase<DO>& out) {
    using T = typename D::Scalar;
    auto& result = const_cast<Eigen::MatrixBase<DO>&>(out);  // Eigen's idiom for writable expressions
    const auto scale = weight.reshaped().transpose().array();
    for (Index i = 0; i < x.rows(); ++i) {
        const auto row = x.row(i).array();
        const T inverse = T(1) / root_mean_square(row, epsilon);
        result.row(i) = (row * inverse * scale).matrix();
    }
}

inline void check_epsilon(const char* function, double epsilon) {
    // epsilon 0 would turn a zero row into 0 / 0 = NaN
    if (!(epsilon > 0.0) || !std::isfinite(epsilon))
        throw argument_error(message(function, ": epsilon must be positive and finite, got ", epsilon));
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
    detail::check_epsilon("layer_norm", epsilon);
    Matrix<typename D::Scalar> out(x.rows(), x.cols());
    detail::layer_norm_into(x, weight, bias, epsilon, out);
    return out;
}

/// x / √(mean(x²) + epsilon) · weight along each row, as Llama's RMSNorm (no mean removed, no
/// bias). x: (positions × width); weight: width entries → (positions × width).
template <class D, class DW>
Matrix<typename D::Scalar> rms_norm(const Eigen::MatrixBase<D>& x, const Eigen::MatrixBase<DW>& weight,
                                    double epsilon = 1e-6) {
    detail::check_not_empty("rms_norm", "x", x);
    detail::check_vector_size("rms_norm", "weight", weight, x.cols());
    detail::check_epsilon("rms_norm", epsilon);
    Matrix<typename D::Scalar> out(x.rows(), x.cols());
    detail::rms_norm_into(x, weight, epsilon, out);
    return out;
}

/// rms_norm of each head of x on its own: the d numbers of head h (columns h·d … h·d + d − 1)
/// divided by their own root mean square, times the same weight (d entries) in every head, as
/// Qwen3's q_norm and k_norm. x: (positions × heads·d) → (positions × heads·d).
template <class D, class DW>
Matrix<typename D::Scalar> rms_norm_heads(const Eigen::MatrixBase<D>& x, const Eigen::MatrixBase<DW>& weight,
                                          Index heads, double epsilon = 1e-6) {
    detail::check_not_empty("rms_norm_heads", "x", x);
    detail::check_positive("rms_norm_heads", "heads", heads);
    if (x.cols() % heads != 0)
        throw shape_error(detail::message("rms_norm_heads: x has ", x.cols(), " columns, not a multiple of ", heads,
                                          " heads (x is positions × heads·d)"));
    const Index d = x.cols() / heads;
    detail::check_vector_size("rms_norm_heads", "weight", weight, d);
    detail::check_epsilon("rms_norm_heads", epsilon);
    Matrix<typename D::Scalar> out(x.rows(), x.cols());
    for (Index h = 0; h < heads; ++h)
        detail::rms_norm_into(x.middleCols(h * d, d), weight, epsilon, out.middleCols(h * d, d));
    return out;
}

}  // namespace attn
