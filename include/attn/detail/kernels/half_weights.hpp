#pragma once
// Weight matrices kept in a checkpoint's 16-bit format (BF16 or F16) and the products that
// read them: a decoding step reads every weight once, so it is bound by memory bandwidth, and
// 16-bit weights halve its bytes. Each packet of weights is widened to float in registers
// (BF16: the bits shifted left by 16; F16: vcvtph2ps) and goes into the same float fused
// multiply-add chains as the float kernel (tiles.hpp): both widenings are exact, so a product
// on 16-bit weights has the bits of the float product on the same weights converted.
//
// The numbers are packed at load in panels of 64 columns (HalfMatrix), so that a decoding
// step reads each panel as one run of memory in order, c's columns in registers, and a
// thread's share of the columns is whole runs (stream_panels); a prefill's tiles copy blocks
// of the panels as they copied blocks of rows (multiply_many_rows_from on HalfPanels).
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
#include "attn/detail/kernels/large_arrays.hpp"
#include "attn/detail/kernels/quantized_weights.hpp"
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
    for (; i + L <= count; i += L) Eigen::internal::pstoreu(out + i, widen_packet<Format>(from + i));
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

/// A weight matrix (rows × cols) kept as 16-bit numbers, in panels of kPanel columns: panel p
/// holds columns kPanel·p … kPanel·p + kPanel − 1 (fewer in the last), row after row, and the
/// panels follow each other. A decoding step reads a panel as one run of memory in order, with
/// its columns of c in registers for the whole depth (stream_panels); a row-major matrix read
/// the same way is as many short streams as rows of b read side by side, which the hardware
/// prefetchers follow badly, and a thread's share of the columns is a strided one (docs/DESIGN.md
/// has the measurements). A prefill's tiles copy blocks of a panel, as they copied blocks of
/// rows. Entries are reached through index() and operator(), never by a row-major offset.
struct HalfMatrix {
    /// Columns per panel: 128 bytes a row, two cache lines, four AVX-512 packets of float.
    static constexpr Index kPanel = 64;

    HalfFormat format = HalfFormat::bfloat16;
    Index rows = 0, cols = 0;
    std::vector<std::uint16_t, HugePagesInside<std::uint16_t>> bits;  ///< rows · cols, panel by panel

    Index size() const { return rows * cols; }
    /// Columns in the panel that holds column c.
    Index panel_width(Index c) const { return std::min(kPanel, cols - c / kPanel * kPanel); }
    /// Where entry (r, c) is in bits.
    std::size_t index(Index r, Index c) const {
        const Index panel = c / kPanel;
        return std::size_t(panel * kPanel * rows + r * panel_width(c) + c % kPanel);
    }
    /// Entry (r, c) as stored.
    const std::uint16_t* at(Index r, Index c) const { return bits.data() + index(r, c); }
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
    /// The matrix of 16-bit numbers given row by row (rows · cols of them at row_major), packed.
    static HalfMatrix packed(HalfFormat format, Index rows, Index cols, const std::uint16_t* row_major) {
        HalfMatrix out{format, rows, cols, {}};
        out.bits.resize(std::size_t(rows * cols));
        for (Index first = 0; first < cols; first += kPanel) {
            const Index width = std::min(kPanel, cols - first);
            std::uint16_t* panel = out.bits.data() + first * rows;
            for (Index r = 0; r < rows; ++r) std::copy_n(row_major + r * cols + first, width, panel + r * width);
        }
        return out;
    }
    /// A float matrix whose every entry is a number of `format` (as read from such a tensor),
    /// kept in 16 bits, exactly.
    static HalfMatrix narrowed(const RowMajorMatrix<float>& values, HalfFormat format) {
        HalfMatrix out{format, values.rows(), values.cols(), {}};
        out.bits.resize(std::size_t(values.size()));
        for (Index r = 0; r < out.rows; ++r)
            for (Index c = 0; c < out.cols; ++c) {
                const float v = values(r, c);
                out.bits[out.index(r, c)] =
                    format == HalfFormat::bfloat16 ? float_to_bfloat16_exact(v) : float_to_half_exact(v);
            }
        return out;
    }
};

/// b of a product as a block of a HalfMatrix, (depth × cols) from its entry (first_row,
/// first_col), read by multiply_many_rows_from (tiles.hpp) as float: copied, widened, into the
/// panels its tiles pack (a few rows stream it instead: stream_panels).
template <HalfFormat Format>
struct HalfPanels {
    using Scalar = float;
    static constexpr bool kInPlace = false;
    static constexpr Index kLineEntries = 32;

    const HalfMatrix* matrix = nullptr;
    Index first_row = 0, first_col = 0;

