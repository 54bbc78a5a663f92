#pragma once
// Reader (and a minimal writer) for the safetensors format.
//
// Layout: an 8-byte little-endian unsigned header length N, then N bytes of UTF-8
// JSON (possibly padded with trailing spaces), then the data section. The JSON
// object maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the start of the data section) and may hold one
// "__metadata__" object of string → string.
//
// SafeTensors::open reads the 8-byte length and the header, not the tensors, and
// validates the header against the file's size completely before any tensor is read:
//   * the file holds the 8-byte length, the header fits in the file and is at most
//     100 MB (max_header_bytes), is valid UTF-8 and a JSON object without duplicate
//     keys at any level;
//   * each entry is an object with exactly the fields dtype (a known dtype name),
//     shape (non-negative integers) and data_offsets (two non-negative integers,
//     begin ≤ end); the element count times the dtype size equals end − begin,
//     computed without overflow;
//   * sorted by offset, the tensors tile the data section exactly: no overlap, no
//     gap, nothing after the last tensor, nothing missing at the end (a truncated
//     file is reported as an offset past the data section);
//   * __metadata__, if present, is an object whose values are all strings.
// Any violation throws attn::format_error naming the file (the path, or the name
// given to from_bytes), the tensor where there is one, and the expected and actual
// values; failing to open or read the file throws attn::io_error.
//
// Each tensor is read from the file when asked for (matrix, transposed_matrix,
// read_matrix_into, vector, tensor, integers, raw), straight into its destination or
// through a buffer of at most chunk_elements elements, so a loader holds every tensor
// once. A file that changed after open (another size or modification time, or shorter
// than a read needs) throws attn::io_error naming the file and the tensor.
//
// Conversions: matrix/vector/tensor<T> (T = float or double) read F64, F32, F16 and
// BF16 tensors. F16 and BF16 convert exactly (subnormals included); F64 → float
// rounds to nearest, and finite values beyond float's range become ±infinity.
// Infinities stay infinite and NaN stays NaN (the payload is not guaranteed); no
// error is raised for them — check with allFinite() where it matters.
// integers(name) reads I64, I32, I16, I8, U64 (values ≤ 2^63 − 1), U32, U16, U8 and
// BOOL tensors as std::int64_t. Other recognised dtypes (F8_E5M2, F8_E4M3) can be
// inspected with info() but not converted.
//
// The reader assumes a little-endian host (checked at compile time where the
// compiler says, and by the first from_bytes call otherwise).

#include <nlohmann/json.hpp>
#if NLOHMANN_JSON_VERSION_MAJOR < 3 || (NLOHMANN_JSON_VERSION_MAJOR == 3 && NLOHMANN_JSON_VERSION_MINOR < 9)
#error "attn needs nlohmann_json 3.9 or newer (parse with ignore_comments)"
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/detail/io/endian.hpp"
#include "attn/detail/io/read_only_file.hpp"
#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/text/utf8.hpp"
#include "attn/error.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attn/formats/safetensors.hpp supports little-endian hosts only"
#endif

namespace attn {

/// Element types of the safetensors format.
enum class DType { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

/// The dtype's name as written in a safetensors header ("F32", "BF16"...).
inline const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::BOOL:
            return "BOOL";
        case DType::U8:
            return "U8";
        case DType::I8:
            return "I8";
        case DType::F8_E5M2:
            return "F8_E5M2";
        case DType::F8_E4M3:
            return "F8_E4M3";
        case DType::I16:
            return "I16";
        case DType::U16:
            return "U16";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I32:
            return "I32";
        case DType::U32:
            return "U32";
        case DType::F32:
            return "F32";
        case DType::F64:
            return "F64";
        case DType::I64:
            return "I64";
        case DType::U64:
            return "U64";
    }
    return "?";
}

/// Bytes per element.
inline std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::BOOL:
        case DType::U8:
        case DType::I8:
        case DType::F8_E5M2:
        case DType::F8_E4M3:
            return 1;
        case DType::I16:
        case DType::U16:
        case DType::F16:
        case DType::BF16:
            return 2;
        case DType::I32:
        case DType::U32:
        case DType::F32:
            return 4;
        case DType::F64:
        case DType::I64:
        case DType::U64:
            return 8;
    }
    return 0;
}

/// The dtype called `name` in a header, or nothing if the name is unknown.
inline std::optional<DType> parse_dtype(std::string_view name) {
    static constexpr DType all[] = {DType::BOOL, DType::U8,  DType::I8,  DType::F8_E5M2, DType::F8_E4M3,
                                    DType::I16,  DType::U16, DType::F16, DType::BF16,    DType::I32,
                                    DType::U32,  DType::F32, DType::F64, DType::I64,     DType::U64};
    for (DType d : all)
        if (name == dtype_name(d)) return d;
    return std::nullopt;
}

