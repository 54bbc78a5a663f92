// attn/core/sampling.hpp: greedy, temperature, top-k, top-p and banned tokens, with NumPy's
// draws (np.random.default_rng(0).random() gives 0.63696…, 0.26978…, 0.04097…).
#include <doctest/doctest.h>
#include <attn/core/sampling.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace {

Eigen::VectorXd log_of(const std::vector<double>& probabilities) {
    Eigen::VectorXd logits(Eigen::Index(probabilities.size()));
    for (std::size_t i = 0; i < probabilities.size(); ++i) logits(Eigen::Index(i)) = std::log(probabilities[i]);
    return logits;
}

attn::SamplingOptions sampled(double temperature, std::uint64_t seed = 0) {
    attn::SamplingOptions options;
    options.temperature = temperature;
    options.seed = seed;
    return options;
}

}  // namespace

TEST_CASE("TokenSampler: greedy picks the largest logit, the lowest id among equals, without drawing") {
    attn::TokenSampler greedy(attn::SamplingOptions{});
    Eigen::VectorXf logits(5);
    logits << 1.0f, 3.0f, -2.0f, 3.0f, 0.5f;
    CHECK(greedy.next(logits) == 1);
    CHECK(greedy.next(logits.transpose()) == 1);  // a row works as well as a column
    attn::SamplingOptions banned;
    banned.banned = {1};
    CHECK(attn::TokenSampler(banned).next(logits) == 3);
}

TEST_CASE("TokenSampler: a draw u picks the first token whose running probability exceeds it") {
    // p = (0.5, 0.3, 0.2); NumPy's first three draws for seed 0: 0.637 → 1, 0.270 → 0, 0.041 → 0
    attn::TokenSampler sampler(sampled(1.0));
    const Eigen::VectorXd logits = log_of({0.5, 0.3, 0.2});
    CHECK(sampler.next(logits) == 1);
    CHECK(sampler.next(logits) == 0);
    CHECK(sampler.next(logits) == 0);
    // order is by probability, not id: p = (0.2, 0.3, 0.5) visits 2, 1, 0
    attn::TokenSampler reordered(sampled(1.0));
    CHECK(reordered.next(log_of({0.2, 0.3, 0.5})) == 1);  // 0.637 ≥ 0.5, < 0.8
    CHECK(reordered.next(log_of({0.2, 0.3, 0.5})) == 2);  // 0.270 < 0.5
}

TEST_CASE("TokenSampler: top_k and top_p keep the most likely tokens and renormalise") {
    const Eigen::VectorXd logits = log_of({0.5, 0.3, 0.2});
    attn::SamplingOptions options = sampled(1.0);
    options.top_k = 1;
    attn::TokenSampler top1(options);
    for (int i = 0; i < 5; ++i) CHECK(top1.next(logits) == 0);
    // top_k = 2: p = (0.625, 0.375); u = 0.637 → 1, 0.270 → 0
    options.top_k = 2;
    attn::TokenSampler top2(options);
    CHECK(top2.next(logits) == 1);
    CHECK(top2.next(logits) == 0);
    // top_p = 0.5 keeps token 0 alone (0.5 reaches it); 0.6 keeps 0 and 1
    options.top_k = 0;
    options.top_p = 0.5;
    attn::TokenSampler nucleus(options);
    for (int i = 0; i < 5; ++i) CHECK(nucleus.next(logits) == 0);
    options.top_p = 0.6;
    attn::TokenSampler wider(options);
    CHECK(wider.next(logits) == 1);
}

TEST_CASE("TokenSampler: the frequencies follow softmax(logits / temperature)") {
    const Eigen::VectorXd logits = log_of({0.6, 0.3, 0.1});
    for (double temperature : {1.0, 2.0}) {
        CAPTURE(temperature);
        attn::TokenSampler sampler(sampled(temperature, 42));
        std::map<int, int> counts;
        const int draws = 20000;
        for (int i = 0; i < draws; ++i) ++counts[sampler.next(logits)];
        Eigen::VectorXd expected = (logits / temperature).array().exp();
        expected /= expected.sum();
        for (int id = 0; id < 3; ++id) CHECK(double(counts[id]) / draws == doctest::Approx(expected(id)).epsilon(0.03));
    }
}

TEST_CASE("TokenSampler: the same seed picks the same tokens; banned tokens are never picked") {
    Eigen::VectorXd logits = Eigen::VectorXd::LinSpaced(50, -2.0, 2.0);
    attn::SamplingOptions options = sampled(1.3, 7);
    options.banned = {49, 48, 47};
    attn::TokenSampler a(options), b(options);
    for (int i = 0; i < 200; ++i) {
        const int id = a.next(logits);
        CHECK(id == b.next(logits));
        CHECK(id < 47);
    }
}

TEST_CASE("token_probability: the softmax of the logits at the id") {
    const Eigen::VectorXf logits = log_of({0.5, 0.3, 0.2}).cast<float>();
    CHECK(attn::token_probability(logits, 1) == doctest::Approx(0.3).epsilon(1e-6));
    CHECK_THROWS_AS(attn::token_probability(logits, 3), attn::argument_error);
}

TEST_CASE("TokenSampler: bad options and logits are attn errors") {
    attn::SamplingOptions options;
    options.temperature = -1.0;
    CHECK_THROWS_WITH_AS(attn::TokenSampler{options}, doctest::Contains("temperature must be ≥ 0"),
                         attn::argument_error);
    options = {};
    options.top_p = 0.0;
    CHECK_THROWS_WITH_AS(attn::TokenSampler{options}, doctest::Contains("top_p must be in (0, 1]"),
                         attn::argument_error);
    options = {};
    options.top_k = -2;
    CHECK_THROWS_AS(attn::TokenSampler{options}, attn::argument_error);
    options = {};
    options.banned = {0, 1};
    Eigen::VectorXd two(2);
    two << 1.0, 2.0;
    CHECK_THROWS_WITH_AS(attn::TokenSampler(options).next(two), doctest::Contains("every token is banned"),
                         attn::argument_error);
    options.banned = {5};
    CHECK_THROWS_WITH_AS(attn::TokenSampler(options).next(two), doctest::Contains("banned id"), attn::argument_error);
    two(1) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(attn::TokenSampler(attn::SamplingOptions{}).next(two), attn::numeric_error);
    CHECK_THROWS_AS(attn::TokenSampler(attn::SamplingOptions{}).next(Eigen::MatrixXd(2, 2)), attn::shape_error);
}
