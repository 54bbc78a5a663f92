// A decoding step's quantized product alone (detail::multiply_quantized on 1 row of a, the streamed
// path), on GPT-2-small's and SmolLM2-135M's shapes, every block format: the matrices cycling through
// 128 MiB of copies ("memory": each product reads its weights from DRAM) or one copy again and again
// ("cached": from L3), best of 5 runs; and the largest error against the float64 product of the
// dequantized values, in units of K·u·Σ|a w| (K the depth, u = 2^-24). Run twice, with the kernel
// of the commit before this folder's and after, for README.md's before/after table:
//
//   g++ -std=c++17 -O3 -march=native -DNDEBUG -Iinclude -isystem /usr/include/eigen3 \
//       docs/bench/2026-12-02-quantized-speed/stream_microbench.cpp -o stream_microbench
//   ./stream_microbench [FORMAT] [ROWS]        e.g. ./stream_microbench Q4_K
#include <attn/detail/kernels/quantized_weights.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
namespace d = attn::detail;
using d::Index;
d::QuantizedMatrix make(d::QuantFormat f, Index rows, Index cols, unsigned seed) {
    std::mt19937 e(seed);
    d::QuantizedMatrix m = d::QuantizedMatrix::sized(cols, {{f, rows}});
    for (auto& b : m.bytes) b = std::uint8_t(e());
    const Index width = d::quant_block_bytes(f);
    for (std::size_t at = 0; at < m.bytes.size(); at += std::size_t(width)) {
        std::uint8_t* block = m.bytes.data() + at;
        auto half = [&](std::uint8_t* p) {
            std::uint32_t bits = (e() & 1u) << 15 | (3 + e() % 3) << 10 | (e() & 0x3FFu);
            p[0] = std::uint8_t(bits);
            p[1] = std::uint8_t(bits >> 8);
        };
        if (f == d::QuantFormat::q6_k)
            half(block + 208);
        else {
            half(block);
            if (d::has_min(f)) half(block + 2);
        }
    }
    return m;
}
int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    const int n = argc > 2 ? std::atoi(argv[2]) : 1;
    struct Shape {
        const char* name;
        Index depth, outs;
    };
    const Shape shapes[] = {{"qkv768x2304", 768, 2304},
                            {"up768x3072", 768, 3072},
                            {"down3072x768", 3072, 768},
                            {"smol576x1536", 576, 1536}};
    for (d::QuantFormat f : {d::QuantFormat::q8_0, d::QuantFormat::q4_0, d::QuantFormat::q4_1, d::QuantFormat::q5_0,
                             d::QuantFormat::q5_1, d::QuantFormat::q4_k, d::QuantFormat::q5_k, d::QuantFormat::q6_k}) {
        if (!only.empty() && only != d::quant_format_name(f)) continue;
        for (const Shape& s : shapes) {
            if (d::is_k_format(f) && s.depth % 256) continue;
            const std::size_t one =
                std::size_t(s.outs) * std::size_t(s.depth / d::quant_block_values(f) * d::quant_block_bytes(f));
            const int copies = int(std::max<std::size_t>(1, (128u << 20) / one));
            std::vector<d::QuantizedMatrix> pool;
            for (int i = 0; i < copies; ++i) pool.push_back(make(f, s.outs, s.depth, unsigned(i + 1)));
            std::vector<float> a(std::size_t(s.depth * n)), c(std::size_t(s.outs * n));
            std::mt19937 e(5);
            std::normal_distribution<float> g;
            for (float& x : a) x = g(e);
            {  // accuracy: |c - exact| / (K u Σ|a w|), worst over the outputs
                d::multiply_quantized(n, s.depth, a.data(), s.depth, pool[0], 0, s.outs, 0, c.data(), s.outs, false);
                std::vector<float> w(std::size_t(s.depth));
                double worst = 0;
                for (Index j = 0; j < s.outs; ++j) {
                    d::dequantize_row(pool[0], j, 0, s.depth, w.data());
                    double exact = 0, mag = 0;
                    for (Index t = 0; t < s.depth; ++t) {
                        exact += double(a[std::size_t(t)]) * w[std::size_t(t)];
                        mag += std::abs(double(a[std::size_t(t)]) * w[std::size_t(t)]);
                    }
                    worst = std::max(worst, std::abs(double(c[std::size_t(j)]) - exact) /
                                                (mag * double(s.depth) * std::ldexp(1.0, -24)));
                }
                std::printf("%-5s %-14s accuracy: worst %.4f of K u sum|a w|\n", d::quant_format_name(f), s.name,
                            worst);
            }
            for (int cached = 0; cached < 2; ++cached) {
                double best = 1e9;
                for (int rep = 0; rep < 5; ++rep) {
                    const int calls = cached ? 200 : copies;
                    auto t0 = std::chrono::steady_clock::now();
                    for (int i = 0; i < calls; ++i)
                        d::multiply_quantized(n, s.depth, a.data(), s.depth, pool[cached ? 0 : std::size_t(i)], 0,
                                              s.outs, 0, c.data(), s.outs, false);
                    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
                    best = std::min(best, t);
                }
                std::printf("%-5s %-14s %s rows:%d  %8.1f us  %6.2f GB/s  %6.2f Gw/s\n", d::quant_format_name(f),
                            s.name, cached ? "cached " : "memory ", n, best * 1e6, double(one) / best / 1e9,
                            double(s.outs * s.depth) / best / 1e9);
            }
        }
    }
}
