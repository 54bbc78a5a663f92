#pragma once
// A saved transformer, loaded: the store model (manifest.json, written by tools/training/export.py) or
// a Hugging Face checkpoint (config.json and model.safetensors, or a sharded index) of GPT-2,
// Llama (SmolLM, TinyLlama) or Qwen2. Pre-norm layers, one compiled Model<T> for all of them;
// what differs is decided when the model is loaded (model/architectures.hpp):
//
//   x = E[ids] (+ P[positions] if learned)                              (n × C)
//   for each layer:
//     q, k, v = norm(x) · [Wq Wk Wv] (+ b), q and k rotated if rotary   (n × H·d), (n × H_kv·d) ×2
//     x = x + attention(q, k, v) · Wo (+ bo)                            (n × C)
//     x = x + mlp(norm(x))                                              (n × C)
//   logits = norm(x) · U                                                (n × V), U = Eᵀ if tied
//
// norm is LayerNorm or RMSNorm; mlp is act(x · W_up + b) · W_down + b, or SwiGLU's
// (silu(x · W_gate) ⊙ (x · W_up)) · W_down. Two forward passes compute it: reference_forward
// (model/reference_forward.hpp), written from the core's public steps one layer at a time, is
// the readable one; Model::forward (model/forward.hpp) is the fast one, tested equal to it.

#include <Eigen/Core>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/core/norm.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/kernels/large_arrays.hpp"
#include "attn/detail/kernels/tiles.hpp"
#include "attn/detail/kernels/weight_panels.hpp"
#include "attn/formats/gguf.hpp"
#include "attn/formats/gguf_tensors.hpp"
#include "attn/formats/manifest.hpp"
#include "attn/formats/safetensors.hpp"
#include "attn/formats/tensor_files.hpp"
#include "attn/model/architectures.hpp"
#include "attn/model/forward.hpp"
#include "attn/model/gguf_architectures.hpp"
#include "attn/model/types.hpp"
#include "attn/text/tokenizer.hpp"

namespace attn {

/// How Model::load keeps the weights.
enum class WeightStorage {
    /// Every weight converted to the model's scalar type (the default).
    converted,
    /// The large matrices (q/k/v, attention output, MLP, embedding and unembedding) kept in the
    /// checkpoint's 16-bit format, BF16 or F16, and widened to float inside the products: half
    /// the memory, and half the bytes a decoding step reads, with the bits of the converted
    /// model. Model<float> only; the norms, biases and learned positions are float. layer(),
    /// embedding() and unembedding() give the matrices widened to float (a copy).
    stored_16_bit,
    /// A GGUF file's large matrices (q/k/v, attention output, MLP, embedding and unembedding)
    /// whose tensors are in a block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) kept
    /// in it, as the file's bytes, and dequantized in registers inside the products, accumulating in float
    /// (detail/kernels/quantized_weights.hpp): a Q4_K matrix takes 4.5 bits a weight, and a
    /// decoding step reads that many. The products equal the converted model's to float
    /// rounding (within γ_K Σ|a w| over a product's depth K); a decoding step's on Q4_0, Q5_0,
    /// Q4_K, Q5_K and Q6_K with AVX-512 VNNI multiply the codes in integers by the activations
    /// kept as three signed bytes each (within 2^-21 of the largest of their 32, where llama.cpp
    /// keeps 8 bits), as close to it again. An embedding row is dequantized
    /// when a token is looked up. Matrices in F32, F16 or BF16 are converted to float, as are
    /// the norms, biases and learned positions. Model<float> and GGUF files only; layer(),
    /// embedding() and unembedding() give the matrices dequantized (a copy).
    stored_quantized,
};

/// How Model::load reads a model.
struct LoadOptions {
    WeightStorage weights = WeightStorage::converted;
    /// With WeightStorage::stored_16_bit and BF16 weights (else Model::load throws
    /// argument_error): round each product's activations to the nearest bfloat16 (ties to even)
    /// before multiplying them by the weights, as llama.cpp does for BF16 weights; and the
    /// attention's too, as llama.cpp's default 16-bit cache does: the queries, keys and values
    /// (the caches keep them rounded) and each unnormalised weight before it is summed. Where the
    /// build has AVX-512 BF16 (-march=native on AMD Zen 4 and later, Intel Sapphire Rapids and
    /// later), a prefill's products and its attention then multiply two numbers' products in one
    /// instruction, up to twice the float peak; a decoding step (one or two rows) multiplies the
    /// rounded numbers in float. The logits move by about bfloat16's precision (8 bits: ~0.4 % of
    /// an activation) from the converted model's. Off by default.
    bool bfloat16_activations = false;
    /// For any weights: the attention alone on bfloat16 numbers, as bfloat16_activations does it
    /// (queries, keys and values rounded, the caches keeping them so, and each unnormalised weight
    /// before it is summed), the products with the weights untouched. llama.cpp's defaults keep a
    /// 16-bit cache and multiply 16-bit numbers in their attention too, whatever the weights. With
    /// AVX-512 BF16 a prefill's attention multiplies pairs, up to twice the float rate: long prompts
    /// gain most. Off by default.
    bool bfloat16_attention = false;
};

/// A loaded model, immutable after loading; its const methods are safe to call from
/// several threads at once.
template <class T>
class Model {
public:
    /// One layer's weights, each (in × out), as layer(l) gives them. What the layer's description
    /// (settings().layer(l)) does not read is empty: biases, the gate, q/k norms, the norms of a
    /// block's output. The model keeps the large matrices packed for its products, not here.
    struct Layer {
        Vector<T> attention_norm_weight, attention_norm_bias;  ///< C each (no bias with RMSNorm; none in OLMo-2)
        Matrix<T> query_key_value;                 ///< (C × (H + 2 H_kv)·d): [Wq Wk Wv], one product for all three
        Vector<T> query_key_value_bias;            ///< (H + 2 H_kv)·d, or empty
        Vector<T> query_norm, key_norm;            ///< d (per head) or H·d and H_kv·d (whole), or empty
        Matrix<T> output;                          ///< (H·d × C)
        Vector<T> output_bias;                     ///< C, or empty
        Vector<T> attention_output_norm;           ///< C, or empty: the norm of attention's output (OLMo-2)
        Vector<T> mlp_norm_weight, mlp_norm_bias;  ///< C each (no bias with RMSNorm; none in OLMo-2)
        Matrix<T> up;                              ///< (C × M)
        Vector<T> up_bias;                         ///< M, or empty
        Matrix<T> gate;                            ///< (C × M) in a gated MLP, else empty
        Vector<T> gate_bias;                       ///< M, or empty
        Matrix<T> down;                            ///< (M × C)
        Vector<T> down_bias;                       ///< C, or empty
        Vector<T> mlp_output_norm;                 ///< C, or empty: the norm of the MLP's output (OLMo-2)
        Index query_width = 0;                     ///< H·d
        Index key_value_width = 0;                 ///< H_kv·d

