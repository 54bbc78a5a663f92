// Tests of attn/formats/safetensors.hpp: round trips through the writer, exact F16/BF16
// conversion, one test case per kind of corrupt file, and reading tensor by tensor from
// an opened file (transposed, into blocks, from several threads, after the file changed).

#include <attn/detail/io/read_only_file.hpp>
#include <attn/formats/safetensors.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace fs = std::filesystem;

using attn::test::contains;
using attn::test::thrown_format_error;

namespace {

/// A fresh directory under the system temporary directory, removed afterwards.
using attn::test::TempDir;

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

/// 8-byte length (the header's own unless `length` is given), header, data.
std::vector<std::uint8_t> raw_file(const std::string& header, const std::vector<std::uint8_t>& data,
                                   std::uint64_t length) {
    std::vector<std::uint8_t> out;  // built by push_back: gcc 12 -O3 misreads insert-after-sized (-Warray-bounds)
    out.reserve(8 + header.size() + data.size());
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}
std::vector<std::uint8_t> raw_file(const std::string& header, const std::vector<std::uint8_t>& data) {
    return raw_file(header, data, header.size());
}

std::vector<std::uint8_t> zeros(std::size_t n) {
    return std::vector<std::uint8_t>(n, 0);
}

/// Writes `bytes` to <temp>/<file_name>, opens it, and checks that a format_error
/// is thrown whose message names the file and contains every needle.
void expect_format_error(const std::string& file_name, const std::vector<std::uint8_t>& bytes,
                         std::initializer_list<const char*> needles) {
    TempDir dir;
    const fs::path path = dir.path / file_name;
    write_bytes(path, bytes);
    std::string what;
    try {
        (void)attn::SafeTensors::open(path);
        FAIL("no exception for " << file_name);
    } catch (const attn::format_error& e) {
        what = e.what();
    }
    INFO("message: " << what);
    CHECK(what.find(path.string()) != std::string::npos);
    for (const char* needle : needles) CHECK_MESSAGE(what.find(needle) != std::string::npos, "missing: " << needle);
}

attn::SafeTensorsEntry raw_entry(std::string name, attn::DType dtype, std::vector<std::int64_t> shape,
                                 const std::vector<std::uint16_t>& halves) {
    attn::SafeTensorsEntry e{std::move(name), dtype, std::move(shape), std::vector<std::uint8_t>(halves.size() * 2)};
    std::memcpy(e.bytes.data(), halves.data(), e.bytes.size());
    return e;
}

}  // namespace

// ---------------------------------------------------------------------------
// Valid files

