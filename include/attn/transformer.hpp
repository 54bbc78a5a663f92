#pragma once
// The store model: a small pre-norm transformer loaded from a directory written by
// tools/export.py (manifest.json, model.safetensors, vocabulary.txt, merges.txt), and
// a forward pass that returns logits and, on request, every head's attention.
//
// One layer, top to bottom (positions n, width C = heads · head size), as the chapter
// writes it with this library's public steps:
//   h = layer_norm(x)                                      (n × C)
//   q, k, v = project_qkv(h, Wq, Wk, Wv), split_heads(·)   heads × (n × head size)
//   q, k = rope(q), rope(k)                                in every head
//   w = softmax(causal_mask(q kᵀ / √head size))            heads × (n × n)
//   x = x + project(merge_heads(w · v), Wo)                (n × C)
//   x = x + project(gelu(project(layer_norm(x), W1, b1)), W2, b2)
// and logits = layer_norm(x) · Eᵀ with the tied embedding E (vocabulary × C).
//
// forward() computes exactly that with fewer copies: one (C × 3C) product for q, k and
// v, whose heads the fused attention kernel reads in place and writes side by side into
// one (n × C) matrix, and every product on the register-tiled kernel (detail/tiles.hpp)
// into buffers allocated once per call. With threads > 1 each thread owns a share of the
// positions for the whole pass, attention included (causal queries read only earlier keys).

#include <nlohmann/json.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attn/activation.hpp"
#include "attn/attention.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/parallel.hpp"
#include "attn/detail/tiles.hpp"
#include "attn/heads.hpp"
#include "attn/norm.hpp"
#include "attn/projection.hpp"
#include "attn/rope.hpp"
#include "attn/safetensors.hpp"
#include "attn/tokenizer.hpp"
#include "attn/types.hpp"
#include "attn/workers.hpp"

namespace attn {

/// What manifest.json's "settings" declare. Only what the forward pass implements is accepted.
struct ModelSettings {
    Index layers = 0;
    Index heads = 0;
    Index dimensions = 0;  ///< model width C
    Index head_size = 0;   ///< C / heads
    Index mlp_width = 0;
    Index longest = 0;  ///< context length: the most positions a forward pass takes
    Index vocabulary_size = 0;
    double norm_epsilon = 1e-5;
    double rope_base = 10000.0;
    RopePairing rope_pairing = RopePairing::rotate_half;
    std::string activation;  ///< "gelu_erf" or "gelu_tanh"
};

/// Every layer's attention weights: layers × heads × (positions × positions).
template <class T>
class ModelAttention {
public:
    ModelAttention() = default;
    explicit ModelAttention(std::vector<AttentionWeights<T>> layers) : layers_(std::move(layers)) {}

    Index layers() const { return static_cast<Index>(layers_.size()); }
    Index heads() const { return layers_.empty() ? 0 : layers_.front().heads(); }
    Index positions() const { return layers_.empty() ? 0 : layers_.front().positions(); }
    bool empty() const { return layers_.empty(); }

