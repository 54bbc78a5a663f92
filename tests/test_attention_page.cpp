// attn/view/attention_page.hpp: the embedded data's escaping (JSON inside <script>, HTML in
// <title>), the weights' encodings read back exactly or within their stated bounds, the
// input checks, and top_next_tokens. The page's behaviour in a browser is tested by
// tests/browser/test_viewer.py.
#include <doctest/doctest.h>
#include <attn/view/attention_page.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "support.hpp"

namespace {

std::string json_string(std::string_view text) {
    std::string out;
    attn::detail::append_script_json_string(out, text);
    return out;
}

/// The text of <script id="attn-data">.
std::string embedded_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"attn-data\">";
    const auto begin = page.find(open);
    REQUIRE(begin != std::string::npos);
    const auto end = page.find("</script>", begin);
    REQUIRE(end != std::string::npos);
    return page.substr(begin + open.size(), end - begin - open.size());
}

/// The value of "key":"..." (a string without escapes) in the embedded data.
std::string field(const std::string& data, const std::string& key) {
    const std::string marker = "\"" + key + "\":\"";
    const auto begin = data.find(marker);
    REQUIRE(begin != std::string::npos);
    const auto end = data.find('"', begin + marker.size());
    return data.substr(begin + marker.size(), end - begin - marker.size());
}

std::vector<std::uint8_t> base64_decode(const std::string& text) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<std::uint8_t> out;
    std::uint32_t bits = 0;
    int count = 0;
    for (char c : text) {
        if (c == '=') break;
        bits = (bits << 6) | static_cast<std::uint32_t>(alphabet.find(c));
        count += 6;
        if (count >= 8) {
            count -= 8;
            out.push_back(static_cast<std::uint8_t>((bits >> count) & 0xFFu));
        }
    }
    return out;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
    return count;
}

/// Causal softmax weights of random scores: heads × (n × n), rows summing to 1.
template <class T>
attn::AttentionWeights<T> causal_weights(attn::Index heads, attn::Index n, unsigned seed) {
    attn::AttentionWeights<T> w(heads, n, n);
    for (attn::Index h = 0; h < heads; ++h) {
        const attn::Matrix<T> scores = attn::test::random_matrix<T>(n, n, seed + unsigned(h));
        for (attn::Index i = 0; i < n; ++i) {
            T total = 0;
            for (attn::Index j = 0; j <= i; ++j) total += (w(h, i, j) = std::exp(scores(i, j)));
            for (attn::Index j = 0; j <= i; ++j) w(h, i, j) /= total;
        }
    }
    return w;
}

const std::vector<std::string> three_tokens{"<s>", "a", "b"};

}  // namespace

TEST_CASE("attention_page JSON strings escape what would end the script or the string") {
    CHECK(json_string("plain") == "\"plain\"");
    CHECK(json_string("</script>") == "\"\\u003c/script\\u003e\"");
    CHECK(json_string("a & b") == "\"a \\u0026 b\"");
    CHECK(json_string("say \"hi\" \\ 'there'") == "\"say \\\"hi\\\" \\\\ 'there'\"");
    CHECK(json_string("tab\there\nnew\x01\x7f") == "\"tab\\u0009here\\u000anew\\u0001\\u007f\"");
    CHECK(json_string("line\xE2\x80\xA8para\xE2\x80\xA9") == "\"line\\u2028para\\u2029\"");
}

