// The fused kernel (detail/kernels/causal_kernel.hpp) with a sliding window
// (AttentionOptions::window) and a soft cap on the scores (AttentionOptions::score_cap): every
// route the kernel has — streaming, exact weights, decoding over a cache, statistics,
// log-sum-exps and weights on demand — against a double-precision loop reference and against
// the chapter's steps (the plain path: soft_cap_in_place, apply_causal_mask,
// apply_sliding_window_mask, softmax_rows), on shapes that cross its block boundaries.
#include <doctest/doctest.h>
#include <attn/core/attention.hpp>
#include <attn/core/kv_cache.hpp>
#include <attn/core/weights_on_demand.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "support.hpp"

using attn::HeadStack;
using attn::Index;
using attn::test::random_matrix;
using attn::test::random_stack;
using attn::test::Table;

namespace sliding {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// One head in double with loops: query row i sits at position first_position + i and sees keys
/// j with position − window < j ≤ position (every j ≤ position for window 0); each score is
/// q·k·scale, then cap·tanh(score / cap) when cap > 0.
struct Reference {
    Table output, weights;
    std::vector<double> log_sum_exp;
};

inline Index first_key(Index position, Index window) {
    return window > 0 ? std::max<Index>(0, position - window + 1) : 0;
}

inline Reference reference(const Table& q, const Table& k, const Table& v, double scale, Index first_position,
                           Index window, double cap) {
    const std::size_t n = q.size(), m = k.size(), d = q[0].size(), dv = v[0].size();
    Reference r{Table(n, std::vector<double>(dv, 0.0)), Table(n, std::vector<double>(m, 0.0)),
                std::vector<double>(n, -kInfinity)};
    for (std::size_t i = 0; i < n; ++i) {
        const Index position = first_position + Index(i);
        const std::size_t lo = std::size_t(std::min<Index>(Index(m), first_key(position, window)));
        const std::size_t hi = std::min(m, std::size_t(position) + 1);
        if (lo >= hi) continue;  // nothing visible: zeros
        std::vector<double> s(m, 0.0);
        double largest = -kInfinity;
        for (std::size_t j = lo; j < hi; ++j) {
            double dot = 0.0;
            for (std::size_t c = 0; c < d; ++c) dot += q[i][c] * k[j][c];
            s[j] = dot * scale;
            if (cap > 0) s[j] = cap * std::tanh(s[j] / cap);
            largest = std::max(largest, s[j]);
        }
        double total = 0.0;
        for (std::size_t j = lo; j < hi; ++j) total += (r.weights[i][j] = std::exp(s[j] - largest));
        for (std::size_t j = lo; j < hi; ++j) {
            r.weights[i][j] /= total;
            for (std::size_t c = 0; c < dv; ++c) r.output[i][c] += r.weights[i][j] * v[j][c];
        }
        r.log_sum_exp[i] = largest + std::log(total);
    }
    return r;
}

/// max |a − b| / max(1, max |b|).
template <class D>
double relative_error(const Eigen::MatrixBase<D>& a, const Table& b) {
    double largest = 1.0;
    for (const auto& row : b)
        for (double x : row) largest = std::max(largest, std::abs(x));
    return attn::test::max_abs_difference(a, b) / largest;
}

/// Largest difference between log-sum-exps (1 × queries) and the reference's; −∞ must match exactly.
template <class T>
double lse_error(const attn::Matrix<T>& lse, const std::vector<double>& expected) {
    REQUIRE(lse.size() == Index(expected.size()));
    double worst = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double x = double(lse(0, Index(i)));
        if (expected[i] == -kInfinity || x == -kInfinity)
            worst = std::max(worst, x == expected[i] ? 0.0 : kInfinity);
        else
            worst = std::max(worst, std::abs(x - expected[i]) / std::max(1.0, std::abs(expected[i])));
    }
    return worst;
}

