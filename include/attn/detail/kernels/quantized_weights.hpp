#pragma once
// Weight matrices kept in GGUF's block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) and
// the products that read them, dequantizing in registers: a decoding step reads every weight once
// and is bound by memory, and a Q4_K weight is 4.5 bits where a float is 32.
//
// Layout. A QuantizedMatrix is (rows × cols) as the file stores a Linear weight: row j is output
// j, its cols inputs quantized along the row in blocks of 32 or 256 values (quantized.hpp has
// the bit layouts). The blocks are kept byte for byte as the file has them, row after row: they
// are read straight from the file into place (no float copy, no repacking pass: peak memory at
// load is the file's matrices), a row permutation (Llama's q/k rows) is a permutation of whole
// rows' bytes, and the reference decoders of quantized.hpp read the same bytes. A repacked
// layout (several rows' blocks interleaved, as llama.cpp's Q4_0x8) would suit an int8 product
// of activations rounded to 8 bits, which attn does not do (see "digits" below). One matrix may hold
// runs of rows in different formats (a Q4_K_M file's attn_q in Q4_K and attn_v in Q6_K fused
// into one [Wq Wk Wv]).
//
// Decoding. Every format decodes in chunks of 32 consecutive values of a row (a block of Q8_0,
// Q4_0, Q4_1, Q5_0 or Q5_1; a sub-block of 32 of Q4_K, Q5_K; a quarter of a Q6_K half) into 32
// unsigned byte codes u and a scale and offset per 16 values, w = scale · u + offset:
//   Q8_0  u = q + 128,  scale d,        offset −128 d
//   Q4_0  u = q,        scale d,        offset −8 d
//   Q4_1  u = q,        scale d,        offset m            (Q5_1: q with its fifth bit)
//   Q5_0  u = q,        scale d,        offset −16 d        (q with its fifth bit)
//   Q4_K  u = q,        scale d·sc,     offset −dmin·m      (Q5_K: q with its fifth bit)
//   Q6_K  u = q,        scale d·sc,     offset −32 d·sc
// Every scale·u is exact in float (at most 11 + 8 + 8 significant bits), and so is the whole of
// w but for the one addition of a min (Q4_1, Q5_1, Q4_K, Q5_K), which a fused multiply-add and a
// multiply then an add both round once: the values are those of quantized.hpp's decoders, bit for
// bit, whatever the instruction set. The codes are cut out of the bytes with 16-byte integer
// operations (SSE2, every x86-64; Q5_0 and Q5_1's fifth bits spread from their 32-bit word by
// unpacking and a per-lane bit test), widened to float a packet at a time (AVX-512: 16 lanes
// from 16 bytes, AVX2: 8, AVX: 4 and 4 with SSE4.1, SSE2: 4), and go into float fused
// multiply-adds; elsewhere a chunk is decoded into 32 floats in memory first.
//
// Products, c (n × count) (+)= a (n × depth) · Wᵀ for rows first … first + count − 1 of W and
// its columns from … from + depth − 1 (multiply_quantized):
//   - up to kStreamedRows rows of a (a decoding step): each row of W is streamed once, four rows
//     at a time (Q8_0: one, bound by the memory rather than its decoding), the rows four ahead
//     prefetched (a row of 768 values is 7–13 cache lines, too short a stream for the hardware
//     prefetchers: Q8_0 read at 5.5 GB/s without, 14–17 with, one row at a time). A chunk's
//     codes are widened to float as integers v (chunk_factors: signed q − bias where the
//     format's offset is a whole multiple of its scale, so that it drops out), their products
//     with a summed per scale and that sum multiplied by the scale into one float packet
//     accumulator per (row of a, row of W); a format with a min adds the min times a's chunk
//     sums into a second (Σ a w = s Σ a v + o Σ a). A K block's scales are decoded once for its
//     eight chunks. The accumulators' lanes are summed at the end. This takes fewer
//     instructions a weight than forming each w (no offset per value, one multiply by the scale
//     per 32 or 16 values): on AMD EPYC (Zen 4, AVX-512, one thread) Q8_0 from 5.5 to 8–13 GB/s,
//     Q4_K 8.7 to 11.6 G weights/s, Q5_0 4.5–7 to 9–11, Q6_K 4–7 to 9
//     (docs/bench/2026-12-02-quantized-speed).
//     With AVX-512 VNNI (kDigitProducts; Zen 4 and 5, Xeons since Ice Lake) the formats whose
//     codes fit in 6 bits and tile 64 values (Q4_0, Q5_0, Q4_K, Q5_K, Q6_K: takes_digits) go
//     through integers instead: a's row is written once per product as three signed-byte digits
//     per value, X1 + X2/2^7 + X3/2^14 times a power of two per chunk of 32 (quantized_digits.hpp:
//     within max |chunk| · 2^-21 of each value, where llama.cpp rounds activations to 8 bits,
//     2^-8), and 64 codes at a time, cut into the values' order as unsigned bytes, meet each digit
//     in one byte dot product (vpdpbusd) with shifts between: each 32-bit lane's sum of four
//     products is exact, the codes' bias comes off as a's precomputed digit sums times it, and
//     the lane goes to float once, times the block's scale and the chunk's power of two. That is
//     11–17 vector instructions per 64 weights against the float path's ~40 (which widens every
//     code to a float): from memory on one thread, Q4_K 10–13 to 18–20 G weights/s, Q5_0 11–13
//     to 17–20, Q6_K 7–9 to 17–20 (1.4–2.4×; EPYC Zen 4, docs/bench/2026-12-04-epyc-avx512/digits).
//   - more rows (a prefill): a block of W's rows (a tile's columns of c) by a block of the depth
//     is decoded into a float panel in L1 (32 KiB), laid out as the float kernel's packed
//     panels, and the register-tiled kernel (tiles.hpp) runs every row tile of a over it: each
//     weight is decoded once for all rows, and each entry of c is the float kernel's fused
//     multiply-add chain over the depth in order, so a prefill has the bits of the float
//     product on the dequantized matrix.
// Both round differently from each other; each is within the bound of float summation over
// the depth K: |ĉ − c| ≤ γ_K · Σ_t |a_t · w_t|, γ_K = K·u / (1 − K·u), u = 2⁻²⁴; but a decoding
// step's product on a format with a min sums s·v and the min o apart, which may cancel: its
// bound is γ_{K+1} · Σ_t |a_t| (|w_t| + 2|o_t|), and on digits a_t is first moved by up to
// δ_t = max |a over its chunk| / (63.75 · 2^15): Σ_t (|w_t| + |o_t|) δ_t more
// (tests/test_quantized_products.cpp). Threads share a product by its
// columns (rows of W) or its rows, as the callers share every product; each entry's operations are the same in any
// share.

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/kernels/large_arrays.hpp"
#include "attn/detail/kernels/quantized.hpp"
#include "attn/detail/kernels/quantized_digits.hpp"
#include "attn/detail/kernels/tiles.hpp"

#if defined(EIGEN_VECTORIZE_SSE2) || defined(EIGEN_VECTORIZE_AVX) || defined(EIGEN_VECTORIZE_AVX512)
#include <immintrin.h>
#define ATTN_DETAIL_QUANTIZED_SSE2 1
#endif

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_QUANTIZED_WEIGHTS_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// The block formats a QuantizedMatrix holds.
enum class QuantFormat { q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k };

inline const char* quant_format_name(QuantFormat format) {
    switch (format) {
        case QuantFormat::q8_0:
            return "Q8_0";
        case QuantFormat::q4_0:
            return "Q4_0";
        case QuantFormat::q4_1:
            return "Q4_1";
        case QuantFormat::q5_0:
            return "Q5_0";
        case QuantFormat::q5_1:
            return "Q5_1";
        case QuantFormat::q4_k:
            return "Q4_K";
        case QuantFormat::q5_k:
            return "Q5_K";
        case QuantFormat::q6_k:
            return "Q6_K";
    }
    return "?";
}

/// Whether the format is one of the K formats (blocks of 256 values), not a block of 32.
inline constexpr bool is_k_format(QuantFormat format) {
    return format == QuantFormat::q4_k || format == QuantFormat::q5_k || format == QuantFormat::q6_k;
}

/// Whether a block holds a second F16 number after d, a min (Q4_1, Q5_1: m; Q4_K, Q5_K: dmin).
inline constexpr bool has_min(QuantFormat format) {
    return format == QuantFormat::q4_1 || format == QuantFormat::q5_1 || format == QuantFormat::q4_k ||
           format == QuantFormat::q5_k;
}

/// Values per block: 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) or 256 (the K formats).
inline constexpr Index quant_block_values(QuantFormat format) {
    return is_k_format(format) ? Index(k_block_values) : Index(q8_0_block_values);
}

