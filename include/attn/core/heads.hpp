#pragma once
// Splitting a layer's (positions × heads·size) matrix into heads and joining them back.
// Head h owns columns h·size … h·size + size − 1, as in PyTorch's
// reshape(positions, heads, size).transpose(0, 1).

#include <Eigen/Core>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// (positions × heads·size) → heads × (positions × size).
template <class D>
HeadStack<typename D::Scalar> split_heads(const Eigen::MatrixBase<D>& m, Index heads) {
    detail::check_positive("split_heads", "heads", heads);
    detail::check_not_empty("split_heads", "m", m);
    if (m.cols() % heads != 0)
        throw shape_error(detail::message("split_heads: heads = ", heads, " does not divide the width ", m.cols()));
    const Index size = m.cols() / heads;
    HeadStack<typename D::Scalar> stack(heads, m.rows(), size);
    for (Index h = 0; h < heads; ++h) stack.head(h) = m.middleCols(h * size, size);
    return stack;
}

/// heads × (positions × size) → (positions × heads·size), the inverse of split_heads.
template <class T>
Matrix<T> merge_heads(const HeadStack<T>& stack) {
    if (stack.empty()) throw shape_error("merge_heads: stack is empty");
    const Index size = stack.cols();
    Matrix<T> joined(stack.rows(), stack.heads() * size);
    for (Index h = 0; h < stack.heads(); ++h) joined.middleCols(h * size, size) = stack.head(h);
    return joined;
}

}  // namespace attn
