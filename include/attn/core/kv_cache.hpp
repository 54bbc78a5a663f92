#pragma once
// A key/value cache for incremental decoding: the keys and values of the positions seen so
// far, kept per key/value head, so that a new position's attention reads them instead of
// recomputing them.
//
//   keys(h):   (held × head size), row i at position first() + i, rotated at their absolute
//              positions when appended with RoPE
//   values(h): (held × value size)
//
// Without a window (window = 0) it holds every position 0 … size() − 1 in storage allocated
// once, for `capacity` positions: appending never reallocates, so views and pointers into
// the cache stay valid, and appending past capacity is an error rather than a silent copy.
//
// With a sliding window w (Mistral's and Gemma's local layers: a query at p sees only keys
// p − w < j ≤ p) it keeps only the positions a later query can see — the last w — so its
// memory is O(w), not O(positions): steady storage of min(capacity, w + s) rows, s = max(1, w/4),
// used as a ring that is never wrapped. Positions are written after the ones held; when the
// storage is full, the last w are moved to its start (w row copies every s + 1 steps: about 4
// row copies a step, while the step's attention reads w rows). The fused kernel reads a head's keys as one strided
// matrix; a wrapped ring would cut them in two at the seam, and every key loop of the kernel
// would have to know it. An append of more than w positions at once (a long prefill) grows
// the storage to w + n rows for that append — its queries need every one of those keys — and
// settle() gives it back. capacity stays the limit on positions (the model's context).
//
// With grouped-query attention the cache holds the key/value heads (fewer than the query
// heads); attend_cache (attention.hpp) maps each query head to its group's head.

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>

#include "attn/core/rope.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"

namespace attn {

template <class T>
class KeyValueCache {
public:
    using HeadMap = Eigen::Map<const Matrix<T>>;

    KeyValueCache() = default;

    /// Room for `capacity` positions of `heads` key/value heads, head_size numbers per key
    /// and value_size per value (0: head_size); heads, capacity and head_size must be > 0.
    /// window > 0: a sliding window's cache, keeping only the last `window` positions (and
    /// those the latest append's queries see), in O(window) memory; 0: every position.
    KeyValueCache(Index heads, Index capacity, Index head_size, Index value_size = 0, Index window = 0)
        : heads_(heads),
          capacity_(capacity),
          head_size_(head_size),
          value_size_(value_size == 0 ? head_size : value_size),
          window_(window) {
        detail::check_positive("KeyValueCache", "heads", heads);
        detail::check_positive("KeyValueCache", "capacity", capacity);
        detail::check_positive("KeyValueCache", "head_size", head_size);
        detail::check_positive("KeyValueCache", "value_size", value_size_);
        if (window < 0)
            throw argument_error(detail::message("KeyValueCache: window must be ≥ 0 (0: none), got ", window));
        // A window as long as the context hides nothing: the plain cache.
        if (window_ >= capacity_) window_ = 0;
        allocate(steady_rows());
    }

    Index heads() const { return heads_; }            ///< key/value heads
    Index capacity() const { return capacity_; }      ///< the most positions it takes in all (0 … capacity − 1)
    Index head_size() const { return head_size_; }    ///< numbers per key
    Index value_size() const { return value_size_; }  ///< numbers per value
    /// The sliding window it keeps (> 0), or 0: every position.
    Index window() const { return window_; }
    /// Positions appended so far: the next one goes to position size().
    Index size() const { return size_; }
    /// The first position held: 0 without a window, else at most size() − window once it has
    /// moved past the earlier ones (never past those the latest append's queries see).
    Index first() const { return first_; }
    /// Positions held: first() … size() − 1.
    Index held() const { return size_ - first_; }
    Index room() const { return capacity_ - size_; }  ///< positions that can still be appended
    bool empty() const { return size_ == 0; }
    /// Bytes of key and value storage it holds now: heads × storage rows × (head size + value
    /// size) numbers. Without a window, fixed at capacity rows; with one, min(capacity, window +
    /// max(1, window / 4)) rows between appends (more only inside a long append, until settle()).
    std::size_t bytes() const { return (keys_.size() + values_.size()) * sizeof(T); }

    /// Head h's held keys, (held × head size), row i at position first() + i.
    HeadMap keys(Index h) const {
        return HeadMap(keys_.head(h).data() + (first_ - origin_) * head_size_, held(), head_size_);
    }
    /// Head h's held values, (held × value size), row i at position first() + i.
    HeadMap values(Index h) const {
        return HeadMap(values_.head(h).data() + (first_ - origin_) * value_size_, held(), value_size_);
    }

