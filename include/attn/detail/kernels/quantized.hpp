#pragma once
// ggml's block formats, decoded to float: the reference scalar code, one block at a time,
// written for reading rather than speed (GGUF files store weights in these formats).
//
// A quantized tensor row is a sequence of blocks; each block holds a fixed number of
// values (32 or 256) in a fixed number of bytes, little-endian and packed (no padding):
//
//   type   values  bytes  layout (byte offsets within the block)
//   Q8_0     32     34    [0,2) d: F16 scale  [2,34) 32 × int8 q           x = d·q
//   Q4_0     32     18    [0,2) d: F16 scale  [2,18) 16 bytes of 4-bit q   x = d·(q − 8)
//                         byte j holds value j in its low nibble and value j + 16 in its high one
//   Q4_1     32     20    [0,2) d  [2,4) m: F16 min  [4,20) 4-bit q, as Q4_0      x = d·q + m
//   Q5_0     32     22    [0,2) d  [2,6) qh: 32 fifth bits  [6,22) 4-bit q      x = d·(q − 16)
//                         value i takes bit i of qh (little-endian uint32) as its fifth bit (worth 16)
//   Q5_1     32     24    [0,2) d  [2,4) m  [4,8) qh  [8,24) 4-bit q, as Q5_0    x = d·q + m
//   Q4_K    256    144    [0,2) d: F16  [2,4) dmin: F16  [4,16) 8 × (6-bit scale, 6-bit min)
//                         [16,144) 128 bytes of 4-bit q;          x = d·scale[s]·q − dmin·min[s]
//   Q5_K    256    176    as Q4_K, then [16,48) 32 bytes of high bits qh, [48,176) 4-bit q;
//                         q gains 16 × its high bit               x = d·scale[s]·q − dmin·min[s]
//   Q6_K    256    210    [0,128) low 4 bits ql  [128,192) high 2 bits qh
//                         [192,208) 16 × int8 scale  [208,210) d: F16   x = d·scale[s]·(q − 32)
//
// The K formats ("super-blocks") split their 256 values into sub-blocks s of 32 (Q4_K,
// Q5_K: 8 sub-blocks) or 16 (Q6_K: 16 sub-blocks), each with its own scale. The bit
// positions are documented at each decoder below. The products are computed in float in
// ggml's order (d·scale first, then ·q, then − dmin·min), so the values are those
// llama.cpp's own dequantize_row_* give.

#include <cstddef>
#include <cstdint>

#include "attn/detail/kernels/half_float.hpp"

