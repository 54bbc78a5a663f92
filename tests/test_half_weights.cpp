// 16-bit weights: the exact conversions, the products on BF16 and F16 weights (the bits of the
// float products on the same weights widened, and near a double reference), and a model loaded
// with WeightStorage::stored_16_bit against the same checkpoint loaded as float: logits and
// attention bit for bit, whole texts and decoding, on one and two threads. With
// LoadOptions::bfloat16_activations (detail/kernels/bfloat16_pairs.hpp, bfloat16_attention.hpp):
// every product of a prefill and of a decoding step rounds (the two agree to float rounding, where
// the converted model is a bfloat16 rounding away), the caches keep rounded keys and values, one
// and two threads give the same bits, and the option is refused where it cannot apply.
#include <doctest/doctest.h>
#include <attn/detail/kernels/weight_panels.hpp>
#include <attn/hooks/interventions.hpp>
#include <attn/model/attention_rows.hpp>
#include <attn/model/decoder.hpp>
#include <attn/model/generate.hpp>
#include <attn/model/model.hpp>
#include <attn/model/reference_forward.hpp>
#include <attn/threads.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "half_numbers.hpp"
#include "support.hpp"

using attn::test::independent_half_value;
using attn::test::random_half_matrix;
using attn::test::same_bits;

using attn::Index;
using attn::detail::HalfFormat;
using attn::detail::HalfMatrix;
using attn::detail::WeightRows;

namespace {

const std::filesystem::path kHalfCheckpoints = std::filesystem::path(ATTN_TEST_DATA_DIR) / "hf";

std::uint32_t bits_of(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

/// What a model rounds to bfloat16 (LoadOptions): nothing, its activations (and attention), or its
/// attention alone.
enum class Rounding { none, activations, attention };

/// Checkpoint `name` loaded as `storage` asks (rounding as asked), once.
const attn::Model<float>& loaded(const std::string& name, attn::WeightStorage storage,
                                 Rounding rounding = Rounding::none) {
    static std::map<std::tuple<std::string, attn::WeightStorage, Rounding>, std::unique_ptr<attn::Model<float>>> models;
    auto& model = models[{name, storage, rounding}];
    if (!model) {
        attn::LoadOptions options;
        options.weights = storage;
        options.bfloat16_activations = rounding == Rounding::activations;
        options.bfloat16_attention = rounding == Rounding::attention;
        model = std::make_unique<attn::Model<float>>(attn::Model<float>::load(kHalfCheckpoints / name, options));
    }
    return *model;
}

const char* const kSixteenBit[] = {"gpt2_f16", "llama_gqa_bf16_shards"};

/// m's entries each rounded to the nearest bfloat16.
template <class M>
attn::Matrix<float> bfloat16_entries(const M& m) {
    return m.unaryExpr([](float x) { return attn::detail::rounded_to_bfloat16(x); });
}

/// Up to 24 token ids spread over the model's vocabulary, at most its longest context.
std::vector<int> spread_ids(const attn::Model<float>& model) {
    const Index vocabulary = model.settings().vocabulary_size;
    std::vector<int> ids;
    for (Index i = 0; i < std::min<Index>(model.settings().longest, 24); ++i)
        ids.push_back(int((i * 37 + 11) % vocabulary));
    return ids;
}

/// max |x − y| / max |y| over the entries.
double relative_logit_gap(const attn::Matrix<float>& x, const attn::Matrix<float>& y) {
    return double((x - y).cwiseAbs().maxCoeff() / y.cwiseAbs().maxCoeff());
}

}  // namespace

TEST_CASE("16-bit weights: every BF16 and F16 number widens to float and narrows back exactly") {
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto bits = static_cast<std::uint16_t>(i);
        CAPTURE(i);
        const float bf16 = attn::detail::bfloat16_to_float(bits);
        const float f16 = attn::detail::half_to_float(bits);
        REQUIRE(attn::detail::float_to_bfloat16_exact(bf16) == bits);
        REQUIRE(attn::detail::float_to_half_exact(f16) == bits);
        const bool f16_finite = ((bits >> 10) & 0x1F) != 0x1F, bf16_finite = ((bits >> 7) & 0xFF) != 0xFF;
        if (f16_finite) REQUIRE(double(f16) == independent_half_value(bits, HalfFormat::float16));
        if (bf16_finite) REQUIRE(double(bf16) == independent_half_value(bits, HalfFormat::bfloat16));
    }
}

