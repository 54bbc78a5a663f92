// Peak memory of loading a quantized GGUF model with WeightStorage::stored_quantized, against the
// file's size (Linux only; ctest runs it as gguf_peak_memory: `attn_peak_memory gguf`).
//
// The parent writes a ~60 MB Llama-shaped GGUF file (8 layers of width 1024 and MLP 2816, a
// vocabulary of 4096, tied embeddings) whose matrices are Q4_K, with Q6_K values and down
// projections and a Q8_0 embedding, as a Q4_K_M download mixes them; every code random, every
// F16 scale small and finite. A child process that did not write it then loads it with
// Model<float>::load(path, {stored_quantized}), runs a two-token forward (finite logits), and
// prints its peak resident set (VmHWM) and the file's size. The ratio must stay at or below 1.25:
// the blocks are read from the file into place, so the model holds the file's bytes once, plus
// the process itself; a float copy of any whole matrix on the way would show (a layer's is 50 MB).
//
// Under a sanitizer the ratio is printed, not held to the bound. Exit status 77 (a skip for
// ctest) where /proc/self/status is missing.

#include <attn/model/model.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gguf_writer.hpp"
#include "model_instance.hpp"  // Model<float> and its forward pass compiled once, apart
#include "peak_memory.hpp"

namespace fs = std::filesystem;

