// Tests of the Hugging Face tokenizer kinds of attn/text/tokenizer.hpp on the hand-made
// files of tests/data/hf_tokenizer/ (their README lists the vocabularies; every expected id
// below is worked out by hand from it), of the split patterns against cuts worked out from
// the regexes, and of the refusals. The comparison with real vocabularies and reference
// encoders is tests/tokenizer_reference/.

#include <attn/detail/text/pretokenize.hpp>
#include <attn/store.hpp>
#include <attn/text/tokenizer.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

// Everything in one named namespace (test cases too): the unity build compiles this file
// together with other test files.
namespace hf_tokenizer_test {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path hf_dir = fs::path(ATTN_TEST_DATA_DIR) / "hf_tokenizer";

json read_json(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return json::parse(in);
}

const json& byte_level_json() {
    static const json j = read_json(hf_dir / "byte_level.json");
    return j;
}

const json& sentencepiece_json() {
    static const json j = read_json(hf_dir / "sentencepiece.json");
    return j;
}

const json& qwen2_nfc_json() {
    static const json j = read_json(hf_dir / "qwen2_nfc.json");
    return j;
}

attn::Tokenizer from_json(const json& j) {
    return attn::Tokenizer::from_tokenizer_json_text(j.dump(), "fixture.json");
}

/// The byte-level fixture with `change` applied to its JSON.
attn::Tokenizer byte_level(const std::function<void(json&)>& change = {}) {
    json j = byte_level_json();
    if (change) change(j);
    return from_json(j);
}

attn::Tokenizer sentencepiece(const std::function<void(json&)>& change = {}) {
    json j = sentencepiece_json();
    if (change) change(j);
    return from_json(j);
}

using Ids = std::vector<int>;
using Pieces = std::vector<std::string>;

Pieces split(std::string_view text, attn::detail::SplitPattern pattern) {
    Pieces out;
    attn::detail::split_pattern(text, pattern, [&](std::string_view p) { out.emplace_back(p); });
    return out;
}

/// Checks that loading `j` throws format_error naming the file and containing each needle.
void expect_refused(const json& j, std::initializer_list<const char*> needles) {
    std::string what;
    try {
        (void)attn::Tokenizer::from_tokenizer_json_text(j.dump(), "refused.json");
        FAIL("no exception for " << j.dump().substr(0, 200));
    } catch (const attn::format_error& e) {
        what = e.what();
    }
    INFO("message: " << what);
    CHECK(attn::test::contains(what, "refused.json"));
    for (const char* needle : needles)
        CHECK_MESSAGE(attn::test::contains(what, needle), "missing: " << std::string(needle));
}

const std::string gpt2_regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string qwen2_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------
// Split patterns

TEST_CASE("tokenizer json: GPT-2's pattern cuts as its regex") {
    using attn::detail::SplitPattern;
    CHECK(split("Hello world", SplitPattern::gpt2) == Pieces{"Hello", " world"});
    CHECK(split("it's IT'S we'll", SplitPattern::gpt2) == Pieces{"it", "'s", " IT", "'", "S", " we", "'ll"});
    CHECK(split("a  b", SplitPattern::gpt2) == Pieces{"a", " ", " b"});
    CHECK(split("a \t\nb", SplitPattern::gpt2) == Pieces{"a", " \t", "\n", "b"});
    CHECK(split("x   ", SplitPattern::gpt2) == Pieces{"x", "   "});
    CHECK(split("\tb", SplitPattern::gpt2) == Pieces{"\t", "b"});
    CHECK(split("12345 678", SplitPattern::gpt2) == Pieces{"12345", " 678"});
    CHECK(split("a.,;b !?", SplitPattern::gpt2) == Pieces{"a", ".,;", "b", " !?"});
    CHECK(split("héllo Ωmega 日本語", SplitPattern::gpt2) == Pieces{"héllo", " Ωmega", " 日本語"});
    CHECK(split("x\u00a0y", SplitPattern::gpt2) == Pieces{"x", "\u00a0", "y"});        // no-break space is \s
    CHECK(split("a\xff\xfe b", SplitPattern::gpt2) == Pieces{"a", "\xff\xfe", " b"});  // bytes as punctuation
    CHECK(split("", SplitPattern::gpt2).empty());
}

TEST_CASE("tokenizer json: Llama-3's and Qwen2's patterns cut as their regexes") {
    using attn::detail::SplitPattern;
    CHECK(split("Hello world", SplitPattern::llama3) == Pieces{"Hello", " world"});
    CHECK(split("IT'S we'LL", SplitPattern::llama3) == Pieces{"IT", "'S", " we", "'LL"});
    CHECK(split("(hello) .x", SplitPattern::llama3) == Pieces{"(hello", ")", " .", "x"});
    CHECK(split("1234567", SplitPattern::llama3) == Pieces{"123", "456", "7"});
    CHECK(split("1234567", SplitPattern::qwen2) == Pieces{"1", "2", "3", "4", "5", "6", "7"});
    CHECK(split("a \n\n b", SplitPattern::llama3) == Pieces{"a", " \n\n", " b"});
    CHECK(split("x  \n  ", SplitPattern::llama3) == Pieces{"x", "  \n", "  "});
    CHECK(split("ok!!\n\nnext", SplitPattern::llama3) == Pieces{"ok", "!!\n\n", "next"});
    CHECK(split("\tword", SplitPattern::llama3) == Pieces{"\tword"});
    CHECK(split("\nword", SplitPattern::llama3) == Pieces{"\n", "word"});
    CHECK(split("a   b", SplitPattern::llama3) == Pieces{"a", "  ", " b"});
    CHECK(split("'\u017F", SplitPattern::llama3) == Pieces{"'\u017F"});  // ſ folds to s
    CHECK(split(" 12", SplitPattern::llama3) == Pieces{" ", "12"});
}

TEST_CASE("tokenizer json: Digits splits each number character out") {
    Pieces out;
    attn::detail::split_digits("ab12c٣", [&](std::string_view p) { out.emplace_back(p); });
    CHECK(out == Pieces{"ab", "1", "2", "c", "٣"});
}

TEST_CASE("tokenizer json: the Unicode classes") {
    using attn::detail::char_class;
    using attn::detail::CharClass;
    CHECK(char_class(U'é') == CharClass::letter);
    CHECK(char_class(U'日') == CharClass::letter);
    CHECK(char_class(U'\u0301') == CharClass::other);  // a combining mark is neither L nor N
    CHECK(char_class(U'٣') == CharClass::number);
    CHECK(char_class(U'Ⅻ') == CharClass::number);
    CHECK(char_class(U'\u3000') == CharClass::space);
    CHECK(char_class(U'\u0085') == CharClass::space);
    CHECK(char_class(U'\uFEFF') == CharClass::other);
    CHECK(char_class(U'😀') == CharClass::other);
    CHECK(std::string(attn::detail::unicode_tables_version) == "14.0.0");
}

// ---------------------------------------------------------------------------
// Byte-level BPE

TEST_CASE("tokenizer json: byte-level fixture with Llama-3's pattern") {
    const attn::Tokenizer t = byte_level();
    CHECK(t.kind() == attn::Tokenizer::Kind::byte_level);
    CHECK(std::string(t.kind_name()) == "byte-level BPE");
    CHECK(t.size() == 266);
    CHECK(t.begin_id() == 261);
    CHECK(t.token(258) == "\u0120the");
    CHECK(t.token(32) == "\u0120");
    CHECK(t.find("\u0120the") == 258);
    CHECK(t.find("<|end|>") == 262);
    CHECK_FALSE(t.find("the").has_value());
    // " the" → Ġ t h e → Ġt h e (rank 0) → Ġt he (rank 1) → Ġthe (rank 2); " " alone; 123 by threes
    CHECK(t.encode(" the 123") == Ids{261, 258, 32, 260});
    CHECK(t.encode("the") == Ids{261, 116, 257});
    CHECK(t.encode("1234") == Ids{261, 260, 52});
    CHECK(t.encode("") == Ids{261});
    CHECK(t.decode({261, 258, 32, 260}) == "<|begin_of_text|> the 123");
    CHECK_THROWS_AS((void)t.decode({266}), attn::argument_error);
    CHECK_THROWS_AS((void)t.decode({-1}), attn::argument_error);
    CHECK_THROWS_AS((void)attn::store::product_ids(t, "a", "b", 5), attn::argument_error);
}

TEST_CASE("tokenizer json: Qwen2's pattern takes digits one at a time") {
    const attn::Tokenizer t =
        byte_level([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = qwen2_regex; });
    CHECK(t.encode(" the 123") == Ids{261, 258, 32, 49, 50, 51});
}

TEST_CASE("tokenizer json: ByteLevel with GPT-2's pattern, prefix space and Digits") {
    const auto with = [](json pre) {
        return byte_level([&](json& j) {
            j["pre_tokenizer"] = pre;
            j["post_processor"] = nullptr;
        });
    };
    const json gpt2 = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    CHECK(with(gpt2).encode(" the 123") == Ids{258, 32, 260});  // " 123" is one piece: Ġ 123
    json prefixed = gpt2;
    prefixed["add_prefix_space"] = true;
    CHECK(with(prefixed).encode("the") == Ids{258});
    const json digits = {{"type", "Sequence"},
                         {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, gpt2}}};
    CHECK(with(digits).encode(" the 123") == Ids{258, 32, 49, 50, 51});
    CHECK(with(gpt2).begin_id() == std::nullopt);
}