namespace attn::detail {

/// Values per block and bytes per block of each format.
inline constexpr std::size_t q8_0_block_values = 32, q8_0_block_bytes = 34;
inline constexpr std::size_t q4_0_block_values = 32, q4_0_block_bytes = 18;
inline constexpr std::size_t q4_1_block_values = 32, q4_1_block_bytes = 20;
inline constexpr std::size_t q5_0_block_values = 32, q5_0_block_bytes = 22;
inline constexpr std::size_t q5_1_block_values = 32, q5_1_block_bytes = 24;
inline constexpr std::size_t k_block_values = 256;  // the K formats' super-block
inline constexpr std::size_t q4_k_block_bytes = 144;
inline constexpr std::size_t q5_k_block_bytes = 176;
inline constexpr std::size_t q6_k_block_bytes = 210;

/// The F16 number stored little-endian at `p`.
inline float load_half(const std::uint8_t* p) {
    return half_to_float(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

/// One Q8_0 block (34 bytes) → 32 floats.
inline void dequantize_q8_0_block(const std::uint8_t* block, float* out) {
    const float d = load_half(block);
    const std::uint8_t* q = block + 2;
    for (std::size_t i = 0; i < q8_0_block_values; ++i) out[i] = static_cast<float>(static_cast<std::int8_t>(q[i])) * d;
}

/// One Q4_0 block (18 bytes) → 32 floats. The 4-bit codes 0..15 stand for −8..7.
inline void dequantize_q4_0_block(const std::uint8_t* block, float* out) {
    const float d = load_half(block);
    const std::uint8_t* q = block + 2;
    for (std::size_t j = 0; j < q4_0_block_values / 2; ++j) {
        out[j] = static_cast<float>((q[j] & 0x0F) - 8) * d;
        out[j + 16] = static_cast<float>((q[j] >> 4) - 8) * d;
    }
}

/// One Q4_1 block (20 bytes) → 32 floats: the codes 0..15 of Q4_0's layout, times d, plus the
/// min m (ggml's order: x·d + m, one rounding).
inline void dequantize_q4_1_block(const std::uint8_t* block, float* out) {
    const float d = load_half(block);
    const float m = load_half(block + 2);
    const std::uint8_t* q = block + 4;
    for (std::size_t j = 0; j < q4_1_block_values / 2; ++j) {
        out[j] = static_cast<float>(q[j] & 0x0F) * d + m;
        out[j + 16] = static_cast<float>(q[j] >> 4) * d + m;
    }
}

/// The 5-bit code of value i (0..31) of a Q5_0 or Q5_1 block: the nibble of Q4_0's layout in
/// `low` (16 bytes), and bit i of the little-endian uint32 at `high` as its fifth bit.
inline int q5_code(const std::uint8_t* high, const std::uint8_t* low, std::size_t i) {
    const int nibble = i < 16 ? (low[i] & 0x0F) : (low[i - 16] >> 4);
    return nibble | (((high[i / 8] >> (i % 8)) & 1) << 4);
}

/// One Q5_0 block (22 bytes) → 32 floats. The 5-bit codes 0..31 stand for −16..15.
inline void dequantize_q5_0_block(const std::uint8_t* block, float* out) {
    const float d = load_half(block);
    for (std::size_t i = 0; i < q5_0_block_values; ++i)
        out[i] = static_cast<float>(q5_code(block + 2, block + 6, i) - 16) * d;
}

/// One Q5_1 block (24 bytes) → 32 floats: 5-bit codes 0..31, times d, plus the min m.
inline void dequantize_q5_1_block(const std::uint8_t* block, float* out) {
    const float d = load_half(block);
    const float m = load_half(block + 2);
    for (std::size_t i = 0; i < q5_1_block_values; ++i)
        out[i] = static_cast<float>(q5_code(block + 4, block + 8, i)) * d + m;
}

/// Scale and min of sub-block s (0..7) of a Q4_K or Q5_K block: eight 6-bit pairs packed
/// into 12 bytes. Sub-blocks 0..3 keep theirs in the low 6 bits of bytes s (scale) and
/// s + 4 (min); sub-blocks 4..7 take their low 4 bits from byte s + 4 (scale: low nibble,
/// min: high nibble) and their top 2 bits from the spare top bits of bytes s − 4 (scale)
/// and s (min):
///
///   byte  0..3   mm ssssss   s = scale of sub-block 0..3,  mm = top bits of scale 4..7
///   byte  4..7   MM nnnnnn   n = min of sub-block 0..3,    MM = top bits of min 4..7
///   byte  8..11  NNNN SSSS   S = low bits of scale 4..7,   N = low bits of min 4..7
struct ScaleAndMin {
    std::uint8_t scale;
    std::uint8_t min;
};

inline ScaleAndMin k_scale_and_min(const std::uint8_t* scales, std::size_t s) {
    if (s < 4) return {static_cast<std::uint8_t>(scales[s] & 63), static_cast<std::uint8_t>(scales[s + 4] & 63)};
    return {static_cast<std::uint8_t>((scales[s + 4] & 0x0F) | ((scales[s - 4] >> 6) << 4)),
            static_cast<std::uint8_t>((scales[s + 4] >> 4) | ((scales[s] >> 6) << 4))};
}

/// One Q4_K or Q5_K block → 256 floats. `high_bits` is the Q5_K block's qh (nullptr for
/// Q4_K). The 4-bit codes come in 4 runs of 32 bytes: run r holds sub-block 2r in the low
/// nibbles and sub-block 2r + 1 in the high ones. In Q5_K, value l (0..31) of sub-block s
/// also takes bit s of qh[l] as its fifth bit (worth 16).
inline void dequantize_k4_block(const std::uint8_t* block, const std::uint8_t* high_bits, const std::uint8_t* low_bits,
                                float* out) {
    const float d = load_half(block);
    const float dmin = load_half(block + 2);
    const std::uint8_t* scales = block + 4;
    for (std::size_t s = 0; s < 8; ++s) {
        const ScaleAndMin sm = k_scale_and_min(scales, s);
        const float scale = d * static_cast<float>(sm.scale);
        const float min = dmin * static_cast<float>(sm.min);
        const std::uint8_t* run = low_bits + 32 * (s / 2);
        const int shift = (s % 2) ? 4 : 0;
        for (std::size_t l = 0; l < 32; ++l) {
            int q = (run[l] >> shift) & 0x0F;
            if (high_bits && ((high_bits[l] >> s) & 1)) q += 16;
            out[32 * s + l] = scale * static_cast<float>(q) - min;
        }
    }
}

/// One Q4_K block (144 bytes) → 256 floats.
inline void dequantize_q4_k_block(const std::uint8_t* block, float* out) {
    dequantize_k4_block(block, nullptr, block + 16, out);
}

/// One Q5_K block (176 bytes) → 256 floats.
inline void dequantize_q5_k_block(const std::uint8_t* block, float* out) {
    dequantize_k4_block(block, block + 16, block + 48, out);
}

/// One Q6_K block (210 bytes) → 256 floats. The block is two halves of 128 values; half h
/// uses ql[64h, 64h + 64), qh[32h, 32h + 32) and scales[8h, 8h + 8). Within a half, value
/// e = 32k + l (quarter k = 0..3, l = 0..31) has its low 4 bits in ql[l + 32·(k mod 2)]
/// (low nibble for k < 2, high nibble otherwise), its top 2 bits in bits 2k, 2k + 1 of
/// qh[l], and the scale of its 16-value sub-block, scales[8h + e / 16]. The 6-bit code
/// 0..63 stands for −32..31.
inline void dequantize_q6_k_block(const std::uint8_t* block, float* out) {
    const std::uint8_t* low = block;
    const std::uint8_t* high = block + 128;
    const std::uint8_t* scales = block + 192;
    const float d = load_half(block + 208);
    for (std::size_t h = 0; h < 2; ++h) {
        for (std::size_t e = 0; e < 128; ++e) {
            const std::size_t k = e / 32, l = e % 32;
            const std::uint8_t low_byte = low[64 * h + l + 32 * (k % 2)];
            const int low_bits = (k < 2) ? (low_byte & 0x0F) : (low_byte >> 4);
            const int high_bits = (high[32 * h + l] >> (2 * k)) & 3;
            const int q = (low_bits | (high_bits << 4)) - 32;
            const auto scale = static_cast<std::int8_t>(scales[8 * h + e / 16]);
            out[128 * h + e] = d * static_cast<float>(scale) * static_cast<float>(q);
        }
    }
}

}  // namespace attn::detail