template <class T>
double tolerance() {
    return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

/// Weights outside each row's window, or after its position, are exactly 0; rows that see a
/// key sum to 1, the others are all 0.
template <class T>
void check_weights_exact(const attn::Matrix<T>& w, Index first_position, Index window) {
    Index nonzero_hidden = 0, bad_sums = 0;
    const double slack = std::is_same_v<T, float> ? 2e-6 : 1e-13;
    for (Index i = 0; i < w.rows(); ++i) {
        const Index position = first_position + i, hi = std::min(w.cols(), position + 1);
        const Index lo = std::min(hi, first_key(position, window));
        for (Index j = 0; j < w.cols(); ++j) nonzero_hidden += (j < lo || j >= hi) && w(i, j) != T(0);
        bad_sums += std::abs(double(w.row(i).sum()) - (lo < hi ? 1.0 : 0.0)) > slack;
    }
    CHECK(nonzero_hidden == 0);
    CHECK(bad_sums == 0);
}

template <class T>
attn::AttentionOptions<T> windowed(Index window, double cap, Index first_position = 0) {
    attn::AttentionOptions<T> o;
    o.window = window;
    o.score_cap = T(cap);
    o.first_position = first_position;
    o.keep_log_sum_exp = true;
    return o;
}

/// Streaming, exact and plain results of one head against the reference.
template <class T>
void check_routes(const attn::Matrix<T>& q, const attn::Matrix<T>& k, const attn::Matrix<T>& v, Index first_position,
                  Index window, double cap) {
    const Reference expected = reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v),
                                         1.0 / std::sqrt(double(q.cols())), first_position, window, cap);
    attn::AttentionOptions<T> options = windowed<T>(window, cap, first_position);
    const auto streamed = attn::attention(q, k, v, options);
    CHECK(relative_error(streamed.output, expected.output) < tolerance<T>());
    CHECK(lse_error(streamed.log_sum_exp, expected.log_sum_exp) < tolerance<T>());
    options.keep_weights = true;
    const auto exact = attn::attention(q, k, v, options);
    CHECK(relative_error(exact.output, expected.output) < tolerance<T>());
    CHECK(attn::test::max_abs_difference(exact.weights, expected.weights) < attn::test::tolerance<T>());
    CHECK(lse_error(exact.log_sum_exp, expected.log_sum_exp) < tolerance<T>());
    check_weights_exact(exact.weights, first_position, window);
    options.fused = false;  // the chapter's steps
    const auto plain = attn::attention(q, k, v, options);
    CHECK(relative_error(plain.output, expected.output) < tolerance<T>());
    CHECK(attn::test::max_abs_difference(plain.weights, expected.weights) < attn::test::tolerance<T>());
    CHECK(lse_error(plain.log_sum_exp, expected.log_sum_exp) < tolerance<T>());
    CHECK(streamed.output.isApprox(plain.output, T(tolerance<T>())));
    CHECK(exact.weights.isApprox(plain.weights, T(tolerance<T>())));
}

template <class T>
HeadStack<T> rows_of(const HeadStack<T>& stack, Index first, Index count) {
    HeadStack<T> out(stack.heads(), count, stack.cols());
    for (Index h = 0; h < stack.heads(); ++h) out.head(h) = stack.head(h).middleRows(first, count);
    return out;
}

template <class T>
double stack_difference(const HeadStack<T>& a, const HeadStack<T>& b) {
    REQUIRE(a.heads() == b.heads());
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    double worst = 0;
    for (Index h = 0; h < a.heads(); ++h) {
        const double scale = std::max(1.0, double(b.head(h).cwiseAbs().maxCoeff()));
        worst = std::max(worst, double((a.head(h) - b.head(h)).cwiseAbs().maxCoeff()) / scale);
    }
    return worst;
}

template <class T>
double matrix_difference(const attn::Matrix<T>& a, const attn::Matrix<T>& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    double worst = 0;
    for (Index i = 0; i < a.size(); ++i) {
        const double x = double(a.data()[i]), y = double(b.data()[i]);
        if (x == y) continue;  // −∞ too
        worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
    return worst;
}

}  // namespace sliding

