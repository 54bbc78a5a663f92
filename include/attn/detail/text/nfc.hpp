#pragma once
// Unicode Normalization Form C (UAX #15) of UTF-8 text: canonical decomposition, canonical
// ordering by combining class, then canonical composition, which leaves out the composition
// exclusions; Hangul syllables are decomposed and composed arithmetically. The data are
// nfc_tables.hpp's, generated from the same Unicode version as unicode_tables.hpp, so the
// result is Python's unicodedata.normalize("NFC", s) for that version, byte for byte.
//
// Bytes that are not valid UTF-8 are kept as they are, in place: each counts as a character
// of its own that composes with nothing and that no combining mark is reordered across (the
// byte-level tokenizers keep such bytes too, and decode gives them back).
//
// Text that is already in NFC costs one scan and no copy: the NFC quick check (UAX #15,
// section 9) runs over the text, and only the stretch between the boundaries around a
// character that fails it is normalized; the rest is copied as it is.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/detail/text/nfc_tables.hpp"
#include "attn/detail/text/utf8.hpp"

namespace attn::detail {

namespace nfc {

// Properties of a code point, packed into 32 bits.
inline constexpr std::uint32_t class_mask = 0xFF;             // canonical combining class
inline constexpr std::uint32_t quick_check_no = 1u << 8;      // NFC_QC=No: never occurs in NFC text
inline constexpr std::uint32_t quick_check_maybe = 1u << 9;   // NFC_QC=Maybe: may compose with what precedes
inline constexpr std::uint32_t composes_as_first = 1u << 10;  // the first part of a primary composite
inline constexpr int decomposition_shift = 16;                // index + 1 of its decomposition; 0: none
inline constexpr std::uint32_t not_quick_check_yes = quick_check_no | quick_check_maybe;

// Hangul syllables: S = first_syllable + (L * vowel_count + V) * trailing_count + T.
inline constexpr std::uint32_t first_syllable = 0xAC00;
inline constexpr std::uint32_t first_leading = 0x1100;  // L jamo
inline constexpr std::uint32_t first_vowel = 0x1161;    // V jamo
inline constexpr std::uint32_t trailing_base = 0x11A7;  // T jamo: trailing_base + 1 .. + 27
inline constexpr std::uint32_t leading_count = 19;
inline constexpr std::uint32_t vowel_count = 21;
inline constexpr std::uint32_t trailing_count = 28;  // counting "no trailing consonant"
inline constexpr std::uint32_t syllable_count = leading_count * vowel_count * trailing_count;

// An invalid UTF-8 byte b travels through normalization as invalid_byte_base + b: above every
// code point, so it has class 0, no decomposition and no composition.
inline constexpr char32_t invalid_byte_base = 0x110000;

/// The lookup table built from nfc_tables.hpp on first use (then shared and read-only).
class Tables {
public:
    static const Tables& get() {
        static const Tables tables;
        return tables;
    }

    std::uint32_t properties(char32_t code) const {
        if (code >= limit) return 0;
        return blocks_[(std::size_t{index_[code >> block_bits]} << block_bits) | (code & block_mask)];
    }

    static std::uint32_t combining_class(std::uint32_t properties) { return properties & class_mask; }

    /// Appends the full canonical decomposition of `code` (itself if it has none).
    void decompose(char32_t code, std::vector<char32_t>& out) const {
        const std::uint32_t syllable = static_cast<std::uint32_t>(code) - first_syllable;
        if (syllable < syllable_count) {
            out.push_back(first_leading + syllable / (vowel_count * trailing_count));
            out.push_back(first_vowel + syllable % (vowel_count * trailing_count) / trailing_count);
            if (syllable % trailing_count != 0) out.push_back(trailing_base + syllable % trailing_count);
            return;
        }
        const std::uint32_t index = properties(code) >> decomposition_shift;
        if (index == 0) {
            out.push_back(code);
            return;
        }
        // The mappings of the table are one level deep; their parts may decompose again.
        const auto [first, second] = decompositions_[index - 1];
        decompose(first, out);
        if (second != 0) decompose(second, out);
    }

