// attn/formats/manifest.hpp: reading manifest.json — its format and version, settings and file names.
#include <doctest/doctest.h>
#include <attn/formats/manifest.hpp>

#include <fstream>

#include "model_fixture.hpp"

using attn::test::TinyModel;

TEST_CASE("read_manifest: the fixture's settings, activation and pairing, and the files it names") {
    TinyModel tiny("manifest_read");
    tiny.manifest["settings"]["activation"] = "gelu_tanh";
    tiny.manifest["settings"]["rope_pairing"] = "interleaved";
    tiny.write();
    const attn::Manifest manifest = attn::read_manifest(tiny.directory);
    CHECK(manifest.settings.layers == 2);
    CHECK(manifest.settings.heads == 2);
    CHECK(manifest.settings.dimensions == 8);
    CHECK(manifest.settings.head_size == 4);
    CHECK(manifest.settings.mlp_width == 16);
    CHECK(manifest.settings.longest == 12);
    CHECK(manifest.settings.layer(1).activation == attn::MlpActivation::gelu_tanh);
    CHECK(manifest.settings.layer(1).rotary.pairing == attn::RopePairing::interleaved);
    CHECK(manifest.settings.layer(0).rotary.rotated == manifest.settings.head_size);
    CHECK(manifest.weights == tiny.directory / "model.safetensors");
    CHECK(manifest.vocabulary == tiny.directory / "vocabulary.txt");
    CHECK(manifest.merges == tiny.directory / "merges.txt");
}

TEST_CASE("read_manifest: the shipped store model's manifest") {
    const attn::Manifest manifest = attn::read_manifest(std::filesystem::path(ATTN_SOURCE_DIR) / "models" / "store");
    CHECK(manifest.settings.layers == 4);
    CHECK(manifest.settings.longest == 160);
    CHECK(manifest.settings.vocabulary_size == 2048);
    CHECK(manifest.settings.layer(3).activation == attn::MlpActivation::gelu_erf);
    CHECK(manifest.settings.layer(3).rotary.pairing == attn::RopePairing::rotate_half);
}

namespace {
template <class Edit>
void check_refused(const char* name, Edit edit, const char* expected) {
    TinyModel tiny(name);
    edit(tiny.manifest);
    tiny.write();
    CHECK_THROWS_WITH_AS(attn::read_manifest(tiny.directory), doctest::Contains(expected), attn::format_error);
}
}  // namespace

TEST_CASE("read_manifest: another format, a future version or none are format_errors") {
    check_refused(
        "manifest_v2", [](nlohmann::json& m) { m["version"] = 2; },
        "\"version\" is 2; this attn reads version 1 (a newer attn may read it)");
    check_refused(
        "manifest_version_string", [](nlohmann::json& m) { m["version"] = "1"; }, "\"version\" is \"1\"");
    check_refused(
        "manifest_no_version", [](nlohmann::json& m) { m.erase("version"); }, "missing \"version\"");
    check_refused(
        "manifest_format", [](nlohmann::json& m) { m["format"] = "gguf"; },
        "\"format\" is \"gguf\", expected \"attn-store-model\"");
    check_refused(
        "manifest_no_format", [](nlohmann::json& m) { m.erase("format"); }, "missing \"format\"");
}

TEST_CASE("read_manifest: malformed entries are format_errors naming the file and the entry") {
    check_refused(
        "manifest_array",
        [](nlohmann::json& m) {
            m = nlohmann::json::array({1, 2});
        },
        "must be a JSON object");
    check_refused(
        "manifest_settings_array", [](nlohmann::json& m) { m["settings"] = nlohmann::json::array(); },
        "\"settings\" must be an object");
    check_refused(
        "manifest_weights_number", [](nlohmann::json& m) { m["weights"] = 3; }, "\"weights\" must be a string");
    check_refused(
        "manifest_no_tokenizer", [](nlohmann::json& m) { m.erase("tokenizer"); }, "missing \"tokenizer\"");
    check_refused(
        "manifest_vocabulary", [](nlohmann::json& m) { m["tokenizer"].erase("vocabulary"); },
        "missing \"tokenizer.vocabulary\"");
    check_refused(
        "manifest_epsilon", [](nlohmann::json& m) { m["settings"]["norm_epsilon"] = -1; },
        "settings.norm_epsilon must be a positive number");
    check_refused(
        "manifest_odd_head",
        [](nlohmann::json& m) {
            m["settings"]["head_size"] = 3;
            m["settings"]["heads"] = 1;
            m["settings"]["dimensions"] = 3;
        },
        "head_size must be even");
    check_refused(
        "manifest_tied", [](nlohmann::json& m) { m["settings"]["tied_embeddings"] = false; },
        "settings.tied_embeddings = false is not supported");
}

TEST_CASE("read_manifest: a missing manifest is an io_error; text that is not JSON a format_error") {
    CHECK_THROWS_WITH_AS(attn::read_manifest("/nonexistent/attn/model"), doctest::Contains("manifest.json"),
                         attn::io_error);
    TinyModel tiny("manifest_not_json");
    tiny.write();
    std::ofstream(tiny.directory / "manifest.json") << "{\"format\": ";
    CHECK_THROWS_WITH_AS(attn::read_manifest(tiny.directory), doctest::Contains("not valid JSON"), attn::format_error);
}
