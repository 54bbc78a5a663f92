#pragma once
// attn::Tokenizer: one type for the tokenizers attn reads (Tokenizer::Kind):
//   store          the store model's own BPE (below; matches tools/common/tokenizer.py id for id);
//   byte_level     GPT-2-style byte-level BPE: vocab.json + merges.txt, OpenAI's
//                  encoder.json + vocab.bpe, or a tokenizer.json with a ByteLevel
//                  pre-tokenizer (GPT-2, SmolLM, Qwen2's and Llama-3's split patterns);
//   sentencepiece  a tokenizer.json with SentencePiece-style BPE ("▁" for spaces, <0xNN>
//                  byte fallback: Llama-2, TinyLlama);
//   none           a model directory without tokenizer files, or a GGUF file without a
//                  tokenizer: encode throws.
// A GGUF file's tokenizer (from_gguf: tokenizer.ggml.model 'gpt2' is byte_level, 'llama'
// sentencepiece) is read into the same representation and gives llama.cpp's ids for the file
// (detail/text/gguf_vocabulary.hpp).
// from_directory picks by the files present. The Hugging Face kinds are described in
// detail/text/hf_tokenizer.hpp (encoding) and detail/text/tokenizer_json.hpp (what is read, what is
// refused). Text that is not valid UTF-8: the byte-level kinds encode its bytes (decode gives
// them back exactly), the SentencePiece kind encodes each invalid byte as its <0xNN> token,
// and the store kind refuses it (argument_error); a GGUF file's tokenizer reads it as llama.cpp
// does (U+FFFD for what llama.cpp's decoder refuses), to give llama.cpp's ids. A tokenizer.json whose normalizer is NFC
// (Qwen2's) composes the text between added tokens to Unicode NFC (detail/text/nfc.hpp) before
// pre-tokenization, so "e\u0301" encodes as "\u00e9" does; invalid bytes stay in place.
//
// The store model's files (UTF-8, "\n" line ends, as tools/common/tokenizer.py writes them):
//   vocabulary.txt  one token per line, line k (from 0) is id k; ids 0..3 are the
//                   specials <s>, <sep>, </s>, <unk>;
//   merges.txt      "#version: attn-bpe 1", then one merge "left right" per line,
//                   rank 0 first.
// Loading is strict and throws attn::format_error naming the file and the line for:
// an empty vocabulary, missing specials at ids 0..3, duplicate tokens, empty lines,
// invalid UTF-8, a missing or wrong merges header, a merge line that is not exactly
// two non-empty parts separated by one space, a merge whose result is not in the
// vocabulary, and lines ending in "\r" (Windows line ends: Python would keep the
// "\r" inside the token, so they are refused rather than silently read
// differently). A missing final "\n" is accepted. A merge listed twice keeps its
// first rank, as in Python. A file that cannot be read throws attn::io_error.
//
// Encoding:
//   1. the text must be valid UTF-8 (attn::argument_error naming the byte position);
//   2. ASCII lower-casing only (A-Z → a-z);
//   3. split on ASCII whitespace (space, \t, \n, \r, \f, \v); inside a chunk, each
//      character of Python's string.punctuation is a word of its own, maximal runs
//      of other code points are words: "stool, 24in." → stool , 24in .
//   4. a word is one symbol per code point, "</w>" glued to the last: t a b l e</w>;
//   5. repeatedly take the adjacent pair with the lowest merge rank and merge all its
//      non-overlapping occurrences left to right, until no adjacent pair is a merge;
//   6. each symbol → its id, or <unk> (one per symbol) if it is not in the vocabulary.
// decode joins the tokens, turns "</w>" into a space, writes specials as " <s> ",
// then collapses runs of spaces and trims both ends (Python's decode): for text
// without unknown characters, decode(encode(text)) is the lower-cased words joined
// by single spaces.
//
// A Tokenizer is immutable after loading; all const methods may be called from
// several threads at once.

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/text/gguf_vocabulary.hpp"
#include "attn/detail/text/hf_tokenizer.hpp"
#include "attn/detail/text/tokenizer_json.hpp"
#include "attn/detail/text/utf8.hpp"
#include "attn/error.hpp"

