// KeyValueCache (kv_cache.hpp) and attention over it (attend_cache, attention.hpp), with
// grouped-query attention in attend_heads and multi_head_attention.
//
// Equalities are bit-identical where both sides run the same arithmetic on the same numbers
// (the kernel on a cache against the kernel on the whole sequence, a folded step against an
// unfolded one, grouped heads against repeated heads); fused against plain is within
// cache_tolerance (1e-6 float, 1e-13 double, relative to the largest entry).
#include <doctest/doctest.h>
#include <attn/core/attention.hpp>
#include <attn/core/kv_cache.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "allocation_counter.hpp"
#include "support.hpp"

using attn::HeadStack;
using attn::Index;
using attn::test::random_matrix;

namespace {

template <class T>
HeadStack<T> random_heads(Index heads, Index rows, Index cols, unsigned seed) {
    HeadStack<T> stack(heads, rows, cols);
    for (Index h = 0; h < heads; ++h) stack.head(h) = random_matrix<T>(rows, cols, seed + 100 * unsigned(h));
    return stack;
}

/// Rows first … first + count − 1 of every head.
template <class T>
HeadStack<T> rows_of(const HeadStack<T>& stack, Index first, Index count) {
    HeadStack<T> out(stack.heads(), count, stack.cols());
    for (Index h = 0; h < stack.heads(); ++h) out.head(h) = stack.head(h).middleRows(first, count);
    return out;
}

/// Each head repeated for the `group` query heads it serves: head h of the result is head h / group.
template <class T>
HeadStack<T> repeat_heads(const HeadStack<T>& stack, Index group) {
    HeadStack<T> out(stack.heads() * group, stack.rows(), stack.cols());
    for (Index h = 0; h < out.heads(); ++h) out.head(h) = stack.head(h / group);
    return out;
}

/// A cache holding keys and values (heads × (positions × size)), appended in pieces of at most
/// `piece` positions so that rotations at later positions are exercised.
template <class T>
attn::KeyValueCache<T> cache_of(const HeadStack<T>& keys, const HeadStack<T>& values, const attn::Rope<T>* rope,
                                Index piece) {
    attn::KeyValueCache<T> cache(keys.heads(), keys.rows() + 5, keys.cols(), values.cols());
    for (Index first = 0; first < keys.rows(); first += piece) {
        const Index count = std::min(piece, keys.rows() - first);
        cache.append(rows_of(keys, first, count), rows_of(values, first, count), rope);
    }
    return cache;
}

template <class T>
double cache_tolerance() {
    return sizeof(T) == sizeof(float) ? 1e-6 : 1e-13;
}

template <class A, class B>
double relative_difference(const A& a, const B& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    const double scale = std::max(1.0, double(b.cwiseAbs().maxCoeff()));
    return double((a - b).cwiseAbs().maxCoeff()) / scale;
}

template <class T>
double relative_difference(const HeadStack<T>& a, const HeadStack<T>& b) {
    REQUIRE(a.heads() == b.heads());
    double worst = 0;
    for (Index h = 0; h < a.heads(); ++h) worst = std::max(worst, relative_difference(a.head(h), b.head(h)));
    return worst;
}

/// Columns first … first + count − 1 of every plane of `whole` equal `part`, bit for bit.
template <class T>
bool statistics_equal(attn::HeadStatistics<T> part, attn::HeadStatistics<T> whole, Index first) {
    const auto mine = part.planes();
    const auto theirs = whole.planes();
    bool equal = part.argmax == whole.argmax.middleCols(first, part.queries());
    for (std::size_t p = 0; p < mine.size(); ++p)
        equal = equal && *mine[p] == theirs[p]->middleCols(first, part.queries());
    return equal;
}

}  // namespace

