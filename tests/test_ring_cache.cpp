// A sliding layer's key/value cache keeps only its window (core/kv_cache.hpp, model/decoder.hpp):
// memory flat in the text's length, decoding still giving the forward's rows over texts many
// windows long (a prefill longer than the window, then steps; appends of any size), rotary
// positions absolute, the rows saying which positions were visible, attend_cache over a
// window's cache equal to attention over every key, and truncation within the window.
//
// The checkpoint is tests/data/hf/mistral_window (a window of 5 in both layers) with its context
// raised from 24 to 96 positions in a scratch copy: the weights do not depend on the context,
// and 96 positions are 19 windows.
#include <doctest/doctest.h>
#include <attn/core/attention.hpp>
#include <attn/core/kv_cache.hpp>
#include <attn/hooks/interventions.hpp>
#include <attn/model/attention_rows.hpp>
#include <attn/model/decoder.hpp>
#include <attn/model/generate.hpp>
#include <attn/model/model.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

using attn::HeadStack;
using attn::Index;

namespace ring {

constexpr Index kWindow = 5;    // mistral_window's sliding_window
constexpr Index kContext = 96;  // the scratch copy's max_position_embeddings

/// mistral_window with a context of kContext positions, in a scratch directory removed at exit.
struct LongMistral {
    std::filesystem::path directory;
    LongMistral()
        : directory(std::filesystem::temp_directory_path() /
                    ("attn_test_ring_" + std::to_string(std::random_device{}()))) {
        const std::filesystem::path source = std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf" / "mistral_window";
        std::filesystem::create_directories(directory);
        for (const char* file : {"model.safetensors", "config.json"})
            std::filesystem::copy_file(source / file, directory / file);
        nlohmann::json config = nlohmann::json::parse(std::ifstream(source / "config.json"));
        REQUIRE(config["sliding_window"].get<Index>() == kWindow);
        config["max_position_embeddings"] = kContext;
        std::ofstream(directory / "config.json") << config.dump(2);
    }
    LongMistral(const LongMistral&) = delete;
    LongMistral& operator=(const LongMistral&) = delete;
    ~LongMistral() {
        std::error_code ignored;
        std::filesystem::remove_all(directory, ignored);
    }
};

template <class T>
const attn::Model<T>& long_mistral() {
    static const LongMistral files;
    static const attn::Model<T> model = attn::Model<T>::load(files.directory);
    return model;
}

/// kContext random ids of the checkpoint's vocabulary.
inline std::vector<int> random_ids(unsigned seed) {
    std::mt19937 draw(seed);
    std::vector<int> ids(std::size_t(kContext), 0);
    for (int& id : ids) id = int(draw() % 80u);
    return ids;
}

template <class T>
constexpr double tolerance() {
    return sizeof(T) == 4 ? 2e-5 : 1e-12;
}

/// Largest |a − b| over max(1, max |b|).
template <class A, class B>
double scaled_difference(const A& a, const B& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    const double scale = std::max(1.0, double(b.cwiseAbs().maxCoeff()));
    return double((a - b).cwiseAbs().maxCoeff()) / scale;
}

/// Decodes `ids` in appends of the given sizes (the last repeated), each against the whole text's
/// forward: logits, every layer's rows (out-of-window columns exactly 0), the visible ranges, and
/// every sliding layer's cache bytes the same after each append.
template <class T>
void check_decoding(const std::vector<int>& ids, const std::vector<Index>& sizes, int threads) {
    const attn::Model<T>& model = long_mistral<T>();
    const attn::ModelSettings& s = model.settings();
    attn::ForwardOptions keep;
    keep.keep_attention = true;
    const attn::ForwardResult<T> whole = model.forward(ids, keep);
    attn::Decoder<T> decoder(model);
    const std::size_t bytes = decoder.cache_bytes();
    attn::DecodeOptions options;
    options.keep_attention = true;
    options.all_logits = true;
    options.threads = threads;
    attn::DecodeResult<T> result;
    double worst = 0.0;
    for (std::size_t k = 0; decoder.positions() < Index(ids.size()); ++k) {
        const Index p0 = decoder.positions();
        const Index n = std::min(sizes[std::min(k, sizes.size() - 1)], Index(ids.size()) - p0);
        decoder.append_into({ids.begin() + p0, ids.begin() + p0 + n}, options, result);
        worst = std::max(worst, scaled_difference(result.logits, whole.logits.middleRows(p0, n)));
        REQUIRE(result.attention.layers() == s.layers);
        REQUIRE(result.attention.rows() == n);
        for (Index l = 0; l < s.layers; ++l) {
            CHECK(result.attention.window(l) == kWindow);
            for (Index i = 0; i < n; ++i) {
                const attn::KeyRange seen = result.attention.visible(l, i);
                CHECK(seen.first == std::max<Index>(0, p0 + i - kWindow + 1));
                CHECK(seen.last == p0 + i + 1);
                for (Index h = 0; h < s.heads; ++h) {
                    const auto row = result.attention.head(l, h).row(i);
                    REQUIRE(row.cols() == p0 + n);
                    worst =
                        std::max(worst, scaled_difference(row, whole.attention.head(l, h).row(p0 + i).head(p0 + n)));
                    CHECK(row.head(seen.first).isZero(0));  // before the window: exactly 0
                    CHECK(row.tail(p0 + n - seen.last).isZero(0));
                    CHECK(double(row.segment(seen.first, seen.last - seen.first).sum()) ==
                          doctest::Approx(1.0).epsilon(1e-5));
                }
            }
            // the window's cache: the last kWindow positions after a step, in the same storage
            CHECK(decoder.cache(l).window() == kWindow);
            // what the append's queries saw, or (a long append given back) the last kWindow
            CHECK(decoder.cache(l).first() >= std::max<Index>(0, p0 - kWindow + 1));
            CHECK(decoder.cache(l).held() <= kWindow + n - 1);
            CHECK(decoder.cache(l).held() >= std::min(kWindow, p0 + n));
        }
        CHECK(decoder.cache_bytes() == bytes);  // flat: min(context, window + window/4) rows per layer
    }
    CHECK(worst <= tolerance<T>());
}

}  // namespace ring