    /// The primary composite of `first` followed by `second`, or 0 if there is none.
    char32_t compose(char32_t first, char32_t second) const {
        const std::uint32_t leading = static_cast<std::uint32_t>(first) - first_leading;
        const std::uint32_t vowel = static_cast<std::uint32_t>(second) - first_vowel;
        if (leading < leading_count && vowel < vowel_count)
            return first_syllable + (leading * vowel_count + vowel) * trailing_count;
        const std::uint32_t syllable = static_cast<std::uint32_t>(first) - first_syllable;
        const std::uint32_t trailing = static_cast<std::uint32_t>(second) - trailing_base;
        if (syllable < syllable_count && syllable % trailing_count == 0 && trailing - 1 < trailing_count - 1)
            return first + trailing;
        if (!(properties(first) & composes_as_first) || !(properties(second) & quick_check_maybe)) return 0;
        const std::uint64_t key = composition_key(first, second);
        const auto found = std::lower_bound(compositions_.begin(), compositions_.end(), std::make_pair(key, U'\0'));
        return found != compositions_.end() && found->first == key ? found->second : 0;
    }

private:
    static constexpr char32_t limit = 0x30000;  // no code point at or above has NFC data
    static constexpr int block_bits = 6;
    static constexpr char32_t block_size = char32_t{1} << block_bits;
    static constexpr char32_t block_mask = block_size - 1;

    std::vector<std::uint16_t> index_;   // code point >> block_bits → its block
    std::vector<std::uint32_t> blocks_;  // block_size properties per block; block 0 (all 0) is shared
    std::vector<std::pair<char32_t, char32_t>> decompositions_;     // (first, second or 0)
    std::vector<std::pair<std::uint64_t, char32_t>> compositions_;  // (composition_key, composite), sorted

    static std::uint64_t composition_key(char32_t first, char32_t second) {
        return (std::uint64_t{first} << 21) | second;
    }

    Tables() : index_(limit >> block_bits, 0), blocks_(block_size, 0) {
        for (const std::uint32_t run : nfc_combining_class_runs) {
            const char32_t first = run >> 14;
            const char32_t count = ((run >> 8) & 0x3F) + 1;
            for (char32_t code = first; code < first + count; ++code) at(code) |= run & class_mask;
        }
        char32_t code = 0;
        for (const std::uint64_t entry : nfc_pair_decompositions) {
            code += static_cast<char32_t>(entry >> 29);
            const char32_t first = static_cast<char32_t>((entry >> 7) & 0x1FFFFF);
            const char32_t second = nfc_decomposition_seconds[entry & 0x7F];
            add_decomposition(code, first, second);
            if ((entry >> 28) & 1) {
                at(code) |= quick_check_no;
            } else {
                at(first) |= composes_as_first;
                at(second) |= quick_check_maybe;
                compositions_.emplace_back(composition_key(first, second), code);
            }
        }
        code = 0;
        for (const std::uint64_t entry : nfc_singleton_decompositions) {
            code += static_cast<char32_t>(entry >> 21);
            add_decomposition(code, static_cast<char32_t>(entry & 0x1FFFFF), 0);
            at(code) |= quick_check_no;
        }
        // V and T jamo compose with the L jamo or LV syllable before them.
        for (std::uint32_t v = 0; v < vowel_count; ++v) at(first_vowel + v) |= quick_check_maybe;
        for (std::uint32_t t = 1; t < trailing_count; ++t) at(trailing_base + t) |= quick_check_maybe;
        std::sort(compositions_.begin(), compositions_.end());
    }

    void add_decomposition(char32_t code, char32_t first, char32_t second) {
        decompositions_.emplace_back(first, second);
        at(code) |= static_cast<std::uint32_t>(decompositions_.size()) << decomposition_shift;
    }