TEST_CASE_TEMPLATE("sliding window and soft cap: the fused kernel matches the double loop reference across blocks", T,
                   float, double) {
    // (positions, head size, value size) around the 96-query and 128-key blocks
    const std::vector<std::tuple<Index, Index, Index>> shapes = {
        {1, 64, 64},   {7, 8, 5},     {95, 64, 64},  {97, 32, 32}, {128, 64, 48},
        {129, 128, 1}, {200, 64, 16}, {300, 64, 20}, {385, 32, 9}, {520, 16, 16}};
    for (const auto& shape : shapes) {
        const Index n = std::get<0>(shape), d = std::get<1>(shape), dv = std::get<2>(shape);
        // queries of spread 2: scores of spread 2, which a cap of 2 bends
        const auto q = random_matrix<T>(n, d, 300, 2.0), k = random_matrix<T>(n, d, 301),
                   v = random_matrix<T>(n, dv, 302);
        for (Index window : {0, 1, 2, 5, 64, 96, 127, 128, 129, 250, 400})
            for (double cap : {0.0, 2.0}) {
                if ((window == 0 && cap == 0.0) || window > n + 1) continue;
                CAPTURE(n);
                CAPTURE(d);
                CAPTURE(dv);
                CAPTURE(window);
                CAPTURE(cap);
                sliding::check_routes(q, k, v, 0, window, cap);
            }
        CAPTURE(n);
        sliding::check_routes(q, k, v, 0, n, 30.0);  // a window of every key, a cap that barely bends
    }
}

TEST_CASE_TEMPLATE("sliding window: queries after cached keys (first_position > 0), and windows past the last key", T,
                   float, double) {
    // (queries, keys, first_position); the last: positions up to 96 with 40 keys, so narrow
    // windows of late rows hold no key at all (zero output, log-sum-exp −∞)
    const std::vector<std::tuple<Index, Index, Index>> cases = {
        {1, 300, 299}, {37, 150, 113}, {100, 260, 160}, {130, 130, 50}, {20, 400, 10}, {97, 40, 0}, {150, 1150, 1000}};
    for (const auto& c : cases) {
        const Index nq = std::get<0>(c), nk = std::get<1>(c), first = std::get<2>(c);
        const auto q = random_matrix<T>(nq, 32, 310, 2.0), k = random_matrix<T>(nk, 32, 311),
                   v = random_matrix<T>(nk, 24, 312);
        for (Index window : {1, 16, 100, 129})
            for (double cap : {0.0, 3.0}) {
                CAPTURE(nq);
                CAPTURE(nk);
                CAPTURE(first);
                CAPTURE(window);
                CAPTURE(cap);
                sliding::check_routes(q, k, v, first, window, cap);
            }
    }
}

TEST_CASE_TEMPLATE("sliding window: a window holding every key gives the bits of no window", T, float, double) {
    for (Index n : {1, 97, 300}) {
        CAPTURE(n);
        const auto q = random_matrix<T>(n, 64, 320), k = random_matrix<T>(n, 64, 321), v = random_matrix<T>(n, 64, 322);
        for (bool keep : {false, true}) {
            attn::AttentionOptions<T> options = sliding::windowed<T>(0, 0.0);
            options.keep_weights = keep;
            const auto none = attn::attention(q, k, v, options);
            for (Index window : {n, n + 1, 10 * n}) {
                options.window = window;
                const auto all = attn::attention(q, k, v, options);
                CHECK(all.output == none.output);
                CHECK(all.weights == none.weights);
                CHECK(all.log_sum_exp == none.log_sum_exp);
            }
        }
    }
}

