#pragma once
// TransformerLens's head detectors (transformer_lens/head_detector.py, detect_head with
// error_measure "mul"): the share of a head's attention, over all query positions, that falls
// where a detection pattern D puts a 1:
//
//   score = Σ_ij A(i, j) · D(i, j) / Σ_ij A(i, j)      (A: the head's n × n weights)
//
//   previous_token   D(i, i − 1) = 1
//   duplicate_token  D(i, j) = 1 for j < i where ids[j] = ids[i]       (an earlier copy of the token)
//   induction        D(i, j) = 1 for 1 ≤ j ≤ i where ids[j − 1] = ids[i], j − 1 < i
//                    (the token after an earlier copy of the current one)
//
// exclude_bos and exclude_current_token zero column 0 and the diagonal of A first, in both
// sums, as TransformerLens does. These sit next to the chapter's own measurements
// (head_scores.hpp), which average per query row against an even spread instead.

#include <Eigen/Core>

#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/types.hpp"

namespace attn {

enum class HeadPattern { previous_token, duplicate_token, induction };

struct DetectorOptions {
    bool exclude_bos = false;            ///< leave out every query's weight on position 0
    bool exclude_current_token = false;  ///< leave out every query's weight on itself
};

/// Whether D(i, j) = 1 for `pattern` on ids (j ≤ i).
inline bool detection_pattern(HeadPattern pattern, const std::vector<int>& ids, Index i, Index j) {
    switch (pattern) {
        case HeadPattern::previous_token:
            return j == i - 1;
        case HeadPattern::duplicate_token:
            return j < i && ids[std::size_t(j)] == ids[std::size_t(i)];
        case HeadPattern::induction:
            return j >= 1 && j - 1 < i && ids[std::size_t(j - 1)] == ids[std::size_t(i)];
    }
    return false;
}

/// One head's score. weights: (n × n) attention of a text of n = ids.size() tokens.
template <class D>
double detection_score(const Eigen::MatrixBase<D>& weights, const std::vector<int>& ids, HeadPattern pattern,
                       const DetectorOptions& options = {}) {
    const Index n = Index(ids.size());
    if (weights.rows() != n || weights.cols() != n)
        throw shape_error(detail::message("detection_score: weights are ", weights.rows(), " × ", weights.cols(),
                                          ", expected ", n, " × ", n, " (one row and column per id)"));
    double matched = 0.0, total = 0.0;
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) {
            if ((options.exclude_bos && j == 0) || (options.exclude_current_token && j == i)) continue;
            const double a = double(weights(i, j));
            total += a;
            if (detection_pattern(pattern, ids, i, j)) matched += a;
        }
    if (!(total > 0.0))
        throw numeric_error(
            detail::message("detection_score: the head puts no weight anywhere the options leave in (", total, ")"));
    return matched / total;
}

/// Every head's score, (layers × heads). attention: Model::forward's with keep_attention, on ids.
template <class T>
Eigen::MatrixXd detect_heads(const ModelAttention<T>& attention, const std::vector<int>& ids, HeadPattern pattern,
                             const DetectorOptions& options = {}) {
    if (attention.empty()) throw argument_error("detect_heads: no attention (run the forward with keep_attention)");
    Eigen::MatrixXd scores(attention.layers(), attention.heads());
    for (Index l = 0; l < attention.layers(); ++l)
        for (Index h = 0; h < attention.heads(); ++h)
            scores(l, h) = detection_score(attention.head(l, h), ids, pattern, options);
    return scores;
}

}  // namespace attn
