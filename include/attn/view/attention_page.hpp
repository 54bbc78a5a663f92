#pragma once
// One self-contained HTML page for looking at attention in a browser: data, script and
// style inline, nothing fetched, opens from disk (Chromium, Firefox: standard DOM and
// canvas only). Views:
//   - model view: every layer × head as a small heatmap (L1H1 …); a click opens it;
//   - head view: the tokens in two columns, lines from the selected query to its keys in
//     one colour per head (Okabe–Ito), heads toggled on and off, the open head's top keys
//     outlined;
//   - matrix view: one head with tokens on both axes, values on hover, and the even spread
//     (1/(i+1) on each of the i + 1 visible keys) as a baseline to compare against;
//   - beside them, the next-token probabilities at the selected position, if given.
// With each layer's sliding window (a ModelAttention's own, or PageOptions::windows beside a
// list of layers), a sliding layer's keys before a row's window are drawn as
// unreachable (a pale apricot, its own legend entry and readout), not as zero attention (dark
// purple): the query could not see them. The even spread there is 1/(visible keys).
// Arrow keys move the selected position. Heatmaps are drawn on canvases (one pixel block per
// cell, max-pooled when there are more positions than pixels), so thousands of positions
// stay usable. Colours: viridis for weights, blue–white–vermillion for differences.
//
// The page exposes its state as `window.attnViewer` (selected position, open head,
// highlighted keys, render times, the decoded weights), which the browser test reads.
//
// Text handling: token strings are UTF-8; bytes that are not valid UTF-8 (a byte-level
// tokenizer's partial characters, say) are each replaced by U+FFFD rather than refused.
// Everything embedded is escaped for JSON inside <script> (`<`, `>`, `&`, U+2028, U+2029
// and control characters become \u escapes), so no token can close the script or the page.
//
// Weights are embedded as base64 of little-endian numbers, only the lower triangle when
// every weight above the diagonal is 0 (causal attention), head after head. WeightEncoding::
// automatic keeps float32 (exact for float input) up to 1,048,576 stored weights (a 5.6 MB
// page at most), 16-bit fixed point on [0, 1] (absolute error ≤ 0.5/65535 ≈ 7.7e-6) up to
// 4,194,304 (11 MB), and 8 bits per weight beyond: each row as codes of its own largest weight
// (a float32 per row; error ≤ 0.5/255 of the row's largest weight, far less than the colour
// ramp's step in a row of small weights), or, in a head where those cost more than a quarter
// more bytes (a diffuse or noisy head), codes of 1 (error ≤ 0.5/255 ≈ 2.0e-3, the colour ramp's own step). The 8-bit
// codes are entropy-coded, losslessly, one chunk per head (detail::encode_codes and encode_weight_chunk below): a long
// row spends most of its weights near 0, or, in a diffuse head, near one value, so a 12-layer × 12-head page at 1,024
// positions (75.6 million weights) takes 0.6–1.3 bits per weight, not 8. Each head also gets a thumbnail, the largest
// 8-bit colour code in each cell of a g × g grid (g = thumbnail_cells below), so that the model view draws every head
// without decoding any: the page decodes a head only when a view shows it, and keeps it. The 160-position store model's
// 16 heads are 206,080 weights: float32, about 1.1 MB of page.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/text/utf8.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"
#include "attn/view/detail/page_assets.hpp"
#include "attn/view/markup.hpp"

