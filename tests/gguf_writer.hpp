#pragma once
// A small GGUF writer for the tests (tests/test_gguf.cpp): valid files built field by
// field, which a test then corrupts (a field overridden, bytes patched, the file cut).
// Written from the GGUF spec, independently of attn/formats/gguf.hpp: it shares no code
// with the reader, so a misreading of the format would have to be made twice.
//
// Layout written (little-endian): "GGUF", version u32, tensor count u64, metadata count
// u64, the metadata entries (key string, type u32, value), the tensor descriptions (name
// string, n_dims u32, dims u64 × n_dims, type u32, offset u64), zeros up to a multiple
// of the alignment, then the data section: each tensor's bytes at its offset.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::test {

/// GGUF value type ids (the spec's gguf_metadata_value_type).
namespace gguf_type {
constexpr std::uint32_t uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6, boolean = 7,
                        string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12;
}

/// ggml type ids (ggml.h, enum ggml_type) the tests use.
namespace ggml_id {
constexpr std::uint32_t F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q4_2_removed = 4, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q3_K = 11,
                        Q4_K = 12, Q5_K = 13, Q6_K = 14, BF16 = 30, first_unknown = 43;
}

/// Little-endian fields appended one after another.
struct LittleEndianBytes {
    std::vector<std::uint8_t> bytes;

    void unsigned_field(std::uint64_t value, int width) {
        for (int i = 0; i < width; ++i) bytes.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
    void u8(std::uint8_t v) { unsigned_field(v, 1); }
    void u16(std::uint16_t v) { unsigned_field(v, 2); }
    void u32(std::uint32_t v) { unsigned_field(v, 4); }
    void u64(std::uint64_t v) { unsigned_field(v, 8); }
    void f32(float v) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        u32(bits);
    }
    void f64(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        u64(bits);
    }
    /// A GGUF string: u64 length, then the bytes.
    void string(std::string_view s) {
        u64(s.size());
        raw(s.data(), s.size());
    }
    void raw(const void* data, std::size_t size) {
        const auto* p = static_cast<const std::uint8_t*>(data);
        bytes.insert(bytes.end(), p, p + size);
    }
};

/// A GGUF file to write: metadata entries and tensors in the order added.
class GgufWriter {
public:
    std::uint32_t version = 3;
    /// Where the data section and each tensor start are aligned to (write general.alignment
    /// with it for a reader to agree).
    std::uint64_t alignment = 32;
    /// Counts written instead of the true ones.
    std::optional<std::uint64_t> tensor_count, metadata_count;

    /// An entry whose value bytes (after the type) are given as they are.
    GgufWriter& entry(std::string_view key, std::uint32_t type, const std::vector<std::uint8_t>& value) {
        LittleEndianBytes out;
        out.string(key);
        out.u32(type);
        out.raw(value.data(), value.size());
        entries_.push_back(out.bytes);
        return *this;
    }

    template <class Write>
    GgufWriter& entry_with(std::string_view key, std::uint32_t type, Write&& write) {
        LittleEndianBytes value;
        write(value);
        return entry(key, type, value.bytes);
    }

    GgufWriter& u32(std::string_view key, std::uint32_t v) {
        return entry_with(key, gguf_type::uint32, [&](LittleEndianBytes& o) { o.u32(v); });
    }
    GgufWriter& string(std::string_view key, std::string_view v) {
        return entry_with(key, gguf_type::string, [&](LittleEndianBytes& o) { o.string(v); });
    }
    GgufWriter& string_array(std::string_view key, const std::vector<std::string>& values) {
        return entry_with(key, gguf_type::array, [&](LittleEndianBytes& o) {
            o.u32(gguf_type::string);
            o.u64(values.size());
            for (const auto& s : values) o.string(s);
        });
    }

    /// A tensor; its offset is the next aligned position in the data section unless given.
    GgufWriter& tensor(std::string_view name, std::vector<std::uint64_t> dims, std::uint32_t type,
                       std::vector<std::uint8_t> data, std::optional<std::uint64_t> offset = std::nullopt) {
        tensors_.push_back({std::string(name), std::move(dims), type, std::move(data), offset});
        return *this;
    }

    /// The file's bytes.
    std::vector<std::uint8_t> bytes() const {
        LittleEndianBytes out;
        out.raw("GGUF", 4);
        out.u32(version);
        out.u64(tensor_count.value_or(tensors_.size()));
        out.u64(metadata_count.value_or(entries_.size()));
        for (const auto& e : entries_) out.raw(e.data(), e.size());
        std::vector<std::uint64_t> offsets;
        std::uint64_t next = 0, data_size = 0;
        for (const auto& t : tensors_) {
            const std::uint64_t offset = t.offset.value_or(next);
            offsets.push_back(offset);
            next = round_up(offset + t.data.size());
            data_size = std::max(data_size, offset + t.data.size());
            out.string(t.name);
            out.u32(static_cast<std::uint32_t>(t.dims.size()));
            for (std::uint64_t d : t.dims) out.u64(d);
            out.u32(t.type);
            out.u64(offset);
        }
        header_bytes_ = out.bytes.size();
        if (!tensors_.empty()) out.bytes.resize(round_up(out.bytes.size()), 0);
        const std::size_t data_start = out.bytes.size();
        if (data_size < 1u << 24) {  // tests with offsets far past the file write no data there
            out.bytes.resize(data_start + data_size, 0);
            for (std::size_t i = 0; i < tensors_.size(); ++i)
                std::copy(tensors_[i].data.begin(), tensors_[i].data.end(),
                          out.bytes.begin() + static_cast<std::ptrdiff_t>(data_start + offsets[i]));
        }
        return out.bytes;
    }

    /// Where the tensor descriptions end (before the padding) in the last bytes() written.
    std::size_t header_bytes() const { return header_bytes_; }

private:
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> dims;
        std::uint32_t type;
        std::vector<std::uint8_t> data;
        std::optional<std::uint64_t> offset;
    };

    std::uint64_t round_up(std::uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }

    std::vector<std::vector<std::uint8_t>> entries_;
    std::vector<Tensor> tensors_;
    mutable std::size_t header_bytes_ = 0;
};

}  // namespace attn::test
