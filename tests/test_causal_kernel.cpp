// The fused attention kernel (detail/kernels/causal_kernel.hpp) behind attention() and
// attend_heads(): against a double-precision loop reference and against the plain
// step-by-step path, on shapes that cross its block boundaries.
#include <doctest/doctest.h>
#include <attn/core/attention.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <thread>
#include <tuple>
#include <vector>

#include "allocation_counter.hpp"
#include "support.hpp"

using attn::Index;
using attn::test::random_matrix;
using attn::test::Table;

namespace {

/// softmax(q kᵀ · scale) · v in double with loops; query row i sits at position
/// first_position + i and may see keys 0 … first_position + i when causal.
attn::test::NaiveHead reference(const Table& q, const Table& k, const Table& v, bool causal, double scale,
                                Index first_position) {
    const std::size_t n = q.size(), m = k.size(), d = q[0].size(), dv = v[0].size();
    attn::test::NaiveHead r{Table(n, std::vector<double>(dv, 0.0)), Table(n, std::vector<double>(m, 0.0))};
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t visible = causal ? std::min(m, i + std::size_t(first_position) + 1) : m;
        std::vector<double> s(visible);
        double largest = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < visible; ++j) {
            double dot = 0.0;
            for (std::size_t c = 0; c < d; ++c) dot += q[i][c] * k[j][c];
            s[j] = dot * scale;
            largest = std::max(largest, s[j]);
        }
        double total = 0.0;
        for (std::size_t j = 0; j < visible; ++j) total += (r.weights[i][j] = std::exp(s[j] - largest));
        for (std::size_t j = 0; j < visible; ++j) {
            r.weights[i][j] /= total;
            for (std::size_t c = 0; c < dv; ++c) r.output[i][c] += r.weights[i][j] * v[j][c];
        }
    }
    return r;
}

/// max |a − b| / max(1, max |b|): the relative error of a whole matrix.
template <class D>
double relative_error(const Eigen::MatrixBase<D>& a, const Table& b) {
    double largest = 1.0;
    for (const auto& row : b)
        for (double x : row) largest = std::max(largest, std::abs(x));
    return attn::test::max_abs_difference(a, b) / largest;
}

template <class T>
constexpr double relative_tolerance() {
    return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T>
attn::AttentionOptions<T> options_for(bool causal, bool keep, Index first_position = 0, int threads = 1) {
    attn::AttentionOptions<T> o;
    o.causal = causal;
    o.keep_weights = keep;
    o.first_position = first_position;
    o.threads = threads;
    return o;
}

template <class T>
attn::AttentionOptions<T> plain(attn::AttentionOptions<T> o) {
    o.fused = false;
    return o;
}

template <class T>
void check_weights_exact(const attn::Matrix<T>& w, Index first_position, bool causal) {
    Index nonzero_masked = 0, bad_sums = 0;
    const double slack = std::is_same_v<T, float> ? 2e-6 : 1e-13;
    for (Index i = 0; i < w.rows(); ++i) {
        const Index visible = causal ? std::min(w.cols(), i + first_position + 1) : w.cols();
        for (Index j = visible; j < w.cols(); ++j) nonzero_masked += w(i, j) != T(0);
        bad_sums += std::abs(double(w.row(i).sum()) - 1.0) > slack;
    }
    CHECK(nonzero_masked == 0);  // masked weights exactly 0
    CHECK(bad_sums == 0);        // every row sums to 1
}

}  // namespace

