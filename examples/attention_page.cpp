// attention_page: the interactive page of attn/view/attention_page.hpp for the core
// kernel's own output, at any length — what a library user does for their own model.
// Random "tokens" (each position one of a small vocabulary of random vectors, so that
// heads find repeats) go through causal multi_head_attention with keep_weights, once per
// layer with the layer's own random projections, and the weights of every head become the
// page: tests/browser/test_viewer.py opens pages of real models' shapes made this way.
//
// With --window W, layers 1, 3, … attend over a sliding window of W keys (Gemma 2's alternation),
// and the page shows the keys before each row's window as unreachable.
//
//   attention_page [--positions N] [--layers L] [--heads H] [--window W] [--seed S] --output FILE.html
#include <attn/attn.hpp>
#include <attn/view/attention_page.hpp>

#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {
constexpr const char* usage =
    R"(usage: attention_page [--positions N] [--layers L] [--heads H] [--window W] [--seed S] --output FILE

Writes the interactive attention page (attn/view/attention_page.hpp) for causal
multi-head attention over N random tokens (default 2048 positions, 1 layer of 4 heads of 32).

options:
  --positions N  positions, 1 to 16384 (default 2048)
  --layers L     layers, each with its own random projections, 1 to 64 (default 1)
  --heads H      heads per layer, 1 to 64 (default 4)
  --window W     a sliding window of W keys in layers 1, 3, … (default 0: none)
  --seed S       random seed (default 2026)
  --output FILE  where to write the page
  --help         show this help and exit
)";

[[noreturn]] void fail_usage(const std::string& problem) {
    std::cerr << "attention_page: " << problem << "\n\n" << usage;
    std::exit(2);
}

long integer(const std::string& flag, const std::string& text, long low, long high) {
    if (const std::optional<long long> value = examples::parse_whole_number(text, low, high)) return long(*value);
    fail_usage(flag + " needs an integer from " + std::to_string(low) + " to " + std::to_string(high) + ", got '" +
               text + "'");
}
}  // namespace

int main(int argc, char** argv) {
    long positions = 2048, layers = 1, heads = 4, window = 0, seed = 2026;
    std::optional<std::string> output;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << usage;
            return 0;
        }
        if (i + 1 >= argc)
            fail_usage(arg == "--positions" || arg == "--layers" || arg == "--heads" || arg == "--window" ||
                               arg == "--seed" || arg == "--output"
                           ? arg + " needs a value"
                           : "unknown argument '" + arg + "'");
        const std::string value = argv[++i];
        if (arg == "--positions")
            positions = integer(arg, value, 1, 16384);
        else if (arg == "--layers")
            layers = integer(arg, value, 1, 64);
        else if (arg == "--heads")
            heads = integer(arg, value, 1, 64);
        else if (arg == "--window")
            window = integer(arg, value, 0, 16384);
        else if (arg == "--seed")
            seed = integer(arg, value, 0, 1L << 30);
        else if (arg == "--output")
            output = value;
        else
            fail_usage("unknown argument '" + arg + "'");
    }
    if (!output) fail_usage("--output is required");

    const attn::Index width = 32 * heads, vocabulary = 64;
    std::mt19937_64 engine(static_cast<std::uint64_t>(seed));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto random = [&](attn::Index rows, attn::Index cols, float scale) {
        attn::Matrix<float> m(rows, cols);
        for (attn::Index i = 0; i < m.size(); ++i) m.data()[i] = scale * normal(engine);
        return m;
    };
    const attn::Matrix<float> embeddings = random(vocabulary, width, 1.0f);
    std::uniform_int_distribution<attn::Index> pick(0, vocabulary - 1);
    attn::Matrix<float> x(positions, width);
    std::vector<std::string> tokens;
    for (attn::Index i = 0; i < positions; ++i) {
        const attn::Index token = pick(engine);
        x.row(i) = embeddings.row(token);
        tokens.push_back("w" + std::to_string(token));
    }
    // Sharper than a random network's heads, so that the page has something to show.
    const float scale = 2.0f / std::sqrt(float(width));
    attn::AttentionOptions<float> options;
    options.keep_weights = true;
    options.threads = 0;
    return [&] {
        try {
            std::vector<attn::AttentionWeights<float>> weights;
            attn::PageOptions page;
            for (long layer = 0; layer < layers; ++layer) {
                const attn::Matrix<float> wq = random(width, width, scale), wk = random(width, width, scale),
                                          wv = random(width, width, scale), wo = random(width, width, scale);
                options.window = layer % 2 == 0 ? window : 0;
                page.windows.push_back(options.window);
                weights.push_back(attn::multi_head_attention(x, {wq, wk, wv, wo}, heads, options).weights);
            }
            page.title = "multi_head_attention: " + std::to_string(positions) + " random tokens";
            attn::write_attention_page(*output, tokens, weights, page);
            std::cout << "wrote " << *output << ": " << (layers > 1 ? std::to_string(layers) + " layers × " : "")
                      << heads << " heads × " << positions << " positions\n";
            return 0;
        } catch (const attn::error& e) {
            std::cerr << "attention_page: " << e.what() << "\n";
            return 1;
        }
    }();
}