        /// Wq, (C × H·d): a view of query_key_value, or a copy from a temporary layer
        /// (model.layer(l).query(): layer() returns one).
        auto query() const& { return query_key_value.leftCols(query_width); }
        Matrix<T> query() && { return query_key_value.leftCols(query_width); }
        /// Wk, (C × H_kv·d), viewed or copied as query().
        auto key() const& { return query_key_value.middleCols(query_width, key_value_width); }
        Matrix<T> key() && { return query_key_value.middleCols(query_width, key_value_width); }
        /// Wv, (C × H_kv·d), viewed or copied as query().
        auto value() const& { return query_key_value.middleCols(query_width + key_value_width, key_value_width); }
        Matrix<T> value() && { return query_key_value.middleCols(query_width + key_value_width, key_value_width); }

        /// The matrix a slot names (is_matrix_slot(slot)).
        Matrix<T>& matrix(LayerSlot slot) { return detail::matrix_in_slot(*this, slot); }
        const Matrix<T>& matrix(LayerSlot slot) const { return detail::matrix_in_slot(*this, slot); }
        /// The vector a slot names (!is_matrix_slot(slot)).
        const Vector<T>& vector(LayerSlot slot) const { return const_cast<Layer&>(*this).vector(slot); }
        Vector<T>& vector(LayerSlot slot) {
            switch (slot) {
                case LayerSlot::attention_norm:
                    return attention_norm_weight;
                case LayerSlot::attention_norm_bias:
                    return attention_norm_bias;
                case LayerSlot::query_key_value_bias:
                    return query_key_value_bias;
                case LayerSlot::query_norm:
                    return query_norm;
                case LayerSlot::key_norm:
                    return key_norm;
                case LayerSlot::output_bias:
                    return output_bias;
                case LayerSlot::attention_output_norm:
                    return attention_output_norm;
                case LayerSlot::mlp_norm:
                    return mlp_norm_weight;
                case LayerSlot::mlp_norm_bias:
                    return mlp_norm_bias;
                case LayerSlot::gate_bias:
                    return gate_bias;
                case LayerSlot::up_bias:
                    return up_bias;
                case LayerSlot::down_bias:
                    return down_bias;
                default:
                    return mlp_output_norm;
            }
        }
    };

    /// Loads a model directory: manifest.json and the files it names (the store model), or a
    /// Hugging Face directory: config.json, model.safetensors or model.safetensors.index.json
    /// and its shards, and the tokenizer's files if present; or a GGUF file (a path ending in
    /// .gguf: llama.cpp's format, model/gguf_architectures.hpp says what is read) with the
    /// tokenizer in its metadata (Tokenizer::from_gguf: llama.cpp's ids; empty when the file
    /// has none, then pass ids). F32, F16 and BF16
    /// tensors convert to T as they are read, one at a time; GGUF's block formats (Q8_0, Q4_0,
    /// Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) are dequantized to T. Throws io_error for a missing file and
    /// format_error for anything malformed, unsupported, missing or misshapen, naming the
    /// file, key or tensor. With options.weights = WeightStorage::stored_16_bit (Model<float>
    /// only, else argument_error) the large matrices stay 16-bit: format_error naming the
    /// tensor if one of them is not BF16, or not F16, like the first (a quantized one included).
    /// With WeightStorage::stored_quantized (Model<float> and a .gguf path only, else
    /// argument_error) the large matrices in a block format stay in it. options.bfloat16_activations
    /// asks for stored_16_bit and BF16 weights (else argument_error, naming the path).
    static Model load(const std::filesystem::path& path, const LoadOptions& options = {});  // defined below

