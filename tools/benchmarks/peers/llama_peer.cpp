// The llama.cpp peer: a GGUF model run on the prebuilt CPU llama.cpp, compiled at benchmark
// time against that release's llama.h (tools/benchmarks/peers/llamacpp_setup.py builds it) and never part
// of the library's build.
//
//   llama_peer --backends DIR --model M.gguf --threads T logits --tokens 1,2,3
//       -> {"logits": [vocab floats of the last position], ...}
//   llama_peer --backends DIR --model M.gguf --threads T bench [--prefill 128,512]
//       [--decode 128,512] [--steps 32] [--reps 5]
//       -> {"prefill": [{"tokens", "seconds": [...]}], "decode": [{"context", "steps",
//           "seconds": [...]}], "peak_rss_bytes", ...}
//   llama_peer --backends DIR --model F32.gguf quantize --out Q.gguf --type Q4_K_M
//       -> {"out": ..., "type": ...}: llama_model_quantize (Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K), as
//          llama-quantize writes the downloads' files (K-quant rows must be whole 256-value blocks)
//
//   llama_peer --backends DIR --model M.gguf tokenize --texts FILE [--no-add-special]
//       -> one line of space-separated ids per text: llama_tokenize(vocab, text, add_special,
//          parse_special = true) on the model's vocabulary alone (vocab_only). FILE holds the
//          texts as "<byte count>\n<bytes>\n" one after another, so a text may hold any byte.
//
// Options before the command: --kv-type f32|f16 (f32: the float32 activations of the other
// peers), --flash-attn auto|on|off, --verbose (llama.cpp's own log on stderr).
// Every timing is one llama_decode call (or `steps` of them) followed by llama_synchronize,
// on a cache cleared beforehand; the driver takes medians over the repetitions.

#include <ggml-backend.h>
#include <llama.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string backends;
    std::string model;
    int threads = 1;
    std::string kv_type = "f32";
    std::string flash_attn = "auto";
    bool verbose = false;
    std::string command;
    std::vector<int> tokens;
    std::vector<int> prefill = {128, 512};
    std::vector<int> decode = {128, 512};
    int steps = 32;
    int reps = 5;
    std::string texts;
    bool add_special = true;
    std::string out;
    std::string type;
};

std::vector<int> parse_ints(const std::string& option, const std::string& text) {
    std::vector<int> values;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t end = std::min(text.find(',', begin), text.size());
        const std::string item = text.substr(begin, end - begin);
        char* stop = nullptr;
        const long value = std::strtol(item.c_str(), &stop, 10);
        if (item.empty() || *stop != '\0' || value < 0 || value > 1000000) {
            throw std::invalid_argument(option + ": '" + item + "' is not a count in 0..1000000");
        }
        values.push_back(static_cast<int>(value));
        begin = end + 1;
    }
    return values;
}

int parse_positive(const std::string& option, const std::string& text) {
    const std::vector<int> values = parse_ints(option, text);
    if (values.size() != 1 || values[0] < 1) {
        throw std::invalid_argument(option + ": '" + text + "' is not one positive count");
    }
    return values[0];
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--backends")
            options.backends = value();
        else if (arg == "--model")
            options.model = value();
        else if (arg == "--threads")
            options.threads = parse_positive(arg, value());
        else if (arg == "--kv-type")
            options.kv_type = value();
        else if (arg == "--flash-attn")
            options.flash_attn = value();
        else if (arg == "--verbose")
            options.verbose = true;
        else if (arg == "--tokens")
            options.tokens = parse_ints(arg, value());
        else if (arg == "--prefill")
            options.prefill = parse_ints(arg, value());
        else if (arg == "--decode")
            options.decode = parse_ints(arg, value());
        else if (arg == "--steps")
            options.steps = parse_positive(arg, value());
        else if (arg == "--reps")
            options.reps = parse_positive(arg, value());
        else if (arg == "--texts")
            options.texts = value();
        else if (arg == "--no-add-special")
            options.add_special = false;
        else if (arg == "--out")
            options.out = value();
        else if (arg == "--type")
            options.type = value();
        else if (arg == "logits" || arg == "bench" || arg == "tokenize" || arg == "quantize")
            options.command = arg;
        else
            throw std::invalid_argument("unknown argument '" + arg + "'");
    }
    if (options.backends.empty() || options.model.empty() || options.command.empty()) {
        throw std::invalid_argument(
            "needs --backends DIR --model FILE and a command (logits, bench, tokenize or quantize)");
    }
    if (options.kv_type != "f32" && options.kv_type != "f16") {
        throw std::invalid_argument("--kv-type: '" + options.kv_type + "' is neither f32 nor f16");
    }
    if (options.flash_attn != "auto" && options.flash_attn != "on" && options.flash_attn != "off") {
        throw std::invalid_argument("--flash-attn: '" + options.flash_attn + "' is not auto, on or off");
    }
    if (options.command == "logits" && options.tokens.empty()) {
        throw std::invalid_argument("logits needs --tokens");
    }
    if (options.command == "tokenize" && options.texts.empty()) {
        throw std::invalid_argument("tokenize needs --texts");
    }
    return options;
}

