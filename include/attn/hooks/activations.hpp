#pragma once
// The forward pass's activations by name, as TransformerLens names them, to keep
// (ActivationCache) and to replace (Intervention). Every activation is a matrix with one row
// per position; per-head ones hold the heads side by side, as TransformerLens's
// [pos, head, d] flattened row-major.
//
//   name                          shape            what
//   hook_embed                    (n × C)          the token embeddings
//   hook_pos_embed                (n × C)          the learned positions' embeddings (GPT-2)
//   blocks.L.hook_resid_pre       (n × C)          the residual stream entering layer L
//   blocks.L.ln1.hook_scale       (n × 1)          the attention's norm divisor: √(variance + ε), or
//                                                  √(mean(x²) + ε) for RMSNorm; in a layer with norms only
//                                                  after its blocks (OLMo-2), that of attention's output,
//                                                  as TransformerLens names it (ln2: the MLP's output)
//   blocks.L.attn.hook_q          (n × H·d)        queries as projected (bias included), before rotation
//   blocks.L.attn.hook_k          (n × H_kv·d)     keys, likewise
//   blocks.L.attn.hook_v          (n × H_kv·d)     values
//   blocks.L.attn.q_norm.hook_scale  (n × H) or (n × 1)  the queries' RMSNorm divisor per head (Qwen3) or
//                                                  over all heads (OLMo-2); before it, hook_q is as projected
//   blocks.L.attn.k_norm.hook_scale  (n × H_kv) or (n × 1)  the keys', likewise
//   blocks.L.attn.hook_rot_q      (n × H·d)        queries rotated (rotary models)
//   blocks.L.attn.hook_rot_k      (n × H_kv·d)     keys rotated (rotary models)
//   blocks.L.attn.hook_z          (n × H·d)        each head's output, before the output projection
//   blocks.L.attn.hook_result     (n × H·C)        what each head writes into the residual: z_h · Wo_h
//   blocks.L.ln1_post.hook_scale  (n × 1)          with norms before and after each block (Gemma): the divisor
//                                                  of the norm after attention, of Σ_h hook_result
//   blocks.L.hook_attn_out        (n × C)          z · Wo + bo, the attention's output (Gemma: after ln1_post,
//                                                  what is added to x; OLMo-2: before its norm)
//   blocks.L.hook_resid_mid       (n × C)          resid_pre + attn_out
//   blocks.L.ln2.hook_scale       (n × 1)          the MLP's norm divisor
//   blocks.L.mlp.hook_pre         (n × M)          x · W_up + b before the activation; gated: x · W_gate + b
//   blocks.L.mlp.hook_pre_linear  (n × M)          gated MLPs: x · W_up + b
//   blocks.L.mlp.hook_post        (n × M)          after the activation (gated: act(pre) ⊙ pre_linear)
//   blocks.L.ln2_post.hook_scale  (n × 1)          Gemma: the divisor of the norm after the MLP
//   blocks.L.hook_mlp_out         (n × C)          the MLP's output (its bias included; Gemma: after ln2_post)
//   blocks.L.hook_resid_post      (n × C)          resid_mid + mlp_out
//   ln_final.hook_scale           (n × 1)          the final norm's divisor
//
// (Attention weights, TransformerLens's hook_pattern, come from ForwardOptions::keep_attention.)
// Layers count from 0, as in TransformerLens; the chapter's "layer 4" is blocks.3.

#include <Eigen/Core>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// A place in the forward pass (see the table above); per layer except embed and final_scale.
enum class Point {
    embed,
    pos_embed,
    resid_pre,
    ln1_scale,
    q,
    k,
    v,
    q_norm_scale,
    k_norm_scale,
    rot_q,
    rot_k,
    z,
    result,
    ln1_post_scale,
    attn_out,
    resid_mid,
    ln2_scale,
    mlp_pre,
    mlp_pre_linear,
    mlp_post,
    ln2_post_scale,
    mlp_out,
    resid_post,
    final_scale,
};

/// A point of one layer (layer is 0 for embed, pos_embed and final_scale).
struct ActivationId {
    Point point = Point::embed;
    Index layer = 0;
    friend bool operator<(const ActivationId& a, const ActivationId& b) {
        return a.layer != b.layer ? a.layer < b.layer : a.point < b.point;
    }
    friend bool operator==(const ActivationId& a, const ActivationId& b) {
        return a.point == b.point && a.layer == b.layer;
    }
};

