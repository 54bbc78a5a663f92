// attn/core/activation.hpp: both GELUs against their definitions in double (std::erf, std::tanh).
#include <doctest/doctest.h>
#include <attn/core/activation.hpp>

#include <cmath>

#include "support.hpp"

using attn::Index;

namespace {
double gelu_erf(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
}  // namespace

TEST_CASE_TEMPLATE("gelu_in_place and gelu_tanh_in_place: the definitions, to a few ulp, over -10 … 10", T, float,
                   double) {
    attn::Matrix<T> x(41, 101);  // more than a packet per row, and a ragged tail
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) x(i, j) = T(-10.0 + 20.0 * double(i * x.cols() + j) / double(x.size()));
    attn::Matrix<T> erf_version = x, tanh_version = x;
    attn::gelu_in_place(erf_version);
    attn::gelu_tanh_in_place(tanh_version);
    const double ulps = sizeof(T) == 4 ? 8 * 1.2e-7 : 8 * 2.3e-16;
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) {
            const double v = double(x(i, j));
            CHECK(std::abs(double(erf_version(i, j)) - gelu_erf(v)) <= ulps * std::max(1.0, std::abs(v)));
            CHECK(std::abs(double(tanh_version(i, j)) - gelu_tanh(v)) <= ulps * std::max(1.0, std::abs(v)));
        }
    // the two differ (by up to ~5e-4 near ±2), so a model's "activation" setting matters
    CHECK((erf_version - tanh_version).cwiseAbs().maxCoeff() > T(1e-4));
}

TEST_CASE("gelu_in_place: works on blocks of a larger matrix and leaves the rest alone") {
    attn::Matrix<float> m = attn::Matrix<float>::Constant(4, 6, -3.0f);
    attn::gelu_in_place(m.block(1, 2, 2, 3));
    CHECK(m(0, 0) == -3.0f);
    CHECK(m(1, 1) == -3.0f);
    CHECK(double(m(1, 2)) == doctest::Approx(gelu_erf(-3.0)).epsilon(1e-5));
    attn::gelu_tanh_in_place(m.row(3));
    CHECK(double(m(3, 0)) == doctest::Approx(gelu_tanh(-3.0)).epsilon(1e-5));
}

TEST_CASE_TEMPLATE("silu_in_place: x · sigmoid(x), to a few ulp, over -30 … 30, and no NaN far out", T, float, double) {
    attn::Matrix<T> x(13, 77);
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) x(i, j) = T(-30.0 + 60.0 * double(i * x.cols() + j) / double(x.size()));
    attn::Matrix<T> silu = x;
    attn::silu_in_place(silu);
    const double ulps = sizeof(T) == 4 ? 8 * 1.2e-7 : 8 * 2.3e-16;
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) {
            const double v = double(x(i, j));
            CHECK(std::abs(double(silu(i, j)) - v / (1.0 + std::exp(-v))) <= ulps * std::max(1.0, std::abs(v)));
        }
    attn::Matrix<T> far(1, 2);
    far << T(-1000), T(1000);
    attn::silu_in_place(far);
    CHECK(far(0, 0) == T(0));
    CHECK(far(0, 1) == T(1000));
}