// The high-water mark of resident memory: weights, cache and compute buffers together.
long long peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
    }
    return -1;
}

std::string cpu_backend_features() {
    std::string features;
    for (size_t r = 0; r < ggml_backend_reg_count(); ++r) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(r);
        const auto get_features = reinterpret_cast<ggml_backend_get_features_t>(
            ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
        if (get_features == nullptr) continue;
        for (const ggml_backend_feature* f = get_features(reg); f != nullptr && f->name != nullptr; ++f) {
            if (!features.empty()) features += ' ';
            features += std::string(f->name) + "=" + f->value;
        }
    }
    return features;
}

class LoadedModel {
public:
    LoadedModel(const Options& options, int context) {
        llama_model_params model_params = llama_model_default_params();
        model_params.n_gpu_layers = 0;
        model_ = llama_model_load_from_file(options.model.c_str(), model_params);
        if (model_ == nullptr) throw std::runtime_error("llama.cpp could not load " + options.model);
        llama_context_params params = llama_context_default_params();
        params.n_ctx = static_cast<uint32_t>(context);
        params.n_batch = params.n_ubatch = static_cast<uint32_t>(std::max(context, 1));
        params.n_seq_max = 1;
        params.n_threads = params.n_threads_batch = options.threads;
        params.type_k = params.type_v = options.kv_type == "f32" ? GGML_TYPE_F32 : GGML_TYPE_F16;
        params.flash_attn_type = options.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                 : options.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                               : LLAMA_FLASH_ATTN_TYPE_AUTO;
        params.no_perf = true;
        context_ = llama_init_from_model(model_, params);
        if (context_ == nullptr) {
            llama_model_free(model_);
            throw std::runtime_error("llama.cpp could not make a context of " + std::to_string(context));
        }
        vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(model_));
    }
    LoadedModel(const LoadedModel&) = delete;
    LoadedModel& operator=(const LoadedModel&) = delete;
    ~LoadedModel() {
        llama_free(context_);
        llama_model_free(model_);
    }

    int vocab() const { return vocab_; }

    void clear() { llama_memory_clear(llama_get_memory(context_), true); }

    // Appends tokens at positions first.., asking for the last position's logits only.
    void evaluate(const std::vector<int>& tokens, int first) {
        llama_batch batch = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
        batch.n_tokens = static_cast<int32_t>(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i] >= vocab_) {
                llama_batch_free(batch);
                throw std::invalid_argument("token " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
                                            std::to_string(vocab_));
            }
            batch.token[i] = tokens[i];
            batch.pos[i] = first + static_cast<int>(i);
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = i + 1 == tokens.size();
        }
        const int32_t status = llama_decode(context_, batch);
        llama_batch_free(batch);
        if (status != 0) throw std::runtime_error("llama_decode returned " + std::to_string(status));
        llama_synchronize(context_);
    }

    const float* last_logits() { return llama_get_logits_ith(context_, -1); }

private:
    llama_model* model_ = nullptr;
    llama_context* context_ = nullptr;
    int vocab_ = 0;
};

std::vector<int> pseudo_random_tokens(int count, int vocab, uint64_t seed) {
    std::vector<int> tokens(static_cast<size_t>(count));
    for (int& t : tokens) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        t = static_cast<int>((seed >> 33) % static_cast<uint64_t>(vocab));
    }
    return tokens;
}