    /// Appends n positions at size() … size() + n − 1. keys: heads × (n × head size), values:
    /// heads × (n × value size). With rope, the keys are rotated at those positions as they
    /// are stored (the queries that read them must be rotated at theirs: attend_cache does it).
    /// With a window, views taken before may no longer be valid (the storage may move).
    void append(const HeadStack<T>& keys, const HeadStack<T>& values, const Rope<T>* rope = nullptr) {
        if (keys.heads() != heads_ || values.heads() != heads_)
            throw shape_error(detail::message("KeyValueCache::append: keys and values have ", keys.heads(), " and ",
                                              values.heads(), " heads; the cache holds ", heads_));
        if (keys.cols() != head_size_ || values.cols() != value_size_)
            throw shape_error(detail::message("KeyValueCache::append: keys are ", keys.cols(), " and values ",
                                              values.cols(), " wide; the cache holds keys of ", head_size_,
                                              " and values of ", value_size_));
        if (keys.rows() != values.rows())
            throw shape_error(
                detail::message("KeyValueCache::append: ", keys.rows(), " keys but ", values.rows(), " values"));
        const Index n = keys.rows();
        check_append("KeyValueCache::append", n, rope);
        make_room(n);
        const Index row = size_ - origin_;
        for (Index h = 0; h < heads_; ++h) {
            key_rows(h).middleRows(row, n) = keys.head(h);
            value_rows(h).middleRows(row, n) = values.head(h);
            if (rope) rope->apply(key_rows(h).middleRows(row, n), size_);
        }
        advance(n);
    }

    /// Appends n positions given with the heads side by side, as project_qkv returns them:
    /// keys (n × heads·head size), values (n × heads·value size).
    template <class DK, class DV>
    void append(const Eigen::MatrixBase<DK>& keys, const Eigen::MatrixBase<DV>& values, const Rope<T>* rope = nullptr) {
        detail::check_cols("KeyValueCache::append", "keys", keys, heads_ * head_size_,
                           "keys are (positions × heads·head size)");
        detail::check_cols("KeyValueCache::append", "values", values, heads_ * value_size_,
                           "values are (positions × heads·value size)");
        detail::check_rows("KeyValueCache::append", "values", values, keys.rows(), "one value per key");
        const Index n = keys.rows();
        check_append("KeyValueCache::append", n, rope);
        make_room(n);
        const Index row = size_ - origin_;
        for (Index h = 0; h < heads_; ++h) {
            key_rows(h).middleRows(row, n) = keys.middleCols(h * head_size_, head_size_);
            value_rows(h).middleRows(row, n) = values.middleCols(h * value_size_, value_size_);
            if (rope) rope->apply(key_rows(h).middleRows(row, n), size_);
        }
        advance(n);
    }

    /// Forgets positions `positions` … size() − 1 (to decode another continuation of the
    /// same prefix). 0 ≤ positions ≤ size(); with a window, the keys a query at `positions`
    /// sees must still be held (positions − window + 1 ≥ first(), or positions = 0): else
    /// argument_error, since they are gone.
    void truncate(Index positions) {
        if (positions < 0 || positions > size_)
            throw argument_error(detail::message("KeyValueCache::truncate: positions = ", positions, " is outside 0 … ",
                                                 size_, " (the positions held)"));
        if (positions > 0 && window_ > 0 && std::max<Index>(0, positions - window_ + 1) < first_)
            throw argument_error(detail::message("KeyValueCache::truncate: positions = ", positions,
                                                 " would need the keys from position ", positions - window_ + 1,
                                                 " on (its window of ", window_, "); the cache holds ", first_, " … ",
                                                 size_ - 1));
        size_ = positions;
        if (size_ < first_ || size_ == 0) first_ = origin_ = 0;
    }
    void clear() { size_ = first_ = origin_ = 0; }

