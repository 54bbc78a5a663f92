#pragma once
// Reader for GGUF files (llama.cpp's format), versions 2 and 3: the header, every
// metadata value and every tensor's description, validated completely against the file
// before anything else happens; tensor bytes are read, mapped or dequantized on demand.
//
// Layout (all integers little-endian, no padding between fields):
//
//   magic "GGUF" (4 bytes) | version: uint32 (2 or 3)
//   tensor_count: uint64  | metadata_count: uint64
//   metadata_count × { key: string | value_type: uint32 | value }
//   tensor_count   × { name: string | n_dims: uint32 | n_dims × dim: uint64
//                      | ggml_type: uint32 | offset: uint64 }
//   padding to a multiple of the alignment | the data section
//
// where a string is { length: uint64 | length bytes } (no terminator), and a value is,
// by value_type: 0 uint8, 1 int8, 2 uint16, 3 int16, 4 uint32, 5 int32, 6 float32,
// 7 bool (1 byte), 8 string, 9 array { element_type: uint32 | count: uint64 | count
// elements }, 10 uint64, 11 int64, 12 float64. dims are in ggml's order: dims[0] is
// the number of values in a row (the contiguous axis). A tensor's offset counts from
// the start of the data section and is a multiple of the alignment, the metadata value
// general.alignment (a uint32 power of two) or 32 without it.
//
// What GgufFile refuses, each with a format_error naming the file (the path, or the
// name given to from_bytes), the key or tensor, and the expected and actual values:
//   * a magic other than "GGUF"; a version other than 2 or 3 (1 had 32-bit counts; a
//     big-endian file is named as such);
//   * any count or length that the bytes left in the file cannot hold at the smallest
//     size of its elements (metadata and tensor counts, string lengths, array lengths),
//     checked before anything is reserved for it; and a header whose parsed form would
//     take more than max_header_memory bytes;
//   * a key that is empty, longer than 65535 bytes, not valid UTF-8 or given twice; a
//     value type or array element type outside 0..12; a bool byte other than 0 or 1;
//     arrays nested deeper than max_array_depth;
//   * general.alignment that is not a uint32, or not a power of two;
//   * a tensor name that is empty, longer than 64 bytes, not valid UTF-8 or given twice;
//     n_dims of 0 or more than 4; an extent of 0; an element count above 2^63 − 1; a
//     ggml type id that is unknown, or known but not one attn reads (named: "Q3_K
//     (11) is not supported"); a row length that is not a multiple of the type's block
//     size; a byte size that overflows 64 bits;
//   * an offset that is not a multiple of the alignment, bytes that lie past the end of
//     the file, and two tensors whose bytes overlap.
// String values are kept as the bytes they are: the spec asks for UTF-8, but vocabularies
// converted from byte-level tokenizers hold fragments that are not, and nothing here
// interprets them. Keys and tensor names, which are looked up and printed, must be UTF-8.
//
// Tensor types read: F32, F16, BF16 and the block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K
// (see attn/detail/kernels/quantized.hpp for their byte layouts).
//
// open() reads the header with pread (through detail::ReadOnlyFile, which refuses to
// read a file that changed since it was opened) and each tensor when asked; map() maps
// the file read-only and hands out pointers into it; from_bytes() keeps a file held in
// memory. Failing to open, map or read a file throws io_error. The reader assumes a
// little-endian host. Const methods are safe to call from several threads at once;
// copies share the opened file or mapping.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/io/bounded_reader.hpp"
#include "attn/detail/io/endian.hpp"
#include "attn/detail/io/mapped_file.hpp"
#include "attn/detail/io/read_only_file.hpp"
#include "attn/detail/kernels/half_float.hpp"
#include "attn/detail/kernels/quantized.hpp"
#include "attn/detail/text/utf8.hpp"
#include "attn/error.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attn/formats/gguf.hpp supports little-endian hosts only"
#endif

namespace attn {

/// The type of a GGUF metadata value (the uint32 written before it).
enum class GgufType : std::uint32_t {
    uint8 = 0,
    int8 = 1,
    uint16 = 2,
    int16 = 3,
    uint32 = 4,
    int32 = 5,
    float32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    uint64 = 10,
    int64 = 11,
    float64 = 12,
};

/// The type's name as the GGUF spec writes it ("uint32", "bool", "array"...).
inline const char* gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::uint8:
            return "uint8";
        case GgufType::int8:
            return "int8";
        case GgufType::uint16:
            return "uint16";
        case GgufType::int16:
            return "int16";
        case GgufType::uint32:
            return "uint32";
        case GgufType::int32:
            return "int32";
        case GgufType::float32:
            return "float32";
        case GgufType::boolean:
            return "bool";
        case GgufType::string:
            return "string";
        case GgufType::array:
            return "array";
        case GgufType::uint64:
            return "uint64";
        case GgufType::int64:
            return "int64";
        case GgufType::float64:
            return "float64";
    }
    return "?";
}

/// The ggml tensor types attn reads, by their ggml type ids.
enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30,
};

/// Values per block of the type (1 for F32, F16, BF16; 32 for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1;
/// 256 for the K formats).
inline std::size_t ggml_block_values(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
            return 1;
        case GgmlType::Q8_0:
            return detail::q8_0_block_values;
        case GgmlType::Q4_0:
            return detail::q4_0_block_values;
        case GgmlType::Q4_1:
            return detail::q4_1_block_values;
        case GgmlType::Q5_0:
            return detail::q5_0_block_values;
        case GgmlType::Q5_1:
            return detail::q5_1_block_values;
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
            return detail::k_block_values;
    }
    return 0;
}

/// Bytes per block of the type (4, 2, 2 for F32, F16, BF16; 34, 18, 20, 22, 24, 144, 176, 210
/// for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K).
inline std::size_t ggml_block_bytes(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return 4;
        case GgmlType::F16:
        case GgmlType::BF16:
            return 2;
        case GgmlType::Q8_0:
            return detail::q8_0_block_bytes;
        case GgmlType::Q4_0:
            return detail::q4_0_block_bytes;
        case GgmlType::Q4_1:
            return detail::q4_1_block_bytes;
        case GgmlType::Q5_0:
            return detail::q5_0_block_bytes;
        case GgmlType::Q5_1:
            return detail::q5_1_block_bytes;
        case GgmlType::Q4_K:
            return detail::q4_k_block_bytes;
        case GgmlType::Q5_K:
            return detail::q5_k_block_bytes;
        case GgmlType::Q6_K:
            return detail::q6_k_block_bytes;
    }
    return 0;
}