/// Bytes per block.
inline constexpr Index quant_block_bytes(QuantFormat format) {
    switch (format) {
        case QuantFormat::q8_0:
            return Index(q8_0_block_bytes);
        case QuantFormat::q4_0:
            return Index(q4_0_block_bytes);
        case QuantFormat::q4_1:
            return Index(q4_1_block_bytes);
        case QuantFormat::q5_0:
            return Index(q5_0_block_bytes);
        case QuantFormat::q5_1:
            return Index(q5_1_block_bytes);
        case QuantFormat::q4_k:
            return Index(q4_k_block_bytes);
        case QuantFormat::q5_k:
            return Index(q5_k_block_bytes);
        case QuantFormat::q6_k:
            return Index(q6_k_block_bytes);
    }
    return 0;
}

/// Values per chunk: every format decodes 32 consecutive values of a row at a time.
inline constexpr Index kQuantChunk = 32;

/// Rows first_row … first_row + rows − 1 of a QuantizedMatrix, all of one format, at `offset`
/// in its bytes, row_bytes apart.
struct QuantizedRun {
    QuantFormat format = QuantFormat::q8_0;
    Index first_row = 0, rows = 0;
    std::size_t offset = 0, row_bytes = 0;
};

/// A weight matrix (rows × cols) kept as GGUF blocks: row j (an output) is cols values
/// quantized along the row, in the file's bytes; runs of rows may differ in format. cols is a
/// multiple of the formats' block sizes.
struct QuantizedMatrix {
    Index rows = 0, cols = 0;
    std::vector<QuantizedRun> runs;  ///< in order, covering rows 0 … rows − 1
    std::vector<std::uint8_t, HugePagesInside<std::uint8_t>> bytes;

    Index size() const { return rows * cols; }
    bool empty() const { return rows == 0; }
    /// The run that holds row r.
    const QuantizedRun& run_of(Index r) const {
        std::size_t i = 0;
        while (i + 1 < runs.size() && runs[i + 1].first_row <= r) ++i;
        return runs[i];
    }
    /// Row r's bytes.
    const std::uint8_t* row(Index r) const {
        const QuantizedRun& run = run_of(r);
        return bytes.data() + run.offset + std::size_t(r - run.first_row) * run.row_bytes;
    }
    std::uint8_t* row(Index r) { return const_cast<std::uint8_t*>(static_cast<const QuantizedMatrix&>(*this).row(r)); }
    /// Rows first_row + i of one run, i from 0, without looking the run up again for each: the
    /// products, whose rows multiply_quantized splits by run, call this for every block.
    struct RunRows {
        const std::uint8_t* first;
        std::size_t row_bytes;
        const std::uint8_t* operator()(Index i) const { return first + std::size_t(i) * row_bytes; }
    };
    RunRows rows_of_run(Index first_row) const { return {row(first_row), run_of(first_row).row_bytes}; }
    /// Whether every block's F16 scales (d, and m or dmin in Q4_1/Q5_1/Q4_K/Q5_K) of rows first …
    /// first + count − 1 are finite: then so is every weight, a scale times small integers.
    bool finite(Index first, Index count) const {
        const auto finite_half = [](const std::uint8_t* p) { return ((p[1] >> 2) & 0x1F) != 0x1F; };
        for (Index r = first; r < first + count; ++r) {
            const QuantizedRun& run = run_of(r);
            const Index blocks = cols / quant_block_values(run.format), width = quant_block_bytes(run.format);
            const std::uint8_t* p = row(r);
            for (Index b = 0; b < blocks; ++b, p += width) {
                const bool ok = run.format == QuantFormat::q6_k ? finite_half(p + 208)
                                : has_min(run.format)           ? finite_half(p) && finite_half(p + 2)
                                                                : finite_half(p);
                if (!ok) return false;
            }
        }
        return true;
    }
    /// A matrix of `rows` rows of cols values in runs of the given formats and lengths, its
    /// bytes allocated (not written): the loader reads the file's rows into place.
    static QuantizedMatrix sized(Index cols, const std::vector<std::pair<QuantFormat, Index>>& runs) {
        QuantizedMatrix m;
        m.cols = cols;
        std::size_t offset = 0;
        for (const auto& [format, rows] : runs) {
            if (rows == 0) continue;
            const auto row_bytes = std::size_t(cols / quant_block_values(format) * quant_block_bytes(format));
            if (!m.runs.empty() && m.runs.back().format == format) {
                m.runs.back().rows += rows;
            } else {
                m.runs.push_back({format, m.rows, rows, offset, row_bytes});
            }
            m.rows += rows;
            offset += std::size_t(rows) * row_bytes;
        }
        m.bytes.resize(offset);
        return m;
    }
};

namespace quant {

/// The F16 number at p (little-endian, any alignment): one instruction with F16C, else
/// half_float.hpp's exact widening (a decoding step widens one or two per 32 weights).
inline float half_at(const std::uint8_t* p) {
    const auto bits = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
#if defined(ATTN_DETAIL_QUANTIZED_SSE2) && defined(__F16C__)
    return _cvtsh_ss(bits);
#else
    return half_to_float(bits);
#endif
}

/// A chunk's scales and offsets: values 16g … 16g + 15 are scale[g] · u + offset[g].
struct ChunkScales {
    float scale[2];
    float offset[2];
};

/// Chunk c (values 32c … 32c + 31) of a row of `format` at `row`: where its block is, and its
/// scales. `sub` is the chunk's place in a K block (0 … 7).
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE ChunkScales chunk_scales(const std::uint8_t* block, Index sub) {
    if constexpr (Format == QuantFormat::q8_0 || Format == QuantFormat::q4_0) {
        const float d = half_at(block);
        const float offset = (Format == QuantFormat::q8_0 ? -128.0f : -8.0f) * d;  // exact: a power of 2
        return {{d, d}, {offset, offset}};
    } else if constexpr (Format == QuantFormat::q4_1 || Format == QuantFormat::q5_1) {
        const float d = half_at(block), m = half_at(block + 2);
        return {{d, d}, {m, m}};
    } else if constexpr (Format == QuantFormat::q5_0) {
        const float d = half_at(block);
        const float offset = -16.0f * d;  // exact: a power of 2
        return {{d, d}, {offset, offset}};
    } else if constexpr (Format == QuantFormat::q6_k) {
        const float d = half_at(block + 208);
        const auto* scales = reinterpret_cast<const std::int8_t*>(block + 192);
        const Index h = sub / 4, k = sub % 4;
        const float s0 = d * float(scales[8 * h + 2 * k]), s1 = d * float(scales[8 * h + 2 * k + 1]);
        return {{s0, s1}, {-32.0f * s0, -32.0f * s1}};
    } else {
        const float d = half_at(block), dmin = half_at(block + 2);
        const ScaleAndMin sm = k_scale_and_min(block + 4, std::size_t(sub));
        const float scale = d * float(sm.scale), offset = -(dmin * float(sm.min));
        return {{scale, scale}, {offset, offset}};
    }
}

/// The block holding chunk c of a row, and the chunk's place in it.
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE const std::uint8_t* chunk_block(const std::uint8_t* row, Index c, Index& sub) {
    constexpr Index bytes = quant_block_bytes(Format);
    if constexpr (!is_k_format(Format)) {  // a block is a chunk
        sub = 0;
        return row + c * bytes;
    } else {
        sub = c % 8;
        return row + (c / 8) * bytes;
    }
}

/// The 32 codes u of chunk `sub` of `block`, written out one byte each (the portable path).
template <QuantFormat Format>
inline void chunk_codes(const std::uint8_t* block, Index sub, std::uint8_t* u) {
    if constexpr (Format == QuantFormat::q8_0) {
        for (int i = 0; i < 32; ++i) u[i] = std::uint8_t(block[2 + i] ^ 0x80);
    } else if constexpr (Format == QuantFormat::q4_0 || Format == QuantFormat::q4_1) {
        const std::uint8_t* q = block + (Format == QuantFormat::q4_0 ? 2 : 4);
        for (int i = 0; i < 16; ++i) {
            u[i] = std::uint8_t(q[i] & 0x0F);
            u[i + 16] = std::uint8_t(q[i] >> 4);
        }
    } else if constexpr (Format == QuantFormat::q5_0 || Format == QuantFormat::q5_1) {
        const std::uint8_t* high = block + (Format == QuantFormat::q5_0 ? 2 : 4);
        for (std::size_t i = 0; i < 32; ++i) u[i] = std::uint8_t(q5_code(high, high + 4, i));
    } else if constexpr (Format == QuantFormat::q6_k) {
        const Index h = sub / 4, k = sub % 4;
        const std::uint8_t* low = block + 64 * h + 32 * (k % 2);
        const std::uint8_t* high = block + 128 + 32 * h;
        for (int l = 0; l < 32; ++l) {
            const int nibble = k < 2 ? (low[l] & 0x0F) : (low[l] >> 4);
            u[l] = std::uint8_t(nibble | (((high[l] >> (2 * k)) & 3) << 4));
        }
    } else {
        const std::uint8_t* run = block + (Format == QuantFormat::q5_k ? 48 : 16) + 32 * (sub / 2);
        const int shift = sub % 2 ? 4 : 0;
        for (int l = 0; l < 32; ++l) {
            int q = (run[l] >> shift) & 0x0F;
            if constexpr (Format == QuantFormat::q5_k) q |= ((block[16 + l] >> sub) & 1) << 4;
            u[l] = std::uint8_t(q);
        }
    }
}

using Packet = typename RegisterTile<float>::Packet;
inline constexpr int kLanes = RegisterTile<float>::kLanes;
/// Packets of a chunk of 32 values.
inline constexpr int kChunkPackets = 32 / kLanes;
static_assert(32 % kLanes == 0, "quantized weights: whole packets per chunk");

#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
/// The 32 codes of a chunk as two 16-byte vectors (values 0 … 15, 16 … 31), cut with SSE2.
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE void chunk_codes(const std::uint8_t* block, Index sub, __m128i& c0, __m128i& c1) {
    const auto load = [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
    const __m128i low4 = _mm_set1_epi8(0x0F);
    if constexpr (Format == QuantFormat::q8_0) {
        const __m128i flip = _mm_set1_epi8(char(0x80));
        c0 = _mm_xor_si128(load(block + 2), flip);
        c1 = _mm_xor_si128(load(block + 18), flip);
    } else if constexpr (Format == QuantFormat::q4_0 || Format == QuantFormat::q4_1) {
        const __m128i q = load(block + (Format == QuantFormat::q4_0 ? 2 : 4));
        c0 = _mm_and_si128(q, low4);
        c1 = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
    } else if constexpr (Format == QuantFormat::q5_0 || Format == QuantFormat::q5_1) {
        const std::uint8_t* high = block + (Format == QuantFormat::q5_0 ? 2 : 4);
        const __m128i q = load(high + 4);
        std::uint32_t bits;
        std::memcpy(&bits, high, 4);
        // bit i of 16 bits to 16 in byte i: each byte of the 16 bits copied into 8 lanes, tested
        // against the lane's own bit
        const __m128i sixteen = _mm_set1_epi8(0x10);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
        const auto fifth = [&](std::uint32_t sixteen_bits) {  // the bits as a byte mask
            return _mm_maskz_mov_epi8(__mmask16(sixteen_bits), sixteen);
        };
#else
        const __m128i lane_bit = _mm_set_epi8(-128, 64, 32, 16, 8, 4, 2, 1, -128, 64, 32, 16, 8, 4, 2, 1);
        const auto fifth = [&](std::uint32_t sixteen_bits) {
            __m128i x = _mm_cvtsi32_si128(int(sixteen_bits));
            x = _mm_unpacklo_epi8(x, x);   // b0 b0 b1 b1
            x = _mm_unpacklo_epi16(x, x);  // b0 × 4, b1 × 4
            x = _mm_unpacklo_epi32(x, x);  // b0 × 8, b1 × 8
            return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(x, lane_bit), lane_bit), sixteen);
        };
#endif
        c0 = _mm_or_si128(_mm_and_si128(q, low4), fifth(bits & 0xFFFFu));
        c1 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), low4), fifth(bits >> 16));
    } else if constexpr (Format == QuantFormat::q6_k) {
        const Index h = sub / 4, k = sub % 4;
        const std::uint8_t* low = block + 64 * h + 32 * (k % 2);
        const std::uint8_t* high = block + 128 + 32 * h;
        const __m128i nibble_shift = _mm_cvtsi32_si128(k < 2 ? 0 : 4);
        const __m128i high_shift = _mm_cvtsi32_si128(int(2 * k));
        const __m128i two = _mm_set1_epi8(0x03);
        const auto codes = [&](int half) {
            const __m128i n = _mm_and_si128(_mm_srl_epi16(load(low + 16 * half), nibble_shift), low4);
            const __m128i t = _mm_and_si128(_mm_srl_epi16(load(high + 16 * half), high_shift), two);
            return _mm_or_si128(n, _mm_slli_epi16(t, 4));  // t ≤ 3: stays in its byte
        };
        c0 = codes(0);
        c1 = codes(1);
    } else {
        const std::uint8_t* run = block + (Format == QuantFormat::q5_k ? 48 : 16) + 32 * (sub / 2);
        const __m128i shift = _mm_cvtsi32_si128(sub % 2 ? 4 : 0);
        c0 = _mm_and_si128(_mm_srl_epi16(load(run), shift), low4);
        c1 = _mm_and_si128(_mm_srl_epi16(load(run + 16), shift), low4);
        if constexpr (Format == QuantFormat::q5_k) {
            const __m128i bit_shift = _mm_cvtsi32_si128(int(sub));
            const __m128i one = _mm_set1_epi8(0x01);
            const auto fifth = [&](const std::uint8_t* p) {
                return _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(load(p), bit_shift), one), 4);
            };
            c0 = _mm_or_si128(c0, fifth(block + 16));
            c1 = _mm_or_si128(c1, fifth(block + 32));
        }
    }
}

