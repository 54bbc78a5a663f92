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
    require(s.positions != attn::PositionEncoding::rotary || s.head_size % 2 == 0, "even rotary head size");
    require(s.end_token < s.vocabulary_size, "end token in the vocabulary");
    require(s.norm_epsilon > 0 && s.score_scale(0) > 0, "positive epsilon and scale");
    if (s.layers > 64) return 0;  // the names grow with the layers; a few are enough
    for (const char* prefix : {"", "transformer."}) {
        const attn::TensorNames names = attn::hugging_face_tensor_names(s, prefix);
        require(attn::Index(names.layers.size()) == s.layers, "one set of names per layer");
        std::set<std::string> seen;
        std::size_t count = 0;
        const auto add = [&](const std::string& name) {
            if (name.empty()) return;
            ++count;
            seen.insert(name);
        };
        add(names.embedding);
        add(names.position_embedding);
        add(names.final_norm_weight);
        add(names.final_norm_bias);
        add(names.unembedding);
        for (const attn::LayerTensorNames& layer : names.layers) {
            for (const std::string& name : layer.query_key_value) add(name);
            for (const std::string& name : layer.query_key_value_bias) add(name);
            for (const std::string* name :
                 {&layer.attention_norm_weight, &layer.attention_norm_bias, &layer.output, &layer.output_bias,
                  &layer.mlp_norm_weight, &layer.mlp_norm_bias, &layer.up, &layer.up_bias, &layer.gate,
                  &layer.gate_bias, &layer.down, &layer.down_bias})
                add(*name);
        }
        require(seen.size() == count, "no tensor name twice");
    }
    return 0;
}
