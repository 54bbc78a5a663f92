// tokenize: the ids and tokens a model directory's (or GGUF file's) tokenizer gives a text,
// without loading the model's weights; or, with --decode, the text of token ids.
//
//   tokenize [--model DIR|FILE.json|FILE.gguf] [--text TEXT | --file PATH | --decode 1,2,3] [--no-special] [--json]
//   [--quiet]
#include <attn/text/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "store_model.hpp"

namespace {

constexpr const char* usage =
    R"(usage: tokenize [--model DIR|FILE] [--text TEXT | --file PATH | --decode 1,2,3] [--no-special]
                [--json] [--quiet]

Prints the token ids a model directory's tokenizer gives a text, and each token as the
vocabulary writes it ("Ġthe", "▁the", "table</w>"), without reading the model's weights. With
--decode, prints the text of token ids instead. The text is --text, the file --file names, or
standard input when neither is given; it must be UTF-8.

Output: a line "ids (N): 1,2,3" (ready for --ids of the other commands), then one line per
token: its position, its id and the token, separated by tabs, with control characters
written as \xNN. --json prints {"ids": [...], "tokens": [...]} (--decode: {"text": "..."}).

options:
  --model DIR|FILE  a model directory (default: the shipped models/store), or a tokenizer file:
                    tokenizer.json, or the directory's tokenizer files as from_directory finds them,
                    or a .gguf file: the tokenizer in its metadata (llama.cpp's ids for the file;
                    only its header is read, not its tensors)
  --text TEXT       the text to encode
  --file PATH       read the text from PATH ("-": standard input)
  --no-special      leave out the tokens the tokenizer adds around every text (a beginning-of-
                    text token, say): Hugging Face's add_special_tokens=False. Special tokens
                    written in the text are still recognised. The store model adds none.
  --decode LIST     comma-separated token ids to turn back into text
  --json            one JSON object instead of the lines
  --quiet           accepted for symmetry with the other commands (tokenize shows no progress)
  --help            show this help and exit
)";

struct Arguments {
    std::optional<std::string> model, text, file, decode;
    bool add_special_tokens = true, json = false;
};

Arguments parse(int argc, char** argv) {
    Arguments a;
    store::CommandLine line("tokenize", usage, argc, argv);
    while (line.next()) {
        if (line.is("--model"))
            a.model = line.value();
        else if (line.is("--text"))
            a.text = line.value();
        else if (line.is("--file"))
            a.file = line.value();
        else if (line.is("--decode"))
            a.decode = line.value();
        else if (line.is("--no-special"))
            a.add_special_tokens = false;
        else if (line.is("--json"))
            a.json = true;
        else if (line.is("--quiet"))
            store::quiet() = true;
        else
            line.unknown();
    }
    if (int(a.text.has_value()) + int(a.file.has_value()) + int(a.decode.has_value()) > 1)
        line.fail("give at most one of --text, --file and --decode");
    if (a.decode && !a.add_special_tokens) line.fail("--no-special goes with a text, not --decode");
    return a;
}

/// The tokenizer of --model: a tokenizer.json or GGUF file, or a directory's tokenizer files.
attn::Tokenizer load_tokenizer(const std::filesystem::path& path) {
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error)) {
        if (path.extension() == ".gguf") {
            attn::Tokenizer tokenizer = attn::Tokenizer::from_gguf(path);
            if (tokenizer.kind() == attn::Tokenizer::Kind::none)
                throw attn::argument_error(path.string() +
                                           ": the GGUF file has no tokenizer (tokenizer.ggml.model is absent or "
                                           "'none')");
            return tokenizer;
        }
        if (path.extension() != ".json")
            throw attn::argument_error(path.string() +
                                       ": --model takes a directory, a tokenizer.json file or a .gguf file, not "
                                       "this file");
        return attn::Tokenizer::from_tokenizer_json(path);
    }
    if (!std::filesystem::exists(path, error))
        throw attn::io_error(path.string() + ": no such model directory or tokenizer file");
    attn::Tokenizer tokenizer = attn::Tokenizer::from_directory(path);
    if (tokenizer.kind() == attn::Tokenizer::Kind::none)
        throw attn::argument_error(path.string() +
                                   ": no tokenizer files (tokenizer.json, vocab.json + merges.txt, encoder.json + "
                                   "vocab.bpe or vocabulary.txt + merges.txt)");
    return tokenizer;
}

/// A token for one line of output: bytes below 0x20 and 0x7F as \xNN, so a token that is a
/// newline or a tab cannot break the line or the columns.
std::string printable(const std::string& token) {
    std::string out;
    for (const char c : token) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", unsigned(byte));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out;
}

void run(const Arguments& args) {
    const attn::Tokenizer tokenizer = load_tokenizer(store::model_directory(args.model));
    if (args.decode) {
        const std::vector<int> ids = store::parse_ids(*args.decode, tokenizer.size(), "--decode");
        const std::string text = tokenizer.decode(ids);
        if (args.json)
            std::cout << nlohmann::json{{"text", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << "\n";
        else
            std::cout << text << "\n";
        return;
    }
    const std::optional<std::string> given = store::text_flag(args.text, args.file);
    const std::string text = given ? *given : store::text_flag(std::nullopt, std::string("-")).value();
    const std::vector<int> ids = tokenizer.encode(text, attn::EncodeOptions{args.add_special_tokens});
    if (args.json) {
        nlohmann::json out{{"ids", ids}, {"tokens", nlohmann::json::array()}};
        for (int id : ids) out["tokens"].push_back(tokenizer.token(id));
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return;
    }
    std::string line = "ids (" + std::to_string(ids.size()) + "): ";
    for (std::size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
    std::cout << line << "\n";
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::cout << i << "\t" << ids[i] << "\t" << printable(tokenizer.token(ids[i])) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments arguments = parse(argc, argv);
    return store::report_errors("tokenize", [&] { run(arguments); });
}
