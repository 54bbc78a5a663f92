#include <doctest/doctest.h>
#include <attn/core/attention.hpp>
#include <attn/core/weights_on_demand.hpp>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "allocation_counter.hpp"
#include "support.hpp"

using attn::Index;
using attn::test::random_matrix;

namespace {
template <class T>
attn::AttentionOptions<T> keeping(bool causal = true) {
    attn::AttentionOptions<T> options;
    options.keep_weights = true;
    options.causal = causal;
    return options;
}

/// The allocation tests' options: log-sum-exps kept, weights if asked, on kept `workers` if given.
template <class T>
attn::AttentionOptions<T> reusing(bool weights, attn::Workers* workers) {
    attn::AttentionOptions<T> options;
    options.keep_weights = weights;
    options.keep_log_sum_exp = true;
    if (workers) options.threads = *workers;
    return options;
}

/// check(options) for every case of the allocation tests: on the calling thread or 2 kept
/// workers, weights kept or not.
template <class Check>
void for_each_reuse_case(Check check) {
    attn::Workers workers(2);
    for (bool kept_threads : {false, true})
        for (bool weights : {true, false}) {
            CAPTURE(kept_threads);
            CAPTURE(weights);
            check(reusing<float>(weights, kept_threads ? &workers : nullptr));
        }
}
}  // namespace

TEST_CASE_TEMPLATE("causal attention: rows sum to 1 and every later position gets exactly 0", T, float, double) {
    for (Index n : {1, 2, 7, 33}) {
        const auto q = random_matrix<T>(n, 8, 1), k = random_matrix<T>(n, 8, 2), v = random_matrix<T>(n, 5, 3);
        const auto result = attn::attention(q, k, v, keeping<T>());
        REQUIRE(result.weights.rows() == n);
        for (Index i = 0; i < n; ++i) {
            CHECK(double(result.weights.row(i).sum()) == doctest::Approx(1.0).epsilon(1e-6));
            for (Index j = i + 1; j < n; ++j) CHECK(result.weights(i, j) == T(0));
        }
        CHECK(result.output.rows() == n);
        CHECK(result.output.cols() == 5);
    }
}

TEST_CASE_TEMPLATE("attention matches the double-precision loop reference on many shapes", T, float, double) {
    // (positions, head size, value size), including 1 position and non-square heads.
    for (const auto& shape :
         {std::tuple<Index, Index, Index>{1, 4, 4}, {4, 4, 4}, {5, 3, 7}, {16, 32, 32}, {37, 64, 16}, {64, 128, 128}}) {
        // plain variables, not structured bindings: CAPTURE captures in a lambda, which clang 14 rejects for bindings
        const Index n = std::get<0>(shape), d = std::get<1>(shape), dv = std::get<2>(shape);
        CAPTURE(n);
        CAPTURE(d);
        const auto q = random_matrix<T>(n, d, 10), k = random_matrix<T>(n, d, 11), v = random_matrix<T>(n, dv, 12);
        for (bool causal : {true, false}) {
            const auto result = attn::attention(q, k, v, keeping<T>(causal));
            const auto reference =
                attn::test::naive_attention(attn::test::to_table(q), attn::test::to_table(k), attn::test::to_table(v),
                                            causal, 1.0 / std::sqrt(double(d)));
            CHECK(attn::test::max_abs_difference(result.weights, reference.weights) < attn::test::tolerance<T>());
            CHECK(attn::test::max_abs_difference(result.output, reference.output) < attn::test::tolerance<T>());
        }
    }
}

TEST_CASE_TEMPLATE("changing a later token leaves every earlier output bit-identical; without the mask it leaks", T,
                   float, double) {
    const Index n = 6, width = 8;
    const auto x = random_matrix<T>(n, width, 30);
    const auto wq = random_matrix<T>(width, 8, 31), wk = random_matrix<T>(width, 8, 32),
               wv = random_matrix<T>(width, 8, 33), wo = random_matrix<T>(8, width, 34);
    attn::Matrix<T> changed = x;
    changed.row(n - 1) = random_matrix<T>(1, width, 35);
    for (bool causal : {true, false}) {
        attn::AttentionOptions<T> options;
        options.causal = causal;
        const auto before = attn::multi_head_attention(x, {wq, wk, wv, wo}, 2, options).output;
        const auto after = attn::multi_head_attention(changed, {wq, wk, wv, wo}, 2, options).output;
        if (causal) {
            CHECK(before.topRows(n - 1) == after.topRows(n - 1));  // bit for bit
            CHECK(before.row(n - 1) != after.row(n - 1));
        } else {
            CHECK(!before.topRows(n - 1).isApprox(after.topRows(n - 1), T(1e-4)));
        }
    }
}