// Named, not anonymous: the three files are compiled as one translation unit.
namespace attn::test::gguf_load {

constexpr double bound = peak_bound;

constexpr std::uint64_t kWidth = 1024, kMlp = 2816, kVocabulary = 4096, kLayers = 8, kHeads = 16;

/// rows × cols values of a ggml block type: random codes, small finite F16 scales.
std::vector<std::uint8_t> random_blocks(std::uint32_t type, std::uint64_t rows, std::uint64_t cols,
                                        std::mt19937& engine) {
    namespace id = attn::test::ggml_id;
    const std::uint64_t values = type == id::Q8_0 ? 32 : 256;
    const std::uint64_t width = type == id::Q8_0 ? 34 : type == id::Q4_K ? 144 : 210;
    std::vector<std::uint8_t> bytes(rows * cols / values * width);
    for (std::uint8_t& b : bytes) b = std::uint8_t(engine());
    const auto small_half = [&](std::uint8_t* p) {  // 2^-12 … 2^-9, either sign
        const std::uint32_t bits = (engine() & 1u) << 15 | (3 + engine() % 3) << 10 | (engine() & 0x3FFu);
        p[0] = std::uint8_t(bits & 0xFF);
        p[1] = std::uint8_t(bits >> 8);
    };
    for (std::uint64_t at = 0; at < bytes.size(); at += width) {
        if (type == id::Q6_K) {
            small_half(&bytes[at + 208]);
        } else {
            small_half(&bytes[at]);
            if (type == id::Q4_K) small_half(&bytes[at + 2]);
        }
    }
    return bytes;
}

std::vector<std::uint8_t> ones(std::uint64_t count) {
    std::vector<std::uint8_t> bytes(count * 4);
    const float one = 1.0f;
    for (std::uint64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + 4 * i, &one, 4);
    return bytes;
}

void write_file(const fs::path& path) {
    namespace id = attn::test::ggml_id;
    namespace type = attn::test::gguf_type;
    attn::test::GgufWriter w;
    w.string("general.architecture", "llama");
    w.u32("llama.context_length", 64).u32("llama.embedding_length", kWidth).u32("llama.block_count", kLayers);
    w.u32("llama.feed_forward_length", kMlp).u32("llama.attention.head_count", kHeads);
    w.u32("llama.attention.head_count_kv", kHeads);
    w.entry_with("llama.attention.layer_norm_rms_epsilon", type::float32,
                 [](attn::test::LittleEndianBytes& o) { o.f32(1e-5f); });
    // The writer leaves out data sections past 16 MB (its tests place offsets far past the file):
    // the tensors are given their offsets here, and their bytes appended after its header.
    struct Pending {
        std::uint64_t offset;
        std::vector<std::uint8_t> data;
    };
    std::vector<Pending> pending;
    std::uint64_t next = 0;
    const auto tensor = [&](const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t ggml,
                            std::vector<std::uint8_t> data) {
        w.tensor(name, std::move(dims), ggml, {}, next);
        pending.push_back({next, std::move(data)});
        next = (next + pending.back().data.size() + w.alignment - 1) / w.alignment * w.alignment;
    };
    std::mt19937 engine(2026);
    tensor("token_embd.weight", {kWidth, kVocabulary}, id::Q8_0, random_blocks(id::Q8_0, kVocabulary, kWidth, engine));
    tensor("output_norm.weight", {kWidth}, id::F32, ones(kWidth));
    for (std::uint64_t l = 0; l < kLayers; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        tensor(b + "attn_norm.weight", {kWidth}, id::F32, ones(kWidth));
        tensor(b + "ffn_norm.weight", {kWidth}, id::F32, ones(kWidth));
        for (const char* name : {"attn_q.weight", "attn_k.weight", "attn_output.weight"})
            tensor(b + name, {kWidth, kWidth}, id::Q4_K, random_blocks(id::Q4_K, kWidth, kWidth, engine));
        tensor(b + "attn_v.weight", {kWidth, kWidth}, id::Q6_K, random_blocks(id::Q6_K, kWidth, kWidth, engine));
        for (const char* name : {"ffn_gate.weight", "ffn_up.weight"})
            tensor(b + name, {kWidth, kMlp}, id::Q4_K, random_blocks(id::Q4_K, kMlp, kWidth, engine));
        tensor(b + "ffn_down.weight", {kMlp, kWidth}, id::Q6_K, random_blocks(id::Q6_K, kWidth, kMlp, engine));
    }
    std::vector<std::uint8_t> bytes = w.bytes();  // the header, padded to the data section
    const std::size_t data_start = bytes.size();
    bytes.resize(data_start + std::size_t(next), 0);
    for (const Pending& t : pending)
        std::copy(t.data.begin(), t.data.end(), bytes.begin() + static_cast<std::ptrdiff_t>(data_start + t.offset));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// The child: loads the model kept quantized, runs two tokens, prints "<peak> <file bytes>".
int measure(const std::string& path) {
    attn::LoadOptions options;
    options.weights = attn::WeightStorage::stored_quantized;
    const auto model = attn::Model<float>::load(path, options);
    const long long peak = peak_resident_bytes();
    const auto logits = model.forward({3, 7}).logits;
    if (!logits.allFinite() || logits.cols() != attn::Index(kVocabulary)) {
        std::fprintf(stderr, "%s: the forward pass gave %ld logits, or not finite ones\n", path.c_str(),
                     static_cast<long>(logits.cols()));
        return 1;
    }
    std::printf("%lld %lld\n", peak, static_cast<long long>(fs::file_size(path)));
    return 0;
}

int child(int argc, char** argv) {
    return argc == 1 ? measure(argv[0]) : usage_error("gguf --measure FILE");
}

int parent(const Parent& parent) {
    const fs::path& dir = parent.scratch;
    fs::create_directories(dir);
    const fs::path path = dir / "model.Q4_K_M.gguf";
    int status = 0;
    try {
        write_file(path);
        const std::string command = parent.child_command("'" + path.string() + "'");
        const ChildMeasurement child = measure_in_child(command);
        const long long peak = child.peak, bytes = child.bytes;
        const int exit_status = child.exit_status;
        if (!child.ok()) {
            std::printf("FAILED: %s (exit status %d)\n", command.c_str(), exit_status);
            status = 1;
        } else {
            const double ratio = double(peak) / double(bytes);
            const bool ok = under_sanitizer || ratio <= bound;
            std::printf(
                "%s Q4_K/Q6_K/Q8_0 GGUF, stored_quantized: peak %.1f MB for a %.1f MB file (%.3fx, bound %.2fx)%s\n",
                ok ? "ok" : "FAILED", double(peak) / 1e6, double(bytes) / 1e6, ratio, bound,
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

}  // namespace attn::test::gguf_load
