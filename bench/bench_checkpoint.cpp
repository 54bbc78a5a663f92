// A Hugging Face checkpoint at real size (a GPT-2-small-shaped one written at benchmark time by
// tools/references/hf_checkpoints.py, never committed): loading it, and its forward pass, prefill and
// decoding steps.
//
//   attn_bench_checkpoint DIR load          one JSON line: load seconds, peak resident memory,
//                                           the checkpoint's bytes, the loaded weights' bytes and
//                                           those a decoding step reads
//   attn_bench_checkpoint DIR logits IDS    {"logits": [...]}: the last position's, for IDS (1,2,3)
//   attn_bench_checkpoint DIR peer --threads T --prefill 128,512 --decode 128,512 --steps S --reps R
//                                  --keep-rows 0|1|last --read-bandwidth 0|1
//                                           (each flag optional: 1, 128, 128, 16, 3, 0, 0)
//                                           the same-run comparison's timings (tools/benchmarks/bench_llamacpp.py):
//                                           {"prefill": [{"tokens", "seconds"}], "decode": [{"context",
//                                           "steps", "seconds"}], "peak_rss_bytes", "step_weights_bytes",
//                                           "isa"}, each repetition
//                                           timed; isa: the vector instructions the kernels were built for;
//                                           --keep-rows: every head's attention rows kept (1), or the
//                                           last position's only (last: what generate keeps of a prompt);
//                                           each prefill length and decoding context first runs once
//                                           untimed, as in the peers (--untimed-first 0: not);
//                                           --read-bandwidth 1: after each timed decoding repetition, the
//                                           machine's read bandwidth timed on as many threads (the best
//                                           of bench/memory_benchmarks.hpp's ways of reading), each decode
//                                           entry's "read_bytes_per_second", one per repetition;
//                                           each decode entry's "cache_numbers_per_step" and
//                                           "cache_bytes_per_step": what a step reads of the cache
//                                           (keys and values of every layer), besides the weights
//   attn_bench_checkpoint DIR sight --threads T --positions 2048,8192 --reps R   (1, 2048, 3)
//                                           what seeing inside costs at long prompts: {"sight": [{"positions",
//                                           "plain", "statistics", "log_sum_exp"}], "peak_rss_bytes", "isa"},
//                                           seconds of Model::forward each repetition, without and with every
//                                           head's statistics, and with each row's log-sum-exp kept
//   attn_bench_checkpoint DIR [benchmark flags]
//       checkpoint/forward/threads:T/positions:N   a whole text, logits at every position
//       checkpoint/prefill/threads:T/positions:N   a prompt into a Decoder, the last logits only
//       checkpoint/decode/threads:T/context:C[/attention]  one step after C positions (and its
//                                                  attention rows in every layer and head)
//   --weights converted|stored_16_bit|stored_quantized anywhere after DIR: how the model keeps its
//   weights (attn::LoadOptions; converted, to float, by default; stored_quantized: DIR is a .gguf file)
//   --bfloat16-activations anywhere after DIR, with --weights stored_16_bit: products round their
//   activations to bfloat16 (attn::LoadOptions::bfloat16_activations), the attention too
//   --bfloat16-attention anywhere after DIR: the attention alone on bfloat16 numbers, any weights
//   (attn::LoadOptions::bfloat16_attention)
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>
#include <attn/threads.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../examples/cli.hpp"
#include "bench_main.hpp"
#include "memory_benchmarks.hpp"
#include "model_instance.hpp"  // Model<float> and its forward pass compiled once, apart

