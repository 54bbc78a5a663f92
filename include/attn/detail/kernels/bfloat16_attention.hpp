#pragma once
// Attention on numbers rounded to bfloat16 (FusedProblem::bfloat16, which
// LoadOptions::bfloat16_activations sets): what llama.cpp's default cache and flash attention
// do with 16-bit numbers, for the two products that weights do not take part in.
//
// The rule, on every path of the kernel: keys and values are bfloat16 numbers already (the
// model rounds them where it computes them), the scaled queries are rounded, and each
// unnormalised weight exp(s − m) is rounded before it is summed, so that the normaliser is the
// sum of the weights that multiply the values. The products of two bfloat16 numbers are exact
// in float; only the order of the sums differs between paths.
//
// With AVX-512 BF16 the streaming path multiplies pairs with vdpbf16ps, twice the multiply-adds
// of a float FMA instruction: scoresᵀ from queries laid out in pairs of depths and keys in pairs
// of depths (a key's row as it lies), outputᵀ from weights laid out in pairs of keys and values
// in pairs of keys. The tiles are the float kernel's: 8 rows broadcast × 3 packets of queries.
// Elsewhere the float kernels multiply the rounded numbers.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attn/detail/kernels/bfloat16_pairs.hpp"

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_BFLOAT16_ATTENTION_PRAGMAS_PUSHED
#endif

