// Tests of attn/formats/gguf.hpp and attn/detail/kernels/quantized.hpp: files built by
// tests/gguf_writer.hpp round-trip every metadata type and every supported tensor type;
// each kind of malformed file (the llama.cpp and ollama vulnerabilities among them) is a
// format_error naming the problem, thrown before anything is allocated from the bad
// size; each block format decodes hand-built blocks to values computed here and
// gguf-py's blocks (tests/data/gguf, tools/references/gguf_quants.py) to gguf-py's values.

#include <attn/formats/gguf.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "gguf_writer.hpp"
#include "support.hpp"

namespace gguf_tests {

namespace fs = std::filesystem;
using attn::test::GgufWriter;
using attn::test::LittleEndianBytes;
using attn::test::TempDir;
namespace type = attn::test::gguf_type;
namespace ggml = attn::test::ggml_id;

constexpr std::uint64_t two_to_60 = std::uint64_t(1) << 60;

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::vector<std::uint8_t> filled(std::size_t n, std::uint8_t start = 0) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(start + i);
    return out;
}

/// The bytes must be refused by open(), map() and from_bytes() alike: a format_error naming
/// the file and holding every needle, the same message three times, and no allocation
/// larger than a read buffer on the way (nothing sized from the bad field).
void expect_malformed(const std::vector<std::uint8_t>& bytes, std::initializer_list<const char*> needles) {
    TempDir dir;
    const fs::path path = dir.path / "bad.gguf";
    write_file(path, bytes);
    std::string messages[3];
    attn::test::count_allocations(true);
    messages[0] = attn::test::thrown_format_error([&] { (void)attn::GgufFile::open(path); });
    const std::size_t largest = attn::test::largest_allocation();
    attn::test::count_allocations(false);
    messages[1] = attn::test::thrown_format_error([&] { (void)attn::GgufFile::map(path); });
    messages[2] = attn::test::thrown_format_error([&] { (void)attn::GgufFile::from_bytes(bytes, path.string()); });
    INFO("message: " << messages[0]);
    CHECK(largest <= (std::size_t(1) << 20));
    CHECK(messages[0] == messages[1]);
    CHECK(messages[0] == messages[2]);
    CHECK(attn::test::contains(messages[0], path.string() + ": "));
    for (const char* needle : needles)
        CHECK_MESSAGE(attn::test::contains(messages[0], needle), "missing: " << std::string(needle));
}

/// A valid file with one metadata entry and one tensor (F32, dims {4, 2}): corrupted by the tests.
GgufWriter small_file() {
    GgufWriter w;
    w.string("general.architecture", "llama");
    w.tensor("w", {4, 2}, ggml::F32, filled(32));
    return w;
}

/// The file's bytes with `length` bytes at `at` replaced by the little-endian `value`.
std::vector<std::uint8_t> patched(std::vector<std::uint8_t> bytes, std::size_t at, std::uint64_t value, int length) {
    for (int i = 0; i < length; ++i)
        bytes.at(at + static_cast<std::size_t>(i)) = static_cast<std::uint8_t>(value >> (8 * i));
    return bytes;
}

/// Where `text` (e.g. a key) first occurs in the bytes.
std::size_t find_text(const std::vector<std::uint8_t>& bytes, const std::string& text) {
    const auto found = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
    REQUIRE(found != bytes.end());
    return static_cast<std::size_t>(found - bytes.begin());
}

attn::GgufFile load(const std::vector<std::uint8_t>& bytes) {
    return attn::GgufFile::from_bytes(bytes, "test.gguf");
}

std::uint16_t half_bits(float f) {
    return attn::detail::float_to_half_exact(f);
}

void put_half(std::uint8_t* p, float f) {
    const std::uint16_t h = half_bits(f);
    p[0] = static_cast<std::uint8_t>(h);
    p[1] = static_cast<std::uint8_t>(h >> 8);
}

/// Packs eight 6-bit scales and mins into the 12 bytes of a Q4_K/Q5_K block, following the
/// layout ggml documents (bytes 0-3: scales 0-3 + top bits of scales 4-7; 4-7: mins 0-3 + top
/// bits of mins 4-7; 8-11: low nibbles of scales 4-7, high nibbles of mins 4-7).
void pack_k_scales(const int (&scale)[8], const int (&min)[8], std::uint8_t* out) {
    for (int j = 0; j < 4; ++j) {
        out[j] = static_cast<std::uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
        out[j + 4] = static_cast<std::uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
        out[j + 8] = static_cast<std::uint8_t>((scale[j + 4] & 15) | ((min[j + 4] & 15) << 4));
    }
}

struct Golden {
    std::string type;
    std::vector<std::uint8_t> bytes;
    std::vector<float> values;
    std::size_t blocks = 0;
};

Golden read_golden(const std::string& file_name) {
    std::ifstream in(fs::path(ATTN_TEST_DATA_DIR) / "gguf" / file_name);
    REQUIRE(in.good());
    Golden g;
    std::string word;
    while (in >> word) {
        if (word[0] == '#') {
            std::getline(in, word);
        } else if (word == "type") {
            in >> g.type;
        } else if (word == "blocks") {
            in >> g.blocks;
        } else if (word == "bytes") {
            std::string hex;
            in >> hex;
            for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
                g.bytes.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
        } else if (word == "values") {
            std::size_t n = 0;
            in >> n;
            for (std::size_t i = 0; i < n && in >> word; ++i) g.values.push_back(std::strtof(word.c_str(), nullptr));
        }
    }
    return g;
}

}  // namespace gguf_tests

using namespace gguf_tests;

// ---------------------------------------------------------------------------
// Valid files

