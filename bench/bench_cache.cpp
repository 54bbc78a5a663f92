// Decoding: one new position's attention over a key/value cache (attend_cache_into), read
// against the machine's memory bandwidth (Google Benchmark; JSON with --benchmark_format=json
// or --benchmark_out=FILE --benchmark_out_format=json).
//
// Families (names end in /positions:N/real_time, or /real_time):
//   cache/heads:<q>/kv:<kv>/d:<d>/threads:<t>  attend_cache_into: 1 query position per head over
//                                              a cache of N positions (256 … 16,384), outputs
//                                              only, reused result, no RoPE (its
//                                              cost on one row is not the cache's);
//                                              threads: AttentionOptions::threads, started per call
//   cache/.../workers:<t>                      the same on an attn::Workers of t kept across calls,
//                                              as a decoder keeps them
//   cache_window/heads:4/kv:4/d:64/w:<w>       a decoding step over a sliding window's cache (core/
//                                              kv_cache.hpp) after N positions (4,096 … 65,536):
//                                              one position appended, then attend_cache_into with
//                                              options.window = w; cache_MiB is the cache's bytes():
//                                              time and memory flat in N (the window's, not N's)
//   memory/...                                 the machine's read bandwidth (memory_benchmarks.hpp)
//
// bytes_read (a rate) counts what attention must read at least: keys and values of every
// visible position of every key/value head, once. Its ratio to memory/copy's bytes_read is
// the share of copy bandwidth reached.
#include <benchmark/benchmark.h>
#include <attn/attn.hpp>

#include <memory>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "memory_benchmarks.hpp"

namespace {

using attn::Index;

struct CacheShape {
    Index heads, kv_heads, d;
};

void cache_benchmark(benchmark::State& state, CacheShape shape, int threads, bool kept) {
    const Index positions = state.range(0);
    attn::KeyValueCache<float> cache(shape.kv_heads, positions, shape.d);
    std::srand(1);
    for (Index h = 0; h < shape.kv_heads; ++h) {
        cache.key_rows(h).setRandom();
        cache.value_rows(h).setRandom();
    }
    cache.extend(positions);
    attn::HeadStack<float> queries(shape.heads, 1, shape.d);
    for (Index h = 0; h < shape.heads; ++h) queries.head(h).setRandom();

    std::unique_ptr<attn::Workers> workers;
    attn::AttentionOptions<float> options;
    if (kept) {
        workers = std::make_unique<attn::Workers>(threads);
        options.threads = *workers;
    } else {
        options.threads = threads;
    }
    attn::HeadsResult<float> result;
    attn::attend_cache_into(queries, cache, options, result);  // sizes the result and its working memory
    for (auto _ : state) {
        attn::attend_cache_into(queries, cache, options, result);
        benchmark::DoNotOptimize(result.outputs.data());
        benchmark::ClobberMemory();
    }
    const double bytes = double(shape.kv_heads) * double(positions) * double(2 * shape.d) * sizeof(float);
    state.counters["bytes_read"] = benchmark::Counter(bytes * double(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["cache_MiB"] = bytes / (1024.0 * 1024.0);
}

/// A decoding step on a sliding window's cache at N positions: append one position, attend.
void window_cache_benchmark(benchmark::State& state, CacheShape shape, Index window) {
    const Index positions = state.range(0);
    // The capacity only bounds positions: a window's cache holds window + window/4 rows whatever it is.
    attn::KeyValueCache<float> cache(shape.kv_heads, Index(1) << 40, shape.d, 0, window);
    std::srand(1);
    attn::HeadStack<float> keys(shape.kv_heads, 1, shape.d), values(shape.kv_heads, 1, shape.d);
    attn::HeadStack<float> block_keys(shape.kv_heads, window, shape.d), block_values(shape.kv_heads, window, shape.d);
    for (Index h = 0; h < shape.kv_heads; ++h) {
        keys.head(h).setRandom();
        values.head(h).setRandom();
        block_keys.head(h).setRandom();
        block_values.head(h).setRandom();
    }
    for (Index p = 0; p < positions; p += window) cache.append(block_keys, block_values);
    cache.settle();  // as a Decoder does after each append: back to window + window/4 rows
    attn::HeadStack<float> queries(shape.heads, 1, shape.d);
    for (Index h = 0; h < shape.heads; ++h) queries.head(h).setRandom();
    attn::AttentionOptions<float> options;
    options.threads = 1;
    options.window = window;
    attn::HeadsResult<float> result;
    attn::attend_cache_into(queries, cache, options, result);  // sizes the result and its working memory
    for (auto _ : state) {
        cache.append(keys, values);
        attn::attend_cache_into(queries, cache, options, result);
        benchmark::DoNotOptimize(result.outputs.data());
        benchmark::ClobberMemory();
    }
    state.counters["cache_MiB"] = double(cache.bytes()) / (1024.0 * 1024.0);
    state.counters["positions_at_end"] = double(cache.size());
}

void register_benchmarks() {
    for (const CacheShape shape : {CacheShape{4, 4, 64}, CacheShape{32, 8, 128}})
        for (bool kept : {false, true})
            for (int threads : {1, 2}) {
                const std::string name = "cache/heads:" + std::to_string(shape.heads) +
                                         "/kv:" + std::to_string(shape.kv_heads) + "/d:" + std::to_string(shape.d) +
                                         (kept ? "/workers:" : "/threads:") + std::to_string(threads);
                benchmark::RegisterBenchmark(name.c_str(), cache_benchmark, shape, threads, kept)
                    ->RangeMultiplier(4)
                    ->Range(256, 16384)
                    ->ArgName("positions")
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime();
            }
    for (Index window : {256, 4096})
        benchmark::RegisterBenchmark(("cache_window/heads:4/kv:4/d:64/w:" + std::to_string(window)).c_str(),
                                     window_cache_benchmark, CacheShape{4, 4, 64}, window)
            ->RangeMultiplier(4)
            ->Range(4096, 65536)
            ->ArgName("positions")
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    bench::register_memory_benchmarks();
}

}  // namespace

int main(int argc, char** argv) {
    register_benchmarks();
    return bench::run(argc, argv, "", "");
}
