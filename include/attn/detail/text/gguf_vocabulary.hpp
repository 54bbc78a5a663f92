#pragma once
// The tokenizer llama.cpp keeps in a GGUF file's metadata (tokenizer.ggml.*), read into the
// same HfTokenizer (hf_tokenizer.hpp) a tokenizer.json gives, so that encoding and decoding
// are the same code; what differs is set here so that the ids are llama.cpp's
// (src/llama-vocab.cpp of the pinned tree) on the same file:
//
//   tokenizer.ggml.model   "gpt2": byte-level BPE (tokens, merges, pre);
//                          "llama": SentencePiece (tokens, scores, token types, <0xNN> bytes);
//                          absent, "none" or "no_vocab": no tokenizer (a file of ids only);
//                          anything else is refused, naming the value.
//   tokenizer.ggml.tokens  array of strings, the vocabulary (id = index); an empty string is
//                          named "[EMPTY_<id>]", as llama.cpp names it.
//   tokenizer.ggml.token_type  array of int32 (llama_token_type: 0 undefined, 1 normal,
//                          2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), optional.
//                          Unknown, control and user-defined tokens are cut out of the text
//                          before the rest is encoded (llama.cpp's special-token partition,
//                          with parse_special: the longest token first, each at every place
//                          it occurs; rstrip on them, of ASCII white space, when general.name
//                          says Phi-3, as llama.cpp sets it), as are the tokens llama.cpp makes
//                          control by their text
//                          (<|endoftext|>, <|im_end|>, </s>, ... : `made_control` below).
//   tokenizer.ggml.scores  array of float32, optional. SentencePiece merges two adjacent
//                          symbols when their concatenation is a token, the highest score
//                          first (the leftmost among equals): the same as merges ranked by
//                          score, which is how they are put into the HfTokenizer's MergeTable.
//   tokenizer.ggml.merges  array of strings "left right" (split at the first space after the
//                          first byte, as llama.cpp splits), rank = index; gpt2 only.
//   tokenizer.ggml.pre     the pre-tokenizer's name (gpt2 only), one of `known_pre_tokenizers`.
//   tokenizer.ggml.{bos,eos,unknown,padding,...}_token_id   uint ids; llama.cpp's defaults when
//                          absent (llama: bos 1, eos 2, unknown 0; gpt2: bos = eos = 11).
//   tokenizer.ggml.add_bos_token, add_eos_token, add_space_prefix   bools; defaults as
//                          llama.cpp's (llama: bos yes, prefix yes; gpt2: bos only for the
//                          Llama-3 pre-tokenizers).
//
// Refused before anything is sized from them, each a format_error naming the file and key:
// an element type that is not the key's (llama.cpp #26690 read token types out of bounds from
// an array it never checked was int32), arrays whose lengths differ from the vocabulary's, a
// vocabulary of 0 or more than largest_vocabulary tokens, a token longer than longest_token
// bytes (CVE-2025-49847: a huge token length overflowed llama.cpp's piece copy), a token given
// twice, a token type outside 0..6, a byte-type token that is not <0xNN> (llama.cpp #25969:
// <0x-1> wrote out of bounds), a NaN score, a merge that is not two tokens whose concatenation
// is a token, a special token id outside the vocabulary (llama.cpp only warns), add_bos/eos
// asking for a token that does not exist, an unknown pre-tokenizer.
//
// Text that is not UTF-8 is read as llama.cpp reads it (HfTokenizer::InvalidUtf8::as_llama_cpp:
// U+FFFD for what its decoder refuses, so decode does not give such bytes back).
//
// Known differences from llama.cpp, all outside text it tokenizes as Unicode: a 4-byte sequence past
// U+10FFFF makes llama.cpp's byte-level tokenize fail (its encoder throws), here it is U+FFFD;
// among special tokens of one length llama.cpp's order is
// unspecified (here the lower id first); a SentencePiece character that is not a token but whose
// concatenation with a neighbour is one can merge in llama.cpp (here it becomes its <0xNN> bytes);
// llama.cpp sets lstrip on <mask> for some embedding models by their names, not done here; it also
// accepts int32 scores, refused here as the converter writes float32.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/text/byte_level.hpp"
#include "attn/detail/text/hf_tokenizer.hpp"
#include "attn/detail/text/pretokenize.hpp"
#include "attn/detail/text/tokenizer_json.hpp"
#include "attn/detail/text/utf8.hpp"
#include "attn/error.hpp"
#include "attn/formats/gguf.hpp"

