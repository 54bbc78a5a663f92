// Attention on bfloat16 numbers (FusedProblem::bfloat16, detail/kernels/bfloat16_attention.hpp):
// every path of the kernel (streaming, on AVX-512 BF16 in pairs; decoding; weights kept) against
// a double reference that rounds what the rule says and nothing else: the scaled queries, and
// each unnormalised weight exp(s − m) with m the running maximum at the block the path has
// reached. A kernel that skipped a rounding, or paired the wrong keys, is farther from it than
// the tolerance by tens of times (checked here too). A model loaded with
// LoadOptions::bfloat16_activations is tested in test_half_weights.cpp.
#include <doctest/doctest.h>
#include <attn/detail/kernels/causal_kernel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

namespace bfloat16_attention_test {  // named: the test files share unity translation units

using attn::Index;
using attn::detail::FusedProblem;
using attn::detail::rounded_to_bfloat16;
using attn::test::same_bits;

using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Rows random_rows(Index rows, Index cols, std::mt19937& gen, bool round) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Rows m(rows, cols);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = round ? rounded_to_bfloat16(normal(gen)) : normal(gen);
    return m;
}

/// Keys that make every score exact in float, whatever the order of its sums: multiples of
/// 1/4 in −2 … 2 (a rounded query's 8 bits times these stay within float's 24 over 64 terms),
/// so that the kernel's scores are the reference's and only its exponential (≤ 2.5e-7) can
/// decide a rounding differently.
Rows coarse_keys(Index rows, Index cols, std::mt19937& gen) {
    std::uniform_int_distribution<int> quarter(-8, 8);
    Rows m(rows, cols);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = float(quarter(gen)) / 4;
    return m;
}

/// A problem's shape: causal rows at positions first_position …, keys 0 … keys − 1.
struct Shape {
    Index heads, queries, keys, d, dv, first_position, window;
};

struct Result {
    std::vector<Rows> outputs;  // per head, queries × dv
    std::vector<Rows> weights;  // per head, queries × keys (kept only)
};

/// The kernel on q, k, v (per head), FusedProblem::bfloat16 set.
Result run_kernel(const Shape& s, const std::vector<Rows>& q, const std::vector<Rows>& k, const std::vector<Rows>& v,
                  float scale, bool keep, bool few_queries, int threads, bool bfloat16 = true) {
    FusedProblem<float> problem;
    problem.heads = s.heads;
    problem.queries = s.queries;
    problem.keys = s.keys;
    problem.depth = s.d;
    problem.value_size = s.dv;
    problem.first_position = s.first_position;
    problem.window = s.window;
    problem.scale = scale;
    problem.threads = threads;
    problem.few_queries = few_queries;
    problem.weights_when_decoding = true;
    problem.bfloat16 = bfloat16;
    Result result;
    Rows outputs(s.heads * s.queries, s.dv), weights;
    for (Index h = 0; h < s.heads; ++h)
        problem.inputs.push_back(
            {{q[std::size_t(h)].data(), s.d}, {k[std::size_t(h)].data(), s.d}, {v[std::size_t(h)].data(), s.dv}});
    problem.outputs = outputs.data();
    if (keep) {
        weights.resize(s.heads * s.queries, s.keys);
        problem.weights = weights.data();
    }
    attn::detail::fused_attention(problem);
    for (Index h = 0; h < s.heads; ++h) {
        result.outputs.push_back(outputs.middleRows(h * s.queries, s.queries));
        if (keep) result.weights.push_back(weights.middleRows(h * s.queries, s.queries));
    }
    return result;
}

