#pragma once
// Splitting a layer's (positions × heads·size) matrix into heads and joining them back.
// Head h owns columns h·size … h·size + size − 1, as in PyTorch's
// reshape(positions, heads, size).transpose(0, 1).

#include <Eigen/Core>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

namespace detail {

/// Makes `stack` heads × (rows × cols), reallocating (zero-filled) only if its shape differs:
/// working memory, whose old contents do not matter.
template <class T>
void fit(HeadStack<T>& stack, Index heads, Index rows, Index cols) {
    if (stack.heads() != heads || stack.rows() != rows || stack.cols() != cols) stack = HeadStack<T>(heads, rows, cols);
}

/// split_heads(m, heads) into `stack`, refitted as fit() does.
template <class D>
void split_heads_into(const Eigen::MatrixBase<D>& m, Index heads, HeadStack<typename D::Scalar>& stack) {
    check_positive("split_heads", "heads", heads);
    check_not_empty("split_heads", "m", m);
    if (m.cols() % heads != 0)
        throw shape_error(message("split_heads: heads = ", heads, " does not divide the width ", m.cols()));
    const Index size = m.cols() / heads;
    fit(stack, heads, m.rows(), size);
    for (Index h = 0; h < heads; ++h) stack.head(h) = m.middleCols(h * size, size);
}

/// merge_heads(stack) into `joined`, resized to (positions × heads·size).
template <class T>
void merge_heads_into(const HeadStack<T>& stack, Matrix<T>& joined) {
    if (stack.empty()) throw shape_error("merge_heads: stack is empty");
    const Index size = stack.cols();
    joined.resize(stack.rows(), stack.heads() * size);
    for (Index h = 0; h < stack.heads(); ++h) joined.middleCols(h * size, size) = stack.head(h);
}

}  // namespace detail

/// (positions × heads·size) → heads × (positions × size).
template <class D>
HeadStack<typename D::Scalar> split_heads(const Eigen::MatrixBase<D>& m, Index heads) {
    HeadStack<typename D::Scalar> stack;
    detail::split_heads_into(m, heads, stack);
    return stack;
}

/// heads × (positions × size) → (positions × heads·size), the inverse of split_heads.
template <class T>
Matrix<T> merge_heads(const HeadStack<T>& stack) {
    Matrix<T> joined;
    detail::merge_heads_into(stack, joined);
    return joined;
}

}  // namespace attn