TEST_CASE("16-bit weights: products on BF16 and F16 weights have the bits of the float products") {
    const Index lanes = attn::detail::RegisterTile<float>::kLanes;
    const Index panel = HalfMatrix::kPanel;
    for (HalfFormat format : {HalfFormat::bfloat16, HalfFormat::float16})
        for (Index rows : {Index(1), Index(2), Index(3), Index(7), Index(50)})
            for (Index depth : {Index(0), Index(1), Index(19), Index(300)})
                for (Index cols : {Index(1), lanes - 1, lanes, 3 * lanes + 5, Index(200)})
                    // the block's first column: a panel's first, a packet's inside a panel, and one
                    // inside a packet (its packets straddle the panels' edges)
                    for (Index offset : {Index(0), panel - lanes, Index(3)}) {
                        CAPTURE(attn::detail::half_format_name(format));
                        CAPTURE(rows);
                        CAPTURE(depth);
                        CAPTURE(cols);
                        CAPTURE(offset);
                        const unsigned seed = unsigned(rows * 1000003 + depth * 1009 + cols + offset * 7);
                        const attn::Matrix<float> a = attn::test::random_matrix<float>(rows, depth, seed);
                        const Index width = offset + cols + 7;
                        std::vector<std::uint16_t> numbers;
                        const HalfMatrix w = random_half_matrix(depth, width, format, seed + 1, &numbers);
                        const attn::Matrix<float> widened = w.widened();
                        // the same product on a block of columns, as a column share reads it
                        const auto w_block = WeightRows<float>::of(w).middleCols(offset, cols);
                        // (with no depth there is no storage to offset into: Eigen's block starts at 0)
                        const auto float_block = widened.middleCols(depth == 0 ? 0 : offset, cols);
                        for (bool accumulate : {false, true}) {
                            CAPTURE(accumulate);
                            const attn::Matrix<float> start = attn::test::random_matrix<float>(rows, cols, seed + 2);
                            attn::Matrix<float> from_half = start, from_float = start;
                            attn::detail::multiply_rows(a, w_block, from_half, accumulate);
                            attn::detail::multiply_rows(a, float_block, from_float, accumulate);
                            REQUIRE(same_bits(from_half, from_float));
                            // and what it is: a · w in double from the row-major bits, written independently
                            double worst = 0.0;
                            for (Index r = 0; r < rows; ++r)
                                for (Index c = 0; c < cols; ++c) {
                                    double sum = accumulate ? double(start(r, c)) : 0.0, scale = std::abs(sum);
                                    for (Index t = 0; t < depth; ++t) {
                                        const double term =
                                            double(a(r, t)) * independent_half_value(
                                                                  numbers[std::size_t(t * width + offset + c)], format);
                                        sum += term;
                                        scale += std::abs(term);
                                    }
                                    worst = std::max(worst, std::abs(double(from_half(r, c)) - sum) / (scale + 1e-30));
                                }
                            CHECK(worst < 1e-5);
                        }
                    }
}

TEST_CASE("16-bit weights: a matrix in panels holds the row-major numbers it was packed from") {
    for (Index cols : {Index(1), HalfMatrix::kPanel, HalfMatrix::kPanel + 1, Index(200)}) {
        CAPTURE(cols);
        std::vector<std::uint16_t> numbers;
        const HalfMatrix w = random_half_matrix(13, cols, HalfFormat::bfloat16, unsigned(cols), &numbers);
        REQUIRE(w.stored.size() == numbers.size());
        const attn::Matrix<float> widened = w.widened();
        for (Index r = 0; r < 13; ++r)
            for (Index c = 0; c < cols; ++c) {
                REQUIRE(*w.at(r, c) == numbers[std::size_t(r * cols + c)]);
                REQUIRE(bits_of(widened(r, c)) ==
                        bits_of(attn::detail::bfloat16_to_float(numbers[std::size_t(r * cols + c)])));
            }
        // narrowing the widened matrix packs the same bits
        CHECK(HalfMatrix::narrowed(widened, HalfFormat::bfloat16).stored == w.stored);
        // panel by panel: columns 64p … of row r follow row r − 1's in the panel
        if (cols > HalfMatrix::kPanel)
            CHECK(w.at(1, HalfMatrix::kPanel) ==
                  w.at(0, HalfMatrix::kPanel) + std::min(HalfMatrix::kPanel, cols - HalfMatrix::kPanel));
    }
}