TEST_CASE("tokenizer json: added tokens are cut out before BPE, longest first") {
    const attn::Tokenizer t = byte_level();
    CHECK(t.encode("x<|end|>y") == Ids{261, 120, 262, 121});
    CHECK(t.encode("x<|end|>!y") == Ids{261, 120, 265, 121});
    CHECK(t.encode("<|end|><|end|>") == Ids{261, 262, 262});
    CHECK(t.encode("<|end|") == Ids{261, 60, 124, 101, 110, 100, 124});  // < | end | as bytes
    // <|im_start|> strips the white space on both sides
    CHECK(t.encode("a  <|im_start|>  b") == Ids{261, 97, 263, 98});
    CHECK(t.decode({120, 262, 121}) == "x<|end|>y");
}

TEST_CASE("tokenizer json: ignore_merges takes a word that is a token whole") {
    CHECK(byte_level().encode(" he") == Ids{261, 32, 257});
    CHECK(byte_level([](json& j) { j["model"]["ignore_merges"] = true; }).encode(" he") == Ids{261, 264});
}

TEST_CASE("tokenizer json: byte-level encodes invalid UTF-8 as bytes and decodes it back") {
    const attn::Tokenizer t = byte_level();
    CHECK(t.encode("a\xff"
                   "b") == Ids{261, 97, 255, 98});
    for (const std::string& text : {std::string("a\xff"
                                                "b"),
                                    std::string("\xe2\x82"), std::string("\xc0\x80 x\x80"), std::string("z\0y", 3),
                                    std::string(" the\xf0\x9f\x98")}) {
        Ids ids = t.encode(text);
        ids.erase(ids.begin());
        CHECK(t.decode(ids) == text);
    }
}

