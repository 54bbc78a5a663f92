#pragma once
// NumPy-identical random numbers, for cross-checks against NumPy.
//
//     attn::numpy::Generator rng = attn::numpy::default_rng(2026);
//     attn::Matrix<double> x = rng.normal(0.0, 1.0, 4, 8);   // == np.random.default_rng(2026).normal(0, 1, (4, 8))
//
// This header exists so that C++ code can reproduce, bit for bit, the draws of
// `np.random.default_rng(seed)`: the chapter's listings, golden values computed in
// NumPy, any test that compares attn with a NumPy reference. It is NOT a
// general-purpose random number API: it has only what such cross-checks need (raw
// 64-bit words, random(), standard_normal(), normal()), no integers(), no other
// distributions, no spawning or jumping, no float32 ziggurat (a Matrix<float> holds
// the double draws rounded, like NumPy's `.astype(np.float32)`). For random numbers
// in your own program, use <random>.
//
// What is reproduced, from NumPy's numpy/random sources (NumPy ≥ 1.17, whose
// default_rng is PCG64 seeded by SeedSequence):
//   * SeedSequence(entropy): the entropy as 32-bit words (an integer seed is split
//     into little-endian words, 0 being one word), hashed into a pool of 4 words;
//     generate_state(4, uint64) gives the PCG64 seed.
//   * PCG64: a 128-bit LCG with NumPy's multiplier and seeding (state = 0, increment
//     = 2·seq + 1, step, add the initial state, step) and the XSL-RR output.
//   * random(): (next_uint64 >> 11) · 2⁻⁵³.
//   * standard_normal(): NumPy's 256-layer ziggurat (random_standard_normal), with
//     its tables generated bit-exact by tools/references/ziggurat_tables.py into
//     attn/detail/ziggurat_tables.hpp; normal(loc, scale) = loc + scale · standard_normal().
// Arrays are filled in C (row-major) order, as NumPy fills them.
//
// Exactness: tests/test_numpy_random.cpp compares with NumPy's draws with == (every
// raw word, random() and normal value of several seeds, and 100,000 normals that take
// the wedge and tail paths). The ziggurat's rare slow paths call std::exp and
// std::log1p, so identity assumes the C library's exp and log1p give the results
// NumPy's did (true when both use the same libm, as on one machine); products are
// rounded before they are added, so an FMA-contracting compiler flag
// (-ffp-contract=fast with -march=native) cannot change a result.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/ziggurat_tables.hpp"
#include "attn/error.hpp"

namespace attn::numpy {

namespace detail {

/// a · b rounded to double before anything is added to it: the volatile store keeps
/// the compiler from fusing it with a following addition into an FMA, which NumPy's
/// x86-64 build does not do.
inline double rounded_product(double a, double b) {
    volatile double product = a * b;
    return product;
}

/// Unsigned 128-bit integer arithmetic modulo 2¹²⁸, portable (no __int128).
struct UInt128 {
    std::uint64_t high = 0;
    std::uint64_t low = 0;

    friend bool operator==(const UInt128& a, const UInt128& b) { return a.high == b.high && a.low == b.low; }
    friend bool operator!=(const UInt128& a, const UInt128& b) { return !(a == b); }
};

inline UInt128 add(UInt128 a, UInt128 b) {
    UInt128 sum;
    sum.low = a.low + b.low;
    sum.high = a.high + b.high + (sum.low < a.low ? 1 : 0);
    return sum;
}

/// High 64 bits of the 128-bit product a · b.
inline std::uint64_t multiply_high(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t a_low = a & 0xffffffffu, a_high = a >> 32;
    const std::uint64_t b_low = b & 0xffffffffu, b_high = b >> 32;
    const std::uint64_t low_low = a_low * b_low;
    const std::uint64_t high_low = a_high * b_low;
    const std::uint64_t low_high = a_low * b_high;
    const std::uint64_t high_high = a_high * b_high;
    const std::uint64_t middle = (low_low >> 32) + (high_low & 0xffffffffu) + low_high;
    return high_high + (high_low >> 32) + (middle >> 32);
}

inline UInt128 multiply(UInt128 a, UInt128 b) {
    UInt128 product;
    product.low = a.low * b.low;
    product.high = multiply_high(a.low, b.low) + a.high * b.low + a.low * b.high;
    return product;
}

inline UInt128 shift_left_1(UInt128 a) {
    return {(a.high << 1) | (a.low >> 63), a.low << 1};
}

}  // namespace detail

/// NumPy's SeedSequence for entropy given as 32-bit words, with no spawn key and the
/// default pool of 4 words: SeedSequence(entropy).generate_state(...).
class SeedSequence {
public:
    static constexpr std::size_t pool_size = 4;

