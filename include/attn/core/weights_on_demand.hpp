#pragma once
// Exact attention weights of chosen heads × query rows (and a range of keys), recomputed
// after a streaming pass from the queries, the keys and each row's log-sum-exp, which the
// pass keeps on request (AttentionOptions::keep_log_sum_exp):
//
//   weight(i, j) = exp(score(i, j) − lse(i))
//
// The scores are computed as the fused kernel computes them (the same register tiles, the
// same order of operations, so the same bits), and for float exp(s − lse) is taken in double.
// A row asked for over all the keys it sees is then divided by its sum, which removes lse's
// rounding: such rows are within ~1.3e-7 (float) of the softmax of those scores, and the
// weights path within ~3.3e-7, so the two agree to 1e-6 relative whatever the scores (tested).
// A tile of keys rests on lse alone: half a unit in its last place more (2.4e-7 relative for
// |lse| < 8, 4.8e-7 below 16). Only the chosen rows' scores are formed: rows × range × d
// work, no (queries × keys) storage.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/kernels/causal_kernel.hpp"

namespace attn {

/// attention_rows's result: weights, chosen heads × (chosen rows × range width), and
/// the `_into` call's memory for the next call.
template <class T>
struct WeightRowsResult {
    HeadStack<T> weights;
    /// Per chosen row b, the keys its query could see, visible[b].first … .last − 1 (up to its
    /// own position if causal; from position − window + 1 with a sliding window), in the keys'
    /// numbering. A weight outside is 0 because the key was unreachable, not unattended (a
    /// mask may hide keys inside too).
    std::vector<KeyRange> visible;
    AttentionWorkspace<T> workspace;
};

namespace detail {

/// One head's inputs to weights on demand: queries (nq × d) and keys (nk × d) row-major
/// views, already rotated or not as `rope` says, and its log-sum-exps (nq entries).
template <class T>
struct DemandHead {
    RowMajorView<T> queries, keys;
    const T* log_sum_exp = nullptr;
};

/// What every head of a request shares.
template <class T>
struct DemandShape {
    Index queries = 0, keys = 0, depth = 0;
    Index first = 0, last = 0;  ///< the key range
    T scale = T(1);
    const Rope<T>* rope = nullptr;
    const AllowedMask* mask = nullptr;
    bool causal = true;
    Index first_position = 0;
    Index window = 0;    ///< AttentionOptions::window
    T score_cap = T(0);  ///< AttentionOptions::score_cap
    /// The scaled queries rounded to bfloat16, as the kernel's load_queries rounds them for a
    /// pass on bfloat16 numbers (FusedProblem::bfloat16; the keys must be bfloat16 numbers already)
    bool bfloat16 = false;