/// One tensor's header entry.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0;  ///< byte offset in the data section
    std::uint64_t end = 0;    ///< one past the last byte; end − begin = elements() × dtype_size(dtype)

    /// Product of the shape (1 for a scalar of rank 0).
    std::uint64_t elements() const {
        std::uint64_t n = 1;
        for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
        return n;
    }
};

/// A tensor of any rank: its shape and its values in row-major (C) order.
template <class T>
struct TensorData {
    std::vector<std::int64_t> shape;
    std::vector<T> values;
};

namespace detail {

inline std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

/// double → T (float or double), rounding to nearest; overflow gives ±infinity
/// (written out because a plain cast of an out-of-range double is undefined in C++).
template <class T>
T narrow_floating(double x) {
    if constexpr (std::is_same_v<T, double>) {
        return x;
    } else {
        // Smallest magnitude that rounds to infinity: halfway between FLT_MAX and 2^128.
        constexpr double overflow = 0x1.ffffffp127;
        if (x >= overflow) return std::numeric_limits<float>::infinity();
        if (x <= -overflow) return -std::numeric_limits<float>::infinity();
        if (x != x) return std::numeric_limits<float>::quiet_NaN();
        if (x > static_cast<double>(std::numeric_limits<float>::max())) return std::numeric_limits<float>::max();
        if (x < -static_cast<double>(std::numeric_limits<float>::max())) return -std::numeric_limits<float>::max();
        return static_cast<float>(x);
    }
}

template <class U>
U load_le(const std::uint8_t* p) {
    U value;
    std::memcpy(&value, p, sizeof value);  // little-endian host
    return value;
}

/// elements × dtype size of a shape of non-negative extents, or nothing if it
/// overflows 64 bits (a zero extent makes it 0 whatever the others are).
inline std::optional<std::uint64_t> checked_byte_count(const std::vector<std::int64_t>& shape, DType dtype) {
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return std::uint64_t(0);
    std::uint64_t bytes = dtype_size(dtype);
    for (std::int64_t d : shape) {
        const auto u = static_cast<std::uint64_t>(d);
        if (bytes > std::numeric_limits<std::uint64_t>::max() / u) return std::nullopt;
        bytes *= u;
    }
    return bytes;
}

}  // namespace detail

/// A safetensors file, validated on construction; tensors are read when asked for.
///
/// open() reads only the 8-byte length and the header; each matrix/vector/tensor/
/// integers/raw call then reads that tensor's bytes from the file and converts them,
/// so loading every tensor holds each tensor once (plus a buffer of at most
/// chunk_elements elements while converting). from_bytes() keeps the whole file in
/// memory. Const methods are safe to call from several threads at once. Copies share
/// the open file.
class SafeTensors {
public:
    /// Largest header accepted (as the reference implementation: 100 MB).
    static constexpr std::uint64_t max_header_bytes = 100'000'000;

    /// Elements converted per read when a tensor's bytes cannot go straight into the
    /// destination (another dtype, a transpose, a block of a larger matrix).
    static constexpr std::size_t chunk_elements = std::size_t(1) << 18;

    /// Opens the file at `path` and validates its header against its size. io_error if
    /// it cannot be opened or read, format_error if it is malformed.
    static SafeTensors open(const std::filesystem::path& path) {
        const std::string name = path.string();
        try {
            return SafeTensors(std::make_shared<const detail::ReadOnlyFile>(path), name);
        } catch (const io_error& e) {
            throw io_error(detail::message("SafeTensors::open: ", e.what()));
        }
    }

    /// Validates a file already in memory; `name` is used in error messages.
    static SafeTensors from_bytes(std::vector<std::uint8_t> bytes, std::string name = "<bytes>") {
        return SafeTensors(std::move(bytes), std::move(name));
    }

    /// The path or name the file was opened with.
    const std::string& source() const { return name_; }

