// Scratch: how fast this machine reads 512 MiB, on 1 or 2 threads, as 1, 4 or 8 sequential streams per
// thread (each a contiguous part of the thread's half), with or without a software prefetch PF floats
// ahead. Best of 8 passes. Not part of the suite (attn_bench_cache's memory/ benchmarks are).
//   g++ -O2 -march=native -pthread read_bandwidth.cpp -o read_bandwidth && ./read_bandwidth THREADS STREAMS [PF]
#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
// sum floats of [p, p+n) with `streams` interleaved sequential streams (each a contiguous part)
static float sum_streams(const float* p, size_t n, int streams, int pf) {
    __m512 acc[8];
    for (int i = 0; i < 8; ++i) acc[i] = _mm512_setzero_ps();
    size_t part = n / streams;
    for (size_t i = 0; i < part; i += 64) {
        for (int s = 0; s < streams; ++s) {
            const float* q = p + s * part + i;
            if (pf) _mm_prefetch((const char*)(q + pf), _MM_HINT_T0);
            acc[(2 * s) & 7] = _mm512_add_ps(acc[(2 * s) & 7], _mm512_load_ps(q));
            acc[(2 * s + 1) & 7] = _mm512_add_ps(acc[(2 * s + 1) & 7], _mm512_load_ps(q + 16));
            acc[(2 * s) & 7] = _mm512_add_ps(acc[(2 * s) & 7], _mm512_load_ps(q + 32));
            acc[(2 * s + 1) & 7] = _mm512_add_ps(acc[(2 * s + 1) & 7], _mm512_load_ps(q + 48));
        }
    }
    __m512 t = acc[0];
    for (int i = 1; i < 8; ++i) t = _mm512_add_ps(t, acc[i]);
    return _mm512_reduce_add_ps(t);
}
int main(int argc, char** argv) {
    int threads = atoi(argv[1]), streams = atoi(argv[2]), pf = argc > 3 ? atoi(argv[3]) : 0;
    size_t bytes = size_t(512) << 20, n = bytes / 4;
    float* buf = (float*)aligned_alloc(64, bytes);
    for (size_t i = 0; i < n; ++i) buf[i] = 1.0f;
    double best = 0;
    volatile float sink = 0;
    for (int rep = 0; rep < 8; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> ts;
        std::vector<float> r(threads);
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t] { r[t] = sum_streams(buf + n / threads * t, n / threads, streams, pf); });
        for (auto& t : ts) t.join();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sink = sink + r[0];
        double gbs = bytes / s / 1e9;
        if (gbs > best) best = gbs;
    }
    printf("threads %d streams %d pf %d: best %.1f GB/s\n", threads, streams, pf, best);
}