namespace attn::detail::kernel {

namespace ei = Eigen::internal;

/// x with each lane rounded to the nearest bfloat16 (ties to even), kept as a float: lanes
/// hold finite numbers or NaN (a NaN may come back infinite; the caller reports either).
template <class Packet>
EIGEN_ALWAYS_INLINE Packet round_packet_to_bfloat16(const Packet& x) {
    using Scalar = typename ei::unpacket_traits<Packet>::type;
    if constexpr (std::is_same_v<Scalar, float> && ei::unpacket_traits<Packet>::size > 1) {
        using PacketI = typename ei::unpacket_traits<Packet>::integer_packet;
        const PacketI bits = ei::preinterpret<PacketI>(x);
        const PacketI odd = ei::pand(ei::plogical_shift_right<16>(bits), ei::pset1<PacketI>(1));
        const PacketI up = ei::padd(bits, ei::padd(odd, ei::pset1<PacketI>(0x7FFF)));
        return ei::preinterpret<Packet>(ei::pand(up, ei::pset1<PacketI>(int(0xFFFF0000u))));
    } else {
        constexpr int L = ei::unpacket_traits<Packet>::size;
        alignas(64) Scalar lanes[L];
        ei::pstoreu(lanes, x);
        for (Scalar& lane : lanes) lane = Scalar(attn::detail::rounded_to_bfloat16(float(lane)));
        return ei::ploadu<Packet>(lanes);
    }
}

/// x[0 … count) rounded to the nearest bfloat16 in place, a packet at a time; a NaN stays NaN (an
/// activation's NaN must reach the scores, where the kernel reports it, not become infinite).
template <class T>
void round_to_bfloat16(T* x, Index count) {
    using Packet = typename RegisterTile<T>::Packet;
    constexpr Index L = RegisterTile<T>::kLanes;
    Index j = 0;
    if constexpr (std::is_same_v<T, float> && L > 1)
        for (; count - j >= L; j += L) {
            const Packet v = ei::ploadu<Packet>(x + j);
            ei::pstoreu(x + j, ei::pselect(ei::pcmp_eq(v, v), round_packet_to_bfloat16(v), v));
        }
    for (; j < count; ++j) x[j] = T(attn::detail::rounded_to_bfloat16(float(x[j])));
}

/// x[0 … count) rounded to the nearest bfloat16 in place (round_to_bfloat16); returns their sum
/// (in order).
template <class T>
T round_to_bfloat16_and_sum(T* x, Index count) {
    round_to_bfloat16(x, count);
    T sum = 0;
    for (Index j = 0; j < count; ++j) sum += x[j];
    return sum;
}

/// Whether the streaming path multiplies bfloat16 pairs (AVX-512 BF16 and float).
template <class T>
inline constexpr bool kAttentionPairs = ATTN_DETAIL_BFLOAT16_PAIRS&& std::is_same_v<T, float>;

/// Two bfloat16 numbers in one 32-bit lane, as vdpbf16ps reads them: the lower half `low`.
inline std::uint32_t bfloat16_pair(float low, float high) {
    return std::uint32_t(float_to_bfloat16_nearest(low)) | (std::uint32_t(float_to_bfloat16_nearest(high)) << 16);
}

/// out (rows × ⌈depth / 2⌉) = each row of x (rows × depth, row stride x_row) in pairs of
/// depths, rounded (the last pair's upper half 0 for an odd depth). Thirty-two numbers an
/// instruction with AVX-512 BF16 (vcvtne2ps2bf16 puts depths t … t + 31 in order, which is the
/// pairs' order): a prefill lays out every key once per call.
inline void pairs_of_depths(const float* x, Index x_row, Index rows, Index depth, std::vector<std::uint32_t>& out) {
    const Index pairs = (depth + 1) / 2;
    out.resize(std::size_t(rows * pairs));
    for (Index r = 0; r < rows; ++r) {
        const float* row = x + r * x_row;
        std::uint32_t* dst = out.data() + r * pairs;
#if ATTN_DETAIL_BFLOAT16_PAIRS
        for (Index t = 0; t < depth; t += 32) {
            const __m512 low = _mm512_maskz_loadu_ps(first_lanes(depth - t), row + t);
            const __m512 high = _mm512_maskz_loadu_ps(first_lanes(depth - t - 16), row + t + 16);
            _mm512_mask_storeu_epi32(dst + t / 2, first_lanes(pairs - t / 2), (__m512i)_mm512_cvtne2ps_pbh(high, low));
        }
#else
        for (Index k = 0; k < pairs; ++k) dst[k] = bfloat16_pair(row[2 * k], 2 * k + 1 < depth ? row[2 * k + 1] : 0.0f);
#endif
    }
}

/// out (⌈rows / 2⌉ × cols) = x (rows × cols, row stride x_row) in pairs of rows, rounded: entry
/// (k, c) holds x(2k, c) in its lower half and x(2k + 1, c) (0 past the last row) in its upper.
/// With AVX-512 BF16 sixteen columns of both rows at a time, rounded by one instruction and
/// interleaved by another.
inline void pairs_of_rows(const float* x, Index x_row, Index rows, Index cols, std::vector<std::uint32_t>& out) {
    const Index pairs = (rows + 1) / 2;
    out.resize(std::size_t(pairs * cols));
#if ATTN_DETAIL_BFLOAT16_PAIRS
    // vcvtne2ps2bf16(b, a) holds a's 16 numbers then b's; the pairs want a(c), b(c) side by side
    alignas(64) static constexpr std::uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                                  21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                                  11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i interleave = _mm512_load_si512(kInterleave);
#endif
    for (Index k = 0; k < pairs; ++k) {
        const float* even = x + 2 * k * x_row;
        const bool has_odd = 2 * k + 1 < rows;
        std::uint32_t* dst = out.data() + k * cols;
#if ATTN_DETAIL_BFLOAT16_PAIRS
        for (Index c = 0; c < cols; c += 16) {
            const __mmask16 lanes = first_lanes(cols - c);
            const __m512 a = _mm512_maskz_loadu_ps(lanes, even + c);
            const __m512 b = has_odd ? _mm512_maskz_loadu_ps(lanes, even + x_row + c) : _mm512_setzero_ps();
            const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(b, a);
            _mm512_mask_storeu_epi32(dst + c, lanes, _mm512_permutexvar_epi16(interleave, both));
        }
#else
        for (Index c = 0; c < cols; ++c) dst[c] = bfloat16_pair(even[c], has_odd ? even[x_row + c] : 0.0f);
#endif
    }
}

/// qt (⌈depth / 2⌉ × columns, row stride qt_row) = the rows × depth queries q (row stride
/// depth) transposed into pairs of depths, rounded; columns past `rows` zero.
inline void transposed_query_pairs(const float* q, Index rows, Index depth, std::uint32_t* qt, Index qt_row,
                                   Index columns) {
    for (Index k = 0; k < (depth + 1) / 2; ++k) {
        std::uint32_t* out = qt + k * qt_row;
        for (Index i = 0; i < rows; ++i)
            out[i] = bfloat16_pair(q[i * depth + 2 * k], 2 * k + 1 < depth ? q[i * depth + 2 * k + 1] : 0.0f);
        for (Index i = rows; i < columns; ++i) out[i] = 0;
    }
}

#if ATTN_DETAIL_BFLOAT16_PAIRS

/// c(r, i) (+)= Σ_k a(r, k) · b(k, i) over `pairs` pairs, each term two bfloat16 products
/// (vdpbf16ps): a(r, k) = a[r·a_row + k·a_step] broadcast, b(k, ·) Packets packets of 16 at
/// b + k·b_row, c (Rows × the packets, row stride c_row).
template <int Rows, int Packets>
EIGEN_ALWAYS_INLINE void broadcast_pair_tile(const std::uint32_t* a, Index a_row, Index a_step, const std::uint32_t* b,
                                             Index b_row, Index pairs, float* c, Index c_row, bool accumulate) {
    __m512 acc[Rows][Packets];
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p)
            acc[r][p] = accumulate ? _mm512_loadu_ps(c + r * c_row + p * 16) : _mm512_setzero_ps();
    for (Index k = 0; k < pairs; ++k) {
        __m512bh x[Packets];
        for (int p = 0; p < Packets; ++p) x[p] = (__m512bh)_mm512_loadu_si512(b + k * b_row + p * 16);
        for (int r = 0; r < Rows; ++r) {
            const __m512bh y = (__m512bh)_mm512_set1_epi32(int(a[r * a_row + k * a_step]));
            for (int p = 0; p < Packets; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], x[p], y);
        }
    }
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p) _mm512_storeu_ps(c + r * c_row + p * 16, acc[r][p]);
}

