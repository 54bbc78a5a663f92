// attn/model/generate.hpp: generation on the store model — stop rules, the attention rows it
// keeps, reproducibility, and agreement with tools/references/generate.py's PyTorch generator (float64,
// with a key/value cache) on tests/data/store/generation.json.
#include <doctest/doctest.h>
#include <attn/model/generate.hpp>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <vector>

#include "store_model.hpp"

using attn::Index;
using attn::test::store_model;

namespace {

nlohmann::json golden_generations() {
    std::ifstream in(std::filesystem::path(ATTN_TEST_DATA_DIR) / "store" / "generation.json");
    REQUIRE_MESSAGE(in,
                    "tests/data/store/generation.json is missing (tools/references/generate.py --golden writes it)");
    return nlohmann::json::parse(in);
}

attn::GenerationOptions options_of(const nlohmann::json& run) {
    const nlohmann::json& o = run.at("options");
    attn::GenerationOptions options;
    options.sampling.temperature = o.at("temperature").get<double>();
    options.sampling.top_k = o.at("top_k").get<Index>();
    options.sampling.top_p = o.at("top_p").get<double>();
    options.sampling.seed = o.at("seed").get<std::uint64_t>();
    options.sampling.banned = o.at("banned").get<std::vector<int>>();
    options.max_tokens = o.at("max_tokens").get<Index>();
    return options;
}

}  // namespace

TEST_CASE("generate: agrees token for token with the PyTorch generator (double)") {
    const attn::Model<double>& model = store_model<double>();
    const nlohmann::json golden = golden_generations();
    REQUIRE(golden.at("runs").size() >= 100);
    int greedy = 0, sampled = 0;
    for (const nlohmann::json& run : golden.at("runs")) {
        CAPTURE(run.at("name").get<std::string>());
        const auto prompt = run.at("prompt_ids").get<std::vector<int>>();
        CHECK(prompt == attn::store::prompt_ids(model, run.at("name").get<std::string>(),
                                                run.at("description").get<std::string>()));
        const attn::GenerationResult<double> written = attn::generate(model, prompt, options_of(run));
        CHECK(written.ids == run.at("ids").get<std::vector<int>>());
        CHECK(attn::to_string(written.stop) == run.at("stop").get<std::string>());
        const auto probabilities = run.at("probabilities").get<std::vector<double>>();
        REQUIRE(written.probabilities.size() == probabilities.size());
        for (std::size_t i = 0; i < probabilities.size(); ++i)
            CHECK(written.probabilities[i] == doctest::Approx(probabilities[i]).epsilon(1e-9));
        (run.at("options").at("temperature").get<double>() == 0.0 ? greedy : sampled) += 1;
    }
    CHECK(greedy >= 100);
    CHECK(sampled >= 8);
}

TEST_CASE("generate: in float, greedy writes the PyTorch generator's tokens for the first 100 validation names") {
    const attn::Model<float>& model = store_model<float>();
    const nlohmann::json golden = golden_generations();
    int runs = 0, equal = 0;
    for (const nlohmann::json& run : golden.at("runs")) {
        if (run.at("options").at("temperature").get<double>() != 0.0) continue;
        const attn::GenerationResult<float> written =
            attn::generate(model, run.at("prompt_ids").get<std::vector<int>>(), options_of(run));
        ++runs;
        equal += written.ids == run.at("ids").get<std::vector<int>>() ? 1 : 0;
    }
    // float's rounding may flip a near tie between two tokens, after which the texts part
    CHECK(runs >= 100);
    CHECK(equal >= runs - 2);
    MESSAGE(equal << " of " << runs << " greedy generations identical in float");
}

TEST_CASE_TEMPLATE("generate: each written token keeps the attention row that chose it", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const std::vector<int> prompt =
        attn::store::prompt_ids(model, "double chaise patio furniture cover", "protect your");
    attn::GenerationOptions options;
    options.decode.keep_attention = true;
    options.max_tokens = 12;
    const attn::GenerationResult<T> written = attn::generate(model, prompt, options);
    REQUIRE(written.ids.size() == 12);
    CHECK(written.stop == attn::StopReason::max_tokens);
    REQUIRE(written.attention.size() == written.ids.size());

    std::vector<int> text = prompt;
    text.insert(text.end(), written.ids.begin(), written.ids.end() - 1);  // the last id is written, not read
    attn::ForwardOptions forward;
    forward.keep_attention = true;
    const attn::ForwardResult<T> full = model.forward(text, forward);
    const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
    for (std::size_t k = 0; k < written.ids.size(); ++k) {
        const Index position = Index(prompt.size() + k) - 1;  // the position whose logits chose token k
        const attn::ModelAttention<T>& layers = written.attention[k];
        REQUIRE(layers.layers() == 4);
        REQUIRE(layers.heads() == 4);
        REQUIRE(layers.rows() == 1);
        REQUIRE(layers.positions() == position + 1);
        for (Index l = 0; l < 4; ++l) {
            for (Index h = 0; h < 4; ++h) {
                const auto row = layers.head(l, h).row(0);
                CHECK(double(row.sum()) == doctest::Approx(1.0).epsilon(1e-5));
                CHECK(
                    double((row - full.attention.head(l, h).row(position).head(position + 1)).cwiseAbs().maxCoeff()) <=
                    tolerance);
            }
        }
        // greedy: the written id is the row's largest logit, its probability the softmax there
        Index best = 0;
        full.logits.row(position).maxCoeff(&best);
        CHECK(written.ids[k] == int(best));
        CHECK(written.probabilities[k] ==
              doctest::Approx(attn::token_probability(full.logits.row(position), written.ids[k])).epsilon(1e-6));
    }
}