TEST_CASE_TEMPLATE("Ring cache: a sliding layer's cache keeps window + window/4 rows whatever the text's length", T,
                   float, double) {
    const attn::Model<T>& model = ring::long_mistral<T>();
    const attn::ModelSettings& s = model.settings();
    attn::Decoder<T> decoder(model);
    // (keys + values) × 2 key/value heads × (5 + 1) rows × 16 numbers, per layer
    const std::size_t per_layer = 2 * std::size_t(s.key_value_heads) * (ring::kWindow + 1) * std::size_t(s.head_size);
    CHECK(decoder.cache_bytes(0) == per_layer * sizeof(T));
    CHECK(decoder.cache_bytes() == 2 * per_layer * sizeof(T));
    const std::vector<int> ids = ring::random_ids(7);
    decoder.append({ids.begin(), ids.begin() + 3});
    std::vector<std::size_t> bytes;
    for (Index p = 3; p < ring::kContext; ++p) {
        decoder.step(ids[std::size_t(p)]);
        bytes.push_back(decoder.cache_bytes());
    }
    CHECK(std::all_of(bytes.begin(), bytes.end(), [&](std::size_t b) { return b == bytes.front(); }));
    CHECK(bytes.front() == 2 * per_layer * sizeof(T));
    CHECK(decoder.cache(1).held() == ring::kWindow);
    CHECK(decoder.cache(1).first() == ring::kContext - ring::kWindow);

    // A layer without a window keeps every position: the same model's cache at a window ≥ the context.
    attn::KeyValueCache<T> full(s.key_value_heads, ring::kContext, s.head_size, 0, ring::kContext);
    CHECK(full.window() == 0);
    CHECK(full.bytes() == 2 * std::size_t(s.key_value_heads) * std::size_t(ring::kContext * s.head_size) * sizeof(T));
    // A long prefill grows the storage for its own queries and gives it back afterwards.
    attn::Decoder<T> prefilled(model);
    prefilled.append({ids.begin(), ids.begin() + 60});
    CHECK(prefilled.cache_bytes() == 2 * per_layer * sizeof(T));
    CHECK(prefilled.cache(0).first() == 60 - ring::kWindow);
}

TEST_CASE_TEMPLATE("Ring cache: Decoder::reserve grows a sliding layer's storage for the append ahead, same bits", T,
                   float, double) {
    const attn::Model<T>& model = ring::long_mistral<T>();
    const std::vector<int> ids = ring::random_ids(13);
    attn::Decoder<T> plain(model), reserved(model);
    const std::size_t steady = reserved.cache_bytes();
    const auto part = [&](Index from, Index to) { return std::vector<int>(ids.begin() + from, ids.begin() + to); };
    plain.append(part(0, 17));
    reserved.append(part(0, 17));
    reserved.reserve(40);  // 17 positions in: the window (5) moved to the storage's start, room for 40 after it
    CHECK(reserved.cache_bytes() == steady / (ring::kWindow + 1) * (ring::kWindow + 40));
    const attn::DecodeResult<T> expected = plain.append(part(17, 57)), got = reserved.append(part(17, 57));
    CHECK(got.logits == expected.logits);
    CHECK(reserved.cache_bytes() == steady);  // given back after the append, as without reserve
    CHECK(reserved.cache(1).first() == plain.cache(1).first());
    CHECK(reserved.step(ids[57]).logits == plain.step(ids[57]).logits);
    // a reservation the next append does not use changes nothing either
    reserved.reserve(30);
    CHECK(reserved.step(ids[58]).logits == plain.step(ids[58]).logits);
    CHECK(reserved.cache_bytes() == steady);
}

