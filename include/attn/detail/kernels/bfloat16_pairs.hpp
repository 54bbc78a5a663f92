#pragma once
// Products of activations rounded to bfloat16 with BF16 weights in panels
// (LoadOptions::bfloat16_activations): the arithmetic llama.cpp uses for BF16 weights.
//
// With AVX-512 BF16 (AMD Zen 4 and later, Intel Sapphire Rapids and later), a product of more
// than kStreamedRows rows multiplies two depths at once: vdpbf16ps adds a(r, 2k)·w(2k, j) +
// a(r, 2k+1)·w(2k+1, j) to a float lane, twice the multiply-adds of a float FMA instruction
// (Zen 5: 424 GFLOP/s a core against 230). a's rows are rounded and laid out as pairs once
// per call, tile by tile; each block of a weight panel is interleaved into pairs once and read
// by every row tile from L1. Elsewhere (one or two rows, or no such instructions) a is rounded
// into a copy and the float kernels multiply it: the same products, summed in another order, so
// the two differ by float rounding, not by the rounding of a.
//
// vdpbf16ps treats subnormal inputs as zero and flushes a subnormal sum to zero; a rounded
// activation or a weight below 2^-126 in magnitude counts as zero there.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/kernels/tiles.hpp"

#if defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define ATTN_DETAIL_BFLOAT16_PAIRS 1
#else
#define ATTN_DETAIL_BFLOAT16_PAIRS 0
#endif

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_BFLOAT16_PAIRS_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// f rounded to the nearest bfloat16, ties to even, as its 16 bits; a NaN stays a (quiet) NaN
/// and a float past bfloat16's largest finite number rounds to infinity.
inline std::uint16_t float_to_bfloat16_nearest(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

/// f rounded to the nearest bfloat16 (float_to_bfloat16_nearest), as a float.
inline float rounded_to_bfloat16(float f) {
    return bfloat16_to_float(float_to_bfloat16_nearest(f));
}

/// packed_rows_buffer's role for a's rows rounded to bfloat16: a buffer apart from the tiles'
/// own, which the product fed from it fills.
struct RoundedRows;

/// out (rows × depth, row stride depth) = a (rows × depth, row stride a_row) with each entry
/// rounded to the nearest bfloat16.
inline void round_rows_to_bfloat16(Index rows, Index depth, const float* a, Index a_row, float* out) {
    for (Index r = 0; r < rows; ++r)
        for (Index t = 0; t < depth; ++t) out[r * depth + t] = rounded_to_bfloat16(a[r * a_row + t]);
}

namespace kernel {
/// Rows of a tile of pair products, and packets of 16 columns: 6 × 4 accumulators, as the float tile.
inline constexpr int kPairTileRows = 6;
inline constexpr int kPairTilePackets = 4;
}  // namespace kernel

/// The most bytes of a's pairs a product lays out at a time (unless that is fewer than
/// kPairChunkTiles tiles): every column panel's blocks read them again, and from L2 they keep
/// up with the pairs (L2: 1 MiB a core on Zen 4 and 5, 2 MiB on Sapphire Rapids).
inline constexpr Index kPairChunkBytes = Index(512) << 10;
inline constexpr Index kPairChunkTiles = 16;

#if ATTN_DETAIL_BFLOAT16_PAIRS
namespace kernel {

/// The lanes of the first n of 16 (all for n ≥ 16, none for n ≤ 0).
inline __mmask16 first_lanes(Index n) {
    return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
}

/// 16-bit numbers a pair of depths takes in an interleaved block of weights: 4 packets × 16 columns × 2.
inline constexpr Index kPairRow = Index(kPairTilePackets) * 32;

/// c(r, j) (+)= Σ_k a(r, 2k)·w(2k, j) + a(r, 2k+1)·w(2k+1, j) for Rows rows and Packets packets
/// of 16 columns (the last one's lanes in `last`): a's pairs at a[k·kPairTileRows + r] (the
/// lower half the even depth), w's interleaved at b[k·kPairRow + 2j …], 64-byte aligned.
template <int Rows, int Packets>
EIGEN_ALWAYS_INLINE void pair_tile(const std::uint32_t* a, const std::uint16_t* b, Index pairs, float* c, Index c_row,
                                   bool accumulate, __mmask16 last) {
    __m512 acc[Rows][Packets];
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p)
            acc[r][p] = accumulate
                            ? _mm512_maskz_loadu_ps(p == Packets - 1 ? last : __mmask16(0xFFFF), c + r * c_row + p * 16)
                            : _mm512_setzero_ps();
    for (Index k = 0; k < pairs; ++k) {
        __m512bh w[Packets];
        for (int p = 0; p < Packets; ++p) w[p] = (__m512bh)_mm512_load_si512(b + k * kPairRow + p * 32);
        for (int r = 0; r < Rows; ++r) {
            const __m512bh x = (__m512bh)_mm512_set1_epi32(int(a[k * kPairTileRows + r]));
            for (int p = 0; p < Packets; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], x, w[p]);
        }
    }
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p)
            _mm512_mask_storeu_ps(c + r * c_row + p * 16, p == Packets - 1 ? last : __mmask16(0xFFFF), acc[r][p]);
}

