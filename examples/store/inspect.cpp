// inspect: a model's next-token probabilities and every head's attention at one position of
// a text: a store product's, any text for a model with a tokenizer, or token ids.
//
//   inspect [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --ids 1,2,3)
//           [--position N] [--layer L --head H] [--top K] [--threads T] [--json] [--html FILE] [--npy DIR]
#include <attn/model/model.hpp>
#include <attn/view/npy.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "store_model.hpp"
#include "store_page.hpp"

namespace {

constexpr const char* usage =
    R"(usage: inspect [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --ids 1,2,3)
               [--position N] [--layer L --head H] [--top K] [--threads T] [--json] [--html FILE]
               [--npy DIR]

Runs a model on a text and prints, at one position, the next-token probabilities and each
head's largest attention weights. For the store model's `<s> name <sep> description </s>`
they are labelled as the chapter does (current:, name:, description:, markers).

options:
  --model DIR         model directory: the store model (default: the shipped models/store)
                      or a Hugging Face checkpoint (config.json, model.safetensors), or a
                      .gguf file (its tokenizer is not read: give --ids)
  --name TEXT         the store product's name
  --description TEXT  the store product's description (default: none)
  --text TEXT         any text, read by the model directory's tokenizer
  --ids LIST          comma-separated token ids instead of a text
  --threads T         threads for the forward pass (default 1; 0: one per hardware thread)
  --position N        0-based position to read (default: the last)
  --layer L --head H  only this head (1-based, as the chapter counts)
  --top K             how many tokens and weights to list (default 3)
  --json              one JSON object: tokens, ids, logits (positions × vocabulary),
                      attention (layers × heads × positions × positions)
  --html FILE         also write an interactive page of every head's attention (opens
                      from disk, nothing fetched), at --position and on --layer/--head
  --npy DIR           also write DIR/attention.npy (layers, heads, positions, positions),
                      DIR/logits.npy (positions, vocabulary), float32, and DIR/tokens.json
  --help              show this help and exit
)";

struct Arguments {
    std::optional<std::string> model, name, description, text, ids, position, layer, head, top, threads, html, npy;
    bool json = false;
};

[[noreturn]] void fail_usage(const std::string& problem) {
    std::cerr << "inspect: " << problem << "\n\n" << usage;
    std::exit(2);
}

Arguments parse(int argc, char** argv) {
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](std::optional<std::string>& slot) {
            if (i + 1 >= argc) fail_usage(arg + " needs a value");
            slot = argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::cout << usage;
            std::exit(0);
        } else if (arg == "--model")
            value(a.model);
        else if (arg == "--name")
            value(a.name);
        else if (arg == "--description")
            value(a.description);
        else if (arg == "--ids")
            value(a.ids);
        else if (arg == "--text")
            value(a.text);
        else if (arg == "--threads")
            value(a.threads);
        else if (arg == "--position")
            value(a.position);
        else if (arg == "--layer")
            value(a.layer);
        else if (arg == "--head")
            value(a.head);
        else if (arg == "--top")
            value(a.top);
        else if (arg == "--html")
            value(a.html);
        else if (arg == "--npy")
            value(a.npy);
        else if (arg == "--json")
            a.json = true;
        else
            fail_usage("unknown argument '" + arg + "'");
    }
    if (int(a.name.has_value()) + int(a.ids.has_value()) + int(a.text.has_value()) != 1)
        fail_usage("give one of --name, --text and --ids");
    if (a.description && !a.name) fail_usage("--description goes with --name");
    if (a.layer.has_value() != a.head.has_value()) fail_usage("--layer and --head go together");
    return a;
}

long integer(const std::string& flag, const std::string& text, long low, long high) {
    std::size_t used = 0;
    long value = 0;
    try {
        value = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || text.empty() || value < low || value > high)
        fail_usage(flag + " needs an integer from " + std::to_string(low) + " to " + std::to_string(high) + ", got '" +
                   text + "'");
    return value;
}

/// Indices of the k largest entries of a row, ties to the earlier position (stable).
template <class Row>
std::vector<attn::Index> top_k(const Row& row, attn::Index k) {
    std::vector<attn::Index> order(static_cast<std::size_t>(row.size()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](attn::Index a, attn::Index b) { return row(a) > row(b); });
    order.resize(static_cast<std::size_t>(std::min<attn::Index>(k, row.size())));
    return order;
}

/// attention.npy, logits.npy and tokens.json in `directory`, created if missing.
void write_arrays(const std::filesystem::path& directory, const attn::Tokenizer& tokenizer, const std::vector<int>& ids,
                  const attn::ForwardResult<float>& result) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) throw attn::io_error(directory.string() + ": cannot create the directory: " + error.message());
    const auto& attention = result.attention;
    std::vector<float> weights;
    for (attn::Index l = 0; l < attention.layers(); ++l)
        weights.insert(weights.end(), attention.layer(l).data(), attention.layer(l).data() + attention.layer(l).size());
    attn::write_npy(directory / "attention.npy",
                    {attention.layers(), attention.heads(), attention.positions(), attention.positions()},
                    weights.data());
    attn::write_npy(directory / "logits.npy", result.logits);
    nlohmann::json tokens;
    for (int id : ids) tokens["tokens"].push_back(store::token_text(tokenizer, id));
    tokens["ids"] = ids;
    std::ofstream out(directory / "tokens.json");
    if (!(out << tokens.dump() << "\n") || !out.flush())
        throw attn::io_error((directory / "tokens.json").string() + ": cannot write");
    std::cerr << "wrote " << directory.string() << "/{attention.npy,logits.npy,tokens.json}\n";
}

