#pragma once
// Encoding and decoding for the Hugging Face BPE tokenizers that attn reads (the loaders in
// tokenizer_json.hpp fill an HfTokenizer; attn::Tokenizer holds one).
//
// encode(text):
//   1. added tokens: at each position the longest added token that starts there is cut out
//      (leftmost first) and becomes its id; lstrip / rstrip tokens also swallow the
//      white space before / after them. The sections between are encoded as follows, after
//      NFC (nfc.hpp) when the normalizer has it: so added tokens are matched in the text as
//      given, as Hugging Face does for added tokens with "normalized": false.
//   2. byte-level kind: the section is split by the pre-tokenizer steps (Digits, Split with
//      a known pattern, ByteLevel with or without GPT-2's pattern and prefix space); each
//      piece's bytes become their single-byte tokens, which are merged (bpe.hpp). Bytes that
//      are not valid UTF-8 are kept as bytes: decode gives them back.
//   3. SentencePiece kind: the section is normalised ("▁" prepended, " " → "▁") and taken
//      whole as one word of UTF-8 characters; a character without a token of its own becomes
//      its <0xNN> byte tokens (byte fallback; an invalid UTF-8 byte too) or the unknown
//      token; the characters are merged.
//   4. the post-processor's tokens (a beginning-of-text token, say) go around the ids, unless
//      add_special_tokens is false (Hugging Face's add_special_tokens=False).
// decode(ids) writes added tokens as their text, byte-level tokens as their bytes, and
// SentencePiece tokens with "▁" as " " and <0xNN> as the byte, less one leading space.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attn/detail/text/bpe.hpp"
#include "attn/detail/text/nfc.hpp"
#include "attn/detail/text/pretokenize.hpp"
#include "attn/detail/text/utf8.hpp"

namespace attn::detail {

/// One step of a byte-level pre-tokenizer, applied in order to each piece of the step before.
struct PreTokenizerStep {
    enum class Kind { split_pattern, digits, byte_level_prefix_space } kind = Kind::split_pattern;
    SplitPattern pattern = SplitPattern::gpt2;
    CaseFold fold = CaseFold::unicode;  // ascii for a GGUF file's tokenizer (llama.cpp's patterns)
};

/// How added tokens are found in the text: Hugging Face's leftmost-longest scan, or
/// llama.cpp's partition (each token in turn, longest first, cut out wherever it occurs in
/// what is left; GGUF files' tokenizers).
enum class AddedOrder { leftmost_longest, longest_first };

struct AddedToken {
    std::string content;
    int id = 0;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
};

struct HfTokenizer {
    enum class Model { byte_level, sentencepiece };
    /// When the SentencePiece normaliser prepends "▁" to a section.
    enum class Prepend { never, always, first_section };

    Model model = Model::byte_level;
    std::string source;  // the file(s) read, for messages

    std::vector<std::string> display;                  // id → the piece as the file writes it ("" for an unused id)
    std::vector<std::string> text;                     // id → what decode writes for it
    std::vector<char> added;                           // id → 1 for an added token
    std::unordered_map<std::string, int> display_ids;  // display → id
    // The model's vocabulary: byte-level pieces by the bytes they stand for, SentencePiece
    // pieces as written ("▁" for spaces).
    std::unordered_map<std::string, int> piece_ids;
    MergeTable merges;
    bool ignore_merges = false;       // a word that is a token is not merged
    std::array<int, 256> byte_ids{};  // byte-level: the single-byte token; SentencePiece: <0xNN> or −1

    bool nfc = false;  // the normalizer composes each section to Unicode NFC first

    std::vector<PreTokenizerStep> steps;  // byte-level

    Prepend prepend = Prepend::never;  // SentencePiece
    bool byte_fallback = false;
    int unknown_id = -1;
    bool fuse_unknown = false;

    std::vector<AddedToken> added_tokens;
    std::array<bool, 256> added_first_byte{};
    AddedOrder added_order = AddedOrder::leftmost_longest;
    std::vector<std::size_t> added_by_length;  // longest_first: indices of added_tokens, longest first