TEST_CASE("safetensors: F32 and F64 round trip through write_safetensors and open") {
    TempDir dir;
    const fs::path path = dir.path / "model.safetensors";
    attn::Matrix<float> w(2, 3);
    w << 1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f;
    attn::Vector<double> b(4);
    b << 0.1, -0.2, 1e300, -0.0;
    const std::vector<float> cube{1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<std::int64_t> steps{-3, 0, 9007199254740993};
    attn::write_safetensors(
        path,
        {attn::safetensors_entry("layer.w", w), attn::safetensors_entry("layer.b", b),
         attn::safetensors_entry("cube", {2, 2, 2}, cube), attn::safetensors_entry("steps", {3}, steps),
         attn::safetensors_entry("scalar", {}, std::vector<double>{42.0})},
        {{"format", "pt"}, {"note", "unit test"}});

    const auto file = attn::SafeTensors::open(path);
    CHECK(file.source() == path.string());
    CHECK(file.size() == 5);
    CHECK(file.names() == std::vector<std::string>{"cube", "layer.b", "layer.w", "scalar", "steps"});
    CHECK(file.contains("layer.w"));
    CHECK_FALSE(file.contains("layer"));
    CHECK(file.metadata().at("format") == "pt");
    CHECK(file.metadata().at("note") == "unit test");

    const auto& info = file.info("layer.w");
    CHECK(info.dtype == attn::DType::F32);
    CHECK(info.shape == std::vector<std::int64_t>{2, 3});
    CHECK(info.end - info.begin == 24);
    CHECK(info.elements() == 6);

    CHECK(file.matrix<float>("layer.w") == w);
    CHECK(file.matrix<double>("layer.w") == w.cast<double>());
    CHECK(file.vector<double>("layer.b") == b);
    const attn::Vector<float> bf = file.vector<float>("layer.b");
    CHECK(bf(0) == 0.1f);
    CHECK(std::isinf(bf(2)));  // 1e300 is beyond float's range
    CHECK(std::signbit(bf(3)));

    const auto t = file.tensor<float>("cube");
    CHECK(t.shape == std::vector<std::int64_t>{2, 2, 2});
    CHECK(t.values == cube);
    CHECK(file.integers("steps") == steps);
    const auto s = file.tensor<double>("scalar");
    CHECK(s.shape.empty());
    CHECK(s.values == std::vector<double>{42.0});

    const std::vector<std::uint8_t> bytes = file.raw("layer.w");
    REQUIRE(bytes.size() == 24);
    float first;
    std::memcpy(&first, bytes.data(), 4);
    CHECK(first == 1.5f);
}

TEST_CASE("safetensors: F16 converts exactly, subnormals, infinities and NaN included") {
    const std::vector<std::uint16_t> halves{
        0x3C00,  // 1
        0xC000,  // -2
        0x3555,  // 0.333251953125
        0x0001,  // smallest subnormal 2^-24
        0x03FF,  // largest subnormal 1023 × 2^-24
        0x0400,  // smallest normal 2^-14
        0x7BFF,  // largest finite 65504
        0x8000,  // -0
        0x7C00,  // +inf
        0xFC00,  // -inf
        0x7E00,  // NaN
        0x8001,  // -2^-24
    };
    const auto bytes = attn::safetensors_bytes({raw_entry("h", attn::DType::F16, {2, 6}, halves)}, {{"dtype", "half"}});
    const auto file = attn::SafeTensors::from_bytes(bytes, "half.safetensors");
    const std::vector<attn::Matrix<double>> both{file.matrix<double>("h"), file.matrix<float>("h").cast<double>()};
    for (const auto& m : both) {
        CHECK(m(0, 0) == 1.0);
        CHECK(m(0, 1) == -2.0);
        CHECK(m(0, 2) == 0.333251953125);
        CHECK(m(0, 3) == std::ldexp(1.0, -24));
        CHECK(m(0, 4) == 1023 * std::ldexp(1.0, -24));
        CHECK(m(0, 5) == std::ldexp(1.0, -14));
        CHECK(m(1, 0) == 65504.0);
        CHECK(m(1, 1) == 0.0);
        CHECK(std::signbit(m(1, 1)));
        CHECK(m(1, 2) == std::numeric_limits<double>::infinity());
        CHECK(m(1, 3) == -std::numeric_limits<double>::infinity());
        CHECK(std::isnan(m(1, 4)));
        CHECK(m(1, 5) == -std::ldexp(1.0, -24));
    }
}

TEST_CASE("safetensors: BF16 converts exactly") {
    const std::vector<std::uint16_t> values{0x3F80, 0xC049, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x7F7F, 0x8000};
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({raw_entry("b", attn::DType::BF16, {8}, values)}), "bf16.safetensors");
    const attn::Vector<double> v = file.vector<double>("b");
    CHECK(v(0) == 1.0);
    CHECK(v(1) == -3.140625);
    CHECK(v(2) == std::ldexp(1.0, -133));  // subnormal
    CHECK(v(3) == std::numeric_limits<double>::infinity());
    CHECK(v(4) == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(v(5)));
    CHECK(v(6) == static_cast<double>(0x1.FEp127f));
    CHECK(std::signbit(v(7)));
    const attn::Vector<float> f = file.vector<float>("b");
    for (attn::Index i = 0; i < v.size(); ++i)
        if (!std::isnan(v(i))) CHECK(static_cast<double>(f(i)) == v(i));
    CHECK(std::isnan(f(5)));
}

TEST_CASE("safetensors: F64 to float rounds to nearest and overflows to infinity") {
    const std::vector<double> values{0.1,
                                     3.4028235e38 /* above FLT_MAX, below the halfway point */,
                                     3.5e38,
                                     -1e39,
                                     std::numeric_limits<double>::quiet_NaN(),
                                     1e-50};
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("d", {6}, values)}), "f64.safetensors");
    const attn::Vector<float> v = file.vector<float>("d");
    CHECK(v(0) == 0.1f);
    CHECK(v(1) == std::numeric_limits<float>::max());
    CHECK(v(2) == std::numeric_limits<float>::infinity());
    CHECK(v(3) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(v(4)));
    CHECK(v(5) == 0.0f);
}

