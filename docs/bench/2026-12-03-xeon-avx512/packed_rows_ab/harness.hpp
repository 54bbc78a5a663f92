// alternating measurement: returns best-of and median GFLOP/s for a workload and the FMA peak, interleaved
#include <immintrin.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>
inline double fma_peak_slice() {  // GFLOP/s over ~20 ms
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
    long n = 0;
    auto t0 = std::chrono::steady_clock::now();
    double el;
    do {
        for (int k = 0; k < 1000; ++k)
            for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
        n += 12000;
        el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (el < 0.02);
    float s = 0;
    for (int i = 0; i < 12; ++i) s += _mm512_reduce_add_ps(acc[i]);
    volatile float sink = s;
    (void)sink;
    return n * 32.0 / el * 1e-9;
}
inline double work_slice(const std::function<void()>& f, double flops) {
    long n = 0;
    auto t0 = std::chrono::steady_clock::now();
    double el;
    do {
        f();
        ++n;
        el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (el < 0.02);
    return n * flops / el * 1e-9;
}
struct Result {
    double best, p75, peak_best;
};
inline Result measure(const std::function<void()>& f, double flops, int slices = 40) {
    std::vector<double> w, p;
    f();
    for (int i = 0; i < slices; ++i) {
        p.push_back(fma_peak_slice());
        w.push_back(work_slice(f, flops));
    }
    std::sort(w.begin(), w.end());
    std::sort(p.begin(), p.end());
    return {w.back(), w[w.size() * 3 / 4], p.back()};
}

/// Old and new timed in interleaved pairs of slices (old, new, new, old), so that a slow minute of a
/// shared machine falls on both: prints label, each one's median GFLOP/s, and the median and quartiles
/// of the pairs' new/old ratios (the figure to read); same_bits: whether their results were equal.
inline void compare_in_pairs(const char* label, const std::function<void()>& old_run,
                             const std::function<void()>& new_run, double flops, int slices, bool same_bits) {
    std::vector<double> O, N, ratio;
    for (int i = 0; i < slices; ++i) {
        double x = work_slice(old_run, flops), y = work_slice(new_run, flops);
        double y2 = work_slice(new_run, flops), x2 = work_slice(old_run, flops);
        O.push_back(x);
        O.push_back(x2);
        N.push_back(y);
        N.push_back(y2);
        ratio.push_back((y + y2) / (x + x2));
    }
    std::sort(O.begin(), O.end());
    std::sort(N.begin(), N.end());
    std::sort(ratio.begin(), ratio.end());
    std::printf("%s: old median %6.1f  new median %6.1f GFLOP/s | new/old per pair: median %.3f [q1 %.3f q3 %.3f]%s\n",
                label, O[O.size() / 2], N[N.size() / 2], ratio[ratio.size() / 2], ratio[ratio.size() / 4],
                ratio[ratio.size() * 3 / 4], same_bits ? "" : " DIFFERENT BITS");
    std::fflush(stdout);
}