TEST_CASE_TEMPLATE("Ring cache: decoding 19 windows step by step gives the forward's rows", T, float, double) {
    const std::vector<int> ids = ring::random_ids(11);
    SUBCASE("a short prefill, then steps") {
        ring::check_decoding<T>(ids, {3, 1}, 1);
    }
    SUBCASE("a prefill of 8 windows, then steps") {
        ring::check_decoding<T>(ids, {40, 1}, 1);
    }
    SUBCASE("appends of every size") {
        ring::check_decoding<T>(ids, {1, 7, 2, 12, 5, 4, 6, 3, 1, 9}, 1);
    }
    SUBCASE("two threads") {
        ring::check_decoding<T>(ids, {33, 1, 1, 20, 1}, 2);
    }
}

TEST_CASE("Ring cache: rotary positions stay absolute, the keys held are the forward's rotated keys") {
    const attn::Model<double>& model = ring::long_mistral<double>();
    const std::vector<int> ids = ring::random_ids(3);
    attn::HookOptions<double> hooks;
    hooks.keep = {"blocks.1.attn.hook_rot_k"};
    const attn::HookedResult<double> run = attn::run_with_hooks(model, ids, hooks);
    const attn::Matrix<double>& rotated = run.cache["blocks.1.attn.hook_rot_k"];  // (n × H_kv·d)
    attn::Decoder<double> decoder(model);
    decoder.append({ids.begin(), ids.begin() + 50});
    for (Index p = 50; p < 80; ++p) decoder.step(ids[std::size_t(p)]);
    const attn::KeyValueCache<double>& cache = decoder.cache(1);
    const Index d = model.settings().head_size;
    REQUIRE(cache.held() == ring::kWindow);
    for (Index g = 0; g < cache.heads(); ++g)
        CHECK(ring::scaled_difference(cache.keys(g), rotated.block(cache.first(), g * d, cache.held(), d)) < 1e-12);
}

TEST_CASE("Ring cache: truncation within the window resumes; further back is an argument_error that changes nothing") {
    const attn::Model<double>& model = ring::long_mistral<double>();
    const std::vector<int> ids = ring::random_ids(5);
    const attn::ForwardResult<double> whole = model.forward(ids);
    attn::Decoder<double> decoder(model);
    decoder.append({ids.begin(), ids.begin() + 30});
    decoder.step(ids[30]);
    CHECK_THROWS_WITH_AS(decoder.truncate(20), doctest::Contains("window 5"), attn::argument_error);
    CHECK(decoder.positions() == 31);
    decoder.truncate(30);  // one back: its window 26 … 29 is held
    const attn::DecodeResult<double> again = decoder.step(ids[30]);
    CHECK(ring::scaled_difference(again.logits, whole.logits.row(30)) < 1e-12);
    decoder.truncate(0);
    CHECK(decoder.positions() == 0);
    CHECK(ring::scaled_difference(decoder.append({ids.begin(), ids.begin() + 4}).logits, whole.logits.row(3)) < 1e-12);
}