// ---- KeyValueCache ------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("KeyValueCache: append, truncate, extend and clear keep keys and values at their positions", T,
                   float, double) {
    const Index heads = 2, d = 8, dv = 6;
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half, 10000.0, 4);  // later positions computed on the fly
    const HeadStack<T> keys = random_heads<T>(heads, 9, d, 1), values = random_heads<T>(heads, 9, dv, 2);
    attn::KeyValueCache<T> cache(heads, 12, d, dv);
    CHECK(cache.empty());
    CHECK(cache.room() == 12);
    CHECK(cache.value_size() == dv);
    const T* storage = cache.keys(0).data();

    cache.append(rows_of(keys, 0, 3), rows_of(values, 0, 3), &rope);
    cache.append(rows_of(keys, 3, 4), rows_of(values, 3, 4), &rope);
    // the side-by-side form, as project_qkv returns the heads
    cache.append(attn::merge_heads(rows_of(keys, 7, 2)), attn::merge_heads(rows_of(values, 7, 2)), &rope);
    REQUIRE(cache.size() == 9);
    CHECK(cache.room() == 3);
    CHECK(cache.keys(0).data() == storage);  // appending never reallocates
    for (Index h = 0; h < heads; ++h) {
        attn::Matrix<T> rotated = keys.head(h);
        rope.apply(rotated, 0);
        CHECK(cache.keys(h) == rotated);  // each key rotated at its own position, whatever the pieces
        CHECK(cache.values(h) == values.head(h));
    }

    cache.truncate(5);
    CHECK(cache.size() == 5);
    CHECK(cache.keys(1).rows() == 5);
    // a writer that fills rows in place, then extends
    for (Index h = 0; h < heads; ++h) {
        cache.key_rows(h).row(5).setConstant(T(h + 1));
        cache.value_rows(h).row(5).setConstant(T(-h - 1));
    }
    cache.extend(1);
    CHECK(cache.size() == 6);
    CHECK(cache.keys(1)(5, 3) == T(2));
    CHECK(cache.values(0)(5, 0) == T(-1));
    CHECK(cache.values(0).topRows(5) == values.head(0).topRows(5));

    cache.clear();
    CHECK(cache.empty());
    CHECK(cache.room() == 12);
    attn::KeyValueCache<T> same_sizes(1, 3, 4);
    CHECK(same_sizes.value_size() == 4);
}