    const ModelSettings& settings() const { return settings_; }
    /// How the weights are kept (LoadOptions::weights).
    WeightStorage weight_storage() const { return storage_; }
    /// Whether the products round activations to bfloat16 (LoadOptions::bfloat16_activations).
    bool bfloat16_activations() const { return bfloat16_activations_; }
    /// Whether the attention runs on bfloat16 numbers (LoadOptions::bfloat16_attention or
    /// bfloat16_activations).
    bool bfloat16_attention() const { return bfloat16_attention_; }
    /// The directory's (or GGUF file's) tokenizer; empty (size 0) if it has none, then ids must be given.
    const Tokenizer& tokenizer() const { return tokenizer_; }
    /// The token embedding E, (V × C): a copy, whatever the storage (16-bit numbers widened,
    /// blocks dequantized; a tied model's read from U).
    Matrix<T> embedding() const {
        Matrix<T> out(settings_.vocabulary_size, settings_.dimensions);
        for (Index v = 0; v < settings_.vocabulary_size; ++v) embedding_row_into(int(v), out.row(v));
        return out;
    }
    /// The unembedding U, (C × V): logits = norm(x) · U; Eᵀ in a tied model. A copy of what the
    /// products read in panels (or 16-bit numbers widened, blocks dequantized): unembed() and
    /// unembedding_column() compute from U without it.
    Matrix<T> unembedding() const { return detail::unpacked(unembedding_rows()); }
    /// Column v of U (C), 0 ≤ v < V: token v's direction in the final residual stream.
    Vector<T> unembedding_column(Index v) const {
        detail::check_index("Model::unembedding_column", "token", v, settings_.vocabulary_size);
        return detail::unpacked(unembedding_rows().middleCols(v, 1));
    }
    /// x · U, (rows × V) logits, for x (rows × C) already through the final norm: the product
    /// of a forward pass, on the weights as kept (no soft cap: ModelSettings::logit_cap).
    template <class D>
    Matrix<T> unembed(const Eigen::MatrixBase<D>& x) const {
        detail::check_cols("Model::unembed", "x", x, settings_.dimensions, "the model's width C");
        const Matrix<T> rows = x;  // row-major, contiguous
        Matrix<T> logits(rows.rows(), settings_.vocabulary_size);
        detail::multiply_rows(rows, unembedding_rows(), logits, false);
        return logits;
    }
    /// Learned positions, (longest × C); empty with rotary positions.
    const Matrix<T>& position_embedding() const { return position_embedding_; }
    /// Layer l's weights, 0 ≤ l < layers: a copy, its large matrices unpacked from the panels
    /// the products read (16-bit numbers widened, blocks dequantized), about the layer's bytes
    /// per call. layer_vector reads a norm or bias without the copy.
    Layer layer(Index l) const {
        detail::check_index("Model::layer", "layer", l, settings_.layers);
        Layer out = layers_[std::size_t(l)];  // the vectors
        const LayerWeights weights = weights_of(std::size_t(l));
        for (LayerSlot slot : kMatrixSlots) out.matrix(slot) = detail::unpacked(weights.matrix(slot));
        return out;
    }
    /// Layer l's vector in a slot (!is_matrix_slot(slot)): a norm's weight or a bias, C or
    /// (H + 2 H_kv)·d entries or empty where the layer has none (0 ≤ l < layers).
    const Vector<T>& layer_vector(Index l, LayerSlot slot) const {
        detail::check_index("Model::layer_vector", "layer", l, settings_.layers);
        if (is_matrix_slot(slot))
            throw argument_error("Model::layer_vector: the slot names a matrix; Model::layer(l).matrix(slot) has it");
        return layers_[std::size_t(l)].vector(slot);
    }
    /// The final norm's weight and bias, C each (the bias is empty with RMSNorm).
    const Vector<T>& final_norm_weight() const { return final_norm_weight_; }
    const Vector<T>& final_norm_bias() const { return final_norm_bias_; }
    /// Layer l's rotary positions (head size, the numbers that turn, pairing, base and scaling
    /// from the config; 0 ≤ l < layers). Throws argument_error for a layer that rotates nothing
    /// (learned positions).
    const Rope<T>& rope(Index l = 0) const {
        detail::check_index("Model::rope", "layer", l, settings_.layers);
        const std::optional<Rope<T>>& rope = ropes_[rope_of_layer_[std::size_t(l)]];
        if (!rope)
            throw argument_error(detail::message("Model::rope: this ", architecture_name(settings_.architecture),
                                                 " model has learned positions, not rotary ones"));
        return *rope;
    }

    /// The numbers the model's weights hold (a tied embedding counted once).
    Index parameters() const {
        Index count = embedding_.size() + unembedding_.size() + position_embedding_.size() + final_norm_weight_.size() +
                      final_norm_bias_.size();
        for (const Layer& layer : layers_)
            for (int slot = 0; slot < kLayerSlots; ++slot)
                if (!is_matrix_slot(LayerSlot(slot))) count += layer.vector(LayerSlot(slot)).size();
        count += half_embedding_.size() + half_unembedding_.size();
        count += quantized_embedding_.size() + quantized_unembedding_.size();
        const auto matrices = [&count](const auto& layers) {
            for (const auto& layer : layers)
                for (LayerSlot slot : kMatrixSlots) count += layer.matrix(slot).size();
        };
        matrices(panel_layers_);
        matrices(half_layers_);
        matrices(quantized_layers_);
        return count;
    }

    /// The model's final norm (LayerNorm or RMSNorm) of x's rows. x: (rows × C) → (rows × C).
    template <class D>
    Matrix<T> final_norm(const Eigen::MatrixBase<D>& x) const {
        return settings_.final_norm == Norm::rms_norm
                   ? rms_norm(x, final_norm_weight_, settings_.final_norm_epsilon)
                   : layer_norm(x, final_norm_weight_, final_norm_bias_, settings_.final_norm_epsilon);
    }

    /// ids: 1 … longest token ids → logits (positions × vocabulary) and, if asked,
    /// attention (layers × heads × positions × positions). The fast pass (model/forward.hpp);
    /// the same numbers as reference_forward to rounding, bit-identical for every thread count.
    ForwardResult<T> forward(const std::vector<int>& ids, const ForwardOptions& options = {}) const {
        ForwardResult<T> result;
        forward_into(ids, options, result);
        result.workspace = {};  // a result kept for its numbers does not keep the pass's memory too
        return result;
    }

    /// forward into `result`, whose storage is reused: the same bits as forward. logits,
    /// attention (layers × heads × (positions × positions)), log_sum_exp, queries_keys and
    /// statistics are written where they are when their shapes fit this call (texts of one
    /// length in a loop), and resized otherwise: the result is the caller's buffer, and a text
    /// of another length is no error. What options do not ask for is dropped. result.workspace
    /// keeps the pass's working memory, so that a repeated call of the same length, with one
    /// thread or kept Workers, allocates nothing (ablated heads and statistics' markers included).
    void forward_into(const std::vector<int>& ids, const ForwardOptions& options, ForwardResult<T>& result) const {
        detail::check_token_ids("Model::forward", settings_, ids);
        detail::FastForward<T>(*this, ids, options, result)
            .run(options.threads.kept(), detail::available_threads(options.threads, "Model::forward"));
    }

private:
    friend class detail::FastForward<T>;

    /// A layer's large matrices, each as M: panels of T or of 16-bit numbers, GGUF blocks, or
    /// the products' view of them (WeightRows).
    template <class M>
    struct LayerMatrices {
        M query_key_value, output, up, gate, down;
        M& matrix(LayerSlot slot) { return detail::matrix_in_slot(*this, slot); }
        const M& matrix(LayerSlot slot) const { return detail::matrix_in_slot(*this, slot); }
    };

