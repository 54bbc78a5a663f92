#pragma once
// Weight matrices packed at load in panels of 64 columns, whatever numbers they hold (the
// model's T, or 16-bit ones widened to float in registers: half_weights.hpp), and the products
// that read them.
//
// Panel p holds columns 64p … 64p + 63 (fewer in the last) row after row, and the panels
// follow each other. A decoding step reads each panel as one run of memory in order, with its
// columns of c in registers for the whole depth, and a thread's share of the columns is whole
// runs (stream_panels). A row-major matrix read the same way is as many short streams as rows
// of b read side by side, which the hardware prefetchers follow badly, and a thread's share of
// its columns is strided (docs/DESIGN.md has the measurements). A prefill's tiles read a block
// of a panel where it lies when a tile's row of b is a whole row of the panel (float on
// AVX-512: 64 columns), else copy it as they copy blocks of rows (multiply_many_rows_from).
//
// WeightRows names a weight matrix, or a block of one, however the model keeps it: row-major
// T, panels of T or of 16-bit numbers, or GGUF blocks (quantized_weights.hpp); multiply_rows
// reads it through the kernel that fits.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/bfloat16_pairs.hpp"
#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/kernels/half_weights.hpp"
#include "attn/detail/kernels/large_arrays.hpp"
#include "attn/detail/kernels/quantized_weights.hpp"
#include "attn/detail/kernels/tiles.hpp"

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_WEIGHT_PANELS_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// How the numbers a panel stores become a product's: as they are (T: float or double) …
template <class T>
struct StoredAsIs {
    using Stored = T;
    using Scalar = T;
    /// The tiles may read a block where it lies.
    static constexpr bool kInPlace = true;
    template <class Packet>
    static Packet packet(const T* p) {
        return Eigen::internal::ploadu<Packet>(p);
    }
    static T value(T stored) { return stored; }
    static void run(const T* from, Index count, T* out) { std::copy_n(from, count, out); }
};

/// … or 16-bit numbers of Format widened to float, exactly.
template <HalfFormat Format>
struct Widened {
    using Stored = std::uint16_t;
    using Scalar = float;
    static constexpr bool kInPlace = false;
    template <class Packet>
    static Packet packet(const std::uint16_t* p) {
        return widen_packet<Format>(p);
    }
    static float value(std::uint16_t bits) { return widen<Format>(bits); }
    static void run(const std::uint16_t* from, Index count, float* out) { widen_run<Format>(from, count, out); }
};

/// A weight matrix (rows × cols) of Stored numbers in panels of kPanel columns: panel p holds
/// columns kPanel·p … kPanel·p + kPanel − 1 (fewer in the last), row after row, and the panels
/// follow each other. Entries are reached through index() and at(), never by a row-major offset.
template <class Stored>
struct PanelMatrix {
    /// Columns per panel: two cache lines a row in 16 bits, four in float; four AVX-512
    /// packets of float.
    static constexpr Index kPanel = 64;

    Index rows = 0, cols = 0;
    std::vector<Stored, HugePagesInside<Stored>> stored;  ///< rows · cols, panel by panel

    Index size() const { return rows * cols; }
    /// Columns in the panel that holds column c.
    Index panel_width(Index c) const { return std::min(kPanel, cols - c / kPanel * kPanel); }
    /// Where entry (r, c) is in `stored`.
    std::size_t index(Index r, Index c) const {
        const Index panel = c / kPanel;
        return std::size_t(panel * kPanel * rows + r * panel_width(c) + c % kPanel);
    }
    /// Entry (r, c) as stored.
    const Stored* at(Index r, Index c) const { return stored.data() + index(r, c); }
    Stored* at(Index r, Index c) { return stored.data() + index(r, c); }

