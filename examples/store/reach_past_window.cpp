// reach_past_window: how much of a description token's attention lands 4 or more tokens
// back (what a four-token window can't see) and on the markers <s> and <sep>, over the
// first 300 validation products (--products all: the whole split), against an even spread.
// Measured inside the attention kernel (ForwardOptions::statistics): no attention matrix is kept.
#include <attn/analysis/head_scores.hpp>
#include <attn/store.hpp>

#include <algorithm>
#include <iostream>
#include <set>

#include "store_model.hpp"

namespace {
std::string thousands(attn::Index n) {
    std::string digits = std::to_string(n);
    for (int at = int(digits.size()) - 3; at > 0; at -= 3) digits.insert(std::size_t(at), ",");
    return digits;
}
}  // namespace

int main(int argc, char** argv) {
    const auto flags =
        store::analysis_flags(argc, argv, "reach_past_window",
                              "Weight of description tokens 4 or more tokens back and on <s>/<sep>, per layer\n"
                              "and overall, over the first 300 validation products, against an even spread.");
    return store::report_errors("reach_past_window", [&] {
        const auto directory = store::model_directory(flags.model);
        const auto model = attn::Model<float>::load(directory);
        const attn::Tokenizer& vocabulary = model.tokenizer();
        const auto products = store::read_split(directory / "validation.tsv", flags.products);
        attn::HeadAverage far(attn::HeadAverage::Weighting::per_query);
        attn::HeadAverage markers(attn::HeadAverage::Weighting::per_query);
        attn::HeadStatisticsRequest request;
        request.back = 4;
        request.back_excludes_markers = true;
        attn::ForwardOptions options;
        options.statistics = &request;
        std::size_t described = 0, repeating = 0;
        for (std::size_t k = 0; k < products.size(); ++k) {
            store::progress(k + 1, products.size());
            const std::vector<int> ids = attn::store::product_ids(model, products[k].name, products[k].description);
            const std::size_t sep = store::separator_position(vocabulary, ids);
            std::vector<attn::Index> queries;  // the description's tokens, end marker left out
            for (std::size_t i = sep + 1; i < ids.size(); ++i)
                if (ids[i] != vocabulary.end_id()) queries.push_back(attn::Index(i));
            if (queries.empty()) continue;  // a product with no description
            ++described;
            const std::set<int> name(ids.begin() + 1, ids.begin() + std::ptrdiff_t(sep));
            repeating += std::any_of(ids.begin() + std::ptrdiff_t(sep) + 1, ids.end(),
                                     [&](int id) { return name.count(id) > 0; });
            request.markers = {0, attn::Index(sep)};                         // <s> and <sep>
            const auto statistics = model.forward(ids, options).statistics;  // per layer, heads × positions
            far.add(
                attn::score_heads(statistics, queries, attn::KeyPattern::at_least_back(request.back, request.markers)));
            markers.add(attn::score_heads(statistics, queries, attn::KeyPattern::positions(request.markers)));
        }
        const attn::HeadTable far_table = far.mean(), marker_table = markers.mean();  // (layers × heads)
        std::cout << "description tokens measured: " << thousands(far.queries()) << "\n";
        std::cout << "average attention weight of a description token, by layer:\n";
        for (attn::Index layer = 0; layer < far_table.rows(); ++layer)
            std::cout << "  layer " << layer + 1 << ": 4 or more tokens back "
                      << store::fixed(far_table.row(layer).mean()) << ", on <s> and <sep> "
                      << store::fixed(marker_table.row(layer).mean()) << "\n";
        std::cout << "all layers, weight 4 or more tokens back: " << store::fixed(far_table.mean()) << "\n";
        std::cout << "an even spread's weight 4 or more tokens back: " << store::fixed(far.even()) << "\n";
        std::cout << "all layers, weight on <s> and <sep>: " << store::fixed(marker_table.mean()) << "\n";
        std::cout << "an even spread's weight on <s> and <sep>: " << store::fixed(markers.even()) << "\n";
        std::cout << "products with a description: " << described << "\n";
        std::cout << "descriptions that repeat a token of the name: " << repeating << "\n";
    });
}
