// Tests of attn/formats/tensor_files.hpp: a two-shard directory written here read as one
// namespace, the single-file fallback, and every way an index can disagree with itself
// or its shards.

#include <attn/formats/tensor_files.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support.hpp"

namespace fs = std::filesystem;

using attn::test::contains;
using attn::test::TempDir;
using attn::test::thrown_format_error;

namespace {

const std::string first_shard = "model-00001-of-00002.safetensors";
const std::string second_shard = "model-00002-of-00002.safetensors";

/// (rows × cols) with element (i, j) = i − j / 4: exact in float, BF16 and F16 for small sizes.
attn::Matrix<float> ramp(attn::Index rows, attn::Index cols) {
    attn::Matrix<float> m(rows, cols);
    for (attn::Index i = 0; i < rows; ++i)
        for (attn::Index j = 0; j < cols; ++j) m(i, j) = static_cast<float>(i) - static_cast<float>(j) / 4.0f;
    return m;
}

/// A BF16 entry holding `m` (whose values BF16 represents exactly: their low 16 bits are zero).
attn::SafeTensorsEntry bfloat16_entry(std::string name, const attn::Matrix<float>& m) {
    attn::SafeTensorsEntry e{std::move(name), attn::DType::BF16, {m.rows(), m.cols()}, {}};
    for (attn::Index i = 0; i < m.rows(); ++i)
        for (attn::Index j = 0; j < m.cols(); ++j) {
            std::uint32_t bits;
            std::memcpy(&bits, &m(i, j), 4);
            REQUIRE((bits & 0xFFFFu) == 0);
            e.bytes.push_back(static_cast<std::uint8_t>(bits >> 16));
            e.bytes.push_back(static_cast<std::uint8_t>(bits >> 24));
        }
    return e;
}

std::vector<attn::SafeTensorsEntry> first_shard_tensors() {
    return {attn::safetensors_entry("model.embed_tokens.weight", ramp(6, 4)),
            bfloat16_entry("model.layers.0.self_attn.q_proj.weight", ramp(4, 4)),
            attn::safetensors_entry("model.layers.0.self_attn.k_proj.weight", attn::Matrix<float>(ramp(2, 4) * 2.0f))};
}

std::vector<attn::SafeTensorsEntry> second_shard_tensors() {
    attn::Vector<float> norm(4);
    norm << 1.0f, 0.5f, -2.0f, 4.0f;
    return {attn::safetensors_entry("model.layers.0.mlp.up_proj.weight", ramp(8, 4)),
            attn::safetensors_entry("model.norm.weight", norm),
            attn::safetensors_entry("lm_head.weight", attn::Matrix<float>(-ramp(6, 4)))};
}

/// The weight map of the two shards above, as a Hugging Face index lists it.
nlohmann::json weight_map() {
    nlohmann::json map = nlohmann::json::object();
    for (const auto& e : first_shard_tensors()) map[e.name] = first_shard;
    for (const auto& e : second_shard_tensors()) map[e.name] = second_shard;
    return map;
}

void write_index_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

/// A directory holding both shards (or the given replacements) and `index` as its index.
struct ShardedDirectory {
    TempDir dir;
    explicit ShardedDirectory(const std::string& index,
                              const std::vector<attn::SafeTensorsEntry>& first = first_shard_tensors(),
                              const std::vector<attn::SafeTensorsEntry>& second = second_shard_tensors()) {
        attn::write_safetensors(dir.path / first_shard, first);
        attn::write_safetensors(dir.path / second_shard, second);
        write_index_text(dir.path / "model.safetensors.index.json", index);
    }
    fs::path index_path() const { return dir.path / "model.safetensors.index.json"; }
};

std::string index_text(const nlohmann::json& map) {
    return nlohmann::json{{"metadata", {{"total_size", 432}}}, {"weight_map", map}}.dump(2);
}

/// Opens a directory whose index is `index`, expecting one format_error that names the
/// index and contains every needle; returns the message.
std::string expect_index_error(const std::string& index, std::initializer_list<std::string> needles,
                               const std::vector<attn::SafeTensorsEntry>& first = first_shard_tensors(),
                               const std::vector<attn::SafeTensorsEntry>& second = second_shard_tensors()) {
    ShardedDirectory directory(index, first, second);
    const std::string what = thrown_format_error([&] { (void)attn::TensorFiles::open(directory.dir.path); });
    INFO("message: " << what);
    CHECK(contains(what, directory.index_path().string()));
    for (const std::string& needle : needles) CHECK_MESSAGE(contains(what, needle), "missing: " << needle);
    return what;
}

}  // namespace

