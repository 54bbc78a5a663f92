// attn::numpy (attn/core/numpy_random.hpp) against NumPy's own draws, written by
// tools/references/numpy_random_golden.py into tests/data/numpy_random/.
//
// Tolerance: none. Every comparison is exact (== on the 64-bit words and on the
// doubles' values), and every one of them holds: SeedSequence pools and states,
// PCG64 states, raw words, random(), standard_normal() and normal() for 8 seeds
// (0, 1, 42, 2026, 2⁴⁰ + 7, 2⁶⁴ − 1, 2¹⁰⁰ + 12345 and the word list [1, 2, 3, 4, 5]),
// and 100,000 standard normals of seed 2026, of which 1,511 take the ziggurat's wedge
// or tail path (21 the tail). The seed files end with normal(−0.1, 0.1) draws whose
// sum cancels: compiled with -march=native and without the rounding guard in
// numpy_random.hpp, FMA contraction changes 384 of the compared values.

#include <attn/core/numpy_random.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using attn::Index;
namespace np = attn::numpy;

std::string data_path(const std::string& name) {
    return std::string(ATTN_TEST_DATA_DIR) + "/numpy_random/" + name;
}

/// One record: the first word, then the rest as tokens.
struct Record {
    std::string name;
    std::vector<std::string> tokens;
};

std::vector<Record> read_records(const std::string& name) {
    std::ifstream in(data_path(name));
    REQUIRE_MESSAGE(in.good(), "cannot open ", data_path(name), " (run tools/references/numpy_random_golden.py)");
    std::vector<Record> records;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        Record record;
        words >> record.name;
        for (std::string token; words >> token;) record.tokens.push_back(token);
        records.push_back(std::move(record));
    }
    return records;
}

const Record& find(const std::vector<Record>& records, const std::string& name) {
    for (const Record& r : records)
        if (r.name == name) return r;
    FAIL("no record ", name);
    throw std::logic_error("unreachable");
}

std::uint64_t word(const std::string& token) {
    return std::stoull(token, nullptr, 0);
}

double hex_double(const std::string& token) {
    char* end = nullptr;
    const double value = std::strtod(token.c_str(), &end);
    REQUIRE_MESSAGE(end == token.c_str() + token.size(), "bad number ", token);
    return value;
}

Index index(const std::string& token) {
    return static_cast<Index>(std::stoll(token));
}

/// a == b, but NaN equal to NaN and −0 different from +0: the same double.
bool same(double a, double b) {
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return x == y;
}

std::vector<std::uint32_t> entropy_words(const Record& r) {
    std::vector<std::uint32_t> words;
    for (const std::string& t : r.tokens) words.push_back(static_cast<std::uint32_t>(std::stoul(t)));
    return words;
}

/// Replays a seed file's draws, in order, on one generator; returns the number of values compared.
std::size_t replay(const std::vector<Record>& records, np::Generator& rng) {
    std::size_t compared = 0;
    for (const Record& r : records) {
        const auto& t = r.tokens;
        if (r.name == "raw") {
            const Index n = index(t[0]);
            REQUIRE(t.size() == std::size_t(n) + 1);
            for (Index i = 0; i < n; ++i, ++compared) CHECK(rng.next_uint64() == word(t[std::size_t(i) + 1]));
        } else if (r.name == "random" || r.name == "standard_normal" || r.name == "normal") {
            const std::size_t first = r.name == "normal" ? 2 : 0;
            const Index rows = index(t[first]), cols = index(t[first + 1]);
            REQUIRE(t.size() == first + 2 + std::size_t(rows * cols));
            attn::Matrix<double> m;
            if (r.name == "random")
                m = rng.random(rows, cols);
            else if (r.name == "standard_normal")
                m = rng.standard_normal(rows, cols);
            else
                m = rng.normal(hex_double(t[0]), hex_double(t[1]), rows, cols);
            REQUIRE(m.rows() == rows);
            REQUIRE(m.cols() == cols);
            for (Index i = 0; i < rows; ++i)
                for (Index j = 0; j < cols; ++j, ++compared) {
                    const double expected = hex_double(t[first + 2 + std::size_t(i * cols + j)]);
                    INFO(r.name, " (", i, ", ", j, ")");
                    CHECK(same(m(i, j), expected));
                }
        } else if (r.name == "normal1") {
            CHECK(same(rng.normal(hex_double(t[0]), hex_double(t[1])), hex_double(t[2])));
            ++compared;
        }
    }
    return compared;
}

void check_seed_file(const std::string& name) {
    INFO(name);
    const std::vector<Record> records = read_records(name);
    const std::vector<std::uint32_t> entropy = entropy_words(find(records, "entropy"));

    const np::SeedSequence sequence(entropy);
    const Record& pool = find(records, "pool");
    for (std::size_t i = 0; i < np::SeedSequence::pool_size; ++i) CHECK(sequence.pool()[i] == word(pool.tokens[i]));
    const std::vector<std::uint64_t> state = sequence.generate_state_64(4);
    const Record& state_u64 = find(records, "state_u64");
    for (std::size_t i = 0; i < 4; ++i) CHECK(state[i] == word(state_u64.tokens[i]));

    np::Generator rng = np::default_rng(entropy);
    const Record& pcg_state = find(records, "pcg_state");
    const Record& pcg_inc = find(records, "pcg_inc");
    CHECK(rng.bit_generator().state().high == word(pcg_state.tokens[0]));
    CHECK(rng.bit_generator().state().low == word(pcg_state.tokens[1]));
    CHECK(rng.bit_generator().increment().high == word(pcg_inc.tokens[0]));
    CHECK(rng.bit_generator().increment().low == word(pcg_inc.tokens[1]));

    // An integer seed that fits in 64 bits: default_rng(integer) splits it into the same words.
    for (const Record& r : records)
        if (r.name == "integer" && r.tokens[0].size() <= 20) {
            const std::uint64_t seed = std::stoull(r.tokens[0]);
            CHECK(np::SeedSequence::integer_words(seed) == entropy);
            np::Generator by_integer = np::default_rng(seed);
            CHECK(by_integer.bit_generator().state() == rng.bit_generator().state());
        }

    const std::size_t compared = replay(records, rng);
    CHECK(compared > 600);
}

}  // namespace

