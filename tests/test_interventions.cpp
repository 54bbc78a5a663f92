// attn/hooks/interventions.hpp and activations.hpp: keeping activations changes no bit, patching a
// run's own activations into itself changes no bit, direct logit attribution sums to the logit
// difference, the patching sweeps' resumed runs equal whole hooked runs, errors; and agreement with
// tools/references/interventions.py's float64 PyTorch hooks (tests/data/store/interventions.*).
#include <doctest/doctest.h>
#include <attn/analysis/head_detectors.hpp>
#include <attn/formats/safetensors.hpp>
#include <attn/hooks/interventions.hpp>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "store_model.hpp"

using attn::Index;
using attn::test::store_model;

namespace {

const char* kDescription =
    "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.";

template <class T>
std::vector<int> exemplar(const char* last_word = "cover") {
    return attn::store::product_ids(store_model<T>(), std::string("double chaise patio furniture ") + last_word,
                                    kDescription);
}

template <class T>
attn::LogitMetric cover_minus_set() {
    const attn::Tokenizer& tokens = store_model<T>().tokenizer();
    return {22, tokens.encode("cover").at(0), tokens.encode("set").at(0)};
}

}  // namespace

TEST_CASE_TEMPLATE("run_with_hooks threads: keeping every activation changes no bit of the forward", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    std::vector<int> ids = exemplar<T>();
    while (ids.size() < 80) ids.push_back(ids[ids.size() % 26]);  // long enough for 2 threads to share it
    attn::HookedResult<T> first;
    for (int threads : {1, 2}) {
        attn::HookOptions<T> options;
        options.forward.threads = threads;
        options.keep = {"*"};
        const attn::HookedResult<T> run = attn::run_with_hooks(model, ids, options);
        if (threads == 1) first = run;
        for (const std::string& name : run.cache.names()) CHECK(run.cache[name] == first.cache[name]);  // any threads
        attn::ForwardOptions plain;
        plain.threads = threads;
        CHECK(run.result.logits == model.forward(ids, plain).logits);
        CHECK(run.cache.size() == 2 + 16 * 4);
        CHECK(run.cache["blocks.2.attn.hook_z"].rows() == Index(ids.size()));
        CHECK(run.cache["blocks.2.attn.hook_z"].cols() == 128);
        CHECK(run.cache["blocks.1.attn.hook_result"].cols() == 4 * 128);
        CHECK(run.cache["blocks.3.mlp.hook_post"].cols() == 512);
        CHECK(run.cache["ln_final.hook_scale"].cols() == 1);
        // the residual stream adds up: resid_post = resid_pre + attn_out + mlp_out, attn_out = Σ results
        for (Index l = 0; l < 4; ++l) {
            const auto pre = run.cache[attn::activation_name({attn::Point::resid_pre, l})];
            const auto mid = run.cache[attn::activation_name({attn::Point::resid_mid, l})];
            const auto attn_out = run.cache[attn::activation_name({attn::Point::attn_out, l})];
            CHECK(mid == attn::Matrix<T>(pre + attn_out));
            const auto results = run.cache[attn::activation_name({attn::Point::result, l})];
            attn::Matrix<T> sum = attn::Matrix<T>::Zero(results.rows(), 128);
            for (Index h = 0; h < 4; ++h) sum += results.middleCols(h * 128, 128);
            CHECK(double((sum - attn_out).cwiseAbs().maxCoeff()) < (sizeof(T) == 4 ? 1e-4 : 1e-12));
            if (l > 0) CHECK(pre == run.cache[attn::activation_name({attn::Point::resid_post, l - 1})]);
        }
        CHECK(run.cache["hook_embed"] == run.cache["blocks.0.hook_resid_pre"]);
    }
}

