#pragma once
// The register-tiled micro-kernel every product of the fused attention kernel and of
// the model's forward pass runs on, and the small row-major matrix product built on it.
//
// A tile is Rows rows × Packets packets of columns of c, kept in registers while the
// depth loop broadcasts one entry of a and loads one row of b per step: 6 × 4 packets
// with 32 vector registers (AVX-512), 6 × 2 with 16. Each entry of c is one fused
// multiply-add chain over the depth in order, whatever the tile it falls in, so a
// product split by rows (across threads, say) gives the same bits as the whole.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/large_arrays.hpp"

#if defined(EIGEN_VECTORIZE_SSE2)
#include <emmintrin.h>  // pack_tile_rows
#endif

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_TILES_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// The packet type Eigen vectorises T with, and the register tile that fits the machine.
template <class T>
struct RegisterTile {
    using Packet = typename Eigen::internal::packet_traits<T>::type;
    static constexpr int kLanes = Eigen::internal::unpacket_traits<Packet>::size;
#ifdef EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS
    static constexpr bool kWide = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32;
#else
    static constexpr bool kWide = false;
#endif
    static constexpr int kRows = 6;                 ///< rows of c per tile
    static constexpr int kPackets = kWide ? 4 : 2;  ///< packets of columns of c per tile
    static constexpr Index kColumns = Index(kPackets) * kLanes;
};

/// a · b + c as a packet's multiply-add computes each lane: fused, one rounding, where Eigen's
/// packets use FMA instructions (EIGEN_VECTORIZE_FMA: AVX2 builds with FMA, AVX-512), else the
/// product then the sum. The products' scalar chains (columns past the last whole packet) use
/// it, so that a column has the same bits in a packet's lane or past one: whatever slice or
/// share of the columns holds it. (A scalar `sum += a * b` is not fused in standard C++ mode:
/// gcc's -std=c++17 turns -ffp-contract off.)
template <class T>
EIGEN_ALWAYS_INLINE T multiply_add(T a, T b, T c) {
#if defined(EIGEN_VECTORIZE_FMA)
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

namespace kernel {

namespace ei = Eigen::internal;

/// c(r, ·) (+)= Σ_{t < depth} a(r, t) · b(t, ·) for Rows rows and Packets packets of columns:
/// a(r, t) = a[r·a_row + t·a_step] (broadcast), b(t, ·) = b[t·b_row …] (contiguous), c row stride c_row.
template <class T, int Rows, int Packets>
EIGEN_ALWAYS_INLINE void tile_product(const T* a, Index a_row, Index a_step, const T* b, Index b_row, Index depth, T* c,
                                      Index c_row, bool accumulate) {
    using Packet = typename RegisterTile<T>::Packet;
    constexpr int L = RegisterTile<T>::kLanes;
    Packet acc[Rows][Packets];
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p)
            acc[r][p] = accumulate ? ei::ploadu<Packet>(c + r * c_row + p * L) : ei::pset1<Packet>(T(0));
    for (Index t = 0; t < depth; ++t) {
        Packet x[Packets];
        for (int p = 0; p < Packets; ++p) x[p] = ei::ploadu<Packet>(b + p * L);
        for (int r = 0; r < Rows; ++r) {
            const Packet y = ei::pset1<Packet>(a[r * a_row]);
            for (int p = 0; p < Packets; ++p) acc[r][p] = ei::pmadd(y, x[p], acc[r][p]);
        }
        a += a_step;
        b += b_row;
    }
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p) ei::pstoreu(c + r * c_row + p * L, acc[r][p]);
}

/// tile_product with 1 … MaxRows rows and 1 … MaxPackets packets chosen at run time.
template <class T, int MaxRows, int MaxPackets>
struct Tiles {
    template <int Rows = MaxRows, int Packets = MaxPackets>
    static void run(int rows, int packets, const T* a, Index a_row, Index a_step, const T* b, Index b_row, Index depth,
                    T* c, Index c_row, bool accumulate) {
        if constexpr (Rows > 1) {
            if (rows < Rows)
                return run<Rows - 1, Packets>(rows, packets, a, a_row, a_step, b, b_row, depth, c, c_row, accumulate);
        }
        if constexpr (Packets > 1) {
            if (packets < Packets)
                return run<Rows, Packets - 1>(rows, packets, a, a_row, a_step, b, b_row, depth, c, c_row, accumulate);
        }
        tile_product<T, Rows, Packets>(a, a_row, a_step, b, b_row, depth, c, c_row, accumulate);
    }
};

}  // namespace kernel

