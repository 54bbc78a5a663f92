#pragma once
// Incremental decoding: a Model's keys and values of every position so far, kept in one
// KeyValueCache per layer, so that each new token costs one position's work instead of a
// forward pass over the whole text.
//
//   Decoder decoder(model);
//   decoder.append(prompt)          // prefill: positions 0 … p − 1, logits (1 × V) of the last
//   decoder.step(id)                // position p: its logits (1 × V), and if asked its attention
//                                   // row in every layer and head, heads × (1 × p + 1) per layer
//
// Each call runs the fast forward (model/forward.hpp) on its new positions only, reading the
// earlier ones' keys and values from the caches; the rows it returns are Model::forward's rows
// for the whole text to rounding (tests/test_decoder.cpp). A Decoder is one text's state; the Model stays immutable, so
// any number of Decoders can run on one Model at once, from different threads.
//
// Memory (cache_bytes): a layer without a window keeps every position, capacity × 2 H_kv·d
// numbers, the capacity being the model's context unless the decoder is given less; a sliding
// layer (LayerDescription::window = w) keeps only the last w positions, in min(capacity, w +
// max(1, w/4)) rows × 2 H_kv·d numbers whatever the text's length (core/kv_cache.hpp). Rotary positions
// stay absolute: a key is rotated at its own position when stored and never moved in angle.

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "attn/core/kv_cache.hpp"
#include "attn/core/types.hpp"
#include "attn/core/weights_on_demand.hpp"
#include "attn/detail/check.hpp"
#include "attn/model/model.hpp"
#include "attn/model/types.hpp"
#include "attn/threads.hpp"

namespace attn {

/// How Decoder::append computes its positions.
struct DecodeOptions {
    /// Return every new position's logits; false: only the last one's (what generation needs,
    /// and it saves a (positions × C) · (C × V) product when prefilling).
    bool all_logits = false;
    /// Return the new positions' attention rows in every layer and head.
    bool keep_attention = false;
    /// With keep_attention, return the last new position's rows only, heads × (1 × positions)
    /// per layer: what generation reads of a prompt, whose n positions would keep layers × heads
    /// × n × positions numbers (604 MB for GPT-2 small's 1,024). The other positions attend as
    /// without keep_attention; the last one's row equals its row among all rows to rounding.
    bool last_attention_only = false;
    /// Threads (attn/threads.hpp). With at least 16 new positions each they share the
    /// positions; with fewer (a single step) they share every product's columns and attention's
    /// heads, if the model has 4 M weights or more or the threads are kept (else the caller runs
    /// it). Bit-identical for every choice.
    Threads threads;
};

/// What Decoder::append returns for n new positions, the last at position `positions − 1`.
template <class T>
struct DecodeResult {
    /// (n × V), or (1 × V) the last new position's unless all_logits: scores of the token after each
    Matrix<T> logits;
    /// If keep_attention, every layer's heads × (n × positions), or (1 × positions) if
    /// last_attention_only: row i is what new position positions − rows + i attends to among all
    /// positions so far. A 0 outside attention.visible(l, i) means the key could not be seen there
    /// (after the row, or before a sliding layer's window), not that it was given no weight.
    ModelAttention<T> attention;
    /// append_into's working memory for the next call (append and step return it empty).
    ForwardWorkspace<T> workspace;
};

/// One text being decoded by a Model: its keys and values so far.
template <class T>
class Decoder {
public:
    /// A decoder for `model` with nothing decoded yet, room for `capacity` positions (0: the
    /// model's whole context; a model with a long context may want less, since the caches take
    /// layers × capacity × 2 H_kv·d numbers at once). ablate: heads whose output is zeroed at
    /// every position (as ForwardOptions::ablate). The model must outlive the decoder.
    explicit Decoder(const Model<T>& model, std::vector<HeadId> ablate = {}, Index capacity = 0) : model_(&model) {
        const ModelSettings& s = model.settings();
        detail::silenced_heads("Decoder", s, ablate);  // checks them now, not at the first append
        forward_.ablate = std::move(ablate);
        if (capacity < 0 || capacity > s.longest)
            throw argument_error(detail::message("Decoder: capacity ", capacity, " is not in 0 … ", s.longest,
                                                 " (the model's context)"));
        caches_.reserve(std::size_t(s.layers));
        for (Index l = 0; l < s.layers; ++l)  // a sliding layer's cache keeps its window only
            caches_.emplace_back(s.key_value_heads, capacity == 0 ? s.longest : capacity, s.head_size, 0,
                                 s.layer(l).window);
    }

    /// The decoder keeps a pointer to its model: a temporary one would be gone after this line.
    explicit Decoder(const Model<T>&& model, std::vector<HeadId> ablate = {}, Index capacity = 0) = delete;

    const Model<T>& model() const { return *model_; }
    /// Positions decoded so far: the next token goes to this position.
    Index positions() const { return caches_.front().size(); }
    /// Positions that can still be appended before the context is full.
    Index room() const { return caches_.front().room(); }
    /// Layer l's cache: its keys (rotated) and values, key/value heads × (held × head size),
    /// positions cache(l).first() … positions() − 1 (from 0 unless the layer has a window).
    const KeyValueCache<T>& cache(Index l) const {
        detail::check_index("Decoder::cache", "layer", l, Index(caches_.size()));
        return caches_[std::size_t(l)];
    }
    /// Bytes of layer l's key/value cache: flat in the text's length for a sliding layer
    /// (KeyValueCache::bytes).
    std::size_t cache_bytes(Index l) const { return cache(l).bytes(); }
    /// Bytes of every layer's key/value cache together.
    std::size_t cache_bytes() const {
        std::size_t total = 0;
        for (const KeyValueCache<T>& cache : caches_) total += cache.bytes();
        return total;
    }

