#pragma once
// Activation functions of transformer MLPs, applied elementwise.

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // vectorised erf

#include <cmath>

#include "attn/core/types.hpp"

namespace attn {

/// GELU with the exact error function: x · ½ · (1 + erf(x / √2)), as PyTorch's default
/// nn.GELU(). Applied in place to every entry of x (any shape). erf is Eigen's (vectorised
/// for float, within a few ulp of std::erf; std::erf for double).
template <class D>
void gelu_in_place(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    auto& m = const_cast<Eigen::MatrixBase<D>&>(x);  // Eigen's idiom for writable expressions
    const T inverse_sqrt2 = T(0.70710678118654752440);
    m.array() = m.array() * T(0.5) * ((m.array() * inverse_sqrt2).erf() + T(1));
}

/// GELU with the tanh approximation (GPT-2's "gelu_new"), in place. tanh is Eigen's
/// (vectorised for float, within a few ulp of std::tanh; std::tanh for double): a scalar
/// std::tanh per entry took a tenth of a GPT-2 forward.
template <class D>
void gelu_tanh_in_place(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    auto& m = const_cast<Eigen::MatrixBase<D>&>(x);  // Eigen's idiom for writable expressions
    const T c = T(0.79788456080286535588);           // √(2/π)
    const auto v = m.array();
    m.array() = T(0.5) * v * ((c * (v + T(0.044715) * v * v * v)).tanh() + T(1));
}

/// SiLU (swish): x · sigmoid(x) = x / (1 + exp(−x)), the gate of Llama's SwiGLU MLP, in place.
template <class D>
void silu_in_place(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    auto& m = const_cast<Eigen::MatrixBase<D>&>(x);
    m.array() = m.array() / ((-m.array()).exp() + T(1));
}

}  // namespace attn
