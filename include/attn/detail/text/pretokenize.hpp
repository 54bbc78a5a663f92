#pragma once
// The pre-tokenizer split patterns of Hugging Face byte-level tokenizers, matched by hand
// (no regex engine): each function calls emit(piece) for consecutive pieces that cover the
// text exactly, as the pattern's regex (leftmost-first alternation, greedy, backtracking)
// would cut it.
//
//   gpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2   as llama3 with \p{N} (one digit) for \p{N}{1,3}
//
// \s is the White_Space property, \p{L} and \p{N} the general categories (unicode_tables.hpp).
// (?i:...) folds case as Unicode does: 's also matches 'S and 'ſ (U+017F, whose case fold
// is s), unless the caller asks for CaseFold::ascii: llama.cpp writes the group as
// (?:'[sS]|'[tT]|...), so 'ſ is no contraction in a GGUF file's tokenizer. Bytes that are not valid UTF-8 are taken one
// at a time as characters in none of the classes (like punctuation), so any byte string splits and the pieces still
// cover it.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn/detail/text/unicode_tables.hpp"
#include "attn/detail/text/utf8.hpp"

namespace attn::detail {

enum class CharClass : std::uint8_t { other, letter, number, space };

template <std::size_t N>
bool in_ranges(const CodeRange (&table)[N], char32_t code) {
    std::size_t low = 0, high = N;
    while (low < high) {
        const std::size_t middle = (low + high) / 2;
        if (table[middle].last < code)
            low = middle + 1;
        else
            high = middle;
    }
    return low < N && table[low].first <= code;
}

inline CharClass char_class(char32_t code) {
    if (code < 0x80) {
        if ((code >= 'a' && code <= 'z') || (code >= 'A' && code <= 'Z')) return CharClass::letter;
        if (code >= '0' && code <= '9') return CharClass::number;
        if (code == ' ' || (code >= 0x09 && code <= 0x0D)) return CharClass::space;
        return CharClass::other;
    }
    if (in_ranges(unicode_letters, code)) return CharClass::letter;
    if (in_ranges(unicode_numbers, code)) return CharClass::number;
    if (in_ranges(unicode_white_space, code)) return CharClass::space;
    return CharClass::other;
}

/// One character of a text: a code point, or one byte that is not valid UTF-8 (code
/// invalid_code_point, class other).
struct TextChar {
    char32_t code = 0;
    std::size_t length = 0;
    CharClass cls = CharClass::other;
};

inline constexpr char32_t invalid_code_point = 0xFFFFFFFF;

/// The character at text[position] (position < text.size()).
inline TextChar text_char(std::string_view text, std::size_t position) {
    const auto lead = static_cast<unsigned char>(text[position]);
    if (lead < 0x80) return {lead, 1, char_class(lead)};
    const Utf8Step step = utf8_step(text, position);
    if (step.problem) return {invalid_code_point, 1, CharClass::other};
    return {step.code_point, step.length, char_class(step.code_point)};
}

enum class SplitPattern { gpt2, llama3, qwen2 };

/// How llama3's and qwen2's case-insensitive contractions fold case: as Hugging Face's regex
/// does (Unicode: 'ſ is 's), or as llama.cpp's rewritten pattern does (ASCII letters only).
enum class CaseFold { unicode, ascii };

namespace pretokenize {

inline bool is_newline(char32_t code) {
    return code == '\r' || code == '\n';
}

/// End of the run of characters of class `cls` from `position`, at most `most` characters.
inline std::size_t run_end(std::string_view text, std::size_t position, CharClass cls,
                           std::size_t most = static_cast<std::size_t>(-1)) {
    std::size_t count = 0;
    while (position < text.size() && count < most) {
        const TextChar c = text_char(text, position);
        if (c.cls != cls) break;
        position += c.length;
        ++count;
    }
    return position;
}

/// End of a contraction ('s 't 're 've 'm 'll 'd) at `position` (text[position] == '\''), or 0.
inline std::size_t contraction_end(std::string_view text, std::size_t position, bool fold_case,
                                   bool fold_long_s = true) {
    const std::string_view rest = text.substr(position + 1);
    const auto lower = [&](std::size_t i) -> char {
        if (i >= rest.size()) return '\0';
        const char c = rest[i];
        return fold_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    const char first = lower(0);
    if (first == 's' || first == 't' || first == 'm' || first == 'd') return position + 2;
    if ((first == 'r' || first == 'v') && lower(1) == 'e') return position + 3;
    if (first == 'l' && lower(1) == 'l') return position + 3;
    // U+017F LATIN SMALL LETTER LONG S folds to s
    if (fold_case && fold_long_s && rest.size() >= 2 && rest[0] == '\xC5' && rest[1] == '\xBF') return position + 3;
    return 0;
}

/// The whitespace alternatives from `position` (a space character): \s*[\r\n]+ when
/// `newline_rule`, then \s+(?!\S), then \s+.
inline std::size_t whitespace_end(std::string_view text, std::size_t position, bool newline_rule) {
    std::size_t end = position, last_start = position, after_newline = 0, count = 0;
    while (end < text.size()) {
        const TextChar c = text_char(text, end);
        if (c.cls != CharClass::space) break;
        last_start = end;
        end += c.length;
        ++count;
        if (is_newline(c.code)) after_newline = end;
    }
    if (newline_rule && after_newline) return after_newline;
    if (end == text.size() || count == 1) return end;
    return last_start;  // \s+(?!\S) gives back the space before the next non-space
}

/// End of the piece starting at `position` under GPT-2's pattern.
inline std::size_t gpt2_piece_end(std::string_view text, std::size_t position) {
    const TextChar c = text_char(text, position);
    if (c.code == '\'')
        if (const std::size_t end = contraction_end(text, position, false)) return end;
    std::size_t start = position;
    CharClass cls = c.cls;
    if (c.code == ' ' && position + 1 < text.size()) {
        const TextChar next = text_char(text, position + 1);
        if (next.cls != CharClass::space) {
            start = position + 1;
            cls = next.cls;
        }
    }
    if (cls == CharClass::space) return whitespace_end(text, position, false);
    return run_end(text, start, cls);
}

/// End of the piece starting at `position` under Llama-3's (most_digits 3) or Qwen2's
/// (most_digits 1) pattern.
inline std::size_t llama3_piece_end(std::string_view text, std::size_t position, std::size_t most_digits,
                                    CaseFold fold = CaseFold::unicode) {
    const TextChar c = text_char(text, position);
    if (c.code == '\'')
        if (const std::size_t end = contraction_end(text, position, true, fold == CaseFold::unicode)) return end;
    if (c.cls == CharClass::letter) return run_end(text, position, CharClass::letter);
    const std::size_t after = position + c.length;
    if (c.cls != CharClass::number && !is_newline(c.code) && after < text.size() &&
        text_char(text, after).cls == CharClass::letter)
        return run_end(text, after, CharClass::letter);
    if (c.cls == CharClass::number) return run_end(text, position, CharClass::number, most_digits);
    std::size_t start = position;
    if (c.code == ' ' && after < text.size() && text_char(text, after).cls == CharClass::other) start = after;
    if (start != position || c.cls == CharClass::other) {
        std::size_t end = run_end(text, start, CharClass::other);
        while (end < text.size() && (text[end] == '\r' || text[end] == '\n')) ++end;
        return end;
    }
    return whitespace_end(text, position, true);
}

}  // namespace pretokenize

/// Calls emit(piece) for each piece of `text` under `pattern`.
template <class Emit>
void split_pattern(std::string_view text, SplitPattern pattern, Emit&& emit, CaseFold fold = CaseFold::unicode) {
    std::size_t position = 0;
    while (position < text.size()) {
        std::size_t end = 0;
        switch (pattern) {
            case SplitPattern::gpt2:
                end = pretokenize::gpt2_piece_end(text, position);
                break;
            case SplitPattern::llama3:
                end = pretokenize::llama3_piece_end(text, position, 3, fold);
                break;
            case SplitPattern::qwen2:
                end = pretokenize::llama3_piece_end(text, position, 1, fold);
                break;
        }
        emit(text.substr(position, end - position));
        position = end;
    }
}

/// Calls emit(piece) for each piece of `text` with every \p{N} character on its own and the
/// runs between them whole (the Digits pre-tokenizer with individual_digits).
template <class Emit>
void split_digits(std::string_view text, Emit&& emit) {
    std::size_t start = 0, position = 0;
    while (position < text.size()) {
        const TextChar c = text_char(text, position);
        if (c.cls == CharClass::number) {
            if (position > start) emit(text.substr(start, position - start));
            emit(text.substr(position, c.length));
            start = position + c.length;
        }
        position += c.length;
    }
    if (position > start) emit(text.substr(start, position - start));
}

}  // namespace attn::detail