namespace {

std::filesystem::path checkpoint_directory;
attn::LoadOptions load_options;

const attn::Model<float>& model() {
    static const attn::Model<float> loaded = attn::Model<float>::load(checkpoint_directory, load_options);
    return loaded;
}

/// Entries of every layer's matrices, which stored_16_bit keeps in 16 bits (the embedding and
/// unembedding apart).
double layer_matrix_entries(const attn::ModelSettings& s) {
    double entries = 0;
    for (const attn::LayerDescription& layer : s.layer_descriptions)
        entries += double(s.dimensions) *
                   double(s.query_key_value_width() + s.query_width() + (layer.gated_mlp ? 3 : 2) * s.mlp_width);
    return entries;
}

/// The bytes the loaded weights take: the large matrices in 16 bits with stored_16_bit.
std::size_t weight_bytes(const attn::Model<float>& loaded) {
    const attn::ModelSettings& s = loaded.settings();
    if (loaded.weight_storage() == attn::WeightStorage::converted) return std::size_t(loaded.parameters()) * 4;
    if (loaded.weight_storage() == attn::WeightStorage::stored_quantized)  // the file's blocks: about its size
        return std::size_t(std::filesystem::file_size(checkpoint_directory));
    const double large =
        double(s.vocabulary_size) * double(s.dimensions) * (s.tied_embeddings ? 1 : 2) + layer_matrix_entries(s);
    return std::size_t(large) * 2 + (std::size_t(loaded.parameters()) - std::size_t(large)) * 4;
}

/// The bytes of weights a decoding step reads: every layer's matrices and the unembedding, in the
/// storage they were loaded in (not the vectors, nor the embedding a step looks one row up in); for a
/// GGUF file kept quantized, the file's size (its blocks, with its vectors and header: within about 1 %
/// for a tied embedding, which the unembedding reads).
std::size_t step_weight_bytes(const attn::Model<float>& loaded) {
    if (loaded.weight_storage() == attn::WeightStorage::stored_quantized)
        return std::size_t(std::filesystem::file_size(checkpoint_directory));
    const attn::ModelSettings& s = loaded.settings();
    const double entries = double(s.vocabulary_size) * double(s.dimensions) + layer_matrix_entries(s);
    return std::size_t(entries) * (loaded.weight_storage() == attn::WeightStorage::stored_16_bit ? 2 : 4);
}

/// The numbers of keys and values a decoding step after `context` positions reads from the cache,
/// averaged over `steps` steps: in every layer, each key and value head's row of every position
/// it attends (the step's own included; the last `window` where the layer has a sliding window).
double cache_numbers_per_step(const attn::Model<float>& loaded, long context, int steps) {
    const attn::ModelSettings& s = loaded.settings();
    double numbers = 0;
    for (int step = 0; step < steps; ++step)
        for (attn::Index l = 0; l < s.layers; ++l) {
            const attn::Index window = s.layer(l).window, seen = context + step + 1;
            numbers += double(window > 0 ? std::min(window, seen) : seen) * 2.0 * double(s.key_value_width());
        }
    return numbers / steps;
}

/// Peak resident memory of this process so far, from /proc/self/status (0 where it is missing).
std::size_t peak_resident_bytes_now() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::size_t(std::stoull(line.substr(6))) * 1024;
    return 0;
}

/// The peak before the last read_bandwidth_aside: its buffer is not the model's memory.
std::size_t peak_before_reads = 0;

/// The peak resident memory of the model's work: this process's, leaving out the buffers of
/// read_bandwidth_aside.
std::size_t peak_resident_bytes() {
    return std::max(peak_before_reads, peak_resident_bytes_now());
}

/// The machine's read bandwidth timed now, on `threads` threads (bench::memory::read_bandwidth_now),
/// beside the decoding steps it is the limit of; its 256 MiB buffer left out of the peak memory (the
/// kernel's high-water mark reset after it: /proc/self/clear_refs, Linux 4.0 and later).
double read_bandwidth_aside(int threads) {
    peak_before_reads = peak_resident_bytes();
    const double rate = bench::memory::read_bandwidth_now(threads);
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";  // 5: reset the peak resident memory to the current
    clear.flush();
    if (!clear)
        throw attn::argument_error(
            "--read-bandwidth 1: cannot reset the peak resident memory (/proc/self/clear_refs), which the read's "
            "buffer would raise");
    return rate;
}

std::size_t directory_bytes(const std::filesystem::path& directory) {
    if (std::filesystem::is_regular_file(directory)) return std::size_t(std::filesystem::file_size(directory));
    std::size_t bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(directory))
        if (entry.is_regular_file() && entry.path().extension() == ".safetensors") bytes += entry.file_size();
    return bytes;
}