TEST_CASE_TEMPLATE("multi-head attention equals the heads computed one by one, joined, then projected", T, float,
                   double) {
    const Index n = 9, width = 12, heads = 3, size = 4;
    const auto x = random_matrix<T>(n, width, 40);
    const auto wq = random_matrix<T>(width, width, 41, 0.5), wk = random_matrix<T>(width, width, 42, 0.5),
               wv = random_matrix<T>(width, width, 43, 0.5), wo = random_matrix<T>(width, width, 44, 0.5);
    const auto result = attn::multi_head_attention(x, {wq, wk, wv, wo}, heads, keeping<T>());
    REQUIRE(result.weights.heads() == heads);
    REQUIRE(result.weights.positions() == n);

    // Independently: NumPy-style per-head loops in double.
    const auto xt = attn::test::to_table(x);
    const auto q = attn::test::naive_matmul(xt, attn::test::to_table(wq));
    const auto k = attn::test::naive_matmul(xt, attn::test::to_table(wk));
    const auto v = attn::test::naive_matmul(xt, attn::test::to_table(wv));
    attn::test::Table joined(std::size_t(n), std::vector<double>(std::size_t(width), 0.0));
    for (Index h = 0; h < heads; ++h) {
        const auto head =
            attn::test::naive_attention(attn::test::columns(q, std::size_t(h * size), std::size_t(size)),
                                        attn::test::columns(k, std::size_t(h * size), std::size_t(size)),
                                        attn::test::columns(v, std::size_t(h * size), std::size_t(size)), true, 0.5);
        // the head axis comes first: weights.head(h) is head h's (positions × positions) matrix
        CHECK(attn::test::max_abs_difference(result.weights.head(h), head.weights) < attn::test::tolerance<T>());
        for (std::size_t i = 0; i < std::size_t(n); ++i)
            for (std::size_t c = 0; c < std::size_t(size); ++c)
                joined[i][std::size_t(h * size) + c] = head.output[i][c];
    }
    const auto expected = attn::test::naive_matmul(joined, attn::test::to_table(wo));
    CHECK(attn::test::max_abs_difference(result.output, expected) < 10 * attn::test::tolerance<T>());

    // And through the library's own steps, head by head.
    const auto qkv = attn::project_qkv(x, wq, wk, wv);
    attn::HeadStack<T> outputs(heads, n, size);
    for (Index h = 0; h < heads; ++h)
        outputs.head(h) = attn::attention(qkv.queries.middleCols(h * size, size), qkv.keys.middleCols(h * size, size),
                                          qkv.values.middleCols(h * size, size))
                              .output;
    CHECK(result.output.isApprox(attn::project(attn::merge_heads(outputs), wo), T(1e-5)));
}