/// broadcast_pair_tile with 1 … MaxRows rows and 1 … MaxPackets packets chosen at run time.
template <int MaxRows, int MaxPackets>
struct PairTiles {
    template <int Rows = MaxRows, int Packets = MaxPackets>
    static void run(int rows, int packets, const std::uint32_t* a, Index a_row, Index a_step, const std::uint32_t* b,
                    Index b_row, Index pairs, float* c, Index c_row, bool accumulate) {
        if constexpr (Rows > 1) {
            if (rows < Rows)
                return run<Rows - 1, Packets>(rows, packets, a, a_row, a_step, b, b_row, pairs, c, c_row, accumulate);
        }
        if constexpr (Packets > 1) {
            if (packets < Packets)
                return run<Rows, Packets - 1>(rows, packets, a, a_row, a_step, b, b_row, pairs, c, c_row, accumulate);
        }
        broadcast_pair_tile<Rows, Packets>(a, a_row, a_step, b, b_row, pairs, c, c_row, accumulate);
    }
};

#endif  // ATTN_DETAIL_BFLOAT16_PAIRS

/// Rows of the pair tiles (keys for the scores, value columns for the output) and packets of
/// 16 queries: the float streaming tile's on AVX-512.
inline constexpr int kAttentionPairRows = 8;
inline constexpr int kAttentionPairPackets = 3;