TEST_CASE("16-bit weights: a rows block of 16-bit weights (a head's rows of Wo) is that block's product") {
    const HalfMatrix w = random_half_matrix(40, 24, HalfFormat::float16, 5);
    const attn::Matrix<float> a = attn::test::random_matrix<float>(9, 8, 6);
    attn::Matrix<float> from_half(9, 24), from_float(9, 24);
    attn::detail::multiply_rows(a, WeightRows<float>::of(w).middleRows(16, 8), from_half, false);
    attn::detail::multiply_rows(a, w.widened().middleRows(16, 8), from_float, false);
    CHECK(same_bits(from_half, from_float));
}

TEST_CASE("16-bit weights: a model stored in 16 bits gives the float model's logits and attention, bit for bit") {
    for (const char* name : kSixteenBit) {
        CAPTURE(name);
        const attn::Model<float>& as_float = loaded(name, attn::WeightStorage::converted);
        const attn::Model<float>& as_16_bit = loaded(name, attn::WeightStorage::stored_16_bit);
        CHECK(as_16_bit.weight_storage() == attn::WeightStorage::stored_16_bit);
        CHECK(as_16_bit.parameters() == as_float.parameters());
        const Index longest = as_float.settings().longest, vocabulary = as_float.settings().vocabulary_size;
        std::vector<int> ids;
        for (Index i = 0; i < longest; ++i) ids.push_back(int((i * 37 + 11) % vocabulary));
        attn::Workers two(2);
        for (attn::Workers* workers : {static_cast<attn::Workers*>(nullptr), &two})
            for (std::size_t length : {std::size_t(1), std::size_t(5), ids.size()}) {
                CAPTURE(workers != nullptr);
                CAPTURE(length);
                const std::vector<int> text(ids.begin(), ids.begin() + std::ptrdiff_t(length));
                attn::ForwardOptions options;
                options.keep_attention = true;
                if (workers) options.threads = *workers;
                const attn::ForwardResult<float> expected = as_float.forward(text, options);
                const attn::ForwardResult<float> actual = as_16_bit.forward(text, options);
                CHECK(same_bits(actual.logits, expected.logits));
                for (Index l = 0; l < expected.attention.layers(); ++l)
                    for (Index h = 0; h < expected.attention.heads(); ++h)
                        CHECK(same_bits(actual.attention.head(l, h), expected.attention.head(l, h)));
            }

        // decoding: a prompt, then steps one at a time (split by columns with two workers)
        for (attn::Workers* workers : {static_cast<attn::Workers*>(nullptr), &two}) {
            CAPTURE(workers != nullptr);
            attn::Decoder<float> decode_float(as_float), decode_16_bit(as_16_bit);
            attn::DecodeOptions options;
            options.keep_attention = true;
            if (workers) options.threads = *workers;
            const std::vector<int> prompt(ids.begin(), ids.begin() + 6);
            CHECK(same_bits(decode_16_bit.append(prompt, options).logits, decode_float.append(prompt, options).logits));
            for (std::size_t i = 6; i < 12; ++i) {
                const attn::DecodeResult<float> expected = decode_float.step(ids[i], options);
                const attn::DecodeResult<float> actual = decode_16_bit.step(ids[i], options);
                CHECK(same_bits(actual.logits, expected.logits));
                for (Index l = 0; l < expected.attention.layers(); ++l)
                    for (Index h = 0; h < expected.attention.heads(); ++h)
                        CHECK(same_bits(actual.attention.head(l, h), expected.attention.head(l, h)));
            }
        }

        attn::GenerationOptions generation;
        generation.max_tokens = 6;
        generation.stop_at_end = false;
        generation.decode.threads = two;
        const std::vector<int> prompt(ids.begin(), ids.begin() + 3);
        const auto expected = attn::generate(as_float, prompt, generation);
        const auto actual = attn::generate(as_16_bit, prompt, generation);
        CHECK(actual.ids == expected.ids);
        CHECK(actual.probabilities == expected.probabilities);
    }
}