/// Packet p (of 16 / kLanes) of the 16 codes in c, as float.
template <int P>
EIGEN_ALWAYS_INLINE Packet widen_codes(__m128i c) {
#if defined(EIGEN_VECTORIZE_AVX512)
    static_assert(kLanes == 16, "AVX-512: float packets of 16 lanes");
    static_assert(P == 0, "one packet of 16 codes");
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c));
#elif defined(EIGEN_VECTORIZE_AVX2)
    static_assert(kLanes == 8, "AVX2: float packets of 8 lanes");
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(P == 0 ? c : _mm_srli_si128(c, 8)));
#elif defined(EIGEN_VECTORIZE_AVX)
    static_assert(kLanes == 8, "AVX: float packets of 8 lanes");
    const __m128i eight = P == 0 ? c : _mm_srli_si128(c, 8);
    const __m128i lo = _mm_cvtepu8_epi32(eight), hi = _mm_cvtepu8_epi32(_mm_srli_si128(eight, 4));
    return _mm256_cvtepi32_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1));
#else
    static_assert(kLanes == 4, "SSE2: float packets of 4 lanes");
    const __m128i zero = _mm_setzero_si128();
    const __m128i words = P < 2 ? _mm_unpacklo_epi8(c, zero) : _mm_unpackhi_epi8(c, zero);
    return _mm_cvtepi32_ps(P % 2 == 0 ? _mm_unpacklo_epi16(words, zero) : _mm_unpackhi_epi16(words, zero));
#endif
}

template <int... P>
EIGEN_ALWAYS_INLINE void widen_group(__m128i c, float scale, float offset, Packet* out,
                                     std::integer_sequence<int, P...>) {
    const Packet s = Eigen::internal::pset1<Packet>(scale), o = Eigen::internal::pset1<Packet>(offset);
    ((out[P] = Eigen::internal::pmadd(s, widen_codes<P>(c), o)), ...);
}
#endif

/// Chunk c of a row of `Format` (values 32c … 32c + 31) as kChunkPackets float packets: the
/// values of quantized.hpp's decoders, bit for bit.
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE void chunk_packets(const std::uint8_t* row, Index c, Packet* out) {
    Index sub = 0;
    const std::uint8_t* block = chunk_block<Format>(row, c, sub);
    const ChunkScales s = chunk_scales<Format>(block, sub);
#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
    __m128i c0, c1;
    chunk_codes<Format>(block, sub, c0, c1);
    constexpr int half = kChunkPackets / 2;
    widen_group(c0, s.scale[0], s.offset[0], out, std::make_integer_sequence<int, half>());
    widen_group(c1, s.scale[1], s.offset[1], out + half, std::make_integer_sequence<int, half>());
#else
    alignas(64) std::uint8_t u[32];
    alignas(64) float values[32];
    chunk_codes<Format>(block, sub, u);
    for (int i = 0; i < 32; ++i) values[i] = s.scale[i / 16] * float(u[i]) + s.offset[i / 16];
    for (int p = 0; p < kChunkPackets; ++p) out[p] = Eigen::internal::pload<Packet>(values + p * kLanes);
#endif
}

/// Chunk c of a row as 32 floats at out.
template <QuantFormat Format>
inline void chunk_values(const std::uint8_t* row, Index c, float* out) {
    Packet p[kChunkPackets];
    chunk_packets<Format>(row, c, p);
    for (int i = 0; i < kChunkPackets; ++i) Eigen::internal::pstoreu(out + i * kLanes, p[i]);
}

/// Values from … from + count − 1 of a row, into out[i · stride].
template <QuantFormat Format>
inline void span_values(const std::uint8_t* row, Index from, Index count, float* out, Index stride) {
    alignas(64) float chunk[32];
    Index t = 0;
    while (t < count) {
        const Index c = (from + t) / kQuantChunk, inside = (from + t) % kQuantChunk;
        const Index take = std::min(kQuantChunk - inside, count - t);
        if (stride == 1 && inside == 0 && take == kQuantChunk) {
            chunk_values<Format>(row, c, out + t);
        } else {
            chunk_values<Format>(row, c, chunk);
            for (Index i = 0; i < take; ++i) out[(t + i) * stride] = chunk[inside + i];
        }
        t += take;
    }
}

/// The format as a type: std::integral_constant<QuantFormat, F>.
template <QuantFormat F>
using FormatTag = std::integral_constant<QuantFormat, F>;