TEST_CASE("tokenizer json: add_special_tokens = false leaves out the post-processor's tokens") {
    const attn::EncodeOptions bare{/*add_special_tokens=*/false};
    const attn::Tokenizer t = byte_level();
    CHECK(t.encode(" the 123", bare) == Ids{258, 32, 260});
    CHECK(t.encode("", bare).empty());
    // Special tokens written in the text are still cut out, as Hugging Face does.
    CHECK(t.encode("x<|end|>y", bare) == Ids{120, 262, 121});
    CHECK(t.encode(" the 123", attn::EncodeOptions{}) == t.encode(" the 123"));
    // A template with a token after the text too: both ends go.
    const attn::Tokenizer both = byte_level([](json& j) {
        json& processor = j["post_processor"]["processors"][1];
        processor["single"].push_back({{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}});
        processor["special_tokens"]["<|end|>"] = {{"id", "<|end|>"}, {"ids", {262}}, {"tokens", {"<|end|>"}}};
    });
    CHECK(both.encode("the") == Ids{261, 116, 257, 262});
    CHECK(both.encode("the", bare) == Ids{116, 257});
    const attn::Tokenizer s = sentencepiece();
    CHECK(s.encode("ab", bare) == Ids{264});
    CHECK(s.decode(s.encode("ab ab", bare)) == "ab ab");
    // The store kind adds nothing of its own: the option changes nothing.
    const attn::Tokenizer store = attn::Tokenizer::from_directory(fs::path(ATTN_TEST_DATA_DIR) / "tokenizer");
    CHECK(store.encode("a table", bare) == store.encode("a table"));
}

