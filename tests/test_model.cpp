// attn/model/model.hpp and forward.hpp: loading a model (and every way a load fails) and the fast forward pass.
#include <doctest/doctest.h>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "allocation_counter.hpp"
#include "model_fixture.hpp"

using attn::Index;
using attn::test::TinyModel;

namespace {
attn::ForwardOptions keep() {
    attn::ForwardOptions options;
    options.keep_attention = true;
    return options;
}

/// Every output of two forward results, compared bit for bit.
template <class T>
void check_identical(const attn::ForwardResult<T>& a, const attn::ForwardResult<T>& b) {
    CHECK(a.logits == b.logits);
    REQUIRE(a.attention.layers() == b.attention.layers());
    for (Index l = 0; l < a.attention.layers(); ++l) CHECK(a.attention.layer(l) == b.attention.layer(l));
    CHECK(a.log_sum_exp == b.log_sum_exp);
    CHECK(a.queries_keys == b.queries_keys);
    REQUIRE(a.statistics.size() == b.statistics.size());
    for (std::size_t l = 0; l < a.statistics.size(); ++l) {
        for (std::size_t p = 0; p < a.statistics[l].planes().size(); ++p)
            CHECK(*a.statistics[l].planes()[p] == *b.statistics[l].planes()[p]);
        CHECK(a.statistics[l].argmax == b.statistics[l].argmax);
    }
}

/// forward_into's tests' options: everything kept (attention, log-sum-exps, statistics with
/// `request`) or nothing, one head ablated, on kept `workers` if given.
attn::ForwardOptions reusing(bool keep_all, const attn::HeadStatisticsRequest& request, attn::HeadId ablated,
                             attn::Workers* workers) {
    attn::ForwardOptions options;
    options.keep_attention = keep_all;
    options.keep_log_sum_exp = keep_all;
    options.statistics = keep_all ? &request : nullptr;
    options.ablate = {ablated};
    if (workers) options.threads = *workers;
    return options;
}

/// A tiny model with room for 64 positions: up to 4 workers of 16.
struct LongerTinyModel {
    TinyModel tiny;
    explicit LongerTinyModel(const std::string& name) : tiny(name) { tiny.manifest["settings"]["longest"] = 64; }
};

std::vector<int> text_of(Index length) {
    std::vector<int> ids;
    for (Index i = 0; i < length; ++i) ids.push_back(4 + int(i * 7 % 23));
    return ids;
}
}  // namespace

TEST_CASE_TEMPLATE("Model: forward returns logits and every head's causal attention", T, float, double) {
    const TinyModel tiny("forward");
    const auto model = attn::Model<T>::load(tiny.write());
    CHECK(model.settings().layers == 2);
    CHECK(model.settings().heads == 2);
    const std::vector<int> ids = attn::store::product_ids(model, "table chair", "café stool");
    REQUIRE(ids.size() >= 5);
    CHECK(ids.front() == model.tokenizer().start_id());
    CHECK(ids.back() == model.tokenizer().end_id());
    const auto result = model.forward(ids, keep());
    const Index n = static_cast<Index>(ids.size());
    CHECK(result.logits.rows() == n);
    CHECK(result.logits.cols() == model.settings().vocabulary_size);
    CHECK(result.logits.allFinite());
    REQUIRE(result.attention.layers() == 2);
    CHECK(result.attention.heads() == 2);
    CHECK(result.attention.positions() == n);
    for (Index l = 0; l < 2; ++l)
        for (Index h = 0; h < 2; ++h)
            for (Index i = 0; i < n; ++i) {
                CHECK(double(result.attention.head(l, h).row(i).sum()) == doctest::Approx(1.0).epsilon(1e-6));
                for (Index j = i + 1; j < n; ++j) CHECK(result.attention(l, h, i, j) == T(0));
            }
    CHECK(model.forward(ids).attention.empty());  // not kept unless asked
    // Without weights the streaming kernel sums in another order: equal to rounding.
    CHECK(double((model.forward(ids).logits - result.logits).cwiseAbs().maxCoeff()) < 1e-5);
}