/// Calls f(FormatTag<format>()): code written once, compiled for each format.
template <class F>
void with_format(QuantFormat format, F&& f) {
    switch (format) {
        case QuantFormat::q8_0:
            return f(FormatTag<QuantFormat::q8_0>());
        case QuantFormat::q4_0:
            return f(FormatTag<QuantFormat::q4_0>());
        case QuantFormat::q4_1:
            return f(FormatTag<QuantFormat::q4_1>());
        case QuantFormat::q5_0:
            return f(FormatTag<QuantFormat::q5_0>());
        case QuantFormat::q5_1:
            return f(FormatTag<QuantFormat::q5_1>());
        case QuantFormat::q4_k:
            return f(FormatTag<QuantFormat::q4_k>());
        case QuantFormat::q5_k:
            return f(FormatTag<QuantFormat::q5_k>());
        case QuantFormat::q6_k:
            return f(FormatTag<QuantFormat::q6_k>());
    }
}

/// Σ a[i] · w[inside + i] over i < count: values inside … inside + count − 1 of chunk c, which
/// the depth covers only in part.
template <QuantFormat Format>
inline float partial_chunk(const std::uint8_t* w, Index c, Index inside, Index count, const float* a) {
    alignas(64) float chunk[32];
    chunk_values<Format>(w, c, chunk);
    float sum = 0;
    for (Index i = 0; i < count; ++i) sum += a[i] * chunk[inside + i];
    return sum;
}

/// The factors of chunk `sub` of `block` for the streamed product: over the chunk's 32 values,
/// Σ a_i w_i = scale[0] · Σ_{i<16} a_i v_i + scale[1] · Σ_{i≥16} a_i v_i + offset · Σ a_i, v_i the
/// codes as integers. Where the format's offset is its scale times a whole bias (Q8_0, Q4_0,
/// Q5_0, Q6_K), v_i = q_i − bias is signed and offset is 0; where it holds a min (Q4_1, Q5_1,
/// Q4_K, Q5_K), v_i = u_i and offset is the min (m, or −dmin·m).
struct ChunkFactors {
    float scale[2];
    float offset;
};

template <QuantFormat Format>
EIGEN_ALWAYS_INLINE ChunkFactors chunk_factors(const std::uint8_t* block, Index sub) {
    if constexpr (Format == QuantFormat::q6_k) {
        const float d = half_at(block + 208);
        const auto* scales = reinterpret_cast<const std::int8_t*>(block + 192);
        const Index h = sub / 4, k = sub % 4;
        return {{d * float(scales[8 * h + 2 * k]), d * float(scales[8 * h + 2 * k + 1])}, 0.0f};
    } else if constexpr (Format == QuantFormat::q4_k || Format == QuantFormat::q5_k) {
        const float d = half_at(block), dmin = half_at(block + 2);
        const ScaleAndMin sm = k_scale_and_min(block + 4, std::size_t(sub));
        const float scale = d * float(sm.scale);
        return {{scale, scale}, -(dmin * float(sm.min))};
    } else if constexpr (has_min(Format)) {  // Q4_1, Q5_1
        const float d = half_at(block);
        return {{d, d}, half_at(block + 2)};
    } else {  // Q8_0, Q4_0, Q5_0
        const float d = half_at(block);
        return {{d, d}, 0.0f};
    }
}

/// A K block's factors (chunk_factors) for each of its chunks, decoded once for the block's
/// eight: Q4_K/Q5_K's scale and offset of sub-block s in scale[s], offset[s]; Q6_K's two scales
/// of chunk s in scale[2s], scale[2s + 1].
struct BlockFactors {
    float scale[16];
    float offset[8];
};

#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
/// A Q4_K or Q5_K block's twelve bytes of 6-bit pairs (k_scale_and_min) as sixteen bytes: its
/// eight scales, then its eight mins. Bytes 0 … 7 hold scales and mins 0 … 3 in their low 6 bits
/// and the top 2 bits of 4 … 7; bytes 8 … 11 the low 4 bits of scales (low nibbles) and mins (high
/// nibbles) 4 … 7. SSE2, in one register throughout: a decoding step unpacks every block's once
/// per row, and this with the mins' 256-bit sums took Q4_K's digits 1.06–1.31× past scalar
/// shifts and four inserts (docs/bench/2026-12-04-epyc-avx512/digits).
EIGEN_ALWAYS_INLINE __m128i k_scales_and_mins(const std::uint8_t* block) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4));  // and 4 bytes of codes
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m128i first = _mm_and_si128(q, _mm_set1_epi8(0x3F));                   // scales, mins 0 … 3
    const __m128i top = _mm_and_si128(_mm_srli_epi16(q, 2), _mm_set1_epi8(0x30));  // bits 6, 7 to 4, 5
    const __m128i last = _mm_shuffle_epi32(q, 0xAA);                               // bytes 8 … 11 in every word
    const __m128i nibbles = _mm_unpacklo_epi32(_mm_and_si128(last, low4), _mm_and_si128(_mm_srli_epi16(last, 4), low4));
    // [scales 0 … 3, scales 4 … 7, mins 0 … 3, mins 4 … 7]
    return _mm_unpacklo_epi32(first, _mm_or_si128(nibbles, top));
}
#endif

template <QuantFormat Format>
EIGEN_ALWAYS_INLINE void block_factors(const std::uint8_t* block, BlockFactors& f) {
    if constexpr (Format == QuantFormat::q6_k) {
        const float d = half_at(block + 208);
#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
        // sixteen signed bytes to four packets of 32-bit integers (each byte into the top of its
        // lane, shifted down with its sign), as float, times d: the products scalar code gives
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192));
        const __m128i lo = _mm_unpacklo_epi8(b, b), hi = _mm_unpackhi_epi8(b, b);
        const __m128 ds = _mm_set1_ps(d);
        const auto widen = [&](__m128i words, bool high) {
            return _mm_mul_ps(ds, _mm_cvtepi32_ps(_mm_srai_epi32(
                                      high ? _mm_unpackhi_epi16(words, words) : _mm_unpacklo_epi16(words, words), 24)));
        };
        _mm_storeu_ps(f.scale, widen(lo, false));
        _mm_storeu_ps(f.scale + 4, widen(lo, true));
        _mm_storeu_ps(f.scale + 8, widen(hi, false));
        _mm_storeu_ps(f.scale + 12, widen(hi, true));
#else
        const auto* scales = reinterpret_cast<const std::int8_t*>(block + 192);
        for (int i = 0; i < 16; ++i) f.scale[i] = d * float(scales[i]);
#endif
    } else {
        static_assert(Format == QuantFormat::q4_k || Format == QuantFormat::q5_k, "a K format with mins");
        const float d = half_at(block), dmin = half_at(block + 2);
#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
        const __m128i b = k_scales_and_mins(block), zero = _mm_setzero_si128();
        const __m128i lo = _mm_unpacklo_epi8(b, zero), hi = _mm_unpackhi_epi8(b, zero);
        const __m128 ds = _mm_set1_ps(d), ms = _mm_set1_ps(-dmin);  // −(dmin · m) = (−dmin) · m
        _mm_storeu_ps(f.scale, _mm_mul_ps(ds, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero))));
        _mm_storeu_ps(f.scale + 4, _mm_mul_ps(ds, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero))));
        _mm_storeu_ps(f.offset, _mm_mul_ps(ms, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero))));
        _mm_storeu_ps(f.offset + 4, _mm_mul_ps(ms, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, zero))));
#else
        // the twelve bytes of 6-bit pairs (k_scale_and_min) into eight scales then eight mins, four at
        // a time in 32-bit words (llama.cpp's unpacking; a little-endian host, as gguf.hpp requires)
        constexpr std::uint32_t six = 0x3F3F3F3Fu, four = 0x0F0F0F0Fu, two = 0x03030303u;
        std::uint32_t w[4];
        std::memcpy(w, block + 4, 12);
        w[3] = ((w[2] >> 4) & four) | (((w[1] >> 6) & two) << 4);  // mins 4 … 7
        const std::uint32_t low_mins = w[1] & six;                 // mins 0 … 3
        w[1] = (w[2] & four) | (((w[0] >> 6) & two) << 4);         // scales 4 … 7
        w[2] = low_mins;
        w[0] &= six;  // scales 0 … 3
        std::uint8_t bytes[16];
        std::memcpy(bytes, w, 16);
        for (int s = 0; s < 8; ++s) {
            f.scale[s] = d * float(bytes[s]);
            f.offset[s] = -(dmin * float(bytes[8 + s]));
        }
#endif
    }
}

/// The bias subtracted from a format's unsigned codes u to give its signed codes (Q8_0's u is
/// q + 128), 0 where the codes stay unsigned (a format with a min).
template <QuantFormat Format>
inline constexpr int kCodeBias = Format == QuantFormat::q8_0   ? 128
                                 : Format == QuantFormat::q4_0 ? 8
                                 : Format == QuantFormat::q5_0 ? 16
                                 : Format == QuantFormat::q6_k ? 32
                                                               : 0;

