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

/// How a model stretches its rotary frequencies to a longer context than it was trained on.
struct RopeScaling {
    enum class Kind {
        none,    ///< base^(−2j/r) as it is
        linear,  ///< every frequency ÷ factor (positions ÷ factor): Hugging Face's "linear"
        llama3,  ///< long wavelengths ÷ factor, short ones kept, a smooth blend between (Llama 3.1/3.2)
        /// frequency j ÷ divisors[j]: llama.cpp's rope_freqs tensor, the converter's tabulation of
        /// llama3's divisors (GGUF keeps the table, not the four numbers it came from)
        divisors,
    };
    Kind kind = Kind::none;
    double factor = 1.0;
    double low_frequency_factor = 1.0;   ///< llama3: wavelengths beyond original_context ÷ this are scaled
    double high_frequency_factor = 4.0;  ///< llama3: wavelengths below original_context ÷ this are kept
    double original_context = 8192.0;    ///< llama3: the context the model was trained on
    std::vector<double> divisors{};      ///< divisors: one per rotated pair (rotated / 2), each > 0
};

/// What turns in each head: its first `rotated` numbers (all of them in most models; a
/// fraction in GPT-NeoX and Phi-3), paired as `pairing` says, pair j by position · frequency j.
struct RotarySpec {
    Index rotated = 0;  ///< even, ≤ head size; 0: nothing rotates
    RopePairing pairing = RopePairing::rotate_half;
    double base = 10000.0;
    RopeScaling scaling{};
};

/// Pair j's angle per position, j = 0 … rotated/2 − 1: base^(−2j/rotated), then scaled.
/// llama3 follows Llama 3.1's formula: wavelength λ = 2π/f; λ > original/low: f/factor;
/// λ < original/high: f; between: (1 − s)·f/factor + s·f, s = (original/λ − low)/(high − low).
/// divisors: f / divisors[j] (argument_error unless there is one per pair).
inline std::vector<double> rope_frequencies(Index rotated, double base, const RopeScaling& scaling) {
    if (scaling.kind == RopeScaling::Kind::divisors && static_cast<Index>(scaling.divisors.size()) != rotated / 2)
        throw argument_error(detail::message("rope_frequencies: ", scaling.divisors.size(), " frequency divisors for ",
                                             rotated / 2, " rotated pairs"));
    std::vector<double> frequencies;
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (Index j = 0; j < rotated / 2; ++j) {
        const double f = std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(rotated));
        double scaled = f;
        if (scaling.kind == RopeScaling::Kind::linear) {
            scaled = f / scaling.factor;
        } else if (scaling.kind == RopeScaling::Kind::divisors) {
            scaled = f / scaling.divisors[static_cast<std::size_t>(j)];
        } else if (scaling.kind == RopeScaling::Kind::llama3) {
            const double wavelength = kTwoPi / f;
            const double low = scaling.original_context / scaling.low_frequency_factor;
            const double high = scaling.original_context / scaling.high_frequency_factor;
            if (wavelength > low) {
                scaled = f / scaling.factor;
            } else if (wavelength >= high) {
                const double s = (scaling.original_context / wavelength - scaling.low_frequency_factor) /
                                 (scaling.high_frequency_factor - scaling.low_frequency_factor);
                scaled = (1.0 - s) * f / scaling.factor + s * f;
            }
        }
        frequencies.push_back(scaled);
    }
    return frequencies;
}

/// Rotations for heads of `head_size` numbers: pair j turns by position · base^(−2j/head_size)
/// (or as a RotarySpec says: only the first numbers of a head, frequencies scaled).
template <class T>
class Rope {
public:
    /// head_size: even, > 0; base: > 0 (10000 in most models). The cos/sin of positions
    /// 0 … cached_positions − 1 are tabulated once (a model passes its context length);
    /// later positions are computed on the fly with the same arithmetic.
    Rope(Index head_size, RopePairing pairing, double base = 10000.0, Index cached_positions = 0)
        : Rope(head_size, RotarySpec{head_size, pairing, base, {}}, cached_positions) {}

    /// Heads of head_size numbers whose first spec.rotated turn (even, 0 < rotated ≤ head_size).
    Rope(Index head_size, const RotarySpec& spec, Index cached_positions = 0)
        : head_size_(head_size), rotated_(spec.rotated), pairing_(spec.pairing), base_(spec.base) {
        detail::check_positive("Rope", "head_size", head_size);
        if (spec.rotated <= 0 || spec.rotated > head_size || spec.rotated % 2 != 0)
            throw argument_error(detail::message("Rope: the rotated numbers of a head must be even and 1 … head_size (",
                                                 head_size, "), got ", spec.rotated));
        if (!(spec.base > 0.0) || !std::isfinite(spec.base))
            throw argument_error(detail::message("Rope: base must be positive and finite, got ", spec.base));
        if (spec.scaling.kind != RopeScaling::Kind::none &&
            (!(spec.scaling.factor > 0.0) || !std::isfinite(spec.scaling.factor)))
            throw argument_error(
                detail::message("Rope: the scaling factor must be positive and finite, got ", spec.scaling.factor));
        if (spec.scaling.kind == RopeScaling::Kind::divisors) {
            if (static_cast<Index>(spec.scaling.divisors.size()) != spec.rotated / 2)
                throw argument_error(detail::message("Rope: ", spec.scaling.divisors.size(), " frequency divisors for ",
                                                     spec.rotated / 2, " rotated pairs"));
            for (const double divisor : spec.scaling.divisors)
                if (!(divisor > 0.0) || !std::isfinite(divisor))
                    throw argument_error(
                        detail::message("Rope: frequency divisors must be positive and finite, got ", divisor));
        }
        frequencies_ = rope_frequencies(rotated_, spec.base, spec.scaling);
        if (cached_positions < 0) throw argument_error("Rope: cached_positions must be ≥ 0");
        const Index half = rotated_ / 2;
        cos_.resize(cached_positions, half);
        sin_.resize(cached_positions, half);
        for (Index p = 0; p < cached_positions; ++p)
            for (Index j = 0; j < half; ++j) {
                cos_(p, j) = cosine(p, j);
                sin_(p, j) = sine(p, j);
            }
    }

    Index head_size() const { return head_size_; }
    /// The numbers of each head that turn: the first rotated() of head_size().
    Index rotated() const { return rotated_; }
    RopePairing pairing() const { return pairing_; }
    double base() const { return base_; }

    /// Rotates every row of x in place; row i is at position first_position + i.
    /// x: (positions × head_size). Angles are computed in double, then rounded to T.
    template <class D>
    void apply(const Eigen::MatrixBase<D>& x, Index first_position = 0) const {
        auto& m = const_cast<Eigen::MatrixBase<D>&>(x);  // Eigen's idiom for writable expressions
        detail::check_cols("Rope::apply", "x", m, head_size_, "x is (positions × head_size)");
        if (first_position < 0) throw argument_error("Rope::apply: first_position must be ≥ 0");
        const Index half = rotated_ / 2;
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
    Index rotated_;
    RopePairing pairing_;
    double base_;
    std::vector<double> frequencies_;
    Matrix<T> cos_;  // (cached positions × rotated/2)
    Matrix<T> sin_;
};

}  // namespace attn
