// The store model beyond one forward pass: decoding, and looking inside (Google Benchmark;
// JSON with --benchmark_format=json).
//
// Families:
//   decode/step/cache:N              Decoder::step after N cached positions: one token's logits
//                                    (it attends to N + 1 keys); N = 16 … 159
//   decode/step_attention/cache:N    the same, also returning its attention row in every layer and head
//   decode/recompute/positions:N     Model::forward over N + 1 positions, logits only: what a step
//                                    costs without a cache (our own full recompute)
//   decode/prefill/threads:t         Decoder::append of 16 … 160 prompt positions, last logits only
//   generate/cached/tokens:128       attn::generate, greedy, 128 tokens from `<s> name <sep>` (tokens/s)
//   generate/recompute/tokens:128    the same 128 tokens by a full forward per token (tokens/s)
//   hooks/forward/threads:t          Model::forward at 160 positions, logits only (the baseline)
//   hooks/keep_all_reused/threads:t  run_with_hooks_into keeping every activation ("*") at 160 positions,
//                                    into one HookedResult reused across calls
//   hooks/keep_all_fresh/threads:t   the same into a new HookedResult every call
//   forward/attention_fresh/threads:t   Model::forward at 160 positions keeping every layer's attention
//                                    (keep_attention): a new result per call
//   forward/attention_reused/threads:t  the same by Model::forward_into one ForwardResult reused across calls
//   hooks/patch_heads/threads:t      patch_heads over the 16 heads (clean and corrupted runs included),
//                                    metric at the last of 160 positions
// Steps run on the calling thread (a single position is not worth a second one).
#include <benchmark/benchmark.h>
#include <attn/hooks/interventions.hpp>
#include <attn/model.hpp>
#include <attn/store.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "model_instance.hpp"  // Model<float> and its forward pass compiled once, apart

