// attn/model/types.hpp: ModelAttention's views and the checks every forward pass shares.
#include <doctest/doctest.h>
#include <attn/model/types.hpp>

#include <vector>

using attn::Index;

TEST_CASE("ModelAttention: layers × heads × positions², views of each head, range-checked layers") {
    std::vector<attn::AttentionWeights<float>> layers(3, attn::AttentionWeights<float>(2, 4, 4));
    layers[2](1, 3, 0) = 0.25f;
    const attn::ModelAttention<float> attention(std::move(layers));
    CHECK(attention.layers() == 3);
    CHECK(attention.heads() == 2);
    CHECK(attention.positions() == 4);
    CHECK_FALSE(attention.empty());
    CHECK(attention(2, 1, 3, 0) == 0.25f);
    CHECK(attention.head(2, 1)(3, 0) == 0.25f);
    CHECK_THROWS_WITH_AS(attention.layer(3), doctest::Contains("layer"), attn::argument_error);
    CHECK(attn::ModelAttention<double>().empty());
}

TEST_CASE("check_token_ids and silenced_heads: the errors every forward pass gives, naming the caller") {
    attn::ModelSettings settings;
    settings.layers = 2;
    settings.heads = 3;
    settings.longest = 4;
    settings.vocabulary_size = 10;
    CHECK_NOTHROW(attn::detail::check_token_ids("f", settings, {0, 9, 3, 3}));
    CHECK_THROWS_WITH_AS(attn::detail::check_token_ids("f", settings, {}),
                         "f: ids is empty; a text has at least one token", attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::detail::check_token_ids("f", settings, {1, 1, 1, 1, 1}),
                         doctest::Contains("5 ids, but the model's context (longest) is 4"), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::detail::check_token_ids("f", settings, {1, 10}),
                         doctest::Contains("ids[1] = 10 is not a token id (vocabulary of 10)"), attn::argument_error);
    const auto silenced = attn::detail::silenced_heads("f", settings, {{1, 2}, {0, 0}});
    CHECK(silenced == std::vector<std::vector<bool>>{{true, false, false}, {false, false, true}});
    CHECK_THROWS_WITH_AS(attn::detail::silenced_heads("f", settings, {{2, 0}}), doctest::Contains("ablated layer"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::detail::silenced_heads("f", settings, {{0, -1}}), doctest::Contains("ablated head"),
                         attn::argument_error);
}
