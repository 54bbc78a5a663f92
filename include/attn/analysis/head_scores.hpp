#pragma once
// Measuring what heads attend to, the chapter's way: for chosen query positions, the
// weight a head puts on the keys a KeyPattern selects (key_pattern.hpp: the previous token,
// the current token, markers, tokens k or more back, the token after an earlier occurrence
// of the current one, ...), next to what an even spread would put there. An even spread
// gives each of the i + 1 positions that position i can see a weight of 1 / (i + 1).
//
// In a sliding layer (window w) position i sees only keys i − w + 1 … i: the pattern's keys
// before them are unreachable, not unattended, so they count neither in the head's weight nor
// in its even spread, which is 1 / (keys it sees) on each of the pattern's keys it sees
// (ScoreResult::even_by_layer). A query whose pattern keys are all out of reach adds 0 to
// both, as a query with no pattern key does: the head is compared with what it could do.
//
// Averages over many texts accumulate in HeadAverage, which keeps layers × heads sums,
// never the attention tensors.

#include <Eigen/Core>

#include <algorithm>
#include <vector>

#include "attn/analysis/key_pattern.hpp"
#include "attn/core/head_statistics.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// One text's measurement: sums over the measured queries.
struct ScoreResult {
    HeadTable weight;   ///< (layers × heads): Σ over queries of the weight on the pattern's keys
    double even = 0.0;  ///< Σ over queries of |keys| / (query + 1): a full layer's (on statistics: layer 0's)
    Index queries = 0;  ///< how many queries were measured (those with no keys count too)
    /// Per layer: Σ over queries of the even spread over the keys the layer's queries see —
    /// |pattern keys in the window| / |window| in a sliding layer, `even` in a full one.
    std::vector<double> even_by_layer;

    /// Per-query averages: weight / queries, (layers × heads).
    HeadTable average() const { return queries ? HeadTable(weight / double(queries)) : weight; }
    double even_average() const { return queries ? even / double(queries) : 0.0; }
    /// Layer l's even spread per query (its window's, if it has one).
    double even_average(Index layer) const {
        detail::check_index("ScoreResult::even_average", "layer", layer, Index(even_by_layer.size()));
        return queries ? even_by_layer[std::size_t(layer)] / double(queries) : 0.0;
    }
};

/// Scores every head on `queries` (0-based positions) of one forward pass's attention
/// (layers × heads × positions × positions). A pattern with ids has one per position. A sliding
/// layer's unreachable keys (before its window, ModelAttention::visible) count in neither the
/// weight nor the even spread.
template <class T>
ScoreResult score_heads(const ModelAttention<T>& attention, const std::vector<Index>& queries,
                        const KeyPattern& pattern) {
    if (attention.empty()) throw argument_error("score_heads: attention is empty (forward with keep_attention)");
    if (attention.rows() != attention.positions())
        throw shape_error(detail::message("score_heads: the attention has ", attention.rows(), " rows over ",
                                          attention.positions(), " positions; it needs a forward pass's, every row"));
    detail::check_pattern_covers("score_heads", pattern, attention.positions());
    ScoreResult scores{HeadTable::Zero(attention.layers(), attention.heads()), 0.0, static_cast<Index>(queries.size()),
                       std::vector<double>(std::size_t(attention.layers()), 0.0)};
    for (Index query : queries) {
        detail::check_index("score_heads", "query", query, attention.positions());
        const std::vector<Index> keys = pattern.keys(query);
        scores.even += double(keys.size()) / double(query + 1);
        for (Index l = 0; l < attention.layers(); ++l) {
            const Index lo = attention.visible(l, query).first;                     // the first key it sees
            const auto reachable = std::lower_bound(keys.begin(), keys.end(), lo);  // keys are sorted
            scores.even_by_layer[std::size_t(l)] += double(keys.end() - reachable) / double(query + 1 - lo);
            for (Index h = 0; h < attention.heads(); ++h) {
                const auto weights = attention.head(l, h);
                double sum = 0.0;
                for (auto key = reachable; key != keys.end(); ++key) sum += double(weights(query, *key));
                scores.weight(l, h) += sum;
            }
        }
    }
    return scores;
}

