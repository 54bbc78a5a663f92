// Causal attention kernels by sequence length (Google Benchmark, JSON with
// --benchmark_format=json). GFLOP/s counts the useful causal arithmetic: the unmasked
// half of q·kᵀ and of weights·v, 2·n²·d per head.
#include <benchmark/benchmark.h>
#include <attn/attn.hpp>

namespace {

template <class T>
attn::Matrix<T> filled(attn::Index rows, attn::Index cols) {
    return attn::Matrix<T>::Random(rows, cols);
}

void set_counters(benchmark::State& state, attn::Index positions, attn::Index size, attn::Index heads) {
    const double flops = 2.0 * double(positions) * double(positions) * double(size) * double(heads);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.SetComplexityN(positions);
}

void head_attention(benchmark::State& state) {
    const attn::Index n = state.range(0), d = state.range(1);
    const auto q = filled<float>(n, d), k = filled<float>(n, d), v = filled<float>(n, d);
    for (auto _ : state) {
        auto result = attn::attention(q, k, v);
        benchmark::DoNotOptimize(result.output.data());
    }
    set_counters(state, n, d, 1);
}
BENCHMARK(head_attention)->ArgsProduct({benchmark::CreateRange(16, 4096, 2), {64}})->Complexity(benchmark::oNSquared);

void matrix_multiply(benchmark::State& state) {
    const attn::Index n = state.range(0);
    const auto a = filled<float>(n, n), b = filled<float>(n, n);
    attn::Matrix<float> c(n, n);
    for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(matrix_multiply)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
