#pragma once
// What a head does, measured per query row inside the fused kernel's streaming pass, with
// no (queries × keys) storage: the weight on the previous token, the first token, the
// query's own position, keys k or more back, a set of marked keys; the largest weight and
// its key; the entropy; the mean distance attended. Ask for them with
// AttentionOptions::statistics (attention.hpp) or ForwardOptions::statistics.
//
// The streaming pass holds, per row, a running maximum m and sum l = Σ exp(s − m); every
// measurement that is linear in the weights is a running sum Σ exp(s − m)·f(key) rescaled
// with the output whenever m grows, then divided by l. The entropy is log l − Σ p·(s − m) / l,
// the largest weight exp(m − lse) = 1 / l. The weights path and the plain path compute the
// same numbers from each finished weights row.

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/kernels/row_statistics.hpp"

namespace attn {

/// Which statistics parameters to use. Every statistic is computed; these set the two that
/// take a parameter.
struct HeadStatisticsRequest {
    Index back = 4;                      ///< "back" is the weight on keys at least this far before the query (≥ 1)
    std::vector<Index> markers;          ///< key positions (e.g. <s>, <sep>) whose weights "markers" sums
    bool back_excludes_markers = false;  ///< leave the markers out of "back" (the chapter's reach-past-window)
};

/// Per-head means over query rows of every statistic, and what an even spread over each
/// row's visible keys would give (the chapter's baseline; the same for every head).
struct HeadStatisticsSummary {
    struct Values {
        double previous = 0, first = 0, self = 0, back = 0, markers = 0, largest = 0, entropy = 0, distance = 0;
    };
    std::vector<Values> heads;  ///< one per head
    Values even;                ///< an even spread, averaged over the same rows
    Index rows = 0;             ///< how many rows were averaged
};

/// Every head's statistics; each matrix is (heads × queries): entry (h, i) describes query
/// row i of head h, at position first_position + i.
template <class T>
struct HeadStatistics {
    Matrix<T> previous;  ///< weight on the key just before the query's position (0 at position 0)
    Matrix<T> first;     ///< weight on key 0
    Matrix<T> self;      ///< weight on the key at the query's own position
    Matrix<T> back;      ///< weight on keys ≥ request.back positions before the query
    Matrix<T> markers;   ///< weight on request.markers
    Matrix<T> largest;   ///< the largest weight of the row
    Eigen::Matrix<Index, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> argmax;  ///< its key (the first if tied)
    Matrix<T> entropy;                                                             ///< −Σ w log w, in nats
    Matrix<T> distance;  ///< Σ w·(query position − key position)
    // What they were computed for (the even-spread baselines need it).
    HeadStatisticsRequest request;
    Index first_position = 0;  ///< position of query row 0
    Index keys = 0;            ///< keys per head
    bool causal = true;
    Index window = 0;  ///< the sliding window (AttentionOptions::window), 0: none

    Index heads() const { return previous.rows(); }
    Index queries() const { return previous.cols(); }

    /// Sized for heads × queries (kept storage is reused when the size is unchanged).
    void resize(Index heads, Index queries) {
        for (Matrix<T>* plane : planes()) plane->resize(heads, queries);
        argmax.resize(heads, queries);
    }

    /// The statistics as planes in a fixed order (the kernel's): previous, first, self,
    /// back, markers, largest, entropy, distance.
    std::array<Matrix<T>*, 8> planes() {
        return {&previous, &first, &self, &back, &markers, &largest, &entropy, &distance};
    }
    std::array<const Matrix<T>*, 8> planes() const {
        return {&previous, &first, &self, &back, &markers, &largest, &entropy, &distance};
    }

    /// What an even spread over the keys row i sees would give, every statistic.
    HeadStatisticsSummary::Values even_spread(Index i) const {
        HeadStatisticsSummary::Values even;
        add_even(first_position + i, even);
        return even;
    }

    /// Per-head means over `rows` (row indices; all rows if empty) and the even spread's.
    HeadStatisticsSummary summary(const std::vector<Index>& rows = {}) const {
        HeadStatisticsSummary out;
        out.heads.resize(std::size_t(heads()));
        std::vector<Index> chosen = rows;
        if (chosen.empty())
            for (Index i = 0; i < queries(); ++i) chosen.push_back(i);
        for (Index i : chosen) {
            detail::check_index("HeadStatistics::summary", "row", i, queries());
            for (Index h = 0; h < heads(); ++h) {
                HeadStatisticsSummary::Values& v = out.heads[std::size_t(h)];
                v.previous += double(previous(h, i));
                v.first += double(first(h, i));
                v.self += double(self(h, i));
                v.back += double(back(h, i));
                v.markers += double(markers(h, i));
                v.largest += double(largest(h, i));
                v.entropy += double(entropy(h, i));
                v.distance += double(distance(h, i));
            }
            add_even(first_position + i, out.even);
        }
        out.rows = Index(chosen.size());
        const double n = out.rows ? double(out.rows) : 1.0;
        divide(out.even, n);
        for (HeadStatisticsSummary::Values& head : out.heads) divide(head, n);
        return out;
    }

private:
    static void divide(HeadStatisticsSummary::Values& v, double n) {
        for (double* x : {&v.previous, &v.first, &v.self, &v.back, &v.markers, &v.largest, &v.entropy, &v.distance})
            *x /= n;
    }

