// The SVG heatmap of examples/store/svg_heatmap.hpp: well-formed XML (checked by a small
// tag-balance parser) with positions × positions cells per head.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "svg_heatmap.hpp"

namespace {
// Checks that tags nest and close, attributes are quoted and '&' only starts an entity.
bool well_formed(const std::string& xml, std::string& problem) {
    std::vector<std::string> open;
    std::size_t i = 0;
    while (i < xml.size()) {
        if (xml[i] == '&') {
            const auto end = xml.find(';', i);
            const std::string entity = xml.substr(i, end == std::string::npos ? 0 : end - i + 1);
            if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&apos;") {
                problem = "bad entity at " + std::to_string(i);
                return false;
            }
            i = end + 1;
            continue;
        }
        if (xml[i] != '<') {
            if (xml[i] == '>') {
                problem = "stray '>' at " + std::to_string(i);
                return false;
            }
            ++i;
            continue;
        }
        const auto end = xml.find('>', i);
        if (end == std::string::npos) {
            problem = "unterminated tag";
            return false;
        }
        std::string tag = xml.substr(i + 1, end - i - 1);
        i = end + 1;
        if (tag.front() == '?') continue;
        if (tag.front() == '/') {
            if (open.empty() || open.back() != tag.substr(1)) {
                problem = "mismatched </" + tag.substr(1) + ">";
                return false;
            }
            open.pop_back();
            continue;
        }
        if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) {
            problem = "unbalanced quotes in <" + tag + ">";
            return false;
        }
        const bool self_closing = tag.back() == '/';
        const std::string name = tag.substr(0, tag.find_first_of(" /"));
        if (!self_closing) open.push_back(name);
    }
    if (!open.empty()) problem = "unclosed <" + open.back() + ">";
    return open.empty();
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}
}  // namespace

TEST_CASE("heatmap SVG: well-formed, one cell per query-key pair in every head, labels escaped") {
    const std::vector<std::string> tokens = {"<s>", "sled</w>", "coffee</w>", "table</w>", "&"};
    std::vector<store::HeatmapPanel> panels;
    for (int h = 0; h < 3; ++h)
        panels.push_back({"layer 1, head " + std::to_string(h + 1), attn::Matrix<double>::Identity(5, 5)});
    const std::string svg = store::heatmap_svg(panels, tokens, 2);
    std::string problem;
    CHECK_MESSAGE(well_formed(svg, problem), problem);
    CHECK(count(svg, "<g class=\"head\"") == 3);
    CHECK(count(svg, "<rect class=\"cell\"") == 3 * 5 * 5);
    CHECK(count(svg, "&lt;s&gt;") >= 6);  // both axes of every head
    CHECK(svg.find("<s>") == std::string::npos);
    CHECK(svg.find("attention weight") != std::string::npos);  // the colour scale's legend
}

TEST_CASE("heatmap colours run from white at 0 to dark blue at 1, clamped") {
    CHECK(store::colour(0.0) == "#ffffff");
    CHECK(store::colour(1.0) == "#08306b");
    CHECK(store::colour(2.0) == store::colour(1.0));
    CHECK(store::colour(-1.0) == store::colour(0.0));
}
