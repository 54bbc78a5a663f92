// Attention by sequence length (Google Benchmark; JSON with --benchmark_format=json
// or --benchmark_out=FILE --benchmark_out_format=json).
//
// Families (names end in /positions:N/real_time; filter with --benchmark_filter=REGEX):
//   heads/<path>/d:<size>/threads:<t>    attend_heads(): 4 heads of d numbers, causal
//   head/<path>/d:<size>/threads:<t>     attention(): one head, causal
//   long/stream/d:64/threads:<t>         attend_heads(), 4 heads, 8,192 and 16,384 positions
//   causal_window/<w:W|full>/d:64/threads:1  attend_heads(), 4 heads × 64, streaming, 1,024 … 16,384
//                                        positions: a sliding window of W keys (256, 1,024), whose cost
//                                        grows as positions × W, against full causal attention (full),
//                                        positions²/2; GFLOP/s counts the keys each query sees
//   matrix_multiply/threads:<t>/size:1024  Eigen's float GEMM, the machine's reference rate
//   fma_peak/threads:<t>                 the fp32 FMA peak: independent chains at the build's vector width
//   sight/<what>/d:64/threads:2          attend_heads_into() on kept Workers, 512 … 4,096 positions: stream,
//                                        statistics (every head statistic + log-sum-exps), statistics_only
//                                        (the same without outputs: attention_statistics_into), weights_reused
//                                        (weights into a kept result), weights_fresh (a new
//                                        result per call); sight/rows: 64 rows × 4 heads of exact weights on
//                                        demand; sight_long/...: 16,384 and 65,536 positions (only if filtered)
//   sight/multi_head_weights_<reused|fresh>/d:64/threads:2  multi_head_attention with weights, 4 heads
//                                        × 64, 512 and 2,048 positions: multi_head_attention_into a kept
//                                        result, or multi_head_attention (new storage) per call
//   products/<product>/<impl>/<weights>   one thread: the forward's matrix products on the store
//                                        model's shapes, rows:80 and rows:160 (a forward's share on
//                                        2 threads, and all of it); <impl> attn (detail::multiply_rows,
//                                        the forward's kernel) or eigen (c.noalias() += a * b, row-major);
//                                        <weights> warm (one b, stays in cache) or streamed (b cycles
//                                        through 32 MB of copies, as a forward's 4 MB of weights do)
//   stream_parts/<part>/d:64             one thread: the streaming kernel's parts on one task's key
//                                        block (96 queries × 128 keys, d 64), alone and over again: scores,
//                                        softmax, values, block (all three); GFLOP/s (the products'
//                                        multiply-adds) against fma_peak, ns_per_score
//   from_memory/<model>/<product>/<layout>  one thread: GPT-2 small's and SmolLM2-135M's layer
//                                        products, rows:1 (a decoding step's), 128 … 512 (a prefill's),
//                                        b cycling through pool_MiB:1024 of weights (beyond any L3 here)
//                                        or pool_MiB:256;
//                                        <layout> float_panels and bf16_panels (what a model keeps: panels
//                                        of 64 columns, weight_panels.hpp), bf16_rounded_panels (the same
//                                        with a rounded to bfloat16), float (row-major, the tiles'
//                                        rule), float_packed, float_padded
//                                        (rows never 4 KiB apart), bf16, and for rows:1 the ways to
//                                        stream b (float_one_row, float_four_rows, bf16_prefetch,
//                                        bf16_no_prefetch, bf16_one_row); counters GFLOP/s and
//                                        weights_GB/s; <layout> q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k: GGUF
//                                        blocks (quantized_weights.hpp), rows:1, 128 and 512, pool_MiB:256,
//                                        weights_GB/s counting the blocks' bytes. Left
//                                        out unless the filter names it
//   model_forward/threads:<t>            the store model's whole forward pass, logits only,
//                                        16 … 160 positions (ForwardOptions::threads = t)
//   model_forward/workers:<t>            the same on an attn::Workers of t kept across calls
//                                        (ForwardOptions::workers)
//   memory/...                           the machine's read bandwidth (memory_benchmarks.hpp), here
//                                        so that from_memory's products and their limit can be timed in
//                                        one process, interleaved. Left out unless the filter names it
// <path> is `stream` (fused kernel, outputs only), `weights` (fused kernel, weights
// returned) or `plain` (the unfused reference path: full scores, mask, softmax, product).
//
// GFLOP/s counts useful causal arithmetic only: the unmasked half of q·kᵀ and of
// weights·v, positions²·(d + dv) per head = 2·n²·d for dv = d. Each family fits its
// complexity in positions (expect N^2). The long/ family is left out unless the filter
// names it: --benchmark_filter=long (its maxrss_MB counter, the process's peak resident
// memory, is meaningful when one benchmark runs alone, e.g. --benchmark_filter='long.*16384.*threads:1').
//
// Threads: our kernel starts std::threads (AttentionOptions::threads). Eigen's GEMM uses
// more than one thread only when built with OpenMP (ATTN_BENCH_OPENMP, on by default):
// matrix_multiply and plain/threads:2 set Eigen::setNbThreads(t); everything else runs
// with Eigen::setNbThreads(1).
#include <benchmark/benchmark.h>
#include <attn/attn.hpp>
#include <attn/detail/kernels/causal_kernel.hpp>
#include <attn/detail/kernels/half_weights.hpp>
#include <attn/detail/kernels/large_arrays.hpp>
#include <attn/detail/kernels/quantized_weights.hpp>
#include <attn/detail/kernels/weight_panels.hpp>
#include <attn/model/model.hpp>

#include <sys/resource.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_main.hpp"
#include "memory_benchmarks.hpp"

