// A consumer of the installed package: causal attention over 3 positions, on kept threads.
#include <attn/attn.hpp>

#include <cmath>
#include <iostream>

int main() {
    attn::Matrix<float> x(3, 4);
    x << 1, 0, 0, 1,  //
        0, 1, 1, 0,   //
        1, 1, 0, 0;
    const attn::Matrix<float> w = attn::Matrix<float>::Identity(4, 4);
    attn::AttentionOptions<float> options;
    options.keep_weights = true;
    attn::Workers workers(2);  // a std::thread beside the caller: links only with Threads::Threads
    options.threads = workers;
    const auto result = attn::multi_head_attention(x, {w, w, w, w}, 2, options);
    const bool causal = result.weights.head(0)(0, 1) == 0.0f && result.weights.head(1)(1, 2) == 0.0f;
    const bool sums = std::abs(result.weights.head(1).row(2).sum() - 1.0f) < 1e-6f;
    if (!causal || !sums || result.output.rows() != 3 || result.output.cols() != 4) {
        std::cerr << "downstream: wrong result\n";
        return 1;
    }
    std::cout << "downstream: attn " << attn::version << " ok\n";
    return 0;
}