namespace attn {

/// How a token is shown in the page: as text, emphasised (the part of a text a reader
/// should watch, e.g. a product's name), or as a marker (special tokens such as <s>).
enum class TokenStyle { plain, emphasis, marker };

/// One candidate next token and its probability.
struct NextToken {
    std::string token;
    double probability = 0;
};

/// How the page stores the weights (see the top of this file); unorm8 is always entropy-coded.
enum class WeightEncoding { automatic, float32, unorm16, unorm8 };

/// The view a page opens with.
enum class PageView { model, head, matrix };

struct PageOptions {
    std::string title = "attention";
    std::vector<TokenStyle> styles;                   ///< empty, or one per token
    std::vector<std::vector<NextToken>> next_tokens;  ///< empty, or one list per position, most probable first
    Index selected_position = -1;                     ///< position selected when the page opens; -1: the last
    HeadId open_head{};                               ///< head the head and matrix views open with (0-based)
    PageView view = PageView::model;                  ///< view shown when the page opens
    WeightEncoding encoding = WeightEncoding::automatic;
    /// Empty, or one per layer: the layer's sliding window (LayerDescription::window; 0: none;
    /// layer_windows(settings) gives a model's).
    /// Row i of a layer with window w sees keys i − w + 1 … i; the page shows the keys before
    /// as unreachable, and their weights must be 0 (argument_error otherwise).
    std::vector<Index> windows;
};

namespace detail {

/// `text` as a JSON string literal that is also safe inside an HTML <script> element.
inline void append_script_json_string(std::string& out, std::string_view text) {
    static const char hex[] = "0123456789abcdef";
    auto unicode_escape = [&](unsigned code) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += hex[(code >> shift) & 0xFu];
    };
    out += '"';
    std::size_t position = 0;
    while (position < text.size()) {
        const Utf8Step step = utf8_step(text, position);
        if (step.problem) {  // one replacement character per invalid byte, as documented above
            unicode_escape(0xFFFD);
            ++position;
            continue;
        }
        const char32_t c = step.code_point;
        if (c == '"')
            out += "\\\"";
        else if (c == '\\')
            out += "\\\\";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x2028 || c == 0x2029 || c == 0x7F)
            unicode_escape(static_cast<unsigned>(c));
        else
            out.append(text.substr(position, step.length));
        position += step.length;
    }
    out += '"';
}

/// A number that reads back to the same double (max_digits10 significant digits).
inline void append_json_number(std::string& out, double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*g", std::numeric_limits<double>::max_digits10, value);
    out += buffer;
}

inline void append_base64(std::string& out, const std::vector<std::uint8_t>& bytes) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const std::uint32_t triple =
            (std::uint32_t(bytes[i]) << 16) | (std::uint32_t(bytes[i + 1]) << 8) | bytes[i + 2];
        for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(triple >> shift) & 0x3Fu];
    }
    if (i < bytes.size()) {
        const bool two = i + 1 < bytes.size();
        const std::uint32_t triple = (std::uint32_t(bytes[i]) << 16) | (two ? std::uint32_t(bytes[i + 1]) << 8 : 0u);
        out += alphabet[(triple >> 18) & 0x3Fu];
        out += alphabet[(triple >> 12) & 0x3Fu];
        out += two ? alphabet[(triple >> 6) & 0x3Fu] : '=';
        out += '=';
    }
}

inline const char* token_style_name(TokenStyle style) {
    switch (style) {
        case TokenStyle::emphasis:
            return "emphasis";
        case TokenStyle::marker:
            return "marker";
        case TokenStyle::plain:
            break;
    }
    return "plain";
}

/// A page's layers, each heads × (n × n), by address: a ModelAttention's are not copied.
template <class T>
using PageLayers = std::vector<const AttentionWeights<T>*>;

/// The checks of attention_page's inputs; returns whether every weight above the diagonal is 0.
/// windows: empty or one per layer, named `windows_name` in messages.
template <class T>
bool check_page_inputs(const std::vector<std::string>& tokens, const PageLayers<T>& layers, const PageOptions& options,
                       const std::vector<Index>& windows, const char* windows_name) {
    constexpr const char* function = "attention_page";
    const auto n = static_cast<Index>(tokens.size());
    if (n == 0) throw shape_error(message(function, ": tokens is empty; a page needs at least one position"));
    if (layers.empty()) throw shape_error(message(function, ": layers is empty; a page needs at least one layer"));
    const Index heads = layers.front()->heads();
    if (!windows.empty() && windows.size() != layers.size())
        throw shape_error(message(function, ": ", windows_name, " has ", windows.size(), " entries, expected ",
                                  layers.size(), " (one per layer) or none"));
    bool lower = true;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const AttentionWeights<T>& layer = *layers[l];
        const Index window = windows.empty() ? 0 : windows[l];
        if (window < 0)
            throw argument_error(message(function, ": ", windows_name, "[", l, "] = ", window, " (0: none, or > 0)"));
        if (layer.heads() == 0 || layer.heads() != heads)
            throw shape_error(message(function, ": layer ", l, " has ", layer.heads(), " heads, expected ", heads,
                                      " (as layer 0), at least 1"));
        if (layer.rows() != n || layer.cols() != n)
            throw shape_error(message(function, ": layer ", l, " has heads of ", layer.rows(), " × ", layer.cols(),
                                      " weights, expected ", n, " × ", n, " (one row and column per token)"));
        for (Index h = 0; h < heads; ++h)
            for (Index i = 0; i < n; ++i)
                for (Index j = 0; j < n; ++j) {
                    const double w = static_cast<double>(layer(h, i, j));
                    // A softmax row's entries are at most 1; a little above it is rounding.
                    if (!(w >= 0 && w <= 1 + 1e-5))
                        throw numeric_error(message(function, ": weight (layer ", l, ", head ", h, ", row ", i,
                                                    ", column ", j, ") = ", w, " is not in [0, 1]"));
                    if (j > i && w != 0) lower = false;
                    if (window > 0 && j <= i - window && w != 0)
                        throw argument_error(message(function, ": weight (layer ", l, ", head ", h, ", row ", i,
                                                     ", column ", j, ") = ", w, " lies before the layer's window of ",
                                                     window, " keys (", windows_name, ")"));
                }
    }
    if (!options.styles.empty() && static_cast<Index>(options.styles.size()) != n)
        throw shape_error(message(function, ": options.styles has ", options.styles.size(), " entries, expected ", n,
                                  " (one per token) or none"));
    if (!options.next_tokens.empty() && static_cast<Index>(options.next_tokens.size()) != n)
        throw shape_error(message(function, ": options.next_tokens has ", options.next_tokens.size(),
                                  " lists, expected ", n, " (one per position) or none"));
    for (std::size_t i = 0; i < options.next_tokens.size(); ++i)
        for (const NextToken& next : options.next_tokens[i])
            if (!(next.probability >= 0 && next.probability <= 1))
                throw numeric_error(message(function, ": options.next_tokens[", i, "] gives '", next.token, "' ",
                                            next.probability, ", not a probability in [0, 1]"));
    if (options.selected_position < -1 || options.selected_position >= n)
        throw argument_error(message(function, ": options.selected_position = ", options.selected_position,
                                     " is out of range [-1, ", n, ")"));
    check_index(function, "options.open_head.layer", options.open_head.layer, static_cast<Index>(layers.size()));
    check_index(function, "options.open_head.head", options.open_head.head, heads);
    return lower;
}

