#pragma once
// Argument and shape checks shared by the public headers. Each throws an attn::
// error whose message starts with the public function's name.

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>

#include "attn/error.hpp"

namespace attn::detail {

/// core/types.hpp's Index and Matrix under the kernels' own names: detail/ includes nothing
/// from core/, and these are the same types.
using Index = Eigen::Index;
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class... Parts>
std::string message(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

inline void check_index(const char* function, const char* argument, Eigen::Index value, Eigen::Index count) {
    if (value < 0 || value >= count)
        throw argument_error(message(function, ": ", argument, " = ", value, " is out of range [0, ", count, ")"));
}

inline void check_positive(const char* function, const char* argument, Eigen::Index value) {
    if (value <= 0) throw argument_error(message(function, ": ", argument, " must be positive, got ", value));
}

template <class D>
void check_not_empty(const char* function, const char* argument, const Eigen::EigenBase<D>& m) {
    if (m.rows() == 0 || m.cols() == 0)
        throw shape_error(message(function, ": ", argument, " is empty (", m.rows(), " × ", m.cols(), ")"));
}

/// `what` (rows × cols) must have `expected` columns.
template <class D>
void check_cols(const char* function, const char* argument, const Eigen::EigenBase<D>& m, Eigen::Index expected,
                const char* because) {
    if (m.cols() != expected)
        throw shape_error(
            message(function, ": ", argument, " has ", m.cols(), " columns, expected ", expected, " (", because, ")"));
}

template <class D>
void check_rows(const char* function, const char* argument, const Eigen::EigenBase<D>& m, Eigen::Index expected,
                const char* because) {
    if (m.rows() != expected)
        throw shape_error(
            message(function, ": ", argument, " has ", m.rows(), " rows, expected ", expected, " (", because, ")"));
}

template <class D>
void check_vector_size(const char* function, const char* argument, const Eigen::EigenBase<D>& v,
                       Eigen::Index expected) {
    if (v.size() != expected || (v.rows() != 1 && v.cols() != 1))
        throw shape_error(message(function, ": ", argument, " must be a vector of ", expected, " entries, got ",
                                  v.rows(), " × ", v.cols()));
}

/// heads × rows × cols as a size_t, refusing negative extents and overflow.
inline std::size_t checked_size(const char* function, Eigen::Index a, Eigen::Index b, Eigen::Index c) {
    if (a < 0 || b < 0 || c < 0) throw argument_error(message(function, ": negative extent ", a, " × ", b, " × ", c));
    const auto limit = static_cast<double>(std::numeric_limits<std::ptrdiff_t>::max()) / 16;
    if (static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c) > limit)
        throw argument_error(message(function, ": extent ", a, " × ", b, " × ", c, " is too large"));
    return static_cast<std::size_t>(a) * static_cast<std::size_t>(b) * static_cast<std::size_t>(c);
}

}  // namespace attn::detail