    float value(Index t, Index col) const { return widen<Format>(*matrix->at(first_row + t, first_col + col)); }
    void copy(Index t, Index col, Index count, float* out) const {
        for (Index i = 0; i < count;) {  // a run inside one panel at a time
            const Index c = first_col + col + i;
            const Index run = std::min(count - i, HalfMatrix::kPanel - c % HalfMatrix::kPanel);
            widen_run<Format>(matrix->at(first_row + t, c), run, out + i);
            i += run;
        }
    }
    const void* address(Index t, Index col) const { return matrix->at(first_row + t, first_col + col); }
};

namespace kernel {

/// c(r, j …) (+)= Σ_t a(r, t) · b(t, j …) for Packets packets of columns that lie in one panel,
/// from `panel` (that panel's entry at row 0 and the first of these columns, panel_row apart):
/// c's packets stay in registers for the whole depth, and the panel is read once, in order,
/// its rows kAhead ahead prefetched. Each entry is one fused multiply-add chain over the depth
/// in order, from c (accumulate) or 0: the bits of stream_rows's.
template <HalfFormat Format, int Rows, int Packets>
EIGEN_ALWAYS_INLINE void stream_panel(Index depth, const float* a, Index a_row, const std::uint16_t* panel,
                                      Index panel_row, float* c, Index c_row, bool accumulate) {
    using Packet = typename RegisterTile<float>::Packet;
    constexpr Index L = RegisterTile<float>::kLanes;
    constexpr Index kAhead = 8;  // rows of the panel: 1 KiB ahead for a whole BF16 panel
    Packet acc[Rows][Packets];
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p)
            acc[r][p] = accumulate ? ei::ploadu<Packet>(c + r * c_row + p * L) : ei::pset1<Packet>(0.0f);
    const Index bytes = Packets * L * Index(sizeof(std::uint16_t));
    for (Index t = 0; t < depth; ++t) {
        const std::uint16_t* row = panel + t * panel_row;
        if (t + kAhead < depth)
            for (Index line = 0; line < bytes; line += 64)
                prefetch(reinterpret_cast<const char*>(row + kAhead * panel_row) + line);
        Packet w[Packets];
        for (int p = 0; p < Packets; ++p) w[p] = widen_packet<Format>(row + p * L);
        for (int r = 0; r < Rows; ++r) {
            const Packet y = ei::pset1<Packet>(a[r * a_row + t]);
            for (int p = 0; p < Packets; ++p) acc[r][p] = ei::pmadd(y, w[p], acc[r][p]);
        }
    }
    for (int r = 0; r < Rows; ++r)
        for (int p = 0; p < Packets; ++p) ei::pstoreu(c + r * c_row + p * L, acc[r][p]);
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

/// multiply_rows for 1 … kStreamedRows rows on a block of a HalfMatrix (b: depth × cols from
/// its entry (first_row, first_col)): panel by panel, each read once in order with its
/// columns of c in registers (kernel::stream_panel): a whole panel's row at a time where the
/// registers hold it (one row of a, up to eight packets), else four packets. A packet that
/// would straddle two panels (a block starting inside a packet's width of a panel's edge: only
/// tests ask for one) is gathered an entry at a time; the columns past the last whole packet
/// take one scalar chain each.
/// Each entry of c is the same fused multiply-add chain over the depth in order as
/// multiply_few_rows_from's: the bits of the float product.
template <HalfFormat Format>
void stream_panels(Index rows, Index depth, Index cols, const float* a, Index a_row, const HalfPanels<Format>& b,
                   float* c, Index c_row, bool accumulate) {
    static_assert(kStreamedRows == 2, "stream_panels: one or two rows of a");
    namespace ei = Eigen::internal;
    constexpr Index L = RegisterTile<float>::kLanes;
    constexpr Index kPanel = HalfMatrix::kPanel;
    constexpr int kOneRowPackets = int(std::min<Index>(8, kPanel / L)), kTwoRowPackets = 4;
    const HalfMatrix& m = *b.matrix;
    const auto scalar_column = [&](Index col) {
        for (Index r = 0; r < rows; ++r) {
            float sum = accumulate ? c[r * c_row + col] : 0.0f;
            for (Index t = 0; t < depth; ++t) sum += a[r * a_row + t] * b.value(t, col);
            c[r * c_row + col] = sum;
        }
    };
    // a packet of columns gathered one entry at a time: its chains are the packet's, with the bits
    // of the packets read whole
    const auto gathered_packet = [&](Index col) {
        using Packet = typename RegisterTile<float>::Packet;
        Packet acc[kStreamedRows];
        alignas(64) float w[L];
        for (Index r = 0; r < rows; ++r)
            acc[r] = accumulate ? ei::ploadu<Packet>(c + r * c_row + col) : ei::pset1<Packet>(0.0f);
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
        const Index packets = std::min({most, (kPanel - inside) / L, (whole - col) / L});
        const std::uint16_t* panel = depth > 0 ? m.at(b.first_row, at) : nullptr;
        const Index panel_row = m.panel_width(at);
        float* out = c + col;
        if (rows == 1)
            with_packet_count<kOneRowPackets>(packets, [&](auto n) {
                kernel::stream_panel<Format, 1, decltype(n)::value>(depth, a, a_row, panel, panel_row, out, c_row,
                                                                    accumulate);
            });
        else
            with_packet_count<kTwoRowPackets>(packets, [&](auto n) {
                kernel::stream_panel<Format, 2, decltype(n)::value>(depth, a, a_row, panel, panel_row, out, c_row,
                                                                    accumulate);
            });
        col += packets * L;
    }
    for (; col < cols; ++col) scalar_column(col);
}

/// c (+)= a · b on a block of a HalfMatrix, as multiply_rows computes it: streamed panel by
/// panel for up to kStreamedRows rows, else the tiles on panels copied from it.
template <HalfFormat Format>
void multiply_half(Index rows, Index depth, Index cols, const float* a, Index a_row, const HalfPanels<Format>& b,
                   float* c, Index c_row, bool accumulate) {
    if (rows == 0 || cols == 0) return;
    if (rows <= kStreamedRows)
        stream_panels(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
    else
        multiply_many_rows_from(rows, depth, cols, a, a_row, b, c, c_row, accumulate);
}

/// A weight matrix or a block of one as a product reads it: (rows × cols), row stride
/// `stride`, float (or T) numbers, 16-bit ones of `format`, or GGUF blocks (quantized_weights.hpp),
/// whose matrix holds the transpose: this block is its rows first_col … + cols − 1 and its
/// columns first_row … + rows − 1.
template <class T>
struct WeightRows {
    const T* values = nullptr;                   ///< the numbers, if they are T
    const HalfMatrix* halves = nullptr;          ///< else the 16-bit numbers
    const QuantizedMatrix* quantized = nullptr;  ///< else the blocks (out × in)
    Index rows = 0, cols = 0, stride = 0;
    /// Where this block starts in the matrix of halves (its entry (first_row, first_col)), or
    /// in the quantized one's transpose (its rows first_col …, its columns first_row …).
    Index first_row = 0, first_col = 0;

    static WeightRows of(const RowMajorMatrix<T>& m) {
        return {m.data(), nullptr, nullptr, m.rows(), m.cols(), m.cols()};
    }
    static WeightRows of(const HalfMatrix& m) { return {nullptr, &m, nullptr, m.rows, m.cols, 0}; }
    /// The (in × out) weight whose transpose m holds.
    static WeightRows of(const QuantizedMatrix& m) { return {nullptr, nullptr, &m, m.cols, m.rows, 0}; }

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

/// c (+)= a · w as multiply_rows (tiles.hpp) computes it: a (rows × depth), w (depth × cols),
/// c (rows × cols), row-major with unit inner stride. 16-bit weights give the bits of the
/// float product on the same weights widened; quantized ones are multiply_quantized's (float only).
template <class DA, class DC, class T>
void multiply_rows(const Eigen::MatrixBase<DA>& a, const WeightRows<T>& w, const Eigen::MatrixBase<DC>& c,
                   bool accumulate) {
    static_assert(DA::IsRowMajor && DC::IsRowMajor, "multiply_rows: row-major operands only");
    auto& out = const_cast<Eigen::MatrixBase<DC>&>(c);  // Eigen's idiom for writable expressions
    eigen_assert(a.cols() == w.rows && out.rows() == a.rows() && out.cols() == w.cols);
    eigen_assert(a.innerStride() == 1 && out.innerStride() == 1);
    const T* a_data = a.derived().data();
    T* c_data = out.derived().data();
    if (w.values) {
        multiply_rows(a.rows(), a.cols(), w.cols, a_data, a.outerStride(), w.values, w.stride, c_data,
                      out.outerStride(), accumulate);
    } else if constexpr (std::is_same_v<T, float>) {
        if (w.quantized)
            multiply_quantized(a.rows(), a.cols(), a_data, a.outerStride(), *w.quantized, w.first_col, w.cols,
                               w.first_row, c_data, out.outerStride(), accumulate);
        else if (w.halves->format == HalfFormat::bfloat16)
            multiply_half(a.rows(), a.cols(), w.cols, a_data, a.outerStride(),
                          HalfPanels<HalfFormat::bfloat16>{w.halves, w.first_row, w.first_col}, c_data,
                          out.outerStride(), accumulate);
        else
            multiply_half(a.rows(), a.cols(), w.cols, a_data, a.outerStride(),
                          HalfPanels<HalfFormat::float16>{w.halves, w.first_row, w.first_col}, c_data,
                          out.outerStride(), accumulate);
    } else {
        eigen_assert(false && "16-bit and quantized weights are read into float products only");
    }
}

}  // namespace attn::detail

#ifdef ATTN_DETAIL_HALF_WEIGHTS_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_HALF_WEIGHTS_PRAGMAS_PUSHED
#endif