TEST_CASE("Model: float and double forward passes agree") {
    const TinyModel tiny("precision");
    const auto f = attn::Model<float>::load(tiny.write());
    const auto d = attn::Model<double>::load(tiny.directory);
    const std::vector<int> ids = attn::store::product_ids(f, "table", "chair, stool (24)");
    const auto rf = f.forward(ids, keep());
    const auto rd = d.forward(ids, keep());
    CHECK((rf.logits.cast<double>() - rd.logits).cwiseAbs().maxCoeff() < 1e-4);
    for (Index l = 0; l < 2; ++l)
        for (Index h = 0; h < 2; ++h)
            CHECK((rf.attention.head(l, h).cast<double>() - rd.attention.head(l, h)).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("Model: a later token never changes earlier logits") {
    const TinyModel tiny("causal");
    const auto model = attn::Model<double>::load(tiny.write());
    std::vector<int> ids = attn::store::product_ids(model, "table", "chair stool");
    const auto before = model.forward(ids).logits;
    ids.back() = model.tokenizer().id("a");
    const auto after = model.forward(ids).logits;
    const Index n = before.rows();
    CHECK(before.topRows(n - 1) == after.topRows(n - 1));
    CHECK(before.row(n - 1) != after.row(n - 1));
}

TEST_CASE("Model: ablating a head changes the logits; ablating nothing leaves them bit-identical") {
    const TinyModel tiny("ablate");
    const auto model = attn::Model<float>::load(tiny.write());
    const std::vector<int> ids = attn::store::product_ids(model, "table chair", "stool");
    const auto plain = model.forward(ids).logits;
    attn::ForwardOptions none;
    CHECK(model.forward(ids, none).logits == plain);
    attn::ForwardOptions ablate;
    ablate.ablate = {{1, 0}};
    const auto ablated = model.forward(ids, ablate).logits;
    CHECK((ablated - plain).cwiseAbs().maxCoeff() > 1e-4);
    CHECK(ablated.row(0) != plain.row(0));
    ablate.ablate = {{2, 0}};
    CHECK_THROWS_WITH_AS(model.forward(ids, ablate), doctest::Contains("ablated layer = 2"), attn::argument_error);
}

TEST_CASE("Model: forwards from 4 threads at once are bit-identical to serial runs") {
    const TinyModel tiny("threads");
    const auto model = attn::Model<float>::load(tiny.write());
    std::vector<std::vector<int>> texts = {attn::store::product_ids(model, "table", "chair"),
                                           attn::store::product_ids(model, "stool", ""),
                                           attn::store::product_ids(model, "café chair", "table table stool"),
                                           attn::store::product_ids(model, "a", "b c d e f")};
    std::vector<attn::ForwardResult<float>> serial;
    for (const auto& ids : texts) serial.push_back(model.forward(ids, keep()));
    std::vector<int> matches(4, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int repeat = 0; repeat < 20; ++repeat) {
                const std::size_t k = (t + std::size_t(repeat)) % texts.size();
                const auto r = model.forward(texts[k], keep());
                bool same = r.logits == serial[k].logits;
                for (Index l = 0; l < 2; ++l) same = same && r.attention.layer(l) == serial[k].attention.layer(l);
                matches[t] += same;
            }
        });
    for (auto& thread : threads) thread.join();
    CHECK(matches == std::vector<int>(4, 20));
}