    /// Query row i sees keys first_visible(i) … visible(i) − 1 (a mask may hide some of them).
    Index visible(Index i) const { return causal ? std::min(keys, first_position + i + 1) : keys; }
    Index first_visible(Index i) const {
        return window > 0 ? std::clamp<Index>(first_position + i - window + 1, 0, keys) : 0;
    }
};

/// `chosen`, or 0 … count − 1 (kept in `all`) if it is empty.
inline const std::vector<Index>& all_if_empty(const std::vector<Index>& chosen, Index count, std::vector<Index>& all) {
    if (!chosen.empty()) return chosen;
    for (Index i = 0; i < count; ++i) all.push_back(i);
    return all;
}

/// Checks rows and the key range against the shape; resolves last = −1.
inline void check_demand(const char* function, const std::vector<Index>& rows, KeyRange& range, Index queries,
                         Index keys) {
    for (Index i : rows) check_index(function, "row", i, queries);
    if (range.last == -1) range.last = keys;
    if (range.first < 0 || range.first >= range.last || range.last > keys)
        throw argument_error(message(function, ": key range [", range.first, ", ", range.last,
                                     ") is not a non-empty part of [0, ", keys, ")"));
}

/// The chosen rows' weights over keys [first, last) of one head into out
/// (rows × (last − first), row stride out_row).
template <class T>
void demand_head(const char* function, const DemandShape<T>& shape, const DemandHead<T>& head,
                 const std::vector<Index>& rows, T* out, Index out_row, AttentionWorkspace<T>& memory) {
    using Tiling = KernelTiling<T>;
    using PanelTiles = kernel::Tiles<T, Tiling::kValueRows, Tiling::kValuePackets>;
    constexpr Index panel = Tiling::kPanel, group = Tiling::kValueRows;
    const Index d = shape.depth, count = Index(rows.size());
    for (Index r = 0; r < count; ++r) {
        const T lse = head.log_sum_exp[rows[std::size_t(r)]];
        if (std::isnan(lse) || lse == std::numeric_limits<T>::infinity())
            throw argument_error(message(function, ": log_sum_exp of row ", rows[std::size_t(r)], " is ", lse));
    }
    // the chosen queries, rotated and scaled as the kernel's load_queries does
    if (memory.queries.size() < count * d) memory.queries.resize(count * d);
    for (Index r = 0; r < count; ++r) {
        const Index i = rows[std::size_t(r)];
        Eigen::Map<Matrix<T>> query(memory.queries.data() + r * d, 1, d);
        query = Eigen::Map<const Matrix<T>>(head.queries.data + i * head.queries.stride, 1, d);
        if (shape.rope) shape.rope->apply(query, shape.first_position + i);
        query *= shape.scale;
        if (shape.bfloat16) kernel::round_to_bfloat16(query.data(), d);
    }
    if (memory.keys.size() < panel * d) memory.keys.resize(panel * d);
    if (memory.panel.size() < panel * d) memory.panel.resize(panel * d);
    if (memory.tile.size() < group * panel) memory.tile.resize(group * panel);
    T* tile = memory.tile.data();
    for (Index p0 = shape.first; p0 < shape.last; p0 += panel) {
        const Index width = std::min(panel, shape.last - p0);
        // keys p0 … p0 + width − 1, rotated as prepare_head rotates them, as a (d × panel) panel
        Eigen::Map<Matrix<T>> keys(memory.keys.data(), width, d);
        keys = Eigen::Map<const Matrix<T>, 0, Eigen::OuterStride<>>(head.keys.data + p0 * head.keys.stride, width, d,
                                                                    Eigen::OuterStride<>(head.keys.stride));
        if (shape.rope) shape.rope->apply(keys, p0);
        Eigen::Map<Matrix<T>> packed(memory.panel.data(), d, panel);
        packed.leftCols(width) = keys.transpose();
        packed.rightCols(panel - width).setZero();
        for (Index g = 0; g < count; g += group) {
            const Index group_rows = std::min(group, count - g);
            PanelTiles::run(int(group_rows), Tiling::kValuePackets, memory.queries.data() + g * d, d, 1,
                            memory.panel.data(), panel, d, tile, panel, false);
            for (Index r = g; r < g + group_rows; ++r) {
                const Index i = rows[std::size_t(r)];
                T* row = tile + (r - g) * panel;
                const T lse = head.log_sum_exp[i];
                T* dst = out + r * out_row + (p0 - shape.first);
                const Index lo = shape.first_visible(i), visible = shape.visible(i);
                if (lse == -std::numeric_limits<T>::infinity()) {  // a fully masked row: zeros, as softmax_rows gives
                    std::fill(dst, dst + width, T(0));
                    continue;
                }
                // capped as the kernel caps its scores (the same bits whatever the layout)
                if (shape.score_cap > T(0)) kernel::soft_cap(row, width, shape.score_cap);
                if constexpr (std::is_same_v<T, float>) {
                    // s − lse and its exponential in double: lse carries the whole row's sum,
                    // and float rounding of s − lse would add |s − lse|·2⁻²⁴ to every weight
                    Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>> x(row, width);
                    x = (x.template cast<double>() - double(lse)).exp().template cast<float>();
                } else {
                    kernel::exp_shifted(row, panel, lse);
                }
                for (Index j = 0; j < width; ++j) {
                    const Index key = p0 + j;
                    const bool shown = key >= lo && key < visible && (!shape.mask || (*shape.mask)(i, key));
                    dst[j] = shown ? row[j] : T(0);
                }
            }
        }
    }
    // Rows whose every visible key was asked for are divided by their sum (taken in double): that
    // removes the error of lse, rounded to T (half a unit in its last place, 4.8e-7 relative in
    // float for 8 ≤ lse < 16), and leaves each weight within about one rounding of the softmax.
    for (Index r = 0; r < count; ++r) {
        const Index i = rows[std::size_t(r)];
        const Index lo = shape.first_visible(i), visible = shape.visible(i);
        if (shape.first > lo || shape.last < visible) continue;
        T* dst = out + r * out_row + (lo - shape.first);  // keys lo … visible − 1
        double sum = 0;
        for (Index j = 0; j < visible - lo; ++j) sum += double(dst[j]);
        if (sum <= 0) continue;  // a fully masked row stays 0
        const double inverse = 1.0 / sum;
        for (Index j = 0; j < visible - lo; ++j) dst[j] = T(double(dst[j]) * inverse);
    }
}

/// Each chosen row's visible keys (WeightRowsResult::visible), reusing visible's storage.
template <class T>
void visible_keys(const DemandShape<T>& shape, const std::vector<Index>& rows, std::vector<KeyRange>& visible) {
    visible.resize(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const Index i = rows[r], last = shape.visible(i);
        visible[r] = {std::min(shape.first_visible(i), last), last};
    }
}

template <class T>
DemandShape<T> demand_shape(const char* function, Index queries, Index keys, Index depth, KeyRange range,
                            const AttentionOptions<T>& options) {
    if (options.first_position < 0) throw argument_error(message(function, ": first_position must be ≥ 0"));
    check_window_and_cap(function, options);
    if (options.rope && options.rope->head_size() != depth)
        throw shape_error(
            message(function, ": RoPE rotates ", options.rope->head_size(), " numbers per head, queries have ", depth));
    if (options.mask && (options.mask->rows() != queries || options.mask->cols() != keys))
        throw shape_error(message(function, ": mask is ", options.mask->rows(), " × ", options.mask->cols(),
                                  ", expected ", queries, " × ", keys));
    DemandShape<T> shape;
    shape.queries = queries;
    shape.keys = keys;
    shape.depth = depth;
    shape.first = range.first;
    shape.last = range.last;
    shape.scale = options.scale.value_or(default_scale<T>(depth));
    shape.rope = options.rope;
    shape.mask = options.mask;
    shape.causal = options.causal;
    shape.first_position = options.first_position;
    shape.window = options.window;
    shape.score_cap = options.score_cap;
    return shape;
}

}  // namespace detail

/// Exact weights of chosen heads and query rows over a range of keys, into result.weights:
/// queries: heads × (queries × d), keys: heads × (keys × d), log_sum_exp: (heads × queries)
/// as a pass with keep_log_sum_exp returned it with the same options (causal, scale, rope,
/// first_position, window, score_cap, mask) → weights: heads.size() × (rows.size() × range width); weights(a, b,
/// c) is the weight of query rows[b] of head heads[a] on key range.first + c, and visible[b] the
/// keys that row could see (0 outside: unreachable, not unattended). Empty heads or
/// rows mean all of them. result.weights must be empty (then it is allocated) or of that shape;
/// a repeated call of the same shape into the same result allocates nothing.
template <class T>
void attention_rows_into(const HeadStack<T>& queries, const HeadStack<T>& keys, const Matrix<T>& log_sum_exp,
                         const std::vector<Index>& heads, const std::vector<Index>& rows, KeyRange range,
                         const AttentionOptions<T>& options, WeightRowsResult<T>& result) {
    const char* function = "attention_rows";
    if (queries.empty() || keys.empty())
        throw shape_error(detail::message(function, ": queries and keys must not be empty"));
    if (keys.heads() != queries.heads() || keys.cols() != queries.cols())
        throw shape_error(detail::message(function, ": keys are ", keys.heads(), " × (", keys.rows(), " × ",
                                          keys.cols(), "), queries ", queries.heads(), " × (", queries.rows(), " × ",
                                          queries.cols(), "): heads and widths must match"));
    if (log_sum_exp.rows() != queries.heads() || log_sum_exp.cols() != queries.rows())
        throw shape_error(detail::message(function, ": log_sum_exp is ", log_sum_exp.rows(), " × ", log_sum_exp.cols(),
                                          ", expected heads × queries = ", queries.heads(), " × ", queries.rows()));
    std::vector<Index> all_heads, all_rows;
    const std::vector<Index>& head_list = detail::all_if_empty(heads, queries.heads(), all_heads);
    const std::vector<Index>& row_list = detail::all_if_empty(rows, queries.rows(), all_rows);
    for (Index h : head_list) detail::check_index(function, "head", h, queries.heads());
    detail::check_demand(function, row_list, range, queries.rows(), keys.rows());
    const detail::DemandShape<T> shape =
        detail::demand_shape(function, queries.rows(), keys.rows(), queries.cols(), range, options);
    HeadStack<T>& out = result.weights;
    detail::reuse_storage(function, "weights", out, Index(head_list.size()), Index(row_list.size()),
                          range.last - range.first);
    detail::visible_keys(shape, row_list, result.visible);
    AttentionWorkspace<T>& memory = result.workspace;
    for (std::size_t a = 0; a < head_list.size(); ++a) {
        const Index h = head_list[a];
        const detail::DemandHead<T> head{{queries.head(h).data(), queries.cols()},
                                         {keys.head(h).data(), keys.cols()},
                                         log_sum_exp.data() + h * log_sum_exp.cols()};
        detail::demand_head(function, shape, head, row_list, out.head(Index(a)).data(), out.cols(), memory);
    }
}

/// attention_rows_into into a fresh result: weights heads.size() × (rows.size() ×
/// range width).
template <class T>
WeightRowsResult<T> attention_rows(const HeadStack<T>& queries, const HeadStack<T>& keys, const Matrix<T>& log_sum_exp,
                                   const std::vector<Index>& heads, const std::vector<Index>& rows, KeyRange range = {},
                                   const AttentionOptions<T>& options = {}) {
    WeightRowsResult<T> result;
    attention_rows_into(queries, keys, log_sum_exp, heads, rows, range, options, result);
    result.workspace = {};  // the numbers, not the call's memory
    return result;
}

/// One head: queries (queries × d), keys (keys × d), log_sum_exp (1 × queries) as attention()
/// returned it → (rows.size() × range width); empty rows mean all of them.
template <class T>
Matrix<T> attention_rows(const Matrix<T>& queries, const Matrix<T>& keys, const Matrix<T>& log_sum_exp,
                         const std::vector<Index>& rows, KeyRange range = {}, const AttentionOptions<T>& options = {}) {
    const char* function = "attention_rows";
    detail::check_not_empty(function, "queries", queries);
    detail::check_not_empty(function, "keys", keys);
    detail::check_cols(function, "keys", keys, queries.cols(), "keys must be as wide as queries");
    if (log_sum_exp.rows() != 1 || log_sum_exp.cols() != queries.rows())
        throw shape_error(detail::message(function, ": log_sum_exp is ", log_sum_exp.rows(), " × ", log_sum_exp.cols(),
                                          ", expected 1 × ", queries.rows()));
    std::vector<Index> all_rows;
    const std::vector<Index>& row_list = detail::all_if_empty(rows, queries.rows(), all_rows);
    detail::check_demand(function, row_list, range, queries.rows(), keys.rows());
    const detail::DemandShape<T> shape =
        detail::demand_shape(function, queries.rows(), keys.rows(), queries.cols(), range, options);
    Matrix<T> out(Index(row_list.size()), range.last - range.first);
    AttentionWorkspace<T> local;
    detail::demand_head(
        function, shape,
        detail::DemandHead<T>{{queries.data(), queries.cols()}, {keys.data(), keys.cols()}, log_sum_exp.data()},
        row_list, out.data(), out.cols(), local);
    return out;
}

}  // namespace attn
