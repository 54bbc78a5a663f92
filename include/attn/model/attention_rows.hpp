#pragma once
// Chosen heads' rows of exact attention weights, after a forward pass that kept its
// log-sum-exps (ForwardOptions::keep_log_sum_exp): the fast forward never stores a
// (positions × positions) matrix, and this recomputes only the rows asked for
// (core/weights_on_demand.hpp, whose attention_rows overloads do the same over heads' own queries,
// keys and log-sum-exps), equal to what keep_attention returns to float rounding. After a pass on
// bfloat16 numbers (Model::bfloat16_attention) the scores are the pass's (its scaled queries
// rounded as it rounded them), and the weights their exact softmax, where the pass rounded each
// exp(score − maximum) to bfloat16 (2⁻⁸ relative) and divided by the sum of the rounded numbers:
// within 2⁻⁷ relative of the weights keep_attention returns.

#include <vector>

#include "attn/core/scoring.hpp"
#include "attn/core/weights_on_demand.hpp"
#include "attn/detail/check.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// Layer `layer`'s weights of query positions `rows` in heads `heads` (empty: all of them)
/// over keys `range` → out.weights: heads.size() × (rows.size() × range width), and
/// out.visible: per row, the positions it could see (p − window + 1 … p in a sliding layer, 0 …
/// p in a full one; weights outside them are 0 as unreachable), from a
/// ForwardResult of a model with these settings kept with keep_log_sum_exp. out.weights must be
/// empty or of that shape (shape_error); a repeated call into the same `out` allocates nothing.
/// Throws argument_error if the log-sum-exps were not kept or an index is out of range.
template <class T>
void attention_rows_into(const ModelSettings& settings, const ForwardResult<T>& result, Index layer,
                         const std::vector<Index>& heads, const std::vector<Index>& rows, KeyRange range,
                         WeightRowsResult<T>& out) {
    const char* function = "attention_rows";
    if (result.log_sum_exp.empty() || result.queries_keys.empty())
        throw argument_error(detail::message(function, ": the forward pass kept no log-sum-exps (set ",
                                             "ForwardOptions::keep_log_sum_exp)"));
    detail::check_index(function, "layer", layer, Index(result.log_sum_exp.size()));
    const Matrix<T>& lse = result.log_sum_exp[std::size_t(layer)];            // (H × n)
    const Matrix<T>& queries_keys = result.queries_keys[std::size_t(layer)];  // (n × (H + H_kv)·d)
    const Index n = lse.cols(), d = settings.head_size, head_count = settings.heads;
    const Index query_width = settings.query_width(), width = query_width + settings.key_value_width();
    if (lse.rows() != head_count || queries_keys.cols() != width)
        throw argument_error(detail::message(function, ": the result's layer ", layer, " has ", lse.rows(),
                                             " heads and queries | keys of width ", queries_keys.cols(),
                                             "; these settings give ", head_count, " and ", width));
    const Index group = head_count / settings.key_value_heads;
    std::vector<Index> all_heads, all_rows;
    const std::vector<Index>& head_list = detail::all_if_empty(heads, head_count, all_heads);
    const std::vector<Index>& row_list = detail::all_if_empty(rows, n, all_rows);
    for (Index h : head_list) detail::check_index(function, "head", h, head_count);
    detail::check_demand(function, row_list, range, n, n);
    AttentionOptions<T> options;  // causal; the kept queries and keys are already rotated
    options.scale = T(settings.score_scale(layer));
    options.window = settings.layer(layer).window;
    options.score_cap = T(settings.layer(layer).score_cap);
    detail::DemandShape<T> shape = detail::demand_shape(function, n, n, d, range, options);
    shape.bfloat16 = result.bfloat16_attention;  // the pass's scaled queries were rounded: so are these
    detail::reuse_storage(function, "weights", out.weights, Index(head_list.size()), Index(row_list.size()),
                          range.last - range.first);
    detail::visible_keys(shape, row_list, out.visible);
    for (std::size_t a = 0; a < head_list.size(); ++a) {
        const Index h = head_list[a];
        const detail::DemandHead<T> head{{queries_keys.data() + h * d, width},
                                         {queries_keys.data() + query_width + (h / group) * d, width},
                                         lse.data() + h * n};
        detail::demand_head(function, shape, head, row_list, out.weights.head(Index(a)).data(), out.weights.cols(),
                            out.workspace);
    }
}

/// attention_rows_into into a fresh result: weights heads.size() × (rows.size() × range width).
template <class T>
WeightRowsResult<T> attention_rows(const ModelSettings& settings, const ForwardResult<T>& result, Index layer,
                                   const std::vector<Index>& heads, const std::vector<Index>& rows,
                                   KeyRange range = {}) {
    WeightRowsResult<T> out;
    attention_rows_into(settings, result, layer, heads, rows, range, out);
    out.workspace = {};  // the numbers, not the call's memory
    return out;
}

}  // namespace attn