namespace detail {

/// ggml's name for each type id it has defined (ggml.h, enum ggml_type), including the
/// ids it has since removed, so that an error can say which format a file uses.
inline const char* ggml_type_id_name(std::uint32_t id) {
    static constexpr const char* names[] = {"F32",
                                            "F16",
                                            "Q4_0",
                                            "Q4_1",
                                            "Q4_2 (removed from ggml)",
                                            "Q4_3 (removed from ggml)",
                                            "Q5_0",
                                            "Q5_1",
                                            "Q8_0",
                                            "Q8_1",
                                            "Q2_K",
                                            "Q3_K",
                                            "Q4_K",
                                            "Q5_K",
                                            "Q6_K",
                                            "Q8_K",
                                            "IQ2_XXS",
                                            "IQ2_XS",
                                            "IQ3_XXS",
                                            "IQ1_S",
                                            "IQ4_NL",
                                            "IQ3_S",
                                            "IQ2_S",
                                            "IQ4_XS",
                                            "I8",
                                            "I16",
                                            "I32",
                                            "I64",
                                            "F64",
                                            "IQ1_M",
                                            "BF16",
                                            "Q4_0_4_4 (removed from GGUF)",
                                            "Q4_0_4_8 (removed from GGUF)",
                                            "Q4_0_8_8 (removed from GGUF)",
                                            "TQ1_0",
                                            "TQ2_0",
                                            "IQ4_NL_4_4 (removed from GGUF)",
                                            "IQ4_NL_4_8 (removed from GGUF)",
                                            "IQ4_NL_8_8 (removed from GGUF)",
                                            "MXFP4",
                                            "NVFP4",
                                            "Q1_0",
                                            "Q2_0"};
    return id < sizeof names / sizeof names[0] ? names[id] : nullptr;
}

inline bool is_supported_ggml_type(std::uint32_t id) {
    switch (static_cast<GgmlType>(id)) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::BF16:
            return true;
    }
    return false;
}

}  // namespace detail

/// The type's ggml name ("Q4_K", "BF16"...).
inline const char* ggml_type_name(GgmlType type) {
    return detail::ggml_type_id_name(static_cast<std::uint32_t>(type));
}

/// Decodes `blocks` blocks of `type` at `bytes` (blocks × ggml_block_bytes(type) bytes)
/// into blocks × ggml_block_values(type) floats at `out`. F16 and BF16 widen exactly;
/// the block formats give llama.cpp's dequantize_row_* values.
inline void dequantize_blocks(GgmlType type, const std::uint8_t* bytes, std::size_t blocks, float* out) {
    const std::size_t values = ggml_block_values(type), width = ggml_block_bytes(type);
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = bytes + b * width;
        float* o = out + b * values;
        switch (type) {
            case GgmlType::F32:
                std::memcpy(o, block, 4);
                break;
            case GgmlType::F16:
                *o = detail::load_half(block);
                break;
            case GgmlType::BF16:
                *o = detail::bfloat16_to_float(static_cast<std::uint16_t>(block[0] | (block[1] << 8)));
                break;
            case GgmlType::Q8_0:
                detail::dequantize_q8_0_block(block, o);
                break;
            case GgmlType::Q4_0:
                detail::dequantize_q4_0_block(block, o);
                break;
            case GgmlType::Q4_1:
                detail::dequantize_q4_1_block(block, o);
                break;
            case GgmlType::Q5_0:
                detail::dequantize_q5_0_block(block, o);
                break;
            case GgmlType::Q5_1:
                detail::dequantize_q5_1_block(block, o);
                break;
            case GgmlType::Q4_K:
                detail::dequantize_q4_k_block(block, o);
                break;
            case GgmlType::Q5_K:
                detail::dequantize_q5_k_block(block, o);
                break;
            case GgmlType::Q6_K:
                detail::dequantize_q6_k_block(block, o);
                break;
        }
    }
}

namespace detail {
class GgufParser;
}

/// One metadata value: a scalar, a string or an array (of scalars, strings or arrays).
///
/// The getters check the type against the use and throw format_error otherwise (through
/// GgufFile's getters the message names the file and key): as_unsigned accepts any
/// integer type holding a value ≥ 0, as_integer any integer type holding a value that
/// fits int64, as_floating float32 and float64 only, as_boolean bool only, as_string
/// string only; the array getters apply the same rule to the element type.
class GgufValue {
public:
    /// The value's type (GgufType::array for an array, whatever its elements).
    GgufType type() const { return type_; }
    bool is_array() const { return type_ == GgufType::array; }

    /// The scalar, checked and converted as the class comment says.
    std::uint64_t as_unsigned() const { return unsigned_in("a GGUF value"); }
    std::int64_t as_integer() const { return integer_in("a GGUF value"); }
    double as_floating() const { return floating_in("a GGUF value"); }
    bool as_boolean() const { return boolean_in("a GGUF value"); }
    /// The string's bytes (not validated as UTF-8: see the header comment).
    const std::string& as_string() const { return string_in("a GGUF value"); }

    /// An array's element type; format_error if this is not an array.
    GgufType element_type() const {
        expect_array("a GGUF value");
        return element_type_;
    }
    /// An array's element count; format_error if this is not an array.
    std::uint64_t array_size() const {
        expect_array("a GGUF value");
        return count_;
    }

    /// Element i of an array of strings, without copying it (i < array_size()).
    std::string_view string_at(std::uint64_t i) const {
        expect_elements(GgufType::string, "strings", "a GGUF value");
        check_element(i, "a GGUF value");
        const std::uint64_t begin = i == 0 ? 0 : string_ends_[static_cast<std::size_t>(i - 1)];
        return std::string_view(text_).substr(
            static_cast<std::size_t>(begin),
            static_cast<std::size_t>(string_ends_[static_cast<std::size_t>(i)] - begin));
    }
    /// Element i of an array of arrays (i < array_size()).
    const GgufValue& array_at(std::uint64_t i) const {
        expect_elements(GgufType::array, "arrays", "a GGUF value");
        check_element(i, "a GGUF value");
        return arrays_[static_cast<std::size_t>(i)];
    }

    /// All elements of an array: strings (an array of strings); integers and
    /// unsigned_integers (an array of any integer type, each element checked as
    /// as_integer and as_unsigned check a scalar); floatings (float32 or float64);
    /// booleans (bool).
    std::vector<std::string> strings() const { return strings_in("a GGUF value"); }
    std::vector<std::int64_t> integers() const { return integers_in("a GGUF value"); }
    std::vector<std::uint64_t> unsigned_integers() const { return unsigned_integers_in("a GGUF value"); }
    std::vector<double> floatings() const { return floatings_in("a GGUF value"); }
    std::vector<bool> booleans() const { return booleans_in("a GGUF value"); }

