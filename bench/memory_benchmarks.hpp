#pragma once
// How fast this machine reads memory, the limit a decoding step's products are held to (Google
// Benchmark families; bench_cache and bench_kernels both register them, so that the products
// and the limit can be timed in one process, their repetitions interleaved):
//
//   memory/copy/threads:<t>                    memcpy of a 256 MiB buffer into another, split over
//                                              t threads: the bytes read per second
//   memory/read/threads:<t>                    summing a 256 MiB buffer (laid out as weight panels
//                                              are: from a cache line, huge pages asked for): a
//                                              read-only reference
//   memory/read_streams:<s>/threads:<t>        the same, each thread's share summed as s = 2, 4 or 8
//                                              runs side by side, a cache line of each a step (as the
//                                              model's panels are streamed: Intel's prefetchers follow
//                                              several runs further than one)
//   memory/read_streams:4/ahead:2048/threads:<t>  four runs, each prefetched 2 KiB ahead, as the
//                                              decoding products read their panels. The machine's read
//                                              bandwidth is the best of these and memory/read: no one
//                                              of them is best everywhere (Zen 5, 512-bit loads: 2
//                                              runs 38 GB/s, 4 runs 26, one 34; 256-bit loads: 4 runs
//                                              35; docs/bench/2026-12-06-epyc-zen5-avx512/read_isa),
//                                              and without the prefetched one the products read faster
//                                              than the "bandwidth" (docs/bench/2026-12-06-epyc-zen5-
//                                              avx512/tables-0407-avx2)
//
// bytes_read is a rate: the bytes summed (or copied) per second.

#include <benchmark/benchmark.h>
#include <Eigen/Core>
#include <attn/detail/kernels/large_arrays.hpp>
#include <attn/detail/kernels/tiles.hpp>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace bench {
namespace memory {

constexpr std::size_t kBuffer = std::size_t(256) << 20;  // far beyond any last-level cache

/// Runs part(t) for t = 0 … threads − 1, part 0 on the caller.
template <class Part>
void on_threads(int threads, Part part) {
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back(part, t);
    part(0);
    for (std::thread& helper : helpers) helper.join();
}

inline void copy_benchmark(benchmark::State& state, int threads) {
    std::vector<char> from(kBuffer, 1), to(kBuffer, 0);  // filled: every page touched before timing
    const std::size_t share = kBuffer / std::size_t(threads);
    for (auto _ : state) {
        on_threads(threads, [&](int t) { std::memcpy(to.data() + t * share, from.data() + t * share, share); });
        benchmark::DoNotOptimize(to.data());
        benchmark::ClobberMemory();
    }
    state.counters["bytes_read"] =
        benchmark::Counter(double(kBuffer) * double(state.iterations()), benchmark::Counter::kIsRate);
}

/// Memory read as the model's weight panels are: from a cache line, 2 MiB pages asked for (before
/// 2026-12-06 a std::vector, 16 bytes past a line: a 512-bit load spanned two).
using WeightLikeBuffer = std::vector<float, attn::detail::HugePagesInside<float>>;

inline void read_benchmark(benchmark::State& state, int threads) {
    const std::size_t count = kBuffer / sizeof(float);
    WeightLikeBuffer buffer(count, 1.0f);
    const std::size_t share = count / std::size_t(threads);
    std::vector<float> sums(std::size_t(threads) * 16);  // one cache line apart
    for (auto _ : state) {
        on_threads(threads, [&](int t) {
            const Eigen::Map<const Eigen::ArrayXf> part(buffer.data() + std::size_t(t) * share, attn::Index(share));
            sums[std::size_t(t) * 16] = part.sum();
        });
        benchmark::DoNotOptimize(sums.data());
        benchmark::ClobberMemory();
    }
    state.counters["bytes_read"] =
        benchmark::Counter(double(kBuffer) * double(state.iterations()), benchmark::Counter::kIsRate);
}

/// Each thread's share of the buffer summed as kStreams runs side by side, a cache line of each a
/// step (one accumulator per packet: no run waits on an addition's latency), the lines kAhead
/// bytes ahead of each run prefetched when kAhead > 0 (as the decoding products prefetch their
/// panels' rows: weight_panels.hpp).
template <std::size_t kStreams, std::size_t kAhead = 0>
void read_streams_benchmark(benchmark::State& state, int threads) {
    namespace ei = Eigen::internal;
    using Packet = attn::detail::RegisterTile<float>::Packet;
    constexpr std::size_t kLanes = std::size_t(attn::detail::RegisterTile<float>::kLanes);
    constexpr std::size_t kLine = 64 / sizeof(float), kLinePackets = kLine / kLanes;
    const std::size_t count = kBuffer / sizeof(float);
    WeightLikeBuffer buffer(count, 1.0f);
    const std::size_t share = count / std::size_t(threads), run = share / kStreams / kLine * kLine;
    std::vector<float> sums(std::size_t(threads) * 16);  // one cache line apart
    for (auto _ : state) {
        on_threads(threads, [&](int t) {
            const float* start = buffer.data() + std::size_t(t) * share;
            Packet sum[kStreams][kLinePackets];
            for (auto& line : sum)
                for (Packet& packet : line) packet = ei::pset1<Packet>(0.0f);
            for (std::size_t i = 0; i < run; i += kLine)
                for (std::size_t s = 0; s < kStreams; ++s) {
                    const float* at = start + s * run + i;
                    if constexpr (kAhead > 0)
                        if (i * sizeof(float) + kAhead < run * sizeof(float))
                            attn::detail::prefetch(reinterpret_cast<const char*>(at) + kAhead);
                    for (std::size_t p = 0; p < kLinePackets; ++p)
                        sum[s][p] = ei::padd(sum[s][p], ei::ploadu<Packet>(at + p * kLanes));
                }
            float total = 0.0f;
            for (auto& line : sum)
                for (Packet& packet : line) total += ei::predux(packet);
            sums[std::size_t(t) * 16] = total;
        });
        benchmark::DoNotOptimize(sums.data());
        benchmark::ClobberMemory();
    }
    state.counters["bytes_read"] =
        benchmark::Counter(double(run * kStreams * sizeof(float)) * double(threads) * double(state.iterations()),
                           benchmark::Counter::kIsRate);
}

}  // namespace memory

/// Registers memory/copy, memory/read and memory/read_streams:… for 1 and 2 threads.
inline void register_memory_benchmarks() {
    using namespace memory;
    for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(("memory/copy/threads:" + std::to_string(threads)).c_str(), copy_benchmark,
                                     threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("memory/read/threads:" + std::to_string(threads)).c_str(), read_benchmark,
                                     threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        const auto streams = [&](const char* count, auto run) {
            benchmark::RegisterBenchmark(
                ("memory/read_streams:" + std::string(count) + "/threads:" + std::to_string(threads)).c_str(), run,
                threads)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        };
        streams("2", read_streams_benchmark<2>);
        streams("4", read_streams_benchmark<4>);
        streams("8", read_streams_benchmark<8>);
        streams("4/ahead:2048", read_streams_benchmark<4, 2048>);
    }
}

}  // namespace bench