/// The value the page shows for weight w stored in float32 or unorm16 (what its script decodes).
inline double stored_value(double w, WeightEncoding encoding) {
    if (encoding == WeightEncoding::float32) return static_cast<double>(static_cast<float>(w));
    return double(std::lround(std::min(w, 1.0) * 65535.0)) * (1.0 / 65535.0);
}

/// The weights of head (l, h) as bytes in float32 or unorm16, row by row (only columns 0 … i
/// of row i when `lower`), appended to `bytes`.
template <class T>
void append_raw_head(std::vector<std::uint8_t>& bytes, const AttentionWeights<T>& layer, Index h, bool lower,
                     WeightEncoding encoding) {
    const Index n = layer.rows();
    for (Index i = 0; i < n; ++i)
        for (Index j = 0, end = lower ? i + 1 : n; j < end; ++j) {
            const double w = static_cast<double>(layer(h, i, j));
            if (encoding == WeightEncoding::float32) {
                const auto value = static_cast<float>(w);
                std::uint32_t bits = 0;
                std::memcpy(&bits, &value, sizeof bits);
                for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
            } else {
                const auto q = static_cast<std::uint32_t>(std::lround(std::min(w, 1.0) * 65535.0));
                bytes.push_back(static_cast<std::uint8_t>(q & 0xFFu));
                bytes.push_back(static_cast<std::uint8_t>(q >> 8));
            }
        }
}

// The entropy coding of 8-bit codes (weights' unorm8 codes, thumbnails' colour codes): a
// canonical Huffman code over 272 symbols — 0 … 255 a code, 256 + k (k = 0 … 15) a run of
// 2^(k+1) zero codes, so that long runs of (near-)zero weights cost a few bits, not one per
// weight. A chunk is 136 bytes of code lengths (two 4-bit lengths per byte, symbol 2b in the
// high half; 0: unused; at most 12 bits), then the codes, most significant bit first, the last
// byte padded with zeros. The page's script decodes it with a 4,096-entry table.
constexpr int code_symbols = 272, code_run_symbols = 16, code_longest = 12;

