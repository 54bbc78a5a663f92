// libFuzzer target: arbitrary bytes → attn::GgufFile::from_bytes and, written to a file,
// attn::GgufFile::open (pread) and attn::GgufFile::map (mmap); the three must agree on the
// verdict and the message. Then every metadata value is read through every getter and
// every tensor is read and dequantized. Only attn::error may be thrown (and is caught);
// any other exception (std::bad_alloc, std::length_error...), crash, sanitizer report or
// broken invariant is a finding.
//
// Invariants checked for files that load: each tensor's byte size is its element count
// over the block size times the block bytes, its offset is aligned, its bytes lie inside
// the file and overlap no other tensor's; the bytes and the dequantized values are the
// same whichever way the file was opened; dequantize gives one float per element.
//
// Then the file's tokenizer is built (attn::Tokenizer::from_gguf: tokenizer.ggml.*, see
// attn/detail/text/gguf_vocabulary.hpp); if it builds, fixed texts and the input's last bytes
// are encoded, with and without the added tokens: every id must be a token, encoding twice
// must give the same ids, and decode must take them.

#include "fuzz_support.hpp"

#include <attn/formats/gguf.hpp>
#include <attn/text/tokenizer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_gguf: invariant broken: %s\n", what);
        std::abort();
    }
}

template <class F>
void tolerate(F&& f) {
    try {
        f();
    } catch (const attn::format_error&) {
        // the value's type does not fit this getter: fine
    } catch (const attn::argument_error&) {
        // an element index past the end: fine
    }
}

/// Every getter on one value (and, for arrays of arrays, on each element).
void read_value(const attn::GgufValue& v, int depth) {
    require(depth <= static_cast<int>(attn::GgufFile::max_array_depth) + 1, "nesting depth");
    tolerate([&] { (void)v.as_unsigned(); });
    tolerate([&] { (void)v.as_integer(); });
    tolerate([&] { (void)v.as_floating(); });
    tolerate([&] { (void)v.as_boolean(); });
    tolerate([&] { (void)v.as_string(); });
    (void)v.describe();
    if (!v.is_array()) return;
    const std::uint64_t n = v.array_size();
    tolerate([&] { require(v.strings().size() == n, "strings() size"); });
    tolerate([&] { require(v.integers().size() == n, "integers() size"); });
    tolerate([&] { require(v.unsigned_integers().size() == n, "unsigned_integers() size"); });
    tolerate([&] { require(v.floatings().size() == n, "floatings() size"); });
    tolerate([&] { require(v.booleans().size() == n, "booleans() size"); });
    if (v.element_type() == attn::GgufType::string && n > 0) (void)v.string_at(n - 1);
    if (v.element_type() == attn::GgufType::array)
        for (std::uint64_t i = 0; i < n; ++i) read_value(v.array_at(i), depth + 1);
}

void read_metadata(const attn::GgufFile& file) {
    for (const std::string& key : file.keys()) {
        require(file.contains(key), "contains(key)");
        read_value(file.value(key), 1);
        tolerate([&] { (void)file.string(key); });
        tolerate([&] { (void)file.unsigned_integer(key); });
        tolerate([&] { (void)file.integer(key); });
        tolerate([&] { (void)file.floating(key); });
        tolerate([&] { (void)file.boolean(key); });
        tolerate([&] { (void)file.string_array(key); });
        tolerate([&] { (void)file.integer_array(key); });
        tolerate([&] { (void)file.unsigned_array(key); });
        tolerate([&] { (void)file.floating_array(key); });
        tolerate([&] { (void)file.boolean_array(key); });
    }
}

