#pragma once
// Choosing the next token from a row of logits: greedy, temperature, top-k and top-p
// (nucleus) sampling, with banned tokens, reproducible from a seed on every machine.
//
// The draws are NumPy's (np.random.default_rng(seed).random(), numpy_random.hpp) and every
// step is specified to the rounding, so tools/references/generate.py, which implements the same
// definition in Python, picks the same tokens from the same logits:
//   1. banned tokens' logits become −∞ (they are never picked while another token remains);
//   2. temperature 0: the largest logit (the lowest id among equals), no draw;
//   3. otherwise z = logits / temperature, ids ordered by z descending (ties: lower id first);
//      top_k > 0 keeps the first top_k; p = exp(z − max z) / Σ, summed left to right in that
//      order; top_p < 1 keeps the shortest prefix whose running sum of p reaches top_p and
//      renormalises it the same way; u = random(); the first id whose running sum of p
//      exceeds u is picked (the last kept one if rounding leaves none).
// Everything is computed in double whatever the model's scalar type.

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "attn/core/numpy_random.hpp"
#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"

namespace attn {

/// How the next token is chosen. The defaults are greedy decoding.
struct SamplingOptions {
    double temperature = 0.0;  ///< 0: greedy; > 0: sample from softmax(logits / temperature)
    Index top_k = 0;           ///< keep only the top_k most likely tokens (0: all)
    double top_p = 1.0;        ///< keep the fewest most likely tokens whose probability reaches top_p (1: all)
    std::uint64_t seed = 0;    ///< np.random.default_rng(seed) draws one number per sampled token
    std::vector<int> banned;   ///< tokens never chosen
};

/// The softmax of one row of logits at `id`, in double: the probability the model gives it.
template <class D>
double token_probability(const Eigen::MatrixBase<D>& logits, int id) {
    detail::check_index("token_probability", "id", id, logits.size());
    const Eigen::VectorXd z = logits.template cast<double>().reshaped();
    const double largest = z.maxCoeff();
    return std::exp(z(id) - largest) / (z.array() - largest).exp().sum();
}

/// Picks tokens from rows of logits as SamplingOptions say; one per call, drawing from its
/// own generator, so a sampler made with the same options picks the same sequence again.
class TokenSampler {
public:
    explicit TokenSampler(SamplingOptions options)
        : options_(std::move(options)), random_(numpy::default_rng(options_.seed)) {
        if (!(options_.temperature >= 0.0) || !std::isfinite(options_.temperature))
            throw argument_error(
                detail::message("TokenSampler: temperature must be ≥ 0 and finite, got ", options_.temperature));
        if (options_.top_k < 0)
            throw argument_error(
                detail::message("TokenSampler: top_k must be ≥ 0 (0: no limit), got ", options_.top_k));
        if (!(options_.top_p > 0.0 && options_.top_p <= 1.0))
            throw argument_error(detail::message("TokenSampler: top_p must be in (0, 1], got ", options_.top_p));
    }

    const SamplingOptions& options() const { return options_; }

    /// The next token from logits, a vector of V (one per vocabulary entry).
    template <class D>
    int next(const Eigen::MatrixBase<D>& logits) {
        const Index vocabulary = logits.size();
        if (vocabulary == 0 || (logits.rows() != 1 && logits.cols() != 1))
            throw shape_error(detail::message("TokenSampler::next: logits must be a non-empty vector, got ",
                                              logits.rows(), " × ", logits.cols()));
        z_.resize(std::size_t(vocabulary));
        for (Index i = 0; i < vocabulary; ++i) z_[std::size_t(i)] = static_cast<double>(logits.derived().coeff(i));
        for (int id : options_.banned) {
            detail::check_index("TokenSampler::next", "banned id", id, vocabulary);
            z_[std::size_t(id)] = -std::numeric_limits<double>::infinity();
        }
        for (double value : z_)
            if (std::isnan(value) || value == std::numeric_limits<double>::infinity())
                throw numeric_error("TokenSampler::next: the logits hold NaN or +∞");
        order_.resize(std::size_t(vocabulary));
        std::iota(order_.begin(), order_.end(), 0);
        const auto more_likely = [&](int a, int b) {
            return z_[std::size_t(a)] != z_[std::size_t(b)] ? z_[std::size_t(a)] > z_[std::size_t(b)] : a < b;
        };
        if (z_[std::size_t(*std::min_element(order_.begin(), order_.end(), more_likely))] ==
            -std::numeric_limits<double>::infinity())
            throw argument_error("TokenSampler::next: every token is banned");
        if (options_.temperature == 0.0) return *std::min_element(order_.begin(), order_.end(), more_likely);

        // Tokens that can be picked: not banned, and the top_k most likely.
        Index kept = vocabulary - Index(std::count(z_.begin(), z_.end(), -std::numeric_limits<double>::infinity()));
        if (options_.top_k > 0) kept = std::min(kept, options_.top_k);
        std::partial_sort(order_.begin(), order_.begin() + kept, order_.end(), more_likely);
        order_.resize(std::size_t(kept));

        const double largest = z_[std::size_t(order_.front())] / options_.temperature;
        p_.resize(order_.size());
        for (std::size_t i = 0; i < order_.size(); ++i)
            p_[i] = std::exp(z_[std::size_t(order_[i])] / options_.temperature - largest);
        normalise();
        if (options_.top_p < 1.0) {
            double running = 0.0;
            std::size_t prefix = 0;
            while (prefix < p_.size() && running < options_.top_p) running += p_[prefix++];
            p_.resize(prefix);
            order_.resize(prefix);
            normalise();
        }
        const double u = random_.random();
        double running = 0.0;
        for (std::size_t i = 0; i < p_.size(); ++i) {
            running += p_[i];
            if (u < running) return order_[i];
        }
        return order_.back();
    }

private:
    /// p /= Σ p, summed left to right (the order the definition fixes).
    void normalise() {
        double total = 0.0;
        for (double x : p_) total += x;
        for (double& x : p_) x /= total;
    }

    SamplingOptions options_;
    numpy::Generator random_;
    std::vector<double> z_, p_;
    std::vector<int> order_;
};

}  // namespace attn