/// Appends `codes` as one chunk (see above).
inline void encode_codes(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& codes) {
    std::vector<int> symbols;
    symbols.reserve(codes.size());
    for (std::size_t i = 0; i < codes.size();) {
        if (codes[i] != 0) {
            symbols.push_back(codes[i++]);
            continue;
        }
        std::size_t zeros = 0;
        while (i + zeros < codes.size() && codes[i + zeros] == 0) ++zeros;
        i += zeros;
        while (zeros >= 2) {  // the largest runs first: 2^16, …, 4, 2
            int k = code_run_symbols - 1;
            while ((std::size_t(2) << k) > zeros) --k;
            symbols.push_back(256 + k);
            zeros -= std::size_t(2) << k;
        }
        if (zeros == 1) symbols.push_back(0);
    }
    // Huffman code lengths from the symbols' counts, limited to code_longest bits.
    std::vector<std::uint64_t> count(code_symbols, 0);
    for (int symbol : symbols) ++count[std::size_t(symbol)];
    std::vector<int> length(code_symbols, 0);
    {
        struct Node {
            std::uint64_t weight;
            int left, right;  // children, or −1 − symbol for a leaf in left
        };
        std::vector<Node> nodes;
        using Entry = std::pair<std::uint64_t, int>;
        std::vector<Entry> heap;
        const auto later = [](const Entry& a, const Entry& b) { return a > b; };
        for (int s = 0; s < code_symbols; ++s)
            if (count[std::size_t(s)] > 0) {
                nodes.push_back({count[std::size_t(s)], -1 - s, -1});
                heap.emplace_back(count[std::size_t(s)], int(nodes.size()) - 1);
            }
        std::make_heap(heap.begin(), heap.end(), later);
        while (heap.size() > 1) {
            std::pop_heap(heap.begin(), heap.end(), later);
            const Entry a = heap.back();
            heap.pop_back();
            std::pop_heap(heap.begin(), heap.end(), later);
            const Entry b = heap.back();
            heap.pop_back();
            nodes.push_back({a.first + b.first, a.second, b.second});
            heap.emplace_back(a.first + b.first, int(nodes.size()) - 1);
            std::push_heap(heap.begin(), heap.end(), later);
        }
        // Depths by walking down from the root (iteratively: a skewed tree is 272 deep).
        std::vector<std::pair<int, int>> stack;
        if (!heap.empty()) stack.emplace_back(heap.front().second, 0);
        while (!stack.empty()) {
            const auto [index, depth] = stack.back();
            stack.pop_back();
            const Node& node = nodes[std::size_t(index)];
            if (node.left < 0) {
                length[std::size_t(-1 - node.left)] = std::max(depth, 1);  // a lone symbol still needs a bit
                continue;
            }
            stack.emplace_back(node.left, depth + 1);
            stack.emplace_back(node.right, depth + 1);
        }
    }
    // Longer than code_longest: cut to it, then lengthen the longest shorter codes until the
    // lengths fit a prefix code again (Kraft: Σ 2^(longest − length) ≤ 2^longest).
    long kraft = 0;
    for (int& l : length)
        if (l > 0) {
            l = std::min(l, code_longest);
            kraft += 1L << (code_longest - l);
        }
    while (kraft > (1L << code_longest)) {
        int pick = -1;
        for (int s = 0; s < code_symbols; ++s)
            if (length[std::size_t(s)] > 0 && length[std::size_t(s)] < code_longest &&
                (pick < 0 || length[std::size_t(s)] > length[std::size_t(pick)] ||
                 (length[std::size_t(s)] == length[std::size_t(pick)] &&
                  count[std::size_t(s)] < count[std::size_t(pick)])))
                pick = s;
        kraft -= 1L << (code_longest - length[std::size_t(pick)] - 1);
        ++length[std::size_t(pick)];
    }
    // Canonical codes: by length, then by symbol.
    std::vector<std::uint32_t> code(code_symbols, 0);
    std::uint32_t next = 0;
    for (int l = 1; l <= code_longest; ++l) {
        for (int s = 0; s < code_symbols; ++s)
            if (length[std::size_t(s)] == l) code[std::size_t(s)] = next++;
        next <<= 1;
    }
    for (int s = 0; s < code_symbols; s += 2)
        out.push_back(static_cast<std::uint8_t>(length[std::size_t(s)] << 4 | length[std::size_t(s) + 1]));
    std::uint32_t buffer = 0;
    int bits = 0;
    for (int symbol : symbols) {
        buffer = buffer << length[std::size_t(symbol)] | code[std::size_t(symbol)];
        bits += length[std::size_t(symbol)];
        while (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>(buffer >> bits));
        }
        buffer &= (1u << bits) - 1;
    }
    if (bits > 0) out.push_back(static_cast<std::uint8_t>(buffer << (8 - bits)));
}

