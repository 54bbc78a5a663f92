#pragma once
// Printing as the chapter's Python does, so the examples' output can be compared with
// the book's byte for byte: NumPy's str() of a 1-D float64 array, Python's repr() of a
// float, f"{x:.2f}", and the NumPy helpers the listings use (np.round, np.allclose).
//
// array_str follows NumPy ≥ 1.14's array2string (legacy=False) for 1-D float arrays
// with the default floatmode 'maxprec', sign '-' and linewidth 75:
//   * each value is written positionally with the shortest digits that identify it,
//     cut to at most `precision` decimals (the exact value rounded half-to-even);
//     trailing zeros are trimmed but the '.' stays ("1.", "0.5", "-0.");
//   * integer parts are right-aligned and decimals left-aligned, padded with spaces
//     to the longest of each ("0.  " next to "0.97");
//   * values are separated by one space inside [ ], wrapped at 75 columns with a
//     one-space hanging indent;
//   * nan, inf and -inf are right-aligned to the same width.
// Not covered (throws std::domain_error): the scientific notation NumPy switches to
// (a value ≥ 1e8, or without suppress a nonzero value < 1e-4 or a max/min ratio
// > 1000) and the "..." summary of arrays over 1000 values.
// examples/numpy_print_check.cpp compares array_str with NumPy's own output for a few
// hundred arrays (tests/data/examples/numpy_print_cases.txt).

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace examples::numpy {

/// np.set_printoptions: NumPy's defaults are precision=8, suppress=False; the chapter's
/// listings set precision=2, suppress=True.
struct PrintOptions {
    int precision = 8;
    bool suppress = false;
};

namespace detail {

/// printf's "%.*f": the exact value rounded half-to-even (glibc), as Python's format does.
inline std::string printf_fixed(double x, int decimals) {
    const int length = std::snprintf(nullptr, 0, "%.*f", decimals, x);
    std::string s(static_cast<std::size_t>(length) + 1, '\0');
    std::snprintf(s.data(), s.size(), "%.*f", decimals, x);
    s.pop_back();
    return s;
}

/// Positional digits of x as NumPy's dragon4_positional(unique=True, precision,
/// trim='.') writes them: the fewest decimals (≤ precision) that read back as x,
/// else x rounded to `precision` decimals with trailing zeros trimmed.
inline std::string positional(double x, int precision) {
    for (int decimals = 0; decimals <= precision; ++decimals) {
        std::string s = printf_fixed(x, decimals);
        if (std::strtod(s.c_str(), nullptr) == x) return decimals == 0 ? s + "." : s;
    }
    std::string s = printf_fixed(x, precision);
    while (!s.empty() && s.back() == '0') s.pop_back();
    return s;  // still has its '.'
}

}  // namespace detail

/// str(np.array(values)) for a 1-D float64 array under `options` (see the top of the file).
inline std::string array_str(const std::vector<double>& values, PrintOptions options = {}) {
    if (values.empty()) return "[]";
    if (values.size() > 1000) throw std::domain_error("array_str: NumPy summarizes arrays over 1000 values");

    std::vector<double> finite, abs_non_zero;
    for (double v : values)
        if (std::isfinite(v)) {
            finite.push_back(v);
            if (v != 0.0) abs_non_zero.push_back(std::abs(v));
        }
    if (!abs_non_zero.empty()) {
        const double max_val = *std::max_element(abs_non_zero.begin(), abs_non_zero.end());
        const double min_val = *std::min_element(abs_non_zero.begin(), abs_non_zero.end());
        if (max_val >= 1e8 || (!options.suppress && (min_val < 0.0001 || max_val / min_val > 1000.0)))
            throw std::domain_error("array_str: NumPy would print these values in scientific notation");
    }

    // Widths: the longest integer part (with its sign) and the longest decimals.
    std::size_t pad_left = 0, pad_right = 0;
    for (double v : finite) {
        const std::string s = detail::positional(v, options.precision);
        const std::size_t dot = s.find('.');
        pad_left = std::max(pad_left, dot);
        pad_right = std::max(pad_right, s.size() - dot - 1);
    }
    if (finite.size() != values.size()) {
        bool negative_infinity = false;
        for (double v : values) negative_infinity = negative_infinity || (std::isinf(v) && v < 0);
        const std::size_t inf_length = 3 + (negative_infinity ? 1 : 0), nan_length = 3;
        const std::size_t offset = pad_right + 1;
        if (nan_length > offset) pad_left = std::max(pad_left, nan_length - offset);
        if (inf_length > offset) pad_left = std::max(pad_left, inf_length - offset);
    }

    std::vector<std::string> words;
    for (double v : values) {
        if (std::isfinite(v)) {
            const std::string s = detail::positional(v, options.precision);
            const std::size_t dot = s.find('.');
            words.push_back(std::string(pad_left - dot, ' ') + s + std::string(pad_right - (s.size() - dot - 1), ' '));
        } else {
            const std::string s = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
            const std::size_t width = pad_left + pad_right + 1;
            words.push_back(std::string(width > s.size() ? width - s.size() : 0, ' ') + s);
        }
    }

    // _formatArray for one axis: linewidth 75 less the closing ']', hanging indent ' '.
    const std::size_t line_width = 75 - 1;
    const std::string indent = " ";
    std::string text, line = indent;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (line.size() + words[i].size() > line_width && line.size() > indent.size()) {
            const std::size_t end = line.find_last_not_of(' ');
            text += line.substr(0, end + 1) + "\n";
            line = indent;
        }
        line += words[i];
        if (i + 1 < words.size()) line += " ";
    }
    text += line;
    return "[" + text.substr(indent.size()) + "]";
}