TEST_CASE("generate: stops at </s>, at max_tokens and at the context's end; seeds reproduce") {
    const attn::Model<float>& model = store_model<float>();
    const std::vector<int> prompt = attn::store::prompt_ids(model, "double chaise patio furniture cover");
    const attn::GenerationResult<float> greedy = attn::generate(model, prompt);
    REQUIRE_FALSE(greedy.ids.empty());
    if (greedy.stop == attn::StopReason::end) CHECK(greedy.ids.back() == model.tokenizer().end_id());
    CHECK(Index(prompt.size() + greedy.ids.size()) <= model.settings().longest);

    attn::GenerationOptions options;
    options.sampling.temperature = 1.0;
    options.sampling.top_p = 0.9;
    options.sampling.seed = 123;
    const attn::GenerationResult<float> a = attn::generate(model, prompt, options),
                                        b = attn::generate(model, prompt, options);
    CHECK(a.ids == b.ids);
    options.sampling.seed = 124;
    options.max_tokens = 40;
    options.stop_at_end = false;
    const attn::GenerationResult<float> c = attn::generate(model, prompt, options);
    CHECK(c.ids.size() == 40);
    CHECK(c.stop == attn::StopReason::max_tokens);

    // a prompt one short of the context writes one token; a full one writes none
    std::vector<int> long_prompt(159, 7);
    long_prompt[0] = 0;
    options.max_tokens = 0;
    const attn::GenerationResult<float> one = attn::generate(model, long_prompt, options);
    CHECK(one.ids.size() == 1);
    CHECK(one.stop == attn::StopReason::context);
    long_prompt.push_back(7);
    const attn::GenerationResult<float> none = attn::generate(model, long_prompt, options);
    CHECK(none.ids.empty());
    CHECK(none.stop == attn::StopReason::context);
    // without stopping at </s>, a short prompt fills the context
    const attn::GenerationResult<float> full = attn::generate(model, prompt, options);
    CHECK(Index(prompt.size() + full.ids.size()) == model.settings().longest);
    CHECK(full.stop == attn::StopReason::context);
}

TEST_CASE("generate: bad prompts and options are argument_errors") {
    const attn::Model<float>& model = store_model<float>();
    CHECK_THROWS_WITH_AS(attn::generate(model, {}), doctest::Contains("ids is empty"), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::generate(model, std::vector<int>(161, 7)), doctest::Contains("context"),
                         attn::argument_error);
    attn::GenerationOptions options;
    options.max_tokens = -1;
    CHECK_THROWS_WITH_AS(attn::generate(model, {0}, options), doctest::Contains("max_tokens"), attn::argument_error);
    options = {};
    options.sampling.top_p = 2.0;
    CHECK_THROWS_AS(attn::generate(model, {0}, options), attn::argument_error);
    options = {};
    options.ablate = {{0, 9}};
    CHECK_THROWS_WITH_AS(attn::generate(model, {0}, options), doctest::Contains("ablated head = 9"),
                         attn::argument_error);
}

// The ids, their probabilities and the attention rows that chose them.
TEST_CASE("generate threads: 1, 2 started and 2 kept threads write the same tokens") {
    const auto& model = attn::test::store_model<float>();
    const std::vector<int> prompt = attn::store::prompt_ids(model, "double chaise patio furniture cover",
                                                            "protect your outdoor patio furniture from harsh");
    attn::GenerationOptions options;
    options.max_tokens = 12;
    options.decode.keep_attention = true;
    const attn::GenerationResult<float> one = attn::generate(model, prompt, options);
    options.decode.threads = 2;
    const attn::GenerationResult<float> started = attn::generate(model, prompt, options);
    attn::Workers workers(2);
    options.decode.threads = workers;
    const attn::GenerationResult<float> kept = attn::generate(model, prompt, options);
    for (const attn::GenerationResult<float>* other : {&started, &kept}) {
        CHECK(other->ids == one.ids);
        CHECK(other->probabilities == one.probabilities);
        CHECK(other->attention == one.attention);
    }
}