    std::vector<int> prefix_ids, suffix_ids;  // from the post-processor

    /// How text that is not valid UTF-8 is read: byte by byte (Hugging Face's kinds: a byte-level
    /// tokenizer encodes the bytes, so decode gives them back), or as llama.cpp reads it (a GGUF
    /// file's tokenizer): byte-level, each sequence its lax decoder refuses becomes U+FFFD and the
    /// rest is written again from the code points (an overlong form shortened); SentencePiece,
    /// each character as long as its first byte says, its bytes given as byte tokens when it is
    /// not a token.
    enum class InvalidUtf8 { keep_bytes, as_llama_cpp };
    InvalidUtf8 invalid_utf8 = InvalidUtf8::keep_bytes;

    int size() const { return static_cast<int>(display.size()); }

    void encode(std::string_view input, std::vector<int>& ids, bool add_special_tokens = true) const {
        if (add_special_tokens) ids.insert(ids.end(), prefix_ids.begin(), prefix_ids.end());
        Work work;
        if (added_order == AddedOrder::longest_first) {
            encode_partitioned(input, work, ids);
            if (add_special_tokens) ids.insert(ids.end(), suffix_ids.begin(), suffix_ids.end());
            return;
        }
        // Sections between added tokens, after lstrip / rstrip.
        std::size_t section_start = 0, position = 0;
        int section_index = 0;
        bool strip_next_start = false;
        const auto flush = [&](std::string_view section) {
            if (strip_next_start) section = section.substr(white_space_end(section));
            if (!section.empty()) encode_section(section, section_index, work, ids);
            ++section_index;
        };
        while (position < input.size()) {
            const AddedToken* match = added_first_byte[static_cast<unsigned char>(input[position])]
                                          ? longest_added(input, position)
                                          : nullptr;
            if (!match) {
                ++position;
                continue;
            }
            std::string_view before = input.substr(section_start, position - section_start);
            if (match->lstrip) before = before.substr(0, white_space_start(before));
            flush(before);
            ids.push_back(match->id);
            ++section_index;
            position += match->content.size();
            section_start = position;
            strip_next_start = match->rstrip;
        }
        flush(input.substr(section_start));
        if (add_special_tokens) ids.insert(ids.end(), suffix_ids.begin(), suffix_ids.end());
    }

    std::string decode_ids(const std::vector<int>& ids) const {
        std::string out;
        for (int id : ids) out += text[static_cast<std::size_t>(id)];
        if (model == Model::sentencepiece && prepend != Prepend::never && !out.empty() && out[0] == ' ')
            out.erase(0, 1);
        return out;
    }

private:
    struct Work {
        BpeWorkspace bpe;
        std::vector<int> symbols;
        std::string buffer;
        std::string normalized;  // a section in NFC, when it was not already
        std::string recoded;     // a section as llama.cpp reads bytes that are not UTF-8
    };

