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
#include "attn/core/scoring.hpp"
#include "attn/core/types.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// ids: 1 … longest token ids → logits (n × V) and, if options.keep_attention, every
/// layer's weights, layers × H × (n × n). options.ablate zeroes the named heads' outputs
/// before the output projection; threads and workers are not used. Each layer follows its
/// description (settings().layer(l), model/types.hpp): every option is a step below.
template <class T>
ForwardResult<T> reference_forward(const Model<T>& model, const std::vector<int>& ids,
                                   const ForwardOptions& options = {}) {
    const ModelSettings& s = model.settings();
    detail::check_token_ids("reference_forward", s, ids);
    const std::vector<std::vector<bool>> ablated = detail::silenced_heads("reference_forward", s, options.ablate);
    const Index n = static_cast<Index>(ids.size());
    const Index query_width = s.query_width(), key_value_width = s.key_value_width();

    const auto linear = [](const Matrix<T>& x, const auto& weight, const Vector<T>& bias) {  // x · W (+ b)
        return bias.size() != 0 ? project(x, weight, bias) : project(x, weight);
    };

    AttentionOptions<T> attention_options;  // causal
    attention_options.keep_weights = options.keep_attention;
    attention_options.fused = false;  // the chapter's steps: scores, mask, softmax, weights · values

    Matrix<T> x = embed(model.embedding(), ids);              // (n × C) the residual stream
    if (s.embedding_scale != 1.0) x *= T(s.embedding_scale);  // Gemma: × √C, in the checkpoint's type
    if (s.position_encoding == PositionEncoding::learned) x += learned_positions(model.position_embedding(), n);

    std::vector<AttentionWeights<T>> attention;
    for (Index l = 0; l < s.layers; ++l) {
        const LayerDescription& describe = s.layer(l);
        const auto& layer = model.layer(l);
        const auto norm = [&](const Matrix<T>& input, const Vector<T>& weight, const Vector<T>& bias) {  // (n × C)
            return describe.norm == Norm::rms_norm ? rms_norm(input, weight, describe.norm_epsilon)
                                                   : layer_norm(input, weight, bias, describe.norm_epsilon);
        };
        const auto activate = [&](Matrix<T>& hidden) {
            if (describe.activation == MlpActivation::gelu_tanh)
                gelu_tanh_in_place(hidden);
            else if (describe.activation == MlpActivation::silu)
                silu_in_place(hidden);
            else
                gelu_in_place(hidden);
        };
        const Vector<T>& b = layer.query_key_value_bias;  // empty, or [bq bk bv]
        const auto bias = [&](Index first, Index count) { return b.size() ? Vector<T>(b.segment(first, count)) : b; };

        // attention
        Matrix<T> h = describe.input_norms ? norm(x, layer.attention_norm_weight, layer.attention_norm_bias) : x;
        Matrix<T> queries = linear(h, layer.query(), bias(0, query_width));           // (n × H·d)
        Matrix<T> keys = linear(h, layer.key(), bias(query_width, key_value_width));  // (n × H_kv·d)
        Matrix<T> values =
            linear(h, layer.value(), bias(query_width + key_value_width, key_value_width));  // (n × H_kv·d)
        if (describe.query_key_norm == QueryKeyNorm::per_head) {  // each head's numbers (Qwen3)
            queries = rms_norm_heads(queries, layer.query_norm, s.heads, describe.norm_epsilon);
            keys = rms_norm_heads(keys, layer.key_norm, s.key_value_heads, describe.norm_epsilon);
        } else if (describe.query_key_norm == QueryKeyNorm::whole) {  // all heads' numbers together (OLMo-2)
            queries = rms_norm(queries, layer.query_norm, describe.norm_epsilon);
            keys = rms_norm(keys, layer.key_norm, describe.norm_epsilon);
        }
        HeadStack<T> q = split_heads(queries, s.heads);           // H × (n × d)
        HeadStack<T> k = split_heads(keys, s.key_value_heads);    // H_kv × (n × d)
        HeadStack<T> v = split_heads(values, s.key_value_heads);  // H_kv × (n × d)
        if (describe.rotates()) {
            model.rope(l).apply(q);  // position i turns row i (the first rotary.rotated numbers of each head)
            model.rope(l).apply(k);
        }
        attention_options.scale = T(describe.score_scale);                   // 1/√d, unless the config says otherwise
        attention_options.window = describe.window;                          // the last `window` keys only, if > 0
        attention_options.score_cap = T(describe.score_cap);                 // cap · tanh(s / cap), if > 0
        HeadsResult<T> attended = attend_heads(q, k, v, attention_options);  // H × (n × d), H × (n × n)
        for (Index head = 0; head < s.heads; ++head)
            if (ablated[std::size_t(l)][std::size_t(head)]) attended.outputs.head(head).setZero();
        Matrix<T> merged = merge_heads(attended.outputs);                           // (n × H·d)
        Matrix<T> attention_out = linear(merged, layer.output, layer.output_bias);  // (n × C)
        if (describe.output_norms) attention_out = norm(attention_out, layer.attention_output_norm, Vector<T>());
        if (options.keep_attention) attention.push_back(std::move(attended.weights));

        // MLP: on x after attention, or on the same x as attention (parallel)
        Matrix<T> mlp_in = describe.residual == Residual::parallel ? x : Matrix<T>(x + attention_out);  // (n × C)
        Matrix<T> m = describe.input_norms ? norm(mlp_in, layer.mlp_norm_weight, layer.mlp_norm_bias) : mlp_in;
        Matrix<T> hidden = linear(m, layer.up, layer.up_bias);  // (n × M)
        if (describe.gated_mlp) {
            Matrix<T> gate = linear(m, layer.gate, layer.gate_bias);  // (n × M)
            activate(gate);
            hidden = gate.cwiseProduct(hidden);  // SwiGLU: act(x · W_gate) ⊙ (x · W_up)
        } else {
            activate(hidden);
        }
        Matrix<T> mlp_out = linear(hidden, layer.down, layer.down_bias);  // (n × C)
        if (describe.output_norms) mlp_out = norm(mlp_out, layer.mlp_output_norm, Vector<T>());
        if (describe.residual == Residual::parallel)
            x += attention_out + mlp_out;
        else
            x = mlp_in + mlp_out;
    }

    ForwardResult<T> result;
    Matrix<T> final = model.final_norm(x);                                    // (n × C)
    result.logits = project(final, model.unembedding());                      // (n × V)
    if (s.logit_cap > 0.0) soft_cap_in_place(result.logits, T(s.logit_cap));  // Gemma 2: cap · tanh(logit / cap)
    if (options.keep_attention) result.attention = ModelAttention<T>(std::move(attention), layer_windows(s));
    return result;
}

}  // namespace attn
