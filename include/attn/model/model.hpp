#pragma once
// A saved transformer, loaded: the store model or any model with the same manifest
// (tools/export.py writes them: manifest.json, model.safetensors, vocabulary.txt,
// merges.txt). Pre-norm layers with rotary positions in every head, a GELU MLP and tied
// embeddings:
//
//   x = E[ids]                                                  (n × C)
//   for each layer:
//     x = x + attention(layer_norm(x))                          (n × C)
//     x = x + mlp(layer_norm(x))                                (n × C)
//   logits = layer_norm(x) · Eᵀ                                 (n × vocabulary)
//
// Two forward passes compute it: reference_forward (model/reference_forward.hpp), written
// from the core's public steps one layer at a time, is the readable one; Model::forward
// (model/forward.hpp) is the fast one, tested equal to it.

#include <Eigen/Core>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/core/norm.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/tiles.hpp"
#include "attn/model/manifest.hpp"
#include "attn/model/safetensors.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/model/types.hpp"

namespace attn {

namespace detail {
template <class T>
class FastForward;
}

/// A loaded model, immutable after loading; its const methods are safe to call from
/// several threads at once.
template <class T>
class Model {
public:
    /// One layer's weights, (in × out) as the manifest's weight_layout "in_out" says.
    struct Layer {
        Vector<T> attention_norm_weight, attention_norm_bias;  // C each
        Matrix<T> query, key, value, output;                   // (C × C) each
        Vector<T> mlp_norm_weight, mlp_norm_bias;              // C each
        Matrix<T> up;                                          // (C × mlp width)
        Vector<T> up_bias;                                     // mlp width
        Matrix<T> down;                                        // (mlp width × C)
        Vector<T> down_bias;                                   // C
    };

    /// Loads directory/manifest.json and the files it names. Throws io_error for a missing
    /// file and format_error for anything malformed, unsupported, missing or misshapen,
    /// naming the file, setting or tensor.
    static Model load(const std::filesystem::path& directory) {
        const Manifest manifest = read_manifest(directory);
        Model model(manifest.settings, Tokenizer::load(manifest.vocabulary, manifest.merges));
        if (model.tokenizer_.size() != manifest.settings.vocabulary_size)
            throw format_error(detail::message(manifest.vocabulary, ": ", model.tokenizer_.size(), " tokens, but ",
                                               (directory / "manifest.json").string(), " declares vocabulary_size ",
                                               manifest.settings.vocabulary_size));
        model.read_weights(SafeTensors::open(manifest.weights));
        return model;
    }

    const ModelSettings& settings() const { return settings_; }
    const Tokenizer& tokenizer() const { return tokenizer_; }
    /// The token embedding E, (vocabulary × C); tied: the unembedding is Eᵀ.
    const Matrix<T>& embedding() const { return embedding_; }
    /// Layer l's weights, 0 ≤ l < layers.
    const Layer& layer(Index l) const {
        detail::check_index("Model::layer", "layer", l, settings_.layers);
        return layers_[static_cast<std::size_t>(l)];
    }
    /// The final norm's weight and bias, C each.
    const Vector<T>& final_norm_weight() const { return final_norm_weight_; }
    const Vector<T>& final_norm_bias() const { return final_norm_bias_; }
    /// The rotary positions of every head (head size, pairing and base from the manifest).
    const Rope<T>& rope() const { return rope_; }

    /// `<s> name <sep> description </s>` as ids, truncated to the context length.
    std::vector<int> product_ids(std::string_view name, std::string_view description) const {
        return tokenizer_.product_ids(name, description, static_cast<int>(settings_.longest));
    }

    /// `<s> name <sep> description`, without `</s>`: a prompt to continue (generate.hpp),
    /// truncated to the context length.
    std::vector<int> prompt_ids(std::string_view name, std::string_view description = {}) const {
        return tokenizer_.prompt_ids(name, description, static_cast<int>(settings_.longest));
    }

    /// ids: 1 … longest token ids → logits (positions × vocabulary) and, if asked,
    /// attention (layers × heads × positions × positions). The fast pass (model/forward.hpp);
    /// the same numbers as reference_forward to rounding, bit-identical for every thread count.
    ForwardResult<T> forward(const std::vector<int>& ids, const ForwardOptions& options = {}) const;

    /// forward into `result`, whose storage is reused: the same bits as forward. logits,
    /// attention (layers × heads × (positions × positions)), log_sum_exp, queries_keys and
    /// statistics are written where they are when their shapes fit this call (texts of one
    /// length in a loop), and resized otherwise: the result is the caller's buffer, and a text
    /// of another length is no error. What options do not ask for is dropped. result.workspace
    /// keeps the pass's working memory, so that a repeated call of the same length, with
    /// threads = 1 or options.workers, allocates nothing (ablated heads and statistics'
    /// markers included).
    void forward_into(const std::vector<int>& ids, const ForwardOptions& options, ForwardResult<T>& result) const;

private:
    friend class detail::FastForward<T>;

    Model(ModelSettings settings, Tokenizer tokenizer)
        : settings_(std::move(settings)),
          tokenizer_(std::move(tokenizer)),
          rope_(settings_.head_size, settings_.rope_pairing, settings_.rope_base, settings_.longest) {}

