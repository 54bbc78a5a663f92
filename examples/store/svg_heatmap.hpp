#pragma once
// SVG heatmaps of attention weights: one head, or a grid of every layer's heads, with the
// tokens on both axes (rows: the attending position, columns: the attended one) and a
// colour scale from 0 to 1. Plain SVG 1.1, readable in any browser.

#include <attn/model/model.hpp>
#include <attn/view/markup.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace store {

inline std::string xml_escape(const std::string& text) {
    return attn::markup_escape(text);
}

/// White (0) to dark blue (1), as #rrggbb.
inline std::string colour(double weight) {
    const double w = std::clamp(weight, 0.0, 1.0);
    auto channel = [&](double full) { return int(255.0 - (255.0 - full) * w + 0.5); };
    char text[8];
    std::snprintf(text, sizeof text, "#%02x%02x%02x", channel(8), channel(48), channel(107));
    return text;
}

struct HeatmapPanel {
    std::string title;
    attn::Matrix<double> weights;  // (positions × positions)
};

/// One SVG with the panels side by side, `columns` per row. tokens label both axes.
inline std::string heatmap_svg(const std::vector<HeatmapPanel>& panels, const std::vector<std::string>& tokens,
                               int columns) {
    const int n = int(tokens.size());
    const double cell = n > 60 ? 6 : n > 30 ? 10 : 16;
    const double font = std::max(5.0, cell * 0.75);
    std::size_t longest = 1;
    for (const auto& t : tokens) longest = std::max(longest, t.size());
    const double margin = font * 0.62 * double(longest) + 8;  // room for the token labels
    const double panel = margin + cell * n + 24;
    const int rows = int((panels.size() + std::size_t(columns) - 1) / std::size_t(columns));
    const double width = panel * std::min<int>(columns, int(panels.size())) + 40;
    const double height = (panel + 20) * rows + 60;
    std::ostringstream svg;
    svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" font-family=\"monospace\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (std::size_t p = 0; p < panels.size(); ++p) {
        const double x0 = 10 + panel * double(p % std::size_t(columns));
        const double y0 = 10 + (panel + 20) * double(p / std::size_t(columns));
        svg << "<g class=\"head\" transform=\"translate(" << x0 << "," << y0 << ")\">\n"
            << "<text x=\"" << margin << "\" y=\"12\" font-size=\"12\">" << xml_escape(panels[p].title) << "</text>\n";
        const double top = 20 + margin;
        for (int i = 0; i < n; ++i) {
            svg << "<text x=\"" << margin - 3 << "\" y=\"" << top + cell * (i + 0.75) << "\" font-size=\"" << font
                << "\" text-anchor=\"end\">" << xml_escape(tokens[std::size_t(i)]) << "</text>\n";
            const double x = margin + cell * (i + 0.75);
            svg << "<text x=\"" << x << "\" y=\"" << top - 3 << "\" font-size=\"" << font
                << "\" transform=\"rotate(-90 " << x << " " << top - 3 << ")\">" << xml_escape(tokens[std::size_t(i)])
                << "</text>\n";
        }
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                const double w = panels[p].weights(i, j);
                svg << "<rect class=\"cell\" x=\"" << margin + cell * j << "\" y=\"" << top + cell * i << "\" width=\""
                    << cell << "\" height=\"" << cell << "\" fill=\"" << colour(w) << "\"><title>"
                    << xml_escape(tokens[std::size_t(i)]) << " → " << xml_escape(tokens[std::size_t(j)]) << ": " << w
                    << "</title></rect>\n";
            }
        svg << "</g>\n";
    }
    // colour scale
    const double y = height - 40;
    svg << "<g class=\"scale\">\n";
    for (int k = 0; k <= 10; ++k)
        svg << "<rect x=\"" << 10 + 20 * k << "\" y=\"" << y << "\" width=\"20\" height=\"12\" fill=\""
            << colour(k / 10.0) << "\"/>\n";
    svg << "<text x=\"10\" y=\"" << y + 26 << "\" font-size=\"11\">0</text>\n"
        << "<text x=\"" << 10 + 20 * 11 - 8 << "\" y=\"" << y + 26 << "\" font-size=\"11\">1</text>\n"
        << "<text x=\"" << 10 + 20 * 11 + 12 << "\" y=\"" << y + 10
        << "\" font-size=\"11\">attention weight (rows attend to columns)</text>\n</g>\n</svg>\n";
    return svg.str();
}

}  // namespace store
