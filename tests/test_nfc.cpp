// Tests of attn/detail/text/nfc.hpp: Unicode NFC against Python's unicodedata.normalize("NFC", s),
// whose answers tools/references/nfc_cases.py wrote to tests/data/nfc/ (every Unicode scalar value alone,
// and some 15 000 strings mixing combining marks, Hangul jamo, precomposed letters and lines
// of the tokenizer corpus); hand-worked cases for what Python cannot give (invalid UTF-8);
// and the cost on hostile input.

#include <attn/detail/text/nfc.hpp>
#include <attn/detail/text/unicode_tables.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// Everything in one named namespace: the unity build compiles this file with others.
namespace nfc_test {

namespace fs = std::filesystem;
using attn::detail::to_nfc;
using nlohmann::json;

const fs::path nfc_dir = fs::path(ATTN_TEST_DATA_DIR) / "nfc";

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream contents;
    contents << in.rdbuf();
    return contents.str();
}

std::string utf8(char32_t code) {
    std::string out;
    attn::detail::append_utf8(out, code);
    return out;
}

/// The code points of a UTF-8 string, in hex, for messages.
std::string hex(std::string_view text) {
    std::ostringstream out;
    for (unsigned char byte : text) out << std::hex << static_cast<int>(byte) << ' ';
    return out.str();
}

TEST_CASE("nfc: every Unicode scalar value alone is normalized as Python does") {
    const json single = json::parse(read_text(nfc_dir / "single.json"));
    // the cases, the NFC tables and the pre-tokenizer classes are of one Unicode version
    CHECK(single.at("unicode_version").get<std::string>() == attn::detail::nfc_tables_version);
    CHECK(std::string(attn::detail::nfc_tables_version) == attn::detail::unicode_tables_version);
    std::vector<std::string> expected(0x110000);
    for (const json& entry : single.at("changed"))
        expected[entry.at(0).get<std::size_t>()] = entry.at(1).get<std::string>();
    REQUIRE(single.at("changed").size() > 1000);
    std::size_t mismatches = 0;
    std::string buffer;
    for (char32_t code = 0; code < 0x110000; ++code) {
        if (code >= 0xD800 && code <= 0xDFFF) continue;
        const std::string text = utf8(code);
        const std::string& want = expected[code].empty() ? text : expected[code];
        const std::string_view got = to_nfc(text, buffer);
        if (got != want && ++mismatches <= 10)
            CHECK_MESSAGE(got == want, "U+" << std::hex << static_cast<unsigned>(code) << ": got " << hex(got)
                                            << ", want " << hex(want));
    }
    CHECK(mismatches == 0);
}

TEST_CASE("nfc: strings of marks, jamo, precomposed letters and corpus lines are normalized as Python does") {
    const std::string text = read_text(nfc_dir / "strings.jsonl");
    std::size_t cases = 0, changed = 0, mismatches = 0;
    std::string buffer, again_buffer;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const json line = json::parse(text.substr(start, end - start));
        start = end + 1;
        const std::string input = line.at(0).get<std::string>();
        const std::string want = line.size() > 1 ? line.at(1).get<std::string>() : input;
        changed += line.size() > 1;
        ++cases;
        const std::string got(to_nfc(input, buffer));
        // NFC of NFC text is itself
        const bool idempotent = to_nfc(want, again_buffer) == want;
        if ((got != want || !idempotent) && ++mismatches <= 10) {
            CHECK_MESSAGE(got == want, "input " << hex(input) << ": got " << hex(got) << ", want " << hex(want));
            CHECK_MESSAGE(idempotent, "NFC changes the NFC text " << hex(want));
        }
    }
    CHECK(mismatches == 0);
    CHECK(cases > 10000);
    CHECK(changed > 5000);  // most cases are not NFC already
}

TEST_CASE("nfc: text already in NFC is returned as it is, not copied") {
    std::string buffer = "untouched";
    for (const std::string& text :
         {std::string(), std::string("plain ASCII, 123 \t\n"), std::string("caf\u00e9 \u00c5ngstr\u00f6m \u1ec7"),
          std::string("\u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \U0001F600"), std::string("\u00e1\u0316"),
          std::string("z\xff\xfe \xc0\x80")}) {
        const std::string_view got = to_nfc(text, buffer);
        CHECK(got.data() == text.data());
        CHECK(got.size() == text.size());
    }
    CHECK(buffer == "untouched");
}

