// Tests of attn/text/tokenizer.hpp on the hand-made fixture tests/data/tokenizer/
// (vocabulary.txt, merges.txt; the expected ids were checked against
// tools/common/tokenizer.py), one test case per kind of corrupt file, and the comparison
// with Python's ids on the whole validation split once the store model exists.

#include <attn/store.hpp>
#include <attn/text/tokenizer.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace fs = std::filesystem;

using attn::test::contains;

namespace {

const fs::path fixture_dir = fs::path(ATTN_TEST_DATA_DIR) / "tokenizer";

const attn::Tokenizer& fixture() {
    static const attn::Tokenizer tokenizer =
        attn::Tokenizer::load(fixture_dir / "vocabulary.txt", fixture_dir / "merges.txt");
    return tokenizer;
}

std::vector<std::string> tokens(const attn::Tokenizer& t, const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int id : ids) out.push_back(t.token(id));
    return out;
}

std::vector<std::string> encode_tokens(std::string_view text) {
    return tokens(fixture(), fixture().encode(text));
}

using Strings = std::vector<std::string>;

using attn::test::TempDir;

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

const std::string good_vocabulary = "<s>\n<sep>\n</s>\n<unk>\na\nb\nb</w>\nab</w>\n";
const std::string good_merges = "#version: attn-bpe 1\na b</w>\n";

/// Writes the two files, loads them, and checks for a format_error naming
/// `blamed` ("vocabulary" or "merges") and containing every needle.
void expect_load_error(const std::string& vocabulary, const std::string& merges, const std::string& blamed,
                       std::initializer_list<const char*> needles) {
    TempDir dir;
    const fs::path v = dir.path / "vocabulary.txt", m = dir.path / "merges.txt";
    write_text(v, vocabulary);
    write_text(m, merges);
    std::string what;
    try {
        (void)attn::Tokenizer::load(v, m);
        FAIL("no exception");
    } catch (const attn::format_error& e) {
        what = e.what();
    }
    INFO("message: " << what);
    CHECK(contains(what, (blamed == "vocabulary" ? v : m).string()));
    for (const char* needle : needles) CHECK_MESSAGE(contains(what, needle), "missing: " << needle);
}

}  // namespace

// ---------------------------------------------------------------------------
// The fixture

TEST_CASE("tokenizer: fixture loads with the specials at ids 0..3") {
    const auto& t = fixture();
    CHECK(t.size() == 67);
    CHECK(t.merge_count() == 23);
    CHECK(t.start_id() == 0);
    CHECK(t.separator_id() == 1);
    CHECK(t.end_id() == 2);
    CHECK(t.unknown_id() == 3);
    CHECK(t.token(0) == "<s>");
    CHECK(t.token(3) == "<unk>");
    CHECK(t.id("table</w>") == 47);
    CHECK(t.find("table</w>") == 47);
    CHECK_FALSE(t.find("chairs</w>").has_value());
    CHECK_THROWS_AS((void)t.id("chairs</w>"), attn::argument_error);
}

TEST_CASE("tokenizer: pre-tokenisation") {
    CHECK(attn::Tokenizer::words("stool, 24in.") == Strings{"stool", ",", "24in", "."});
    CHECK(attn::Tokenizer::words("Kid's  Desk") == Strings{"kid", "'", "s", "desk"});
    CHECK(attn::Tokenizer::words("(set of 2)") == Strings{"(", "set", "of", "2", ")"});
    CHECK(attn::Tokenizer::words("a\tb\nc\rd\fe\vf") == Strings{"a", "b", "c", "d", "e", "f"});
    CHECK(attn::Tokenizer::words("x--y") == Strings{"x", "-", "-", "y"});
    CHECK(attn::Tokenizer::words("100%teak;") == Strings{"100", "%", "teak", ";"});
    CHECK(attn::Tokenizer::words("").empty());
    CHECK(attn::Tokenizer::words(" \t\n ").empty());
    // non-ASCII whitespace does not split; only A-Z are lower-cased
    CHECK(attn::Tokenizer::words("Café\u00a0NOIR") == Strings{"café\u00a0noir"});
    CHECK(attn::Tokenizer::words("ÀÉ Ω ABC") == Strings{"ÀÉ", "Ω", "abc"});
    // every character of Python's string.punctuation stands alone
    for (char c : std::string("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"))
        CHECK(attn::Tokenizer::words(std::string("a") + c + "b") == Strings{"a", std::string(1, c), "b"});
}

TEST_CASE("tokenizer: words become merged symbols") {
    CHECK(encode_tokens("Table") == Strings{"table</w>"});
    CHECK(encode_tokens("tables") == Strings{"tab", "le", "s</w>"});
    CHECK(encode_tokens("TABLE, chair.") == Strings{"table</w>", ",</w>", "chair</w>", ".</w>"});
    CHECK(encode_tokens("stool, 24in.") == Strings{"stool</w>", ",</w>", "24", "in</w>", ".</w>"});
    CHECK(fixture().pieces("tables") == Strings{"tab", "le", "s</w>"});
    CHECK(fixture().encode("  \t\n").empty());
    CHECK(fixture().encode("").empty());
}