#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
/// Packet P of the 16 signed codes in c, as float.
template <int P>
EIGEN_ALWAYS_INLINE Packet widen_signed_codes(__m128i c) {
#if defined(EIGEN_VECTORIZE_AVX512)
    static_assert(P == 0, "one packet of 16 codes");
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c));
#elif defined(EIGEN_VECTORIZE_AVX2)
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(P == 0 ? c : _mm_srli_si128(c, 8)));
#elif defined(EIGEN_VECTORIZE_AVX)
    const __m128i eight = P == 0 ? c : _mm_srli_si128(c, 8);
    const __m128i lo = _mm_cvtepi8_epi32(eight), hi = _mm_cvtepi8_epi32(_mm_srli_si128(eight, 4));
    return _mm256_cvtepi32_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1));
#else
    // each byte into the top of a 16-bit word, then of a 32-bit one, shifted down with its sign
    const __m128i words = _mm_srai_epi16(P < 2 ? _mm_unpacklo_epi8(c, c) : _mm_unpackhi_epi8(c, c), 8);
    return _mm_cvtepi32_ps(
        _mm_srai_epi32(P % 2 == 0 ? _mm_unpacklo_epi16(words, words) : _mm_unpackhi_epi16(words, words), 16));
#endif
}

template <bool Signed, int... P>
EIGEN_ALWAYS_INLINE void widen_all(__m128i c, Packet* out, std::integer_sequence<int, P...>) {
    if constexpr (Signed)
        ((out[P] = widen_signed_codes<P>(c)), ...);
    else
        ((out[P] = widen_codes<P>(c)), ...);
}
#endif

/// Chunk `sub` of `block`'s codes v (chunk_factors) as kChunkPackets float packets.
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE void chunk_code_packets(const std::uint8_t* block, Index sub, Packet* v) {
    constexpr int bias = kCodeBias<Format>;
#if defined(ATTN_DETAIL_QUANTIZED_SSE2)
    __m128i c0, c1;
    if constexpr (Format == QuantFormat::q8_0) {  // the bytes are the signed codes
        c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    } else if constexpr (Format == QuantFormat::q5_0) {
        // v = u − 16 straight from the bits: with its fifth bit set a code is its nibble (16 + q − 16),
        // without it q − 16, whose byte is the nibble under 0xF0. One ternary-logic operation per 16
        // codes picks the high nibble's bits (set where the fifth bit is not) and keeps the low
        // nibble's: two operations a chunk fewer than building u and subtracting the bias, in the
        // format that takes most of a Q4_K_M file of SmolLM2's width.
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 6));
        std::uint32_t bits;
        std::memcpy(&bits, block + 2, 4);
        const __m128i high_nibble = _mm_set1_epi8(char(0xF0));
        // f(a = q, b = 0xF0, c = fifth bit as a byte mask) = b ? ¬c : a
        constexpr int kPick = (0xCC & ~0xAA) | (~0xCC & 0xF0);
        c0 = _mm_ternarylogic_epi32(q, high_nibble, _mm_movm_epi8(__mmask16(bits & 0xFFFFu)), kPick);
        c1 = _mm_ternarylogic_epi32(_mm_srli_epi16(q, 4), high_nibble, _mm_movm_epi8(__mmask16(bits >> 16)), kPick);
#endif
    } else {
        chunk_codes<Format>(block, sub, c0, c1);
        if constexpr (bias != 0) {
            const __m128i b = _mm_set1_epi8(char(bias));
            c0 = _mm_sub_epi8(c0, b);
            c1 = _mm_sub_epi8(c1, b);
        }
    }
    constexpr int half = kChunkPackets / 2;
    widen_all<bias != 0>(c0, v, std::make_integer_sequence<int, half>());
    widen_all<bias != 0>(c1, v + half, std::make_integer_sequence<int, half>());
#else
    alignas(64) std::uint8_t u[32];
    alignas(64) float values[32];
    chunk_codes<Format>(block, sub, u);
    for (int i = 0; i < 32; ++i) values[i] = float(int(u[i]) - bias);
    for (int p = 0; p < kChunkPackets; ++p) v[p] = Eigen::internal::pload<Packet>(values + p * kLanes);
#endif
}

/// c(r, j) (+)= Σ_t a(r, t) · W(j, from + t), for Rows rows of a and Outs rows of W (ws), over
/// the depth: whole chunks in registers, the codes' products with a summed per scale and then
/// multiplied by it into one packet accumulator per (r, j) (and the offsets times a's sums into
/// another, for a format with a min); a chunk the depth covers only in part in scalar code.
template <QuantFormat Format, int Rows, int Outs>
EIGEN_ALWAYS_INLINE void dot_rows(const std::uint8_t* const* ws, const std::uint8_t* const* ahead, Index from,
                                  Index depth, const float* a, Index a_row, float* c, Index c_row, bool accumulate) {
    namespace ei = Eigen::internal;
    // bytes a chunk takes in a row, about (a K block's chunks are not whole bytes apart in Q6_K)
    constexpr Index kChunkBytes = quant_block_bytes(Format) * kQuantChunk / quant_block_values(Format);
    constexpr bool kMin = has_min(Format);
    constexpr bool kOneScale = Format != QuantFormat::q6_k;  // one scale for the chunk's 32 values
    constexpr int kHalf = kChunkPackets / 2;
    const Index end = from + depth;
    const Index first_chunk = (from + kQuantChunk - 1) / kQuantChunk, last_chunk = end / kQuantChunk;
    Packet acc[Rows][Outs], mins[Rows][Outs];
    BlockFactors factors[is_k_format(Format) ? Outs : 1];  // the K blocks' of the chunks, per row of W
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Outs; ++j) acc[r][j] = mins[r][j] = ei::pset1<Packet>(0.0f);
    for (Index ch = first_chunk; ch < last_chunk; ++ch) {
        const float* x = a + (ch * kQuantChunk - from);
        Packet sums[Rows];  // a's chunk summed to one packet, for the offsets
        if constexpr (kMin)
            for (int r = 0; r < Rows; ++r) {
                sums[r] = ei::ploadu<Packet>(x + r * a_row);
                for (int p = 1; p < kChunkPackets; ++p)
                    sums[r] = ei::padd(sums[r], ei::ploadu<Packet>(x + r * a_row + p * kLanes));
            }
        if constexpr (is_k_format(Format))
            if (ch == first_chunk || ch % 8 == 0)
                for (int j = 0; j < Outs; ++j)
                    block_factors<Format>(ws[j] + (ch / 8) * quant_block_bytes(Format), factors[j]);
        for (int j = 0; j < Outs; ++j) {
            prefetch(ahead[j] + ch * kChunkBytes);
            Index sub = 0;
            const std::uint8_t* block = chunk_block<Format>(ws[j], ch, sub);
            ChunkFactors f;
            if constexpr (Format == QuantFormat::q6_k)
                f = {{factors[j].scale[2 * sub], factors[j].scale[2 * sub + 1]}, 0.0f};
            else if constexpr (is_k_format(Format))
                f = {{factors[j].scale[sub], factors[j].scale[sub]}, factors[j].offset[sub]};
            else
                f = chunk_factors<Format>(block, sub);
            Packet v[kChunkPackets];
            chunk_code_packets<Format>(block, sub, v);
            for (int r = 0; r < Rows; ++r) {
                const float* xr = x + r * a_row;
                if constexpr (kOneScale) {
                    Packet t = ei::pmul(v[0], ei::ploadu<Packet>(xr));
                    for (int p = 1; p < kChunkPackets; ++p) t = ei::pmadd(v[p], ei::ploadu<Packet>(xr + p * kLanes), t);
                    acc[r][j] = ei::pmadd(ei::pset1<Packet>(f.scale[0]), t, acc[r][j]);
                } else {
                    for (int g = 0; g < 2; ++g) {
                        Packet t = ei::pmul(v[g * kHalf], ei::ploadu<Packet>(xr + g * kHalf * kLanes));
                        for (int p = g * kHalf + 1; p < (g + 1) * kHalf; ++p)
                            t = ei::pmadd(v[p], ei::ploadu<Packet>(xr + p * kLanes), t);
                        acc[r][j] = ei::pmadd(ei::pset1<Packet>(f.scale[g]), t, acc[r][j]);
                    }
                }
                if constexpr (kMin) mins[r][j] = ei::pmadd(ei::pset1<Packet>(f.offset), sums[r], mins[r][j]);
            }
        }
    }
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Outs; ++j) {
            float sum = ei::predux(acc[r][j]);
            if constexpr (kMin) sum += ei::predux(mins[r][j]);
            if (first_chunk > last_chunk) {  // the depth lies inside one chunk
                sum += partial_chunk<Format>(ws[j], from / kQuantChunk, from % kQuantChunk, depth, a + r * a_row);
            } else {
                if (from % kQuantChunk != 0)
                    sum += partial_chunk<Format>(ws[j], from / kQuantChunk, from % kQuantChunk,
                                                 first_chunk * kQuantChunk - from, a + r * a_row);
                if (end % kQuantChunk != 0)
                    sum += partial_chunk<Format>(ws[j], last_chunk, 0, end % kQuantChunk,
                                                 a + r * a_row + (last_chunk * kQuantChunk - from));
            }
            float& out = c[r * c_row + j];
            out = accumulate ? out + sum : sum;
        }
}