    /// Tensor names, sorted (std::string order, i.e. bytewise).
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        out.reserve(tensors_.size());
        for (const auto& entry : tensors_) out.push_back(entry.first);
        return out;
    }

    std::size_t size() const { return tensors_.size(); }
    bool contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

    /// The header entry of tensor `name`; format_error if there is none.
    const TensorInfo& info(std::string_view name) const {
        const auto found = tensors_.find(name);
        if (found == tensors_.end())
            throw format_error(detail::message(name_, ": no tensor '", name, "' in the file (it holds ",
                                               tensors_.size(), " tensors)"));
        return found->second;
    }

    /// The __metadata__ object (empty if the file has none).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    /// A 2-D floating tensor [rows, cols] as a (rows × cols) row-major matrix.
    template <class T>
    Matrix<T> matrix(std::string_view name) const {
        const TensorInfo& t = expect_floating_matrix(name);
        Matrix<T> m(static_cast<Index>(t.shape[0]), static_cast<Index>(t.shape[1]));
        convert_range(t, 0, static_cast<std::size_t>(m.size()), m.data());
        return m;
    }

    /// A 2-D floating tensor [rows, cols] as its (cols × rows) transpose, converted
    /// straight from the file (PyTorch's Linear weight [out, in] → attn's (in × out)).
    template <class T>
    Matrix<T> transposed_matrix(std::string_view name) const {
        const TensorInfo& t = expect_floating_matrix(name);
        Matrix<T> m(static_cast<Index>(t.shape[1]), static_cast<Index>(t.shape[0]));
        write_rank2(t, m, true);
        return m;
    }

    /// Writes the 2-D floating tensor [rows, cols] into `out`, an Eigen block of a larger
    /// matrix (e.g. `fused.middleCols(c, k)`) or a whole matrix, of float or double:
    /// (rows × cols) as stored, or its (cols × rows) transpose if `transpose`.
    /// format_error naming the tensor if its shape does not fit `out`. T, if given,
    /// must be out's scalar type.
    template <class T = void, class Block>
    void read_matrix_into(std::string_view name, Block&& out, bool transpose = false) const {
        using Scalar = typename std::decay_t<Block>::Scalar;
        static_assert(std::is_void_v<T> || std::is_same_v<T, Scalar>,
                      "read_matrix_into<T>: T must be the destination's scalar type");
        const TensorInfo& t = expect_floating_matrix(name);
        const auto rows = static_cast<Index>(transpose ? t.shape[1] : t.shape[0]);
        const auto cols = static_cast<Index>(transpose ? t.shape[0] : t.shape[1]);
        if (out.rows() != rows || out.cols() != cols)
            throw format_error(detail::message(name_, ": tensor '", t.name, "' has shape ", detail::shape_text(t.shape),
                                               ", read ", transpose ? "transposed " : "", "as (", rows, " × ", cols,
                                               "), which does not fit the destination (", out.rows(), " × ", out.cols(),
                                               ")"));
        write_rank2(t, out, transpose);
    }

    /// Rows first … first + count − 1 of the 2-D floating tensor [rows, cols], converted to T
    /// row after row into out (count · cols values): a large matrix read a band at a time.
    /// argument_error for rows outside the tensor.
    template <class T>
    void convert_rows(std::string_view name, Index first, Index count, T* out) const {
        const TensorInfo& t = expect_floating_matrix(name);
        const auto rows = static_cast<Index>(t.shape[0]), cols = static_cast<Index>(t.shape[1]);
        if (first < 0 || count < 0 || first > rows || count > rows - first)
            throw argument_error(detail::message(name_, ": rows [", first, ", ", first, " + ", count, ") of tensor '",
                                                 t.name, "', which has ", rows));
        convert_range(t, std::size_t(first) * std::size_t(cols), std::size_t(count) * std::size_t(cols), out);
    }

    /// A 1-D floating tensor as a column vector.
    template <class T>
    Vector<T> vector(std::string_view name) const {
        const TensorInfo& t = expect_rank(name, 1, "vector");
        expect_floating(t);
        Vector<T> v(static_cast<Index>(t.shape[0]));
        convert_range(t, 0, static_cast<std::size_t>(v.size()), v.data());
        return v;
    }

    /// A floating tensor of any rank, values in row-major order.
    template <class T>
    TensorData<T> tensor(std::string_view name) const {
        const TensorInfo& t = info(name);
        expect_floating(t);
        TensorData<T> out{t.shape, std::vector<T>(static_cast<std::size_t>(t.elements()))};
        convert_range(t, 0, out.values.size(), out.values.data());
        return out;
    }

    /// An integer (or BOOL) tensor of any rank, values in row-major order.
    std::vector<std::int64_t> integers(std::string_view name) const {
        const TensorInfo& t = info(name);
        if (!is_integer(t.dtype))
            throw format_error(detail::message(name_, ": tensor '", t.name, "' has dtype ", dtype_name(t.dtype),
                                               ", expected an integer dtype (I64, I32, I16, I8, U64, U32, U16, U8 "
                                               "or BOOL)"));
        const std::size_t n = static_cast<std::size_t>(t.elements());
        const std::size_t width = dtype_size(t.dtype);
        std::vector<std::int64_t> out(n);
        std::vector<std::uint8_t> scratch;
        for (std::size_t first = 0; first < n; first += chunk_elements) {
            const std::size_t count = std::min(chunk_elements, n - first);
            const std::uint8_t* p = tensor_bytes(t, first, count, scratch);
            for (std::size_t k = 0; k < count; ++k) {
                const std::size_t i = first + k;
                switch (t.dtype) {
                    case DType::I64:
                        out[i] = detail::load_le<std::int64_t>(p + width * k);
                        break;
                    case DType::I32:
                        out[i] = detail::load_le<std::int32_t>(p + width * k);
                        break;
                    case DType::I16:
                        out[i] = detail::load_le<std::int16_t>(p + width * k);
                        break;
                    case DType::I8:
                        out[i] = detail::load_le<std::int8_t>(p + k);
                        break;
                    case DType::U32:
                        out[i] = detail::load_le<std::uint32_t>(p + width * k);
                        break;
                    case DType::U16:
                        out[i] = detail::load_le<std::uint16_t>(p + width * k);
                        break;
                    case DType::U8:
                        out[i] = p[k];
                        break;
                    case DType::BOOL:
                        out[i] = p[k] != 0;
                        break;
                    default: {  // U64
                        const auto u = detail::load_le<std::uint64_t>(p + width * k);
                        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                            throw format_error(detail::message(name_, ": tensor '", t.name, "': U64 element ", i, " = ",
                                                               u, " does not fit in std::int64_t"));
                        out[i] = static_cast<std::int64_t>(u);
                        break;
                    }
                }
            }
        }
        return out;
    }

    /// A copy of the raw little-endian bytes of tensor `name`.
    std::vector<std::uint8_t> raw(std::string_view name) const {
        const TensorInfo& t = info(name);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(t.end - t.begin));
        read_bytes(data_start_ + t.begin, out.size(), out.data(), t);
        return out;
    }

