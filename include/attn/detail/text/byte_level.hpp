#pragma once
// GPT-2's byte-level alphabet: each of the 256 byte values is written as one printable code
// point, so that a vocabulary of strings covers any byte string. Bytes that are printable
// in Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68, in
// increasing order, are U+0100, U+0101, ... (the space 0x20 is U+0120 'Ġ', "\n" U+010A 'Ċ').

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "attn/detail/text/utf8.hpp"

namespace attn::detail {

class ByteLevelAlphabet {
public:
    ByteLevelAlphabet() {
        int extra = 0;
        for (int byte = 0; byte < 256; ++byte) {
            const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
            const char32_t code = printable ? static_cast<char32_t>(byte) : static_cast<char32_t>(256 + extra++);
            code_of_[static_cast<std::size_t>(byte)] = code;
            byte_of_[static_cast<std::size_t>(code)] = byte;
        }
    }

    static const ByteLevelAlphabet& get() {
        static const ByteLevelAlphabet alphabet;
        return alphabet;
    }

    /// The UTF-8 of byte's code point.
    std::string encode(unsigned char byte) const {
        const char32_t code = code_of_[byte];
        std::string out;
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
        }
        return out;
    }

    /// The bytes a piece written in the alphabet stands for, or nothing if a character of
    /// the piece is not in the alphabet (or the piece is not valid UTF-8).
    std::optional<std::string> decode(std::string_view piece) const {
        std::string out;
        for (std::size_t i = 0; i < piece.size();) {
            const Utf8Step step = utf8_step(piece, i);
            if (step.problem || step.code_point >= byte_of_.size() || byte_of_[step.code_point] < 0)
                return std::nullopt;
            out += static_cast<char>(byte_of_[step.code_point]);
            i += step.length;
        }
        return out;
    }

private:
    std::array<char32_t, 256> code_of_{};
    std::array<int, 324> byte_of_ = filled();  // code points 0..323 → byte, or −1

    static std::array<int, 324> filled() {
        std::array<int, 324> a{};
        a.fill(-1);
        return a;
    }
};

}  // namespace attn::detail
