#pragma once
// The fused attention kernel behind attention() and attend_heads() (causal or full
// attention without a custom mask).
//
// Work is split into tasks of kQueryBlock (96) query rows of one head. A task visits
// only the keys its rows may see — never the masked upper triangle beyond the
// diagonal blocks, nor with a sliding window (FusedProblem::window) the blocks before
// its first row's window — in blocks of kKeyBlock (128) keys. A soft cap
// (FusedProblem::score_cap) bends each score before the masks and the softmax.
//
//  * Streaming (weights not kept): a block's scores go to a per-thread buffer laid out
//    keys × queries (sᵀ), so the online softmax runs down the columns with whole
//    packets of queries at a time: running maximum m and sum l per query, the partial
//    output rescaled by exp(m_old − m_new) when m grows, the block exponentiated in
//    place (masked and underflowing weights exactly 0), then outputᵀ += valuesᵀ ·
//    weightsᵀ (the partial output kept transposed, dv × queries). Keys and values are
//    read where they lie (only RoPE or an unusual layout makes a copy) and the queries
//    of a task are transposed into the buffer, so a call allocates its output and a few
//    hundred KiB per thread, nothing of size positions².
//  * Exact (weights kept): the scores of the lower blocks are written straight into
//    the weights matrix (keys packed into panels for that), each row gets the plain
//    softmax over its visible keys (softmax_rows's flush-to-zero rule; its sum compensated,
//    its exponents' arguments exact), and the output is weights · values over the lower
//    blocks only.
//
// All products run on one register-tiled micro-kernel over Eigen's packets (detail/kernels/tiles.hpp).
// The streaming path keeps queries across the packets' lanes in both of its products: its
// scoresᵀ tile is 8 keys × 3 packets of queries and its outputᵀ tile 8 value columns × 3
// packets (4 × 3 with 16 registers), so that the weights it has just written are read back
// whole packets at a time, as the queries are. (With the output row-major, weights · values
// broadcast one weight per query, and on AVX-512 it took a third longer than the scores for
// the same multiply-adds.) The exact path's products and decoding's weights · values use
// 6 rows × 4 packets (6 × 2 with 16 registers). The exponentials are vectorised: the streaming
// softmax's, for float, a cheaper one within 2.5e-7 of exp (exp_streamed: it exponentiates
// every score); the exact path's the cephes polynomial Eigen uses, without the clamping that
// y = s − m ≤ 0 does not need (on AVX-512 its 2ⁿ scaling and flush in two instructions); for
// double Eigen's exp. A task's queries are transposed in and its outputs out by packet blocks,
// and while a block's scores are computed its values and the next block's keys are prefetched.
// Tasks are sorted longest first and handed out from a shared counter (causal rows late
// in the sequence see more keys), so threads finish together; each task computes the
// same numbers whichever thread runs it, so results do not depend on the thread count.

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <new>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/kernels/bfloat16_attention.hpp"
#include "attn/detail/kernels/row_statistics.hpp"
#include "attn/detail/kernels/tiles.hpp"
#include "attn/error.hpp"
#include "attn/threads.hpp"

// gcc 12's AVX-512 intrinsics initialise a dummy operand from itself (GCC bug 105593, fixed
// in gcc 13), which -Wall reports wherever they are inlined with -march=native.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ATTN_DETAIL_KERNEL_PRAGMAS_PUSHED
#endif

namespace attn::detail {

/// The largest power of two r such that a tile of r rows × `packets` packets of accumulators,
/// the `packets` packets loaded per step and one broadcast fit in `registers` vector registers
/// (a power of two: a key block is whole tiles).
constexpr int tile_rows(int registers, int packets) {
    int rows = 1;
    while (2 * rows * packets + packets + 1 <= registers) rows *= 2;
    return rows;
}

/// Block and register-tile sizes for scalar type T on the instruction set Eigen targets.
template <class T>
struct KernelTiling {
    using Packet = typename RegisterTile<T>::Packet;
    static constexpr int kLanes = RegisterTile<T>::kLanes;
    static constexpr bool kWide = RegisterTile<T>::kWide;
    static constexpr int kRegisters = kWide ? 32 : 16;  ///< vector registers
    /// Streaming tile: kScoreKeys rows × kScorePackets packets of queries, for the scores (rows:
    /// keys) and the output (rows: value columns); 8 × 3 with 32 registers, 4 × 3 with 16.
    static constexpr int kScorePackets = 3;
    static constexpr int kScoreKeys = tile_rows(kRegisters, kScorePackets);
    static constexpr Index kChunk = Index(kScorePackets) * kLanes;  ///< queries per scores tile
    /// weights · values tile: kValueRows queries × kValuePackets packets of values (also the
    /// exact path's scores tile: queries × a panel of kPanel keys).
    static constexpr int kValueRows = RegisterTile<T>::kRows;
    static constexpr int kValuePackets = RegisterTile<T>::kPackets;
    static constexpr Index kPanel = Index(kValuePackets) * kLanes;
    static constexpr Index kQueryBlock = 96;  ///< query rows per task
    static constexpr Index kKeyBlock = 128;   ///< keys per block
    /// Decoding (FusedProblem::few_queries): at most kDecodeRows query rows per task, their
    /// scores of kDecodeKeys keys at a time, one row after another, in the streaming scores buffer.
    static constexpr Index kDecodeRows = 8;
    static constexpr Index kDecodeKeys = kKeyBlock * kQueryBlock / kDecodeRows;
    static constexpr Index kDecodeValueKeys = 64;  ///< keys per weights · values product (cache-resident values)
    static_assert(kQueryBlock % kChunk == 0, "a task is whole chunks of queries");
    static_assert(kDecodeKeys % kLanes == 0, "a decoding block is whole packets of keys");
    static_assert(kKeyBlock % kScoreKeys == 0, "a key block is whole tiles");
};

/// Row-major view with unit inner stride.
template <class T>
struct RowMajorView {
    const T* data = nullptr;
    Index stride = 0;  ///< distance between rows
};

/// One head's queries, keys and values.
template <class T>
struct HeadInputs {
    RowMajorView<T> queries, keys, values;
};

template <class T>
struct KernelMemory;

/// Rotary positions as the kernel applies them: rows (count × head size, contiguous) at
/// positions first … first + count − 1 rotated in place. The caller (core/attention.hpp) points
/// it at its Rope, so that the kernel needs no public type.
template <class T>
struct RotateRows {
    const void* rope = nullptr;
    void (*rotate)(const void* rope, T* rows, Index count, Index first_position) = nullptr;

    explicit operator bool() const { return rotate != nullptr; }
    void operator()(T* rows, Index count, Index first_position) const { rotate(rope, rows, count, first_position); }
};

/// What the kernel computes; the views stay owned by the caller.
template <class T>
struct FusedProblem {
    Index heads = 0;
    /// Grouped-query attention: query head h reads key/value head h / (heads / key_value_heads);
    /// 0 means heads. It must divide heads. inputs stay one per query head, each viewing its
    /// group's keys and values, and each key/value head is prepared once.
    Index key_value_heads = 0;
    Index queries = 0;     ///< query rows per head
    Index keys = 0;        ///< key rows per head
    Index depth = 0;       ///< query/key size d
    Index value_size = 0;  ///< dv
    bool causal = true;
    Index first_position = 0;  ///< position of query row 0 (of every row when folded_heads > 0)
    T scale = T(1);
    /// Sliding window: if > 0, a query at position p sees only keys j > p − window (with causal,
    /// the `window` keys up to its own); every key block wholly before that is skipped. 0: none.
    Index window = 0;
    /// Soft cap: if > 0, each scaled score s becomes score_cap · tanh(s / score_cap) before the
    /// masks and the softmax (kernel::soft_cap). 0: none.
    T score_cap = T(0);
    RotateRows<T> rope;  ///< RoPE on queries and keys, if set
    int threads = 1;
    Workers* workers = nullptr;         ///< kept threads to run on (then at most workers->size() of them)
    std::vector<HeadInputs<T>> inputs;  ///< one per head
    T* outputs = nullptr;               ///< heads × (queries × value_size), laid out as the strides say;
                                        ///< null: statistics (and log-sum-exps) only, no values read
    Index output_row_stride = 0;        ///< between an output's rows; 0: value_size (contiguous rows)
    Index output_head_stride = 0;       ///< between heads' outputs; 0: queries × the row stride
    T* weights = nullptr;               ///< heads × (queries × keys) as the strides say, or null (streaming)
    Index weights_row_stride = 0;       ///< between a head's weight rows; 0: keys (contiguous rows)
    Index weights_head_stride = 0;      ///< between heads' weights; 0: queries × the row stride
    bool weights_zeroed = false;        ///< the weights buffer is already all zero
    T* log_sum_exp = nullptr;           ///< heads × queries: each row's log Σ exp(score), or null
    Index log_sum_exp_head_stride = 0;  ///< between heads' rows; 0: queries
    const StatisticsTarget<T>* statistics = nullptr;  ///< head statistics to measure, or null
    KernelMemory<T>* memory = nullptr;                ///< working memory kept by the caller, or null
    /// Decoding: with at most kDecodeRows query rows per head and neither weights (unless
    /// weights_when_decoding) nor statistics asked, score each row against the keys along d
    /// (decode_task). The streaming layout puts queries across a packet's lanes, which one new
    /// position would leave mostly idle. Agrees with the streaming path to rounding, not bit for
    /// bit; ignored where it does not apply.
    bool few_queries = false;
    /// With few_queries, kept weights too take the decoding route: each row's scores, normalised
    /// once its softmax is final, to rounding of the exact path's (which first copies every key
    /// into panels: most of a decoding step's attention over a long cache).
    bool weights_when_decoding = false;
    /// If > 0, each head's query rows are this many query heads at one position (attend_cache's
    /// folded step): row i of head h is query head h·folded_heads + i, for error messages.
    Index folded_heads = 0;
    /// Attention on bfloat16 numbers (detail/kernels/bfloat16_attention.hpp): the keys and values
    /// must be bfloat16 numbers already; the scaled queries and each unnormalised weight are
    /// rounded to bfloat16, and the streaming path multiplies pairs where the CPU has AVX-512 BF16.
    bool bfloat16 = false;
    Index first_head = 0;  ///< the caller's number for head 0, for error messages
    Index first_row = 0;   ///< the caller's number for query row 0, for error messages

    /// Head h's output row i (value_size entries).
    T* output_row(Index h, Index i) const {
        const Index row = output_row_stride != 0 ? output_row_stride : value_size;
        const Index head = output_head_stride != 0 ? output_head_stride : queries * row;
        return outputs + h * head + i * row;
    }