TEST_CASE_TEMPLATE("sliding window: keys and values outside every window are never read (NaN there changes nothing)", T,
                   float, double) {
    // 150 queries at positions 1000 … 1149 over 1150 keys: every window starts at 1000 − window
    // + 1 or later, so the keys before (7 whole key blocks and more) may hold anything.
    const Index nq = 150, nk = 1150, first = 1000, d = 32;
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half, 10000.0, 2048);
    for (Index window : {1, 100, 129, 1000})
        for (bool use_rope : {false, true}) {
            CAPTURE(window);
            CAPTURE(use_rope);
            const HeadStack<T> q = random_stack<T>(4, nq, d, 330), clean_keys = random_stack<T>(2, nk, d, 340),
                               clean_values = random_stack<T>(2, nk, d, 350);
            HeadStack<T> keys = clean_keys, values = clean_values;
            const Index poisoned = first - window + 1;  // keys 0 … poisoned − 1
            for (Index g = 0; g < 2; ++g) {
                keys.head(g).topRows(poisoned).setConstant(std::numeric_limits<T>::quiet_NaN());
                values.head(g).topRows(poisoned).setConstant(std::numeric_limits<T>::quiet_NaN());
            }
            const attn::HeadStatisticsRequest request{4, std::vector<Index>{0, 1010}, false};
            for (int route = 0; route < 3; ++route) {  // streaming, exact weights, statistics
                CAPTURE(route);
                attn::AttentionOptions<T> options = sliding::windowed<T>(window, 5.0, first);
                if (use_rope) options.rope = &rope;
                options.keep_weights = route == 1;
                if (route == 2) options.statistics = &request;
                options.threads = 2;
                const attn::HeadsResult<T> clean = attn::attend_heads(q, clean_keys, clean_values, options);
                const attn::HeadsResult<T> dirty = attn::attend_heads(q, keys, values, options);
                CHECK(dirty.outputs == clean.outputs);
                CHECK(dirty.log_sum_exp == clean.log_sum_exp);
                CHECK(dirty.weights == clean.weights);
                if (route == 2) {
                    CHECK(dirty.statistics.entropy == clean.statistics.entropy);
                    CHECK(dirty.statistics.markers == clean.statistics.markers);
                    const attn::HeadsResult<T> measured = attn::attention_statistics(q, keys, options);
                    CHECK(measured.statistics.distance == clean.statistics.distance);
                }
            }
            // decoding over a cache: one position (folded per key/value head) and a few
            for (Index n : {1, 5}) {
                CAPTURE(n);
                attn::KeyValueCache<T> cache(2, nk, d, d), clean_cache(2, nk, d, d);
                cache.append(keys, values, use_rope ? &rope : nullptr);
                clean_cache.append(clean_keys, clean_values, use_rope ? &rope : nullptr);
                attn::AttentionOptions<T> options = sliding::windowed<T>(window, 5.0);
                if (use_rope) options.rope = &rope;
                const HeadStack<T> newest = sliding::rows_of(q, nq - n, n);
                const attn::HeadsResult<T> step = attn::attend_cache(newest, cache, options);
                CHECK(step.outputs == attn::attend_cache(newest, clean_cache, options).outputs);
                CHECK(step.outputs.data()[0] == step.outputs.data()[0]);  // not NaN
            }
        }
}

TEST_CASE_TEMPLATE(
    "sliding window and cap with grouped heads: any thread count the same bits, each head as attention()", T, float,
    double) {
    const Index n = 700, d = 64;
    const HeadStack<T> q = random_stack<T>(4, n, d, 360, 2.0), k = random_stack<T>(2, n, d, 370),
                       v = random_stack<T>(2, n, d, 380);
    for (bool keep : {false, true}) {
        CAPTURE(keep);
        attn::AttentionOptions<T> options = sliding::windowed<T>(200, 4.0);
        options.keep_weights = keep;
        const attn::HeadsResult<T> one = attn::attend_heads(q, k, v, options);
        options.threads = 2;
        const attn::HeadsResult<T> two = attn::attend_heads(q, k, v, options);
        CHECK(two.outputs == one.outputs);
        CHECK(two.weights == one.weights);
        CHECK(two.log_sum_exp == one.log_sum_exp);
        options.threads = 1;
        for (Index h = 0; h < 4; ++h) {
            const auto head = attn::attention(q.head(h), k.head(h / 2), v.head(h / 2), options);
            CHECK(head.output == one.outputs.head(h));
            CHECK(head.log_sum_exp == one.log_sum_exp.row(h));
        }
        options.fused = false;
        const attn::HeadsResult<T> plain = attn::attend_heads(q, k, v, options);
        CHECK(sliding::stack_difference(plain.outputs, one.outputs) < sliding::tolerance<T>());
        CHECK(sliding::matrix_difference(plain.log_sum_exp, one.log_sum_exp) < sliding::tolerance<T>());
        if (keep) CHECK(sliding::stack_difference(plain.weights, one.weights) < sliding::tolerance<T>());
    }
}

