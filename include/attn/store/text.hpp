#pragma once
// The store model's text format, `<s> name <sep> description </s>`: a product's ids and a
// prompt for generation. Only a store tokenizer (Tokenizer::Kind::store) has the markers.

#include <cstddef>
#include <string_view>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/model.hpp"
#include "attn/text/tokenizer.hpp"

namespace attn::store {

namespace detail {

/// encode(text) appended to ids, an encoding error naming `function` and `part`.
inline void append_encoded(const Tokenizer& tokenizer, std::string_view text, const char* function, const char* part,
                           std::vector<int>& ids) {
    try {
        const std::vector<int> encoded = tokenizer.encode(text);
        ids.insert(ids.end(), encoded.begin(), encoded.end());
    } catch (const argument_error& e) {
        throw argument_error(attn::detail::message(function, " (", part, "): ", e.what()));
    }
}

/// [<s>] + encode(name) + [<sep>] + encode(description).
inline std::vector<int> name_and_description(const char* function, const Tokenizer& tokenizer, std::string_view name,
                                             std::string_view description, std::ptrdiff_t longest) {
    if (tokenizer.kind() != Tokenizer::Kind::store)
        throw argument_error(attn::detail::message(
            function, ": only the store model's tokenizer has <s>/<sep>/</s> markers; this one is ",
            tokenizer.kind_name()));
    if (longest < 1)
        throw argument_error(attn::detail::message(function, ": longest must be at least 1, got ", longest));
    std::vector<int> ids{tokenizer.start_id()};
    append_encoded(tokenizer, name, function, "name", ids);
    ids.push_back(tokenizer.separator_id());
    append_encoded(tokenizer, description, function, "description", ids);
    return ids;
}

}  // namespace detail

/// [<s>] + encode(name) + [<sep>] + encode(description) + [</s>], cut to the first `longest`
/// ids (longest ≥ 1). argument_error for a tokenizer that is not the store's, or text it cannot
/// encode (naming the part).
inline std::vector<int> product_ids(const Tokenizer& tokenizer, std::string_view name, std::string_view description,
                                    std::ptrdiff_t longest) {
    std::vector<int> ids = detail::name_and_description("store::product_ids", tokenizer, name, description, longest);
    ids.push_back(tokenizer.end_id());
    if (static_cast<std::size_t>(longest) < ids.size()) ids.resize(static_cast<std::size_t>(longest));
    return ids;
}

/// [<s>] + encode(name) + [<sep>] + encode(description), without </s>: a prompt for a model to
/// continue (model/generate.hpp), cut to the first `longest` ids (longest ≥ 1).
inline std::vector<int> prompt_ids(const Tokenizer& tokenizer, std::string_view name, std::string_view description,
                                   std::ptrdiff_t longest) {
    std::vector<int> ids = detail::name_and_description("store::prompt_ids", tokenizer, name, description, longest);
    if (static_cast<std::size_t>(longest) < ids.size()) ids.resize(static_cast<std::size_t>(longest));
    return ids;
}

/// A product's ids for `model`, cut to its context length.
template <class T>
std::vector<int> product_ids(const Model<T>& model, std::string_view name, std::string_view description) {
    return product_ids(model.tokenizer(), name, description, model.settings().longest);
}

/// A prompt (the name, and the description so far) for `model`, cut to its context length.
template <class T>
std::vector<int> prompt_ids(const Model<T>& model, std::string_view name, std::string_view description = {}) {
    return prompt_ids(model.tokenizer(), name, description, model.settings().longest);
}

}  // namespace attn::store
