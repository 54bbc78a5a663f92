// inspect: a model's next-token probabilities and every head's attention at one position of
// a text: a store product's, any text for a model with a tokenizer, or token ids.
//
//   inspect [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
//           [--position N] [--layer L] [--head H] [--top K] [--threads T] [--quiet]
//           [--json [--top-k K | --all-logits]] [--html FILE] [--npy DIR]
#include <attn/model/model.hpp>
#include <attn/view/npy.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "../cli.hpp"
#include "store_model.hpp"
#include "store_page.hpp"

namespace {

constexpr const char* usage =
    R"(usage: inspect [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
               [--position N] [--layer L] [--head H] [--top K] [--threads T] [--quiet]
               [--json [--top-k K | --all-logits]] [--html FILE] [--npy DIR]

Runs a model on a text and prints, at one position, the next-token probabilities and each
head's largest attention weights. For the store model's `<s> name <sep> description </s>`
they are labelled as the chapter does (current:, name:, description:, markers).

options:
  --model DIR         model directory: the store model (default: the shipped models/store)
                      or a Hugging Face checkpoint (config.json, model.safetensors), or a
                      .gguf file (with the tokenizer in its metadata, if it has one)
  --name TEXT         the store product's name
  --description TEXT  the store product's description (default: none)
  --text TEXT         any text, read by the model directory's tokenizer
  --file PATH         the text of a UTF-8 file instead ("-": standard input)
  --ids LIST          comma-separated token ids instead of a text
  --threads T         threads for the forward pass (default 1; 0: one per hardware thread)
  --position N        0-based position to read (printing: default the last; --json and --npy:
                      only this query position's logits and attention rows, default all)
  --layer L           only this layer's heads (1-based, as the chapter counts), in every output
  --head H            only this head of each layer (1-based), in every output
  --top K             how many tokens and weights to print (default 3)
  --json              one JSON object instead of the printout (keys in this order):
                        attention   selected layers × heads × positions × keys (every key)
                        ids, tokens the text's token ids and tokens
                        logits      with --all-logits: selected positions × vocabulary
                        selection   {"layers", "heads", "positions"}: the 0-based indices the
                                    attention and logits rows are of
                        top_logits  otherwise: {"k", "ids", "values"}, each selected positions × k,
                                    the k largest logits per position, largest first
                      numbers are float32 written as the shortest text that reads back to the
                      same float32
  --top-k K           with --json: how many logits per position (default 10)
  --all-logits        with --json: every logit (positions × vocabulary) instead of the top k
  --html FILE         also write an interactive page of every head's attention (opens
                      from disk, nothing fetched), at --position and on --layer/--head
  --npy DIR           also write float32 arrays, all logits included (the complete route):
                      DIR/attention.npy (layers, heads, positions, keys) and DIR/logits.npy
                      (positions, vocabulary), of the selected layers, heads and positions
                      as for --json, and DIR/tokens.json (tokens, ids, selection)
  --quiet             no progress lines (they appear only when stderr is a terminal)
  --help              show this help and exit

Outputs larger than 64 MiB are announced on stderr, with their size, before they are written.
)";

struct Arguments {
    std::optional<std::string> model, name, description, text, file, ids, position, layer, head, top, top_k, threads,
        html, npy;
    bool json = false, all_logits = false;
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
        else if (arg == "--file")
            value(a.file);
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
        else if (arg == "--top-k")
            value(a.top_k);
        else if (arg == "--html")
            value(a.html);
        else if (arg == "--npy")
            value(a.npy);
        else if (arg == "--json")
            a.json = true;
        else if (arg == "--all-logits")
            a.all_logits = true;
        else if (arg == "--quiet")
            store::quiet() = true;
        else
            fail_usage("unknown argument '" + arg + "'");
    }
    if (int(a.name.has_value()) + int(a.ids.has_value()) + int(a.text.has_value()) + int(a.file.has_value()) != 1)
        fail_usage("give one of --name, --text, --file and --ids");
    if (a.description && !a.name) fail_usage("--description goes with --name");
    if ((a.top_k || a.all_logits) && !a.json) fail_usage("--top-k and --all-logits go with --json");
    if (a.top_k && a.all_logits) fail_usage("give --top-k or --all-logits, not both");
    return a;
}