    /// Layer 0's q, k, v depend on the token alone when positions are rotary: the fast pass
    /// looks them up in a (V × (H + 2 H_kv)·d) table instead of computing them, where the table
    /// stays this small.
    static constexpr std::size_t kFirstLayerTableBytes = std::size_t(16) << 20;

    /// One Rope per distinct rotary spec of the layers (most models: one for all).
    explicit Model(ModelSettings settings) : settings_(std::move(settings)) {
        std::vector<const RotarySpec*> specs;
        for (const LayerDescription& layer : settings_.layer_descriptions) {
            const RotarySpec& spec = layer.rotary;
            std::size_t found = 0;
            while (found < specs.size() && !same_rotation(*specs[found], spec)) ++found;
            if (found == specs.size()) {
                specs.push_back(&spec);
                ropes_.emplace_back();
                if (layer.rotates()) ropes_.back().emplace(settings_.head_size, spec, settings_.longest);
            }
            rope_of_layer_.push_back(found);
        }
    }

    static bool same_rotation(const RotarySpec& a, const RotarySpec& b) {
        return a.rotated == b.rotated && a.pairing == b.pairing && a.base == b.base &&
               a.scaling.kind == b.scaling.kind && a.scaling.factor == b.scaling.factor &&
               a.scaling.low_frequency_factor == b.scaling.low_frequency_factor &&
               a.scaling.high_frequency_factor == b.scaling.high_frequency_factor &&
               a.scaling.original_context == b.scaling.original_context && a.scaling.divisors == b.scaling.divisors;
    }

    static Model load_store_model(const std::filesystem::path& directory, const LoadOptions& options) {
        const Manifest manifest = read_manifest(directory);
        Model model(manifest.settings);
        model.storage_ = options.weights;
        model.set_rounding(options);
        model.tokenizer_ = Tokenizer::load(manifest.vocabulary, manifest.merges);
        if (model.tokenizer_.size() != manifest.settings.vocabulary_size)
            throw format_error(detail::message(manifest.vocabulary, ": ", model.tokenizer_.size(), " tokens, but ",
                                               (directory / "manifest.json").string(), " declares vocabulary_size ",
                                               manifest.settings.vocabulary_size));
        model.read_weights(TensorFiles::open_file(manifest.weights));
        return model;
    }

    static Model load_hugging_face(const std::filesystem::path& directory, const LoadOptions& options) {
        const std::filesystem::path config_path = directory / "config.json";
        std::ifstream in(config_path, std::ios::binary);
        if (!in) throw io_error(detail::message(config_path.string(), ": cannot open the model's config"));
        const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (config.is_discarded()) throw format_error(detail::message(config_path.string(), ": not valid JSON"));
        ModelSettings settings = settings_from_config(config, config_path.string());
        const TensorFiles files = TensorFiles::open(directory);
        if (settings.architecture == Architecture::gpt2 && files.contains("transformer.wte.weight"))
            settings = with_tensor_prefix(std::move(settings), "transformer.");
        Model model(std::move(settings));
        model.storage_ = options.weights;
        model.set_rounding(options);
        model.read_weights(files);
        model.tokenizer_ = Tokenizer::from_directory(directory);
        if (model.tokenizer_.size() > model.settings_.vocabulary_size)
            throw format_error(detail::message(directory.string(), ": the tokenizer has ", model.tokenizer_.size(),
                                               " tokens, more than the model's vocab_size ",
                                               model.settings_.vocabulary_size));
        return model;
    }

    /// A GGUF file: its settings from general.architecture and its keys, its tensors read
    /// through GgufTensors into the same slots as a Hugging Face checkpoint's; its tokenizer
    /// from the metadata, read before the weights (a malformed vocabulary costs no reading).
    static Model load_gguf(const std::filesystem::path& path, const LoadOptions& options) {
        GgufTensors files(GgufFile::open(path));
        Model model(settings_from_gguf(files.file()));
        model.storage_ = options.weights;
        model.set_rounding(options);
        model.tokenizer_ = Tokenizer::from_gguf(files.file());
        if (model.tokenizer_.size() > model.settings_.vocabulary_size)
            throw format_error(detail::message(path.string(), ": tokenizer.ggml.tokens has ", model.tokenizer_.size(),
                                               " tokens, more than the ", model.settings_.vocabulary_size,
                                               " rows of the token embedding"));
        model.read_weights(files);
        return model;
    }

