#pragma once
// The attention page (attn/view/attention_page.hpp) for the store model's products: tokens
// styled as the chapter labels them (name, description, markers) and the five most probable
// next tokens at every position. Shared by inspect --html and heatmap --html.

#include <attn/model/model.hpp>
#include <attn/view/attention_page.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store_model.hpp"

namespace store {

/// Writes the page of one forward pass (keep_attention on) over `ids` to `file`; `program`
/// announces a large page's size on stderr before it is written.
inline void write_page(const std::filesystem::path& file, const attn::Model<float>& model, const std::vector<int>& ids,
                       const attn::ForwardResult<float>& result, attn::PageOptions options, const char* program) {
    const attn::Tokenizer& tokenizer = model.tokenizer();
    const std::size_t separator = separator_position(tokenizer, ids);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        tokens.push_back(token_text(tokenizer, ids[i]));
        const bool product = separator < ids.size();  // a store product text: its markers and parts
        const bool marker = product && (i == 0 || i == separator || ids[i] == tokenizer.end_id());
        // the chapter's reading: the name emphasised, since the description copies from it
        options.styles.push_back(marker                                    ? attn::TokenStyle::marker
                                 : separator < ids.size() && i < separator ? attn::TokenStyle::emphasis
                                                                           : attn::TokenStyle::plain);
    }
    std::vector<std::string> vocabulary;
    for (int id = 0; id < int(model.settings().vocabulary_size); ++id) vocabulary.push_back(token_text(tokenizer, id));
    options.next_tokens = attn::top_next_tokens(result.logits, vocabulary, 5);
    const std::string page = attn::attention_page(tokens, result.attention, options);
    announce_size(program, page.size(), "attention page to " + file.string());
    std::ofstream out(file, std::ios::binary);
    if (!out) throw attn::io_error(file.string() + ": cannot open for writing the attention page");
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    if (!out.flush()) throw attn::io_error(file.string() + ": writing the attention page failed");
}

}  // namespace store
