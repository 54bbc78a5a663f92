// A Hugging Face checkpoint at real size (a GPT-2-small-shaped one written at benchmark time by
// tools/hf_checkpoints.py, never committed): loading it, and its forward pass, prefill and
// decoding steps.
//
//   attn_bench_checkpoint DIR load          one JSON line: load seconds, peak resident memory,
//                                           the checkpoint's bytes and the loaded weights' bytes
//   attn_bench_checkpoint DIR [benchmark flags]
//       checkpoint/forward/threads:T/positions:N   a whole text, logits at every position
//       checkpoint/prefill/threads:T/positions:N   a prompt into a Decoder, the last logits only
//       checkpoint/decode/threads:T/context:C[/attention]  one step after C positions (and its
//                                                  attention rows in every layer and head)
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_main.hpp"

namespace {

std::filesystem::path checkpoint_directory;

const attn::Model<float>& model() {
    static const attn::Model<float> loaded = attn::Model<float>::load(checkpoint_directory);
    return loaded;
}

/// Peak resident memory of this process so far, from /proc/self/status (0 where it is missing).
std::size_t peak_resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::size_t(std::stoull(line.substr(6))) * 1024;
    return 0;
}

std::size_t directory_bytes(const std::filesystem::path& directory) {
    std::size_t bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(directory))
        if (entry.is_regular_file() && entry.path().extension() == ".safetensors") bytes += entry.file_size();
    return bytes;
}

int measure_load() {
    const auto start = std::chrono::steady_clock::now();
    const attn::Model<float> loaded = attn::Model<float>::load(checkpoint_directory);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t weights = std::size_t(loaded.parameters()) * sizeof(float);
    std::printf(
        "{\"load_seconds\": %.4f, \"peak_resident_bytes\": %zu, \"checkpoint_bytes\": %zu, \"weights_bytes\": %zu, "
        "\"parameters\": %lld, \"peak_over_weights\": %.4f}\n",
        seconds, peak_resident_bytes(), directory_bytes(checkpoint_directory), weights,
        static_cast<long long>(loaded.parameters()), double(peak_resident_bytes()) / double(weights));
    return 0;
}

std::vector<int> random_ids(attn::Index count) {
    std::mt19937 engine(7);
    std::uniform_int_distribution<int> token(0, int(model().settings().vocabulary_size) - 1);
    std::vector<int> ids(std::size_t(count), 0);
    for (int& id : ids) id = token(engine);
    return ids;
}

void forward(benchmark::State& state, int threads) {
    const std::vector<int> ids = random_ids(state.range(0));
    attn::ForwardOptions options;
    options.threads = threads;
    attn::ForwardResult<float> result;
    for (auto _ : state) {
        model().forward_into(ids, options, result);
        benchmark::DoNotOptimize(result.logits.data());
    }
    state.counters["tokens_per_second"] =
        benchmark::Counter(double(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void prefill(benchmark::State& state, int threads) {
    const std::vector<int> ids = random_ids(state.range(0));
    attn::DecodeOptions options;
    options.threads = threads;
    attn::Decoder<float> decoder(model(), {}, attn::Index(ids.size()));
    for (auto _ : state) {
        decoder.reset();
        benchmark::DoNotOptimize(decoder.append(ids, options).logits.data());
    }
    state.counters["tokens_per_second"] =
        benchmark::Counter(double(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void decode(benchmark::State& state, int threads, bool keep_attention) {
    const attn::Index context = state.range(0);
    const std::vector<int> ids = random_ids(context + 1);
    attn::Decoder<float> decoder(model(), {}, context + 1);
    decoder.append({ids.begin(), ids.end() - 1});
    attn::DecodeOptions options;
    options.keep_attention = keep_attention;
    options.threads = threads;
    for (auto _ : state) {
        benchmark::DoNotOptimize(decoder.step(ids.back(), options).logits.data());
        decoder.truncate(context);
    }
    state.counters["tokens_per_second"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

void register_benchmarks() {
    for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(("checkpoint/forward/threads:" + std::to_string(threads)).c_str(), forward,
                                     threads)
            ->ArgName("positions")
            ->Arg(128)
            ->Arg(512)
            ->Arg(1024)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("checkpoint/prefill/threads:" + std::to_string(threads)).c_str(), prefill,
                                     threads)
            ->ArgName("positions")
            ->Arg(128)
            ->Arg(512)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    for (int threads : {1, 2})
        for (bool attention : {false, true})
            benchmark::RegisterBenchmark(
                ("checkpoint/decode/threads:" + std::to_string(threads) + (attention ? "/attention" : "")).c_str(),
                decode, threads, attention)
                ->ArgName("context")
                ->Arg(128)
                ->Arg(512)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::cerr << "usage: attn_bench_checkpoint DIR load | attn_bench_checkpoint DIR [benchmark flags]\n";
        return 2;
    }
    checkpoint_directory = argv[1];
    try {
        if (argc >= 3 && std::strcmp(argv[2], "load") == 0) return measure_load();
        model();  // loaded before timing
    } catch (const attn::error& e) {
        std::cerr << "attn_bench_checkpoint: " << e.what() << "\n";
        return 1;
    }
    register_benchmarks();
    argv[1] = argv[0];
    return bench::run(argc - 1, argv + 1, "", "0.5");
}