TEST_CASE("gguf: a valid file's header, metadata and tensors, through open, map and from_bytes") {
    GgufWriter w;
    w.string("general.architecture", "llama").u32("llama.block_count", 2);
    w.tensor("token_embd.weight", {32, 3}, ggml::F32, filled(32 * 3 * 4));
    w.tensor("blk.0.attn_q.weight", {64, 2}, ggml::Q8_0, filled(2 * 2 * 34, 7));
    w.tensor("output_norm.weight", {5}, ggml::F16, filled(10, 3));
    const std::vector<std::uint8_t> bytes = w.bytes();
    TempDir dir;
    const fs::path path = dir.path / "model.gguf";
    write_file(path, bytes);

    const attn::GgufFile opened = attn::GgufFile::open(path);
    const attn::GgufFile mapped = attn::GgufFile::map(path);
    const attn::GgufFile held = attn::GgufFile::from_bytes(bytes, "held.gguf");
    CHECK(opened.source() == path.string());
    CHECK(held.source() == "held.gguf");
    for (const attn::GgufFile* file : {&opened, &mapped, &held}) {
        CHECK(file->version() == 3);
        CHECK(file->alignment() == 32);
        CHECK(file->file_size() == bytes.size());
        CHECK(file->data_offset() % 32 == 0);
        CHECK(file->data_offset() >= w.header_bytes());
        CHECK(file->data_offset() < w.header_bytes() + 32);
        CHECK(file->keys() == std::vector<std::string>{"general.architecture", "llama.block_count"});
        CHECK(file->string("general.architecture") == "llama");
        CHECK(file->unsigned_integer("llama.block_count") == 2);
        REQUIRE(file->tensors().size() == 3);
        CHECK(file->tensors()[0].name == "token_embd.weight");  // file order

        const attn::GgufTensorInfo& q = file->tensor("blk.0.attn_q.weight");
        CHECK(q.type == attn::GgmlType::Q8_0);
        CHECK(q.dims == std::vector<std::uint64_t>{64, 2});
        CHECK(q.shape() == std::vector<std::uint64_t>{2, 64});
        CHECK(q.row_length() == 64);
        CHECK(q.rows() == 2);
        CHECK(q.elements == 128);
        CHECK(q.bytes == 4 * 34);
        CHECK(q.offset == 384);  // after the 384 bytes of token_embd.weight (a multiple of 32)
        CHECK(file->tensor_bytes("blk.0.attn_q.weight") == filled(136, 7));
        CHECK(file->tensor_bytes("output_norm.weight") == filled(10, 3));
        std::vector<std::uint8_t> into(136);
        file->read_tensor("blk.0.attn_q.weight", into.data(), into.size());
        CHECK(into == filled(136, 7));
        CHECK_THROWS_AS(file->read_tensor("blk.0.attn_q.weight", into.data(), 135), attn::argument_error);
        std::vector<std::uint8_t> row(68);  // row 1 as stored: its 2 blocks (stored_quantized reads rows so)
        file->read_rows("blk.0.attn_q.weight", 1, 1, row.data(), row.size());
        const std::vector<std::uint8_t> both = filled(136, 7);
        CHECK(row == std::vector<std::uint8_t>(both.begin() + 68, both.end()));
        CHECK_THROWS_AS(file->read_rows("blk.0.attn_q.weight", 1, 2, into.data(), into.size()), attn::argument_error);
        CHECK_THROWS_AS(file->read_rows("blk.0.attn_q.weight", 0, 1, row.data(), 67), attn::argument_error);
        CHECK(file->has_tensor("output_norm.weight"));
        CHECK_FALSE(file->has_tensor("output"));
        const std::string missing = attn::test::thrown_format_error([&] { (void)file->tensor("output"); });
        CHECK(attn::test::contains(missing, "no tensor 'output'"));
    }
    for (const attn::GgufFile* file : {&mapped, &held}) {
        const attn::GgufBytes in_place = file->mapped_tensor("output_norm.weight");
        REQUIRE(in_place.size == 10);
        CHECK(std::vector<std::uint8_t>(in_place.data, in_place.data + in_place.size) == filled(10, 3));
    }
    const std::string why =
        attn::test::thrown_message<attn::argument_error>([&] { (void)opened.mapped_tensor("output_norm.weight"); });
    CHECK(attn::test::contains(why, "GgufFile::map"));
}