TEST_CASE("attention_page JSON strings keep valid UTF-8 and replace each invalid byte by U+FFFD") {
    CHECK(json_string("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9B\x8B") ==
          "\"caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9B\x8B\"");
    CHECK(json_string("a\xFF"
                      "b") == "\"a\\ufffdb\"");
    CHECK(json_string("\xE6\x97") == "\"\\ufffd\\ufffd\"");             // a truncated character
    CHECK(json_string("\xC0\xAF") == "\"\\ufffd\\ufffd\"");             // overlong '/'
    CHECK(json_string("\xED\xA0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // an encoded surrogate
}

TEST_CASE("attention_page numbers read back to the same double") {
    for (double value : {0.1, 1.0 / 3.0, 0.9999999403953552, 1e-300, 0.0, 1.0}) {
        std::string text;
        attn::detail::append_json_number(text, value);
        CHECK(std::strtod(text.c_str(), nullptr) == value);
    }
}

TEST_CASE("attention_page base64 matches RFC 4648's test vectors") {
    const std::vector<std::pair<std::string, std::string>> vectors{{"", ""},
                                                                   {"f", "Zg=="},
                                                                   {"fo", "Zm8="},
                                                                   {"foo", "Zm9v"},
                                                                   {"foob", "Zm9vYg=="},
                                                                   {"fooba", "Zm9vYmE="},
                                                                   {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        std::string out;
        attn::detail::append_base64(out, std::vector<std::uint8_t>(plain.begin(), plain.end()));
        CHECK(out == encoded);
    }
}

TEST_CASE("attention_page embeds hostile token text so that no token closes the script") {
    const std::vector<std::string> tokens{
        "<s>", "</script><script>alert(1)</script>", "a & \"b\" 'c'", "caf\xC3\xA9", "\xFF", "<!--"};
    attn::PageOptions options;
    options.title = "</title><b>x</b> & 'co'";
    options.next_tokens.assign(tokens.size(), {{"</script>", 0.5}, {"\xE2\x80\xA8", 0.25}});
    const std::string page = attn::attention_page(
        tokens, std::vector<attn::AttentionWeights<float>>{causal_weights<float>(2, 6, 1)}, options);
    CHECK(occurrences(page, "</script>") == 2);  // the data's and the script's own
    // Nothing to fetch: no URL, no external script, style, image or font.
    CHECK(page.find("http") == std::string::npos);
    CHECK(page.find(" src=") == std::string::npos);
    CHECK(page.find("<link") == std::string::npos);
    CHECK(page.find("@import") == std::string::npos);
    CHECK(occurrences(page, "<script") == 2);
    CHECK(page.find("<title>&lt;/title&gt;&lt;b&gt;x&lt;/b&gt; &amp; &apos;co&apos;</title>") != std::string::npos);
    const std::string data = embedded_data(page);
    CHECK(data.find_first_of("<>&") == std::string::npos);
    CHECK(data.find("\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\"") != std::string::npos);
    CHECK(data.find("\"a \\u0026 \\\"b\\\" 'c'\"") != std::string::npos);
    CHECK(data.find("\"caf\xC3\xA9\"") != std::string::npos);
    CHECK(data.find("\"\\ufffd\"") != std::string::npos);
    CHECK(data.find("\"\\u003c!--\"") != std::string::npos);
    CHECK(data.find("[\"\\u2028\",0.25]") != std::string::npos);
}

TEST_CASE_TEMPLATE("attention_page stores causal weights as float32 lower triangles, read back exactly", T, float,
                   double) {
    const attn::Index n = 5, heads = 3;
    const std::vector<attn::AttentionWeights<T>> layers{causal_weights<T>(heads, n, 10),
                                                        causal_weights<T>(heads, n, 20)};
    const std::vector<std::string> tokens{"<s>", "a", "b", "c", "d"};
    const std::string data = embedded_data(attn::attention_page(tokens, layers));
    CHECK(field(data, "storage") == "lower");
    CHECK(field(data, "encoding") == "float32");
    CHECK(data.find("\"layers\":2,\"heads\":3,\"positions\":5") != std::string::npos);
    const std::vector<std::uint8_t> bytes = base64_decode(field(data, "weights"));
    REQUIRE(bytes.size() == 2 * heads * (n * (n + 1) / 2) * 4);
    std::size_t k = 0;
    for (const auto& layer : layers)
        for (attn::Index h = 0; h < heads; ++h)
            for (attn::Index i = 0; i < n; ++i)
                for (attn::Index j = 0; j <= i; ++j, k += 4) {
                    const std::uint32_t bits = std::uint32_t(bytes[k]) | std::uint32_t(bytes[k + 1]) << 8 |
                                               std::uint32_t(bytes[k + 2]) << 16 | std::uint32_t(bytes[k + 3]) << 24;
                    float value = 0;
                    std::memcpy(&value, &bits, 4);
                    CHECK(value == static_cast<float>(layer(h, i, j)));
                }
}

TEST_CASE("attention_page stores full matrices when a weight lies above the diagonal") {
    attn::AttentionWeights<double> w(1, 3, 3);
    for (attn::Index i = 0; i < 3; ++i)
        for (attn::Index j = 0; j < 3; ++j) w(0, i, j) = 1.0 / 3.0;
    const std::string data = embedded_data(attn::attention_page(three_tokens, std::vector{w}));
    CHECK(field(data, "storage") == "full");
    CHECK(base64_decode(field(data, "weights")).size() == 9 * 4);
}

/// The integers of "key":[1,2,3] in the embedded data.
static std::vector<std::size_t> offsets_field(const std::string& data, const std::string& key) {
    const std::string marker = "\"" + key + "\":[";
    const auto begin = data.find(marker);
    REQUIRE(begin != std::string::npos);
    std::vector<std::size_t> out;
    std::istringstream in(data.substr(begin + marker.size(), data.find(']', begin) - begin - marker.size()));
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
    return out;
}

TEST_CASE("attention_page 16-bit and 8-bit encodings stay within half a step") {
    const auto w = causal_weights<double>(2, 7, 3);
    for (auto [encoding, name, steps] : {std::tuple{attn::WeightEncoding::unorm16, "unorm16", 65535.0},
                                         std::tuple{attn::WeightEncoding::unorm8, "unorm8", 255.0}}) {
        attn::PageOptions options;
        options.encoding = encoding;
        const std::string data =
            embedded_data(attn::attention_page(std::vector<std::string>(7, "t"), std::vector{w}, options));
        CHECK(field(data, "encoding") == name);
        const std::vector<std::uint8_t> bytes = base64_decode(field(data, "weights"));
        const std::vector<std::size_t> chunks = offsets_field(data, "chunks");
        REQUIRE(chunks.size() == 3);
        CHECK(chunks.back() == bytes.size());
        for (attn::Index h = 0; h < 2; ++h) {
            std::vector<double> q;  // the head's 28 stored codes
            bool relative = false;
            const std::size_t begin = chunks[std::size_t(h)], end = chunks[std::size_t(h) + 1];
            if (steps > 255) {
                REQUIRE(end - begin == 28 * 2);
                for (std::size_t k = begin; k < end; k += 2) q.push_back(bytes[k] | bytes[k + 1] << 8);
            } else {  // a byte (1: 7 row scales follow), then the codes, multiples of their row's scale / 255
                relative = bytes[begin] == 1;
                std::vector<double> scales(7, 1.0);
                for (std::size_t i = 0; relative && i < 7; ++i) {
                    std::uint32_t bits = 0;
                    for (int b = 0; b < 4; ++b)
                        bits |= std::uint32_t(bytes[begin + 1 + 4 * i + std::size_t(b)]) << (8 * b);
                    float scale = 0;
                    std::memcpy(&scale, &bits, 4);
                    scales[i] = scale;
                }
                std::size_t k = 0;
                for (std::uint8_t code :
                     attn::detail::decode_weight_chunk(bytes, begin + 1 + (relative ? 28 : 0), end, 7, true)) {
                    attn::Index i = 0;
                    while ((i + 1) * (i + 2) / 2 <= attn::Index(k)) ++i;
                    q.push_back(double(code) * scales[std::size_t(i)]);
                    ++k;
                }
            }
            std::size_t k = 0;
            for (attn::Index i = 0; i < 7; ++i) {
                double largest = 0;
                for (attn::Index j = 0; j <= i; ++j) largest = std::max(largest, w(h, i, j));
                const double step = relative ? largest : 1.0;  // steps of the row's largest weight, or of 1
                for (attn::Index j = 0; j <= i; ++j, ++k)
                    CHECK(std::abs(q[k] / steps - w(h, i, j)) <= 0.5 / steps * step + 1e-6);
            }
        }
    }
}

TEST_CASE("attention_page's entropy coding gives the codes back, runs of zeros included") {
    std::vector<std::vector<std::uint8_t>> cases{
        {0}, {7}, {0, 0}, {255, 0, 0, 0, 1}, std::vector<std::uint8_t>(70000, 0)};
    std::vector<std::uint8_t> mixed, skewed;
    std::uint32_t random = 1;
    for (int i = 0; i < 50000; ++i) {
        random = random * 1664525u + 1013904223u;
        mixed.push_back(static_cast<std::uint8_t>(random >> 24));
        // Mostly zeros with rare codes of every value: code lengths past 12 bits before the limit.
        skewed.push_back(random % 1000 < 990 ? 0 : static_cast<std::uint8_t>(1 + (random >> 8) % 255));
    }
    mixed.insert(mixed.end(), 3000, 0);
    cases.push_back(mixed);
    cases.push_back(skewed);
    std::vector<std::uint8_t> geometric;  // symbol s with weight 2^-s: a Huffman tree 40 deep
    for (int s = 1; s <= 40; ++s)
        geometric.insert(geometric.end(), std::size_t(1) << std::max(0, 20 - s), std::uint8_t(s));
    cases.push_back(geometric);
    for (const auto& codes : cases) {
        std::vector<std::uint8_t> bytes{9, 9};  // a chunk need not start at 0
        attn::detail::encode_codes(bytes, codes);
        CHECK(attn::detail::decode_codes(bytes, 2, bytes.size(), codes.size()) == codes);
    }
    std::vector<std::uint8_t> zeros;
    attn::detail::encode_codes(zeros, std::vector<std::uint8_t>(1 << 20, 0));
    CHECK(zeros.size() < 136 + 8);  // 2^20 zeros: 16 runs of 2^16
    std::vector<std::uint8_t> truncated{0};
    CHECK_THROWS_AS(attn::detail::decode_codes(truncated, 0, 1, 1), attn::format_error);
}

TEST_CASE("attention_page codes near-even rows as their differences, and reads either form back") {
    const attn::Index n = 300;
    std::vector<std::uint8_t> even, spiky;
    for (attn::Index i = 0; i < n; ++i)
        for (attn::Index j = 0; j <= i; ++j) {
            even.push_back(static_cast<std::uint8_t>(std::lround(255.0 / double(i + 1))));
            spiky.push_back(j == i / 2 ? 200 : 0);
        }
    for (const auto* codes : {&even, &spiky}) {
        std::vector<std::uint8_t> chunk;
        attn::detail::encode_weight_chunk(chunk, *codes, n, true);
        CHECK(attn::detail::decode_weight_chunk(chunk, 0, chunk.size(), n, true) == *codes);
        CHECK(chunk[0] == (codes == &even ? 1 : 0));
        CHECK(chunk.size() < 136 + codes->size() / 20);
    }
    // A full (not lower) matrix: rows of n.
    std::vector<std::uint8_t> full(std::size_t(20 * 20), 13), chunk;
    full[5] = 200;
    attn::detail::encode_weight_chunk(chunk, full, 20, false);
    CHECK(attn::detail::decode_weight_chunk(chunk, 0, chunk.size(), 20, false) == full);
}

TEST_CASE("attention_page 8-bit diffuse heads take steps of 1, not of each row's largest weight") {
    const attn::Index n = 400;
    attn::AttentionWeights<double> w(2, n, n);
    std::uint32_t random = 7;
    for (attn::Index i = 0; i < n; ++i) {
        double total = 0;
        for (attn::Index j = 0; j <= i; ++j) {  // head 0: every weight near 1/(i+1), each a little different
            random = random * 1664525u + 1013904223u;
            total += (w(0, i, j) = 1.0 + 0.3 * (double(random >> 8) / double(1u << 24) - 0.5));
            w(1, i, j) = j == i / 2 ? 0.9 : j == 0 ? 0.1 : 0.0;  // head 1: two keys
        }
        for (attn::Index j = 0; j <= i; ++j) w(0, i, j) /= total;
        if (i == 0) w(1, 0, 0) = 1.0;
    }
    attn::PageOptions options;
    options.encoding = attn::WeightEncoding::unorm8;
    const std::string data =
        embedded_data(attn::attention_page(std::vector<std::string>(std::size_t(n), "t"), std::vector{w}, options));
    const std::vector<std::uint8_t> bytes = base64_decode(field(data, "weights"));
    const std::vector<std::size_t> chunks = offsets_field(data, "chunks");
    CHECK(bytes[chunks[0]] == 0);  // diffuse: row scales would cost up to 7 bits a weight
    CHECK(bytes[chunks[1]] <= 1);  // sharp: either, whichever the rule picks (decoded in the test above)
}

TEST_CASE("attention_page thumbnails hold each cell's largest colour code") {
    // 130 positions, 16 heads: 64 × 64 cells, two or three positions a cell.
    const auto w = causal_weights<double>(16, 130, 5);
    const std::string data =
        embedded_data(attn::attention_page(std::vector<std::string>(130, "t"), std::vector{w}, attn::PageOptions{}));
    CHECK(data.find("\"thumbnail\":64,") != std::string::npos);
    const std::vector<std::uint8_t> bytes = base64_decode(field(data, "thumbnails"));
    const std::vector<std::size_t> chunks = offsets_field(data, "thumbnail_chunks");
    REQUIRE(chunks.size() == 17);
    for (attn::Index h : {0, 15}) {
        const auto cells =
            attn::detail::decode_codes(bytes, chunks[std::size_t(h)], chunks[std::size_t(h) + 1], 64 * 64);
        std::vector<long> expected(64 * 64, 0);
        for (attn::Index i = 0; i < 130; ++i)
            for (attn::Index j = 0; j <= i; ++j) {
                long& cell = expected[std::size_t((i * 64 / 130) * 64 + j * 64 / 130)];
                cell = std::max(cell, std::lround(double(float(w(h, i, j))) * 255.0));
            }
        CHECK(std::vector<long>(cells.begin(), cells.end()) == expected);
    }
}

TEST_CASE("attention_page records styles, selection, open head, view and next tokens") {
    attn::PageOptions options;
    options.styles = {attn::TokenStyle::marker, attn::TokenStyle::emphasis, attn::TokenStyle::plain};
    options.selected_position = 1;
    options.open_head = {1, 0};
    options.view = attn::PageView::head;
    options.next_tokens = {{{"a", 0.75}, {"b", 0.25}}, {{"b", 1.0}}, {}};
    const std::vector layers{causal_weights<float>(1, 3, 1), causal_weights<float>(1, 3, 2)};
    const std::string data = embedded_data(attn::attention_page(three_tokens, layers, options));
    CHECK(data.find("\"styles\":[\"marker\",\"emphasis\",\"plain\"]") != std::string::npos);
    CHECK(data.find("\"selected\":1,\"open\":[1,0],\"view\":\"head\"") != std::string::npos);
    CHECK(data.find("\"next\":[[[\"a\",0.75],[\"b\",0.25]],[[\"b\",1]],[]]") != std::string::npos);
    const std::string defaults = embedded_data(attn::attention_page(three_tokens, layers));
    CHECK(defaults.find("\"styles\":[\"plain\",\"plain\",\"plain\"]") != std::string::npos);
    CHECK(defaults.find("\"selected\":2,\"open\":[0,0],\"view\":\"model\",\"next\":null") != std::string::npos);
}

TEST_CASE("attention_page takes a ModelAttention as its layers") {
    const std::vector layers{causal_weights<float>(2, 3, 1), causal_weights<float>(2, 3, 2)};
    CHECK(attn::attention_page(three_tokens, attn::ModelAttention<float>(layers)) ==
          attn::attention_page(three_tokens, layers));
}

TEST_CASE("attention_page refuses inputs that do not fit, naming what and where") {
    const std::vector layers{causal_weights<float>(2, 3, 1)};
    auto fails = [&](const std::vector<std::string>& tokens, const std::vector<attn::AttentionWeights<float>>& l,
                     const attn::PageOptions& options) { (void)attn::attention_page(tokens, l, options); };
    CHECK_THROWS_WITH_AS(fails({}, layers, {}), doctest::Contains("attention_page: tokens is empty"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(fails(three_tokens, {}, {}), doctest::Contains("layers is empty"), attn::shape_error);
    CHECK_THROWS_WITH_AS(fails({"a", "b"}, layers, {}),
                         doctest::Contains("layer 0 has heads of 3 × 3 weights, expected 2 × 2"), attn::shape_error);
    CHECK_THROWS_WITH_AS(fails(three_tokens, {layers[0], causal_weights<float>(3, 3, 2)}, {}),
                         doctest::Contains("layer 1 has 3 heads, expected 2"), attn::shape_error);
    auto bad = layers;
    bad[0](1, 2, 0) = std::nanf("");
    CHECK_THROWS_WITH_AS(fails(three_tokens, bad, {}),
                         doctest::Contains("weight (layer 0, head 1, row 2, column 0) = nan is not in [0, 1]"),
                         attn::numeric_error);
    bad[0](1, 2, 0) = 1.5f;
    CHECK_THROWS_AS(fails(three_tokens, bad, {}), attn::numeric_error);
    bad[0](1, 2, 0) = -0.25f;
    CHECK_THROWS_AS(fails(three_tokens, bad, {}), attn::numeric_error);

    attn::PageOptions options;
    options.styles = {attn::TokenStyle::emphasis};
    CHECK_THROWS_WITH_AS(fails(three_tokens, layers, options),
                         doctest::Contains("options.styles has 1 entries, expected 3"), attn::shape_error);
    options = {};
    options.next_tokens = {{}, {}};
    CHECK_THROWS_WITH_AS(fails(three_tokens, layers, options),
                         doctest::Contains("options.next_tokens has 2 lists, expected 3"), attn::shape_error);
    options.next_tokens = {{}, {{"x", 1.5}}, {}};
    CHECK_THROWS_WITH_AS(fails(three_tokens, layers, options),
                         doctest::Contains("options.next_tokens[1] gives 'x' 1.5, not a probability"),
                         attn::numeric_error);
    options = {};
    options.selected_position = 3;
    CHECK_THROWS_WITH_AS(fails(three_tokens, layers, options),
                         doctest::Contains("options.selected_position = 3 is out of range [-1, 3)"),
                         attn::argument_error);
    options = {};
    options.open_head = {0, 2};
    CHECK_THROWS_WITH_AS(fails(three_tokens, layers, options),
                         doctest::Contains("options.open_head.head = 2 is out of range [0, 2)"), attn::argument_error);
}

TEST_CASE("write_attention_page writes the page and names a file it cannot write") {
    attn::test::TempDir directory;
    const std::vector layers{causal_weights<double>(1, 3, 1)};
    const auto file = directory.path / "page.html";
    attn::write_attention_page(file, three_tokens, layers);
    std::ifstream in(file, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    CHECK(content.str() == attn::attention_page(three_tokens, layers));
    const auto unwritable = directory.path / "missing" / "page.html";
    CHECK_THROWS_WITH_AS(attn::write_attention_page(unwritable, three_tokens, layers),
                         doctest::Contains((unwritable.string() + ": cannot open").c_str()), attn::io_error);
}

TEST_CASE_TEMPLATE("top_next_tokens gives the k most probable tokens, ties to the lower id", T, float, double) {
    attn::Matrix<T> logits(2, 4);
    logits << 0, 1, 2, 2,  //
        5, 5, 5, 5;
    const std::vector<std::string> vocabulary{"w", "x", "y", "z"};
    const auto next = attn::top_next_tokens(logits, vocabulary, 3);
    REQUIRE(next.size() == 2);
    REQUIRE(next[0].size() == 3);
    const double total = 1 + std::exp(1.0) + 2 * std::exp(2.0);
    CHECK(next[0][0].token == "y");
    CHECK(next[0][1].token == "z");
    CHECK(next[0][2].token == "x");
    CHECK(next[0][0].probability == doctest::Approx(std::exp(2.0) / total).epsilon(1e-12));
    CHECK(next[0][2].probability == doctest::Approx(std::exp(1.0) / total).epsilon(1e-12));
    CHECK(next[1][0].token == "w");
    CHECK(next[1][2].token == "y");
    CHECK(attn::top_next_tokens(logits, vocabulary, 10)[1].size() == 4);
    CHECK_THROWS_WITH_AS(attn::top_next_tokens(logits, {"a", "b"}, 3),
                         doctest::Contains("top_next_tokens: logits has 4 columns, expected 2"), attn::shape_error);
    CHECK_THROWS_AS(attn::top_next_tokens(logits, vocabulary, 0), attn::argument_error);
    logits(1, 2) = std::numeric_limits<T>::quiet_NaN();
    CHECK_THROWS_WITH_AS(attn::top_next_tokens(logits, vocabulary, 3), doctest::Contains("row 1 of logits"),
                         attn::numeric_error);
}

TEST_CASE("attention_page embeds each layer's sliding window and refuses weight before it") {
    const attn::Index n = 6, window = 2;
    attn::AttentionWeights<float> sliding(2, n, n);  // row i spread evenly over keys i − 1 and i
    for (attn::Index h = 0; h < 2; ++h)
        for (attn::Index i = 0; i < n; ++i)
            for (attn::Index j = std::max<attn::Index>(0, i - window + 1); j <= i; ++j)
                sliding(h, i, j) = 1.0f / float(std::min(i + 1, window));
    const std::vector<attn::AttentionWeights<float>> layers{sliding, causal_weights<float>(2, n, 3)};
    const std::vector<std::string> tokens(std::size_t(n), "t");
    attn::PageOptions options;
    options.windows = {window, 0};
    const std::string data = embedded_data(attn::attention_page(tokens, layers, options));
    CHECK(data.find("\"windows\":[2,0]") != std::string::npos);
    CHECK(embedded_data(attn::attention_page(tokens, layers)).find("\"windows\":[0,0]") != std::string::npos);
    options.windows = {window};
    CHECK_THROWS_WITH_AS((void)attn::attention_page(tokens, layers, options),
                         doctest::Contains("options.windows has 1 entries, expected 2"), attn::shape_error);
    options.windows = {window, -1};
    CHECK_THROWS_WITH_AS((void)attn::attention_page(tokens, layers, options), doctest::Contains("options.windows[1]"),
                         attn::argument_error);
    // the causal layer's row 4 gives key 0 weight: a window of 2 there is refused, naming the weight
    options.windows = {window, window};
    CHECK_THROWS_WITH_AS((void)attn::attention_page(tokens, layers, options),
                         doctest::Contains("lies before the layer's window of 2 keys"), attn::argument_error);
    // a ModelAttention brings its windows: the same page, and options.windows beside it refused
    const attn::ModelAttention<float> attention(layers, {window, 0});
    CHECK(attn::attention_page(tokens, attention) == attn::attention_page(tokens, layers, [&] {
              attn::PageOptions with;
              with.windows = {window, 0};
              return with;
          }()));
    CHECK_THROWS_WITH_AS((void)attn::attention_page(tokens, attention, options),
                         doctest::Contains("a ModelAttention brings its own windows"), attn::argument_error);
    CHECK_THROWS_WITH_AS((void)attn::attention_page(tokens, attn::ModelAttention<float>(layers, {window, window})),
                         doctest::Contains("the attention's windows"), attn::argument_error);
}