/// str() of a vector or a single row or column of an Eigen matrix.
template <class D>
std::string array_str(const Eigen::DenseBase<D>& values, PrintOptions options = {}) {
    std::vector<double> v(static_cast<std::size_t>(values.size()));
    for (Eigen::Index i = 0; i < values.size(); ++i)
        v[static_cast<std::size_t>(i)] = static_cast<double>(values.derived().coeff(i));
    return array_str(v, options);
}

/// Python's repr(float): the shortest digits that read back as x, positional for
/// decimal exponents −4 … 15, otherwise scientific ("1e-05", "1.5e+16").
inline std::string float_repr(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    char buffer[64];
    int digits = 1;
    for (; digits < 17; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, x);
        if (std::strtod(buffer, nullptr) == x) break;
    }
    std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, x);
    const std::string s = buffer;  // [-]d.ddde±XX
    const std::size_t e = s.find('e');
    const int exponent = std::atoi(s.c_str() + e + 1);
    const bool negative = s[0] == '-';
    std::string mantissa = s.substr(negative ? 1 : 0, e - (negative ? 1 : 0));
    mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());  // the significant digits
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + mantissa;
        } else if (static_cast<std::size_t>(exponent) + 1 >= mantissa.size()) {
            out += mantissa + std::string(static_cast<std::size_t>(exponent) + 1 - mantissa.size(), '0') + ".0";
        } else {
            out += mantissa.substr(0, static_cast<std::size_t>(exponent) + 1) + "." +
                   mantissa.substr(static_cast<std::size_t>(exponent) + 1);
        }
        return out;
    }
    out += mantissa.substr(0, 1);
    if (mantissa.size() > 1) out += "." + mantissa.substr(1);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_text;
}

/// f"{x:.{decimals}f}".
inline std::string fixed(double x, int decimals) {
    return detail::printf_fixed(x, decimals);
}

/// Python's str(bool).
inline const char* python_bool(bool b) {
    return b ? "True" : "False";
}

/// np.round(x, decimals) for decimals ≥ 0: rint(x · 10^decimals) / 10^decimals.
inline double round(double x, int decimals) {
    const double factor = std::pow(10.0, decimals);
    return std::nearbyint(x * factor) / factor;
}

template <class D>
Eigen::Matrix<double, Eigen::Dynamic, 1> round(const Eigen::DenseBase<D>& values, int decimals) {
    Eigen::Matrix<double, Eigen::Dynamic, 1> out(values.size());
    for (Eigen::Index i = 0; i < values.size(); ++i)
        out(i) = round(static_cast<double>(values.derived().coeff(i)), decimals);
    return out;
}

/// np.isclose(a, b) for one pair: |a − b| ≤ atol + rtol·|b|; equal infinities are close, NaN never.
inline bool isclose(double a, double b, double rtol = 1e-5, double atol = 1e-8) {
    if (std::isnan(a) || std::isnan(b)) return false;
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::abs(a - b) <= atol + rtol * std::abs(b);
}

/// np.allclose(a, b) for equally shaped arrays.
template <class DA, class DB>
bool allclose(const Eigen::DenseBase<DA>& a, const Eigen::DenseBase<DB>& b, double rtol = 1e-5, double atol = 1e-8) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) throw std::invalid_argument("allclose: shapes differ");
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            if (!isclose(static_cast<double>(a(i, j)), static_cast<double>(b(i, j)), rtol, atol)) return false;
    return true;
}

/// np.allclose(a, scalar).
template <class DA>
bool allclose(const Eigen::DenseBase<DA>& a, double b, double rtol = 1e-5, double atol = 1e-8) {
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            if (!isclose(static_cast<double>(a(i, j)), b, rtol, atol)) return false;
    return true;
}

/// A NumPy shape tuple as Python prints it: "(4, 8)", "(2, 4, 4)", "(3,)".
inline std::string shape(std::initializer_list<long long> extents) {
    std::string out = "(";
    std::size_t i = 0;
    for (long long e : extents) {
        out += (i++ ? ", " : "") + std::to_string(e);
    }
    return out + (extents.size() == 1 ? ",)" : ")");
}

}  // namespace examples::numpy
