// Peak memory of loading a model whose large matrices are packed in panels (Linux only; ctest
// runs it as model_peak_memory: `attn_peak_memory model`).
//
// The parent writes a Llama-shaped Hugging Face checkpoint of ~330 MB in F32 (8 layers of width
// 768 and MLP 2048, a vocabulary of 32,000, tied embeddings) and the same weights in BF16. A child
// process that did not write them then loads one with Model<float>::load (F32, the default
// storage: every matrix packed as float; BF16 with WeightStorage::stored_16_bit: kept in 16 bits),
// runs a two-token forward (finite logits) and prints its peak resident set (VmHWM) and the bytes
// the weights take as kept (parameters() × 4 or × 2). The ratio must stay at or below 1.05: each
// tensor is read into its panels a band of rows at a time, so the model holds its weights once,
// plus the process itself; a row-major copy of any whole matrix on the way would show (the
// unembedding is 98 MB in float, 30 % of the weights).
//
// Under a sanitizer the ratio is printed, not held to the bound. Exit status 77 (a skip for
// ctest) where /proc/self/status is missing.

#include <attn/formats/safetensors.hpp>
#include <attn/model/model.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model_instance.hpp"  // Model<float> and its forward pass compiled once, apart
#include "peak_memory.hpp"

namespace fs = std::filesystem;

// Named, not anonymous: the three files are compiled as one translation unit.
namespace attn::test::model_load {

constexpr double bound = 1.05;

constexpr std::int64_t kWidth = 768, kMlp = 2048, kVocabulary = 32000, kLayers = 8, kHeads = 12;

void write_checkpoint(const fs::path& dir, bool bf16) {
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": )" << kWidth << R"(, "intermediate_size": )"
                                       << kMlp << R"(, "num_attention_heads": )" << kHeads
                                       << R"(, "num_key_value_heads": )" << kHeads << R"(, "num_hidden_layers": )"
                                       << kLayers << R"(, "vocab_size": )" << kVocabulary << R"(,
  "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "hidden_act": "silu",
  "tie_word_embeddings": true, "torch_dtype": ")"
                                       << (bf16 ? "bfloat16" : "float32") << R"("})";
    std::mt19937 engine(2026);
    std::uniform_int_distribution<int> small(-64, 64);
    std::vector<attn::SafeTensorsEntry> entries;
    const auto tensor = [&](const std::string& name, std::vector<std::int64_t> shape, bool ones) {
        std::int64_t count = 1;
        for (std::int64_t d : shape) count *= d;
        attn::SafeTensorsEntry entry{name, bf16 ? attn::DType::BF16 : attn::DType::F32, shape, {}};
        entry.bytes.resize(std::size_t(count) * (bf16 ? 2 : 4));
        for (std::int64_t k = 0; k < count; ++k) {
            const float value = ones ? 1.0f : float(small(engine)) / 1024.0f;  // exact in BF16
            std::uint32_t bits;
            std::memcpy(&bits, &value, 4);
            if (bf16) {
                const auto high = std::uint16_t(bits >> 16);
                std::memcpy(entry.bytes.data() + 2 * k, &high, 2);
            } else {
                std::memcpy(entry.bytes.data() + 4 * k, &bits, 4);
            }
        }
        entries.push_back(std::move(entry));
    };
    tensor("model.embed_tokens.weight", {kVocabulary, kWidth}, false);
    tensor("model.norm.weight", {kWidth}, true);
    for (std::int64_t l = 0; l < kLayers; ++l) {
        const std::string b = "model.layers." + std::to_string(l) + ".";
        tensor(b + "input_layernorm.weight", {kWidth}, true);
        tensor(b + "post_attention_layernorm.weight", {kWidth}, true);
        for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"})
            tensor(b + "self_attn." + name + ".weight", {kWidth, kWidth}, false);
        tensor(b + "mlp.gate_proj.weight", {kMlp, kWidth}, false);
        tensor(b + "mlp.up_proj.weight", {kMlp, kWidth}, false);
        tensor(b + "mlp.down_proj.weight", {kWidth, kMlp}, false);
    }
    attn::write_safetensors(dir / "model.safetensors", entries);
}

/// The child: loads the model, runs two tokens, prints "<peak> <bytes of the weights as kept>".
int measure(const std::string& dir, bool sixteen_bit) {
    attn::LoadOptions options;
    if (sixteen_bit) options.weights = attn::WeightStorage::stored_16_bit;
    const auto model = attn::Model<float>::load(dir, options);
    const long long peak = peak_resident_bytes();
    const auto logits = model.forward({3, 7}).logits;
    if (!logits.allFinite() || logits.cols() != attn::Index(kVocabulary)) {
        std::fprintf(stderr, "%s: the forward pass gave %ld logits, or not finite ones\n", dir.c_str(),
                     static_cast<long>(logits.cols()));
        return 1;
    }
    std::printf("%lld %lld\n", peak, static_cast<long long>(model.parameters()) * (sixteen_bit ? 2 : 4));
    return 0;
}

int child(int argc, char** argv) {
    return argc == 2 ? measure(argv[0], std::string(argv[1]) == "16") : usage_error("model --measure DIR 16|32");
}

int parent(const Parent& parent) {
    const fs::path& dir = parent.scratch;
    int status = 0;
    try {
        for (const bool sixteen_bit : {false, true}) {
            const fs::path checkpoint = dir / (sixteen_bit ? "bf16" : "f32");
            write_checkpoint(checkpoint, sixteen_bit);
            const std::string command =
                parent.child_command("'" + checkpoint.string() + "' " + (sixteen_bit ? "16" : "32"));
            const ChildMeasurement child = measure_in_child(command);
            fs::remove_all(checkpoint);
            if (!child.ok()) {
                std::printf("FAILED: %s (exit status %d)\n", command.c_str(), child.exit_status);
                status = 1;
                continue;
            }
            const double ratio = double(child.peak) / double(child.bytes);
            const bool ok = under_sanitizer || ratio <= bound;
            std::printf("%s %s checkpoint, %s: peak %.1f MB for %.1f MB of weights as kept (%.3fx, bound %.2fx)%s\n",
                        ok ? "ok" : "FAILED", sixteen_bit ? "BF16" : "F32",
                        sixteen_bit ? "WeightStorage::stored_16_bit" : "packed as float", double(child.peak) / 1e6,
                        double(child.bytes) / 1e6, ratio, bound,
                        under_sanitizer ? " [sanitizer: not held to the bound]" : "");
            if (!ok) status = 1;
        }
    } catch (const std::exception& e) {
        std::printf("FAILED: %s\n", e.what());
        status = 1;
    }
    fs::remove_all(dir);
    return status;
}

}  // namespace attn::test::model_load