namespace detail {

struct PointName {
    Point point;
    const char* suffix;  // after "blocks.L.", or the whole name for embed and final_scale
};

inline constexpr PointName kPointNames[] = {
    {Point::embed, "hook_embed"},
    {Point::pos_embed, "hook_pos_embed"},
    {Point::resid_pre, "hook_resid_pre"},
    {Point::ln1_scale, "ln1.hook_scale"},
    {Point::q, "attn.hook_q"},
    {Point::k, "attn.hook_k"},
    {Point::v, "attn.hook_v"},
    {Point::q_norm_scale, "attn.q_norm.hook_scale"},
    {Point::k_norm_scale, "attn.k_norm.hook_scale"},
    {Point::rot_q, "attn.hook_rot_q"},
    {Point::rot_k, "attn.hook_rot_k"},
    {Point::z, "attn.hook_z"},
    {Point::result, "attn.hook_result"},
    {Point::ln1_post_scale, "ln1_post.hook_scale"},
    {Point::attn_out, "hook_attn_out"},
    {Point::resid_mid, "hook_resid_mid"},
    {Point::ln2_scale, "ln2.hook_scale"},
    {Point::mlp_pre, "mlp.hook_pre"},
    {Point::mlp_pre_linear, "mlp.hook_pre_linear"},
    {Point::mlp_post, "mlp.hook_post"},
    {Point::ln2_post_scale, "ln2_post.hook_scale"},
    {Point::mlp_out, "hook_mlp_out"},
    {Point::resid_post, "hook_resid_post"},
    {Point::final_scale, "ln_final.hook_scale"},
};

inline bool per_layer(Point point) {
    return point != Point::embed && point != Point::pos_embed && point != Point::final_scale;
}

/// Whether a model of these settings has the point, as its layer's description says: learned
/// positions, rotation, the norms before the blocks, the stream between them (not in a parallel
/// layer) and a gated MLP's second projection exist only where the layer has them.
inline bool has_point(ActivationId id, const ModelSettings& s) {
    if (id.point == Point::pos_embed) return s.position_encoding == PositionEncoding::learned;
    if (!per_layer(id.point)) return true;
    const LayerDescription& layer = s.layer(id.layer);
    switch (id.point) {
        case Point::rot_q:
        case Point::rot_k:
            return layer.rotates();
        case Point::ln1_scale:
        case Point::ln2_scale:
            return layer.input_norms || layer.output_norms;
        case Point::ln1_post_scale:
        case Point::ln2_post_scale:
            return layer.norms_around_blocks();
        case Point::q_norm_scale:
        case Point::k_norm_scale:
            return layer.query_key_norm != QueryKeyNorm::none;
        case Point::resid_mid:
            return layer.residual == Residual::sequential;
        case Point::mlp_pre_linear:
            return layer.gated_mlp;
        default:
            return true;
    }
}

/// Why a layer lacks a point has_point refuses.
inline const char* missing_point_reason(Point point) {
    switch (point) {
        case Point::pos_embed:
            return "its positions are rotary";
        case Point::mlp_pre_linear:
            return "its MLP is not gated";
        case Point::rot_q:
        case Point::rot_k:
            return "its positions are learned, nothing is rotated";
        case Point::ln1_scale:
        case Point::ln2_scale:
            return "its layers have no norm before attention and the MLP";
        case Point::ln1_post_scale:
        case Point::ln2_post_scale:
            return "its layers have no norms both before and after attention and the MLP";
        case Point::q_norm_scale:
        case Point::k_norm_scale:
            return "its queries and keys are not normalised";
        default:
            return "attention and the MLP read the same stream in parallel";
    }
}

}  // namespace detail

/// TransformerLens's name of a point: "hook_embed", "blocks.2.attn.hook_z", "ln_final.hook_scale".
inline std::string activation_name(ActivationId id) {
    for (const detail::PointName& name : detail::kPointNames)
        if (name.point == id.point)
            return detail::per_layer(id.point) ? detail::message("blocks.", id.layer, ".", name.suffix) : name.suffix;
    return "?";
}