TEST_CASE("tokenizer: invalid_utf8_message names the first bad byte") {
    CHECK(attn::invalid_utf8_message("caf\xc3\xa9").empty());
    CHECK(attn::invalid_utf8_message("").empty());
    const std::string message = attn::invalid_utf8_message("ab\xff");
    CHECK(message.find("at byte 2 of 3") != std::string::npos);
}

TEST_CASE("tokenizer json: GPT-2's vocab.json + merges.txt, and from_directory") {
    const attn::Tokenizer t = attn::Tokenizer::from_gpt2_files(hf_dir / "vocab.json", hf_dir / "merges.txt");
    CHECK(t.kind() == attn::Tokenizer::Kind::byte_level);
    CHECK(t.encode(" the 123") == Ids{258, 32, 260});
    CHECK(t.encode("a<|endoftext|>") == Ids{97, 261});
    const attn::Tokenizer d = attn::Tokenizer::from_directory(hf_dir);
    CHECK(d.kind() == attn::Tokenizer::Kind::byte_level);
    CHECK(d.encode(" the 123") == Ids{258, 32, 260});

    attn::test::TempDir dir;
    fs::copy_file(hf_dir / "vocab.json", dir.path / "encoder.json");
    fs::copy_file(hf_dir / "merges.txt", dir.path / "vocab.bpe");
    CHECK(attn::Tokenizer::from_directory(dir.path).encode(" the") == Ids{258});
    fs::copy_file(hf_dir / "sentencepiece.json", dir.path / "tokenizer.json");  // tokenizer.json comes first
    CHECK(attn::Tokenizer::from_directory(dir.path).kind() == attn::Tokenizer::Kind::sentencepiece);
}

TEST_CASE("tokenizer json: a directory without tokenizer files") {
    attn::test::TempDir dir;
    const attn::Tokenizer t = attn::Tokenizer::from_directory(dir.path);
    CHECK(t.kind() == attn::Tokenizer::Kind::none);
    CHECK(t.size() == 0);
    CHECK(std::string(t.kind_name()) == "none");
    try {
        (void)t.encode("hello");
        FAIL("no exception");
    } catch (const attn::argument_error& e) {
        CHECK(attn::test::contains(e.what(), "has no tokenizer"));
        CHECK(attn::test::contains(e.what(), dir.path.string()));
    }
    CHECK_THROWS_AS((void)attn::Tokenizer::from_directory(dir.path / "missing"), attn::io_error);
}

TEST_CASE("tokenizer json: the store model's files through from_directory") {
    const attn::Tokenizer t = attn::Tokenizer::from_directory(fs::path(ATTN_TEST_DATA_DIR) / "tokenizer");
    CHECK(t.kind() == attn::Tokenizer::Kind::store);
    CHECK(t.size() == 67);
    CHECK(t.begin_id() == 0);
}

