#pragma once
// Shared test helpers: seeded random matrices and an independent double-precision
// reference written as plain loops (no Eigen arithmetic), to check the library against.

#include <doctest/doctest.h>
#include <attn/core/types.hpp>
#include <attn/error.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace attn::test {

/// Whether a and b (Eigen expressions of one scalar type) have one shape and every entry the same
/// bits: stricter than ==, which holds for 0 and −0 and never for NaN.
template <class A, class B>
bool same_bits(const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b) {
    static_assert(std::is_same_v<typename A::Scalar, typename B::Scalar>, "same_bits: one scalar type");
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Index j = 0; j < a.cols(); ++j)
        for (Index i = 0; i < a.rows(); ++i) {
            const typename A::Scalar x = a(i, j), y = b(i, j);
            if (std::memcmp(&x, &y, sizeof x) != 0) return false;
        }
    return true;
}

/// The message of the `Error` that `f` throws (fails the test if it throws nothing or something else).
template <class Error, class F>
std::string thrown_message(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("expected an exception of the expected attn:: type");
    return {};
}

/// The message of the format_error `f` throws.
template <class F>
std::string thrown_format_error(F&& f) {
    return thrown_message<attn::format_error>(std::forward<F>(f));
}

/// A fresh directory under the system's temporary directory, removed with everything in it.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::random_device random;
        path = std::filesystem::temp_directory_path() /
               ("attn_test_" + std::to_string(random()) + "_" + std::to_string(random()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

template <class T>
Matrix<T> random_matrix(Index rows, Index cols, unsigned seed, double stddev = 1.0) {
    std::mt19937_64 engine(seed);
    std::normal_distribution<double> normal(0.0, stddev);
    Matrix<T> m(rows, cols);
    for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j) m(i, j) = static_cast<T>(normal(engine));
    return m;
}

/// heads × (rows × cols), head h from random_matrix with seed + h.
template <class T>
HeadStack<T> random_stack(Index heads, Index rows, Index cols, unsigned seed, double stddev = 1.0) {
    HeadStack<T> stack(heads, rows, cols);
    for (Index h = 0; h < heads; ++h) stack.head(h) = random_matrix<T>(rows, cols, seed + unsigned(h), stddev);
    return stack;
}

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

using Table = std::vector<std::vector<double>>;

template <class D>
Table to_table(const Eigen::MatrixBase<D>& m) {
    Table t(static_cast<std::size_t>(m.rows()), std::vector<double>(static_cast<std::size_t>(m.cols())));
    for (Index i = 0; i < m.rows(); ++i)
        for (Index j = 0; j < m.cols(); ++j) t[std::size_t(i)][std::size_t(j)] = static_cast<double>(m(i, j));
    return t;
}

struct NaiveHead {
    Table output;
    Table weights;
};

/// softmax(q kᵀ · scale, causal) · v with loops, in double.
inline NaiveHead naive_attention(const Table& q, const Table& k, const Table& v, bool causal, double scale) {
    const std::size_t n = q.size(), m = k.size(), d = q[0].size(), dv = v[0].size();
    NaiveHead r{Table(n, std::vector<double>(dv, 0.0)), Table(n, std::vector<double>(m, 0.0))};
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> s(m, -std::numeric_limits<double>::infinity());
        double largest = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < m; ++j) {
            if (causal && j > i) continue;
            double dot = 0.0;
            for (std::size_t c = 0; c < d; ++c) dot += q[i][c] * k[j][c];
            s[j] = dot * scale;
            largest = std::max(largest, s[j]);
        }
        double total = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            r.weights[i][j] = (causal && j > i) ? 0.0 : std::exp(s[j] - largest);
            total += r.weights[i][j];
        }
        for (std::size_t j = 0; j < m; ++j) r.weights[i][j] /= total;
        for (std::size_t j = 0; j < m; ++j)
            for (std::size_t c = 0; c < dv; ++c) r.output[i][c] += r.weights[i][j] * v[j][c];
    }
    return r;
}

inline Table naive_matmul(const Table& a, const Table& b) {
    Table c(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t k = 0; k < b.size(); ++k)
            for (std::size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
    return c;
}

inline Table columns(const Table& t, std::size_t first, std::size_t count) {
    Table out(t.size(), std::vector<double>(count));
    for (std::size_t i = 0; i < t.size(); ++i)
        for (std::size_t j = 0; j < count; ++j) out[i][j] = t[i][first + j];
    return out;
}

/// Largest |a − b| over all entries (shapes must match; a mismatch returns +inf).
template <class D>
double max_abs_difference(const Eigen::MatrixBase<D>& a, const Table& b) {
    if (static_cast<std::size_t>(a.rows()) != b.size() ||
        (a.rows() > 0 && static_cast<std::size_t>(a.cols()) != b[0].size()))
        return std::numeric_limits<double>::infinity();
    double worst = 0.0;
    for (Index i = 0; i < a.rows(); ++i)
        for (Index j = 0; j < a.cols(); ++j)
            worst = std::max(worst, std::abs(static_cast<double>(a(i, j)) - b[std::size_t(i)][std::size_t(j)]));
    return worst;
}

/// Tolerance for comparing a T computation with the double reference.
template <class T>
constexpr double tolerance() {
    return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

}  // namespace attn::test