TEST_CASE("safetensors: integer dtypes read as int64") {
    auto entry = [](std::string name, attn::DType dtype, std::vector<std::int64_t> shape,
                    std::vector<std::uint8_t> bytes) {
        return attn::SafeTensorsEntry{std::move(name), dtype, std::move(shape), std::move(bytes)};
    };
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({
            attn::safetensors_entry("i32", {2}, std::vector<std::int32_t>{-5, 2147483647}),
            entry("u8", attn::DType::U8, {3}, {0, 128, 255}),
            entry("i8", attn::DType::I8, {2}, {0x80, 0x7F}),
            entry("bool", attn::DType::BOOL, {3}, {0, 1, 2}),
            entry("i16", attn::DType::I16, {1}, {0x00, 0x80}),
            entry("u64", attn::DType::U64, {1}, {0, 0, 0, 0, 0, 0, 0, 0x80}),
        }),
        "ints.safetensors");
    CHECK(file.integers("i32") == std::vector<std::int64_t>{-5, 2147483647});
    CHECK(file.integers("u8") == std::vector<std::int64_t>{0, 128, 255});
    CHECK(file.integers("i8") == std::vector<std::int64_t>{-128, 127});
    CHECK(file.integers("bool") == std::vector<std::int64_t>{0, 1, 1});
    CHECK(file.integers("i16") == std::vector<std::int64_t>{-32768});
    const std::string what = thrown_format_error([&] { (void)file.integers("u64"); });
    CHECK(contains(what, "ints.safetensors"));
    CHECK(contains(what, "'u64'"));
}

TEST_CASE("safetensors: empty file, zero-size tensors and space-padded headers are valid") {
    const auto empty = attn::SafeTensors::from_bytes(raw_file("{}", {}), "empty.safetensors");
    CHECK(empty.size() == 0);
    CHECK(empty.names().empty());
    CHECK(empty.metadata().empty());

    const auto padded =
        attn::SafeTensors::from_bytes(raw_file(R"({"z":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
                                               R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                               R"("__metadata__":{}}        )",
                                               zeros(4)),
                                      "padded.safetensors");
    CHECK(padded.names() == std::vector<std::string>{"x", "z"});
    const attn::Matrix<float> z = padded.matrix<float>("z");
    CHECK(z.rows() == 0);
    CHECK(z.cols() == 3);
    CHECK(padded.vector<float>("x")(0) == 0.0f);
}

TEST_CASE("safetensors: the writer refuses duplicate names and mismatched byte counts") {
    const auto a = attn::safetensors_entry("a", {1}, std::vector<float>{1});
    CHECK_THROWS_AS((void)attn::safetensors_bytes({a, a}), attn::argument_error);
    CHECK_THROWS_AS((void)attn::safetensors_entry("b", {2}, std::vector<float>{1}), attn::argument_error);
    CHECK_THROWS_AS((void)attn::safetensors_bytes({attn::SafeTensorsEntry{"c", attn::DType::F32, {2}, zeros(4)}}),
                    attn::argument_error);
    CHECK_THROWS_AS(
        (void)attn::safetensors_bytes({attn::safetensors_entry("__metadata__", {1}, std::vector<float>{1})}),
        attn::argument_error);
}

// ---------------------------------------------------------------------------
// Corrupt files: one case each

TEST_CASE("safetensors corrupt: file shorter than 8 bytes") {
    expect_format_error("short.safetensors", {1, 0, 0, 0, 0}, {"5 bytes", "8-byte"});
}

TEST_CASE("safetensors corrupt: truncated file (data cut short)") {
    auto bytes = attn::safetensors_bytes({attn::safetensors_entry("a", {2}, std::vector<float>{1, 2}),
                                          attn::safetensors_entry("weights", {4}, std::vector<float>{1, 2, 3, 4})});
    bytes.resize(bytes.size() - 3);
    expect_format_error("truncated.safetensors", bytes, {"'weights'", "[8, 24]", "21 bytes", "truncated"});
}

TEST_CASE("safetensors corrupt: header length past the end of the file") {
    expect_format_error("past_eof.safetensors", raw_file("{}", {}, 100), {"header length 100", "10 bytes"});
}

TEST_CASE("safetensors corrupt: huge header length (2^63)") {
    expect_format_error("huge.safetensors", raw_file("{}", {}, std::uint64_t(1) << 63),
                        {"header length 9223372036854775808"});
}