    Index weights_row() const { return weights_row_stride != 0 ? weights_row_stride : keys; }
    /// Head h's weights row i (keys entries; the rest of a longer row is never written).
    T* weights_at(Index h, Index i) const {
        const Index head = weights_head_stride != 0 ? weights_head_stride : queries * weights_row();
        return weights + h * head + i * weights_row();
    }

    T& log_sum_exp_at(Index h, Index i) const {
        return log_sum_exp[h * (log_sum_exp_head_stride != 0 ? log_sum_exp_head_stride : queries) + i];
    }

    /// Reports NaN or +∞ among the scores of head h's query row i, in the caller's numbering.
    [[noreturn]] void bad_scores(Index h, Index i) const;

    /// Query heads per key/value head.
    Index group() const { return key_value_heads != 0 ? heads / key_value_heads : 1; }

    /// Keys first_visible(i) … allowed(i) − 1 are visible to query row i.
    Index allowed(Index i) const { return causal ? std::min(keys, i + first_position + 1) : keys; }

    /// Position of query row i: first_position + i, or first_position for every row of a
    /// folded problem (its rows are query heads at one position).
    Index position(Index i) const { return folded_heads > 0 ? first_position : first_position + i; }

    /// The first key query row i sees: 0, or with a window the first after position(i) − window.
    Index first_visible(Index i) const { return window > 0 ? std::clamp<Index>(position(i) - window + 1, 0, keys) : 0; }

    /// The first row, from 0, whose window has passed `key` (first_visible(row) > key): rows
    /// from there on do not see it. queries if none (always, without a window).
    Index first_row_past(Index key) const {
        if (window <= 0) return queries;
        if (folded_heads > 0) return first_visible(0) > key ? 0 : queries;
        return std::clamp<Index>(key + window - first_position, 0, queries);
    }
};

template <class T>
void FusedProblem<T>::bad_scores(Index h, Index i) const {
    const Index head = folded_heads > 0 ? h * folded_heads + i : h;
    const Index row = folded_heads > 0 ? 0 : i;
    throw numeric_error(message("attention: the scores of query row ", first_row + row, " (head ", first_head + head,
                                ") contain NaN or +infinity"));
}

/// Useful FLOPs an extra thread must get to pay for starting it and handing it work;
/// below this the call stays on one thread (docs/DESIGN.md: how it was tuned).
inline constexpr double kFlopsPerExtraThread = 5e7;
/// Bytes of distinct keys and values an extra thread must get to pay for starting it, when
/// reading them from memory takes longer than the arithmetic (decoding: one query row per head
/// over a long cache): as long to read at one core's memory rate as a thread takes to start.
inline constexpr double kBytesPerExtraThread = 2e6;

template <class T>
using AlignedBuffer = Eigen::Matrix<T, Eigen::Dynamic, 1>;

/// Per-head copies, made only where the inputs cannot be read in place.
template <class T>
struct PreparedHead {
    RowMajorView<T> keys, values;    ///< what the tasks read
    RowMajorMatrix<T> rotated_keys;  ///< RoPE: the rotated keys
    AlignedBuffer<T> panels;         ///< exact path: keys in panels of kPanel, each (d × kPanel), zero-padded
    AlignedBuffer<T> padded_values;  ///< values whose rows are not whole packets: zero-padded copy
    /// FusedProblem::bfloat16 on the streaming path with AVX-512 BF16: the keys in pairs of depths
    /// (keys × ⌈d / 2⌉) and the values in pairs of keys (⌈keys / 2⌉ × dv)
    std::vector<std::uint32_t> key_pairs, value_pairs;
};

/// An array in a worker's Scratch: where it starts and how many numbers it holds.
template <class T>
struct ScratchArray {
    T* start = nullptr;
    Index count = 0;
    T* data() const { return start; }
};

/// One worker's working memory, reused by every task the worker runs: arrays in a ScratchBlock.
template <class T>
struct Scratch {
    ScratchArray<T> queries;  ///< streaming: (d × kQueryBlock) queriesᵀ; exact: (kQueryBlock × d)
    ScratchArray<T> scores;   ///< streaming: (kKeyBlock × kQueryBlock) scoresᵀ
    ScratchArray<T> output;   ///< streaming: (dv × kQueryBlock) outputᵀ; else kQueryBlock × padded dv
    ScratchArray<T> tile;     ///< exact: kValueRows × kPanel, for stores past a row's end
    ScratchArray<T> largest, total, factor;  ///< kQueryBlock each
    ScratchArray<T> sight;                   ///< statistics: SightSum::rows × kQueryBlock running sums
    ScratchArray<T> pairs;  ///< bfloat16 pairs: (kKeyBlock / 2 + 1) × kQueryBlock weightsᵀ in pairs of keys
};

/// Space between one worker's scratch arrays and the next worker's, never written. Closer, they
/// slow both workers down: on the Zen 5 of docs/bench/2026-12-05-epyc-zen5-avx512/scratch_gap the
/// streaming kernel on two threads ran at 0.85× twice its one-thread rate with the second
/// worker's arrays right after the first's, at 0.94–0.95× with them 64 KiB apart (docs/DESIGN.md,
/// Threads). It costs address space only.
inline constexpr std::size_t kScratchGapBytes = std::size_t(64) << 10;

/// Every worker's Scratch, in one allocation made by the caller of the kernel (memory a new
/// thread allocates comes from a fresh malloc arena, and its first-touch page faults would cost
/// more than small problems take). Each array is cache-line aligned; workers' arrays are
/// kScratchGapBytes apart. lay_out() allocates only when the block must grow. The numbers are
/// working values, not part of a workspace's state: a copy is laid out afresh by its next call.
template <class T>
class ScratchBlock {
public:
    /// How many numbers each array holds (0: not used by this call).
    struct Counts {
        Index queries = 0, scores = 0, output = 0, tile = 0, largest = 0, total = 0, factor = 0, sight = 0, pairs = 0;
    };

    ScratchBlock() = default;
    ScratchBlock(const ScratchBlock&) {}
    ScratchBlock& operator=(const ScratchBlock&) { return *this; }
    ScratchBlock(ScratchBlock&& other) noexcept { swap(other); }
    ScratchBlock& operator=(ScratchBlock&& other) noexcept {
        swap(other);
        return *this;
    }
    ~ScratchBlock() { std::free(block_); }

    /// Points `workers` workers' arrays into the block, growing it first if they need more room.
    void lay_out(int workers, const Counts& counts) {
        workers = std::max(workers, 1);
        const Index Counts::*const members[] = {&Counts::queries, &Counts::scores,  &Counts::output,
                                                &Counts::tile,    &Counts::largest, &Counts::total,
                                                &Counts::factor,  &Counts::sight,   &Counts::pairs};
        ScratchArray<T> Scratch<T>::*const arrays[] = {&Scratch<T>::queries, &Scratch<T>::scores,  &Scratch<T>::output,
                                                       &Scratch<T>::tile,    &Scratch<T>::largest, &Scratch<T>::total,
                                                       &Scratch<T>::factor,  &Scratch<T>::sight,   &Scratch<T>::pairs};
        std::size_t one = 0;  // one worker's arrays
        for (const auto member : members) one += round_to_line(std::size_t(counts.*member) * sizeof(T));
        const std::size_t stride = one + kScratchGapBytes;
        const std::size_t bytes = kLine + std::size_t(workers - 1) * stride + one;  // kLine: to align the first
        if (bytes > bytes_) {
            void* block = std::malloc(bytes);
            if (!block) throw std::bad_alloc();
            std::free(block_);
            block_ = block;
            bytes_ = bytes;
        }
        if (workers_.size() < std::size_t(workers)) workers_.resize(std::size_t(workers));
        const std::uintptr_t first = round_to_line(reinterpret_cast<std::uintptr_t>(block_));
        for (int w = 0; w < workers; ++w) {
            auto* next = reinterpret_cast<unsigned char*>(first + std::size_t(w) * stride);
            for (std::size_t a = 0; a < std::size(arrays); ++a) {
                ScratchArray<T>& array = workers_[std::size_t(w)].*arrays[a];
                array.start = reinterpret_cast<T*>(next);
                array.count = counts.*members[a];
                next += round_to_line(std::size_t(array.count) * sizeof(T));
            }
        }
    }

    /// Worker w's arrays, as the last lay_out() placed them.
    const Scratch<T>& operator[](int w) const { return workers_[std::size_t(w)]; }

private:
    static constexpr std::size_t kLine = 64;
    static constexpr std::size_t round_to_line(std::size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }
    void swap(ScratchBlock& other) noexcept {
        std::swap(workers_, other.workers_);
        std::swap(block_, other.block_);
        std::swap(bytes_, other.bytes_);
    }