/// pair_tile with 1 … kPairTileRows rows and 1 … kPairTilePackets packets chosen at run time.
template <int Rows = kPairTileRows, int Packets = kPairTilePackets>
void pair_tiles(int rows, int packets, const std::uint32_t* a, const std::uint16_t* b, Index pairs, float* c,
                Index c_row, bool accumulate, __mmask16 last) {
    if constexpr (Rows > 1)
        if (rows < Rows) return pair_tiles<Rows - 1, Packets>(rows, packets, a, b, pairs, c, c_row, accumulate, last);
    if constexpr (Packets > 1)
        if (packets < Packets)
            return pair_tiles<Rows, Packets - 1>(rows, packets, a, b, pairs, c, c_row, accumulate, last);
    pair_tile<Rows, Packets>(a, b, pairs, c, c_row, accumulate, last);
}

}  // namespace kernel

/// c (+)= round(a) · w, a (rows × depth, row stride a_row), w the block (depth × cols) of the
/// BF16 panels `m` (a PanelMatrix of 16-bit numbers: at(r, c), panel_width(c), kPanel) from its
/// entry (first_row, first_col), c (rows × cols, row stride c_row): every product on AVX-512 BF16
/// pairs, a's entries rounded to the nearest bfloat16. The columns go a panel's run at a time
/// (up to the panel's edge), its depth in blocks of kBlockPairs pairs interleaved into L1.
template <class PanelMatrix16>
void multiply_bfloat16_pairs(Index rows, Index depth, Index cols, const float* a, Index a_row, const PanelMatrix16& m,
                             Index first_row, Index first_col, float* c, Index c_row, bool accumulate) {
    using kernel::kPairRow;
    constexpr Index kTileRows = kernel::kPairTileRows;
    constexpr Index kPanel = PanelMatrix16::kPanel;
    static_assert(kPanel == 16 * kernel::kPairTilePackets, "a panel's row is one tile's columns");
    constexpr Index kBlockPairs = kTileBlockBytes / (kPairRow * Index(sizeof(std::uint16_t)));
    if (rows == 0 || cols == 0) return;
    const Index pairs = (depth + 1) / 2;
    const Index tiles = (rows + kTileRows - 1) / kTileRows;
    const Index tile_entries = std::max<Index>(pairs, 1) * kTileRows;
    const Index chunk_tiles = std::min(
        tiles, std::max<Index>(kPairChunkTiles, kPairChunkBytes / (tile_entries * Index(sizeof(std::uint32_t)))));
    std::uint32_t* packed = packed_rows_buffer<std::uint32_t, RoundedRows>(std::size_t(chunk_tiles * tile_entries));
    alignas(64) std::uint16_t block[kBlockPairs * kPairRow];
    for (Index first_tile = 0; first_tile < tiles; first_tile += chunk_tiles) {
        const Index chunk_first = first_tile * kTileRows;
        const Index chunk_rows = std::min(chunk_tiles * kTileRows, rows - chunk_first);
        // tile j's pair k of row r at packed[j · tile_entries + k · kTileRows + r]: the rounded
        // a(r, 2k) in its lower half, a(r, 2k + 1) (0 past the depth) in its upper; rows past the
        // last are zeros, which the tile reads but never stores
        for (Index r = 0; r < (chunk_rows + kTileRows - 1) / kTileRows * kTileRows; ++r) {
            std::uint32_t* out = packed + (r / kTileRows) * tile_entries + r % kTileRows;
            if (r >= chunk_rows) {
                for (Index k = 0; k < pairs; ++k) out[k * kTileRows] = 0;
                continue;
            }
            // 32 entries at a time rounded to nearest even (vcvtne2ps2bf16, whose lane k is then
            // pair k: a subnormal becomes 0, as vdpbf16ps would read it), past the depth zeros
            const float* row = a + (chunk_first + r) * a_row;
            alignas(64) std::uint32_t rounded[16];
            for (Index t = 0; t < depth; t += 32) {
                const Index left = depth - t;
                const __m512 low = _mm512_maskz_loadu_ps(kernel::first_lanes(left), row + t);
                const __m512 high = _mm512_maskz_loadu_ps(kernel::first_lanes(left - 16), row + t + 16);
                _mm512_store_si512(rounded, (__m512i)_mm512_cvtne2ps_pbh(high, low));
                const Index k0 = t / 2, count = std::min<Index>(16, pairs - k0);
                for (Index k = 0; k < count; ++k) out[(k0 + k) * kTileRows] = rounded[k];
            }
        }
        for (Index col = 0; col < cols;) {
            const Index at = first_col + col;
            const Index width = std::min(kPanel - at % kPanel, cols - col);  // to the panel's edge
            const Index panel_row = m.panel_width(at);
            const int packets = int((width + 15) / 16);
            const Index tail = width - Index(packets - 1) * 16;
            const __mmask16 last = __mmask16((1u << tail) - 1u);
            // depth 0 still runs one (empty) block: c is zeroed unless accumulating
            for (Index k0 = 0; k0 == 0 || k0 < pairs; k0 += kBlockPairs) {
                const Index count = std::min(kBlockPairs, pairs - k0);
                // w(2k, j) and w(2k + 1, j) side by side, columns past `width` zero
                for (Index k = 0; k < count; ++k) {
                    const Index t = 2 * (k0 + k);
                    const std::uint16_t* even = m.at(first_row + t, at);
                    const bool has_odd = t + 1 < depth;
                    for (int p = 0; p < packets; ++p) {
                        const __mmask16 lanes = p == packets - 1 ? last : __mmask16(0xFFFF);
                        const __m256i low = _mm256_maskz_loadu_epi16(lanes, even + p * 16);
                        const __m256i high = has_odd ? _mm256_maskz_loadu_epi16(lanes, even + panel_row + p * 16)
                                                     : _mm256_setzero_si256();
                        const __m512i pairs_of = _mm512_or_si512(_mm512_cvtepu16_epi32(low),
                                                                 _mm512_slli_epi32(_mm512_cvtepu16_epi32(high), 16));
                        _mm512_store_si512(block + k * kPairRow + p * 32, pairs_of);
                    }
                }
                // the next block's rows of the panel (this panel's next pairs, else the next
                // panel's first), a share prefetched per row tile: the weights come from memory,
                // and the copy above would otherwise wait for every line
                const PanelBlock next = next_panel_block(2 * k0, col, depth, cols, 2 * kBlockPairs, width);
                const Index next_at = first_col + next.col;
                const char* next_block =
                    next.count > 0
                        ? reinterpret_cast<const char*>(m.at(first_row + next.first, next_at) - next_at % kPanel)
                        : nullptr;
                const Index next_lines =
                    next.count > 0 ? next.count * m.panel_width(next_at) * Index(sizeof(std::uint16_t)) / 64 : 0;
                const Index tiles_here = (chunk_rows + kTileRows - 1) / kTileRows;
                const Index lines_per_tile = (next_lines + tiles_here - 1) / tiles_here;
                for (Index r = 0, tile = 0; r < chunk_rows; r += kTileRows, ++tile) {
                    for (Index line = tile * lines_per_tile; line < std::min(next_lines, (tile + 1) * lines_per_tile);
                         ++line)
                        prefetch(next_block + line * 64);
                    kernel::pair_tiles(int(std::min(kTileRows, chunk_rows - r)), packets,
                                       packed + tile * tile_entries + k0 * kTileRows, block, count,
                                       c + (chunk_first + r) * c_row + col, c_row, accumulate || k0 > 0, last);
                }
            }
            col += width;
        }
    }
}
#endif  // ATTN_DETAIL_BFLOAT16_PAIRS

}  // namespace attn::detail

#ifdef ATTN_DETAIL_BFLOAT16_PAIRS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_BFLOAT16_PAIRS_PRAGMAS_PUSHED
#endif
