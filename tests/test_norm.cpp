// attn/core/norm.hpp: layer normalisation against a naive double-precision reference.
#include <doctest/doctest.h>
#include <attn/core/norm.hpp>

#include <cmath>
#include <limits>

#include "support.hpp"

using attn::Index;
using attn::test::random_matrix;

namespace {
// PyTorch's LayerNorm, written out in double: biased variance, epsilon inside the root.
attn::Matrix<double> naive_layer_norm(const attn::Matrix<double>& x, const attn::Vector<double>& weight,
                                      const attn::Vector<double>& bias, double epsilon) {
    attn::Matrix<double> out(x.rows(), x.cols());
    for (Index i = 0; i < x.rows(); ++i) {
        double mean = 0.0, variance = 0.0;
        for (Index j = 0; j < x.cols(); ++j) mean += x(i, j);
        mean /= double(x.cols());
        for (Index j = 0; j < x.cols(); ++j) variance += (x(i, j) - mean) * (x(i, j) - mean);
        variance /= double(x.cols());
        for (Index j = 0; j < x.cols(); ++j)
            out(i, j) = (x(i, j) - mean) / std::sqrt(variance + epsilon) * weight(j) + bias(j);
    }
    return out;
}
}  // namespace

TEST_CASE_TEMPLATE("layer_norm: matches the naive reference, rows independent", T, float, double) {
    for (Index width : {1, 2, 7, 128}) {
        CAPTURE(width);
        const auto x = random_matrix<T>(5, width, 1, 3.0);
        const attn::Vector<T> weight = random_matrix<T>(width, 1, 2);
        const attn::Vector<T> bias = random_matrix<T>(width, 1, 3);
        const attn::Matrix<T> out = attn::layer_norm(x, weight, bias, 1e-5);
        const attn::Matrix<double> expected = naive_layer_norm(
            x.template cast<double>(), weight.template cast<double>(), bias.template cast<double>(), 1e-5);
        CHECK((out.template cast<double>() - expected).cwiseAbs().maxCoeff() < attn::test::tolerance<T>() * 10);
        // a row's result depends on that row alone
        CHECK(attn::layer_norm(x.row(3), weight, bias, 1e-5) == out.row(3));
    }
}

TEST_CASE("layer_norm: a constant row gives the bias, not NaN; weight and bias as row or column vectors") {
    attn::Matrix<double> x = attn::Matrix<double>::Constant(2, 4, 7.0);
    const attn::Vector<double> weight = attn::Vector<double>::Constant(4, 2.0);
    const attn::Vector<double> bias = attn::Vector<double>::LinSpaced(4, -1.0, 1.0);
    const attn::Matrix<double> out = attn::layer_norm(x, weight, bias);
    CHECK(out.allFinite());
    CHECK((out.row(1).transpose() - bias).cwiseAbs().maxCoeff() == 0.0);
    CHECK(attn::layer_norm(x, weight.transpose(), bias.transpose()) == out);
}

TEST_CASE("layer_norm: shape and epsilon errors name the argument") {
    const attn::Matrix<float> x = attn::Matrix<float>::Ones(3, 4);
    const attn::Vector<float> four = attn::Vector<float>::Ones(4), three = attn::Vector<float>::Ones(3);
    CHECK_THROWS_WITH_AS(attn::layer_norm(x, three, four), doctest::Contains("weight must be a vector of 4"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::layer_norm(x, four, three), doctest::Contains("bias must be a vector of 4"),
                         attn::shape_error);
    CHECK_THROWS_AS(attn::layer_norm(attn::Matrix<float>(0, 4), four, four), attn::shape_error);
    for (double epsilon : {0.0, -1e-5, std::numeric_limits<double>::quiet_NaN(), HUGE_VAL}) {
        CAPTURE(epsilon);
        CHECK_THROWS_WITH_AS(attn::layer_norm(x, four, four, epsilon), doctest::Contains("epsilon must be positive"),
                             attn::argument_error);
    }
}

namespace {
// Llama's RMSNorm, written out in double: no mean removed, no bias, epsilon inside the root.
attn::Matrix<double> naive_rms_norm(const attn::Matrix<double>& x, const attn::Vector<double>& weight, double epsilon) {
    attn::Matrix<double> out(x.rows(), x.cols());
    for (Index i = 0; i < x.rows(); ++i) {
        double squares = 0.0;
        for (Index j = 0; j < x.cols(); ++j) squares += x(i, j) * x(i, j);
        const double divisor = std::sqrt(squares / double(x.cols()) + epsilon);
        for (Index j = 0; j < x.cols(); ++j) out(i, j) = x(i, j) / divisor * weight(j);
    }
    return out;
}
}  // namespace

TEST_CASE_TEMPLATE("rms_norm: matches the naive reference, rows independent, a zero row stays zero", T, float, double) {
    const attn::Matrix<double> x = random_matrix<double>(7, 48, 31, 3.0);
    const attn::Vector<double> weight = attn::Vector<double>::Random(48);
    const attn::Matrix<double> expected = naive_rms_norm(x, weight, 1e-6);
    const attn::Matrix<T> got = attn::rms_norm(x.cast<T>(), weight.cast<T>(), 1e-6);
    const double tolerance = sizeof(T) == 4 ? 2e-6 : 1e-14;
    CHECK((got.template cast<double>() - expected).cwiseAbs().maxCoeff() <= tolerance * expected.cwiseAbs().maxCoeff());
    CHECK(attn::rms_norm(x.topRows(1).cast<T>(), weight.cast<T>(), 1e-6) == got.topRows(1));  // rows independent
    const attn::Matrix<T> zero = attn::rms_norm(attn::Matrix<T>::Zero(2, 48), weight.cast<T>(), 1e-6);
    CHECK(zero.allFinite());
    CHECK(zero.isZero(0));
}

TEST_CASE("rms_norm: shape and epsilon errors name the argument") {
    const attn::Matrix<float> x = attn::Matrix<float>::Ones(2, 4);
    CHECK_THROWS_WITH_AS(attn::rms_norm(x, attn::Vector<float>::Ones(3)), doctest::Contains("rms_norm: weight"),
                         attn::shape_error);
    CHECK_THROWS_WITH_AS(attn::rms_norm(x, attn::Vector<float>::Ones(4), 0.0), doctest::Contains("rms_norm: epsilon"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::rms_norm(attn::Matrix<float>(0, 4), attn::Vector<float>::Ones(4)),
                         doctest::Contains("rms_norm: x"), attn::shape_error);
}