/// The `count` codes of the chunk at bytes[begin, end): the inverse of encode_codes, as the
/// page's script does it; format_error for a chunk that is not one.
inline std::vector<std::uint8_t> decode_codes(const std::vector<std::uint8_t>& bytes, std::size_t begin,
                                              std::size_t end, std::size_t count) {
    const std::size_t table_bytes = code_symbols / 2;
    if (end < begin + table_bytes || end > bytes.size())
        throw format_error("decode_codes: the chunk is shorter than its table of code lengths");
    std::vector<int> length(code_symbols);
    for (std::size_t b = 0; b < table_bytes; ++b) {
        length[2 * b] = bytes[begin + b] >> 4;
        length[2 * b + 1] = bytes[begin + b] & 0xF;
    }
    std::vector<std::uint16_t> table(std::size_t(1) << code_longest, 0);  // symbol << 4 | length; 0: no code
    std::uint32_t next = 0;
    for (int l = 1; l <= code_longest; ++l) {
        for (int s = 0; s < code_symbols; ++s)
            if (length[std::size_t(s)] == l) {
                const std::uint32_t first = next++ << (code_longest - l), last = first + (1u << (code_longest - l));
                if (last > table.size()) throw format_error("decode_codes: the code lengths are not a prefix code");
                for (std::uint32_t e = first; e < last; ++e) table[e] = static_cast<std::uint16_t>(s << 4 | l);
            }
        next <<= 1;
    }
    std::vector<std::uint8_t> out;
    out.reserve(count);
    std::uint32_t buffer = 0;
    int bits = 0;
    std::size_t at = begin + table_bytes;
    while (out.size() < count) {
        while (bits < code_longest) {
            buffer = buffer << 8 | (at < end ? bytes[at] : 0u);
            ++at;
            bits += 8;
        }
        const std::uint16_t entry = table[(buffer >> (bits - code_longest)) & ((1u << code_longest) - 1)];
        if (entry == 0 || at > end + 2) throw format_error("decode_codes: a code that is not in the table");
        bits -= entry & 0xF;
        buffer &= (1u << bits) - 1;
        const int symbol = entry >> 4;
        if (symbol < 256)
            out.push_back(static_cast<std::uint8_t>(symbol));
        else
            out.insert(out.end(), std::size_t(2) << (symbol - 256), 0);
    }
    if (out.size() != count) throw format_error("decode_codes: a run of zeros goes past the chunk's codes");
    return out;
}

/// A head's 8-bit codes (rows of n, or of i + 1 when `lower`) as a chunk of weights: one byte
/// naming the transform, then encode_codes of the codes as they are (0) or of each row's
/// differences from the code before it, the first as it is (1), whichever is shorter. A
/// near-even row (an untrained model's, a diffuse head's) is the same code over and over:
/// its differences are runs of zeros.
inline void encode_weight_chunk(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& codes, Index n,
                                bool lower) {
    std::vector<std::uint8_t> differences(codes.size());
    for (std::size_t start = 0, i = 0; start < codes.size(); start += std::size_t(lower ? i + 1 : n), ++i)
        for (std::size_t j = 0, end = std::size_t(lower ? i + 1 : n); j < end; ++j)
            differences[start + j] =
                static_cast<std::uint8_t>(j == 0 ? codes[start] : codes[start + j] - codes[start + j - 1]);
    std::vector<std::uint8_t> as_is{0}, as_differences{1};
    encode_codes(as_is, codes);
    encode_codes(as_differences, differences);
    const std::vector<std::uint8_t>& shorter = as_differences.size() < as_is.size() ? as_differences : as_is;
    out.insert(out.end(), shorter.begin(), shorter.end());
}

/// The codes of a chunk encode_weight_chunk wrote at bytes[begin, end); format_error if it is not one.
inline std::vector<std::uint8_t> decode_weight_chunk(const std::vector<std::uint8_t>& bytes, std::size_t begin,
                                                     std::size_t end, Index n, bool lower) {
    if (end <= begin || bytes[begin] > 1) throw format_error("decode_weight_chunk: no transform byte (0 or 1)");
    const std::size_t count = lower ? std::size_t(n) * std::size_t(n + 1) / 2 : std::size_t(n) * std::size_t(n);
    std::vector<std::uint8_t> codes = decode_codes(bytes, begin + 1, end, count);
    if (bytes[begin] == 1)
        for (std::size_t start = 0, i = 0; start < codes.size(); start += std::size_t(lower ? i + 1 : n), ++i)
            for (std::size_t j = 1, row_end = std::size_t(lower ? i + 1 : n); j < row_end; ++j)
                codes[start + j] = static_cast<std::uint8_t>(codes[start + j] + codes[start + j - 1]);
    return codes;
}

