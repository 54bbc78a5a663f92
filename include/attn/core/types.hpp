#pragma once
// Core types: row-major Eigen matrices and HeadStack, a (heads × rows × cols)
// tensor with one contiguous row-major (rows × cols) matrix per head.

#include <Eigen/Core>

#include <cstddef>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/large_arrays.hpp"

static_assert(EIGEN_VERSION_AT_LEAST(3, 4, 0), "attn needs Eigen 3.4 or newer (reshaped(), PropagateNaN)");

namespace attn {

using Index = Eigen::Index;

/// Dense row-major matrix; rows are positions throughout attn.
template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Dense column vector (biases, norm parameters).
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

/// A stack of equally shaped matrices: heads × (rows × cols).
///
/// Used for split queries, keys and values (heads × positions × head size) and for
/// attention weights (heads × positions × positions; see AttentionWeights). The head
/// axis comes first, as in PyTorch's (heads, positions, positions) weights: head(h)
/// is one contiguous row-major matrix, so head(h)(i, j) is how much query position i
/// of head h takes from key position j.
template <class T>
class HeadStack {
public:
    using Scalar = T;
    using HeadMap = Eigen::Map<Matrix<T>>;
    using ConstHeadMap = Eigen::Map<const Matrix<T>>;

    HeadStack() = default;

    /// heads × (rows × cols), zero-filled.
    HeadStack(Index heads, Index rows, Index cols)
        : heads_(heads),
          rows_(rows),
          cols_(cols),
          values_(detail::checked_size("HeadStack", heads, rows, cols), T(0)) {}

    Index heads() const { return heads_; }
    Index rows() const { return rows_; }
    Index cols() const { return cols_; }
    /// Positions of an attention-weights stack (rows; equal to cols there).
    Index positions() const { return rows_; }
    bool empty() const { return values_.empty(); }

    /// Head h as a (rows × cols) matrix view. Throws argument_error if h is out of range.
    HeadMap head(Index h) { return HeadMap(values_.data() + offset(h), rows_, cols_); }
    ConstHeadMap head(Index h) const { return ConstHeadMap(values_.data() + offset(h), rows_, cols_); }

    /// Element (h, row, col), unchecked like Eigen's operator().
    T& operator()(Index h, Index row, Index col) { return values_[index(h, row, col)]; }
    const T& operator()(Index h, Index row, Index col) const { return values_[index(h, row, col)]; }

    /// The whole stack, heads × rows × cols in row-major order.
    T* data() { return values_.data(); }
    const T* data() const { return values_.data(); }
    std::size_t size() const { return values_.size(); }

    friend bool operator==(const HeadStack& a, const HeadStack& b) {
        return a.heads_ == b.heads_ && a.rows_ == b.rows_ && a.cols_ == b.cols_ && a.values_ == b.values_;
    }
    friend bool operator!=(const HeadStack& a, const HeadStack& b) { return !(a == b); }

private:
    std::size_t offset(Index h) const {
        detail::check_index("HeadStack::head", "h", h, heads_);
        return static_cast<std::size_t>(h) * static_cast<std::size_t>(rows_ * cols_);
    }
    std::size_t index(Index h, Index row, Index col) const {
        return static_cast<std::size_t>((h * rows_ + row) * cols_ + col);
    }

    Index heads_ = 0;
    Index rows_ = 0;
    Index cols_ = 0;
    std::vector<T, detail::LargeArrayAllocator<T>> values_;  // 2 MiB pages for large stacks (large_arrays.hpp)
};

/// Key positions first … last − 1; last = −1 means up to the last key.
struct KeyRange {
    Index first = 0;
    Index last = -1;
};

/// Attention weights of one layer: heads × (positions × positions), query rows, key columns.
template <class T>
using AttentionWeights = HeadStack<T>;

}  // namespace attn