TEST_CASE_TEMPLATE("run_with_hooks: patching a run's own activations into itself changes no bit", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const std::vector<int> ids = exemplar<T>();
    attn::HookOptions<T> keep;
    keep.keep = {"*"};
    const attn::HookedResult<T> clean = attn::run_with_hooks(model, ids, keep);
    for (const std::string name : {"hook_embed", "blocks.0.hook_resid_pre", "blocks.1.attn.hook_z",
                                   "blocks.2.hook_attn_out", "blocks.2.hook_resid_mid", "blocks.3.mlp.hook_pre",
                                   "blocks.0.mlp.hook_post", "blocks.1.hook_mlp_out", "blocks.3.hook_resid_post"}) {
        CAPTURE(name);
        attn::HookOptions<T> patch;
        patch.interventions.push_back(attn::Intervention<T>::replace(name, clean.cache[name]));
        CHECK(attn::run_with_hooks(model, ids, patch).result.logits == clean.result.logits);
    }
    attn::HookOptions<T> head;  // one head, some positions
    head.interventions.push_back(attn::Intervention<T>::replace(
        "blocks.3.attn.hook_z", clean.cache["blocks.3.attn.hook_z"](std::vector<Index>{3, 22}, Eigen::seqN(32, 32)), 1,
        {3, 22}));
    CHECK(attn::run_with_hooks(model, ids, head).result.logits == clean.result.logits);
}

TEST_CASE_TEMPLATE("run_with_hooks: zeroing a head's output is ablating it", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const std::vector<int> ids = exemplar<T>();
    attn::HookOptions<T> zero;
    zero.interventions.push_back(attn::Intervention<T>::zero("blocks.3.attn.hook_z", 1));
    attn::ForwardOptions ablate;
    ablate.ablate = {{3, 1}};
    CHECK(attn::run_with_hooks(model, ids, zero).result.logits == model.forward(ids, ablate).logits);
}

TEST_CASE_TEMPLATE("logit_attribution: the shares sum to the logit difference", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    attn::HookOptions<T> keep;
    keep.keep = attn::attribution_activations(model.settings());
    const attn::HookedResult<T> run = attn::run_with_hooks(model, exemplar<T>(), keep);
    const attn::AttributionResult<T> dla = attn::logit_attribution(model, run, cover_minus_set<T>());
    REQUIRE(dla.shares.size() == 22);
    CHECK(dla.components.front() == "embed");
    CHECK(dla.components[1] == "L0H0");
    CHECK(dla.components[5] == "mlp0");
    CHECK(dla.components.back() == "bias");
    CHECK(double(std::abs(dla.shares.sum() - dla.metric)) <=
          (sizeof(T) == 4 ? 1e-5 : 1e-12) * std::max(1.0, double(std::abs(dla.metric))));
}

TEST_CASE_TEMPLATE("patch_heads threads: resumed runs equal whole runs with the patch as an intervention", T, float,
                   double) {
    const attn::Model<T>& model = store_model<T>();
    const auto clean = exemplar<T>(), corrupted = exemplar<T>("set");
    const attn::LogitMetric metric = cover_minus_set<T>();
    const attn::PatchingResult<T> patching = attn::patch_heads(model, clean, corrupted, metric);
    CHECK(patching.clean > T(0));
    CHECK(patching.corrupted < T(0));
    attn::HookOptions<T> keep;
    keep.keep = {"*"};
    const auto clean_run = attn::run_with_hooks(model, clean, keep);
    for (Index l = 0; l < 4; ++l)
        for (Index h = 0; h < 4; ++h) {
            attn::HookOptions<T> patch;
            const std::string name = attn::activation_name({attn::Point::z, l});
            patch.interventions.push_back(
                attn::Intervention<T>::replace(name, clean_run.cache[name].middleCols(h * 32, 32), h));
            const auto logits = attn::run_with_hooks(model, corrupted, patch).result.logits;
            const T m = logits(22, metric.token) - logits(22, metric.other);
            CHECK(patching.scores(l, h) == (m - patching.corrupted) / (patching.clean - patching.corrupted));
        }
    attn::ForwardOptions two;
    two.threads = 2;
    CHECK(attn::patch_heads(model, clean, corrupted, metric, two).scores == patching.scores);
}

