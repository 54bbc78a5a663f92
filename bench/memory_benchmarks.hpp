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

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
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

/// One thread's part of a read: kStreams runs of `run` floats from `start`, side by side, summed a
/// cache line of each a step (one accumulator per packet: no run waits on an addition's latency),
/// the lines kAhead bytes ahead of each run prefetched when kAhead > 0 (as the decoding products
/// prefetch their panels' rows: weight_panels.hpp). `run` is a whole number of cache lines.
template <std::size_t kStreams, std::size_t kAhead = 0>
float sum_side_by_side(const float* start, std::size_t run) {
    namespace ei = Eigen::internal;
    using Packet = attn::detail::RegisterTile<float>::Packet;
    constexpr std::size_t kLanes = std::size_t(attn::detail::RegisterTile<float>::kLanes);
    constexpr std::size_t kLine = 64 / sizeof(float), kLinePackets = kLine / kLanes;
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
    return total;
}

/// A way of reading `buffer` (count floats) on `threads` threads: each thread sums its share, into
/// sums[16 t] (one cache line apart). Returns the bytes read.
using ReadWay = std::size_t (*)(const float* buffer, std::size_t count, int threads, float* sums);

/// memory/read: each thread's share summed by Eigen (one run, its own accumulators).
inline std::size_t read_whole(const float* buffer, std::size_t count, int threads, float* sums) {
    const std::size_t share = count / std::size_t(threads);
    on_threads(threads, [&](int t) {
        const Eigen::Map<const Eigen::ArrayXf> part(buffer + std::size_t(t) * share, attn::Index(share));
        sums[std::size_t(t) * 16] = part.sum();
    });
    return share * std::size_t(threads) * sizeof(float);
}

/// memory/read_streams:kStreams[/ahead:kAhead]: each thread's share as kStreams runs side by side.
template <std::size_t kStreams, std::size_t kAhead = 0>
std::size_t read_side_by_side(const float* buffer, std::size_t count, int threads, float* sums) {
    constexpr std::size_t kLine = 64 / sizeof(float);
    const std::size_t share = count / std::size_t(threads), run = share / kStreams / kLine * kLine;
    on_threads(threads, [&](int t) {
        sums[std::size_t(t) * 16] = sum_side_by_side<kStreams, kAhead>(buffer + std::size_t(t) * share, run);
    });
    return run * kStreams * sizeof(float) * std::size_t(threads);
}

/// The ways of reading memory, by their benchmarks' names (memory/<name>/threads:<t>); the machine's
/// read bandwidth is the best of them (tools/benchmarks/bench_tables.py's READ_WAYS).
inline const std::vector<std::pair<std::string, ReadWay>>& read_ways() {
    static const std::vector<std::pair<std::string, ReadWay>> ways = {
        {"read", read_whole},
        {"read_streams:2", read_side_by_side<2>},
        {"read_streams:4", read_side_by_side<4>},
        {"read_streams:8", read_side_by_side<8>},
        {"read_streams:4/ahead:2048", read_side_by_side<4, 2048>},
    };
    return ways;
}

inline void read_way_benchmark(benchmark::State& state, ReadWay way, int threads) {
    const std::size_t count = kBuffer / sizeof(float);
    WeightLikeBuffer buffer(count, 1.0f);
    std::vector<float> sums(std::size_t(threads) * 16);
    std::size_t bytes = 0;
    for (auto _ : state) {
        bytes = way(buffer.data(), count, threads, sums.data());
        benchmark::DoNotOptimize(sums.data());
        benchmark::ClobberMemory();
    }
    state.counters["bytes_read"] =
        benchmark::Counter(double(bytes) * double(state.iterations()), benchmark::Counter::kIsRate);
}

/// The machine's read bandwidth now, in bytes per second on `threads` threads: the best of `passes`
/// passes of every way of reading over a buffer of kBuffer bytes, made for the occasion and freed
/// afterwards (its first touch untimed). For a benchmark that times its own work beside it, minutes
/// apart being too far on a VM whose bandwidth moves by a third between them.
inline double read_bandwidth_now(int threads, int passes = 2) {
    const std::size_t count = kBuffer / sizeof(float);
    const WeightLikeBuffer buffer(count, 1.0f);
    std::vector<float> sums(std::size_t(threads) * 16);
    double best = 0;
    for (int pass = 0; pass < passes; ++pass)
        for (const auto& way : read_ways()) {
            const auto start = std::chrono::steady_clock::now();
            const std::size_t bytes = way.second(buffer.data(), count, threads, sums.data());
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            benchmark::DoNotOptimize(sums.data());
            best = std::max(best, double(bytes) / seconds);
        }
    return best;
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
        for (const auto& way : read_ways())
            benchmark::RegisterBenchmark(("memory/" + way.first + "/threads:" + std::to_string(threads)).c_str(),
                                         read_way_benchmark, way.second, threads)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    }
}

}  // namespace bench