    /// "a uint32", "a string", "an array of float32", "an array of array"...
    std::string describe() const {
        if (!is_array()) return with_article(gguf_type_name(type_));
        return std::string("an array of ") + gguf_type_name(element_type_);
    }

private:
    friend class GgufFile;
    friend class detail::GgufParser;

    static std::string with_article(const char* name) {
        return std::string(name[0] == 'i' || name[0] == 'a' ? "an " : "a ") + name;
    }

    static bool is_integer_type(GgufType t) {
        switch (t) {
            case GgufType::uint8:
            case GgufType::int8:
            case GgufType::uint16:
            case GgufType::int16:
            case GgufType::uint32:
            case GgufType::int32:
            case GgufType::uint64:
            case GgufType::int64:
                return true;
            default:
                return false;
        }
    }
    static bool is_signed_type(GgufType t) {
        return t == GgufType::int8 || t == GgufType::int16 || t == GgufType::int32 || t == GgufType::int64;
    }

    [[noreturn]] void wrong_type(const std::string& where, const char* expected) const {
        throw format_error(detail::message(where, " is ", describe(), ", expected ", expected));
    }

    // Scalars: the value of an integer or bool in `unsigned_` (unsigned types) or `signed_`
    // (signed ones), of a float in `real_` (float32 widened exactly), of a string in text_.
    std::uint64_t unsigned_in(const std::string& where) const {
        if (!is_integer_type(type_)) wrong_type(where, "an unsigned integer");
        if (is_signed_type(type_) && signed_ < 0)
            throw format_error(detail::message(where, " is ", signed_, " (", gguf_type_name(type_),
                                               "), expected a non-negative integer"));
        return is_signed_type(type_) ? static_cast<std::uint64_t>(signed_) : unsigned_;
    }
    std::int64_t integer_in(const std::string& where) const {
        if (!is_integer_type(type_)) wrong_type(where, "an integer");
        if (is_signed_type(type_)) return signed_;
        if (unsigned_ > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw format_error(detail::message(where, " is ", unsigned_, " (uint64), more than int64 holds"));
        return static_cast<std::int64_t>(unsigned_);
    }
    double floating_in(const std::string& where) const {
        if (type_ != GgufType::float32 && type_ != GgufType::float64) wrong_type(where, "a float32 or float64");
        return real_;
    }
    bool boolean_in(const std::string& where) const {
        if (type_ != GgufType::boolean) wrong_type(where, "a bool");
        return unsigned_ != 0;
    }
    const std::string& string_in(const std::string& where) const {
        if (type_ != GgufType::string) wrong_type(where, "a string");
        return text_;
    }

    void expect_array(const std::string& where) const {
        if (!is_array()) wrong_type(where, "an array");
    }
    void expect_elements(GgufType element, const char* plural, const std::string& where) const {
        if (!is_array() || element_type_ != element)
            throw format_error(detail::message(where, " is ", describe(), ", expected an array of ", plural));
    }
    void check_element(std::uint64_t i, const std::string& where) const {
        if (i >= count_)
            throw argument_error(detail::message(where, ": element ", i, " of an array of ", count_, " elements"));
    }

    /// Element i of a numeric or bool array, as stored (little-endian, element_width() bytes).
    template <class U>
    U element(std::size_t i) const {
        U v;
        std::memcpy(&v, raw_.data() + i * sizeof(U), sizeof(U));
        return v;
    }

    /// The array's elements as scalars of their type, for the scalar getters' checks.
    GgufValue scalar_element(std::size_t i) const {
        GgufValue v;
        v.type_ = element_type_;
        switch (element_type_) {
            case GgufType::uint8:
            case GgufType::boolean:
                v.unsigned_ = element<std::uint8_t>(i);
                break;
            case GgufType::int8:
                v.signed_ = element<std::int8_t>(i);
                break;
            case GgufType::uint16:
                v.unsigned_ = element<std::uint16_t>(i);
                break;
            case GgufType::int16:
                v.signed_ = element<std::int16_t>(i);
                break;
            case GgufType::uint32:
                v.unsigned_ = element<std::uint32_t>(i);
                break;
            case GgufType::int32:
                v.signed_ = element<std::int32_t>(i);
                break;
            case GgufType::uint64:
                v.unsigned_ = element<std::uint64_t>(i);
                break;
            case GgufType::int64:
                v.signed_ = element<std::int64_t>(i);
                break;
            case GgufType::float32:
                v.real_ = element<float>(i);
                break;
            case GgufType::float64:
                v.real_ = element<double>(i);
                break;
            default:
                break;
        }
        return v;
    }

    /// Each element through the scalar getter `get`, which is handed the element's own
    /// description only when it is about to throw (building one per element is slow).
    template <class T, class Get>
    std::vector<T> numeric_elements(const std::string& where, bool (*accepts)(GgufType), const char* expected,
                                    Get get) const {
        if (!is_array() || !accepts(element_type_))
            throw format_error(detail::message(where, " is ", describe(), ", expected an array of ", expected));
        std::vector<T> out;
        out.reserve(static_cast<std::size_t>(count_));  // count_ elements are held in raw_ already
        for (std::size_t i = 0; i < static_cast<std::size_t>(count_); ++i) {
            const GgufValue element = scalar_element(i);
            T value;
            if (!get(element, value)) get_or_throw(element, value, detail::message(where, "[", i, "]"));
            out.push_back(value);
        }
        return out;
    }

    static void get_or_throw(const GgufValue& v, std::int64_t& out, const std::string& where) {
        out = v.integer_in(where);
    }
    static void get_or_throw(const GgufValue& v, std::uint64_t& out, const std::string& where) {
        out = v.unsigned_in(where);
    }
    static void get_or_throw(const GgufValue& v, double& out, const std::string& where) { out = v.floating_in(where); }
    static constexpr auto largest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

    std::vector<std::int64_t> integers_in(const std::string& where) const {
        return numeric_elements<std::int64_t>(
            where, is_integer_type, "integers", [](const GgufValue& v, std::int64_t& out) {
                const bool fits = is_signed_type(v.type_) || v.unsigned_ <= largest;
                if (fits) out = is_signed_type(v.type_) ? v.signed_ : static_cast<std::int64_t>(v.unsigned_);
                return fits;
            });
    }
    std::vector<std::uint64_t> unsigned_integers_in(const std::string& where) const {
        return numeric_elements<std::uint64_t>(
            where, is_integer_type, "unsigned integers", [](const GgufValue& v, std::uint64_t& out) {
                const bool fits = !is_signed_type(v.type_) || v.signed_ >= 0;
                if (fits) out = is_signed_type(v.type_) ? static_cast<std::uint64_t>(v.signed_) : v.unsigned_;
                return fits;
            });
    }
    std::vector<double> floatings_in(const std::string& where) const {
        return numeric_elements<double>(
            where, [](GgufType t) { return t == GgufType::float32 || t == GgufType::float64; }, "float32 or float64",
            [](const GgufValue& v, double& out) {
                out = v.real_;
                return true;
            });
    }
    std::vector<bool> booleans_in(const std::string& where) const {
        if (!is_array() || element_type_ != GgufType::boolean)
            throw format_error(detail::message(where, " is ", describe(), ", expected an array of bool"));
        std::vector<bool> out(static_cast<std::size_t>(count_));
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = raw_[i] != 0;
        return out;
    }
    std::vector<std::string> strings_in(const std::string& where) const {
        expect_elements(GgufType::string, "strings", where);
        std::vector<std::string> out;
        out.reserve(static_cast<std::size_t>(count_));
        for (std::uint64_t i = 0; i < count_; ++i) out.emplace_back(string_at(i));
        return out;
    }

    GgufType type_ = GgufType::uint8;
    std::uint64_t unsigned_ = 0;
    std::int64_t signed_ = 0;
    double real_ = 0;
    std::string text_;  // a string; or an array of strings, concatenated
    // Arrays:
    GgufType element_type_ = GgufType::uint8;
    std::uint64_t count_ = 0;
    std::vector<std::uint8_t> raw_;           // numeric or bool elements, as in the file
    std::vector<std::uint64_t> string_ends_;  // strings: end of element i in text_
    std::vector<GgufValue> arrays_;           // arrays of arrays
};

/// One tensor's description in a GGUF file, validated against the file.
struct GgufTensorInfo {
    std::string name;
    /// Extents in ggml's order, 1 to 4 of them, each ≥ 1: dims[0] is the number of values in a
    /// row (contiguous in the file), dims[1] the number of rows, and so on outwards. A
    /// PyTorch Linear weight [out, in] is written as dims {in, out}.
    std::vector<std::uint64_t> dims;
    GgmlType type = GgmlType::F32;
    std::uint64_t offset = 0;    ///< from the start of the data section; a multiple of the alignment
    std::uint64_t elements = 0;  ///< product of dims (≤ 2^63 − 1)
    std::uint64_t bytes = 0;     ///< elements / ggml_block_values(type) × ggml_block_bytes(type)

