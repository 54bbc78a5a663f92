#pragma once
// A key/value cache for incremental decoding: the keys and values of every position seen so
// far, kept per key/value head, so that a new position's attention reads them instead of
// recomputing them.
//
//   keys(h):   (size × head size), rotated at their absolute positions when appended with RoPE
//   values(h): (size × value size)
//
// Storage is allocated once, for `capacity` positions: appending never reallocates, so views
// and pointers into the cache stay valid, and appending past capacity is an error rather than
// a silent copy. With grouped-query attention the cache holds the key/value heads (fewer than
// the query heads); attend_cache (attention.hpp) maps each query head to its group's head.

#include <Eigen/Core>

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
    /// and value_size per value (0: head_size). Every size must be > 0.
    KeyValueCache(Index heads, Index capacity, Index head_size, Index value_size = 0)
        : heads_(heads),
          capacity_(capacity),
          head_size_(head_size),
          value_size_(value_size == 0 ? head_size : value_size) {
        detail::check_positive("KeyValueCache", "heads", heads);
        detail::check_positive("KeyValueCache", "capacity", capacity);
        detail::check_positive("KeyValueCache", "head_size", head_size);
        detail::check_positive("KeyValueCache", "value_size", value_size_);
        keys_ = HeadStack<T>(heads_, capacity_, head_size_);
        values_ = HeadStack<T>(heads_, capacity_, value_size_);
    }

    Index heads() const { return heads_; }            ///< key/value heads
    Index capacity() const { return capacity_; }      ///< the most positions it holds
    Index head_size() const { return head_size_; }    ///< numbers per key
    Index value_size() const { return value_size_; }  ///< numbers per value
    Index size() const { return size_; }              ///< positions held: 0 … size − 1
    Index room() const { return capacity_ - size_; }  ///< positions that can still be appended
    bool empty() const { return size_ == 0; }

    /// Head h's cached keys, (size × head size), row i at position i.
    HeadMap keys(Index h) const { return HeadMap(keys_.head(h).data(), size_, head_size_); }
    /// Head h's cached values, (size × value size).
    HeadMap values(Index h) const { return HeadMap(values_.head(h).data(), size_, value_size_); }

    /// Appends n positions at size() … size() + n − 1. keys: heads × (n × head size), values:
    /// heads × (n × value size). With rope, the keys are rotated at those positions as they
    /// are stored (the queries that read them must be rotated at theirs: attend_cache does it).
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
        for (Index h = 0; h < heads_; ++h) {
            key_rows(h).middleRows(size_, n) = keys.head(h);
            value_rows(h).middleRows(size_, n) = values.head(h);
            if (rope) rope->apply(key_rows(h).middleRows(size_, n), size_);
        }
        size_ += n;
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
        for (Index h = 0; h < heads_; ++h) {
            key_rows(h).middleRows(size_, n) = keys.middleCols(h * head_size_, head_size_);
            value_rows(h).middleRows(size_, n) = values.middleCols(h * value_size_, value_size_);
            if (rope) rope->apply(key_rows(h).middleRows(size_, n), size_);
        }
        size_ += n;
    }

    /// Forgets positions `positions` … size() − 1 (to decode another continuation of the
    /// same prefix). 0 ≤ positions ≤ size().
    void truncate(Index positions) {
        if (positions < 0 || positions > size_)
            throw argument_error(detail::message("KeyValueCache::truncate: positions = ", positions, " is outside 0 … ",
                                                 size_, " (the positions held)"));
        size_ = positions;
    }
    void clear() { size_ = 0; }

    /// For writers that fill positions size() … size() + n − 1 themselves (the model's decoder
    /// writes each thread's rows in place) and then call extend(n): head h's whole storage,
    /// (capacity × head size) keys and (capacity × value size) values.
    typename HeadStack<T>::HeadMap key_rows(Index h) { return keys_.head(h); }
    typename HeadStack<T>::HeadMap value_rows(Index h) { return values_.head(h); }
    /// Makes the n positions after size() part of the cache (see key_rows).
    void extend(Index n) {
        check_append("KeyValueCache::extend", n, nullptr);
        size_ += n;
    }

private:
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
    Index size_ = 0;
    HeadStack<T> keys_;    // heads × (capacity × head size)
    HeadStack<T> values_;  // heads × (capacity × value size)
};

}  // namespace attn