TEST_CASE("float and double attention agree") {
    const auto q = random_matrix<double>(20, 16, 50), k = random_matrix<double>(20, 16, 51),
               v = random_matrix<double>(20, 16, 52);
    const auto d = attn::attention(q, k, v, keeping<double>());
    const auto f = attn::attention(attn::Matrix<float>(q.cast<float>()), attn::Matrix<float>(k.cast<float>()),
                                   attn::Matrix<float>(v.cast<float>()), keeping<float>());
    CHECK((f.weights.cast<double>() - d.weights).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((f.output.cast<double>() - d.output).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("attention with RoPE equals attention on queries and keys rotated by hand") {
    const attn::Rope<double> rope(8, attn::RopePairing::rotate_half);
    const auto q = random_matrix<double>(6, 8, 60), k = random_matrix<double>(6, 8, 61),
               v = random_matrix<double>(6, 8, 62);
    attn::AttentionOptions<double> options = keeping<double>();
    options.rope = &rope;
    const auto with_rope = attn::attention(q, k, v, options);
    attn::Matrix<double> rq = q, rk = k;
    rope.apply(rq);
    rope.apply(rk);
    const auto by_hand = attn::attention(rq, rk, v, keeping<double>());
    CHECK(with_rope.weights == by_hand.weights);
    CHECK(with_rope.output == by_hand.output);
}

TEST_CASE("attention: queries after cached keys see the whole cache (first_position)") {
    const auto q = random_matrix<double>(5, 4, 70), k = random_matrix<double>(5, 4, 71),
               v = random_matrix<double>(5, 4, 72);
    const auto full = attn::attention(q, k, v, keeping<double>());
    attn::AttentionOptions<double> options = keeping<double>();
    options.first_position = 3;
    const auto last_two = attn::attention(q.bottomRows(2), k, v, options);
    CHECK(last_two.output.isApprox(full.output.bottomRows(2), 1e-14));
    CHECK(last_two.weights.isApprox(full.weights.bottomRows(2), 1e-14));
}

TEST_CASE("attention: a padding mask hides keys; a fully hidden query row gives a zero output") {
    const auto q = random_matrix<double>(3, 4, 80), k = random_matrix<double>(3, 4, 81),
               v = random_matrix<double>(3, 4, 82);
    attn::AllowedMask allowed = attn::AllowedMask::Constant(3, 3, true);
    allowed.row(0).setConstant(false);  // query 0 is padding
    allowed(2, 1) = false;
    attn::AttentionOptions<double> options = keeping<double>();
    options.mask = &allowed;
    const auto result = attn::attention(q, k, v, options);
    CHECK(result.weights.row(0).isZero(0));
    CHECK(result.output.row(0).isZero(0));
    CHECK(result.weights(2, 1) == 0.0);
    CHECK(result.weights.row(2).sum() == doctest::Approx(1.0));
}

TEST_CASE("attention: weights are not returned unless asked") {
    const auto q = random_matrix<float>(4, 4, 1);
    CHECK(attn::attention(q, q, q).weights.size() == 0);
    const attn::Matrix<float> w = attn::Matrix<float>::Identity(4, 4);
    CHECK(attn::multi_head_attention(q, {w, w, w, w}, 2).weights.empty());
}

TEST_CASE("attention: invalid shapes raise a clear attn:: exception naming the argument") {
    const auto x = random_matrix<float>(4, 8, 1);
    const auto w = random_matrix<float>(8, 8, 2);
    CHECK_THROWS_WITH_AS(attn::attention(x, x, random_matrix<float>(3, 8, 3)),
                         doctest::Contains("values has 3 rows, expected 4"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::attention(x, random_matrix<float>(4, 6, 3), x), doctest::Contains("keys"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention(x, {w, w, w, w}, 3), doctest::Contains("heads = 3 does not divide"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention(x, {w, w, w, w}, 0), doctest::Contains("heads must be positive"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention(attn::Matrix<float>(0, 8), {w, w, w, w}, 2),
                         doctest::Contains("x is empty"), attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention(random_matrix<float>(4, 7, 1), {w, w, w, w}, 2),
                         doctest::Contains("weight has 8 rows, expected 7"), attn::shape_error);
    const attn::HeadStack<float> two(2, 4, 4), three(3, 4, 4);
    CHECK_THROWS_AS(attn::attend_heads(two, three, two), attn::shape_error);
}

// ---- Reused storage: allocations counted during a repeated call (allocation_counter.hpp) -----

TEST_CASE("a result passed again: a repeated call allocates nothing, on kept worker threads too") {
    const Index heads = 4, n = 600, d = 64;
    attn::HeadStack<float> q(heads, n, d), k(heads, n, d), v(heads, n, d);
    for (Index h = 0; h < heads; ++h) {
        q.head(h) = random_matrix<float>(n, d, 1 + unsigned(h));
        k.head(h) = random_matrix<float>(n, d, 11 + unsigned(h));
        v.head(h) = random_matrix<float>(n, d, 21 + unsigned(h));
    }
    for_each_reuse_case([&](const attn::AttentionOptions<float>& options) {
        attn::HeadsResult<float> result;
        attn::attend_heads_into(q, k, v, options, result);  // the first call allocates
        const float* weights_storage = result.weights.data();
        const float* output_storage = result.outputs.data();
        const attn::HeadsResult<float> fresh = attn::attend_heads(q, k, v, options);
        CHECK(attn::test::allocations_in([&] { attn::attend_heads_into(q, k, v, options, result); }) == 0);
        CHECK(result.weights.data() == weights_storage);
        CHECK(result.outputs.data() == output_storage);
        CHECK(result.outputs == fresh.outputs);
        CHECK(result.weights == fresh.weights);
        CHECK(result.log_sum_exp == fresh.log_sum_exp);

        attn::WeightRowsResult<float> rows;
        const std::vector<Index> chosen_heads = {0, 3}, chosen_rows = {5, 599, 300};
        attn::attention_rows_into(q, k, result.log_sum_exp, chosen_heads, chosen_rows, {}, options, rows);
        CHECK(attn::test::allocations_in([&] {
                  attn::attention_rows_into(q, k, result.log_sum_exp, chosen_heads, chosen_rows, {}, options, rows);
              }) == 0);
    });
    // the counter counts: a fresh result allocates
    CHECK(attn::test::allocations_in([&] { attn::attend_heads(q, k, v); }) > 0);
}

TEST_CASE("a call that throws leaves its result able to serve the next call without allocating") {
    const Index heads = 2, n = 200, d = 32;
    const auto q = attn::test::random_stack<float>(heads, n, d, 1), k = attn::test::random_stack<float>(heads, n, d, 2),
               v = attn::test::random_stack<float>(heads, n, d, 3);
    attn::HeadStack<float> bad = q;
    bad(1, 150, 7) = std::numeric_limits<float>::quiet_NaN();
    attn::AttentionOptions<float> options;
    attn::HeadsResult<float> result;
    attn::attend_heads_into(q, k, v, options, result);
    CHECK_THROWS_AS(attn::attend_heads_into(bad, k, v, options, result), attn::numeric_error);
    CHECK(attn::test::allocations_in([&] { attn::attend_heads_into(q, k, v, options, result); }) == 0);
    CHECK(result.outputs == attn::attend_heads(q, k, v).outputs);
}

TEST_CASE("attention_into: storage of the wrong size is a shape_error naming it") {
    const attn::Matrix<float> x = random_matrix<float>(6, 8, 1);
    attn::AttentionResult<float> result;
    result.output.resize(5, 8);
    CHECK_THROWS_WITH_AS(attn::attention_into(x, x, x, {}, result),
                         doctest::Contains("attention: output storage is 5 × 8, expected 6 × 8"), attn::shape_error);
    attn::HeadsResult<float> heads;
    heads.weights = attn::HeadStack<float>(2, 6, 5);
    attn::AttentionOptions<float> options;
    options.keep_weights = true;
    const attn::HeadStack<float> stack = attn::split_heads(x, 2);
    CHECK_THROWS_WITH_AS(attn::attend_heads_into(stack, stack, stack, options, heads),
                         doctest::Contains("weights storage is 2 × (6 × 5), expected 2 × (6 × 6)"), attn::shape_error);
}

namespace {
/// Every output of two multi-head results, compared bit for bit.
template <class T>
void check_identical(const attn::MultiHeadResult<T>& a, const attn::MultiHeadResult<T>& b) {
    CHECK(a.output == b.output);
    CHECK(a.weights == b.weights);
    CHECK(a.log_sum_exp == b.log_sum_exp);
    for (std::size_t p = 0; p < a.statistics.planes().size(); ++p)
        CHECK(*a.statistics.planes()[p] == *b.statistics.planes()[p]);
    CHECK(a.statistics.argmax == b.statistics.argmax);
}
}  // namespace

TEST_CASE_TEMPLATE("multi_head_attention_into threads: reused storage gives the allocating version's bits", T, float,
                   double) {
    const Index n = 70, width = 32, heads = 4;
    const auto x = random_matrix<T>(n, width, 90);
    const auto wq = random_matrix<T>(width, width, 91, 0.5), wk = random_matrix<T>(width, width / 2, 92, 0.5),
               wv = random_matrix<T>(width, width / 2, 93, 0.5), wo = random_matrix<T>(width / 2 * 2, 24, 94, 0.5);
    const attn::Rope<T> rope(8, attn::RopePairing::rotate_half);
    attn::HeadStatisticsRequest request;
    request.markers = {0, 3};
    for (Index kv_heads : {Index(0), Index(2)})
        for (int threads : {1, 2})
            for (bool fused : {true, false}) {
                CAPTURE(kv_heads);
                CAPTURE(threads);
                CAPTURE(fused);
                attn::AttentionOptions<T> options = keeping<T>();
                options.keep_log_sum_exp = true;
                options.statistics = &request;
                options.threads = threads;
                options.fused = fused;
                options.rope = &rope;
                // kv heads 2 of 4: keys and values 2 × 8 wide; all heads: the queries' 4 × 8
                const Index kv = kv_heads == 0 ? heads : kv_heads;
                const attn::Matrix<T> key = kv == heads ? wq : wk, value = kv == heads ? wq : wv;
                const attn::Matrix<T> output = wo.topRows(heads * (value.cols() / kv));
                const attn::AttentionProjections<T> projections{wq, key, value, output};
                const attn::HeadCount head_count(heads, kv_heads);
                const auto fresh = attn::multi_head_attention(x, projections, head_count, options);
                attn::MultiHeadResult<T> reused;
                for (int call = 0; call < 3; ++call) {
                    attn::multi_head_attention_into(x, projections, head_count, options, reused);
                    check_identical(reused, fresh);
                }
                // and without weights, log-sum-exps or statistics, into the same storage
                attn::AttentionOptions<T> plain;
                plain.threads = threads;
                attn::multi_head_attention_into(x, projections, head_count, plain, reused);
                check_identical(reused, attn::multi_head_attention(x, projections, head_count, plain));
                CHECK(reused.weights.empty());
            }
}

TEST_CASE("multi_head_attention_into: a repeated call into one result allocates nothing, on kept threads too") {
    const Index n = 100, width = 64, heads = 4;
    const auto x = random_matrix<float>(n, width, 100);
    const auto wq = random_matrix<float>(width, width, 101, 0.3), wk = random_matrix<float>(width, width, 102, 0.3),
               wv = random_matrix<float>(width, width, 103, 0.3), wo = random_matrix<float>(width, width, 104, 0.3);
    const attn::AttentionProjections<float> projections{wq, wk, wv, wo};
    for_each_reuse_case([&](const attn::AttentionOptions<float>& options) {
        attn::MultiHeadResult<float> result;
        attn::multi_head_attention_into(x, projections, heads, options, result);  // the first call allocates
        const float* output_storage = result.output.data();
        const float* weights_storage = result.weights.data();
        CHECK(attn::test::allocations_in(
                  [&] { attn::multi_head_attention_into(x, projections, heads, options, result); }) == 0);
        CHECK(result.output.data() == output_storage);
        CHECK(result.weights.data() == weights_storage);
        check_identical(result, attn::multi_head_attention(x, projections, heads, options));
    });
    CHECK(attn::test::allocations_in([&] { attn::multi_head_attention(x, projections, heads); }) > 0);
}

TEST_CASE("multi_head_attention_into: storage of the wrong size is a shape_error naming it") {
    const auto x = random_matrix<float>(6, 8, 1);
    const auto w = random_matrix<float>(8, 8, 2);
    attn::AttentionOptions<float> options;
    options.keep_weights = true;
    attn::MultiHeadResult<float> result;
    result.weights = attn::HeadStack<float>(2, 5, 5);
    CHECK_THROWS_WITH_AS(
        attn::multi_head_attention_into(x, {w, w, w, w}, 2, options, result),
        doctest::Contains("multi_head_attention: weights storage is 2 × (5 × 5), expected 2 × (6 × 6)"),
        attn::shape_error);
    CHECK(result.weights.rows() == 5);  // the caller's storage, given back untouched
    result.weights = {};
    result.output.resize(6, 7);
    CHECK_THROWS_WITH_AS(attn::multi_head_attention_into(x, {w, w, w, w}, 2, options, result),
                         doctest::Contains("multi_head_attention: output storage is 6 × 7, expected 6 × 8"),
                         attn::shape_error);
    // a result's working memory used at another shape before is refitted, not refused
    attn::MultiHeadResult<float> small, large;
    attn::multi_head_attention_into(attn::Matrix<float>(x.topRows(3)), {w, w, w, w}, 2, options, small);
    large.workspace = std::move(small.workspace);
    attn::multi_head_attention_into(x, {w, w, w, w}, 2, options, large);
    check_identical(large, attn::multi_head_attention(x, {w, w, w, w}, 2, options));
}