    /// Adds what an even spread over the keys visible at `position` gives: keys lo … visible − 1,
    /// lo = 0, or the window's first key.
    void add_even(Index position, HeadStatisticsSummary::Values& even) const {
        const Index visible = causal ? std::min(keys, position + 1) : keys;
        const Index lo = window > 0 ? std::clamp<Index>(position - window + 1, 0, visible) : 0;
        const Index count = visible - lo;
        if (count <= 0) return;
        const double share = 1.0 / double(count);
        const auto shown = [&](Index j) { return j >= lo && j < visible; };
        if (shown(position - 1)) even.previous += share;
        if (shown(0)) even.first += share;
        if (shown(position)) even.self += share;
        Index far = std::max<Index>(0, std::min(visible, position - request.back + 1) - lo);
        Index marked = 0;
        for (Index j : request.markers)
            if (shown(j)) {
                ++marked;
                if (request.back_excludes_markers && j <= position - request.back) --far;
            }
        even.back += double(far) * share;
        even.markers += double(marked) * share;
        even.largest += share;
        even.entropy += std::log(double(count));
        even.distance += double(position) - double(lo + visible - 1) / 2.0;
    }
};

namespace detail {

/// Checks a request (`function` names the caller) and writes its markers, sorted and unique,
/// into `markers` (no allocation if its capacity suffices).
inline void checked_markers_into(const char* function, const HeadStatisticsRequest& request,
                                 std::vector<Index>& markers) {
    if (request.back < 1)
        throw argument_error(message(function, ": statistics back distance must be ≥ 1, got ", request.back));
    markers.assign(request.markers.begin(), request.markers.end());
    for (Index j : markers)
        if (j < 0) throw argument_error(message(function, ": statistics marker ", j, " is negative"));
    std::sort(markers.begin(), markers.end());
    markers.erase(std::unique(markers.begin(), markers.end()), markers.end());
}

/// checked_markers_into fresh storage.
inline std::vector<Index> checked_markers(const char* function, const HeadStatisticsRequest& request) {
    std::vector<Index> markers;
    checked_markers_into(function, request, markers);
    return markers;
}

/// Sizes `out` (heads × queries) and returns a target writing into it.
template <class T>
StatisticsTarget<T> statistics_target(HeadStatistics<T>& out, const HeadStatisticsRequest& request,
                                      const std::vector<Index>& sorted_markers, Index heads, Index queries, Index keys,
                                      Index first_position, bool causal, Index window = 0) {
    out.resize(heads, queries);
    out.request = request;
    out.request.markers = sorted_markers;
    out.keys = keys;
    out.first_position = first_position;
    out.causal = causal;
    out.window = window;
    StatisticsTarget<T> target;
    target.back = request.back;
    target.markers = sorted_markers.data();
    target.marker_count = Index(sorted_markers.size());
    target.back_excludes_markers = request.back_excludes_markers;
    const std::array<Matrix<T>*, 8> planes = out.planes();
    for (std::size_t p = 0; p < kStatisticPlanes; ++p) target.planes[p] = planes[p]->data();
    target.argmax = out.argmax.data();
    target.head_stride = queries;
    return target;
}

/// Copies one head's statistics (from a single-head result) into head h of `out` (heads × queries).
template <class T>
void copy_head_statistics(HeadStatistics<T>& one, Index h, Index heads, HeadStatistics<T>& out) {
    if (out.heads() != heads || out.queries() != one.queries()) out.resize(heads, one.queries());
    const auto from = one.planes();
    const auto to = out.planes();
    for (std::size_t p = 0; p < from.size(); ++p) to[p]->row(h) = from[p]->row(0);
    out.argmax.row(h) = one.argmax.row(0);
    out.request = one.request;
    out.first_position = one.first_position;
    out.keys = one.keys;
    out.causal = one.causal;
    out.window = one.window;
}

}  // namespace detail

}  // namespace attn