private:
    SafeTensors(std::vector<std::uint8_t> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {
        check_host();
        parse(bytes_.size());
    }

    SafeTensors(std::shared_ptr<const detail::ReadOnlyFile> file, std::string name)
        : file_(std::move(file)), name_(std::move(name)) {
        check_host();
        parse(file_->size());
    }

    static void check_host() {
        if (!detail::host_is_little_endian())
            throw format_error("attn::SafeTensors: this reader supports little-endian hosts only");
    }

    static bool is_integer(DType d) {
        switch (d) {
            case DType::I64:
            case DType::I32:
            case DType::I16:
            case DType::I8:
            case DType::U64:
            case DType::U32:
            case DType::U16:
            case DType::U8:
            case DType::BOOL:
                return true;
            default:
                return false;
        }
    }

    static bool is_floating(DType d) {
        return d == DType::F64 || d == DType::F32 || d == DType::F16 || d == DType::BF16;
    }

    /// Copies `count` bytes at byte `offset` of the file (held or opened) into `out`.
    void read_bytes(std::uint64_t offset, std::size_t count, void* out, const TensorInfo& t) const {
        if (count == 0) return;
        if (file_) {
            file_->read(offset, count, out, detail::message("tensor '", t.name, "'"));
        } else {
            std::memcpy(out, bytes_.data() + offset, count);  // within bytes_: checked by parse()
        }
    }

    /// The bytes of elements [first, first + count) of `t`: a pointer into the file held
    /// in memory, or into `scratch` after reading them from the opened file.
    const std::uint8_t* tensor_bytes(const TensorInfo& t, std::size_t first, std::size_t count,
                                     std::vector<std::uint8_t>& scratch) const {
        const std::size_t width = dtype_size(t.dtype);
        const std::uint64_t offset = data_start_ + t.begin + std::uint64_t(first) * width;
        if (!file_) return bytes_.data() + offset;
        if (scratch.size() < count * width) scratch.resize(count * width);
        read_bytes(offset, count * width, scratch.data(), t);
        return scratch.data();
    }

    const TensorInfo& expect_rank(std::string_view name, std::size_t rank, const char* what) const {
        const TensorInfo& t = info(name);
        if (t.shape.size() != rank)
            throw format_error(detail::message(name_, ": tensor '", t.name, "' has rank ", t.shape.size(), " (shape ",
                                               detail::shape_text(t.shape), "), expected rank ", rank, " for a ",
                                               what));
        return t;
    }

    void expect_floating(const TensorInfo& t) const {
        if (!is_floating(t.dtype))
            throw format_error(detail::message(name_, ": tensor '", t.name, "' has dtype ", dtype_name(t.dtype),
                                               ", expected a floating dtype (F64, F32, F16 or BF16)"));
    }

    const TensorInfo& expect_floating_matrix(std::string_view name) const {
        const TensorInfo& t = expect_rank(name, 2, "matrix");
        expect_floating(t);
        return t;
    }

    /// Converts elements [first, first + count) of the floating tensor `t` into out[0, count).
    template <class T>
    void convert_range(const TensorInfo& t, std::size_t first, std::size_t count, T* out) const {
        static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                      "SafeTensors converts floating tensors to float or double");
        const bool same_bits =
            (t.dtype == DType::F32 && std::is_same_v<T, float>) || (t.dtype == DType::F64 && std::is_same_v<T, double>);
        if (same_bits && file_) {  // no conversion: read straight into the destination
            read_bytes(data_start_ + t.begin + std::uint64_t(first) * sizeof(T), count * sizeof(T), out, t);
            return;
        }
        std::vector<std::uint8_t> scratch;
        for (std::size_t done = 0; done < count; done += chunk_elements) {
            const std::size_t n = std::min(chunk_elements, count - done);
            const std::uint8_t* p = tensor_bytes(t, first + done, n, scratch);
            T* o = out + done;
            switch (t.dtype) {
                case DType::F64:
                    for (std::size_t i = 0; i < n; ++i)
                        o[i] = detail::narrow_floating<T>(detail::load_le<double>(p + 8 * i));
                    break;
                case DType::F32:
                    for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<T>(detail::load_le<float>(p + 4 * i));
                    break;
                case DType::F16:
                    for (std::size_t i = 0; i < n; ++i)
                        o[i] = static_cast<T>(detail::half_to_float(detail::load_le<std::uint16_t>(p + 2 * i)));
                    break;
                default:  // BF16; expect_floating refused the rest
                    for (std::size_t i = 0; i < n; ++i)
                        o[i] = static_cast<T>(detail::bfloat16_to_float(detail::load_le<std::uint16_t>(p + 2 * i)));
                    break;
            }
        }
    }

    /// Writes the floating rank-2 tensor `t` [rows, cols] into `out`: (rows × cols), or
    /// (cols × rows) if `transpose`; out's shape is the caller's to check. Whole rows are
    /// converted a chunk at a time into a buffer and copied into place by Eigen (which
    /// transposes a cache-sized block well); a row longer than a chunk goes piece by piece.
    template <class Dest>
    void write_rank2(const TensorInfo& t, Dest& out, bool transpose) const {
        using T = typename Dest::Scalar;
        const auto rows = static_cast<Index>(t.shape[0]), cols = static_cast<Index>(t.shape[1]);
        if (rows == 0 || cols == 0) return;
        const auto width = static_cast<std::size_t>(cols);
        std::vector<T> buffer;
        if (width <= chunk_elements) {
            const auto rows_per_chunk = static_cast<Index>(chunk_elements / width);
            buffer.resize(static_cast<std::size_t>(std::min(rows, rows_per_chunk)) * width);
            for (Index i = 0; i < rows; i += rows_per_chunk) {
                const Index k = std::min(rows_per_chunk, rows - i);
                convert_range(t, static_cast<std::size_t>(i) * width, static_cast<std::size_t>(k) * width,
                              buffer.data());
                const Eigen::Map<const Matrix<T>> block(buffer.data(), k, cols);
                if (transpose)
                    out.middleCols(i, k) = block.transpose();
                else
                    out.middleRows(i, k) = block;
            }
            return;
        }
        buffer.resize(chunk_elements);
        for (Index i = 0; i < rows; ++i) {
            for (Index j = 0; j < cols; j += static_cast<Index>(chunk_elements)) {
                const Index k = std::min(static_cast<Index>(chunk_elements), cols - j);
                convert_range(t, static_cast<std::size_t>(i) * width + static_cast<std::size_t>(j),
                              static_cast<std::size_t>(k), buffer.data());
                const Eigen::Map<const Vector<T>> piece(buffer.data(), k);
                if (transpose)
                    out.col(i).segment(j, k) = piece;
                else
                    out.row(i).segment(j, k) = piece.transpose();
            }
        }
    }

    template <class... Parts>
    [[noreturn]] void fail(const Parts&... parts) const {
        throw format_error(detail::message(name_, ": ", parts...));
    }

    /// A JSON value that must be an integer in [0, 2^63 − 1].
    std::uint64_t non_negative(const nlohmann::json& v, const std::string& tensor, const char* field,
                               std::size_t index) const {
        if (!v.is_number_integer())
            fail("tensor '", tensor, "': ", field, "[", index, "] is a ", v.type_name(),
                 v.is_number_float() ? " with a fraction, an exponent or more than 64 bits" : "",
                 ", expected a non-negative integer");
        if (!v.is_number_unsigned()) {
            const auto s = v.get<std::int64_t>();
            if (s < 0)
                fail("tensor '", tensor, "': ", field, "[", index, "] = ", s, ", expected a non-negative integer");
            return static_cast<std::uint64_t>(s);
        }
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            fail("tensor '", tensor, "': ", field, "[", index, "] = ", u, " is larger than 2^63 - 1");
        return u;
    }

    static nlohmann::json parse_header(const std::string& text, const std::string& file) {
        // nlohmann keeps the last of duplicate keys silently: track the keys of every
        // open object and refuse a repeat. Nesting deeper than a valid header's
        // (root → entry → shape) is refused as it goes.
        constexpr std::size_t deepest = 3;
        std::vector<std::vector<std::string>> open;  // keys seen, per open object or array
        std::vector<bool> is_object;
        const nlohmann::json::parser_callback_t callback = [&](int, nlohmann::json::parse_event_t event,
                                                               nlohmann::json& parsed) {
            using E = nlohmann::json::parse_event_t;
            switch (event) {
                case E::object_start:
                case E::array_start:
                    if (open.size() >= deepest)
                        throw format_error(detail::message(file, ": header JSON is nested deeper than ", deepest,
                                                           " levels, which no valid header needs"));
                    open.emplace_back();
                    is_object.push_back(event == E::object_start);
                    break;
                case E::object_end:
                case E::array_end:
                    if (!open.empty()) {
                        open.pop_back();
                        is_object.pop_back();
                    }
                    break;
                case E::key: {
                    if (open.empty() || !parsed.is_string()) break;
                    const auto& key = parsed.get_ref<const std::string&>();
                    auto& keys = open.back();
                    if (std::find(keys.begin(), keys.end(), key) != keys.end())
                        throw format_error(detail::message(
                            file, ": duplicate key '", key, "' in the header",
                            open.size() == 1 ? " (two tensors with the same name)" : " (inside one tensor's entry)"));
                    keys.push_back(key);
                    break;
                }
                case E::value:
                    break;
            }
            return true;
        };
        try {
            return nlohmann::json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
        } catch (const nlohmann::json::exception& e) {
            throw format_error(detail::message(file, ": header is not valid JSON: ", e.what()));
        }
    }

    /// Copies header bytes (validated to lie within the file) into `out`.
    void read_header_bytes(std::uint64_t offset, std::size_t count, void* out) const {
        if (file_)
            file_->read(offset, count, out, "the header");
        else
            std::memcpy(out, bytes_.data() + offset, count);
    }

    void parse(std::uint64_t size) {
        if (size < 8)
            fail("file is ", size, " bytes long, shorter than the 8-byte header length that starts a safetensors file");
        std::uint8_t length_bytes[8];
        read_header_bytes(0, 8, length_bytes);
        const auto header_length = detail::load_le<std::uint64_t>(length_bytes);
        if (header_length > size - 8)
            fail("header length ", header_length, " extends past the end of the file (", size, " bytes, so at most ",
                 size - 8, " bytes of header); the file is truncated or not a safetensors file");
        if (header_length > max_header_bytes)
            fail("header length ", header_length, " exceeds the limit of ", max_header_bytes, " bytes");
        data_start_ = 8 + header_length;
        const std::uint64_t data_size = size - 8 - header_length;

        std::string text(static_cast<std::size_t>(header_length), '\0');
        read_header_bytes(8, text.size(), text.data());
        const auto bad = detail::find_invalid_utf8(text);
        if (bad.problem) fail("header is not valid UTF-8: ", bad.problem, " at header byte ", bad.position);

        try {
            const nlohmann::json header = parse_header(text, name_);
            if (!header.is_object()) fail("header is a JSON ", header.type_name(), ", expected a JSON object");
            for (const auto& [key, value] : header.items()) {
                if (key == "__metadata__")
                    read_metadata(value);
                else
                    read_entry(key, value, data_size);
            }
        } catch (const nlohmann::json::exception& e) {  // backstop: no nlohmann exception escapes
            fail("malformed header: ", e.what());
        }
        check_tiling(data_size);
    }

    void read_metadata(const nlohmann::json& value) {
        if (!value.is_object()) fail("__metadata__ is a JSON ", value.type_name(), ", expected an object of strings");
        for (const auto& [key, v] : value.items()) {
            if (!v.is_string()) fail("__metadata__ entry '", key, "' is a JSON ", v.type_name(), ", expected a string");
            metadata_.emplace(key, v.get<std::string>());
        }
    }

    void read_entry(const std::string& name, const nlohmann::json& value, std::uint64_t data_size) {
        if (!value.is_object())
            fail("tensor '", name, "': entry is a JSON ", value.type_name(), ", expected an object");
        for (const char* field : {"dtype", "shape", "data_offsets"})
            if (!value.contains(field)) fail("tensor '", name, "': missing field '", field, "'");
        for (const auto& [key, v] : value.items())
            if (key != "dtype" && key != "shape" && key != "data_offsets")
                fail("tensor '", name, "': unexpected field '", key,
                     "' (expected exactly dtype, shape and data_offsets)");

        TensorInfo t;
        t.name = name;
        const auto& dtype = value["dtype"];
        if (!dtype.is_string()) fail("tensor '", name, "': dtype is a JSON ", dtype.type_name(), ", expected a string");
        const auto parsed = parse_dtype(dtype.get_ref<const std::string&>());
        if (!parsed)
            fail("tensor '", name, "': unknown dtype '", dtype.get_ref<const std::string&>(),
                 "' (expected one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, "
                 "U64)");
        t.dtype = *parsed;

        const auto& shape = value["shape"];
        if (!shape.is_array()) fail("tensor '", name, "': shape is a JSON ", shape.type_name(), ", expected an array");
        for (std::size_t i = 0; i < shape.size(); ++i)
            t.shape.push_back(static_cast<std::int64_t>(non_negative(shape[i], name, "shape", i)));

        const auto& offsets = value["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2)
            fail("tensor '", name, "': data_offsets is a JSON ", offsets.type_name(),
                 offsets.is_array() ? detail::message(" of ", offsets.size(), " values") : std::string(),
                 ", expected an array [begin, end]");
        t.begin = non_negative(offsets[0], name, "data_offsets", 0);
        t.end = non_negative(offsets[1], name, "data_offsets", 1);
        if (t.begin > t.end) fail("tensor '", name, "': data_offsets [", t.begin, ", ", t.end, "] has begin > end");
        if (t.end > data_size)
            fail("tensor '", name, "': data_offsets [", t.begin, ", ", t.end, "] extend past the data section (",
                 data_size, " bytes); the file may be truncated");

        const std::optional<std::uint64_t> needed = detail::checked_byte_count(t.shape, t.dtype);
        if (!needed)
            fail("tensor '", name, "': shape ", detail::shape_text(t.shape), " of ", dtype_name(t.dtype),
                 " needs more than 2^64 bytes, data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin);
        const std::uint64_t bytes = *needed;
        if (bytes != t.end - t.begin)
            fail("tensor '", name, "': shape ", detail::shape_text(t.shape), " of ", dtype_name(t.dtype), " needs ",
                 bytes, " bytes, data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin);
        tensors_.emplace(name, std::move(t));
    }

    void check_tiling(std::uint64_t data_size) const {
        std::vector<const TensorInfo*> order;
        order.reserve(tensors_.size());
        for (const auto& entry : tensors_) order.push_back(&entry.second);
        std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
            return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
        });
        std::uint64_t covered = 0;
        const TensorInfo* previous = nullptr;
        for (const TensorInfo* t : order) {
            if (t->begin < covered)
                fail("tensor '", t->name, "': data_offsets [", t->begin, ", ", t->end, "] overlap tensor '",
                     previous->name, "' at [", previous->begin, ", ", previous->end, "]");
            if (t->begin > covered)
                fail("tensor '", t->name, "': data_offsets [", t->begin, ", ", t->end, "] leave a gap: expected begin ",
                     covered, previous ? detail::message(" (end of tensor '", previous->name, "')") : std::string(),
                     ", got ", t->begin);
            covered = t->end;
            previous = t;
        }
        if (covered != data_size)
            fail("the tensors cover ", covered, " bytes of the ", data_size,
                 "-byte data section; expected them to cover it exactly (", data_size - covered,
                 " unclaimed bytes at the end)");
    }

    std::vector<std::uint8_t> bytes_;                   // the whole file, from from_bytes
    std::shared_ptr<const detail::ReadOnlyFile> file_;  // or the opened file, read tensor by tensor
    std::string name_;
    std::uint64_t data_start_ = 0;
    std::map<std::string, TensorInfo, std::less<>> tensors_;
    std::map<std::string, std::string> metadata_;
};