TEST_CASE_TEMPLATE("fused kernel matches the double loop reference across block boundaries", T, float, double) {
    // (positions, head size, value size): 1 position, lengths around the 96-row query
    // and 128-key blocks, head sizes 32, 64, 128, value sizes unlike the head size (9 and
    // 20: the streaming output's tiles of 8 or 4 value columns, the last one partial).
    const std::vector<std::tuple<Index, Index, Index>> shapes = {
        {1, 64, 64},    {2, 32, 32},   {7, 8, 5},       {95, 64, 64},  {96, 64, 64},
        {97, 32, 32},   {128, 64, 48}, {129, 128, 128}, {200, 64, 16}, {250, 32, 96},
        {300, 128, 64}, {193, 6, 3},   {7, 1, 1},       {150, 64, 20}, {110, 16, 9}};
    for (const auto& shape : shapes) {
        const Index n = std::get<0>(shape), d = std::get<1>(shape), dv = std::get<2>(shape);
        CAPTURE(n);
        CAPTURE(d);
        CAPTURE(dv);
        const auto q = random_matrix<T>(n, d, 100), k = random_matrix<T>(n, d, 101), v = random_matrix<T>(n, dv, 102);
        const double scale = 1.0 / std::sqrt(double(d));
        for (bool causal : {true, false}) {
            CAPTURE(causal);
            const auto expected =
                reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v), causal, scale, 0);
            const auto streamed = attn::attention(q, k, v, options_for<T>(causal, false));
            CHECK(streamed.weights.size() == 0);
            CHECK(relative_error(streamed.output, expected.output) < relative_tolerance<T>());
            const auto exact = attn::attention(q, k, v, options_for<T>(causal, true));
            CHECK(relative_error(exact.output, expected.output) < relative_tolerance<T>());
            CHECK(attn::test::max_abs_difference(exact.weights, expected.weights) < attn::test::tolerance<T>());
            check_weights_exact(exact.weights, 0, causal);
            // and against the plain path
            const auto unfused = attn::attention(q, k, v, plain(options_for<T>(causal, true)));
            CHECK(streamed.output.isApprox(unfused.output, T(relative_tolerance<T>())));
            CHECK(exact.weights.isApprox(unfused.weights, T(relative_tolerance<T>())));
        }
    }
}

TEST_CASE_TEMPLATE("fused kernel: queries after cached keys (first_position > 0) and cross lengths", T, float, double) {
    // (queries, keys, first_position): the usual decode layout keys = first + queries, and
    // caches longer or shorter than that.
    const std::vector<std::tuple<Index, Index, Index>> cases = {{1, 300, 299},  {37, 150, 113}, {100, 260, 160},
                                                                {130, 130, 50}, {20, 400, 10},  {97, 40, 0}};
    for (const auto& shape : cases) {
        const Index nq = std::get<0>(shape), nk = std::get<1>(shape), first = std::get<2>(shape);
        CAPTURE(nq);
        CAPTURE(nk);
        CAPTURE(first);
        const Index d = 64, dv = 64;
        const auto q = random_matrix<T>(nq, d, 200), k = random_matrix<T>(nk, d, 201),
                   v = random_matrix<T>(nk, dv, 202);
        const auto expected = reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v), true,
                                        1.0 / std::sqrt(double(d)), first);
        const auto streamed = attn::attention(q, k, v, options_for<T>(true, false, first));
        CHECK(relative_error(streamed.output, expected.output) < relative_tolerance<T>());
        const auto exact = attn::attention(q, k, v, options_for<T>(true, true, first));
        CHECK(relative_error(exact.output, expected.output) < relative_tolerance<T>());
        CHECK(attn::test::max_abs_difference(exact.weights, expected.weights) < attn::test::tolerance<T>());
        check_weights_exact(exact.weights, first, true);
        const auto unfused = attn::attention(q, k, v, plain(options_for<T>(true, true, first)));
        CHECK(exact.weights.isApprox(unfused.weights, T(relative_tolerance<T>())));
    }
}

