#pragma once
// Measuring what heads attend to, the chapter's way: for chosen query positions, the
// weight a head puts on a set of key positions (the previous token, the current token,
// markers, tokens k or more back, the token after an earlier occurrence of the current
// one), next to what an even spread would put there. An even spread gives each of the
// i + 1 positions that position i can see a weight of 1 / (i + 1).
//
// Averages over many texts accumulate in HeadAverage, which keeps layers × heads sums,
// never the attention tensors.

#include <Eigen/Core>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "attn/core/head_statistics.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// Which key positions count for query position `query` (all ≤ query, no repeats).
class KeyPattern {
public:
    using Select = std::function<void(Index query, std::vector<Index>& keys)>;
    explicit KeyPattern(Select select) : select_(std::move(select)) {}

    /// The selected keys of `query`, sorted, restricted to 0 … query.
    std::vector<Index> keys(Index query) const {
        std::vector<Index> keys;
        select_(query, keys);
        keys.erase(std::remove_if(keys.begin(), keys.end(), [&](Index k) { return k < 0 || k > query; }), keys.end());
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        return keys;
    }

    /// The token just before the query (none for position 0).
    static KeyPattern previous_token() {
        return KeyPattern([](Index i, std::vector<Index>& keys) {
            if (i > 0) keys.push_back(i - 1);
        });
    }
    /// The query's own position.
    static KeyPattern current_token() {
        return KeyPattern([](Index i, std::vector<Index>& keys) { keys.push_back(i); });
    }
    /// Fixed positions such as <s> and <sep>, where visible.
    static KeyPattern positions(std::vector<Index> marked) {
        return KeyPattern([marked = std::move(marked)](Index, std::vector<Index>& keys) {
            keys.insert(keys.end(), marked.begin(), marked.end());
        });
    }
    /// Positions `distance` or more before the query, leaving out `excluded` (e.g. markers).
    static KeyPattern at_least_back(Index distance, std::vector<Index> excluded = {}) {
        detail::check_positive("KeyPattern::at_least_back", "distance", distance);
        return KeyPattern([distance, excluded = std::move(excluded)](Index i, std::vector<Index>& keys) {
            for (Index j = 0; j <= i - distance; ++j)
                if (std::find(excluded.begin(), excluded.end(), j) == excluded.end()) keys.push_back(j);
        });
    }
    /// Induction: the positions right after earlier occurrences of the query's token
    /// (j + 1 for every j < i − 1 with ids[j] == ids[i]; j = i − 1 would be the query itself).
    static KeyPattern induction(std::vector<int> ids) {
        return KeyPattern([ids = std::move(ids)](Index i, std::vector<Index>& keys) {
            if (i >= static_cast<Index>(ids.size())) return;
            for (Index j = 0; j + 1 < i; ++j)
                if (ids[std::size_t(j)] == ids[std::size_t(i)]) keys.push_back(j + 1);
        });
    }

private:
    Select select_;
};

/// One text's measurement: sums over the measured queries.
struct HeadScores {
    Matrix<double> weight;  ///< (layers × heads): Σ over queries of the weight on the pattern's keys
    double even = 0.0;      ///< Σ over queries of |keys| / (query + 1)
    Index queries = 0;      ///< how many queries were measured (those with no keys count too)

    /// Per-query averages: weight / queries, (layers × heads).
    Matrix<double> average() const { return queries ? Matrix<double>(weight / double(queries)) : weight; }
    double even_average() const { return queries ? even / double(queries) : 0.0; }
};

/// Measures every head on `queries` (0-based positions) of one forward pass's attention
/// (layers × heads × positions × positions).
template <class T>
HeadScores measure(const ModelAttention<T>& attention, const std::vector<Index>& queries, const KeyPattern& pattern) {
    if (attention.empty()) throw argument_error("measure: attention is empty (forward with keep_attention)");
    HeadScores scores{Matrix<double>::Zero(attention.layers(), attention.heads()), 0.0,
                      static_cast<Index>(queries.size())};
    for (Index query : queries) {
        detail::check_index("measure", "query", query, attention.positions());
        const std::vector<Index> keys = pattern.keys(query);
        scores.even += double(keys.size()) / double(query + 1);
        for (Index l = 0; l < attention.layers(); ++l)
            for (Index h = 0; h < attention.heads(); ++h) {
                const auto weights = attention.head(l, h);
                double sum = 0.0;
                for (Index key : keys) sum += double(weights(query, key));
                scores.weight(l, h) += sum;
            }
    }
    return scores;
}

/// The fast route: measures every head on `queries` from the statistics the attention kernel
/// measured during a forward pass (ForwardOptions::statistics; one HeadStatistics per layer),
/// with no attention weights kept. `which` is the statistic (previous, first, self, back or
/// markers, as the request set them); the even spread is that statistic's.
template <class T>
HeadScores measure(const std::vector<HeadStatistics<T>>& layers, const std::vector<Index>& queries,
                   HeadStatistic which) {
    if (layers.empty()) throw argument_error("measure: no statistics (forward with ForwardOptions::statistics)");
    const Index heads = layers.front().heads();
    HeadScores scores{Matrix<double>::Zero(Index(layers.size()), heads), 0.0, static_cast<Index>(queries.size())};
    for (Index query : queries) {
        detail::check_index("measure", "query", query, layers.front().queries());
        scores.even += layers.front().even_spread(query).of(which);
        for (std::size_t l = 0; l < layers.size(); ++l) {
            const Matrix<T>& plane = layers[l].of(which);
            for (Index h = 0; h < heads; ++h) scores.weight(Index(l), h) += double(plane(h, query));
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

/// Averages HeadScores over many texts. per_text: each text's per-query average counts
/// once (the chapter's previous-token table); per_query: every measured query counts once
/// (the chapter's reach-past-the-window figures).
class HeadAverage {
public:
    enum class Weighting { per_text, per_query };
    explicit HeadAverage(Weighting weighting) : weighting_(weighting) {}

    void add(const HeadScores& scores) {
        if (scores.queries == 0) return;  // a text with nothing to measure
        if (texts_ == 0) sum_ = Matrix<double>::Zero(scores.weight.rows(), scores.weight.cols());
        if (scores.weight.rows() != sum_.rows() || scores.weight.cols() != sum_.cols())
            throw shape_error(detail::message("HeadAverage::add: scores are ", scores.weight.rows(), " × ",
                                              scores.weight.cols(), " but earlier ones were ", sum_.rows(), " × ",
                                              sum_.cols()));
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
    Matrix<double> mean() const { return sum_ / divisor(); }
    /// What an even spread would give, averaged the same way.
    double even() const { return even_ / divisor(); }

private:
    double divisor() const {
        const Index count = weighting_ == Weighting::per_text ? texts_ : queries_;
        if (count == 0) throw argument_error("HeadAverage: nothing has been added");
        return double(count);
    }

    Weighting weighting_;
    Matrix<double> sum_;
    double even_ = 0.0;
    Index texts_ = 0;
    Index queries_ = 0;
};

/// The largest entry of a (layers × heads) table, as a 0-based head id.
inline HeadId strongest_head(const Matrix<double>& table) {
    if (table.size() == 0) throw argument_error("strongest_head: the table is empty");
    Index layer = 0, head = 0;
    table.maxCoeff(&layer, &head);
    return {layer, head};
}

}  // namespace attn