TEST_CASE("tokenizer: merges are applied by rank, not leftmost first") {
    // "b c</w>" (rank 12) beats "a b" (rank 13) although a b comes first
    CHECK(encode_tokens("abc") == Strings{"a", "bc</w>"});
    CHECK(encode_tokens("abd") == Strings{"ab", "d</w>"});
    CHECK(encode_tokens("ab") == Strings{"a", "b</w>"});
    // the same pair with the ranks swapped
    const auto swapped = attn::Tokenizer::from_strings("<s>\n<sep>\n</s>\n<unk>\na\nb\nc</w>\nbc</w>\nab\n",
                                                       "#version: attn-bpe 1\na b\nb c</w>\n");
    CHECK(tokens(swapped, swapped.encode("abc")) == Strings{"ab", "c</w>"});
}

TEST_CASE("tokenizer: all non-overlapping occurrences merge left to right") {
    CHECK(encode_tokens("aaaa") == Strings{"aa", "a", "a</w>"});
    CHECK(encode_tokens("aaaaa") == Strings{"aaaa", "a</w>"});
}

TEST_CASE("tokenizer: unknown characters become one <unk> per symbol") {
    CHECK(encode_tokens("zq table") == Strings{"<unk>", "<unk>", "table</w>"});
    CHECK(encode_tokens("x--y") == Strings{"<unk>", "-</w>", "-</w>", "<unk>"});
    CHECK(encode_tokens("kid's (2)-chairs") ==
          Strings{"<unk>", "i", "d</w>", "'</w>", "s</w>", "(</w>", "2</w>", ")</w>", "-</w>", "chai", "r", "s</w>"});
    CHECK(fixture().decode(fixture().encode("zq table")) == "<unk> <unk> table");
}

TEST_CASE("tokenizer: multi-byte UTF-8 characters are single symbols") {
    CHECK(encode_tokens("café") == Strings{"café</w>"});
    CHECK(encode_tokens("CAFÉ") == Strings{"caf", "<unk>"});  // É is not lower-cased and not in the vocabulary
    CHECK(encode_tokens("tablé") == Strings{"tab", "l", "é</w>"});
    CHECK(encode_tokens("€😀") == Strings{"€😀</w>"});  // 3-byte + 4-byte merge
    CHECK(encode_tokens("😀€") == Strings{"😀", "€</w>"});
    CHECK(encode_tokens("€€") == Strings{"€", "€</w>"});
}

TEST_CASE("tokenizer: invalid UTF-8 text is an argument_error naming the position") {
    for (const std::string& text : {std::string("ab\xC3"), std::string("ab\xC3("), std::string("ab\xC0\xAF"),
                                    std::string("ab\xED\xA0\x80"), std::string("ab\xFF"), std::string("ab\x80")}) {
        std::string what;
        try {
            (void)fixture().encode(text);
        } catch (const attn::argument_error& e) {
            what = e.what();
        }
        INFO("message: " << what);
        CHECK(contains(what, "Tokenizer::encode"));
        CHECK(contains(what, "UTF-8"));
        CHECK(contains(what, "at byte 2"));
    }
    CHECK_THROWS_AS((void)attn::store::product_ids(fixture(), "ok", "bad\xC3", 10), attn::argument_error);
}

TEST_CASE("tokenizer: decode round trip") {
    const auto& t = fixture();
    // text without unknown characters comes back as its lower-cased words joined by single spaces
    CHECK(t.decode(t.encode("  Table,\tchair.\n")) == "table , chair .");
    CHECK(t.decode(t.encode("stool, 24in.")) == "stool , 24in .");
    CHECK(t.decode(t.encode("tables café €😀 aaaaa")) == "tables café €😀 aaaaa");
    CHECK(t.decode({}) == "");
    // a token without </w> before a special: Python's squeeze gives "tab <sep>"
    CHECK(t.decode({45, 1, 0}) == "tab <sep> <s>");
    for (const char* text : {"Table table TABLES", "(2) chairs - 24in", "café, stool's"}) {
        std::string canonical;
        for (const auto& w : attn::Tokenizer::words(text)) canonical += (canonical.empty() ? "" : " ") + w;
        CHECK(t.decode(t.encode(text)) == canonical);
    }
}

TEST_CASE("tokenizer: ids out of range") {
    const auto& t = fixture();
    for (int id : {-1, 67, 1000}) {
        std::string what;
        try {
            (void)t.token(id);
        } catch (const attn::argument_error& e) {
            what = e.what();
        }
        CHECK(contains(what, "id " + std::to_string(id)));
        CHECK(contains(what, "67"));
        CHECK_THROWS_AS((void)t.decode({4, id}), attn::argument_error);
    }
}