int measure_load() {
    const auto start = std::chrono::steady_clock::now();
    const attn::Model<float> loaded = attn::Model<float>::load(checkpoint_directory, load_options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t weights = weight_bytes(loaded);
    std::printf(
        "{\"load_seconds\": %.4f, \"peak_resident_bytes\": %zu, \"checkpoint_bytes\": %zu, \"weights_bytes\": %zu, "
        "\"step_weights_bytes\": %zu, \"parameters\": %lld, \"peak_over_weights\": %.4f}\n",
        seconds, peak_resident_bytes(), directory_bytes(checkpoint_directory), weights, step_weight_bytes(loaded),
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

/// `text` as a whole number from `least` to the largest int, or an argument_error naming the flag.
long whole_number(const std::string& flag, const std::string& text, long least) {
    constexpr long largest = std::numeric_limits<int>::max();
    if (const std::optional<long long> value = examples::parse_whole_number(text, least, largest)) return long(*value);
    throw attn::argument_error(flag + " wants a whole number from " + std::to_string(least) + " to " +
                               std::to_string(largest) + ", got \"" + text + "\"");
}

/// A comma-separated list of whole numbers ≥ `least` given to `flag`.
std::vector<long> numbers(const std::string& flag, const std::string& list, long least = 1) {
    std::vector<long> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        out.push_back(whole_number(flag, list.substr(start, comma - start), least));
        start = comma + 1;
    }
    return out;
}

template <class F>
double seconds_of(F&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string seconds_list(const std::vector<double>& seconds) {
    std::string text;
    for (double s : seconds) text += (text.empty() ? "" : ", ") + std::to_string(s);
    return "[" + text + "]";
}

/// The vector extensions this build was compiled for (its -m flags, or -march=native's), then the
/// packets Eigen uses: Eigen names AVX2 builds "AVX" and does not say whether FMA is in.
std::string compiled_isa() {
    std::string isa;
    [[maybe_unused]] const auto add = [&](const char* name) { isa += std::string(isa.empty() ? "" : " ") + name; };
#ifdef __AVX512F__
    add("AVX512F");
#endif
#ifdef __AVX512BF16__
    add("AVX512_BF16");
#endif
#ifdef __AVX512VNNI__
    add("AVX512_VNNI");
#endif
#ifdef __AVX2__
    add("AVX2");
#endif
#ifdef __FMA__
    add("FMA");
#endif
#ifdef __F16C__
    add("F16C");
#endif
    return (isa.empty() ? "SSE2" : isa) + "; Eigen: " + Eigen::SimdInstructionSetsInUse();
}

/// A mode's flags after `DIR mode`: --name value pairs, each flag's value set to its default first.
std::map<std::string, std::string> mode_flags(int argc, char** argv, std::map<std::string, std::string> flags) {
    if ((argc - 3) % 2 != 0) throw attn::argument_error(std::string("a flag without a value: ") + argv[argc - 1]);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!flags.count(argv[i])) throw attn::argument_error(std::string("unknown flag ") + argv[i]);
        flags[argv[i]] = argv[i + 1];
    }
    return flags;
}

/// The peer protocol of tools/benchmarks/bench_llamacpp.py: prefill (one batch, the last position's logits)
/// and decode (`steps` single-token steps after `context` positions), each repetition timed.
int peer(int argc, char** argv) {
    std::map<std::string, std::string> flags = mode_flags(argc, argv,
                                                          {{"--threads", "1"},
                                                           {"--prefill", "128"},
                                                           {"--decode", "128"},
                                                           {"--steps", "16"},
                                                           {"--reps", "3"},
                                                           {"--keep-rows", "0"},
                                                           {"--untimed-first", "1"},
                                                           {"--read-bandwidth", "0"}});
    const int threads = int(whole_number("--threads", flags["--threads"], 1));
    const int steps = int(whole_number("--steps", flags["--steps"], 1));
    const int reps = int(whole_number("--reps", flags["--reps"], 1));
    const std::string keep_rows = flags["--keep-rows"];
    if (keep_rows != "0" && keep_rows != "1" && keep_rows != "last")
        throw attn::argument_error("--keep-rows wants 0, 1 or last, got \"" + keep_rows + "\"");
    const std::string read_bandwidth = flags["--read-bandwidth"];
    if (read_bandwidth != "0" && read_bandwidth != "1")
        throw attn::argument_error("--read-bandwidth wants 0 or 1, got \"" + read_bandwidth + "\"");
    // As the peers (tools/benchmarks/peers): no timing pays for first-touch page faults. Each shape
    // runs once untimed first, since a decoder's buffers are sized to its last call (--untimed-first 0:
    // every repetition timed, the first a first pass: tools/benchmarks/bench_first_pass.py).
    const int first_rep = flags["--untimed-first"] == "0" ? 0 : -1;
    attn::Workers workers(threads);
    attn::DecodeOptions options;
    options.threads = workers;
    options.keep_attention = keep_rows == "1" || keep_rows == "last";
    options.last_attention_only = keep_rows == "last";
    std::string prefill_json, decode_json;
    for (long tokens : numbers("--prefill", flags["--prefill"])) {
        const std::vector<int> ids = random_ids(tokens);
        attn::Decoder<float> decoder(model(), {}, tokens);
        std::vector<double> seconds;
        for (int r = first_rep; r < reps; ++r) {  // r < 0: untimed
            decoder.reset();
            const double took =
                seconds_of([&] { benchmark::DoNotOptimize(decoder.append(ids, options).logits.data()); });
            if (r >= 0) seconds.push_back(took);
        }
        prefill_json += std::string(prefill_json.empty() ? "" : ", ") + "{\"tokens\": " + std::to_string(tokens) +
                        ", \"seconds\": " + seconds_list(seconds) + "}";
    }
    for (long context : numbers("--decode", flags["--decode"])) {
        const std::vector<int> ids = random_ids(context + steps);
        attn::Decoder<float> decoder(model(), {}, context + steps);
        std::vector<double> seconds, read_rates;
        for (int r = first_rep; r < reps; ++r) {
            decoder.reset();
            decoder.append({ids.begin(), ids.begin() + context}, options);
            const double took = seconds_of([&] {
                for (int s = 0; s < steps; ++s)
                    benchmark::DoNotOptimize(decoder.step(ids[std::size_t(context + s)], options).logits.data());
            });
            if (r >= 0) seconds.push_back(took);
            if (r >= 0 && read_bandwidth == "1") read_rates.push_back(read_bandwidth_aside(threads));
        }
        // what a step reads of the cache besides the weights: its numbers, and their bytes in attn's
        // cache, whose storage is the decoder's float (KeyValueCache::bytes) with bfloat16 attention too:
        // that rounds the numbers the cache keeps, not their storage
        const double cache_numbers = cache_numbers_per_step(model(), context, steps);
        const double cache_bytes = cache_numbers * double(sizeof(float));
        decode_json += std::string(decode_json.empty() ? "" : ", ") + "{\"context\": " + std::to_string(context) +
                       ", \"steps\": " + std::to_string(steps) + ", \"seconds\": " + seconds_list(seconds) +
                       ", \"cache_numbers_per_step\": " + std::to_string(cache_numbers) +
                       ", \"cache_bytes_per_step\": " + std::to_string(cache_bytes) +
                       (read_rates.empty() ? "" : ", \"read_bytes_per_second\": " + seconds_list(read_rates)) + "}";
    }
    // "isa": the vector instructions this build's kernels use (Eigen's packets), for the table to say
    // which instruction set each figure came from; "step_weights_bytes": what a decoding step reads of
    // the weights, for its bandwidth
    std::printf(
        "{\"prefill\": [%s], \"decode\": [%s], \"peak_rss_bytes\": %zu, \"step_weights_bytes\": %zu, \"isa\": "
        "\"%s\"}\n",
        prefill_json.c_str(), decode_json.c_str(), peak_resident_bytes(), step_weight_bytes(model()),
        compiled_isa().c_str());
    return 0;
}

/// What seeing inside costs at long prompts: Model::forward over `positions` random tokens plain (logits
/// at every position), with every head's statistics measured in the kernel (ForwardOptions::statistics:
/// back 4, marker position 0), and with each row's log-sum-exp kept (keep_log_sum_exp, from which any
/// head's rows come afterwards). Each runs once untimed first (the result's memory first touched, the
/// statistics' arrays made), then the three in turn within each repetition, so that a slow minute of the
/// machine falls on all three.
int sight(int argc, char** argv) {
    std::map<std::string, std::string> flags =
        mode_flags(argc, argv, {{"--threads", "1"}, {"--positions", "2048"}, {"--reps", "3"}});
    const int reps = int(whole_number("--reps", flags["--reps"], 1));
    attn::Workers workers(int(whole_number("--threads", flags["--threads"], 1)));
    attn::HeadStatisticsRequest request;
    request.markers = {0};
    std::string json;
    for (long positions : numbers("--positions", flags["--positions"])) {
        const std::vector<int> ids = random_ids(positions);
        attn::ForwardResult<float> result;
        std::vector<double> seconds[3];
        for (int r = -1; r < reps; ++r)  // -1: untimed
            for (int mode = 0; mode < 3; ++mode) {
                attn::ForwardOptions options;
                options.threads = workers;
                if (mode == 1) options.statistics = &request;
                if (mode == 2) options.keep_log_sum_exp = true;
                const double took = seconds_of([&] {
                    model().forward_into(ids, options, result);
                    benchmark::DoNotOptimize(result.logits.data());
                });
                if (r >= 0) seconds[mode].push_back(took);
            }
        json += std::string(json.empty() ? "" : ", ") + "{\"positions\": " + std::to_string(positions) +
                ", \"plain\": " + seconds_list(seconds[0]) + ", \"statistics\": " + seconds_list(seconds[1]) +
                ", \"log_sum_exp\": " + seconds_list(seconds[2]) + "}";
    }
    std::printf("{\"sight\": [%s], \"peak_rss_bytes\": %zu, \"isa\": \"%s\"}\n", json.c_str(), peak_resident_bytes(),
                compiled_isa().c_str());
    return 0;
}

/// {"logits": [...]}: the last position's logits for the ids, for the same-run agreement check.
int last_logits(const std::string& list) {
    std::vector<int> ids;
    for (long id : numbers("IDS", list, 0)) ids.push_back(int(id));
    const attn::ForwardResult<float> result = model().forward(ids);
    std::string text;
    for (attn::Index v = 0; v < result.logits.cols(); ++v) {
        char number[32];
        std::snprintf(number, sizeof number, "%.9g", double(result.logits(result.logits.rows() - 1, v)));
        text += (v ? ", " : "") + std::string(number);
    }
    std::printf("{\"logits\": [%s]}\n", text.c_str());
    return 0;
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

/// argv[at] … argv[at + count − 1] taken out of the command line (argv[argc], null, moved down too).
void remove_arguments(int& argc, char** argv, int at, int count) {
    for (int j = at; j + count <= argc; ++j) argv[j] = argv[j + count];
    argc -= count;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::cerr << "usage: attn_bench_checkpoint DIR load | attn_bench_checkpoint DIR [benchmark flags]\n";
        return 2;
    }
    checkpoint_directory = argv[1];
    for (int i = 2; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--weights") == 0) {
            const std::string storage = argv[i + 1];
            if (storage != "converted" && storage != "stored_16_bit" && storage != "stored_quantized") {
                std::cerr << "attn_bench_checkpoint: --weights " << storage
                          << ": converted, stored_16_bit or stored_quantized\n";
                return 2;
            }
            if (storage == "stored_16_bit") load_options.weights = attn::WeightStorage::stored_16_bit;
            if (storage == "stored_quantized") load_options.weights = attn::WeightStorage::stored_quantized;
            remove_arguments(argc, argv, i, 2);  // the flag and its value
            break;
        }
    for (int i = 2; i < argc; ++i)
        if (std::strcmp(argv[i], "--bfloat16-activations") == 0) {
            load_options.bfloat16_activations = true;
            remove_arguments(argc, argv, i, 1);
            break;
        }
    for (int i = 2; i < argc; ++i)
        if (std::strcmp(argv[i], "--bfloat16-attention") == 0) {
            load_options.bfloat16_attention = true;
            remove_arguments(argc, argv, i, 1);
            break;
        }
    try {
        if (argc >= 3 && std::strcmp(argv[2], "load") == 0) return measure_load();
        if (argc >= 4 && std::strcmp(argv[2], "logits") == 0) return last_logits(argv[3]);
        if (argc >= 3 && std::strcmp(argv[2], "peer") == 0) return peer(argc, argv);
        if (argc >= 3 && std::strcmp(argv[2], "sight") == 0) return sight(argc, argv);
        model();  // loaded before timing
    } catch (const attn::error& e) {
        std::cerr << "attn_bench_checkpoint: " << e.what() << "\n";
        return 1;
    }
    register_benchmarks();
    argv[1] = argv[0];
    return bench::run(argc - 1, argv + 1, "", "0.5");
}