    std::vector<Scratch<T>> workers_;
    void* block_ = nullptr;  ///< from malloc
    std::size_t bytes_ = 0;
};

/// The running sums of the streaming statistics, each kQueryBlock long in Scratch::sight: the
/// linear ones rescaled like the output, the entropy's Σ p·(s − m) as online_softmax says.
struct SightSum {  // row indices into Scratch::sight
    static constexpr Index previous = 0, first = 1, self = 2, back = 3, markers = 4, distance = 5, best = 6,
                           best_key = 7, entropy = 8;
    static constexpr Index rows = 9;
};

/// The kernel's working memory: kept by a caller (attn::AttentionWorkspace) so that repeated
/// calls of the same size allocate nothing, or made for one call.
template <class T>
struct KernelMemory {
    std::vector<PreparedHead<T>> prepared;
    ScratchBlock<T> scratch;
    std::vector<Index> cost, order;
    std::vector<HeadInputs<T>> inputs;  ///< lent to a FusedProblem while a call builds it
};

/// Lends `owner`'s capacity (a workspace's inputs) to `borrower` (a problem's) for a scope, emptied,
/// and hands it back when the scope ends, by an exception too: a call that throws leaves the
/// workspace as able to serve the next call without allocating.
template <class T>
class LentInputs {
public:
    LentInputs(std::vector<HeadInputs<T>>& borrower, std::vector<HeadInputs<T>>* owner)
        : borrower_(borrower), owner_(owner) {
        if (owner_) borrower_.swap(*owner_);
        borrower_.clear();
    }
    ~LentInputs() {
        if (owner_) borrower_.swap(*owner_);
    }
    LentInputs(const LentInputs&) = delete;
    LentInputs& operator=(const LentInputs&) = delete;

private:
    std::vector<HeadInputs<T>>& borrower_;
    std::vector<HeadInputs<T>>* owner_;
};

namespace kernel {

namespace ei = Eigen::internal;

inline Index round_up(Index value, Index multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

/// o(0 … rows, 0 … padded) (+)= w · v over `count` keys: w(r, j) = w[r·w_row + j·w_step],
/// v row-major (row stride v_row), padded a whole number of packets, o row stride o_row.
template <class T>
void weights_times_values(Index rows, const T* w, Index w_row, Index w_step, Index count, const T* v, Index v_row,
                          Index padded, T* o, Index o_row, bool accumulate) {
    using Tiling = KernelTiling<T>;
    using Run = Tiles<T, Tiling::kValueRows, Tiling::kValuePackets>;
    for (Index r = 0; r < rows; r += Tiling::kValueRows) {
        const int tile_rows = int(std::min<Index>(Tiling::kValueRows, rows - r));
        for (Index col = 0; col < padded; col += Tiling::kPanel) {
            const int packets = int(std::min<Index>(Tiling::kPanel, padded - col) / Tiling::kLanes);
            Run::run(tile_rows, packets, w + r * w_row, w_row, w_step, v + col, v_row, count, o + r * o_row + col,
                     o_row, accumulate);
        }
    }
}

/// Asks for the cache lines of `rows` rows of `count` numbers, `stride` apart.
template <class T>
EIGEN_ALWAYS_INLINE void prefetch_rows(const T* first, Index stride, Index rows, Index count) {
    constexpr Index line = 64 / Index(sizeof(T));
    for (Index r = 0; r < rows; ++r)
        for (Index c = 0; c < count; c += line) prefetch(first + r * stride + c);
}

/// Largest of x[0 … count) (count a multiple of the packet size), NaN if any is NaN.
template <class T>
T row_max(const T* x, Index count) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    Packet m = ei::pset1<Packet>(-std::numeric_limits<T>::infinity());
    for (Index j = 0; j < count; j += Tiling::kLanes) m = ei::pmax<Eigen::PropagateNaN>(m, ei::ploadu<Packet>(x + j));
    return ei::predux_max<Eigen::PropagateNaN>(m);
}

/// Scores that softmax cannot turn into weights: NaN or +∞.
template <class T>
bool bad_largest(T largest) {
    return !(largest < std::numeric_limits<T>::infinity());
}

/// exp(y), or exactly 0 where y is below log(smallest normal) (−∞ included): softmax_rows's rule.
template <class Packet>
EIGEN_ALWAYS_INLINE Packet flushed_exp(const Packet& y, const Packet& cutoff, const Packet& zero) {
    return ei::pselect(ei::pcmp_lt(y, cutoff), zero, ei::pexp(y));
}

/// p · 2ⁿ where y ≥ cutoff (or y is NaN), else exactly 0: the last step of exp_nonpositive, for
/// n = round(y / ln 2), so n ≥ −126 wherever the result is kept and 2ⁿ is a normal float.
template <class Packet>
EIGEN_ALWAYS_INLINE Packet times_power_of_two(const Packet& p, const Packet& n, const Packet& y, const Packet& cutoff,
                                              const Packet& zero) {
#ifdef EIGEN_VECTORIZE_AVX512
    if constexpr (std::is_same_v<typename ei::unpacket_traits<Packet>::type, float> &&
                  ei::unpacket_traits<Packet>::size == 16) {  // Packet16f
        // AVX-512 scales by 2ⁿ and zeroes the flushed lanes in one instruction each (the same bits
        // as the product below: both are p · 2ⁿ rounded once): two of the exponential's ~17
        // vector operations instead of six, on the ports the multiply-adds need.
        const __mmask16 kept = _mm512_cmp_ps_mask(y, cutoff, _CMP_NLT_UQ);
        return _mm512_maskz_scalef_ps(kept, p, n);
    }
#endif
    using PacketI = typename ei::unpacket_traits<Packet>::integer_packet;
    // 2ⁿ from its exponent bits
    const PacketI biased = ei::padd(ei::pcast<Packet, PacketI>(n), ei::pset1<PacketI>(127));
    const Packet scale = ei::preinterpret<Packet>(ei::plogical_shift_left<23>(biased));
    return ei::pselect(ei::pcmp_lt(y, cutoff), zero, ei::pmul(p, scale));
}

/// exp(y) for y ≤ 0, exactly 0 below log(smallest normal) (−∞ included), NaN for NaN: the exact
/// path's exponential (exp_of_difference; the streaming softmax takes exp_streamed). For float
/// packets a Cody–Waite reduction and the cephes polynomial Eigen uses, without Eigen's clamping
/// (not needed for y ≤ 0, and it would hide a NaN, which must reach the row's sum to be
/// reported); for other types Eigen's exp.
template <class Packet>
EIGEN_ALWAYS_INLINE Packet exp_nonpositive(const Packet& y, const Packet& cutoff, const Packet& zero) {
    using Scalar = typename ei::unpacket_traits<Packet>::type;
    if constexpr (std::is_same_v<Scalar, float> && ei::unpacket_traits<Packet>::size > 1) {
        const Packet n = ei::print(ei::pmul(y, ei::pset1<Packet>(1.44269504088896341f)));  // round(y / ln 2)
        Packet r = ei::pmadd(n, ei::pset1<Packet>(-0.693359375f), y);  // y − n·ln 2, in two parts
        r = ei::pmadd(n, ei::pset1<Packet>(2.12194440e-4f), r);
        const Packet r2 = ei::pmul(r, r), r3 = ei::pmul(r2, r);
        Packet p = ei::pmadd(ei::pset1<Packet>(1.9875691500E-4f), r, ei::pset1<Packet>(1.3981999507E-3f));
        Packet q = ei::pmadd(ei::pset1<Packet>(4.1665795894E-2f), r, ei::pset1<Packet>(1.6666665459E-1f));
        p = ei::pmadd(p, r, ei::pset1<Packet>(8.3334519073E-3f));
        q = ei::pmadd(q, r, ei::pset1<Packet>(5.0000001201E-1f));
        p = ei::pmadd(p, r3, q);
        p = ei::pmadd(p, r2, ei::padd(r, ei::pset1<Packet>(1.0f)));  // exp(r)
        return times_power_of_two(p, n, y, cutoff, zero);
    } else {
        return flushed_exp(y, cutoff, zero);
    }
}

/// exp(y) for y ≤ 0 as the streaming softmax takes it (online_softmax): exactly 0 below
/// log(smallest normal) (−∞ included), NaN for NaN, exp(0) = 1, and elsewhere within 2.5e-7
/// relative of the exact exponential for float (1.77e-7 measured on every float y with fused
/// multiply-adds, 1.88e-7 without; tests/test_causal_kernel.cpp) — against exp_nonpositive's
/// 1.2e-7, for 11 vector operations a packet instead of 15 (AVX-512), 13 instead of 18 (AVX2).
/// The streaming softmax exponentiates every score, and its exponential was a tenth of the
/// kernel's time (docs/DESIGN.md). Two savings:
///  * n = round(y / ln 2) and 2ⁿ's exponent bits come from one multiply-add: y·log₂e + (1.5·2²³
///    + 127) is rounded to an integer (floats there are 1 apart), whose low mantissa bits hold
///    n + 127, so n is one subtraction away and 2ⁿ one shift (n ≥ −126 wherever the result is
///    kept, so n + 127 fits the exponent field);
///  * exp(r) on |r| ≤ ln 2 / 2 is 1 + r + c₂r² + … + c₅r⁵, Horner, the minimax polynomial of
///    relative error 1.05e-7 with its first two coefficients 1 (exp(0) = 1 exactly), instead
///    of cephes's degree 7 (3e-9, below float's rounding anyway).
/// Other types (double) take exp_nonpositive.
template <class Packet>
EIGEN_ALWAYS_INLINE Packet exp_streamed(const Packet& y, const Packet& cutoff, const Packet& zero) {
    using Scalar = typename ei::unpacket_traits<Packet>::type;
    if constexpr (std::is_same_v<Scalar, float> && ei::unpacket_traits<Packet>::size > 1) {
        const Packet magic = ei::pset1<Packet>(12583039.0f);  // 1.5·2²³ + 127
        const Packet t = ei::pmadd(y, ei::pset1<Packet>(1.44269504088896341f), magic);
        const Packet n = ei::psub(t, magic);                           // round(y / ln 2), exactly
        Packet r = ei::pmadd(n, ei::pset1<Packet>(-0.693359375f), y);  // y − n·ln 2, in two parts
        r = ei::pmadd(n, ei::pset1<Packet>(2.12194440e-4f), r);
        Packet p = ei::pmadd(ei::pset1<Packet>(8.3125248658e-3f), r, ei::pset1<Packet>(4.1890113150e-2f));
        p = ei::pmadd(p, r, ei::pset1<Packet>(1.6667114465e-1f));
        p = ei::pmadd(p, r, ei::pset1<Packet>(4.9999231792e-1f));
        p = ei::pmadd(p, r, ei::pset1<Packet>(1.0f));
        p = ei::pmadd(p, r, ei::pset1<Packet>(1.0f));  // exp(r)
#ifdef EIGEN_VECTORIZE_AVX512
        if constexpr (ei::unpacket_traits<Packet>::size == 16) return times_power_of_two(p, n, y, cutoff, zero);
#endif
        using PacketI = typename ei::unpacket_traits<Packet>::integer_packet;
        const Packet scale = ei::preinterpret<Packet>(ei::plogical_shift_left<23>(ei::preinterpret<PacketI>(t)));
        return ei::pandnot(ei::pmul(p, scale), ei::pcmp_lt(y, cutoff));  // 2ⁿ: n + 127 into the exponent
    } else {
        return exp_nonpositive(y, cutoff, zero);
    }
}

template <class T>
T flushed_exp(T y) {
    return y < std::log(std::numeric_limits<T>::min()) ? T(0) : std::exp(y);
}

/// x[j] = flushed exp(x[j] − shift) for j < count (a multiple of the packet size); returns the sum.
template <class T>
T exp_shifted(T* x, Index count, T shift) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    constexpr int L = Tiling::kLanes;
    if constexpr (L == 1) {
        T sum = 0;
        for (Index j = 0; j < count; ++j) sum += (x[j] = flushed_exp(x[j] - shift));
        return sum;
    } else {
        const Packet s = ei::pset1<Packet>(shift), zero = ei::pset1<Packet>(T(0));
        const Packet cutoff = ei::pset1<Packet>(std::log(std::numeric_limits<T>::min()));
        Packet sum = zero;
        for (Index j = 0; j < count; j += L) {
            const Packet e = flushed_exp(ei::psub(ei::ploadu<Packet>(x + j), s), cutoff, zero);
            ei::pstoreu(x + j, e);
            sum = ei::padd(sum, e);
        }
        return ei::predux(sum);
    }
}

/// flushed exp(x − shift) for x ≤ shift, with x − shift's rounding error put back: exp(y + e) ≈
/// exp(y)·(1 + e), e the exact error of y = x − shift (Knuth's two-sum). Without it a weight is
/// off by up to |x − shift|·2⁻²⁴ relative in float (about 1e-6 for scores 16 apart), and could
/// not be the weights on demand recompute from the row's log-sum-exp (weights_on_demand.hpp).
template <class Packet>
EIGEN_ALWAYS_INLINE Packet exp_of_difference(const Packet& x, const Packet& minus_shift, const Packet& cutoff,
                                             const Packet& zero) {
    const Packet y = ei::padd(x, minus_shift);
    const Packet shift_part = ei::psub(y, x), x_part = ei::psub(y, shift_part);
    const Packet error = ei::padd(ei::psub(x, x_part), ei::psub(minus_shift, shift_part));
    const Packet w = exp_nonpositive(y, cutoff, zero);
    return ei::pmadd(w, ei::pselect(ei::pcmp_eq(w, zero), zero, error), w);  // error is NaN where x = −∞
}

template <class T>
T exp_of_difference(T x, T shift) {
    const T y = x - shift;
    const T w = flushed_exp(y);
    if (w == T(0)) return w;  // error is NaN where x = −∞
    const T shift_part = y - x, x_part = y - shift_part;
    const T error = (x - x_part) + (-shift - shift_part);
    return w + w * error;
}

/// sum += term, Kahan-compensated: `lost` carries what the sum's rounding dropped.
template <class Packet>
EIGEN_ALWAYS_INLINE void add_compensated(Packet& sum, Packet& lost, const Packet& term) {
    const Packet corrected = ei::psub(term, lost), next = ei::padd(sum, corrected);
    lost = ei::psub(ei::psub(next, sum), corrected);
    sum = next;
}

/// x[j] = exp_of_difference(x[j], shift) for j < count (a multiple of the packet size); returns
/// their sum, compensated (Kahan): a plain sum of a few thousand weights in float would be off by
/// up to ~1e-6, and every weight of the row with it. Two sums, for two chains of additions.
template <class T>
T exp_shifted_exactly(T* x, Index count, T shift) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    constexpr int L = Tiling::kLanes;
    if constexpr (L == 1) {
        T sum = 0, lost = 0;
        for (Index j = 0; j < count; ++j) add_compensated(sum, lost, x[j] = exp_of_difference(x[j], shift));
        return sum - lost;
    } else {
        const Packet minus_shift = ei::pset1<Packet>(-shift), zero = ei::pset1<Packet>(T(0));
        const Packet cutoff = ei::pset1<Packet>(std::log(std::numeric_limits<T>::min()));
        Packet sum[2] = {zero, zero}, lost[2] = {zero, zero};
        Index j = 0;
        for (; j + 2 * L <= count; j += 2 * L)
            for (int k = 0; k < 2; ++k) {
                const Packet e = exp_of_difference(ei::ploadu<Packet>(x + j + k * L), minus_shift, cutoff, zero);
                ei::pstoreu(x + j + k * L, e);
                add_compensated(sum[k], lost[k], e);
            }
        if (j < count) {
            const Packet e = exp_of_difference(ei::ploadu<Packet>(x + j), minus_shift, cutoff, zero);
            ei::pstoreu(x + j, e);
            add_compensated(sum[0], lost[0], e);
        }
        add_compensated(sum[0], lost[0], ei::psub(sum[1], lost[1]));
        return ei::predux(sum[0]) - ei::predux(lost[0]);
    }
}

