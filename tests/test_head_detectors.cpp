// attn/analysis/head_detectors.hpp: TransformerLens's detection patterns and "mul" scores on
// hand-made weights, the options, errors, and the store model's heads.
#include <doctest/doctest.h>
#include <attn/analysis/head_detectors.hpp>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <filesystem>
#include <vector>

using attn::Index;
using attn::KeyPattern;

TEST_CASE("detection patterns: previous, duplicate and induction positions as TransformerLens defines them") {
    const std::vector<int> ids{0, 5, 6, 7, 5, 6};  // <s> A B C A B
    CHECK(KeyPattern::previous_token().selects(3, 2));
    CHECK_FALSE(KeyPattern::previous_token().selects(3, 1));
    CHECK(KeyPattern::duplicate_token(ids).selects(4, 1));        // the second A sees the first
    CHECK_FALSE(KeyPattern::duplicate_token(ids).selects(4, 4));  // not itself
    CHECK_FALSE(KeyPattern::duplicate_token(ids).selects(1, 4));  // not a later copy
    CHECK(KeyPattern::induction(ids).selects(4, 2));              // second A → the B after the first A
    CHECK(KeyPattern::induction(ids).selects(5, 3));              // second B → C
    CHECK_FALSE(KeyPattern::induction(ids).selects(4, 5));
}

TEST_CASE("detection_score: the share of the attention on the pattern, with and without exclusions") {
    const std::vector<int> ids{0, 5, 5};
    attn::Matrix<double> weights(3, 3);
    weights << 1.0, 0.0, 0.0,  //
        0.5, 0.5, 0.0,         //
        0.2, 0.6, 0.2;
    // previous token: (1, 0) 0.5 and (2, 1) 0.6 of 3 in all
    CHECK(attn::detection_score(weights, KeyPattern::previous_token()) == doctest::Approx(1.1 / 3.0));
    // duplicate: (2, 1) = 0.6; induction: (2, 2)? ids[1] = ids[2] → D(2, 2) = 1: 0.2
    CHECK(attn::detection_score(weights, KeyPattern::duplicate_token(ids)) == doctest::Approx(0.6 / 3.0));
    CHECK(attn::detection_score(weights, KeyPattern::induction(ids)) == doctest::Approx(0.2 / 3.0));
    // any other pattern too: key 0 is (0, 0), (1, 0), (2, 0); two or more back only (2, 0)
    CHECK(attn::detection_score(weights, KeyPattern::first_token()) == doctest::Approx(1.7 / 3.0));
    CHECK(attn::detection_score(weights, KeyPattern::at_least_back(2)) == doctest::Approx(0.2 / 3.0));
    attn::DetectorOptions options;
    options.exclude_bos = true;  // column 0 out: 0.5 + 0.6 + 0.2 left
    CHECK(attn::detection_score(weights, KeyPattern::previous_token(), options) == doctest::Approx(0.6 / 1.3));
    options.exclude_current_token = true;  // and the diagonal: only (2, 1) = 0.6 left
    CHECK(attn::detection_score(weights, KeyPattern::duplicate_token(ids), options) == doctest::Approx(1.0));
    CHECK_THROWS_WITH_AS(attn::detection_score(weights, KeyPattern::induction({0, 5})),
                         doctest::Contains("KeyPattern::induction(2 ids) has 2 ids, but the attention has 3 positions"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::detection_score(weights.leftCols(2), KeyPattern::previous_token()),
                         doctest::Contains("weights are 3 × 2, expected n × n"), attn::shape_error);
    attn::Matrix<double> only_bos = attn::Matrix<double>::Zero(2, 2);
    only_bos.col(0).setOnes();
    options.exclude_current_token = false;
    CHECK_THROWS_AS(attn::detection_score(only_bos, KeyPattern::induction({0, 5}), options), attn::numeric_error);
}

TEST_CASE("detect_heads: the store model's previous-token head scores highest on the previous-token pattern") {
    const auto model = attn::Model<double>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store");
    const std::vector<int> ids = attn::store::product_ids(
        model, "double chaise patio furniture cover",
        "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.");
    attn::ForwardOptions options;
    options.keep_attention = true;
    const auto result = model.forward(ids, options);
    const attn::HeadTable previous = attn::detect_heads(result.attention, KeyPattern::previous_token());
    REQUIRE(previous.rows() == 4);
    REQUIRE(previous.cols() == 4);
    CHECK((previous.array() >= 0.0).all());
    CHECK((previous.array() <= 1.0).all());
    Index layer = 0, head = 0;
    previous.maxCoeff(&layer, &head);
    CHECK(layer == 1);  // layer 2, head 4: the chapter's previous-token head on our model (previous_token_heads)
    CHECK(head == 3);
    // each row's weights sum to 1, so a score is at most the share of rows with a target: on this text
    // few tokens repeat, and every duplicate and induction score stays small
    CHECK(attn::detect_heads(result.attention, KeyPattern::duplicate_token(ids)).maxCoeff() < 0.1);
    CHECK(attn::detect_heads(result.attention, KeyPattern::induction(ids)).maxCoeff() < 0.2);
    CHECK_THROWS_AS(attn::detect_heads(attn::ModelAttention<double>{}, KeyPattern::induction(ids)),
                    attn::argument_error);
    std::vector<int> one_short = ids;
    one_short.pop_back();
    CHECK_THROWS_WITH_AS(attn::detect_heads(result.attention, KeyPattern::duplicate_token(one_short)),
                         doctest::Contains("detect_heads: KeyPattern::duplicate_token"), attn::shape_error);
}