/// Cells per side of each head's thumbnail: the model view's canvas size in pixels (what its
/// script computes from the number of heads), or n when that is fewer.
inline Index thumbnail_cells(Index heads, Index n) {
    const Index size = std::max<Index>(64, std::min<Index>(140, 880 / heads - 14));
    return std::min(n, size);
}

/// The weights in `encoding` and the thumbnails, for the page: `weights` the bytes of every head
/// (raw; for unorm8 a byte, 1 if the head's n row scales follow as float32 and 0 if they are all
/// 1, then encode_weight_chunk's chunk), with
/// `chunks` the L·H + 1 offsets of the heads, `thumbnails` one coded
/// chunk per head (offsets in `thumbnail_chunks`), each g × g cells of the largest colour code
/// round(255 · stored weight) in the cell, row bucket ⌊i·g/n⌋, column bucket ⌊j·g/n⌋.
struct EncodedWeights {
    std::vector<std::uint8_t> weights, thumbnails;
    std::vector<std::size_t> chunks, thumbnail_chunks;
    Index thumbnail = 0;
};

template <class T>
EncodedWeights encode_weights(const PageLayers<T>& layers, bool lower, WeightEncoding encoding) {
    const Index n = layers.front()->rows(), heads = layers.front()->heads();
    EncodedWeights out;
    out.thumbnail = thumbnail_cells(heads, n);
    const Index g = out.thumbnail;
    std::vector<std::uint8_t> codes, cells;
    std::vector<float> row_scales(static_cast<std::size_t>(n));
    for (const AttentionWeights<T>* stack : layers)
        for (Index h = 0; h < heads; ++h) {
            const AttentionWeights<T>& layer = *stack;
            out.chunks.push_back(out.weights.size());
            if (encoding == WeightEncoding::unorm8) {
                // Codes of each row's own largest weight (row_scales[i]; code round(255 · w /
                // row_scales[i])) keep 8 bits in a row of small weights, but in a diffuse head,
                // every weight near 1/(i+1) and each a little different, they cost up to 7 bits
                // a weight where codes of 1 are mostly 0: the head keeps them when they take at
                // most a quarter more bytes, and codes of 1 (row_scales all 1) otherwise.
                std::vector<std::uint8_t> relative_codes, relative_chunk, absolute_chunk;
                codes.clear();
                for (Index i = 0; i < n; ++i) {
                    const Index end = lower ? i + 1 : n;
                    double largest = 0;
                    for (Index j = 0; j < end; ++j) largest = std::max(largest, static_cast<double>(layer(h, i, j)));
                    row_scales[std::size_t(i)] = static_cast<float>(std::min(largest, 1.0));
                    const double scale = static_cast<double>(row_scales[std::size_t(i)]);
                    for (Index j = 0; j < end; ++j) {
                        const double w = std::min(static_cast<double>(layer(h, i, j)), 1.0);
                        relative_codes.push_back(
                            static_cast<std::uint8_t>(scale > 0 ? std::lround(std::min(w / scale, 1.0) * 255.0) : 0));
                        codes.push_back(static_cast<std::uint8_t>(std::lround(w * 255.0)));
                    }
                }
                encode_weight_chunk(relative_chunk, relative_codes, n, lower);
                encode_weight_chunk(absolute_chunk, codes, n, lower);
                const bool relative = 4 * (relative_chunk.size() + 4 * std::size_t(n)) <= 5 * absolute_chunk.size();
                out.weights.push_back(relative ? 1 : 0);
                if (relative) {
                    for (const float scale : row_scales) {
                        std::uint32_t bits = 0;
                        std::memcpy(&bits, &scale, sizeof bits);
                        for (int b = 0; b < 4; ++b) out.weights.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
                    }
                    codes.swap(relative_codes);
                } else {
                    std::fill(row_scales.begin(), row_scales.end(), 1.0f);
                }
                const std::vector<std::uint8_t>& chunk = relative ? relative_chunk : absolute_chunk;
                out.weights.insert(out.weights.end(), chunk.begin(), chunk.end());
            } else {
                append_raw_head(out.weights, layer, h, lower, encoding);
            }
            cells.assign(std::size_t(g * g), 0);
            for (Index i = 0, k = 0; i < n; ++i) {
                std::uint8_t* cell_row = cells.data() + (i * g / n) * g;
                for (Index j = 0, end = lower ? i + 1 : n; j < end; ++j, ++k) {
                    // What the page's script decodes: for 8 bits, float(code · (row scale / 255)).
                    const double v = encoding == WeightEncoding::unorm8
                                         ? static_cast<double>(static_cast<float>(
                                               double(codes[std::size_t(k)]) *
                                               (static_cast<double>(row_scales[std::size_t(i)]) / 255.0)))
                                         : stored_value(static_cast<double>(layer(h, i, j)), encoding);
                    const auto code = static_cast<std::uint8_t>(std::lround(std::min(std::max(v, 0.0), 1.0) * 255.0));
                    std::uint8_t& cell = cell_row[j * g / n];
                    cell = std::max(cell, code);
                }
            }
            out.thumbnail_chunks.push_back(out.thumbnails.size());
            encode_codes(out.thumbnails, cells);
        }
    out.chunks.push_back(out.weights.size());
    out.thumbnail_chunks.push_back(out.thumbnails.size());
    return out;
}