    /// A matrix of zeros (rows × cols) to be written through at().
    static PanelMatrix sized(Index rows, Index cols) {
        PanelMatrix out{rows, cols, {}};
        out.stored.resize(std::size_t(rows * cols));
        return out;
    }
    /// The matrix m (rows × cols, any Eigen expression of Stored), packed.
    template <class D>
    static PanelMatrix packed(const Eigen::MatrixBase<D>& m) {
        PanelMatrix out{m.rows(), m.cols(), {}};
        out.stored.resize(std::size_t(m.size()));
        for (Index first = 0; first < out.cols; first += kPanel) {
            const Index width = out.panel_width(first);
            Stored* panel = out.at(0, first);
            for (Index r = 0; r < out.rows; ++r)
                for (Index i = 0; i < width; ++i) panel[r * width + i] = m(r, first + i);
        }
        return out;
    }
    /// The numbers given row by row (rows · cols of them at row_major), packed.
    static PanelMatrix packed(Index rows, Index cols, const Stored* row_major) {
        return packed(Eigen::Map<const RowMajorMatrix<Stored>>(row_major, rows, cols));
    }
    /// The matrix row by row again, (rows × cols).
    RowMajorMatrix<Stored> unpacked() const {
        RowMajorMatrix<Stored> out(rows, cols);
        for (Index first = 0; first < cols; first += kPanel) {
            const Index width = panel_width(first);
            for (Index r = 0; r < rows; ++r) std::copy_n(at(r, first), width, &out(r, first));
        }
        return out;
    }
};

/// A weight matrix kept as 16-bit numbers of `format`, packed in panels.
struct HalfMatrix : PanelMatrix<std::uint16_t> {
    HalfFormat format = HalfFormat::bfloat16;

    /// Entry (r, c) widened to float.
    float operator()(Index r, Index c) const {
        const std::uint16_t b = *at(r, c);
        return format == HalfFormat::bfloat16 ? bfloat16_to_float(b) : half_to_float(b);
    }
    /// The float matrix (rows × cols) these numbers are, exactly.
    RowMajorMatrix<float> widened() const {
        RowMajorMatrix<float> out(rows, cols);
        for (Index r = 0; r < rows; ++r)
            for (Index c = 0; c < cols; ++c) out(r, c) = (*this)(r, c);
        return out;
    }
    /// A matrix of zeros (rows × cols) of `format` to be written through at().
    static HalfMatrix sized(HalfFormat format, Index rows, Index cols) {
        return {PanelMatrix<std::uint16_t>::sized(rows, cols), format};
    }
    /// The matrix of 16-bit numbers given row by row (rows · cols of them at row_major), packed.
    static HalfMatrix packed(HalfFormat format, Index rows, Index cols, const std::uint16_t* row_major) {
        return {PanelMatrix<std::uint16_t>::packed(rows, cols, row_major), format};
    }
    /// A float matrix whose every entry is a number of `format` (as read from such a tensor),
    /// kept in 16 bits, exactly.
    static HalfMatrix narrowed(const RowMajorMatrix<float>& values, HalfFormat format) {
        const auto narrow = [format](float v) {
            return format == HalfFormat::bfloat16 ? float_to_bfloat16_exact(v) : float_to_half_exact(v);
        };
        return {PanelMatrix<std::uint16_t>::packed(values.unaryExpr(narrow)), format};
    }
};

/// b of a product as a block of a PanelMatrix, (depth × cols) from its entry (first_row,
/// first_col), read by multiply_many_rows_from (tiles.hpp) as Reader says: where it lies when a
/// block is whole rows of one panel and its numbers need no widening, else copied into the
/// panels the tiles pack (a few rows stream it instead: stream_panels).
template <class Reader>
struct Panels {
    using Scalar = typename Reader::Scalar;
    using Stored = typename Reader::Stored;
    static constexpr bool kInPlace = Reader::kInPlace;
    static constexpr Index kLineEntries = 64 / Index(sizeof(Stored));
    /// Columns whose entries of a row lie side by side (tiles.hpp: PanelColumns).
    static constexpr Index kPanelColumns = PanelMatrix<Stored>::kPanel;

    const PanelMatrix<Stored>* matrix = nullptr;
    Index first_row = 0, first_col = 0;

