#pragma once
// Looking inside a forward pass and changing it, as TransformerLens does in Python:
//   run_with_hooks            a forward pass that keeps the named activations (only those) and
//                             applies interventions (activations.hpp has the names)
//   logit_attribution         direct logit attribution: each head's, each MLP's and the
//                             embeddings' share of a logit (difference), through the final
//                             norm with its scale frozen
//   logit_lens                the final norm and the unembedding applied after every layer
//   patch_heads, patch_residual   activation patching from a clean run into a corrupted one,
//                             normalised so that 0 is the corrupted run and 1 the clean one
//
// All run on the fast forward (model/forward.hpp), on any number of threads with the same
// bits. A run with hooks computes exactly what Model::forward computes: keeping activations
// changes no bit, and replacing one with its own value changes no bit either.

#include <Eigen/Core>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/norm.hpp"
#include "attn/core/softmax.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/hooks/activations.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"
#include "attn/threads.hpp"

namespace attn {

/// What run_with_hooks keeps and changes, besides the forward pass's own options.
template <class T>
struct HookOptions {
    ForwardOptions forward;                      ///< threads, ablation, attention as for Model::forward
    std::vector<std::string> keep;               ///< activation names to keep; "*" keeps every one
    std::vector<Index> positions;                ///< the rows kept of each (all if empty)
    std::vector<Intervention<T>> interventions;  ///< applied in the order given, where they occur
};

template <class T>
struct HookedResult {
    ForwardResult<T> result;   ///< logits (and attention, …) as Model::forward returns them
    ActivationCache<T> cache;  ///< the kept activations, by name
};

namespace detail {

/// Runs a pass with `setup` (hooks, resumption) on the options' threads, into `result`, whose
/// storage (attention weights included) and working memory are reused as Model::forward_into's.
template <class T>
void run_pass(const Model<T>& model, const std::vector<int>& ids, const ForwardOptions& options,
              ForwardResult<T>& result, const PassSetup<T>& setup, const char* function) {
    FastForward<T>(model, ids, options, result, setup)
        .run(options.threads.kept(), detail::available_threads(options.threads, function));
}

}  // namespace detail

/// run_with_hooks into `run`, whose storage is reused: activations kept again with the same
/// shapes, the logits and the attention weights (keep_attention) are written where they are, as
/// Model::forward_into does (no fresh pages in a loop over texts of one length); activations no
/// longer kept are dropped.
template <class T>
void run_with_hooks_into(const Model<T>& model, const std::vector<int>& ids, const HookOptions<T>& options,
                         HookedResult<T>& run) {
    detail::check_token_ids("run_with_hooks", model.settings(), ids);
    if (options.forward.keep_log_sum_exp || options.forward.statistics)
        throw argument_error("run_with_hooks: keep_log_sum_exp and statistics are Model::forward's options");
    detail::Hooks<T> hooks("run_with_hooks", model.settings(), Index(ids.size()), options.keep, options.positions,
                           options.interventions, run.cache);
    detail::PassSetup<T> setup;
    setup.hooks = &hooks;
    detail::run_pass(model, ids, options.forward, run.result, setup, "run_with_hooks");
    hooks.finish();
}

/// A forward pass over ids (1 … context token ids) that keeps options.keep's activations
/// (n × width each, or the rows of options.positions) and applies options.interventions.
/// Bad names, layers, heads, positions or value shapes are argument_error / shape_error
/// before anything runs.
template <class T>
HookedResult<T> run_with_hooks(const Model<T>& model, const std::vector<int>& ids, const HookOptions<T>& options = {}) {
    HookedResult<T> run;
    run_with_hooks_into(model, ids, options, run);
    run.result.workspace = {};  // as Model::forward: the numbers, not the pass's memory
    return run;
}

/// The activations logit_attribution reads, by name (with "*" all).
inline std::vector<std::string> attribution_activations(const ModelSettings& s) {
    std::vector<std::string> names{"hook_embed", "ln_final.hook_scale"};
    if (s.position_encoding == PositionEncoding::learned) names.push_back("hook_pos_embed");
    if (s.logit_cap > 0.0)  // the metric before the final soft cap (see logit_attribution)
        names.push_back(activation_name({Point::resid_post, s.layers - 1}));
    for (Index l = 0; l < s.layers; ++l) {
        if (s.layer(l).norms_around_blocks()) {  // the blocks' outputs, normalised already (Gemma)
            for (Point point : {Point::attn_out, Point::mlp_out}) names.push_back(activation_name({point, l}));
            continue;
        }
        if (s.layer(l).output_norms) {  // the blocks' outputs and their norms' divisors (see logit_attribution)
            for (Point point : {Point::attn_out, Point::ln1_scale, Point::mlp_out, Point::ln2_scale})
                names.push_back(activation_name({point, l}));
            continue;
        }
        names.push_back(activation_name({Point::result, l}));
        names.push_back(activation_name({Point::mlp_out, l}));
    }
    return names;
}

/// A logit, or the difference of two (token − other), at one position.
struct LogitMetric {
    Index position = 0;
    int token = 0;
    int other = -1;  ///< −1: the logit of token alone
};

/// Direct logit attribution: each component's share of the metric, through the final norm
/// with its scale frozen at the run's value σ (as TransformerLens's apply_ln_to_stack):
///   share(c) = (((c − mean(c)) / σ) ⊙ γ) · u,   u = U[:, token] − U[:, other]
/// (RMSNorm removes no mean: share(c) = ((c / σ) ⊙ γ) · u). The residual stream the final norm
/// reads is the sum of the components, so their shares, with the final LayerNorm's bias β · u,
/// sum to the metric. A layer that normalises attention's output before adding it (OLMo-2,
/// Gemma) adds no sum of per-head terms: its heads are not separable (TransformerLens's per-head
/// results are not additive there either), so the layer's attention is one component, "attn0",
/// what it adds: OLMo-2's (hook_attn_out / ln1.hook_scale) ⊙ the norm's weight, Gemma's
/// hook_attn_out (after its ln1_post); its MLP's likewise. With a final soft cap (Gemma 2) the
/// metric is the logit (difference) before the cap, which is not linear: the shares sum to
/// that, as TransformerLens's attributions of the residual stream do.
template <class T>
struct AttributionResult {
    /// "embed", "pos_embed" (learned positions), then per layer "L0H0" … "L0H3", "attn_bias0"
    /// (an output bias), or "attn0" (a normalised attention output), then "mlp0"; last "bias"
    /// (a LayerNorm's β · u)
    std::vector<std::string> components;
    Vector<T> shares;  ///< one per component; they sum to the metric
    T metric = T(0);   ///< the run's own logit (difference); before a final soft cap (Gemma 2)
};

/// Attributes the metric over `run` (run_with_hooks keeping attribution_activations, every
/// position or at least metric.position) of the same model.
template <class T>
AttributionResult<T> logit_attribution(const Model<T>& model, const HookedResult<T>& run, const LogitMetric& metric) {
    const ModelSettings& s = model.settings();
    const auto& positions = run.cache.positions();
    const auto found = std::find(positions.begin(), positions.end(), metric.position);
    if (found == positions.end())
        throw argument_error(
            detail::message("logit_attribution: position ", metric.position, " was not kept by the run"));
    const Index row = Index(found - positions.begin());
    detail::check_index("logit_attribution", "token", metric.token, s.vocabulary_size);
    if (metric.other != -1) detail::check_index("logit_attribution", "other token", metric.other, s.vocabulary_size);
    Vector<T> direction = model.unembedding_column(metric.token);  // u: C
    if (metric.other != -1) direction -= model.unembedding_column(metric.other);
    const T scale = run.cache["ln_final.hook_scale"](row, 0);
    const Vector<T> read = model.final_norm_weight().cwiseProduct(direction) / scale;  // γ ⊙ u / σ
    const bool centred = s.final_norm == Norm::layer_norm;
    const auto share = [&](const auto& component) {  // (1 × C)
        const T mean = centred ? component.sum() / T(s.dimensions) : T(0);
        return (component.array() - mean).matrix().dot(read.transpose());
    };
    AttributionResult<T> out;
    std::vector<T> shares;
    const auto add = [&](std::string name, T value) {
        out.components.push_back(std::move(name));
        shares.push_back(value);
    };
    add("embed", share(run.cache["hook_embed"].row(row)));
    if (s.position_encoding == PositionEncoding::learned) add("pos_embed", share(run.cache["hook_pos_embed"].row(row)));
    for (Index l = 0; l < s.layers; ++l) {
        if (s.layer(l).norms_around_blocks()) {  // what the block adds: its output, normalised already
            add(detail::message("attn", l), share(run.cache[activation_name({Point::attn_out, l})].row(row)));
            add(detail::message("mlp", l), share(run.cache[activation_name({Point::mlp_out, l})].row(row)));
            continue;
        }
        if (s.layer(l).output_norms) {  // what the block adds: its output through its own (RMS) norm
            const auto added = [&](Point out, Point scale, const Vector<T>& weight) {
                return Eigen::Matrix<T, 1, Eigen::Dynamic>(
                    run.cache[activation_name({out, l})].row(row).cwiseProduct(weight.transpose()) /
                    run.cache[activation_name({scale, l})](row, 0));  // (1 × C)
            };
            add(detail::message("attn", l), share(added(Point::attn_out, Point::ln1_scale,
                                                        model.layer_vector(l, LayerSlot::attention_output_norm))));
            add(detail::message("mlp", l),
                share(added(Point::mlp_out, Point::ln2_scale, model.layer_vector(l, LayerSlot::mlp_output_norm))));
            continue;
        }
        const Matrix<T>& results = run.cache[activation_name({Point::result, l})];
        for (Index h = 0; h < s.heads; ++h)
            add(detail::message("L", l, "H", h), share(results.row(row).segment(h * s.dimensions, s.dimensions)));
        const Vector<T>& output_bias = model.layer_vector(l, LayerSlot::output_bias);
        if (output_bias.size() != 0) add(detail::message("attn_bias", l), share(output_bias.transpose()));
        add(detail::message("mlp", l), share(run.cache[activation_name({Point::mlp_out, l})].row(row)));
    }
    if (model.final_norm_bias().size() != 0) add("bias", model.final_norm_bias().dot(direction));
    out.shares = Eigen::Map<const Vector<T>>(shares.data(), Index(shares.size()));
    if (s.logit_cap > 0.0) {  // before the cap: norm(x) · u
        const auto stream = run.cache[activation_name({Point::resid_post, s.layers - 1})].row(row);
        out.metric = model.final_norm(stream).row(0).dot(direction.transpose());
    } else {
        out.metric = run.result.logits(metric.position, metric.token) -
                     (metric.other == -1 ? T(0) : run.result.logits(metric.position, metric.other));
    }
    return out;
}

/// The logit lens at one position: after the embedding and after each layer, the final
/// norm (with its own scale) and the unembedding, as probabilities.
template <class T>
struct LensResult {
    std::vector<std::string> stages;  ///< "embed", "blocks.0", …
    Matrix<T> probabilities;          ///< (stages × vocabulary)
};

/// run: run_with_hooks keeping hook_embed (and hook_pos_embed, learned positions) and every
/// blocks.L.hook_resid_post, at `position`.
template <class T>
LensResult<T> logit_lens(const Model<T>& model, const HookedResult<T>& run, Index position) {
    const ModelSettings& s = model.settings();
    const auto& positions = run.cache.positions();
    const auto found = std::find(positions.begin(), positions.end(), position);
    if (found == positions.end())
        throw argument_error(detail::message("logit_lens: position ", position, " was not kept by the run"));
    const Index row = Index(found - positions.begin());
    Matrix<T> stream(s.layers + 1, s.dimensions);  // (stages × C)
    LensResult<T> lens;
    lens.stages.push_back("embed");
    stream.row(0) = run.cache["hook_embed"].row(row);
    if (s.position_encoding == PositionEncoding::learned) stream.row(0) += run.cache["hook_pos_embed"].row(row);
    for (Index l = 0; l < s.layers; ++l) {
        lens.stages.push_back(detail::message("blocks.", l));
        stream.row(l + 1) = run.cache[activation_name({Point::resid_post, l})].row(row);
    }
    const Matrix<T> normed = model.final_norm(stream);
    lens.probabilities = model.unembed(normed);                                    // (stages × V) logits
    if (s.logit_cap > 0.0) soft_cap_in_place(lens.probabilities, T(s.logit_cap));  // as the model's own (Gemma 2)
    softmax_rows_in_place(lens.probabilities);
    return lens;
}

namespace detail {

/// The metric of one logits row.
template <class T>
T metric_of(const Matrix<T>& logits, Index row, const LogitMetric& metric) {
    return logits(row, metric.token) - (metric.other == -1 ? T(0) : logits(row, metric.other));
}

/// The normalisation divides by clean − corrupted: refuse runs the metric cannot tell apart.
template <class T>
void check_runs_differ(const char* function, T clean, T corrupted) {
    if (!(clean != corrupted) || !std::isfinite(clean - corrupted))
        throw numeric_error(message(function, ": the metric is ", clean, " on the clean text and ", corrupted,
                                    " on the corrupted one; patching scores (m − corrupted) / (clean − corrupted) "
                                    "need two different finite values"));
}

/// Checks a clean/corrupted pair and the metric.
inline void check_patching(const char* function, const ModelSettings& s, const std::vector<int>& clean,
                           const std::vector<int>& corrupted, const LogitMetric& metric) {
    check_token_ids(function, s, clean);
    check_token_ids(function, s, corrupted);
    if (clean.size() != corrupted.size())
        throw argument_error(message(function, ": the clean text has ", clean.size(), " ids and the corrupted one ",
                                     corrupted.size(), "; patching needs texts of the same length"));
    check_index(function, "metric position", metric.position, Index(clean.size()));
    check_index(function, "metric token", metric.token, s.vocabulary_size);
    if (metric.other != -1) check_index(function, "metric other token", metric.other, s.vocabulary_size);
}

}  // namespace detail

/// Activation patching results: scores (normalised: 0 = the corrupted run's metric, 1 = the
/// clean run's) and the two runs' metrics.
template <class T>
struct PatchingResult {
    Matrix<T> scores;  ///< patch_heads: (layers × heads); patch_residual: (layers × positions)
    T clean = T(0);
    T corrupted = T(0);
};

namespace detail {

/// What both patching sweeps share: the checks, the clean and corrupted runs over the texts cut
/// after the metric's position (later positions cannot change it), keeping `kept` (the points
/// the patched runs resume from), and the runs that resume from a patched point.
template <class T>
class PatchingRuns {
public:
    PatchingRuns(const char* function, const Model<T>& model, const std::vector<int>& clean,
                 const std::vector<int>& corrupted, const LogitMetric& metric, const ForwardOptions& options,
                 const std::vector<Point>& kept)
        : function_(function), model_(model), metric_(metric) {
        check_patching(function, model.settings(), clean, corrupted, metric);
        const auto cut = [&](const std::vector<int>& ids) {
            return std::vector<int>(ids.begin(), ids.begin() + metric.position + 1);
        };
        corrupted_text_ = cut(corrupted);
        HookOptions<T> keep;
        keep.forward = options;
        keep.forward.keep_attention = false;
        for (Index l = 0; l < model.settings().layers; ++l)
            for (Point point : kept) keep.keep.push_back(activation_name({point, l}));
        forward_ = keep.forward;
        clean_ = run_with_hooks(model, cut(clean), keep);
        corrupted_ = run_with_hooks(model, corrupted_text_, keep);
        scores_.clean = metric_of(clean_.result.logits, metric.position, metric);
        scores_.corrupted = metric_of(corrupted_.result.logits, metric.position, metric);
        check_runs_differ(function, scores_.clean, scores_.corrupted);
    }