TEST_CASE_TEMPLATE("sliding window and cap over a cache: attend_cache gives attend_heads' newest rows on every route",
                   T, float, double) {
    const Index heads = 4, d = 16, dv = 12;
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half, 10000.0, 512);
    for (Index kv_heads : {4, 2})
        for (Index total : {1, 97, 300})
            for (Index n : {1, 3, 17})
                for (Index window : {1, 30, 128}) {
                    if (n > total) continue;
                    CAPTURE(kv_heads);
                    CAPTURE(total);
                    CAPTURE(n);
                    CAPTURE(window);
                    const HeadStack<T> q = random_stack<T>(heads, total, d, 400, 2.0),
                                       k = random_stack<T>(kv_heads, total, d, 410),
                                       v = random_stack<T>(kv_heads, total, dv, 420);
                    attn::KeyValueCache<T> cache(kv_heads, total + 3, d, dv);
                    cache.append(k, v, &rope);
                    const HeadStack<T> newest = sliding::rows_of(q, total - n, n);
                    for (bool keep : {false, true}) {
                        CAPTURE(keep);
                        attn::AttentionOptions<T> options = sliding::windowed<T>(window, 3.0);
                        options.rope = &rope;
                        options.keep_weights = keep;
                        const attn::HeadsResult<T> whole = attn::attend_heads(q, k, v, options);
                        const attn::HeadsResult<T> step = attn::attend_cache(newest, cache, options);
                        // up to 8 rows without weights (or one folded row) take the decoding
                        // task, whose dot products along d round differently
                        const bool same_route = keep ? !(n == 1 && kv_heads < heads) : n > 8;
                        if (same_route) {
                            CHECK(step.outputs == sliding::rows_of(whole.outputs, total - n, n));
                            CHECK(step.log_sum_exp == whole.log_sum_exp.rightCols(n));
                        }
                        CHECK(sliding::stack_difference(step.outputs, sliding::rows_of(whole.outputs, total - n, n)) <
                              sliding::tolerance<T>());
                        CHECK(sliding::matrix_difference(step.log_sum_exp, attn::Matrix<T>(whole.log_sum_exp.rightCols(
                                                                               n))) < sliding::tolerance<T>());
                        if (keep)
                            CHECK(
                                sliding::stack_difference(step.weights, sliding::rows_of(whole.weights, total - n, n)) <
                                sliding::tolerance<T>());
                        options.fused = false;
                        const attn::HeadsResult<T> plain = attn::attend_cache(newest, cache, options);
                        CHECK(sliding::stack_difference(plain.outputs, step.outputs) < sliding::tolerance<T>());
                        if (keep)
                            CHECK(sliding::stack_difference(plain.weights, step.weights) < sliding::tolerance<T>());
                    }
                }
}