/// sᵀ(r, i) = key r · query i for `rows` ≤ kAttentionPairRows keys (pairs of depths, `pairs` a
/// key, consecutive) and `packets` ≤ kAttentionPairPackets packets of queries (qt: pairs of
/// depths × queries, row stride qt_row), into s (row stride s_row). AVX-512 BF16 only.
inline void score_pair_tile(int rows, int packets, const std::uint32_t* keys, Index pairs, const std::uint32_t* qt,
                            Index qt_row, float* s, Index s_row) {
#if ATTN_DETAIL_BFLOAT16_PAIRS
    PairTiles<kAttentionPairRows, kAttentionPairPackets>::run(rows, packets, keys, pairs, 1, qt, qt_row, pairs, s,
                                                              s_row, false);
#else
    (void)rows, (void)packets, (void)keys, (void)pairs, (void)qt, (void)qt_row, (void)s, (void)s_row;
    eigen_assert(false && "score_pair_tile needs AVX-512 BF16");
#endif
}

/// oᵀ(c, i) += Σ_k values(k, c) · wt(k, i) over `pairs` pairs of keys for the dv columns c and
/// `packets` packets of queries: values in pairs of keys (row stride dv), wt pairs of keys ×
/// queries (row stride w_row), oᵀ (dv × the packets, row stride o_row). AVX-512 BF16 only.
inline void values_times_weight_pairs(Index dv, int packets, const std::uint32_t* wt, Index w_row, Index pairs,
                                      const std::uint32_t* values, float* ot, Index o_row) {
#if ATTN_DETAIL_BFLOAT16_PAIRS
    for (Index c = 0; c < dv; c += kAttentionPairRows)
        PairTiles<kAttentionPairRows, kAttentionPairPackets>::run(int(std::min<Index>(kAttentionPairRows, dv - c)),
                                                                  packets, values + c, 1, dv, wt, w_row, pairs,
                                                                  ot + c * o_row, o_row, true);
#else
    (void)dv, (void)packets, (void)wt, (void)w_row, (void)pairs, (void)values, (void)ot, (void)o_row;
    eigen_assert(false && "values_times_weight_pairs needs AVX-512 BF16");
#endif
}

/// wt (pairs × 16·packets, row stride w_row) = pairs of the rows of sᵀ (count rows × the
/// packets, row stride s_row), whose row j is key first + j, already rounded to bfloat16: pair
/// k holds keys 2(first / 2 + k) and the next, a key outside first … first + count − 1 as 0.
/// Returns the number of pairs. AVX-512 BF16 only.
inline Index weight_pairs(const float* st, Index s_row, int packets, Index first, Index count, std::uint32_t* wt,
                          Index w_row) {
#if ATTN_DETAIL_BFLOAT16_PAIRS
    const Index base = first / 2 * 2, pairs = (first + count + 1) / 2 - first / 2;
    const __m512i upper = _mm512_set1_epi32(int(0xFFFF0000u));
    for (Index k = 0; k < pairs; ++k) {
        const Index even = base + 2 * k - first, odd = even + 1;  // their rows in sᵀ
        for (int p = 0; p < packets; ++p) {
            const __m512i low = even >= 0 ? _mm512_loadu_si512(st + even * s_row + p * 16) : _mm512_setzero_si512();
            const __m512i high = odd < count ? _mm512_loadu_si512(st + odd * s_row + p * 16) : _mm512_setzero_si512();
            // rounded already: each weight's upper 16 bits are its bfloat16
            _mm512_storeu_si512(wt + k * w_row + p * 16,
                                _mm512_or_si512(_mm512_srli_epi32(low, 16), _mm512_and_si512(high, upper)));
        }
    }
    return pairs;
#else
    (void)st, (void)s_row, (void)packets, (void)first, (void)count, (void)wt, (void)w_row;
    eigen_assert(false && "weight_pairs needs AVX-512 BF16");
    return 0;
#endif
}

}  // namespace attn::detail::kernel

#ifdef ATTN_DETAIL_BFLOAT16_ATTENTION_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_BFLOAT16_ATTENTION_PRAGMAS_PUSHED
#endif