    const Matrix<T>& clean(Point point, Index layer) const { return clean_.cache[activation_name({point, layer})]; }
    const Matrix<T>& corrupted(Point point, Index layer) const {
        return corrupted_.cache[activation_name({point, layer})];
    }

    /// The normalised score of the corrupted text resumed at `resume`.
    T score(const Resume<T>& resume) const {
        PassSetup<T> setup;
        setup.resume = &resume;
        setup.last_logits_only = true;
        ForwardResult<T> patched;
        run_pass(model_, corrupted_text_, forward_, patched, setup, function_);
        return (metric_of(patched.logits, 0, metric_) - scores_.corrupted) / (scores_.clean - scores_.corrupted);
    }

    /// The result with its scores still to fill: (rows × cols) zeros.
    PatchingResult<T> result(Index rows, Index cols) const {
        PatchingResult<T> out = scores_;
        out.scores = Matrix<T>::Zero(rows, cols);
        return out;
    }

private:
    const char* function_;
    const Model<T>& model_;
    LogitMetric metric_;
    ForwardOptions forward_;
    std::vector<int> corrupted_text_;
    HookedResult<T> clean_, corrupted_;
    PatchingResult<T> scores_;  // the two runs' metrics
};

}  // namespace detail

/// For every head, the corrupted run with that head's output (hook_z, every position) taken
/// from the clean run. Each patched run starts at the head's layer from the corrupted run's
/// residual stream and that layer's head outputs, and stops after the metric's position:
/// what the patch cannot change is not computed again.
template <class T>
PatchingResult<T> patch_heads(const Model<T>& model, const std::vector<int>& clean, const std::vector<int>& corrupted,
                              const LogitMetric& metric, const ForwardOptions& options = {}) {
    const ModelSettings& s = model.settings();
    const detail::PatchingRuns<T> runs("patch_heads", model, clean, corrupted, metric, options,
                                       {Point::z, Point::resid_pre});
    PatchingResult<T> out = runs.result(s.layers, s.heads);
    const Index d = s.head_size;
    for (Index l = 0; l < s.layers; ++l)
        for (Index h = 0; h < s.heads; ++h) {
            Matrix<T> z = runs.corrupted(Point::z, l);  // (n × C)
            z.middleCols(h * d, d) = runs.clean(Point::z, l).middleCols(h * d, d);
            out.scores(l, h) = runs.score({l, &runs.corrupted(Point::resid_pre, l), &z});
        }
    return out;
}

/// For every layer and position, the corrupted run with that position's residual stream
/// entering the layer (hook_resid_pre) taken from the clean run; each patched run starts at
/// that layer. Positions after the metric's cannot change it and score 0.
template <class T>
PatchingResult<T> patch_residual(const Model<T>& model, const std::vector<int>& clean,
                                 const std::vector<int>& corrupted, const LogitMetric& metric,
                                 const ForwardOptions& options = {}) {
    const ModelSettings& s = model.settings();
    const detail::PatchingRuns<T> runs("patch_residual", model, clean, corrupted, metric, options, {Point::resid_pre});
    PatchingResult<T> out = runs.result(s.layers, Index(clean.size()));
    for (Index l = 0; l < s.layers; ++l)
        for (Index i = 0; i <= metric.position; ++i) {
            Matrix<T> resid = runs.corrupted(Point::resid_pre, l);  // (n × C)
            resid.row(i) = runs.clean(Point::resid_pre, l).row(i);
            out.scores(l, i) = runs.score({l, &resid, nullptr});
        }
    return out;
}

}  // namespace attn