TEST_CASE_TEMPLATE(
    "sliding window and cap: head statistics from the streaming pass equal the weights' and the plain "
    "path's; the even spread counts the window's keys",
    T, float, double) {
    attn::HeadStatisticsRequest request{6, std::vector<Index>{0, 3, 140}, false};
    for (Index n : {5, 97, 300})
        for (Index window : {1, 4, 50, 129})
            for (bool excluded : {false, true}) {
                CAPTURE(n);
                CAPTURE(window);
                CAPTURE(excluded);
                request.back_excludes_markers = excluded;
                const HeadStack<T> q = random_stack<T>(2, n, 32, 430, 2.0), k = random_stack<T>(2, n, 32, 440),
                                   v = random_stack<T>(2, n, 32, 450);
                attn::AttentionOptions<T> options = sliding::windowed<T>(window, 2.5);
                options.statistics = &request;
                const attn::HeadsResult<T> streamed = attn::attend_heads(q, k, v, options);
                CHECK(attn::attention_statistics(q, k, options).statistics.entropy == streamed.statistics.entropy);
                options.keep_weights = true;
                const attn::HeadsResult<T> exact = attn::attend_heads(q, k, v, options);
                options.keep_weights = false;
                options.fused = false;
                const attn::HeadsResult<T> plain = attn::attend_heads(q, k, v, options);
                const auto planes = streamed.statistics.planes();
                const auto exact_planes = exact.statistics.planes(), plain_planes = plain.statistics.planes();
                for (std::size_t p = 0; p < planes.size(); ++p) {
                    CAPTURE(p);
                    // distances are positions (up to n): relative to the row's reach
                    const double scale = p == planes.size() - 1 ? double(std::min(n, window)) : 1.0;
                    CHECK(sliding::matrix_difference(*exact_planes[p], *planes[p]) / scale <
                          10 * sliding::tolerance<T>());
                    CHECK(sliding::matrix_difference(*plain_planes[p], *planes[p]) / scale <
                          10 * sliding::tolerance<T>());
                }
                CHECK(streamed.statistics.window == window);
                // an even spread over each row's window
                for (Index i : {Index(0), n / 2, n - 1}) {
                    const Index lo = sliding::first_key(i, window), count = i + 1 - lo;
                    const auto even = streamed.statistics.even_spread(i);
                    CHECK(even.largest == doctest::Approx(1.0 / double(count)));
                    CHECK(even.entropy == doctest::Approx(std::log(double(count))));
                    CHECK(even.first == doctest::Approx(lo == 0 ? 1.0 / double(count) : 0.0));
                    CHECK(even.previous == doctest::Approx(i >= 1 && i - 1 >= lo ? 1.0 / double(count) : 0.0));
                    CHECK(even.self == doctest::Approx(1.0 / double(count)));
                    double far = 0, marked = 0, distance = 0;
                    for (Index j = lo; j <= i; ++j) {
                        const bool marker = std::count(request.markers.begin(), request.markers.end(), j) > 0;
                        far += (j <= i - request.back && !(excluded && marker)) ? 1.0 : 0.0;
                        marked += marker ? 1.0 : 0.0;
                        distance += double(i - j);
                    }
                    CHECK(even.back == doctest::Approx(far / double(count)));
                    CHECK(even.markers == doctest::Approx(marked / double(count)));
                    CHECK(even.distance == doctest::Approx(distance / double(count)));
                }
            }
}

TEST_CASE_TEMPLATE("sliding window and cap: weights on demand from the kept log-sum-exps equal the weights path", T,
                   float, double) {
    const Index nq = 230, nk = 260, d = 32, first = nk - nq;
    const HeadStack<T> q = random_stack<T>(3, nq, d, 460, 2.0), k = random_stack<T>(3, nk, d, 470),
                       v = random_stack<T>(3, nk, d, 480);
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half, 10000.0, 512);
    const double relative = std::is_same_v<T, float> ? 1e-6 : 1e-13;
    for (Index window : {1, 37, 200})
        for (double cap : {0.0, 2.0}) {
            CAPTURE(window);
            CAPTURE(cap);
            attn::AttentionOptions<T> options = sliding::windowed<T>(window, cap, first);
            options.rope = &rope;
            const attn::HeadsResult<T> streamed = attn::attend_heads(q, k, v, options);
            options.keep_weights = true;
            const attn::HeadsResult<T> exact = attn::attend_heads(q, k, v, options);
            options.keep_weights = false;
            // whole rows, every head
            const HeadStack<T> rows = attn::attention_rows(q, k, streamed.log_sum_exp, {}, {}, {}, options).weights;
            CHECK(sliding::stack_difference(rows, exact.weights) < relative);
            // a tile of keys across the window's start, chosen rows and heads
            const std::vector<Index> heads = {2, 0}, chosen = {229, 0, 120, 96};
            const attn::KeyRange range{150, 250};
            const HeadStack<T> tile =
                attn::attention_rows(q, k, exact.log_sum_exp, heads, chosen, range, options).weights;
            double worst = 0;
            for (Index a = 0; a < 2; ++a)
                for (Index b = 0; b < 4; ++b)
                    for (Index c = 0; c < 100; ++c) {
                        const double x = double(tile(a, b, c)),
                                     y = double(exact.weights(heads[std::size_t(a)], chosen[std::size_t(b)], 150 + c));
                        worst = std::max(worst, std::abs(x - y) / std::max(y, 1e-6));
                        if (y == 0) CHECK(x == 0);  // outside the window: exactly 0
                    }
            CHECK(worst < 2 * relative);
        }
}