TEST_CASE("tokenizer: a merge part that is not a token still merges") {
    // "x" is not in the vocabulary, but "x y</w>" is a merge with a known result
    const auto t =
        attn::Tokenizer::from_strings("<s>\n<sep>\n</s>\n<unk>\ny</w>\nxy</w>\n", "#version: attn-bpe 1\nx y</w>\n");
    CHECK(tokens(t, t.encode("xy x")) == Strings{"xy</w>", "<unk>"});
    CHECK_FALSE(t.find("x").has_value());
}

TEST_CASE("tokenizer: a merge listed twice keeps its first rank") {
    const auto t = attn::Tokenizer::from_strings("<s>\n<sep>\n</s>\n<unk>\na\nb\nc</w>\nab\nbc</w>\n",
                                                 "#version: attn-bpe 1\na b\nb c</w>\na b\n");
    CHECK(tokens(t, t.encode("abc")) == Strings{"ab", "c</w>"});
    CHECK(t.merge_count() == 2);
}

TEST_CASE("tokenizer: concurrent encoding from 4 threads gives identical results") {
    const auto& t = fixture();
    const std::vector<std::string> texts{"Table, chair.", "stool, 24in. café", "aaaaa abc abd", "kid's (2)-chairs €😀",
                                         "TABLES tablé zq"};
    std::vector<std::vector<int>> expected;
    for (const auto& s : texts) expected.push_back(attn::store::product_ids(t, s, s + " " + s, 160));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int round = 0; round < 500; ++round)
                for (std::size_t i = 0; i < texts.size(); ++i) {
                    const auto& s = texts[(i + std::size_t(k)) % texts.size()];
                    if (attn::store::product_ids(t, s, s + " " + s, 160) !=
                        expected[(i + std::size_t(k)) % texts.size()])
                        ++mismatches[std::size_t(k)];
                    (void)t.decode(expected[i]);
                }
        });
    for (auto& thread : threads) thread.join();
    CHECK(mismatches == std::vector<int>{0, 0, 0, 0});
}

// ---------------------------------------------------------------------------
// Corrupt files: one case each

TEST_CASE("tokenizer corrupt: missing file") {
    TempDir dir;
    write_text(dir.path / "merges.txt", good_merges);
    const fs::path missing = dir.path / "no_vocabulary.txt";
    std::string what;
    try {
        (void)attn::Tokenizer::load(missing, dir.path / "merges.txt");
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, missing.string()));
    write_text(dir.path / "vocabulary.txt", good_vocabulary);
    CHECK_THROWS_AS((void)attn::Tokenizer::load(dir.path / "vocabulary.txt", dir.path / "no_merges.txt"),
                    attn::io_error);
    CHECK_THROWS_AS((void)attn::Tokenizer::load(dir.path, dir.path / "merges.txt"), attn::io_error);  // a directory
    // the good files do load
    CHECK(attn::Tokenizer::load(dir.path / "vocabulary.txt", dir.path / "merges.txt").size() == 8);
}

TEST_CASE("tokenizer corrupt: empty vocabulary") {
    expect_load_error("", good_merges, "vocabulary", {"empty vocabulary"});
}

TEST_CASE("tokenizer corrupt: vocabulary without the four specials at ids 0..3") {
    expect_load_error("<s>\n<sep>\n<unk>\n</s>\na\n", good_merges, "vocabulary",
                      {"vocabulary.txt:3", "'</s>'", "got '<unk>'"});
    expect_load_error("<s>\n<sep>\n", "#version: attn-bpe 1\n", "vocabulary", {"2 tokens", "4 special"});
}

TEST_CASE("tokenizer corrupt: duplicate tokens") {
    expect_load_error("<s>\n<sep>\n</s>\n<unk>\na\nb\na\n", "#version: attn-bpe 1\n", "vocabulary",
                      {"vocabulary.txt:7", "duplicate token 'a'", "line 5"});
}

TEST_CASE("tokenizer corrupt: empty line in the vocabulary") {
    expect_load_error("<s>\n<sep>\n</s>\n<unk>\na\n\nb\n", "#version: attn-bpe 1\n", "vocabulary",
                      {"vocabulary.txt:6", "empty line"});
}

TEST_CASE("tokenizer corrupt: invalid UTF-8 in the vocabulary") {
    expect_load_error("<s>\n<sep>\n</s>\n<unk>\na\xC3\n", "#version: attn-bpe 1\n", "vocabulary",
                      {"vocabulary.txt:5", "UTF-8"});
}

