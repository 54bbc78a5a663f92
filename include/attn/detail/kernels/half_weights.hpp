#pragma once
// Weight matrices kept in a checkpoint's 16-bit format (BF16 or F16): a decoding step reads
// every weight once, so it is bound by memory bandwidth, and 16-bit weights halve its bytes.
// Each packet of weights is widened to float in registers (BF16: the bits shifted left by 16;
// F16: vcvtph2ps) and goes into the same float fused multiply-add chains as the float kernel
// (tiles.hpp): both widenings are exact, so a product on 16-bit weights has the bits of the
// float product on the same weights converted. The model keeps them packed in panels
// (weight_panels.hpp: HalfMatrix); HalfRows reads row-major ones.
//
// Vector widths follow Eigen's float packet (AVX-512: 16 lanes, AVX2: 8, SSE2: 4), as the
// float kernel's do; elsewhere, and for F16 without F16C, a packet is widened one number at a
// time into memory first.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/kernels/tiles.hpp"

#if defined(EIGEN_VECTORIZE_SSE2) || defined(EIGEN_VECTORIZE_AVX) || defined(EIGEN_VECTORIZE_AVX512)
#include <immintrin.h>
#endif

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_HALF_WEIGHTS_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// The 16-bit format of stored weights.
enum class HalfFormat { bfloat16, float16 };

inline const char* half_format_name(HalfFormat format) {
    return format == HalfFormat::bfloat16 ? "BF16" : "F16";
}

/// One 16-bit number widened to float, exactly.
template <HalfFormat Format>
float widen(std::uint16_t bits) {
    if constexpr (Format == HalfFormat::bfloat16)
        return bfloat16_to_float(bits);
    else
        return half_to_float(bits);
}

/// A packet of float (RegisterTile<float>::kLanes lanes) widened from as many 16-bit numbers at p.
template <HalfFormat Format>
typename RegisterTile<float>::Packet widen_packet(const std::uint16_t* p) {
    using Packet = typename RegisterTile<float>::Packet;
    constexpr int L = RegisterTile<float>::kLanes;
    [[maybe_unused]] constexpr bool bf16 = Format == HalfFormat::bfloat16;
#if defined(EIGEN_VECTORIZE_AVX512)
    static_assert(L == 16, "AVX-512: float packets of 16 lanes");
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (bf16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
        return _mm512_cvtph_ps(h);
#elif defined(EIGEN_VECTORIZE_AVX2)
    static_assert(L == 8, "AVX2: float packets of 8 lanes");
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
#if defined(__F16C__)
    if constexpr (!bf16) return _mm256_cvtph_ps(h);
#endif
#elif defined(EIGEN_VECTORIZE_SSE2) && !defined(EIGEN_VECTORIZE_AVX)
    static_assert(L == 4, "SSE2: float packets of 4 lanes");
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (bf16) return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));  // bits << 16
#if defined(__F16C__)
    if constexpr (!bf16) return _mm_cvtph_ps(h);
#endif
#endif
    alignas(64) float widened[L];  // no vector widening here: one number at a time
    for (int i = 0; i < L; ++i) widened[i] = widen<Format>(p[i]);
    return Eigen::internal::pload<Packet>(widened);
}

/// count 16-bit numbers at from widened into out: packets, then one at a time.
template <HalfFormat Format>
void widen_run(const std::uint16_t* from, Index count, float* out) {
    constexpr Index L = RegisterTile<float>::kLanes;
    Index i = 0;
    // count − i, not i + L: the sum could overflow for all the compiler knows, and gcc 12 warns of
    // it (-Waggressive-loop-optimizations) where the call is inlined with count unknown
    for (; count - i >= L; i += L) Eigen::internal::pstoreu(out + i, widen_packet<Format>(from + i));
    for (; i < count; ++i) out[i] = widen<Format>(from[i]);
}

/// b of a product as 16-bit rows (depth × cols, row stride `row`), read by multiply_rows_from
/// (tiles.hpp) as float: widened packet by packet, or into the panel it packs.
template <HalfFormat Format>
struct HalfRows {
    using Scalar = float;
    static constexpr bool kInPlace = false;
    static constexpr Index kLineEntries = 32;
    /// A streamed product whose c stays in L1 prefetches the next pass's rows (docs/DESIGN.md:
    /// with and without, one row a pass and four).
    static constexpr bool kStreamPrefetch = true;

    const std::uint16_t* data = nullptr;
    Index row = 0;

    /// Row t of b as a streamed product reads it: a packet at a time, widened, from where it starts.
    struct Row {
        const std::uint16_t* start = nullptr;
        template <class Packet>
        Packet packet(Index col) const {
            return widen_packet<Format>(start + col);
        }
        const void* address(Index col) const { return start + col; }
    };
    Row row_at(Index t) const { return {data + t * row}; }

    float value(Index t, Index col) const { return widen<Format>(data[t * row + col]); }
    void copy(Index t, Index col, Index count, float* out) const {
        widen_run<Format>(data + t * row + col, count, out);
    }
    const void* address(Index t, Index col) const { return data + t * row + col; }
};

}  // namespace attn::detail

#ifdef ATTN_DETAIL_HALF_WEIGHTS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_HALF_WEIGHTS_PRAGMAS_PUSHED
#endif
