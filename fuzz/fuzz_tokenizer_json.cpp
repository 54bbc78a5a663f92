// libFuzzer target for the Hugging Face tokenizer kinds of attn::Tokenizer. The first byte
// picks a mode, the rest is the input:
//   0  Tokenizer::from_tokenizer_json_text(input): loading may fail only with
//      attn::format_error; a loaded tokenizer encodes fixed texts and the input, with ids in
//      range, and decodes them;
//   1  encode(input) with a small byte-level tokenizer under the pattern the second byte
//      picks (GPT-2, Llama-3, Qwen2): any bytes are accepted, ids are in range and
//      decode(encode(input)) == input byte for byte;
//   2  encode(input) with a small SentencePiece-style tokenizer with byte fallback: any bytes
//      are accepted and, for input without "▁" or added tokens, decode gives it back;
//   3  NFC (attn/detail/text/nfc.hpp) of the input and a Qwen2-style byte-level tokenizer with the NFC
//      normalizer: NFC of NFC is itself, keeps the input's length within bounds and its
//      invalid bytes; for input without added tokens, the tokenizer encodes the input as it
//      encodes its NFC, and decode(encode(input)) is the input's NFC.
// Anything else thrown, a crash, a sanitizer report or a broken invariant is a finding.

#include <attn/detail/text/nfc.hpp>
#include <attn/text/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using nlohmann::json;

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_tokenizer_json: invariant broken: %s\n", what);
        std::abort();
    }
}

std::string byte_piece(int byte) {
    // GPT-2's byte alphabet: printable Latin-1 stands for itself, the rest from U+0100 on
    static const std::vector<std::string> pieces = [] {
        std::vector<std::string> out(256);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const int code = printable ? b : 256 + extra++;
            std::string s;
            if (code < 0x80) {
                s += static_cast<char>(code);
            } else {
                s += static_cast<char>(0xC0 | (code >> 6));
                s += static_cast<char>(0x80 | (code & 0x3F));
            }
            out[static_cast<std::size_t>(b)] = s;
        }
        return out;
    }();
    return pieces[static_cast<std::size_t>(byte)];
}

json byte_level_json(const char* pattern, bool nfc = false) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_piece(b)] = b;
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}, {"a", "a"}, {"aa", "aa"}, {"1", "2"}, {"\u00c3", "\u00a9"}};
    json merge_list = json::array();
    int id = 256;
    for (const auto& [left, right] : merges) {
        vocab[left + right] = id++;
        merge_list.push_back(json::array({left, right}));
    }
    json j;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}};
    j["added_tokens"] = json::array({{{"id", id}, {"content", "<|end|>"}, {"special", true}}});
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers",
                           {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}},
                            {{"type", "ByteLevel"}, {"use_regex", false}}}}};
    if (nfc) j["normalizer"] = {{"type", "NFC"}};
    return j;
}