TEST_CASE_TEMPLATE("Ring cache: attend_cache over a window's cache equals attention over every key", T, float, double) {
    const Index heads = 4, kv_heads = 2, d = 8, positions = 300, window = 37;
    HeadStack<T> keys(kv_heads, positions, d), values(kv_heads, positions, d), queries(heads, positions, d);
    for (Index g = 0; g < kv_heads; ++g) {
        keys.head(g) = attn::test::random_matrix<T>(positions, d, 10 + unsigned(g));
        values.head(g) = attn::test::random_matrix<T>(positions, d, 20 + unsigned(g));
    }
    for (Index h = 0; h < heads; ++h) queries.head(h) = attn::test::random_matrix<T>(positions, d, 30 + unsigned(h));
    const attn::Rope<T> rope(d, attn::RopePairing::rotate_half);
    attn::AttentionOptions<T> options;
    options.window = window;
    options.rope = &rope;
    const attn::HeadsResult<T> whole = attn::attend_heads(queries, keys, values, options);
    // the same keys appended in pieces of 1 … 90 positions, each piece's queries against the cache
    attn::KeyValueCache<T> cache(kv_heads, positions, d, 0, window);
    const std::size_t bytes = cache.bytes();
    CHECK(bytes == 2 * std::size_t(kv_heads * (window + window / 4) * d) * sizeof(T));
    const auto rows = [](const HeadStack<T>& stack, Index first, Index count) {
        HeadStack<T> out(stack.heads(), count, stack.cols());
        for (Index h = 0; h < stack.heads(); ++h) out.head(h) = stack.head(h).middleRows(first, count);
        return out;
    };
    double worst = 0.0;
    Index p0 = 0;
    for (Index piece : {1, 90, 1, 1, 3, 36, 37, 38, 1, 1, 1, 60}) {
        piece = std::min(piece, positions - p0);
        if (piece == 0) break;
        cache.settle();  // as a decoder does after each append
        CHECK(cache.bytes() == bytes);
        cache.append(rows(keys, p0, piece), rows(values, p0, piece), &rope);
        CHECK(cache.first() == std::max<Index>(0, p0 - window + 1));
        attn::AttentionOptions<T> step = options;
        step.keep_weights = true;
        const attn::HeadsResult<T> got = attn::attend_cache(rows(queries, p0, piece), cache, step);
        for (Index h = 0; h < heads; ++h) {
            worst = std::max(worst,
                             ring::scaled_difference(got.outputs.head(h), whole.outputs.head(h).middleRows(p0, piece)));
            // weights over the held positions first() … size() − 1
            REQUIRE(got.weights.cols() == cache.held());
            const attn::Matrix<T> expected =
                attn::attention(queries.head(h).middleRows(0, p0 + piece), keys.head(h / 2).topRows(p0 + piece),
                                values.head(h / 2).topRows(p0 + piece),
                                [&] {
                                    attn::AttentionOptions<T> o = options;
                                    o.keep_weights = true;
                                    return o;
                                }())
                    .weights.block(p0, cache.first(), piece, cache.held());
            worst = std::max(worst, ring::scaled_difference(got.weights.head(h), expected));
        }
        p0 += piece;
    }
    CHECK(worst <= ring::tolerance<T>());
    cache.settle();  // the last window positions only
    CHECK(cache.first() == p0 - window);
    // a window wider than the cache's, or none, would need positions it no longer holds
    attn::AttentionOptions<T> wider = options;
    wider.window = window + 1;
    CHECK_THROWS_WITH_AS(attn::attend_cache(rows(queries, p0 - 1, 1), cache, wider), doctest::Contains("window"),
                         attn::argument_error);
    CHECK_THROWS_AS(cache.truncate(p0 - 3), attn::argument_error);
    cache.truncate(p0 - 1);
    CHECK(cache.size() == p0 - 1);
}

TEST_CASE_TEMPLATE("Ring cache: rows on demand and generation say which positions each row could see", T, float,
                   double) {
    const attn::Model<T>& model = ring::long_mistral<T>();
    const std::vector<int> ids = ring::random_ids(13);
    attn::ForwardOptions options;
    options.keep_log_sum_exp = true;
    options.keep_attention = true;
    const attn::ForwardResult<T> result = model.forward(ids, options);
    const attn::WeightRowsResult<T> rows = attn::attention_rows(model.settings(), result, 1, {0, 3}, {0, 2, 40, 95});
    REQUIRE(rows.visible.size() == 4);
    const Index positions[] = {0, 2, 40, 95};
    for (std::size_t b = 0; b < 4; ++b) {
        const Index p = positions[b];
        CHECK(rows.visible[b].first == std::max<Index>(0, p - ring::kWindow + 1));
        CHECK(rows.visible[b].last == p + 1);
        for (Index a = 0; a < 2; ++a) {
            const auto row = rows.weights.head(a).row(Index(b));
            CHECK(row.head(rows.visible[b].first).isZero(0));
            CHECK(double(row.segment(rows.visible[b].first, rows.visible[b].last - rows.visible[b].first).sum()) ==
                  doctest::Approx(1.0).epsilon(1e-5));
        }
    }

    attn::GenerationOptions generation;
    generation.decode.keep_attention = true;
    generation.max_tokens = 30;
    generation.stop_at_end = false;
    const attn::GenerationResult<T> written = attn::generate(model, {ids.begin(), ids.begin() + 12}, generation);
    REQUIRE(written.attention.size() == written.ids.size());
    for (std::size_t k = 0; k < written.attention.size(); ++k) {
        const Index p = 12 + Index(k) - 1;  // the row that chose token k
        const attn::ModelAttention<T>& row = written.attention[k];
        REQUIRE(row.layers() == model.settings().layers);
        for (Index l = 0; l < row.layers(); ++l) {
            CHECK(row.visible(l, 0).first == p - ring::kWindow + 1);
            CHECK(row.visible(l, 0).last == p + 1);
            CHECK(row.head(l, 0).leftCols(p - ring::kWindow + 1).isZero(0));
        }
    }
}
