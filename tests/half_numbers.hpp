#pragma once
// 16-bit weights for the tests of products on them (test_half_weights.cpp, test_bfloat16_pairs.cpp):
// random BF16 and F16 matrices, and their numbers' values computed from the bits by arithmetic
// written here (sign × mantissa × 2^exponent), not by the library's conversions.

#include <attn/core/types.hpp>
#include <attn/detail/kernels/weight_panels.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace attn::test {

/// A (rows × cols) matrix of random numbers of `format`, packed in panels: finite numbers around 1,
/// 2^-7 … 2^2 (and a few subnormals in F16). (row_major: the same numbers row by row, as a
/// checkpoint holds them.)
inline detail::HalfMatrix random_half_matrix(Index rows, Index cols, detail::HalfFormat format, unsigned seed,
                                             std::vector<std::uint16_t>* row_major = nullptr) {
    std::mt19937 engine(seed);
    std::vector<std::uint16_t> numbers(std::size_t(rows * cols));
    for (std::uint16_t& bits : numbers) {
        // sign, exponent, mantissa
        const std::uint32_t sign = engine() & 1u;
        if (format == detail::HalfFormat::bfloat16) {
            const std::uint32_t exponent = 120 + engine() % 10;  // 2^-7 … 2^2
            bits = std::uint16_t(sign << 15 | exponent << 7 | (engine() & 0x7Fu));
        } else {
            const std::uint32_t exponent = engine() % 8 == 0 ? 0 : 8 + engine() % 10;  // subnormal, or 2^-7 … 2^2
            bits = std::uint16_t(sign << 15 | exponent << 10 | (engine() & 0x3FFu));
        }
    }
    if (row_major) *row_major = numbers;
    return detail::HalfMatrix::packed(format, rows, cols, numbers.data());
}

/// The value of a finite 16-bit number of `format`, from its bits.
inline double independent_half_value(std::uint16_t bits, detail::HalfFormat format) {
    const int sign = bits >> 15 ? -1 : 1;
    if (format == detail::HalfFormat::bfloat16) {
        const int exponent = (bits >> 7) & 0xFF, mantissa = bits & 0x7F;
        return sign * std::ldexp(exponent == 0 ? mantissa : 128 + mantissa, (exponent == 0 ? 1 : exponent) - 134);
    }
    const int exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
    return sign * std::ldexp(exponent == 0 ? mantissa : 1024 + mantissa, (exponent == 0 ? 1 : exponent) - 25);
}

}  // namespace attn::test