template <class T>
void scale_row(T* x, Index count, T factor) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    const Packet f = ei::pset1<Packet>(factor);
    for (Index j = 0; j < count; j += Tiling::kLanes) ei::pstoreu(x + j, ei::pmul(ei::ploadu<Packet>(x + j), f));
}

/// cap · tanh(x · (1 / cap)) for a packet of floats, on Eigen's vectorised tanh (the rational
/// approximation Eigen's float tanh is, within a few units in the last place); NaN stays NaN
/// (that tanh clamps its argument first, which could turn NaN into a number).
template <class Packet>
EIGEN_ALWAYS_INLINE Packet soft_capped(const Packet& x, const Packet& cap, const Packet& inverse) {
    const Packet capped = ei::pmul(cap, ei::ptanh(ei::pmul(x, inverse)));
    return ei::pselect(ei::pcmp_eq(x, x), capped, x);
}

/// x[j] = cap · tanh(x[j] / cap) for j < count (FusedProblem::score_cap, cap > 0): for float
/// on packets (soft_capped, the last partial packet padded, so every entry takes the same
/// instructions wherever it lies), else std::tanh(x / cap) entry by entry. Either way an
/// entry's result depends on its value alone: the streaming, exact and decoding paths and
/// weights on demand, which lay scores out differently, cap them to the same bits.
template <class T>
void soft_cap(T* x, Index count, T cap) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    constexpr Index L = Tiling::kLanes;
    if constexpr (std::is_same_v<T, float> && L > 1 && ei::packet_traits<T>::HasTanh) {
        const Packet c = ei::pset1<Packet>(cap), inverse = ei::pset1<Packet>(T(1) / cap);
        Index j = 0;
        for (; j + L <= count; j += L) ei::pstoreu(x + j, soft_capped(ei::ploadu<Packet>(x + j), c, inverse));
        if (j < count) {
            T last[L] = {};
            std::copy(x + j, x + count, last);
            ei::pstoreu(last, soft_capped(ei::ploadu<Packet>(last), c, inverse));
            std::copy(last, last + (count - j), x + j);
        }
    } else {
        for (Index j = 0; j < count; ++j) x[j] = cap * std::tanh(x[j] / cap);
    }
}

/// One block of the online softmax for P packets of queries: s (count keys × the packets,
/// row stride `stride`) holds scoresᵀ with −∞ where masked and becomes the unnormalised
/// weights exp(s − m_new); m (running maxima), l (running sums) are updated and factor
/// receives exp(m_old − m_new), by which the partial outputs must be rescaled. A NaN or +∞
/// score makes l NaN (reported when the task ends). With Entropy, e (running Σ p·(s − m),
/// relative to the running maximum) is updated too: e ← factor·(e + (m_old − m_new)·l_old) + Σ p·(s − m_new).
/// With Bfloat16 each weight is rounded to bfloat16 before it is stored and summed.
template <class T, int P, bool Entropy = false, bool Bfloat16 = false>
void online_softmax(T* s, Index stride, Index count, T* m, T* l, T* factor, T* e = nullptr) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    constexpr int L = Tiling::kLanes;
    const T minus_infinity = -std::numeric_limits<T>::infinity();
    const Packet zero = ei::pset1<Packet>(T(0)), minus_inf = ei::pset1<Packet>(minus_infinity);
    const Packet cutoff = ei::pset1<Packet>(std::log(std::numeric_limits<T>::min()));
    Packet largest[P], shift[P], sum[P], moved[P], plogp[P];
    for (int p = 0; p < P; ++p) largest[p] = minus_inf;
    for (Index j = 0; j < count; ++j)
        for (int p = 0; p < P; ++p) largest[p] = ei::pmax(largest[p], ei::ploadu<Packet>(s + j * stride + p * L));
    for (int p = 0; p < P; ++p) {
        const Packet old_m = ei::ploadu<Packet>(m + p * L);
        const Packet new_m = ei::pmax(old_m, largest[p]);
        // exp(m_old − m_new): 0 while nothing was seen (m_old = −∞; also where this block shows
        // nothing either, as a window's first block may: m_new = −∞, and −∞ − −∞ is NaN)
        moved[p] = ei::psub(old_m, new_m);
        ei::pstoreu(factor + p * L,
                    ei::pselect(ei::pcmp_eq(old_m, minus_inf), zero, exp_streamed(moved[p], cutoff, zero)));
        // shift by m_new, or by 0 while every score so far is −∞ (their weights stay 0)
        shift[p] = ei::pselect(ei::pcmp_eq(new_m, minus_inf), zero, new_m);
        ei::pstoreu(m + p * L, new_m);
        sum[p] = zero;
        plogp[p] = zero;
    }
    if constexpr (std::is_same_v<T, float> && L > 1) {
        for (Index j = 0; j < count; ++j)
            for (int p = 0; p < P; ++p) {
                T* x = s + j * stride + p * L;
                const Packet y = ei::psub(ei::ploadu<Packet>(x), shift[p]);
                Packet w = exp_streamed(y, cutoff, zero);
                if constexpr (Bfloat16) w = round_packet_to_bfloat16(w);
                ei::pstoreu(x, w);
                sum[p] = ei::padd(sum[p], w);
                // where w is 0, y may be −∞: clamped, 0·y stays 0
                if constexpr (Entropy) plogp[p] = ei::pmadd(w, ei::pmax(y, cutoff), plogp[p]);
            }
    } else {  // Eigen's exp may turn NaN into a number: count NaN separately
        Packet bad[P];
        for (int p = 0; p < P; ++p) bad[p] = zero;
        for (Index j = 0; j < count; ++j)
            for (int p = 0; p < P; ++p) {
                T* x = s + j * stride + p * L;
                const Packet y = ei::psub(ei::ploadu<Packet>(x), shift[p]);
                Packet w = exp_streamed(y, cutoff, zero);
                if constexpr (Bfloat16) w = round_packet_to_bfloat16(w);
                ei::pstoreu(x, w);
                sum[p] = ei::padd(sum[p], w);
                if constexpr (Entropy) plogp[p] = ei::pmadd(w, ei::pmax(y, cutoff), plogp[p]);
                bad[p] = ei::por(bad[p], ei::pandnot(ei::ptrue(y), ei::pcmp_eq(y, y)));
            }
        for (int p = 0; p < P; ++p)
            sum[p] =
                ei::pselect(ei::pcmp_eq(bad[p], zero), sum[p], ei::pset1<Packet>(std::numeric_limits<T>::quiet_NaN()));
    }
    for (int p = 0; p < P; ++p) {
        const Packet old_l = ei::ploadu<Packet>(l + p * L), f = ei::ploadu<Packet>(factor + p * L);
        if constexpr (Entropy) {
            // (m_old − m_new)·l_old, 0 while nothing was seen (m_old = −∞, l_old = 0)
            const Packet shifted = ei::pselect(ei::pcmp_eq(old_l, zero), zero, ei::pmul(moved[p], old_l));
            ei::pstoreu(e + p * L, ei::pmadd(f, ei::padd(ei::ploadu<Packet>(e + p * L), shifted), plogp[p]));
        }
        ei::pstoreu(l + p * L, ei::padd(ei::pmul(old_l, f), sum[p]));
    }
}