TEST_CASE("16-bit weights: the accessors give the matrices widened, and everything that reads them runs") {
    const attn::Model<float>& model = loaded("llama_gqa_bf16_shards", attn::WeightStorage::stored_16_bit);
    const attn::Model<float>& as_float = loaded("llama_gqa_bf16_shards", attn::WeightStorage::converted);
    for (Index l = 0; l < model.settings().layers; ++l) {
        const attn::Model<float>::Layer widened = model.layer(l), converted = as_float.layer(l);
        for (attn::LayerSlot slot : attn::kMatrixSlots) CHECK(same_bits(widened.matrix(slot), converted.matrix(slot)));
        CHECK(same_bits(widened.attention_norm_weight, converted.attention_norm_weight));
    }
    CHECK(same_bits(model.embedding(), as_float.embedding()));
    CHECK(same_bits(model.unembedding(), as_float.unembedding()));
    CHECK(same_bits(model.unembedding_column(5), as_float.unembedding().col(5)));
    CHECK(same_bits(attn::reference_forward(model, {1, 2, 3}).logits,
                    attn::reference_forward(as_float, {1, 2, 3}).logits));
    attn::HookOptions<float> hooks;
    hooks.keep = {"*"};
    const attn::HookedResult<float> run = attn::run_with_hooks(model, {1, 2, 3}, hooks);  // hooks run on 16-bit weights
    const attn::HookedResult<float> run_float = attn::run_with_hooks(as_float, {1, 2, 3}, hooks);
    CHECK(same_bits(run.cache["blocks.1.hook_mlp_out"], run_float.cache["blocks.1.hook_mlp_out"]));
    CHECK(same_bits(run.cache["blocks.0.attn.hook_result"], run_float.cache["blocks.0.attn.hook_result"]));
    CHECK(same_bits(attn::logit_lens(model, run, 2).probabilities,
                    attn::logit_lens(as_float, run_float, 2).probabilities));
}

TEST_CASE("16-bit weights: a storage the model cannot keep is refused, naming the load option and tensor") {
    attn::LoadOptions options;
    options.weights = attn::WeightStorage::stored_16_bit;
    CHECK_THROWS_WITH_AS(attn::Model<double>::load(kHalfCheckpoints / "gpt2_f16", options),
                         doctest::Contains("Model::load: WeightStorage::stored_16_bit is for Model<float>"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kHalfCheckpoints / "gpt2_prefixed_f32", options),
                         doctest::Contains("is F32; WeightStorage::stored_16_bit keeps the large matrices in the "
                                           "checkpoint's 16-bit format, so they must all be BF16 or all F16"),
                         attn::format_error);

    // one matrix rewritten as BF16 in an F16 checkpoint
    attn::test::TempDir temp;
    const std::filesystem::path dir = temp.path / "mixed";
    std::filesystem::copy(kHalfCheckpoints / "gpt2_f16", dir);
    const attn::SafeTensors file = attn::SafeTensors::open(dir / "model.safetensors");
    // every matrix F16, as the checkpoint has them, but one BF16
    const auto entry_of = [](const std::string& name, const attn::TensorData<float>& data, attn::DType dtype) {
        attn::SafeTensorsEntry entry{name, dtype, data.shape, {}};
        for (float value : data.values) {
            const std::uint16_t bits = dtype == attn::DType::BF16 ? attn::detail::float_to_bfloat16_exact(value)
                                                                  : attn::detail::float_to_half_exact(value);
            entry.bytes.push_back(std::uint8_t(bits & 0xFF));
            entry.bytes.push_back(std::uint8_t(bits >> 8));
        }
        return entry;
    };
    std::vector<attn::SafeTensorsEntry> entries;
    for (const std::string& name : file.names()) {
        // F16 → BF16 rounds a few mantissas; the shape and the values' range are what matter here
        attn::TensorData<float> data = file.tensor<float>(name);
        const bool odd_one = name == "h.1.mlp.c_fc.weight";
        if (odd_one)
            for (float& value : data.values)
                value = attn::detail::bfloat16_to_float(std::uint16_t(bits_of(value) >> 16));
        entries.push_back(entry_of(name, data, odd_one ? attn::DType::BF16 : attn::DType::F16));
    }
    attn::write_safetensors(dir / "model.safetensors", entries);
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(dir, options),
                         doctest::Contains("tensor 'h.1.mlp.c_fc.weight' is BF16; WeightStorage::stored_16_bit"),
                         attn::format_error);
    CHECK_NOTHROW(attn::Model<float>::load(dir));  // as float, a mixed checkpoint is fine
}