inline WeightEncoding resolve_encoding(WeightEncoding asked, std::size_t stored) {
    if (asked != WeightEncoding::automatic) return asked;
    if (stored <= (std::size_t(1) << 20)) return WeightEncoding::float32;
    if (stored <= (std::size_t(1) << 22)) return WeightEncoding::unorm16;
    return WeightEncoding::unorm8;
}

/// attention_page over layers by address, with each layer's window (empty: none).
template <class T>
std::string page_of(const std::vector<std::string>& tokens, const PageLayers<T>& layers, const PageOptions& options,
                    const std::vector<Index>& windows, const char* windows_name) {
    const bool lower = check_page_inputs(tokens, layers, options, windows, windows_name);
    const auto n = static_cast<Index>(tokens.size());
    const Index heads = layers.front()->heads();
    const std::size_t per_head = lower ? std::size_t(n) * std::size_t(n + 1) / 2 : std::size_t(n) * std::size_t(n);
    const WeightEncoding encoding = resolve_encoding(options.encoding, per_head * layers.size() * std::size_t(heads));
    const char* encoding_name = encoding == WeightEncoding::float32   ? "float32"
                                : encoding == WeightEncoding::unorm16 ? "unorm16"
                                                                      : "unorm8";

    std::string data = "{\"format\":\"attn-attention-page\",\"version\":1,\"title\":";
    append_script_json_string(data, options.title);
    data += ",\"tokens\":[";
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i) data += ',';
        append_script_json_string(data, tokens[i]);
    }
    data += "],\"styles\":[";
    for (Index i = 0; i < n; ++i) {
        const TokenStyle style = options.styles.empty() ? TokenStyle::plain : options.styles[std::size_t(i)];
        data += i ? ",\"" : "\"";
        data += token_style_name(style);
        data += '"';
    }
    data += "],\"layers\":" + std::to_string(layers.size()) + ",\"heads\":" + std::to_string(heads) +
            ",\"positions\":" + std::to_string(n) + ",\"storage\":\"" + (lower ? "lower" : "full") +
            "\",\"encoding\":\"" + encoding_name +
            "\",\"selected\":" + std::to_string(options.selected_position < 0 ? n - 1 : options.selected_position) +
            ",\"open\":[" + std::to_string(options.open_head.layer) + "," + std::to_string(options.open_head.head) +
            "],\"view\":\"" +
            (options.view == PageView::model  ? "model"
             : options.view == PageView::head ? "head"
                                              : "matrix") +
            "\",\"next\":";
    if (options.next_tokens.empty()) {
        data += "null";
    } else {
        data += '[';
        for (std::size_t i = 0; i < options.next_tokens.size(); ++i) {
            data += i ? ",[" : "[";
            for (std::size_t k = 0; k < options.next_tokens[i].size(); ++k) {
                data += k ? ",[" : "[";
                append_script_json_string(data, options.next_tokens[i][k].token);
                data += ',';
                append_json_number(data, options.next_tokens[i][k].probability);
                data += ']';
            }
            data += ']';
        }
        data += ']';
    }
    data += ",\"windows\":[";  // each layer's sliding window, 0: none
    for (std::size_t l = 0; l < layers.size(); ++l) {
        if (l) data += ',';
        data += std::to_string(windows.empty() ? 0 : windows[l]);
    }
    data += ']';
    const EncodedWeights encoded = encode_weights(layers, lower, encoding);
    const auto offsets = [&](const std::vector<std::size_t>& list) {
        data += '[';
        for (std::size_t k = 0; k < list.size(); ++k) {
            if (k) data += ',';
            data += std::to_string(list[k]);
        }
        data += ']';
    };
    data += ",\"chunks\":";
    offsets(encoded.chunks);
    data += ",\"thumbnail\":" + std::to_string(encoded.thumbnail) + ",\"thumbnail_chunks\":";
    offsets(encoded.thumbnail_chunks);
    data += ",\"thumbnails\":\"";
    append_base64(data, encoded.thumbnails);
    data += "\",\"weights\":\"";
    append_base64(data, encoded.weights);
    data += "\"}";

    std::string page;
    page.reserve(data.size() + 64 * 1024);
    page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
    page += markup_escape(options.title);
    page += "</title>\n<style>\n";
    page += page_style;
    page += "</style>\n</head>\n<body>\n";
    page += page_body;
    page += "<script type=\"application/json\" id=\"attn-data\">";
    page += data;
    page += "</script>\n<script>\n";
    for (const char* part : page_script) page += part;
    page += "</script>\n</body>\n</html>\n";
    return page;
}

}  // namespace detail