    /// Appends ids at positions positions() … positions() + n − 1 (a prompt, or any number of
    /// tokens at once): runs them through the model, attending to every earlier position, and
    /// keeps their keys and values. Throws argument_error, with nothing changed, for an empty
    /// ids, an id outside the vocabulary, or positions past the model's context.
    ///
    /// The decoder keeps the call's working memory (its (n × width) buffers: about 6 MB for GPT-2
    /// small's 128 positions, 50 KB for a step) for its next append or step: memory taken fresh
    /// costs a page fault per 4 KiB on first touch (a GPT-2 small prefill is 1.09–1.17× as fast
    /// without them: docs/DESIGN.md), which prompts of one length in turn, or steps, then pay once.
    DecodeResult<T> append(const std::vector<int>& ids, const DecodeOptions& options = {}) {
        DecodeResult<T> result;
        std::swap(result.workspace, workspace_);
        append_into(ids, options, result);
        std::swap(result.workspace, workspace_);  // the numbers are returned, the memory kept
        return result;
    }

    /// Takes now the memory that append (or step) of `positions` new positions would take at its
    /// start: the pass's (positions × width) buffers and a sliding layer's cache rows for them.
    /// A caller that knows its prompt's length takes that memory before timing the prompt, as
    /// the caches are taken at construction: generate does (about 6 MB for GPT-2 small's 128
    /// positions, ~5 µs a 4 KiB page in a VM: docs/DESIGN.md). Not needed for correctness; the
    /// appended numbers are the same bits either way. Throws argument_error, with nothing
    /// changed, unless 1 ≤ positions ≤ room().
    void reserve(Index positions) {
        if (positions < 1 || positions > room())
            throw argument_error(detail::message("Decoder::reserve: positions = ", positions, " is not in 1 … ", room(),
                                                 " (the room left in the decoder's capacity of ",
                                                 caches_.front().capacity(), ")"));
        detail::size_pass_buffers(workspace_.get(), model_->settings(), positions);
        for (KeyValueCache<T>& cache : caches_) cache.make_room(positions);
    }

    /// append into `result`, whose storage (logits, attention rows, working memory) is reused:
    /// a loop of steps into one result, on one thread or kept Workers, allocates nothing once
    /// the shapes repeat.
    void append_into(const std::vector<int>& ids, const DecodeOptions& options, DecodeResult<T>& result) {
        const ModelSettings& s = model_->settings();
        detail::check_token_ids("Decoder::append", s, ids);  // 1 … context ids of the vocabulary
        if (static_cast<Index>(ids.size()) > room())
            throw argument_error(detail::message("Decoder::append: ", ids.size(), " more positions after the ",
                                                 positions(), " decoded would pass the decoder's capacity of ",
                                                 caches_.front().capacity(), " positions"));
        const int available = detail::available_threads(options.threads, "Decoder::append");

        forward_.keep_attention = options.keep_attention;
        detail::PassSetup<T> setup;
        setup.caches = &caches_;
        setup.first_position = positions();
        setup.last_logits_only = !options.all_logits;
        setup.last_attention_only = options.last_attention_only;
        // The pass writes into a ForwardResult: `result`'s storage is lent to it for the call.
        ForwardResult<T> pass_result;
        const auto lend = [&] {
            std::swap(pass_result.logits, result.logits);
            std::swap(pass_result.workspace, result.workspace);
            std::swap(pass_result.attention, result.attention);
        };
        const Index n = static_cast<Index>(ids.size());
        // A sliding layer's storage: the window before these positions, then room for them.
        for (KeyValueCache<T>& cache : caches_) cache.make_room(n);
        lend();
        try {
            detail::FastForward<T>(*model_, ids, forward_, pass_result, setup).run(options.threads.kept(), available);
        } catch (...) {
            lend();
            throw;
        }
        lend();
        for (KeyValueCache<T>& cache : caches_) {
            cache.extend(n);
            cache.settle();  // back to O(window) after a long append
        }
    }

    /// Appends one token: its logits (1 × V), the scores of the token after it, and if asked
    /// its attention row, heads × (1 × positions) per layer.
    DecodeResult<T> step(int id, const DecodeOptions& options = {}) { return append(std::vector<int>{id}, options); }

    /// step into `result`, whose storage is reused as append_into's.
    void step_into(int id, const DecodeOptions& options, DecodeResult<T>& result) {
        one_id_.assign(1, id);
        append_into(one_id_, options, result);
    }

    /// Forgets positions `positions` … (to continue the same prefix differently). With a sliding
    /// layer, only back to where its cache still holds the window the next position sees (about
    /// one position back after a step): argument_error otherwise, with nothing changed.
    void truncate(Index positions) {
        for (const KeyValueCache<T>& cache : caches_)
            if (positions > 0 && positions <= cache.size() && cache.window() > 0 &&
                std::max<Index>(0, positions - cache.window() + 1) < cache.first())
                throw argument_error(detail::message("Decoder::truncate: positions = ", positions,
                                                     " needs the keys from position ", positions - cache.window() + 1,
                                                     " on; a sliding layer's cache (window ", cache.window(),
                                                     ") holds ", cache.first(), " … ", cache.size() - 1));
        for (KeyValueCache<T>& cache : caches_) cache.truncate(positions);
    }
    void reset() { truncate(0); }

private:
    const Model<T>* model_;
    ForwardOptions forward_;                // its ablation, set once
    std::vector<KeyValueCache<T>> caches_;  // per layer
    std::vector<int> one_id_;               // step_into's id, kept to allocate nothing
    ForwardWorkspace<T> workspace_;         // append's and step's working memory, kept between calls
};

}  // namespace attn
