// attn's ids against a reference encoder's, line by line:
//   attn_tokenizer_reference gpt2 <corpus.jsonl> <reference ids> <encoder.json> <vocab.bpe>
//   attn_tokenizer_reference llama2 <corpus.jsonl> <reference ids> <tokenizer.json>
//   attn_tokenizer_reference gguf <corpus.jsonl> <reference ids> <file.gguf>
// (gguf: a GGUF file's tokenizer against llama.cpp's ids, tools/references/gguf_tokenizers.py;
// every line is compared and the count of identical ones printed, with the first mismatches. A
// corpus named *.bin holds texts as "<byte count>\n<bytes>\n", for bytes that are not UTF-8.)
// The corpus has one JSON string per line; the reference file one line of space-separated
// ids per corpus line. Also checks that decode gives each line back (byte-level: always;
// SentencePiece: lines without added tokens, less the beginning-of-text token). Prints the
// first mismatch (line number, text, both id lists) and exits 1; 0 when all agree.

#include <attn/text/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> read_lines(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw attn::io_error(std::string("cannot open ") + path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// Texts written "<byte count>\n<bytes>\n" one after another (any bytes: not UTF-8 too).
std::vector<std::string> read_texts(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw attn::io_error(std::string("cannot open ") + path);
    std::vector<std::string> texts;
    for (std::string count; std::getline(in, count);) {
        std::string text(std::stoul(count), '\0');
        in.read(&text[0], static_cast<std::streamsize>(text.size()));
        if (in.gcount() != static_cast<std::streamsize>(text.size()) || in.get() != '\n')
            throw attn::io_error(std::string(path) + ": a text is cut short");
        texts.push_back(std::move(text));
    }
    return texts;
}

std::string join(const std::vector<int>& ids) {
    std::ostringstream out;
    for (std::size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
    return out.str();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: attn_tokenizer_reference gpt2|llama2|gguf <corpus.jsonl> <reference ids> <files...>\n";
        return 2;
    }
    const std::string kind = argv[1];
    try {
        const attn::Tokenizer tokenizer = kind == "gguf" ? attn::Tokenizer::from_gguf(argv[4])
                                          : kind == "gpt2" && argc == 6
                                              ? attn::Tokenizer::from_gpt2_files(argv[4], argv[5])
                                              : attn::Tokenizer::from_tokenizer_json(argv[4]);
        const std::string corpus_path = argv[2];
        std::vector<std::string> corpus;
        if (corpus_path.size() > 4 && corpus_path.substr(corpus_path.size() - 4) == ".bin")
            corpus = read_texts(argv[2]);
        else
            for (const std::string& line : read_lines(argv[2]))
                if (!line.empty()) corpus.push_back(nlohmann::json::parse(line).get<std::string>());
        const std::vector<std::string> expected = read_lines(argv[3]);
        if (expected.size() != corpus.size()) {
            std::cerr << argv[3] << ": " << expected.size() << " lines of ids for " << corpus.size()
                      << " corpus lines\n";
            return 1;
        }
        if (kind == "gguf") {
            std::size_t identical = 0, shown = 0;
            for (std::size_t k = 0; k < corpus.size(); ++k) {
                const std::string ids = join(tokenizer.encode(corpus[k]));
                if (ids == expected[k]) {
                    ++identical;
                } else if (shown++ < 5) {
                    std::cerr << "line " << k + 1 << " of the corpus: " << nlohmann::json(corpus[k]).dump()
                              << "\n  attn: " << ids << "\n  llama.cpp: " << expected[k] << "\n";
                }
            }
            std::cout << argv[4] << ": " << corpus.size() << " lines, " << identical << " identical\n";
            return identical == corpus.size() ? 0 : 1;
        }
        std::size_t tokens = 0, decoded = 0;
        for (std::size_t k = 0; k < corpus.size(); ++k) {
            const std::vector<int> ids = tokenizer.encode(corpus[k]);
            tokens += ids.size();
            if (join(ids) != expected[k]) {
                std::cerr << "line " << k + 1 << " of the corpus: " << nlohmann::json(corpus[k]).dump()
                          << "\n  attn: " << join(ids) << "\n  reference: " << expected[k] << "\n";
                return 1;
            }
            std::vector<int> body = ids;
            if (const auto begin = tokenizer.begin_id(); begin && !body.empty() && body.front() == *begin)
                body.erase(body.begin());
            bool plain = true;
            for (int id : body) plain = plain && !(kind == "llama2" && id < 3);
            if (plain) {
                ++decoded;
                if (tokenizer.decode(body) != corpus[k]) {
                    std::cerr << "line " << k + 1
                              << ": decode(encode(line)) differs: " << nlohmann::json(tokenizer.decode(body)).dump()
                              << "\n";
                    return 1;
                }
            }
        }
        std::cout << kind << ": " << corpus.size() << " lines, " << tokens << " tokens: ids identical to the "
                  << "reference; decode(encode(line)) == line on " << decoded << " lines\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