TEST_CASE("safetensors corrupt: header length above the 100 MB limit") {
    // A sparse-looking length that fits the (fake) in-memory file is still refused.
    const std::uint64_t length = attn::SafeTensors::max_header_bytes + 1;
    std::vector<std::uint8_t> bytes(8 + static_cast<std::size_t>(length), ' ');
    for (int i = 0; i < 8; ++i) bytes[std::size_t(i)] = static_cast<std::uint8_t>(length >> (8 * i));
    const std::string what =
        thrown_format_error([&] { (void)attn::SafeTensors::from_bytes(std::move(bytes), "big.safetensors"); });
    CHECK(contains(what, "big.safetensors"));
    CHECK(contains(what, "100000001"));
    CHECK(contains(what, "limit"));
}

TEST_CASE("safetensors corrupt: header is not JSON") {
    expect_format_error("not_json.safetensors", raw_file(R"({"a": {"dtype": "F32", )", {}), {"not valid JSON"});
}

TEST_CASE("safetensors corrupt: header is a JSON array") {
    expect_format_error("array.safetensors", raw_file("[1, 2]", {}), {"array", "expected a JSON object"});
}

TEST_CASE("safetensors corrupt: invalid UTF-8 in the header") {
    const std::string header = "{\"a\xC3(\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    expect_format_error("utf8.safetensors", raw_file(header, zeros(4)), {"UTF-8", "header byte 3"});
    std::string overlong = "{\"\xC0\xAF\":{}}";
    expect_format_error("overlong.safetensors", raw_file(overlong, {}), {"UTF-8"});
}

TEST_CASE("safetensors corrupt: unknown dtype") {
    expect_format_error("dtype.safetensors",
                        raw_file(R"({"emb":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", zeros(16)),
                        {"'emb'", "unknown dtype 'F128'"});
}

TEST_CASE("safetensors corrupt: missing field") {
    expect_format_error("missing.safetensors", raw_file(R"({"emb":{"dtype":"F32","shape":[1]}})", zeros(4)),
                        {"'emb'", "missing field 'data_offsets'"});
}

TEST_CASE("safetensors corrupt: unexpected extra field") {
    expect_format_error("extra.safetensors",
                        raw_file(R"({"emb":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"order":"C"}})", zeros(4)),
                        {"'emb'", "unexpected field 'order'"});
}

TEST_CASE("safetensors corrupt: field of the wrong JSON type") {
    expect_format_error("types.safetensors",
                        raw_file(R"({"emb":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", zeros(4)),
                        {"'emb'", "dtype is a JSON number"});
    expect_format_error("offsets.safetensors",
                        raw_file(R"({"emb":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", zeros(4)),
                        {"'emb'", "data_offsets", "3 values"});
    expect_format_error("entry.safetensors", raw_file(R"({"emb":"F32"})", {}), {"'emb'", "entry is a JSON string"});
}

TEST_CASE("safetensors corrupt: shape does not match the byte size") {
    expect_format_error("mismatch.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", zeros(20)),
                        {"'w'", "[2, 3]", "needs 24 bytes", "hold 20"});
}

TEST_CASE("safetensors corrupt: shape whose byte size overflows") {
    expect_format_error("overflow.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", {}),
                        {"'w'", "2^64"});
}

TEST_CASE("safetensors corrupt: offsets out of range") {
    expect_format_error("range.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", zeros(8)),
                        {"'w'", "[4, 12]", "8 bytes"});
}

TEST_CASE("safetensors corrupt: begin after end") {
    expect_format_error("reversed.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", zeros(8)),
                        {"'w'", "begin > end"});
}

TEST_CASE("safetensors corrupt: overlapping tensors") {
    expect_format_error("overlap.safetensors",
                        raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 zeros(12)),
                        {"'b'", "overlap", "'a'"});
}

TEST_CASE("safetensors corrupt: gap between tensors") {
    expect_format_error("gap.safetensors",
                        raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                 zeros(12)),
                        {"'b'", "gap", "expected begin 4", "got 8"});
}

TEST_CASE("safetensors corrupt: unclaimed bytes after the last tensor") {
    expect_format_error("tail.safetensors",
                        raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", zeros(6)),
                        {"cover 4 bytes", "6-byte"});
}

TEST_CASE("safetensors corrupt: duplicate tensor names") {
    expect_format_error("duplicate.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                 zeros(8)),
                        {"duplicate key 'w'", "same name"});
}

TEST_CASE("safetensors corrupt: duplicate field inside an entry") {
    expect_format_error("duplicate_field.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})", zeros(4)),
                        {"duplicate key 'dtype'"});
}