namespace detail {

/// The statistics plane that measures `pattern` for `request`: previous_token → previous,
/// current_token → self, first_token → first, positions(the request's markers) → markers,
/// at_least_back(the request's back, its excluded markers) → back. argument_error otherwise.
inline StatisticPlane statistic_plane(const char* function, const KeyPattern& pattern,
                                      const HeadStatisticsRequest& request) {
    // compared as sets: KeyPattern keeps its lists sorted and unique, a request built by hand may not be
    std::vector<Index> markers = request.markers;
    std::sort(markers.begin(), markers.end());
    markers.erase(std::unique(markers.begin(), markers.end()), markers.end());
    const std::vector<Index> excluded = request.back_excludes_markers ? markers : std::vector<Index>{};
    switch (pattern.kind()) {
        case KeyPattern::Kind::previous_token:
            return StatisticPlane::previous;
        case KeyPattern::Kind::current_token:
            return StatisticPlane::self;
        case KeyPattern::Kind::first_token:
            return StatisticPlane::first;
        case KeyPattern::Kind::positions:
            if (pattern.listed() == markers) return StatisticPlane::markers;
            break;
        case KeyPattern::Kind::at_least_back:
            if (pattern.distance() == request.back && pattern.listed() == excluded) return StatisticPlane::back;
            break;
        case KeyPattern::Kind::duplicate_token:
        case KeyPattern::Kind::induction:
            break;
    }
    throw argument_error(message(function, ": ", pattern.describe(),
                                 " cannot be read from the kernel's statistics, which were measured for "
                                 "previous_token(), current_token(), first_token(), positions(",
                                 position_list(markers), ") and at_least_back(", request.back, ", ",
                                 position_list(excluded),
                                 "); other patterns need the attention (score_heads on a ModelAttention)"));
}

/// The field of `values` that plane `plane` summarizes.
inline double statistic_value(const HeadStatisticsSummary::Values& values, StatisticPlane plane) {
    const double* fields[kStatisticPlanes] = {&values.previous, &values.first,   &values.self,    &values.back,
                                              &values.markers,  &values.largest, &values.entropy, &values.distance};
    return *fields[static_cast<std::size_t>(plane)];
}

}  // namespace detail

/// The fast route: scores every head on `queries` (query rows; positions, for a forward pass's)
/// from the statistics the attention kernel measured during a forward pass
/// (ForwardOptions::statistics; one HeadStatistics per layer, heads × queries each), with no
/// attention weights kept. `pattern` must be one the statistics measured (see
/// detail::statistic_plane: previous_token, current_token, first_token, and positions and
/// at_least_back as the request set them); the even spread is that statistic's, per layer over
/// the keys its window lets each query see (the kernel measures nothing outside it).
template <class T>
ScoreResult score_heads(const std::vector<HeadStatistics<T>>& layers, const std::vector<Index>& queries,
                        const KeyPattern& pattern) {
    if (layers.empty()) throw argument_error("score_heads: no statistics (forward with ForwardOptions::statistics)");
    const HeadStatistics<T>& front = layers.front();
    const detail::StatisticPlane plane = detail::statistic_plane("score_heads", pattern, front.request);
    for (std::size_t l = 1; l < layers.size(); ++l) {
        if (layers[l].heads() != front.heads() || layers[l].queries() != front.queries())
            throw shape_error(detail::message("score_heads: layer ", l, "'s statistics are ", layers[l].heads(), " × ",
                                              layers[l].queries(), " (heads × queries), layer 0's ", front.heads(),
                                              " × ", front.queries()));
        detail::statistic_plane("score_heads", pattern, layers[l].request);
    }
    const Index heads = front.heads();
    ScoreResult scores{HeadTable::Zero(Index(layers.size()), heads), 0.0, static_cast<Index>(queries.size()),
                       std::vector<double>(layers.size(), 0.0)};
    for (Index query : queries) {
        detail::check_index("score_heads", "query", query, front.queries());
        scores.even += detail::statistic_value(front.even_spread(query), plane);
        for (std::size_t l = 0; l < layers.size(); ++l) {
            // each layer's own even spread: a sliding layer's counts the keys in its window only
            scores.even_by_layer[l] += detail::statistic_value(layers[l].even_spread(query), plane);
            const Matrix<T>& statistic = *layers[l].planes()[std::size_t(plane)];
            for (Index h = 0; h < heads; ++h) scores.weight(Index(l), h) += double(statistic(h, query));
        }
    }
    return scores;
}