TEST_CASE("patch_residual: patching the name's last token restores the clean run, elsewhere little") {
    const attn::Model<double>& model = store_model<double>();
    const attn::PatchingResult<double> patching =
        attn::patch_residual(model, exemplar<double>(), exemplar<double>("set"), cover_minus_set<double>());
    REQUIRE(patching.scores.rows() == 4);
    REQUIRE(patching.scores.cols() == 26);
    CHECK(patching.scores(0, 6) == doctest::Approx(1.0).epsilon(1e-12));  // layer 0 at the differing token: all of it
    for (Index i = 0; i < 26; ++i)
        if (i != 6) CHECK(patching.scores(0, i) == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(patching.scores.rightCols(3).isZero(0));  // after the metric's position
}

TEST_CASE("run_with_hooks: bad names, heads, positions and shapes are errors before any work") {
    const attn::Model<float>& model = store_model<float>();
    const std::vector<int> ids = exemplar<float>();
    attn::HookOptions<float> options;
    options.keep = {"blocks.4.hook_resid_pre"};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("layer 4 is out of range"),
                         attn::argument_error);
    options.keep = {"blocks.0.hook_nothing"};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("unknown name"),
                         attn::argument_error);
    options.keep = {};
    options.positions = {26};
    options.keep = {"hook_embed"};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("kept position"),
                         attn::argument_error);
    options = {};
    options.interventions.push_back(attn::Intervention<float>::zero("blocks.0.attn.hook_z", 4));
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("intervention head"),
                         attn::argument_error);
    options.interventions = {attn::Intervention<float>::zero("blocks.0.hook_resid_pre", 1)};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("not per head"),
                         attn::argument_error);
    options.interventions = {
        attn::Intervention<float>::replace("blocks.0.hook_resid_pre", attn::Matrix<float>(2, 128), {}, {1})};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("expected 1 × 128"),
                         attn::shape_error);
    options.interventions = {attn::Intervention<float>::zero("blocks.0.attn.hook_result")};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("cannot be changed"),
                         attn::argument_error);
    options.interventions = {attn::Intervention<float>::zero("hook_embed", {}, {30})};
    CHECK_THROWS_WITH_AS(attn::run_with_hooks(model, ids, options), doctest::Contains("intervention position"),
                         attn::argument_error);
    const attn::LogitMetric metric = cover_minus_set<float>();
    CHECK_THROWS_WITH_AS(attn::patch_heads(model, ids, std::vector<int>(ids.begin(), ids.end() - 1), metric),
                         doctest::Contains("same length"), attn::argument_error);
    CHECK_THROWS_AS(attn::patch_heads(model, ids, ids, metric), attn::numeric_error);
    CHECK_THROWS_WITH_AS(attn::patch_heads(model, ids, ids, attn::LogitMetric{26, 1, 2}),
                         doctest::Contains("metric position"), attn::argument_error);
}

// ---- agreement with tools/references/interventions.py (float64 PyTorch, forward hooks on tools/common/model.py) ----

namespace {

struct Golden {
    nlohmann::json json;
    attn::SafeTensors tensors;
};

const Golden& golden() {
    static const Golden g = [] {
        const std::filesystem::path directory = std::filesystem::path(ATTN_TEST_DATA_DIR) / "store";
        std::ifstream in(directory / "interventions.json");
        REQUIRE_MESSAGE(
            in,
            "tests/data/store/interventions.json is missing (tools/references/interventions.py --golden writes it)");
        return Golden{nlohmann::json::parse(in), attn::SafeTensors::open(directory / "interventions.safetensors")};
    }();
    return g;
}

/// Largest |a − b| relative to the largest |b| (at least 1).
template <class DA, class DB>
double relative_difference(const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return (a.template cast<double>() - b.template cast<double>()).cwiseAbs().maxCoeff() /
           std::max(1.0, b.template cast<double>().cwiseAbs().maxCoeff());
}

template <class T>
constexpr double golden_bound() {
    return sizeof(T) == 4 ? 1e-5 : 1e-10;  // float's and double's bounds
}

}  // namespace