// ---------------------------------------------------------------------------
// Writer

/// One tensor to write: name, dtype, shape and its raw little-endian bytes.
struct SafeTensorsEntry {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> bytes;
};

namespace detail {
template <class T>
constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
        return DType::F32;
    else if constexpr (std::is_same_v<T, double>)
        return DType::F64;
    else if constexpr (std::is_same_v<T, std::int64_t>)
        return DType::I64;
    else if constexpr (std::is_same_v<T, std::int32_t>)
        return DType::I32;
    else
        static_assert(sizeof(T) == 0, "safetensors_entry writes float (F32), double (F64), int64 (I64) or int32 (I32)");
}
}  // namespace detail

/// An entry of any shape from row-major values (float → F32, double → F64,
/// std::int64_t → I64, std::int32_t → I32). argument_error if the shape does not
/// match the number of values.
template <class T>
SafeTensorsEntry safetensors_entry(std::string name, std::vector<std::int64_t> shape, const std::vector<T>& values) {
    for (std::int64_t d : shape)
        if (d < 0)
            throw argument_error(detail::message("safetensors_entry: tensor '", name, "': negative extent in shape ",
                                                 detail::shape_text(shape)));
    const auto bytes = detail::checked_byte_count(shape, detail::dtype_of<T>());
    if (!bytes || *bytes != values.size() * sizeof(T))
        throw argument_error(detail::message("safetensors_entry: tensor '", name, "': shape ",
                                             detail::shape_text(shape), " does not hold ", values.size(), " values"));
    SafeTensorsEntry e{std::move(name), detail::dtype_of<T>(), std::move(shape), {}};
    e.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(e.bytes.data(), values.data(), e.bytes.size());
    return e;
}

