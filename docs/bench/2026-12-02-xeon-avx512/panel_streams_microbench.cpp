// Streams of weight panels from memory, one thread: GB/s of a one-row product on 1 GiB of GPT-2
// small's matrices packed in panels (float and BF16, weight_panels.hpp) against the same matrices
// row by row (the float tiles' four-rows-a-pass stream), best of five passes over the pool.
// docs/bench/2026-12-02-xeon-avx512/README.md has the figures. Build from the repository's root:
//   g++ -std=c++17 -O2 -march=native -DNDEBUG -Wno-uninitialized -Wno-maybe-uninitialized -Iinclude \
//       -isystem /usr/include/eigen3 docs/bench/2026-12-02-xeon-avx512/panel_streams_microbench.cpp -o pm
// The variants measured were built with kMostStreams (stream_panels) set to 1, 2 and 4.
#include <attn/detail/kernels/weight_panels.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
using attn::detail::Index;
namespace d = attn::detail;
struct Shape {
    const char* name;
    Index depth, cols;
};
int main() {
    const Shape shapes[] = {{"qkv", 768, 2304}, {"up", 768, 3072}, {"down", 3072, 768}, {"unemb", 768, 50257}};
    for (const Shape& s : shapes) {
        const Index bytes = s.depth * s.cols * 4;
        const Index copies = std::max<Index>(2, (Index(1) << 30) / bytes);
        std::vector<d::PanelMatrix<float>> panels;
        std::vector<d::HalfMatrix> halves;
        std::vector<std::vector<float, d::HugePagesInside<float>>> rows;
        for (Index i = 0; i < copies; ++i) {
            d::RowMajorMatrix<float> m = d::RowMajorMatrix<float>::Random(s.depth, s.cols);
            panels.push_back(d::PanelMatrix<float>::packed(m));
            rows.emplace_back(m.data(), m.data() + m.size());
            halves.push_back(d::HalfMatrix::narrowed(
                m.unaryExpr([](float x) { return d::bfloat16_to_float(d::float_to_bfloat16_exact(x)); }),
                d::HalfFormat::bfloat16));
            (void)halves;
        }
        d::RowMajorMatrix<float> a = d::RowMajorMatrix<float>::Random(1, s.depth), c(1, s.cols);
        for (int kind = 0; kind < 3; ++kind) {
            double best = 0;
            for (int rep = 0; rep < 5; ++rep) {
                const auto t0 = std::chrono::steady_clock::now();
                const int passes = int(copies) * 2;
                for (int p = 0; p < passes; ++p) {
                    const Index i = p % copies;
                    if (kind == 0)
                        d::multiply_rows(a, d::WeightRows<float>::of(panels[i]), c, false);
                    else if (kind == 1)
                        d::multiply_rows(1, s.depth, s.cols, a.data(), s.depth, rows[i].data(), s.cols, c.data(),
                                         s.cols, false);
                    else
                        d::multiply_rows(a, d::WeightRows<float>::of(halves[i]), c, false);
                }
                const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                best = std::max(best, double(passes) * double(bytes / (kind == 2 ? 2 : 1)) / sec / 1e9);
            }
            std::printf("%s %s %.1f GB/s\n", s.name,
                        kind == 0   ? "float_panels"
                        : kind == 1 ? "float_rows"
                                    : "bf16_panels",
                        best);
        }
    }
}