    /// The entropy as NumPy coerces it: a list of 32-bit words, e.g. {w0, w1} for
    /// SeedSequence([w0, w1]) or for the integer w0 + w1·2³². Must not be empty.
    explicit SeedSequence(std::vector<std::uint32_t> entropy) : entropy_(std::move(entropy)) {
        if (entropy_.empty())
            throw argument_error(
                "numpy::SeedSequence: entropy must have at least one word (NumPy would draw "
                "fresh OS entropy, which cannot be reproduced)");
        mix_entropy();
    }

    /// SeedSequence(seed) for a non-negative integer seed.
    explicit SeedSequence(std::uint64_t seed) : SeedSequence(integer_words(seed)) {}

    /// How NumPy splits a non-negative integer into 32-bit words: little-endian, no
    /// high zero words, and 0 is the single word {0}.
    static std::vector<std::uint32_t> integer_words(std::uint64_t value) {
        std::vector<std::uint32_t> words;
        do {
            words.push_back(static_cast<std::uint32_t>(value & 0xffffffffu));
            value >>= 32;
        } while (value != 0);
        return words;
    }

    const std::vector<std::uint32_t>& entropy() const { return entropy_; }
    const std::array<std::uint32_t, pool_size>& pool() const { return pool_; }

    /// generate_state(n_words) with dtype uint32.
    std::vector<std::uint32_t> generate_state_32(std::size_t n_words) const {
        std::vector<std::uint32_t> state(n_words);
        std::uint32_t hash_constant = init_b;
        for (std::size_t i = 0; i < n_words; ++i) {
            std::uint32_t value = pool_[i % pool_size];
            value ^= hash_constant;
            hash_constant *= mult_b;
            value *= hash_constant;
            value ^= value >> xshift;
            state[i] = value;
        }
        return state;
    }

    /// generate_state(n_words, np.uint64): 2·n_words 32-bit words, paired little-endian.
    std::vector<std::uint64_t> generate_state_64(std::size_t n_words) const {
        const std::vector<std::uint32_t> halves = generate_state_32(2 * n_words);
        std::vector<std::uint64_t> state(n_words);
        for (std::size_t i = 0; i < n_words; ++i)
            state[i] = std::uint64_t{halves[2 * i]} | (std::uint64_t{halves[2 * i + 1]} << 32);
        return state;
    }

private:
    static constexpr std::uint32_t init_a = 0x43b0d7e5u;
    static constexpr std::uint32_t mult_a = 0x931e8875u;
    static constexpr std::uint32_t init_b = 0x8b51f9ddu;
    static constexpr std::uint32_t mult_b = 0x58f38dedu;
    static constexpr std::uint32_t mix_mult_l = 0xca01f9ddu;
    static constexpr std::uint32_t mix_mult_r = 0x4973f715u;
    static constexpr unsigned xshift = 16;

    // The hash's multiplier changes with every use, so it is threaded through.
    static std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_constant) {
        value ^= hash_constant;
        hash_constant *= mult_a;
        value *= hash_constant;
        value ^= value >> xshift;
        return value;
    }