// ---------------------------------------------------------------------------
// Valid directories

TEST_CASE("tensor files: a two-shard directory reads as one namespace, each tensor from its shard") {
    ShardedDirectory directory(index_text(weight_map()));
    const auto files = attn::TensorFiles::open(directory.dir.path);
    CHECK(files.origin() == directory.index_path().string());
    CHECK(files.index_metadata().at("total_size") == 432);
    CHECK(files.shards().size() == 2);
    CHECK(files.shard_files() == std::vector<std::string>{second_shard, first_shard});  // in the order first needed
    CHECK(files.size() == 6);
    CHECK(files.names() == std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight",
                                                    "model.layers.0.mlp.up_proj.weight",
                                                    "model.layers.0.self_attn.k_proj.weight",
                                                    "model.layers.0.self_attn.q_proj.weight", "model.norm.weight"});
    CHECK(files.contains("model.norm.weight"));
    CHECK_FALSE(files.contains("model.norm"));
    CHECK(files.source("model.embed_tokens.weight") == (directory.dir.path / first_shard).string());
    CHECK(files.source("lm_head.weight") == (directory.dir.path / second_shard).string());
    CHECK(files.info("model.layers.0.self_attn.q_proj.weight").dtype == attn::DType::BF16);
    CHECK(files.info("model.layers.0.mlp.up_proj.weight").shape == std::vector<std::int64_t>{8, 4});

    CHECK(files.matrix<float>("model.embed_tokens.weight") == ramp(6, 4));
    CHECK(files.matrix<double>("lm_head.weight") == (-ramp(6, 4)).cast<double>());
    CHECK(files.transposed_matrix<float>("model.layers.0.mlp.up_proj.weight") == ramp(8, 4).transpose());
    attn::Vector<double> norm(4);
    norm << 1.0, 0.5, -2.0, 4.0;
    CHECK(files.vector<double>("model.norm.weight") == norm);
    CHECK(files.tensor<float>("model.norm.weight").values == std::vector<float>{1.0f, 0.5f, -2.0f, 4.0f});
    CHECK(files.raw("model.norm.weight").size() == 16);

    // q (4 × 4, BF16) and k (2 × 4, F32) as PyTorch [out, in] → one fused (in × out) matrix.
    attn::Matrix<float> fused = attn::Matrix<float>::Zero(4, 6);
    files.read_matrix_into("model.layers.0.self_attn.q_proj.weight", fused.leftCols(4), true);
    files.read_matrix_into<float>("model.layers.0.self_attn.k_proj.weight", fused.rightCols(2), true);
    attn::Matrix<float> expected(4, 6);
    expected << ramp(4, 4).transpose(), (ramp(2, 4) * 2.0f).transpose();
    CHECK(fused == expected);
}

TEST_CASE("tensor files: without an index, model.safetensors is the one file") {
    TempDir dir;
    attn::write_safetensors(dir.path / "model.safetensors", second_shard_tensors());
    attn::write_safetensors(dir.path / first_shard, first_shard_tensors());  // not named by anything: ignored
    const auto files = attn::TensorFiles::open(dir.path);
    CHECK(files.origin() == (dir.path / "model.safetensors").string());
    CHECK(files.shards().size() == 1);
    CHECK(files.index_metadata().empty());
    CHECK(files.names() ==
          std::vector<std::string>{"lm_head.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"});
    CHECK(files.source("lm_head.weight") == (dir.path / "model.safetensors").string());
    CHECK(files.matrix<float>("lm_head.weight") == -ramp(6, 4));
}

TEST_CASE("tensor files: the index is preferred to model.safetensors, and shards it does not name are ignored") {
    ShardedDirectory directory(index_text(weight_map()));
    attn::write_safetensors(directory.dir.path / "model.safetensors",
                            {attn::safetensors_entry("other", {1}, std::vector<float>{1})});
    attn::write_safetensors(directory.dir.path / "model-00003-of-00003.safetensors",
                            {attn::safetensors_entry("stray", {1}, std::vector<float>{1})});
    const auto files = attn::TensorFiles::open(directory.dir.path);
    CHECK(files.size() == 6);
    CHECK_FALSE(files.contains("other"));
    CHECK_FALSE(files.contains("stray"));
}