/// One head's output rows by the rule, in double, and how far the kernel's may be from them:
/// blocks of `block` keys (the path's: from a multiple of `block` if aligned_blocks, else from
/// each row's first key), each weight exp(s − m) rounded to bfloat16 with m the largest score
/// up to its block, the running sums rescaled as the maximum grows. The kernel's float scores
/// and exponential are a few 1e-7 from these, which decides a rounding where exp(s − m) lies
/// that close to halfway between two bfloat16 numbers: such a weight may come out one bfloat16
/// step (≤ 2⁻⁷ of it) either way, and its share of every output is added to the tolerance.
/// round_queries = false gives the rule of a kernel that forgot to round the queries.
struct Expected {
    Rows outputs, tolerance, weights;
};

Expected reference(const Shape& s, const Rows& q, const Rows& k, const Rows& v, float scale, Index block,
                   bool aligned_blocks, bool round_queries = true) {
    Expected e{Rows(s.queries, s.dv), Rows(s.queries, s.dv), Rows::Zero(s.queries, s.keys)};
    const double v_largest = v.cwiseAbs().maxCoeff();
    for (Index i = 0; i < s.queries; ++i) {
        const Index position = s.first_position + i;
        const Index first = s.window > 0 ? std::clamp<Index>(position - s.window + 1, 0, s.keys) : 0;
        const Index end = std::min(s.keys, position + 1);
        std::vector<double> score(std::size_t(s.keys));
        for (Index j = first; j < end; ++j) {
            double dot = 0;
            for (Index c = 0; c < s.d; ++c) {
                const float scaled = float(q(i, c)) * scale;
                dot += double(round_queries ? rounded_to_bfloat16(scaled) : scaled) * double(k(j, c));
            }
            score[std::size_t(j)] = dot;
        }
        double m = -std::numeric_limits<double>::infinity(), l = 0;
        std::vector<double> o(std::size_t(s.dv), 0.0), magnitude(o), undecided(o), w(std::size_t(s.keys), 0.0);
        const Index from = aligned_blocks ? first / block * block : first;
        for (Index j0 = from; j0 < end; j0 += block) {
            const Index lo = std::max(j0, first), hi = std::min(j0 + block, end);
            double grown = m;
            for (Index j = lo; j < hi; ++j) grown = std::max(grown, score[std::size_t(j)]);
            const double factor = m == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(m - grown);
            m = grown;
            l *= factor;
            for (auto* sums : {&o, &magnitude, &undecided})
                for (double& x : *sums) x *= factor;
            for (double& x : w) x *= factor;
            for (Index j = lo; j < hi; ++j) {
                const double exact = std::exp(score[std::size_t(j)] - m);
                const double weight = double(rounded_to_bfloat16(float(exact)));
                const bool close =
                    rounded_to_bfloat16(float(exact * (1 + 1e-6))) != rounded_to_bfloat16(float(exact * (1 - 1e-6)));
                l += weight;
                w[std::size_t(j)] = weight;
                for (Index c = 0; c < s.dv; ++c) {
                    o[std::size_t(c)] += weight * double(v(j, c));
                    magnitude[std::size_t(c)] += weight * std::abs(double(v(j, c)));
                    // one step moves the weight and the sum l: the output by ≤ step·(|v| + max |v|)/l
                    if (close) undecided[std::size_t(c)] += std::ldexp(weight, -7) * (std::abs(v(j, c)) + v_largest);
                }
            }
        }
        for (Index c = 0; c < s.dv; ++c) {
            e.outputs(i, c) = float(o[std::size_t(c)] / l);
            e.tolerance(i, c) = float((5e-6 * magnitude[std::size_t(c)] + undecided[std::size_t(c)]) / l);
        }
        for (Index j = 0; j < s.keys; ++j) e.weights(i, j) = float(w[std::size_t(j)] / l);
    }
    return e;
}

/// max over entries of |a − b| / max |b|.
double relative_error(const Rows& a, const Rows& b) {
    return (a - b).cwiseAbs().maxCoeff() / std::max(1e-30f, b.cwiseAbs().maxCoeff());
}

