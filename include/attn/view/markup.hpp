#pragma once
// Escaping text for HTML and XML element content and quoted attributes: the attention page
// (attn/view/attention_page.hpp) uses it, and so can SVG or HTML written by hand. Only the
// five predefined entities, which both languages know.

#include <string>
#include <string_view>

namespace attn {

/// text with & < > " ' replaced by their entities.
inline std::string markup_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace attn