TEST_CASE("tensor files: an index without metadata and with unknown keys is accepted") {
    ShardedDirectory directory(nlohmann::json{{"weight_map", weight_map()}, {"format", "pt"}}.dump());
    const auto files = attn::TensorFiles::open(directory.dir.path);
    CHECK(files.size() == 6);
    CHECK(files.index_metadata().empty());
}

TEST_CASE("tensor files: from_index_text checks an index against shards held in memory") {
    std::map<std::string, attn::SafeTensors> shards;
    shards.emplace(first_shard, attn::SafeTensors::from_bytes(attn::safetensors_bytes(first_shard_tensors()), "one"));
    shards.emplace(second_shard, attn::SafeTensors::from_bytes(attn::safetensors_bytes(second_shard_tensors()), "two"));
    const auto files = attn::TensorFiles::from_index_text(index_text(weight_map()), shards, "index in memory");
    CHECK(files.size() == 6);
    CHECK(files.source("model.norm.weight") == "two");
    CHECK(files.matrix<float>("model.embed_tokens.weight") == ramp(6, 4));

    shards.erase(second_shard);
    const std::string what = thrown_format_error(
        [&] { (void)attn::TensorFiles::from_index_text(index_text(weight_map()), shards, "index in memory"); });
    CHECK(contains(what, "index in memory"));
    CHECK(contains(what, "shards listed but absent: " + second_shard + " (for 3 tensors)"));
}

// ---------------------------------------------------------------------------
// Missing files

TEST_CASE("tensor files: a directory with neither an index nor model.safetensors") {
    TempDir dir;
    std::string what;
    try {
        (void)attn::TensorFiles::open(dir.path);
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, (dir.path / "model.safetensors.index.json").string()));
    CHECK(contains(what, (dir.path / "model.safetensors").string()));
    CHECK_THROWS_AS((void)attn::TensorFiles::open(dir.path / "no_such_directory"), attn::io_error);
}

TEST_CASE("tensor files: an index that is a directory") {
    TempDir dir;
    fs::create_directory(dir.path / "model.safetensors.index.json");
    CHECK_THROWS_AS((void)attn::TensorFiles::open(dir.path), attn::io_error);
}

// ---------------------------------------------------------------------------
// Malformed indexes: problems that leave nothing to check, thrown at once

TEST_CASE("tensor files corrupt: index is not JSON") {
    expect_index_error(R"({"weight_map": {"a": )", {"not valid JSON"});
}

TEST_CASE("tensor files corrupt: index is not an object") {
    expect_index_error(R"(["model-00001-of-00002.safetensors"])", {"JSON array", "expected an object"});
}

TEST_CASE("tensor files corrupt: weight_map missing or not an object") {
    expect_index_error(R"({"metadata": {}})", {"no \"weight_map\""});
    expect_index_error(R"({"weight_map": ["a", "b"]})", {"\"weight_map\" is a JSON array", "expected an object"});
}

TEST_CASE("tensor files corrupt: index nested deeper than any index needs") {
    expect_index_error("{\"metadata\":" + std::string(40, '[') + std::string(40, ']') + "}", {"nested deeper"});
}

// ---------------------------------------------------------------------------
// Indexes that disagree with themselves or with their shards: one message for all

TEST_CASE("tensor files corrupt: weight_map values that are not plain file names") {
    auto map = weight_map();
    map["model.norm.weight"] = 7;
    map["lm_head.weight"] = "/etc/" + second_shard;
    map["extra.d"] = "../" + second_shard;
    map["model.embed_tokens.weight"] = "sub/" + first_shard;
    map["model.layers.0.self_attn.q_proj.weight"] = "..";
    map["model.layers.0.self_attn.k_proj.weight"] = "shard\\one.safetensors";
    map["extra.a"] = "";
    map["extra.b"] = "C:model.safetensors";
    map["extra.c"] = "tab\there.safetensors";
    const std::string what = expect_index_error(
        index_text(map),
        {"weight_map values that are not strings: 'model.norm.weight' → a JSON number",
         "'/etc/" + second_shard + "' (contains a path separator; for 1 tensor)",
         "'../" + second_shard + "' (contains '..'", "'sub/" + first_shard + "' (contains a path separator",
         "'..' (not a file name", "'shard\\one.safetensors' (contains a path separator", "'' (empty",
         "'C:model.safetensors' (contains ':'", "(contains a control character"});
    // The second shard, named for one tensor, holds two that the index does not list validly.
    CHECK(contains(what, "tensors the index does not list: 'lm_head.weight' (in " + second_shard +
                             "), 'model.norm.weight' (in " + second_shard + ")"));
}

