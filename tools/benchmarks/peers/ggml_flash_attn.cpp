// ggml's flash attention on the CPU, timed on bench_kernels' heads/stream shape: 4 heads × d = 64,
// causal, float32 queries, keys and values (the peer of attn's streaming kernel, same arithmetic
// type), on the pinned llama.cpp's prebuilt libraries (llamacpp_setup.py: the best
// libggml-cpu-<microarchitecture>.so for the machine is loaded at run time).
//
//   g++ -O2 -std=c++17 -I$SRC/ggml/include tools/benchmarks/peers/ggml_flash_attn.cpp
//       -o ggml_flash_attn -L$LIBS -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,$LIBS
//   ./ggml_flash_attn $LIBS POSITIONS THREADS [REPETITIONS]
//
// with SRC = ~/.cache/attn-peers/llama.cpp-80fb11ac73e6 and LIBS =
// ~/.cache/attn-peers/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64. The graph is one
// ggml_flash_attn_ext (scale 1/√d, the causal mask as ggml takes it: float16, 0 or −∞), computed
// once to warm up, then REPETITIONS (default 10) times; prints one JSON line with every time in
// ms, the median, the GFLOP/s counted as bench_kernels counts them (positions²·2d per head:
// the unmasked half of both products), and the features of the CPU variant loaded. A folder holding
// one variant holds ggml to it (llamacpp_setup.held_to: ~/.cache/attn-peers/backends-avx2).
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

// The features of the CPU variant ggml loaded ("AVX2=1 FMA=1 ..."), for each line to say what it ran.
std::string cpu_backend_features(ggml_backend_reg_t reg) {
    std::string features;
    const auto get_features = reinterpret_cast<ggml_backend_get_features_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
    for (const ggml_backend_feature* f = get_features ? get_features(reg) : nullptr; f && f->name; ++f)
        features += std::string(features.empty() ? "" : " ") + f->name + "=" + f->value;
    return features;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s LIBRARY_DIR POSITIONS THREADS [REPETITIONS]\n", argv[0]);
        return 2;
    }
    const char* libraries = argv[1];
    const int n = std::atoi(argv[2]), threads = std::atoi(argv[3]);
    const int repetitions = argc > 4 ? std::atoi(argv[4]) : 10;
    const int heads = 4, d = 64;

    ggml_backend_load_all_from_path(libraries);
    ggml_backend_t backend = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!backend) {
        std::fprintf(stderr, "no CPU backend in %s\n", libraries);
        return 1;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(backend));
    auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    if (set_threads) set_threads(backend, threads);

    ggml_init_params params{ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(params);
    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, n, heads);
    ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, n, heads);
    ggml_tensor* v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, n, heads);
    ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n, n);
    ggml_tensor* out = ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / std::sqrt(float(d)), 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
    ggml_cgraph* graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);

    std::mt19937 random(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> numbers(std::size_t(d) * n * heads);
    for (ggml_tensor* t : {q, k, v}) {
        for (float& x : numbers) x = uniform(random);
        ggml_backend_tensor_set(t, numbers.data(), 0, ggml_nbytes(t));
    }
    std::vector<ggml_fp16_t> causal(std::size_t(n) * n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) causal[std::size_t(i) * n + j] = ggml_fp32_to_fp16(j <= i ? 0.0f : -INFINITY);
    ggml_backend_tensor_set(mask, causal.data(), 0, ggml_nbytes(mask));

    ggml_backend_graph_compute(backend, graph);  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(backend, graph);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double flops = double(n) * double(n) * 2.0 * d * heads;
    std::string times;
    for (double t : ms) times += (times.empty() ? "" : ", ") + std::to_string(t);
    std::printf(
        "{\"name\": \"ggml_flash_attn_ext/f32/d:%d/threads:%d/positions:%d\", \"ms\": [%s], \"median_ms\": %.3f, "
        "\"GFLOP/s\": %.2f, \"cpu_backend\": \"%s\"}\n",
        d, threads, n, times.c_str(), median, flops / (median * 1e-3) * 1e-9, cpu_backend_features(reg).c_str());

    ggml_backend_buffer_free(buffer);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return 0;
}
