#pragma once
// A row of activations as integer digits, for the decoding products on quantized weights that
// use AVX-512 VNNI's byte dot products (quantized_weights.hpp): each chunk of 32 values x is
//
//   x = 2^e · (X1 + X2 / 2^7 + X3 / 2^14) + r,   |r| ≤ 2^(e − 15),
//
// X1, X2, X3 signed bytes and e the chunk's own exponent, chosen so that max |x| / 2^e lies in
// [63.75, 127.5): |X1| ≤ 127, |X2|, |X3| ≤ 64, and every value is kept to within
// max |x| / (63.75 · 2^15) < max |x| · 2^-20.99 of the chunk (float keeps each value to
// |x| · 2^-24). Each step is exact in float: y = x · 2^-e scales by a power of 2; X1 = round(y);
// (y − X1) · 2^7 keeps y's own bits; and so on (a value below 2^(e − 126), far under the last
// digit, may round to a subnormal: within the same bound). The 64 codes u of a weight row's values
// 64g … 64g + 63 (one 512-bit register of bytes) then give, per 32-bit lane l of four values,
//
//   Σ_{i in l} u_i · (X1_i · 2^14 + X2_i · 2^7 + X3_i)
//
// exactly, by three dot products on bytes (vpdpbusd) with shifts between them: u ≤ 240 (Q4_K's
// high nibbles stay in place, 16 times their codes; the others are at most 63) and the digits'
// sum below 2^21 keep every lane under 2^31 (4 · 240 · 2^21 < 2^31). A format whose weights are
// d · (u − bias) subtracts bias · Σ_{i in l} (X1_i · 2^14 + X2_i · 2^7 + X3_i), kept here per
// lane; one with a min (Q4_K, Q5_K: d · u − m) adds m · Σ x per chunk, kept here per chunk (float
// sums of the values).
// The lane's integer is then converted to float and multiplied by the weight block's scale and 2^e.
//
// A chunk outside the digits' range (a value not finite, or the chunk's largest magnitude
// above 2^100 or, unless every value is zero, below 2^-100) is left to the float product:
// representable() says so for a whole row before anything is written.

#include <Eigen/Core>

#include <cstdint>
#include <cstring>

#include "attn/detail/check.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define ATTN_DETAIL_QUANTIZED_DIGITS 1
#endif

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_QUANTIZED_DIGITS_PRAGMAS_PUSHED
#endif

namespace attn::detail::quant {

#if defined(ATTN_DETAIL_QUANTIZED_DIGITS)

/// Up to kDepth values of one row of activations as digits (see the header comment): a depth
/// longer than that is taken in pieces.
struct ActivationDigits {
    static constexpr Index kDepth = 4096;
    static constexpr Index kChunk = 32;  ///< values per exponent
    static constexpr Index kGroup = 64;  ///< values per 512-bit register of bytes

    alignas(64) std::int8_t digit[3][kDepth];       ///< X1, X2, X3 of value t
    alignas(64) float scale[kDepth / 4];            ///< 2^(e − 14) of lane l's chunk (values 4l … 4l + 3)
    alignas(64) std::int32_t bias_sum[kDepth / 4];  ///< bias · Σ (X1 · 2^14 + X2 · 2^7 + X3) over lane l
    /// Σ x over chunk c, in float; c from −8 to kDepth / kChunk + 7 (a K block's eight chunks
    /// from one that may precede or follow the row's: zeros there)
    const float* chunk_sum(Index c) const { return chunk_sums + 8 + c; }