/// Asks for the cache line holding p: a hint, and nothing where the compiler has no prefetch.
/// Always inlined: gcc otherwise finds the function free of side effects and drops its calls.
EIGEN_ALWAYS_INLINE void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/// b of a product as rows of T in memory: (depth × cols), row stride `row`, unit inner stride.
/// multiply_rows reads b through such a source (see half_weights.hpp for rows stored in
/// 16 bits): an entry, a row read a packet at a time (row_at), a run copied into a panel, an address
/// to prefetch.
template <class T>
struct DenseRows {
    using Scalar = T;
    /// The tiles may read a block of b where it is instead of from a copied panel.
    static constexpr bool kInPlace = true;
    /// Entries per cache line of b.
    static constexpr Index kLineEntries = 64 / Index(sizeof(T));
    /// Whether a streamed product whose c stays in L1 prefetches b's next rows: not for plain
    /// numbers, whose loads alone keep enough lines of memory in flight (docs/DESIGN.md).
    static constexpr bool kStreamPrefetch = false;

    const T* data = nullptr;
    Index row = 0;

    /// Row t of b as a streamed product reads it: a packet at a time from where it starts.
    struct Row {
        const T* start = nullptr;
        template <class Packet>
        Packet packet(Index col) const {
            return Eigen::internal::ploadu<Packet>(start + col);
        }
        const void* address(Index col) const { return start + col; }
    };
    Row row_at(Index t) const { return {data + t * row}; }

    const T* at(Index t, Index col) const { return data + t * row + col; }
    /// Read in place (kInPlace): any block, its rows row_stride(col) apart from at(t, col).
    bool in_place(Index, Index) const { return true; }
    Index row_stride(Index) const { return row; }
    T value(Index t, Index col) const { return data[t * row + col]; }
    void copy(Index t, Index col, Index count, T* out) const { std::copy_n(at(t, col), count, out); }
    const void* address(Index t, Index col) const { return at(t, col); }
};

/// Up to this many rows, multiply_rows streams b once, row by row (a decoding step's products).
inline constexpr Index kStreamedRows = 2;

/// Rows of b a streamed product adds into c per pass over c: c is loaded and stored once for
/// four rows (one row a pass measured slower in a model's decoding step, though not in one
/// product alone; docs/DESIGN.md).
inline constexpr int kStreamedDepth = 4;

/// A streamed product's c (its rows × cols) up to this size stays in L1 beside b's streams,
/// and b's next rows are prefetched if its source asks (kStreamPrefetch). A wider c (an
/// unembedding's logits) lives in L2, and nothing is prefetched: the loads of c and b keep
/// enough lines in flight, and prefetches would compete with them (docs/DESIGN.md).
inline constexpr Index kStreamedNarrowBytes = 32 * 1024;