/// The largest |a − b| / tolerance over the entries (≤ 1: within).
double error_in_tolerances(const Rows& a, const Expected& e) {
    return ((a - e.outputs).cwiseAbs().array() / e.tolerance.array()).maxCoeff();
}

}  // namespace bfloat16_attention_test

TEST_CASE("bfloat16 attention: a packet rounds as the scalar rounding does, ties to even") {
    using namespace bfloat16_attention_test;
    using Packet = attn::detail::KernelTiling<float>::Packet;
    constexpr int L = attn::detail::KernelTiling<float>::kLanes;
    std::mt19937 gen(7);
    std::uniform_int_distribution<std::uint32_t> bits(0, 0x7F7FFFFFu);  // finite, ≥ 0 (weights)
    std::vector<float> x(4096);
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::uint32_t b = bits(gen);
        if (i % 4 == 0) b = (b & 0xFFFF0000u) | 0x8000u;  // a tie
        if (i % 4 == 1) b &= 0xFFFF0000u;                 // a bfloat16 already
        std::memcpy(&x[i], &b, sizeof b);
    }
    for (std::size_t i = 0; i < x.size(); i += L) {
        alignas(64) float out[L];
        Eigen::internal::pstoreu(
            out, attn::detail::kernel::round_packet_to_bfloat16(Eigen::internal::ploadu<Packet>(x.data() + i)));
        for (int lane = 0; lane < L; ++lane) {
            const float want = rounded_to_bfloat16(x[i + lane]);
            REQUIRE(std::memcmp(&out[lane], &want, sizeof want) == 0);
        }
    }
}

TEST_CASE("bfloat16 attention: streaming, decoding and kept weights follow the rule; a skipped rounding does not") {
    using namespace bfloat16_attention_test;
    // shapes across key blocks (128) and query tasks (96), odd depths and key counts, windows
    // that start a row's keys at an odd key (the pair partner before it weighs 0), cached keys
    const Shape shapes[] = {
        {2, 200, 200, 64, 64, 0, 0},   {1, 97, 301, 64, 48, 204, 0},  {2, 150, 150, 7, 5, 0, 0},
        {1, 260, 260, 32, 20, 0, 77},  {1, 40, 333, 64, 64, 293, 51}, {3, 1, 1700, 64, 64, 1699, 0},
        {2, 3, 1600, 64, 32, 1597, 0}, {1, 129, 129, 9, 16, 0, 0},
    };
    std::mt19937 gen(11);
    for (const Shape& s : shapes) {
        CAPTURE(s.heads);
        CAPTURE(s.queries);
        CAPTURE(s.keys);
        CAPTURE(s.d);
        CAPTURE(s.dv);
        CAPTURE(s.window);
        std::vector<Rows> q, k, v;
        for (Index h = 0; h < s.heads; ++h) {
            q.push_back(random_rows(s.queries, s.d, gen, false));
            k.push_back(coarse_keys(s.keys, s.d, gen));
            v.push_back(random_rows(s.keys, s.dv, gen, true));
        }
        const float scale = 1.7f / std::sqrt(float(s.d));  // not a power of two: rounded after scaling
        using Tiling = attn::detail::KernelTiling<float>;
        for (int path = 0; path < 3; ++path) {  // streaming, decoding, weights kept
            const bool decoding = path == 1, keep = path == 2;
            if (decoding && s.queries > Tiling::kDecodeRows) continue;
            CAPTURE(path);
            const Result one = run_kernel(s, q, k, v, scale, keep, decoding, 1);
            const Result two = run_kernel(s, q, k, v, scale, keep, decoding, 2);
            for (Index h = 0; h < s.heads; ++h) {
                const auto hh = std::size_t(h);
                CHECK(same_bits(one.outputs[hh], two.outputs[hh]));  // whichever thread runs a task
                // the path's blocks: streaming 128 keys from a multiple of 128; decoding kDecodeKeys
                // from the task's first visible key; kept weights one block (the final maximum)
                const Index block = decoding ? Tiling::kDecodeKeys : keep ? s.keys : Tiling::kKeyBlock;
                const Expected want = reference(s, q[hh], k[hh], v[hh], scale, block, !decoding);
                CHECK(error_in_tolerances(one.outputs[hh], want) <= 1.0);
                // a kept weight is the rounded exp(s − m) over the sum: within float rounding, or a
                // bfloat16 step where the rounding was undecided
                if (keep)
                    CHECK(((one.weights[hh] - want.weights).cwiseAbs().array() <=
                           want.weights.array() * std::ldexp(1.0f, -7) + 1e-7f)
                              .all());
                // the queries not rounded: far from the rule, so a kernel that skipped it fails above
                CHECK(error_in_tolerances(one.outputs[hh],
                                          reference(s, q[hh], k[hh], v[hh], scale, block, !decoding, false)) > 4);
            }
        }
        // and without bfloat16 the same inputs give another answer (the flag is read)
        const Result plain = run_kernel(s, q, k, v, scale, false, false, 1, false);
        const Result rounded = run_kernel(s, q, k, v, scale, false, false, 1);
        CHECK(relative_error(plain.outputs[0], rounded.outputs[0]) > 2e-4);
    }
}