TEST_CASE("tokenizer json: Qwen2-style fixture with the NFC normalizer") {
    const attn::Tokenizer t = from_json(qwen2_nfc_json());
    CHECK(t.kind() == attn::Tokenizer::Kind::byte_level);
    // é is the bytes C3 A9 (Ã © in the byte alphabet): Ã© 256, café 259, Ġcafé 260
    CHECK(t.encode("caf\u00e9") == Ids{259});
    CHECK(t.encode("cafe\u0301") == Ids{259});  // e + combining acute composes to é first
    CHECK(t.encode(" cafe\u0301") == Ids{260});
    CHECK(t.encode("\u212b") == Ids{0xC3, 0x85});                   // ANGSTROM SIGN is Å, C3 85
    CHECK(t.encode("a>\u0338") == Ids{97, 0xE2, 0x89, 0xAF});       // > + U+0338 is ≯, E2 89 AF
    CHECK(t.encode("\u1100\u1161") == Ids{0xEA, 0xB0, 0x80});       // Hangul L + V jamo is 가
    CHECK(t.encode("<|im_end|>\u0338") == Ids{263, 0xCC, 0xB8});    // added tokens are cut out first
    CHECK(t.encode("e\xff\xcc\x81") == Ids{101, 255, 0xCC, 0x81});  // the invalid byte blocks composing
    CHECK(t.decode(t.encode("cafe\u0301")) == "caf\u00e9");
    CHECK(t.decode(t.encode("x\xff\xcc\x81\xc3")) == "x\xff\xcc\x81\xc3");

    // Without the normalizer the decomposed text stays apart: caf e, then U+0301's bytes CC 81.
    json plain = qwen2_nfc_json();
    plain["normalizer"] = nullptr;
    CHECK(from_json(plain).encode("cafe\u0301") == Ids{258, 101, 0xCC, 0x81});
    CHECK(from_json(plain).encode("a>\u0338") == Ids{97, 62, 0xCC, 0xB8});
    json sequence = qwen2_nfc_json();
    sequence["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
    CHECK(from_json(sequence).encode("cafe\u0301") == Ids{259});
}

// ---------------------------------------------------------------------------
// SentencePiece-style BPE

TEST_CASE("tokenizer json: SentencePiece-style fixture") {
    const attn::Tokenizer t = sentencepiece();
    CHECK(t.kind() == attn::Tokenizer::Kind::sentencepiece);
    CHECK(t.size() == 266);
    CHECK(t.token(262) == "\u2581a");
    CHECK(t.token(3 + 0x0A) == "<0x0A>");
    // "ab" → ▁ab: ▁ a b → ▁a b (rank 0) → ▁ab (rank 2)
    CHECK(t.encode("ab") == Ids{1, 264});
    CHECK(t.encode("ab ab") == Ids{1, 264, 264});
    CHECK(t.encode("ba") == Ids{1, 259, 261, 260});
    // € has no piece: its three bytes E2 82 AC
    CHECK(t.encode("a\u00e9\u20ac") == Ids{1, 262, 265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC});
    CHECK(t.decode({262, 265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}) == "a\u00e9\u20ac");
    // each section between added tokens gets its own ▁
    CHECK(t.encode("a</s>b") == Ids{1, 262, 2, 259, 261});
    CHECK(t.encode("a\xff") == Ids{1, 262, 3 + 0xFF});  // an invalid byte falls back to its byte token
    CHECK(t.encode("") == Ids{1});
    CHECK(t.decode({1, 264, 264}) == "<s> ab ab");
    CHECK(t.decode({264, 264}) == "ab ab");
}

TEST_CASE("tokenizer json: NFC in the SentencePiece-style normalizer Sequence") {
    const attn::Tokenizer t = sentencepiece([](json& j) {
        j["normalizer"]["normalizers"].push_back({{"type", "NFC"}});  // after Prepend and Replace: same result
    });
    // ▁ a é → ▁a é; without NFC, e has no piece and falls back to its byte, as U+0301 does
    CHECK(t.encode("ae\u0301") == Ids{1, 262, 265});
    CHECK(t.encode("a e\u0301") == Ids{1, 262, 259, 265});
    CHECK(sentencepiece().encode("ae\u0301") == Ids{1, 262, 3 + 0x65, 3 + 0xCC, 3 + 0x81});
}

TEST_CASE("tokenizer json: without byte fallback unknown characters fuse into one <unk>") {
    const attn::Tokenizer t = sentencepiece([](json& j) { j["model"]["byte_fallback"] = false; });
    CHECK(t.encode("a\u20ac\u20acb") == Ids{1, 262, 0, 261});
}

TEST_CASE("tokenizer json: Metaspace with prepend_scheme first") {
    const attn::Tokenizer t = sentencepiece([](json& j) {
        j["normalizer"] = nullptr;
        j["pre_tokenizer"] = {
            {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
    });
    CHECK(t.encode("a</s>b") == Ids{1, 262, 2, 261});
}

// ---------------------------------------------------------------------------
// Hostile input

TEST_CASE("tokenizer json: a 1 MB word merges in O(n log n)") {
    const attn::Tokenizer t = sentencepiece();
    std::string word;
    for (int i = 0; i < (1 << 19); ++i) word += "ab";
    const auto start = std::chrono::steady_clock::now();
    const Ids ids = t.encode(word);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(ids.size() == (1u << 19) + 1);
    CHECK(ids[1] == 264);
    CHECK(ids[2] == 263);
    CHECK(ids.back() == 263);
    CHECK(seconds < 10);  // a quadratic merge takes hours; the benchmark records the real time
    const Ids same = byte_level().encode(std::string(1 << 20, 'a'));
    CHECK(same.size() == (1u << 20) + 1);
}

// ---------------------------------------------------------------------------
// Refusals

TEST_CASE("tokenizer json: models other than BPE are refused by name") {
    json j = byte_level_json();
    j["model"] = {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}};
    expect_refused(j, {"WordPiece", "not supported"});
    j["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
    expect_refused(j, {"Unigram"});
    j.erase("model");
    expect_refused(j, {"missing \"model\""});
}

TEST_CASE("tokenizer json: unknown normalizers, pre-tokenizers, patterns and post-processors are refused") {
    json j = byte_level_json();
    j["normalizer"] = {{"type", "NFKC"}};
    expect_refused(j, {"normalizer type 'NFKC'", "attn reads NFC"});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "NFD"}}}}};
    expect_refused(j, {"normalizer type 'NFD'"});
    j = byte_level_json();
    j["pre_tokenizer"] = {{"type", "Whitespace"}};
    expect_refused(j, {"pre_tokenizer type 'Whitespace'"});
    j = byte_level_json();
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s+";
    expect_refused(j, {"Split pattern '\\w+|\\s+'"});
    j = byte_level_json();
    j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
    expect_refused(j, {"behavior 'Removed'"});
    j = byte_level_json();
    j["post_processor"] = {{"type", "RobertaProcessing"}};
    expect_refused(j, {"post_processor type 'RobertaProcessing'"});
    j = byte_level_json();
    j["post_processor"]["processors"][1]["single"][0]["SpecialToken"]["id"] = "<nope>";
    expect_refused(j, {"'<nope>'"});
    j = sentencepiece_json();
    j["normalizer"] = nullptr;
    expect_refused(j, {"needs a ByteLevel pre-tokenizer"});
    j = byte_level_json();
    j["added_tokens"][0]["single_word"] = true;
    expect_refused(j, {"single_word"});
    j = byte_level_json();
    j["model"]["dropout"] = 0.1;
    expect_refused(j, {"dropout"});
}

