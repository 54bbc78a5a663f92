// attn/view/npy.hpp: the .npy v1.0 header byte for byte, C order from any Eigen storage,
// little-endian data, and the errors. NumPy itself reads the files in
// tools/tests/test_npy_export.py.
#include <doctest/doctest.h>
#include <attn/view/npy.hpp>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

std::string npy_of(const std::vector<attn::Index>& shape, const std::vector<double>& values) {
    std::ostringstream out;
    attn::write_npy(out, shape, values);
    return out.str();
}

std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

std::size_t header_length(const std::string& npy) {
    return std::size_t(static_cast<unsigned char>(npy[8])) | std::size_t(static_cast<unsigned char>(npy[9])) << 8;
}

}  // namespace

TEST_CASE("write_npy writes NumPy's version 1.0 header, data aligned to 64 bytes") {
    const std::string npy = npy_of({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(npy.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t length = header_length(npy);
    CHECK((10 + length) % 64 == 0);
    const std::string dict = npy.substr(10, length);
    CHECK(dict.rfind("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
    CHECK(dict.back() == '\n');
    CHECK(npy.size() == 10 + length + 6 * 8);
    double third = 0;
    std::memcpy(&third, npy.data() + 10 + length + 2 * 8, 8);
    CHECK(third == 3.0);
}

TEST_CASE("write_npy spells one-axis and zero-axis shapes as Python tuples") {
    auto dict = [](const std::string& npy) { return npy.substr(10, header_length(npy)); };
    CHECK(dict(npy_of({4}, {1, 2, 3, 4})).find("'shape': (4,), }") != std::string::npos);
    CHECK(dict(npy_of({}, {7})).find("'shape': (), }") != std::string::npos);
    CHECK(dict(npy_of({2, 0, 3}, {})).find("'shape': (2, 0, 3), }") != std::string::npos);
    const std::string empty = npy_of({2, 0, 3}, {});
    CHECK(empty.size() == 10 + header_length(empty));  // no data
    CHECK(empty.size() % 64 == 0);
}

TEST_CASE("write_npy writes float matrices in C order whatever their storage") {
    attn::test::TempDir directory;
    Eigen::MatrixXf column_major(2, 3);
    column_major << 1, 2, 3, 4, 5, 6;
    attn::write_npy(directory.path / "m.npy", column_major);
    const std::string npy = read_file(directory.path / "m.npy");
    const std::size_t length = header_length(npy);
    CHECK(npy.substr(10, length).find("'descr': '<f4'") != std::string::npos);
    CHECK(npy.substr(10, length).find("'shape': (2, 3)") != std::string::npos);
    REQUIRE(npy.size() == 10 + length + 6 * 4);
    std::vector<float> values(6);
    std::memcpy(values.data(), npy.data() + 10 + length, 6 * 4);
    CHECK(values == std::vector<float>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("write_npy refuses negative extents and values that do not fill the shape, and names files it cannot write") {
    const std::vector<double> values{1};
    std::ostringstream out;
    CHECK_THROWS_WITH_AS(attn::write_npy(out, {2, -1}, values), doctest::Contains("negative extent -1"),
                         attn::argument_error);
    CHECK_THROWS_WITH_AS(attn::write_npy(out, {2}, values), doctest::Contains("1 values for a shape of 2"),
                         attn::shape_error);
    attn::test::TempDir directory;
    CHECK_THROWS_AS(attn::write_npy(directory.path / "short.npy", {3, 1}, values), attn::shape_error);
    CHECK_FALSE(std::filesystem::exists(directory.path / "short.npy"));  // refused before the file is made
    const auto file = directory.path / "no" / "such" / "a.npy";
    CHECK_THROWS_WITH_AS(attn::write_npy(file, attn::Matrix<double>::Ones(2, 2)),
                         doctest::Contains((file.string() + ": cannot open").c_str()), attn::io_error);
}