TEST_CASE("gguf: every metadata value type round-trips, with arrays of each and nested arrays of strings") {
    GgufWriter w;
    w.entry_with("u8", type::uint8, [](LittleEndianBytes& o) { o.u8(250); });
    w.entry_with("i8", type::int8, [](LittleEndianBytes& o) { o.u8(0x80); });  // -128
    w.entry_with("u16", type::uint16, [](LittleEndianBytes& o) { o.u16(65535); });
    w.entry_with("i16", type::int16, [](LittleEndianBytes& o) { o.u16(0xFFFE); });  // -2
    w.entry_with("u32", type::uint32, [](LittleEndianBytes& o) { o.u32(4000000000u); });
    w.entry_with("i32", type::int32, [](LittleEndianBytes& o) { o.u32(0x80000000u); });
    w.entry_with("f32", type::float32, [](LittleEndianBytes& o) { o.f32(0.1f); });
    w.entry_with("yes", type::boolean, [](LittleEndianBytes& o) { o.u8(1); });
    w.entry_with("no", type::boolean, [](LittleEndianBytes& o) { o.u8(0); });
    w.string("text", std::string("h\xC3\xA9llo\0!", 8));  // embedded NUL kept
    w.string("empty", "");
    w.entry_with("u64", type::uint64, [](LittleEndianBytes& o) { o.u64(std::numeric_limits<std::uint64_t>::max()); });
    w.entry_with("i64", type::int64, [](LittleEndianBytes& o) { o.u64(std::uint64_t(1) << 63); });
    w.entry_with("f64", type::float64, [](LittleEndianBytes& o) { o.f64(-1e300); });
    auto array = [&](const char* key, std::uint32_t element, std::uint64_t count, auto write) {
        w.entry_with(key, type::array, [&](LittleEndianBytes& o) {
            o.u32(element);
            o.u64(count);
            write(o);
        });
    };
    array("a.u8", type::uint8, 3, [](LittleEndianBytes& o) { o.raw("\x01\x02\xFF", 3); });
    array("a.i8", type::int8, 2, [](LittleEndianBytes& o) { o.raw("\x7F\x80", 2); });
    array("a.u16", type::uint16, 2, [](LittleEndianBytes& o) {
        o.u16(1);
        o.u16(65535);
    });
    array("a.i16", type::int16, 2, [](LittleEndianBytes& o) {
        o.u16(0x8000);
        o.u16(5);
    });
    array("a.u32", type::uint32, 1, [](LittleEndianBytes& o) { o.u32(7); });
    array("a.i32", type::int32, 3, [](LittleEndianBytes& o) {
        o.u32(1);
        o.u32(0xFFFFFFFF);
        o.u32(3);
    });
    array("a.f32", type::float32, 2, [](LittleEndianBytes& o) {
        o.f32(1.5f);
        o.f32(-0.25f);
    });
    array("a.bool", type::boolean, 3, [](LittleEndianBytes& o) { o.raw("\x01\x00\x01", 3); });
    array("a.u64", type::uint64, 1, [](LittleEndianBytes& o) { o.u64(std::uint64_t(1) << 63); });
    array("a.i64", type::int64, 2, [](LittleEndianBytes& o) {
        o.u64(static_cast<std::uint64_t>(-5));
        o.u64(6);
    });
    array("a.f64", type::float64, 1, [](LittleEndianBytes& o) { o.f64(2.5); });
    array("a.empty", type::int32, 0, [](LittleEndianBytes&) {});
    w.string_array("tokens", {"<s>", "", "\xE2\x96\x81the", std::string("\xFF", 1)});  // bytes, not UTF-8, kept
    array("nested", type::array, 2, [](LittleEndianBytes& o) {
        o.u32(type::string);
        o.u64(2);
        o.string("a b");
        o.string("c d");
        o.u32(type::string);
        o.u64(0);
    });
    const attn::GgufFile f = load(w.bytes());

    CHECK(f.keys().size() == 28);
    CHECK(f.unsigned_integer("u8") == 250);
    CHECK(f.integer("i8") == -128);
    CHECK(f.unsigned_integer("u16") == 65535);
    CHECK(f.integer("i16") == -2);
    CHECK(f.unsigned_integer("u32") == 4000000000u);
    CHECK(f.integer("i32") == std::numeric_limits<std::int32_t>::min());
    CHECK(f.floating("f32") == static_cast<double>(0.1f));
    CHECK(f.boolean("yes"));
    CHECK_FALSE(f.boolean("no"));
    CHECK(f.string("text") == std::string("h\xC3\xA9llo\0!", 8));
    CHECK(f.string("empty").empty());
    CHECK(f.unsigned_integer("u64") == std::numeric_limits<std::uint64_t>::max());
    CHECK(f.integer("i64") == std::numeric_limits<std::int64_t>::min());
    CHECK(f.floating("f64") == -1e300);
    CHECK(f.value("u16").type() == attn::GgufType::uint16);
    CHECK(f.value("yes").type() == attn::GgufType::boolean);

    CHECK(f.unsigned_array("a.u8") == std::vector<std::uint64_t>{1, 2, 255});
    CHECK(f.integer_array("a.i8") == std::vector<std::int64_t>{127, -128});
    CHECK(f.unsigned_array("a.u16") == std::vector<std::uint64_t>{1, 65535});
    CHECK(f.integer_array("a.i16") == std::vector<std::int64_t>{-32768, 5});
    CHECK(f.integer_array("a.u32") == std::vector<std::int64_t>{7});
    CHECK(f.integer_array("a.i32") == std::vector<std::int64_t>{1, -1, 3});
    CHECK(f.floating_array("a.f32") == std::vector<double>{1.5, -0.25});
    CHECK(f.boolean_array("a.bool") == std::vector<bool>{true, false, true});
    CHECK(f.unsigned_array("a.u64") == std::vector<std::uint64_t>{std::uint64_t(1) << 63});
    CHECK(f.integer_array("a.i64") == std::vector<std::int64_t>{-5, 6});
    CHECK(f.floating_array("a.f64") == std::vector<double>{2.5});
    CHECK(f.integer_array("a.empty").empty());
    CHECK(f.value("a.empty").element_type() == attn::GgufType::int32);
    CHECK(f.value("a.f32").describe() == "an array of float32");

    CHECK(f.string_array("tokens") == std::vector<std::string>{"<s>", "", "\xE2\x96\x81the", std::string("\xFF", 1)});
    CHECK(f.value("tokens").string_at(2) == "\xE2\x96\x81the");
    CHECK(f.value("tokens").array_size() == 4);

    const attn::GgufValue& nested = f.value("nested");
    CHECK(nested.element_type() == attn::GgufType::array);
    REQUIRE(nested.array_size() == 2);
    CHECK(nested.array_at(0).strings() == std::vector<std::string>{"a b", "c d"});
    CHECK(nested.array_at(1).strings().empty());
    CHECK_THROWS_AS((void)nested.array_at(2), attn::argument_error);
}

