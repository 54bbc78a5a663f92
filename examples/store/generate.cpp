// generate: the store model writes a product's description, and for every token it writes
// shows where each last-layer head looked when choosing it.
//
//   generate [--model DIR] --name TEXT [--description TEXT] [--seed N] [--temperature T]
//            [--top-k K] [--top-p P] [--max-tokens M] [--json]
#include <attn/model/generate.hpp>
#include <attn/model/model.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "store_model.hpp"

namespace {

constexpr const char* usage = R"(usage: generate [--model DIR] --name TEXT [--description TEXT] [--seed N]
                [--temperature T] [--top-k K] [--top-p P] [--max-tokens M] [--json]

Continues `<s> name <sep> description` with the store model, token by token on a key/value
cache, and prints each written token, the probability the model gave it, and for each
last-layer head the token it weighted most when choosing it (name:, description:, markers).

options:
  --model DIR         model directory (default: the shipped models/store)
  --name TEXT         the product's name
  --description TEXT  the start of its description, to continue (default: none)
  --seed N            seed of the sampler's np.random.default_rng (default 0)
  --temperature T     0 writes the most likely token (default); > 0 samples
  --top-k K           sample among the K most likely tokens (default 0: all)
  --top-p P           sample among the fewest tokens whose probability reaches P (default 1)
  --max-tokens M      write at most M tokens (default: until </s> or the context's end)
  --json              one JSON object: prompt and written ids and tokens, probabilities,
                      the stop reason, and every step's attention rows (layers × heads ×
                      positions so far)
  --help              show this help and exit
)";

[[noreturn]] void fail_usage(const std::string& problem) {
    std::cerr << "generate: " << problem << "\n\n" << usage;
    std::exit(2);
}

struct Arguments {
    std::optional<std::string> model, name;
    std::string description;
    attn::GenerationOptions options;
    bool json = false;
};

double number(const std::string& flag, const std::string& text, double low, double high) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(value >= low && value <= high))
        fail_usage(flag + " needs a number in [" + store::fixed(low, 0) + ", " + store::fixed(high, 0) + "]");
    return value;
}

attn::Index count(const std::string& flag, const std::string& text) {
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < 0) fail_usage(flag + " needs a non-negative integer");
    return attn::Index(value);
}

Arguments parse(int argc, char** argv) {
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail_usage(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::cout << usage;
            std::exit(0);
        } else if (arg == "--model") {
            a.model = value();
        } else if (arg == "--name") {
            a.name = value();
        } else if (arg == "--description") {
            a.description = value();
        } else if (arg == "--seed") {
            const std::string text = value();
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
                fail_usage("--seed needs a non-negative integer");
            a.options.sampling.seed = std::stoull(text);
        } else if (arg == "--temperature") {
            a.options.sampling.temperature = number(arg, value(), 0.0, 100.0);
        } else if (arg == "--top-k") {
            a.options.sampling.top_k = count(arg, value());
        } else if (arg == "--top-p") {
            a.options.sampling.top_p = number(arg, value(), 0.0, 1.0);
            if (a.options.sampling.top_p == 0.0) fail_usage("--top-p must be greater than 0");
        } else if (arg == "--max-tokens") {
            a.options.max_tokens = count(arg, value());
        } else if (arg == "--json") {
            a.json = true;
        } else {
            fail_usage("unknown argument '" + arg + "'");
        }
    }
    if (!a.name) fail_usage("--name is required");
    return a;
}

/// The position each last-layer head weighted most in `row` (heads × (1 × positions)).
std::string strongest(const attn::AttentionWeights<float>& row, attn::Index h, const attn::Tokenizer& tokenizer,
                      const std::vector<int>& text, std::size_t current, std::size_t separator) {
    attn::Index best = 0;
    const float weight = row.head(h).row(0).maxCoeff(&best);
    return store::label(tokenizer, text, std::size_t(best), current, separator) + " " + store::fixed(weight);
}

void print_table(const attn::Model<float>& model, const attn::Generation<float>& written) {
    const attn::Tokenizer& tokenizer = model.tokenizer();
    std::vector<int> text = written.prompt;
    text.insert(text.end(), written.ids.begin(), written.ids.end());
    const std::size_t separator = store::separator_position(tokenizer, text);
    const attn::Index last_layer = model.settings().layers - 1;
    std::cout << "prompt: " << tokenizer.decode(written.prompt) << "\n"
              << "written: " << tokenizer.decode(written.ids) << "\n"
              << "stopped: " << attn::to_string(written.stop) << "\n\n"
              << "each written token, the probability the model gave it, and the token each head of layer "
              << last_layer + 1 << " weighted most when choosing it:\n";
    for (std::size_t k = 0; k < written.ids.size(); ++k) {
        const std::size_t chooser = written.prompt.size() + k - 1;  // the position whose logits chose it
        std::cout << "  " << std::left << std::setw(16) << tokenizer.token(written.ids[k]) << std::right << " "
                  << store::fixed(written.probabilities[k]);
        const attn::AttentionWeights<float>& row = written.attention[k][std::size_t(last_layer)];
        for (attn::Index h = 0; h < row.heads(); ++h)
            std::cout << " | head " << h + 1 << ": " << strongest(row, h, tokenizer, text, chooser, separator);
        std::cout << "\n";
    }
}

nlohmann::json to_json(const attn::Model<float>& model, const attn::Generation<float>& written) {
    const attn::Tokenizer& tokenizer = model.tokenizer();
    const auto tokens = [&](const std::vector<int>& ids) {
        std::vector<std::string> out;
        for (int id : ids) out.push_back(tokenizer.token(id));
        return out;
    };
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& layers : written.attention) {
        nlohmann::json step = nlohmann::json::array();  // layers × heads × positions
        for (const attn::AttentionWeights<float>& layer : layers) {
            nlohmann::json heads = nlohmann::json::array();
            for (attn::Index h = 0; h < layer.heads(); ++h)
                heads.push_back(std::vector<float>(layer.head(h).data(), layer.head(h).data() + layer.cols()));
            step.push_back(heads);
        }
        steps.push_back(step);
    }
    return {{"prompt_ids", written.prompt},
            {"prompt_tokens", tokens(written.prompt)},
            {"ids", written.ids},
            {"tokens", tokens(written.ids)},
            {"probabilities", written.probabilities},
            {"stop", attn::to_string(written.stop)},
            {"text", tokenizer.decode(written.ids)},
            {"attention", steps}};
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments arguments = parse(argc, argv);
    return store::report_errors("generate", [&] {
        const auto model = attn::Model<float>::load(store::model_directory(arguments.model));
        attn::GenerationOptions options = arguments.options;
        options.keep_attention = true;
        const attn::Generation<float> written =
            attn::generate(model, model.prompt_ids(*arguments.name, arguments.description), options);
        if (arguments.json)
            std::cout << to_json(model, written).dump() << "\n";
        else
            print_table(model, written);
    });
}
