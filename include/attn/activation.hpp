#pragma once
// Activation functions of transformer MLPs, applied elementwise.

#include <Eigen/Core>

#include <cmath>

#include "attn/types.hpp"

namespace attn {

/// GELU with the exact error function: x · ½ · (1 + erf(x / √2)), as PyTorch's default
/// nn.GELU(). Applied in place to every entry of x (any shape).
template <class D>
void gelu_in_place(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    auto& m = const_cast<Eigen::MatrixBase<D>&>(x);  // Eigen's idiom for writable expressions
    const T inverse_sqrt2 = T(0.70710678118654752440);
    m = m.unaryExpr([inverse_sqrt2](T v) { return v * T(0.5) * (T(1) + std::erf(v * inverse_sqrt2)); });
}

/// GELU with the tanh approximation (GPT-2's "gelu_new"), in place.
template <class D>
void gelu_tanh_in_place(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    auto& m = const_cast<Eigen::MatrixBase<D>&>(x);
    const T c = T(0.79788456080286535588);  // √(2/π)
    m = m.unaryExpr([c](T v) { return T(0.5) * v * (T(1) + std::tanh(c * (v + T(0.044715) * v * v * v))); });
}

}  // namespace attn
