// libFuzzer target for attn::Tokenizer. The first byte picks a mode, the rest is
// the input:
//   0  encode(text) with a small fixed vocabulary (the test fixture); invalid UTF-8
//      must give attn::argument_error and valid UTF-8 must not; ids are in range;
//      without <unk>, decode(encode(text)) is the words joined by single spaces;
//   1  product_ids(name, description, longest) (name and description split at the
//      first tab, longest from the second byte): markers and length;
//   2  decode(ids) of 16-bit ids, some out of range (attn::argument_error);
//   3  from_strings(vocabulary, merges) split at the first NUL byte: loading may
//      fail only with attn::format_error; a loaded tokenizer then encodes and
//      decodes.
// Anything else thrown, a crash, a sanitizer report or a broken invariant is a finding.

#include <attn/store.hpp>
#include <attn/text/tokenizer.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

const char vocabulary_text[] = R"(<s>
<sep>
</s>
<unk>
a
b
c
d
e
f
h
i
l
n
o
r
s
t
2
4
é
€
😀
a</w>
b</w>
c</w>
d</w>
e</w>
l</w>
n</w>
r</w>
s</w>
t</w>
,</w>
.</w>
'</w>
(</w>
)</w>
-</w>
2</w>
4</w>
é</w>
€</w>
😀</w>
ta
tab
le</w>
table</w>
ch
ai
chai
chair</w>
in</w>
ca
caf
café</w>
bc</w>
ab
st
oo
stoo
stool</w>
aa
aaaa
le
24
€😀</w>
)";
const char merges_text[] = R"(#version: attn-bpe 1
t a
ta b
l e</w>
tab le</w>
c h
a i
ch ai
chai r</w>
i n</w>
c a
ca f
caf é</w>
b c</w>
a b
s t
o o
st oo
stoo l</w>
a a
aa aa
l e
2 4
€ 😀</w>
)";

const attn::Tokenizer& fixed() {
    static const attn::Tokenizer tokenizer = attn::Tokenizer::from_strings(vocabulary_text, merges_text);
    return tokenizer;
}

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_tokenizer: invariant broken: %s\n", what);
        std::abort();
    }
}

bool valid_utf8(std::string_view text) {
    return attn::detail::find_invalid_utf8(text).problem == nullptr;
}

void check_ids(const attn::Tokenizer& t, const std::vector<int>& ids) {
    for (int id : ids) require(id >= 0 && id < t.size(), "id in range");
}

void encode_mode(std::string_view text) {
    const attn::Tokenizer& t = fixed();
    std::vector<int> ids;
    try {
        ids = t.encode(text);
    } catch (const attn::argument_error&) {
        require(!valid_utf8(text), "argument_error for valid UTF-8");
        return;
    }
    require(valid_utf8(text), "invalid UTF-8 accepted");
    check_ids(t, ids);
    const std::string decoded = t.decode(ids);
    bool unknown = false;
    for (int id : ids) unknown = unknown || id == t.unknown_id();
    if (!unknown) {
        std::string canonical;
        for (const std::string& w : attn::Tokenizer::words(text)) {
            if (!canonical.empty()) canonical += ' ';
            canonical += w;
        }
        require(decoded == canonical, "decode(encode(text)) == words joined by spaces");
    }
    require(ids.size() >= attn::Tokenizer::words(text).size(), "at least one id per word");
}

void product_mode(std::string_view input) {
    if (input.empty()) return;
    const std::ptrdiff_t longest = 1 + static_cast<unsigned char>(input[0]) % 64;
    input.remove_prefix(1);
    const std::size_t tab = input.find('\t');
    const std::string_view name = input.substr(0, tab);
    const std::string_view description = tab == std::string_view::npos ? std::string_view() : input.substr(tab + 1);
    const attn::Tokenizer& t = fixed();
    std::vector<int> ids;
    try {
        ids = attn::store::product_ids(t, name, description, longest);
    } catch (const attn::argument_error&) {
        require(!valid_utf8(name) || !valid_utf8(description), "argument_error for valid UTF-8");
        return;
    }
    require(valid_utf8(name) && valid_utf8(description), "invalid UTF-8 accepted");
    check_ids(t, ids);
    require(!ids.empty() && ids.size() <= static_cast<std::size_t>(longest), "length within longest");
    require(ids[0] == t.start_id(), "starts with <s>");
    const std::size_t full = 3 + t.encode(name).size() + t.encode(description).size();
    require(ids.size() == std::min(full, static_cast<std::size_t>(longest)), "truncated length");
    if (ids.size() == full) require(ids.back() == t.end_id(), "ends with </s>");
}

void decode_mode(std::string_view input) {
    const attn::Tokenizer& t = fixed();
    std::vector<int> ids;
    bool in_range = true;
    for (std::size_t i = 0; i + 1 < input.size(); i += 2) {
        const int id = static_cast<std::int16_t>(static_cast<std::uint16_t>(
                           static_cast<unsigned char>(input[i]) | (static_cast<unsigned char>(input[i + 1]) << 8))) %
                       100;
        in_range = in_range && id >= 0 && id < t.size();
        ids.push_back(id);
    }
    try {
        const std::string text = t.decode(ids);
        require(in_range, "decode accepted an id out of range");
        require(valid_utf8(text), "decode gives valid UTF-8");
    } catch (const attn::argument_error&) {
        require(!in_range, "argument_error for ids in range");
    }
}

void load_mode(std::string_view input) {
    const std::size_t nul = input.find('\0');
    const std::string_view vocabulary = input.substr(0, nul);
    const std::string_view merges = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
    try {
        const attn::Tokenizer t = attn::Tokenizer::from_strings(vocabulary, merges);
        require(t.size() >= 4, "at least the specials");
        for (int id = 0; id < t.size(); ++id) require(t.id(t.token(id)) == id, "id(token(id)) == id");
        std::vector<int> all;
        for (int id = 0; id < t.size() && id < 256; ++id) all.push_back(id);
        (void)t.decode(all);
        check_ids(t, t.encode(vocabulary));
        check_ids(t, t.encode(merges));
        check_ids(t, attn::store::product_ids(t, "Table, chair.", "café €😀", 20));
    } catch (const attn::format_error&) {
        // a rejected file
    } catch (const attn::argument_error&) {
        require(!valid_utf8(vocabulary) || !valid_utf8(merges), "argument_error encoding valid UTF-8");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 4) {
        case 0:
            encode_mode(input);
            break;
        case 1:
            product_mode(input);
            break;
        case 2:
            decode_mode(input);
            break;
        default:
            load_mode(input);
            break;
    }
    return 0;
}