TEST_CASE("tokenizer json: broken vocabularies and merges are refused") {
    expect_refused(json::parse("[1, 2]"), {"top level"});
    std::string what;
    try {
        (void)attn::Tokenizer::from_tokenizer_json_text("{\"model\": ", "refused.json");
    } catch (const attn::format_error& e) {
        what = e.what();
    }
    CHECK(attn::test::contains(what, "refused.json: not valid JSON"));
    json j = byte_level_json();
    j["model"]["merges"].push_back(json::array({"Ġthe", "x"}));
    expect_refused(j, {"model.merges[5]", "'Ġthex'", "not in the vocabulary"});
    j = byte_level_json();
    j["model"]["merges"].push_back(json::array({"zz", "x"}));
    expect_refused(j, {"left part 'zz'"});
    j = sentencepiece_json();
    j["model"]["merges"].push_back("\u2581a b c");
    expect_refused(j, {"model.merges[3]", "two non-empty parts"});
    j = byte_level_json();
    j["model"]["vocab"].erase("\u0100");
    expect_refused(j, {"no token for the byte 0x00"});
    j = byte_level_json();
    j["model"]["vocab"]["dup"] = 5;
    expect_refused(j, {"id 5 is given to both"});
    j = byte_level_json();
    j["model"]["vocab"]["neg"] = -3;
    expect_refused(j, {"model.vocab[\"neg\"]", "-3"});
    j = byte_level_json();
    j["added_tokens"][1]["id"] = 97;
    expect_refused(j, {"added token '<|end|>' has id 97"});
}

TEST_CASE("tokenizer json: broken GPT-2 files and missing files") {
    attn::test::TempDir dir;
    const auto write = [&](const char* name, const std::string& text) {
        std::ofstream(dir.path / name, std::ios::binary) << text;
    };
    std::ifstream vocabulary_in(hf_dir / "vocab.json", std::ios::binary);
    std::stringstream vocabulary;
    vocabulary << vocabulary_in.rdbuf();
    write("vocab.json", vocabulary.str());
    write("merges.txt", "#version: 0.2\n\u0120 t\nh e x\n");
    try {
        (void)attn::Tokenizer::from_directory(dir.path);
        FAIL("no exception");
    } catch (const attn::format_error& e) {
        CHECK(attn::test::contains(e.what(), (dir.path / "merges.txt").string() + ": line 3"));
    }
    write("vocab.json", "{\"a\": 0");
    CHECK_THROWS_AS((void)attn::Tokenizer::from_directory(dir.path), attn::format_error);
    CHECK_THROWS_AS((void)attn::Tokenizer::from_tokenizer_json(dir.path / "tokenizer.json"), attn::io_error);
}

}  // namespace hf_tokenizer_test
