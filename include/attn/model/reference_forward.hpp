#pragma once
// The forward pass as the chapter writes it: the readable one, and the specification the
// fast Model::forward is tested against (tests/test_reference_forward.cpp). Only the
// core's public steps, one layer per loop iteration, every intermediate its own matrix,
// no threads and no lookups: step through it in a debugger and every variable is a
// quantity the chapter names.
//
// Shapes: n positions, C = heads × d model width, d head size, M MLP width, V vocabulary.

#include <Eigen/Core>

#include <vector>

#include "attn/core/activation.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/heads.hpp"
#include "attn/core/norm.hpp"
#include "attn/core/projection.hpp"
#include "attn/core/types.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// ids: 1 … longest token ids → logits (n × V) and, if options.keep_attention, every
/// layer's weights, layers × heads × (n × n). options.ablate zeroes the named heads'
/// outputs before the output projection; threads and workers are not used.
template <class T>
ForwardResult<T> reference_forward(const Model<T>& model, const std::vector<int>& ids,
                                   const ForwardOptions& options = {}) {
    const ModelSettings& s = model.settings();
    detail::check_token_ids("reference_forward", s, ids);
    const std::vector<std::vector<bool>> ablated = detail::silenced_heads("reference_forward", s, options.ablate);
    const Index n = static_cast<Index>(ids.size());

    AttentionOptions<T> attention_options;  // causal, scaled by 1/√d
    attention_options.keep_weights = options.keep_attention;
    attention_options.fused = false;  // the chapter's steps: scores, mask, softmax, weights · values

    Matrix<T> x(n, s.dimensions);  // (n × C) the residual stream
    for (Index i = 0; i < n; ++i) x.row(i) = model.embedding().row(ids[std::size_t(i)]);

    std::vector<AttentionWeights<T>> attention;
    for (Index l = 0; l < s.layers; ++l) {
        const auto& layer = model.layer(l);

        // attention
        Matrix<T> h = layer_norm(x, layer.attention_norm_weight, layer.attention_norm_bias, s.norm_epsilon);  // (n × C)
        QueryKeyValue<T> qkv = project_qkv(h, layer.query, layer.key, layer.value);  // (n × C) each
        HeadStack<T> q = split_heads(qkv.queries, s.heads);                          // heads × (n × d)
        HeadStack<T> k = split_heads(qkv.keys, s.heads);                             // heads × (n × d)
        HeadStack<T> v = split_heads(qkv.values, s.heads);                           // heads × (n × d)
        model.rope().apply(q);                                                       // position i turns row i
        model.rope().apply(k);
        HeadsAttention<T> attended = attend_heads(q, k, v, attention_options);  // heads × (n × d), heads × (n × n)
        for (Index head = 0; head < s.heads; ++head)
            if (ablated[std::size_t(l)][std::size_t(head)]) attended.outputs.head(head).setZero();
        Matrix<T> merged = merge_heads(attended.outputs);  // (n × C)
        x += project(merged, layer.output);                // (n × C)
        if (options.keep_attention) attention.push_back(std::move(attended.weights));

        // MLP
        Matrix<T> m = layer_norm(x, layer.mlp_norm_weight, layer.mlp_norm_bias, s.norm_epsilon);  // (n × C)
        Matrix<T> up = project(m, layer.up, layer.up_bias);                                       // (n × M)
        if (s.activation == Activation::gelu_tanh)
            gelu_tanh_in_place(up);
        else
            gelu_in_place(up);
        x += project(up, layer.down, layer.down_bias);  // (n × C)
    }

    ForwardResult<T> result;
    Matrix<T> final = layer_norm(x, model.final_norm_weight(), model.final_norm_bias(), s.norm_epsilon);  // (n × C)
    result.logits = project(final, model.embedding().transpose());                                        // (n × V)
    if (options.keep_attention) result.attention = ModelAttention<T>(std::move(attention));
    return result;
}

}  // namespace attn
