// libFuzzer target for a Hugging Face config.json: attn::settings_from_config and the tensor
// names it implies (model/architectures.hpp). The input is the file's text. Parsing may fail
// only with attn::format_error; settings it accepts must be consistent (heads divide by the
// key/value heads, sizes positive, an even head size for rotary positions), and their tensor
// names one set per layer, none twice. Anything else thrown, a crash, a sanitizer report or a
// broken invariant is a finding.

#include <attn/model/architectures.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace {

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "broken invariant: %s\n", what);
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const nlohmann::json config =
        nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
    if (config.is_discarded()) return 0;
    attn::ModelSettings s;
    try {
        s = attn::settings_from_config(config, "config.json");
    } catch (const attn::format_error&) {
        return 0;
    }
    require(s.layers > 0 && s.heads > 0 && s.key_value_heads > 0 && s.head_size > 0, "positive sizes");
    require(s.dimensions > 0 && s.mlp_width > 0 && s.longest > 0 && s.vocabulary_size > 0, "positive widths");
    require(s.heads % s.key_value_heads == 0, "key/value heads divide the heads");
    require(attn::Index(s.layer_descriptions.size()) == s.layers, "one description per layer");
    require(s.end_token < s.vocabulary_size, "end token in the vocabulary");
    require(s.final_norm_epsilon > 0, "positive epsilon");
    if (s.layers > 64) return 0;  // the names grow with the layers; a few are enough
    for (const char* prefix : {"", "transformer."}) {
        const attn::ModelSettings named = attn::with_tensor_prefix(s, prefix);
        std::set<std::string> seen;
        std::size_t count = 0;
        const auto add = [&](const std::string& name) {
            if (name.empty()) return;
            ++count;
            seen.insert(name);
        };
        for (const std::string* name :
             {&named.tensors.embedding, &named.tensors.position_embedding, &named.tensors.final_norm_weight,
              &named.tensors.final_norm_bias, &named.tensors.unembedding})
            add(*name);
        for (const attn::LayerDescription& layer : named.layer_descriptions) {
            require(layer.norm_epsilon > 0 && layer.score_scale > 0, "positive epsilon and scale");
            require(!layer.rotates() || (layer.rotary.rotated % 2 == 0 && layer.rotary.rotated <= s.head_size),
                    "an even rotated part of the head");
            for (const attn::LayerTensor& tensor : layer.tensors) {
                add(tensor.name);
                for (const attn::TensorPiece& piece : tensor.pieces) {
                    const auto [rows, cols] = attn::slot_shape(piece.slot, s, layer);
                    (void)rows;
                    require(piece.count > 0 && piece.to + piece.count <= cols, "pieces inside their slot");
                }
            }
        }
        require(seen.size() == count, "no tensor name twice");
    }
    return 0;
}