TEST_CASE_TEMPLATE("run_with_hooks: every activation equals PyTorch's hooks", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const Golden& g = golden();
    REQUIRE(g.json.at("cases").size() >= 5);
    double worst = 0.0;
    for (const nlohmann::json& c : g.json.at("cases")) {
        const std::string key = c.at("key").get<std::string>();
        CAPTURE(key);
        const auto ids = c.at("ids").get<std::vector<int>>();
        CHECK(ids ==
              attn::store::product_ids(model, c.at("name").get<std::string>(), c.at("description").get<std::string>()));
        attn::HookOptions<T> options;
        options.keep = {"*"};
        options.forward.keep_attention = true;
        const attn::HookedResult<T> run = attn::run_with_hooks(model, ids, options);
        const auto omitted = c.at("omitted_points").get<std::vector<std::string>>();
        int compared = 0;
        int projected = 0;
        for (const std::string& name : run.cache.names()) {
            if (std::find(omitted.begin(), omitted.end(), name) != omitted.end()) continue;
            CAPTURE(name);
            // The store goldens predate the projections' points (hook_q, k, v, rot_q, rot_k);
            // the Hugging Face goldens check them (test_architectures.cpp).
            if (!g.tensors.contains(key + "." + name)) {
                const bool projection =
                    name.find(".attn.hook_q") != std::string::npos || name.find(".attn.hook_k") != std::string::npos ||
                    name.find(".attn.hook_v") != std::string::npos || name.find(".attn.hook_rot_") != std::string::npos;
                CHECK(projection);
                ++projected;
                continue;
            }
            const double d = relative_difference(run.cache[name], g.tensors.matrix<double>(key + "." + name));
            CHECK(d <= golden_bound<T>());
            worst = std::max(worst, d);
            ++compared;
        }
        CHECK(projected == 5 * 4);
        CHECK(compared + int(omitted.size()) == 2 + 11 * 4);
        for (Index l = 0; l < 4; ++l) {  // hook_pattern, (H·n × n)
            const attn::Matrix<double> pattern =
                g.tensors.matrix<double>(key + ".blocks." + std::to_string(l) + ".attn.hook_pattern");
            for (Index h = 0; h < 4; ++h)
                CHECK(relative_difference(run.result.attention.head(l, h),
                                          pattern.middleRows(h * Index(ids.size()), Index(ids.size()))) <=
                      golden_bound<T>());
        }
        for (const char* pattern : {"previous_token", "duplicate_token", "induction"}) {
            const attn::KeyPattern which = std::string(pattern) == "previous_token" ? attn::KeyPattern::previous_token()
                                           : std::string(pattern) == "duplicate_token"
                                               ? attn::KeyPattern::duplicate_token(ids)
                                               : attn::KeyPattern::induction(ids);
            const attn::HeadTable scores = attn::detect_heads(run.result.attention, which);
            const auto expected = c.at("head_detectors").at(pattern).get<std::vector<std::vector<double>>>();
            for (Index l = 0; l < 4; ++l)
                for (Index h = 0; h < 4; ++h)
                    CHECK(std::abs(scores(l, h) - expected[std::size_t(l)][std::size_t(h)]) <= golden_bound<T>());
        }
    }
    MESSAGE("worst relative difference from PyTorch: " << worst);
}