TEST_CASE("Model::forward: empty, too long and out-of-range ids raise argument_error") {
    const TinyModel tiny("bad_ids");
    const auto model = attn::Model<float>::load(tiny.write());
    CHECK_THROWS_WITH_AS(model.forward({}), doctest::Contains("ids is empty"), attn::argument_error);
    CHECK_THROWS_WITH_AS(model.forward(std::vector<int>(13, 4)), doctest::Contains("context (longest) is 12"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(model.forward({0, 4, model.tokenizer().size()}), doctest::Contains("ids[2]"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(model.forward({0, -1}), doctest::Contains("ids[1] = -1"), attn::argument_error);
    CHECK(attn::store::product_ids(model, "table chair stool table chair stool", "café café café café").size() == 12);
    attn::ForwardOptions negative;
    negative.threads = -1;
    CHECK_THROWS_WITH_AS(model.forward({0, 4}, negative), doctest::Contains("Model::forward: threads must be ≥ 0"),
                         attn::argument_error);
}

// ---- corrupted models: one case each -------------------------------------------------

namespace {
template <class Edit>
void check_load_fails(const char* name, Edit edit, const char* expected) {
    TinyModel tiny(name);
    edit(tiny);
    tiny.write();
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(tiny.directory), doctest::Contains(expected), attn::error);
}
}  // namespace

TEST_CASE("Model::load: a missing directory or manifest is an io_error naming the file") {
    CHECK_THROWS_WITH_AS(attn::Model<float>::load("/nonexistent/attn/model"), doctest::Contains("manifest.json"),
                         attn::io_error);
}

TEST_CASE("Model::load: a manifest that is not JSON") {
    TinyModel tiny("not_json");
    tiny.write();
    std::ofstream(tiny.directory / "manifest.json") << "{\"settings\": {";
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(tiny.directory), doctest::Contains("not valid JSON"),
                         attn::format_error);
}

TEST_CASE("Model::load: a missing setting is named") {
    check_load_fails(
        "missing_setting", [](TinyModel& t) { t.manifest["settings"].erase("heads"); }, "missing \"heads\"");
}

TEST_CASE("Model::load: unknown norm, activation and RoPE pairing are rejected") {
    check_load_fails(
        "unknown_norm", [](TinyModel& t) { t.manifest["settings"]["norm"] = "rmsnorm"; },
        "settings.norm = \"rmsnorm\" is not supported");
    check_load_fails(
        "unknown_activation", [](TinyModel& t) { t.manifest["settings"]["activation"] = "swiglu"; },
        "settings.activation = \"swiglu\"");
    check_load_fails(
        "unknown_pairing", [](TinyModel& t) { t.manifest["settings"]["rope_pairing"] = "sideways"; },
        "settings.rope_pairing = \"sideways\"");
    check_load_fails(
        "biased", [](TinyModel& t) { t.manifest["settings"]["attention_bias"] = true; },
        "settings.attention_bias = true");
}

TEST_CASE("Model::load: inconsistent or non-positive sizes are rejected") {
    check_load_fails(
        "heads_times_size", [](TinyModel& t) { t.manifest["settings"]["head_size"] = 3; }, "must equal dimensions");
    check_load_fails(
        "zero_layers", [](TinyModel& t) { t.manifest["settings"]["layers"] = 0; },
        "settings.layers must be a positive integer");
    check_load_fails(
        "string_longest", [](TinyModel& t) { t.manifest["settings"]["longest"] = "160"; },
        "settings.longest must be a positive integer");
    check_load_fails(
        "vocabulary_size", [](TinyModel& t) { t.manifest["settings"]["vocabulary_size"] = 7; },
        "declares vocabulary_size 7");
}

TEST_CASE("Model::load: a missing tensor is named") {
    check_load_fails(
        "missing_tensor", [](TinyModel& t) { t.tensors.erase("layers.1.attention.key"); },
        "missing: layers.1.attention.key");
}

TEST_CASE("Model::load: an extra tensor is named") {
    check_load_fails(
        "extra_tensor", [](TinyModel& t) { t.tensors["layers.0.attention.bias"] = attn::Matrix<float>::Zero(8, 8); },
        "unexpected: layers.0.attention.bias");
}

TEST_CASE("Model::load: a tensor of the wrong shape is named with both shapes") {
    check_load_fails(
        "wrong_shape", [](TinyModel& t) { t.tensors["layers.0.mlp.up.weight"] = attn::Matrix<float>::Zero(8, 15); },
        "layers.0.mlp.up.weight is [8, 15], expected [8, 16]");
}

TEST_CASE("Model::load: a weight that is NaN or infinite is named") {
    check_load_fails(
        "nan_weight",
        [](TinyModel& t) { t.tensors["layers.1.mlp.down.weight"](3, 2) = std::numeric_limits<float>::quiet_NaN(); },
        "tensor 'layers.1.mlp.down.weight' holds NaN or infinity");
    check_load_fails(
        "infinite_bias",
        [](TinyModel& t) { t.tensors["final_norm.bias"](0, 5) = -std::numeric_limits<float>::infinity(); },
        "tensor 'final_norm.bias' holds NaN or infinity");
}

TEST_CASE("Model::forward threads: scores that overflow raise numeric_error from any thread, without hanging") {
    TinyModel tiny("overflow");
    tiny.manifest["settings"]["longest"] = 64;
    tiny.tensors["layers.1.attention.query"] *= 1e20f;  // finite weights, scores past float's range
    tiny.tensors["layers.1.attention.key"] *= 1e20f;
    const auto model = attn::Model<float>::load(tiny.write());
    std::vector<int> ids;
    for (int i = 0; i < 48; ++i) ids.push_back(4 + i % 20);
    for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        attn::ForwardOptions options;
        options.threads = threads;
        CHECK_THROWS_WITH_AS(model.forward(ids, options), doctest::Contains("contain NaN or +infinity"),
                             attn::numeric_error);
        attn::Workers workers(threads);  // and on kept threads, which serve the next call
        options.threads = workers;
        CHECK_THROWS_WITH_AS(model.forward(ids, options), doctest::Contains("contain NaN or +infinity"),
                             attn::numeric_error);
        CHECK_THROWS_AS(model.forward(ids, options), attn::numeric_error);
    }
}

TEST_CASE("Model::load: a missing weights file is an io_error") {
    TinyModel tiny("missing_weights");
    tiny.write();
    std::filesystem::remove(tiny.directory / "model.safetensors");
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(tiny.directory), doctest::Contains("model.safetensors"),
                         attn::io_error);
}