int run(const Arguments& args) {
    const auto model = attn::Model<float>::load(store::model_directory(args.model));
    const attn::Tokenizer& tokenizer = model.tokenizer();
    const attn::ModelSettings& settings = model.settings();
    const std::vector<int> ids =
        store::text_ids(model, args.text, args.ids, args.name, args.description.value_or(""), false);
    const long n = static_cast<long>(ids.size());
    const long position = args.position ? integer("--position", *args.position, 0, n - 1) : n - 1;
    const long top = args.top ? integer("--top", *args.top, 1, 1000) : 3;
    long only_layer = -1, only_head = -1;
    if (args.layer) {
        only_layer = integer("--layer", *args.layer, 1, long(settings.layers)) - 1;
        only_head = integer("--head", *args.head, 1, long(settings.heads)) - 1;
    }
    attn::ForwardOptions options;
    options.keep_attention = true;
    options.threads = args.threads ? int(integer("--threads", *args.threads, 0, 256)) : 1;
    const auto result = model.forward(ids, options);
    if (args.html) {
        attn::PageOptions page;
        page.title = args.name ? *args.name : args.text ? *args.text : std::to_string(n) + " token ids";
        page.selected_position = position;
        page.open_head = {std::max(only_layer, 0L), std::max(only_head, 0L)};
        store::write_page(*args.html, model, ids, result, page);
        std::cerr << "wrote " << *args.html << "\n";
    }
    if (args.npy) write_arrays(*args.npy, tokenizer, ids, result);

    if (args.json) {
        nlohmann::json out;
        for (int id : ids) out["tokens"].push_back(store::token_text(tokenizer, id));
        out["ids"] = ids;
        for (attn::Index i = 0; i < result.logits.rows(); ++i)
            out["logits"].push_back(std::vector<float>(result.logits.row(i).begin(), result.logits.row(i).end()));
        for (attn::Index l = 0; l < result.attention.layers(); ++l) {
            nlohmann::json layer = nlohmann::json::array();
            for (attn::Index h = 0; h < result.attention.heads(); ++h) {
                nlohmann::json rows = nlohmann::json::array();
                const auto w = result.attention.head(l, h);
                for (attn::Index i = 0; i < w.rows(); ++i)
                    rows.push_back(std::vector<float>(w.row(i).begin(), w.row(i).end()));
                layer.push_back(std::move(rows));
            }
            out["attention"].push_back(std::move(layer));
        }
        std::cout << out.dump() << "\n";
        return 0;
    }

    const std::size_t separator = store::separator_position(tokenizer, ids);
    const std::size_t current = static_cast<std::size_t>(position);
    std::cout << "layers: " << settings.layers << ", heads per layer: " << settings.heads
              << ", dimensions per head: " << settings.head_size << ", context: " << settings.longest << "\n";
    if (settings.architecture != attn::Architecture::store)
        std::cout << attn::architecture_name(settings.architecture) << " model, " << settings.key_value_heads
                  << " key/value heads, " << model.parameters() << " parameters, tokenizer: " << tokenizer.kind_name()
                  << "\n";
    std::cout << "tokens (" << n << "):";
    for (int id : ids) std::cout << " " << store::token_text(tokenizer, id);
    std::cout << "\nposition " << position << ": " << store::label(tokenizer, ids, current, current, separator) << "\n";

    const Eigen::RowVectorXf logits = result.logits.row(position);
    const Eigen::RowVectorXf probabilities = (logits.array() - logits.maxCoeff()).exp().matrix();
    const Eigen::RowVectorXf normalised = probabilities / probabilities.sum();
    std::cout << "next token:";
    const auto next = top_k(normalised, top);
    for (std::size_t k = 0; k < next.size(); ++k)
        std::cout << (k ? ", " : " ") << store::token_text(tokenizer, int(next[k])) << " "
                  << store::fixed(normalised(next[k]));
    std::cout << "\n";
    if (position + 1 < n)
        std::cout << "P(actual next token " << store::token_text(tokenizer, ids[current + 1])
                  << "): " << store::fixed(normalised(ids[current + 1])) << "\n";

    for (attn::Index l = 0; l < settings.layers; ++l)
        for (attn::Index h = 0; h < settings.heads; ++h) {
            if (only_layer >= 0 && (l != only_layer || h != only_head)) continue;
            const auto row = result.attention.head(l, h).row(position);
            std::cout << "layer " << l + 1 << ", head " << h + 1 << ":";
            const auto largest = top_k(row, top);
            for (std::size_t k = 0; k < largest.size(); ++k)
                std::cout << (k ? ", " : " ")
                          << store::label(tokenizer, ids, std::size_t(largest[k]), current, separator) << " "
                          << store::fixed(row(largest[k]));
            std::cout << "\n";
        }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments args = parse(argc, argv);
    try {
        return run(args);
    } catch (const attn::error& e) {
        std::cerr << "inspect: " << e.what() << "\n";
        return 1;
    }
}
