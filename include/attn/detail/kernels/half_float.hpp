#pragma once
// The two 16-bit floating formats of checkpoints, one number at a time: F16 (IEEE binary16)
// and BF16 (the upper half of a float). Both widen to float exactly; the narrowing here is
// for numbers that came from the format (a weight read as float from a 16-bit tensor), which
// it gives back exactly.

#include <cstdint>
#include <cstring>

namespace attn::detail {

/// F16 (IEEE binary16) bits → float, exactly.
inline float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    const std::uint32_t mantissa = h & 0x3FFu;
    std::uint32_t bits = 0;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);  // infinity, or NaN (mantissa ≠ 0)
    } else if (exponent == 0) {
        // zero or subnormal: mantissa × 2^-24, exact in float
        const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

/// BF16 bits → float, exactly: they are the float's upper 16 bits.
inline float bfloat16_to_float(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

/// float → BF16 bits for a float that is a BF16 number (its lower 16 bits zero): exact.
inline std::uint16_t float_to_bfloat16_exact(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return static_cast<std::uint16_t>(bits >> 16);
}

/// float → F16 bits for a float that is an F16 number (zero, subnormal, normal, infinity or
/// NaN of F16's range and precision): exact, the inverse of half_to_float.
inline std::uint16_t float_to_half_exact(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t exponent = (bits >> 23) & 0xFFu;
    const std::uint32_t mantissa = bits & 0x7FFFFFu;
    if (exponent == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mantissa >> 13));
    if (exponent > 112)  // normal in F16: float exponents 113 … 142 are F16's 1 … 30
        return static_cast<std::uint16_t>(sign | ((exponent - 112) << 10) | (mantissa >> 13));
    // zero or subnormal in F16: |f| = m × 2^-24 with m < 1024, an integer
    const float magnitude = (f < 0 ? -f : f) * 16777216.0f;  // × 2^24, exact
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(magnitude));
}

}  // namespace attn::detail