namespace {

using attn::Index;

enum class Path { stream, weights, plain };

const char* path_name(Path path) {
    switch (path) {
        case Path::stream:
            return "stream";
        case Path::weights:
            return "weights";
        case Path::plain:
            return "plain";
    }
    return "?";
}

attn::AttentionOptions<float> options_for(Path path, int threads) {
    attn::AttentionOptions<float> options;  // causal, 1/√d
    options.keep_weights = path != Path::stream;
    options.fused = path != Path::plain;
    options.threads = threads;
    return options;
}

attn::HeadStack<float> random_stack(Index heads, Index rows, Index cols, unsigned seed) {
    attn::HeadStack<float> stack(heads, rows, cols);
    std::srand(seed);
    for (Index h = 0; h < heads; ++h) stack.head(h) = attn::Matrix<float>::Random(rows, cols);
    return stack;
}

double peak_rss_megabytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void set_counters(benchmark::State& state, Index positions, Index size, Index heads) {
    const double flops = double(positions) * double(positions) * double(size + size) * double(heads);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.SetComplexityN(positions);
}

/// attend_heads(): `heads` heads of d numbers (dv = d), causal.
void heads_benchmark(benchmark::State& state, Path path, Index heads, Index d, int threads) {
    const Index n = state.range(0);
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    const auto options = options_for(path, threads);
    Eigen::setNbThreads(path == Path::plain ? threads : 1);
    for (auto _ : state) {
        auto result = attn::attend_heads(q, k, v, options);
        benchmark::DoNotOptimize(result.outputs.data());
        benchmark::ClobberMemory();
    }
    Eigen::setNbThreads(1);
    set_counters(state, n, d, heads);
}

/// The timed loop of attend_heads_into() into one result reused call after call (nothing
/// allocated after the first).
void time_attend_heads_into(benchmark::State& state, const attn::HeadStack<float>& q, const attn::HeadStack<float>& k,
                            const attn::HeadStack<float>& v, const attn::AttentionOptions<float>& options) {
    attn::HeadsResult<float> result;
    for (auto _ : state) {
        attn::attend_heads_into(q, k, v, options, result);
        benchmark::DoNotOptimize(result.outputs.data());
        benchmark::ClobberMemory();
    }
}

/// attend_heads_into() on the streaming path as an application runs it call after call: on
/// kept Workers, into a reused result (no thread started, nothing allocated per call), so that
/// the kernel's own rate is timed; heads/stream starts its threads and allocates its result
/// every call, as a one-off attend_heads() does.
void heads_kept_benchmark(benchmark::State& state, Index d, int threads) {
    const Index n = state.range(0), heads = 4;
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    attn::Workers workers(threads);
    auto options = options_for(Path::stream, threads);
    options.threads = workers;
    time_attend_heads_into(state, q, k, v, options);
    set_counters(state, n, d, heads);
}

/// heads_kept_benchmark with the attention on bfloat16 numbers (FusedProblem::bfloat16, as a
/// model loaded with LoadOptions::bfloat16_activations runs it): keys and values rounded
/// beforehand, as the model's caches hold them; the kernel called as the model calls it, on
/// kept Workers and kept KernelMemory. With AVX-512 BF16 its products multiply pairs.
void heads_kept_bfloat16_benchmark(benchmark::State& state, Index d, int threads) {
    namespace ad = attn::detail;
    const Index n = state.range(0), heads = 4;
    auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    for (auto* stack : {&k, &v})
        for (Index h = 0; h < heads; ++h)
            stack->head(h) = stack->head(h).unaryExpr([](float x) { return ad::rounded_to_bfloat16(x); });
    attn::Workers workers(threads);
    ad::KernelMemory<float> memory;
    attn::Matrix<float> outputs(heads * n, d);  // (heads·n × d)
    ad::FusedProblem<float> problem;
    problem.heads = heads;
    problem.queries = problem.keys = n;
    problem.depth = problem.value_size = d;
    problem.scale = 1.0f / std::sqrt(float(d));
    problem.workers = &workers;
    problem.memory = &memory;
    problem.bfloat16 = true;
    problem.outputs = outputs.data();
    // the stacks' heads are column-major: row-major views of their transposes would need copies,
    // so the inputs are laid out row-major once here, as the model's caches are
    std::vector<ad::RowMajorMatrix<float>> rows;
    for (Index h = 0; h < heads; ++h)
        for (const auto* stack : {&q, &k, &v}) rows.emplace_back(stack->head(h));
    for (Index h = 0; h < heads; ++h)
        problem.inputs.push_back({{rows[std::size_t(3 * h)].data(), d},
                                  {rows[std::size_t(3 * h + 1)].data(), d},
                                  {rows[std::size_t(3 * h + 2)].data(), d}});
    for (auto _ : state) {
        ad::fused_attention(problem);
        benchmark::DoNotOptimize(outputs.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, n, d, heads);
}

/// attention(): one head of d numbers, causal.
void head_benchmark(benchmark::State& state, Path path, Index d, int threads) {
    const Index n = state.range(0);
    std::srand(4);
    const attn::Matrix<float> q = attn::Matrix<float>::Random(n, d), k = attn::Matrix<float>::Random(n, d),
                              v = attn::Matrix<float>::Random(n, d);
    const auto options = options_for(path, threads);
    Eigen::setNbThreads(path == Path::plain ? threads : 1);
    for (auto _ : state) {
        auto result = attn::attention(q, k, v, options);
        benchmark::DoNotOptimize(result.output.data());
        benchmark::ClobberMemory();
    }
    Eigen::setNbThreads(1);
    set_counters(state, n, d, 1);
}

/// The streaming path at 8,192 and 16,384 positions, with the peak resident memory.
void long_benchmark(benchmark::State& state, int threads) {
    const Index n = state.range(0), heads = 4, d = 64;
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    const auto options = options_for(Path::stream, threads);
    for (auto _ : state) {
        auto result = attn::attend_heads(q, k, v, options);
        benchmark::DoNotOptimize(result.outputs.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, n, d, heads);
    state.counters["maxrss_MB"] = peak_rss_megabytes();
    // for comparison: one (positions × positions) float matrix
    state.counters["scores_matrix_MB"] = double(n) * double(n) * 4.0 / (1024.0 * 1024.0);
}

/// attend_heads() on the streaming path, 4 heads × 64, causal, with a sliding window of `window`
/// keys (0: none, full causal attention). GFLOP/s counts the keys each query sees: Σ min(i + 1,
/// window) · 2·(d + dv) per head.
void window_benchmark(benchmark::State& state, Index window, int threads) {
    const Index n = state.range(0), heads = 4, d = 64;
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    auto options = options_for(Path::stream, threads);
    options.window = window;
    time_attend_heads_into(state, q, k, v, options);
    double seen = 0;  // keys seen, summed over the queries
    for (Index i = 0; i < n; ++i) seen += double(window > 0 ? std::min(i + 1, window) : i + 1);
    const double flops = seen * 2.0 * double(d + d) * double(heads);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["ns_per_query"] = benchmark::Counter(
        double(n * heads) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.SetComplexityN(n);
}

/// Eigen's float matrix product, n³: the reference rate every GFLOP/s above is read against.
void matrix_multiply(benchmark::State& state, int threads) {
    const Index n = state.range(0);
    std::srand(5);
    const attn::Matrix<float> a = attn::Matrix<float>::Random(n, n), b = attn::Matrix<float>::Random(n, n);
    attn::Matrix<float> c(n, n);
    Eigen::setNbThreads(threads);
    state.counters["eigen_threads"] = Eigen::nbThreads();
    for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    Eigen::setNbThreads(1);
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

// ---- Sight at speed: statistics, rows on demand, weights into reused storage, FMA peak ---------
// 4 heads × 64, causal, on an attn::Workers of `threads` kept across calls.

enum class Sight { stream, statistics, statistics_only, weights_reused, weights_fresh };

const char* sight_name(Sight sight) {
    switch (sight) {
        case Sight::stream:
            return "stream";
        case Sight::statistics:
            return "statistics";
        case Sight::statistics_only:
            return "statistics_only";
        case Sight::weights_reused:
            return "weights_reused";
        case Sight::weights_fresh:
            return "weights_fresh";
    }
    return "?";
}

/// stream: outputs only; statistics: outputs and every head statistic (back 4, markers 0 and
/// 1) with log-sum-exps; statistics_only: the same statistics and log-sum-exps without outputs
/// (attention_statistics_into; GFLOP/s counts q·k only); weights_reused: outputs and weights into a result
/// kept across calls; weights_fresh: the same, a new result every call. maxrss_MB is the process's peak
/// (meaningful when one benchmark runs alone); weights_matrix_MB is one head's (positions × positions) floats, heads ×
/// that is what keep_weights would hold.
void sight_benchmark(benchmark::State& state, Sight sight, int threads) {
    const Index n = state.range(0), heads = 4, d = 64;
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    attn::Workers workers(threads);
    attn::HeadStatisticsRequest request;
    request.markers = {0, 1};
    attn::AttentionOptions<float> options;
    options.threads = workers;
    options.keep_weights = sight == Sight::weights_reused || sight == Sight::weights_fresh;
    if (sight == Sight::statistics || sight == Sight::statistics_only) {
        options.statistics = &request;
        options.keep_log_sum_exp = true;
    }
    attn::HeadsResult<float> result;
    for (auto _ : state) {
        if (sight == Sight::statistics_only) {
            attn::attention_statistics_into(q, k, options, result);
            benchmark::DoNotOptimize(result.statistics.entropy.data());
        } else {
            if (sight == Sight::weights_fresh) result = attn::HeadsResult<float>();
            attn::attend_heads_into(q, k, v, options, result);
            benchmark::DoNotOptimize(result.outputs.data());
        }
        benchmark::ClobberMemory();
    }
    set_counters(state, n, d, sight == Sight::statistics_only ? heads / 2 : heads);
    state.counters["maxrss_MB"] = peak_rss_megabytes();
    state.counters["weights_matrix_MB"] = double(n) * double(n) * 4.0 / (1024.0 * 1024.0);
}

/// Multi-head attention with its weights, 4 heads × 64 (width 256), on 2 kept workers:
/// reused, multi_head_attention_into one result; else multi_head_attention.
void multi_head_benchmark(benchmark::State& state, bool reused) {
    const Index n = state.range(0), heads = 4, d = 64, width = heads * d;
    std::srand(5);
    const attn::Matrix<float> x = attn::Matrix<float>::Random(n, width);
    std::vector<attn::Matrix<float>> w;
    for (int i = 0; i < 4; ++i) w.push_back(attn::Matrix<float>::Random(width, width) * 0.1f);
    const attn::AttentionProjections<float> projections{w[0], w[1], w[2], w[3]};
    attn::Workers workers(2);
    attn::AttentionOptions<float> options;
    options.threads = workers;
    options.keep_weights = true;
    attn::MultiHeadResult<float> result;
    for (auto _ : state) {
        if (reused)
            attn::multi_head_attention_into(x, projections, heads, options, result);
        else
            result = attn::multi_head_attention(x, projections, heads, options);
        benchmark::DoNotOptimize(result.output.data());
        benchmark::ClobberMemory();
    }
    state.counters["maxrss_MB"] = peak_rss_megabytes();
}

/// Exact weights of 64 query rows (the last 64: they see every key) of every head at n
/// positions, from the log-sum-exps of a streaming pass made once before timing.
void rows_benchmark(benchmark::State& state) {
    const Index n = state.range(0), heads = 4, d = 64, rows = 64;
    const auto q = random_stack(heads, n, d, 1), k = random_stack(heads, n, d, 2), v = random_stack(heads, n, d, 3);
    attn::Workers workers(2);
    attn::AttentionOptions<float> options;
    options.threads = workers;
    options.keep_log_sum_exp = true;
    const attn::HeadsResult<float> pass = attn::attend_heads(q, k, v, options);
    std::vector<Index> chosen;
    for (Index i = n - rows; i < n; ++i) chosen.push_back(i);
    attn::WeightRowsResult<float> rows_result;
    for (auto _ : state) {
        attn::attention_rows_into(q, k, pass.log_sum_exp, {}, chosen, {}, options, rows_result);
        benchmark::DoNotOptimize(rows_result.weights.data());
        benchmark::ClobberMemory();
    }
    state.counters["rows"] = double(rows * heads);
}

/// The machine's fp32 FMA peak: kAccumulators independent chains of fused multiply-adds on
/// packets of the width the build targets, on `threads` threads at once.
void fma_peak(benchmark::State& state, int threads) {
    using Packet = attn::detail::RegisterTile<float>::Packet;
    constexpr int lanes = attn::detail::RegisterTile<float>::kLanes;
    // FMA latency 4 × 2 ports, with room, and x and y in registers beside them: 16 chains with
    // 32 registers; 12 with 16 (16 chains and the two constants would not fit, one chain would
    // live in memory, and the store-to-load round trip on it would hold every step back).
    constexpr int kAccumulators = attn::detail::RegisterTile<float>::kWide ? 16 : 12;
    constexpr long kSteps = 1 << 22;
    const auto chain = [](float seed) {
        namespace ei = Eigen::internal;
        Packet acc[kAccumulators];
        for (int a = 0; a < kAccumulators; ++a) acc[a] = ei::pset1<Packet>(seed + float(a));
        const Packet x = ei::pset1<Packet>(0.999999f), y = ei::pset1<Packet>(1e-7f);
        for (long step = 0; step < kSteps; ++step)
            for (int a = 0; a < kAccumulators; ++a) acc[a] = ei::pmadd(acc[a], x, y);
        float sum = 0;
        for (int a = 0; a < kAccumulators; ++a) sum += ei::predux(acc[a]);
        return sum;
    };
    for (auto _ : state) {
        std::vector<std::thread> helpers;
        std::vector<float> sums(std::size_t(threads), 0.0f);
        for (int t = 1; t < threads; ++t) helpers.emplace_back([&, t] { sums[std::size_t(t)] = chain(float(t)); });
        sums[0] = chain(0.0f);
        for (std::thread& helper : helpers) helper.join();
        benchmark::DoNotOptimize(sums.data());
    }
    const double flops = 2.0 * lanes * kAccumulators * double(kSteps) * threads;
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["lanes"] = lanes;
}

// ---- The forward's matrix products on the store model's shapes, one thread ------------------
// a (rows × depth) · b (depth × cols) added into c, all row-major, as Model::forward runs them.

enum class Product { query_key_value, output, up, down, unembedding };

const char* product_name(Product product) {
    switch (product) {
        case Product::query_key_value:
            return "query_key_value";
        case Product::output:
            return "output";
        case Product::up:
            return "up";
        case Product::down:
            return "down";
        case Product::unembedding:
            return "unembedding";
    }
    return "?";
}

enum class ProductImpl { attn, eigen };

const attn::Model<float>& store_model();

/// The product's (depth, cols) in the store model, read when the benchmark runs (the model is
/// loaded only if a benchmark that needs it is selected).
std::pair<Index, Index> product_shape(Product product) {
    const attn::ModelSettings& s = store_model().settings();
    const Index c = s.dimensions;
    switch (product) {
        case Product::query_key_value:
            return {c, 3 * c};
        case Product::output:
            return {c, c};
        case Product::up:
            return {c, s.mlp_width};
        case Product::down:
            return {s.mlp_width, c};
        case Product::unembedding:
            return {c, s.vocabulary_size};
    }
    return {0, 0};
}

void product_benchmark(benchmark::State& state, Product product, ProductImpl impl, bool streamed) {
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Index rows = state.range(0);
    const auto [depth, cols] = product_shape(product);
    std::srand(6);
    const RowMajor a = RowMajor::Random(rows, depth);
    const double b_bytes = double(depth) * double(cols) * sizeof(float);
    const std::size_t copies = streamed ? std::size_t(std::max(1.0, 32.0 * 1024 * 1024 / b_bytes)) : 1;
    std::vector<RowMajor> b(copies, RowMajor::Random(depth, cols));
    RowMajor c = RowMajor::Zero(rows, cols);
    Eigen::setNbThreads(1);
    std::size_t next = 0;
    for (auto _ : state) {
        const RowMajor& weights = b[next];
        next = next + 1 == copies ? 0 : next + 1;
        if (impl == ProductImpl::attn)
            attn::detail::multiply_rows(a, weights, c, true);
        else
            c.noalias() += a * weights;
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows) * double(depth) * double(cols) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

// ---- The streaming kernel's parts on one block, one thread -----------------------------
// What stream_task does for one task (kQueryBlock queries) and one key block (kKeyBlock keys)
// that no query's mask reaches, d = dv = 64, each part alone, over and over on the same data
// (it stays in L1/L2, as a task's does): scores (the keysᵀ · queriesᵀ tiles), softmax (the
// online softmax of those scores), values (outputᵀ += valuesᵀ · weightsᵀ) and block (the three
// in turn). GFLOP/s counts the two products' multiply-adds, so block's against fma_peak is the
// kernel's ceiling here, and softmax's ns_per_score is the exponential's share. (The softmax's
// work does not depend on the numbers: after the first call it runs on weights, as well.)

enum class StreamPart { scores, softmax, values, block };

const char* stream_part_name(StreamPart part) {
    switch (part) {
        case StreamPart::scores:
            return "scores";
        case StreamPart::softmax:
            return "softmax";
        case StreamPart::values:
            return "values";
        case StreamPart::block:
            return "block";
    }
    return "?";
}

void stream_part(benchmark::State& state, StreamPart part) {
    using Rows = attn::detail::RowMajorMatrix<float>;
    namespace d = attn::detail;
    using Tiling = d::KernelTiling<float>;
    using ScoreTiles = d::kernel::Tiles<float, Tiling::kScoreKeys, Tiling::kScorePackets>;
    constexpr Index depth = 64, width = Tiling::kQueryBlock, block = Tiling::kKeyBlock, chunk = Tiling::kChunk;
    constexpr int packets = Tiling::kScorePackets;
    std::srand(8);
    const Rows keys = Rows::Random(block, depth);
    const Rows values = Rows::Random(block, depth);
    const Rows queries_t = Rows::Random(depth, width) * 0.125f;
    Rows scores_t = Rows::Random(block, width);
    Rows output_t = Rows::Zero(depth, width);
    std::vector<float> largest(width, -std::numeric_limits<float>::infinity()), total(width, 0.0f), factor(width, 1.0f);
    for (auto _ : state) {
        for (Index c0 = 0; c0 < width; c0 += chunk) {
            float* st = scores_t.data() + c0;
            if (part == StreamPart::scores || part == StreamPart::block)
                for (Index j = 0; j < block; j += Tiling::kScoreKeys)
                    ScoreTiles::run(Tiling::kScoreKeys, packets, keys.data() + j * depth, depth, 1,
                                    queries_t.data() + c0, width, depth, st + j * width, width, false);
            if (part == StreamPart::softmax || part == StreamPart::block)
                d::kernel::online_softmax_packets(packets, st, width, block, largest.data() + c0, total.data() + c0,
                                                  factor.data() + c0);
            if (part == StreamPart::values || part == StreamPart::block)
                d::kernel::values_times_weights(depth, packets, st, width, block, values.data(), depth,
                                                output_t.data() + c0, width);
        }
        benchmark::DoNotOptimize(output_t.data());
        benchmark::ClobberMemory();
    }
    const double multiply_adds = part == StreamPart::softmax ? 0.0
                                 : part == StreamPart::block ? 2.0 * block * width * depth
                                                             : 1.0 * block * width * depth;
    if (multiply_adds > 0)
        state.counters["GFLOP/s"] =
            benchmark::Counter(2.0 * multiply_adds * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["ns_per_score"] = benchmark::Counter(
        double(block * width) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// ---- Real-size products with the weights from memory, one thread -----------------------
// a (rows × depth) · b (depth × cols) added into c, b cycling through pool_MiB of weights, as a
// real model's layers do: 1,024 (more than any L3 of these machines: from memory) or 256 (what
// a large L3 may keep); rows 1 (a decoding step's product) and 128 … 512 (a prefill's, or a
// thread's share of one). GPT-2 small's and SmolLM2-135M's layer shapes.

struct RealShape {
    const char* name;
    Index depth, cols;
};

constexpr RealShape kRealShapes[] = {
    {"gpt2/query_key_value", 768, 2304},
    {"gpt2/output", 768, 768},
    {"gpt2/up", 768, 3072},
    {"gpt2/down", 3072, 768},
    {"gpt2/unembedding", 768, 50257},
    {"smollm2/query", 576, 576},
    {"smollm2/gate", 576, 1536},
    {"smollm2/down", 1536, 576},
    {"smollm2/unembedding", 576, 49152},
};

/// How b is laid out and read:
///   float            float rows, as the forward reads them (tiles.hpp's rules: the tiles read
///                    in place, or packed; 1 or 2 rows stream b as kStreamedNarrowBytes says)
///   float_packed     float rows, every block copied into a panel first
///   float_padded     float rows 16 numbers further apart than cols (never 4 KiB-aliased), in place
///   float_one_row    (1 row) one row of b per pass over c, no prefetching
///   float_four_rows  (1 row) four rows of b per pass over c, no prefetching
///   bf16             16-bit rows (BF16), widened in registers, as a stored_16_bit model's
///   bf16_prefetch    (1 row) four rows per pass, the next pass's rows prefetched
///   bf16_no_prefetch (1 row) four rows per pass, no prefetching
///   bf16_one_row     (1 row) one row per pass, the next row prefetched
///   float_panels     float in panels of 64 columns, as a model keeps them (weight_panels.hpp)
///   bf16_panels      BF16 in panels of 64 columns, as a stored_16_bit model keeps them
///   bf16_rounded_panels  the same, a rounded to bfloat16 (LoadOptions::bfloat16_activations): pairs of
///                    depths per instruction where the build has AVX-512 BF16
enum class Layout {
    float_panels,
    bf16_panels,
    bf16_rounded_panels,
    float_rows,
    float_packed,
    float_padded,
    float_one_row,
    float_four_rows,
    bf16,
    bf16_prefetch,
    bf16_no_prefetch,
    bf16_one_row
};

const char* layout_name(Layout layout) {
    switch (layout) {
        case Layout::float_panels:
            return "float_panels";
        case Layout::bf16_panels:
            return "bf16_panels";
        case Layout::bf16_rounded_panels:
            return "bf16_rounded_panels";
        case Layout::float_rows:
            return "float";
        case Layout::float_packed:
            return "float_packed";
        case Layout::float_padded:
            return "float_padded";
        case Layout::float_one_row:
            return "float_one_row";
        case Layout::float_four_rows:
            return "float_four_rows";
        case Layout::bf16:
            return "bf16";
        case Layout::bf16_prefetch:
            return "bf16_prefetch";
        case Layout::bf16_no_prefetch:
            return "bf16_no_prefetch";
        case Layout::bf16_one_row:
            return "bf16_one_row";
    }
    return "?";
}

bool streams_only(Layout layout) {
    return layout == Layout::float_one_row || layout == Layout::float_four_rows || layout == Layout::bf16_prefetch ||
           layout == Layout::bf16_no_prefetch || layout == Layout::bf16_one_row;
}

/// Float rows that the tiles always copy into a panel.
struct PackedFloatRows : attn::detail::DenseRows<float> {
    static constexpr bool kInPlace = false;
};

/// 1 GiB of weights, 2 MiB pages asked for as a model's are, filled once with numbers in [−1, 1).
struct WeightPool {
    static constexpr std::size_t kBytes = std::size_t(1) << 30;
    std::vector<float, attn::detail::HugePagesInside<float>> floats;
    std::vector<std::uint16_t, attn::detail::HugePagesInside<std::uint16_t>> halves;

    static WeightPool& get() {
        static WeightPool pool;
        return pool;
    }

private:
    WeightPool() : floats(kBytes / sizeof(float)), halves(kBytes / sizeof(std::uint16_t)) {
        std::uint32_t state = 12345;
        const auto next = [&state] {
            state = state * 1664525u + 1013904223u;
            return float(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
        };
        for (float& x : floats) x = next();
        for (std::uint16_t& h : halves) h = attn::detail::float_to_bfloat16_exact(next());
    }
};

/// Copies of one shape's matrix packed in panels, float or BF16, `pool_mib` MiB or more in all
/// (numbers from WeightPool's).
template <class Matrix>
const std::vector<Matrix>& panel_pool(Index depth, Index cols, Index pool_mib) {
    static std::map<std::tuple<Index, Index, Index>, std::vector<Matrix>> pools;
    std::vector<Matrix>& pool = pools[{depth, cols, pool_mib}];
    if (pool.empty()) {
        constexpr bool half = std::is_same_v<Matrix, attn::detail::HalfMatrix>;
        const Index entry_bytes = half ? 2 : 4;
        const Index copies = std::max<Index>(1, (pool_mib << 20) / (depth * cols * entry_bytes));
        const WeightPool& numbers = WeightPool::get();
        for (Index i = 0; i < copies; ++i) {
            const Index offset = (i * depth * cols) % Index(numbers.floats.size() - std::size_t(depth * cols));
            if constexpr (half)
                pool.push_back(attn::detail::HalfMatrix::packed(attn::detail::HalfFormat::bfloat16, depth, cols,
                                                                numbers.halves.data() + offset));
            else
                pool.push_back(attn::detail::PanelMatrix<float>::packed(depth, cols, numbers.floats.data() + offset));
        }
    }
    return pool;
}

void weights_from_memory(benchmark::State& state, RealShape shape, Layout layout) {
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    namespace d = attn::detail;
    const Index rows = state.range(0), depth = shape.depth, cols = shape.cols;
    const bool half = layout == Layout::bf16 || layout == Layout::bf16_prefetch || layout == Layout::bf16_no_prefetch ||
                      layout == Layout::bf16_one_row || layout == Layout::bf16_panels ||
                      layout == Layout::bf16_rounded_panels;
    const Index stride = layout == Layout::float_padded ? cols + 16 : cols;
    const Index entry_bytes = half ? 2 : 4;
    const Index matrix_bytes = depth * stride * entry_bytes;
    const Index copies = std::max<Index>(1, (state.range(1) << 20) / matrix_bytes);
    WeightPool& pool = WeightPool::get();
    std::srand(7);
    const RowMajor a = RowMajor::Random(rows, depth);
    RowMajor c = RowMajor::Zero(rows, cols);
    const auto& float_panels = layout == Layout::float_panels
                                   ? panel_pool<d::PanelMatrix<float>>(depth, cols, state.range(1))
                                   : std::vector<d::PanelMatrix<float>>();
    const bool rounded = layout == Layout::bf16_rounded_panels;
    const auto& bf16_panels = layout == Layout::bf16_panels || rounded
                                  ? panel_pool<d::HalfMatrix>(depth, cols, state.range(1))
                                  : std::vector<d::HalfMatrix>();
    const Index panel_copies = Index(std::max(float_panels.size(), bf16_panels.size()));
    Index next = 0;
    for (auto _ : state) {
        if (panel_copies > 0) {  // a model's matrices, one copy after another
            const Index copy = next;
            next = next + 1 == panel_copies ? 0 : next + 1;
            auto b = layout == Layout::float_panels ? d::WeightRows<float>::of(float_panels[std::size_t(copy)])
                                                    : d::WeightRows<float>::of(bf16_panels[std::size_t(copy)]);
            b.bfloat16_activations = rounded;
            d::multiply_rows(a, b, c, true);
            benchmark::DoNotOptimize(c.data());
            benchmark::ClobberMemory();
            continue;
        }
        const Index offset = next * depth * stride;
        next = next + 1 == copies ? 0 : next + 1;
        const float* floats = pool.floats.data() + offset;
        const std::uint16_t* halves = pool.halves.data() + offset;
        const d::DenseRows<float> float_rows{floats, stride};
        const d::HalfRows<d::HalfFormat::bfloat16> bf16_rows{halves, stride};
        using Bf16 = d::HalfRows<d::HalfFormat::bfloat16>;
        switch (layout) {
            case Layout::float_rows:
            case Layout::float_padded:
                d::multiply_rows_from(rows, depth, cols, a.data(), depth, float_rows, c.data(), cols, true);
                break;
            case Layout::float_packed: {
                PackedFloatRows b;
                b.data = floats;
                b.row = stride;
                d::multiply_rows_from(rows, depth, cols, a.data(), depth, b, c.data(), cols, true);
                break;
            }
            case Layout::float_one_row:
                d::stream_few_rows<float, d::DenseRows<float>, 1, false>(rows, depth, cols, a.data(), depth, float_rows,
                                                                         c.data(), cols, true);
                break;
            case Layout::float_four_rows:
                d::stream_few_rows<float, d::DenseRows<float>, 4, false>(rows, depth, cols, a.data(), depth, float_rows,
                                                                         c.data(), cols, true);
                break;
            case Layout::bf16:
                d::multiply_rows_from(rows, depth, cols, a.data(), depth, bf16_rows, c.data(), cols, true);
                break;
            case Layout::bf16_prefetch:
                d::stream_few_rows<float, Bf16, 4, true>(rows, depth, cols, a.data(), depth, bf16_rows, c.data(), cols,
                                                         true);
                break;
            case Layout::bf16_no_prefetch:
                d::stream_few_rows<float, Bf16, 4, false>(rows, depth, cols, a.data(), depth, bf16_rows, c.data(), cols,
                                                          true);
                break;
            case Layout::bf16_one_row:
                d::stream_few_rows<float, Bf16, 1, true>(rows, depth, cols, a.data(), depth, bf16_rows, c.data(), cols,
                                                         true);
                break;
            case Layout::float_panels:
            case Layout::bf16_panels:
            case Layout::bf16_rounded_panels:
                break;  // above
        }
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows) * double(depth) * double(cols) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.counters["weights_GB/s"] =
        benchmark::Counter(double(depth * cols * entry_bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// GGUF block-format weights (quantized_weights.hpp) from memory: `copies` matrices of the shape,
/// (cols × depth) as a file stores them, random codes and small finite scales, 256 MiB or more.
struct QuantizedPool {
    std::vector<attn::detail::QuantizedMatrix> matrices;

    static const QuantizedPool& get(attn::detail::QuantFormat format, Index depth, Index cols) {
        static std::map<std::tuple<int, Index, Index>, std::unique_ptr<QuantizedPool>> pools;
        auto& pool = pools[{int(format), depth, cols}];
        if (!pool) pool.reset(new QuantizedPool(format, depth, cols));
        return *pool;
    }

private:
    QuantizedPool(attn::detail::QuantFormat format, Index depth, Index cols) {
        namespace d = attn::detail;
        const Index width = d::quant_block_bytes(format), values = d::quant_block_values(format);
        const Index bytes = cols * depth / values * width;
        const Index copies = std::max<Index>(1, (Index(256) << 20) / bytes);
        std::uint32_t state = 12345;
        const auto next = [&state] {
            state = state * 1664525u + 1013904223u;
            return state >> 8;
        };
        for (Index i = 0; i < copies; ++i) {
            d::QuantizedMatrix m = d::QuantizedMatrix::sized(depth, {{format, cols}});
            for (std::uint8_t& b : m.bytes) b = std::uint8_t(next());
            for (std::size_t at = 0; at < m.bytes.size(); at += std::size_t(width)) {
                std::uint8_t* block = m.bytes.data() + at;
                const auto half = [&](std::uint8_t* p) {  // 2^-12 … 2^-9, either sign
                    const std::uint32_t bits = (next() & 1u) << 15 | (3 + next() % 3) << 10 | (next() & 0x3FFu);
                    p[0] = std::uint8_t(bits & 0xFF);
                    p[1] = std::uint8_t(bits >> 8);
                };
                if (format == d::QuantFormat::q6_k) {
                    half(block + 208);
                } else {
                    half(block);
                    if (d::has_min(format)) half(block + 2);
                }
            }
            matrices.push_back(std::move(m));
        }
    }
};

/// from_memory/<model>/<product>/<format>: the product on GGUF blocks (multiply_quantized): rows 1
/// streams each row of W decoded in registers, more decode L1 panels for the float tiles.
/// weights_GB/s counts the blocks' bytes.
void quantized_from_memory(benchmark::State& state, RealShape shape, attn::detail::QuantFormat format) {
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Index rows = state.range(0), depth = shape.depth, cols = shape.cols;
    const QuantizedPool& pool = QuantizedPool::get(format, depth, cols);
    std::srand(7);
    const RowMajor a = RowMajor::Random(rows, depth);
    RowMajor c = RowMajor::Zero(rows, cols);
    std::size_t next = 0;
    for (auto _ : state) {
        const attn::detail::QuantizedMatrix& w = pool.matrices[next];
        next = next + 1 == pool.matrices.size() ? 0 : next + 1;
        attn::detail::multiply_quantized(rows, depth, a.data(), depth, w, 0, cols, 0, c.data(), cols, true);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows) * double(depth) * double(cols) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.counters["weights_GB/s"] = benchmark::Counter(double(pool.matrices.front().bytes.size()) * 1e-9,
                                                        benchmark::Counter::kIsIterationInvariantRate);
}

// ---- The store model's full forward, 16 … 160 positions -------------------------------
// Logits only (the default), on the first `positions` ids of a 160-token product text.

const attn::Model<float>& store_model() {
    static const attn::Model<float> model = attn::Model<float>::load(ATTN_SOURCE_MODEL_DIR);
    return model;
}

/// threads > 0: ForwardOptions::threads (threads started and joined in every call);
/// kept > 0: ForwardOptions::workers, an attn::Workers of that size kept across calls.
void model_forward(benchmark::State& state, int threads, int kept) {
    const attn::Model<float>& model = store_model();
    std::vector<int> ids;
    for (int i = 0; static_cast<Index>(ids.size()) < state.range(0); ++i)
        ids.push_back(4 + (i * 37) % (model.tokenizer().size() - 4));  // ordinary tokens, no markers
    attn::ForwardOptions options;
    options.threads = threads;
    std::unique_ptr<attn::Workers> workers;
    if (kept > 0) {
        workers = std::make_unique<attn::Workers>(kept);
        options.threads = *workers;
    }
    for (auto _ : state) {
        auto result = model.forward(ids, options);
        benchmark::DoNotOptimize(result.logits.data());
    }
    state.SetComplexityN(state.range(0));
}

/// The attention's prompt lengths (512, 2,048 and 4,096 positions), timed in milliseconds of real time.
benchmark::internal::Benchmark* at_prompt_lengths(benchmark::internal::Benchmark* b) {
    return b->Arg(512)->Arg(2048)->Arg(4096)->ArgName("positions")->Unit(benchmark::kMillisecond)->UseRealTime();
}

void register_benchmarks() {
    for (int threads : {1, 2})
        for (bool kept : {false, true})
            benchmark::RegisterBenchmark(
                ("model_forward/" + std::string(kept ? "workers:" : "threads:") + std::to_string(threads)).c_str(),
                model_forward, kept ? 0 : threads, kept ? threads : 0)
                ->RangeMultiplier(2)
                ->Range(16, 128)
                ->Arg(160)
                ->ArgName("positions")
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(("matrix_multiply/threads:" + std::to_string(threads)).c_str(), matrix_multiply,
                                     threads)
            ->Arg(1024)
            ->ArgName("size")
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    for (Product product :
         {Product::query_key_value, Product::output, Product::up, Product::down, Product::unembedding})
        for (ProductImpl impl : {ProductImpl::attn, ProductImpl::eigen})
            for (bool streamed : {false, true}) {
                const std::string name = std::string("products/") + product_name(product) +
                                         (impl == ProductImpl::attn ? "/attn" : "/eigen") +
                                         (streamed ? "/streamed" : "/warm");
                benchmark::RegisterBenchmark(name.c_str(), product_benchmark, product, impl, streamed)
                    ->Arg(80)
                    ->Arg(160)
                    ->ArgName("rows")
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime();
            }
    for (StreamPart part : {StreamPart::scores, StreamPart::softmax, StreamPart::values, StreamPart::block})
        benchmark::RegisterBenchmark((std::string("stream_parts/") + stream_part_name(part) + "/d:64").c_str(),
                                     stream_part, part)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    for (const RealShape& shape : kRealShapes)
        for (Layout layout :
             {Layout::float_panels, Layout::bf16_panels, Layout::bf16_rounded_panels, Layout::float_rows,
              Layout::float_packed, Layout::float_padded, Layout::float_one_row, Layout::float_four_rows, Layout::bf16,
              Layout::bf16_prefetch, Layout::bf16_no_prefetch, Layout::bf16_one_row}) {
            const bool one_row = streams_only(layout);
            const std::string name = std::string("from_memory/") + shape.name + "/" + layout_name(layout);
            auto* benchmark = benchmark::RegisterBenchmark(name.c_str(), weights_from_memory, shape, layout);
            for (Index pool : {1024, 256}) {
                benchmark->Args({1, pool});
                if (!one_row)
                    for (Index rows : {128, 256, 512}) benchmark->Args({rows, pool});
            }
            benchmark->ArgNames({"rows", "pool_MiB"})->Unit(benchmark::kMicrosecond)->UseRealTime();
        }
    for (const RealShape& shape : kRealShapes)
        for (const attn::detail::QuantFormat format :
             {attn::detail::QuantFormat::q8_0, attn::detail::QuantFormat::q4_0, attn::detail::QuantFormat::q4_1,
              attn::detail::QuantFormat::q5_0, attn::detail::QuantFormat::q5_1, attn::detail::QuantFormat::q4_k,
              attn::detail::QuantFormat::q5_k, attn::detail::QuantFormat::q6_k}) {
            // a K format's 256-value blocks do not divide SmolLM2's 576 (its Q4_K_M files keep
            // those matrices as Q5_0): no such matrix exists
            if (shape.depth % attn::detail::quant_block_values(format) != 0) continue;
            std::string format_name = attn::detail::quant_format_name(format);
            for (char& ch : format_name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
            const std::string name = std::string("from_memory/") + shape.name + "/" + format_name;
            benchmark::RegisterBenchmark(name.c_str(), quantized_from_memory, shape, format)
                ->Args({1, 256})
                ->Args({128, 256})
                ->Args({512, 256})
                ->ArgNames({"rows", "pool_MiB"})
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
        }
    for (Path path : {Path::stream, Path::weights, Path::plain})
        for (Index d : {32, 64, 128})
            for (int threads : {1, 2}) {
                const std::string name = std::string("heads/") + path_name(path) + "/d:" + std::to_string(d) +
                                         "/threads:" + std::to_string(threads);
                benchmark::RegisterBenchmark(name.c_str(), heads_benchmark, path, Index(4), d, threads)
                    ->RangeMultiplier(2)
                    ->Range(16, 4096)
                    ->Arg(160)  // the store model's context, a peer shape
                    ->ArgName("positions")
                    ->Complexity(benchmark::oAuto)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
            }
    for (int threads : {1, 2})
        for (const auto& [name, function] :
             {std::pair{"stream", &heads_kept_benchmark}, std::pair{"stream_bfloat16", &heads_kept_bfloat16_benchmark}})
            at_prompt_lengths(benchmark::RegisterBenchmark(
                ("heads_kept/" + std::string(name) + "/d:64/threads:" + std::to_string(threads)).c_str(), function,
                Index(64), threads));
    for (Path path : {Path::stream, Path::weights, Path::plain})
        for (int threads : {1, 2}) {
            const std::string name =
                std::string("head/") + path_name(path) + "/d:64/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), head_benchmark, path, Index(64), threads)
                ->RangeMultiplier(2)
                ->Range(16, 4096)
                ->ArgName("positions")
                ->Complexity(benchmark::oAuto)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
    for (Index window : {256, 1024, 0}) {
        const std::string name = std::string("causal_window/") +
                                 (window > 0 ? "w:" + std::to_string(window) : std::string("full")) + "/d:64/threads:1";
        benchmark::RegisterBenchmark(name.c_str(), window_benchmark, window, 1)
            ->RangeMultiplier(2)
            ->Range(1024, 16384)
            ->ArgName("positions")
            ->Complexity(benchmark::oAuto)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    for (int threads : {1, 2})
        benchmark::RegisterBenchmark(("fma_peak/threads:" + std::to_string(threads)).c_str(), fma_peak, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    for (Sight sight :
         {Sight::stream, Sight::statistics, Sight::statistics_only, Sight::weights_reused, Sight::weights_fresh}) {
        const std::string name = std::string(sight_name(sight)) + "/d:64/threads:2";
        at_prompt_lengths(benchmark::RegisterBenchmark(("sight/" + name).c_str(), sight_benchmark, sight, 2));
        if (sight == Sight::stream || sight == Sight::statistics || sight == Sight::statistics_only)  // long: 1 call
            benchmark::RegisterBenchmark(("sight_long/" + name).c_str(), sight_benchmark, sight, 2)
                ->Arg(16384)
                ->Arg(65536)
                ->ArgName("positions")
                ->Iterations(1)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    }
    for (bool reused : {true, false})
        benchmark::RegisterBenchmark(
            reused ? "sight/multi_head_weights_reused/d:64/threads:2" : "sight/multi_head_weights_fresh/d:64/threads:2",
            multi_head_benchmark, reused)
            ->Arg(512)
            ->Arg(2048)
            ->ArgName("positions")
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    benchmark::RegisterBenchmark("sight/rows/d:64/threads:2", rows_benchmark)
        ->Arg(2048)
        ->ArgName("positions")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("sight_long/rows/d:64/threads:2", rows_benchmark)
        ->Arg(16384)
        ->Arg(65536)
        ->ArgName("positions")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    for (int threads : {1, 2})
        benchmark::RegisterBenchmark(("long/stream/d:64/threads:" + std::to_string(threads)).c_str(), long_benchmark,
                                     threads)
            ->Arg(8192)
            ->Arg(16384)
            ->ArgName("positions")
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    register_benchmarks();
    bench::register_memory_benchmarks();
    // Without a filter, leave out the long shapes, the 1 GiB of weights and the 256 MiB read
    // buffers (run them with --benchmark_filter=long, sight_long, from_memory or memory);
    // short runs by default (0.1 s per benchmark, at least one iteration) keep the suite near 3 minutes.
    return bench::run(argc, argv, "-^(long|sight_long|from_memory|memory)/", "0.1");
}