TEST_CASE("safetensors corrupt: metadata value that is not a string") {
    expect_format_error("metadata.safetensors", raw_file(R"({"__metadata__":{"epoch":3}})", {}),
                        {"__metadata__", "'epoch'", "number", "expected a string"});
    expect_format_error("metadata_list.safetensors", raw_file(R"({"__metadata__":["a"]})", {}),
                        {"__metadata__", "array"});
}

TEST_CASE("safetensors corrupt: negative shape") {
    expect_format_error("negative.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,0]}})", {}),
                        {"'w'", "shape[0] = -1"});
}

TEST_CASE("safetensors corrupt: non-integer shape") {
    expect_format_error("fraction.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", zeros(4)),
                        {"'w'", "shape[0]", "non-negative integer"});
    expect_format_error("string_dim.safetensors",
                        raw_file(R"({"w":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", zeros(4)),
                        {"'w'", "shape[0] is a string"});
}

TEST_CASE("safetensors corrupt: nesting deeper than any valid header") {
    expect_format_error("deep.safetensors", raw_file(R"({"w":{"shape":[[[1]]]}})", {}), {"nested deeper"});
}

// ---------------------------------------------------------------------------
// Requests a valid file cannot satisfy

TEST_CASE("safetensors: missing tensor requested") {
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("a", {1}, std::vector<float>{1})}), "small.safetensors");
    for (const std::string& what : {thrown_format_error([&] { (void)file.matrix<float>("decoder.w"); }),
                                    thrown_format_error([&] { (void)file.info("decoder.w"); }),
                                    thrown_format_error([&] { (void)file.integers("decoder.w"); })}) {
        CHECK(contains(what, "small.safetensors"));
        CHECK(contains(what, "'decoder.w'"));
    }
}

TEST_CASE("safetensors: wrong rank requested") {
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("bias", {3}, std::vector<float>{1, 2, 3}),
                                 attn::safetensors_entry("w", {1, 3}, std::vector<float>{1, 2, 3})}),
        "rank.safetensors");
    std::string what = thrown_format_error([&] { (void)file.matrix<float>("bias"); });
    CHECK(contains(what, "rank.safetensors"));
    CHECK(contains(what, "'bias'"));
    CHECK(contains(what, "rank 1"));
    CHECK(contains(what, "expected rank 2"));
    what = thrown_format_error([&] { (void)file.vector<double>("w"); });
    CHECK(contains(what, "'w'"));
    CHECK(contains(what, "[1, 3]"));
}

TEST_CASE("safetensors: wrong dtype requested") {
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("ids", {2}, std::vector<std::int64_t>{1, 2}),
                                 attn::safetensors_entry("w", {2}, std::vector<float>{1, 2})}),
        "dtype.safetensors");
    std::string what = thrown_format_error([&] { (void)file.vector<float>("ids"); });
    CHECK(contains(what, "dtype.safetensors"));
    CHECK(contains(what, "'ids'"));
    CHECK(contains(what, "I64"));
    what = thrown_format_error([&] { (void)file.integers("w"); });
    CHECK(contains(what, "'w'"));
    CHECK(contains(what, "F32"));
}

TEST_CASE("safetensors: nonexistent file") {
    TempDir dir;
    const fs::path path = dir.path / "no_such_model.safetensors";
    std::string what;
    try {
        (void)attn::SafeTensors::open(path);
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, path.string()));
    CHECK_THROWS_AS((void)attn::SafeTensors::open(dir.path), attn::io_error);  // a directory
}

// ---------------------------------------------------------------------------
// Reading tensor by tensor from an opened file

namespace {

/// F16 bits → double, from the IEEE binary16 definition (independent of the reader's bit tricks).
double half_reference(std::uint16_t bits) {
    const int sign = bits >> 15, exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
    return sign ? -magnitude : magnitude;
}

/// BF16 bits → double: 8 exponent bits (bias 127), 7 mantissa bits.
double bfloat16_reference(std::uint16_t bits) {
    const int sign = bits >> 15, exponent = (bits >> 7) & 0xFF, mantissa = bits & 0x7F;
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -133) : std::ldexp(128 + mantissa, exponent - 134);
    return sign ? -magnitude : magnitude;
}

/// A rank-2 tensor of `dtype` with random finite values, and those values in double.
struct Sample {
    attn::SafeTensorsEntry entry;
    attn::Matrix<double> values;  // (rows × cols), exactly representable in float unless F64
};