/// 0, 1, …, positions − 1 from `first` on: the query positions of a whole text or a part of it.
inline std::vector<Index> query_range(Index first, Index end) {
    std::vector<Index> out;
    for (Index i = std::max<Index>(first, 0); i < end; ++i) out.push_back(i);
    return out;
}

/// Averages ScoreResult over many texts. per_text: each text's per-query average counts
/// once (the chapter's previous-token table); per_query: every measured query counts once
/// (the chapter's reach-past-the-window figures).
class HeadAverage {
public:
    enum class Weighting { per_text, per_query };
    explicit HeadAverage(Weighting weighting) : weighting_(weighting) {}

    void add(const ScoreResult& scores) {
        if (scores.queries == 0) return;  // a text with nothing to measure
        if (texts_ == 0) sum_ = HeadTable::Zero(scores.weight.rows(), scores.weight.cols());
        if (scores.weight.rows() != sum_.rows() || scores.weight.cols() != sum_.cols())
            throw shape_error(detail::message("HeadAverage::add: scores are ", scores.weight.rows(), " × ",
                                              scores.weight.cols(), " but earlier ones were ", sum_.rows(), " × ",
                                              sum_.cols()));
        if (texts_ == 0) even_by_layer_.assign(scores.even_by_layer.size(), 0.0);
        if (scores.even_by_layer.size() != even_by_layer_.size())
            throw shape_error(detail::message("HeadAverage::add: scores have ", scores.even_by_layer.size(),
                                              " layers' even spreads but earlier ones had ", even_by_layer_.size()));
        const double per = weighting_ == Weighting::per_text ? double(scores.queries) : 1.0;
        for (std::size_t l = 0; l < even_by_layer_.size(); ++l) even_by_layer_[l] += scores.even_by_layer[l] / per;
        if (weighting_ == Weighting::per_text) {
            sum_ += scores.average();
            even_ += scores.even_average();
        } else {
            sum_ += scores.weight;
            even_ += scores.even;
        }
        ++texts_;
        queries_ += scores.queries;
    }

    Index texts() const { return texts_; }
    Index queries() const { return queries_; }
    /// (layers × heads) average weight on the pattern.
    HeadTable mean() const { return sum_ / divisor(); }
    /// What an even spread would give, averaged the same way.
    double even() const { return even_ / divisor(); }
    /// Layer l's even spread (over its window's keys in a sliding layer), averaged the same way.
    double even(Index layer) const {
        detail::check_index("HeadAverage::even", "layer", layer, Index(even_by_layer_.size()));
        return even_by_layer_[std::size_t(layer)] / divisor();
    }

private:
    double divisor() const {
        const Index count = weighting_ == Weighting::per_text ? texts_ : queries_;
        if (count == 0) throw argument_error("HeadAverage: nothing has been added");
        return double(count);
    }

    Weighting weighting_;
    HeadTable sum_;
    double even_ = 0.0;
    std::vector<double> even_by_layer_;
    Index texts_ = 0;
    Index queries_ = 0;
};

/// The largest entry of a (layers × heads) table, as a 0-based head id.
inline HeadId strongest_head(const HeadTable& table) {
    if (table.size() == 0) throw argument_error("strongest_head: the table is empty");
    Index layer = 0, head = 0;
    table.maxCoeff(&layer, &head);
    return {layer, head};
}

}  // namespace attn