double seconds_of(const std::chrono::steady_clock::time_point& start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void print_seconds(const std::vector<double>& seconds) {
    std::printf("[");
    for (size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.9f", i ? ", " : "", seconds[i]);
    std::printf("]");
}

void run_logits(const Options& options) {
    LoadedModel model(options, static_cast<int>(options.tokens.size()));
    model.evaluate(options.tokens, 0);
    const float* logits = model.last_logits();
    std::printf("{\"vocab\": %d, \"logits\": [", model.vocab());
    for (int i = 0; i < model.vocab(); ++i) std::printf("%s%.9g", i ? ", " : "", logits[i]);
    std::printf("]}\n");
}

void run_bench(const Options& options) {
    int longest = 1;
    for (int n : options.prefill) longest = std::max(longest, n);
    for (int n : options.decode) longest = std::max(longest, n + options.steps);
    const auto load_start = std::chrono::steady_clock::now();
    LoadedModel model(options, longest);
    const double load_seconds = seconds_of(load_start);
    const std::vector<int> tokens = pseudo_random_tokens(longest, model.vocab(), 12345);

    model.clear();  // a first pass so that no timing pays for first-touch page faults
    model.evaluate(std::vector<int>(tokens.begin(), tokens.begin() + longest - options.steps), 0);

    std::printf("{\"threads\": %d, \"kv_type\": \"%s\", \"flash_attn\": \"%s\", \"context\": %d, ", options.threads,
                options.kv_type.c_str(), options.flash_attn.c_str(), longest);
    std::printf("\"load_seconds\": %.6f, \"cpu_backend\": \"%s\",\n \"prefill\": [", load_seconds,
                cpu_backend_features().c_str());
    for (size_t p = 0; p < options.prefill.size(); ++p) {
        const int n = options.prefill[p];
        const std::vector<int> prompt(tokens.begin(), tokens.begin() + n);
        std::vector<double> seconds;
        for (int rep = 0; rep < options.reps; ++rep) {
            model.clear();
            const auto start = std::chrono::steady_clock::now();
            model.evaluate(prompt, 0);
            seconds.push_back(seconds_of(start));
        }
        std::printf("%s{\"tokens\": %d, \"seconds\": ", p ? ", " : "", n);
        print_seconds(seconds);
        std::printf("}");
    }
    std::printf("],\n \"decode\": [");
    for (size_t d = 0; d < options.decode.size(); ++d) {
        const int n = options.decode[d];
        const std::vector<int> prompt(tokens.begin(), tokens.begin() + n);
        std::vector<double> seconds;
        for (int rep = 0; rep < options.reps; ++rep) {
            model.clear();
            model.evaluate(prompt, 0);
            const auto start = std::chrono::steady_clock::now();
            for (int step = 0; step < options.steps; ++step) model.evaluate({tokens[n + step]}, n + step);
            seconds.push_back(seconds_of(start));
        }
        std::printf("%s{\"context\": %d, \"steps\": %d, \"seconds\": ", d ? ", " : "", n, options.steps);
        print_seconds(seconds);
        std::printf("}");
    }
    std::printf("],\n \"peak_rss_bytes\": %lld}\n", peak_rss_bytes());
}

// The texts of a --texts file: "<byte count>\n<bytes>\n" each.
std::vector<std::string> read_texts(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<std::string> texts;
    for (std::string count; std::getline(in, count);) {
        const std::vector<int> n = parse_ints("--texts", count);
        std::string text(static_cast<size_t>(n.at(0)), '\0');
        in.read(&text[0], static_cast<std::streamsize>(text.size()));
        if (in.gcount() != static_cast<std::streamsize>(text.size()) || in.get() != '\n') {
            throw std::runtime_error(path + ": a text is cut short");
        }
        texts.push_back(std::move(text));
    }
    return texts;
}

void run_tokenize(const Options& options) {
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model* model = llama_model_load_from_file(options.model.c_str(), params);
    if (model == nullptr) throw std::runtime_error("llama.cpp could not load " + options.model);
    const llama_vocab* vocab = llama_model_get_vocab(model);
    std::vector<llama_token> ids;
    for (const std::string& text : read_texts(options.texts)) {
        ids.resize(text.size() + 8);
        int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                                   static_cast<int32_t>(ids.size()), options.add_special, true);
        if (n < 0) {
            ids.resize(static_cast<size_t>(-n));
            n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                               static_cast<int32_t>(ids.size()), options.add_special, true);
        }
        if (n < 0) {
            llama_model_free(model);
            throw std::runtime_error("llama_tokenize failed on a text of " + std::to_string(text.size()) + " bytes");
        }
        for (int32_t i = 0; i < n; ++i) std::printf("%s%d", i ? " " : "", ids[static_cast<size_t>(i)]);
        std::printf("\n");
    }
    llama_model_free(model);
}

void run_quantize(const Options& options) {
    struct Known {
        const char* name;
        llama_ftype ftype;
    };
    const Known known[] = {{"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
                           {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
                           {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
                           {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
                           {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K}};
    const Known* chosen = nullptr;
    for (const Known& k : known)
        if (options.type == k.name) chosen = &k;
    if (chosen == nullptr)
        throw std::invalid_argument("quantize: --type '" + options.type +
                                    "' is not one of Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K");
    if (options.out.empty()) throw std::invalid_argument("quantize needs --out FILE");
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.nthread = options.threads;
    params.ftype = chosen->ftype;
    if (llama_model_quantize(options.model.c_str(), options.out.c_str(), &params) != 0)
        throw std::runtime_error("llama_model_quantize failed for " + options.model);
    std::printf("{\"out\": \"%s\", \"type\": \"%s\"}\n", options.out.c_str(), chosen->name);
}

void quiet_log(ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Options options = parse(argc, argv);
        if (!options.verbose) llama_log_set(quiet_log, nullptr);
        ggml_backend_load_all_from_path(options.backends.c_str());
        if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
            throw std::runtime_error("no CPU backend could be loaded from " + options.backends);
        }
        llama_backend_init();
        if (options.command == "logits")
            run_logits(options);
        else if (options.command == "tokenize")
            run_tokenize(options);
        else if (options.command == "quantize")
            run_quantize(options);
        else
            run_bench(options);
        llama_backend_free();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llama_peer: %s\n", e.what());
        return 1;
    }
}