TEST_CASE_TEMPLATE("fused kernel: the last rows of a sequence equal queries decoded after a cache", T, float, double) {
    const Index n = 230, d = 32;
    const auto q = random_matrix<T>(n, d, 210), k = random_matrix<T>(n, d, 211), v = random_matrix<T>(n, d, 212);
    const auto full = attn::attention(q, k, v, options_for<T>(true, true));
    for (Index tail : {1, 5, 100}) {
        const auto last = attn::attention(q.bottomRows(tail), k, v, options_for<T>(true, true, n - tail));
        CHECK(last.output.isApprox(full.output.bottomRows(tail), T(relative_tolerance<T>())));
        CHECK(last.weights.isApprox(full.weights.bottomRows(tail), T(relative_tolerance<T>())));
    }
}

TEST_CASE_TEMPLATE("fused kernel with RoPE equals the plain path with RoPE, including after a cache", T, float,
                   double) {
    for (auto pairing : {attn::RopePairing::rotate_half, attn::RopePairing::interleaved}) {
        const attn::Rope<T> rope(64, pairing, 10000.0, 128);  // positions past the table too
        for (Index first : {0, 60}) {
            const Index nq = 150, nk = nq + first;
            const auto q = random_matrix<T>(nq, 64, 220), k = random_matrix<T>(nk, 64, 221),
                       v = random_matrix<T>(nk, 40, 222);
            for (bool keep : {false, true}) {
                auto options = options_for<T>(true, keep, first);
                options.rope = &rope;
                const auto fused = attn::attention(q, k, v, options);
                const auto unfused = attn::attention(q, k, v, plain(options));
                CHECK(fused.output.isApprox(unfused.output, T(relative_tolerance<T>())));
                if (keep) CHECK(fused.weights.isApprox(unfused.weights, T(relative_tolerance<T>())));
                // and against the loop reference on keys and queries rotated by hand
                attn::Matrix<T> rq = q, rk = k;
                rope.apply(rq, first);
                rope.apply(rk, 0);
                const auto expected = reference(attn::test::to_table(rq), attn::test::to_table(rk),
                                                attn::test::to_table(v), true, 1.0 / 8.0, first);
                CHECK(relative_error(fused.output, expected.output) < relative_tolerance<T>());
            }
        }
    }
}

TEST_CASE_TEMPLATE("fused kernel: a custom scale, and peaked scores that move the running maximum", T, float, double) {
    // Queries grow along the sequence, so later keys keep raising each row's maximum:
    // the online softmax rescales its partial sums many times.
    const Index n = 333, d = 64;
    attn::Matrix<T> q = random_matrix<T>(n, d, 230), k = random_matrix<T>(n, d, 231);
    const auto v = random_matrix<T>(n, d, 232);
    for (Index j = 0; j < n; ++j) k.row(j) *= T(1 + j / 40.0);
    for (T scale : {T(0.125), T(1), T(3)}) {
        CAPTURE(double(scale));
        auto options = options_for<T>(true, false);
        options.scale = scale;
        const auto expected = reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v), true,
                                        double(scale), 0);
        const auto streamed = attn::attention(q, k, v, options);
        // Scores reach ±100 here: float rounding of the scores themselves dominates.
        const double tolerance = std::is_same_v<T, float> ? 2e-4 * double(scale) : 1e-11;
        CHECK(relative_error(streamed.output, expected.output) < tolerance);
        options.keep_weights = true;
        const auto exact = attn::attention(q, k, v, options);
        CHECK(relative_error(exact.output, expected.output) < tolerance);
        check_weights_exact(exact.weights, 0, true);
        const auto unfused = attn::attention(q, k, v, plain(options));
        CHECK((exact.weights - unfused.weights).cwiseAbs().maxCoeff() < T(tolerance));
    }
}