    /// Values per row (dims[0]; a multiple of the type's block size).
    std::uint64_t row_length() const { return dims[0]; }
    /// elements / row_length().
    std::uint64_t rows() const { return elements / dims[0]; }
    /// The row-major shape (dims reversed): {out, in} for a Linear weight.
    std::vector<std::uint64_t> shape() const { return std::vector<std::uint64_t>(dims.rbegin(), dims.rend()); }
};

/// A tensor's bytes inside a mapped or in-memory file.
struct GgufBytes {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
};

/// A GGUF file, validated on construction (see the header comment for what is refused).
class GgufFile {
public:
    /// The most memory the parsed metadata and tensor descriptions may take; a header
    /// that would need more is refused (a vocabulary of 256k tokens takes a few MB).
    static constexpr std::uint64_t max_header_memory = std::uint64_t(1) << 30;
    /// Arrays nest at most this deep: an array of arrays of arrays, no deeper.
    static constexpr std::size_t max_array_depth = 3;
    /// Longest key (the spec's limit) and tensor name (ggml's GGML_MAX_NAME).
    static constexpr std::uint64_t max_key_bytes = 65535;
    static constexpr std::uint64_t max_tensor_name_bytes = 64;
    /// Alignment without general.alignment.
    static constexpr std::uint32_t default_alignment = 32;

    /// Opens `path` and validates it, reading the header with pread; tensors are read
    /// when asked for. io_error if it cannot be opened or read, format_error if malformed.
    static GgufFile open(const std::filesystem::path& path);

    /// As open(), but the file is mapped read-only into memory, and mapped_tensor()
    /// gives pointers into it. A mapped file that another process truncates raises
    /// SIGBUS when a page past its new end is touched: map files nothing rewrites.
    static GgufFile map(const std::filesystem::path& path);

    /// Validates a file already in memory; `name` is used in error messages.
    static GgufFile from_bytes(std::vector<std::uint8_t> bytes, std::string name = "<bytes>");

    /// The path or name the file was opened with.
    const std::string& source() const { return name_; }
    /// 2 or 3.
    std::uint32_t version() const { return version_; }
    /// general.alignment, or 32.
    std::uint32_t alignment() const { return alignment_; }
    /// Where the data section starts in the file (a multiple of the alignment).
    std::uint64_t data_offset() const { return data_offset_; }
    /// The file's size in bytes.
    std::uint64_t file_size() const { return size_; }

    // ---- metadata

    /// The keys, in file order.
    std::vector<std::string> keys() const {
        std::vector<std::string> out;
        out.reserve(entries_.size());
        for (const auto& entry : entries_) out.push_back(entry.first);
        return out;
    }
    bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }
    /// The value of `key`, or nullptr if the file has no such key.
    const GgufValue* find(std::string_view key) const {
        const auto found = index_.find(key);
        return found == index_.end() ? nullptr : &entries_[found->second].second;
    }
    /// The value of `key`; format_error naming it if the file has none.
    const GgufValue& value(std::string_view key) const {
        const GgufValue* v = find(key);
        if (!v)
            throw format_error(
                detail::message(name_, ": no metadata key '", key, "' (the file has ", entries_.size(), " keys)"));
        return *v;
    }

    /// Typed getters: format_error naming the file and key if the key is missing or its
    /// type does not fit (the rules are GgufValue's).
    const std::string& string(std::string_view key) const { return value(key).string_in(where(key)); }
    std::uint64_t unsigned_integer(std::string_view key) const { return value(key).unsigned_in(where(key)); }
    std::int64_t integer(std::string_view key) const { return value(key).integer_in(where(key)); }
    double floating(std::string_view key) const { return value(key).floating_in(where(key)); }
    bool boolean(std::string_view key) const { return value(key).boolean_in(where(key)); }
    std::vector<std::string> string_array(std::string_view key) const { return value(key).strings_in(where(key)); }
    std::vector<std::int64_t> integer_array(std::string_view key) const { return value(key).integers_in(where(key)); }
    std::vector<std::uint64_t> unsigned_array(std::string_view key) const {
        return value(key).unsigned_integers_in(where(key));
    }
    std::vector<double> floating_array(std::string_view key) const { return value(key).floatings_in(where(key)); }
    std::vector<bool> boolean_array(std::string_view key) const { return value(key).booleans_in(where(key)); }

