#include <cstdlib>
#include <cstring>
#include "../packed_rows_ab/harness.hpp"
void* make_attn_old(int, long, long, long, long);
double run_attn_old(void*);
void free_attn_old(void*);
void* make_attn_new(int, long, long, long, long);
double run_attn_new(void*);
void free_attn_new(void*);
int main(int argc, char** argv) {
    struct S {
        const char* name;
        long depth, cols;
    } shapes[] = {{"gpt2/qkv", 768, 2304},    {"gpt2/out", 768, 768},      {"gpt2/up", 768, 3072},
                  {"gpt2/down", 3072, 768},   {"smollm2/query", 576, 576}, {"smollm2/gate", 576, 1536},
                  {"smollm2/down", 1536, 576}};
    long rows = argc > 1 ? atol(argv[1]) : 128;
    int slices = argc > 2 ? atoi(argv[2]) : 20;
    int fmt = argc > 3 ? atoi(argv[3]) : 0;
    for (auto s : shapes) {
        if (fmt >= 5 && s.depth % 256 != 0) continue;  // K formats: 256-value blocks (no such SmolLM2 matrix)
        void* o = make_attn_old(fmt, rows, s.depth, s.cols, 128);
        void* n = make_attn_new(fmt, rows, s.depth, s.cols, 128);
        double co = run_attn_old(o), cn = run_attn_new(n);
        double flops = 2.0 * rows * s.depth * s.cols;
        std::vector<double> O, N, ratio;
        for (int i = 0; i < slices; ++i) {
            double x = work_slice([&] { run_attn_old(o); }, flops), y = work_slice([&] { run_attn_new(n); }, flops);
            double y2 = work_slice([&] { run_attn_new(n); }, flops), x2 = work_slice([&] { run_attn_old(o); }, flops);
            O.push_back(x);
            O.push_back(x2);
            N.push_back(y);
            N.push_back(y2);
            ratio.push_back((y + y2) / (x + x2));
        }
        std::sort(O.begin(), O.end());
        std::sort(N.begin(), N.end());
        std::sort(ratio.begin(), ratio.end());
        printf(
            "fmt %d %-14s rows %ld: old median %6.1f  new median %6.1f GFLOP/s | new/old per pair: median %.3f [q1 "
            "%.3f q3 %.3f]%s\n",
            fmt, s.name, rows, O[O.size() / 2], N[N.size() / 2], ratio[ratio.size() / 2], ratio[ratio.size() / 4],
            ratio[ratio.size() * 3 / 4], co == cn ? "" : " DIFFERENT BITS");
        fflush(stdout);
        free_attn_old(o);
        free_attn_new(n);
    }
}
