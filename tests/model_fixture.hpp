#pragma once
// A tiny random model in the store model's format, written to a scratch directory,
// so the loader and the forward pass can be tested (and corrupted) without the
// shipped model: 2 layers, 2 heads of 4, width 8, MLP 16, context 12, and the
// tokenizer fixture of tests/data/tokenizer.

#include <attn/formats/safetensors.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "support.hpp"

namespace attn::test {

struct TinyModel {
    std::filesystem::path directory;
    nlohmann::json manifest;
    std::map<std::string, Matrix<float>> tensors;  // 1-D tensors are stored as (1 × n)

    static int vocabulary_size() {
        std::ifstream in(std::filesystem::path(ATTN_TEST_DATA_DIR) / "tokenizer" / "vocabulary.txt");
        int lines = 0;
        for (std::string line; std::getline(in, line);) ++lines;
        return lines;
    }

    explicit TinyModel(const std::string& name, unsigned seed = 1)
        : directory(std::filesystem::temp_directory_path() /
                    ("attn_test_model_" + name + "_" + std::to_string(std::random_device{}()))) {
        const int c = 8, mlp = 16, v = vocabulary_size();
        manifest = {{"format", "attn-store-model"},
                    {"version", 1},
                    {"settings",
                     {{"layers", 2},
                      {"heads", 2},
                      {"dimensions", c},
                      {"head_size", 4},
                      {"mlp_width", mlp},
                      {"longest", 12},
                      {"vocabulary_size", v},
                      {"norm", "layernorm"},
                      {"norm_epsilon", 1e-5},
                      {"activation", "gelu_erf"},
                      {"rope_base", 10000.0},
                      {"rope_pairing", "rotate_half"},
                      {"attention_bias", false},
                      {"tied_embeddings", true},
                      {"weight_layout", "in_out"}}},
                    {"tokenizer", {{"vocabulary", "vocabulary.txt"}, {"merges", "merges.txt"}}},
                    {"weights", "model.safetensors"}};
        unsigned s = seed;
        auto add = [&](const std::string& tensor, Index rows, Index cols, double stddev, double mean = 0.0) {
            Matrix<float> m = random_matrix<float>(rows, cols, s++, stddev);
            m.array() += static_cast<float>(mean);
            tensors[tensor] = m;
        };
        add("embedding", v, c, 1.0);
        add("final_norm.weight", 1, c, 0.1, 1.0);
        add("final_norm.bias", 1, c, 0.1);
        for (int l = 0; l < 2; ++l) {
            const std::string p = "layers." + std::to_string(l) + ".";
            add(p + "attention_norm.weight", 1, c, 0.1, 1.0);
            add(p + "attention_norm.bias", 1, c, 0.1);
            for (const char* w : {"attention.query", "attention.key", "attention.value", "attention.output"})
                add(p + w, c, c, 0.5);
            add(p + "mlp_norm.weight", 1, c, 0.1, 1.0);
            add(p + "mlp_norm.bias", 1, c, 0.1);
            add(p + "mlp.up.weight", c, mlp, 0.3);
            add(p + "mlp.up.bias", 1, mlp, 0.1);
            add(p + "mlp.down.weight", mlp, c, 0.3);
            add(p + "mlp.down.bias", 1, c, 0.1);
        }
    }

    TinyModel(const TinyModel&) = delete;
    TinyModel& operator=(const TinyModel&) = delete;
    ~TinyModel() {
        std::error_code ignored;
        std::filesystem::remove_all(directory, ignored);
    }

    /// Writes manifest, weights and tokenizer files; returns the directory.
    const std::filesystem::path& write() const {
        std::filesystem::remove_all(directory);
        std::filesystem::create_directories(directory);
        std::ofstream(directory / "manifest.json") << manifest.dump(2);
        std::vector<SafeTensorsEntry> entries;
        for (const auto& [tensor, m] : tensors) {
            if (m.rows() == 1 && tensor.find("embedding") == std::string::npos)
                entries.push_back(safetensors_entry(tensor, Vector<float>(m.row(0).transpose())));
            else
                entries.push_back(safetensors_entry(tensor, m));
        }
        const auto bytes = safetensors_bytes(entries);
        std::ofstream(directory / "model.safetensors", std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        for (const char* file : {"vocabulary.txt", "merges.txt"})
            std::filesystem::copy_file(std::filesystem::path(ATTN_TEST_DATA_DIR) / "tokenizer" / file, directory / file,
                                       std::filesystem::copy_options::overwrite_existing);
        return directory;
    }
};

}  // namespace attn::test