    // ---- tensors

    /// The tensors' descriptions, in file order.
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    bool has_tensor(std::string_view name) const { return tensor_index_.find(name) != tensor_index_.end(); }
    /// The description of tensor `name`; format_error naming it if there is none.
    const GgufTensorInfo& tensor(std::string_view name) const {
        const auto found = tensor_index_.find(name);
        if (found == tensor_index_.end())
            throw format_error(detail::message(name_, ": no tensor '", name, "' in the file (it holds ",
                                               tensors_.size(), " tensors)"));
        return tensors_[found->second];
    }

    /// Copies the tensor's bytes, as stored (blocks of its type, rows one after another),
    /// into `out`, which has room for exactly `size` = tensor(name).bytes bytes
    /// (argument_error otherwise).
    void read_tensor(std::string_view name, void* out, std::size_t size) const {
        const GgufTensorInfo& t = tensor(name);
        if (size != t.bytes)
            throw argument_error(detail::message("GgufFile::read_tensor: tensor '", t.name, "' has ", t.bytes,
                                                 " bytes, the destination ", size));
        read_range(t, 0, size, out);
    }

    /// Rows first … first + count − 1 of the tensor as stored (their blocks, row after row; a row
    /// is dims[0] values) into `out`, which has room for exactly `size` = count × a row's bytes:
    /// quantized weights kept in their blocks. argument_error for rows outside the tensor or
    /// another size.
    void read_rows(std::string_view name, std::uint64_t first, std::uint64_t count, void* out, std::size_t size) const {
        const GgufTensorInfo& t = tensor(name);
        if (first > t.rows() || count > t.rows() - first)
            throw argument_error(detail::message("GgufFile::read_rows: rows [", first, ", ", first, " + ", count,
                                                 ") of tensor '", t.name, "', which has ", t.rows(), " rows"));
        const std::uint64_t row_bytes = t.bytes / t.rows();  // whole blocks per row: checked at parse
        if (size != count * row_bytes)
            throw argument_error(detail::message("GgufFile::read_rows: ", count, " rows of tensor '", t.name, "' are ",
                                                 count * row_bytes, " bytes, the destination ", size));
        read_range(t, first * row_bytes, size, out);
    }

    /// A copy of the tensor's bytes, as stored.
    std::vector<std::uint8_t> tensor_bytes(std::string_view name) const {
        const GgufTensorInfo& t = tensor(name);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(t.bytes));
        read_range(t, 0, out.size(), out.data());
        return out;
    }

    /// The tensor's bytes in place, valid while this file (or a copy) lives; for files
    /// from map() or from_bytes() (argument_error for open(), which keeps no bytes).
    GgufBytes mapped_tensor(std::string_view name) const {
        const GgufTensorInfo& t = tensor(name);
        const std::uint8_t* memory = held_bytes();
        if (!memory && size_ > 0)
            throw argument_error(detail::message("GgufFile::mapped_tensor: '", name_,
                                                 "' was opened with GgufFile::open, which reads tensors with pread; "
                                                 "open it with GgufFile::map for pointers to its bytes"));
        return {memory + data_offset_ + t.offset, static_cast<std::size_t>(t.bytes)};
    }

    /// The tensor's values as floats, rows one after another (elements values; row r is
    /// [r·row_length(), (r + 1)·row_length())). Read a few hundred KB at a time from an
    /// opened file.
    std::vector<float> dequantize(std::string_view name) const {
        const GgufTensorInfo& t = tensor(name);
        std::vector<float> out(static_cast<std::size_t>(t.elements));
        dequantize_range(t, out.data());
        return out;
    }

    /// Rows first … first + count − 1 of the tensor as floats, row after row, into `out`, which
    /// has room for count × row_length() values (a row is dims[0] values; a tensor of more than
    /// two dims counts every such run as a row). Reads only those rows' blocks, a few hundred KB
    /// at a time from an opened file, so a large matrix is read without a float copy of it
    /// whole. argument_error for rows outside the tensor.
    void dequantize_rows(std::string_view name, std::uint64_t first, std::uint64_t count, float* out) const {
        const GgufTensorInfo& t = tensor(name);
        if (first > t.rows() || count > t.rows() - first)
            throw argument_error(detail::message("GgufFile::dequantize_rows: rows [", first, ", ", first, " + ", count,
                                                 ") of tensor '", t.name, "', which has ", t.rows(), " rows"));
        const std::uint64_t row_blocks = t.row_length() / ggml_block_values(t.type);
        dequantize_blocks_of(t, first * row_blocks, count * row_blocks, out);
    }

private:
    friend class detail::GgufParser;

    GgufFile() = default;

    std::string where(std::string_view key) const { return detail::message(name_, ": metadata key '", key, "'"); }

    const std::uint8_t* held_bytes() const {
        if (mapping_) return mapping_->data();
        if (bytes_) return bytes_->data();
        return nullptr;
    }

    /// Copies bytes [first, first + count) of tensor t into out.
    void read_range(const GgufTensorInfo& t, std::uint64_t first, std::size_t count, void* out) const {
        if (count == 0) return;
        if (file_)
            file_->read(data_offset_ + t.offset + first, count, out, detail::message("tensor '", t.name, "'"));
        else
            std::memcpy(out, held_bytes() + data_offset_ + t.offset + first, count);  // checked at parse
    }

    void dequantize_range(const GgufTensorInfo& t, float* out) const {
        dequantize_blocks_of(t, 0, t.bytes / ggml_block_bytes(t.type), out);
    }

    /// Blocks first … first + blocks − 1 of tensor t (within it: the callers' checks) into out.
    void dequantize_blocks_of(const GgufTensorInfo& t, std::uint64_t first, std::uint64_t blocks, float* out) const {
        const std::size_t width = ggml_block_bytes(t.type), values = ggml_block_values(t.type);
        if (!file_) {
            dequantize_blocks(t.type, held_bytes() + data_offset_ + t.offset + first * width,
                              static_cast<std::size_t>(blocks), out);
            return;
        }
        constexpr std::size_t chunk_bytes = std::size_t(1) << 18;
        const std::size_t blocks_per_chunk = std::max<std::size_t>(1, chunk_bytes / width);
        std::vector<std::uint8_t> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(blocks, blocks_per_chunk)) *
                                         width);
        for (std::uint64_t b = 0; b < blocks; b += blocks_per_chunk) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(blocks_per_chunk, blocks - b));
            read_range(t, (first + b) * width, n * width, buffer.data());
            dequantize_blocks(t.type, buffer.data(), n, out + b * values);
        }
    }

    std::string name_;
    std::shared_ptr<const detail::ReadOnlyFile> file_;        // open(): read with pread
    std::shared_ptr<const detail::MappedFile> mapping_;       // map()
    std::shared_ptr<const std::vector<std::uint8_t>> bytes_;  // from_bytes()
    std::uint64_t size_ = 0;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = default_alignment;
    std::uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> entries_;  // metadata, in file order
    std::map<std::string, std::size_t, std::less<>> index_;   // key → entries_ index
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