TEST_CASE_TEMPLATE("attend_heads on the fused kernel: every head as attention() gives it, any thread count", T, float,
                   double) {
    const Index heads = 4, n = 800, d = 64, dv = 48;  // large enough to start threads
    attn::HeadStack<T> q(heads, n, d), k(heads, n, d), v(heads, n, dv);
    for (Index h = 0; h < heads; ++h) {
        q.head(h) = random_matrix<T>(n, d, 240 + unsigned(h));
        k.head(h) = random_matrix<T>(n, d, 250 + unsigned(h));
        v.head(h) = random_matrix<T>(n, dv, 260 + unsigned(h));
    }
    for (bool keep : {false, true}) {
        CAPTURE(keep);
        const auto one = attn::attend_heads(q, k, v, options_for<T>(true, keep, 0, 1));
        for (int threads : {2, 0}) {
            CAPTURE(threads);
            const auto many = attn::attend_heads(q, k, v, options_for<T>(true, keep, 0, threads));
            CHECK(many.outputs == one.outputs);  // bit for bit
            CHECK(many.weights == one.weights);
        }
        const auto unfused = attn::attend_heads(q, k, v, plain(options_for<T>(true, keep)));
        for (Index h = 0; h < heads; ++h) {
            const auto single = attn::attention(q.head(h), k.head(h), v.head(h), options_for<T>(true, keep));
            CHECK(attn::Matrix<T>(one.outputs.head(h)) == single.output);
            CHECK(one.outputs.head(h).isApprox(unfused.outputs.head(h), T(relative_tolerance<T>())));
            if (keep) {
                CHECK(attn::Matrix<T>(one.weights.head(h)) == single.weights);
                CHECK(one.weights.head(h).isApprox(unfused.weights.head(h), T(relative_tolerance<T>())));
                check_weights_exact(attn::Matrix<T>(one.weights.head(h)), 0, true);
            }
        }
    }
}

TEST_CASE_TEMPLATE("fused kernel: changing a later token leaves every earlier output bit-identical", T, float, double) {
    const Index n = 800, width = 128, heads = 2;  // large enough to start threads
    const auto x = random_matrix<T>(n, width, 270);
    const auto wq = random_matrix<T>(width, width, 271, 0.1), wk = random_matrix<T>(width, width, 272, 0.1),
               wv = random_matrix<T>(width, width, 273, 0.1), wo = random_matrix<T>(width, width, 274, 0.1);
    for (Index changed_row : {n - 1, Index(97)}) {
        CAPTURE(changed_row);
        attn::Matrix<T> changed = x;
        changed.row(changed_row) = random_matrix<T>(1, width, 275);
        for (auto [keep, threads] : {std::pair<bool, int>{false, 1}, {false, 2}, {true, 2}}) {
            const auto options = options_for<T>(true, keep, 0, threads);
            const auto before = attn::multi_head_attention(x, {wq, wk, wv, wo}, heads, options);
            const auto after = attn::multi_head_attention(changed, {wq, wk, wv, wo}, heads, options);
            CHECK(before.output.topRows(changed_row) == after.output.topRows(changed_row));
            CHECK(before.output.row(changed_row) != after.output.row(changed_row));
            if (keep)
                for (Index h = 0; h < heads; ++h)
                    CHECK(before.weights.head(h).topRows(changed_row) == after.weights.head(h).topRows(changed_row));
        }
    }
}

TEST_CASE("fused kernel: a custom mask takes the plain path; fused = false gives the plain path exactly") {
    const Index n = 120;
    const auto q = random_matrix<float>(n, 32, 280), k = random_matrix<float>(n, 32, 281),
               v = random_matrix<float>(n, 32, 282);
    attn::AllowedMask allowed = attn::causal_allowed(n, n);
    for (Index i = 0; i < n; i += 3) allowed(i, 0) = false;
    auto options = options_for<float>(true, true);
    options.mask = &allowed;
    const auto masked = attn::attention(q, k, v, options);
    attn::Matrix<float> scores = attn::scaled_scores(q, k);
    attn::apply_causal_mask(scores);
    attn::apply_mask(scores, allowed);
    attn::softmax_rows_in_place(scores);
    CHECK(masked.weights == scores);
    CHECK(masked.weights(3, 0) == 0.0f);
    const auto unfused = attn::attention(q, k, v, plain(options_for<float>(true, true)));
    CHECK(unfused.weights == attn::softmax_rows([&] {
              attn::Matrix<float> s = attn::scaled_scores(q, k);
              attn::apply_causal_mask(s);
              return s;
          }()));
}

