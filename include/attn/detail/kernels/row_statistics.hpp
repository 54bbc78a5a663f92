#pragma once
// Where the attention kernel writes per-row head statistics, and the statistics of one finished
// row of weights: the kernel's side of core/head_statistics.hpp (which sizes the planes), with
// nothing but raw pointers so that the kernel needs no public type.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attn/detail/check.hpp"

namespace attn {

namespace detail {

/// The planes' order in StatisticsTarget (HeadStatistics::planes()).
enum class StatisticPlane { previous, first, self, back, markers, largest, entropy, distance };
inline constexpr std::size_t kStatisticPlanes = 8;

/// Where a kernel writes statistics: plane p of head h, row i at planes[p][h·head_stride + i].
template <class T>
struct StatisticsTarget {
    Index back = 4;
    const Index* markers = nullptr;  ///< sorted, no repeats
    Index marker_count = 0;
    bool back_excludes_markers = false;
    T* planes[kStatisticPlanes] = {};
    Index* argmax = nullptr;
    Index head_stride = 0;

    T& at(StatisticPlane plane, Index h, Index i) const {
        return planes[static_cast<std::size_t>(plane)][h * head_stride + i];
    }
    Index& argmax_at(Index h, Index i) const { return argmax[h * head_stride + i]; }
};

/// Statistics of one finished weights row w[0 … count) (zeros where masked) of the query at
/// `position`, written to row i of head h.
template <class T>
void row_statistics(const T* w, Index count, Index position, const StatisticsTarget<T>& target, Index h, Index i) {
    const auto weight = [&](Index j) { return j >= 0 && j < count ? w[j] : T(0); };
    T back = 0, marked = 0, entropy = 0, distance = 0, largest = -1;
    Index argmax = 0;
    for (Index j = 0; j < count; ++j) {
        if (j <= position - target.back) back += w[j];
        if (w[j] > T(0)) entropy -= w[j] * std::log(w[j]);
        distance += w[j] * T(position - j);
        if (w[j] > largest) largest = w[j], argmax = j;
    }
    for (Index m = 0; m < target.marker_count; ++m) {
        const Index j = target.markers[m];
        marked += weight(j);
        if (target.back_excludes_markers && j <= position - target.back) back -= weight(j);
    }
    target.at(StatisticPlane::previous, h, i) = weight(position - 1);
    target.at(StatisticPlane::first, h, i) = weight(0);
    target.at(StatisticPlane::self, h, i) = weight(position);
    target.at(StatisticPlane::back, h, i) = back;
    target.at(StatisticPlane::markers, h, i) = marked;
    target.at(StatisticPlane::largest, h, i) = std::max(largest, T(0));
    target.at(StatisticPlane::entropy, h, i) = entropy;
    target.at(StatisticPlane::distance, h, i) = distance;
    target.argmax_at(h, i) = argmax;
}

}  // namespace detail

}  // namespace attn