namespace detail {

/// Reads and validates a GGUF header into a GgufFile (see the header comment for the
/// rules). Internal to GgufFile; a class so that GgufValue and GgufFile can befriend it.
class GgufParser {
public:
    GgufParser(GgufFile& file, detail::BoundedReader& in) : file_(file), in_(in) {}

    void parse() {
        read_preamble();
        read_metadata();
        read_alignment();
        read_tensor_infos();
        place_data_section();
        check_tensor_bytes();
    }

private:
    // Smallest encodings, used to check a count against the bytes left before reserving:
    // a metadata entry is a key of ≥ 1 byte (8 + 1), a type (4) and a value of ≥ 1 byte;
    // a tensor description is a name of ≥ 1 byte (8 + 1), n_dims (4), one extent (8), a
    // type (4) and an offset (8).
    static constexpr std::uint64_t smallest_entry_bytes = 8 + 1 + 4 + 1;
    static constexpr std::uint64_t smallest_tensor_info_bytes = 8 + 1 + 4 + 8 + 4 + 8;

    template <class... Parts>
    [[noreturn]] void fail(const Parts&... parts) const {
        throw format_error(detail::message(file_.name_, ": ", parts...));
    }

    /// Bytes a value of `type` takes at least in the file (an array: its element type and count).
    static std::uint64_t smallest_value_bytes(GgufType type) {
        switch (type) {
            case GgufType::uint8:
            case GgufType::int8:
            case GgufType::boolean:
                return 1;
            case GgufType::uint16:
            case GgufType::int16:
                return 2;
            case GgufType::uint32:
            case GgufType::int32:
            case GgufType::float32:
                return 4;
            case GgufType::uint64:
            case GgufType::int64:
            case GgufType::float64:
            case GgufType::string:
                return 8;
            case GgufType::array:
                return 4 + 8;
        }
        return 1;
    }

    /// Counts `count` × `size` more bytes of memory against max_header_memory, before
    /// they are allocated.
    void charge(std::uint64_t count, std::uint64_t size, const std::string& what) {
        const std::uint64_t left = GgufFile::max_header_memory - charged_;
        if (size != 0 && count > left / size)
            fail(what, " would bring the parsed header past ", GgufFile::max_header_memory,
                 " bytes of memory (GgufFile::max_header_memory)");
        charged_ += count * size;
    }
    void charge(std::uint64_t bytes, const std::string& what) { charge(bytes, 1, what); }

    /// Checks that `count` elements of at least `smallest` bytes each fit in what is left
    /// of the file, before anything is reserved for them.
    void check_count(std::uint64_t count, std::uint64_t smallest, const std::string& what) const {
        if (count > in_.remaining() / smallest)
            fail(what, ": ", count, " elements of at least ", smallest, " bytes each cannot fit in the ",
                 in_.remaining(), " bytes left in the file after byte ", in_.position());
    }

    /// Text from the file shown in a message: printable ASCII as is, anything else as \xNN,
    /// cut at 80 bytes.
    static std::string printable(std::string_view text) {
        static constexpr char hex[] = "0123456789abcdef";
        std::string out;
        for (std::size_t i = 0; i < text.size() && i < 80; ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            if (c >= 0x20 && c < 0x7F) {
                out += static_cast<char>(c);
            } else {
                out += "\\x";
                out += hex[c >> 4];
                out += hex[c & 15];
            }
        }
        if (text.size() > 80) out += "...";
        return out;
    }

    /// A string whose length is at most `longest` (a key or tensor name): non-empty and UTF-8.
    std::string read_name(std::uint64_t longest, const std::string& what) {
        const std::uint64_t length = in_.u64(what + " length");
        if (length == 0) fail(what, " at byte ", in_.position() - 8, " is empty");
        if (length > longest)
            fail(what, " at byte ", in_.position() - 8, " is ", length, " bytes long, more than ", longest);
        in_.require(length, what);
        charge(length, what);
        std::string text = in_.text(length, what);
        const auto bad = detail::find_invalid_utf8(text);
        if (bad.problem)
            fail(what, " '", printable(text), "' is not valid UTF-8: ", bad.problem, " at byte ", bad.position,
                 " of it");
        return text;
    }

    void read_preamble() {
        if (!detail::host_is_little_endian()) fail("attn reads GGUF files on little-endian hosts only");
        std::uint8_t magic[4];
        in_.bytes(4, magic, "the magic \"GGUF\"");
        if (std::memcmp(magic, "GGUF", 4) != 0)
            fail("not a GGUF file: it starts with bytes ", hex_bytes(magic, 4), ", expected \"GGUF\" (47 47 55 46)");
        const std::uint32_t version = in_.u32("the version");
        if (version == 0x02000000u || version == 0x03000000u)
            fail("version bytes ", hex_bytes(reinterpret_cast<const std::uint8_t*>(&version), 4),
                 " are those of a big-endian GGUF file; attn reads little-endian files only");
        if (version == 1) fail("GGUF version 1 is not supported (its counts were 32-bit); versions 2 and 3 are");
        if (version != 2 && version != 3) fail("unknown GGUF version ", version, " (versions 2 and 3 are read)");
        file_.version_ = version;
        tensor_count_ = in_.u64("the tensor count");
        metadata_count_ = in_.u64("the metadata count");
        // Both counts against the bytes left, before anything is reserved or read for them.
        check_count(metadata_count_, smallest_entry_bytes, "the metadata count");
        const std::uint64_t after_metadata = in_.remaining() - metadata_count_ * smallest_entry_bytes;
        if (tensor_count_ > after_metadata / smallest_tensor_info_bytes)
            fail("the tensor count: ", tensor_count_, " tensor descriptions of at least ", smallest_tensor_info_bytes,
                 " bytes each cannot fit in the ", after_metadata, " bytes left in the file after ", metadata_count_,
                 " metadata entries of at least ", smallest_entry_bytes, " bytes each");
    }