namespace attn {

/// How Tokenizer::encode treats the tokens a tokenizer adds by itself.
struct EncodeOptions {
    /// Whether the post-processor's tokens go around the ids (a beginning-of-text token, say):
    /// Hugging Face's add_special_tokens, true by default as there. Special tokens written in
    /// the text itself ("<|endoftext|>") are recognised either way, as Hugging Face does. The
    /// store kind adds no tokens of its own (attn::store::product_ids adds the markers), so
    /// this changes nothing for it.
    bool add_special_tokens = true;
};

/// Why `text` is not valid UTF-8 and where ("a continuation byte without a lead byte at byte 3
/// of 10"), or an empty string when it is valid: for a message before text reaches a tokenizer.
inline std::string invalid_utf8_message(std::string_view text) {
    const detail::Utf8Problem bad = detail::find_invalid_utf8(text);
    if (!bad.problem) return {};
    return detail::message(bad.problem, " at byte ", bad.position, " of ", text.size());
}

class Tokenizer {
public:
    /// No tokenizer (kind none): size() is 0, and encode throws argument_error.
    Tokenizer() = default;

    enum class Kind { none, store, byte_level, sentencepiece };

    static constexpr std::string_view merges_header = "#version: attn-bpe 1";
    static constexpr std::string_view end_of_word = "</w>";
    static constexpr std::string_view specials[4] = {"<s>", "<sep>", "</s>", "<unk>"};

    /// Loads vocabulary.txt and merges.txt (see the file comment for the checks).
    static Tokenizer load(const std::filesystem::path& vocabulary_path, const std::filesystem::path& merges_path) {
        return from_strings(read_file(vocabulary_path), read_file(merges_path), vocabulary_path.string(),
                            merges_path.string());
    }

    /// Builds a tokenizer from the two files' contents; the names are used in messages.
    static Tokenizer from_strings(std::string_view vocabulary_text, std::string_view merges_text,
                                  std::string vocabulary_name = "vocabulary.txt",
                                  std::string merges_name = "merges.txt") {
        Tokenizer t;
        t.kind_ = Kind::store;
        t.source_ = detail::message(vocabulary_name, " + ", merges_name);
        t.read_vocabulary(vocabulary_text, vocabulary_name);
        t.read_merges(merges_text, merges_name, vocabulary_name);
        return t;
    }

    /// The tokenizer of a model directory, by the files present: tokenizer.json; else
    /// vocab.json + merges.txt; else encoder.json + vocab.bpe; else the store's
    /// vocabulary.txt + merges.txt; else none (size() == 0, encode throws).
    static Tokenizer from_directory(const std::filesystem::path& directory) {
        std::error_code ignored;
        if (!std::filesystem::is_directory(directory, ignored))
            throw io_error(detail::message("Tokenizer::from_directory: '", directory.string(), "' is not a directory"));
        const auto has = [&](const char* name) { return std::filesystem::exists(directory / name, ignored); };
        if (has("tokenizer.json")) return from_tokenizer_json(directory / "tokenizer.json");
        if (has("vocab.json") && has("merges.txt"))
            return from_gpt2_files(directory / "vocab.json", directory / "merges.txt");
        if (has("encoder.json") && has("vocab.bpe"))
            return from_gpt2_files(directory / "encoder.json", directory / "vocab.bpe");
        if (has("vocabulary.txt") && has("merges.txt"))
            return load(directory / "vocabulary.txt", directory / "merges.txt");
        Tokenizer none;
        none.kind_ = Kind::none;
        none.source_ = directory.string();
        return none;
    }

    /// A Hugging Face tokenizer.json (BPE; see detail/text/tokenizer_json.hpp for what is read).
    static Tokenizer from_tokenizer_json(const std::filesystem::path& path) {
        return from_tokenizer_json_text(read_file(path), path.string());
    }

    /// A tokenizer.json's contents; `name` is used in messages.
    static Tokenizer from_tokenizer_json_text(std::string_view contents, const std::string& name = "tokenizer.json") {
        return from_hf(detail::tokenizer_json::read_tokenizer_json(contents, name));
    }

