#pragma once
// Head patterns: which key positions count for each query position. One value type serves
// every analysis that asks "how much of a head's attention lands where the pattern says":
// the chapter's measurements (head_scores.hpp, on attention or on the kernel's statistics)
// and TransformerLens's detectors (head_detectors.hpp).
//
//   previous_token          key i − 1                     (none for query 0)
//   current_token           key i
//   first_token             key 0
//   positions(markers)      the listed keys, where visible
//   at_least_back(k, ex)    keys j ≤ i − k, leaving out ex
//   duplicate_token(ids)    keys j < i with ids[j] = ids[i]             (an earlier copy of the token)
//   induction(ids)          keys j ≤ i with ids[j − 1] = ids[i], j ≥ 1   (the token after an earlier copy)
//
// duplicate_token and induction are TransformerLens's detection patterns. Induction is its
// duplicate pattern shifted one key right, so when a token repeats right after itself
// (ids[i − 1] = ids[i]) the query itself is one of its keys.

#include <algorithm>
#include <string>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"

namespace attn {

namespace detail {

/// "{0, 9}": a list of positions as KeyPattern::describe() writes it.
inline std::string position_list(const std::vector<Index>& positions) {
    std::string out = "{";
    for (std::size_t k = 0; k < positions.size(); ++k) out += (k ? ", " : "") + std::to_string(positions[k]);
    return out + "}";
}

}  // namespace detail

/// Which key positions count for query position i: keys j with 0 ≤ j ≤ i.
class KeyPattern {
public:
    enum class Kind {
        previous_token,
        current_token,
        first_token,
        positions,
        at_least_back,
        duplicate_token,
        induction
    };

    /// The token just before the query (none for position 0).
    static KeyPattern previous_token() { return KeyPattern(Kind::previous_token); }
    /// The query's own position.
    static KeyPattern current_token() { return KeyPattern(Kind::current_token); }
    /// Position 0 (e.g. <s>).
    static KeyPattern first_token() { return KeyPattern(Kind::first_token); }
    /// Fixed positions such as <s> and <sep>, where visible (≤ the query). Negative ones are refused.
    static KeyPattern positions(std::vector<Index> markers) {
        for (Index m : markers)
            if (m < 0) throw argument_error(detail::message("KeyPattern::positions: marker ", m, " is negative"));
        KeyPattern pattern(Kind::positions);
        pattern.positions_ = sorted_unique(std::move(markers));
        return pattern;
    }
    /// Positions `distance` (≥ 1) or more before the query, leaving out `excluded` (e.g. markers).
    static KeyPattern at_least_back(Index distance, std::vector<Index> excluded = {}) {
        detail::check_positive("KeyPattern::at_least_back", "distance", distance);
        KeyPattern pattern(Kind::at_least_back);
        pattern.distance_ = distance;
        pattern.positions_ = sorted_unique(std::move(excluded));
        return pattern;
    }
    /// Earlier copies of the query's token in `ids` (one id per position).
    static KeyPattern duplicate_token(std::vector<int> ids) { return with_ids(Kind::duplicate_token, std::move(ids)); }
    /// The positions right after earlier copies of the query's token in `ids` (one id per
    /// position): key j for every j − 1 < i with ids[j − 1] = ids[i]. j − 1 = i − 1 makes the
    /// query its own key (TransformerLens's induction pattern does the same).
    static KeyPattern induction(std::vector<int> ids) { return with_ids(Kind::induction, std::move(ids)); }

    Kind kind() const { return kind_; }
    /// positions: the markers; at_least_back: the excluded positions (sorted, no repeats); else empty.
    const std::vector<Index>& listed() const { return positions_; }
    /// at_least_back's distance; 0 for the other kinds.
    Index distance() const { return distance_; }
    /// duplicate_token's and induction's ids, one per position; empty for the other kinds.
    const std::vector<int>& ids() const { return ids_; }
    /// Whether the pattern reads token ids (and so covers only ids().size() positions).
    bool needs_ids() const { return kind_ == Kind::duplicate_token || kind_ == Kind::induction; }

    /// Whether `key` counts for `query`: false outside 0 … query. argument_error if query < 0,
    /// or if the pattern has ids and query ≥ ids().size().
    bool selects(Index query, Index key) const {
        check_query("KeyPattern::selects", query);
        if (key < 0 || key > query) return false;
        switch (kind_) {
            case Kind::previous_token:
                return key == query - 1;
            case Kind::current_token:
                return key == query;
            case Kind::first_token:
                return key == 0;
            case Kind::positions:
                return std::binary_search(positions_.begin(), positions_.end(), key);
            case Kind::at_least_back:
                return key <= query - distance_ && !std::binary_search(positions_.begin(), positions_.end(), key);
            case Kind::duplicate_token:
                return key < query && ids_[std::size_t(key)] == ids_[std::size_t(query)];
            case Kind::induction:
                return key >= 1 && ids_[std::size_t(key - 1)] == ids_[std::size_t(query)];
        }
        return false;
    }

    /// The selected keys of `query`, sorted (all in 0 … query). Errors as selects().
    std::vector<Index> keys(Index query) const {
        check_query("KeyPattern::keys", query);
        std::vector<Index> keys;
        for (Index key = 0; key <= query; ++key)
            if (selects(query, key)) keys.push_back(key);
        return keys;
    }

    /// The pattern as written in code, for messages: e.g. "KeyPattern::at_least_back(4, {0, 9})".
    std::string describe() const {
        switch (kind_) {
            case Kind::previous_token:
                return "KeyPattern::previous_token()";
            case Kind::current_token:
                return "KeyPattern::current_token()";
            case Kind::first_token:
                return "KeyPattern::first_token()";
            case Kind::positions:
                return "KeyPattern::positions(" + detail::position_list(positions_) + ")";
            case Kind::at_least_back:
                return detail::message("KeyPattern::at_least_back(", distance_, ", ", detail::position_list(positions_),
                                       ")");
            case Kind::duplicate_token:
                return detail::message("KeyPattern::duplicate_token(", ids_.size(), " ids)");
            case Kind::induction:
                return detail::message("KeyPattern::induction(", ids_.size(), " ids)");
        }
        return "KeyPattern";
    }

private:
    explicit KeyPattern(Kind kind) : kind_(kind) {}

    static KeyPattern with_ids(Kind kind, std::vector<int> ids) {
        KeyPattern pattern(kind);
        pattern.ids_ = std::move(ids);
        return pattern;
    }

    static std::vector<Index> sorted_unique(std::vector<Index> positions) {
        std::sort(positions.begin(), positions.end());
        positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
        return positions;
    }

    void check_query(const char* function, Index query) const {
        if (query < 0) throw argument_error(detail::message(function, ": query ", query, " is negative"));
        if (needs_ids() && query >= Index(ids_.size()))
            throw argument_error(
                detail::message(function, ": query ", query, " is past the ", ids_.size(), " ids of ", describe()));
    }

    Kind kind_;
    std::vector<Index> positions_;  // positions' markers or at_least_back's excluded keys
    Index distance_ = 0;
    std::vector<int> ids_;
};

namespace detail {

/// Checks that an id pattern has one id per position of an n-position text (shape_error otherwise);
/// `function` names the caller.
inline void check_pattern_covers(const char* function, const KeyPattern& pattern, Index n) {
    if (pattern.needs_ids() && Index(pattern.ids().size()) != n)
        throw shape_error(message(function, ": ", pattern.describe(), " has ", pattern.ids().size(),
                                  " ids, but the attention has ", n, " positions (one id per position)"));
}

}  // namespace detail

}  // namespace attn