TEST_CASE("tensor files: shard_file_name_problem accepts plain names only") {
    using attn::detail::shard_file_name_problem;
    CHECK(shard_file_name_problem("model-00001-of-00002.safetensors") == nullptr);
    CHECK(shard_file_name_problem("pytorch_model.safetensors") == nullptr);
    for (const char* bad : {"", ".", "..", "a..b", "/abs.safetensors", "dir/x", "dir\\x", "C:x", "x\ny"})
        CHECK_MESSAGE(shard_file_name_problem(bad) != nullptr, "accepted: " << bad);
}

TEST_CASE("tensor files corrupt: a shard listed but absent") {
    auto map = weight_map();
    map["model.norm.weight"] = "model-00003-of-00003.safetensors";
    map["lm_head.weight"] = "model-00003-of-00003.safetensors";
    const std::string what = expect_index_error(
        index_text(map), {"shards listed but absent: model-00003-of-00003.safetensors (for 2 tensors)"});
    // The tensors it stands for are found in the second shard, which the index names for others.
    CHECK(contains(
        what, "'model.norm.weight' (the index says model-00003-of-00003.safetensors, found in " + second_shard + ")"));
}

TEST_CASE("tensor files corrupt: a tensor in no shard") {
    auto map = weight_map();
    map["model.layers.1.self_attn.q_proj.weight"] = first_shard;
    expect_index_error(index_text(map), {"tensors in no shard: 'model.layers.1.self_attn.q_proj.weight' (the index "
                                         "says " +
                                         first_shard + ", which does not hold it)"});
}

TEST_CASE("tensor files corrupt: a tensor a shard holds that the index does not list") {
    auto map = weight_map();
    map.erase("model.norm.weight");
    expect_index_error(index_text(map),
                       {"tensors the index does not list: 'model.norm.weight' (in " + second_shard + ")"});
}

TEST_CASE("tensor files corrupt: a tensor the index lists in another shard") {
    auto map = weight_map();
    map["lm_head.weight"] = first_shard;
    expect_index_error(index_text(map), {"tensors in another shard than the index says: 'lm_head.weight' (the index "
                                         "says " +
                                         first_shard + ", found in " + second_shard + ")"});
}

TEST_CASE("tensor files corrupt: the same tensor in two shards") {
    auto second = second_shard_tensors();
    second.push_back(attn::safetensors_entry("model.embed_tokens.weight", ramp(6, 4)));
    const std::string what = expect_index_error(index_text(weight_map()),
                                                {"tensors duplicated in two shards: 'model.embed_tokens.weight' (in " +
                                                 second_shard + " and " + first_shard + ")"},
                                                first_shard_tensors(), second);
    CHECK_FALSE(contains(what, "does not list"));  // one problem, reported once
    CHECK_FALSE(contains(what, "another shard"));
}

TEST_CASE("tensor files corrupt: a tensor listed twice in weight_map, a key given twice, metadata not an object") {
    std::string index = index_text(weight_map());
    const auto at = index.find("\"weight_map\": {") + std::string("\"weight_map\": {").size();
    index.insert(at, "\n\"model.norm.weight\": \"" + second_shard + "\",");
    index.replace(index.find("\"metadata\": {"), std::string("\"metadata\": {").size(), "\"metadata\": 3, \"x\": {");
    index.insert(index.find("\"weight_map\""), "\"x\": 1, ");
    expect_index_error(index, {"tensors listed twice in weight_map: 'model.norm.weight'", "keys given twice: 'x'",
                               "\"metadata\" is not an object: it is a JSON number"});
}