    /// Layer l's weights, heads × (positions × positions); layers count from 0.
    const AttentionWeights<T>& layer(Index l) const {
        detail::check_index("ModelAttention::layer", "layer", l, layers());
        return layers_[static_cast<std::size_t>(l)];
    }
    /// Head h of layer l, (positions × positions): row i is what position i attends to.
    typename AttentionWeights<T>::ConstHeadMap head(Index l, Index h) const { return layer(l).head(h); }
    /// Weight of query position i on key position j in head h of layer l (unchecked).
    T operator()(Index l, Index h, Index i, Index j) const { return layers_[static_cast<std::size_t>(l)](h, i, j); }

private:
    std::vector<AttentionWeights<T>> layers_;
};

/// A head, by 0-based layer and head.
struct HeadId {
    Index layer = 0;
    Index head = 0;
    friend bool operator<(const HeadId& a, const HeadId& b) {
        return std::pair(a.layer, a.head) < std::pair(b.layer, b.head);
    }
};

struct ForwardOptions {
    bool keep_attention = false;   ///< return every layer's attention weights
    std::vector<HeadId> ablate{};  ///< heads whose output is zeroed before the output projection
    /// Threads for the whole pass: 1 runs on the calling thread; 0 uses one per hardware
    /// thread. Each owns a share of the positions for the whole pass, at
    /// least 16 positions each. Results are bit-identical for every thread count.
    int threads = 1;
    /// Threads kept by the caller (attn/workers.hpp): if set, the pass runs on them, as many
    /// as workers->size() (at least 16 positions each), and `threads` is not used. Saves
    /// starting and joining threads in every call; the results are the same bits.
    Workers* workers = nullptr;
};

template <class T>
struct ForwardResult {
    Matrix<T> logits;             ///< (positions × vocabulary): next-token scores at every position
    ModelAttention<T> attention;  ///< layers × heads × (positions × positions), if kept
};

/// The store model (or any model with the same manifest), immutable after loading; its
/// const methods are safe to call from several threads at once.
template <class T>
class Model {
public:
    struct Layer {
        Vector<T> attention_norm_weight, attention_norm_bias;
        Matrix<T> query, key, value, output;  // (C × C) each, (in × out)
        Vector<T> mlp_norm_weight, mlp_norm_bias;
        Matrix<T> up;  // (C × mlp width)
        Vector<T> up_bias;
        Matrix<T> down;  // (mlp width × C)
        Vector<T> down_bias;
    };

    /// Loads directory/manifest.json and the files it names. Throws io_error for a missing
    /// file and format_error for anything malformed, unsupported, missing or misshapen,
    /// naming the file, setting or tensor.
    static Model load(const std::filesystem::path& directory) {
        const std::filesystem::path manifest_path = directory / "manifest.json";
        const nlohmann::json manifest = read_json(manifest_path);
        const std::string file = manifest_path.string();
        if (!manifest.is_object()) throw format_error(file + ": the manifest must be a JSON object");
        ModelSettings settings = parse_settings(manifest, file);

        const nlohmann::json& tokenizer = member(manifest, "tokenizer", file);
        const std::string vocabulary = string_member(tokenizer, "vocabulary", file, "tokenizer.vocabulary");
        const std::string merges = string_member(tokenizer, "merges", file, "tokenizer.merges");
        const std::string weights = string_member(manifest, "weights", file, "weights");

        Model model(settings, Tokenizer::load(directory / vocabulary, directory / merges));
        if (model.tokenizer_.size() != settings.vocabulary_size)
            throw format_error(detail::message(directory / vocabulary, ": ", model.tokenizer_.size(), " tokens, but ",
                                               file, " declares vocabulary_size ", settings.vocabulary_size));
        model.read_weights(SafeTensors::open(directory / weights));
        return model;
    }

    const ModelSettings& settings() const { return settings_; }
    const Tokenizer& tokenizer() const { return tokenizer_; }
    const Matrix<T>& embedding() const { return embedding_; }
    const Layer& layer(Index l) const {
        detail::check_index("Model::layer", "layer", l, settings_.layers);
        return layers_[static_cast<std::size_t>(l)];
    }

    /// `<s> name <sep> description </s>` as ids, truncated to the context length.
    std::vector<int> product_ids(std::string_view name, std::string_view description) const {
        return tokenizer_.product_ids(name, description, static_cast<int>(settings_.longest));
    }