    static std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
        std::uint32_t result = mix_mult_l * x - mix_mult_r * y;
        result ^= result >> xshift;
        return result;
    }

    void mix_entropy() {
        std::uint32_t hash_constant = init_a;
        for (std::size_t i = 0; i < pool_size; ++i)
            pool_[i] = hashmix(i < entropy_.size() ? entropy_[i] : 0u, hash_constant);
        for (std::size_t source = 0; source < pool_size; ++source)
            for (std::size_t target = 0; target < pool_size; ++target)
                if (source != target) pool_[target] = mix(pool_[target], hashmix(pool_[source], hash_constant));
        for (std::size_t source = pool_size; source < entropy_.size(); ++source)
            for (std::size_t target = 0; target < pool_size; ++target)
                pool_[target] = mix(pool_[target], hashmix(entropy_[source], hash_constant));
    }

    std::vector<std::uint32_t> entropy_;
    std::array<std::uint32_t, pool_size> pool_{};
};

/// NumPy's PCG64 bit generator: PCG XSL-RR 128/64 (O'Neill 2014), seeded as NumPy does.
class Pcg64 {
public:
    /// A 128-bit value as (high, low) 64-bit halves, as NumPy's state dict shows it
    /// (state = high · 2⁶⁴ + low).
    using UInt128 = detail::UInt128;

    explicit Pcg64(const SeedSequence& seed) {
        const std::vector<std::uint64_t> words = seed.generate_state_64(4);
        const UInt128 initial_state{words[0], words[1]};
        const UInt128 sequence{words[2], words[3]};
        increment_ = detail::shift_left_1(sequence);
        increment_.low |= 1u;
        state_ = UInt128{};
        step();
        state_ = detail::add(state_, initial_state);
        step();
    }

    /// The next 64 random bits (NumPy's random_raw()).
    std::uint64_t next_uint64() {
        step();
        const std::uint64_t folded = state_.high ^ state_.low;
        const unsigned rotation = static_cast<unsigned>(state_.high >> 58);
        return (folded >> rotation) | (folded << ((64u - rotation) & 63u));
    }

    /// bit_generator.state["state"]["state"] and ["inc"].
    UInt128 state() const { return state_; }
    UInt128 increment() const { return increment_; }

private:
    void step() { state_ = detail::add(detail::multiply(state_, multiplier()), increment_); }
    static constexpr UInt128 multiplier() { return {2549297995355413924ULL, 4865540595714422341ULL}; }

    UInt128 state_;
    UInt128 increment_;
};

/// np.random.Generator(PCG64(seed)) for the draws listed at the top of this header.
class Generator {
public:
    explicit Generator(const SeedSequence& seed) : bits_(seed) {}

    /// 64 random bits: bit_generator.random_raw().
    std::uint64_t next_uint64() { return bits_.next_uint64(); }

    /// Uniform on [0, 1) with 53 random bits: Generator.random().
    double random() { return static_cast<double>(next_uint64() >> 11) * (1.0 / 9007199254740992.0); }

    /// Generator.standard_normal(): NumPy's 256-layer ziggurat.
    double standard_normal() {
        using namespace detail;
        for (;;) {
            // One word: 8 bits pick the layer, 1 the sign, 52 the magnitude.
            std::uint64_t bits = next_uint64();
            const std::size_t layer = static_cast<std::size_t>(bits & 0xffu);
            bits >>= 8;
            const bool negative = (bits & 1u) != 0;
            const std::uint64_t magnitude = (bits >> 1) & 0x000fffffffffffffULL;
            double x = static_cast<double>(magnitude) * ziggurat_wi[layer];
            if (negative) x = -x;
            if (magnitude < ziggurat_ki[layer]) return x;  // inside the layer's inner rectangle: ~99% of draws
            if (layer == 0) {
                // The tail beyond r (Marsaglia's method); 1 − U avoids log(0).
                for (;;) {
                    const double xx = -ziggurat_inv_r * std::log1p(-random());
                    const double yy = -std::log1p(-random());
                    if (yy + yy > rounded_product(xx, xx))
                        return ((magnitude >> 8) & 1u) != 0 ? -(ziggurat_r + xx) : ziggurat_r + xx;
                }
            }
            // The wedge between the layer's rectangle and the density.
            const double height =
                rounded_product(ziggurat_fi[layer - 1] - ziggurat_fi[layer], random()) + ziggurat_fi[layer];
            if (height < std::exp(-0.5 * x * x)) return x;
        }
    }