    /// GPT-2's vocab.json + merges.txt, or OpenAI's encoder.json + vocab.bpe.
    static Tokenizer from_gpt2_files(const std::filesystem::path& vocabulary_json,
                                     const std::filesystem::path& merges) {
        return from_hf(detail::tokenizer_json::read_gpt2_files(read_file(vocabulary_json), read_file(merges),
                                                               vocabulary_json.string(), merges.string()));
    }

    /// The tokenizer a GGUF file keeps in its metadata (tokenizer.ggml.*): 'gpt2' (byte-level
    /// BPE with the split pattern tokenizer.ggml.pre names) or 'llama' (SentencePiece with
    /// byte fallback), read so that encode gives llama.cpp's ids for the file (llama_tokenize
    /// with parse_special; add_special is EncodeOptions::add_special_tokens). Kind none when
    /// the file has no tokenizer (no tokenizer.ggml.model, or 'none'). format_error naming the
    /// file and key for a malformed or unsupported one (detail/text/gguf_vocabulary.hpp lists
    /// what is read and refused).
    static Tokenizer from_gguf(const GgufFile& file) {
        std::optional<detail::HfTokenizer> hf = detail::gguf_vocabulary::read_gguf_vocabulary(file);
        if (hf) return from_hf(std::move(*hf));
        Tokenizer none;
        none.kind_ = Kind::none;
        none.source_ = file.source();
        none.gguf_ = true;
        return none;
    }

    /// A GGUF file's tokenizer (from_gguf), the file's header read with GgufFile::open.
    static Tokenizer from_gguf(const std::filesystem::path& path) { return from_gguf(GgufFile::open(path)); }

    Kind kind() const { return kind_; }

    /// "none", "store BPE", "byte-level BPE" or "SentencePiece-style BPE".
    const char* kind_name() const {
        switch (kind_) {
            case Kind::none:
                return "none";
            case Kind::store:
                return "store BPE";
            case Kind::byte_level:
                return "byte-level BPE";
            case Kind::sentencepiece:
                return "SentencePiece-style BPE";
        }
        return "?";
    }

    /// The file(s) the tokenizer was read from (the directory for kind none).
    const std::string& source() const { return source_; }

    /// The token encode puts first (a beginning-of-text token the post-processor adds), if any.
    std::optional<int> begin_id() const {
        if (kind_ == Kind::store) return start_id();
        if (hf_ && !hf_->prefix_ids.empty()) return hf_->prefix_ids.front();
        return std::nullopt;
    }

    /// Number of tokens; ids are 0 .. size() − 1.
    int size() const {
        if (hf_) return hf_->size();
        return static_cast<int>(vocabulary_.size());
    }
    /// Number of merges (distinct pairs).
    int merge_count() const { return static_cast<int>(merges_.size()); }

    int start_id() const { return 0; }
    int separator_id() const { return 1; }
    int end_id() const { return 2; }
    int unknown_id() const { return 3; }

    /// The token of `id` as its vocabulary writes it ("Ġthe", "▁the", "<0x0A>", "table</w>");
    /// argument_error naming the id and the size if out of range.
    const std::string& token(int id) const {
        check_id("Tokenizer::token", id);
        if (hf_) return hf_->display[static_cast<std::size_t>(id)];
        return vocabulary_[static_cast<std::size_t>(id)];
    }

    /// The id of `token` (as token(id) writes it), or nothing.
    std::optional<int> find(std::string_view token) const {
        if (hf_) {
            const auto found = hf_->display_ids.find(std::string(token));
            if (found == hf_->display_ids.end()) return std::nullopt;
            return found->second;
        }
        const auto found = symbols_.find(std::string(token));
        if (found == symbols_.end() || found->second >= size()) return std::nullopt;
        return found->second;
    }

    /// The id of `token`; argument_error if it is not in the vocabulary.
    int id(std::string_view token) const {
        if (const auto found = find(token)) return *found;
        throw argument_error(
            detail::message("Tokenizer::id: token '", token, "' is not in the vocabulary (", size(), " tokens)"));
    }

    /// The normalised words of `text` (steps 1–3): "Stool, 24in." → stool , 24in .
    static std::vector<std::string> words(std::string_view text) {
        std::vector<std::string> out;
        for_each_word(text, "Tokenizer::words", [&](std::string_view w) { out.emplace_back(w); });
        return out;
    }

