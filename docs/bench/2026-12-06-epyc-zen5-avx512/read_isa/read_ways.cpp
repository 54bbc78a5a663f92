// Summing a 256 MiB buffer as S runs side by side, with 512-bit or 256-bit loads, one accumulator
// per run (two 256-bit ones, so that both widths take a cache line a step): what bench_cache's
// memory/read_streams:4 did in an AVX-512 build and in an AVX2 build, and the other run counts.
//   g++ -O2 -march=native -std=c++17 read_ways.cpp -o read_ways && ./read_ways
// Prints each way's median and best of 15 passes, twice.
#include <immintrin.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
constexpr size_t kBuf = size_t(256) << 20;
template <int S, int W>  // S streams, W = 256 or 512 bit loads
float run(const float* p, size_t n) {
    const size_t run = n / S / 16 * 16;
    if constexpr (W == 512) {
        __m512 s[S];
        for (int i = 0; i < S; ++i) s[i] = _mm512_setzero_ps();
        for (size_t i = 0; i < run; i += 16)
            for (int k = 0; k < S; ++k) s[k] = _mm512_add_ps(s[k], _mm512_loadu_ps(p + k * run + i));
        float t = 0;
        for (int k = 0; k < S; ++k) t += _mm512_reduce_add_ps(s[k]);
        return t;
    } else {
        __m256 s[S][2];
        for (int i = 0; i < S; ++i) s[i][0] = s[i][1] = _mm256_setzero_ps();
        for (size_t i = 0; i < run; i += 16)
            for (int k = 0; k < S; ++k) {
                s[k][0] = _mm256_add_ps(s[k][0], _mm256_loadu_ps(p + k * run + i));
                s[k][1] = _mm256_add_ps(s[k][1], _mm256_loadu_ps(p + k * run + i + 8));
            }
        float t = 0;
        for (int k = 0; k < S; ++k) {
            float b[8];
            _mm256_storeu_ps(b, _mm256_add_ps(s[k][0], s[k][1]));
            for (float x : b) t += x;
        }
        return t;
    }
}
template <int S, int W>
void time(const char* name, const float* p, size_t n) {
    double best = 0;
    std::vector<double> r;
    for (int rep = 0; rep < 15; ++rep) {
        auto a = std::chrono::steady_clock::now();
        volatile float t = run<S, W>(p, n);
        (void)t;
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
        r.push_back(n * 4 / s / 1e9);
    }
    std::sort(r.begin(), r.end());
    std::printf("%s median %.1f GB/s max %.1f\n", name, r[r.size() / 2], r.back());
}
#include <algorithm>
int main() {
    size_t n = kBuf / 4;
    float* p = (float*)aligned_alloc(64, kBuf);
    for (size_t i = 0; i < n; ++i) p[i] = 1;
    for (int round = 0; round < 2; ++round) {
        time<1, 512>("zmm 1 stream ", p, n);
        time<2, 512>("zmm 2 streams", p, n);
        time<4, 512>("zmm 4 streams", p, n);
        time<8, 512>("zmm 8 streams", p, n);
        time<1, 256>("ymm 1 stream ", p, n);
        time<2, 256>("ymm 2 streams", p, n);
        time<4, 256>("ymm 4 streams", p, n);
        time<8, 256>("ymm 8 streams", p, n);
    }
}