    /// The tensors the settings name (settings_.tensors and each layer description's table),
    /// each checked against its shape, read one at a time into its place. All problems of the
    /// checkpoint (missing, unexpected and misshapen tensors) are reported in one format_error.
    /// Files is TensorFiles (safetensors) or GgufTensors (GGUF): both give row-major shapes,
    /// type names, and matrices read into blocks as stored or transposed.
    template <class Files>
    void read_weights(const Files& files) {
        const ModelSettings& s = settings_;
        const ModelTensors& names = s.tensors;
        const Index c = s.dimensions;
        std::map<std::string, std::vector<std::int64_t>> expected;
        const auto expect = [&](const std::string& name, std::vector<std::int64_t> shape) {
            if (!name.empty()) expected[name] = std::move(shape);
        };
        expect(names.embedding, {s.vocabulary_size, c});
        expect(names.position_embedding, {s.longest, c});
        expect(names.final_norm_weight, {c});
        expect(names.final_norm_bias, {c});
        expect(names.unembedding, {s.vocabulary_size, c});  // lm_head: a Linear (V × C)
        for (const LayerDescription& layer : s.layer_descriptions)
            for (const LayerTensor& tensor : layer.tensors) expect(tensor.name, tensor.shape);
        check_tensors(files, expected, names.skipped);

        // Weights that are not finite would only surface as NaN logits (or a numeric_error in
        // attention, far from its cause): refuse them here, naming the tensor.
        const auto finite = [&](const std::string& name, const auto& values) {
            if (!values.allFinite())
                throw format_error(detail::message(files.source(name), ": tensor '", name, "' holds NaN or infinity",
                                                   sizeof(T) < 8 ? " (in float)" : ""));
        };
        const auto vector = [&](const std::string& name) {
            if (name.empty()) return Vector<T>();
            Vector<T> values = files.template vector<T>(name);
            finite(name, values);
            return values;
        };
        // The large matrices on 2 MiB pages where the system has them: a decoding step streams
        // every weight, a prefill reads them a column panel at a time (docs/DESIGN.md); mapped at
        // once, as they are written whole next.
        const auto sized = [](Matrix<T>& values, Index rows, Index cols) {
            values.resize(rows, cols);
            detail::advise_huge_pages(values.data(), std::size_t(values.size()) * sizeof(T));
            detail::populate_pages(values.data(), std::size_t(values.size()) * sizeof(T));
        };
        // With 16-bit storage the large matrices keep their tensors' format: all BF16 or all F16.
        bool format_known = false;
        const auto check_16_bit = [&](const std::vector<std::string>& tensors) {
            for (const std::string& name : tensors) {
                const std::string type = files.type_name(name);
                const bool half = type == "BF16" || type == "F16";
                const detail::HalfFormat format =
                    type == "BF16" ? detail::HalfFormat::bfloat16 : detail::HalfFormat::float16;
                if (!half || (format_known && format != half_format_))
                    throw format_error(detail::message(
                        files.source(name), ": tensor '", name, "' is ", type,
                        "; WeightStorage::stored_16_bit keeps the large matrices in the checkpoint's 16-bit format, "
                        "so they must all be BF16 or all F16",
                        format_known ? detail::message(" (the first was ", detail::half_format_name(half_format_), ")")
                                     : std::string()));
                half_format_ = format;
                format_known = true;
            }
        };
        // A large matrix's tensors read into its panels (read_into_panels): of 16-bit numbers with
        // 16-bit storage (narrowed back to the tensors' format, exactly: they came from it), else of T.
        const bool sixteen_bit = storage_ == WeightStorage::stored_16_bit;
        const auto narrow = [this](T x) {
            return half_format_ == detail::HalfFormat::bfloat16 ? detail::float_to_bfloat16_exact(float(x))
                                                                : detail::float_to_half_exact(float(x));
        };
        const auto as_is = [](T x) { return x; };

        // With quantized storage, a matrix whose tensors are all in a block format is read from
        // the file into its blocks, rows in place (pieces of a tensor are runs of its rows), and
        // never made float: loading takes the memory the blocks take.
        const auto quantized_format = [&](const LayerTensor* tensor, const std::string& name) {
            std::optional<detail::QuantFormat> format;
            if constexpr (std::is_same_v<Files, GgufTensors>)
                if (storage_ == WeightStorage::stored_quantized && (!tensor || tensor->out_in))
                    format = block_format(files.type_name(name));
            return format;
        };
        const auto read_quantized_rows = [&](const std::string& name, Index from, Index count,
                                             detail::QuantizedMatrix& into, Index to) {
            if constexpr (std::is_same_v<Files, GgufTensors>) {
                const std::size_t row_bytes = into.run_of(to).row_bytes;
                files.read_rows(name, from, count, into.row(to), std::size_t(count) * row_bytes);
                if (!into.finite(to, count))
                    throw format_error(detail::message(files.source(name), ": tensor '", name,
                                                       "' holds NaN or infinity (a block's F16 scale)"));
            }
        };
        // A whole tensor (V × C: the token embedding, or the unembedding as stored) kept in its blocks.
        const auto keep_quantized = [&](const std::string& name, detail::QuantizedMatrix& into) {
            const std::optional<detail::QuantFormat> format = quantized_format(nullptr, name);
            if (!format) return false;
            into = detail::QuantizedMatrix::sized(c, {{*format, s.vocabulary_size}});
            read_quantized_rows(name, 0, s.vocabulary_size, into, 0);
            return true;
        };

        // U (C × V), read from the tensor `name` (V × C) transposed, or E (V × C) as stored
        const auto read_whole = [&](const std::string& name, bool transposed, detail::HalfMatrix& half,
                                    detail::PanelMatrix<T>& panels) {
            const Index rows = transposed ? c : s.vocabulary_size, cols = transposed ? s.vocabulary_size : c;
            const std::vector<TensorPiece> whole{{LayerSlot::query_key_value, 0, cols, 0}};
            if (sixteen_bit) {
                check_16_bit({name});
                half = detail::HalfMatrix::sized(half_format_, rows, cols);
                read_into_panels(
                    files, name, transposed, whole, [&](LayerSlot) -> auto& { return half; }, narrow);
            } else {
                panels = detail::PanelMatrix<T>::sized(rows, cols);
                read_into_panels(
                    files, name, transposed, whole, [&](LayerSlot) -> auto& { return panels; }, as_is);
            }
        };
        if (s.tied_embeddings) {  // U = Eᵀ, the only copy kept
            if (!keep_quantized(names.embedding, quantized_unembedding_))
                read_whole(names.embedding, true, half_unembedding_, unembedding_);
        } else {
            if (!keep_quantized(names.embedding, quantized_embedding_)) {
                if (sixteen_bit) {
                    detail::PanelMatrix<T> unused;
                    read_whole(names.embedding, false, half_embedding_, unused);
                } else {  // row-major: a token's row is read whole
                    sized(embedding_, s.vocabulary_size, c);
                    files.template read_matrix_into<T>(names.embedding, embedding_, false);
                    finite(names.embedding, embedding_);
                }
            }
            if (!keep_quantized(names.unembedding, quantized_unembedding_))
                read_whole(names.unembedding, true, half_unembedding_, unembedding_);
        }
        if (!names.position_embedding.empty()) {
            position_embedding_.resize(s.longest, c);
            files.template read_matrix_into<T>(names.position_embedding, position_embedding_, false);
            finite(names.position_embedding, position_embedding_);
        }
        final_norm_weight_ = vector(names.final_norm_weight);
        final_norm_weight_.array() += T(names.final_norm_offset);  // Gemma: w stored, 1 + w applied
        final_norm_bias_ = vector(names.final_norm_bias);

        // Each layer: every slot its description reads sized once, then each tensor read into
        // its pieces: the vectors' through one copy, the matrices' into their blocks or panels.
        for (const LayerDescription& description : s.layer_descriptions) {
            Layer layer;
            layer.query_width = s.query_width();
            layer.key_value_width = s.key_value_width();
            std::vector<std::string> sources[kLayerSlots];  // the tensors read into each slot
            for (const LayerTensor& tensor : description.tensors)
                for (const TensorPiece& piece : tensor.pieces) {
                    std::vector<std::string>& into = sources[int(piece.slot)];
                    if (into.empty() || into.back() != tensor.name) into.push_back(tensor.name);
                }
            // With quantized storage, a matrix slot all of whose tensors are in block formats is
            // kept in them: its rows (outputs) in runs of one format, in the order of the slot's.
            LayerMatrices<detail::QuantizedMatrix> quantized;
            bool kept_quantized[kLayerSlots] = {};
            for (int slot = 0; slot < kLayerSlots; ++slot) {
                if (!is_matrix_slot(LayerSlot(slot)) || sources[slot].empty()) continue;
                std::vector<std::pair<Index, std::pair<detail::QuantFormat, Index>>> rows;  // (to, (format, count))
                bool all = true;
                for (const LayerTensor& tensor : description.tensors)
                    for (const TensorPiece& piece : tensor.pieces) {
                        if (int(piece.slot) != slot) continue;
                        const std::optional<detail::QuantFormat> format = quantized_format(&tensor, tensor.name);
                        all = all && format.has_value();
                        if (format) rows.push_back({piece.to, {*format, piece.count}});
                    }
                if (!all) continue;
                std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
                std::vector<std::pair<detail::QuantFormat, Index>> runs;
                for (const auto& row : rows) runs.push_back(row.second);
                const auto [in, out] = slot_shape(LayerSlot(slot), s, description);
                (void)out;
                quantized.matrix(LayerSlot(slot)) = detail::QuantizedMatrix::sized(in, runs);
                kept_quantized[slot] = true;
            }
            LayerMatrices<detail::HalfMatrix> half;
            LayerMatrices<detail::PanelMatrix<T>> panels;
            for (int slot = 0; slot < kLayerSlots; ++slot) {
                if (sources[slot].empty() || kept_quantized[slot]) continue;
                const auto [rows, cols] = slot_shape(LayerSlot(slot), s, description);
                if (!is_matrix_slot(LayerSlot(slot))) {
                    layer.vector(LayerSlot(slot)).resize(cols);
                } else if (sixteen_bit) {
                    check_16_bit(sources[slot]);
                    half.matrix(LayerSlot(slot)) = detail::HalfMatrix::sized(half_format_, rows, cols);
                } else {
                    panels.matrix(LayerSlot(slot)) = detail::PanelMatrix<T>::sized(rows, cols);
                }
            }
            for (const LayerTensor& tensor : description.tensors) {
                if (!is_matrix_slot(tensor.pieces.front().slot)) {
                    const Vector<T> values = vector(tensor.name);
                    for (const TensorPiece& piece : tensor.pieces)
                        layer.vector(piece.slot).segment(piece.to, piece.count) =
                            values.segment(piece.from, piece.count).array() + T(tensor.offset);
                    continue;
                }
                std::vector<TensorPiece> in_panels;  // the pieces not kept in blocks
                for (const TensorPiece& piece : tensor.pieces) {
                    if (kept_quantized[int(piece.slot)])
                        read_quantized_rows(tensor.name, piece.from, piece.count, quantized.matrix(piece.slot),
                                            piece.to);
                    else
                        in_panels.push_back(piece);
                }
                if (in_panels.empty()) continue;
                if (sixteen_bit)
                    read_into_panels(
                        files, tensor.name, tensor.out_in, in_panels,
                        [&](LayerSlot slot) -> detail::HalfMatrix& { return half.matrix(slot); }, narrow);
                else
                    read_into_panels(
                        files, tensor.name, tensor.out_in, in_panels,
                        [&](LayerSlot slot) -> detail::PanelMatrix<T>& { return panels.matrix(slot); }, as_is);
            }
            layers_.push_back(std::move(layer));  // its vectors
            panel_layers_.push_back(std::move(panels));
            if (storage_ == WeightStorage::stored_16_bit) half_layers_.push_back(std::move(half));
            if (storage_ == WeightStorage::stored_quantized) quantized_layers_.push_back(std::move(quantized));
        }
        tabulate_first_layer();
    }