Sample random_sample(const std::string& name, attn::DType dtype, attn::Index rows, attn::Index cols, unsigned seed) {
    std::mt19937 engine(seed);
    Sample s{{name, dtype, {rows, cols}, {}}, attn::Matrix<double>(rows, cols)};
    const std::size_t width = attn::dtype_size(dtype);
    s.entry.bytes.resize(static_cast<std::size_t>(rows * cols) * width);
    std::uniform_real_distribution<double> uniform(-4.0, 4.0);
    for (attn::Index i = 0; i < rows; ++i)
        for (attn::Index j = 0; j < cols; ++j) {
            std::uint8_t* at = s.entry.bytes.data() + static_cast<std::size_t>(i * cols + j) * width;
            double value = 0;
            if (dtype == attn::DType::F16 || dtype == attn::DType::BF16) {
                std::uint16_t bits;
                do {  // any finite bit pattern, subnormals included
                    bits = static_cast<std::uint16_t>(engine());
                } while (dtype == attn::DType::F16 ? (bits & 0x7C00) == 0x7C00 : (bits & 0x7F80) == 0x7F80);
                std::memcpy(at, &bits, 2);
                value = dtype == attn::DType::F16 ? half_reference(bits) : bfloat16_reference(bits);
            } else if (dtype == attn::DType::F32) {
                const auto f = static_cast<float>(uniform(engine));
                std::memcpy(at, &f, 4);
                value = f;
            } else {
                value = uniform(engine);
                std::memcpy(at, &value, 8);
            }
            s.values(i, j) = value;
        }
    return s;
}

/// Every element of `got` equals `expected` (converted to the result's type, as the reader rounds).
template <class T, class D>
bool equal_to_reference(const Eigen::MatrixBase<D>& got, const attn::Matrix<double>& expected) {
    if (got.rows() != expected.rows() || got.cols() != expected.cols()) return false;
    for (attn::Index i = 0; i < got.rows(); ++i)
        for (attn::Index j = 0; j < got.cols(); ++j)
            if (got(i, j) != static_cast<T>(expected(i, j))) return false;
    return true;
}

template <class T>
void check_every_read(const attn::SafeTensors& file, const std::vector<Sample>& samples) {
    for (const Sample& s : samples) {
        const std::string& name = s.entry.name;
        INFO(file.source() << " tensor " << name << " (" << attn::dtype_name(s.entry.dtype) << ") as "
                           << (sizeof(T) == 4 ? "float" : "double"));
        CHECK(equal_to_reference<T>(file.matrix<T>(name), s.values));
        const attn::Matrix<double> transposed = s.values.transpose();
        CHECK(equal_to_reference<T>(file.transposed_matrix<T>(name), transposed));

        // Into the middle of a wider matrix, whose other columns stay as they were.
        const attn::Index rows = s.values.rows(), cols = s.values.cols();
        attn::Matrix<T> fused = attn::Matrix<T>::Constant(rows, cols + 3, T(7));
        file.read_matrix_into(name, fused.middleCols(2, cols));
        CHECK(equal_to_reference<T>(fused.middleCols(2, cols), s.values));
        CHECK((fused.leftCols(2).array() == T(7)).all());
        CHECK((fused.rightCols(1).array() == T(7)).all());
        attn::Matrix<T> fused_t = attn::Matrix<T>::Constant(cols + 1, rows + 2, T(7));
        file.read_matrix_into<T>(name, fused_t.block(1, 1, cols, rows), true);
        CHECK(equal_to_reference<T>(fused_t.block(1, 1, cols, rows), transposed));
        CHECK((fused_t.row(0).array() == T(7)).all());
        CHECK((fused_t.col(0).array() == T(7)).all());
        CHECK((fused_t.col(rows + 1).array() == T(7)).all());
    }
}

}  // namespace

TEST_CASE("safetensors: an opened file reads each dtype, plain, transposed and into blocks, as the reference says") {
    // Shapes chosen around chunk_elements (2^18): several chunks of whole rows, a last
    // partial chunk, rows longer than a chunk, and a small matrix.
    static_assert(attn::SafeTensors::chunk_elements == 262144, "the shapes below assume 2^18-element chunks");
    std::vector<Sample> samples;
    unsigned seed = 1;
    for (attn::DType dtype : {attn::DType::F32, attn::DType::F16, attn::DType::BF16, attn::DType::F64}) {
        const std::string d = attn::dtype_name(dtype);
        samples.push_back(random_sample(d + ".chunks", dtype, 700, 900, seed++));
        samples.push_back(random_sample(d + ".long_rows", dtype, 2, 300001, seed++));
        samples.push_back(random_sample(d + ".small", dtype, 3, 5, seed++));
    }
    std::vector<attn::SafeTensorsEntry> entries;
    for (const Sample& s : samples) entries.push_back(s.entry);
    TempDir dir;
    const fs::path path = dir.path / "dtypes.safetensors";
    attn::write_safetensors(path, entries);

    const auto opened = attn::SafeTensors::open(path);
    const auto in_memory = attn::SafeTensors::from_bytes(attn::safetensors_bytes(entries), "in memory");
    for (const attn::SafeTensors* file : {&opened, &in_memory}) {
        check_every_read<float>(*file, samples);
        check_every_read<double>(*file, samples);
    }
    // vector and tensor read through the same path; one F16 row of the long matrix as a check.
    CHECK(opened.tensor<double>("F16.long_rows").values.size() == 600002);
    CHECK(opened.tensor<double>("F16.long_rows").values[300001] == samples[4].values(1, 0));
}