namespace detail {

/// The point a name denotes, checked against the model's layers (not whether it has the point).
inline ActivationId parse_activation_name(std::string_view name, const ModelSettings& settings) {
    const auto unknown = [&](const char* why) {
        return argument_error(detail::message("activation '", name, "': ", why,
                                              " (names: hook_embed, blocks.L.hook_resid_pre, blocks.L.attn.hook_z, "
                                              "…, ln_final.hook_scale; see attn/hooks/activations.hpp)"));
    };
    for (const detail::PointName& point : detail::kPointNames)
        if (!detail::per_layer(point.point) && name == point.suffix) return {point.point, 0};
    constexpr std::string_view prefix = "blocks.";
    if (name.substr(0, prefix.size()) != prefix) throw unknown("unknown name");
    const std::string_view rest = name.substr(prefix.size());
    const std::size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) throw unknown("unknown name");
    Index layer = 0;
    for (char c : rest.substr(0, dot)) {
        if (c < '0' || c > '9') throw unknown("the layer is not a number");
        layer = layer * 10 + (c - '0');
    }
    if (layer >= settings.layers)
        throw argument_error(detail::message("activation '", name, "': layer ", layer,
                                             " is out of range (the model has ", settings.layers, " layers, 0 … ",
                                             settings.layers - 1, ")"));
    const std::string_view suffix = rest.substr(dot + 1);
    for (const detail::PointName& point : detail::kPointNames)
        if (detail::per_layer(point.point) && suffix == point.suffix) return {point.point, layer};
    throw unknown("unknown name");
}

}  // namespace detail

/// The point a name denotes, checked against the model's layers and architecture;
/// argument_error naming it otherwise.
inline ActivationId parse_activation(std::string_view name, const ModelSettings& settings) {
    const ActivationId id = detail::parse_activation_name(name, settings);
    if (!detail::has_point(id, settings))
        throw argument_error(detail::message("activation '", name, "': a ", architecture_name(settings.architecture),
                                             " model has no such point (", detail::missing_point_reason(id.point),
                                             ")"));
    return id;
}

/// Columns of a point's matrix for a model: C, H·d, H_kv·d, H·C, M or 1.
inline Index activation_width(ActivationId id, const ModelSettings& s) {
    const bool per_head = detail::per_layer(id.point) && s.layer(id.layer).query_key_norm == QueryKeyNorm::per_head;
    switch (id.point) {
        case Point::q_norm_scale:
            return per_head ? s.heads : 1;
        case Point::k_norm_scale:
            return per_head ? s.key_value_heads : 1;
        case Point::ln1_scale:
        case Point::ln2_scale:
        case Point::ln1_post_scale:
        case Point::ln2_post_scale:
        case Point::final_scale:
            return 1;
        case Point::q:
        case Point::rot_q:
        case Point::z:
            return s.query_width();
        case Point::k:
        case Point::v:
        case Point::rot_k:
            return s.key_value_width();
        case Point::result:
            return s.heads * s.dimensions;
        case Point::mlp_pre:
        case Point::mlp_pre_linear:
        case Point::mlp_post:
            return s.mlp_width;
        default:
            return s.dimensions;
    }
}

/// The activations a run kept, by name: each (positions kept × width), rows in the order of
/// the positions asked for (all positions if none were named).
template <class T>
class ActivationCache {
public:
    /// The activation called `name`; argument_error if the run did not keep it.
    const Matrix<T>& operator[](const std::string& name) const {
        const auto found = values_.find(name);
        if (found == values_.end())
            throw argument_error(detail::message("ActivationCache: '", name, "' was not kept (kept: ", values_.size(),
                                                 " activations", values_.empty() ? "" : ", e.g. '",
                                                 values_.empty() ? "" : values_.begin()->first,
                                                 values_.empty() ? "" : "'", ")"));
        return found->second;
    }
    bool contains(const std::string& name) const { return values_.count(name) != 0; }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& entry : values_) out.push_back(entry.first);
        return out;
    }
    std::size_t size() const { return values_.size(); }
    /// The positions each activation's rows are (0 … n − 1 unless the run named some).
    const std::vector<Index>& positions() const { return positions_; }

    // For the forward pass that fills it: slot(name) is kept (its storage reused by a run that
    // keeps it again), everything not named in keep_only is dropped.
    Matrix<T>& slot(const std::string& name) { return values_[name]; }
    void keep_only(const std::vector<std::string>& names) {
        for (auto it = values_.begin(); it != values_.end();)
            it = std::find(names.begin(), names.end(), it->first) == names.end() ? values_.erase(it) : std::next(it);
    }
    void set_positions(std::vector<Index> positions) { positions_ = std::move(positions); }