    /// Reads the 2-D tensor `name` into the panels its pieces go to (into(piece.slot): a panel
    /// matrix of the slot's (in × out) shape, sized), a band of the tensor's rows at a time and
    /// never whole, so that loading holds the weights once. A Linear's [out, in] rows (out_in)
    /// are columns of the matrix, a band of them one panel's worth; a Conv1D's [in, out] rows
    /// are its rows. Each number is kept as store(x): T as it is, or narrowed back to the
    /// tensor's 16-bit format. format_error naming the tensor if a number is not finite.
    template <class Files, class Into, class Store>
    static void read_into_panels(const Files& files, const std::string& name, bool out_in,
                                 const std::vector<TensorPiece>& pieces, Into&& into, Store&& store) {
        constexpr Index kPanel = detail::PanelMatrix<T>::kPanel;
        const std::vector<std::int64_t>& shape = files.shape(name);
        const Index rows = Index(shape[0]), length = Index(shape[1]);
        const Index band = out_in ? kPanel : std::max<Index>(1, Index(1 << 16) / std::max<Index>(1, length));
        std::vector<T> values(std::size_t(std::min(band, rows) * length));
        for (Index first = 0; first < rows; first += band) {
            const Index count = std::min(band, rows - first);
            files.template convert_rows<T>(name, first, count, values.data());
            if (!Eigen::Map<const Vector<T>>(values.data(), count * length).allFinite())
                throw format_error(detail::message(files.source(name), ": tensor '", name, "' holds NaN or infinity",
                                                   sizeof(T) < 8 ? " (in float)" : ""));
            for (const TensorPiece& piece : pieces) {
                auto& matrix = into(piece.slot);
                if (out_in) {  // the band's rows o (outputs) are columns piece.to + o − piece.from
                    const Index from = std::max(first, piece.from);
                    const Index to = std::min(first + count, piece.from + piece.count);
                    for (Index o = from; o < to; ++o) {
                        const Index col = piece.to + o - piece.from, stride = matrix.panel_width(col);
                        const T* row = values.data() + (o - first) * length;
                        auto* out = matrix.at(0, col);
                        for (Index i = 0; i < length; ++i) out[i * stride] = store(row[i]);
                    }
                } else {  // the band's rows are the matrix's: the piece's columns of each
                    for (Index r = 0; r < count; ++r) {
                        const T* row = values.data() + r * length + piece.from;
                        for (Index j = 0; j < piece.count;) {
                            const Index col = piece.to + j, run = std::min(piece.count - j, kPanel - col % kPanel);
                            auto* out = matrix.at(first + r, col);
                            for (Index k = 0; k < run; ++k) out[k] = store(row[j + k]);
                            j += run;
                        }
                    }
                }
            }
        }
    }