TEST_CASE("safetensors: read_matrix_into refuses a destination of another shape, naming the tensor") {
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("attn.c_proj.weight", {2, 3}, std::vector<float>(6, 1.0f))}),
        "shape.safetensors");
    attn::Matrix<float> fused(3, 8);
    std::string what = thrown_format_error([&] { file.read_matrix_into("attn.c_proj.weight", fused.leftCols(2)); });
    CHECK(contains(what, "shape.safetensors"));
    CHECK(contains(what, "'attn.c_proj.weight'"));
    CHECK(contains(what, "[2, 3]"));
    CHECK(contains(what, "(2 × 3)"));
    CHECK(contains(what, "(3 × 2)"));
    // Transposed, (3 × 2) fits (3 × 2) but not (2 × 3).
    attn::Matrix<float> wide = attn::Matrix<float>::Zero(2, 3);
    what = thrown_format_error([&] { file.read_matrix_into("attn.c_proj.weight", wide, true); });
    CHECK(contains(what, "transposed as (3 × 2)"));
    CHECK(contains(what, "(2 × 3)"));
    CHECK((wide.array() == 0.0f).all());  // nothing written
    file.read_matrix_into("attn.c_proj.weight", fused.leftCols(2), true);
    CHECK((fused.leftCols(2).array() == 1.0f).all());
}

TEST_CASE("safetensors: transposed and block reads refuse tensors that are not floating matrices") {
    const auto file = attn::SafeTensors::from_bytes(
        attn::safetensors_bytes({attn::safetensors_entry("bias", {3}, std::vector<float>{1, 2, 3}),
                                 attn::safetensors_entry("ids", {1, 2}, std::vector<std::int64_t>{1, 2})}),
        "kinds.safetensors");
    attn::Matrix<double> out(3, 1);
    for (const std::string& what : {thrown_format_error([&] { (void)file.transposed_matrix<float>("bias"); }),
                                    thrown_format_error([&] { file.read_matrix_into("bias", out); })}) {
        CHECK(contains(what, "kinds.safetensors"));
        CHECK(contains(what, "'bias'"));
        CHECK(contains(what, "expected rank 2"));
    }
    attn::Matrix<double> pair(2, 1);
    for (const std::string& what : {thrown_format_error([&] { (void)file.transposed_matrix<double>("ids"); }),
                                    thrown_format_error([&] { file.read_matrix_into("ids", pair, true); })}) {
        CHECK(contains(what, "'ids'"));
        CHECK(contains(what, "I64"));
        CHECK(contains(what, "floating"));
    }
    CHECK(contains(thrown_format_error([&] { (void)file.transposed_matrix<float>("nothing"); }), "'nothing'"));
}

TEST_CASE("safetensors: open reads the header only (a 1 GiB sparse file opens and its small tensor reads)") {
    TempDir dir;
    const fs::path path = dir.path / "sparse.safetensors";
    const std::uint64_t huge_bytes = std::uint64_t(1) << 30;
    const std::string header = R"({"small":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("huge":{"dtype":"F32","shape":[268435456],"data_offsets":[8,)" +
                               std::to_string(8 + huge_bytes) + "]}}";
    std::vector<std::uint8_t> small(8);
    const float values[2] = {1.25f, -3.0f};
    std::memcpy(small.data(), values, 8);
    write_bytes(path, raw_file(header, small));
    fs::resize_file(path, 8 + header.size() + 8 + huge_bytes);  // a hole: no disk space, zeros when read

    const auto file = attn::SafeTensors::open(path);
    CHECK(file.info("huge").elements() == 268435456);
    const attn::Vector<float> v = file.vector<float>("small");
    CHECK(v(0) == 1.25f);
    CHECK(v(1) == -3.0f);
}