    Scalar value(Index t, Index col) const { return Reader::value(*matrix->at(first_row + t, first_col + col)); }
    void copy(Index t, Index col, Index count, Scalar* out) const {
        for (Index i = 0; i < count;) {  // a run inside one panel at a time
            const Index c = first_col + col + i;
            const Index run = std::min(count - i, PanelMatrix<Stored>::kPanel - c % PanelMatrix<Stored>::kPanel);
            Reader::run(matrix->at(first_row + t, c), run, out + i);
            i += run;
        }
    }
    const void* address(Index t, Index col) const { return matrix->at(first_row + t, first_col + col); }

    /// Whether columns col … col + width − 1 are whole rows of one panel, which then lie one
    /// after another: row_stride(col) apart, from at(t, col).
    bool in_place(Index col, Index width) const {
        const Index c = first_col + col;
        return c % PanelMatrix<Stored>::kPanel == 0 && width == matrix->panel_width(c);
    }
    Index row_stride(Index col) const { return matrix->panel_width(first_col + col); }
    const Stored* at(Index t, Index col) const { return matrix->at(first_row + t, first_col + col); }

    /// Where column col lies in its panel (0 … kPanelColumns − 1).
    Index into_panel(Index col) const { return (first_col + col) % kPanelColumns; }
    /// Rows first … first + count − 1 of the whole panel from column col, each read as one run and
    /// cut into pieces of `piece` columns side by side: entry (t, p · piece + j) to
    /// out[(p · count + t) · piece + j] (tiles.hpp: tiles_over_panel_group).
    void copy_cut(Index first, Index count, Index col, Index piece, Scalar* out) const {
        const Index pieces = kPanelColumns / piece;
        const Stored* row = at(first, col);
        for (Index t = 0; t < count; ++t, row += kPanelColumns)
            for (Index p = 0; p < pieces; ++p) Reader::run(row + p * piece, piece, out + (p * count + t) * piece);
    }
};

/// 16-bit weights in panels, read as float.
template <HalfFormat Format>
using HalfPanels = Panels<Widened<Format>>;

namespace kernel {

/// c(r, j …) (+)= Σ_t a(r, t) · b(t, j …) for Packets packets of columns that lie in one panel,
/// in each of Streams panels side by side: from `panel` (the first panel's entry at row 0 and
/// the first of these columns, panel_row apart; panel s's next_panel · s further, its columns
/// of c c_next · s further). c's packets stay in registers for the whole depth, and each panel
/// is read once, in order, its rows kAhead ahead prefetched: Streams runs of memory in flight
/// at once (Intel's prefetchers follow several streams better than one: docs/DESIGN.md). Each
/// entry is one fused multiply-add chain over the depth in order, from c (accumulate) or 0: the
/// bits of stream_rows's.
template <class Reader, int Rows, int Packets, int Streams = 1, class Scalar = typename Reader::Scalar,
          class Stored = typename Reader::Stored>
EIGEN_ALWAYS_INLINE void stream_panel(Index depth, const Scalar* a, Index a_row, const Stored* panel, Index panel_row,
                                      Index next_panel, Scalar* c, Index c_next, Index c_row, bool accumulate) {
    using Packet = typename RegisterTile<Scalar>::Packet;
    constexpr Index L = RegisterTile<Scalar>::kLanes;
    constexpr Index kAhead = 8;  // rows of the panel: 1 KiB ahead for a whole BF16 panel, 2 KiB for float
    Packet acc[Rows][Streams * Packets];
    for (int r = 0; r < Rows; ++r)
        for (int s = 0; s < Streams; ++s)
            for (int p = 0; p < Packets; ++p)
                acc[r][s * Packets + p] =
                    accumulate ? ei::ploadu<Packet>(c + r * c_row + s * c_next + p * L) : ei::pset1<Packet>(Scalar(0));
    const Index bytes = Packets * L * Index(sizeof(Stored));
    for (Index t = 0; t < depth; ++t) {
        Packet w[Streams * Packets];
        for (int s = 0; s < Streams; ++s) {
            const Stored* row = panel + s * next_panel + t * panel_row;
            if (t + kAhead < depth)
                for (Index line = 0; line < bytes; line += 64)
                    prefetch(reinterpret_cast<const char*>(row + kAhead * panel_row) + line);
            for (int p = 0; p < Packets; ++p) w[s * Packets + p] = Reader::template packet<Packet>(row + p * L);
        }
        for (int r = 0; r < Rows; ++r) {
            const Packet y = ei::pset1<Packet>(a[r * a_row + t]);
            for (int k = 0; k < Streams * Packets; ++k) acc[r][k] = ei::pmadd(y, w[k], acc[r][k]);
        }
    }
    for (int r = 0; r < Rows; ++r)
        for (int s = 0; s < Streams; ++s)
            for (int p = 0; p < Packets; ++p) ei::pstoreu(c + r * c_row + s * c_next + p * L, acc[r][s * Packets + p]);
}

}  // namespace kernel