TEST_CASE("KeyValueCache: every misuse is a clear attn:: error") {
    using C = attn::KeyValueCache<float>;
    CHECK_THROWS_WITH_AS(C(0, 4, 8), doctest::Contains("KeyValueCache: heads must be positive"), attn::argument_error);
    CHECK_THROWS_WITH_AS(C(1, 0, 8), doctest::Contains("capacity must be positive"), attn::argument_error);
    CHECK_THROWS_WITH_AS(C(1, 4, -2), doctest::Contains("head_size must be positive"), attn::argument_error);
    CHECK_THROWS_WITH_AS(C(1, 4, 8, -1), doctest::Contains("value_size must be positive"), attn::argument_error);

    C cache(2, 4, 8, 6);
    const HeadStack<float> keys(2, 3, 8), values(2, 3, 6);
    CHECK_THROWS_WITH_AS(cache.append(HeadStack<float>(1, 3, 8), values),
                         doctest::Contains("keys and values have 1 and 2 heads; the cache holds 2"), attn::shape_error);
    CHECK_THROWS_WITH_AS(cache.append(keys, HeadStack<float>(2, 3, 8)),
                         doctest::Contains("keys are 8 and values 8 wide; the cache holds keys of 8 and values of 6"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(cache.append(keys, HeadStack<float>(2, 2, 6)), doctest::Contains("3 keys but 2 values"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(cache.append(HeadStack<float>(2, 0, 8), HeadStack<float>(2, 0, 6)),
                         doctest::Contains("nothing to append (0 positions)"), attn::argument_error);
    const attn::Rope<float> wrong(4, attn::RopePairing::rotate_half);
    CHECK_THROWS_WITH_AS(cache.append(keys, values, &wrong),
                         doctest::Contains("RoPE rotates heads of 4 numbers; the keys have 8"), attn::shape_error);
    cache.append(keys, values);
    CHECK_THROWS_WITH_AS(cache.append(keys, values),
                         doctest::Contains("3 positions do not fit: 3 of 4 are held, room for 1"),
                         attn::argument_error);
    CHECK(cache.size() == 3);  // a refused append leaves the cache as it was

    const attn::Matrix<float> side_keys(1, 16), side_values(1, 12);
    CHECK_THROWS_WITH_AS(cache.append(attn::Matrix<float>(1, 15), side_values),
                         doctest::Contains("keys has 15 columns, expected 16"), attn::shape_error);
    CHECK_THROWS_WITH_AS(cache.append(side_keys, attn::Matrix<float>(1, 8)),
                         doctest::Contains("values has 8 columns, expected 12"), attn::shape_error);
    CHECK_THROWS_WITH_AS(cache.append(side_keys, attn::Matrix<float>(2, 12)),
                         doctest::Contains("values has 2 rows, expected 1"), attn::shape_error);

    CHECK_THROWS_WITH_AS(cache.truncate(4), doctest::Contains("positions = 4 is outside 0 … 3"), attn::argument_error);
    CHECK_THROWS_WITH_AS(cache.truncate(-1), doctest::Contains("positions = -1"), attn::argument_error);
    CHECK_THROWS_WITH_AS(cache.extend(2), doctest::Contains("KeyValueCache::extend: 2 positions do not fit"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(cache.extend(0), doctest::Contains("nothing to append"), attn::argument_error);

    C empty;
    CHECK_THROWS_WITH_AS(empty.extend(1), doctest::Contains("the cache has no storage"), attn::argument_error);
    CHECK_THROWS_WITH_AS(empty.append(attn::Matrix<float>(1, 0), attn::Matrix<float>(1, 0)),
                         doctest::Contains("the cache has no storage"), attn::argument_error);
}

// ---- attend_cache -------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("attend_cache gives the newest rows of attend_heads over the whole sequence, on 1 and 2 threads", T,
                   float, double) {
    const Index heads = 4, d = 16, dv = 12;  // dv not a whole number of packets: padded values
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half, 10000.0, 64);
    attn::HeadStatisticsRequest request;
    request.markers = {0, 5};
    for (Index kv_heads : {4, 2})
        for (Index total : {1, 95, 96, 97, 200, 300})
            for (Index n : {1, 3, 17}) {
                if (n > total) continue;
                CAPTURE(kv_heads);
                CAPTURE(total);
                CAPTURE(n);
                const HeadStack<T> q = random_heads<T>(heads, total, d, 1), k = random_heads<T>(kv_heads, total, d, 2),
                                   v = random_heads<T>(kv_heads, total, dv, 3);
                const attn::KeyValueCache<T> cache = cache_of(k, v, &rope, 64);
                const HeadStack<T> newest = rows_of(q, total - n, n);
                for (bool keep : {false, true}) {
                    CAPTURE(keep);
                    attn::AttentionOptions<T> options;
                    options.rope = &rope;
                    options.keep_weights = keep;
                    options.keep_log_sum_exp = true;
                    const attn::HeadsResult<T> whole = attn::attend_heads(q, k, v, options);
                    const attn::HeadsResult<T> step = attn::attend_cache(newest, cache, options);
                    // up to 8 rows without weights take the decoding task: its dot products
                    // along d round differently from the streaming tiles
                    const bool same_route = keep || n > 8;
                    if (same_route) {
                        CHECK(step.outputs == rows_of(whole.outputs, total - n, n));
                        CHECK(step.log_sum_exp == whole.log_sum_exp.rightCols(n));
                        if (keep) CHECK(step.weights == rows_of(whole.weights, total - n, n));
                    } else {
                        CHECK(relative_difference(step.outputs, rows_of(whole.outputs, total - n, n)) <
                              cache_tolerance<T>());
                        CHECK(relative_difference(step.log_sum_exp, whole.log_sum_exp.rightCols(n)) <
                              cache_tolerance<T>());
                    }
                    options.threads = 2;
                    const attn::HeadsResult<T> two = attn::attend_cache(newest, cache, options);
                    CHECK(two.outputs == step.outputs);
                    CHECK(two.log_sum_exp == step.log_sum_exp);
                    CHECK(two.weights == step.weights);
                    options.threads = 1;
                    options.statistics = &request;
                    const attn::HeadsResult<T> measured = attn::attend_cache(newest, cache, options);
                    const attn::HeadsResult<T> measured_whole = attn::attend_heads(q, k, v, options);
                    CHECK(statistics_equal(measured.statistics, measured_whole.statistics, total - n));
                    CHECK(measured.outputs == rows_of(whole.outputs, total - n, n));  // statistics: streaming

                    // the plain path: the same numbers to rounding
                    options.fused = false;
                    const attn::HeadsResult<T> plain = attn::attend_cache(newest, cache, options);
                    CHECK(relative_difference(plain.outputs, rows_of(whole.outputs, total - n, n)) <
                          cache_tolerance<T>());
                    CHECK(relative_difference(plain.log_sum_exp, whole.log_sum_exp.rightCols(n)) <
                          cache_tolerance<T>());
                    if (keep)
                        CHECK(relative_difference(plain.weights, rows_of(whole.weights, total - n, n)) <
                              cache_tolerance<T>());
                    CHECK(relative_difference(plain.statistics.entropy, measured.statistics.entropy) <
                          cache_tolerance<T>());
                }
            }
}

TEST_CASE_TEMPLATE("attend_cache: causal = false and a mask see the whole cache; plain equals fused", T, float,
                   double) {
    const Index heads = 2, d = 8, total = 130, n = 5;
    const HeadStack<T> q = random_heads<T>(heads, n, d, 4), k = random_heads<T>(heads, total, d, 5),
                       v = random_heads<T>(heads, total, d, 6);
    const attn::KeyValueCache<T> cache = cache_of(k, v, static_cast<const attn::Rope<T>*>(nullptr), total);
    attn::AttentionOptions<T> options;
    options.causal = false;
    options.keep_weights = true;
    const attn::HeadsResult<T> full = attn::attend_cache(q, cache, options);
    const attn::HeadsResult<T> reference = attn::attend_heads(q, k, v, options);  // queries see every key
    CHECK(full.outputs == reference.outputs);
    CHECK(full.weights == reference.weights);
    for (Index h = 0; h < heads; ++h) CHECK((full.weights.head(h).array() > T(0)).all());

    // a mask (plain path) that hides the last two keys from every query
    attn::AllowedMask mask = attn::AllowedMask::Constant(n, total, true);
    mask.rightCols(2).setConstant(false);
    options.mask = &mask;
    const attn::HeadsResult<T> masked = attn::attend_cache(q, cache, options);
    options.mask = nullptr;
    const HeadStack<T> shorter_k = rows_of(k, 0, total - 2), shorter_v = rows_of(v, 0, total - 2);
    const attn::HeadsResult<T> shorter = attn::attend_heads(q, shorter_k, shorter_v, options);
    CHECK(relative_difference(masked.outputs, shorter.outputs) < cache_tolerance<T>());
    for (Index h = 0; h < heads; ++h) CHECK(masked.weights.head(h).rightCols(2).isZero(0));

    // causal: query row i (position total − n + i) sees keys up to its own position only
    options.causal = true;
    const attn::HeadsResult<T> causal = attn::attend_cache(q, cache, options);
    for (Index i = 0; i < n; ++i) {
        CHECK(causal.weights.head(0).row(i).rightCols(n - 1 - i).isZero(0));
        CHECK(causal.weights.head(0)(i, total - n + i) > T(0));
    }
}

TEST_CASE_TEMPLATE("grouped-query attention: fused equals plain equals each key/value head repeated for its group", T,
                   float, double) {
    const Index heads = 8, d = 16, n = 130;
    const attn::Rope<T> rope(d, attn::RopePairing::interleaved);
    const HeadStack<T> q = random_heads<T>(heads, n, d, 7);
    for (Index kv_heads : {8, 4, 2, 1}) {  // groups 1, 2, 4 and multi-query attention
        CAPTURE(kv_heads);
        const HeadStack<T> k = random_heads<T>(kv_heads, n, d, 8), v = random_heads<T>(kv_heads, n, 8, 9);
        const HeadStack<T> repeated_k = repeat_heads(k, heads / kv_heads),
                           repeated_v = repeat_heads(v, heads / kv_heads);
        for (bool causal : {true, false})
            for (bool keep : {false, true}) {
                CAPTURE(causal);
                CAPTURE(keep);
                attn::AttentionOptions<T> options;
                options.causal = causal;
                options.keep_weights = keep;
                options.keep_log_sum_exp = true;
                options.rope = &rope;
                options.threads = 2;
                const attn::HeadsResult<T> grouped = attn::attend_heads(q, k, v, options);
                const attn::HeadsResult<T> repeated = attn::attend_heads(q, repeated_k, repeated_v, options);
                CHECK(grouped.outputs == repeated.outputs);  // the same kernel work, prepared once per group
                CHECK(grouped.log_sum_exp == repeated.log_sum_exp);
                CHECK(grouped.weights == repeated.weights);
                options.fused = false;
                const attn::HeadsResult<T> plain = attn::attend_heads(q, k, v, options);
                const attn::HeadsResult<T> plain_repeated = attn::attend_heads(q, repeated_k, repeated_v, options);
                CHECK(plain.outputs == plain_repeated.outputs);
                CHECK(plain.weights == plain_repeated.weights);
                CHECK(relative_difference(plain.outputs, grouped.outputs) < cache_tolerance<T>());
                CHECK(relative_difference(plain.log_sum_exp, grouped.log_sum_exp) < cache_tolerance<T>());
                if (keep) CHECK(relative_difference(plain.weights, grouped.weights) < cache_tolerance<T>());
            }
    }
}

TEST_CASE_TEMPLATE("multi_head_attention with key_value_heads: narrower key and value projections, shared by groups", T,
                   float, double) {
    const Index width = 16, heads = 4, kv_heads = 2, d = 4, positions = 9;
    const attn::Matrix<T> x = random_matrix<T>(positions, width, 1);
    const attn::Matrix<T> wq = random_matrix<T>(width, heads * d, 2), wk = random_matrix<T>(width, kv_heads * d, 3),
                          wv = random_matrix<T>(width, kv_heads * d, 4), wo = random_matrix<T>(heads * d, width, 5);
    attn::AttentionOptions<T> options;
    options.keep_weights = true;
    const auto result = attn::multi_head_attention(x, {wq, wk, wv, wo}, {heads, kv_heads}, options);
    const attn::HeadsResult<T> by_hand =
        attn::attend_heads(attn::split_heads(attn::project(x, wq), heads),
                           repeat_heads(attn::split_heads(attn::project(x, wk), kv_heads), heads / kv_heads),
                           repeat_heads(attn::split_heads(attn::project(x, wv), kv_heads), heads / kv_heads), options);
    CHECK(result.output == attn::project(attn::merge_heads(by_hand.outputs), wo));
    CHECK(result.weights == by_hand.weights);

    CHECK_THROWS_WITH_AS(attn::multi_head_attention(x, {wq, wk, wv, wo}, {heads, 3}, options),
                         doctest::Contains("key_value_heads = 3 does not divide heads = 4"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention(x, {wq, wq, wv, wo}, {heads, kv_heads}, options),
                         doctest::Contains("projections.key has 16 columns, expected 8"), attn::shape_error);
}

TEST_CASE_TEMPLATE("attend_cache: one new position with grouped heads, folded per key/value head, equals unfolded", T,
                   float, double) {
    const Index heads = 8, d = 16, dv = 16;
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half);
    attn::HeadStatisticsRequest request;
    for (Index kv_heads : {4, 2, 1})
        for (Index total : {1, 97, 300}) {
            CAPTURE(kv_heads);
            CAPTURE(total);
            const Index group = heads / kv_heads;
            const HeadStack<T> q = random_heads<T>(heads, 1, d, 11), k = random_heads<T>(kv_heads, total, d, 12),
                               v = random_heads<T>(kv_heads, total, dv, 13);
            const attn::KeyValueCache<T> cache = cache_of(k, v, &rope, 100);
            const attn::KeyValueCache<T> repeated =
                cache_of(repeat_heads(k, group), repeat_heads(v, group), &rope, 100);
            for (bool keep : {false, true})
                for (int threads : {1, 2}) {
                    CAPTURE(keep);
                    CAPTURE(threads);
                    attn::AttentionOptions<T> options;
                    options.rope = &rope;
                    options.keep_weights = keep;
                    options.keep_log_sum_exp = true;
                    options.threads = threads;
                    const attn::HeadsResult<T> folded = attn::attend_cache(q, cache, options);
                    const attn::HeadsResult<T> unfolded = attn::attend_cache(q, repeated, options);  // group 1
                    CHECK(folded.outputs == unfolded.outputs);
                    CHECK(folded.log_sum_exp == unfolded.log_sum_exp);
                    CHECK(folded.weights == unfolded.weights);
                    REQUIRE(folded.log_sum_exp.rows() == heads);
                    REQUIRE(folded.log_sum_exp.cols() == 1);
                    // statistics take the unfolded route over the grouped cache
                    options.statistics = &request;
                    const attn::HeadsResult<T> measured = attn::attend_cache(q, cache, options);
                    // (the streaming task, not the decoding one: equal to rounding)
                    CHECK(relative_difference(measured.outputs, folded.outputs) < cache_tolerance<T>());
                    CHECK(relative_difference(measured.log_sum_exp, folded.log_sum_exp) < cache_tolerance<T>());
                    CHECK(measured.statistics.heads() == heads);
                }
        }
}

TEST_CASE_TEMPLATE("attend_cache: head sizes that are not whole packets, up to 8 rows a step, equal attend_heads' rows",
                   T, float, double) {
    for (Index d : {2, 6, 12, 20})
        for (Index n : {1, 2, 5, 8}) {
            CAPTURE(d);
            CAPTURE(n);
            const Index total = 150;
            const attn::Rope<T> rope(d, attn::RopePairing::interleaved);
            const HeadStack<T> q = random_heads<T>(4, total, d, 21), k = random_heads<T>(2, total, d, 22),
                               v = random_heads<T>(2, total, d + 1, 23);
            const attn::KeyValueCache<T> cache = cache_of(k, v, &rope, 70);
            attn::AttentionOptions<T> options;
            options.rope = &rope;
            options.keep_log_sum_exp = true;
            const attn::HeadsResult<T> whole = attn::attend_heads(q, k, v, options);
            const attn::HeadsResult<T> step = attn::attend_cache(rows_of(q, total - n, n), cache, options);
            CHECK(relative_difference(step.outputs, rows_of(whole.outputs, total - n, n)) < cache_tolerance<T>());
            CHECK(relative_difference(step.log_sum_exp, whole.log_sum_exp.rightCols(n)) < cache_tolerance<T>());
        }
}

TEST_CASE_TEMPLATE("attend_cache: a NaN in the cache is a numeric_error naming the head and row, on every route", T,
                   float, double) {
    const Index d = 8;
    HeadStack<T> keys = random_heads<T>(2, 300, d, 1);
    keys(1, 250, 3) = std::numeric_limits<T>::quiet_NaN();
    const attn::KeyValueCache<T> cache =
        cache_of(keys, random_heads<T>(2, 300, d, 2), static_cast<const attn::Rope<T>*>(nullptr), 300);
    for (Index n : {1, 3, 17})
        for (bool keep : {false, true}) {
            CAPTURE(n);
            CAPTURE(keep);
            attn::AttentionOptions<T> options;
            options.keep_weights = keep;
            CHECK_THROWS_WITH_AS(attn::attend_cache(random_heads<T>(4, n, d, 3), cache, options),
                                 doctest::Contains("(head 2) contain NaN"), attn::numeric_error);
        }
}

TEST_CASE("attend_cache: invalid queries or caches raise clear attn:: errors") {
    attn::KeyValueCache<float> cache(2, 8, 4);
    const HeadStack<float> q(4, 1, 4);
    CHECK_THROWS_WITH_AS(attn::attend_cache(q, cache), doctest::Contains("attend_cache: the cache is empty"),
                         attn::argument_error);
    cache.append(HeadStack<float>(2, 3, 4), HeadStack<float>(2, 3, 4));
    CHECK_THROWS_WITH_AS(attn::attend_cache(HeadStack<float>(3, 1, 4), cache),
                         doctest::Contains("3 query heads are not a multiple of the cache's 2 key/value heads"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attend_cache(HeadStack<float>(4, 1, 6), cache),
                         doctest::Contains("queries are 6 wide; the cache's keys are 4"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attend_cache(HeadStack<float>(4, 0, 4), cache),
                         doctest::Contains("no queries (4 heads × 0 positions)"), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::attend_cache(HeadStack<float>(4, 4, 4), cache),
                         doctest::Contains("4 query positions but the cache holds only 3"), attn::argument_error);
    attn::AttentionOptions<float> options;
    options.first_position = 2;
    CHECK_THROWS_WITH_AS(attn::attend_cache(q, cache, options), doctest::Contains("first_position = 2 must be 0"),
                         attn::argument_error);
    options.first_position = 0;
    const attn::Rope<float> rope(8, attn::RopePairing::rotate_half);
    options.rope = &rope;
    CHECK_THROWS_WITH_AS(attn::attend_cache(q, cache, options),
                         doctest::Contains("RoPE rotates heads of 8 numbers; the queries have 4"), attn::shape_error);
    options.rope = nullptr;
    options.scale = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH_AS(attn::attend_cache(q, cache, options), doctest::Contains("attend_cache: scale must be finite"),
                         attn::argument_error);
    options.scale.reset();
    attn::AllowedMask mask = attn::AllowedMask::Constant(1, 2, true);
    options.mask = &mask;
    CHECK_THROWS_AS(attn::attend_cache(q, cache, options), attn::shape_error);  // (queries × cache size) expected
    attn::HeadsResult<float> result;
    result.outputs = HeadStack<float>(4, 2, 4);
    CHECK_THROWS_WITH_AS(attn::attend_cache_into(q, cache, {}, result),
                         doctest::Contains("attend_cache: outputs storage is 4 × (2 × 4), expected 4 × (1 × 4)"),
                         attn::shape_error);

    // attend_heads: key/value heads that do not divide the query heads
    const HeadStack<float> three(3, 2, 4), two(2, 2, 4), four(4, 2, 4);
    CHECK_THROWS_WITH_AS(attn::attend_heads(four, three, three), doctest::Contains("have 4, 3 and 3 heads"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attend_heads(four, two, four), doctest::Contains("have 4, 2 and 4 heads"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attend_heads(two, four, four), doctest::Contains("have 2, 4 and 4 heads"),
                         attn::shape_error);
}

TEST_CASE("attend_cache_into one result: a repeated decoding step allocates nothing, cache read in place") {
    const Index heads = 8, kv_heads = 2, d = 32, total = 400;
    const attn::Rope<float> rope(d, attn::RopePairing::rotate_half);
    const attn::KeyValueCache<float> cache =
        cache_of(random_heads<float>(kv_heads, total, d, 1), random_heads<float>(kv_heads, total, d, 2), &rope, total);
    for (Index n : {1, 3}) {
        CAPTURE(n);
        const HeadStack<float> q = random_heads<float>(heads, n, d, 3);
        attn::AttentionOptions<float> options;
        options.rope = &rope;
        options.keep_log_sum_exp = true;
        attn::HeadsResult<float> result;
        attn::attend_cache_into(q, cache, options, result);  // the first call allocates
        const attn::HeadsResult<float> fresh = attn::attend_cache(q, cache, options);
        CHECK(attn::test::allocations_in([&] { attn::attend_cache_into(q, cache, options, result); }) == 0);
        CHECK(result.outputs == fresh.outputs);
        CHECK(result.log_sum_exp == fresh.log_sum_exp);
    }
}

TEST_CASE("attend_cache: on 2 threads and on kept workers a long cache gives the bits of 1 thread") {
    // 2 × 8,192 positions × 128 numbers of keys and values: 8 MB, enough to start a second thread
    const Index heads = 8, kv_heads = 2, d = 64, total = 8192;
    const attn::KeyValueCache<float> cache =
        cache_of(random_heads<float>(kv_heads, total, d, 1), random_heads<float>(kv_heads, total, d, 2),
                 static_cast<const attn::Rope<float>*>(nullptr), total);
    attn::Workers workers(2);
    for (Index n : {1, 3}) {
        CAPTURE(n);
        const HeadStack<float> q = random_heads<float>(heads, n, d, 3);
        attn::AttentionOptions<float> options;
        options.keep_log_sum_exp = true;
        const attn::HeadsResult<float> one = attn::attend_cache(q, cache, options);
        options.threads = 2;
        const attn::HeadsResult<float> two = attn::attend_cache(q, cache, options);
        options.threads = workers;
        const attn::HeadsResult<float> kept = attn::attend_cache(q, cache, options);
        CHECK(two.outputs == one.outputs);
        CHECK(two.log_sum_exp == one.log_sum_exp);
        CHECK(kept.outputs == one.outputs);
        CHECK(kept.log_sum_exp == one.log_sum_exp);
    }
}