    /// llama.cpp's unicode_cpts_from_utf8, then unicode_cpt_to_utf8 of each code point: `text`
    /// itself when it is valid UTF-8 (the round trip is then the identity).
    static std::string_view as_llama_cpp_reads(std::string_view text, std::string& out) {
        if (!find_invalid_utf8(text).problem) return text;
        out.clear();
        static constexpr char replacement[] = "\xEF\xBF\xBD";
        for (std::size_t i = 0; i < text.size();) {
            const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
            const unsigned lead = byte(0);
            if (lead < 0x80) {
                out += text[i++];
                continue;
            }
            const std::size_t length = !(lead & 0x40)   ? 0
                                       : !(lead & 0x20) ? 2
                                       : !(lead & 0x10) ? 3
                                       : !(lead & 0x08) ? 4
                                                        : 0;
            bool valid = length != 0 && i + length <= text.size();
            for (std::size_t k = 1; valid && k < length; ++k) valid = (byte(k) & 0xC0) == 0x80;
            std::uint32_t code = 0;
            if (valid) {
                code = lead & (0xFFu >> (length + 1));
                for (std::size_t k = 1; k < length; ++k) code = (code << 6) | (byte(k) & 0x3F);
            }
            if (!valid || code > 0x10FFFF) {  // past U+10FFFF llama.cpp throws; U+FFFD here
                out += replacement;
                i += valid ? length : 1;
                continue;
            }
            if (code < 0x80) {
                out += static_cast<char>(code);
            } else if (code < 0x800) {
                out += static_cast<char>(0xC0 | (code >> 6));
                out += static_cast<char>(0x80 | (code & 0x3F));
            } else if (code < 0x10000) {
                out += static_cast<char>(0xE0 | (code >> 12));
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (code & 0x3F));
            } else {
                out += static_cast<char>(0xF0 | (code >> 18));
                out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (code & 0x3F));
            }
            i += length;
        }
        return out;
    }

    /// llama.cpp's unicode_len_utf8: a character's length from its first byte alone, cut at the end.
    static std::size_t llama_cpp_char_length(std::string_view text, std::size_t at) {
        const auto lead = static_cast<unsigned char>(text[at]);
        const std::size_t length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        return std::min(length, text.size() - at);
    }

    /// A piece of the input: text still to encode (token −1), or an added token's id.
    struct Fragment {
        std::size_t begin, length;
        int token;
    };

    /// C's isspace in the "C" locale, which llama.cpp's lstrip / rstrip use.
    static bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

    /// llama.cpp's tokenizer_st_partition: for each added token, longest first, every
    /// occurrence in each text fragment left (leftmost first, not overlapping) is cut out; an
    /// lstrip / rstrip token takes the ASCII white space before / after it in that fragment.
    void encode_partitioned(std::string_view input, Work& work, std::vector<int>& ids) const {
        std::vector<Fragment> fragments, next;
        if (!input.empty()) fragments.push_back({0, input.size(), -1});
        for (std::size_t index : added_by_length) {
            const AddedToken& token = added_tokens[index];
            next.clear();
            for (const Fragment& f : fragments) {
                if (f.token >= 0) {
                    next.push_back(f);
                    continue;
                }
                std::size_t start = f.begin;
                const std::size_t end = f.begin + f.length;
                for (std::size_t match; (match = input.substr(0, end).find(token.content, start)) != npos;) {
                    std::size_t left_end = match;
                    if (token.lstrip)
                        while (left_end > start && is_c_space(input[left_end - 1])) --left_end;
                    if (left_end > start) next.push_back({start, left_end - start, -1});
                    next.push_back({match, token.content.size(), token.id});
                    start = match + token.content.size();
                    if (token.rstrip)
                        while (start < end && is_c_space(input[start])) ++start;
                }
                if (start < end) next.push_back({start, end - start, -1});
            }
            fragments.swap(next);
        }
        int section_index = 0;
        for (const Fragment& f : fragments) {
            if (f.token >= 0)
                ids.push_back(f.token);
            else
                encode_section(input.substr(f.begin, f.length), section_index, work, ids);
            ++section_index;
        }
    }
    static constexpr std::size_t npos = std::string_view::npos;

    const AddedToken* longest_added(std::string_view input, std::size_t position) const {
        const AddedToken* best = nullptr;
        const std::string_view rest = input.substr(position);
        for (const AddedToken& token : added_tokens)
            if ((!best || token.content.size() > best->content.size()) &&
                rest.substr(0, token.content.size()) == token.content)
                best = &token;
        return best;
    }

    static std::size_t white_space_end(std::string_view s) {
        std::size_t i = 0;
        while (i < s.size()) {
            const TextChar c = text_char(s, i);
            if (c.cls != CharClass::space) break;
            i += c.length;
        }
        return i;
    }

    static std::size_t white_space_start(std::string_view s) {
        std::size_t start = 0;
        for (std::size_t i = 0; i < s.size();) {
            const TextChar c = text_char(s, i);
            i += c.length;
            if (c.cls != CharClass::space) start = i;
        }
        return start;
    }

    void encode_section(std::string_view section, int section_index, Work& work, std::vector<int>& ids) const {
        if (nfc) section = to_nfc(section, work.normalized);
        if (model == Model::byte_level) {
            if (invalid_utf8 == InvalidUtf8::as_llama_cpp) section = as_llama_cpp_reads(section, work.recoded);
            pre_tokenize(section, 0, work, ids);
        } else {
            encode_sentencepiece(section, section_index, work, ids);
        }
    }

    void pre_tokenize(std::string_view piece, std::size_t step, Work& work, std::vector<int>& ids) const {
        if (piece.empty()) return;
        if (step == steps.size()) return encode_byte_level(piece, work, ids);
        const auto next = [&](std::string_view p) { pre_tokenize(p, step + 1, work, ids); };
        switch (steps[step].kind) {
            case PreTokenizerStep::Kind::split_pattern:
                return split_pattern(piece, steps[step].pattern, next, steps[step].fold);
            case PreTokenizerStep::Kind::digits:
                return split_digits(piece, next);
            case PreTokenizerStep::Kind::byte_level_prefix_space:
                if (piece.front() == ' ') return next(piece);
                std::string prefixed = " ";
                prefixed += piece;
                return next(prefixed);
        }
    }

    void encode_byte_level(std::string_view piece, Work& work, std::vector<int>& ids) const {
        if (ignore_merges) {
            work.buffer.assign(piece);
            if (const auto found = piece_ids.find(work.buffer); found != piece_ids.end()) {
                ids.push_back(found->second);
                return;
            }
        }
        work.symbols.clear();
        for (char byte : piece) work.symbols.push_back(byte_ids[static_cast<unsigned char>(byte)]);
        bpe_merge(work.symbols, merges, work.bpe);
        // A byte without a token (−1: only in a GGUF vocabulary; a tokenizer.json must have all
        // 256) is dropped, as llama.cpp drops it.
        for (int symbol : work.symbols)
            if (symbol >= 0) ids.push_back(symbol);
    }

    void encode_sentencepiece(std::string_view section, int section_index, Work& work, std::vector<int>& ids) const {
        std::string& normal = work.buffer;
        normal.clear();
        if (prepend == Prepend::always || (prepend == Prepend::first_section && section_index == 0)) normal += "\u2581";
        for (char c : section) {
            if (c == ' ')
                normal += "\u2581";
            else
                normal += c;
        }
        if (ignore_merges)
            if (const auto found = piece_ids.find(normal); found != piece_ids.end()) {
                ids.push_back(found->second);
                return;
            }
        // Symbols: token ids; −1 for the unknown token, −2 − b for the byte token <0xNN> of
        // byte b (negative ids take part in no merge).
        work.symbols.clear();
        std::string character;
        for (std::size_t i = 0; i < normal.size();) {
            const std::size_t length = invalid_utf8 == InvalidUtf8::as_llama_cpp ? llama_cpp_char_length(normal, i)
                                                                                 : text_char(normal, i).length;
            character.assign(normal, i, length);
            i += length;
            if (const auto found = piece_ids.find(character); found != piece_ids.end()) {
                work.symbols.push_back(found->second);
                continue;
            }
            bool bytes_known = byte_fallback;
            for (char byte : character) bytes_known = bytes_known && byte_ids[static_cast<unsigned char>(byte)] >= 0;
            if (bytes_known) {
                for (char byte : character) work.symbols.push_back(-2 - static_cast<unsigned char>(byte));
            } else if (!(fuse_unknown && !work.symbols.empty() && work.symbols.back() == -1)) {
                work.symbols.push_back(-1);
            }
        }
        bpe_merge(work.symbols, merges, work.bpe);
        for (int symbol : work.symbols) {
            if (symbol >= 0)
                ids.push_back(symbol);
            else if (symbol == -1) {
                if (unknown_id >= 0) ids.push_back(unknown_id);
            } else {
                ids.push_back(byte_ids[static_cast<std::size_t>(-2 - symbol)]);
            }
        }
    }
};

}  // namespace attn::detail