    /// Every tensor the names expect, with its shape, and nothing else but what may be skipped.
    template <class Files>
    static void check_tensors(const Files& files, const std::map<std::string, std::vector<std::int64_t>>& expected,
                              const std::vector<std::string>& skipped) {
        std::vector<std::string> missing, extra, misshapen;
        for (const auto& [name, shape] : expected) {
            if (!files.contains(name))
                missing.push_back(name);
            else if (files.shape(name) != shape)
                misshapen.push_back(detail::message(name, " is ", detail::shape_text(files.shape(name)), ", expected ",
                                                    detail::shape_text(shape)));
        }
        for (const std::string& name : files.names())
            if (!expected.count(name) && std::find(skipped.begin(), skipped.end(), name) == skipped.end())
                extra.push_back(name);
        if (missing.empty() && extra.empty() && misshapen.empty()) return;
        std::string text = files.origin() + ": the weights do not fit the config;";
        if (!missing.empty()) text += " missing: " + join(missing) + ";";
        if (!extra.empty()) text += " unexpected: " + join(extra) + ";";
        if (!misshapen.empty()) text += " wrong shape: " + join(misshapen) + ";";
        text.pop_back();
        throw format_error(text);
    }

    /// Layer 0 sees only the embeddings when positions are rotary, so its queries, keys and
    /// values (before rotation) depend on the token alone: one row per vocabulary entry,
    /// computed here once if the table is small (kFirstLayerTableBytes).
    void tabulate_first_layer() {
        const ModelSettings& s = settings_;
        const Index width = s.query_key_value_width();
        if (s.position_encoding != PositionEncoding::rotary ||
            std::size_t(s.vocabulary_size) * std::size_t(width) * sizeof(T) > kFirstLayerTableBytes)
            return;
        const Layer& first = layers_.front();
        const LayerDescription& described = s.layer(0);
        Matrix<T> normed(s.vocabulary_size, s.dimensions);
        Matrix<T> embedded(s.vocabulary_size, s.dimensions);
        for (Index v = 0; v < s.vocabulary_size; ++v) embed_into(int(v), embedded.row(v));
        if (!described.input_norms)
            normed = embedded;
        else if (described.norm == Norm::rms_norm)
            detail::rms_norm_into(embedded, first.attention_norm_weight, described.norm_epsilon, normed);
        else
            detail::layer_norm_into(embedded, first.attention_norm_weight, first.attention_norm_bias,
                                    described.norm_epsilon, normed);
        first_layer_qkv_.resize(s.vocabulary_size, width);
        if (first.query_key_value_bias.size() != 0) first_layer_qkv_.rowwise() = first.query_key_value_bias.transpose();
        detail::multiply_rows(normed, weights_of(0).query_key_value, first_layer_qkv_,
                              first.query_key_value_bias.size() != 0);
    }

    /// Layer l's large matrices as the products read them, float or 16-bit.
    using LayerWeights = LayerMatrices<detail::WeightRows<T>>;
    /// Layer l's large matrices as the products read them: in panels of T or of 16-bit
    /// numbers, or in GGUF blocks (those stored_quantized keeps in them).
    LayerWeights weights_of(std::size_t l) const {
        using Rows = detail::WeightRows<T>;
        LayerWeights out;
        for (LayerSlot slot : kMatrixSlots) {
            if (storage_ == WeightStorage::stored_16_bit) {
                out.matrix(slot) = Rows::of(half_layers_[l].matrix(slot));
                out.matrix(slot).bfloat16_activations = bfloat16_activations_;
            } else if (storage_ == WeightStorage::stored_quantized && !quantized_layers_[l].matrix(slot).empty())
                out.matrix(slot) = Rows::of(quantized_layers_[l].matrix(slot));
            else
                out.matrix(slot) = Rows::of(panel_layers_[l].matrix(slot));
        }
        return out;
    }
    /// U (C × V) as the products read it.
    detail::WeightRows<T> unembedding_rows() const {
        if (!quantized_unembedding_.empty()) return detail::WeightRows<T>::of(quantized_unembedding_);
        if (storage_ != WeightStorage::stored_16_bit) return detail::WeightRows<T>::of(unembedding_);
        detail::WeightRows<T> out = detail::WeightRows<T>::of(half_unembedding_);
        out.bfloat16_activations = bfloat16_activations_;
        return out;
    }
    /// row (1 × C) = E[id], token id's embedding, however it is kept.
    template <class Row>
    void embedding_row_into(int id, Row&& row) const {
        const detail::QuantizedMatrix& quantized =
            settings_.tied_embeddings ? quantized_unembedding_ : quantized_embedding_;
        if (!quantized.empty()) {  // stored_quantized, Model<float>: the row dequantized
            if constexpr (std::is_same_v<T, float>)
                detail::dequantize_row(quantized, Index(id), 0, settings_.dimensions, row.data());
        } else if (!settings_.tied_embeddings) {
            if (storage_ == WeightStorage::stored_16_bit)
                for (Index c = 0; c < settings_.dimensions; ++c) row(c) = T(half_embedding_(id, c));
            else
                row = embedding_.row(id);
        } else if (storage_ == WeightStorage::stored_16_bit) {  // E(id, c) = U(c, id)
            for (Index c = 0; c < settings_.dimensions; ++c) row(c) = T(half_unembedding_(c, id));
        } else {
            for (Index c = 0; c < settings_.dimensions; ++c) row(c) = *unembedding_.at(c, id);
        }
    }
    /// row (1 × C) = E[id] · embedding_scale, token id's embedding as the residual stream starts.
    template <class Row>
    void embed_into(int id, Row&& row) const {
        embedding_row_into(id, row);
        if (settings_.embedding_scale != 1.0) row *= T(settings_.embedding_scale);
    }