TEST_CASE_TEMPLATE("fused kernel: NaN or +infinity among the scores raise numeric_error, on any thread", T, float,
                   double) {
    const Index n = 1000, d = 64;  // threads start at this size
    for (bool keep : {false, true}) {
        for (int threads : {1, 2}) {
            auto q = random_matrix<T>(n, d, 290);
            const auto k = random_matrix<T>(n, d, 291), v = random_matrix<T>(n, d, 292);
            q(900, 3) = std::numeric_limits<T>::quiet_NaN();
            CHECK_THROWS_WITH_AS(attn::attention(q, k, v, options_for<T>(true, keep, 0, threads)),
                                 doctest::Contains("query row 900"), attn::numeric_error);
            q(900, 3) = std::numeric_limits<T>::infinity();  // +inf and −inf scores, NaN after the shift
            CHECK_THROWS_AS(attn::attention(q, k, v, options_for<T>(true, keep, 0, threads)), attn::numeric_error);
        }
    }
}

TEST_CASE("fused kernel: invalid threads and shapes raise attn:: exceptions before any work") {
    const auto x = random_matrix<float>(10, 8, 1);
    auto options = options_for<float>(true, false, 0, -1);
    CHECK_THROWS_WITH_AS(attn::attention(x, x, x, options), doctest::Contains("threads must be ≥ 0"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::attention(x, x, random_matrix<float>(9, 8, 2)), doctest::Contains("values has 9 rows"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attention(x, random_matrix<float>(10, 6, 2), x), doctest::Contains("keys"),
                         attn::shape_error);
    CHECK_THROWS_AS(attn::attention(attn::Matrix<float>(0, 8), x, x), attn::shape_error);
    options = options_for<float>(true, false, -1);
    CHECK_THROWS_AS(attn::attention(x, x, x, options), attn::argument_error);
    options = options_for<float>(true, false);
    options.scale = std::numeric_limits<float>::infinity();
    CHECK_THROWS_AS(attn::attention(x, x, x, options), attn::argument_error);
    const attn::Rope<float> rope(4, attn::RopePairing::rotate_half);
    options = options_for<float>(true, false);
    options.rope = &rope;
    CHECK_THROWS_AS(attn::attention(x, x, x, options), attn::shape_error);
}

TEST_CASE("fused kernel: concurrent calls from several threads give the serial results") {
    const Index n = 1000, d = 64;
    const auto q = random_matrix<float>(n, d, 300), k = random_matrix<float>(n, d, 301),
               v = random_matrix<float>(n, d, 302);
    const auto serial = attn::attention(q, k, v, options_for<float>(true, true, 0, 2));
    std::vector<attn::AttentionResult<float>> results(4);
    std::vector<std::thread> callers;
    for (std::size_t t = 0; t < results.size(); ++t)
        callers.emplace_back([&, t] { results[t] = attn::attention(q, k, v, options_for<float>(true, true, 0, 2)); });
    for (auto& caller : callers) caller.join();
    for (const auto& result : results) {
        CHECK(result.output == serial.output);
        CHECK(result.weights == serial.weights);
    }
}

TEST_CASE_TEMPLATE(
    "kernel scratch: arrays aligned and apart, workers kScratchGapBytes apart, a repeat allocates nothing", T, float,
    double) {
    using Block = attn::detail::ScratchBlock<T>;
    using Counts = typename Block::Counts;
    const auto address = [](const T* p) { return reinterpret_cast<std::uintptr_t>(p); };
    // every array of every worker: aligned, its count as asked, writable whole (ASan: inside
    // the block), apart from the worker's other arrays; workers at least the gap apart
    const auto check_layout = [&](const Block& block, int workers, const Counts& counts) {
        const Index wanted[] = {counts.queries, counts.scores, counts.output, counts.tile,
                                counts.largest, counts.total,  counts.factor, counts.sight};
        std::uintptr_t previous_end = 0;
        for (int w = 0; w < workers; ++w) {
            const attn::detail::Scratch<T>& mine = block[w];
            const attn::detail::ScratchArray<T> arrays[] = {mine.queries, mine.scores, mine.output, mine.tile,
                                                            mine.largest, mine.total,  mine.factor, mine.sight};
            std::uintptr_t lowest = UINTPTR_MAX, end = 0;
            for (std::size_t a = 0; a < std::size(arrays); ++a) {
                CHECK(arrays[a].count == wanted[a]);
                CHECK(address(arrays[a].data()) % 64 == 0);
                std::fill(arrays[a].data(), arrays[a].data() + arrays[a].count, T(w + 1));
                lowest = std::min(lowest, address(arrays[a].data()));
                if (a > 0) CHECK(address(arrays[a].data()) >= address(arrays[a - 1].data() + arrays[a - 1].count));
                end = std::max(end, address(arrays[a].data() + arrays[a].count));
            }
            if (w > 0) CHECK(lowest - previous_end >= attn::detail::kScratchGapBytes);
            previous_end = end;
        }
        for (int w = 0; w < workers; ++w)  // no worker's fill reached another's arrays
            CHECK(std::all_of(block[w].queries.data(), block[w].queries.data() + counts.queries,
                              [&](T x) { return x == T(w + 1); }));
    };
    Counts streaming;
    streaming.queries = 64 * 96;
    streaming.scores = 128 * 96;
    streaming.output = 97 * 96;
    streaming.largest = streaming.total = streaming.factor = 96;
    streaming.sight = 9 * 96 + 1;  // not a whole number of lines: the next array still aligned
    Block block;
    block.lay_out(3, streaming);
    check_layout(block, 3, streaming);
    const T* first = block[0].queries.data();
    // the same counts, fewer workers, or smaller arrays: the block is reused as it is
    CHECK(attn::test::allocations_in([&] { block.lay_out(3, streaming); }) == 0);
    CHECK(block[0].queries.data() == first);
    Counts exact = streaming;  // the exact path's: a tile, no scores
    exact.scores = 0;
    exact.sight = 0;
    exact.tile = 16 * 48;
    CHECK(attn::test::allocations_in([&] { block.lay_out(2, exact); }) == 0);
    check_layout(block, 2, exact);
    // more workers need more room
    CHECK(attn::test::allocations_in([&] { block.lay_out(5, streaming); }) > 0);
    check_layout(block, 5, streaming);
    // a worker count of 0 (no tasks) lays out one
    block.lay_out(0, streaming);
    check_layout(block, 1, streaming);

    // working memory is not a workspace's value: a copy starts empty and lays itself out
    Block copy = block;
    CHECK(attn::test::allocations_in([&] { copy.lay_out(2, streaming); }) > 0);
    check_layout(copy, 2, streaming);
    CHECK(copy[0].queries.data() != block[0].queries.data());
    Block moved = std::move(copy);
    check_layout(moved, 2, streaming);
    block = moved;  // assignment keeps the target's own block
    check_layout(block, 1, streaming);
}

TEST_CASE("fused kernel: column-major and strided inputs are read correctly") {
    const Index n = 140;
    const Eigen::MatrixXd q = random_matrix<double>(n, 32, 310), k = random_matrix<double>(n, 32, 311);
    const attn::Matrix<double> wide = random_matrix<double>(n, 70, 312);
    const auto v = wide.middleCols(3, 24);  // rows with a stride
    const auto fused = attn::attention(q, k, v, options_for<double>(true, true));
    const auto expected = reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v), true,
                                    1.0 / std::sqrt(32.0), 0);
    CHECK(relative_error(fused.output, expected.output) < 1e-12);
    CHECK(attn::test::max_abs_difference(fused.weights, expected.weights) < 1e-12);
}