/// Whether every entry of x is y's or the bfloat16 next to it (both matrices of bfloat16 numbers);
/// counts the entries that differ into `differ`.
template <class X, class Y>
bool same_or_bfloat16_neighbours(const X& x, const Y& y, Index& differ) {
    bool all = true;
    for (Index r = 0; r < x.rows(); ++r)
        for (Index c = 0; c < x.cols(); ++c) {
            if (x(r, c) == y(r, c)) continue;
            ++differ;
            const std::int64_t gap = std::int64_t(bits_of(x(r, c)) >> 16) - std::int64_t(bits_of(y(r, c)) >> 16);
            all = all && (gap == 1 || gap == -1) && (x(r, c) < 0) == (y(r, c) < 0);
        }
    return all;
}

/// A model that rounds (`rounded`) against the same checkpoint loaded without (`exact`): one and
/// two threads give the same bits, the logits a bfloat16 rounding from the exact model's,
/// decoding steps the prefill's last rows to float rounding while their caches hold the same
/// numbers (below), and the caches hold bfloat16 numbers.
void check_rounding_model(const attn::Model<float>& rounded, const attn::Model<float>& exact) {
    const std::vector<int> ids = spread_ids(rounded);
    attn::Workers two(2);
    attn::ForwardOptions one_thread, two_threads;
    two_threads.threads = two;
    const attn::Matrix<float> logits = rounded.forward(ids, one_thread).logits;
    // two workers share the products' columns and the attention's tasks: the same chains, the same bits
    CHECK(same_bits(rounded.forward(ids, two_threads).logits, logits));
    // a bfloat16 rounding from the exact model's logits
    const double from_exact = relative_logit_gap(logits, exact.forward(ids, one_thread).logits);
    CHECK(from_exact > 1e-4);
    CHECK(from_exact < 5e-2);

    // decoding: each step's products (one row: the rounded numbers in float) against the
    // prefill's last row (pairs where the build has them, in the products and in the attention).
    // A step's attention sums its one query's terms in another order than the prefill's blocks,
    // so a key or value it caches may differ from the prefill's in its last float bits before
    // the cache rounds it to bfloat16, and one lying by a rounding boundary then rounds to the
    // neighbouring bfloat16 (seen: one or two of ~2,300 numbers; which ones depends on the
    // compiler: gcc's and clang's AVX-512 BF16 builds differ). Each cached number is therefore
    // the prefill's or its neighbour, and few differ; the logits agree to float rounding while
    // the caches agree, and within a tenth of the whole rounding's gap once they do not.
    const auto all_bfloat16 = [](const auto& m) { return (m.array() == bfloat16_entries(m).array()).all(); };
    for (attn::Workers* workers : {static_cast<attn::Workers*>(nullptr), &two}) {
        CAPTURE(workers != nullptr);
        attn::Decoder<float> decoder(rounded);
        attn::DecodeOptions options;
        if (workers) options.threads = *workers;
        decoder.append(std::vector<int>(ids.begin(), ids.begin() + 4), options);
        for (std::size_t i = 4; i < ids.size(); ++i) {
            CAPTURE(i);
            const std::vector<int> prefix(ids.begin(), ids.begin() + std::ptrdiff_t(i) + 1);
            const attn::Matrix<float> step = decoder.step(ids[i], options).logits;
            const attn::Matrix<float> prefix_logits = rounded.forward(prefix, one_thread).logits.bottomRows(1);
            attn::Decoder<float> prefilled(rounded);
            prefilled.append(prefix, options);
            Index differ = 0, cached = 0;
            for (Index l = 0; l < rounded.settings().layers; ++l)
                for (Index g = 0; g < decoder.cache(l).heads(); ++g) {
                    CHECK(same_or_bfloat16_neighbours(decoder.cache(l).keys(g), prefilled.cache(l).keys(g), differ));
                    CHECK(
                        same_or_bfloat16_neighbours(decoder.cache(l).values(g), prefilled.cache(l).values(g), differ));
                    cached += decoder.cache(l).keys(g).size() + decoder.cache(l).values(g).size();
                }
            CAPTURE(differ);
            CHECK(differ * 100 <= cached);
            CHECK(relative_logit_gap(step, prefix_logits) < (differ == 0 ? 1e-5 : from_exact / 10));
        }
        // the attention reads keys and values rounded to bfloat16, as the caches keep them
        // (FusedProblem::bfloat16: the queries and weights are rounded inside the kernel)
        for (Index l = 0; l < rounded.settings().layers; ++l)
            for (Index g = 0; g < decoder.cache(l).heads(); ++g) {
                CHECK(all_bfloat16(decoder.cache(l).keys(g)));
                CHECK(all_bfloat16(decoder.cache(l).values(g)));
            }
        attn::Decoder<float> unrounded(exact);
        unrounded.append(ids, options);
        CHECK_FALSE(all_bfloat16(unrounded.cache(0).keys(0)));
    }
}

