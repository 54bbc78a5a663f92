#pragma once
// Rotary position embedding (RoPE, Su et al. 2021): each pair of a query's or key's
// numbers is rotated by an angle proportional to its position, so the dot product of
// a rotated query and key depends on their contents and the distance between them.

#include <Eigen/Core>

#include <cmath>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"

namespace attn {

/// Which numbers of a head form a rotated pair. Models disagree, so it is always explicit.
enum class RopePairing {
    rotate_half,  ///< j with j + size/2 (GPT-NeoX, LLaMA in Hugging Face, the store model)
    interleaved,  ///< 2j with 2j + 1 (the RoFormer paper, GPT-J, Meta's original LLaMA)
};

/// Rotations for heads of `head_size` numbers: pair j turns by position · base^(−2j/head_size).
template <class T>
class Rope {
public:
    /// head_size: even, > 0; base: > 0 (10000 in most models). The cos/sin of positions
    /// 0 … cached_positions − 1 are tabulated once (a model passes its context length);
    /// later positions are computed on the fly with the same arithmetic.
    Rope(Index head_size, RopePairing pairing, double base = 10000.0, Index cached_positions = 0)
        : head_size_(head_size), pairing_(pairing), base_(base) {
        detail::check_positive("Rope", "head_size", head_size);
        if (head_size % 2 != 0) throw argument_error(detail::message("Rope: head_size must be even, got ", head_size));
        if (!(base > 0.0) || !std::isfinite(base))
            throw argument_error(detail::message("Rope: base must be positive and finite, got ", base));
        for (Index j = 0; j < head_size / 2; ++j)
            frequencies_.push_back(std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(head_size)));
        if (cached_positions < 0) throw argument_error("Rope: cached_positions must be ≥ 0");
        cos_.resize(cached_positions, head_size / 2);
        sin_.resize(cached_positions, head_size / 2);
        for (Index p = 0; p < cached_positions; ++p)
            for (Index j = 0; j < head_size / 2; ++j) {
                cos_(p, j) = cosine(p, j);
                sin_(p, j) = sine(p, j);
            }
    }

    Index head_size() const { return head_size_; }
    RopePairing pairing() const { return pairing_; }
    double base() const { return base_; }

    /// Rotates every row of x in place; row i is at position first_position + i.
    /// x: (positions × head_size). Angles are computed in double, then rounded to T.
    template <class D>
    void apply(const Eigen::MatrixBase<D>& x, Index first_position = 0) const {
        auto& m = const_cast<Eigen::MatrixBase<D>&>(x);  // Eigen's idiom for writable expressions
        detail::check_cols("Rope::apply", "x", m, head_size_, "x is (positions × head_size)");
        if (first_position < 0) throw argument_error("Rope::apply: first_position must be ≥ 0");
        const Index half = head_size_ / 2;
        for (Index i = 0; i < m.rows(); ++i) {
            const Index position = first_position + i;
            const bool cached = position < cos_.rows();
            if (cached && pairing_ == RopePairing::rotate_half && m.innerStride() == 1) {
                // the same arithmetic on contiguous halves, which the compiler vectorises
                T* a = &m(i, 0);
                T* b = a + half;
                const T* c = &cos_(position, 0);
                const T* s = &sin_(position, 0);
                for (Index j = 0; j < half; ++j) {
                    const T xa = a[j], xb = b[j];
                    a[j] = xa * c[j] - xb * s[j];
                    b[j] = xb * c[j] + xa * s[j];
                }
                continue;
            }
            for (Index j = 0; j < half; ++j) {
                const T c = cached ? cos_(position, j) : cosine(position, j);
                const T s = cached ? sin_(position, j) : sine(position, j);
                const Index a = pairing_ == RopePairing::rotate_half ? j : 2 * j;
                const Index b = pairing_ == RopePairing::rotate_half ? j + half : 2 * j + 1;
                const T xa = m(i, a);
                const T xb = m(i, b);
                m(i, a) = xa * c - xb * s;
                m(i, b) = xb * c + xa * s;
            }
        }
    }

    /// Rotates every head of a stack: heads × (positions × head_size), in place.
    void apply(HeadStack<T>& stack, Index first_position = 0) const {
        for (Index h = 0; h < stack.heads(); ++h) apply(stack.head(h), first_position);
    }

private:
    double angle(Index position, Index j) const {
        return static_cast<double>(position) * frequencies_[static_cast<std::size_t>(j)];
    }
    T cosine(Index position, Index j) const { return static_cast<T>(std::cos(angle(position, j))); }
    T sine(Index position, Index j) const { return static_cast<T>(std::sin(angle(position, j))); }

    Index head_size_;
    RopePairing pairing_;
    double base_;
    std::vector<double> frequencies_;
    Matrix<T> cos_;  // (cached positions × head_size/2)
    Matrix<T> sin_;
};

}  // namespace attn