TEST_CASE("fused kernel: weights larger than a cache, 2 threads, into storage holding anything, equal the plain path") {
    // 2 heads × 1,500² floats = 18 MB: more than the caches; the storage starts full of 7s
    const Index n = 1500, d = 32, heads = 2;
    const auto q = attn::test::random_stack<float>(heads, n, d, 40),
               k = attn::test::random_stack<float>(heads, n, d, 50),
               v = attn::test::random_stack<float>(heads, n, d, 60);
    attn::AttentionOptions<float> options;
    options.keep_weights = true;
    options.threads = 2;
    attn::HeadsResult<float> fused;
    fused.weights = attn::AttentionWeights<float>(heads, n, n);
    std::fill(fused.weights.data(), fused.weights.data() + fused.weights.size(), 7.0f);  // reused, not zero
    attn::attend_heads_into(q, k, v, options, fused);
    options.fused = false;
    const attn::HeadsResult<float> plain = attn::attend_heads(q, k, v, options);
    double worst = 0;
    for (Index h = 0; h < heads; ++h)
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < n; ++j) {
                if (j > i) REQUIRE(fused.weights(h, i, j) == 0.0f);
                worst = std::max(worst, double(std::abs(fused.weights(h, i, j) - plain.weights(h, i, j))));
            }
    CHECK(worst <= 1e-6);
    for (Index h = 0; h < heads; ++h)
        CHECK((fused.outputs.head(h) - plain.outputs.head(h)).cwiseAbs().maxCoeff() <= 1e-5f);
}