TEST_CASE(
    "16-bit weights: with bfloat16 activations, every product of a prefill and a decoding step rounds, on one or two "
    "threads") {
    const attn::Model<float>& exact = loaded("llama_gqa_bf16_shards", attn::WeightStorage::stored_16_bit);
    const attn::Model<float>& rounded =
        loaded("llama_gqa_bf16_shards", attn::WeightStorage::stored_16_bit, Rounding::activations);
    CHECK(rounded.bfloat16_activations());
    CHECK(rounded.bfloat16_attention());  // the attention's products are activations' too
    CHECK_FALSE(exact.bfloat16_activations());
    CHECK_FALSE(exact.bfloat16_attention());
    check_rounding_model(rounded, exact);
}

TEST_CASE("bfloat16 attention alone: any weights, the attention rounds and the products with the weights do not") {
    for (const char* name : kSixteenBit) {
        CAPTURE(name);
        const attn::Model<float>& exact = loaded(name, attn::WeightStorage::converted);
        const attn::Model<float>& rounded = loaded(name, attn::WeightStorage::converted, Rounding::attention);
        CHECK(rounded.bfloat16_attention());
        CHECK_FALSE(rounded.bfloat16_activations());
        check_rounding_model(rounded, exact);
        // the products with the weights unrounded: with the activations rounded too, farther still
        if (std::string(name) == "llama_gqa_bf16_shards") {
            const attn::Model<float>& both = loaded(name, attn::WeightStorage::stored_16_bit, Rounding::activations);
            const std::vector<int> ids = {3, 1, 4, 1, 5, 9, 2, 6};
            const attn::Matrix<float> reference = exact.forward(ids).logits;
            const double attention_only = relative_logit_gap(rounded.forward(ids).logits, reference);
            CHECK(attention_only < relative_logit_gap(both.forward(ids).logits, reference));
        }
    }
}