    static std::string hex_bytes(const std::uint8_t* bytes, std::size_t count) {
        static constexpr char hex[] = "0123456789abcdef";
        std::string out;
        for (std::size_t i = 0; i < count; ++i) {
            if (i) out += ' ';
            out += hex[bytes[i] >> 4];
            out += hex[bytes[i] & 15];
        }
        return out;
    }

    void read_metadata() {
        for (std::uint64_t i = 0; i < metadata_count_; ++i) {
            const std::uint64_t at = in_.position();
            std::string key = read_name(GgufFile::max_key_bytes, detail::message("metadata key ", i));
            const std::string where = detail::message("metadata key '", printable(key), "'");
            if (file_.index_.count(key))
                fail(where, " at byte ", at, " appears twice (metadata key ", file_.index_.at(key), " has it too)");
            const std::uint32_t type = in_.u32(where + ": value type");
            charge(sizeof(std::pair<std::string, GgufValue>) + 64 + key.size(), where);  // entry, index node, key copy
            GgufValue value = read_value(checked_type(type, where + ": value type"), 1, where);
            file_.index_.emplace(key, file_.entries_.size());
            file_.entries_.emplace_back(std::move(key), std::move(value));
        }
    }

    GgufType checked_type(std::uint32_t type, const std::string& what) const {
        if (type > static_cast<std::uint32_t>(GgufType::float64))
            fail(what, " ", type, " at byte ", in_.position() - 4, " is not a GGUF value type (0 to 12)");
        return static_cast<GgufType>(type);
    }

    /// A value of `type`; `depth` is the number of arrays it sits in, counting itself if it is one.
    GgufValue read_value(GgufType type, std::size_t depth, const std::string& where) {
        GgufValue v;
        v.type_ = type;
        switch (type) {
            case GgufType::uint8:
                v.unsigned_ = in_.u8(where);
                break;
            case GgufType::int8:
                v.signed_ = static_cast<std::int8_t>(in_.u8(where));
                break;
            case GgufType::uint16:
                v.unsigned_ = in_.u16(where);
                break;
            case GgufType::int16:
                v.signed_ = static_cast<std::int16_t>(in_.u16(where));
                break;
            case GgufType::uint32:
                v.unsigned_ = in_.u32(where);
                break;
            case GgufType::int32:
                v.signed_ = static_cast<std::int32_t>(in_.u32(where));
                break;
            case GgufType::uint64:
                v.unsigned_ = in_.u64(where);
                break;
            case GgufType::int64:
                v.signed_ = static_cast<std::int64_t>(in_.u64(where));
                break;
            case GgufType::float32: {
                const std::uint32_t bits = in_.u32(where);
                float f;
                std::memcpy(&f, &bits, 4);
                v.real_ = f;
                break;
            }
            case GgufType::float64: {
                const std::uint64_t bits = in_.u64(where);
                std::memcpy(&v.real_, &bits, 8);
                break;
            }
            case GgufType::boolean: {
                const std::uint8_t byte = in_.u8(where);
                if (byte > 1)
                    fail(where, ": bool byte at ", in_.position() - 1, " is ", int(byte), ", expected 0 or 1");
                v.unsigned_ = byte;
                break;
            }
            case GgufType::string: {
                const std::uint64_t length = in_.u64(where + ": string length");
                in_.require(length, where + ": string");
                charge(length, where);
                v.text_ = in_.text(length, where);
                break;
            }
            case GgufType::array:
                read_array(v, depth, where);
                break;
        }
        return v;
    }

    void read_array(GgufValue& v, std::size_t depth, const std::string& where) {
        if (depth > GgufFile::max_array_depth)
            fail(where, ": arrays nested ", depth, " deep at byte ", in_.position(), ", deeper than the limit of ",
                 GgufFile::max_array_depth);
        v.element_type_ = checked_type(in_.u32(where + ": array element type"), where + ": array element type");
        v.count_ = in_.u64(where + ": array length");
        const std::string what =
            detail::message(where, " (array of ", v.count_, " ", gguf_type_name(v.element_type_), ")");
        check_count(v.count_, smallest_value_bytes(v.element_type_), what);
        const auto count = static_cast<std::size_t>(v.count_);  // ≤ the file's size: fits
        switch (v.element_type_) {
            case GgufType::string: {
                charge(v.count_, sizeof(std::uint64_t), what);
                v.string_ends_.reserve(count);
                for (std::size_t i = 0; i < count; ++i) {
                    const std::uint64_t length = in_.u64(what);
                    in_.require(length, what);
                    charge(length, what);
                    const std::size_t start = v.text_.size();
                    v.text_.resize(start + static_cast<std::size_t>(length));
                    in_.bytes(length, v.text_.data() + start, what);
                    v.string_ends_.push_back(v.text_.size());
                }
                break;
            }
            case GgufType::array: {
                charge(v.count_, sizeof(GgufValue), what);
                v.arrays_.reserve(count);
                for (std::size_t i = 0; i < count; ++i)
                    v.arrays_.push_back(read_value(GgufType::array, depth + 1, detail::message(where, "[", i, "]")));
                break;
            }
            default: {  // numbers and bools, kept as the file has them
                const std::uint64_t width = smallest_value_bytes(v.element_type_);
                charge(v.count_, width, what);
                v.raw_.resize(count * static_cast<std::size_t>(width));
                in_.bytes(v.raw_.size(), v.raw_.data(), what);
                if (v.element_type_ == GgufType::boolean)
                    for (std::size_t i = 0; i < count; ++i)
                        if (v.raw_[i] > 1) fail(where, "[", i, "]: bool byte is ", int(v.raw_[i]), ", expected 0 or 1");
                break;
            }
        }
    }

    void read_alignment() {
        const auto found = file_.index_.find("general.alignment");
        if (found == file_.index_.end()) return;
        const GgufValue& v = file_.entries_[found->second].second;
        if (v.type() != GgufType::uint32)
            fail("metadata key 'general.alignment' is ", v.describe(), ", expected a uint32");
        const std::uint64_t alignment = v.unsigned_;
        if (alignment == 0 || (alignment & (alignment - 1)) != 0)
            fail("metadata key 'general.alignment' is ", alignment, ", expected a power of two");
        file_.alignment_ = static_cast<std::uint32_t>(alignment);
    }

