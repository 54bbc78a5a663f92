#pragma once
// TransformerLens's head detectors (transformer_lens/head_detector.py, detect_head with
// error_measure "mul"): the share of a head's attention, over all query positions, that falls
// where a detection pattern D puts a 1:
//
//   score = Σ_ij A(i, j) · D(i, j) / Σ_ij A(i, j)      (A: the head's n × n weights)
//
// with D(i, j) = pattern.selects(i, j) (key_pattern.hpp). TransformerLens's three patterns are
// KeyPattern::previous_token(), duplicate_token(ids) and induction(ids); the others work too.
//
// exclude_bos and exclude_current_token zero column 0 and the diagonal of A first, in both
// sums, as TransformerLens does. These sit next to the chapter's own measurements
// (head_scores.hpp), which average per query row against an even spread instead.

#include <Eigen/Core>

#include <vector>

#include "attn/analysis/key_pattern.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"

namespace attn {

struct DetectorOptions {
    bool exclude_bos = false;            ///< leave out every query's weight on position 0
    bool exclude_current_token = false;  ///< leave out every query's weight on itself
};

/// One head's score. weights: (n × n) attention of an n-token text; a pattern with ids has
/// one per position (n).
template <class D>
double detection_score(const Eigen::MatrixBase<D>& weights, const KeyPattern& pattern,
                       const DetectorOptions& options = {}) {
    const Index n = weights.rows();
    if (weights.cols() != n)
        throw shape_error(detail::message("detection_score: weights are ", weights.rows(), " × ", weights.cols(),
                                          ", expected n × n (one row and column per position)"));
    detail::check_pattern_covers("detection_score", pattern, n);
    double matched = 0.0, total = 0.0;
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) {
            if ((options.exclude_bos && j == 0) || (options.exclude_current_token && j == i)) continue;
            const double a = double(weights(i, j));
            total += a;
            if (pattern.selects(i, j)) matched += a;
        }
    if (!(total > 0.0))
        throw numeric_error(
            detail::message("detection_score: the head puts no weight anywhere the options leave in (", total, ")"));
    return matched / total;
}

/// Every head's score, (layers × heads). attention: Model::forward's with keep_attention, on the
/// text whose ids a pattern with ids holds.
template <class T>
HeadTable detect_heads(const ModelAttention<T>& attention, const KeyPattern& pattern,
                       const DetectorOptions& options = {}) {
    if (attention.empty()) throw argument_error("detect_heads: no attention (run the forward with keep_attention)");
    detail::check_pattern_covers("detect_heads", pattern, attention.positions());
    HeadTable scores(attention.layers(), attention.heads());
    for (Index l = 0; l < attention.layers(); ++l)
        for (Index h = 0; h < attention.heads(); ++h)
            scores(l, h) = detection_score(attention.head(l, h), pattern, options);
    return scores;
}

}  // namespace attn
