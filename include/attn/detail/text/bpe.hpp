#pragma once
// Byte-pair merging by rank in O(n log n) for a word of n symbols: a doubly linked list over
// the symbols and a min-heap of adjacent pairs keyed by (rank, position of the left symbol).
// The lowest rank merges first; among equal ranks the leftmost, which is what repeatedly
// merging "every occurrence of the best pair, left to right" gives for merge lists in
// training order, and what the Hugging Face and transformers.js BPE models do.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace attn::detail {

/// Merges of a BPE vocabulary: (left id, right id) → rank and the id of the merged token.
class MergeTable {
public:
    struct Merge {
        int rank;
        int result;
    };

    /// Adds a merge; a pair given again takes the new rank and result (as a dict built from
    /// the merge list would).
    void set(int left, int right, int rank, int result) { merges_[key(left, right)] = Merge{rank, result}; }

    const Merge* find(int left, int right) const {
        const auto found = merges_.find(key(left, right));
        return found == merges_.end() ? nullptr : &found->second;
    }

    std::size_t size() const { return merges_.size(); }

private:
    static std::uint64_t key(int left, int right) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
    }
    std::unordered_map<std::uint64_t, Merge> merges_;
};

/// Scratch space for bpe_merge, reused across words to avoid allocating per word.
struct BpeWorkspace {
    struct Candidate {
        int rank;
        int position;
        int left;
        int right;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : position > other.position;
        }
    };
    std::vector<int> previous, next;
    std::vector<Candidate> heap;
};

/// Merges `symbols` (ids; negative ids never merge) in place.
inline void bpe_merge(std::vector<int>& symbols, const MergeTable& merges, BpeWorkspace& work) {
    const int n = static_cast<int>(symbols.size());
    if (n < 2) return;
    work.previous.resize(static_cast<std::size_t>(n));
    work.next.resize(static_cast<std::size_t>(n));
    work.heap.clear();
    const auto at = [](std::vector<int>& v, int i) -> int& { return v[static_cast<std::size_t>(i)]; };
    using Candidate = BpeWorkspace::Candidate;
    const auto consider = [&](int left_position, int right_position) {
        const int left = at(symbols, left_position), right = at(symbols, right_position);
        if (left < 0 || right < 0) return;
        if (const MergeTable::Merge* merge = merges.find(left, right)) {
            work.heap.push_back({merge->rank, left_position, left, right});
            std::push_heap(work.heap.begin(), work.heap.end(), std::greater<Candidate>());
        }
    };
    for (int i = 0; i < n; ++i) {
        at(work.previous, i) = i - 1;
        at(work.next, i) = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
    while (!work.heap.empty()) {
        std::pop_heap(work.heap.begin(), work.heap.end(), std::greater<Candidate>());
        const Candidate best = work.heap.back();
        work.heap.pop_back();
        // A candidate is stale once either of its symbols has merged into something else.
        const int right_position = at(work.next, best.position);
        if (right_position < 0 || at(symbols, best.position) != best.left || at(symbols, right_position) != best.right)
            continue;
        at(symbols, best.position) = merges.find(best.left, best.right)->result;
        at(symbols, right_position) = -1;
        const int after = at(work.next, right_position);
        at(work.next, best.position) = after;
        if (after >= 0) at(work.previous, after) = best.position;
        at(work.next, right_position) = -2;  // makes candidates that start at the removed symbol stale
        if (const int before = at(work.previous, best.position); before >= 0) consider(before, best.position);
        if (after >= 0) consider(best.position, after);
    }
    int kept = 0;
    for (int i = 0; i >= 0; i = at(work.next, i)) at(symbols, kept++) = at(symbols, i);
    symbols.resize(static_cast<std::size_t>(kept));
}

}  // namespace attn::detail