/// Calls f(std::integral_constant<int, n>()) for n = min(count, Most) ≥ 1: a count of packets
/// as a compile-time one.
template <int Most, class F>
EIGEN_ALWAYS_INLINE void with_packet_count(Index count, F&& f) {
    if constexpr (Most > 1)
        if (count < Most) return with_packet_count<Most - 1>(count, f);
    f(std::integral_constant<int, Most>());
}

/// multiply_rows for 1 … kStreamedRows rows on a block of a PanelMatrix (b: depth × cols from
/// its entry (first_row, first_col)): panel by panel, each read once in order with its
/// columns of c in registers (kernel::stream_panel): whole panels' rows, several panels side by
/// side, where the accumulators allow (one row of a: AVX-512 four, AVX2 two; two rows: AVX-512
/// two), else up to eight packets (one row) or four (two rows) of one panel. A packet that
/// would straddle two panels (a block starting inside a packet's width of a panel's edge: only
/// tests ask for one) is gathered an entry at a time; the columns past the last whole packet
/// take one scalar chain each.
/// Each entry of c is the same fused multiply-add chain over the depth in order as
/// multiply_few_rows_from's: the bits of the product on row-major weights.
template <class Reader, class Scalar = typename Reader::Scalar>
void stream_panels(Index rows, Index depth, Index cols, const Scalar* a, Index a_row, const Panels<Reader>& b,
                   Scalar* c, Index c_row, bool accumulate) {
    static_assert(kStreamedRows == 2, "stream_panels: one or two rows of a");
    namespace ei = Eigen::internal;
    using Stored = typename Reader::Stored;
    constexpr Index L = RegisterTile<Scalar>::kLanes;
    constexpr Index kPanel = PanelMatrix<Stored>::kPanel;
    constexpr int kOneRowPackets = int(std::min<Index>(8, kPanel / L)), kTwoRowPackets = 4;
    // Panels streamed side by side: at most four (one, two and four measured: docs/bench/2026-12-02-
    // xeon-avx512; two against four on Zen 5: docs/bench/2026-12-06-epyc-zen5-avx512/panel_streams),
    // as many as 16 accumulators hold, else one. With one row of a that is 16 whatever the register
    // count: AVX2's two panels side by side (16 registers of accumulators) keep a few in L1, which a
    // step bound by memory does not notice (+5 … +18 % against one panel; four panels lose on BF16,
    // which needs registers to widen). Two rows keep their accumulators in registers.
    constexpr int kMostStreams = 4;
    constexpr int kOneRowAccumulators = 16;
    constexpr int kTwoRowAccumulators = RegisterTile<Scalar>::kWide ? 16 : 8;
    constexpr int kOneRowStreams = std::max(1, std::min<int>(kMostStreams, kOneRowAccumulators / int(kPanel / L)));
    constexpr int kTwoRowStreams = std::max(1, std::min<int>(kMostStreams, kTwoRowAccumulators / int(2 * kPanel / L)));
    const Index streams = rows == 1 ? kOneRowStreams : kTwoRowStreams;
    const PanelMatrix<Stored>& m = *b.matrix;
    const auto scalar_column = [&](Index col) {
        for (Index r = 0; r < rows; ++r) {
            Scalar sum = accumulate ? c[r * c_row + col] : Scalar(0);
            for (Index t = 0; t < depth; ++t) sum = multiply_add(a[r * a_row + t], b.value(t, col), sum);
            c[r * c_row + col] = sum;
        }
    };
    // a packet of columns gathered one entry at a time: its chains are the packet's, with the bits
    // of the packets read whole
    const auto gathered_packet = [&](Index col) {
        using Packet = typename RegisterTile<Scalar>::Packet;
        Packet acc[kStreamedRows];
        alignas(64) Scalar w[L];
        for (Index r = 0; r < rows; ++r)
            acc[r] = accumulate ? ei::ploadu<Packet>(c + r * c_row + col) : ei::pset1<Packet>(Scalar(0));
        for (Index t = 0; t < depth; ++t) {
            for (Index i = 0; i < L; ++i) w[i] = b.value(t, col + i);
            for (Index r = 0; r < rows; ++r)
                acc[r] = ei::pmadd(ei::pset1<Packet>(a[r * a_row + t]), ei::pload<Packet>(w), acc[r]);
        }
        for (Index r = 0; r < rows; ++r) ei::pstoreu(c + r * c_row + col, acc[r]);
    };
    const Index whole = cols / L * L;
    const Index most = rows == 1 ? kOneRowPackets : kTwoRowPackets;
    Index col = 0;
    while (col < whole) {
        const Index at = b.first_col + col, inside = at % kPanel;
        if (inside % L != 0) {  // this packet straddles a panel's edge
            gathered_packet(col);
            col += L;
            continue;
        }
        const Stored* panel = depth > 0 ? m.at(b.first_row, at) : nullptr;
        const Index panel_row = m.panel_width(at);
        Scalar* out = c + col;
        // whole panels, several side by side where the accumulators allow (streams > 1)
        constexpr int kWhole = int(kPanel / L);  // packets in a panel's row
        const Index next_panel = kPanel * m.rows;
        if (streams > 1 && inside == 0 && whole - col >= streams * kPanel) {
            if constexpr (kOneRowStreams > 1)
                if (rows == 1)
                    kernel::stream_panel<Reader, 1, kWhole, kOneRowStreams>(depth, a, a_row, panel, kPanel, next_panel,
                                                                            out, kPanel, c_row, accumulate);
            if constexpr (kTwoRowStreams > 1)
                if (rows == 2)
                    kernel::stream_panel<Reader, 2, kWhole, kTwoRowStreams>(depth, a, a_row, panel, kPanel, next_panel,
                                                                            out, kPanel, c_row, accumulate);
            col += streams * kPanel;
            continue;
        }
        const Index packets = std::min({most, (kPanel - inside) / L, (whole - col) / L});
        if (rows == 1)
            with_packet_count<kOneRowPackets>(packets, [&](auto n) {
                kernel::stream_panel<Reader, 1, decltype(n)::value>(depth, a, a_row, panel, panel_row, 0, out, 0, c_row,
                                                                    accumulate);
            });
        else
            with_packet_count<kTwoRowPackets>(packets, [&](auto n) {
                kernel::stream_panel<Reader, 2, decltype(n)::value>(depth, a, a_row, panel, panel_row, 0, out, 0, c_row,
                                                                    accumulate);
            });
        col += packets * L;
    }
    for (; col < cols; ++col) scalar_column(col);
}

