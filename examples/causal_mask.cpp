// causal_mask: the chapter's second listing ("Hide the future with a causal mask").
// The same four tokens and draws as attention_by_hand, attended with the causal mask;
// then the last token is replaced and the output at `coffee` is compared, without the
// mask and with it.

#include <attn/attn.hpp>
#include <attn/core/numpy_random.hpp>

#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "numpy_print.hpp"

namespace {

struct Weights {
    const attn::Matrix<double>& query;
    const attn::Matrix<double>& key;
    const attn::Matrix<double>& value;
};

/// The listing's attend(x, mask): one head, scaled by 1/√4, with or without the causal mask.
attn::AttentionResult<double> attend(const attn::Matrix<double>& x, const Weights& w, bool mask) {
    const attn::QkvResult<double> qkv = attn::project_qkv(x, w.query, w.key, w.value);
    attn::AttentionOptions<double> options;
    options.causal = mask;  // a hidden score becomes −∞, so its weight is exactly 0
    options.keep_weights = true;
    return attn::attention(qkv.queries, qkv.keys, qkv.values, options);
}

}  // namespace

int main(int argc, char** argv) {
    const examples::Options options = examples::parse_command_line(
        argc, argv,
        {"causal_mask",
         "The causal mask: the attention weights of four tokens with the mask, and whether\n"
         "the output at `coffee` changes when the last token does (the chapter's second listing)."});

    const std::vector<std::string> tokens{"<s>", "sled</w>", "coffee</w>", "table</w>"};
    attn::numpy::Generator rng = attn::numpy::default_rng(options.seed);
    const attn::Matrix<double> x = rng.normal(0.0, 1.0, 4, 8);
    const attn::Matrix<double> w_query = rng.normal(0.0, 0.5, 8, 4);  // the same draws as attention_by_hand
    const attn::Matrix<double> w_key = rng.normal(0.0, 0.5, 8, 4);
    const attn::Matrix<double> w_value = rng.normal(0.0, 0.5, 8, 4);
    const Weights w{w_query, w_key, w_value};
    const attn::AllowedMask allowed = attn::causal_allowed(4, 4);  // position i may look at positions 0 to i only

    const attn::Matrix<double> weights = attend(x, w, true).weights;
    namespace np = examples::numpy;
    const np::PrintOptions print{2, true};  // np.set_printoptions(precision=2, suppress=True)
    std::cout << "weights with the causal mask:\n";
    for (attn::Index i = 0; i < weights.rows(); ++i)
        std::cout << "  " << std::left << std::setw(11) << tokens[std::size_t(i)] << " "
                  << np::array_str(weights.row(i), print) << "\n";
    const double on_later = allowed.select(attn::Matrix<double>::Zero(4, 4), weights).sum();  // weights[~allowed].sum()
    std::cout << "weight on later tokens: " << np::float_repr(on_later) << "\n";

    attn::Matrix<double> changed = x;
    changed.row(3) = rng.normal(0.0, 1.0, 1, 8);  // a different last token in place of `table`
    for (bool mask : {false, true}) {
        const attn::Matrix<double> before = attend(x, w, mask).output.row(2);
        const attn::Matrix<double> after = attend(changed, w, mask).output.row(2);
        std::cout << "output at coffee changes with the last token, " << (mask ? "with" : "without")
                  << " the mask: " << np::python_bool(!np::allclose(before, after)) << "\n";
    }
    return 0;
}