    /// The symbols of one word after the merges (steps 4–5), e.g. "tables" → tab le s</w>.
    /// The word is taken as it is: no lower-casing or splitting.
    std::vector<std::string> pieces(std::string_view word) const {
        check_utf8("Tokenizer::pieces", word);
        std::vector<std::string> out;
        if (word.empty()) return out;
        std::vector<Symbol> symbols = merged_symbols(word);
        for (const Symbol& s : symbols)
            out.push_back(s.id >= 0 ? symbol_text_[static_cast<std::size_t>(s.id)] : s.text);
        return out;
    }

    /// Ids of `text`: for the Hugging Face kinds with the post-processor's tokens (a
    /// beginning-of-text token, say) unless options.add_special_tokens is false; argument_error
    /// for kind none.
    std::vector<int> encode(std::string_view text, const EncodeOptions& options = {}) const {
        std::vector<int> ids;
        if (hf_) {
            hf_->encode(text, ids, options.add_special_tokens);
            return ids;
        }
        if (kind_ == Kind::none && gguf_)
            throw argument_error(detail::message("Tokenizer::encode: the GGUF file '", source_,
                                                 "' has no tokenizer (tokenizer.ggml.model is absent or 'none'); give "
                                                 "token ids instead of text"));
        if (kind_ == Kind::none)
            throw argument_error(detail::message("Tokenizer::encode: the model directory '", source_,
                                                 "' has no tokenizer (tokenizer.json, vocab.json + merges.txt, "
                                                 "encoder.json + vocab.bpe or vocabulary.txt + merges.txt); give "
                                                 "token ids instead of text"));
        encode_into(text, "Tokenizer::encode", ids);
        return ids;
    }

    /// Text of `ids`; argument_error for an id out of range. Byte-level kinds: the bytes of the
    /// tokens, added tokens as their text (decode(encode(text)) == text when no
    /// post-processor token is added). SentencePiece: "▁" → " ", <0xNN> → the byte, less one
    /// leading space. Store: see the file comment.
    std::string decode(const std::vector<int>& ids) const {
        if (hf_) {
            for (int id : ids) check_id("Tokenizer::decode", id);
            return hf_->decode_ids(ids);
        }
        std::string joined;
        for (int id : ids) {
            check_id("Tokenizer::decode", id);
            const std::string& t = vocabulary_[static_cast<std::size_t>(id)];
            if (id < 4) {
                joined += ' ';
                joined += t;
                joined += ' ';
                continue;
            }
            std::size_t from = 0;
            for (std::size_t at; (at = t.find(end_of_word, from)) != std::string::npos;
                 from = at + end_of_word.size()) {
                joined.append(t, from, at - from);
                joined += ' ';
            }
            joined.append(t, from, std::string::npos);
        }
        std::string out;  // collapse runs of ' ' and trim both ends
        for (std::size_t i = 0; i < joined.size();) {
            if (joined[i] == ' ') {
                ++i;
                continue;
            }
            std::size_t j = joined.find(' ', i);
            if (j == std::string::npos) j = joined.size();
            if (!out.empty()) out += ' ';
            out.append(joined, i, j - i);
            i = j;
        }
        return out;
    }

private:
    static Tokenizer from_hf(detail::HfTokenizer hf) {
        Tokenizer t;
        t.kind_ = hf.model == detail::HfTokenizer::Model::byte_level ? Kind::byte_level : Kind::sentencepiece;
        t.source_ = hf.source;
        t.hf_ = std::make_shared<const detail::HfTokenizer>(std::move(hf));
        return t;
    }

    /// A symbol while encoding: its id in symbols_ (vocabulary tokens, then merge
    /// parts that are not tokens), or −1 with its text when it is in neither (such a
    /// symbol takes part in no merge and becomes <unk>).
    struct Symbol {
        int id;
        std::string text;
    };

    static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
    static bool is_punctuation(char c) {
        return std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~").find(c) != std::string_view::npos;
    }

    static void check_utf8(const char* function, std::string_view text) {
        const auto bad = detail::find_invalid_utf8(text);
        if (bad.problem)
            throw argument_error(detail::message(function, ": text is not valid UTF-8: ", bad.problem, " at byte ",
                                                 bad.position, " of ", text.size()));
    }