TEST_CASE("gguf: typed getters refuse a type that does not fit the use, naming the file and key") {
    GgufWriter w;
    w.u32("count", 3).string("name", "x");
    w.entry_with("negative", type::int32, [](LittleEndianBytes& o) { o.u32(static_cast<std::uint32_t>(-4)); });
    w.entry_with("huge", type::uint64, [](LittleEndianBytes& o) { o.u64(std::uint64_t(1) << 63); });
    w.entry_with("ints", type::array, [](LittleEndianBytes& o) {
        o.u32(type::int32);
        o.u64(2);
        o.u32(1);
        o.u32(2);
    });
    w.entry_with("signed", type::array, [](LittleEndianBytes& o) {
        o.u32(type::int8);
        o.u64(2);
        o.u8(1);
        o.u8(0xFF);
    });
    const attn::GgufFile f = load(w.bytes());
    auto refused = [&](auto get, const char* needle) {
        const std::string what = attn::test::thrown_format_error(get);
        INFO(what);
        CHECK(attn::test::contains(what, "test.gguf: "));
        CHECK(attn::test::contains(what, needle));
    };
    refused([&] { (void)f.string("count"); }, "metadata key 'count' is a uint32, expected a string");
    refused([&] { (void)f.unsigned_integer("name"); }, "metadata key 'name' is a string, expected an unsigned integer");
    refused([&] { (void)f.floating("count"); }, "is a uint32, expected a float32 or float64");
    refused([&] { (void)f.boolean("count"); }, "expected a bool");
    refused([&] { (void)f.unsigned_integer("negative"); }, "'negative' is -4 (int32), expected a non-negative integer");
    refused([&] { (void)f.integer("huge"); }, "more than int64 holds");
    refused([&] { (void)f.string_array("ints"); }, "'ints' is an array of int32, expected an array of strings");
    refused([&] { (void)f.floating_array("ints"); }, "expected an array of float32 or float64");
    refused([&] { (void)f.string_array("name"); }, "'name' is a string, expected an array of strings");
    refused([&] { (void)f.unsigned_array("signed"); }, "'signed'[1] is -1 (int8), expected a non-negative integer");
    refused([&] { (void)f.string("absent"); }, "no metadata key 'absent'");
    CHECK(f.integer("count") == 3);  // an integer of any width fits a use of integers
    CHECK(f.integer_array("signed") == std::vector<std::int64_t>{1, -1});
    CHECK(f.find("absent") == nullptr);
    CHECK_FALSE(f.contains("absent"));
}

TEST_CASE("gguf: version 2 reads as version 3 does; a file of no tensors and no metadata is valid") {
    GgufWriter w = small_file();
    w.version = 2;
    const attn::GgufFile v2 = load(w.bytes());
    CHECK(v2.version() == 2);
    CHECK(v2.tensor("w").bytes == 32);

    GgufWriter empty;
    const attn::GgufFile nothing = load(empty.bytes());
    CHECK(nothing.keys().empty());
    CHECK(nothing.tensors().empty());
    CHECK(nothing.data_offset() == 32);  // 24 bytes of header, aligned: past the end, with nothing there
}

TEST_CASE("gguf: general.alignment places the data section and the tensors") {
    GgufWriter w;
    w.alignment = 256;
    w.u32("general.alignment", 256);
    w.tensor("a", {3}, ggml::F32, filled(12));
    w.tensor("b", {32}, ggml::Q4_0, filled(18, 100));
    const attn::GgufFile f = load(w.bytes());
    CHECK(f.alignment() == 256);
    CHECK(f.data_offset() == 256);
    CHECK(f.tensor("b").offset == 256);
    CHECK(f.tensor_bytes("b") == filled(18, 100));
}

TEST_CASE("gguf: byte sizes from each type's block size and block bytes") {
    struct Case {
        std::uint32_t id;
        std::vector<std::uint64_t> dims;
        std::uint64_t bytes;
    };
    const Case cases[] = {
        {ggml::F32, {3, 2}, 24},
        {ggml::F16, {3, 2}, 12},
        {ggml::BF16, {5}, 10},
        {ggml::Q8_0, {64, 3}, 6 * 34},
        {ggml::Q4_0, {32, 2, 2}, 4 * 18},
        {ggml::Q4_1, {64, 3}, 6 * 20},
        {ggml::Q5_0, {32, 5}, 5 * 22},
        {ggml::Q5_1, {96}, 3 * 24},
        {ggml::Q4_K, {256, 2}, 2 * 144},
        {ggml::Q5_K, {512}, 2 * 176},
        {ggml::Q6_K, {256, 1, 1, 3}, 3 * 210},
    };
    for (const Case& c : cases) {
        GgufWriter w;
        w.tensor("t", c.dims, c.id, filled(static_cast<std::size_t>(c.bytes)));
        const attn::GgufFile f = load(w.bytes());
        INFO("type id " << c.id);
        CHECK(static_cast<std::uint32_t>(f.tensor("t").type) == c.id);
        CHECK(f.tensor("t").bytes == c.bytes);
        CHECK(f.dequantize("t").size() == f.tensor("t").elements);
    }
    CHECK(attn::ggml_block_values(attn::GgmlType::Q6_K) == 256);
    CHECK(attn::ggml_block_bytes(attn::GgmlType::Q5_K) == 176);
    CHECK(std::string(attn::ggml_type_name(attn::GgmlType::Q4_K)) == "Q4_K");
}

// ---------------------------------------------------------------------------
// Malformed files: one test case per kind

TEST_CASE("gguf malformed: bad magic") {
    std::vector<std::uint8_t> bytes = small_file().bytes();
    bytes[3] = 'G';
    expect_malformed(bytes, {"not a GGUF file", "47 47 55 47"});
    expect_malformed({'G', 'G'}, {"the magic", "needs 4 bytes, but only 2 remain"});
    expect_malformed({}, {"the magic"});
}

TEST_CASE("gguf malformed: version 1, unknown versions and big-endian files") {
    GgufWriter w = small_file();
    w.version = 1;
    expect_malformed(w.bytes(), {"version 1 is not supported"});
    w.version = 4;
    expect_malformed(w.bytes(), {"unknown GGUF version 4"});
    w.version = 0x03000000;
    expect_malformed(w.bytes(), {"big-endian"});
}

TEST_CASE("gguf malformed: a file cut anywhere in its header or data") {
    const std::vector<std::uint8_t> bytes = small_file().bytes();
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        CAPTURE(length);
        const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
        CHECK_THROWS_AS((void)load(cut), attn::format_error);
    }
}