TEST_CASE_TEMPLATE("soft cap: NaN scores are still a numeric_error, +infinity becomes the cap", T, float, double) {
    const Index n = 300, d = 16;
    auto q = random_matrix<T>(n, d, 490);
    const auto k = random_matrix<T>(n, d, 491), v = random_matrix<T>(n, d, 492);
    q(250, 3) = std::numeric_limits<T>::quiet_NaN();
    for (bool keep : {false, true})
        for (bool fused : {true, false}) {
            CAPTURE(keep);
            CAPTURE(fused);
            attn::AttentionOptions<T> options = sliding::windowed<T>(20, 5.0);
            options.keep_weights = keep;
            options.fused = fused;
            CHECK_THROWS_AS(attn::attention(q, k, v, options), attn::numeric_error);
            options.first_position = n - 1;  // decoding one row
            CHECK_THROWS_AS(attn::attention(q.middleRows(250, 1), k, v, options), attn::numeric_error);
        }
    // +∞ and −∞ scores are capped to ±cap, as tanh does: finite weights
    q(250, 3) = std::numeric_limits<T>::infinity();
    attn::AttentionOptions<T> options = sliding::windowed<T>(0, 5.0);
    const auto fused = attn::attention(q, k, v, options);
    options.fused = false;
    const auto plain = attn::attention(q, k, v, options);
    CHECK(fused.output.allFinite());
    CHECK(fused.output.isApprox(plain.output, T(sliding::tolerance<T>())));
}

TEST_CASE("sliding window and cap: bad values are argument_errors naming them, on every entry point") {
    const auto x = random_matrix<float>(10, 8, 500);
    const HeadStack<float> heads = random_stack<float>(2, 10, 8, 510);
    attn::KeyValueCache<float> cache(2, 10, 8, 8);
    cache.append(heads, heads);
    const attn::Matrix<float> lse =
        attn::attend_heads(heads, heads, heads, sliding::windowed<float>(0, 0.0)).log_sum_exp;
    const auto every_entry = [&](const attn::AttentionOptions<float>& options, const char* named) {
        for (bool fused : {true, false}) {
            CAPTURE(fused);
            attn::AttentionOptions<float> o = options;
            o.fused = fused;
            CHECK_THROWS_WITH_AS(attn::attention(x, x, x, o), doctest::Contains(named), attn::argument_error);
            CHECK_THROWS_WITH_AS(attn::attend_heads(heads, heads, heads, o), doctest::Contains(named),
                                 attn::argument_error);
            CHECK_THROWS_WITH_AS(attn::attend_cache(sliding::rows_of(heads, 9, 1), cache, o), doctest::Contains(named),
                                 attn::argument_error);
            attn::HeadStatisticsRequest request;
            o.statistics = &request;
            CHECK_THROWS_WITH_AS(attn::attention_statistics(heads, heads, o), doctest::Contains(named),
                                 attn::argument_error);
            o.statistics = nullptr;
            CHECK_THROWS_WITH_AS(attn::attention_rows(heads, heads, lse, {}, {}, {}, o), doctest::Contains(named),
                                 attn::argument_error);
        }
    };
    every_entry(sliding::windowed<float>(-1, 0.0), "window must be ≥ 0");
    attn::AttentionOptions<float> not_causal = sliding::windowed<float>(4, 0.0);
    not_causal.causal = false;
    every_entry(not_causal, "window = 4 needs causal");
    every_entry(sliding::windowed<float>(0, -1.0), "score_cap must be finite");
    every_entry(sliding::windowed<float>(0, std::numeric_limits<double>::infinity()), "score_cap must be finite");
    every_entry(sliding::windowed<float>(0, std::numeric_limits<double>::quiet_NaN()), "score_cap must be finite");
}