/// online_softmax for 1 … kScorePackets packets, chosen at run time.
template <class T, bool Entropy = false, bool Bfloat16 = false, int P = KernelTiling<T>::kScorePackets>
void online_softmax_packets(int packets, T* s, Index stride, Index count, T* m, T* l, T* factor, T* e = nullptr) {
    if constexpr (P > 1) {
        if (packets < P)
            return online_softmax_packets<T, Entropy, Bfloat16, P - 1>(packets, s, stride, count, m, l, factor, e);
    }
    online_softmax<T, P, Entropy, Bfloat16>(s, stride, count, m, l, factor, e);
}

/// The vectorised part of one block's streaming statistics for P packets of queries: w
/// (count keys × the packets, row stride `stride`) holds the block's weights exp(s − m) of
/// keys at positions key0 …, the queries' positions start at position0; sums (row stride
/// sums_row, one row per SightSum) gain Σ w·(position − key), Σ w over keys ≥ back before
/// the query, and the largest w with its key (the first of equals).
template <class T, int P>
void block_statistics(const T* w, Index stride, Index count, T key0, T position0, T back, T* sums, Index sums_row) {
    using Packet = typename KernelTiling<T>::Packet;
    constexpr int L = KernelTiling<T>::kLanes;
    Packet distance[P], far[P], best[P], best_key[P], position[P];
    for (int p = 0; p < P; ++p) {
        distance[p] = ei::ploadu<Packet>(sums + SightSum::distance * sums_row + p * L);
        far[p] = ei::ploadu<Packet>(sums + SightSum::back * sums_row + p * L);
        best[p] = ei::ploadu<Packet>(sums + SightSum::best * sums_row + p * L);
        best_key[p] = ei::ploadu<Packet>(sums + SightSum::best_key * sums_row + p * L);
        position[p] = ei::plset<Packet>(position0 + T(p * L));
    }
    for (Index j = 0; j < count; ++j) {
        const Packet key = ei::pset1<Packet>(key0 + T(j)), reach = ei::pset1<Packet>(key0 + T(j) + back);
        for (int p = 0; p < P; ++p) {
            const Packet x = ei::ploadu<Packet>(w + j * stride + p * L);
            distance[p] = ei::pmadd(x, ei::psub(position[p], key), distance[p]);
            far[p] = ei::padd(far[p], ei::pand(ei::pcmp_le(reach, position[p]), x));
            const Packet larger = ei::pcmp_lt(best[p], x);
            best[p] = ei::pselect(larger, x, best[p]);
            best_key[p] = ei::pselect(larger, key, best_key[p]);
        }
    }
    for (int p = 0; p < P; ++p) {
        ei::pstoreu(sums + SightSum::distance * sums_row + p * L, distance[p]);
        ei::pstoreu(sums + SightSum::back * sums_row + p * L, far[p]);
        ei::pstoreu(sums + SightSum::best * sums_row + p * L, best[p]);
        ei::pstoreu(sums + SightSum::best_key * sums_row + p * L, best_key[p]);
    }
}

template <class T, int P = KernelTiling<T>::kScorePackets>
void block_statistics_packets(int packets, const T* w, Index stride, Index count, T key0, T position0, T back, T* sums,
                              Index sums_row) {
    if constexpr (P > 1) {
        if (packets < P)
            return block_statistics_packets<T, P - 1>(packets, w, stride, count, key0, position0, back, sums, sums_row);
    }
    block_statistics<T, P>(w, stride, count, key0, position0, back, sums, sums_row);
}

/// m + log l rounded once (in double: each lse is a row's only record of its sum, which weights on
/// demand divide by); −∞ if l = 0.
template <class T>
T log_sum_exp(T m, T l) {
    return T(double(m) + std::log(double(l)));
}

/// One block's streaming statistics for the c_rows queries of the chunk at column c0 (row i0 + c0
/// of the task first): the running sums are rescaled by alpha (as the output is), then gain the
/// block's weights w (scoresᵀ after online_softmax, row stride `width`, keys j0 … j0 + count − 1).
template <class T>
void sight_block(const FusedProblem<T>& problem, const StatisticsTarget<T>& target, const T* w, Index width,
                 Index count, Index j0, Index i0, Index c0, Index c_rows, int packets, const T* alpha, T* sums) {
    for (Index c = c0; c < c0 + c_rows; ++c)
        if (alpha[c] != T(1))
            for (Index sum : {SightSum::previous, SightSum::first, SightSum::self, SightSum::back, SightSum::markers,
                              SightSum::distance, SightSum::best})
                sums[sum * width + c] *= alpha[c];
    const Index position0 = problem.first_position + i0 + c0;
    block_statistics_packets(packets, w + c0, width, count, T(j0), T(position0), T(target.back), sums + c0, width);
    const Index* markers_begin = std::lower_bound(target.markers, target.markers + target.marker_count, j0);
    const Index* markers_end = std::lower_bound(markers_begin, target.markers + target.marker_count, j0 + count);
    for (Index c = c0; c < c0 + c_rows; ++c) {
        const Index position = position0 + c - c0;
        const auto weight = [&](Index key) { return key >= j0 && key < j0 + count ? w[(key - j0) * width + c] : T(0); };
        sums[SightSum::previous * width + c] += weight(position - 1);
        sums[SightSum::first * width + c] += weight(0);
        sums[SightSum::self * width + c] += weight(position);
        for (const Index* marker = markers_begin; marker != markers_end; ++marker) {
            const T x = w[(*marker - j0) * width + c];  // 0 where the marker is hidden
            sums[SightSum::markers * width + c] += x;
            if (target.back_excludes_markers && *marker <= position - target.back)
                sums[SightSum::back * width + c] -= x;
        }
    }
}

/// Row i of the task's statistics from its running sums (column i) and sum l, into row `row` of head h.
template <class T>
void finish_sight(const StatisticsTarget<T>& target, const T* sums, Index width, Index i, T l, Index h, Index row) {
    const T inverse = l > T(0) ? T(1) / l : T(0);  // l = 0: every visible score −∞, all zero
    const auto mean = [&](Index sum) { return sums[sum * width + i] * inverse; };
    target.at(StatisticPlane::previous, h, row) = mean(SightSum::previous);
    target.at(StatisticPlane::first, h, row) = mean(SightSum::first);
    target.at(StatisticPlane::self, h, row) = mean(SightSum::self);
    target.at(StatisticPlane::back, h, row) = mean(SightSum::back);
    target.at(StatisticPlane::markers, h, row) = mean(SightSum::markers);
    target.at(StatisticPlane::largest, h, row) = mean(SightSum::best);
    target.at(StatisticPlane::entropy, h, row) = l > T(0) ? std::log(l) - mean(SightSum::entropy) : T(0);
    target.at(StatisticPlane::distance, h, row) = mean(SightSum::distance);
    target.argmax_at(h, row) = Index(sums[SightSum::best_key * width + i]);
}

/// Head h's output row i from its unnormalised sum o (value_size entries, o_step apart) and weight total l.
template <class T>
void finish_output(const FusedProblem<T>& problem, Index h, Index i, const T* o, Index o_step, T l) {
    T* out = problem.output_row(h, i);
    if (l == T(0)) {  // every visible score was −∞: a zero output, as softmax_rows gives
        std::fill(out, out + problem.value_size, T(0));
        return;
    }
    const T inverse = T(1) / l;
    for (Index c = 0; c < problem.value_size; ++c) out[c] = o[c * o_step] * inverse;
}

/// Head h's output rows i0 … i0 + rows − 1 from their unnormalised sums oᵀ (dv × rows, row stride
/// o_row, scaled in place) and weight totals l, as finish_output gives them (the same products
/// o · (1 / l)): oᵀ's columns scaled by 1 / l a packet of rows at a time, then transposed into
/// place. inverse: room for `rows` numbers, rounded up to whole packets.
template <class T>
void finish_outputs(const FusedProblem<T>& problem, Index h, Index i0, Index rows, T* ot, Index o_row, const T* l,
                    T* inverse) {
    using Packet = typename KernelTiling<T>::Packet;
    constexpr Index L = KernelTiling<T>::kLanes;
    const Index dv = problem.value_size, padded = round_up(rows, L);
    for (Index i = 0; i < padded; ++i) inverse[i] = i < rows && l[i] != T(0) ? T(1) / l[i] : T(0);
    for (Index c = 0; c < dv; ++c)
        for (Index i = 0; i < padded; i += L)
            ei::pstoreu(ot + c * o_row + i,
                        ei::pmul(ei::ploadu<Packet>(ot + c * o_row + i), ei::ploadu<Packet>(inverse + i)));
    transpose(ot, o_row, dv, rows, problem.output_row(h, i0),
              problem.output_row_stride != 0 ? problem.output_row_stride : dv);
    for (Index i = 0; i < rows; ++i)
        if (l[i] == T(0)) {  // every visible score was −∞: a zero output, as softmax_rows gives
            T* out = problem.output_row(h, i0 + i);
            std::fill(out, out + dv, T(0));
        }
}

/// A kept row of weights from its scores: exp(score − largest) / total for the visible keys
/// first … visible − 1, exactly 0 for the rest of the row's `keys` (decode_task's, once a row's
/// largest score and total are final).
template <class T>
void weights_from_scores(T* row, Index first, Index visible, Index keys, T largest, T total, bool bfloat16) {
    if (total == T(0)) {  // every visible score was −∞: every weight 0, as softmax_rows gives
        std::fill(row, row + keys, T(0));
        return;
    }
    std::fill(row, row + first, T(0));
    T* shown = row + first;
    const Index count = visible - first, whole = count / KernelTiling<T>::kLanes * KernelTiling<T>::kLanes;
    exp_shifted(shown, whole, largest);
    for (Index j = whole; j < count; ++j) shown[j] = flushed_exp(shown[j] - largest);
    if (bfloat16) round_to_bfloat16(shown, count);  // as the weights that were summed
    const T inverse = T(1) / total;
    for (Index j = 0; j < count; ++j) shown[j] *= inverse;
    std::fill(row + visible, row + keys, T(0));
}