TEST_CASE_TEMPLATE("logit_attribution, logit_lens and patching equal PyTorch's on the exemplar", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const nlohmann::json& e = golden().json.at("exemplar");
    const attn::LogitMetric metric{e.at("position").get<Index>(), e.at("t1").get<int>(), e.at("t2").get<int>()};
    CHECK(metric.token == cover_minus_set<T>().token);
    CHECK(metric.other == cover_minus_set<T>().other);
    attn::HookOptions<T> keep;
    keep.keep = attn::attribution_activations(model.settings());
    for (Index l = 0; l < 4; ++l) keep.keep.push_back(attn::activation_name({attn::Point::resid_post, l}));
    const attn::HookedResult<T> run = attn::run_with_hooks(model, exemplar<T>(), keep);
    const attn::AttributionResult<T> dla = attn::logit_attribution(model, run, metric);
    const nlohmann::json& shares = e.at("dla");
    REQUIRE(shares.size() == std::size_t(dla.shares.size()));
    for (std::size_t i = 0; i < shares.size(); ++i) {
        CHECK(shares[i].at("component").get<std::string>() == dla.components[i]);
        CHECK(std::abs(double(dla.shares(Index(i))) - shares[i].at("value").get<double>()) <= golden_bound<T>() * 10);
    }
    const attn::LensResult<T> lens = attn::logit_lens(model, run, metric.position);
    const nlohmann::json& stages = e.at("logit_lens");
    REQUIRE(stages.size() == lens.stages.size());
    for (std::size_t s = 0; s < stages.size(); ++s) {
        CHECK(std::abs(double(lens.probabilities(Index(s), metric.token)) - stages[s].at("p").get<double>()) <=
              golden_bound<T>());
        if (sizeof(T) == 8) {  // in float, near ties among the top 5 may swap
            std::vector<int> top(std::size_t(model.settings().vocabulary_size));
            std::iota(top.begin(), top.end(), 0);
            std::partial_sort(top.begin(), top.begin() + 5, top.end(), [&](int a, int b) {
                return lens.probabilities(Index(s), a) > lens.probabilities(Index(s), b);
            });
            top.resize(5);
            CHECK(top == stages[s].at("top").get<std::vector<int>>());
        }
    }
    const auto clean = exemplar<T>(), corrupted = exemplar<T>("set");
    const attn::PatchingResult<T> heads = attn::patch_heads(model, clean, corrupted, metric);
    CHECK(std::abs(double(heads.clean) - e.at("m_clean").get<double>()) <= golden_bound<T>() * 20);
    CHECK(std::abs(double(heads.corrupted) - e.at("m_corrupted").get<double>()) <= golden_bound<T>() * 20);
    const auto expected_heads = e.at("head_patching").get<std::vector<std::vector<double>>>();
    for (Index l = 0; l < 4; ++l)
        for (Index h = 0; h < 4; ++h)
            CHECK(std::abs(double(heads.scores(l, h)) - expected_heads[std::size_t(l)][std::size_t(h)]) <=
                  golden_bound<T>() * 10);
    const attn::PatchingResult<T> residual = attn::patch_residual(model, clean, corrupted, metric);
    const auto expected_residual = e.at("residual_patching").get<std::vector<std::vector<double>>>();
    for (Index l = 0; l < 4; ++l)
        for (Index i = 0; i < Index(clean.size()); ++i)
            CHECK(std::abs(double(residual.scores(l, i)) - expected_residual[std::size_t(l)][std::size_t(i)]) <=
                  golden_bound<T>() * 10);
}

TEST_CASE_TEMPLATE("interventions: zero and mean ablation and a residual patch equal PyTorch's", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const Golden& g = golden();
    const nlohmann::json& all = g.json.at("interventions");
    const auto clean = exemplar<T>(), corrupted = exemplar<T>("set");
    {  // (a) zero-ablation of head (3, 1)
        attn::HookOptions<T> options;
        options.interventions.push_back(attn::Intervention<T>::zero("blocks.3.attn.hook_z", 1));
        CHECK(relative_difference(attn::run_with_hooks(model, clean, options).result.logits,
                                  g.tensors.matrix<double>(all.at("intervention_a").at("logits").get<std::string>())) <=
              golden_bound<T>());
    }
    {  // (b) mean-ablation of head (2, 0) with the caller's mean
        const auto mean = all.at("intervention_b").at("mean").get<std::vector<double>>();
        attn::Matrix<T> row(1, Index(mean.size()));
        for (std::size_t j = 0; j < mean.size(); ++j) row(0, Index(j)) = T(mean[j]);
        attn::HookOptions<T> options;
        options.interventions.push_back(attn::Intervention<T>::mean("blocks.2.attn.hook_z", row, 0));
        CHECK(relative_difference(attn::run_with_hooks(model, clean, options).result.logits,
                                  g.tensors.matrix<double>(all.at("intervention_b").at("logits").get<std::string>())) <=
              golden_bound<T>());
    }
    {  // (c) blocks.2.hook_resid_pre row 6 from the clean run into the corrupted one
        attn::HookOptions<T> keep;
        keep.keep = {"blocks.2.hook_resid_pre"};
        keep.positions = {6};
        const auto source = attn::run_with_hooks(model, clean, keep);
        attn::HookOptions<T> options;
        options.interventions.push_back(attn::Intervention<T>::replace(
            "blocks.2.hook_resid_pre", source.cache["blocks.2.hook_resid_pre"], {}, {6}));
        CHECK(relative_difference(attn::run_with_hooks(model, corrupted, options).result.logits,
                                  g.tensors.matrix<double>(all.at("intervention_c").at("logits").get<std::string>())) <=
              golden_bound<T>());
    }
}
