#pragma once
// NumPy's .npy format, version 1.0, written for float and double arrays so that
// `numpy.load(path)` reads attn's results directly: little-endian '<f4' / '<f8', C order
// (row-major, the last axis fastest), whatever the host's byte order.
//
// Format: the magic "\x93NUMPY", version 1.0, a 2-byte little-endian header length, then
// a Python dict literal padded with spaces and ended by '\n' so that the data starts at
// a multiple of 64 bytes, then the raw values.

#include <Eigen/Core>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/io/endian.hpp"
#include "attn/error.hpp"

namespace attn {

namespace detail {

template <class T>
constexpr const char* npy_descr() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "npy: only float and double are written");
    return std::is_same_v<T, float> ? "<f4" : "<f8";
}

/// The header for `shape` (preamble, dict, padding), data then starts on a 64-byte boundary.
inline std::string npy_header(const char* descr, const std::vector<Index>& shape) {
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < shape.size(); ++i)
        dict += std::to_string(shape[i]) + (i + 1 < shape.size() ? ", " : "");
    if (shape.size() == 1) dict += ",";  // a 1-tuple in Python needs its comma
    dict += "), }";
    const std::size_t preamble = 10;  // magic (6) + version (2) + header length (2)
    const std::size_t unpadded = preamble + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > 65535)
        throw argument_error(message("write_npy: shape has too many axes for an .npy v1.0 header"));
    std::string header = "\x93NUMPY";
    header += char(1);
    header += char(0);
    header += char(dict.size() & 0xFF);
    header += char((dict.size() >> 8) & 0xFF);
    return header + dict;
}

template <class T>
void write_little_endian(std::ostream& out, const T* data, std::size_t count) {
    if (host_is_little_endian()) {
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
        return;
    }
    char bytes[sizeof(T)];
    for (std::size_t i = 0; i < count; ++i) {
        std::memcpy(bytes, data + i, sizeof(T));
        for (std::size_t b = 0; b < sizeof(T) / 2; ++b) std::swap(bytes[b], bytes[sizeof(T) - 1 - b]);
        out.write(bytes, sizeof(T));
    }
}

}  // namespace detail

namespace detail {

/// The element count of a shape, each extent checked (argument_error for a negative one).
inline std::size_t npy_count(const std::vector<Index>& shape) {
    std::size_t count = 1;
    for (Index extent : shape) {
        if (extent < 0) throw argument_error(message("write_npy: negative extent ", extent, " in shape"));
        count *= static_cast<std::size_t>(extent);
    }
    return count;
}

/// The header, then `count` values from `data` (count = the shape's product, checked by the caller).
template <class T>
void write_npy_values(std::ostream& out, const std::vector<Index>& shape, const T* data, std::size_t count) {
    const std::string header = npy_header(npy_descr<T>(), shape);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    write_little_endian(out, data, count);
}

/// `write` into a new file, io_error naming it if it cannot be opened or written.
template <class Write>
void write_npy_file(const std::filesystem::path& file, Write&& write) {
    std::ofstream out(file, std::ios::binary);
    if (!out) throw io_error(message(file.string(), ": cannot open for writing"));
    write(out);
    if (!out.flush()) throw io_error(message(file.string(), ": writing failed"));
}

}  // namespace detail

/// Writes an N-d array of shape `shape` (any number of axes, each ≥ 0) whose values are
/// `values` in C order (row-major: the last axis fastest). Like every writer here, the
/// destination comes first. Throws argument_error for a negative extent and shape_error if
/// `values` does not hold the product of the extents.
template <class T>
void write_npy(std::ostream& out, const std::vector<Index>& shape, const std::vector<T>& values) {
    const std::size_t count = detail::npy_count(shape);
    if (values.size() != count)
        throw shape_error(detail::message("write_npy: ", values.size(), " values for a shape of ", count));
    detail::write_npy_values(out, shape, values.data(), count);
}

/// write_npy into `file`; io_error naming it if it cannot be written.
template <class T>
void write_npy(const std::filesystem::path& file, const std::vector<Index>& shape, const std::vector<T>& values) {
    const std::size_t count = detail::npy_count(shape);  // checked before the file is created
    if (values.size() != count)
        throw shape_error(detail::message("write_npy: ", values.size(), " values for a shape of ", count));
    detail::write_npy_file(file,
                           [&](std::ostream& out) { detail::write_npy_values(out, shape, values.data(), count); });
}

/// Writes a matrix (rows × cols) as a 2-d array of that shape, row-major whatever the
/// expression's storage order.
template <class D>
void write_npy(const std::filesystem::path& file, const Eigen::MatrixBase<D>& matrix) {
    using T = typename D::Scalar;
    const Matrix<T> row_major = matrix;  // evaluates expressions and column-major storage into C order
    const std::vector<Index> shape{row_major.rows(), row_major.cols()};
    detail::write_npy_file(file, [&](std::ostream& out) {
        detail::write_npy_values(out, shape, row_major.data(), std::size_t(row_major.size()));
    });
}

}  // namespace attn