/// oᵀ(c, i) += Σ_j v(j, c) · w(j, i) for the dv columns c of the values and `packets` packets of
/// queries i: w = weightsᵀ (count keys × the packets, row stride w_row), v row-major (row stride
/// v_row), oᵀ (dv × the packets, row stride o_row). The streaming output, on the scores' tile:
/// value columns take the keys' place, broadcast, and the weights are loaded whole packets at a
/// time, as the queries are; each entry is one fused multiply-add chain over the keys in order.
template <class T>
void values_times_weights(Index dv, int packets, const T* w, Index w_row, Index count, const T* v, Index v_row, T* ot,
                          Index o_row) {
    using Tiling = KernelTiling<T>;
    using Run = Tiles<T, Tiling::kScoreKeys, Tiling::kScorePackets>;
    for (Index c = 0; c < dv; c += Tiling::kScoreKeys)
        Run::run(int(std::min<Index>(Tiling::kScoreKeys, dv - c)), packets, v + c, 1, v_row, w, w_row, count,
                 ot + c * o_row, o_row, true);
}

/// oᵀ(c, i) *= factor(i) for c < dv over `packets` packets of queries (row stride o_row); a packet
/// whose factors are all 1 (the running maxima did not grow) is left as it is.
template <class T>
void scale_columns(T* ot, Index o_row, Index dv, int packets, const T* factor) {
    using Tiling = KernelTiling<T>;
    using Packet = typename Tiling::Packet;
    constexpr Index L = Tiling::kLanes;
    for (int p = 0; p < packets; ++p) {
        const T* f = factor + p * L;
        if (std::all_of(f, f + L, [](T x) { return x == T(1); })) continue;
        const Packet scale = ei::ploadu<Packet>(f);
        for (Index c = 0; c < dv; ++c) {
            T* x = ot + c * o_row + p * L;
            ei::pstoreu(x, ei::pmul(ei::ploadu<Packet>(x), scale));
        }
    }
}

/// Rows [i0, i1) of head h's queries, rotated and scaled, into dst (row-major, row stride d).
template <class T>
void load_queries(const FusedProblem<T>& problem, Index h, Index i0, Index i1, T* dst) {
    const Index d = problem.depth, rows = i1 - i0;
    const RowMajorView<T>& q = problem.inputs[std::size_t(h)].queries;
    Eigen::Map<RowMajorMatrix<T>> block(dst, rows, d);
    block = Eigen::Map<const RowMajorMatrix<T>, 0, Eigen::OuterStride<>>(q.data + i0 * q.stride, rows, d,
                                                                         Eigen::OuterStride<>(q.stride));
    if (problem.rope) problem.rope(dst, rows, problem.first_position + i0);
    block *= problem.scale;
    if (problem.bfloat16) round_to_bfloat16(dst, rows * d);
}

}  // namespace kernel

/// Phase 0, one head: rotated keys (RoPE), key panels (the exact path's, if `panels`), padded
/// values (if needed), keys and values in bfloat16 pairs (the streaming path's, if `pairs`).
template <class T>
void prepare_head(const FusedProblem<T>& problem, Index h, PreparedHead<T>& out, bool panels, bool pairs) {
    using Tiling = KernelTiling<T>;
    const Index d = problem.depth, n = problem.keys, dv = problem.value_size;
    const HeadInputs<T>& in = problem.inputs[std::size_t(h)];
    out.keys = in.keys;
    if (problem.rope) {
        out.rotated_keys = Eigen::Map<const RowMajorMatrix<T>, 0, Eigen::OuterStride<>>(
            in.keys.data, n, d, Eigen::OuterStride<>(in.keys.stride));
        problem.rope(out.rotated_keys.data(), n, 0);
        out.keys = {out.rotated_keys.data(), d};
    }
    if (problem.weights && panels) {
        const Index panel = Tiling::kPanel;
        out.panels.setZero(kernel::round_up(n, panel) * d);
        for (Index j = 0; j < n; ++j) {
            const T* key = out.keys.data + j * out.keys.stride;
            T* column = out.panels.data() + (j / panel) * d * panel + (j % panel);
            for (Index c = 0; c < d; ++c) column[c * panel] = key[c];
        }
    }
    out.values = in.values;
    if (dv % Tiling::kLanes != 0) {  // the micro-kernels read whole packets: pad each row
        const Index padded = kernel::round_up(dv, Tiling::kLanes);
        out.padded_values.setZero(n * padded);
        Eigen::Map<RowMajorMatrix<T>>(out.padded_values.data(), n, padded).leftCols(dv) =
            Eigen::Map<const RowMajorMatrix<T>, 0, Eigen::OuterStride<>>(in.values.data, n, dv,
                                                                         Eigen::OuterStride<>(in.values.stride));
        out.values = {out.padded_values.data(), padded};
    }
    if constexpr (std::is_same_v<T, float>) {
        if (pairs) {
            kernel::pairs_of_depths(out.keys.data, out.keys.stride, n, d, out.key_pairs);
            kernel::pairs_of_rows(out.values.data, out.values.stride, n, dv, out.value_pairs);
        }
    }
}

/// Streaming (online softmax) task: query rows [i0, i1) of head h.
template <class T>
void stream_task(const FusedProblem<T>& problem, const PreparedHead<T>& head, Index h, Index i0, Index i1,
                 const Scratch<T>& scratch) {
    using Tiling = KernelTiling<T>;
    constexpr Index lanes = Tiling::kLanes, chunk = Tiling::kChunk, width = Tiling::kQueryBlock;
    constexpr Index block = Tiling::kKeyBlock, tile_keys = Tiling::kScoreKeys;
    constexpr T minus_infinity = -std::numeric_limits<T>::infinity();
    const Index rows = i1 - i0, d = problem.depth, dv = problem.value_size;
    const Index chunks = (rows + chunk - 1) / chunk;
    T* qt = scratch.queries.data();  // (d × width): queriesᵀ
    T* st = scratch.scores.data();   // (block × width): scoresᵀ, then weightsᵀ
    T* ot = scratch.output.data();   // (dv × width): outputᵀ, unnormalised
    T* m = scratch.largest.data();
    T* l = scratch.total.data();
    T* alpha = scratch.factor.data();

    // bfloat16 pairs (FusedProblem::bfloat16 with AVX-512 BF16): queriesᵀ in pairs of depths in
    // qt, weightsᵀ in pairs of keys in wt (as 32-bit lanes), the keys and values the head's pairs
    const bool pairs = kernel::kAttentionPairs<T> && problem.bfloat16;
    const Index depth_pairs = (d + 1) / 2;
    auto* const qt_pairs = reinterpret_cast<std::uint32_t*>(qt);
    auto* const wt = reinterpret_cast<std::uint32_t*>(scratch.pairs.data());
    {
        // queriesᵀ, rotated and scaled; columns past the last row are 0. The output buffer
        // stages the (rows × d) queries: it is not needed yet.
        T* rows_first = scratch.output.data();
        kernel::load_queries(problem, h, i0, i1, rows_first);
        if (pairs) {
            kernel::transposed_query_pairs(reinterpret_cast<const float*>(rows_first), rows, d, qt_pairs, width,
                                           chunks * chunk);
        } else {
            kernel::transpose(rows_first, d, rows, d, qt, width);
            Eigen::Map<RowMajorMatrix<T>>(qt, d, width).middleCols(rows, chunks * chunk - rows).setZero();
        }
    }
    std::fill(m, m + width, minus_infinity);
    std::fill(l, l + width, T(0));
    if (problem.outputs) std::fill(ot, ot + dv * width, T(0));
    const StatisticsTarget<T>* statistics = problem.statistics;
    T* sums = scratch.sight.data();  // (SightSum::rows × width), statistics only
    if (statistics) std::fill(sums, sums + SightSum::rows * width, T(0));

    using ScoreTiles = kernel::Tiles<T, Tiling::kScoreKeys, Tiling::kScorePackets>;
    // Keys first_visible(i0) … end − 1: the task's first row sees the earliest keys (with a
    // window every block before them is skipped) and its last row the latest. The blocks are
    // multiples of kKeyBlock whatever the task's rows, so that a row's online softmax takes the
    // same steps, and gives the same bits, in whichever task it falls (threads, caches).
    const Index end = problem.allowed(i1 - 1);

    for (Index j0 = problem.first_visible(i0) / block * block; j0 < end; j0 += block) {
        for (Index ch = 0; ch < chunks; ++ch) {
            const Index c0 = ch * chunk;                      // first column of the chunk
            const Index c_rows = std::min(chunk, rows - c0);  // its real queries
            // keys lo … lo + count − 1 of the block are the ones some query of the chunk sees
            const Index lo = std::max(j0, problem.first_visible(i0 + c0));
            const Index count = std::min(j0 + block, problem.allowed(i0 + c0 + c_rows - 1)) - lo;
            if (count <= 0) continue;
            const T* keys = head.keys.data + lo * head.keys.stride;
            const int packets = int((c_rows + lanes - 1) / lanes);  // short sequences: fewer packets
            // scoresᵀ(j, i) = keys(j) · queries(i), tile by tile
            for (Index j = 0; j < count; j += tile_keys) {
                if (pairs)
                    kernel::score_pair_tile(int(std::min(tile_keys, count - j)), packets,
                                            head.key_pairs.data() + (lo + j) * depth_pairs, depth_pairs, qt_pairs + c0,
                                            width, reinterpret_cast<float*>(st + j * width + c0), width);
                else
                    ScoreTiles::run(int(std::min(tile_keys, count - j)), packets, keys + j * head.keys.stride,
                                    head.keys.stride, 1, qt + c0, width, d, st + j * width + c0, width, false);
                // A share of what comes next, asked for while the tiles compute: this block's values
                // (read by weights · values below, one cache line per key and tile of value columns)
                // and the next block's keys. A head's keys and values do not fit in L2 beside the
                // others' (1 MiB each at 2,048 positions), so each block's come from L3.
                const Index tile = std::min(tile_keys, count - j);
                if (pairs) {  // the same in pairs: half a tile's pairs of values, and keys' pairs
                    if (ch == 0 && problem.outputs)
                        kernel::prefetch_rows(head.value_pairs.data() + (lo + j) / 2 * dv, dv, (tile + 1) / 2, dv);
                    if (ch == chunks - 1 && lo + count + j < end)
                        kernel::prefetch_rows(head.key_pairs.data() + (lo + count + j) * depth_pairs, depth_pairs,
                                              std::min(tile, end - (lo + count + j)), depth_pairs);
                    continue;
                }
                if (ch == 0 && problem.outputs)
                    kernel::prefetch_rows(head.values.data + (lo + j) * head.values.stride, head.values.stride, tile,
                                          dv);
                if (ch == chunks - 1 && lo + count + j < end)
                    kernel::prefetch_rows(head.keys.data + (lo + count + j) * head.keys.stride, head.keys.stride,
                                          std::min(tile, end - (lo + count + j)), d);
            }
            if (problem.score_cap > T(0))  // before the masks, as the chapter's steps do it
                for (Index j = 0; j < count; ++j)
                    kernel::soft_cap(st + j * width + c0, packets * lanes, problem.score_cap);
            // causal mask: key lo + j is hidden from queries before position lo + j
            if (problem.causal) {
                const Index first_hiding = std::max<Index>(0, problem.first_position + i0 + c0 - lo + 1);
                for (Index j = first_hiding; j < count; ++j) {
                    const Index hidden = std::min(c_rows, lo + j - problem.first_position - i0 - c0);
                    std::fill(st + j * width + c0, st + j * width + c0 + hidden, minus_infinity);
                }
            }
            // window: key lo + j is hidden from the chunk's queries whose window has passed it
            if (problem.window > 0) {
                const Index passed = std::min(count, problem.first_visible(i0 + c0 + c_rows - 1) - lo);
                for (Index j = 0; j < passed; ++j) {
                    const Index from = std::clamp<Index>(problem.first_row_past(lo + j) - i0 - c0, 0, c_rows);
                    std::fill(st + j * width + c0 + from, st + j * width + c0 + c_rows, minus_infinity);
                }
            }
            // online softmax down the columns, a packet of queries at a time
            T* const entropy = sums + SightSum::entropy * width + c0;
            if (statistics && problem.bfloat16)
                kernel::online_softmax_packets<T, true, true>(packets, st + c0, width, count, m + c0, l + c0,
                                                              alpha + c0, entropy);
            else if (statistics)
                kernel::online_softmax_packets<T, true>(packets, st + c0, width, count, m + c0, l + c0, alpha + c0,
                                                        entropy);
            else if (problem.bfloat16)
                kernel::online_softmax_packets<T, false, true>(packets, st + c0, width, count, m + c0, l + c0,
                                                               alpha + c0);
            else
                kernel::online_softmax_packets(packets, st + c0, width, count, m + c0, l + c0, alpha + c0);
            if (statistics)
                kernel::sight_block(problem, *statistics, st, width, count, lo, i0, c0, c_rows, packets, alpha, sums);
            if (!problem.outputs) continue;  // statistics only (attention_statistics)
            kernel::scale_columns(ot + c0, width, dv, packets, alpha + c0);
            // outputᵀ += valuesᵀ · weightsᵀ
            if (pairs) {  // over pairs of keys from an even one (lo's partner, if any, weighs 0)
                const Index key_pairs =
                    kernel::weight_pairs(reinterpret_cast<const float*>(st + c0), width, packets, lo, count, wt, width);
                kernel::values_times_weight_pairs(dv, packets, wt, width, key_pairs,
                                                  head.value_pairs.data() + (lo / 2) * dv,
                                                  reinterpret_cast<float*>(ot + c0), width);
            } else {
                kernel::values_times_weights(dv, packets, st + c0, width, count,
                                             head.values.data + lo * head.values.stride, head.values.stride, ot + c0,
                                             width);
            }
        }
    }

    for (Index i = 0; i < rows; ++i) {
        if (!std::isfinite(l[i])) problem.bad_scores(h, i0 + i);
        if (problem.log_sum_exp) problem.log_sum_exp_at(h, i0 + i) = kernel::log_sum_exp(m[i], l[i]);
        if (statistics) kernel::finish_sight(*statistics, sums, width, i, l[i], h, i0 + i);
    }
    if (problem.outputs) kernel::finish_outputs(problem, h, i0, rows, ot, width, l, alpha);
}

