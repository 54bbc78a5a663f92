// trained_heads: what the store model's heads attend to in a validation product it never
// trained on, stopped just before the description repeats the name's last word.
#include <algorithm>
#include <iostream>
#include <numeric>

#include "store_model.hpp"

int main(int argc, char** argv) {
    const auto flag = store::model_flag(argc, argv, "trained_heads",
                                        "Each head's three largest weights in the first and last layers, at the\n"
                                        "description's second `furniture` of `double chaise patio furniture cover`.");
    return store::report_errors("trained_heads", [&] {
        const auto directory = store::model_directory(flag);
        const auto model = attn::Model<float>::load(directory);
        const attn::Tokenizer& vocabulary = model.tokenizer();
        const attn::ModelSettings& settings = model.settings();
        const store::Product product = store::find_product(directory, "double chaise patio furniture cover");
        const std::vector<int> ids = attn::store::product_ids(model, product.name, product.description);
        const std::size_t sep = store::separator_position(vocabulary, ids);
        // just before the description first repeats the name's last token
        const std::size_t position = store::find_id(ids, ids[sep - 1], sep, "repeat of the name's last token") - 1;
        attn::ForwardOptions options;
        options.keep_attention = true;
        const auto result = model.forward(ids, options);
        const Eigen::VectorXd p = store::probabilities(result.logits.row(attn::Index(position)));

        auto tokens = [&](std::size_t from, std::size_t to) {
            std::string text;
            for (std::size_t i = from; i < to; ++i) text += (text.empty() ? "" : " ") + vocabulary.token(ids[i]);
            return text;
        };
        std::cout << "layers: " << settings.layers << "\n";
        std::cout << "heads per layer: " << settings.heads << "\n";
        std::cout << "dimensions per head: " << settings.dimensions / settings.heads << "\n";
        std::cout << "name: " << tokens(1, sep) << "\n";
        std::cout << "description so far: " << tokens(sep + 1, position + 1) << "\n";
        std::cout << "P(next token is " << vocabulary.token(ids[position + 1])
                  << "): " << store::fixed(p(ids[position + 1])) << "\n";
        const attn::Index last_layer = result.attention.layers() - 1;
        for (attn::Index layer : {attn::Index(0), last_layer})
            for (attn::Index head = 0; head < settings.heads; ++head) {
                const auto row = result.attention.head(layer, head).row(attn::Index(position));
                std::vector<attn::Index> order(std::size_t(row.size()));
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(),
                                 [&](attn::Index a, attn::Index b) { return row(a) > row(b); });
                std::cout << "layer " << layer + 1 << ", head " << head + 1 << ": ";
                for (std::size_t k = 0; k < 3; ++k)
                    std::cout << (k ? ", " : "") << store::label(vocabulary, ids, std::size_t(order[k]), position, sep)
                              << " " << store::fixed(row(order[k]));
                std::cout << "\n";
            }

        const std::size_t name_cover = sep - 1;  // the name's last token, `cover`
        const std::size_t earlier = store::find_id(ids, ids[position], sep + 1, "earlier occurrence");
        attn::Index best = 0;
        for (attn::Index head = 1; head < settings.heads; ++head)
            if (result.attention(last_layer, head, attn::Index(position), attn::Index(name_cover)) >
                result.attention(last_layer, best, attn::Index(position), attn::Index(name_cover)))
                best = head;
        std::string after = vocabulary.token(ids[earlier + 1]);
        if (after.size() > 4 && after.compare(after.size() - 4, 4, "</w>") == 0) after.resize(after.size() - 4);
        std::cout << "last-layer head with the most weight on the name's cover: head " << best + 1 << "\n";
        std::cout << "its weight on the name's cover: "
                  << store::fixed(result.attention(last_layer, best, attn::Index(position), attn::Index(name_cover)))
                  << "\n";
        std::cout << "its weight on " << after << ", after the description's earlier furniture: "
                  << store::fixed(result.attention(last_layer, best, attn::Index(position), attn::Index(earlier + 1)))
                  << "\n";
    });
}
