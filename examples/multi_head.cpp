// multi_head: the chapter's fourth listing ("Several heads look for different things").
// Two heads over four positions of random 8-number vectors, with the causal mask; what
// the last position attends to in each head.

#include <attn/attn.hpp>
#include <attn/core/numpy_random.hpp>

#include <iostream>

#include "cli.hpp"
#include "numpy_print.hpp"

int main(int argc, char** argv) {
    const examples::Options options = examples::parse_command_line(
        argc, argv,
        {"multi_head",
         "Multi-head attention: two causal heads over four random positions; prints the\n"
         "weights' shape and what the last position attends to in each head (the chapter's\n"
         "fourth listing)."});

    const attn::Index positions = 4, dims = 8, heads = 2;  // each head works in 4 of the 8 dimensions
    attn::numpy::Generator rng = attn::numpy::default_rng(options.seed);
    const attn::Matrix<double> x = rng.normal(0.0, 1.0, positions, dims);
    const attn::Matrix<double> w_query = rng.normal(0.0, 0.5, dims, dims);
    const attn::Matrix<double> w_key = rng.normal(0.0, 0.5, dims, dims);
    const attn::Matrix<double> w_value = rng.normal(0.0, 0.5, dims, dims);
    const attn::Matrix<double> output_projection = rng.normal(0.0, 0.5, dims, dims);

    // Project, split into heads (head h owns columns 4h … 4h + 3, as the listing's
    // reshape does), scaled causal attention in each head, join the heads side by side,
    // and mix them with the output projection.
    attn::AttentionOptions<double> attention;  // causal, scaled by 1/√(head size)
    attention.keep_weights = true;
    const attn::MultiHeadResult<double> result = attn::multi_head_attention(
        x, attn::AttentionProjections<double>{w_query, w_key, w_value, output_projection}, heads, attention);

    namespace np = examples::numpy;
    const attn::AttentionWeights<double>& weights = result.weights;  // (heads, positions, positions)
    std::cout << "weights shape (heads, positions, positions): "
              << np::shape({weights.heads(), weights.rows(), weights.cols()}) << "\n";
    for (attn::Index h = 0; h < heads; ++h)
        std::cout << "what the last token attends to, head " << h + 1 << ": "
                  << np::array_str(np::round(weights.head(h).row(positions - 1), 2)) << "\n";
    std::cout << "output shape: " << np::shape({result.output.rows(), result.output.cols()}) << "\n";
    return 0;
}