/// Whether this build has the decoding products on activation digits (quantized_digits.hpp:
/// AVX-512 with VNNI).
#if defined(ATTN_DETAIL_QUANTIZED_DIGITS)
inline constexpr bool kDigitProducts = true;
#else
inline constexpr bool kDigitProducts = false;
#endif

/// The formats a decoding step's product takes through the digits: codes below 64 in blocks
/// that tile 64 values (Q4_0, Q5_0: two blocks; Q4_K, Q5_K, Q6_K: a quarter block). Q8_0's
/// codes take a whole byte (its lanes could reach 2^31) and it is bound by the memory already;
/// Q4_1 and Q5_1 are rare.
inline constexpr bool has_digit_codes(QuantFormat format) {
    return format == QuantFormat::q4_0 || format == QuantFormat::q5_0 || format == QuantFormat::q4_k ||
           format == QuantFormat::q5_k || format == QuantFormat::q6_k;
}

/// Whether multiply_quantized takes the digits for n rows of a on rows in `format` and the
/// window from … from + depth − 1 of their values: where the build has them, for a decoding
/// step's rows (up to kStreamedRows), whole groups of 64 values, and a's values within the
/// digits' range (ActivationDigits::representable; else the float product).
inline bool takes_digits(QuantFormat format, Index n, Index from, Index depth) {
    return kDigitProducts && has_digit_codes(format) && n >= 1 && n <= kStreamedRows && from % 64 == 0 &&
           depth % 64 == 0 && depth > 0;
}

#if defined(ATTN_DETAIL_QUANTIZED_DIGITS)

/// 16-bit shift counts: `first` in the 512-bit register's lower 256 bits, `second` in the upper.
EIGEN_ALWAYS_INLINE __m512i halves_counts(short first, short second) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(first)), _mm256_set1_epi16(second), 1);
}

/// A K block's factors in registers: Q4_K/Q5_K's eight sub-blocks' d · sc in scale's lanes 0 … 7
/// and −dmin · m in offset's; Q6_K's sixteen d · sc in scale's lanes (block_factors' values).
struct KFactors {
    __m512 scale;
    __m256 offset;
};

template <QuantFormat Format>
EIGEN_ALWAYS_INLINE KFactors k_factors(const std::uint8_t* block) {
    if constexpr (Format == QuantFormat::q6_k) {
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192));
        return {_mm512_mul_ps(_mm512_set1_ps(half_at(block + 208)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc))),
                _mm256_setzero_ps()};
    } else {
        static_assert(Format == QuantFormat::q4_k || Format == QuantFormat::q5_k, "a K format");
        const __m128i bytes = k_scales_and_mins(block);
        const __m256 scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
        const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
        // Q4_K's odd sub-blocks' codes stay in their bytes' high nibbles, 16 times their value
        // (group_codes): their scales a sixteenth, exactly
        const __m256 d = Format == QuantFormat::q4_k
                             ? _mm256_mul_ps(_mm256_set1_ps(half_at(block)),
                                             _mm256_setr_ps(1, 0.0625f, 1, 0.0625f, 1, 0.0625f, 1, 0.0625f))
                             : _mm256_set1_ps(half_at(block));
        return {_mm512_castps256_ps512(_mm256_mul_ps(d, scales)),
                _mm256_mul_ps(_mm256_set1_ps(-half_at(block + 2)), mins)};
    }
}

/// The 64 codes u of a group of 64 values, unsigned bytes in the values' order, and their
/// scales: each 32-bit lane's (4 values') d or d · sc (the K formats' from the block's factors
/// f; Q4_K's second 32 codes are 16 times theirs and their scales a sixteenth). `at` is where the
/// group's codes are: Q4_0/Q5_0 the first of its two blocks, the K formats the block whose
/// quarter `quarter` (0 … 3) it is.
template <QuantFormat Format>
EIGEN_ALWAYS_INLINE __m512i group_codes(const std::uint8_t* at, int quarter, const KFactors& f, __m512& scale) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    if constexpr (Format == QuantFormat::q4_0 || Format == QuantFormat::q5_0) {
        // two blocks, A and B: their nibbles' bytes as [A, A, B, B] in 128-bit lanes, the low
        // nibbles kept in the first of each pair (values 0 … 15) and the high in the second (16 … 31)
        constexpr Index bytes = quant_block_bytes(Format), codes_at = Format == QuantFormat::q5_0 ? 6 : 2;
        const std::uint8_t* a = at;
        const std::uint8_t* b = a + bytes;
        const __m256i both = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + codes_at),
                                                 reinterpret_cast<const __m128i*>(a + codes_at));
        const __m512i pairs =
            _mm512_permutexvar_epi64(_mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0), _mm512_castsi256_si512(both));
        constexpr long long four = 0x0004000400040004;  // 16-bit counts: the second of each pair by 4
        __m512i u =
            _mm512_and_si512(_mm512_srlv_epi16(pairs, _mm512_set_epi64(four, four, 0, 0, four, four, 0, 0)), low4);
        if constexpr (Format == QuantFormat::q5_0) {  // the fifth bits, A's 32 then B's 32
            std::uint32_t fifth_a, fifth_b;
            std::memcpy(&fifth_a, a + 2, 4);
            std::memcpy(&fifth_b, b + 2, 4);
            const __mmask64 fifth = _cvtu64_mask64(std::uint64_t(fifth_a) | std::uint64_t(fifth_b) << 32);
            u = _mm512_mask_add_epi8(u, fifth, u, _mm512_set1_epi8(16));
        }
        std::uint16_t d_a, d_b;
        std::memcpy(&d_a, a, 2);
        std::memcpy(&d_b, b, 2);
        const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(int(std::uint32_t(d_a) | std::uint32_t(d_b) << 16)));
        scale = _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                                      _mm512_castps128_ps512(ds));
        return u;
    } else if constexpr (Format == QuantFormat::q4_k || Format == QuantFormat::q5_k) {
        // quarter r of the block: 32 bytes, sub-block 2r in their low nibbles and 2r + 1 in the high
        const int r = quarter;
        const std::uint8_t* block = at;
        const std::uint8_t* codes = block + (Format == QuantFormat::q5_k ? 48 : 16) + 32 * r;
        const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
        __m512i u;
        if constexpr (Format == QuantFormat::q4_k) {
            // the high nibbles left where they are, 16 times the codes (at most 240, which keeps a
            // lane's sums below 2^31), their scales a sixteenth (k_factors): one instruction fewer
            u = _mm512_and_si512(q, _mm512_inserti64x4(low4, _mm256_set1_epi8(char(0xF0)), 1));
        } else {  // Q5_K: its fifth bits go above the high nibbles' codes
            u = _mm512_and_si512(_mm512_srlv_epi16(q, halves_counts(0, 4)), low4);
            // value l of sub-block s has its fifth bit at bit s of qh[l]: each 32-bit lane rotated
            // left by 4 − s (mod 32) brings bit s of every byte to bit 4 of the same byte
            const __m512i high =
                _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16)));
            const int s = 2 * r;
            const __m512i rotate =
                _mm512_inserti64x4(_mm512_set1_epi32((4 - s) & 31), _mm256_set1_epi32((3 - s) & 31), 1);
            u = _mm512_ternarylogic_epi32(u, _mm512_rolv_epi32(high, rotate), _mm512_set1_epi8(0x10),
                                          0xF8);  // a | b & c
        }
        scale = _mm512_permutexvar_ps(_mm512_inserti64x4(_mm512_set1_epi32(2 * r), _mm256_set1_epi32(2 * r + 1), 1),
                                      f.scale);
        return u;
    } else {
        static_assert(Format == QuantFormat::q6_k, "the formats of has_digit_codes");
        // quarter 2h + p of the block: half h's low nibbles (p = 0) or high ones (p = 1) of its 64
        // bytes ql, and bits 2k, 2k + 1 of its 32 bytes qh, k = 2p for the first 32 values and
        // 2p + 1 for the second, moved to bits 4 and 5
        const int h = quarter / 2, p = quarter % 2;
        const std::uint8_t* block = at;
        __m512i low = _mm512_loadu_si512(block + 64 * h);
        if (p == 1) low = _mm512_srli_epi16(low, 4);
        const __m512i high =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * h)));
        const __m512i moved =
            p == 0 ? _mm512_sllv_epi16(high, halves_counts(4, 2)) : _mm512_srlv_epi16(high, halves_counts(0, 2));
        scale = _mm512_permutexvar_ps(_mm512_add_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                                       _mm512_set1_epi32(4 * quarter)),
                                      f.scale);
        return _mm512_ternarylogic_epi32(_mm512_and_si512(low, low4), moved, _mm512_set1_epi8(0x30), 0xF8);
    }
}