    /// Calls f(word) for each normalised word of text.
    template <class F>
    static void for_each_word(std::string_view text, const char* function, F&& f) {
        check_utf8(function, text);
        std::string lowered(text);
        for (char& c : lowered)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        // ASCII bytes never occur inside a multi-byte UTF-8 sequence, so byte tests suffice.
        std::size_t start = 0;
        const std::string_view s(lowered);
        for (std::size_t i = 0; i < s.size(); ++i) {
            const char c = s[i];
            if (is_space(c) || is_punctuation(c)) {
                if (i > start) f(s.substr(start, i - start));
                if (!is_space(c)) f(s.substr(i, 1));
                start = i + 1;
            }
        }
        if (s.size() > start) f(s.substr(start));
    }

    int lookup(const std::string& text) const {
        const auto found = symbols_.find(text);
        return found == symbols_.end() ? -1 : found->second;
    }

    static std::uint64_t pair_key(int left, int right) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
    }

    /// Steps 4–5 for one non-empty, valid UTF-8 word.
    std::vector<Symbol> merged_symbols(std::string_view word) const {
        std::vector<Symbol> symbols;
        std::string text;
        for (std::size_t i = 0; i < word.size();) {
            const std::size_t length = detail::utf8_step(word, i).length;
            text.assign(word.substr(i, length));
            i += length;
            if (i == word.size()) text += end_of_word;
            const int id = lookup(text);
            symbols.push_back({id, id < 0 ? text : std::string()});
        }
        while (symbols.size() > 1) {
            const Merge* best = nullptr;
            int best_left = -1, best_right = -1;
            for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
                if (symbols[i].id < 0 || symbols[i + 1].id < 0) continue;
                const auto found = merges_.find(pair_key(symbols[i].id, symbols[i + 1].id));
                if (found != merges_.end() && (!best || found->second.rank < best->rank)) {
                    best = &found->second;
                    best_left = symbols[i].id;
                    best_right = symbols[i + 1].id;
                }
            }
            if (!best) break;
            std::vector<Symbol> next;
            next.reserve(symbols.size());
            for (std::size_t i = 0; i < symbols.size();) {
                if (i + 1 < symbols.size() && symbols[i].id == best_left && symbols[i + 1].id == best_right) {
                    next.push_back({best->result, std::string()});
                    i += 2;
                } else {
                    next.push_back(std::move(symbols[i]));
                    i += 1;
                }
            }
            symbols = std::move(next);
        }
        return symbols;
    }

    void encode_into(std::string_view text, const char* function, std::vector<int>& ids) const {
        for_each_word(text, function, [&](std::string_view word) {
            for (const Symbol& s : merged_symbols(word))
                ids.push_back(s.id >= 0 && s.id < size() ? s.id : unknown_id());
        });
    }

    void check_id(const char* function, int id) const {
        if (id < 0 || id >= size())
            throw argument_error(
                detail::message(function, ": id ", id, " is out of range [0, ", size(), ") of the vocabulary"));
    }

    static std::string read_file(const std::filesystem::path& path) {
        std::error_code ignored;
        if (std::filesystem::is_directory(path, ignored))
            throw io_error(detail::message("Tokenizer::load: '", path.string(), "' is a directory, not a file"));
        std::ifstream in(path, std::ios::binary);
        if (!in) throw io_error(detail::message("Tokenizer::load: cannot open '", path.string(), "'"));
        std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (in.bad()) throw io_error(detail::message("Tokenizer::load: cannot read '", path.string(), "'"));
        return contents;
    }

    /// The lines of a file split on "\n" (a final "\n" ends the last line rather
    /// than starting an empty one), each checked for UTF-8 and "\r".
    static std::vector<std::string_view> lines(std::string_view text, const std::string& file) {
        std::vector<std::string_view> out;
        std::size_t start = 0;
        while (start < text.size()) {
            std::size_t end = text.find('\n', start);
            if (end == std::string_view::npos) end = text.size();
            out.push_back(text.substr(start, end - start));
            start = end + 1;
        }
        for (std::size_t k = 0; k < out.size(); ++k) {
            const auto bad = detail::find_invalid_utf8(out[k]);
            if (bad.problem)
                throw format_error(detail::message(file, ":", k + 1, ": not valid UTF-8: ", bad.problem, " at byte ",
                                                   bad.position + 1, " of the line"));
            if (!out[k].empty() && out[k].back() == '\r')
                throw format_error(detail::message(file, ":", k + 1,
                                                   ": line ends with \"\\r\" (Windows line end); the tokenizer "
                                                   "files use \"\\n\" only"));
        }
        return out;
    }

    void read_vocabulary(std::string_view text, const std::string& file) {
        const auto tokens = lines(text, file);
        if (tokens.empty()) throw format_error(detail::message(file, ": empty vocabulary"));
        if (tokens.size() > static_cast<std::size_t>(INT_MAX / 2))
            throw format_error(detail::message(file, ": ", tokens.size(), " tokens is too many"));
        for (std::size_t k = 0; k < tokens.size(); ++k) {
            const std::string_view t = tokens[k];
            if (t.empty()) throw format_error(detail::message(file, ":", k + 1, ": empty line (an empty token)"));
            if (k < 4 && t != specials[k])
                throw format_error(detail::message(file, ":", k + 1, ": expected the special token '", specials[k],
                                                   "' (id ", k, "), got '", t, "'"));
            const auto [where, added] = symbols_.emplace(std::string(t), static_cast<int>(k));
            if (!added)
                throw format_error(detail::message(file, ":", k + 1, ": duplicate token '", t, "' (first at line ",
                                                   where->second + 1, ")"));
            vocabulary_.emplace_back(t);
        }
        if (tokens.size() < 4)
            throw format_error(detail::message(file, ": ", tokens.size(),
                                               " tokens, expected at least the 4 special tokens <s>, <sep>, </s>, "
                                               "<unk>"));
        symbol_text_ = vocabulary_;
    }

    int add_symbol(std::string_view text) {
        const auto [where, added] = symbols_.emplace(std::string(text), static_cast<int>(symbol_text_.size()));
        if (added) symbol_text_.emplace_back(text);
        return where->second;
    }

    void read_merges(std::string_view text, const std::string& file, const std::string& vocabulary_file) {
        const auto all = lines(text, file);
        if (all.empty() || all[0] != merges_header)
            throw format_error(
                detail::message(file, ":1: expected the header '", merges_header, "', got ",
                                all.empty() ? std::string("an empty file") : detail::message("'", all[0], "'")));
        if (all.size() > static_cast<std::size_t>(INT_MAX / 4))
            throw format_error(detail::message(file, ": ", all.size(), " merges is too many"));
        for (std::size_t k = 1; k < all.size(); ++k) {
            const std::string_view line = all[k];
            const std::size_t space = line.find(' ');
            if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
                line.find(' ', space + 1) != std::string_view::npos)
                throw format_error(detail::message(file, ":", k + 1,
                                                   ": expected 'left right' (two non-empty parts separated by one "
                                                   "space), got '",
                                                   line, "'"));
            const std::string_view left = line.substr(0, space), right = line.substr(space + 1);
            const std::string merged = std::string(left) + std::string(right);
            const auto result = symbols_.find(merged);
            if (result == symbols_.end() || result->second >= size())
                throw format_error(detail::message(file, ":", k + 1, ": the result '", merged, "' of merging '", left,
                                                   "' and '", right, "' is not in ", vocabulary_file));
            const int result_id = result->second;
            const int left_id = add_symbol(left);
            const int right_id = add_symbol(right);
            // A pair listed twice keeps its first (lowest) rank, as tools/common/tokenizer.py.
            merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int>(k - 1), result_id});
        }
    }

    struct Merge {
        int rank;
        int result;
    };

    Kind kind_ = Kind::none;
    bool gguf_ = false;  // kind none: a GGUF file without a tokenizer (for encode's message)
    std::string source_;
    std::shared_ptr<const detail::HfTokenizer> hf_;    // the Hugging Face kinds; immutable, shared by copies
    std::vector<std::string> vocabulary_;              // id → token
    std::vector<std::string> symbol_text_;             // symbol id → text (vocabulary, then other merge parts)
    std::unordered_map<std::string, int> symbols_;     // text → symbol id
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left, right) symbol ids → rank and result
};

}  // namespace attn