TEST_CASE("Model::load: an empty vocabulary file is a format_error") {
    TinyModel tiny("empty_vocabulary");
    tiny.write();
    std::ofstream(tiny.directory / "vocabulary.txt", std::ios::trunc).flush();
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(tiny.directory), doctest::Contains("vocabulary.txt"),
                         attn::format_error);
}

// ---- Model::forward_into: the caller's storage, reused ---------------------------------

TEST_CASE_TEMPLATE("Model::forward_into threads: reused storage gives forward's bits, at any length", T, float,
                   double) {
    LongerTinyModel longer("forward_into");
    const auto model = attn::Model<T>::load(longer.tiny.write());
    attn::HeadStatisticsRequest request;
    request.markers = {0, 2};
    attn::Workers workers(2);
    for (int threads : {1, 2, -2})  // -2: two kept workers
        for (bool keep_all : {true, false}) {
            CAPTURE(threads);
            CAPTURE(keep_all);
            attn::ForwardOptions options = reusing(keep_all, request, {1, 1}, threads < 0 ? &workers : nullptr);
            options.threads = threads > 0 ? threads : 1;
            attn::ForwardResult<T> reused;
            // the same length again, another length (more or fewer positions) and back
            for (Index length : {Index(48), Index(48), Index(20), Index(64), Index(48)}) {
                CAPTURE(length);
                const std::vector<int> ids = text_of(length);
                model.forward_into(ids, options, reused);
                check_identical(reused, model.forward(ids, options));
                if (keep_all)  // storage reused is not known to be zero: the caller may have written to it
                    const_cast<attn::AttentionWeights<T>&>(reused.attention.layer(1)).head(0).setConstant(T(7));
            }
            // what is no longer asked for is dropped
            model.forward_into(text_of(30), {}, reused);
            check_identical(reused, model.forward(text_of(30)));
            CHECK(reused.attention.empty());
        }
}

TEST_CASE("Model::forward_into: a repeated call of one length allocates nothing, on kept worker threads too") {
    LongerTinyModel longer("forward_into_allocations");
    const auto model = attn::Model<float>::load(longer.tiny.write());
    attn::HeadStatisticsRequest request;
    request.markers = {0, 2};
    attn::Workers workers(2);
    const std::vector<int> ids = text_of(64);
    for (bool kept_threads : {false, true})
        for (bool keep_all : {true, false}) {
            CAPTURE(kept_threads);
            CAPTURE(keep_all);
            const attn::ForwardOptions options = reusing(keep_all, request, {0, 1}, kept_threads ? &workers : nullptr);
            attn::ForwardResult<float> result;
            model.forward_into(ids, options, result);  // the first call allocates
            const float* logits = result.logits.data();
            const float* weights = keep_all ? result.attention.layer(1).data() : nullptr;
            CHECK(attn::test::allocations_in([&] { model.forward_into(ids, options, result); }) == 0);
            CHECK(result.logits.data() == logits);
            if (keep_all) CHECK(result.attention.layer(1).data() == weights);
            check_identical(result, model.forward(ids, options));
        }
    // the counter counts: a fresh result allocates
    CHECK(attn::test::allocations_in([&] { model.forward(ids); }) > 0);
}