    static std::string dims_text(const std::vector<std::uint64_t>& dims) {
        std::string s = "[";
        for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
        return s + "]";
    }

    void read_tensor_infos() {
        for (std::uint64_t i = 0; i < tensor_count_; ++i) {
            const std::uint64_t at = in_.position();
            GgufTensorInfo t;
            t.name = read_name(GgufFile::max_tensor_name_bytes, detail::message("tensor name ", i));
            const std::string where = detail::message("tensor '", printable(t.name), "'");
            if (file_.tensor_index_.count(t.name))
                fail(where, " at byte ", at, " appears twice (tensor ", file_.tensor_index_.at(t.name),
                     " has that name too)");
            const std::uint32_t n_dims = in_.u32(where + ": n_dims");
            if (n_dims == 0 || n_dims > 4) fail(where, ": n_dims is ", n_dims, ", expected 1 to 4");
            charge(sizeof(GgufTensorInfo) + 64 + 2 * t.name.size() + 8 * n_dims, where);
            std::uint64_t elements = 1;
            bool overflow = false;
            for (std::uint32_t d = 0; d < n_dims; ++d) {
                const std::uint64_t extent = in_.u64(where + ": dims");
                t.dims.push_back(extent);
                if (extent == 0) fail(where, ": dims[", d, "] is 0 (dims ", dims_text(t.dims), "...)");
                // Overflow is reported once every extent has been read, with all of them.
                if (overflow) continue;
                if (elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / extent)
                    overflow = true;
                else
                    elements *= extent;
            }
            if (overflow) fail(where, ": dims ", dims_text(t.dims), " hold more than 2^63 - 1 elements");
            t.elements = elements;
            const std::uint32_t type = in_.u32(where + ": type");
            const char* type_name = detail::ggml_type_id_name(type);
            if (!type_name) fail(where, ": ggml type id ", type, " is unknown");
            if (!detail::is_supported_ggml_type(type))
                fail(where, ": ggml type ", type_name, " (", type,
                     ") is not supported (attn reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and "
                     "Q6_K)");
            t.type = static_cast<GgmlType>(type);
            const std::uint64_t block = ggml_block_values(t.type), width = ggml_block_bytes(t.type);
            if (t.dims[0] % block != 0)
                fail(where, ": rows of ", t.dims[0], " values are not a multiple of the ", type_name, " block of ",
                     block, " values");
            const std::uint64_t blocks = elements / block;
            if (blocks > std::numeric_limits<std::uint64_t>::max() / width)
                fail(where, ": dims ", dims_text(t.dims), " of ", type_name, " need more than 2^64 bytes");
            t.bytes = blocks * width;
            t.offset = in_.u64(where + ": offset");
            if (t.offset % file_.alignment_ != 0)
                fail(where, ": offset ", t.offset, " is not a multiple of the alignment ", file_.alignment_);
            file_.tensor_index_.emplace(t.name, file_.tensors_.size());
            file_.tensors_.push_back(std::move(t));
        }
    }

    void place_data_section() {
        const std::uint64_t end = in_.position(), alignment = file_.alignment_;
        const std::uint64_t padding = (alignment - end % alignment) % alignment;
        // end ≤ the file's size < 2^64 − alignment in any real file; checked all the same.
        if (padding > std::numeric_limits<std::uint64_t>::max() - end)
            fail("the data section would start past byte 2^64 (header ends at ", end, ", alignment ", alignment, ")");
        file_.data_offset_ = end + padding;
        if (!file_.tensors_.empty() && file_.data_offset_ > file_.size_)
            fail("the data section starts at byte ", file_.data_offset_, " (header end ", end, " aligned to ",
                 alignment, "), past the end of the file (", file_.size_, " bytes)");
    }

    void check_tensor_bytes() {
        const std::uint64_t data_size = file_.size_ >= file_.data_offset_ ? file_.size_ - file_.data_offset_ : 0;
        for (const GgufTensorInfo& t : file_.tensors_)
            if (t.offset > data_size || t.bytes > data_size - t.offset)
                fail("tensor '", printable(t.name), "': bytes [", t.offset, ", ", t.offset, " + ", t.bytes,
                     ") of the data section lie past its end (", data_size, " bytes from file byte ",
                     file_.data_offset_, ")");
        std::vector<const GgufTensorInfo*> order;
        order.reserve(file_.tensors_.size());
        for (const GgufTensorInfo& t : file_.tensors_) order.push_back(&t);
        std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
            return a->offset != b->offset ? a->offset < b->offset : a->name < b->name;
        });
        for (std::size_t i = 1; i < order.size(); ++i) {
            const GgufTensorInfo& before = *order[i - 1];
            const GgufTensorInfo& t = *order[i];
            if (t.offset < before.offset + before.bytes)
                fail("tensor '", printable(t.name), "': bytes [", t.offset, ", ", t.offset + t.bytes,
                     ") of the data section overlap tensor '", printable(before.name), "' at [", before.offset, ", ",
                     before.offset + before.bytes, ")");
        }
    }

    GgufFile& file_;
    detail::BoundedReader& in_;
    std::uint64_t tensor_count_ = 0;
    std::uint64_t metadata_count_ = 0;
    std::uint64_t charged_ = 0;
};

}  // namespace detail

inline GgufFile GgufFile::open(const std::filesystem::path& path) {
    GgufFile file;
    file.name_ = path.string();
    try {
        file.file_ = std::make_shared<const detail::ReadOnlyFile>(path);
    } catch (const io_error& e) {
        throw io_error(detail::message("GgufFile::open: ", e.what()));
    }
    file.size_ = file.file_->size();
    detail::BoundedReader in(*file.file_, file.name_);
    detail::GgufParser(file, in).parse();
    return file;
}

inline GgufFile GgufFile::map(const std::filesystem::path& path) {
    GgufFile file;
    file.name_ = path.string();
    try {
        file.mapping_ = std::make_shared<const detail::MappedFile>(path);
    } catch (const io_error& e) {
        throw io_error(detail::message("GgufFile::map: ", e.what()));
    }
    file.size_ = file.mapping_->size();
    detail::BoundedReader in(file.mapping_->data(), file.size_, file.name_);
    detail::GgufParser(file, in).parse();
    return file;
}

inline GgufFile GgufFile::from_bytes(std::vector<std::uint8_t> bytes, std::string name) {
    GgufFile file;
    file.name_ = std::move(name);
    file.bytes_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    file.size_ = file.bytes_->size();
    detail::BoundedReader in(file.bytes_->data(), file.size_, file.name_);
    detail::GgufParser(file, in).parse();
    return file;
}

}  // namespace attn
