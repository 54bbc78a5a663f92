// attn/model/decoder.hpp: prefill + steps give Model::forward's rows (logits and every
// layer's attention), for float and double, 1 and 2 threads (a step's columns shared between
// them: the bits of one thread), with ablation; errors leave the state unchanged; several
// decoders share one model across threads.
#include <doctest/doctest.h>
#include <attn/model/decoder.hpp>
#include <attn/model/model.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "allocation_counter.hpp"
#include "model_fixture.hpp"
#include "sanitizers.hpp"
#include "store_model.hpp"

using attn::Index;
using attn::test::store_model;
using attn::test::TinyModel;

namespace {

// The bounds: ≤ 1e-5 (float) and ≤ 1e-12 (double), logits relative to the row's
// largest |logit|, weights absolute (they lie in [0, 1]).
template <class T>
constexpr double bound() {
    return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

/// The first `count` products of the validation split, as ids.
std::vector<std::vector<int>> validation_products(std::size_t count) {
    std::ifstream in(std::filesystem::path(ATTN_TEST_DATA_DIR) / "store" / "validation_ids.txt");
    REQUIRE(in);
    std::vector<std::vector<int>> products;
    for (std::string line; products.size() < count && std::getline(in, line);) {
        std::istringstream words(line);
        std::vector<int> ids;
        for (int id; words >> id;) ids.push_back(id);
        products.push_back(ids);
    }
    REQUIRE(products.size() == count);
    return products;
}

/// Largest difference of a decoded row (1 × V logits; per layer heads × (1 × positions) weights)
/// from row i of the full forward.
template <class T>
struct RowDifference {
    double logits = 0.0;
    double attention = 0.0;
};

template <class T>
RowDifference<T> row_difference(const attn::ForwardResult<T>& full, Index i, const attn::Matrix<T>& logits,
                                Index logits_row, const attn::ModelAttention<T>& attention, Index attention_row) {
    RowDifference<T> d;
    const auto expected = full.logits.row(i);
    d.logits = double((logits.row(logits_row) - expected).cwiseAbs().maxCoeff()) /
               std::max(1.0, double(expected.cwiseAbs().maxCoeff()));
    for (Index l = 0; l < full.attention.layers(); ++l) {
        REQUIRE(attention.positions() == i + 1);
        for (Index h = 0; h < full.attention.heads(); ++h) {
            const auto decoded = attention.head(l, h).row(attention_row);
            const auto whole = full.attention.head(l, h).row(i).head(i + 1);
            d.attention = std::max(d.attention, double((decoded - whole).cwiseAbs().maxCoeff()));
            // nothing beyond the position itself
            CHECK(full.attention.head(l, h).row(i).tail(full.attention.positions() - i - 1).isZero(0));
        }
    }
    return d;
}

/// Prefill `ids[0 … prefill)`, then step through the rest; every row against the full forward.
template <class T>
void check_incremental_equals_full(const attn::Model<T>& model, const std::vector<int>& ids, Index prefill,
                                   const std::vector<attn::HeadId>& ablate, int threads) {
    CAPTURE(prefill);
    CAPTURE(threads);
    attn::ForwardOptions forward;
    forward.keep_attention = true;
    forward.ablate = ablate;
    const attn::ForwardResult<T> full = model.forward(ids, forward);

    attn::Decoder<T> decoder(model, ablate);
    attn::DecodeOptions options;
    options.keep_attention = true;
    options.all_logits = true;
    options.threads = threads;
    const std::vector<int> prompt(ids.begin(), ids.begin() + prefill);
    const attn::DecodeResult<T> first = decoder.append(prompt, options);
    REQUIRE(first.logits.rows() == prefill);
    REQUIRE(first.attention.layers() == model.settings().layers);
    double worst_logits = 0.0, worst_attention = 0.0;
    for (Index i = 0; i < prefill; ++i) {
        const RowDifference<T> d = row_difference(
            full, i, first.logits, i,
            [&] {
                std::vector<attn::AttentionWeights<T>> rows;  // row i's first i + 1 columns, as a step returns them
                for (Index l = 0; l < first.attention.layers(); ++l) {
                    const attn::AttentionWeights<T>& layer = first.attention.layer(l);
                    attn::AttentionWeights<T> one(layer.heads(), 1, i + 1);
                    for (Index h = 0; h < layer.heads(); ++h) one.head(h) = layer.head(h).block(i, 0, 1, i + 1);
                    rows.push_back(one);
                }
                return attn::ModelAttention<T>(std::move(rows));
            }(),
            0);
        worst_logits = std::max(worst_logits, d.logits);
        worst_attention = std::max(worst_attention, d.attention);
    }
    options.all_logits = false;
    for (Index i = prefill; i < Index(ids.size()); ++i) {
        const attn::DecodeResult<T> step = decoder.step(ids[std::size_t(i)], options);
        REQUIRE(step.logits.rows() == 1);
        const RowDifference<T> d = row_difference(full, i, step.logits, 0, step.attention, 0);
        worst_logits = std::max(worst_logits, d.logits);
        worst_attention = std::max(worst_attention, d.attention);
    }
    CHECK(decoder.positions() == Index(ids.size()));
    CHECK(worst_logits <= bound<T>());
    CHECK(worst_attention <= bound<T>());  // measured: 0 and 0, the same bits (gcc 12, AVX2)
}

}  // namespace

TEST_CASE_TEMPLATE("Decoder threads: prefill and steps equal Model::forward on validation products", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    // Two products under ThreadSanitizer: the same steps, prefills and shares of work between
    // threads, a third of the time (45 of the TSan run's 97 s went to this case's six, double).
    const auto products = validation_products(attn::test::under_thread_sanitizer ? 2 : 6);
    for (std::size_t p = 0; p < products.size(); ++p) {
        CAPTURE(p);
        const std::vector<int>& ids = products[p];
        for (int threads : {1, 2}) {
            check_incremental_equals_full(model, ids, 1, {}, threads);                      // every position a step
            check_incremental_equals_full(model, ids, Index(ids.size()) / 2, {}, threads);  // half prefilled
        }
        check_incremental_equals_full(model, ids, Index(ids.size()) / 3, {{3, 2}, {1, 0}}, 1);  // with ablation
    }
}

TEST_CASE_TEMPLATE("Decoder threads: a long prefill split between threads equals the forward", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    std::vector<int> ids = validation_products(2)[1];  // the longest of the first products
    while (ids.size() < 160) ids.push_back(ids[ids.size() % 40]);
    for (int threads : {1, 2, 4}) check_incremental_equals_full(model, ids, 140, {}, threads);
    // kept workers instead of threads: the same bits as one thread
    attn::Workers workers(2);
    attn::DecodeOptions options;
    options.threads = workers;
    options.all_logits = true;
    attn::Decoder<T> kept(model), single(model);
    const auto a = kept.append(ids, options);
    options.threads = 1;
    const auto b = single.append(ids, options);
    CHECK(a.logits == b.logits);
}

/// Prefill `prefill` positions, then step one token at a time to the end; every step's logits and
/// attention rows, prefill's first.
template <class T>
std::vector<attn::DecodeResult<T>> decode_steps(const attn::Model<T>& model, const std::vector<int>& ids,
                                                std::size_t prefill, const std::vector<attn::HeadId>& ablate,
                                                const attn::DecodeOptions& options) {
    attn::Decoder<T> decoder(model, ablate);
    std::vector<attn::DecodeResult<T>> results{decoder.append({ids.begin(), ids.begin() + long(prefill)}, options)};
    for (std::size_t i = prefill; i < ids.size(); ++i) results.push_back(decoder.step(ids[i], options));
    return results;
}

TEST_CASE_TEMPLATE("Decoder threads: steps shared between threads give the bits of one thread", T, float, double) {
    // A step has too few positions to share them: its threads share every product's columns
    // and attention's heads, on kept workers (threads started for one step cost more than a
    // model this small saves, so they leave it to the caller). GPT-2-like (store) and
    // Llama-like (store-llama: grouped-query attention, a gated MLP, rotary positions, layer 0
    // looked up), with an ablated head.
    const attn::Model<T> llama =
        attn::Model<T>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store-llama");
    const std::vector<int> ids = validation_products(1)[0];
    REQUIRE(ids.size() > 4);
    for (const attn::Model<T>* model : {&store_model<T>(), &llama}) {
        const std::vector<attn::HeadId> ablate{{1, 1}};
        attn::Workers two(2), three(3);
        for (const bool weights : {true, false}) {
            CAPTURE(weights);
            attn::DecodeOptions one;
            one.all_logits = true;
            one.keep_attention = weights;
            const auto expected = decode_steps(*model, ids, 3, ablate, one);
            for (int threads : {2, 3, -2, -3}) {  // negative: kept workers
                CAPTURE(threads);
                attn::DecodeOptions options = one;
                options.threads = threads == -2 ? attn::Threads(two) : threads == -3 ? attn::Threads(three) : threads;
                const auto shared = decode_steps(*model, ids, 3, ablate, options);
                REQUIRE(shared.size() == expected.size());
                for (std::size_t i = 0; i < shared.size(); ++i) {
                    CAPTURE(i);
                    CHECK(shared[i].logits == expected[i].logits);
                    CHECK(shared[i].attention == expected[i].attention);
                }
            }
        }
        // a short text through Model::forward shares its columns too
        attn::ForwardOptions forward;
        forward.keep_attention = true;
        forward.ablate = ablate;
        const auto alone = model->forward(ids, forward);
        forward.threads = two;
        const auto shared = model->forward(ids, forward);
        CHECK(shared.logits == alone.logits);
        for (Index l = 0; l < alone.attention.layers(); ++l)
            for (Index h = 0; h < alone.attention.heads(); ++h)
                CHECK(shared.attention.head(l, h) == alone.attention.head(l, h));
    }
}

/// A prompt, then a continuation, through the fast pass with key/value caches, as Decoder::append
/// runs them, but with the workers' split forced (detail::SplitRule): each pass's logits (every
/// position) and attention weights.
template <class T>
std::vector<attn::ForwardResult<T>> split_passes(const attn::Model<T>& model, const std::vector<int>& ids,
                                                 std::size_t prompt, attn::detail::SplitRule rule,
                                                 attn::Workers* workers) {
    const attn::ModelSettings& s = model.settings();
    std::vector<attn::KeyValueCache<T>> caches(std::size_t(s.layers),
                                               attn::KeyValueCache<T>(s.key_value_heads, s.longest, s.head_size));
    attn::ForwardOptions options;
    options.keep_attention = true;
    options.ablate.push_back(attn::HeadId{1, 1});
    std::vector<attn::ForwardResult<T>> results(2);
    const std::vector<int> parts[] = {{ids.begin(), ids.begin() + long(prompt)},
                                      {ids.begin() + long(prompt), ids.end()}};
    for (std::size_t p = 0; p < 2; ++p) {
        attn::detail::PassSetup<T> setup;
        setup.caches = &caches;
        setup.first_position = p == 0 ? 0 : Index(prompt);
        setup.split = rule;
        attn::detail::FastForward<T>(model, parts[p], options, results[p], setup)
            .run(workers, workers ? workers->size() : 1);
        for (attn::KeyValueCache<T>& cache : caches) cache.extend(Index(parts[p].size()));
    }
    return results;
}

TEST_CASE_TEMPLATE("Forward threads: shared by positions or by columns, a pass gives the bits of one thread", T, float,
                   double) {
    // By columns, a pass with positions enough shares attention by queries (every head), and a
    // step, or a pass with few positions, by key/value heads; GPT-2-like and Llama-like models
    // (store-llama: grouped-query attention, a gated MLP, rotary positions).
    const attn::Model<T> llama =
        attn::Model<T>::load(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store-llama");
    std::vector<int> ids;
    for (const auto& product : validation_products(3)) ids.insert(ids.end(), product.begin(), product.end());
    for (const attn::Model<T>* model : {&store_model<T>(), &llama}) {
        const std::size_t longest = std::size_t(model->settings().longest);
        REQUIRE(ids.size() >= longest);
        attn::Workers two(2), three(3);
        for (const std::size_t length : {std::size_t(7), std::size_t(70), longest}) {
            for (const std::size_t prompt : {length - 1, length / 2}) {
                CAPTURE(length);
                CAPTURE(prompt);
                const std::vector<int> text(ids.begin(), ids.begin() + long(length));
                const auto alone = split_passes(*model, text, prompt, attn::detail::SplitRule::measured, nullptr);
                for (attn::Workers* workers : {&two, &three})
                    for (const auto rule : {attn::detail::SplitRule::positions, attn::detail::SplitRule::columns}) {
                        CAPTURE(workers->size());
                        CAPTURE(rule == attn::detail::SplitRule::columns);
                        const auto shared = split_passes(*model, text, prompt, rule, workers);
                        for (std::size_t p = 0; p < 2; ++p) {
                            CHECK(shared[p].logits == alone[p].logits);
                            for (Index l = 0; l < alone[p].attention.layers(); ++l)
                                for (Index h = 0; h < alone[p].attention.heads(); ++h)
                                    CHECK(shared[p].attention.head(l, h) == alone[p].attention.head(l, h));
                        }
                    }
            }
        }
    }
}

TEST_CASE_TEMPLATE("Decoder: rows without weights, and the last logits only, equal the full ones", T, float, double) {
    const attn::Model<T>& model = store_model<T>();
    const std::vector<int> ids = validation_products(1)[0];
    attn::Decoder<T> decoder(model);
    attn::DecodeOptions options;
    options.all_logits = true;
    const auto all = decoder.append(ids, options);
    decoder.reset();
    CHECK(decoder.positions() == 0);
    const auto last = decoder.append(ids);  // default: the last position's logits only
    REQUIRE(last.logits.rows() == 1);
    CHECK(last.attention.empty());
    CHECK(last.logits.row(0) == all.logits.row(Index(ids.size()) - 1));
    const auto full = model.forward(ids);
    const double scale = std::max(1.0, double(full.logits.cwiseAbs().maxCoeff()));
    CHECK(double((all.logits - full.logits).cwiseAbs().maxCoeff()) <= bound<T>() * scale);
    // steps of one position without weights take the kernel's decoding route (queries along d)
    decoder.reset();
    decoder.append({ids.begin(), ids.begin() + 2});
    for (std::size_t i = 2; i < ids.size(); ++i) {
        CAPTURE(i);
        const auto step = decoder.step(ids[i]);
        CHECK(double((step.logits.row(0) - full.logits.row(Index(i))).cwiseAbs().maxCoeff()) <= bound<T>() * scale);
    }
}

TEST_CASE_TEMPLATE("Decoder: the last position's attention only is its row among all rows, on 1 and 2 threads", T,
                   float, double) {
    const attn::Model<T>& model = store_model<T>();
    const std::vector<int> ids = validation_products(1)[0];
    const Index n = Index(ids.size()), before = 5;  // a prompt after `before` cached positions, then the rest
    REQUIRE(n > before + 2);
    const std::vector<int> head(ids.begin(), ids.begin() + before), rest(ids.begin() + before, ids.end());
    for (int threads : {1, 2}) {
        CAPTURE(threads);
        attn::Workers workers(threads);
        attn::DecodeOptions every;
        every.keep_attention = true;
        every.threads = workers;
        attn::DecodeOptions last = every;
        last.last_attention_only = true;
        attn::Decoder<T> decoder(model);
        decoder.append(head);
        const attn::DecodeResult<T> all_rows = decoder.append(rest, every);
        decoder.truncate(before);
        attn::DecodeResult<T> reused;  // its storage: every row's first, then one row's twice
        decoder.append_into(rest, every, reused);
        decoder.truncate(before);
        for (int round = 0; round < 2; ++round) {
            CAPTURE(round);
            decoder.append_into(rest, last, reused);
            decoder.truncate(before);
            const attn::ModelAttention<T>& one = reused.attention;
            REQUIRE(one.layers() == model.settings().layers);
            REQUIRE(one.rows() == 1);
            REQUIRE(one.positions() == n);
            CHECK(one.visible(0, 0).last == n);
            double worst = 0.0;
            for (Index l = 0; l < one.layers(); ++l)
                for (Index h = 0; h < one.heads(); ++h)
                    worst = std::max(worst,
                                     double((one.head(l, h).row(0) - all_rows.attention.head(l, h).row(n - before - 1))
                                                .cwiseAbs()
                                                .maxCoeff()));
            // the other positions attend without weights (the streaming kernel): the layers after
            // the first see their outputs to rounding (measured 2.7e-7 in float, 3.3e-16 in double)
            CHECK(worst <= bound<T>());
            const double scale = std::max(1.0, double(all_rows.logits.cwiseAbs().maxCoeff()));
            CHECK(double((reused.logits - all_rows.logits).cwiseAbs().maxCoeff()) <= bound<T>() * scale);
        }
        // a step, one position: its row, as without last_attention_only
        decoder.append({rest.begin(), rest.end() - 1});
        const attn::DecodeResult<T> step = decoder.step(ids.back(), last);
        decoder.truncate(n - 1);
        CHECK(decoder.step(ids.back(), every).attention == step.attention);
        REQUIRE(step.attention.rows() == 1);
    }
}

TEST_CASE("Decoder: append keeps its working memory: a prompt again allocates its result only, with the same bits") {
    const attn::Model<float>& model = store_model<float>();
    const std::vector<int> ids = validation_products(1)[0];
    attn::Decoder<float> decoder(model);
    attn::DecodeResult<float> first, again;
    const long fresh = attn::test::allocations_in([&] { first = decoder.append(ids); });
    decoder.reset();
    const long kept = attn::test::allocations_in([&] { again = decoder.append(ids); });
    CAPTURE(fresh);
    CHECK(kept <= 1);  // the returned logits; every (positions × width) buffer is the last call's
    CHECK(fresh > kept);
    CHECK(again.logits == first.logits);
    // a step, then the prompt again: the buffers change shape both times, the bits do not
    decoder.step(ids[0]);
    decoder.reset();
    CHECK(decoder.append(ids).logits == first.logits);
}

TEST_CASE("Decoder::reserve: the append of that many positions takes no (positions × width) buffer, same bits") {
    const attn::Model<float>& model = store_model<float>();
    std::vector<int> ids;  // products one after another: 156 positions
    for (const std::vector<int>& product : validation_products(30))
        ids.insert(ids.end(), product.begin(), product.end());
    REQUIRE(ids.size() >= 156);
    ids.resize(156);  // room for 1 more position after the last append below
    const Index n = Index(ids.size());
    // Every buffer of the pass holds (n × C) numbers or more; the returned (1 × V) logits and
    // the kernel's memory are smaller: its one block of a worker's arrays (queriesᵀ, scoresᵀ,
    // outputᵀ, three numbers per query row) and its per-head copies.
    const std::size_t smallest_buffer = std::size_t(n * model.settings().dimensions) * sizeof(float);
    using Tiling = attn::detail::KernelTiling<float>;
    const Index d = model.settings().head_size;
    const std::size_t kernel_block =
        std::size_t(Tiling::kQueryBlock * (d + Tiling::kKeyBlock + d + 3)) * sizeof(float) + 64;
    REQUIRE(std::size_t(model.settings().vocabulary_size) * sizeof(float) < smallest_buffer);
    REQUIRE(kernel_block < smallest_buffer);
    attn::Decoder<float> plain(model), reserved(model);
    attn::DecodeResult<float> expected, got;
    attn::test::allocations_in([&] { expected = plain.append(ids); });
    CHECK(attn::test::largest_allocation() >= smallest_buffer);  // without reserve, the append takes them
    reserved.reserve(n);
    attn::test::allocations_in([&] { got = reserved.append(ids); });
    CHECK(attn::test::largest_allocation() < smallest_buffer);
    CHECK(got.logits == expected.logits);
    // on two threads, and for a length other than the one reserved
    attn::DecodeOptions two;
    two.threads = 2;
    reserved.reset();
    reserved.reserve(n);
    CHECK(reserved.append(ids, two).logits == expected.logits);
    reserved.reset();
    reserved.reserve(n - 3);
    plain.reset();
    CHECK(reserved.append(ids).logits == plain.append(ids).logits);
    CHECK(reserved.step(ids[0]).logits == plain.step(ids[0]).logits);

    CHECK_THROWS_WITH_AS(reserved.reserve(0), doctest::Contains("Decoder::reserve: positions = 0 is not in 1 … "),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(reserved.reserve(reserved.room() + 1), doctest::Contains("capacity of 160"),
                         attn::argument_error);
    CHECK(reserved.positions() == n + 1);
}

TEST_CASE("Decoder: truncate forgets positions and decoding resumes from there") {
    const attn::Model<double>& model = store_model<double>();
    const std::vector<int> ids = validation_products(3)[2];
    attn::Decoder<double> decoder(model), fresh(model);
    decoder.append(ids);
    decoder.truncate(5);
    CHECK(decoder.positions() == 5);
    CHECK(decoder.cache(0).size() == 5);
    const std::vector<int> other{ids[5] == 7 ? 8 : 7, 9, 10};
    std::vector<int> text(ids.begin(), ids.begin() + 5);
    text.insert(text.end(), other.begin(), other.end());
    attn::DecodeOptions all;
    all.all_logits = true;
    const auto resumed = decoder.append(other, all);
    const auto expected = fresh.append(text, all);
    CHECK(resumed.logits == expected.logits.bottomRows(3));
    CHECK_THROWS_AS(decoder.truncate(9), attn::argument_error);
    CHECK_THROWS_AS(decoder.truncate(-1), attn::argument_error);
}

TEST_CASE("Decoder: past the context, empty and unknown ids are argument_errors that change nothing") {
    const attn::Model<float>& model = store_model<float>();
    attn::Decoder<float> decoder(model);
    decoder.append(std::vector<int>(150, 7));
    CHECK_THROWS_WITH_AS(
        decoder.append(std::vector<int>(11, 7)),
        doctest::Contains("11 more positions after the 150 decoded would pass the decoder's capacity of 160"),
        attn::argument_error);
    CHECK_THROWS_WITH_AS(decoder.append({}), doctest::Contains("ids is empty"), attn::argument_error);
    CHECK_THROWS_WITH_AS(decoder.step(2048), doctest::Contains("is not a token id"), attn::argument_error);
    CHECK_THROWS_WITH_AS(decoder.step(-1), doctest::Contains("is not a token id"), attn::argument_error);
    CHECK(decoder.positions() == 150);
    decoder.append(std::vector<int>(10, 7));
    CHECK(decoder.positions() == 160);
    CHECK(decoder.room() == 0);
    CHECK_THROWS_WITH_AS(decoder.step(7), doctest::Contains("would pass the decoder's capacity of 160"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Decoder<float>(model, {{4, 0}}), doctest::Contains("ablated layer = 4"),
                         attn::argument_error);
    CHECK_THROWS_AS(decoder.cache(4), attn::argument_error);
}

TEST_CASE("Decoder threads: decoders on one model from several threads give each its own text") {
    const attn::Model<float>& model = store_model<float>();
    const auto products = validation_products(4);
    std::vector<attn::Matrix<float>> expected, decoded(products.size());
    for (const auto& ids : products) expected.push_back(model.forward(ids).logits.bottomRows(1));
    std::vector<std::thread> threads;
    for (std::size_t p = 0; p < products.size(); ++p)
        threads.emplace_back([&, p] {
            attn::Decoder<float> decoder(model);
            const std::vector<int>& ids = products[p];
            decoder.append(std::vector<int>(ids.begin(), ids.begin() + 2));
            attn::DecodeResult<float> last;
            for (std::size_t i = 2; i < ids.size(); ++i) last = decoder.step(ids[i]);
            decoded[p] = last.logits;
        });
    for (std::thread& t : threads) t.join();
    for (std::size_t p = 0; p < products.size(); ++p)
        CHECK(double((decoded[p] - expected[p]).cwiseAbs().maxCoeff()) <=
              1e-5 * std::max(1.0, double(expected[p].cwiseAbs().maxCoeff())));
}

TEST_CASE_TEMPLATE("Decoder: tiny models with both activations and pairings decode as they forward", T, float, double) {
    for (const char* activation : {"gelu_erf", "gelu_tanh"})
        for (const char* pairing : {"rotate_half", "interleaved"}) {
            TinyModel tiny(std::string("decoder_") + activation + "_" + pairing);
            tiny.manifest["settings"]["activation"] = activation;
            tiny.manifest["settings"]["rope_pairing"] = pairing;
            tiny.manifest["settings"]["longest"] = 64;
            const auto model = attn::Model<T>::load(tiny.write());
            std::vector<int> ids;
            for (int i = 0; i < 64; ++i) ids.push_back((i * 7 + 3) % int(model.settings().vocabulary_size));
            check_incremental_equals_full(model, ids, 40, {{1, 1}}, 2);
        }
}

TEST_CASE(
    "Decoder: a capacity smaller than the context holds that many positions; one outside 0 … context is refused") {
    const attn::Model<float>& model = store_model<float>();
    attn::Decoder<float> small(model, {}, 12);
    CHECK(small.room() == 12);
    CHECK(small.cache(0).capacity() == 12);
    small.append(std::vector<int>(12, 7));
    CHECK_THROWS_WITH_AS(small.step(7),
                         doctest::Contains("1 more positions after the 12 decoded would pass the "
                                           "decoder's capacity of 12 positions"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Decoder<float>(model, {}, 161),
                         "Decoder: capacity 161 is not in 0 … 160 (the model's context)", attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Decoder<float>(model, {}, -1), doctest::Contains("capacity -1"), attn::argument_error);
    CHECK(attn::Decoder<float>(model, {}, 0).room() == 160);
}