TEST_CASE("tensor files corrupt: every disagreement of index and shards in one message") {
    auto map = weight_map();
    map["ghost"] = first_shard;                            // in no shard
    map.erase("model.norm.weight");                        // not listed
    map["lm_head.weight"] = first_shard;                   // in another shard
    map["model.layers.9.weight"] = "missing.safetensors";  // absent shard
    map["bad"] = "../up.safetensors";                      // not a plain file name
    auto second = second_shard_tensors();
    second.push_back(attn::safetensors_entry("model.layers.0.self_attn.k_proj.weight", ramp(2, 4)));  // duplicated
    const std::string what =
        expect_index_error(index_text(map),
                           {"tensors in no shard: 'ghost'", "tensors the index does not list: 'model.norm.weight'",
                            "tensors in another shard than the index says: 'lm_head.weight'",
                            "shards listed but absent: missing.safetensors", "'../up.safetensors' (contains '..'",
                            "tensors duplicated in two shards: 'model.layers.0.self_attn.k_proj.weight'"},
                           first_shard_tensors(), second);
    CHECK(contains(what, "the shard index is invalid or does not match its shards"));
}

TEST_CASE("tensor files corrupt: a long list of problems is cut after ten per kind") {
    auto map = weight_map();
    for (int k = 0; k < 25; ++k) map["ghost." + std::to_string(100 + k)] = first_shard;
    const std::string what = expect_index_error(index_text(map), {"'ghost.109'", "and 15 more"});
    CHECK_FALSE(contains(what, "'ghost.110'"));
}

// ---------------------------------------------------------------------------
// Shards that are themselves broken: SafeTensors' errors, naming the shard

TEST_CASE("tensor files corrupt: a truncated shard") {
    ShardedDirectory directory(index_text(weight_map()));
    const fs::path shard = directory.dir.path / second_shard;
    fs::resize_file(shard, fs::file_size(shard) - 5);
    const std::string what = thrown_format_error([&] { (void)attn::TensorFiles::open(directory.dir.path); });
    CHECK(contains(what, shard.string()));
    CHECK(contains(what, "truncated"));
}

TEST_CASE("tensor files corrupt: a shard whose header is not JSON") {
    ShardedDirectory directory(index_text(weight_map()));
    const fs::path shard = directory.dir.path / first_shard;
    write_index_text(shard, std::string("\x04\0\0\0\0\0\0\0{{{{", 12));
    const std::string what = thrown_format_error([&] { (void)attn::TensorFiles::open(directory.dir.path); });
    CHECK(contains(what, shard.string()));
    CHECK(contains(what, "not valid JSON"));
}

TEST_CASE("tensor files: a shard named by the index that is a directory") {
    ShardedDirectory directory(index_text(weight_map()));
    fs::remove(directory.dir.path / first_shard);
    fs::create_directory(directory.dir.path / first_shard);
    std::string what;
    try {
        (void)attn::TensorFiles::open(directory.dir.path);
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, (directory.dir.path / first_shard).string()));
}

TEST_CASE("tensor files: a shard truncated after open fails the read with io_error naming shard and tensor") {
    ShardedDirectory directory(index_text(weight_map()));
    const auto files = attn::TensorFiles::open(directory.dir.path);
    const fs::path shard = directory.dir.path / second_shard;
    fs::resize_file(shard, fs::file_size(shard) - 8);
    std::string what;
    try {
        (void)files.matrix<float>("lm_head.weight");
    } catch (const attn::io_error& e) {
        what = e.what();
    }
    CHECK(contains(what, shard.string()));
    CHECK(contains(what, "'lm_head.weight'"));
    CHECK(files.matrix<float>("model.embed_tokens.weight") == ramp(6, 4));  // the other shard is intact
}

// ---------------------------------------------------------------------------
// Requests the files cannot satisfy

TEST_CASE("tensor files: a missing tensor or a misshapen destination") {
    ShardedDirectory directory(index_text(weight_map()));
    const auto files = attn::TensorFiles::open(directory.dir.path);
    for (const std::string& what : {thrown_format_error([&] { (void)files.matrix<float>("model.layers.5.w"); }),
                                    thrown_format_error([&] { (void)files.source("model.layers.5.w"); }),
                                    thrown_format_error([&] { (void)files.info("model.layers.5.w"); })}) {
        CHECK(contains(what, directory.index_path().string()));
        CHECK(contains(what, "'model.layers.5.w'"));
        CHECK(contains(what, "2 shards"));
    }
    attn::Matrix<float> out(3, 3);
    const std::string what =
        thrown_format_error([&] { files.read_matrix_into("model.layers.0.self_attn.k_proj.weight", out, true); });
    CHECK(contains(what, (directory.dir.path / first_shard).string()));
    CHECK(contains(what, "'model.layers.0.self_attn.k_proj.weight'"));
    CHECK(contains(what, "(4 × 2)"));
}