    void read_weights(const SafeTensors& file) {
        const Index c = settings_.dimensions, mlp = settings_.mlp_width;
        std::map<std::string, std::vector<std::int64_t>> expected{
            {"embedding", {settings_.vocabulary_size, c}}, {"final_norm.weight", {c}}, {"final_norm.bias", {c}}};
        for (Index l = 0; l < settings_.layers; ++l) {
            const std::string prefix = detail::message("layers.", l, ".");
            for (const char* name :
                 {"attention_norm.weight", "attention_norm.bias", "mlp_norm.weight", "mlp_norm.bias", "mlp.down.bias"})
                expected[prefix + name] = {c};
            for (const char* name : {"attention.query", "attention.key", "attention.value", "attention.output"})
                expected[prefix + name] = {c, c};
            expected[prefix + "mlp.up.weight"] = {c, mlp};
            expected[prefix + "mlp.up.bias"] = {mlp};
            expected[prefix + "mlp.down.weight"] = {mlp, c};
        }
        std::vector<std::string> missing, extra, misshapen;
        for (const auto& [name, shape] : expected) {
            if (!file.contains(name))
                missing.push_back(name);
            else if (file.info(name).shape != shape)
                misshapen.push_back(detail::message(name, " is ", detail::shape_text(file.info(name).shape),
                                                    ", expected ", detail::shape_text(shape)));
        }
        for (const std::string& name : file.names())
            if (!expected.count(name)) extra.push_back(name);
        if (!missing.empty() || !extra.empty() || !misshapen.empty()) {
            std::string text = file.source() + ": the weights do not fit the manifest;";
            if (!missing.empty()) text += " missing: " + join(missing) + ";";
            if (!extra.empty()) text += " unexpected: " + join(extra) + ";";
            if (!misshapen.empty()) text += " wrong shape: " + join(misshapen) + ";";
            text.pop_back();
            throw format_error(text);
        }
        // Weights that are not finite would only surface as NaN logits (or a numeric_error in
        // attention, far from its cause): refuse them here, naming the tensor.
        const auto finite = [&](const std::string& name, auto values) {
            if (!values.allFinite())
                throw format_error(detail::message(file.source(), ": tensor '", name, "' holds NaN or infinity",
                                                   sizeof(T) < 8 ? " (in float)" : ""));
            return values;
        };
        const auto matrix = [&](const std::string& name) { return finite(name, file.matrix<T>(name)); };
        const auto vector = [&](const std::string& name) { return finite(name, file.vector<T>(name)); };
        embedding_ = matrix("embedding");
        final_norm_weight_ = vector("final_norm.weight");
        final_norm_bias_ = vector("final_norm.bias");
        for (Index l = 0; l < settings_.layers; ++l) {
            const std::string prefix = detail::message("layers.", l, ".");
            Layer layer;
            layer.attention_norm_weight = vector(prefix + "attention_norm.weight");
            layer.attention_norm_bias = vector(prefix + "attention_norm.bias");
            layer.query = matrix(prefix + "attention.query");
            layer.key = matrix(prefix + "attention.key");
            layer.value = matrix(prefix + "attention.value");
            layer.output = matrix(prefix + "attention.output");
            layer.mlp_norm_weight = vector(prefix + "mlp_norm.weight");
            layer.mlp_norm_bias = vector(prefix + "mlp_norm.bias");
            layer.up = matrix(prefix + "mlp.up.weight");
            layer.up_bias = vector(prefix + "mlp.up.bias");
            layer.down = matrix(prefix + "mlp.down.weight");
            layer.down_bias = vector(prefix + "mlp.down.bias");
            Matrix<T> query_key_value(c, 3 * c);  // (C × 3C): one product for all three
            query_key_value << layer.query, layer.key, layer.value;
            query_key_value_.push_back(std::move(query_key_value));
            layers_.push_back(std::move(layer));
        }
        unembedding_ = embedding_.transpose();
        // Layer 0 sees only the embeddings, so its queries, keys and values (before rotation)
        // depend on the token alone: one row per vocabulary entry, computed here once.
        const Layer& first = layers_.front();
        Matrix<T> normed(settings_.vocabulary_size, c);
        detail::layer_norm_into(embedding_, first.attention_norm_weight, first.attention_norm_bias,
                                settings_.norm_epsilon, normed);
        first_layer_qkv_.resize(settings_.vocabulary_size, 3 * c);
        detail::multiply_rows(normed, query_key_value_.front(), first_layer_qkv_, false);
    }

    static std::string join(const std::vector<std::string>& parts) {
        std::string text;
        for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
        return text;
    }

    ModelSettings settings_;
    Tokenizer tokenizer_;
    Rope<T> rope_;
    Matrix<T> embedding_;  // (vocabulary × C)
    Vector<T> final_norm_weight_, final_norm_bias_;
    std::vector<Layer> layers_;
    // The same weights laid out for the fast forward's products (row-major, in × out).
    std::vector<Matrix<T>> query_key_value_;  // per layer (C × 3C): [Wq Wk Wv]
    Matrix<T> unembedding_;                   // (C × vocabulary) = Eᵀ
    Matrix<T> first_layer_qkv_;               // (vocabulary × 3C): layer_norm(E) · [Wq Wk Wv] of layer 0
};

}  // namespace attn

#include "attn/model/forward.hpp"  // Model::forward