const attn::Tokenizer& byte_level(int which) {
    static const attn::Tokenizer tokenizers[3] = {
        attn::Tokenizer::from_tokenizer_json_text(
            byte_level_json(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)").dump()),
        attn::Tokenizer::from_tokenizer_json_text(
            byte_level_json(
                R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
                .dump()),
        attn::Tokenizer::from_tokenizer_json_text(
            byte_level_json(
                R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
                .dump())};
    return tokenizers[which];
}

const attn::Tokenizer& sentencepiece() {
    static const attn::Tokenizer tokenizer = [] {
        json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
        char name[8];
        for (int b = 0; b < 256; ++b) {
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            vocab[name] = 3 + b;
        }
        int id = 259;
        for (const char* piece : {"\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "\u00e9"}) vocab[piece] = id++;
        json j;
        j["model"] = {{"type", "BPE"},
                      {"vocab", vocab},
                      {"merges", {"\u2581 a", "a b", "\u2581a b"}},
                      {"byte_fallback", true},
                      {"unk_token", "<unk>"}};
        j["added_tokens"] = json::array();
        for (int k = 0; k < 3; ++k)
            j["added_tokens"].push_back({{"id", k}, {"content", k == 0 ? "<unk>" : k == 1 ? "<s>" : "</s>"}});
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers",
                            {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                             {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
        j["post_processor"] = {{"type", "TemplateProcessing"},
                               {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                               {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}}}}}};
        return attn::Tokenizer::from_tokenizer_json_text(j.dump());
    }();
    return tokenizer;
}

const attn::Tokenizer& qwen2_nfc() {
    static const attn::Tokenizer tokenizer = attn::Tokenizer::from_tokenizer_json_text(
        byte_level_json(
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
            true)
            .dump());
    return tokenizer;
}

void check_ids(const attn::Tokenizer& t, const std::vector<int>& ids) {
    for (int id : ids) require(id >= 0 && id < t.size(), "id in range");
}

void load_mode(std::string_view input) {
    std::optional<attn::Tokenizer> loaded;
    try {
        loaded = attn::Tokenizer::from_tokenizer_json_text(input, "fuzz.json");
    } catch (const attn::format_error&) {
        return;
    }
    const attn::Tokenizer& t = *loaded;
    require(t.kind() == attn::Tokenizer::Kind::byte_level || t.kind() == attn::Tokenizer::Kind::sentencepiece,
            "a loaded tokenizer.json is byte-level or SentencePiece");
    for (std::string_view text : {std::string_view("Hello, world! it's 123 \xF0\x9F\x98\x80\n\t x"), input}) {
        const std::vector<int> ids = t.encode(text);
        check_ids(t, ids);
        (void)t.decode(ids);
    }
    for (int id = 0; id < t.size() && id < 300; ++id) (void)t.token(id);
}

void byte_level_mode(std::string_view input) {
    if (input.empty()) return;
    const attn::Tokenizer& t = byte_level(static_cast<unsigned char>(input[0]) % 3);
    input.remove_prefix(1);
    const std::vector<int> ids = t.encode(input);
    check_ids(t, ids);
    require(t.decode(ids) == input, "decode(encode(input)) == input");
}

void sentencepiece_mode(std::string_view input) {
    const attn::Tokenizer& t = sentencepiece();
    std::vector<int> ids = t.encode(input);
    check_ids(t, ids);
    require(!ids.empty() && ids[0] == 1, "starts with <s>");
    (void)t.decode(ids);
    const bool plain = input.find("\u2581") == std::string_view::npos && input.find("<s>") == std::string_view::npos &&
                       input.find("</s>") == std::string_view::npos && input.find("<unk>") == std::string_view::npos;
    ids.erase(ids.begin());
    if (plain) require(t.decode(ids) == input, "decode(encode(input)) == input");
}

std::size_t invalid_bytes(std::string_view text) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < text.size();) {
        const attn::detail::Utf8Step step = attn::detail::utf8_step(text, i);
        count += step.problem != nullptr;
        i += step.problem ? 1 : step.length;
    }
    return count;
}

void nfc_mode(std::string_view input) {
    std::string buffer, again_buffer;
    const std::string normal(attn::detail::to_nfc(input, buffer));
    require(attn::detail::to_nfc(normal, again_buffer) == normal, "NFC(NFC(x)) == NFC(x)");
    // a code point decomposes to at most 4 and composition only shrinks: UTF-8 grows at most 3 times
    require(normal.size() <= 3 * input.size(), "NFC(x) is at most 3 times as long as x");
    require(invalid_bytes(normal) == invalid_bytes(input), "invalid bytes are kept");
    const attn::Tokenizer& t = qwen2_nfc();
    const std::vector<int> ids = t.encode(input);
    check_ids(t, ids);
    // NFC applies between added tokens: "<|end|>" + U+0338 keeps the token, while NFC of the
    // whole would compose its ">" into U+226F
    if (input.find("<|end|>") != std::string_view::npos || normal.find("<|end|>") != std::string::npos) return;
    require(ids == t.encode(normal), "encode(x) == encode(NFC(x))");
    require(t.decode(ids) == normal, "decode(encode(x)) == NFC(x)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 4) {
        case 0:
            load_mode(input);
            break;
        case 1:
            byte_level_mode(input);
            break;
        case 2:
            sentencepiece_mode(input);
            break;
        default:
            nfc_mode(input);
            break;
    }
    return 0;
}