namespace kernel {

/// c(r, j) += Σ_{k < Depth} a(r, t + k) · b(t + k, j) for every row r < rows and every whole
/// packet of columns j < whole, each entry's multiply-adds in the order of k. With Prefetch,
/// b's rows t + Depth … t + 2·Depth − 1 (the next pass's) are prefetched line by line on the
/// way: widening 16-bit numbers takes more instructions per line, fewer of b's lines are then
/// in flight, and the loads wait on memory. Each row of b is found once a pass (Source::row_at),
/// so the loop over columns is loads, widening and multiply-adds only: found per packet, the
/// rows' addresses took a multiplication each and spilled registers (a perf profile of a 16-bit
/// decoding step: a third of the loop's instructions).
template <int Depth, bool Prefetch, class T, class Source>
EIGEN_ALWAYS_INLINE void stream_rows(Index rows, Index whole, Index t, const T* a, Index a_row, const Source& b, T* c,
                                     Index c_row) {
    using Packet = typename RegisterTile<T>::Packet;
    constexpr Index L = RegisterTile<T>::kLanes;
    constexpr Index kLine = Source::kLineEntries;
    static_assert(kLine % L == 0, "stream_rows: whole packets per cache line");
    typename Source::Row row[Depth], next[Prefetch ? Depth : 1];
    for (int k = 0; k < Depth; ++k) row[k] = b.row_at(t + k);
    if constexpr (Prefetch)
        for (int k = 0; k < Depth; ++k) next[k] = b.row_at(t + Depth + k);
    for (Index r = 0; r < rows; ++r) {
        Packet y[Depth];
        for (int k = 0; k < Depth; ++k) y[k] = ei::pset1<Packet>(a[r * a_row + t + k]);
        T* c_r = c + r * c_row;
        for (Index j = 0; j < whole; j += L) {
            if constexpr (Prefetch)
                if (r == 0 && j % kLine == 0)
                    for (int k = 0; k < Depth; ++k) prefetch(next[k].address(j));
            Packet sum = ei::ploadu<Packet>(c_r + j);
            for (int k = 0; k < Depth; ++k) sum = ei::pmadd(y[k], row[k].template packet<Packet>(j), sum);
            ei::pstoreu(c_r + j, sum);
        }
    }
}

/// dst(c, i) = src(i, c) for i < rows, c < cols (both row-major, rows src_row and dst_row
/// apart): whole packets × packets blocks through registers (Eigen's ptranspose), the edges
/// entry by entry. The causal kernel's tasks take their queries in this way and give their
/// outputs out (entry by entry, the two took 3–4 % of its time at 2,048 positions; docs/DESIGN.md),
/// and a quantized prefill its decoded rows of W into a panel.
// (gcc warns that a packet's vector attributes are ignored as PacketBlock's template argument;
// Eigen's own uses are in system headers, where it stays quiet)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
template <class T>
void transpose(const T* src, Index src_row, Index rows, Index cols, T* dst, Index dst_row) {
    using Packet = typename RegisterTile<T>::Packet;
    constexpr int L = RegisterTile<T>::kLanes;
    const Index whole_rows = L > 1 ? rows / L * L : 0, whole_cols = L > 1 ? cols / L * L : 0;
    if constexpr (L > 1) {
        for (Index i = 0; i < whole_rows; i += L)
            for (Index c = 0; c < whole_cols; c += L) {
                ei::PacketBlock<Packet, L> block;
                for (int k = 0; k < L; ++k) block.packet[k] = ei::ploadu<Packet>(src + (i + k) * src_row + c);
                ei::ptranspose(block);
                for (int k = 0; k < L; ++k) ei::pstoreu(dst + (c + k) * dst_row + i, block.packet[k]);
            }
    }
    for (Index i = 0; i < rows; ++i)
        for (Index c = i < whole_rows ? whole_cols : 0; c < cols; ++c) dst[c * dst_row + i] = src[i * src_row + c];
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace kernel

/// multiply_few_rows_from with Depth rows of b per pass over c, b's next rows prefetched or
/// not: every choice gives the same bits (the benchmarks compare them).
template <class T, class Source, int Depth, bool Prefetch>
void stream_few_rows(Index rows, Index depth, Index cols, const T* a, Index a_row, const Source& b, T* c, Index c_row,
                     bool accumulate) {
    const Index whole = cols / RegisterTile<T>::kLanes * RegisterTile<T>::kLanes;
    for (Index r = 0; r < rows; ++r)
        if (!accumulate) std::fill(c + r * c_row, c + r * c_row + cols, T(0));
    constexpr Index D = Depth;
    Index t = 0;
    for (; t + 2 * D <= depth; t += D) kernel::stream_rows<D, Prefetch>(rows, whole, t, a, a_row, b, c, c_row);
    if constexpr (D > 1)
        for (; t + D <= depth; t += D) kernel::stream_rows<D, false>(rows, whole, t, a, a_row, b, c, c_row);
    for (; t < depth; ++t) kernel::stream_rows<1, false>(rows, whole, t, a, a_row, b, c, c_row);
    for (Index r = 0; r < rows; ++r)
        for (Index col = whole; col < cols; ++col) {
            T sum = accumulate ? c[r * c_row + col] : T(0);
            for (Index k = 0; k < depth; ++k) sum = multiply_add(a[r * a_row + k], b.value(k, col), sum);
            c[r * c_row + col] = sum;
        }
}

/// multiply_few_rows with b read from `b`, a source like DenseRows: kStreamedDepth rows a pass,
/// b's next rows prefetched if the source asks and c stays in L1 (kStreamedNarrowBytes).
template <class T, class Source>
void multiply_few_rows_from(Index rows, Index depth, Index cols, const T* a, Index a_row, const Source& b, T* c,
                            Index c_row, bool accumulate) {
    if (Source::kStreamPrefetch && rows * cols * Index(sizeof(T)) <= kStreamedNarrowBytes)
        stream_few_rows<T, Source, kStreamedDepth, true>(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
    else
        stream_few_rows<T, Source, kStreamedDepth, false>(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
}

/// multiply_rows for 1 … kStreamedRows rows: b is read once, contiguously, and added into
/// every row of c, which stays in L1 or L2 (multiply_few_rows_from). With one row the tiles
/// would walk b a column panel at a time, one cache line per row of b, waiting on each (b
/// comes from L3 or memory: a decoding step's weights). Each entry of c is the same fused
/// multiply-add chain over the depth in order, so the bits are those of the tiles.
template <class T>
void multiply_few_rows(Index rows, Index depth, Index cols, const T* a, Index a_row, const T* b, Index b_row, T* c,
                       Index c_row, bool accumulate) {
    multiply_few_rows_from(rows, depth, cols, a, a_row, DenseRows<T>{b, b_row}, c, c_row, accumulate);
}

/// A block of b as the tiled products walk it: depth first … first + count − 1 of columns col …
/// col + width − 1.
struct PanelBlock {
    Index first = 0, col = 0, width = 0, count = 0;
};

/// The block after (first, col) in a walk of column panels (panel_width columns, `whole` in all)
/// outermost, each cut along the depth into blocks of block_depth: the rest of this panel's
/// depth, else the next panel's first; width and count 0 after the last. The products prefetch
/// it while the row tiles run over the block before.
inline PanelBlock next_panel_block(Index first, Index col, Index depth, Index whole, Index block_depth,
                                   Index panel_width) {
    const bool same_panel = first + block_depth < depth;
    PanelBlock next;
    next.first = same_panel ? first + block_depth : 0;
    next.col = same_panel ? col : col + panel_width;
    next.width = next.col < whole ? std::min(panel_width, whole - next.col) : 0;
    next.count = next.width > 0 ? std::min(block_depth, depth - next.first) : 0;
    return next;
}

/// Whether b's source decodes whole blocks itself (Source::kDecodesBlocks: copy_block and
/// prefetch_parts, prefetch_part): a source whose columns are what lies side by side, as the rows of a
/// quantized matrix (quantized_weights.hpp), where a row of b at a time would decode each of its
/// blocks for one value.
template <class Source, class = void>
struct DecodesBlocks : std::false_type {};
template <class Source>
struct DecodesBlocks<Source, std::void_t<decltype(Source::kDecodesBlocks)>>
    : std::bool_constant<Source::kDecodesBlocks> {};

/// out(t, j) = b(first + t, col + j) for t < count, j < width; out's rows out_row apart.
template <class Source, class T>
void copy_block(const Source& b, Index first, Index count, Index col, Index width, T* out, Index out_row) {
    if constexpr (DecodesBlocks<Source>::value)
        b.copy_block(first, count, col, width, out, out_row);
    else
        for (Index t = 0; t < count; ++t) b.copy(first + t, col, width, out + t * out_row);
}

/// How many parts of block `next` of b a source prefetches separately (prefetch_part): its rows
/// along the depth, or for a source that decodes blocks, its own (the rows of W it decodes).
template <class Source>
Index prefetch_parts(const PanelBlock& next) {
    if constexpr (DecodesBlocks<Source>::value)
        return Source::prefetch_parts(next);
    else
        return next.count;
}

/// Prefetches parts begin … end − 1 of block `next` of b.
template <class Source>
EIGEN_ALWAYS_INLINE void prefetch_part(const Source& b, const PanelBlock& next, Index begin, Index end) {
    if constexpr (DecodesBlocks<Source>::value) {
        b.prefetch_part(next, begin, end);
    } else {
        constexpr Index kLine = Source::kLineEntries;
        for (Index t = begin; t < end; ++t)
            for (Index x = 0; x < next.width; x += kLine) prefetch(b.address(next.first + t, next.col + x));
    }
}

/// a as the tiles read it: the rows of a tile side by side, (depth × Rows) per tile, so that a
/// tile's broadcasts read one run of memory, not Rows rows a_row apart (multiply_many_rows_from).
template <class T>
struct TileRowsOfA {
    const T* a = nullptr;
    Index row = 0;   ///< entries between a(r, t) and a(r + 1, t)
    Index step = 1;  ///< entries between a(r, t) and a(r, t + 1)
    Index tile = 0;  ///< entries between a tile's first entry and the next tile's
    const T* at(Index tile_index, Index t) const { return a + tile_index * tile + t * step; }
};

/// The columns of b that a source keeps side by side as one run of memory per row of b
/// (Source::kPanelColumns: weights packed in panels of 64 columns), else 0.
template <class Source, class = void>
struct PanelColumns : std::integral_constant<Index, 0> {};
template <class Source>
struct PanelColumns<Source, std::void_t<decltype(Source::kPanelColumns)>>
    : std::integral_constant<Index, Source::kPanelColumns> {};

/// One row tile of c (tile_rows rows from c_tile, `packets` packets of columns) (+)= its rows of
/// a (from a_tile, as `of_a` lays them out) times a block of b (count rows, block_row apart).
/// A whole tile inlined here, with either layout's steps as literals the compiler folds into
/// its addressing (left to the compiler, whether it inlined the tile moved the products by
/// 3-8 %: docs/DESIGN.md); the edges' tiles are called.
template <class T>
EIGEN_ALWAYS_INLINE void tile_over_block(int tile_rows, int packets, const T* a_tile, const TileRowsOfA<T>& of_a,
                                         const T* block, Index block_row, Index count, T* c_tile, Index c_row,
                                         bool adds) {
    using Tile = RegisterTile<T>;
    if (tile_rows == Tile::kRows && packets == Tile::kPackets) {
        if (of_a.step == 1)
            kernel::tile_product<T, Tile::kRows, Tile::kPackets>(a_tile, of_a.row, 1, block, block_row, count, c_tile,
                                                                 c_row, adds);
        else
            kernel::tile_product<T, Tile::kRows, Tile::kPackets>(a_tile, 1, Tile::kRows, block, block_row, count,
                                                                 c_tile, c_row, adds);
    } else {
        kernel::Tiles<T, Tile::kRows, Tile::kPackets>::run(tile_rows, packets, a_tile, of_a.row, of_a.step, block,
                                                           block_row, count, c_tile, c_row, adds);
    }
}

/// The bytes of b a block holds while every row tile runs over it: L1's share.
inline constexpr Index kTileBlockBytes = 32 * 1024;

/// tiles_over_panels on columns col … col + kGroup − 1, one whole panel of a source whose panels
/// (kGroup = PanelColumns columns) are wider than a tile (AVX2: 16 of 64 columns). Each block of
/// the panel's depth is read as one run, a whole row of the panel at a time, and cut into the
/// kGroup / kColumns tiles' panels side by side (Source::copy_cut); the row tiles then run over
/// each in turn. Read a tile's columns at a time, as tiles_over_panels does for other sources, a
/// block would take one cache line of every 256-byte row of the panel, a walk through memory
/// in steps the hardware prefetchers follow badly, and fetch the panel's other lines again for
/// the next tiles: 57-68 % of the FMA peak at 128 rows on AVX2, against 79-82 % this way
/// (docs/bench/2026-12-04-epyc-avx512/avx2_group). Each entry of c is the same multiply-add
/// chain over the depth in order.
template <class T, class Source>
void tiles_over_panel_group(Index rows, Index depth, Index col, Index whole, const TileRowsOfA<T>& of_a,
                            const Source& b, T* c, Index c_row, bool accumulate) {
    using Tile = RegisterTile<T>;
    constexpr Index kGroup = PanelColumns<Source>::value;
    constexpr Index kPieces = kGroup / Tile::kColumns;
    constexpr Index kBlockDepth = kTileBlockBytes / (kGroup * Index(sizeof(T)));
    alignas(64) T panel[kBlockDepth * kGroup];
    const Index tiles = (rows + Tile::kRows - 1) / Tile::kRows;
    // depth 0 still runs one (empty) block: c is zeroed unless accumulating
    for (Index first = 0; first == 0 || first < depth; first += kBlockDepth) {
        const Index count = std::min(kBlockDepth, depth - first);
        if (count > 0) b.copy_cut(first, count, col, Tile::kColumns, panel);  // piece p of row t: p·count + t
        // the next block prefetched a share per tile, over all the pieces' tiles
        const PanelBlock next = next_panel_block(first, col, depth, whole, kBlockDepth, kGroup);
        const Index parts = prefetch_parts<Source>(next), steps = kPieces * tiles;
        const Index parts_per_step = (parts + steps - 1) / steps;
        Index step = 0;
        for (Index piece = 0; piece < kPieces; ++piece) {
            const T* block = panel + piece * count * Tile::kColumns;
            for (Index r = 0, tile = 0; r < rows; r += Tile::kRows, ++tile, ++step) {
                prefetch_part(b, next, std::min(parts, step * parts_per_step),
                              std::min(parts, (step + 1) * parts_per_step));
                tile_over_block(int(std::min<Index>(Tile::kRows, rows - r)), Tile::kPackets, of_a.at(tile, first), of_a,
                                block, Tile::kColumns, count, c + r * c_row + col + piece * Tile::kColumns, c_row,
                                accumulate || first > 0);
            }
        }
    }
}

/// The tiles over column panels of b, for rows … of a as `of_a` lays them out: c (rows × cols
/// up to `whole`, a multiple of the packet), (+)= a · b.
template <class T, class Source>
void tiles_over_panels(Index rows, Index depth, Index whole, const TileRowsOfA<T>& of_a, const Source& b, T* c,
                       Index c_row, bool accumulate, bool packs) {
    using Tile = RegisterTile<T>;
    // Column panels outermost, each cut along the depth into blocks that stay in L1 while every
    // row tile runs over them. A tile adds each block into c, so every entry of c is still one
    // multiply-add chain over the depth in order, whatever the blocks. A block is copied side
    // by side into `panel` if `packs` (multiply_many_rows_from says when), or if the source
    // cannot be read in place there (16-bit rows; weights in panels: a block that is not whole
    // rows of one). While a block's row tiles run, the next block is prefetched, a share of its
    // rows per tile: in a forward pass the weights come from L3 or memory, and the first tile
    // of every block would otherwise wait for them (docs/DESIGN.md: what it saves, profiled).
    // Weights in panels wider than a tile go a whole panel at a time (tiles_over_panel_group).
    constexpr Index kGroup = PanelColumns<Source>::value;
    constexpr Index kBlockDepth = kTileBlockBytes / (Tile::kColumns * Index(sizeof(T)));
    alignas(64) T panel[kBlockDepth * Tile::kColumns];
    const Index tiles = (rows + Tile::kRows - 1) / Tile::kRows;
    for (Index col = 0; col < whole;) {
        Index width = std::min(Tile::kColumns, whole - col);
        if constexpr (kGroup > Tile::kColumns && kGroup % Tile::kColumns == 0) {
            if (whole - col >= kGroup && b.in_place(col, kGroup)) {  // one whole panel
                tiles_over_panel_group(rows, depth, col, whole, of_a, b, c, c_row, accumulate);
                col += kGroup;
                continue;
            }
            // a share of the columns that starts inside a panel: up to its edge, then whole panels
            const Index to_edge = kGroup - b.into_panel(col);
            if (to_edge < width && to_edge % Tile::kLanes == 0) width = to_edge;
        }
        const int packets = int(width / Tile::kLanes);
        // depth 0 still runs one (empty) block: c is zeroed unless accumulating
        for (Index first = 0; first == 0 || first < depth; first += kBlockDepth) {
            const Index count = std::min(kBlockDepth, depth - first);
            const T* block = panel;
            Index block_row = Tile::kColumns;
            bool copies = packs;
            if constexpr (Source::kInPlace) copies = copies || !b.in_place(col, width);
            if (copies) {
                copy_block(b, first, count, col, width, panel, Tile::kColumns);
            } else if constexpr (Source::kInPlace) {
                if (count > 0) block = b.at(first, col);  // no depth: nothing is read, and b may be null
                block_row = b.row_stride(col);
            }
            const PanelBlock next = next_panel_block(first, col, depth, whole, kBlockDepth, Tile::kColumns);
            const Index parts = prefetch_parts<Source>(next), parts_per_tile = (parts + tiles - 1) / tiles;
            for (Index r = 0, tile = 0; r < rows; r += Tile::kRows, ++tile) {
                prefetch_part(b, next, std::min(parts, tile * parts_per_tile),
                              std::min(parts, (tile + 1) * parts_per_tile));
                tile_over_block(int(std::min<Index>(Tile::kRows, rows - r)), packets, of_a.at(tile, first), of_a, block,
                                block_row, count, c + r * c_row + col, c_row, accumulate || first > 0);
            }
        }
        col += width;
    }
}

/// Where a product's rows of a are copied tile by tile (multiply_many_rows_from): one buffer per
/// thread, kept for the thread's next product, at most kPackedRowsBytes; its pages mapped in one
/// call when it grows (HugePagesInside), since a worker's first product would otherwise fault them
/// in one by one (~400 faults for a GPT-2 small prefill of 128 positions on one thread). Role
/// gives a use of its own buffer where it is filled while another is in use (bfloat16_pairs.hpp:
/// a's rows rounded, then fed to a product that copies them into this one).
template <class T, class Role = void>
T* packed_rows_buffer(std::size_t entries) {
    thread_local std::vector<T, HugePagesInside<T>> buffer;
    if (buffer.size() < entries) buffer.resize(entries);
    return buffer.data();
}

/// One tile's rows of a side by side (TileRowsOfA's layout): entry (r, t) of the `in_tile` rows
/// from `a` (a_row apart) to out[t · kRows + r], rows past in_tile zeros (their tile reads them
/// but never stores them). A whole tile of floats goes four entries of each row at a time, a 4 × 4
/// transpose and the last two rows' pairs (SSE), not one entry at a time down each row, whose
/// stores land six entries apart: in a one-thread GPT-2 prefill of 1,024 positions (Zen 5) the
/// copy went from 2.6 to 1.5 % of a profile (docs/DESIGN.md).
template <class T>
void pack_tile_rows(const T* a, Index a_row, Index in_tile, Index depth, T* out) {
    constexpr Index kRows = RegisterTile<T>::kRows;
    Index t = 0;
#if defined(EIGEN_VECTORIZE_SSE2)
    if constexpr (std::is_same<T, float>::value && kRows == 6) {
        if (in_tile == kRows)
            for (; t + 4 <= depth; t += 4) {
                const float* at = a + t;
                __m128 r0 = _mm_loadu_ps(at), r1 = _mm_loadu_ps(at + a_row), r2 = _mm_loadu_ps(at + 2 * a_row),
                       r3 = _mm_loadu_ps(at + 3 * a_row);
                const __m128 r4 = _mm_loadu_ps(at + 4 * a_row), r5 = _mm_loadu_ps(at + 5 * a_row);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);  // r_j now holds rows 0-3 of entry t + j
                const __m128 pairs01 = _mm_unpacklo_ps(r4, r5), pairs23 = _mm_unpackhi_ps(r4, r5);
                float* o = out + t * kRows;
                _mm_storeu_ps(o, r0);
                _mm_storel_pi(reinterpret_cast<__m64*>(o + 4), pairs01);
                _mm_storeu_ps(o + 6, r1);
                _mm_storeh_pi(reinterpret_cast<__m64*>(o + 10), pairs01);
                _mm_storeu_ps(o + 12, r2);
                _mm_storel_pi(reinterpret_cast<__m64*>(o + 16), pairs23);
                _mm_storeu_ps(o + 18, r3);
                _mm_storeh_pi(reinterpret_cast<__m64*>(o + 22), pairs23);
            }
    }
#endif
    for (; t < depth; ++t)
        for (Index r = 0; r < kRows; ++r) out[t * kRows + r] = r < in_tile ? a[r * a_row + t] : T(0);
}

/// The most bytes multiply_many_rows_from copies a's rows into at a time, per thread.
constexpr Index kPackedRowsBytes = Index(8) << 20;

/// multiply_rows_from for more than kStreamedRows rows: the register tiles over blocks of b.
/// packed_rows_bytes bounds the copy of a's rows (a test's way to cut it into several chunks).
template <class T, class Source>
void multiply_many_rows_from(Index rows, Index depth, Index cols, const T* a, Index a_row, const Source& b, T* c,
                             Index c_row, bool accumulate, Index packed_rows_bytes = kPackedRowsBytes) {
    using Tile = RegisterTile<T>;
    const Index whole = cols / Tile::kLanes * Tile::kLanes;
    // A block of b is copied into the tiles' panel when many row tiles will read it
    // (kPackedTiles: its rows come from memory a short run each, and the copy reads them once),
    // or when b's rows lie a multiple of 4 KiB apart (1,024 or 3,072 floats) and share a few L1
    // sets: from 8 tiles if a tile's row of b is one cache line (16 registers), else from
    // kPackedTiles; and from 8 tiles whatever the registers if they are a multiple of 64 KiB
    // apart (16,384 or 49,152 floats, an unembedding), where they share a few L2 sets too.
    // Otherwise the tiles read it where it lies (docs/DESIGN.md has the measurements). Float
    // panels are never copied for this: a block of whole panel rows is already one run, and
    // tiles_over_panels copies the blocks it cannot read in place (a copy of an in-place block
    // was 1.3 % of a one-thread GPT-2 prefill of 1,024 positions: docs/DESIGN.md).
    constexpr Index kLine = Source::kLineEntries;
    constexpr Index kPackedTiles = 64;
    constexpr Index kAliasedPackedTiles = Tile::kColumns <= kLine ? 8 : kPackedTiles;
    constexpr Index kL2AliasedPackedTiles = 8;
    const Index tiles = (rows + Tile::kRows - 1) / Tile::kRows;
    bool packs = true;  // a source that cannot be read in place is always copied
    if constexpr (Source::kInPlace && PanelColumns<Source>::value > 0) {
        packs = false;
    } else if constexpr (Source::kInPlace) {  // it holds T: its rows are row_stride · sizeof(T) bytes apart
        const Index row_bytes = b.row_stride(0) * Index(sizeof(T));
        const bool aliased = row_bytes % 4096 == 0, l2_aliased = row_bytes % 65536 == 0;
        packs = tiles >= kPackedTiles || (aliased && tiles >= kAliasedPackedTiles) ||
                (l2_aliased && tiles >= kL2AliasedPackedTiles);
    }
    // a's rows copied tile by tile (TileRowsOfA), chunk after chunk of rows: read in place, a
    // tile's broadcasts walk six rows a_row apart, and every column panel reads them again;
    // copied, one run. Each entry of a is copied once and feeds cols multiply-adds, so the copy
    // pays where b is wide (kPackedRowsColumns), where a is long (kPackedRowsRows: it no longer
    // stays in L2 between panels), and where a's rows lie a multiple of 4 KiB apart (3,072
    // floats: GPT-2's down projection) and a tile's six rows share one L1 set with the block of
    // b. Not for a few narrow panels: 2-3 % slower there. A chunk's copy takes at most
    // packed_rows_bytes and holds at least kPackedRowsTiles tiles, so that b is read again at
    // most once per that many rows (docs/DESIGN.md has the measurements).
    constexpr Index kPackedRowsColumns = 1024;
    constexpr Index kPackedRowsRows = 256;
    constexpr Index kPackedRowsTiles = 16;
    const Index chunk_tiles = packed_rows_bytes / (std::max<Index>(depth, 1) * Tile::kRows * Index(sizeof(T)));
    const bool a_aliased = (a_row * Index(sizeof(T))) % 4096 == 0;
    const bool packs_a = depth > 0 && whole > 0 && tiles >= 2 && chunk_tiles >= kPackedRowsTiles &&
                         (whole >= kPackedRowsColumns || rows >= kPackedRowsRows || a_aliased);
    if (!packs_a) {
        tiles_over_panels(rows, depth, whole, TileRowsOfA<T>{a, a_row, 1, Tile::kRows * a_row}, b, c, c_row, accumulate,
                          packs);
    } else {
        const Index chunk_rows = std::min(tiles, chunk_tiles) * Tile::kRows;
        T* packed = packed_rows_buffer<T>(std::size_t(chunk_rows * depth));
        for (Index first_row = 0; first_row < rows; first_row += chunk_rows) {
            const Index count = std::min(chunk_rows, rows - first_row);
            // tile j's entry (r, t) at packed[j · depth · kRows + t · kRows + r]; rows past the
            // last are zeros, which its tile reads but never stores
            for (Index r0 = 0; r0 < count; r0 += Tile::kRows)
                pack_tile_rows(a + (first_row + r0) * a_row, a_row, std::min<Index>(Tile::kRows, count - r0), depth,
                               packed + r0 * depth);
            tiles_over_panels(count, depth, whole, TileRowsOfA<T>{packed, 1, Tile::kRows, Tile::kRows * depth}, b,
                              c + first_row * c_row, c_row, accumulate, packs);
        }
    }
    // Columns past the last whole packet: each entry the same chain over the depth in order, a
    // column of b copied out a piece of the depth at a time (a source that decodes blocks would
    // otherwise decode one for each value)
    constexpr Index kColumnPiece = 256;
    T column[kColumnPiece];
    for (Index col = whole; col < cols; ++col)
        for (Index first = 0; first == 0 || first < depth; first += kColumnPiece) {
            const Index count = std::min(kColumnPiece, depth - first);
            copy_block(b, first, count, col, 1, column, 1);
            for (Index r = 0; r < rows; ++r) {
                T sum = accumulate || first > 0 ? c[r * c_row + col] : T(0);
                for (Index t = 0; t < count; ++t) sum = multiply_add(a[r * a_row + first + t], column[t], sum);
                c[r * c_row + col] = sum;
            }
        }
}

/// multiply_rows with b read from `b`, a source like DenseRows: (depth × cols).
template <class T, class Source>
void multiply_rows_from(Index rows, Index depth, Index cols, const T* a, Index a_row, const Source& b, T* c,
                        Index c_row, bool accumulate) {
    if (rows == 0 || cols == 0) return;  // an empty share: nothing to write
    if (rows <= kStreamedRows)
        multiply_few_rows_from(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
    else
        multiply_many_rows_from(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
}

/// c (+)= a · b for row-major operands with unit inner stride: a (rows × depth, row
/// stride a_row), b (depth × cols, row stride b_row), c (rows × cols, row stride c_row);
/// with `accumulate` the product is added to c, else c is overwritten. Columns past the
/// last whole packet are summed in the same order by scalar code. Any of rows, depth and
/// cols may be 0 (depth 0: c is left as it is, or zeroed without `accumulate`).
template <class T>
void multiply_rows(Index rows, Index depth, Index cols, const T* a, Index a_row, const T* b, Index b_row, T* c,
                   Index c_row, bool accumulate) {
    multiply_rows_from(rows, depth, cols, a, a_row, DenseRows<T>{b, b_row}, c, c_row, accumulate);
}

/// multiply_rows on Eigen row-major blocks (a: rows × depth, b: depth × cols, c: rows × cols).
template <class DA, class DB, class DC>
void multiply_rows(const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, const Eigen::MatrixBase<DC>& c,
                   bool accumulate) {
    static_assert(DA::IsRowMajor && DB::IsRowMajor && DC::IsRowMajor, "multiply_rows: row-major operands only");
    auto& out = const_cast<Eigen::MatrixBase<DC>&>(c);  // Eigen's idiom for writable expressions
    eigen_assert(a.cols() == b.rows() && out.rows() == a.rows() && out.cols() == b.cols());
    eigen_assert(a.innerStride() == 1 && b.innerStride() == 1 && out.innerStride() == 1);
    multiply_rows(a.rows(), a.cols(), b.cols(), a.derived().data(), a.outerStride(), b.derived().data(),
                  b.outerStride(), out.derived().data(), out.outerStride(), accumulate);
}

}  // namespace attn::detail

#ifdef ATTN_DETAIL_TILES_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_TILES_PRAGMAS_PUSHED
#endif