private:
    std::map<std::string, Matrix<T>> values_;
    std::vector<Index> positions_;
};

/// A change to one activation during a forward pass: its rows at `positions` (all if empty),
/// and, for the per-head points (hook_q … hook_z), only head `head`'s columns, become
///   values (positions × width, one row per position), zero, or mean (1 × width, every row).
template <class T>
struct Intervention {
    enum class Kind { values, zero, mean };
    std::string activation;        ///< a name from the table above; not hook_result, attn_out or a scale
    Kind kind = Kind::zero;        ///<
    std::vector<Index> positions;  ///< rows to change; empty: every position
    std::optional<Index> head;     ///< per-head points (q, k, v, rot_q, rot_k, z): this head's d columns; unset: all
    Matrix<T> values;              ///< kind values: (positions × width); kind mean: (1 × width)

    static Intervention zero(std::string activation, std::optional<Index> head = {},
                             std::vector<Index> positions = {}) {
        return {std::move(activation), Kind::zero, std::move(positions), head, {}};
    }
    static Intervention replace(std::string activation, Matrix<T> values, std::optional<Index> head = {},
                                std::vector<Index> positions = {}) {
        return {std::move(activation), Kind::values, std::move(positions), head, std::move(values)};
    }
    static Intervention mean(std::string activation, Matrix<T> mean, std::optional<Index> head = {},
                             std::vector<Index> positions = {}) {
        return {std::move(activation), Kind::mean, std::move(positions), head, std::move(mean)};
    }
};

namespace detail {

/// Every activation name of a model, in forward order.
inline std::vector<std::string> every_activation(const ModelSettings& s) {
    std::vector<std::string> names{activation_name({Point::embed, 0})};
    if (has_point({Point::pos_embed, 0}, s)) names.push_back(activation_name({Point::pos_embed, 0}));
    for (Index l = 0; l < s.layers; ++l)
        for (const PointName& point : kPointNames)
            if (per_layer(point.point) && has_point({point.point, l}, s))
                names.push_back(activation_name({point.point, l}));
    names.push_back(activation_name({Point::final_scale, 0}));
    return names;
}

/// What a forward pass keeps and changes, by point, checked before the pass starts; the pass
/// calls at() with each worker's rows of every point it wants.
template <class T>
class Hooks {
public:
    /// keep: names to keep ("*": every one), rows `keep_positions` (all if empty) of each, into
    /// cache; interventions applied as they come. n: the pass's positions.
    Hooks(const char* function, const ModelSettings& s, Index n, const std::vector<std::string>& keep,
          const std::vector<Index>& keep_positions, const std::vector<Intervention<T>>& interventions,
          ActivationCache<T>& cache)
        : cache_(cache), n_(n), keep_positions_(keep_positions) {
        for (Index p : keep_positions_) check_index(function, "kept position", p, n);
        std::vector<std::string> names;
        for (const std::string& name : keep) {
            if (name == "*") {
                const std::vector<std::string> all = every_activation(s);
                names.insert(names.end(), all.begin(), all.end());
            } else {
                names.push_back(name);
            }
        }
        std::vector<ActivationId> ids;
        for (const std::string& name : names) ids.push_back(parse_activation(name, s));  // all checked first
        cache_.keep_only(names);
        for (std::size_t i = 0; i < names.size(); ++i) {
            // every row is written by the pass: storage of the right shape is reused as it is
            Matrix<T>& slot = cache_.slot(names[i]);
            const Index width = activation_width(ids[i], s);
            if (slot.rows() != n || slot.cols() != width) slot.resize(n, width);
            kept_[ids[i]] = &slot;
        }
        for (const Intervention<T>& change : interventions) changes_.push_back(checked(function, s, change));
    }

    bool keeps(ActivationId id) const { return kept_.count(id) != 0; }
    bool changes(ActivationId id) const {
        return std::any_of(changes_.begin(), changes_.end(), [&](const Change& c) { return c.id == id; });
    }
    bool wants(ActivationId id) const { return keeps(id) || changes(id); }

