// attn/model/reference_forward.hpp: the readable forward pass, and the proof that the fast
// Model::forward computes the same model — every activation and RoPE pairing, float and
// double, 1 to 4 threads, kept Workers, ablation — on tiny random models and the shipped one.
#include <doctest/doctest.h>
#include <attn/model/model.hpp>
#include <attn/model/reference_forward.hpp>
#include <attn/store.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model_fixture.hpp"

using attn::Index;
using attn::test::TinyModel;

namespace {

/// Largest |fast − reference| over logits, relative to the largest |logit|, and over every
/// head's weights (absolute: weights lie in [0, 1]).
template <class T>
struct Difference {
    double logits = 0.0;
    double attention = 0.0;
};

template <class T>
Difference<T> difference(const attn::ForwardResult<T>& fast, const attn::ForwardResult<T>& reference) {
    Difference<T> d;
    REQUIRE(fast.logits.rows() == reference.logits.rows());
    REQUIRE(fast.logits.cols() == reference.logits.cols());
    d.logits = double((fast.logits - reference.logits).cwiseAbs().maxCoeff()) /
               std::max(1.0, double(reference.logits.cwiseAbs().maxCoeff()));
    if (fast.attention.empty()) return d;  // streamed: logits only
    REQUIRE(fast.attention.layers() == reference.attention.layers());
    for (Index l = 0; l < fast.attention.layers(); ++l)
        for (Index h = 0; h < fast.attention.heads(); ++h)
            d.attention =
                std::max(d.attention,
                         double((fast.attention.head(l, h) - reference.attention.head(l, h)).cwiseAbs().maxCoeff()));
    return d;
}

// Both passes sum in different orders (tiled kernel and online softmax against Eigen's
// products and the plain softmax). Measured worst cases: float 1.6e-6 relative on logits and
// 1.1e-6 on weights, double ~5e-16 and ~1e-16; the bounds leave room for other compilers and
// instruction sets.
template <class T>
constexpr double logits_bound() {
    return sizeof(T) == 4 ? 5e-6 : 1e-13;
}
template <class T>
constexpr double attention_bound() {
    return sizeof(T) == 4 ? 2e-6 : 1e-13;
}

std::vector<int> random_ids(Index count, int vocabulary, unsigned seed) {
    std::mt19937 generator(seed);
    std::uniform_int_distribution<int> token(0, vocabulary - 1);
    std::vector<int> ids(static_cast<std::size_t>(count));
    for (int& id : ids) id = token(generator);
    return ids;
}

template <class T>
void check_fast_equals_reference(const attn::Model<T>& model, const std::vector<int>& ids,
                                 std::vector<attn::HeadId> ablate) {
    attn::ForwardOptions options;
    options.keep_attention = true;
    options.ablate = std::move(ablate);
    const auto reference = attn::reference_forward(model, ids, options);
    CHECK(reference.logits.allFinite());
    for (int threads : {1, 2, 3, 4}) {
        CAPTURE(threads);
        options.threads = threads;
        const auto d = difference(model.forward(ids, options), reference);
        CHECK(d.logits <= logits_bound<T>());
        CHECK(d.attention <= attention_bound<T>());
    }
    options.threads = 1;
    attn::Workers workers(2);
    options.threads = workers;
    const auto d = difference(model.forward(ids, options), reference);
    CHECK(d.logits <= logits_bound<T>());
    CHECK(d.attention <= attention_bound<T>());
    // Without weights the kernel streams (online softmax): the same logits to rounding.
    options.keep_attention = false;
    options.threads = 1;
    CHECK(difference(model.forward(ids, options), reference).logits <= logits_bound<T>());
}

}  // namespace

TEST_CASE_TEMPLATE("reference_forward threads: Model::forward equals it for both activations and both RoPE pairings", T,
                   float, double) {
    for (const char* activation : {"gelu_erf", "gelu_tanh"})
        for (const char* pairing : {"rotate_half", "interleaved"}) {
            CAPTURE(activation);
            CAPTURE(pairing);
            TinyModel tiny(std::string("reference_") + activation + "_" + pairing);
            tiny.manifest["settings"]["activation"] = activation;
            tiny.manifest["settings"]["rope_pairing"] = pairing;
            tiny.manifest["settings"]["longest"] = 64;  // room for 4 threads of 16 positions
            const auto model = attn::Model<T>::load(tiny.write());
            const int vocabulary = static_cast<int>(model.settings().vocabulary_size);
            for (Index n : {1, 2, 17, 64}) {
                CAPTURE(n);
                check_fast_equals_reference(model, random_ids(n, vocabulary, unsigned(n)), {});
                check_fast_equals_reference(model, random_ids(n, vocabulary, unsigned(n)), {{0, 1}, {1, 0}});
            }
        }
}

TEST_CASE("reference_forward: the activation and the pairing change the result (both paths are exercised)") {
    std::vector<attn::Matrix<double>> logits;
    for (const char* activation : {"gelu_erf", "gelu_tanh"})
        for (const char* pairing : {"rotate_half", "interleaved"}) {
            TinyModel tiny(std::string("reference_differ_") + activation + "_" + pairing);
            tiny.manifest["settings"]["activation"] = activation;
            tiny.manifest["settings"]["rope_pairing"] = pairing;
            const auto model = attn::Model<double>::load(tiny.write());
            logits.push_back(attn::reference_forward(model, random_ids(8, 30, 3)).logits);
        }
    for (std::size_t a = 0; a < logits.size(); ++a)
        for (std::size_t b = a + 1; b < logits.size(); ++b) CHECK((logits[a] - logits[b]).cwiseAbs().maxCoeff() > 1e-6);
}

TEST_CASE("reference_forward: bad ids and ablations are argument_errors naming reference_forward") {
    const TinyModel tiny("reference_bad");
    const auto model = attn::Model<float>::load(tiny.write());
    CHECK_THROWS_WITH_AS(attn::reference_forward(model, {}), doctest::Contains("reference_forward: ids is empty"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::reference_forward(model, std::vector<int>(13, 4)),
                         doctest::Contains("context (longest) is 12"), attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::reference_forward(model, {0, -1}), doctest::Contains("ids[1] = -1"),
                         attn::argument_error);
    attn::ForwardOptions options;
    options.ablate = {{0, 2}};
    CHECK_THROWS_WITH_AS(attn::reference_forward(model, {0, 4}, options), doctest::Contains("ablated head = 2"),
                         attn::argument_error);
}

TEST_CASE_TEMPLATE("reference_forward threads: the shipped store model's fast forward equals it on 160 positions", T,
                   float, double) {
    const auto model = attn::Model<T>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store");
    const std::vector<int> exemplar = attn::store::product_ids(
        model, "double chaise patio furniture cover",
        "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.");
    check_fast_equals_reference(model, exemplar, {});
    check_fast_equals_reference(model, random_ids(160, 2048, 160), {{3, 1}});
}