/// The page for `tokens` (n strings) and `layers`: one AttentionWeights per layer, each
/// heads × (n × n) with query rows and key columns, every weight in [0, 1]. Throws
/// shape_error for mismatched sizes, numeric_error for a weight or probability that is NaN
/// or outside [0, 1], argument_error for an out-of-range selection.
template <class T>
std::string attention_page(const std::vector<std::string>& tokens, const std::vector<AttentionWeights<T>>& layers,
                           const PageOptions& options = {}) {
    detail::PageLayers<T> by_address;
    for (const AttentionWeights<T>& layer : layers) by_address.push_back(&layer);
    return detail::page_of(tokens, by_address, options, options.windows, "options.windows");
}

/// The same for a forward pass's attention, layers × heads × (n × n), whose own windows
/// (ModelAttention::windows) mark the unreachable keys: options.windows must be empty.
template <class T>
std::string attention_page(const std::vector<std::string>& tokens, const ModelAttention<T>& attention,
                           const PageOptions& options = {}) {
    if (!options.windows.empty())
        throw argument_error(
            "attention_page: options.windows is for a list of layers; a ModelAttention brings its own windows");
    detail::PageLayers<T> by_address;
    for (Index l = 0; l < attention.layers(); ++l) by_address.push_back(&attention.layer(l));
    return detail::page_of(tokens, by_address, options, attention.windows(), "the attention's windows");
}

/// Writes attention_page(tokens, attention, options) to `file`; io_error (naming it) on failure.
template <class Attention>
void write_attention_page(const std::filesystem::path& file, const std::vector<std::string>& tokens,
                          const Attention& attention, const PageOptions& options = {}) {
    const std::string page = attention_page(tokens, attention, options);
    std::ofstream out(file, std::ios::binary);
    if (!out) throw io_error(detail::message(file.string(), ": cannot open for writing the attention page"));
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    if (!out.flush()) throw io_error(detail::message(file.string(), ": writing the attention page failed"));
}

/// The k most probable next tokens at every position of `logits` (positions × vocabulary),
/// softmax in double; ties go to the lower id. `vocabulary` names each column.
template <class D>
std::vector<std::vector<NextToken>> top_next_tokens(const Eigen::MatrixBase<D>& logits,
                                                    const std::vector<std::string>& vocabulary, Index k = 5) {
    constexpr const char* function = "top_next_tokens";
    detail::check_positive(function, "k", k);
    detail::check_cols(function, "logits", logits, static_cast<Index>(vocabulary.size()),
                       "one column per vocabulary entry");
    std::vector<std::vector<NextToken>> out(static_cast<std::size_t>(logits.rows()));
    std::vector<Index> order(vocabulary.size());
    for (Index i = 0; i < logits.rows(); ++i) {
        const Eigen::VectorXd z = logits.row(i).transpose().template cast<double>();
        if (!z.allFinite())
            throw numeric_error(detail::message(function, ": row ", i, " of logits has a NaN or infinite value"));
        const Eigen::VectorXd e = (z.array() - z.maxCoeff()).exp();
        const double total = e.sum();
        std::iota(order.begin(), order.end(), Index(0));
        const auto take = static_cast<std::ptrdiff_t>(std::min<Index>(k, static_cast<Index>(order.size())));
        std::partial_sort(order.begin(), order.begin() + take, order.end(),
                          [&](Index a, Index b) { return e(a) > e(b) || (e(a) == e(b) && a < b); });
        for (std::ptrdiff_t r = 0; r < take; ++r)
            out[std::size_t(i)].push_back(
                {vocabulary[std::size_t(order[std::size_t(r)])], e(order[std::size_t(r)]) / total});
    }
    return out;
}

}  // namespace attn
