// previous_token_head: a head with hand-set weights that reads the previous token,
// the worked example of the companion lesson on attention. Trained models learn heads
// like it (Olsson et al., 2022); here every weight is set by hand, so you can see how
// each step of attention serves the pattern.
//
// The text is "the cat sat on the mat". Each token's vector has two one-hot parts:
//
//   x[i] = [ position i (6 numbers) | token identity (5 numbers: the cat sat on mat) ]
//
// and the head's three matrices read those parts:
//
//   query:  position i  → "I want position i − 1"   (w_query[i][i − 1] = 1; position 0 asks for nothing)
//   key:    position j  → "I am position j"          (w_key: the identity on the position part)
//   value:  token part  → the token itself           (w_value: the identity on the token part)
//
// so score(i, j) = query_i · key_j is 1 where j = i − 1 and 0 elsewhere. A scale of
// 1000 (instead of 1/√6) makes softmax one-hot: exp(−1000) underflows to exactly 0, so
// every weight is exactly 0 or 1. The causal mask hides the later tokens; position 0
// sees only itself, so it reads itself.

#include <attn/attn.hpp>

#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "numpy_print.hpp"

int main(int argc, char** argv) {
    examples::parse_command_line(argc, argv,
                                 {"previous_token_head",
                                  "A hand-set attention head that reads the previous token, on \"the cat sat on the "
                                  "mat\":\nprints its weights and what each position reads.",
                                  /*takes_seed=*/false});

    const std::vector<std::string> vocabulary{"the", "cat", "sat", "on", "mat"};
    const std::vector<attn::Index> text{0, 1, 2, 3, 0, 4};  // the cat sat on the mat
    const attn::Index positions = static_cast<attn::Index>(text.size());
    const attn::Index words = static_cast<attn::Index>(vocabulary.size());
    const attn::Index width = positions + words;

    // Token vectors: one-hot position, then one-hot token.
    attn::Matrix<double> x = attn::Matrix<double>::Zero(positions, width);
    for (attn::Index i = 0; i < positions; ++i) {
        x(i, i) = 1.0;
        x(i, positions + text[std::size_t(i)]) = 1.0;
    }

    // Projection matrices, (width × out) as attn::project takes them.
    attn::Matrix<double> w_query = attn::Matrix<double>::Zero(width, positions);
    for (attn::Index i = 1; i < positions; ++i) w_query(i, i - 1) = 1.0;  // "the position before me"
    attn::Matrix<double> w_key = attn::Matrix<double>::Zero(width, positions);
    w_key.topRows(positions).setIdentity();  // "I am position j"
    attn::Matrix<double> w_value = attn::Matrix<double>::Zero(width, words);
    w_value.bottomRows(words).setIdentity();  // "my token"

    // Projection: queries, keys, values (positions × 6, 6, 5).
    const attn::QkvResult<double> qkv = attn::project_qkv(x, w_query, w_key, w_value);
    // Scoring, masking, softmax and the weighted average, in one call:
    // scaled_scores(queries, keys, 1000) → apply_causal_mask → softmax_rows → weights · values.
    attn::AttentionOptions<double> options;
    options.causal = true;
    options.scale = 1000.0;
    options.keep_weights = true;
    const attn::AttentionResult<double> head = attn::attention(qkv.queries, qkv.keys, qkv.values, options);

    namespace np = examples::numpy;
    const np::PrintOptions print{2, true};
    std::cout << "text: the cat sat on the mat\n";
    std::cout << "weights of the previous-token head (rows attend to columns):\n";
    for (attn::Index i = 0; i < positions; ++i)
        std::cout << "  " << std::left << std::setw(11) << vocabulary[std::size_t(text[std::size_t(i)])] << " "
                  << np::array_str(head.weights.row(i), print) << "\n";

    bool rows_sum_to_one = true, later_exactly_zero = true;
    for (attn::Index i = 0; i < positions; ++i) {
        rows_sum_to_one = rows_sum_to_one && head.weights.row(i).sum() == 1.0;
        for (attn::Index j = i + 1; j < positions; ++j)
            later_exactly_zero = later_exactly_zero && head.weights(i, j) == 0.0;
    }
    std::cout << "every row sums to 1: " << np::python_bool(rows_sum_to_one) << "\n";
    std::cout << "every weight on a later token is exactly 0: " << np::python_bool(later_exactly_zero) << "\n";

    // Read the output back as tokens: each output row is the one-hot token it took in.
    std::cout << "what each position reads:";
    for (attn::Index i = 0; i < positions; ++i) {
        attn::Index read = 0;
        head.output.row(i).maxCoeff(&read);
        std::cout << (i == 0 ? " " : ", ") << vocabulary[std::size_t(read)];
    }
    std::cout << "\n";
    return 0;
}