namespace {

using attn::Index;

const attn::Model<float>& store_model() {
    static const attn::Model<float> model = attn::Model<float>::load(ATTN_SOURCE_MODEL_DIR);
    return model;
}

/// n ordinary tokens (no markers), the same for every benchmark.
std::vector<int> text_of(Index n) {
    const attn::Model<float>& model = store_model();
    std::vector<int> ids{0};
    for (int i = 0; Index(ids.size()) < n; ++i) ids.push_back(4 + (i * 37) % int(model.tokenizer().size() - 4));
    return ids;
}

void step(benchmark::State& state, bool keep_attention) {
    const Index cached = state.range(0);
    attn::Decoder<float> decoder(store_model());
    decoder.append(text_of(cached));
    attn::DecodeOptions options;
    options.keep_attention = keep_attention;
    for (auto _ : state) {
        auto result = decoder.step(42, options);
        benchmark::DoNotOptimize(result.logits.data());
        decoder.truncate(cached);
    }
    state.counters["cache"] = double(cached);
}

void recompute(benchmark::State& state) {
    const std::vector<int> ids = text_of(state.range(0) + 1);
    for (auto _ : state) {
        auto result = store_model().forward(ids);
        benchmark::DoNotOptimize(result.logits.data());
    }
}

void prefill(benchmark::State& state, int threads) {
    const std::vector<int> ids = text_of(state.range(0));
    attn::Decoder<float> decoder(store_model());
    attn::DecodeOptions options;
    options.threads = threads;
    for (auto _ : state) {
        auto result = decoder.append(ids, options);
        benchmark::DoNotOptimize(result.logits.data());
        decoder.reset();
    }
}

const std::vector<int>& generation_prompt() {
    static const std::vector<int> prompt =
        attn::store::prompt_ids(store_model(), "double chaise patio furniture cover");
    return prompt;
}

void generate_cached(benchmark::State& state) {
    attn::GenerationOptions options;
    options.max_tokens = state.range(0);
    options.stop_at_end = false;
    for (auto _ : state) {
        auto written = attn::generate(store_model(), generation_prompt(), options);
        if (Index(written.ids.size()) != state.range(0)) state.SkipWithError("wrote fewer tokens than asked");
        benchmark::DoNotOptimize(written.ids.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

/// Greedy generation the way a model without a cache does it: a whole forward per token.
void generate_recompute(benchmark::State& state) {
    for (auto _ : state) {
        std::vector<int> text = generation_prompt();
        for (Index k = 0; k < state.range(0); ++k) {
            const auto result = store_model().forward(text);
            Index best = 0;
            result.logits.row(result.logits.rows() - 1).maxCoeff(&best);
            text.push_back(int(best));
        }
        benchmark::DoNotOptimize(text.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

/// A validation-like text of 160 ids, and the same with one name token changed.
std::vector<int> long_text(bool corrupted) {
    std::vector<int> ids = text_of(160);
    if (corrupted) ids[6] = ids[6] == 129 ? 236 : 129;
    return ids;
}

void hooks_forward(benchmark::State& state, int threads) {
    const std::vector<int> ids = long_text(false);
    attn::ForwardOptions options;
    options.threads = threads;
    for (auto _ : state) {
        auto result = store_model().forward(ids, options);
        benchmark::DoNotOptimize(result.logits.data());
    }
}

/// reused: run_with_hooks_into one HookedResult (the cache's storage written again, as in a loop over
/// texts); else a new HookedResult every call (fresh pages for every activation).
void hooks_keep_all(benchmark::State& state, int threads, bool reused) {
    const std::vector<int> ids = long_text(false);
    attn::HookOptions<float> options;
    options.forward.threads = threads;
    options.keep = {"*"};
    attn::HookedResult<float> run;
    for (auto _ : state) {
        if (reused) {
            attn::run_with_hooks_into(store_model(), ids, options, run);
        } else {
            run = attn::run_with_hooks(store_model(), ids, options);
        }
        benchmark::DoNotOptimize(run.result.logits.data());
    }
}

/// reused: Model::forward_into one result (its attention and working memory written again, as
/// in a loop over texts of one length); else Model::forward, a new result per call.
void forward_attention(benchmark::State& state, int threads, bool reused) {
    const std::vector<int> ids = long_text(false);
    attn::ForwardOptions options;
    options.threads = threads;
    options.keep_attention = true;
    attn::ForwardResult<float> result;
    for (auto _ : state) {
        if (reused)
            store_model().forward_into(ids, options, result);
        else
            result = store_model().forward(ids, options);
        benchmark::DoNotOptimize(result.logits.data());
    }
}

void hooks_patch_heads(benchmark::State& state, int threads) {
    const std::vector<int> clean = long_text(false), corrupted = long_text(true);
    attn::ForwardOptions options;
    options.threads = threads;
    // any two tokens whose logit difference the changed name moves
    const attn::LogitMetric metric{159, 236, 129};
    for (auto _ : state) {
        auto patching = attn::patch_heads(store_model(), clean, corrupted, metric, options);
        benchmark::DoNotOptimize(patching.scores.data());
    }
}

void register_benchmarks() {
    for (int threads : {1, 2}) {
        const std::string suffix = "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(("hooks/forward" + suffix).c_str(), hooks_forward, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        for (bool reused : {true, false})
            benchmark::RegisterBenchmark(((reused ? "hooks/keep_all_reused" : "hooks/keep_all_fresh") + suffix).c_str(),
                                         hooks_keep_all, threads, reused)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        for (bool reused : {true, false})
            benchmark::RegisterBenchmark(
                ((reused ? "forward/attention_reused" : "forward/attention_fresh") + suffix).c_str(), forward_attention,
                threads, reused)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        benchmark::RegisterBenchmark(("hooks/patch_heads" + suffix).c_str(), hooks_patch_heads, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    const std::vector<Index> caches{16, 32, 64, 128, 150, 159};
    for (bool kept : {false, true}) {
        auto* family =
            benchmark::RegisterBenchmark(kept ? "decode/step_attention" : "decode/step", step, kept)->ArgName("cache");
        for (Index n : caches) family->Arg(n);
        family->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
    auto* full = benchmark::RegisterBenchmark("decode/recompute", recompute)->ArgName("positions");
    for (Index n : caches) full->Arg(n);
    full->Unit(benchmark::kMicrosecond)->UseRealTime();
    for (int threads : {1, 2})
        benchmark::RegisterBenchmark(("decode/prefill/threads:" + std::to_string(threads)).c_str(), prefill, threads)
            ->Arg(16)
            ->Arg(32)
            ->Arg(64)
            ->Arg(128)
            ->Arg(160)
            ->ArgName("positions")
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    benchmark::RegisterBenchmark("generate/cached", generate_cached)
        ->Arg(128)
        ->ArgName("tokens")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("generate/recompute", generate_recompute)
        ->Arg(128)
        ->ArgName("tokens")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    register_benchmarks();
    return bench::run(argc, argv, "", "0.2");
}