namespace attn::detail::gguf_vocabulary {

inline constexpr int largest_vocabulary = 1 << 21;
inline constexpr std::size_t longest_token = std::size_t(1) << 16;
inline constexpr int largest_merges = 1 << 24;
/// SentencePiece merges are derived from each token's splits into two tokens; a normal token
/// longer than this (no SentencePiece trainer writes one: their default limit is 16
/// characters) is never a merge's result, which bounds the derivation's work (each token's splits
/// hashed: length² bytes) by this many times the file's size.
inline constexpr std::size_t longest_merged_piece = 512;

/// llama_token_type (llama.h).
enum class TokenType : std::int32_t { undefined = 0, normal, unknown, control, user_defined, unused, byte };

/// The token lists' families of split patterns, as llama.cpp's llm_tokenizer_bpe sets them.
enum class PreFamily {
    gpt2,          // GPT-2's pattern
    llama3,        // Llama 3's, with ignore_merges and a beginning-of-text token by default
    llama3_plain,  // Llama 3's pattern alone (dbrx, smaug-bpe)
    qwen2,         // Qwen2's (one digit a piece)
    digits_gpt2,   // every digit alone, then GPT-2's pattern (SmolLM, StarCoder)
};

struct KnownPreTokenizer {
    std::string_view name;
    PreFamily family;
};

/// The tokenizer.ggml.pre values read, with the pattern each maps to in llama-vocab.cpp.
inline constexpr KnownPreTokenizer known_pre_tokenizers[] = {
    {"gpt-2", PreFamily::gpt2},
    {"phi-2", PreFamily::gpt2},
    {"mpt", PreFamily::gpt2},
    {"olmo", PreFamily::gpt2},
    {"jais", PreFamily::gpt2},
    {"gigachat", PreFamily::gpt2},
    {"a.x-4.0", PreFamily::gpt2},
    {"mellum", PreFamily::gpt2},
    {"exaone4", PreFamily::gpt2},
    {"trillion", PreFamily::gpt2},
    {"granite-docling", PreFamily::gpt2},
    {"llama3", PreFamily::llama3},
    {"llama-v3", PreFamily::llama3},
    {"llama-bpe", PreFamily::llama3},
    {"falcon3", PreFamily::llama3},
    {"falcon-h1", PreFamily::llama3},
    {"pixtral", PreFamily::llama3},
    {"midm-2.0", PreFamily::llama3},
    {"lfm2", PreFamily::llama3},
    {"jina-v5-nano", PreFamily::llama3},
    {"dbrx", PreFamily::llama3_plain},
    {"smaug-bpe", PreFamily::llama3_plain},
    {"qwen2", PreFamily::qwen2},
    {"deepseek-r1-qwen", PreFamily::qwen2},
    {"kormo", PreFamily::qwen2},
    {"f2llmv2", PreFamily::qwen2},
    {"megrez", PreFamily::qwen2},
    {"stablelm2", PreFamily::qwen2},
    {"smollm", PreFamily::digits_gpt2},
    {"starcoder", PreFamily::digits_gpt2},
    {"refact", PreFamily::digits_gpt2},
    {"command-r", PreFamily::digits_gpt2},
    {"codeshell", PreFamily::digits_gpt2},
    {"exaone", PreFamily::digits_gpt2},
    {"minerva-7b", PreFamily::digits_gpt2},
    {"mellum2", PreFamily::digits_gpt2},
};

/// Texts llama.cpp makes control tokens whatever their type (its end-of-generation,
/// end-of-turn and fill-in-the-middle lists), so that they are cut out of text as the others.
inline constexpr std::string_view made_control[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "[e~[",
};
/// The fill-in-the-middle texts, made control only when the file does not name that token.
struct FimTexts {
    std::string_view key;
    std::vector<std::string_view> texts;
};
inline const std::vector<FimTexts>& fim_texts() {
    static const std::vector<FimTexts> table = {
        {"tokenizer.ggml.fim_pre_token_id",
         {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
          "<\xEF\xBD\x9C"
          "fim\xE2\x96\x81"
          "begin\xEF\xBD\x9C>",
          "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
        {"tokenizer.ggml.fim_suf_token_id",
         {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
          "<\xEF\xBD\x9C"
          "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
          "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
        {"tokenizer.ggml.fim_mid_token_id",
         {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
          "<\xEF\xBD\x9C"
          "fim\xE2\x96\x81"
          "end\xEF\xBD\x9C>",
          "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
        {"tokenizer.ggml.fim_pad_token_id", {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
        {"tokenizer.ggml.fim_rep_token_id", {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
        {"tokenizer.ggml.fim_sep_token_id", {"<|file_sep|>"}},
    };
    return table;
}

/// Every tokenizer.ggml.*_token_id key llama.cpp reads: each, when present, must name a token.
inline constexpr std::string_view special_id_keys[] = {
    "tokenizer.ggml.bos_token_id",     "tokenizer.ggml.eos_token_id",     "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.eom_token_id",     "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.cls_token_id",     "tokenizer.ggml.mask_token_id",
    "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_mid_token_id",
    "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
    "tokenizer.ggml.prefix_token_id",  "tokenizer.ggml.suffix_token_id",  "tokenizer.ggml.middle_token_id",
};

/// "'gpt-2', 'phi-2', ..." for messages.
inline std::string known_pre_names() {
    std::string out;
    for (const KnownPreTokenizer& known : known_pre_tokenizers) {
        if (!out.empty()) out += ", ";
        out += "'";
        out += known.name;
        out += "'";
    }
    return out;
}

class Reader {
public:
    explicit Reader(const GgufFile& file) : file_(file) {}

    /// The file's tokenizer, or nothing when it has none (no model key, "none", "no_vocab").
    std::optional<HfTokenizer> read() {
        const GgufValue* model = file_.find("tokenizer.ggml.model");
        if (!model) return std::nullopt;
        const std::string& name = file_.string("tokenizer.ggml.model");
        if (name == "none" || name == "no_vocab") return std::nullopt;
        if (name == "gpt2")
            t_.model = HfTokenizer::Model::byte_level;
        else if (name == "llama")
            t_.model = HfTokenizer::Model::sentencepiece;
        else
            fail("tokenizer.ggml.model", " is '", name,
                 "', which attn does not read (it reads 'gpt2': byte-level BPE, and 'llama': SentencePiece)");
        t_.source = file_.source();
        t_.byte_ids.fill(-1);
        t_.invalid_utf8 = HfTokenizer::InvalidUtf8::as_llama_cpp;
        read_tokens();
        read_types();
        read_scores();
        if (t_.model == HfTokenizer::Model::byte_level)
            read_byte_level();
        else
            read_sentencepiece();
        read_specials();
        return std::move(t_);
    }

private:
    template <class... Parts>
    [[noreturn]] void fail(std::string_view key, const Parts&... parts) const {
        throw format_error(message(file_.source(), ": metadata key '", key, "'", parts...));
    }

    /// The array under `key`, checked to hold `element` values and `count` of them (when given)
    /// before any element is read.
    const GgufValue* array_of(std::string_view key, GgufType element, const char* plural, bool required,
                              std::optional<std::size_t> count = std::nullopt) const {
        const GgufValue* v = file_.find(key);
        if (!v) {
            if (required) fail(key, " is missing; a '", file_.string("tokenizer.ggml.model"), "' tokenizer needs it");
            return nullptr;
        }
        if (!v->is_array() || v->element_type() != element)
            fail(key, " is ", v->describe(), ", expected an array of ", plural);
        if (count && v->array_size() != *count)
            fail(key, " has ", v->array_size(), " elements, but tokenizer.ggml.tokens has ", *count,
                 " tokens: one each is needed");
        return v;
    }

    std::size_t size() const { return t_.display.size(); }

    void read_tokens() {
        const GgufValue& tokens = *array_of("tokenizer.ggml.tokens", GgufType::string, "strings", true);
        const std::uint64_t count = tokens.array_size();
        if (count == 0) fail("tokenizer.ggml.tokens", " is empty");
        if (count > static_cast<std::uint64_t>(largest_vocabulary))
            fail("tokenizer.ggml.tokens", " has ", count, " tokens, more than the ", largest_vocabulary, " attn reads");
        const auto n = static_cast<std::size_t>(count);
        t_.display.resize(n);
        t_.text.resize(n);
        t_.added.assign(n, 0);
        t_.display_ids.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::string_view token = tokens.string_at(i);
            if (token.size() > longest_token)
                fail("tokenizer.ggml.tokens", ": token ", i, " is ", token.size(), " bytes long, more than the ",
                     longest_token, " attn reads");
            std::string& display = t_.display[i];
            display = token.empty() ? message("[EMPTY_", i, "]") : std::string(token);
            const auto [where, added] = t_.display_ids.emplace(display, static_cast<int>(i));
            if (!added)
                fail("tokenizer.ggml.tokens", ": token ", i, " '", display, "' is token ", where->second, " already");
        }
    }

    void read_types() {
        types_.assign(size(), TokenType::normal);
        const GgufValue* types = array_of("tokenizer.ggml.token_type", GgufType::int32, "int32", false, size());
        if (!types) return;
        const std::vector<std::int64_t> values = types->integers();
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (values[i] < 0 || values[i] > static_cast<std::int64_t>(TokenType::byte))
                fail("tokenizer.ggml.token_type", "[", i, "] is ", values[i],
                     ", expected a llama_token_type 0..6 (undefined, normal, unknown, control, user-defined, unused, "
                     "byte)");
            types_[i] = static_cast<TokenType>(values[i]);
        }
        for (std::size_t i = 0; i < values.size(); ++i)
            if (types_[i] == TokenType::byte && tokenizer_json::byte_token_value(t_.display[i]) < 0)
                fail("tokenizer.ggml.token_type", "[", i, "] makes token ", i, " '", t_.display[i],
                     "' a byte token, which must be written <0xNN> with two upper-case hex digits");
    }

    void read_scores() {
        const GgufValue* scores = array_of("tokenizer.ggml.scores", GgufType::float32, "float32", false, size());
        scores_.assign(size(), 0.0);
        if (!scores) return;
        scores_ = scores->floatings();
        for (std::size_t i = 0; i < scores_.size(); ++i)
            if (std::isnan(scores_[i])) fail("tokenizer.ggml.scores", "[", i, "] is NaN");
    }

    bool is_special(std::size_t id) const {
        const TokenType type = types_[id];
        return type == TokenType::unknown || type == TokenType::control || type == TokenType::user_defined;
    }

    /// Cuts special tokens out of text: by type, and by llama.cpp's lists of texts.
    void add_special_tokens() {
        std::vector<char> special(size(), 0);
        for (std::size_t i = 0; i < size(); ++i) special[i] = is_special(i);
        const auto mark = [&](std::string_view text) {
            const auto found = t_.display_ids.find(std::string(text));
            if (found != t_.display_ids.end()) special[static_cast<std::size_t>(found->second)] = 1;
        };
        for (std::string_view text : made_control) mark(text);
        for (const FimTexts& fim : fim_texts())
            if (!file_.contains(fim.key))
                for (std::string_view text : fim.texts) mark(text);
        // llama.cpp sets rstrip by the model's name: for Phi-3 on every special token of the types
        // above (not those made control by text), and on </s>, but not on <unk>, <s>, <|endoftext|>.
        std::vector<char> rstrip(size(), 0);
        if (is_phi3()) {
            for (std::size_t i = 0; i < size(); ++i) rstrip[i] = is_special(i);
            const auto set = [&](const char* text, bool value) {
                const auto found = t_.display_ids.find(text);
                if (found == t_.display_ids.end())
                    fail("general.name", " names a Phi-3 model, whose vocabulary llama.cpp expects to have '", text,
                         "'; this one has not");
                rstrip[static_cast<std::size_t>(found->second)] = value;
            };
            set("</s>", true);
            for (const char* text : {"<unk>", "<s>", "<|endoftext|>"}) set(text, false);
        }
        for (std::size_t i = 0; i < size(); ++i)
            if (special[i])
                tokenizer_json::add_token(t_,
                                          AddedToken{t_.display[i], static_cast<int>(i),
                                                     types_[i] != TokenType::user_defined, false, rstrip[i] != 0},
                                          file_.source());
        // llama.cpp's partition: the longest special token first, over the whole text.
        t_.added_order = AddedOrder::longest_first;
        t_.added_by_length.resize(t_.added_tokens.size());
        for (std::size_t i = 0; i < t_.added_by_length.size(); ++i) t_.added_by_length[i] = i;
        std::stable_sort(t_.added_by_length.begin(), t_.added_by_length.end(), [&](std::size_t a, std::size_t b) {
            return t_.added_tokens[a].content.size() > t_.added_tokens[b].content.size();
        });
    }

    /// llama.cpp's test for Phi-3's token attributes: general.name, lower-cased, holds "phi-3" or "phi3".
    bool is_phi3() const {
        const GgufValue* name = file_.find("general.name");
        if (!name || name->type() != GgufType::string) return false;
        std::string lower = name->as_string();
        for (char& c : lower)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
    }

    void read_byte_level() {
        if (!file_.contains("tokenizer.ggml.pre"))
            fail("tokenizer.ggml.pre",
                 " is missing: llama.cpp then splits with its 'default' patterns, which attn "
                 "does not implement; attn reads ",
                 known_pre_names());
        const std::string& pre_name = file_.string("tokenizer.ggml.pre");
        const KnownPreTokenizer* known = nullptr;
        for (const KnownPreTokenizer& k : known_pre_tokenizers)
            if (k.name == pre_name) known = &k;
        if (!known)
            fail("tokenizer.ggml.pre", " is '", pre_name, "', which attn does not read; it reads ", known_pre_names());
        const auto split = [](SplitPattern pattern) {
            return PreTokenizerStep{PreTokenizerStep::Kind::split_pattern, pattern, CaseFold::ascii};
        };
        switch (known->family) {
            case PreFamily::gpt2:
                t_.steps = {split(SplitPattern::gpt2)};
                break;
            case PreFamily::llama3:
                t_.steps = {split(SplitPattern::llama3)};
                t_.ignore_merges = true;
                add_bos_ = true;
                break;
            case PreFamily::llama3_plain:
                t_.steps = {split(SplitPattern::llama3)};
                break;
            case PreFamily::qwen2:
                t_.steps = {split(SplitPattern::qwen2)};
                break;
            case PreFamily::digits_gpt2:
                t_.steps = {PreTokenizerStep{PreTokenizerStep::Kind::digits, SplitPattern::gpt2, CaseFold::ascii},
                            split(SplitPattern::gpt2)};
                break;
        }
        bos_ = eos_ = 11;  // llama.cpp's defaults for BPE vocabularies
        const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
        for (std::size_t i = 0; i < size(); ++i) {
            const std::string& display = t_.display[i];
            if (types_[i] == TokenType::byte) {
                t_.text[i] = std::string(1, static_cast<char>(tokenizer_json::byte_token_value(display)));
            } else if (const auto bytes = alphabet.decode(display)) {
                t_.text[i] = *bytes;
                t_.piece_ids.emplace(*bytes, static_cast<int>(i));
            } else {
                t_.text[i] = display;  // not in the byte alphabet: never a merge's result, written as it is
            }
        }
        const GgufValue& merges = *array_of("tokenizer.ggml.merges", GgufType::string, "strings", true);
        if (merges.array_size() > static_cast<std::uint64_t>(largest_merges))
            fail("tokenizer.ggml.merges", " has ", merges.array_size(), " merges, more than the ", largest_merges,
                 " attn reads");
        for (std::uint64_t k = 0; k < merges.array_size(); ++k) add_merge(merges.string_at(k), k);
        // A byte without a token of its own (vocabularies trained on UTF-8 lack 0xC0, 0xF5..):
        // llama.cpp drops it from the ids, and so does encode (its symbol stays −1).
        for (int byte = 0; byte < 256; ++byte)
            if (const auto found = t_.piece_ids.find(std::string(1, static_cast<char>(byte)));
                found != t_.piece_ids.end())
                t_.byte_ids[static_cast<std::size_t>(byte)] = found->second;
        add_special_tokens();
    }

    int id_of(std::string_view piece, std::uint64_t k, std::string_view merge, const char* part) const {
        const auto found = t_.display_ids.find(std::string(piece));
        if (found == t_.display_ids.end())
            fail("tokenizer.ggml.merges", "[", k, "] '", merge, "': the ", part, " '", piece, "' is not a token");
        return found->second;
    }

    void add_merge(std::string_view merge, std::uint64_t k) {
        // llama.cpp splits at the first space after the first byte (a merge of " " and "x"
        // cannot be written otherwise) and keeps a pair's first rank.
        const std::size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string_view::npos;
        if (space == std::string_view::npos)
            fail("tokenizer.ggml.merges", "[", k, "] is '", merge, "', expected 'left right'");
        const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
        const int left_id = id_of(left, k, merge, "left part");
        const int right_id = id_of(right, k, merge, "right part");
        const int result = id_of(std::string(left) + std::string(right), k, merge, "result");
        if (!t_.merges.find(left_id, right_id)) t_.merges.set(left_id, right_id, static_cast<int>(k), result);
    }

    void read_sentencepiece() {
        t_.byte_fallback = true;
        bos_ = 1;
        eos_ = 2;
        unknown_ = 0;
        add_bos_ = true;
        bool add_space_prefix = true;
        if (file_.contains("tokenizer.ggml.add_space_prefix"))
            add_space_prefix = file_.boolean("tokenizer.ggml.add_space_prefix");
        t_.prepend = add_space_prefix ? HfTokenizer::Prepend::always : HfTokenizer::Prepend::never;
        for (std::size_t i = 0; i < size(); ++i) {
            const std::string& display = t_.display[i];
            t_.piece_ids.emplace(display, static_cast<int>(i));
            if (types_[i] == TokenType::byte) {
                t_.text[i] = std::string(1, static_cast<char>(tokenizer_json::byte_token_value(display)));
                continue;
            }
            std::string& text = t_.text[i];
            for (std::size_t at = 0; at < display.size();) {
                if (display.compare(at, tokenizer_json::metaspace.size(), tokenizer_json::metaspace) == 0) {
                    text += ' ';
                    at += tokenizer_json::metaspace.size();
                } else {
                    text += display[at++];
                }
            }
        }
        // byte fallback: llama.cpp's byte_to_token looks the text <0xNN> up, whatever its type
        static constexpr char hex[] = "0123456789ABCDEF";
        for (int byte = 0; byte < 256; ++byte) {
            const std::string name = {'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>'};
            if (const auto found = t_.display_ids.find(name); found != t_.display_ids.end())
                t_.byte_ids[static_cast<std::size_t>(byte)] = found->second;
        }
        add_special_tokens();
        derive_merges();
    }

    /// SentencePiece's merges as a MergeTable: (left, right) → the token left + right, ranked by
    /// its score, highest first (equal scores share a rank, so the leftmost pair goes first).
    void derive_merges() {
        std::vector<double> distinct = scores_;
        std::sort(distinct.begin(), distinct.end(), [](double a, double b) { return a > b; });
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        const auto rank_of = [&](double score) {
            return static_cast<int>(
                std::lower_bound(distinct.begin(), distinct.end(), score, [](double a, double b) { return a > b; }) -
                distinct.begin());
        };
        std::unordered_map<std::string_view, int> ids;
        ids.reserve(size());
        for (std::size_t i = 0; i < size(); ++i) ids.emplace(t_.display[i], static_cast<int>(i));
        for (std::size_t i = 0; i < size(); ++i) {
            // Special tokens are cut out of the text first, so merging never meets them.
            if (t_.added[i]) continue;
            const std::string_view token = t_.display[i];
            if (token.size() > longest_merged_piece) continue;
            for (std::size_t split = utf8_length(token, 0); split < token.size(); split += utf8_length(token, split)) {
                const auto left = ids.find(token.substr(0, split));
                if (left == ids.end()) continue;
                const auto right = ids.find(token.substr(split));
                if (right == ids.end()) continue;
                t_.merges.set(left->second, right->second, rank_of(scores_[i]), static_cast<int>(i));
            }
        }
    }

    /// The length of the character at `at` as llama.cpp's unicode_len_utf8 reads its first byte.
    static std::size_t utf8_length(std::string_view text, std::size_t at) {
        const auto lead = static_cast<unsigned char>(text[at]);
        const std::size_t length = lead < 0x80 ? 1 : lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        return std::min(length, text.size() - at);
    }

    void read_specials() {
        for (std::string_view key : special_id_keys) {
            if (!file_.contains(key)) continue;
            const std::uint64_t id = file_.unsigned_integer(key);
            if (id >= size()) fail(key, " is ", id, ", not a token id: the vocabulary has ", size(), " tokens");
        }
        const auto id_or = [&](std::string_view key, int fallback) -> int {
            if (file_.contains(key)) return static_cast<int>(file_.unsigned_integer(key));
            return fallback >= 0 && static_cast<std::size_t>(fallback) < size() ? fallback : -1;
        };
        const int bos = id_or("tokenizer.ggml.bos_token_id", bos_);
        const int eos = id_or("tokenizer.ggml.eos_token_id", eos_);
        if (t_.model == HfTokenizer::Model::sentencepiece)
            t_.unknown_id = id_or("tokenizer.ggml.unknown_token_id", unknown_);
        bool add_bos = add_bos_, add_eos = false;
        if (file_.contains("tokenizer.ggml.add_bos_token")) add_bos = file_.boolean("tokenizer.ggml.add_bos_token");
        if (file_.contains("tokenizer.ggml.add_eos_token")) add_eos = file_.boolean("tokenizer.ggml.add_eos_token");
        if (add_bos) {
            if (bos < 0)
                fail("tokenizer.ggml.add_bos_token",
                     " is true, but the vocabulary has no beginning-of-text token "
                     "(tokenizer.ggml.bos_token_id)");
            t_.prefix_ids = {bos};
        }
        if (add_eos) {
            if (eos < 0)
                fail("tokenizer.ggml.add_eos_token",
                     " is true, but the vocabulary has no end-of-text token "
                     "(tokenizer.ggml.eos_token_id)");
            t_.suffix_ids = {eos};
        }
    }

    const GgufFile& file_;
    HfTokenizer t_;
    std::vector<TokenType> types_;
    std::vector<double> scores_;
    int bos_ = -1, eos_ = -1, unknown_ = -1;
    bool add_bos_ = false;
};

/// The tokenizer of a GGUF file (see the file comment), or nothing if the file has none.
inline std::optional<HfTokenizer> read_gguf_vocabulary(const GgufFile& file) {
    return Reader(file).read();
}

}  // namespace attn::detail::gguf_vocabulary