TEST_CASE("bfloat16 attention: attention_rows scores as the pass did, each weight within a bfloat16 step of its") {
    // The pass rounded each exp(score − maximum) to bfloat16 (half a step: 2⁻⁸ relative) and
    // divided by the sum of the rounded numbers; attention_rows gives the exact softmax of the same
    // scores (its scaled queries rounded as the kernel rounds them): within 2⁻⁷ relative. GPT-2's
    // scale, 1/√8 and smaller, is not a power of two, so rounding the scaled queries matters there.
    for (const char* name : kSixteenBit) {
        CAPTURE(name);
        const attn::Model<float>& model = loaded(name, attn::WeightStorage::converted, Rounding::attention);
        const std::vector<int> ids = spread_ids(model);
        attn::ForwardOptions full, light;
        full.keep_attention = true;
        light.keep_log_sum_exp = true;
        const auto kept = model.forward(ids, full);
        const auto light_result = model.forward(ids, light);
        CHECK(light_result.bfloat16_attention);
        CHECK_FALSE(loaded(name, attn::WeightStorage::converted).forward(ids, light).bfloat16_attention);
        double worst = 0.0;  // |rows − kept| / kept over weights above 1e-4
        for (Index l = 0; l < model.settings().layers; ++l) {
            const auto rows = attn::attention_rows(model.settings(), light_result, l, {}, {}).weights;
            for (Index h = 0; h < model.settings().heads; ++h) {
                const attn::Matrix<float> from_pass = kept.attention.head(l, h), recomputed = rows.head(h);
                const double gap = (recomputed - from_pass).cwiseAbs().maxCoeff();
                CHECK(gap <= std::ldexp(1.0, -7) * from_pass.maxCoeff());
                for (Index i = 0; i < from_pass.size(); ++i)
                    if (from_pass(i) > 1e-4f)
                        worst = std::max(worst, std::abs(double(recomputed(i)) - from_pass(i)) / from_pass(i));
            }
        }
        MESSAGE(std::string(name), ": attention_rows against keep_attention, bfloat16 attention, worst relative ",
                worst);
        CHECK(worst > 0.0);  // the pass's weights were rounded: not the same numbers
        CHECK(worst < std::ldexp(1.0, -7));
    }
}

TEST_CASE("bfloat16 attention: an intervention's rotated queries and keys are rounded as the pass's own are") {
    // Replacing hook_rot_q / hook_rot_k with numbers that are not bfloat16 gives the logits of
    // replacing them with those numbers rounded: every path of the kernel (here the one that keeps
    // the weights, which multiplies in float) reads the keys the caches would hold.
    const attn::Model<float>& model =
        loaded("llama_gqa_bf16_shards", attn::WeightStorage::converted, Rounding::attention);
    const std::vector<int> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    const Index n = Index(ids.size());
    for (const char* name : {"blocks.1.attn.hook_rot_k", "blocks.0.attn.hook_rot_q"}) {
        CAPTURE(name);
        attn::HookOptions<float> keep;
        keep.keep = {name};
        const attn::Matrix<float> rotated = attn::run_with_hooks(model, ids, keep).cache[name];
        // off the bfloat16 numbers: scaled by 1 + 2⁻¹², finer than bfloat16's 8 bits, and shifted
        const attn::Matrix<float> off =
            rotated * (1.0f + 1.0f / 4096.0f) + attn::Matrix<float>::Constant(n, rotated.cols(), 1e-3f);
        REQUIRE_FALSE(off == bfloat16_entries(off));
        for (bool keep_attention : {false, true}) {
            CAPTURE(keep_attention);
            attn::HookOptions<float> unrounded, rounded;
            unrounded.forward.keep_attention = rounded.forward.keep_attention = keep_attention;
            unrounded.interventions.push_back(attn::Intervention<float>::replace(name, off));
            rounded.interventions.push_back(attn::Intervention<float>::replace(name, bfloat16_entries(off)));
            const attn::Matrix<float> logits = attn::run_with_hooks(model, ids, unrounded).result.logits;
            CHECK(logits == attn::run_with_hooks(model, ids, rounded).result.logits);
            // the change itself reaches the logits
            CHECK_FALSE(logits == attn::run_with_hooks(model, ids, keep).result.logits);
        }
    }
}

TEST_CASE("16-bit weights: bfloat16 activations are refused without 16-bit storage or BF16 weights") {
    attn::LoadOptions options;
    options.bfloat16_activations = true;
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kHalfCheckpoints / "llama_gqa_bf16_shards", options),
                         doctest::Contains("LoadOptions::bfloat16_activations is for WeightStorage::stored_16_bit; "),
                         attn::argument_error);
    options.weights = attn::WeightStorage::stored_16_bit;
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kHalfCheckpoints / "gpt2_f16", options),
                         doctest::Contains("LoadOptions::bfloat16_activations is for BF16 weights; "),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::Model<float>::load(kHalfCheckpoints / "gpt2_f16", options),
                         doctest::Contains("gpt2_f16 holds F16"), attn::argument_error);
}