long integer(const std::string& flag, const std::string& text, long low, long high) {
    if (const std::optional<long long> value = examples::parse_whole_number(text, low, high)) return long(*value);
    fail_usage(flag + " needs an integer from " + std::to_string(low) + " to " + std::to_string(high) + ", got '" +
               text + "'");
}

/// The layers, heads and query positions --json and --npy write (0-based): each flag's one
/// index, or all of them.
struct Selection {
    std::vector<attn::Index> layers, heads, positions;

    std::size_t attention_count(attn::Index keys) const {
        return layers.size() * heads.size() * positions.size() * std::size_t(keys);
    }
    nlohmann::json to_json() const { return {{"layers", layers}, {"heads", heads}, {"positions", positions}}; }
};

std::vector<attn::Index> only_or_all(long only, attn::Index count) {
    if (only >= 0) return {attn::Index(only)};
    std::vector<attn::Index> all(static_cast<std::size_t>(count));
    std::iota(all.begin(), all.end(), attn::Index(0));
    return all;
}

/// The selected attention rows, contiguous: layers' × heads' × positions' × keys.
std::vector<float> selected_attention(const attn::ModelAttention<float>& attention, const Selection& selection) {
    const attn::Index keys = attention.positions();
    std::vector<float> out;
    out.reserve(selection.attention_count(keys));
    for (attn::Index l : selection.layers)
        for (attn::Index h : selection.heads)
            for (attn::Index i : selection.positions) {
                const float* row = attention.layer(l).data() + (h * attention.positions() + i) * keys;
                out.insert(out.end(), row, row + keys);
            }
    return out;
}

