#pragma once
// A GGUF file's tensors behind the reading interface of TensorFiles (formats/tensor_files.hpp),
// so that Model::read_weights reads either with one loop: row-major shapes, 2-D tensors into
// Eigen blocks as stored or transposed, 1-D tensors as vectors, every value converted to T.
//
// Shapes: GGUF lists a tensor's extents in ggml's order, dims[0] the contiguous one (the
// length of a row). shape() reverses them into the row-major order safetensors and PyTorch use,
// so a Linear weight that PyTorch holds as [out, in] and GGUF as dims {in, out} has the shape
// {out, in} here too: the same tensor table describes both files.
//
// Values: F32, F16 and BF16 widen exactly; the block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K) are dequantized as llama.cpp's dequantize_row_* does (GgufFile::dequantize_rows), a few rows at a
// time, so that no float copy of a whole large tensor is made.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/formats/gguf.hpp"
#include "attn/formats/safetensors.hpp"  // detail::shape_text

namespace attn {

/// The tensors of one GGUF file, read as TensorFiles reads a safetensors directory's.
class GgufTensors {
public:
    explicit GgufTensors(GgufFile file) : file_(std::move(file)) {}

    const GgufFile& file() const { return file_; }
    /// The file's path (messages name it).
    const std::string& origin() const { return file_.source(); }
    /// The file holding tensor `name`: the one file.
    const std::string& source(std::string_view) const { return file_.source(); }

    /// Tensor names, sorted (std::string order).
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        out.reserve(file_.tensors().size());
        for (const GgufTensorInfo& t : file_.tensors()) out.push_back(t.name);
        std::sort(out.begin(), out.end());
        return out;
    }
    bool contains(std::string_view name) const { return file_.has_tensor(name); }

    /// The row-major shape (ggml's dims reversed): {out, in} for a Linear weight, {V, C} for
    /// the token embedding. format_error naming the tensor if there is none.
    std::vector<std::int64_t> shape(std::string_view name) const {
        const GgufTensorInfo& t = file_.tensor(name);
        return std::vector<std::int64_t>(t.dims.rbegin(), t.dims.rend());  // each ≤ 2^63 − 1: checked at open
    }
    /// The ggml type's name ("F32", "BF16", "Q8_0", …).
    std::string type_name(std::string_view name) const { return ggml_type_name(file_.tensor(name).type); }

    /// A 2-D tensor [rows, cols] as a (rows × cols) matrix.
    template <class T>
    Matrix<T> matrix(std::string_view name) const {
        const GgufTensorInfo& t = expect_rank(name, 2, "matrix");
        Matrix<T> m(Index(t.dims[1]), Index(t.dims[0]));
        read_matrix_into<T>(name, m, false);
        return m;
    }

    /// A 2-D tensor [rows, cols] as its (cols × rows) transpose ([out, in] → attn's (in × out)).
    template <class T>
    Matrix<T> transposed_matrix(std::string_view name) const {
        const GgufTensorInfo& t = expect_rank(name, 2, "matrix");
        Matrix<T> m(Index(t.dims[0]), Index(t.dims[1]));
        read_matrix_into<T>(name, m, true);
        return m;
    }

    /// Writes the 2-D tensor [rows, cols] into `out`, a block of a larger matrix or a whole one:
    /// (rows × cols) as stored, or (cols × rows) if `transpose`. format_error naming the tensor
    /// if its shape does not fit `out`. T, if given, must be out's scalar type.
    template <class T = void, class Block>
    void read_matrix_into(std::string_view name, Block&& out, bool transpose = false) const {
        using Scalar = typename std::decay_t<Block>::Scalar;
        static_assert(std::is_void_v<T> || std::is_same_v<T, Scalar>,
                      "read_matrix_into<T>: T must be the destination's scalar type");
        const GgufTensorInfo& t = expect_rank(name, 2, "matrix");
        const auto rows = Index(t.dims[1]), length = Index(t.dims[0]);
        if (out.rows() != (transpose ? length : rows) || out.cols() != (transpose ? rows : length))
            throw format_error(detail::message(
                origin(), ": tensor '", t.name, "' has shape ", detail::shape_text(shape(name)), ", read ",
                transpose ? "transposed " : "", "as (", transpose ? length : rows, " × ", transpose ? rows : length,
                "), which does not fit the destination (", out.rows(), " × ", out.cols(), ")"));
        // A few rows at a time: 64 K floats, at least one row.
        const Index chunk = std::max<Index>(1, Index(1 << 16) / std::max<Index>(1, length));
        std::vector<float> buffer(std::size_t(std::min(chunk, rows) * length));
        for (Index first = 0; first < rows; first += chunk) {
            const Index count = std::min(chunk, rows - first);
            file_.dequantize_rows(name, std::uint64_t(first), std::uint64_t(count), buffer.data());
            for (Index r = 0; r < count; ++r) {
                const Eigen::Map<const Eigen::Matrix<float, 1, Eigen::Dynamic>> row(buffer.data() + r * length, length);
                if (transpose)
                    out.col(first + r) = row.transpose().template cast<Scalar>();
                else
                    out.row(first + r) = row.template cast<Scalar>();
            }
        }
    }

    /// Rows first … first + count − 1 of the 2-D tensor [rows, cols] as T (dequantized, then
    /// widened for double), row after row into out (count · cols values): a large matrix read a
    /// band at a time. argument_error for rows outside the tensor.
    template <class T>
    void convert_rows(std::string_view name, Index first, Index count, T* out) const {
        const GgufTensorInfo& t = expect_rank(name, 2, "matrix");
        if (first < 0 || count < 0)
            throw argument_error(
                detail::message(origin(), ": rows [", first, ", ", first, " + ", count, ") of tensor '", t.name, "'"));
        if constexpr (std::is_same_v<T, float>) {
            file_.dequantize_rows(name, std::uint64_t(first), std::uint64_t(count), out);
        } else {
            const Index length = Index(t.dims[0]);
            std::vector<float> values(std::size_t(count * length));
            file_.dequantize_rows(name, std::uint64_t(first), std::uint64_t(count), values.data());
            std::copy(values.begin(), values.end(), out);
        }
    }

    /// Rows first … first + count − 1 of the 2-D tensor [rows, cols] as the file stores them
    /// (blocks of its type), into `out` (size bytes: GgufFile::read_rows).
    void read_rows(std::string_view name, Index first, Index count, std::uint8_t* out, std::size_t size) const {
        expect_rank(name, 2, "matrix");
        file_.read_rows(name, std::uint64_t(first), std::uint64_t(count), out, size);
    }

    /// A 1-D tensor as a column vector.
    template <class T>
    Vector<T> vector(std::string_view name) const {
        const GgufTensorInfo& t = expect_rank(name, 1, "vector");
        std::vector<float> values(std::size_t(t.elements));
        file_.dequantize_rows(name, 0, 1, values.data());
        Vector<T> v(Index(t.elements));
        for (Index i = 0; i < v.size(); ++i) v(i) = T(values[std::size_t(i)]);
        return v;
    }

private:
    const GgufTensorInfo& expect_rank(std::string_view name, std::size_t rank, const char* what) const {
        const GgufTensorInfo& t = file_.tensor(name);
        if (t.dims.size() != rank)
            throw format_error(detail::message(origin(), ": tensor '", t.name, "' has shape ",
                                               detail::shape_text(shape(name)), ", expected a ", what, " (", rank,
                                               "-D)"));
        return t;
    }

    GgufFile file_;
};

}  // namespace attn
