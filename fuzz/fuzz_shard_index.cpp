// libFuzzer target: arbitrary bytes as a model.safetensors.index.json, checked by
// attn::TensorFiles::from_index_text against four fixed shards held in memory:
//   model-00001-of-00002.safetensors  wte [4, 3] F32, h.0.attn.w [3, 3] BF16
//   model-00002-of-00002.safetensors  h.1.attn.w [3, 3] F16, ln_f.weight [3] F32
//   dup.safetensors                   wte [4, 3] F32 (the first shard's wte again)
//   empty.safetensors                 no tensors
// Only attn::format_error may be thrown (and is caught); any other exception, crash,
// sanitizer report or broken invariant is a finding.
//
// Invariants checked for indexes that are accepted: the tensors are exactly the keys of
// weight_map (parsed here on its own with plain nlohmann::json), each read from the
// shard weight_map names, with that shard's bytes.

#include <attn/formats/tensor_files.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_shard_index: invariant broken: %s\n", what);
        std::abort();
    }
}

attn::SafeTensorsEntry halves(std::string name, attn::DType dtype, std::vector<std::int64_t> shape,
                              std::uint16_t first) {
    attn::SafeTensorsEntry e{std::move(name), dtype, std::move(shape), {}};
    for (std::size_t k = 0; k < 9; ++k) {
        const auto bits = static_cast<std::uint16_t>(first + 37 * k);
        e.bytes.push_back(static_cast<std::uint8_t>(bits & 0xFF));
        e.bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
    }
    return e;
}

const std::map<std::string, attn::SafeTensors>& shards() {
    static const std::map<std::string, attn::SafeTensors> all = [] {
        const auto wte =
            attn::safetensors_entry("wte", {4, 3}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        std::map<std::string, attn::SafeTensors> out;
        const auto add = [&](const std::string& file, const std::vector<attn::SafeTensorsEntry>& tensors) {
            out.emplace(file, attn::SafeTensors::from_bytes(attn::safetensors_bytes(tensors), file));
        };
        add("model-00001-of-00002.safetensors", {wte, halves("h.0.attn.w", attn::DType::BF16, {3, 3}, 0x3F80)});
        add("model-00002-of-00002.safetensors",
            {halves("h.1.attn.w", attn::DType::F16, {3, 3}, 0x3C00),
             attn::safetensors_entry("ln_f.weight", {3}, std::vector<float>{1, 1, 1})});
        add("dup.safetensors", {wte});
        add("empty.safetensors", {});
        return out;
    }();
    return all;
}

void check_accepted(const attn::TensorFiles& files, std::string_view text) {
    const nlohmann::json index = nlohmann::json::parse(text.begin(), text.end());
    const nlohmann::json& map = index.at("weight_map");
    std::vector<std::string> listed;
    for (const auto& [tensor, file] : map.items()) listed.push_back(tensor);
    require(files.names() == listed, "names() are weight_map's keys");
    for (const auto& [tensor, file] : map.items()) {
        const std::string& shard_file = file.get_ref<const std::string&>();
        const attn::SafeTensors& shard = shards().at(shard_file);
        require(files.source(tensor) == shard.source(), "source() is the shard weight_map names");
        require(files.raw(tensor) == shard.raw(tensor), "bytes from the named shard");
        require(files.info(tensor).shape == shard.info(tensor).shape, "shape from the named shard");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto files = attn::TensorFiles::from_index_text(text, shards(), "fuzz index");
        check_accepted(files, text);
    } catch (const attn::format_error&) {
        // a rejected index: the expected outcome for most inputs
    }
    return 0;
}