/// One group of 64 values of a product on digits: the g-th of the window, whose codes in each
/// of the Outs rows of W group_codes reads at at[j] (a K block's quarter `quarter`), times each
/// row of a's digits x, into acc.
template <QuantFormat Format, int Rows, int Outs>
EIGEN_ALWAYS_INLINE void digits_group(const std::uint8_t* const* at, int quarter, Index g, const ActivationDigits* x,
                                      const KFactors* factors, __m512 (&acc)[Rows][Outs]) {
    constexpr bool kBias = kCodeBias<Format> != 0;
    ActivationDigits::Group digits[Rows];
    __m512 unit[Rows];
    for (int r = 0; r < Rows; ++r) {
        digits[r] = x[r].group(64 * g);
        unit[r] = _mm512_load_ps(x[r].scale + 16 * g);
    }
    for (int j = 0; j < Outs; ++j) {
        __m512 scale;
        const __m512i u = group_codes<Format>(at[j], quarter, factors[j], scale);
        for (int r = 0; r < Rows; ++r) {
            __m512i sums = ActivationDigits::lane_sums(u, digits[r]);
            if constexpr (kBias) sums = _mm512_sub_epi32(sums, _mm512_load_si512(x[r].bias_sum + 16 * g));
            acc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(scale, unit[r]), acc[r][j]);
        }
    }
}

/// A K block's factors for each of the Outs rows of W (their blocks at at[j]), and with a min
/// its eight mins times a's chunk sums into mins, the chunks inside the window (from, depth).
template <QuantFormat Format, int Rows, int Outs>
EIGEN_ALWAYS_INLINE void digits_block(const std::uint8_t* const* at, Index block, Index from, Index depth,
                                      const ActivationDigits* x, KFactors* factors,
                                      __m256 (&mins)[Rows][has_min(Format) ? Outs : 1]) {
    for (int j = 0; j < Outs; ++j) factors[j] = k_factors<Format>(at[j]);
    if constexpr (has_min(Format)) {
        const Index chunk = (block * 256 - from) / 32;
        const bool whole = chunk >= 0 && chunk + 8 <= depth / 32;
        const auto inside = __mmask8(0xFFu & (0xFFu << std::max<Index>(0, -chunk)) &
                                     (0xFFu >> std::max<Index>(0, chunk + 8 - depth / 32)));
        for (int r = 0; r < Rows; ++r) {
            const __m256 sums = _mm256_loadu_ps(x[r].chunk_sum(chunk));
            for (int j = 0; j < Outs; ++j)
                mins[r][j] = whole ? _mm256_fmadd_ps(factors[j].offset, sums, mins[r][j])
                                   : _mm256_mask3_fmadd_ps(factors[j].offset, sums, mins[r][j], inside);
        }
    }
}

/// The Outs rows of W `offset` bytes in: into L1 in the rows ahead, into L2 in those further ahead.
template <int Outs>
EIGEN_ALWAYS_INLINE void prefetch_rows(const std::uint8_t* const* ahead, const std::uint8_t* const* far, Index offset) {
    for (int j = 0; j < Outs; ++j) {
        prefetch(ahead[j] + offset);
        _mm_prefetch(reinterpret_cast<const char*>(far[j] + offset), _MM_HINT_T1);
    }
}

/// Quarter Quarter of a whole K block (the window's g-th group its first) in each of the Outs
/// rows of W (their blocks at at[j]), which prefetches line Quarter of the block in the rows ahead.
template <QuantFormat Format, int Rows, int Outs, int Quarter>
EIGEN_ALWAYS_INLINE void digits_quarter(const std::uint8_t* const* at, const std::uint8_t* const* ahead,
                                        const std::uint8_t* const* far, Index block, Index g, const ActivationDigits* x,
                                        const KFactors* factors, __m512 (&acc)[Rows][Outs]) {
    constexpr Index kBlockBytes = quant_block_bytes(Format);
    if constexpr (64 * Quarter < kBlockBytes) prefetch_rows<Outs>(ahead, far, block * kBlockBytes + 64 * Quarter);
    digits_group<Format, Rows, Outs>(at, Quarter, g + Quarter, x, factors, acc);
}

/// c(r, j) (+)= Σ_t a(r, t) · W(j, from + t) for Rows rows of a (their digits x) and Outs rows of
/// W, t < depth, from and depth multiples of 64: per group of 64 values, the codes' lane sums
/// with the digits (exact integers, the codes' bias taken off), times the lanes' scales and
/// 2^(e − 14), into one float accumulator per (r, j); a K format with a min adds each block's
/// mins times a's chunk sums. A K format's whole blocks go four groups at once, each quarter known
/// when compiled and each of the block's lines prefetched once: finding the block and quarter
/// for every group at run time took about a quarter of the loop's instructions (Zen 4, one
/// thread, from memory: Q4_K 1.02–1.06×, Q5_K 1.03–1.11×, Q6_K 1.06–1.29× this way;
/// docs/bench/2026-12-04-epyc-avx512/digits_blocks).
template <QuantFormat Format, int Rows, int Outs>
EIGEN_ALWAYS_INLINE void dot_digits(const std::uint8_t* const* ws, const std::uint8_t* const* ahead,
                                    const std::uint8_t* const* far, Index from, Index depth, const ActivationDigits* x,
                                    float* c, Index c_row, bool accumulate) {
    constexpr Index kBlockBytes = quant_block_bytes(Format);
    constexpr Index kGroupBytes = kBlockBytes * 64 / quant_block_values(Format);
    constexpr bool kMin = has_min(Format), kK = is_k_format(Format);
    __m512 acc[Rows][Outs];
    __m256 mins[Rows][kMin ? Outs : 1];  // a K block's mins times a's chunk sums
    for (int r = 0; r < Rows; ++r) {
        for (int j = 0; j < Outs; ++j) acc[r][j] = _mm512_setzero_ps();
        for (int j = 0; j < (kMin ? Outs : 1); ++j) mins[r][j] = _mm256_setzero_ps();
    }
    KFactors factors[Outs];
    const std::uint8_t* at[Outs];
    const Index first_group = from / 64, groups = depth / 64;
    for (Index g = 0; g < groups;) {
        const Index group = first_group + g;
        if constexpr (kK) {
            const Index block = group / 4;
            for (int j = 0; j < Outs; ++j) at[j] = ws[j] + block * kBlockBytes;
            if (group % 4 == 0 && g + 4 <= groups) {  // a whole block, its quarters in turn
                digits_block<Format, Rows, Outs>(at, block, from, depth, x, factors, mins);
                digits_quarter<Format, Rows, Outs, 0>(at, ahead, far, block, g, x, factors, acc);
                digits_quarter<Format, Rows, Outs, 1>(at, ahead, far, block, g, x, factors, acc);
                digits_quarter<Format, Rows, Outs, 2>(at, ahead, far, block, g, x, factors, acc);
                digits_quarter<Format, Rows, Outs, 3>(at, ahead, far, block, g, x, factors, acc);
                g += 4;
                continue;
            }
        }
        // one group: Q4_0's or Q5_0's, or one of a K block the window holds only part of
        prefetch_rows<Outs>(ahead, far, group * kGroupBytes);
        if constexpr (kK) {
            if (g == 0 || group % 4 == 0)
                digits_block<Format, Rows, Outs>(at, group / 4, from, depth, x, factors, mins);
            digits_group<Format, Rows, Outs>(at, int(group % 4), g, x, factors, acc);
        } else {
            for (int j = 0; j < Outs; ++j) at[j] = ws[j] + group * kGroupBytes;
            digits_group<Format, Rows, Outs>(at, 0, g, x, factors, acc);
        }
        ++g;
    }
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Outs; ++j) {
            float sum = _mm512_reduce_add_ps(acc[r][j]);
            if constexpr (kMin) sum += Eigen::internal::predux(Eigen::internal::Packet8f(mins[r][j]));
            float& out = c[r * c_row + j];
            out = accumulate ? out + sum : sum;
        }
}

/// The few-rows product through the digits where takes_digits says so: false (nothing
/// written) where it does not, or where a's values are outside the digits' range.
template <QuantFormat Format>
bool few_rows_digits(const QuantizedMatrix& m, Index first_row, Index count, Index from, Index depth, Index n,
                     const float* a, Index a_row, float* c, Index c_row, bool accumulate) {
    if constexpr (!has_digit_codes(Format)) {
        return false;
    } else {
        if (!takes_digits(Format, n, from, depth)) return false;
        for (Index r = 0; r < n; ++r)
            if (!ActivationDigits::representable(a + r * a_row, depth)) return false;
        constexpr int kOuts = 4;
        constexpr Index kAhead = 4;  // rows of W prefetched ahead into L1, as few_rows
        ActivationDigits x[kStreamedRows];
        const QuantizedMatrix::RunRows row = m.rows_of_run(first_row);
        // and rows about 12 KiB ahead into L2: the digits read four interleaved rows faster than
        // the hardware prefetchers follow them (Zen 4, one thread, from memory: Q6_K 13 → 17–20 G
        // weights/s, Q5_0 15–16 → 17–20; twice or half that distance did no better)
        const Index far_rows = std::max<Index>(8, Index(12288 / row.row_bytes));
        for (Index piece = 0; piece < depth; piece += ActivationDigits::kDepth) {
            const Index length = std::min(ActivationDigits::kDepth, depth - piece);
            for (Index r = 0; r < n; ++r) x[r].prepare(a + r * a_row + piece, length, kCodeBias<Format>);
            const bool onto = accumulate || piece > 0;
            const std::uint8_t* ws[kOuts];
            const std::uint8_t* ahead[kOuts];
            const std::uint8_t* far[kOuts];
            const auto rows_of_w = [&](Index j, auto outs) {
                constexpr int Outs = decltype(outs)::value;
                for (int k = 0; k < Outs; ++k) {
                    ws[k] = row(j + k);
                    ahead[k] = row(std::min(j + k + kAhead, count - 1));
                    far[k] = row(std::min(j + k + far_rows, count - 1));
                }
                if (n == 2)
                    dot_digits<Format, 2, Outs>(ws, ahead, far, from + piece, length, x, c + j, c_row, onto);
                else
                    dot_digits<Format, 1, Outs>(ws, ahead, far, from + piece, length, x, c + j, c_row, onto);
            };
            Index j = 0;
            for (; j + kOuts <= count; j += kOuts) rows_of_w(j, std::integral_constant<int, kOuts>());
            for (; j < count; ++j) rows_of_w(j, std::integral_constant<int, 1>());
        }
        return true;
    }
}
#endif