TEST_CASE(
    "the streaming softmax's exponential: within 2.5e-7 of exp for y ≤ 0, 0 below the smallest normal, NaN kept") {
    // kernel::exp_streamed (a degree-5 polynomial, n and 2ⁿ from one multiply-add): every float
    // in [log(smallest normal), 0] measured 1.77e-7 at most with fused multiply-adds (AVX-512
    // and AVX2 builds); here every 331st, on the packets this build has (SSE2's separate
    // multiplies and adds: 1.88e-7).
    namespace ei = Eigen::internal;
    using Tiling = attn::detail::KernelTiling<float>;
    using Packet = Tiling::Packet;
    constexpr int L = Tiling::kLanes;
    const float cutoff = std::log(std::numeric_limits<float>::min());
    const Packet cut = ei::pset1<Packet>(cutoff), zero = ei::pset1<Packet>(0.0f);
    const auto exp_of = [&](const std::vector<float>& y) {
        std::vector<float> in(y), out(in.size());
        in.resize((in.size() + L - 1) / L * L, 0.0f);
        out.resize(in.size());
        for (std::size_t i = 0; i < in.size(); i += L)
            ei::pstoreu(out.data() + i,
                        attn::detail::kernel::exp_streamed(ei::ploadu<Packet>(in.data() + i), cut, zero));
        out.resize(y.size());
        return out;
    };
    std::vector<float> y;
    for (std::uint32_t bits = 0x80000000u;; bits += 331) {  // −0, then down to −87.4
        float x;
        std::memcpy(&x, &bits, sizeof x);
        if (x < -87.4f) break;
        y.push_back(x);
    }
    const std::vector<float> e = exp_of(y);
    double worst = 0;
    Index kept_below = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        const double exact = std::exp(double(y[i]));
        if (y[i] < cutoff)
            kept_below += e[i] != 0.0f;
        else if (exact >= double(std::numeric_limits<float>::min()))  // not a subnormal result
            worst = std::max(worst, std::abs(double(e[i]) - exact) / exact);
    }
    CHECK(y.size() > 3000000);
    CHECK(worst < 2.5e-7);
    CHECK(kept_below == 0);  // flushed to exactly 0, as softmax_rows does
    const std::vector<float> special =
        exp_of({0.0f, -0.0f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                std::nextafter(cutoff, 0.0f), std::nextafter(cutoff, -100.0f)});
    CHECK(special[0] == 1.0f);  // the largest score's weight is exactly 1
    CHECK(special[1] == 1.0f);
    CHECK(special[2] == 0.0f);      // masked keys weigh exactly 0
    CHECK(std::isnan(special[3]));  // a NaN score reaches the row's sum, to be reported
    CHECK(special[4] > 0.0f);
    CHECK(special[5] == 0.0f);
}