    /// ids: 1 … longest token ids → logits (positions × vocabulary) and, if asked,
    /// attention (layers × heads × positions × positions).
    ForwardResult<T> forward(const std::vector<int>& ids, const ForwardOptions& options = {}) const {
        check_ids(ids);
        std::vector<std::vector<bool>> silenced(static_cast<std::size_t>(settings_.layers),
                                                std::vector<bool>(static_cast<std::size_t>(settings_.heads)));
        for (const HeadId& id : options.ablate) {
            detail::check_index("Model::forward", "ablated layer", id.layer, settings_.layers);
            detail::check_index("Model::forward", "ablated head", id.head, settings_.heads);
            silenced[std::size_t(id.layer)][std::size_t(id.head)] = true;
        }
        const Index n = static_cast<Index>(ids.size());
        const int threads =
            options.workers ? options.workers->size() : detail::resolve_threads("Model::forward", options.threads);
        const int workers = static_cast<int>(std::min<Index>(threads, std::max<Index>(1, n / kPositionsPerThread)));

        ForwardResult<T> result;
        Pass pass(settings_, n, result.logits);
        std::vector<AttentionWeights<T>> kept;
        if (options.keep_attention)
            kept.assign(std::size_t(settings_.layers), AttentionWeights<T>(settings_.heads, n, n));

        // Each worker owns positions [first, last) for the layers, attention included: causal
        // attention for those queries reads only keys and values 0 … last − 1. So its rows of
        // every buffer stay in its own cache, and one barrier per layer (every position's keys
        // and values are ready) is all the workers share. qkv alternates between two buffers,
        // so a worker projecting layer l + 1 never overwrites keys another is still reading.
        // The unembedding has no attention in it: after one more barrier, its rows are shared
        // out evenly.
        auto pass_share = [&](int worker, detail::Team& team) {
            const std::vector<Index> bounds = share_positions(n, team.size());
            const Index first = bounds[std::size_t(worker)], last = bounds[std::size_t(worker) + 1];
            first_layer_qkv_rows(pass, ids, first, last);
            for (std::size_t l = 0; l < layers_.size(); ++l) {
                team.sync();  // every position's keys and values of layer l are ready
                attend_rows(pass, l, first, last, options.keep_attention ? &kept[l] : nullptr, silenced[l]);
                finish_layer_rows(pass, l, first, last - first);
                if (l + 1 < layers_.size()) project_qkv_rows(pass, l + 1, first, last - first);
            }
            team.sync();  // every position's residual stream is final
            const Index from = n * worker / team.size(), to = n * (worker + 1) / team.size();
            logits_rows(pass, from, to - from);
        };
        if (options.workers)
            detail::run_team_on(*options.workers, workers, pass_share);
        else
            detail::run_team(workers, pass_share);
        if (options.keep_attention) result.attention = ModelAttention<T>(std::move(kept));
        return result;
    }

private:
    Model(ModelSettings settings, Tokenizer tokenizer)
        : settings_(std::move(settings)),
          tokenizer_(std::move(tokenizer)),
          rope_(settings_.head_size, settings_.rope_pairing, settings_.rope_base, settings_.longest) {}

    /// Fewest positions per thread: below this, starting a thread costs more than it saves.
    static constexpr Index kPositionsPerThread = 16;
    /// How much more a FLOP of attention costs than a FLOP of the products (short rows of
    /// keys, exponentials, another thread's keys): measured on the store model at 160
    /// positions with 2 threads, where 2 evens the threads' time between barriers (4 left the
    /// second thread waiting ~40 µs per layer).
    static constexpr double kAttentionCost = 2.0;

    /// One forward pass's working memory, allocated once by the calling thread.
    struct Pass {
        Pass(const ModelSettings& s, Index n, Matrix<T>& logits_out)
            : x(n, s.dimensions),
              normed(n, s.dimensions),
              qkv{Matrix<T>(n, 3 * s.dimensions), Matrix<T>(n, 3 * s.dimensions)},
              attended(n, s.dimensions),
              hidden(n, s.mlp_width),
              logits(logits_out) {
            logits.resize(n, s.vocabulary_size);
        }
        Matrix<T> x;         // (n × C) the residual stream
        Matrix<T> normed;    // (n × C) layer_norm(x)
        Matrix<T> qkv[2];    // (n × 3C) queries | keys | values, heads side by side; layer l in qkv[l % 2]
        Matrix<T> attended;  // (n × C) every head's output, side by side
        Matrix<T> hidden;    // (n × mlp width)
        Matrix<T>& logits;   // (n × vocabulary)
    };