    static const char* storage_name(WeightStorage storage) {
        switch (storage) {
            case WeightStorage::converted:
                return "converted";
            case WeightStorage::stored_16_bit:
                return "stored_16_bit";
            case WeightStorage::stored_quantized:
                return "stored_quantized";
        }
        return "?";
    }

    /// The block format of a GGUF type name, or none (F32, F16, BF16).
    static std::optional<detail::QuantFormat> block_format(const std::string& type) {
        using detail::QuantFormat;
        for (const QuantFormat format : {QuantFormat::q8_0, QuantFormat::q4_0, QuantFormat::q4_1, QuantFormat::q5_0,
                                         QuantFormat::q5_1, QuantFormat::q4_k, QuantFormat::q5_k, QuantFormat::q6_k})
            if (type == detail::quant_format_name(format)) return format;
        return std::nullopt;
    }

    static std::string join(const std::vector<std::string>& parts) {
        std::string text;
        for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
        return text;
    }

    ModelSettings settings_;
    Tokenizer tokenizer_;
    std::vector<std::optional<Rope<T>>> ropes_;  // one per distinct rotation of the layers (empty: none)
    std::vector<std::size_t> rope_of_layer_;     // layer l's in ropes_
    Matrix<T> embedding_;                        // (V × C), untied and converted only: a tied model reads E from U
    detail::PanelMatrix<T> unembedding_;         // (C × V) in panels, unless kept in 16 bits or blocks below
    Matrix<T> position_embedding_;               // (longest × C), learned positions only
    Vector<T> final_norm_weight_, final_norm_bias_;
    std::vector<Layer> layers_;  // each layer's vectors; its matrices are below
    Matrix<T> first_layer_qkv_;  // (V × (H + 2 H_kv)·d): norm(E) · [Wq Wk Wv] + b of layer 0, or empty

    WeightStorage storage_ = WeightStorage::converted;
    bool bfloat16_activations_ = false;  // LoadOptions::bfloat16_activations
    bool bfloat16_attention_ = false;    // LoadOptions::bfloat16_attention, or bfloat16_activations
    void set_rounding(const LoadOptions& options) {
        bfloat16_activations_ = options.bfloat16_activations;
        bfloat16_attention_ = options.bfloat16_attention || options.bfloat16_activations;
    }
    // Each layer's large matrices in panels of T: all of them, but those kept in 16 bits or
    // GGUF blocks below (then empty here)
    std::vector<LayerMatrices<detail::PanelMatrix<T>>> panel_layers_;

    // WeightStorage::stored_16_bit: the large matrices in panels of 16-bit numbers
    detail::HalfFormat half_format_ = detail::HalfFormat::bfloat16;
    std::vector<LayerMatrices<detail::HalfMatrix>> half_layers_;
    detail::HalfMatrix half_embedding_;    // (V × C), untied only
    detail::HalfMatrix half_unembedding_;  // (C × V)

    // WeightStorage::stored_quantized: the large matrices in GGUF blocks, each (out × in) as the
    // file stores it, or empty where the matrix is in panels above (a tensor in F32, F16 or BF16)
    std::vector<LayerMatrices<detail::QuantizedMatrix>> quantized_layers_;
    detail::QuantizedMatrix quantized_embedding_;    // (V × C), untied only
    detail::QuantizedMatrix quantized_unembedding_;  // (V × C): Uᵀ as stored, E too if tied
};

// Defined outside the class, so not inline: where `extern template class Model<float>` is
// declared (the store examples, the test runner), the loaders are not compiled again; without
// it, gcc compiles an inline member for inlining even so.
template <class T>
Model<T> Model<T>::load(const std::filesystem::path& path, const LoadOptions& options) {
    if (options.weights != WeightStorage::converted && !std::is_same_v<T, float>)
        throw argument_error(detail::message("Model::load: WeightStorage::", storage_name(options.weights),
                                             " is for Model<float>; ", path.string(), " was asked for with ",
                                             sizeof(T) * 8, "-bit numbers"));
    if (options.bfloat16_activations && options.weights != WeightStorage::stored_16_bit)
        throw argument_error(
            detail::message("Model::load: LoadOptions::bfloat16_activations is for "
                            "WeightStorage::stored_16_bit; ",
                            path.string(), " was asked for with WeightStorage::", storage_name(options.weights)));
    std::error_code failed;
    const bool gguf = path.extension() == ".gguf" && !std::filesystem::is_directory(path, failed);
    if (!gguf && options.weights == WeightStorage::stored_quantized)
        throw argument_error(detail::message("Model::load: WeightStorage::stored_quantized is for GGUF files; ",
                                             path.string(), " is not a .gguf file"));
    Model model = [&] {
        if (gguf) return load_gguf(path, options);
        if (std::filesystem::exists(path / "manifest.json")) return load_store_model(path, options);
        if (std::filesystem::exists(path / "config.json")) return load_hugging_face(path, options);
        throw io_error(detail::message(path.string(),
                                       ": neither manifest.json (an attn model) nor config.json (a "
                                       "Hugging Face model) is there, and it is not a .gguf file"));
    }();
    if (options.bfloat16_activations && model.half_format_ != detail::HalfFormat::bfloat16)
        throw argument_error(detail::message("Model::load: LoadOptions::bfloat16_activations is for BF16 weights; ",
                                             path.string(), " holds ", detail::half_format_name(model.half_format_)));
    return model;
}

}  // namespace attn