/// s(r, j) = q(r) · key(j) for R query rows and `count` keys (row stride key_stride), into s
/// (row stride s_row): each key is loaded once for every row, a packet of d at a time, the
/// rows' sums in R registers. packed: the queries' whole packets interleaved, packet p of row r
/// at packed[(p·R + r)·lanes], so that one pointer walks them all; q: the rows (row stride d),
/// for the numbers past the last whole packet.
template <class T, int R>
void score_rows(const T* packed, const T* q, Index d, const T* keys, Index key_stride, Index count, T* s, Index s_row) {
    using Packet = typename KernelTiling<T>::Packet;
    constexpr Index lanes = KernelTiling<T>::kLanes;
    const Index whole = d / lanes * lanes;
    for (Index j = 0; j < count; ++j) {
        const T* key = keys + j * key_stride;
        Packet sum[R];
        for (int r = 0; r < R; ++r) sum[r] = kernel::ei::pset1<Packet>(T(0));
        const T* rows = packed;
        for (Index c = 0; c < whole; c += lanes, rows += R * lanes) {
            const Packet k = kernel::ei::ploadu<Packet>(key + c);
            for (int r = 0; r < R; ++r)
                sum[r] = kernel::ei::pmadd(kernel::ei::ploadu<Packet>(rows + r * lanes), k, sum[r]);
        }
        for (int r = 0; r < R; ++r) {
            T dot = kernel::ei::predux(sum[r]);
            for (Index c = whole; c < d; ++c) dot += q[r * d + c] * key[c];
            s[r * s_row + j] = dot;
        }
    }
}

/// score_rows for 1 … P rows, chosen at run time.
template <class T, int P = int(KernelTiling<T>::kDecodeRows)>
void score_rows_of(int rows, const T* packed, const T* q, Index d, const T* keys, Index key_stride, Index count, T* s,
                   Index s_row) {
    if constexpr (P > 1) {
        if (rows < P) return score_rows_of<T, P - 1>(rows, packed, q, d, keys, key_stride, count, s, s_row);
    }
    score_rows<T, P>(packed, q, d, keys, key_stride, count, s, s_row);
}

/// Decoding task (FusedProblem::few_queries): query rows [i0, i1) of head h, at most kDecodeRows.
/// Keys are read once per block of kDecodeKeys and scored against each row along d, into one
/// scores row per query (keys across a packet's lanes); then the online softmax of
/// stream_task, row by row, and output += weights · values.
template <class T>
void decode_task(const FusedProblem<T>& problem, const PreparedHead<T>& head, Index h, Index i0, Index i1,
                 const Scratch<T>& scratch) {
    using Tiling = KernelTiling<T>;
    constexpr Index lanes = Tiling::kLanes, block = Tiling::kDecodeKeys;
    constexpr T minus_infinity = -std::numeric_limits<T>::infinity();
    const Index rows = i1 - i0, d = problem.depth, dv = problem.value_size;
    const Index padded = kernel::round_up(dv, lanes);
    T* s = scratch.scores.data();             // (rows × block): scores, then weights
    T* o = scratch.output.data();             // (rows × padded)
    T* q = o + Tiling::kDecodeRows * padded;  // (rows × d), rotated and scaled: the output buffer has room
    T* packed = scratch.queries.data();       // the same, whole packets interleaved (score_rows)
    T* m = scratch.largest.data();
    T* l = scratch.total.data();
    T* const weights = problem.weights ? problem.weights_at(h, i0) : nullptr;  // kept: rows × keys
    const Index weights_row = problem.weights_row();
    kernel::load_queries(problem, h, i0, i1, q);
    for (Index c = 0; c + lanes <= d; c += lanes)
        for (Index r = 0; r < rows; ++r)
            std::copy(q + r * d + c, q + r * d + c + lanes, packed + (c * rows + r * lanes));
    std::fill(m, m + rows, minus_infinity);
    std::fill(l, l + rows, T(0));
    std::fill(o, o + rows * padded, T(0));

    const Index end = problem.allowed(i1 - 1);
    for (Index j0 = problem.first_visible(i0); j0 < end; j0 += block) {  // a window skips the keys before
        const Index count = std::min(block, end - j0), whole = kernel::round_up(count, lanes);
        score_rows_of(int(rows), packed, q, d, head.keys.data + j0 * head.keys.stride, head.keys.stride, count, s,
                      block);
        for (Index r = 0; r < rows; ++r) {
            T* row = s + r * block;
            if (problem.score_cap > T(0)) kernel::soft_cap(row, count, problem.score_cap);
            // keys this row may not see (before its window, after its position), and the
            // padding to whole packets: weight exactly 0
            const Index first = std::clamp<Index>(problem.first_visible(i0 + r) - j0, 0, count);
            const Index own = std::max(first, std::min(count, problem.allowed(i0 + r) - j0));
            if (weights) std::copy(row + first, row + own, weights + r * weights_row + j0 + first);  // for the end
            std::fill(row, row + first, minus_infinity);
            std::fill(row + own, row + whole, minus_infinity);
            const T largest = kernel::row_max(row, whole);
            if (kernel::bad_largest(largest)) problem.bad_scores(h, i0 + r);
            const T grown = std::max(m[r], largest);
            if (grown == minus_infinity) {  // nothing visible yet: every weight 0
                std::fill(row, row + count, T(0));
                continue;
            }
            const T factor = m[r] == minus_infinity ? T(0) : kernel::flushed_exp(m[r] - grown);
            m[r] = grown;
            const T sum = kernel::exp_shifted(row, whole, grown);
            l[r] = l[r] * factor + (problem.bfloat16 ? kernel::round_to_bfloat16_and_sum(row, whole) : sum);
            if (factor != T(1)) kernel::scale_row(o + r * padded, padded, factor);
        }
        // a few keys' values at a time: the micro-kernel walks them once per panel of columns,
        // and a whole block's (1,536 × dv) would fall out of the level-2 cache between panels
        for (Index j = 0; j < count; j += Tiling::kDecodeValueKeys)
            kernel::weights_times_values(rows, s + j, block, 1, std::min(Tiling::kDecodeValueKeys, count - j),
                                         head.values.data + (j0 + j) * head.values.stride, head.values.stride, padded,
                                         o, padded, true);
    }

    for (Index r = 0; r < rows; ++r) {
        if (problem.log_sum_exp) problem.log_sum_exp_at(h, i0 + r) = kernel::log_sum_exp(m[r], l[r]);
        if (weights)
            kernel::weights_from_scores(weights + r * weights_row, problem.first_visible(i0 + r),
                                        problem.allowed(i0 + r), problem.keys, m[r], l[r], problem.bfloat16);
        kernel::finish_output(problem, h, i0 + r, o + r * padded, 1, l[r]);
    }
}