TEST_CASE("numpy_random: SeedSequence, PCG64 and every draw equal NumPy's for 8 seeds") {
    for (const char* name : {"seed_0.txt", "seed_1.txt", "seed_42.txt", "seed_2026.txt", "seed_2pow40_plus_7.txt",
                             "seed_2pow64_minus_1.txt", "seed_2pow100_plus_12345.txt", "seed_words_1_2_3_4_5.txt"})
        check_seed_file(name);
}

TEST_CASE("numpy_random: integer seeds split into 32-bit words as NumPy splits them") {
    using Words = std::vector<std::uint32_t>;
    CHECK(np::SeedSequence::integer_words(0) == Words{0});
    CHECK(np::SeedSequence::integer_words(2026) == Words{2026});
    CHECK(np::SeedSequence::integer_words(0xffffffffu) == Words{0xffffffffu});
    CHECK(np::SeedSequence::integer_words(0x100000000ull) == Words{0, 1});
    CHECK(np::SeedSequence::integer_words((1ull << 40) + 7) == Words{7, 256});
    CHECK(np::SeedSequence::integer_words(~0ull) == Words{0xffffffffu, 0xffffffffu});
}

TEST_CASE("numpy_random: 100,000 standard normals equal NumPy's, wedge and tail paths included") {
    const std::vector<Record> records = read_records("normal_100k_seed_2026.txt");
    const std::uint64_t seed = std::stoull(find(records, "entropy").tokens[0]);
    const Index count = index(find(records, "count").tokens[0]);
    np::Generator rng = np::default_rng(seed);
    np::Generator words = np::default_rng(seed);  // counts the words each draw uses

    std::vector<double> values(static_cast<std::size_t>(count));
    std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 over the little-endian bytes of every draw
    for (double& v : values) {
        v = rng.standard_normal();
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        for (int b = 0; b < 8; ++b) {
            hash ^= (bits >> (8 * b)) & 0xffu;
            hash *= 0x100000001b3ull;
        }
    }
    CHECK(hash == word(find(records, "fnv1a64").tokens[0]));

    // The stream position after the draws: as many words used as NumPy used.
    const std::uint64_t used = word(find(records, "words").tokens[0]);
    for (std::uint64_t i = 0; i < used; ++i) words.next_uint64();
    CHECK(words.bit_generator().state() == rng.bit_generator().state());
    CHECK(rng.next_uint64() == word(find(records, "next_raw").tokens[0]));

    std::size_t sampled = 0, slow = 0, tail = 0;
    for (const Record& r : records) {
        if (r.name == "at") {
            CHECK(same(values[std::size_t(index(r.tokens[0]))], hex_double(r.tokens[1])));
            ++sampled;
        } else if (r.name == "slow") {
            const double expected = hex_double(r.tokens[2]);
            INFO("draw ", r.tokens[0], " used ", r.tokens[1], " words");
            CHECK(same(values[std::size_t(index(r.tokens[0]))], expected));
            ++slow;
            if (std::abs(expected) > attn::numpy::detail::ziggurat_r) ++tail;
        }
    }
    CHECK(sampled == 100);
    CHECK(slow > 1000);  // the wedge, many times
    CHECK(tail > 10);    // and the tail
}

TEST_CASE("numpy_random: matrices fill in row-major order, float casts the double draws") {
    np::Generator a = np::default_rng(7);
    np::Generator b = np::default_rng(7);
    const attn::Matrix<double> m = a.normal(1.5, 0.25, 3, 4);
    for (Index i = 0; i < 3; ++i)
        for (Index j = 0; j < 4; ++j) CHECK(same(m(i, j), b.normal(1.5, 0.25)));

    np::Generator c = np::default_rng(7);
    const attn::Matrix<float> f = c.normal<float>(1.5, 0.25, 3, 4);
    CHECK(f == m.cast<float>());

    np::Generator d = np::default_rng(7);
    const attn::Matrix<double> u = d.random(2, 2);
    np::Generator e = np::default_rng(7);
    for (Index i = 0; i < 2; ++i)
        for (Index j = 0; j < 2; ++j) CHECK(same(u(i, j), std::ldexp(double(e.next_uint64() >> 11), -53)));
}

TEST_CASE("numpy_random: arguments NumPy refuses are refused") {
    CHECK_THROWS_AS(np::default_rng(-1), attn::argument_error);
    CHECK_THROWS_AS(np::default_rng(std::vector<std::uint32_t>{}), attn::argument_error);
    np::Generator rng = np::default_rng(1);
    CHECK_THROWS_AS(rng.normal(0.0, -1.0), attn::argument_error);
    CHECK_THROWS_AS(rng.normal(0.0, -0.0), attn::argument_error);  // NumPy: "scale < 0" (it tests the sign bit)
    CHECK_THROWS_AS(rng.normal(0.0, 1.0, -1, 2), attn::argument_error);
    CHECK(std::isnan(rng.normal(0.0, std::numeric_limits<double>::quiet_NaN())));  // NumPy lets NaN through
    CHECK(rng.normal(0.0, 1.0, 0, 3).size() == 0);
    CHECK(rng.normal(5.0, 0.0) == 5.0);
}