void check_layout(const attn::GgufFile& file) {
    require(file.alignment() != 0 && (file.alignment() & (file.alignment() - 1)) == 0, "alignment a power of two");
    require(file.data_offset() % file.alignment() == 0, "data section aligned");
    std::vector<const attn::GgufTensorInfo*> order;
    for (const attn::GgufTensorInfo& t : file.tensors()) {
        require(file.has_tensor(t.name) && &file.tensor(t.name) == &t, "tensor lookup");
        require(!t.dims.empty() && t.dims.size() <= 4, "1 to 4 dims");
        std::uint64_t elements = 1;
        for (std::uint64_t d : t.dims) elements *= d;
        require(elements == t.elements, "elements = product of dims");
        const std::size_t block = attn::ggml_block_values(t.type);
        require(t.row_length() % block == 0, "whole blocks per row");
        require(t.bytes == t.elements / block * attn::ggml_block_bytes(t.type), "byte size");
        require(t.offset % file.alignment() == 0, "offset aligned");
        require(file.data_offset() + t.offset + t.bytes <= file.file_size(), "bytes inside the file");
        order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < order.size(); ++i)
        require(order[i - 1]->offset + order[i - 1]->bytes <= order[i]->offset, "no overlap");
}

/// The file's tokenizer, if it has one that builds, on a few texts.
void check_tokenizer(const attn::GgufFile& file, const std::uint8_t* data, std::size_t size) {
    attn::Tokenizer tokenizer;
    try {
        tokenizer = attn::Tokenizer::from_gguf(file);
    } catch (const attn::format_error&) {
        return;  // a malformed or unsupported vocabulary: refused, as it should be
    }
    if (tokenizer.kind() == attn::Tokenizer::Kind::none) return;
    const std::size_t tail = std::min<std::size_t>(size, 64);
    const std::string texts[] = {"", " the cat's 123 <s></s><|endoftext|>\n\t",
                                 "\xE2\x96\x81"
                                 "a\xC3\xA9\xFF",
                                 std::string(reinterpret_cast<const char*>(data + size - tail), tail)};
    for (const std::string& text : texts) {
        for (const bool special : {true, false}) {
            const std::vector<int> ids = tokenizer.encode(text, attn::EncodeOptions{special});
            for (int id : ids) require(id >= 0 && id < tokenizer.size(), "encode: ids are tokens");
            require(tokenizer.encode(text, attn::EncodeOptions{special}) == ids, "encode: the same ids twice");
            (void)tokenizer.decode(ids);
        }
    }
}

/// Floats compared by their bits (NaN payloads included).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const attn_fuzz::ScratchFile scratch("fuzz_gguf");
    const std::filesystem::path& path = scratch.hold(data, size);
    std::string memory_error, file_error, map_error;
    const auto from_memory = attn_fuzz::load_or_error(
        [&] { return attn::GgufFile::from_bytes(std::vector<std::uint8_t>(data, data + size), path.string()); },
        memory_error);
    const auto from_file = attn_fuzz::load_or_error([&] { return attn::GgufFile::open(path); }, file_error);
    const auto from_map = attn_fuzz::load_or_error([&] { return attn::GgufFile::map(path); }, map_error);
    require(from_memory.has_value() == from_file.has_value(), "open and from_bytes agree on accepting");
    require(from_memory.has_value() == from_map.has_value(), "map and from_bytes agree on accepting");
    require(memory_error == file_error, "open and from_bytes give the same message");
    require(memory_error == map_error, "map and from_bytes give the same message");
    if (!from_memory) return 0;  // a rejected file: the expected outcome for most inputs

    read_metadata(*from_memory);
    check_layout(*from_memory);
    check_tokenizer(*from_memory, data, size);
    require(from_file->keys() == from_memory->keys(), "keys agree");
    for (const attn::GgufTensorInfo& t : from_memory->tensors()) {
        const std::vector<std::uint8_t> bytes = from_memory->tensor_bytes(t.name);
        require(bytes.size() == t.bytes, "tensor_bytes size");
        require(from_file->tensor_bytes(t.name) == bytes, "open and from_bytes: bytes");
        const attn::GgufBytes mapped = from_map->mapped_tensor(t.name);
        require(mapped.size == bytes.size() && std::equal(bytes.begin(), bytes.end(), mapped.data),
                "map and from_bytes: bytes");
        const std::vector<float> values = from_memory->dequantize(t.name);
        require(values.size() == t.elements, "dequantize: one float per element");
        require(same_bits(from_file->dequantize(t.name), values), "open and from_bytes: dequantized values");
    }
    return 0;
}
