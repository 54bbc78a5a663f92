#pragma once
// Generation: a Model continues a prompt token by token on a Decoder (model/decoder.hpp),
// choosing each token with a TokenSampler (core/sampling.hpp), and can keep, for every token
// it writes, the attention row of the position that chose it: where each head looked.
//
//   prefill the prompt → logits of the next token → pick → step → … until the model's end
//   token, the context's end or max_tokens.

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <vector>

#include "attn/core/sampling.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/model/decoder.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"
#include "attn/threads.hpp"

namespace attn {

/// generate's options. It runs a Decoder, so how each of its appends runs is a DecodeOptions,
/// nested as `decode`, as HookOptions nests the ForwardOptions of its pass: an options struct of
/// a call built on another holds that call's options, never copies of their fields.
struct GenerationOptions {
    SamplingOptions sampling;      ///< greedy by default
    Index max_tokens = 0;          ///< the most tokens to write (0: until </s> or the context's end)
    bool stop_at_end = true;       ///< stop after writing the model's end token (ModelSettings::end_token)
    std::vector<HeadId> ablate{};  ///< heads silenced at every position (the Decoder's, as ForwardOptions::ablate)
    /// The prompt's prefill and each step: decode.keep_attention keeps each written token's
    /// attention rows (GenerationResult::attention); decode.threads runs the prefill and the
    /// steps (a step's products split by columns), the written ids the same for every choice,
    /// kept Workers suiting the steps best (no threads started per token); decode.all_logits
    /// and decode.last_attention_only are not used (the last position's logits are the ones
    /// sampled, its attention rows the ones kept: a prompt's others are never held).
    DecodeOptions decode;
};

/// Why generation stopped; when two hold at once, the first listed here (as tools/references/generate.py).
enum class StopReason {
    end,         ///< it wrote </s>
    context,     ///< the text filled the model's context
    max_tokens,  ///< it wrote max_tokens tokens
};

inline const char* to_string(StopReason reason) {
    switch (reason) {
        case StopReason::end:
            return "end";
        case StopReason::context:
            return "context";
        case StopReason::max_tokens:
            return "max_tokens";
    }
    return "?";
}

template <class T>
struct GenerationResult {
    std::vector<int> prompt;            ///< the ids it continued
    std::vector<int> ids;               ///< the ids it wrote (</s> included if it wrote it)
    std::vector<double> probabilities;  ///< the model's probability of each written id (softmax of its logits)
    /// Per written token k, if kept: every layer's heads × (1 × (prompt + k)), the attention row
    /// of the position whose logits chose it (the prompt's last for the first token);
    /// attention[k].visible(l, 0) the keys that row could see (a sliding layer's window).
    std::vector<ModelAttention<T>> attention;
    StopReason stop = StopReason::end;
    /// The prompt's forward pass, wall-clock time; its working memory is taken before, with the
    /// decoder's caches (Decoder::reserve).
    double prefill_milliseconds = 0.0;
    /// The mean wall-clock time of the steps after it (a step per written token but the last),
    /// sampling included; 0 if there were none.
    double step_milliseconds = 0.0;
};

namespace detail {

/// The last row of every layer's heads × (rows × positions), as heads × (1 × positions).
template <class T>
ModelAttention<T> last_attention_row(const ModelAttention<T>& attention) {
    std::vector<AttentionWeights<T>> rows;
    for (Index l = 0; l < attention.layers(); ++l) {
        const AttentionWeights<T>& layer = attention.layer(l);
        AttentionWeights<T> one(layer.heads(), 1, layer.cols());
        for (Index h = 0; h < layer.heads(); ++h) one.head(h) = layer.head(h).bottomRows(1);
        rows.push_back(std::move(one));
    }
    return ModelAttention<T>(std::move(rows), attention.windows());
}

}  // namespace detail

/// Continues prompt (1 … context ids) with `model`, as options say. Reproducible: the same
/// model, prompt and options write the same ids (on every machine in double; in float, where
/// the same instructions run). Throws argument_error for a bad prompt or options.
template <class T>
GenerationResult<T> generate(const Model<T>& model, const std::vector<int>& prompt,
                             const GenerationOptions& options = {}) {
    const ModelSettings& s = model.settings();
    detail::check_token_ids("generate", s, prompt);
    if (options.max_tokens < 0)
        throw argument_error(
            detail::message("generate: max_tokens must be ≥ 0 (0: no limit), got ", options.max_tokens));
    TokenSampler sampler(options.sampling);
    // Room for what can be written, not the whole of a long context.
    const Index room =
        options.max_tokens > 0 ? std::min<Index>(s.longest, Index(prompt.size()) + options.max_tokens) : s.longest;
    Decoder<T> decoder(model, options.ablate, room);
    decoder.reserve(Index(prompt.size()));  // the prompt's working memory, with the caches: not in its timing
    DecodeOptions decode = options.decode;
    decode.all_logits = false;          // only the last position's are sampled,
    decode.last_attention_only = true;  // and only its attention row is kept

    GenerationResult<T> out;
    out.prompt = prompt;
    using Clock = std::chrono::steady_clock;
    const auto milliseconds_since = [](Clock::time_point start) {
        return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    const Clock::time_point prefill = Clock::now();
    DecodeResult<T> next = decoder.append(prompt, decode);
    out.prefill_milliseconds = milliseconds_since(prefill);
    const Clock::time_point steps = Clock::now();
    Index step_count = 0;
    // The text (prompt and written ids) never grows past the context.
    if (Index(prompt.size()) == s.longest) {
        out.stop = StopReason::context;
        return out;
    }
    for (;;) {
        const auto logits = next.logits.row(next.logits.rows() - 1);  // (1 × V)
        const int id = sampler.next(logits);
        out.ids.push_back(id);
        out.probabilities.push_back(token_probability(logits, id));
        if (decode.keep_attention) {
            out.attention.push_back(detail::last_attention_row(next.attention));
        }
        if (options.stop_at_end && id == s.end_token) {
            out.stop = StopReason::end;
            break;
        }
        if (decoder.positions() + 1 == s.longest) {  // the written id fills the context
            out.stop = StopReason::context;
            break;
        }
        if (options.max_tokens > 0 && Index(out.ids.size()) == options.max_tokens) {
            out.stop = StopReason::max_tokens;
            break;
        }
        decoder.step_into(id, decode, next);  // the same storage every step
        ++step_count;
    }
    if (step_count > 0) out.step_milliseconds = milliseconds_since(steps) / double(step_count);
    return out;
}

}  // namespace attn
