// attention_by_hand: the chapter's first listing ("Look back with a weighted average").
// Four tokens with random 8-number vectors, random 8-by-4 query, key and value
// matrices, and attention computed in its four steps: project, score, softmax, average.
//
// The draws come from attn::numpy::default_rng(seed), identical to NumPy's, so with
// the default seed 2026 this prints exactly what the book prints.

#include <attn/attn.hpp>
#include <attn/core/numpy_random.hpp>

#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "numpy_print.hpp"

int main(int argc, char** argv) {
    const examples::Options options = examples::parse_command_line(
        argc, argv,
        {"attention_by_hand",
         "Attention by hand: four tokens, random query, key and value matrices; prints the\n"
         "attention weights of every token (the chapter's first listing)."});

    const std::vector<std::string> tokens{"<s>", "sled</w>", "coffee</w>", "table</w>"};
    attn::numpy::Generator rng = attn::numpy::default_rng(options.seed);
    const attn::Matrix<double> x = rng.normal(0.0, 1.0, 4, 8);  // one 8-number vector per token
    const attn::Matrix<double> w_query = rng.normal(0.0, 0.5, 8, 4);
    const attn::Matrix<double> w_key = rng.normal(0.0, 0.5, 8, 4);
    const attn::Matrix<double> w_value = rng.normal(0.0, 0.5, 8, 4);

    // What each token looks for, offers, and passes on.
    const attn::QkvResult<double> qkv = attn::project_qkv(x, w_query, w_key, w_value);
    // How well each query matches each key, divided by √4 (scaled_scores' default 1/√d).
    const attn::Matrix<double> scores = attn::scaled_scores(qkv.queries, qkv.keys);
    // Softmax along each row: each row sums to 1. No mask yet: every token sees every other.
    const attn::Matrix<double> weights = attn::softmax_rows(scores);
    // Each token: a weighted average of all the values.
    const attn::Matrix<double> output = weights * qkv.values;

    namespace np = examples::numpy;
    const np::PrintOptions print{2, true};  // np.set_printoptions(precision=2, suppress=True)
    std::cout << "attention weights (rows attend to columns):\n";
    for (attn::Index i = 0; i < weights.rows(); ++i)
        std::cout << "  " << std::left << std::setw(11) << tokens[std::size_t(i)] << " "
                  << np::array_str(weights.row(i), print) << "\n";
    std::cout << "each row sums to 1: " << np::python_bool(np::allclose(weights.rowwise().sum(), 1.0)) << "\n";
    std::cout << "output shape: " << np::shape({output.rows(), output.cols()}) << "\n";
    return 0;
}
