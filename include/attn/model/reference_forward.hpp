#pragma once
// The forward pass as the chapter writes it: the readable one, and the specification the
// fast Model::forward is tested against (tests/test_reference_forward.cpp). Only the
// core's public steps, one layer per loop iteration, every intermediate its own matrix,
// no threads and no lookups: step through it in a debugger and every variable is a
// quantity the chapter names.
//
// Shapes: n positions, C model width, H query heads and H_kv key/value heads of d numbers,
// M MLP width, V vocabulary.

#include <Eigen/Core>

#include <vector>

#include "attn/core/activation.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/embedding.hpp"
#include "attn/core/heads.hpp"
#include "attn/core/norm.hpp"
#include "attn/core/projection.hpp"
#include "attn/core/types.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// ids: 1 … longest token ids → logits (n × V) and, if options.keep_attention, every
/// layer's weights, layers × H × (n × n). options.ablate zeroes the named heads' outputs
/// before the output projection; threads and workers are not used.
template <class T>
ForwardResult<T> reference_forward(const Model<T>& model, const std::vector<int>& ids,
                                   const ForwardOptions& options = {}) {
    const ModelSettings& s = model.settings();
    detail::check_token_ids("reference_forward", s, ids);
    const std::vector<std::vector<bool>> ablated = detail::silenced_heads("reference_forward", s, options.ablate);
    const Index n = static_cast<Index>(ids.size());
    const Index query_width = s.query_width(), key_value_width = s.key_value_width();

    const auto norm = [&](const Matrix<T>& x, const Vector<T>& weight, const Vector<T>& bias) {  // (n × C)
        return s.norm == Norm::rms_norm ? rms_norm(x, weight, s.norm_epsilon)
                                        : layer_norm(x, weight, bias, s.norm_epsilon);
    };
    const auto linear = [](const Matrix<T>& x, const auto& weight, const Vector<T>& bias) {  // x · W (+ b)
        return bias.size() != 0 ? project(x, weight, bias) : project(x, weight);
    };
    const auto activate = [&](Matrix<T>& hidden) {
        if (s.activation == Activation::gelu_tanh)
            gelu_tanh_in_place(hidden);
        else if (s.activation == Activation::silu)
            silu_in_place(hidden);
        else
            gelu_in_place(hidden);
    };

    AttentionOptions<T> attention_options;  // causal
    attention_options.keep_weights = options.keep_attention;
    attention_options.fused = false;  // the chapter's steps: scores, mask, softmax, weights · values

    Matrix<T> x = embed(model.embedding(), ids);  // (n × C) the residual stream
    if (s.positions == PositionEncoding::learned) x += learned_positions(model.position_embedding(), n);

    std::vector<AttentionWeights<T>> attention;
    for (Index l = 0; l < s.layers; ++l) {
        const auto& layer = model.layer(l);
        const Vector<T>& b = layer.query_key_value_bias;  // empty, or [bq bk bv]
        const auto bias = [&](Index first, Index count) { return b.size() ? Vector<T>(b.segment(first, count)) : b; };

        // attention
        Matrix<T> h = norm(x, layer.attention_norm_weight, layer.attention_norm_bias);  // (n × C)
        Matrix<T> queries = linear(h, layer.query(), bias(0, query_width));             // (n × H·d)
        Matrix<T> keys = linear(h, layer.key(), bias(query_width, key_value_width));    // (n × H_kv·d)
        Matrix<T> values =
            linear(h, layer.value(), bias(query_width + key_value_width, key_value_width));  // (n × H_kv·d)
        HeadStack<T> q = split_heads(queries, s.heads);                                      // H × (n × d)
        HeadStack<T> k = split_heads(keys, s.key_value_heads);                               // H_kv × (n × d)
        HeadStack<T> v = split_heads(values, s.key_value_heads);                             // H_kv × (n × d)
        if (s.positions == PositionEncoding::rotary) {
            model.rope().apply(q);  // position i turns row i
            model.rope().apply(k);
        }
        attention_options.scale = T(s.score_scale(l));                       // 1/√d, unless the config says otherwise
        HeadsResult<T> attended = attend_heads(q, k, v, attention_options);  // H × (n × d), H × (n × n)
        for (Index head = 0; head < s.heads; ++head)
            if (ablated[std::size_t(l)][std::size_t(head)]) attended.outputs.head(head).setZero();
        Matrix<T> merged = merge_heads(attended.outputs);      // (n × H·d)
        x += linear(merged, layer.output, layer.output_bias);  // (n × C)
        if (options.keep_attention) attention.push_back(std::move(attended.weights));

        // MLP
        Matrix<T> m = norm(x, layer.mlp_norm_weight, layer.mlp_norm_bias);  // (n × C)
        Matrix<T> hidden = linear(m, layer.up, layer.up_bias);              // (n × M)
        if (s.gated_mlp) {
            Matrix<T> gate = linear(m, layer.gate, layer.gate_bias);  // (n × M)
            activate(gate);
            hidden = gate.cwiseProduct(hidden);  // SwiGLU: act(x · W_gate) ⊙ (x · W_up)
        } else {
            activate(hidden);
        }
        x += linear(hidden, layer.down, layer.down_bias);  // (n × C)
    }

    ForwardResult<T> result;
    Matrix<T> final = norm(x, model.final_norm_weight(), model.final_norm_bias());  // (n × C)
    result.logits = project(final, model.unembedding());                            // (n × V)
    if (options.keep_attention) result.attention = ModelAttention<T>(std::move(attention));
    return result;
}

}  // namespace attn
