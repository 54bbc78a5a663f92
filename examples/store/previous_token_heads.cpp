// previous_token_heads: each head's average weight on the previous token over the first
// 300 validation products (--products all: the whole split), against an even spread over the
// visible tokens. The weight is measured inside the attention kernel (ForwardOptions::statistics):
// no attention matrix is kept.
#include <attn/analysis/head_scores.hpp>
#include <attn/store.hpp>

#include <iostream>

#include "store_model.hpp"

int main(int argc, char** argv) {
    const auto flags =
        store::analysis_flags(argc, argv, "previous_token_heads",
                              "The layers × heads table of average weight on the previous token over the\n"
                              "first 300 validation products, the strongest head, and the even spread.");
    return store::report_errors("previous_token_heads", [&] {
        const auto directory = store::model_directory(flags.model);
        const auto model = attn::Model<float>::load(directory);
        const auto products = store::read_split(directory / "validation.tsv", flags.products);
        attn::HeadAverage on_previous(attn::HeadAverage::Weighting::per_text);
        const attn::HeadStatisticsRequest request;  // the previous token needs no parameter
        attn::ForwardOptions options;
        options.statistics = &request;
        for (std::size_t k = 0; k < products.size(); ++k) {
            const std::vector<int> ids = attn::store::product_ids(model, products[k].name, products[k].description);
            const auto statistics = model.forward(ids, options).statistics;  // per layer, heads × positions
            on_previous.add(attn::score_heads(statistics, attn::query_range(1, attn::Index(ids.size())),
                                              attn::KeyPattern::previous_token()));
            store::progress(k + 1, products.size());
        }
        const attn::HeadTable table = on_previous.mean();  // (layers × heads)
        std::cout << "average weight on the previous token (rows: layers, columns: heads):\n";
        for (attn::Index layer = 0; layer < table.rows(); ++layer) {
            std::cout << "  layer " << layer + 1 << ": ";
            for (attn::Index head = 0; head < table.cols(); ++head)
                std::cout << (head ? "  " : "") << store::fixed(table(layer, head));
            std::cout << "\n";
        }
        const attn::HeadId strongest = attn::strongest_head(table);
        std::cout << "head with the most weight on the previous token: layer " << strongest.layer + 1 << ", head "
                  << strongest.head + 1 << "\n";
        std::cout << "its weight on the previous token: " << store::fixed(table.maxCoeff()) << "\n";
        std::cout << "an even spread's weight on the previous token: " << store::fixed(on_previous.even()) << "\n";
    });
}