/// Exact task, weights kept: query rows [i0, i1) of head h.
template <class T>
void weights_task(const FusedProblem<T>& problem, const PreparedHead<T>& head, Index h, Index i0, Index i1,
                  const Scratch<T>& scratch) {
    using Tiling = KernelTiling<T>;
    constexpr Index group = Tiling::kValueRows, panel = Tiling::kPanel, block = Tiling::kKeyBlock;
    constexpr Index lanes = Tiling::kLanes;
    constexpr T minus_infinity = -std::numeric_limits<T>::infinity();
    using PanelTiles = kernel::Tiles<T, Tiling::kValueRows, Tiling::kValuePackets>;
    const Index rows = i1 - i0, d = problem.depth, dv = problem.value_size, n = problem.keys;
    const Index padded = kernel::round_up(dv, lanes);
    T* weights = problem.weights_at(h, i0);
    const Index stride = problem.weights_row();  // between weight rows
    T* q = scratch.queries.data();               // (rows × d), rotated and scaled
    T* o = scratch.output.data();
    T* tile = scratch.tile.data();
    kernel::load_queries(problem, h, i0, i1, q);

    for (Index g = 0; g < rows; g += group) {
        const Index group_rows = std::min(group, rows - g);
        const Index visible = problem.allowed(i0 + g + group_rows - 1);
        const Index panels = (visible + panel - 1) / panel;
        const Index first_panel = problem.first_visible(i0 + g) / panel;  // a window's first
        // scores of the lower blocks, straight into the weights
        for (Index p = first_panel; p < panels; ++p) {
            const T* keys = head.panels.data() + p * d * panel;
            T* dst = weights + g * stride + p * panel;
            if ((p + 1) * panel <= n) {
                PanelTiles::run(int(group_rows), Tiling::kValuePackets, q + g * d, d, 1, keys, panel, d, dst, stride,
                                false);
            } else {  // the last panel reaches past the row's end: through the tile
                PanelTiles::run(int(group_rows), Tiling::kValuePackets, q + g * d, d, 1, keys, panel, d, tile, panel,
                                false);
                for (Index r = 0; r < group_rows; ++r)
                    std::copy(tile + r * panel, tile + r * panel + (n - p * panel), dst + r * stride);
            }
        }
        // softmax over each row's visible keys first … own − 1; the rest exactly 0
        const Index written = std::min(n, panels * panel);
        for (Index r = g; r < g + group_rows; ++r) {
            T* const row = weights + r * stride;
            const Index first = problem.first_visible(i0 + r), own = problem.allowed(i0 + r);
            std::fill(row + own, row + (problem.weights_zeroed ? written : n), T(0));
            std::fill(row + (problem.weights_zeroed ? first_panel * panel : 0), row + first, T(0));
            T* const shown = row + first;  // the visible keys, count of them
            const Index count = own - first, whole = count / lanes * lanes;
            if (problem.score_cap > T(0)) kernel::soft_cap(shown, count, problem.score_cap);
            T largest = whole > 0 ? kernel::row_max(shown, whole) : minus_infinity;
            for (Index j = whole; j < count; ++j)
                largest = std::isnan(shown[j]) ? shown[j] : std::max(largest, shown[j]);
            if (kernel::bad_largest(largest)) problem.bad_scores(h, i0 + r);
            if (largest == minus_infinity) {  // every visible score −∞: a zero row, as softmax_rows gives
                std::fill(shown, shown + count, T(0));
            } else {
                T sum = kernel::exp_shifted_exactly(shown, whole, largest);
                for (Index j = whole; j < count; ++j) sum += (shown[j] = kernel::exp_of_difference(shown[j], largest));
                if (problem.bfloat16) sum = kernel::round_to_bfloat16_and_sum(shown, count);
                const T inverse = T(1) / sum;
                kernel::scale_row(shown, whole, inverse);
                for (Index j = whole; j < count; ++j) shown[j] *= inverse;
                largest = kernel::log_sum_exp(largest, sum);
            }
            if (problem.log_sum_exp) problem.log_sum_exp_at(h, i0 + r) = largest;
            if (problem.statistics)
                row_statistics(row, own, problem.first_position + i0 + r, *problem.statistics, h, i0 + r);
        }
    }

    // output = weights · values over the lower blocks (with a window, from each group's first key)
    const Index end = problem.allowed(i1 - 1);
    for (Index j0 = problem.first_visible(i0) / block * block; j0 < end; j0 += block) {
        for (Index g = 0; g < rows; g += group) {
            const Index group_rows = std::min(group, rows - g);
            const Index start = problem.first_visible(i0 + g), lo = std::max(j0, start);
            const Index count = std::min(j0 + block, problem.allowed(i0 + g + group_rows - 1)) - lo;
            if (count <= 0) continue;
            kernel::weights_times_values(group_rows, weights + g * stride + lo, stride, 1, count,
                                         head.values.data + lo * head.values.stride, head.values.stride, padded,
                                         o + g * padded, padded, lo > start);
        }
    }
    for (Index r = 0; r < rows; ++r) {
        T* out = problem.output_row(h, i0 + r);
        if (problem.allowed(i0 + r) > problem.first_visible(i0 + r))
            std::copy(o + r * padded, o + r * padded + dv, out);
        else  // nothing visible (a window past the last key): a zero output, as softmax_rows gives
            std::fill(out, out + dv, T(0));
    }
}

/// Runs the kernel on problem.inputs into problem.outputs (and problem.weights).
template <class T>
void fused_attention(const FusedProblem<T>& problem) {
    using Tiling = KernelTiling<T>;
    const Index heads = problem.heads, nq = problem.queries, width = Tiling::kQueryBlock;
    const Index blocks_per_head = (nq + width - 1) / width;
    if (!problem.outputs && (problem.weights || !problem.statistics))
        throw argument_error("attention: without outputs the kernel measures statistics only");
    // (statistics-only problems, without outputs, are streamed: decoding measures no statistics)
    const bool decoding = problem.few_queries && nq <= Tiling::kDecodeRows && !problem.statistics &&
                          (!problem.weights || problem.weights_when_decoding);
    const Index tasks = heads * blocks_per_head;

    if (problem.key_value_heads < 0 || (problem.key_value_heads != 0 && heads % problem.key_value_heads != 0))
        throw shape_error(message("attention: key_value_heads = ", problem.key_value_heads, " does not divide the ",
                                  heads, " query heads"));
    const Index group = problem.group(), key_value_heads = heads / group;

    // Working memory: the caller's, reused (nothing is allocated once it has grown to the
    // size), or this call's.
    KernelMemory<T> local;
    KernelMemory<T>& memory = problem.memory ? *problem.memory : local;

    // Longest tasks first; the useful work decides how many threads are worth starting.
    std::vector<Index>& cost = memory.cost;
    cost.assign(static_cast<std::size_t>(blocks_per_head), 0);
    double flops = 0;
    for (Index b = 0; b < blocks_per_head; ++b) {
        for (Index i = b * width; i < std::min(nq, (b + 1) * width); ++i)
            cost[std::size_t(b)] += problem.allowed(i) - problem.first_visible(i);
        flops += 2.0 * double(cost[std::size_t(b)]) * double(problem.depth + problem.value_size);
    }
    flops *= double(heads);
    std::vector<Index>& order = memory.order;
    order.resize(static_cast<std::size_t>(tasks));
    std::iota(order.begin(), order.end(), Index(0));
    // ties in task order (what a stable sort gives, without its temporary buffer)
    std::sort(order.begin(), order.end(), [&](Index a, Index b) {
        const Index cost_a = cost[std::size_t(a % blocks_per_head)], cost_b = cost[std::size_t(b % blocks_per_head)];
        return cost_a != cost_b ? cost_a > cost_b : a < b;
    });
    // Each key/value head's keys and values come from memory at least once, whatever the rows:
    // with few query rows that, not the arithmetic, takes the time.
    const double bytes = double(key_value_heads) * double(problem.keys - problem.first_visible(0)) *
                         double(problem.depth + problem.value_size) * double(sizeof(T));
    const Index worth = std::max<Index>(1, Index(std::max(flops / kFlopsPerExtraThread, bytes / kBytesPerExtraThread)));
    const Index asked = problem.workers ? problem.workers->size() : problem.threads;
    const int workers = int(std::min<Index>({asked, tasks, worth}));

    std::vector<PreparedHead<T>>& prepared = memory.prepared;
    if (prepared.size() < std::size_t(key_value_heads)) prepared.resize(std::size_t(key_value_heads));
    const Index padded = kernel::round_up(problem.value_size, Tiling::kLanes);
    typename ScratchBlock<T>::Counts counts;
    counts.queries = problem.depth * width;
    counts.output = width * std::max(padded, problem.depth);  // also stages the queries
    counts.largest = counts.total = counts.factor = width;
    if (problem.weights && !decoding)
        counts.tile = Tiling::kValueRows * Tiling::kPanel;
    else
        counts.scores = Tiling::kKeyBlock * width;
    if (problem.statistics) counts.sight = SightSum::rows * width;
    const bool pairs = kernel::kAttentionPairs<T> && problem.bfloat16 && !decoding && !problem.weights;
    if (pairs) counts.pairs = (Tiling::kKeyBlock / 2 + 1) * width;
    ScratchBlock<T>& scratch = memory.scratch;
    scratch.lay_out(workers, counts);

    // Phase 1 prepares every key/value head (rotation, key panels, padded values) from its
    // group's first query head's inputs; phase 2 runs the query blocks, longest first, handed
    // out from a shared counter.
    std::atomic<Index> next_head{0}, next_task{0};
    run_team(problem.workers, workers, [&](int worker, Team& team) {
        for (Index g = next_head++; g < key_value_heads && !team.stopped(); g = next_head++)
            prepare_head(problem, g * group, prepared[std::size_t(g)], !decoding, pairs);
        team.sync();
        const Scratch<T>& mine = scratch[worker];
        for (Index task = next_task++; task < tasks && !team.stopped(); task = next_task++) {
            const Index id = order[std::size_t(task)];
            const Index h = id / blocks_per_head, i0 = (id % blocks_per_head) * width;
            const Index i1 = std::min(nq, i0 + width);
            const PreparedHead<T>& head = prepared[std::size_t(h / group)];
            if (decoding)
                decode_task(problem, head, h, i0, i1, mine);
            else if (problem.weights)
                weights_task(problem, head, h, i0, i1, mine);
            else
                stream_task(problem, head, h, i0, i1, mine);
        }
    });
}

}  // namespace attn::detail

#ifdef ATTN_DETAIL_KERNEL_PRAGMAS_PUSHED
#pragma GCC diagnostic pop
#undef ATTN_DETAIL_KERNEL_PRAGMAS_PUSHED
#endif