    /// Whether every chunk of x (count values, a multiple of kChunk) is in the digits' range.
    static bool representable(const float* x, Index count) {
        const __m512 high = _mm512_set1_ps(0x1p100f);
        for (Index c = 0; c < count; c += kChunk) {
            const __m512 m0 = _mm512_abs_ps(_mm512_loadu_ps(x + c)), m1 = _mm512_abs_ps(_mm512_loadu_ps(x + c + 16));
            // not below 2^100: too large, infinite or NaN (unordered)
            if ((_mm512_cmp_ps_mask(m0, high, _CMP_NLT_UQ) | _mm512_cmp_ps_mask(m1, high, _CMP_NLT_UQ)) != 0)
                return false;
            const float largest = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
            if (largest != 0.0f && largest < 0x1p-100f) return false;
        }
        return true;
    }

    /// Digits of x (count values, a multiple of kGroup, at most kDepth, representable()), with
    /// bias · the digits' lane sums for a format whose codes carry that bias (0: none).
    void prepare(const float* x, Index count, int bias) {
        eigen_assert(count % kGroup == 0 && count <= kDepth);
        const __m512 radix = _mm512_set1_ps(128.0f);
        constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        for (Index c = 0; c < count; c += kChunk) {
            const __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);
            const float largest = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
            float unit = 0.0f, inverse = 0.0f;  // an all-zero chunk: digits 0
            if (largest != 0.0f) {
                std::uint32_t bits;
                std::memcpy(&bits, &largest, 4);
                int e = int(bits >> 23) - 127 - 6;              // largest / 2^e in [64, 128)
                if (largest * power_of_two(-e) >= 127.5f) ++e;  // X1 would round to 128
                unit = power_of_two(e - 14);                    // the value of X3's 1
                inverse = power_of_two(-e);
            }
            const __m512 inv = _mm512_set1_ps(inverse);
            const auto digits = [&](__m512 value, Index at) {
                __m512 y = _mm512_mul_ps(value, inv);
                for (int k = 0; k < 3; ++k) {
                    const __m512i d = _mm512_cvt_roundps_epi32(y, kNearest);
                    _mm_storeu_si128(reinterpret_cast<__m128i*>(digit[k] + at), _mm512_cvtepi32_epi8(d));
                    y = _mm512_mul_ps(_mm512_sub_ps(y, _mm512_cvtepi32_ps(d)), radix);
                }
            };
            digits(x0, c);
            digits(x1, c + 16);
            _mm256_store_ps(scale + c / 4, _mm256_set1_ps(unit));
            chunk_sums[8 + c / kChunk] = _mm512_reduce_add_ps(_mm512_add_ps(x0, x1));
        }
        if (bias != 0) {
            const __m512i b = _mm512_set1_epi8(char(bias));
            for (Index g = 0; g < count; g += kGroup) _mm512_store_si512(bias_sum + g / 4, lane_sums(b, group(g)));
        }
    }

    /// The three digits of values g … g + 63, one 512-bit register each.
    struct Group {
        __m512i digit[3];
    };
    EIGEN_ALWAYS_INLINE Group group(Index g) const {
        return {{_mm512_load_si512(digit[0] + g), _mm512_load_si512(digit[1] + g), _mm512_load_si512(digit[2] + g)}};
    }

    /// Per 32-bit lane l of a group's values: Σ_{i in l} u_i (X1_i · 2^14 + X2_i · 2^7 + X3_i), u
    /// the group's 64 codes as unsigned bytes (at most 63), exact.
    static EIGEN_ALWAYS_INLINE __m512i lane_sums(__m512i u, const Group& x) {
        __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x.digit[0]);
        s = _mm512_dpbusd_epi32(_mm512_slli_epi32(s, 7), u, x.digit[1]);
        return _mm512_dpbusd_epi32(_mm512_slli_epi32(s, 7), u, x.digit[2]);
    }

private:
    alignas(64) float chunk_sums[8 + kDepth / kChunk + 8] = {};

    static float power_of_two(int e) {  // e within [−126, 127]
        const auto bits = std::uint32_t(e + 127) << 23;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
};

#endif

}  // namespace attn::detail::quant

#ifdef ATTN_DETAIL_QUANTIZED_DIGITS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_QUANTIZED_DIGITS_PRAGMAS_PUSHED
#endif