    /// The properties of `code` (< limit), giving its block storage of its own first.
    std::uint32_t& at(char32_t code) {
        std::uint16_t& block = index_[code >> block_bits];
        if (block == 0) {
            block = static_cast<std::uint16_t>(blocks_.size() >> block_bits);
            blocks_.resize(blocks_.size() + block_size, 0);
        }
        return blocks_[(std::size_t{block} << block_bits) | (code & block_mask)];
    }
};

/// Whether text can be cut before the character at `position`: NFC of the two sides, joined,
/// is NFC of the whole. True before ASCII, an invalid byte, and a character of class 0 that is
/// NFC_QC=Yes (it composes with nothing before it, and nothing after it reorders before it).
inline bool boundary_before(std::string_view text, std::size_t position, const Tables& tables, Utf8Step& step) {
    const auto lead = static_cast<unsigned char>(text[position]);
    if (lead < 0x80) {
        step = {lead, 1, nullptr};
        return true;
    }
    step = utf8_step(text, position);
    if (step.problem) {
        step.length = 1;
        return true;
    }
    const std::uint32_t properties = tables.properties(step.code_point);
    return Tables::combining_class(properties) == 0 && !(properties & not_quick_check_yes);
}

/// Sorts each run of non-starters (class > 0) stably by class.
inline void order_canonically(std::vector<char32_t>& codes, const Tables& tables) {
    const auto class_of = [&](char32_t code) { return Tables::combining_class(tables.properties(code)); };
    const auto by_class = [&](char32_t a, char32_t b) { return class_of(a) < class_of(b); };
    for (std::size_t start = 0; start < codes.size();) {
        if (class_of(codes[start]) == 0) {
            ++start;
            continue;
        }
        std::size_t end = start + 1;
        while (end < codes.size() && class_of(codes[end]) != 0) ++end;
        const auto first = codes.begin() + static_cast<std::ptrdiff_t>(start);
        const auto last = codes.begin() + static_cast<std::ptrdiff_t>(end);
        if (end - start <= 8) {
            for (auto i = first + 1; i < last; ++i)  // insertion sort: runs are short in real text
                for (auto j = i; j > first && by_class(*j, *(j - 1)); --j) std::iter_swap(j, j - 1);
        } else {
            std::stable_sort(first, last, by_class);  // O(n log n) for hostile runs of marks
        }
        start = end;
    }
}

/// Canonical composition in place of canonically ordered, fully decomposed codes.
inline void compose(std::vector<char32_t>& codes, const Tables& tables) {
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t kept = 0;        // codes[0, kept) is the output so far
    std::size_t starter = none;  // the last starter in the output
    std::uint32_t last_class = 0;
    for (std::size_t i = 0; i < codes.size(); ++i) {
        const char32_t code = codes[i];
        const std::uint32_t cls = Tables::combining_class(tables.properties(code));
        if (starter != none) {
            // Blocked when a character between the starter and this one has class 0 or >= cls;
            // the ones between are in class order, so the last of them decides.
            const bool blocked = kept != starter + 1 && (last_class == 0 || last_class >= cls);
            if (!blocked) {
                if (const char32_t composite = tables.compose(codes[starter], code)) {
                    codes[starter] = composite;
                    continue;
                }
            }
        }
        if (cls == 0) starter = kept;
        last_class = cls;
        codes[kept++] = code;
    }
    codes.resize(kept);
}

/// Appends NFC of `stretch`, which starts and ends at boundaries (see boundary_before);
/// `codes` is scratch space.
inline void normalize_stretch(std::string_view stretch, std::string& out, std::vector<char32_t>& codes,
                              const Tables& tables) {
    codes.clear();
    for (std::size_t position = 0; position < stretch.size();) {
        const Utf8Step step = utf8_step(stretch, position);
        if (step.problem) {
            codes.push_back(invalid_byte_base + static_cast<unsigned char>(stretch[position]));
            ++position;
        } else {
            tables.decompose(step.code_point, codes);
            position += step.length;
        }
    }
    order_canonically(codes, tables);
    compose(codes, tables);
    for (const char32_t code : codes) {
        if (code >= invalid_byte_base)
            out += static_cast<char>(code - invalid_byte_base);
        else
            append_utf8(out, code);
    }
}

}  // namespace nfc

/// The NFC form of `text` (UTF-8; invalid bytes are kept in place, see above). Returns `text`
/// itself when it is already in NFC by the quick check; otherwise writes the normalized text
/// to `buffer` (which `text` must not view) and returns a view of it.
inline std::string_view to_nfc(std::string_view text, std::string& buffer) {
    const nfc::Tables& tables = nfc::Tables::get();
    std::vector<char32_t> codes;
    bool normalized_some = false;
    std::size_t copied = 0;    // once normalized_some: text[0, copied) is accounted for in buffer
    std::size_t boundary = 0;  // the last boundary at or before position
    std::uint32_t last_class = 0;
    std::size_t position = 0;
    while (position < text.size()) {
        Utf8Step step;
        if (nfc::boundary_before(text, position, tables, step)) {
            boundary = position;
            last_class = 0;
            position += step.length;
            continue;
        }
        const std::uint32_t properties = tables.properties(step.code_point);
        const std::uint32_t cls = nfc::Tables::combining_class(properties);
        if (!(properties & nfc::not_quick_check_yes) && last_class <= cls) {
            last_class = cls;
            position += step.length;
            continue;
        }
        // Normalize from the last boundary up to the next one.
        std::size_t end = position + step.length;
        while (end < text.size() && !nfc::boundary_before(text, end, tables, step)) end += step.length;
        if (!normalized_some) {
            buffer.clear();
            normalized_some = true;
        }
        buffer.append(text.data() + copied, boundary - copied);
        nfc::normalize_stretch(text.substr(boundary, end - boundary), buffer, codes, tables);
        position = copied = boundary = end;
        last_class = 0;
    }
    if (!normalized_some) return text;
    buffer.append(text.data() + copied, text.size() - copied);
    return buffer;
}

/// The NFC form of `text`, as a new string.
inline std::string to_nfc(std::string_view text) {
    std::string buffer;
    return std::string(to_nfc(text, buffer));
}

}  // namespace attn::detail