/// The few-rows product on rows of one format, rows of W one or four at a time (kOuts), all in
/// one run.
template <QuantFormat Format>
void few_rows(const QuantizedMatrix& m, Index first_row, Index count, Index from, Index depth, Index n, const float* a,
              Index a_row, float* c, Index c_row, bool accumulate) {
    // Rows of W read side by side. The formats of 4 and 5 bits and the K formats are bound by
    // their decoding (12–17 G weights/s from L3 or DRAM alike, AMD Zen 4): four rows share each
    // chunk of a and its sums. Q8_0 decodes faster than one core reads it, so it is bound by
    // the memory, and four interleaved short streams kept about half of it waiting (7.5–13
    // GB/s from DRAM against 14–17 with one row at a time: the matrix is then read in order).
    constexpr int kOuts = Format == QuantFormat::q8_0 ? 1 : 4;
    // the rows kAhead after these are prefetched while these are read: a row is a short stream
    // (768 Q8_0 values: 13 cache lines), too short for the hardware prefetchers to follow
    constexpr Index kAhead = 4;
    const std::uint8_t* ws[kOuts];
    const std::uint8_t* ahead[kOuts];
    const QuantizedMatrix::RunRows row = m.rows_of_run(first_row);
    Index j = 0;
    const auto rows_of_a = [&](auto outs) {
        constexpr int Outs = decltype(outs)::value;
        for (int k = 0; k < Outs; ++k) {
            ws[k] = row(j + k);
            ahead[k] = row(std::min(j + k + kAhead, count - 1));
        }
        Index r = 0;
        for (; r + 2 <= n; r += 2)
            dot_rows<Format, 2, Outs>(ws, ahead, from, depth, a + r * a_row, a_row, c + r * c_row + j, c_row,
                                      accumulate);
        for (; r < n; ++r)
            dot_rows<Format, 1, Outs>(ws, ahead, from, depth, a + r * a_row, a_row, c + r * c_row + j, c_row,
                                      accumulate);
    };
    for (; j + kOuts <= count; j += kOuts) rows_of_a(std::integral_constant<int, kOuts>());
    for (; j < count; ++j) rows_of_a(std::integral_constant<int, 1>());
}

/// b of a prefill's product on rows of one format: b(t, j) = W(j, from + t), the rows j of W
/// that `row` reaches read down, (depth × those rows), as multiply_many_rows_from (tiles.hpp) reads
/// its sources.
/// A row of W is a column of b, its values side by side along the depth only, so the tiles hand
/// over whole blocks (kDecodesBlocks): decoded once into L1 and run over by every row tile of a.
template <QuantFormat Format>
struct QuantizedColumns {
    using Scalar = float;
    static constexpr bool kInPlace = false;
    static constexpr bool kDecodesBlocks = true;
    static constexpr Index kLineEntries = 64 / Index(sizeof(float));  // of a decoded block

    QuantizedMatrix::RunRows row;
    Index from = 0;

    /// panel(t, j) = b(first + t, col + j) for t < count, j < width; panel's rows panel_row apart.
    void copy_block(Index first, Index count, Index col, Index width, float* panel, Index panel_row) const {
        // a packet's rows of W decoded along the depth (rows of `decoded`), then transposed into
        // the panel's columns a packets × packets block at a time: written one entry at a time
        // down a column of the panel, the decoding took 23–27 % of a prefill's samples
        constexpr Index kPiece = 128;
        alignas(64) float decoded[kLanes * kPiece];
        for (Index t = 0; t < count; t += kPiece) {
            const Index piece = std::min(kPiece, count - t);
            for (Index j = 0; j < width; j += kLanes) {
                const Index lanes = std::min<Index>(kLanes, width - j);
                for (Index i = 0; i < lanes; ++i)
                    span_values<Format>(row(col + j + i), from + first + t, piece, decoded + i * piece, 1);
                if (lanes == kLanes)  // the sizes known to the compiler where whole
                    kernel::transpose(decoded, piece, kLanes, piece, panel + t * panel_row + j, panel_row);
                else
                    kernel::transpose(decoded, piece, lanes, piece, panel + t * panel_row + j, panel_row);
            }
        }
    }

    /// The parts of block `next` prefetch_part takes one at a time: its rows of W. A block is a
    /// short run of each of its 64 rows (136 bytes of Q8_0), too short for the hardware
    /// prefetchers, and its decoding would wait on each.
    static Index prefetch_parts(const PanelBlock& next) { return next.width; }
    /// Prefetches the bytes block `next` decodes from its rows of W begin … end − 1.
    EIGEN_ALWAYS_INLINE void prefetch_part(const PanelBlock& next, Index begin, Index end) const {
        const Index t0 = from + next.first;
        const Index offset = t0 / quant_block_values(Format) * quant_block_bytes(Format) +
                             t0 % quant_block_values(Format) * quant_block_bytes(Format) / quant_block_values(Format);
        const Index length = next.count * quant_block_bytes(Format) / quant_block_values(Format) + 64;
        for (Index j = begin; j < end; ++j) {
            const std::uint8_t* start = row(next.col + j) + offset;
            for (Index b = 0; b < length; b += 64) prefetch(start + b);
        }
    }
};

/// The many-rows product on rows of one format: the float tiles over blocks of W decoded into
/// panels (QuantizedColumns), a's rows copied as for any weights.
template <QuantFormat Format>
void many_rows(const QuantizedMatrix& m, Index first_row, Index count, Index from, Index depth, Index n, const float* a,
               Index a_row, float* c, Index c_row, bool accumulate) {
    multiply_many_rows_from(n, depth, count, a, a_row, QuantizedColumns<Format>{m.rows_of_run(first_row), from}, c,
                            c_row, accumulate);
}

}  // namespace quant

/// Row r of m, values from … from + count − 1, as floats into out (the values of quantized.hpp's
/// decoders): an embedding row looked up, or a test's reference.
inline void dequantize_row(const QuantizedMatrix& m, Index r, Index from, Index count, float* out) {
    quant::with_format(m.run_of(r).format, [&](auto format) {
        quant::span_values<decltype(format)::value>(m.row(r), from, count, out, 1);
    });
}

/// c (n × count) (+)= a (n × depth) · W(first_row …, from …)ᵀ: rows first_row … first_row +
/// count − 1 of m and its columns from … from + depth − 1; a row stride a_row, c row stride
/// c_row. With `accumulate` the product is added to c, else c is overwritten. Up to
/// kStreamedRows rows of a stream W once, decoded in registers; more decode panels of W for
/// the float tiles (see the header comment).
inline void multiply_quantized(Index n, Index depth, const float* a, Index a_row, const QuantizedMatrix& m,
                               Index first_row, Index count, Index from, float* c, Index c_row, bool accumulate) {
    if (n == 0 || count == 0) return;
    eigen_assert(first_row >= 0 && first_row + count <= m.rows && from >= 0 && from + depth <= m.cols);
    for (const QuantizedRun& run : m.runs) {
        const Index lo = std::max(first_row, run.first_row), hi = std::min(first_row + count, run.first_row + run.rows);
        if (lo >= hi) continue;
        float* out = c + (lo - first_row);
        quant::with_format(run.format, [&](auto format) {
            constexpr QuantFormat F = decltype(format)::value;
            if (n <= kStreamedRows) {
#if defined(ATTN_DETAIL_QUANTIZED_DIGITS)
                if (quant::few_rows_digits<F>(m, lo, hi - lo, from, depth, n, a, a_row, out, c_row, accumulate)) return;
#endif
                quant::few_rows<F>(m, lo, hi - lo, from, depth, n, a, a_row, out, c_row, accumulate);
            } else
                quant::many_rows<F>(m, lo, hi - lo, from, depth, n, a, a_row, out, c_row, accumulate);
        });
    }
}

}  // namespace attn::detail

#ifdef ATTN_DETAIL_QUANTIZED_WEIGHTS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_QUANTIZED_WEIGHTS_PRAGMAS_PUSHED
#endif