/// An entry from an Eigen matrix or vector: rank 1 for compile-time column or row
/// vectors (attn::Vector), rank 2 (rows × cols, row-major) otherwise.
template <class D>
SafeTensorsEntry safetensors_entry(std::string name, const Eigen::MatrixBase<D>& m) {
    using T = typename D::Scalar;
    std::vector<T> values(static_cast<std::size_t>(m.size()));
    std::size_t k = 0;
    for (Index i = 0; i < m.rows(); ++i)
        for (Index j = 0; j < m.cols(); ++j) values[k++] = m(i, j);
    std::vector<std::int64_t> shape;
    if (D::ColsAtCompileTime == 1 || D::RowsAtCompileTime == 1)
        shape = {static_cast<std::int64_t>(m.size())};
    else
        shape = {static_cast<std::int64_t>(m.rows()), static_cast<std::int64_t>(m.cols())};
    return safetensors_entry(std::move(name), std::move(shape), values);
}

/// The bytes of a safetensors file holding `tensors` in the given order (header
/// padded with spaces to a multiple of 8 bytes). argument_error for duplicate or
/// reserved names and byte counts that do not match the shape.
inline std::vector<std::uint8_t> safetensors_bytes(const std::vector<SafeTensorsEntry>& tensors,
                                                   const std::map<std::string, std::string>& metadata = {}) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
        if (t.name == "__metadata__")
            throw argument_error("safetensors_bytes: '__metadata__' is reserved and cannot name a tensor");
        if (header.contains(t.name))
            throw argument_error(detail::message("safetensors_bytes: tensor '", t.name, "' appears twice"));
        if (detail::find_invalid_utf8(t.name).problem)
            throw argument_error(detail::message("safetensors_bytes: tensor name '", t.name, "' is not valid UTF-8"));
        for (std::int64_t d : t.shape)
            if (d < 0)
                throw argument_error(detail::message("safetensors_bytes: tensor '", t.name, "': negative extent in ",
                                                     detail::shape_text(t.shape)));
        const auto bytes = detail::checked_byte_count(t.shape, t.dtype);
        if (!bytes || *bytes != t.bytes.size())
            throw argument_error(detail::message("safetensors_bytes: tensor '", t.name, "': shape ",
                                                 detail::shape_text(t.shape), " of ", dtype_name(t.dtype), " needs ",
                                                 bytes ? std::to_string(*bytes) : std::string("more than 2^64"),
                                                 " bytes, got ", t.bytes.size()));
        header[t.name] = {
            {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::vector<std::uint8_t> out(8 + text.size());
    const std::uint64_t length = text.size();
    std::memcpy(out.data(), &length, 8);
    std::memcpy(out.data() + 8, text.data(), text.size());
    out.reserve(out.size() + static_cast<std::size_t>(offset));
    for (const auto& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

/// Writes `tensors` to `path` as a safetensors file; io_error if the file cannot be written.
inline void write_safetensors(const std::filesystem::path& path, const std::vector<SafeTensorsEntry>& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
    const std::vector<std::uint8_t> bytes = safetensors_bytes(tensors, metadata);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw io_error(detail::message("write_safetensors: cannot create '", path.string(), "'"));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw io_error(detail::message("write_safetensors: cannot write '", path.string(), "'"));
}

}  // namespace attn