namespace {

/// Opens a two-tensor file, lets `change` alter it, then expects io_error naming the
/// file and the tensor from reading "late", and returns its message.
template <class Change>
std::string read_after_change(Change&& change) {
    TempDir dir;
    const fs::path path = dir.path / "changing.safetensors";
    attn::write_safetensors(path, {attn::safetensors_entry("early", {2}, std::vector<float>{1, 2}),
                                   attn::safetensors_entry("late", {2, 2}, std::vector<float>{3, 4, 5, 6})});
    const auto file = attn::SafeTensors::open(path);
    CHECK(file.vector<float>("early")(1) == 2.0f);
    change(path);
    std::string what;
    try {
        (void)file.matrix<float>("late");
        FAIL("no exception after the file changed");
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    INFO("message: " << what);
    CHECK(contains(what, path.string()));
    CHECK(contains(what, "'late'"));
    CHECK(contains(what, "changed after it was opened"));
    return what;
}

}  // namespace

TEST_CASE("safetensors: a file truncated after open throws io_error naming the file and the tensor") {
    std::uintmax_t size = 0;
    const std::string what = read_after_change([&](const fs::path& path) {
        size = fs::file_size(path);
        fs::resize_file(path, size - 10);
    });
    CHECK(contains(what, "is now " + std::to_string(size - 10) + " bytes"));
}

TEST_CASE("safetensors: a file grown after open throws io_error") {
    const std::string what = read_after_change(
        [](const fs::path& path) { std::ofstream(path, std::ios::binary | std::ios::app) << "appended"; });
    CHECK(contains(what, "is now"));
}

TEST_CASE("safetensors: a file rewritten in place after open (same size) throws io_error") {
    read_after_change([](const fs::path& path) {
        const auto when = fs::last_write_time(path);
        std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(-4, std::ios::end);
        f.write("abcd", 4);
        f.close();
        // Rewritten within the clock's resolution, the time could look unchanged: make sure it is not.
        fs::last_write_time(path, when + std::chrono::seconds(5));
    });
}

TEST_CASE("safetensors: a read outside the file as opened throws io_error, never reads past the end") {
    TempDir dir;
    const fs::path path = dir.path / "ten.bin";
    write_bytes(path, zeros(10));
    const attn::detail::ReadOnlyFile file(path);
    CHECK(file.size() == 10);
    std::uint8_t buffer[16] = {};
    file.read(2, 8, buffer, "the test bytes");
    std::string what;
    try {
        file.read(4, 7, buffer, "the test bytes");
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, path.string()));
    CHECK(contains(what, "the test bytes"));
    CHECK(contains(what, "[4, 11)"));
    CHECK_THROWS_AS(file.read(std::numeric_limits<std::uint64_t>::max(), 2, buffer, "x"), attn::io_error);
}

TEST_CASE("safetensors: several threads read tensors of one opened file at once") {
    std::vector<Sample> samples;
    std::vector<attn::SafeTensorsEntry> entries;
    for (unsigned k = 0; k < 8; ++k) {
        samples.push_back(random_sample("t" + std::to_string(k), k % 2 ? attn::DType::BF16 : attn::DType::F32, 64 + k,
                                        300 + 11 * k, 100 + k));
        entries.push_back(samples.back().entry);
    }
    TempDir dir;
    const fs::path path = dir.path / "shared.safetensors";
    attn::write_safetensors(path, entries);
    const auto file = attn::SafeTensors::open(path);
    std::vector<int> correct(4, 0);
    std::vector<std::thread> readers;
    for (std::size_t r = 0; r < correct.size(); ++r)
        readers.emplace_back([&, r] {
            for (int round = 0; round < 5; ++round)
                for (std::size_t k = 0; k < samples.size(); ++k) {
                    const Sample& s = samples[(k + r) % samples.size()];
                    const bool transpose = (round + static_cast<int>(r)) % 2 == 1;
                    const attn::Matrix<float> m =
                        transpose ? file.transposed_matrix<float>(s.entry.name) : file.matrix<float>(s.entry.name);
                    const attn::Matrix<double> expected =
                        transpose ? attn::Matrix<double>(s.values.transpose()) : s.values;
                    correct[r] += equal_to_reference<float>(m, expected) ? 1 : 0;
                }
        });
    for (std::thread& t : readers) t.join();
    for (int c : correct) CHECK(c == 5 * static_cast<int>(samples.size()));
}
