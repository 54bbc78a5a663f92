// attn/store.hpp: the store model's text format (product_ids, prompt_ids) on the hand-made
// tokenizer of tests/data/tokenizer/, and the shipped store model (models/store/) against the
// golden outputs of an independent float64 PyTorch forward pass over the exported files.
#include <doctest/doctest.h>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {
const std::filesystem::path model_dir = std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store";
const std::filesystem::path golden_dir = std::filesystem::path(ATTN_TEST_DATA_DIR) / "store";

nlohmann::json golden_products() {
    std::ifstream in(golden_dir / "golden.json");
    REQUIRE_MESSAGE(in.good(), "missing tests/data/store/golden.json (tools/references/reference.py writes it)");
    return nlohmann::json::parse(in);
}

// Largest |model − golden| over every product, for logits and attention.
template <class T>
std::pair<double, double> worst_errors(const attn::Model<T>& model) {
    const auto golden = attn::SafeTensors::open(golden_dir / "golden.safetensors");
    double logits_error = 0.0, attention_error = 0.0;
    for (const auto& product : golden_products()) {
        const std::string key = product["key"];
        const std::vector<int> ids = product["ids"];
        CAPTURE(key);
        const std::vector<std::int64_t> golden_ids = golden.integers(key + ".ids");
        CHECK(std::vector<std::int64_t>(ids.begin(), ids.end()) == golden_ids);
        CHECK(attn::store::product_ids(model, product["name"].get<std::string>(),
                                       product["description"].get<std::string>()) == ids);

        attn::ForwardOptions options;
        options.keep_attention = true;
        const auto result = model.forward(ids, options);
        const attn::Matrix<double> logits = golden.matrix<double>(key + ".logits");
        REQUIRE(logits.rows() == result.logits.rows());
        REQUIRE(logits.cols() == result.logits.cols());
        logits_error = std::max(logits_error, (result.logits.template cast<double>() - logits).cwiseAbs().maxCoeff());

        const auto attention = golden.tensor<double>(key + ".attention");  // layers × heads × n × n
        const auto n = static_cast<attn::Index>(ids.size());
        REQUIRE(attention.shape == std::vector<std::int64_t>{4, 4, n, n});
        for (attn::Index l = 0; l < 4; ++l)
            for (attn::Index h = 0; h < 4; ++h) {
                const Eigen::Map<const attn::Matrix<double>> expected(attention.values.data() + (l * 4 + h) * n * n, n,
                                                                      n);
                const auto actual = result.attention.head(l, h);
                attention_error =
                    std::max(attention_error, (actual.template cast<double>() - expected).cwiseAbs().maxCoeff());
                // every row sums to 1 and is 0 above the diagonal
                for (attn::Index i = 0; i < n; ++i) {
                    CHECK(double(actual.row(i).sum()) == doctest::Approx(1.0).epsilon(1e-5));
                    for (attn::Index j = i + 1; j < n; ++j) CHECK(actual(i, j) == T(0));
                }
            }
    }
    return {logits_error, attention_error};
}
}  // namespace

TEST_CASE("store model, float: logits within 1e-4 and every head's attention within 1e-5 of PyTorch float64") {
    const auto model = attn::Model<float>::load(model_dir);
    CHECK(model.settings().layers == 4);
    CHECK(model.settings().heads == 4);
    CHECK(model.settings().head_size == 32);
    CHECK(model.settings().longest == 160);
    const auto [logits, attention] = worst_errors(model);
    MESSAGE("float: max |Δlogits| = ", logits, ", max |Δattention| = ", attention);
    CHECK(logits <= 1e-4);
    CHECK(attention <= 1e-5);
}

// Measured 4.6e-14 on logits and 3.8e-15 on attention (x86-64, gcc 12, with and without
// -march=native); the bound leaves a factor of ~4 for other compilers' summation orders.
TEST_CASE("store model, double: logits and attention within 2e-13 of PyTorch float64") {
    const auto model = attn::Model<double>::load(model_dir);
    const auto [logits, attention] = worst_errors(model);
    MESSAGE("double: max |Δlogits| = ", logits, ", max |Δattention| = ", attention);
    CHECK(logits <= 2e-13);
    CHECK(attention <= 2e-13);
}

TEST_CASE("store model: the golden set includes the exemplar and a text of exactly 160 tokens") {
    bool exemplar = false, full = false;
    for (const auto& product : golden_products()) {
        exemplar = exemplar || product["name"] == "double chaise patio furniture cover";
        full = full || product["ids"].size() == 160;
    }
    CHECK(exemplar);
    CHECK(full);
}