    /// For writers that fill positions size() … size() + n − 1 themselves (the model's decoder
    /// writes each thread's rows in place): make_room(n), write position p at row p − origin()
    /// of key_rows and value_rows, then extend(n) and settle().
    ///
    /// Makes the storage hold the positions that queries at size() … size() + n − 1 see and
    /// those n after the ones held, contiguously: with a window, moves the last window positions
    /// to the storage's start if the rest do not fit after them, or grows the storage (a long
    /// append). Nothing to do without a window (the storage is the capacity). Throws
    /// argument_error as append does if n positions do not fit in the capacity.
    void make_room(Index n) {
        check_append("KeyValueCache::make_room", n, nullptr);
        if (size_ - origin_ + n <= keys_.rows()) return;
        // window_ > 0 here: without one the storage holds every position up to capacity.
        const Index keep = std::max(first_, size_ - window_);  // the last `window` positions
        const Index rows = std::max(steady_rows(), size_ - keep + n);
        if (rows > keys_.rows()) {
            HeadStack<T> keys(heads_, rows, head_size_), values(heads_, rows, value_size_);
            move_held(keep, keys, values);
        } else {
            move_held(keep, keys_, values_);
        }
    }
    /// The position of row 0 of key_rows and value_rows.
    Index origin() const { return origin_; }
    /// Head h's whole storage, (storage rows × head size) keys and (storage rows × value size)
    /// values, row r at position origin() + r (see make_room).
    typename HeadStack<T>::HeadMap key_rows(Index h) { return keys_.head(h); }
    typename HeadStack<T>::HeadMap value_rows(Index h) { return values_.head(h); }
    /// Makes the n positions after size() part of the cache (see make_room).
    void extend(Index n) {
        check_append("KeyValueCache::extend", n, nullptr);
        if (size_ - origin_ + n > keys_.rows())
            throw argument_error(detail::message("KeyValueCache::extend: ", n, " positions after the ", size_,
                                                 " appended pass the storage's ", keys_.rows(), " rows from position ",
                                                 origin_, " (call make_room first)"));
        advance(n);
    }
    /// With a window: gives back storage a long append grew, keeping the last `window`
    /// positions in the steady rows (bytes()); after it the queries of the latest append
    /// may no longer find their keys (a Decoder settles once its pass is done). Without a
    /// window, or with the storage at its steady size, nothing.
    void settle() {
        if (window_ == 0 || keys_.rows() <= steady_rows()) return;
        HeadStack<T> keys(heads_, steady_rows(), head_size_), values(heads_, steady_rows(), value_size_);
        move_held(std::max(first_, size_ - window_), keys, values);
    }

private:
    /// Storage rows between appends: every position without a window; with one, room for the
    /// window and a quarter more, so that steps move the window back once every window / 4 + 1
    /// (a step's attention reads the window's rows anyway; the copies add about 4 a step).
    Index steady_rows() const {
        return window_ > 0 ? std::min(capacity_, window_ + std::max<Index>(1, window_ / 4)) : capacity_;
    }

    void allocate(Index rows) {
        keys_ = HeadStack<T>(heads_, rows, head_size_);
        values_ = HeadStack<T>(heads_, rows, value_size_);
    }

    /// Positions keep … size() − 1 to rows 0 … of `keys` and `values` (the cache's own storage
    /// or new storage that then replaces it).
    void move_held(Index keep, HeadStack<T>& keys, HeadStack<T>& values) {
        const Index count = size_ - keep, from = keep - origin_;
        for (Index h = 0; h < heads_ && (from > 0 || &keys != &keys_); ++h) {
            // Rows move toward the start (from ≥ 0): a forward copy never overwrites a row before reading it.
            const T* k = keys_.head(h).data() + from * head_size_;
            std::copy(k, k + count * head_size_, keys.head(h).data());
            const T* v = values_.head(h).data() + from * value_size_;
            std::copy(v, v + count * value_size_, values.head(h).data());
        }
        if (&keys != &keys_) {
            keys_ = std::move(keys);
            values_ = std::move(values);
        }
        origin_ = first_ = keep;
    }

    /// n positions more; with a window, first() moves up to the first key the earliest of them
    /// sees (size() − window after a step), so that attend_cache finds every key they see.
    void advance(Index n) {
        size_ += n;
        if (window_ > 0) first_ = std::max<Index>({first_, size_ - n - window_ + 1, 0});
    }

    void check_append(const char* function, Index n, const Rope<T>* rope) const {
        if (heads_ == 0) throw argument_error(detail::message(function, ": the cache has no storage (made empty)"));
        if (n <= 0) throw argument_error(detail::message(function, ": nothing to append (", n, " positions)"));
        if (n > room())
            throw argument_error(detail::message(function, ": ", n, " positions do not fit: ", size_, " of ", capacity_,
                                                 " are held, room for ", room()));
        if (rope && rope->head_size() != head_size_)
            throw shape_error(detail::message(function, ": RoPE rotates heads of ", rope->head_size(),
                                              " numbers; the keys have ", head_size_));
    }

    Index heads_ = 0;
    Index capacity_ = 0;
    Index head_size_ = 0;
    Index value_size_ = 0;
    Index window_ = 0;
    Index size_ = 0;
    Index first_ = 0;      // the first position held (keys() and values() start there)
    Index origin_ = 0;     // the position of storage row 0 (≤ first_)
    HeadStack<T> keys_;    // heads × (storage rows × head size)
    HeadStack<T> values_;  // heads × (storage rows × value size)
};

}  // namespace attn
