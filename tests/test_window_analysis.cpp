// The head measurements in a sliding layer (analysis/head_detectors.hpp, head_scores.hpp,
// core/head_statistics.hpp): keys before a row's window are unreachable, and count neither as a
// miss (the detectors leave out rows whose pattern keys are all out of reach) nor in the even
// spread (1 / the keys the row sees). On hand-made heads where the right answer is known, and on
// the mistral_window checkpoint (a window of 5 in both layers, 24 positions), where the
// attention route and the kernel's statistics must agree.
#include <doctest/doctest.h>
#include <attn/analysis/head_detectors.hpp>
#include <attn/analysis/head_scores.hpp>
#include <attn/analysis/key_pattern.hpp>
#include <attn/model/model.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

using attn::Index;

namespace window_analysis {

/// Row i of a head of window w that puts all its weight on the latest earlier occurrence of
/// ids[i] if one is in its window, else on itself: a perfect duplicate-token head, as far as
/// the window lets it be.
inline attn::AttentionWeights<double> duplicate_head(const std::vector<int>& ids, Index window) {
    const Index n = Index(ids.size());
    attn::AttentionWeights<double> w(1, n, n);
    for (Index i = 0; i < n; ++i) {
        Index target = i;
        for (Index j = i - 1; j >= std::max<Index>(0, i - window + 1); --j)
            if (ids[std::size_t(j)] == ids[std::size_t(i)]) {
                target = j;
                break;
            }
        w(0, i, target) = 1.0;
    }
    return w;
}

template <class T>
const attn::Model<T>& mistral() {
    static const attn::Model<T> model =
        attn::Model<T>::load(std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf" / "mistral_window");
    return model;
}

}  // namespace window_analysis

TEST_CASE("Window analysis: a duplicate head that finds every duplicate its window holds scores 1, not less") {
    // period 7 with a window of 4: half the duplicates are out of reach
    std::vector<int> ids;
    for (int k = 0; k < 28; ++k) ids.push_back(k % 7 == 3 ? 100 + k : (k % 7) % 4);
    const Index window = 4;
    // the same weights, told of the window (as Model::forward's are) and not
    const attn::ModelAttention<double> attention({window_analysis::duplicate_head(ids, window)}, {window});
    const attn::ModelAttention<double> unaware({window_analysis::duplicate_head(ids, window)});
    REQUIRE(attention.window(0) == window);
    REQUIRE(unaware.windows().empty());
    const attn::KeyPattern pattern = attn::KeyPattern::duplicate_token(ids);
    attn::DetectorOptions options;
    options.exclude_current_token = false;
    const double blind = attn::detect_heads(unaware, pattern, options)(0, 0);
    const double seen = attn::detect_heads(attention, pattern, options)(0, 0);
    CHECK(blind < 0.9);  // the rows whose duplicates were out of reach counted as misses
    // every row with a reachable duplicate scores; rows with none anywhere still count (as in TransformerLens)
    Index rows = 0, hits = 0;
    for (Index i = 0; i < Index(ids.size()); ++i) {
        const std::vector<Index> keys = pattern.keys(i);
        const bool any = !keys.empty(), reachable = any && keys.back() > i - window;
        if (any && !reachable) continue;
        ++rows;
        hits += reachable;
    }
    CHECK(seen == doctest::Approx(double(hits) / double(rows)).epsilon(1e-12));
    CHECK(seen > blind);
    // A previous-token pattern is always within reach (window ≥ 2): the same score either way.
    const attn::KeyPattern previous = attn::KeyPattern::previous_token();
    const double full = attn::detect_heads(unaware, previous, options)(0, 0);
    CHECK(attn::detect_heads(attention, previous, options)(0, 0) == full);
    // windows that do not fit the layers are refused where the attention is made
    CHECK_THROWS_AS(attn::ModelAttention<double>({window_analysis::duplicate_head(ids, window)}, {window, window}),
                    attn::shape_error);
    CHECK_THROWS_AS(attn::ModelAttention<double>({window_analysis::duplicate_head(ids, window)}, {-1}),
                    attn::argument_error);
    CHECK(attn::ModelAttention<double>({window_analysis::duplicate_head(ids, window)}, {0}).windows().empty());

    // score_heads: the head's weight on reachable duplicates against an even spread over the window
    const std::vector<Index> queries = attn::query_range(0, Index(ids.size()));
    const attn::ScoreResult scores = attn::score_heads(attention, queries, pattern);
    double even = 0.0, weight = 0.0;
    for (Index i : queries) {
        const Index lo = std::max<Index>(0, i - window + 1);
        Index reachable = 0;
        for (Index key : pattern.keys(i)) reachable += key >= lo;
        even += double(reachable) / double(i + 1 - lo);
        weight += reachable > 0 ? 1.0 : 0.0;
    }
    CHECK(scores.even_by_layer.size() == 1);
    CHECK(scores.even_average(0) == doctest::Approx(even / double(queries.size())).epsilon(1e-12));
    CHECK(scores.weight(0, 0) == doctest::Approx(weight).epsilon(1e-12));
    CHECK(scores.even_average(0) != doctest::Approx(scores.even_average()));  // the full layer's 1/(i + 1) differs
    attn::HeadAverage average(attn::HeadAverage::Weighting::per_query);
    average.add(scores);
    average.add(scores);
    CHECK(average.even(0) == doctest::Approx(scores.even_average(0)).epsilon(1e-12));
}

TEST_CASE_TEMPLATE("Window analysis: on mistral_window the attention and the kernel's statistics agree, window-aware",
                   T, float, double) {
    const attn::Model<T>& model = window_analysis::mistral<T>();
    const attn::ModelSettings& s = model.settings();
    REQUIRE(attn::layer_windows(s) == std::vector<Index>{5, 5});
    std::vector<int> ids;
    for (int k = 0; k < 24; ++k) ids.push_back((k * 7 + 3) % 80);
    attn::HeadStatisticsRequest request;
    request.back = 3;
    attn::ForwardOptions options;
    options.keep_attention = true;
    options.statistics = &request;
    const attn::ForwardResult<T> result = model.forward(ids, options);
    const std::vector<Index> queries = attn::query_range(1, 24);
    for (const attn::KeyPattern& pattern :
         {attn::KeyPattern::previous_token(), attn::KeyPattern::first_token(), attn::KeyPattern::at_least_back(3)}) {
        CAPTURE(pattern.describe());
        const attn::ScoreResult fast = attn::score_heads(result.statistics, queries, pattern);
        const attn::ScoreResult slow = attn::score_heads(result.attention, queries, pattern);
        for (Index l = 0; l < s.layers; ++l) {
            CHECK(fast.even_average(l) == doctest::Approx(slow.even_average(l)).epsilon(1e-12));
            for (Index h = 0; h < s.heads; ++h)
                CHECK(double(fast.weight(l, h)) == doctest::Approx(slow.weight(l, h)).epsilon(1e-4));
        }
    }
    // the first token is out of reach from position 5 on: its even spread counts rows 1 … 4 only
    REQUIRE(result.attention.windows() == attn::layer_windows(s));  // the forward's weights carry the windows
    const attn::ScoreResult first = attn::score_heads(result.attention, queries, attn::KeyPattern::first_token());
    CHECK(first.even_average(0) ==
          doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5) / double(queries.size())).epsilon(1e-12));
    // the kernel's statistics: an even spread over at most 5 keys, the largest weight's baseline 1/min(i + 1, 5)
    const attn::HeadStatisticsSummary summary = result.statistics[1].summary();
    double largest = 0.0;
    for (Index i = 0; i < 24; ++i) largest += 1.0 / double(std::min<Index>(i + 1, 5));
    CHECK(summary.even.largest == doctest::Approx(largest / 24.0).epsilon(1e-12));
    for (Index h = 0; h < s.heads; ++h) CHECK(summary.heads[std::size_t(h)].largest >= 1.0 / 5.0 - 1e-6);
    // detectors on the checkpoint: previous-token scores unchanged by the window
    std::vector<attn::AttentionWeights<T>> layers;
    for (Index l = 0; l < result.attention.layers(); ++l) layers.push_back(result.attention.layer(l));
    const attn::ModelAttention<T> unaware(std::move(layers));
    const attn::HeadTable blind = attn::detect_heads(unaware, attn::KeyPattern::previous_token());
    CHECK(attn::detect_heads(result.attention, attn::KeyPattern::previous_token()).isApprox(blind, 1e-12));
}