TEST_CASE_TEMPLATE("store model threads: 1 to 4 threads give bit-identical logits and attention", T, float, double) {
    const auto model = attn::Model<T>::load(model_dir);
    int long_products = 0;
    for (const auto& product : golden_products()) {
        const std::vector<int> ids = product["ids"];
        if (ids.size() < 100) continue;  // long enough for every thread to get work
        ++long_products;
        CAPTURE(ids.size());
        attn::ForwardOptions options;
        options.keep_attention = true;
        options.ablate = {{1, 2}, {3, 0}};
        const auto serial = model.forward(ids, options);
        for (int threads : {2, 3, 4, 0}) {
            CAPTURE(threads);
            options.threads = threads;
            const auto parallel = model.forward(ids, options);
            CHECK(parallel.logits == serial.logits);
            for (attn::Index l = 0; l < 4; ++l) CHECK(parallel.attention.layer(l) == serial.attention.layer(l));
        }
        options.threads = 1;
        for (int kept : {1, 2, 3}) {
            CAPTURE(kept);
            attn::Workers workers(kept);
            options.threads = workers;
            for (int repeat = 0; repeat < 2; ++repeat) {  // the same workers again
                const auto parallel = model.forward(ids, options);
                CHECK(parallel.logits == serial.logits);
                for (attn::Index l = 0; l < 4; ++l) CHECK(parallel.attention.layer(l) == serial.attention.layer(l));
            }
        }
    }
    CHECK(long_products > 0);
}

namespace {

const attn::Tokenizer& store_fixture_tokenizer() {
    static const std::filesystem::path dir = std::filesystem::path(ATTN_TEST_DATA_DIR) / "tokenizer";
    static const attn::Tokenizer t = attn::Tokenizer::load(dir / "vocabulary.txt", dir / "merges.txt");
    return t;
}

}  // namespace

TEST_CASE("store::product_ids: markers and truncation") {
    const attn::Tokenizer& t = store_fixture_tokenizer();
    // ids worked out by hand from tests/data/tokenizer/vocabulary.txt
    const std::vector<int> ids = attn::store::product_ids(t, "Table", "a chair.", 160);
    CHECK(ids == std::vector<int>{0, 47, 1, 23, 51, 34, 2});
    CHECK(t.decode(ids) == "<s> table <sep> a chair . </s>");
    CHECK(attn::store::product_ids(t, "table", "", 160) == std::vector<int>{0, 47, 1, 2});
    CHECK(attn::store::product_ids(t, "", "", 160) == std::vector<int>{0, 1, 2});
    CHECK(attn::store::product_ids(t, "Table", "a chair.", 7) == ids);
    CHECK(attn::store::product_ids(t, "Table", "a chair.", 6) == std::vector<int>{0, 47, 1, 23, 51, 34});
    CHECK(attn::store::product_ids(t, "Table", "a chair.", 2) == std::vector<int>{0, 47});
    CHECK(attn::store::product_ids(t, "Table", "a chair.", 1) == std::vector<int>{0});
    CHECK_THROWS_AS((void)attn::store::product_ids(t, "Table", "a chair.", 0), attn::argument_error);
    CHECK_THROWS_AS((void)attn::store::product_ids(t, "Table", "a chair.", -5), attn::argument_error);
}

TEST_CASE("store::prompt_ids: the product's ids without </s>, and errors naming the part") {
    const attn::Tokenizer& t = store_fixture_tokenizer();
    CHECK(attn::store::prompt_ids(t, "Table", "a chair.", 160) == std::vector<int>{0, 47, 1, 23, 51, 34});
    CHECK(attn::store::prompt_ids(t, "Table", "", 160) == std::vector<int>{0, 47, 1});
    CHECK(attn::store::prompt_ids(t, "Table", "a chair.", 3) == std::vector<int>{0, 47, 1});
    CHECK_THROWS_WITH_AS((void)attn::store::prompt_ids(t, "Table", "bad\xC3", 160),
                         doctest::Contains("store::prompt_ids (description)"), attn::argument_error);
    CHECK_THROWS_WITH_AS((void)attn::store::product_ids(t, "bad\xC3", "", 160),
                         doctest::Contains("store::product_ids (name)"), attn::argument_error);
    const attn::Tokenizer none =
        attn::Tokenizer::from_directory(std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf" / "gpt2_f16");
    CHECK_THROWS_WITH_AS((void)attn::store::product_ids(none, "a", "b", 5),
                         doctest::Contains("only the store model's tokenizer"), attn::argument_error);
}

TEST_CASE("store::product_ids for a Model: cut to the model's context") {
    const auto model = attn::Model<float>::load(model_dir);
    std::string long_name;
    for (int i = 0; i < 200; ++i) long_name += "table ";
    const std::vector<int> ids = attn::store::product_ids(model, long_name, "chair");
    CHECK(attn::Index(ids.size()) == model.settings().longest);
    CHECK(ids == attn::store::product_ids(model.tokenizer(), long_name, "chair", model.settings().longest));
    CHECK(attn::store::prompt_ids(model, "table").back() == model.tokenizer().separator_id());
}
