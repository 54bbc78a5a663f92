// copy_test: does the model copy `cover` from the product's name? Change the name, keep
// the description, and watch P(cover) at the description's second `furniture`.
#include <iostream>

#include "store_model.hpp"

int main(int argc, char** argv) {
    const auto flag =
        store::model_flag(argc, argv, "copy_test",
                          "P(cover) and P(set) with the name as sold, without cover, and ending in set;\n"
                          "then what follows `this outdoor patio furniture` in the training descriptions.");
    return store::report_errors("copy_test", [&] {
        const auto directory = store::model_directory(flag);
        const auto model = attn::Model<float>::load(directory);
        const attn::Tokenizer& vocabulary = model.tokenizer();
        const store::Product product = store::find_product(directory, "double chaise patio furniture cover");
        const int cover = vocabulary.id("cover</w>"), other = vocabulary.id("set</w>"),
                  furniture = vocabulary.id("furniture</w>");
        const std::pair<const char*, const char*> names[] = {
            {"double chaise patio furniture cover", "name as sold"},
            {"double chaise patio furniture", "name without cover"},
            {"double chaise patio furniture set", "name ending in set"}};
        for (const auto& [name, label] : names) {
            const std::vector<int> ids = attn::store::product_ids(model, name, product.description);
            const std::size_t sep = store::separator_position(vocabulary, ids);
            const std::size_t first = store::find_id(ids, furniture, sep + 1, "furniture in the description");
            const std::size_t second = store::find_id(ids, furniture, first + 1, "second furniture in the description");
            const Eigen::VectorXd p = store::probabilities(model.forward(ids).logits.row(attn::Index(second)));
            std::cout << label << ", P(cover): " << store::fixed(p(cover)) << "\n";
            std::cout << label << ", P(set): " << store::fixed(p(other)) << "\n";
        }

        const std::string phrase = "this outdoor patio furniture ";
        std::size_t with_phrase = 0, followed_by_cover = 0;
        for (const store::Product& p : store::read_split(directory / "train.tsv")) {
            const auto at = p.description.find(phrase);
            if (at == std::string::npos) continue;
            const std::string rest = p.description.substr(at + phrase.size());
            const auto word_end = rest.find(' ');
            const std::string word = rest.substr(0, word_end);
            if (word.empty()) continue;
            ++with_phrase;
            followed_by_cover += word == "cover";
        }
        std::cout << "training descriptions with 'this outdoor patio furniture': " << with_phrase << "\n";
        std::cout << "followed by cover: " << followed_by_cover << "\n";
    });
}
