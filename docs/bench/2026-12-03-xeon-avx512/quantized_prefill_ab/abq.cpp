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
        char label[64];
        snprintf(label, sizeof label, "fmt %d %-14s rows %ld", fmt, s.name, rows);
        compare_in_pairs(
            label, [&] { run_attn_old(o); }, [&] { run_attn_new(n); }, flops, slices, co == cn);
        free_attn_old(o);
        free_attn_new(n);
    }
}