TEST_CASE("gguf malformed: TALOS-2024-1913 (CVE-2024-23496): a crafted string length") {
    const std::vector<std::uint8_t> bytes = small_file().bytes();
    const std::size_t key = find_text(bytes, "general.architecture") - 8;
    expect_malformed(patched(bytes, key, std::uint64_t(-1), 8),
                     {"metadata key 0", "is 18446744073709551615 bytes long"});
    expect_malformed(patched(bytes, key, 60000, 8), {"metadata key 0", "needs 60000 bytes"});
    const std::size_t value = find_text(bytes, "llama") - 8;
    expect_malformed(patched(bytes, value, std::uint64_t(1) << 62, 8),
                     {"metadata key 'general.architecture': string at byte", "needs 4611686018427387904 bytes"});
    const std::size_t name = find_text(bytes, "w\x02") - 8;  // the tensor name, then n_dims = 2
    expect_malformed(patched(bytes, name, std::uint64_t(1) << 40, 8), {"tensor name 0", "more than 64"});

    GgufWriter strings;
    strings.string_array("tokenizer.ggml.tokens", {"a", "b"});
    const std::vector<std::uint8_t> array = strings.bytes();
    const std::size_t second = find_text(array, "b") - 8;
    expect_malformed(patched(array, second, std::uint64_t(-2), 8), {"tokenizer.ggml.tokens", "array of 2 string"});
}

TEST_CASE("gguf malformed: TALOS-2024-1913: a crafted n_dims (0, 5, 2^32 - 1)") {
    const std::vector<std::uint8_t> bytes = small_file().bytes();
    const std::size_t n_dims = find_text(bytes, "w\x02") + 1;
    expect_malformed(patched(bytes, n_dims, 0, 4), {"tensor 'w': n_dims is 0, expected 1 to 4"});
    expect_malformed(patched(bytes, n_dims, 5, 4), {"n_dims is 5"});
    expect_malformed(patched(bytes, n_dims, 0xFFFFFFFF, 4), {"n_dims is 4294967295"});
}

TEST_CASE("gguf malformed: an extent of 0") {
    GgufWriter w;
    w.tensor("w", {4, 0}, ggml::F32, {});
    expect_malformed(w.bytes(), {"tensor 'w': dims[1] is 0"});
}

TEST_CASE("gguf malformed: llama.cpp #18674: dims whose product overflows int64") {
    GgufWriter w;
    w.tensor("w", {std::uint64_t(1) << 32, std::uint64_t(1) << 31, 2}, ggml::F32, {});
    expect_malformed(w.bytes(), {"tensor 'w': dims [4294967296, 2147483648, 2] hold more than 2^63 - 1 elements"});
    GgufWriter wrap;  // 2^32 × 2^32 wraps to 0 in 64 bits
    wrap.tensor("w", {std::uint64_t(1) << 32, std::uint64_t(1) << 32}, ggml::F32, {});
    expect_malformed(wrap.bytes(), {"hold more than 2^63 - 1 elements"});
}

TEST_CASE("gguf malformed: a byte size that overflows 64 bits") {
    GgufWriter w;  // 2^62 F32 elements: 2^64 bytes
    w.tensor("w", {std::uint64_t(1) << 31, std::uint64_t(1) << 31}, ggml::F32, {});
    expect_malformed(w.bytes(), {"tensor 'w': dims [2147483648, 2147483648] of F32 need more than 2^64 bytes"});
}

TEST_CASE("gguf malformed: a row length that is not a multiple of the block size") {
    GgufWriter w;
    w.tensor("w", {48, 2}, ggml::Q8_0, filled(4 * 34));
    expect_malformed(w.bytes(), {"tensor 'w': rows of 48 values are not a multiple of the Q8_0 block of 32 values"});
    GgufWriter k;
    k.tensor("k", {128}, ggml::Q6_K, filled(210));
    expect_malformed(k.bytes(), {"Q6_K block of 256"});
    const std::pair<std::uint32_t, const char*> narrow_rows[] = {
        {ggml::Q4_1, "tensor 'n': rows of 80 values are not a multiple of the Q4_1 block of 32 values"},
        {ggml::Q5_0, "tensor 'n': rows of 80 values are not a multiple of the Q5_0 block of 32 values"},
        {ggml::Q5_1, "tensor 'n': rows of 80 values are not a multiple of the Q5_1 block of 32 values"}};
    for (const auto& [id, message] : narrow_rows) {
        GgufWriter narrow;
        narrow.tensor("n", {80, 2}, id, filled(6 * 24));
        expect_malformed(narrow.bytes(), {message});
    }
}

TEST_CASE("gguf malformed: ollama #17042: a count of 2^60 in a 100-byte file") {
    GgufWriter kv;
    kv.metadata_count = two_to_60;
    kv.string("k", "v");
    expect_malformed(kv.bytes(), {"the metadata count: 1152921504606846976 elements of at least 14 bytes"});
    GgufWriter tensors;
    tensors.tensor_count = two_to_60;
    expect_malformed(tensors.bytes(), {"the tensor count: 1152921504606846976 tensor descriptions"});
    for (const std::uint32_t element : {type::uint8, type::uint64, type::string, type::array, type::boolean}) {
        GgufWriter array;
        array.entry_with("general.tags", type::array, [&](LittleEndianBytes& o) {
            o.u32(element);
            o.u64(two_to_60);
            o.u64(1);
        });
        const std::vector<std::uint8_t> bytes = array.bytes();
        CHECK(bytes.size() < 100);
        expect_malformed(bytes, {"metadata key 'general.tags' (array of 1152921504606846976", "cannot fit"});
    }
}

TEST_CASE("gguf malformed: llama.cpp #26318: general.alignment of the wrong type") {
    GgufWriter as_string = small_file();
    as_string.string("general.alignment", "32");
    expect_malformed(as_string.bytes(), {"metadata key 'general.alignment' is a string, expected a uint32"});
    GgufWriter as_u64 = small_file();
    as_u64.entry_with("general.alignment", type::uint64, [](LittleEndianBytes& o) { o.u64(32); });
    expect_malformed(as_u64.bytes(), {"'general.alignment' is a uint64, expected a uint32"});
    GgufWriter as_array = small_file();
    as_array.entry_with("general.alignment", type::array, [](LittleEndianBytes& o) {
        o.u32(type::uint32);
        o.u64(0);
    });
    expect_malformed(as_array.bytes(), {"is an array of uint32, expected a uint32"});
}

