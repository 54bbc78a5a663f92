// scaling: the chapter's third listing ("Scale the scores"). Random queries and keys
// of 4, 32 and 256 numbers; 1,000 queries each score 16 keys, without and with the
// division by √size; the largest weight of each row, averaged.

#include <attn/attn.hpp>
#include <attn/core/numpy_random.hpp>

#include <iostream>

#include "cli.hpp"
#include "numpy_print.hpp"

int main(int argc, char** argv) {
    const examples::Options options = examples::parse_command_line(
        argc, argv,
        {"scaling",
         "Why scores are scaled: the average largest attention weight of 1,000 random queries\n"
         "over 16 keys, unscaled and scaled by 1/sqrt(size), for sizes 4, 32 and 256 (the\n"
         "chapter's third listing)."});

    attn::numpy::Generator rng = attn::numpy::default_rng(options.seed);
    for (attn::Index size : {4, 32, 256}) {
        const attn::Matrix<double> queries = rng.normal(0.0, 1.0, 1000, size);
        const attn::Matrix<double> keys = rng.normal(0.0, 1.0, 16, size);
        for (bool divide : {false, true}) {
            attn::AttentionOptions<double> attention;
            attention.causal = false;  // every query sees all 16 keys
            attention.keep_weights = true;
            if (!divide) attention.scale = 1.0;  // unscaled; otherwise the default 1/√size
            // The listing has no values: the keys stand in, and only the weights are read.
            const attn::Matrix<double> weights = attn::attention(queries, keys, keys, attention).weights;
            const double average_largest = weights.rowwise().maxCoeff().mean();
            std::cout << "size " << size << ", " << (divide ? "scaled" : "unscaled")
                      << ", average largest weight in a row: " << examples::numpy::fixed(average_largest, 2) << "\n";
        }
    }
    return 0;
}