    /// Rows first_row … first_row + block.rows() − 1 of activation id: changed, then kept.
    void at(ActivationId id, Index first_row, Eigen::Ref<Matrix<T>> block) {
        for (const Change& change : changes_) {
            if (!(change.id == id)) continue;
            const Intervention<T>& what = *change.intervention;
            for (std::size_t k = 0; k < change.positions.size(); ++k) {
                const Index row = change.positions[k] - first_row;
                if (row < 0 || row >= block.rows()) continue;
                auto target = block.row(row).segment(change.first_column, change.columns);
                switch (what.kind) {
                    case Intervention<T>::Kind::zero:
                        target.setZero();
                        break;
                    case Intervention<T>::Kind::mean:
                        target = what.values.row(0);
                        break;
                    case Intervention<T>::Kind::values:
                        target = what.values.row(Index(k));
                        break;
                }
            }
        }
        const auto kept = kept_.find(id);
        if (kept != kept_.end()) kept->second->middleRows(first_row, block.rows()) = block;
    }

    /// After the pass: each kept activation cut to the kept positions.
    void finish() {
        std::vector<Index> positions = keep_positions_;
        if (positions.empty())
            for (Index i = 0; i < n_; ++i) positions.push_back(i);
        else
            for (auto& entry : kept_) *entry.second = Matrix<T>((*entry.second)(positions, Eigen::all));
        cache_.set_positions(std::move(positions));
    }

private:
    struct Change {
        ActivationId id;
        const Intervention<T>* intervention;
        std::vector<Index> positions;  // resolved: every position if the intervention names none
        Index first_column = 0, columns = 0;
    };

    Change checked(const char* function, const ModelSettings& s, const Intervention<T>& what) const {
        Change change{parse_activation(what.activation, s), &what, what.positions, 0, 0};
        const Point point = change.id.point;
        if (point == Point::result || point == Point::ln1_scale || point == Point::ln2_scale ||
            point == Point::ln1_post_scale || point == Point::ln2_post_scale || point == Point::q_norm_scale ||
            point == Point::k_norm_scale || point == Point::final_scale)
            throw argument_error(message(function, ": ", what.activation,
                                         " is derived for reading, not used by the pass: it cannot be changed (change "
                                         "hook_z or a residual stream instead)"));
        change.columns = activation_width(change.id, s);
        if (what.head) {
            const bool query_heads = point == Point::q || point == Point::rot_q || point == Point::z;
            const bool key_value_heads = point == Point::k || point == Point::v || point == Point::rot_k;
            if (!query_heads && !key_value_heads)
                throw argument_error(message(function, ": a head is given for ", what.activation,
                                             ", which is not per head (attn.hook_q, hook_k, hook_v, hook_rot_q, "
                                             "hook_rot_k and hook_z are)"));
            check_index(function, "intervention head", *what.head, query_heads ? s.heads : s.key_value_heads);
            change.first_column = *what.head * s.head_size;
            change.columns = s.head_size;
        }
        if (change.positions.empty())
            for (Index i = 0; i < n_; ++i) change.positions.push_back(i);
        std::vector<Index> sorted = change.positions;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
            throw argument_error(message(function, ": intervention on ", what.activation, " names a position twice"));
        for (Index p : change.positions) check_index(function, "intervention position", p, n_);
        const Index rows = Index(change.positions.size());
        const auto expect = [&](Index r, const char* what_rows) {
            if (what.values.rows() != r || what.values.cols() != change.columns)
                throw shape_error(message(function, ": intervention on ", what.activation, " has values of ",
                                          what.values.rows(), " × ", what.values.cols(), ", expected ", r, " × ",
                                          change.columns, " (", what_rows, ")"));
        };
        if (what.kind == Intervention<T>::Kind::values) expect(rows, "one row per position");
        if (what.kind == Intervention<T>::Kind::mean) expect(1, "one mean row");
        if (what.kind != Intervention<T>::Kind::zero && !what.values.allFinite())
            throw argument_error(message(function, ": intervention on ", what.activation, " holds NaN or infinity"));
        return change;
    }

    ActivationCache<T>& cache_;
    Index n_;
    std::vector<Index> keep_positions_;
    std::map<ActivationId, Matrix<T>*> kept_;
    std::vector<Change> changes_;
};

}  // namespace detail

}  // namespace attn