TEST_CASE("gguf malformed: general.alignment that is not a power of two, or that puts the data past the file") {
    for (const std::uint32_t alignment : {0u, 48u, 0xFFFFFFFFu}) {
        GgufWriter w = small_file();
        w.u32("general.alignment", alignment);
        expect_malformed(w.bytes(), {"'general.alignment' is", "expected a power of two"});
    }
    GgufWriter far = small_file();  // the allocator-size wrap: a valid alignment of 2^31, no file that large
    far.u32("general.alignment", 0x80000000u);
    expect_malformed(far.bytes(), {"the data section starts at byte 2147483648", "past the end of the file"});
}

TEST_CASE("gguf malformed: a tensor offset that is not a multiple of the alignment") {
    GgufWriter w;
    w.tensor("a", {4}, ggml::F32, filled(16));
    w.tensor("b", {4}, ggml::F32, filled(16), 48);
    expect_malformed(w.bytes(), {"tensor 'b': offset 48 is not a multiple of the alignment 32"});
}

TEST_CASE("gguf malformed: tensor bytes past the end of the file, and offsets that would wrap around") {
    std::vector<std::uint8_t> bytes = small_file().bytes();
    bytes.pop_back();
    expect_malformed(bytes, {"tensor 'w': bytes [0, 0 + 32) of the data section lie past its end (31 bytes"});
    GgufWriter far;
    far.tensor("w", {4}, ggml::F32, filled(16), std::uint64_t(1) << 40);
    expect_malformed(far.bytes(), {"tensor 'w': bytes [1099511627776, 1099511627776 + 16)", "lie past its end"});
    GgufWriter wrap;  // offset + size wraps past 2^64 to a small number
    wrap.tensor("w", {16}, ggml::F32, {}, std::uint64_t(0) - 32);
    expect_malformed(wrap.bytes(), {"tensor 'w': bytes [18446744073709551584, 18446744073709551584 + 64)"});
}

TEST_CASE("gguf malformed: tensors whose bytes overlap") {
    GgufWriter w;
    w.tensor("a", {16}, ggml::F32, filled(64));
    w.tensor("b", {8}, ggml::F32, filled(32), 32);
    expect_malformed(w.bytes(), {"tensor 'b': bytes [32, 64) of the data section overlap tensor 'a' at [0, 64)"});
    GgufWriter same;
    same.tensor("a", {8}, ggml::F32, filled(32));
    same.tensor("b", {8}, ggml::F32, filled(32), 0);
    expect_malformed(same.bytes(), {"overlap tensor 'a'"});
}

TEST_CASE("gguf malformed: two tensors of one name") {
    GgufWriter w;
    w.tensor("w", {8}, ggml::F32, filled(32));
    w.tensor("w", {8}, ggml::F32, filled(32));
    expect_malformed(w.bytes(), {"tensor 'w' at byte", "appears twice (tensor 0 has that name too)"});
}

TEST_CASE("gguf malformed: a metadata key given twice") {
    GgufWriter w = small_file();
    w.u32("general.architecture", 1);
    expect_malformed(w.bytes(), {"metadata key 'general.architecture' at byte", "appears twice"});
}

TEST_CASE("gguf malformed: unknown and unsupported ggml type ids") {
    GgufWriter unknown;
    unknown.tensor("w", {32}, ggml::first_unknown, filled(32));
    expect_malformed(unknown.bytes(), {"tensor 'w': ggml type id 43 is unknown"});
    GgufWriter huge;
    huge.tensor("w", {32}, 0xFFFFFFFF, filled(32));
    expect_malformed(huge.bytes(), {"ggml type id 4294967295 is unknown"});
    GgufWriter q3;
    q3.tensor("w", {256}, ggml::Q3_K, filled(110));
    expect_malformed(q3.bytes(), {"tensor 'w': ggml type Q3_K (11) is not supported"});
    GgufWriter removed;
    removed.tensor("w", {32}, ggml::Q4_2_removed, filled(32));
    expect_malformed(removed.bytes(), {"ggml type Q4_2 (removed from ggml) (4) is not supported"});
}

TEST_CASE("gguf malformed: unknown value types and array element types") {
    GgufWriter value;
    value.entry("k", 13, {0});
    expect_malformed(value.bytes(), {"metadata key 'k': value type 13", "is not a GGUF value type (0 to 12)"});
    GgufWriter element;
    element.entry_with("k", type::array, [](LittleEndianBytes& o) {
        o.u32(0x80000000u);
        o.u64(0);
    });
    expect_malformed(element.bytes(), {"metadata key 'k': array element type 2147483648"});
}

TEST_CASE("gguf malformed: arrays nested deeper than the limit") {
    auto nested = [](int depth) {
        LittleEndianBytes o;  // depth arrays, each holding the next, the innermost empty of uint8
        for (int level = 1; level < depth; ++level) {
            o.u32(type::array);
            o.u64(1);
        }
        o.u32(type::uint8);
        o.u64(0);
        GgufWriter w;
        w.entry("deep", type::array, o.bytes);
        return w.bytes();
    };
    CHECK(load(nested(3)).value("deep").array_at(0).array_at(0).array_size() == 0);
    expect_malformed(nested(4), {"metadata key 'deep'[0][0][0]: arrays nested 4 deep", "deeper than the limit of 3"});
    expect_malformed(nested(1000), {"arrays nested 4 deep"});
}

TEST_CASE("gguf malformed: keys and tensor names that are empty, too long or not UTF-8") {
    GgufWriter empty;
    empty.u32("", 1);
    expect_malformed(empty.bytes(), {"metadata key 0 at byte 24 is empty"});
    GgufWriter invalid;
    invalid.u32("general.\xC3(", 1);
    expect_malformed(invalid.bytes(), {"metadata key 0 'general.\\xc3(' is not valid UTF-8", "truncated"});
    GgufWriter overlong;
    overlong.u32("\xC0\xAF", 1);
    expect_malformed(overlong.bytes(), {"is not valid UTF-8"});
    GgufWriter long_key;
    long_key.u32(std::string(65536, 'k'), 1);
    expect_malformed(long_key.bytes(), {"metadata key 0", "is 65536 bytes long, more than 65535"});
    GgufWriter long_name;
    long_name.tensor(std::string(65, 'n'), {1}, ggml::F32, filled(4));
    expect_malformed(long_name.bytes(), {"tensor name 0", "is 65 bytes long, more than 64"});
    GgufWriter bad_name;
    bad_name.tensor("blk.\xFF", {1}, ggml::F32, filled(4));
    expect_malformed(bad_name.bytes(), {"tensor name 0 'blk.\\xff' is not valid UTF-8"});
    GgufWriter fine;  // UTF-8 beyond ASCII is a valid name
    fine.tensor("bl\xC3\xB6k", {1}, ggml::F32, filled(4));
    CHECK(load(fine.bytes()).has_tensor("bl\xC3\xB6k"));
}