/// c (+)= a · b on a block of a PanelMatrix, as multiply_rows computes it: streamed panel by
/// panel for up to kStreamedRows rows, else the tiles on blocks of its panels.
template <class Reader, class Scalar = typename Reader::Scalar>
void multiply_panels(Index rows, Index depth, Index cols, const Scalar* a, Index a_row, const Panels<Reader>& b,
                     Scalar* c, Index c_row, bool accumulate) {
    if (rows == 0 || cols == 0) return;
    if (rows <= kStreamedRows)
        stream_panels(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
    else
        multiply_many_rows_from(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
}

/// A weight matrix or a block of one as a product reads it, (rows × cols): row-major T (row
/// stride `stride`), T packed in panels, 16-bit numbers packed in panels, or GGUF blocks
/// (quantized_weights.hpp), whose matrix holds the transpose: this block is its rows first_col
/// … + cols − 1 and its columns first_row … + rows − 1.
template <class T>
struct WeightRows {
    const T* values = nullptr;                   ///< the numbers row by row, if so kept
    const PanelMatrix<T>* panels = nullptr;      ///< else the numbers in panels
    const HalfMatrix* halves = nullptr;          ///< else the 16-bit numbers in panels
    const QuantizedMatrix* quantized = nullptr;  ///< else the blocks (out × in)
    Index rows = 0, cols = 0, stride = 0;
    /// Where this block starts in the panels (its entry (first_row, first_col)), or in the
    /// quantized matrix's transpose (its rows first_col …, its columns first_row …).
    Index first_row = 0, first_col = 0;
    /// Whether a product with these weights, if BF16, rounds a to bfloat16 first
    /// (LoadOptions::bfloat16_activations; bfloat16_pairs.hpp).
    bool bfloat16_activations = false;

    static WeightRows of(const RowMajorMatrix<T>& m) {
        WeightRows out;
        out.values = m.data();
        out.rows = m.rows();
        out.cols = out.stride = m.cols();
        return out;
    }
    static WeightRows of(const PanelMatrix<T>& m) {
        WeightRows out;
        out.panels = &m;
        out.rows = m.rows;
        out.cols = m.cols;
        return out;
    }
    static WeightRows of(const HalfMatrix& m) {
        WeightRows out;
        out.halves = &m;
        out.rows = m.rows;
        out.cols = m.cols;
        return out;
    }
    /// The (in × out) weight whose transpose m holds.
    static WeightRows of(const QuantizedMatrix& m) {
        WeightRows out;
        out.quantized = &m;
        out.rows = m.cols;
        out.cols = m.rows;
        return out;
    }

    /// Columns first … first + count − 1, (rows × count).
    WeightRows middleCols(Index first, Index count) const {
        WeightRows out = *this;
        if (values) out.values += first;
        out.first_col += first;
        out.cols = count;
        return out;
    }
    /// Rows first … first + count − 1, (count × cols).
    WeightRows middleRows(Index first, Index count) const {
        WeightRows out = *this;
        if (values) out.values += first * stride;
        out.first_row += first;
        out.rows = count;
        return out;
    }
};

/// The numbers of w (rows × cols) row by row as T, however they are kept: a copy, 16-bit
/// numbers widened and blocks dequantized (float only).
template <class T>
RowMajorMatrix<T> unpacked(const WeightRows<T>& w) {
    RowMajorMatrix<T> out(w.rows, w.cols);
    if (out.size() == 0) return out;
    const auto copied = [&](const auto& source) {
        for (Index r = 0; r < w.rows; ++r) source.copy(r, 0, w.cols, &out(r, 0));
    };
    if (w.values) {
        copied(DenseRows<T>{w.values, w.stride});
    } else if (w.panels) {
        copied(Panels<StoredAsIs<T>>{w.panels, w.first_row, w.first_col});
    } else if constexpr (std::is_same_v<T, float>) {
        if (w.quantized) {  // a column of w is a row of the blocks
            std::vector<float> column(std::size_t(w.rows));
            for (Index c = 0; c < w.cols; ++c) {
                dequantize_row(*w.quantized, w.first_col + c, w.first_row, w.rows, column.data());
                out.col(c) = Eigen::Map<const Eigen::VectorXf>(column.data(), w.rows);
            }
        } else if (w.halves->format == HalfFormat::bfloat16) {
            copied(HalfPanels<HalfFormat::bfloat16>{w.halves, w.first_row, w.first_col});
        } else {
            copied(HalfPanels<HalfFormat::float16>{w.halves, w.first_row, w.first_col});
        }
    }
    return out;
}

/// c (+)= round(a) · w for BF16 weights w (depth × cols) in panels, a's entries rounded to the
/// nearest bfloat16 (WeightRows::bfloat16_activations): a (rows × depth, row stride a_row), c
/// (rows × cols, row stride c_row). Pairs of depths in one instruction where the build has AVX-512
/// BF16 and the rows are many (bfloat16_pairs.hpp), else a rounded copy of a through the float
/// kernels.
inline void multiply_rounded_to_bfloat16(Index rows, Index depth, const float* a, Index a_row,
                                         const WeightRows<float>& w, float* c, Index c_row, bool accumulate) {
#if ATTN_DETAIL_BFLOAT16_PAIRS
    if (rows > kStreamedRows)
        return multiply_bfloat16_pairs(rows, depth, w.cols, a, a_row, *w.halves, w.first_row, w.first_col, c, c_row,
                                       accumulate);
#endif
    float* rounded = packed_rows_buffer<float, RoundedRows>(std::size_t(std::max<Index>(rows * depth, 1)));
    round_rows_to_bfloat16(rows, depth, a, a_row, rounded);
    multiply_panels(rows, depth, w.cols, rounded, depth,
                    HalfPanels<HalfFormat::bfloat16>{w.halves, w.first_row, w.first_col}, c, c_row, accumulate);
}

/// c (+)= a · w as multiply_rows (tiles.hpp) computes it: a (rows × depth), w (depth × cols),
/// c (rows × cols), row-major with unit inner stride. Weights in panels give the bits of the
/// product on the same weights row by row (16-bit ones: widened); quantized ones are
/// multiply_quantized's (float only); BF16 ones with bfloat16_activations multiply a rounded to
/// bfloat16 (multiply_rounded_to_bfloat16).
template <class DA, class DC, class T>
void multiply_rows(const Eigen::MatrixBase<DA>& a, const WeightRows<T>& w, const Eigen::MatrixBase<DC>& c,
                   bool accumulate) {
    static_assert(DA::IsRowMajor && DC::IsRowMajor, "multiply_rows: row-major operands only");
    auto& out = const_cast<Eigen::MatrixBase<DC>&>(c);  // Eigen's idiom for writable expressions
    eigen_assert(a.cols() == w.rows && out.rows() == a.rows() && out.cols() == w.cols);
    eigen_assert(a.innerStride() == 1 && out.innerStride() == 1);
    const T* a_data = a.derived().data();
    T* c_data = out.derived().data();
    const Index rows = a.rows(), depth = a.cols(), a_row = a.outerStride(), c_row = out.outerStride();
    if (w.values) {
        multiply_rows(rows, depth, w.cols, a_data, a_row, w.values, w.stride, c_data, c_row, accumulate);
    } else if (w.panels) {
        multiply_panels(rows, depth, w.cols, a_data, a_row, Panels<StoredAsIs<T>>{w.panels, w.first_row, w.first_col},
                        c_data, c_row, accumulate);
    } else if constexpr (std::is_same_v<T, float>) {
        if (w.quantized)
            multiply_quantized(rows, depth, a_data, a_row, *w.quantized, w.first_col, w.cols, w.first_row, c_data,
                               c_row, accumulate);
        else if (w.halves->format == HalfFormat::bfloat16 && w.bfloat16_activations)
            multiply_rounded_to_bfloat16(rows, depth, a_data, a_row, w, c_data, c_row, accumulate);
        else if (w.halves->format == HalfFormat::bfloat16)
            multiply_panels(rows, depth, w.cols, a_data, a_row,
                            HalfPanels<HalfFormat::bfloat16>{w.halves, w.first_row, w.first_col}, c_data, c_row,
                            accumulate);
        else
            multiply_panels(rows, depth, w.cols, a_data, a_row,
                            HalfPanels<HalfFormat::float16>{w.halves, w.first_row, w.first_col}, c_data, c_row,
                            accumulate);
    } else {
        eigen_assert(false && "16-bit and quantized weights are read into float products only");
    }
}

}  // namespace attn::detail

#ifdef ATTN_DETAIL_WEIGHT_PANELS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_WEIGHT_PANELS_PRAGMAS_PUSHED
#endif
