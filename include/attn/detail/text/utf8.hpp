#pragma once
// Strict UTF-8 decoding shared by the safetensors reader and the tokenizer, and encoding.
//
// Accepts exactly what Python's bytes.decode("utf-8") accepts: no overlong forms,
// no surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequences.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attn::detail {

/// One decoded code point, or the reason the bytes at that position are invalid.
struct Utf8Step {
    char32_t code_point = 0;
    std::size_t length = 0;         ///< bytes consumed; 0 when invalid
    const char* problem = nullptr;  ///< why the sequence is invalid, or nullptr
};

/// Decodes the code point starting at text[position] (position < text.size()).
inline Utf8Step utf8_step(std::string_view text, std::size_t position) {
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
    const std::uint8_t lead = byte(position);
    if (lead < 0x80) return {lead, 1, nullptr};
    std::size_t length = 0;
    char32_t value = 0;
    char32_t smallest = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
        value = lead & 0x1Fu;
        smallest = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        value = lead & 0x0Fu;
        smallest = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        value = lead & 0x07u;
        smallest = 0x10000;
    } else if (lead >= 0x80 && lead <= 0xBF) {
        return {0, 0, "unexpected continuation byte"};
    } else {
        return {0, 0, "byte that never occurs in UTF-8"};  // C0, C1, F5..FF
    }
    if (text.size() - position < length) return {0, 0, "truncated multi-byte sequence"};
    for (std::size_t i = 1; i < length; ++i) {
        const std::uint8_t next = byte(position + i);
        if ((next & 0xC0u) != 0x80u) return {0, 0, "truncated multi-byte sequence"};
        value = (value << 6) | (next & 0x3Fu);
    }
    if (value < smallest) return {0, 0, "overlong encoding"};
    if (value >= 0xD800 && value <= 0xDFFF) return {0, 0, "encoded surrogate"};
    if (value > 0x10FFFF) return {0, 0, "code point above U+10FFFF"};
    return {value, length, nullptr};
}

/// Position and reason of the first invalid byte; problem == nullptr when text is valid.
struct Utf8Problem {
    std::size_t position = 0;
    const char* problem = nullptr;
};

inline Utf8Problem find_invalid_utf8(std::string_view text) {
    std::size_t position = 0;
    while (position < text.size()) {
        const Utf8Step step = utf8_step(text, position);
        if (step.problem) return {position, step.problem};
        position += step.length;
    }
    return {};
}

/// Appends the UTF-8 of a Unicode scalar value (code_point <= U+10FFFF, not a surrogate).
inline void append_utf8(std::string& out, char32_t code_point) {
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
}

}  // namespace attn::detail