TEST_CASE("gguf malformed: a bool byte other than 0 or 1") {
    GgufWriter scalar;
    scalar.entry("flag", type::boolean, {2});
    expect_malformed(scalar.bytes(), {"metadata key 'flag': bool byte at 40 is 2, expected 0 or 1"});
    GgufWriter array;
    array.entry_with("flags", type::array, [](LittleEndianBytes& o) {
        o.u32(type::boolean);
        o.u64(2);
        o.raw("\x01\xFF", 2);
    });
    expect_malformed(array.bytes(), {"metadata key 'flags'[1]: bool byte is 255"});
}

TEST_CASE("gguf malformed: the data section starts past the end of the file") {
    std::vector<std::uint8_t> bytes = small_file().bytes();
    GgufWriter w = small_file();
    (void)w.bytes();
    bytes.resize(w.header_bytes() + 1);  // the padding cut short, no data
    expect_malformed(bytes, {"the data section starts at byte", "past the end of the file"});
}

// ---------------------------------------------------------------------------
// Reading tensors: dequantization, the file changing under the reader

TEST_CASE("gguf dequantize: Q8_0 and Q4_0 blocks built by hand") {
    std::uint8_t q8[2 * 34] = {};
    put_half(q8, 0.5f);
    put_half(q8 + 34, -2.0f);
    for (int i = 0; i < 32; ++i) {
        q8[2 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(i - 16));
        q8[36 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(i % 2 ? 127 : -128));
    }
    float out[64];
    attn::dequantize_blocks(attn::GgmlType::Q8_0, q8, 2, out);
    for (int i = 0; i < 32; ++i) {
        CHECK(out[i] == 0.5f * static_cast<float>(i - 16));
        CHECK(out[32 + i] == (i % 2 ? -254.0f : 256.0f));
    }

    std::uint8_t q4[18] = {};
    put_half(q4, 0.25f);
    for (int j = 0; j < 16; ++j) q4[2 + j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    attn::dequantize_blocks(attn::GgmlType::Q4_0, q4, 1, out);
    for (int j = 0; j < 16; ++j) {
        CHECK(out[j] == 0.25f * static_cast<float>(j - 8));       // low nibble: value j
        CHECK(out[j + 16] == 0.25f * static_cast<float>(7 - j));  // high nibble: value j + 16
    }
}

TEST_CASE("gguf dequantize: Q4_1, Q5_0 and Q5_1 blocks built by hand") {
    // Q4_1: d, m, then Q4_0's nibbles: x = d·q + m
    std::uint8_t q4[20] = {};
    put_half(q4, 0.5f);
    put_half(q4 + 2, -3.0f);
    for (int j = 0; j < 16; ++j) q4[4 + j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    float out[32];
    attn::dequantize_blocks(attn::GgmlType::Q4_1, q4, 1, out);
    for (int j = 0; j < 16; ++j) {
        CHECK(out[j] == 0.5f * static_cast<float>(j) - 3.0f);            // low nibble: value j
        CHECK(out[j + 16] == 0.5f * static_cast<float>(15 - j) - 3.0f);  // high nibble: value j + 16
    }
    // Q5_0 and Q5_1: bit i of the little-endian uint32 qh is value i's fifth bit
    for (const bool with_min : {false, true}) {
        CAPTURE(with_min);
        std::vector<std::uint8_t> block(with_min ? 24 : 22, 0);
        put_half(block.data(), 0.25f);
        if (with_min) put_half(block.data() + 2, 1.5f);
        std::uint8_t* high = block.data() + (with_min ? 4 : 2);
        std::uint8_t* low = high + 4;
        float expected[32];
        for (int i = 0; i < 32; ++i) {
            const int code = (11 * i + 5) % 32;
            low[i % 16] |= static_cast<std::uint8_t>(i < 16 ? code & 15 : (code & 15) << 4);
            high[i / 8] |= static_cast<std::uint8_t>((code >> 4) << (i % 8));
            expected[i] = with_min ? 0.25f * static_cast<float>(code) + 1.5f : 0.25f * static_cast<float>(code - 16);
        }
        attn::dequantize_blocks(with_min ? attn::GgmlType::Q5_1 : attn::GgmlType::Q5_0, block.data(), 1, out);
        for (int i = 0; i < 32; ++i) {
            CAPTURE(i);
            CHECK(out[i] == expected[i]);
        }
    }
}

TEST_CASE("gguf dequantize: Q4_K and Q5_K blocks built by hand") {
    const int scale[8] = {1, 2, 3, 63, 10, 33, 47, 5};
    const int min[8] = {0, 1, 62, 7, 20, 63, 2, 40};
    for (const bool five_bits : {false, true}) {
        CAPTURE(five_bits);
        std::vector<std::uint8_t> block(five_bits ? 176 : 144, 0);
        put_half(block.data(), 1.0f);      // d
        put_half(block.data() + 2, 0.5f);  // dmin
        pack_k_scales(scale, min, block.data() + 4);
        std::uint8_t* high = five_bits ? block.data() + 16 : nullptr;
        std::uint8_t* low = block.data() + (five_bits ? 48 : 16);
        float expected[256];
        for (int s = 0; s < 8; ++s) {
            for (int l = 0; l < 32; ++l) {
                int q = (7 * s + l) % 16;
                low[32 * (s / 2) + l] |= static_cast<std::uint8_t>(s % 2 ? q << 4 : q);
                if (five_bits && (l + s) % 3 == 0) {
                    high[l] |= static_cast<std::uint8_t>(1 << s);
                    q += 16;
                }
                expected[32 * s + l] = 1.0f * static_cast<float>(scale[s] * q) - 0.5f * static_cast<float>(min[s]);
            }
        }
        float out[256];
        attn::dequantize_blocks(five_bits ? attn::GgmlType::Q5_K : attn::GgmlType::Q4_K, block.data(), 1, out);
        for (int i = 0; i < 256; ++i) {
            CAPTURE(i);
            CHECK(out[i] == expected[i]);
        }
    }
}

TEST_CASE("gguf dequantize: a Q6_K block built by hand") {
    std::uint8_t block[210] = {};
    std::uint8_t* low = block;
    std::uint8_t* high = block + 128;
    auto* scales = block + 192;
    const std::int8_t scale[16] = {1, -1, 2, -2, 3, 5, -7, 11, 127, -128, 0, 4, 9, -9, 64, -64};
    std::memcpy(scales, scale, 16);
    put_half(block + 208, 0.125f);
    float expected[256];
    for (int e = 0; e < 256; ++e) {
        const int code = (5 * e + 3) % 64;  // the stored 6-bit code, for the value code − 32
        const int half = e / 128, k = (e % 128) / 32, l = e % 32;
        low[64 * half + l + 32 * (k % 2)] |= static_cast<std::uint8_t>(k < 2 ? code & 15 : (code & 15) << 4);
        high[32 * half + l] |= static_cast<std::uint8_t>((code >> 4) << (2 * k));
        expected[e] = 0.125f * static_cast<float>(scale[e / 16] * (code - 32));
    }
    float out[256];
    attn::dequantize_blocks(attn::GgmlType::Q6_K, block, 1, out);
    for (int i = 0; i < 256; ++i) {
        CAPTURE(i);
        CHECK(out[i] == expected[i]);
    }
}

TEST_CASE("gguf dequantize: gguf-py's blocks give gguf-py's values (tests/data/gguf)") {
    const std::pair<const char*, attn::GgmlType> files[] = {
        {"q8_0.txt", attn::GgmlType::Q8_0}, {"q4_0.txt", attn::GgmlType::Q4_0}, {"q4_1.txt", attn::GgmlType::Q4_1},
        {"q5_0.txt", attn::GgmlType::Q5_0}, {"q5_1.txt", attn::GgmlType::Q5_1}, {"q4_k.txt", attn::GgmlType::Q4_K},
        {"q5_k.txt", attn::GgmlType::Q5_K}, {"q6_k.txt", attn::GgmlType::Q6_K}};
    for (const auto& [file_name, ggml_type] : files) {
        const std::string name = file_name;
        CAPTURE(name);
        const Golden g = read_golden(file_name);
        CHECK(g.type == attn::ggml_type_name(ggml_type));
        REQUIRE(g.bytes.size() == g.blocks * attn::ggml_block_bytes(ggml_type));
        REQUIRE(g.values.size() == g.blocks * attn::ggml_block_values(ggml_type));
        std::vector<float> out(g.values.size());
        attn::dequantize_blocks(ggml_type, g.bytes.data(), g.blocks, out.data());
        for (std::size_t i = 0; i < out.size(); ++i) {
            CAPTURE(i);
            // The same float operations in the same order; a compiler may fuse a multiply and
            // a subtraction (FMA), which moves the last bit.
            CHECK(std::abs(out[i] - g.values[i]) <= 1e-6f * (1.0f + std::abs(g.values[i])));
        }

        // Through a file: a tensor of those blocks, read and dequantized from disk.
        GgufWriter w;
        w.tensor("t", {g.values.size()}, static_cast<std::uint32_t>(ggml_type), g.bytes);
        TempDir dir;
        write_file(dir.path / "q.gguf", w.bytes());
        CHECK(attn::GgufFile::open(dir.path / "q.gguf").dequantize("t") == out);
    }
}

TEST_CASE("gguf dequantize: F32, F16 and BF16 tensors widen exactly") {
    LittleEndianBytes f32, f16, bf16;
    for (const float v : {1.5f, -0.0f, 3e-39f}) f32.f32(v);
    for (const std::uint16_t h : {0x3C00, 0xC000, 0x0001}) f16.u16(h);   // 1, -2, 2^-24
    for (const std::uint16_t b : {0x3F80, 0xC0A0, 0x0001}) bf16.u16(b);  // 1, -5, the smallest subnormal
    GgufWriter w;
    w.tensor("f32", {3}, ggml::F32, f32.bytes);
    w.tensor("f16", {3}, ggml::F16, f16.bytes);
    w.tensor("bf16", {3}, ggml::BF16, bf16.bytes);
    TempDir dir;
    write_file(dir.path / "f.gguf", w.bytes());
    const attn::GgufFile f = attn::GgufFile::open(dir.path / "f.gguf");
    CHECK(f.dequantize("f32") == std::vector<float>{1.5f, -0.0f, 3e-39f});
    CHECK(f.dequantize("f16") == std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24)});
    CHECK(f.dequantize("bf16") == std::vector<float>{1.0f, -5.0f, std::ldexp(1.0f, -133)});
}

TEST_CASE("gguf: a file that changed after open is an io_error when its tensors are read") {
    TempDir dir;
    const fs::path path = dir.path / "m.gguf";
    const std::vector<std::uint8_t> bytes = small_file().bytes();
    write_file(path, bytes);
    const attn::GgufFile f = attn::GgufFile::open(path);
    std::vector<std::uint8_t> shorter(bytes.begin(), bytes.end() - 8);
    write_file(path, shorter);
    const std::string what = attn::test::thrown_message<attn::io_error>([&] { (void)f.tensor_bytes("w"); });
    CHECK(attn::test::contains(what, "tensor 'w'"));
    CHECK(attn::test::contains(what, "changed after it was opened"));
}