TEST_CASE("streaming softmax: weights, sums and outputs within 1e-6 relative of the exact exponential's") {
    // The online softmax over two blocks of scores (the second raising some rows' maxima, so
    // that the partial sums are rescaled), against exp in double of the same arguments y = s − m
    // (rounded to float as the kernel rounds them: that rounding, up to |y|·2⁻²⁴, is not the
    // exponential's, and the exact path puts it back where weights are kept), and their sums.
    using Tiling = attn::detail::KernelTiling<float>;
    constexpr Index width = Tiling::kChunk, keys = 128;
    const attn::Matrix<float> block = random_matrix<float>(2 * keys, width, 300, 4.0);  // scoresᵀ, 2 blocks
    std::vector<float> m(width, -std::numeric_limits<float>::infinity()), l(width, 0.0f), factor(width);
    std::vector<double> exact_m(width, -std::numeric_limits<double>::infinity()), exact_l(width, 0.0);
    double worst_weight = 0, worst_factor = 0;
    for (Index b = 0; b < 2; ++b) {
        attn::detail::RowMajorMatrix<float> s = block.middleRows(b * keys, keys);
        const attn::detail::RowMajorMatrix<float> scores = s;
        attn::detail::kernel::online_softmax<float, Tiling::kScorePackets>(s.data(), width, keys, m.data(), l.data(),
                                                                           factor.data());
        for (Index i = 0; i < width; ++i) {
            float largest = float(exact_m[std::size_t(i)]);
            for (Index j = 0; j < keys; ++j) largest = std::max(largest, scores(j, i));
            const double rescale = b == 0 ? 0.0 : std::exp(double(float(exact_m[std::size_t(i)]) - largest));
            if (b > 0 && rescale > 0)
                worst_factor = std::max(worst_factor, std::abs(double(factor[std::size_t(i)]) - rescale) / rescale);
            exact_l[std::size_t(i)] *= rescale;
            for (Index j = 0; j < keys; ++j) {
                const double w = std::exp(double(scores(j, i) - m[std::size_t(i)]));
                exact_l[std::size_t(i)] += w;
                if (w >= double(std::numeric_limits<float>::min()))
                    worst_weight = std::max(worst_weight, std::abs(double(s(j, i)) - w) / w);
            }
            exact_m[std::size_t(i)] = largest;
        }
    }
    double worst_sum = 0;
    for (Index i = 0; i < width; ++i)
        worst_sum = std::max(worst_sum,
                             std::abs(double(l[std::size_t(i)]) - exact_l[std::size_t(i)]) / exact_l[std::size_t(i)]);
    CHECK(worst_weight < 1e-6);
    CHECK(worst_factor < 1e-6);
    CHECK(worst_sum < 1e-6);
    // And the streaming path's outputs against the double loop reference, over several tasks
    // and key blocks.
    const Index n = 600, d = 64;
    const auto q = random_matrix<float>(n, d, 301), k = random_matrix<float>(n, d, 302),
               v = random_matrix<float>(n, d, 303);
    const auto expected = reference(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v), true,
                                    1.0 / std::sqrt(double(d)), 0);
    CHECK(relative_error(attn::attention(q, k, v, options_for<float>(true, false)).output, expected.output) < 1e-6);
}
