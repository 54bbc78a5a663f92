// The model's sight at speed (model/attention_rows.hpp, ForwardOptions::keep_log_sum_exp and
// ::statistics): chosen rows and in-kernel statistics against the weights keep_attention returns.
#include <doctest/doctest.h>
#include <attn/model/attention_rows.hpp>
#include <attn/model/model.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "model_fixture.hpp"
#include "store_model.hpp"

using attn::Index;

namespace {
const attn::Model<float>& float_store_model() {
    return attn::test::store_model<float>();
}

std::vector<int> ordinary_ids(const attn::Model<float>& model, Index count) {
    std::vector<int> ids;
    for (Index i = 0; i < count; ++i) ids.push_back(4 + int(i * 37) % (model.tokenizer().size() - 4));
    return ids;
}
}  // namespace

TEST_CASE("Model: attention_rows after a forward that kept log-sum-exps equals keep_attention, on 1 and 2 threads") {
    const auto& model = float_store_model();
    const std::vector<int> ids = ordinary_ids(model, 150);
    attn::ForwardOptions options;
    options.keep_attention = true;
    const auto full = model.forward(ids, options);
    for (int threads : {1, 2}) {
        CAPTURE(threads);
        attn::ForwardOptions light;
        light.keep_log_sum_exp = true;
        light.threads = threads;
        const auto kept = model.forward(ids, light);
        CHECK(kept.attention.empty());
        CHECK(kept.logits == model.forward(ids).logits);  // the same pass
        for (Index layer = 0; layer < full.attention.layers(); ++layer) {
            const std::vector<Index> heads = {2, 0}, rows = {0, 1, 95, 96, 149};
            const attn::HeadStack<float> chosen =
                attn::attention_rows(model.settings(), kept, layer, heads, rows).weights;
            REQUIRE(chosen.cols() == 150);
            for (std::size_t a = 0; a < heads.size(); ++a)
                for (std::size_t b = 0; b < rows.size(); ++b)
                    for (Index j = 0; j < 150; ++j) {
                        const double expected = full.attention(layer, heads[a], rows[b], j);
                        CHECK(double(chosen(Index(a), Index(b), j)) ==
                              doctest::Approx(expected).epsilon(1e-5).scale(1e-7));
                    }
        }
    }
    CHECK_THROWS_WITH_AS(attn::attention_rows(model.settings(), full, 0, {}, {}), doctest::Contains("keep_log_sum_exp"),
                         attn::argument_error);
    // into one result: the same numbers, its storage reused, nothing allocated the second time
    attn::ForwardOptions light;
    light.keep_log_sum_exp = true;
    const auto kept = model.forward(ids, light);
    attn::WeightRowsResult<float> rows;
    const std::vector<Index> head = {1}, positions = {20, 40};
    attn::attention_rows_into(model.settings(), kept, 3, head, positions, {}, rows);
    const float* storage = rows.weights.data();
    CHECK(attn::test::allocations_in(
              [&] { attn::attention_rows_into(model.settings(), kept, 3, head, positions, {}, rows); }) == 0);
    CHECK(rows.weights.data() == storage);
    CHECK(rows.weights == attn::attention_rows(model.settings(), kept, 3, {1}, {20, 40}).weights);
    attn::WeightRowsResult<float> wrong;
    wrong.weights = attn::HeadStack<float>(1, 1, 1);
    CHECK_THROWS_WITH_AS(attn::attention_rows_into(model.settings(), kept, 3, {1}, {20, 40}, {}, wrong),
                         doctest::Contains("weights storage is 1 × (1 × 1)"), attn::shape_error);
}

TEST_CASE("Model: head statistics measured in the forward's kernel equal those of the kept weights, 2 threads") {
    const auto& model = float_store_model();
    const std::vector<int> ids = ordinary_ids(model, 120);
    attn::HeadStatisticsRequest request;
    request.back = 4;
    request.markers = {0, 9};
    request.back_excludes_markers = true;
    attn::ForwardOptions options;
    options.statistics = &request;
    options.threads = 2;
    const auto measured = model.forward(ids, options);
    options.keep_attention = true;
    options.statistics = nullptr;
    const auto full = model.forward(ids, options);
    REQUIRE(measured.statistics.size() == 4);
    for (Index layer = 0; layer < 4; ++layer)
        for (Index h = 0; h < 4; ++h)
            for (Index i = 0; i < 120; ++i) {
                double previous = i > 0 ? full.attention(layer, h, i, i - 1) : 0.0, back = 0, marked = 0;
                for (Index j = 0; j <= i; ++j) {
                    const double w = full.attention(layer, h, i, j);
                    if (j == 0 || j == 9)
                        marked += w;
                    else if (j <= i - 4)
                        back += w;
                }
                const auto& s = measured.statistics[std::size_t(layer)];
                CHECK(double(s.previous(h, i)) == doctest::Approx(previous).epsilon(1e-5).scale(1));
                CHECK(double(s.back(h, i)) == doctest::Approx(back).epsilon(1e-5).scale(1));
                CHECK(double(s.markers(h, i)) == doctest::Approx(marked).epsilon(1e-5).scale(1));
            }
}