    template <class D>
    void activate(D& block) const {
        if (settings_.activation == "gelu_tanh")
            gelu_tanh_in_place(block);
        else
            gelu_in_place(block);
    }

    /// Positions [first, last): x = the tokens' embeddings, and layer 0's q, k, v looked up in
    /// first_layer_qkv_ (what project_qkv_rows would compute for each token), then rotated.
    void first_layer_qkv_rows(Pass& pass, const std::vector<int>& ids, Index first, Index last) const {
        Matrix<T>& qkv = pass.qkv[0];
        for (Index i = first; i < last; ++i) {
            const Index id = ids[std::size_t(i)];
            pass.x.row(i) = embedding_.row(id);
            qkv.row(i) = first_layer_qkv_.row(id);
        }
        rotate_rows(qkv, first, last - first);
    }

    /// Rotary positions for the queries and keys at positions [first, first + rows) of qkv.
    void rotate_rows(Matrix<T>& qkv, Index first, Index rows) const {
        const Index c = settings_.dimensions, d = settings_.head_size;
        for (Index h = 0; h < settings_.heads; ++h) {
            rope_.apply(qkv.block(first, h * d, rows, d), first);
            rope_.apply(qkv.block(first, c + h * d, rows, d), first);
        }
    }

    /// Positions [first, first + rows): qkv = layer_norm(x) · [Wq Wk Wv] of layer l, queries and
    /// keys rotated.
    void project_qkv_rows(Pass& pass, std::size_t l, Index first, Index rows) const {
        const Layer& p = layers_[l];
        auto normed = pass.normed.middleRows(first, rows);  // (rows × C)
        detail::layer_norm_into(pass.x.middleRows(first, rows), p.attention_norm_weight, p.attention_norm_bias,
                                settings_.norm_epsilon, normed);
        Matrix<T>& qkv = pass.qkv[l % 2];
        detail::multiply_rows(normed, query_key_value_[l], qkv.middleRows(first, rows), false);
        rotate_rows(qkv, first, rows);
    }

    /// Positions [first, first + rows), after layer l's attention: x += attended · Wo, then
    /// x += gelu(layer_norm(x) · W1 + b1) · W2 + b2.
    void finish_layer_rows(Pass& pass, std::size_t l, Index first, Index rows) const {
        const Layer& p = layers_[l];
        auto x = pass.x.middleRows(first, rows);            // (rows × C)
        auto normed = pass.normed.middleRows(first, rows);  // (rows × C)
        auto hidden = pass.hidden.middleRows(first, rows);  // (rows × mlp width)
        detail::multiply_rows(pass.attended.middleRows(first, rows), p.output, x, true);
        detail::layer_norm_into(x, p.mlp_norm_weight, p.mlp_norm_bias, settings_.norm_epsilon, normed);
        hidden.rowwise() = p.up_bias.transpose();
        detail::multiply_rows(normed, p.up, hidden, true);
        activate(hidden);
        x.rowwise() += p.down_bias.transpose();
        detail::multiply_rows(hidden, p.down, x, true);
    }

    /// Positions [first, first + rows): logits = layer_norm(x) · Eᵀ.
    void logits_rows(Pass& pass, Index first, Index rows) const {
        auto normed = pass.normed.middleRows(first, rows);
        detail::layer_norm_into(pass.x.middleRows(first, rows), final_norm_weight_, final_norm_bias_,
                                settings_.norm_epsilon, normed);
        detail::multiply_rows(normed, unembedding_, pass.logits.middleRows(first, rows), false);
    }