TEST_CASE("bfloat16 attention: keys in pairs of depths and values in pairs of rows, as one pair at a time lays them") {
    using namespace bfloat16_attention_test;
    namespace k = attn::detail::kernel;
    std::mt19937 gen(5);
    for (const Index rows : {1, 2, 7, 64})
        for (const Index cols : {1, 5, 16, 33, 64, 70}) {
            CAPTURE(rows);
            CAPTURE(cols);
            const Rows x = random_rows(rows, cols + 3, gen, false);  // a row stride past the columns
            std::vector<std::uint32_t> depths, pairs;
            k::pairs_of_depths(x.data(), cols + 3, rows, cols, depths);
            k::pairs_of_rows(x.data(), cols + 3, rows, cols, pairs);
            const Index depth_pairs = (cols + 1) / 2;
            REQUIRE(depths.size() == std::size_t(rows * depth_pairs));
            REQUIRE(pairs.size() == std::size_t((rows + 1) / 2 * cols));
            for (Index r = 0; r < rows; ++r)
                for (Index p = 0; p < depth_pairs; ++p)
                    REQUIRE(depths[std::size_t(r * depth_pairs + p)] ==
                            k::bfloat16_pair(x(r, 2 * p), 2 * p + 1 < cols ? x(r, 2 * p + 1) : 0.0f));
            for (Index p = 0; p < (rows + 1) / 2; ++p)
                for (Index c = 0; c < cols; ++c)
                    REQUIRE(pairs[std::size_t(p * cols + c)] ==
                            k::bfloat16_pair(x(2 * p, c), 2 * p + 1 < rows ? x(2 * p + 1, c) : 0.0f));
        }
}

TEST_CASE("bfloat16 attention: activations round a packet at a time as one by one, and a NaN stays NaN") {
    using namespace bfloat16_attention_test;
    std::mt19937 gen(9);
    for (const Index count : {0, 1, 15, 16, 17, 100}) {
        CAPTURE(count);
        Rows x = random_rows(1, count, gen, false);
        if (count > 3) x(0, 3) = std::numeric_limits<float>::quiet_NaN();
        if (count > 5) x(0, 5) = std::numeric_limits<float>::max();  // past bfloat16's largest: infinity
        Rows rounded = x;
        attn::detail::kernel::round_to_bfloat16(rounded.data(), count);
        for (Index j = 0; j < count; ++j) {
            if (std::isnan(x(0, j))) {
                CHECK(std::isnan(rounded(0, j)));
                continue;
            }
            const float want = rounded_to_bfloat16(x(0, j));
            CHECK(std::memcmp(&rounded(0, j), &want, sizeof want) == 0);
        }
    }
}
