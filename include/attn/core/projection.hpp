#pragma once
// Linear projections: token vectors times a weight matrix, plus an optional bias.
// Weights are stored (in × out), so a projection reads like the chapter's `x @ w_query`.

#include <Eigen/Core>

#include <type_traits>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

namespace detail {

/// project(x, weight) into `out`, resized to (positions × out) (no allocation if it has that
/// size already): the same checks and the same product, so the same bits.
template <class DX, class DW>
void project_into(const Eigen::MatrixBase<DX>& x, const Eigen::MatrixBase<DW>& weight,
                  Matrix<typename DX::Scalar>& out) {
    static_assert(std::is_same_v<typename DX::Scalar, typename DW::Scalar>,
                  "project: x and weight scalar types differ");
    check_not_empty("project", "x", x);
    check_not_empty("project", "weight", weight);
    check_rows("project", "weight", weight, x.cols(), "weight is (in × out) and x has `in` columns");
    out.resize(x.rows(), weight.cols());
    out.noalias() = x * weight;
}

}  // namespace detail

/// x · weight. x: (positions × in), weight: (in × out) → (positions × out).
template <class DX, class DW>
Matrix<typename DX::Scalar> project(const Eigen::MatrixBase<DX>& x, const Eigen::MatrixBase<DW>& weight) {
    Matrix<typename DX::Scalar> out;
    detail::project_into(x, weight, out);
    return out;
}

/// x · weight + bias. x: (positions × in), weight: (in × out), bias: out entries (row or column) → (positions × out).
template <class DX, class DW, class DB>
Matrix<typename DX::Scalar> project(const Eigen::MatrixBase<DX>& x, const Eigen::MatrixBase<DW>& weight,
                                    const Eigen::MatrixBase<DB>& bias) {
    static_assert(std::is_same_v<typename DX::Scalar, typename DB::Scalar>, "project: x and bias scalar types differ");
    detail::check_vector_size("project", "bias", bias, weight.cols());
    Matrix<typename DX::Scalar> out = project(x, weight);
    out.rowwise() += bias.reshaped().transpose();
    return out;
}

/// Queries, keys and values of one attention layer, kept as separate matrices.
template <class T>
struct QkvResult {
    Matrix<T> queries;  // (positions × width)
    Matrix<T> keys;     // (positions × width)
    Matrix<T> values;   // (positions × value width)
};

/// The three projections of x. x: (positions × in); w_query, w_key: (in × width); w_value: (in × value width).
template <class DX, class DQ, class DK, class DV>
QkvResult<typename DX::Scalar> project_qkv(const Eigen::MatrixBase<DX>& x, const Eigen::MatrixBase<DQ>& w_query,
                                           const Eigen::MatrixBase<DK>& w_key, const Eigen::MatrixBase<DV>& w_value) {
    if (w_query.cols() != w_key.cols())
        throw shape_error(detail::message("project_qkv: w_query has ", w_query.cols(), " columns but w_key has ",
                                          w_key.cols(), " (queries and keys must have the same width)"));
    return {project(x, w_query), project(x, w_key), project(x, w_value)};
}

}  // namespace attn