/// attention.npy, logits.npy and tokens.json in `directory`, created if missing.
void write_arrays(const std::filesystem::path& directory, const attn::Tokenizer& tokenizer, const std::vector<int>& ids,
                  const attn::ForwardResult<float>& result, const Selection& selection) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) throw attn::io_error(directory.string() + ": cannot create the directory: " + error.message());
    const attn::Index keys = result.attention.positions(), vocabulary = result.logits.cols();
    const std::size_t rows = selection.positions.size();
    const std::uintmax_t bytes = 4 * (selection.attention_count(keys) + rows * std::size_t(vocabulary));
    store::announce_size("inspect", bytes, "of .npy arrays to " + directory.string());
    const std::vector<float> weights = selected_attention(result.attention, selection);
    attn::write_npy(
        directory / "attention.npy",
        {attn::Index(selection.layers.size()), attn::Index(selection.heads.size()), attn::Index(rows), keys}, weights);
    attn::Matrix<float> logits(attn::Index(rows), vocabulary);
    for (std::size_t r = 0; r < rows; ++r) logits.row(attn::Index(r)) = result.logits.row(selection.positions[r]);
    attn::write_npy(directory / "logits.npy", logits);
    nlohmann::json tokens;
    for (int id : ids) tokens["tokens"].push_back(store::token_text(tokenizer, id));
    tokens["ids"] = ids;
    tokens["selection"] = selection.to_json();
    std::ofstream out(directory / "tokens.json");
    if (!(out << tokens.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n") || !out.flush())
        throw attn::io_error((directory / "tokens.json").string() + ": cannot write");
    std::cerr << "wrote " << directory.string() << "/{attention.npy,logits.npy,tokens.json}\n";
}

/// JSON written straight to an ostream in 1 MiB pieces: a real model's attention is far too
/// many numbers for a JSON tree in memory (nlohmann's holds 16 bytes and more per number).
class JsonStream {
public:
    explicit JsonStream(std::ostream& out) : out_(out) { buffer_.reserve(piece + 64); }
    ~JsonStream() { flush(); }
    JsonStream(const JsonStream&) = delete;
    JsonStream& operator=(const JsonStream&) = delete;

    JsonStream& raw(std::string_view text) {
        buffer_ += text;
        if (buffer_.size() >= piece) flush();
        return *this;
    }
    /// The shortest text that reads back to the same float32 ("0.1", "1.0", "1e-09"); JSON has
    /// no NaN or infinity, so those are null, as nlohmann writes them.
    JsonStream& number(float value) {
        char text[40];
        buffer_.append(text, format(value, text));
        if (buffer_.size() >= piece) flush();
        return *this;
    }
    /// Writes value's JSON text to `text` (40 bytes are enough); returns its length.
    static std::size_t format(float value, char* text) {
        if (!std::isfinite(value)) {
            std::memcpy(text, "null", 4);
            return 4;
        }
        const auto written = std::to_chars(text, text + 32, value);
        std::size_t length = std::size_t(written.ptr - text);
        if (std::string_view(text, length).find_first_of(".e") == std::string_view::npos) {
            std::memcpy(text + length, ".0", 2);  // a float, as nlohmann writes them
            length += 2;
        }
        return length;
    }
    template <class Numbers>
    JsonStream& numbers(const Numbers& values) {
        raw("[");
        bool first = true;
        for (const auto value : values) {
            if (!first) raw(",");
            first = false;
            if constexpr (std::is_floating_point_v<std::decay_t<decltype(value)>>)
                number(float(value));
            else
                raw(std::to_string(value));
        }
        return raw("]");
    }
    void flush() {
        out_.write(buffer_.data(), std::streamsize(buffer_.size()));
        buffer_.clear();
    }

private:
    static constexpr std::size_t piece = std::size_t(1) << 20;
    std::ostream& out_;
    std::string buffer_;
};

/// Indices of the k largest entries of a row, largest first, ties to the lower index.
template <class Row>
std::vector<attn::Index> largest(const Row& row, attn::Index k) {
    std::vector<attn::Index> order(static_cast<std::size_t>(row.size()));
    std::iota(order.begin(), order.end(), 0);
    const auto take = std::min<attn::Index>(k, row.size());
    std::partial_sort(order.begin(), order.begin() + take, order.end(),
                      [&](attn::Index a, attn::Index b) { return row(a) > row(b) || (row(a) == row(b) && a < b); });
    order.resize(static_cast<std::size_t>(take));
    return order;
}

/// inspect --json (see the usage for its keys).
void write_json(std::ostream& out, const attn::Tokenizer& tokenizer, const std::vector<int>& ids,
                const attn::ForwardResult<float>& result, const Selection& selection, long top_k, bool all_logits) {
    const attn::Index keys = result.attention.positions();
    const std::size_t rows = selection.positions.size();
    // The numbers' text, from every 64th weight and logit written as JsonStream writes them.
    const auto text_bytes = [](const float* values, std::size_t count) {
        if (count == 0) return 0.0;
        std::size_t sampled = 0, bytes = 0;
        for (std::size_t k = 0; k < count; k += 64, ++sampled) {
            char text[40];
            bytes += JsonStream::format(values[k], text) + 1;  // and a comma
        }
        return double(bytes) / double(sampled) * double(count);
    };
    double estimate =
        text_bytes(result.attention.layer(0).data(), std::size_t(keys * keys * result.attention.heads())) /
        double(keys * keys * result.attention.heads()) * double(selection.attention_count(keys));
    estimate += all_logits ? text_bytes(result.logits.data(), std::size_t(result.logits.size())) /
                                 double(result.logits.rows()) * double(rows)
                           : 16.0 * double(rows * std::size_t(top_k));
    store::announce_size("inspect", std::uintmax_t(estimate) + 64 * ids.size(),
                         "of JSON to standard output (estimated; --npy writes the same numbers in less)");
    nlohmann::json tokens = nlohmann::json::array();
    for (int id : ids) tokens.push_back(store::token_text(tokenizer, id));
    JsonStream json(out);
    json.raw("{\"attention\":[");
    for (std::size_t l = 0; l < selection.layers.size(); ++l) {
        json.raw(l ? ",[" : "[");
        for (std::size_t h = 0; h < selection.heads.size(); ++h) {
            json.raw(h ? ",[" : "[");
            const float* head = result.attention.layer(selection.layers[l]).data() + selection.heads[h] * keys * keys;
            for (std::size_t r = 0; r < rows; ++r) {
                if (r) json.raw(",");
                const float* row = head + selection.positions[r] * keys;
                json.numbers(std::vector<float>(row, row + keys));
            }
            json.raw("]");
        }
        json.raw("]");
    }
    json.raw("],\"ids\":").numbers(ids);
    if (all_logits) {
        json.raw(",\"logits\":[");
        for (std::size_t r = 0; r < rows; ++r) {
            if (r) json.raw(",");
            const auto logits = result.logits.row(selection.positions[r]);
            json.numbers(std::vector<float>(logits.begin(), logits.end()));
        }
        json.raw("]");
    }
    json.raw(",\"selection\":").raw(selection.to_json().dump());
    json.raw(",\"tokens\":").raw(tokens.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!all_logits) {
        std::vector<std::vector<attn::Index>> top_ids;
        for (attn::Index position : selection.positions) top_ids.push_back(largest(result.logits.row(position), top_k));
        json.raw(",\"top_logits\":{\"ids\":[");
        for (std::size_t r = 0; r < rows; ++r) json.raw(r ? "," : "").numbers(top_ids[r]);
        json.raw("],\"k\":").raw(std::to_string(top_k)).raw(",\"values\":[");
        for (std::size_t r = 0; r < rows; ++r) {
            std::vector<float> values;
            for (attn::Index id : top_ids[r]) values.push_back(result.logits(selection.positions[r], id));
            json.raw(r ? "," : "").numbers(values);
        }
        json.raw("]}");
    }
    json.raw("}\n");
}

int run(const Arguments& args) {
    const auto model = store::load_model<float>(store::model_directory(args.model));
    const attn::Tokenizer& tokenizer = model.tokenizer();
    const attn::ModelSettings& settings = model.settings();
    const std::vector<int> ids = store::text_ids(model, store::text_flag(args.text, args.file), args.ids, args.name,
                                                 args.description.value_or(""), false);
    const long n = static_cast<long>(ids.size());
    const long position = args.position ? integer("--position", *args.position, 0, n - 1) : n - 1;
    const long top = args.top ? integer("--top", *args.top, 1, 1000) : 3;
    const long top_k = args.top_k ? integer("--top-k", *args.top_k, 1, long(settings.vocabulary_size))
                                  : std::min(10L, long(settings.vocabulary_size));
    const long only_layer = args.layer ? integer("--layer", *args.layer, 1, long(settings.layers)) - 1 : -1;
    const long only_head = args.head ? integer("--head", *args.head, 1, long(settings.heads)) - 1 : -1;
    const Selection selection{only_or_all(only_layer, settings.layers), only_or_all(only_head, settings.heads),
                              only_or_all(args.position ? position : -1, n)};
    attn::ForwardOptions options;
    options.keep_attention = true;
    options.threads = args.threads ? int(integer("--threads", *args.threads, 0, 256)) : 1;
    const auto result = [&] {
        store::Ticker ticker("inspect: " + std::to_string(n) + " positions through " + std::to_string(settings.layers) +
                             " layers");
        return model.forward(ids, options);
    }();
    if (args.html) {
        attn::PageOptions page;
        page.title = args.name   ? *args.name
                     : args.text ? *args.text
                     : args.file ? *args.file
                                 : std::to_string(n) + " token ids";
        page.selected_position = position;
        page.open_head = {std::max(only_layer, 0L), std::max(only_head, 0L)};
        store::write_page(*args.html, model, ids, result, page, "inspect");
        std::cerr << "wrote " << *args.html << "\n";
    }
    if (args.npy) write_arrays(*args.npy, tokenizer, ids, result, selection);

    if (args.json) {
        write_json(std::cout, tokenizer, ids, result, selection, top_k, args.all_logits);
        if (!std::cout.flush()) throw attn::io_error("standard output: writing the JSON failed");
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
    const auto next = largest(normalised, top);
    for (std::size_t k = 0; k < next.size(); ++k)
        std::cout << (k ? ", " : " ") << store::token_text(tokenizer, int(next[k])) << " "
                  << store::fixed(normalised(next[k]));
    std::cout << "\n";
    if (position + 1 < n)
        std::cout << "P(actual next token " << store::token_text(tokenizer, ids[current + 1])
                  << "): " << store::fixed(normalised(ids[current + 1])) << "\n";

    for (attn::Index l = 0; l < settings.layers; ++l)
        for (attn::Index h = 0; h < settings.heads; ++h) {
            if ((only_layer >= 0 && l != only_layer) || (only_head >= 0 && h != only_head)) continue;
            const auto row = result.attention.head(l, h).row(position);
            std::cout << "layer " << l + 1 << ", head " << h + 1 << ":";
            const auto keys = largest(row, top);
            for (std::size_t k = 0; k < keys.size(); ++k)
                std::cout << (k ? ", " : " ") << store::label(tokenizer, ids, std::size_t(keys[k]), current, separator)
                          << " " << store::fixed(row(keys[k]));
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
