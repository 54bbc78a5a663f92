#include <doctest/doctest.h>
#include <attn/core/rope.hpp>

#include <cmath>

#include "support.hpp"

TEST_CASE_TEMPLATE("RoPE: a rotated q·k depends only on the distance between positions", T, float, double) {
    for (attn::RopePairing pairing : {attn::RopePairing::rotate_half, attn::RopePairing::interleaved}) {
        const attn::Rope<T> rope(32, pairing);
        const auto q = attn::test::random_matrix<T>(1, 32, 1);
        const auto k = attn::test::random_matrix<T>(1, 32, 2);
        auto dot_at = [&](attn::Index query_position, attn::Index key_position) {
            attn::Matrix<T> rq = q, rk = k;
            rope.apply(rq, query_position);
            rope.apply(rk, key_position);
            return double(rq.row(0).dot(rk.row(0)));
        };
        const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
        CHECK(dot_at(5, 2) == doctest::Approx(dot_at(13, 10)).epsilon(tol));
        CHECK(dot_at(5, 2) == doctest::Approx(dot_at(103, 100)).epsilon(tol));
        CHECK(dot_at(7, 7) == doctest::Approx(dot_at(0, 0)).epsilon(tol));
        CHECK(std::abs(dot_at(5, 2) - dot_at(5, 4)) > 1e-3);  // a different distance gives a different score
    }
}

TEST_CASE_TEMPLATE("RoPE preserves every vector's norm and leaves position 0 unchanged", T, float, double) {
    const attn::Rope<T> rope(8, attn::RopePairing::rotate_half, 10000.0, 4);
    const auto x = attn::test::random_matrix<T>(10, 8, 3);
    attn::Matrix<T> rotated = x;
    rope.apply(rotated);
    CHECK(rotated.row(0) == x.row(0));
    for (attn::Index i = 0; i < 10; ++i)
        CHECK(double(rotated.row(i).norm()) == doctest::Approx(double(x.row(i).norm())).epsilon(1e-5));
}

TEST_CASE("RoPE pairings: rotate-half pairs j with j + d/2, interleaved pairs 2j with 2j + 1") {
    // Position 1, base 1 → every pair turns by exactly 1 radian.
    attn::Matrix<double> x(1, 4);
    x << 1, 2, 3, 4;
    const double c = std::cos(1.0), s = std::sin(1.0);
    attn::Matrix<double> half = x, inter = x;
    attn::Rope<double>(4, attn::RopePairing::rotate_half, 1.0).apply(half, 1);
    attn::Rope<double>(4, attn::RopePairing::interleaved, 1.0).apply(inter, 1);
    CHECK(half(0, 0) == doctest::Approx(1 * c - 3 * s));
    CHECK(half(0, 2) == doctest::Approx(3 * c + 1 * s));
    CHECK(half(0, 1) == doctest::Approx(2 * c - 4 * s));
    CHECK(inter(0, 0) == doctest::Approx(1 * c - 2 * s));
    CHECK(inter(0, 1) == doctest::Approx(2 * c + 1 * s));
    CHECK(inter(0, 3) == doctest::Approx(4 * c + 3 * s));
}

TEST_CASE("RoPE: the cached table and on-the-fly angles agree bit for bit") {
    const attn::Rope<float> cached(32, attn::RopePairing::rotate_half, 10000.0, 160);
    const attn::Rope<float> uncached(32, attn::RopePairing::rotate_half, 10000.0, 0);
    const auto x = attn::test::random_matrix<float>(200, 32, 4);
    attn::Matrix<float> a = x, b = x;
    cached.apply(a);
    uncached.apply(b);
    CHECK(a == b);
}

TEST_CASE("RoPE: odd head size, bad base and mismatched width raise") {
    CHECK_THROWS_WITH_AS(attn::Rope<float>(5, attn::RopePairing::rotate_half), doctest::Contains("even"),
                         attn::argument_error);
    CHECK_THROWS_AS(attn::Rope<float>(4, attn::RopePairing::rotate_half, 0.0), attn::argument_error);
    const attn::Rope<float> rope(4, attn::RopePairing::interleaved);
    attn::Matrix<float> x = attn::Matrix<float>::Zero(2, 6);
    CHECK_THROWS_WITH_AS(rope.apply(x), doctest::Contains("x has 6 columns, expected 4"), attn::shape_error);
}