TEST_CASE("nfc: hand-worked compositions, orderings and exclusions") {
    // composition, also across a mark of lower class that does not block it
    CHECK(to_nfc("e\u0301") == "\u00e9");
    CHECK(to_nfc("a\u0302\u0323") == "\u1ead");  // reordered to a ̣ ̂, then ạ + ̂ = ậ
    CHECK(to_nfc("a\u0316\u0301") == "\u00e1\u0316");
    // blocked: a mark of the same class in between
    CHECK(to_nfc("a\u0301\u0301") == "\u00e1\u0301");
    // singletons decompose and are never recomposed
    CHECK(to_nfc("\u212b") == "\u00c5");  // ANGSTROM SIGN
    CHECK(to_nfc("\u2126") == "\u03a9");  // OHM SIGN
    CHECK(to_nfc("\uf900") == "\u8c48");  // a CJK compatibility ideograph
    // composition exclusions stay decomposed
    CHECK(to_nfc("\u0958") == "\u0915\u093c");
    CHECK(to_nfc("\u0915\u093c") == "\u0915\u093c");
    CHECK(to_nfc("\u0344") == "\u0308\u0301");  // a decomposition that starts with a non-starter
    // Hangul: L V → LV, LV T → LVT, LVT does not take another T
    CHECK(to_nfc("\u1100\u1161") == "\uac00");
    CHECK(to_nfc("\u1100\u1161\u11a8") == "\uac01");
    CHECK(to_nfc("\uac00\u11a8") == "\uac01");
    CHECK(to_nfc("\uac01\u11a8") == "\uac01\u11a8");
    CHECK(to_nfc("\u1100\u0301\u1161") == "\u1100\u0301\u1161");  // a mark between blocks L + V
    // starters that compose: Bengali O from E + AA
    CHECK(to_nfc("\u09c7\u09be") == "\u09cb");
    // a run of marks sorted by class, stably: 230 220 230 220 → 220 220 230 230
    CHECK(to_nfc("x\u0301\u0316\u0300\u0317") == "x\u0316\u0317\u0301\u0300");
    std::string long_run = "x", sorted_run = "x", upper_half;  // long enough for the O(n log n) sort
    for (int k = 0; k < 20; ++k) {
        long_run += "\u0301\u0316\u0300\u0317";
        sorted_run += "\u0316\u0317";
        upper_half += "\u0301\u0300";
    }
    CHECK(to_nfc(long_run) == sorted_run + upper_half);
}

TEST_CASE("nfc: invalid UTF-8 bytes stay in place and nothing composes or reorders across them") {
    CHECK(to_nfc("e\xff\xcc\x81") == "e\xff\xcc\x81");  // e, a stray byte, U+0301
    CHECK(to_nfc("e\xcc\x81\xff") == "\xc3\xa9\xff");
    CHECK(to_nfc("\xff\xcc\x81") == "\xff\xcc\x81");
    CHECK(to_nfc("a\xcc\x81\x80\xcc\x96") == "\xc3\xa1\x80\xcc\x96");  // U+0316 stays after the byte
    CHECK(to_nfc("e\xcc") == "e\xcc");                                 // U+0301 cut short
    CHECK(to_nfc("\xe1\x84\x80\xe1\x85") == "\xe1\x84\x80\xe1\x85");   // L jamo, a truncated V jamo
    CHECK(to_nfc("\xed\xa0\x80\xcc\x81") == "\xed\xa0\x80\xcc\x81");   // an encoded surrogate, U+0301
    CHECK(to_nfc("\xc0\x81\xe2\x84\xab") == "\xc0\x81\xc3\x85");       // an overlong byte pair, ANGSTROM SIGN
    CHECK(to_nfc(std::string("e\0\xcc\x81", 4)) == std::string("e\0\xcc\x81", 4));
}

TEST_CASE("nfc: a megabyte of combining marks normalizes in O(n log n)") {
    // a, then U+0301 (class 230) and U+0316 (220) alternating: sorted, all U+0316 go first, and
    // the first U+0301 still composes with a (U+0316 does not block it)
    const std::size_t pairs = 1 << 18;
    std::string text = "a";
    for (std::size_t k = 0; k < pairs; ++k) text += "\u0301\u0316";
    std::string want = "\u00e1";
    for (std::size_t k = 0; k < pairs; ++k) want += "\u0316";
    for (std::size_t k = 1; k < pairs; ++k) want += "\u0301";
    const auto start = std::chrono::steady_clock::now();
    std::string buffer;
    const bool same = to_nfc(text, buffer) == want;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(same);
    CHECK(seconds < 10);  // an insertion sort of the run takes hours
}

}  // namespace nfc_test