    /// Layer l's attention in every head for the queries at positions [first, last), which
    /// see keys 0 … last − 1: qkv → their rows of attended (silenced heads' columns zero)
    /// and, if kept, their rows of every head's weights.
    void attend_rows(Pass& pass, std::size_t l, Index first, Index last, AttentionWeights<T>* weights,
                     const std::vector<bool>& silenced) const {
        if (first == last) return;
        const Matrix<T>& qkv = pass.qkv[l % 2];
        const Index n = qkv.rows(), c = settings_.dimensions, d = settings_.head_size;
        const AttentionOptions<T> options;  // causal; queries and keys are already rotated
        detail::FusedProblem<T> problem = detail::fused_problem(settings_.heads, last - first, last, d, d, options);
        problem.first_position = first;
        problem.first_row = first;  // errors name the position, whichever thread finds them
        for (Index h = 0; h < settings_.heads; ++h) {
            const T* keys = qkv.data() + c + h * d;  // row stride 3C
            problem.inputs.push_back({{qkv.data() + first * 3 * c + h * d, 3 * c}, {keys, 3 * c}, {keys + c, 3 * c}});
        }
        problem.outputs = pass.attended.data() + first * c;
        problem.output_row_stride = c;
        problem.output_head_stride = d;
        if (weights) {
            problem.weights = weights->data() + first * n;
            problem.weights_row_stride = n;
            problem.weights_head_stride = n * n;
            problem.weights_zeroed = true;  // AttentionWeights start zero-filled
        }
        detail::fused_attention(problem);
        for (Index h = 0; h < settings_.heads; ++h)
            if (silenced[std::size_t(h)]) pass.attended.block(first, h * d, last - first, d).setZero();
    }

    /// Boundaries 0 = b[0] ≤ … ≤ b[workers] = n of each worker's positions in the layers, cut so
    /// that the work is even: every position costs the same in the products, and a later one
    /// more in causal attention (it sees more keys), so earlier shares are a little longer.
    std::vector<Index> share_positions(Index n, int workers) const {
        // FLOPs per position ÷ 2C in the products of the layers (layer 0's q, k, v are looked up)
        const double per_position =
            double(settings_.layers) * double(4 * settings_.dimensions + 2 * settings_.mlp_width) -
            double(3 * settings_.dimensions);
        // attention's FLOPs per visible key (4C per layer) ÷ 2C, weighted by kAttentionCost
        const double per_key = double(settings_.layers) * 2.0 * kAttentionCost;
        auto cost_before = [&](Index i) { return per_position * double(i) + per_key * double(i) * double(i + 1) / 2; };
        std::vector<Index> bounds(std::size_t(workers) + 1, n);
        bounds[0] = 0;
        Index i = 0;
        for (int w = 1; w < workers; ++w) {
            const double target = cost_before(n) * double(w) / double(workers);
            while (i < n && cost_before(i + 1) <= target) ++i;
            bounds[std::size_t(w)] = std::max(i, bounds[std::size_t(w) - 1]);
        }
        return bounds;
    }

    void check_ids(const std::vector<int>& ids) const {
        if (ids.empty()) throw argument_error("Model::forward: ids is empty; a text has at least one token");
        if (static_cast<Index>(ids.size()) > settings_.longest)
            throw argument_error(detail::message("Model::forward: ", ids.size(), " ids, but the model's context (",
                                                 "longest) is ", settings_.longest, " positions"));
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (ids[i] < 0 || ids[i] >= settings_.vocabulary_size)
                throw argument_error(detail::message("Model::forward: ids[", i, "] = ", ids[i],
                                                     " is not a token id (vocabulary of ", settings_.vocabulary_size,
                                                     ")"));
    }

    static nlohmann::json read_json(const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw io_error(detail::message(path.string(), ": cannot open the model manifest"));
        nlohmann::json value = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (value.is_discarded()) throw format_error(detail::message(path.string(), ": not valid JSON"));
        return value;
    }

    static const nlohmann::json& member(const nlohmann::json& object, const char* key, const std::string& file,
                                        const char* label = nullptr) {
        const auto it = object.find(key);
        if (it == object.end()) throw format_error(detail::message(file, ": missing \"", label ? label : key, "\""));
        return *it;
    }

    static std::string string_member(const nlohmann::json& object, const char* key, const std::string& file,
                                     const char* label) {
        const nlohmann::json& value = member(object, key, file, label);
        if (!value.is_string()) throw format_error(detail::message(file, ": \"", label, "\" must be a string"));
        return value.get<std::string>();
    }

