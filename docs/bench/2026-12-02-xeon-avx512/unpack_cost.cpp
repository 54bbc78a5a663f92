// Cost of the copies Model::layer, embedding and unembedding make (weights in panels).
// Build: g++ -std=c++17 -O2 -march=native -DNDEBUG -Iinclude -isystem /usr/include/eigen3 <this file>; run with
// checkpoint directories (a path with BF16 in it is loaded with stored_16_bit).
#include <attn/model/model.hpp>
#include <chrono>
#include <cstdio>
int main(int argc, char** argv) {
    for (int a = 1; a < argc; ++a) {
        attn::LoadOptions options;
        std::string path = argv[a];
        if (path.find("BF16") != std::string::npos) options.weights = attn::WeightStorage::stored_16_bit;
        const auto t0 = std::chrono::steady_clock::now();
        const auto model = attn::Model<float>::load(path, options);
        const auto t1 = std::chrono::steady_clock::now();
        const auto seconds = [](auto f) {
            double best = 1e9;
            for (int r = 0; r < 5; ++r) {
                const auto s = std::chrono::steady_clock::now();
                f();
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
            }
            return best * 1e3;
        };
        double sink = 0;
        const double layer = seconds([&] { sink += model.layer(1).up(0, 0); });
        const double vec = seconds([&] { sink += model.layer_vector(1, attn::LayerSlot::mlp_norm)(0); });
        const double unembedding = seconds([&] { sink += model.unembedding()(0, 0); });
        const double embedding = seconds([&] { sink += model.embedding()(0, 0); });
        const double column = seconds([&] { sink += model.unembedding_column(17)(0); });
        std::printf(
            "%s: load %.0f ms; layer(1) %.2f ms; layer_vector %.4f ms; unembedding() %.1f ms; embedding() %.1f ms; "
            "unembedding_column %.3f ms (%g)\n",
            path.c_str(), std::chrono::duration<double>(t1 - t0).count() * 1e3, layer, vec, unembedding, embedding,
            column, sink);
    }
}
