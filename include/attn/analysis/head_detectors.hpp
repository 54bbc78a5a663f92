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
//
// Sliding windows (a layer's window w, ModelAttention::window): row i can see only keys
// i − w + 1 … i. A row whose pattern keys all lie before its window could not have attended to
// any of them; counted, its whole weight would sit in the denominator as a certain miss, and a
// sliding head would score below a full head doing the same thing wherever it can. Such rows
// are left out of both sums. Rows with no pattern key at all still count, as TransformerLens
// counts them; a previous-token pattern is never out of reach (w ≥ 2), so its score is
// unchanged.

#include <Eigen/Core>

#include <algorithm>
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
/// one per position (n). window: the head's sliding window (0: none); rows whose pattern keys
/// all lie before it are left out of both sums.
template <class D>
double detection_score(const Eigen::MatrixBase<D>& weights, const KeyPattern& pattern,
                       const DetectorOptions& options = {}, Index window = 0) {
    const Index n = weights.rows();
    if (weights.cols() != n)
        throw shape_error(detail::message("detection_score: weights are ", weights.rows(), " × ", weights.cols(),
                                          ", expected n × n (one row and column per position)"));
    if (window < 0)
        throw argument_error(detail::message("detection_score: window must be ≥ 0 (0: none), got ", window));
    detail::check_pattern_covers("detection_score", pattern, n);
    double matched = 0.0, total = 0.0;
    for (Index i = 0; i < n; ++i) {
        const Index lo = window > 0 ? std::max<Index>(0, i - window + 1) : 0;
        bool before = false, within = false;  // pattern keys before the window, and inside it
        for (Index j = 0; j <= i && lo > 0; ++j)
            if (pattern.selects(i, j)) (j < lo ? before : within) = true;
        if (before && !within) continue;  // nothing the pattern wants was reachable from this row
        for (Index j = 0; j <= i; ++j) {
            if ((options.exclude_bos && j == 0) || (options.exclude_current_token && j == i)) continue;
            const double a = double(weights(i, j));
            total += a;
            if (pattern.selects(i, j)) matched += a;
        }
    }
    if (!(total > 0.0))
        throw numeric_error(detail::message("detection_score: the head puts no weight anywhere the options leave in (",
                                            total, ")", window > 0 ? ", or no row reaches the pattern's keys" : ""));
    return matched / total;
}

/// Every head's score, (layers × heads). attention: Model::forward's with keep_attention, on the
/// text whose ids a pattern with ids holds. In a sliding layer (ModelAttention::window), rows
/// whose pattern keys are all before their window are left out (see the top of this file).
template <class T>
HeadTable detect_heads(const ModelAttention<T>& attention, const KeyPattern& pattern,
                       const DetectorOptions& options = {}) {
    if (attention.empty()) throw argument_error("detect_heads: no attention (run the forward with keep_attention)");
    detail::check_pattern_covers("detect_heads", pattern, attention.positions());
    HeadTable scores(attention.layers(), attention.heads());
    for (Index l = 0; l < attention.layers(); ++l)
        for (Index h = 0; h < attention.heads(); ++h)
            scores(l, h) = detection_score(attention.head(l, h), pattern, options, attention.window(l));
    return scores;
}

}  // namespace attn