    static Index positive_integer(const nlohmann::json& settings, const char* key, const std::string& file) {
        const nlohmann::json& value = member(settings, key, file);
        if (!value.is_number_integer() || value.get<std::int64_t>() <= 0 || value.get<std::int64_t>() > (1 << 24))
            throw format_error(
                detail::message(file, ": settings.", key, " must be a positive integer, got ", value.dump()));
        return static_cast<Index>(value.get<std::int64_t>());
    }

    static double positive_number(const nlohmann::json& settings, const char* key, const std::string& file) {
        const nlohmann::json& value = member(settings, key, file);
        if (!value.is_number() || !(value.get<double>() > 0.0) || !std::isfinite(value.get<double>()))
            throw format_error(
                detail::message(file, ": settings.", key, " must be a positive number, got ", value.dump()));
        return value.get<double>();
    }

    static void expect_setting(const nlohmann::json& settings, const char* key, const nlohmann::json& supported,
                               const std::string& file) {
        const nlohmann::json& value = member(settings, key, file);
        if (value != supported)
            throw format_error(detail::message(file, ": settings.", key, " = ", value.dump(),
                                               " is not supported (attn implements ", supported.dump(), ")"));
    }

    static ModelSettings parse_settings(const nlohmann::json& manifest, const std::string& file) {
        const nlohmann::json& s = member(manifest, "settings", file);
        if (!s.is_object()) throw format_error(file + ": \"settings\" must be an object");
        ModelSettings settings;
        settings.layers = positive_integer(s, "layers", file);
        settings.heads = positive_integer(s, "heads", file);
        settings.dimensions = positive_integer(s, "dimensions", file);
        settings.head_size = positive_integer(s, "head_size", file);
        settings.mlp_width = positive_integer(s, "mlp_width", file);
        settings.longest = positive_integer(s, "longest", file);
        settings.vocabulary_size = positive_integer(s, "vocabulary_size", file);
        settings.norm_epsilon = positive_number(s, "norm_epsilon", file);
        settings.rope_base = positive_number(s, "rope_base", file);
        if (settings.heads * settings.head_size != settings.dimensions)
            throw format_error(detail::message(file, ": settings.heads (", settings.heads, ") × head_size (",
                                               settings.head_size, ") must equal dimensions (", settings.dimensions,
                                               ")"));
        if (settings.head_size % 2 != 0)
            throw format_error(detail::message(file, ": settings.head_size must be even for rotary positions"));
        expect_setting(s, "norm", "layernorm", file);
        expect_setting(s, "attention_bias", false, file);
        expect_setting(s, "tied_embeddings", true, file);
        expect_setting(s, "weight_layout", "in_out", file);
        const nlohmann::json& pairing = member(s, "rope_pairing", file);
        if (pairing == "rotate_half")
            settings.rope_pairing = RopePairing::rotate_half;
        else if (pairing == "interleaved")
            settings.rope_pairing = RopePairing::interleaved;
        else
            throw format_error(detail::message(file, ": settings.rope_pairing = ", pairing.dump(),
                                               " is not supported (\"rotate_half\" or \"interleaved\")"));
        const nlohmann::json& activation = member(s, "activation", file);
        if (activation != "gelu_erf" && activation != "gelu_tanh")
            throw format_error(detail::message(file, ": settings.activation = ", activation.dump(),
                                               " is not supported (\"gelu_erf\" or \"gelu_tanh\")"));
        settings.activation = activation.get<std::string>();
        return settings;
    }

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
    // The same weights laid out for the forward pass's products (row-major, in × out).
    std::vector<Matrix<T>> query_key_value_;  // per layer (C × 3C): [Wq Wk Wv]
    Matrix<T> unembedding_;                   // (C × vocabulary) = Eᵀ
    Matrix<T> first_layer_qkv_;               // (vocabulary × 3C): layer_norm(E) · [Wq Wk Wv] of layer 0
};

}  // namespace attn