TEST_CASE("tokenizer corrupt: merges header missing") {
    expect_load_error(good_vocabulary, "a b</w>\n", "merges", {"merges.txt:1", "#version: attn-bpe 1", "'a b</w>'"});
    expect_load_error(good_vocabulary, "", "merges", {"merges.txt:1", "empty file"});
}

TEST_CASE("tokenizer corrupt: merges header wrong") {
    expect_load_error(good_vocabulary, "#version: 0.2\na b</w>\n", "merges", {"merges.txt:1", "'#version: 0.2'"});
}

TEST_CASE("tokenizer corrupt: merge line without exactly two parts") {
    for (const char* line : {"a b</w> c", "ab</w>", "a  b</w>", " a b</w>", "a b</w> ", ""}) {
        INFO("line: '" << line << "'");
        expect_load_error(good_vocabulary, "#version: attn-bpe 1\n" + std::string(line) + "\n", "merges",
                          {"merges.txt:2", "expected 'left right'"});
    }
}

TEST_CASE("tokenizer corrupt: merge whose result is not in the vocabulary") {
    expect_load_error(good_vocabulary, "#version: attn-bpe 1\na b</w>\nb b</w>\n", "merges",
                      {"merges.txt:3", "'bb</w>'", "vocabulary.txt"});
}

TEST_CASE("tokenizer corrupt: Windows line endings are refused") {
    expect_load_error("<s>\r\n<sep>\r\n</s>\r\n<unk>\r\n", good_merges, "vocabulary", {"vocabulary.txt:1", "\\r"});
    expect_load_error(good_vocabulary, "#version: attn-bpe 1\r\na b</w>\r\n", "merges", {"merges.txt:1", "\\r"});
}

TEST_CASE("tokenizer: a final newline is optional") {
    const auto t =
        attn::Tokenizer::from_strings("<s>\n<sep>\n</s>\n<unk>\na\nb\nb</w>\nab</w>", "#version: attn-bpe 1\na b</w>");
    CHECK(t.size() == 8);
    CHECK(t.encode("ab") == std::vector<int>{7});
}

// ---------------------------------------------------------------------------
// Agreement with tools/common/tokenizer.py on the validation split

// tests/data/store/validation_ids.txt holds, for each product of
// models/store/validation.tsv in order (header skipped), one line with the
// space-separated ids of attn::store::product_ids(tokenizer, name, description, longest=10**9)
// from tools/common/tokenizer.py (untruncated). Lines starting with '#' are comments.
TEST_CASE("tokenizer: identical to tools/common/tokenizer.py on the validation split") {
    const fs::path source(ATTN_SOURCE_DIR);
    const fs::path store = source / "models" / "store";
    const fs::path vocabulary = store / "vocabulary.txt", merges = store / "merges.txt",
                   validation = store / "validation.tsv",
                   expected_path = source / "tests" / "data" / "store" / "validation_ids.txt";
    for (const fs::path& p : {vocabulary, merges, validation, expected_path})
        REQUIRE_MESSAGE(fs::exists(p), p.string()
                                           << " is shipped with attn (tools/training/make_store_model.sh writes it)");
    const auto t = attn::Tokenizer::load(vocabulary, merges);

    std::ifstream tsv(validation, std::ios::binary), ids_file(expected_path, std::ios::binary);
    REQUIRE(tsv);
    REQUIRE(ids_file);
    std::string line;
    REQUIRE(std::getline(tsv, line));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    REQUIRE(line.rfind("name\tdescription", 0) == 0);

    std::size_t products = 0, mismatches = 0;
    std::string expected_line;
    auto next_expected = [&]() -> bool {
        while (std::getline(ids_file, expected_line))
            if (expected_line.empty() || expected_line[0] != '#') return true;
        return false;
    };
    while (std::getline(tsv, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();  // as read_products
        const std::size_t tab = line.find('\t');
        const std::string name = line.substr(0, tab);
        const std::string description = tab == std::string::npos ? std::string() : line.substr(tab + 1);
        REQUIRE_MESSAGE(description.find('\t') == std::string::npos, "line " << products + 2 << " has 3 fields");
        REQUIRE_MESSAGE(next_expected(), "validation_ids.txt ends after " << products << " products");
        std::vector<int> expected;
        std::istringstream numbers(expected_line);
        for (int id; numbers >> id;) expected.push_back(id);
        const std::vector<int> actual = attn::store::product_ids(t, name, description, 1'000'000'000);
        if (actual != expected && ++mismatches <= 5)
            FAIL_CHECK("product " << products + 1 << " ('" << name << "'): C++ gives " << actual.size()
                                  << " ids, Python " << expected.size());
        ++products;
    }
    CHECK_FALSE_MESSAGE(next_expected(), "validation_ids.txt has more lines than " << products << " products");
    CHECK(mismatches == 0);
    CHECK(products == 2500);  // the whole validation split
    MESSAGE("compared " << products << " products");
}