    /// Generator.normal(loc, scale) = loc + scale · standard_normal(). scale must not
    /// be negative (NumPy's check: −0.0 is refused too, NaN is let through).
    double normal(double loc, double scale) {
        check_scale(scale);
        return loc + detail::rounded_product(scale, standard_normal());
    }

    /// Generator.normal(loc, scale, (rows, cols)), filled in row-major order, then cast to T.
    template <class T = double>
    Matrix<T> normal(double loc, double scale, Index rows, Index cols) {
        static_assert(std::is_floating_point_v<T>, "numpy::Generator::normal: T must be a floating-point type");
        check_scale(scale);
        return fill<T>("normal", rows, cols, [&] { return loc + detail::rounded_product(scale, standard_normal()); });
    }

    /// Generator.standard_normal((rows, cols)), row-major, cast to T.
    template <class T = double>
    Matrix<T> standard_normal(Index rows, Index cols) {
        static_assert(std::is_floating_point_v<T>,
                      "numpy::Generator::standard_normal: T must be a floating-point type");
        return fill<T>("standard_normal", rows, cols, [&] { return standard_normal(); });
    }

    /// Generator.random((rows, cols)), row-major, cast to T.
    template <class T = double>
    Matrix<T> random(Index rows, Index cols) {
        static_assert(std::is_floating_point_v<T>, "numpy::Generator::random: T must be a floating-point type");
        return fill<T>("random", rows, cols, [&] { return random(); });
    }

    const Pcg64& bit_generator() const { return bits_; }

private:
    static void check_scale(double scale) {
        if (!std::isnan(scale) && std::signbit(scale))
            throw argument_error(attn::detail::message("numpy::Generator::normal: scale must be ≥ 0, got ", scale));
    }

    template <class T, class Draw>
    static Matrix<T> fill(const char* function, Index rows, Index cols, Draw draw) {
        if (rows < 0 || cols < 0)
            throw argument_error(
                attn::detail::message("numpy::Generator::", function, ": negative shape (", rows, ", ", cols, ")"));
        Matrix<T> m(rows, cols);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < cols; ++j) m(i, j) = static_cast<T>(draw());
        return m;
    }

    Pcg64 bits_;
};

/// np.random.default_rng(seed) for a non-negative integer seed (any width up to 2⁶⁴ − 1;
/// seeds ≥ 2³² are split into 32-bit words as NumPy does).
inline Generator default_rng(std::uint64_t seed) {
    return Generator(SeedSequence(seed));
}

/// np.random.default_rng(seed) for a signed integer type: throws argument_error for a
/// negative seed, as NumPy raises ValueError.
template <class Int, std::enable_if_t<std::is_integral_v<Int> && std::is_signed_v<Int>, int> = 0>
Generator default_rng(Int seed) {
    if (seed < 0) throw argument_error(attn::detail::message("numpy::default_rng: seed must be ≥ 0, got ", seed));
    return default_rng(static_cast<std::uint64_t>(seed));
}

/// np.random.default_rng([w0, w1, …]) with every wᵢ < 2³²; also an integer seed of any
/// size given by its little-endian 32-bit words (default_rng(2**100 + 5) is
/// default_rng({5, 0, 0, 16})).
inline Generator default_rng(std::vector<std::uint32_t> words) {
    return Generator(SeedSequence(std::move(words)));
}

}  // namespace attn::numpy
