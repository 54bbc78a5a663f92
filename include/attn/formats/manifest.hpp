#pragma once
// manifest.json: what a saved model declares (format, version, settings) and which files
// hold its tokenizer and weights. The one place the model layer reads JSON.

#include <nlohmann/json.hpp>
#if NLOHMANN_JSON_VERSION_MAJOR < 3 || (NLOHMANN_JSON_VERSION_MAJOR == 3 && NLOHMANN_JSON_VERSION_MINOR < 9)
#error "attn needs nlohmann_json 3.9 or newer (parse with ignore_comments)"
#endif

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/model/architectures.hpp"
#include "attn/model/types.hpp"

namespace attn {

/// A model directory's manifest, read and checked.
struct Manifest {
    ModelSettings settings;
    std::filesystem::path vocabulary;  ///< the tokenizer's vocabulary file, in the model's directory
    std::filesystem::path merges;      ///< the tokenizer's merges file
    std::filesystem::path weights;     ///< the safetensors file
};

/// The format and version this attn reads; a manifest that says otherwise is refused.
inline constexpr const char* kManifestFormat = "attn-store-model";
inline constexpr int kManifestVersion = 1;

namespace detail::manifest {

inline const nlohmann::json& member(const nlohmann::json& object, const char* key, const std::string& file,
                                    const char* label = nullptr) {
    const auto it = object.find(key);
    if (it == object.end()) throw format_error(message(file, ": missing \"", label ? label : key, "\""));
    return *it;
}

inline std::string string_member(const nlohmann::json& object, const char* key, const std::string& file,
                                 const char* label) {
    const nlohmann::json& value = member(object, key, file, label);
    if (!value.is_string()) throw format_error(message(file, ": \"", label, "\" must be a string"));
    return value.get<std::string>();
}

inline Index positive_integer(const nlohmann::json& settings, const char* key, const std::string& file) {
    const nlohmann::json& value = member(settings, key, file);
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0 || value.get<std::int64_t>() > (1 << 24))
        throw format_error(message(file, ": settings.", key, " must be a positive integer, got ", value.dump()));
    return static_cast<Index>(value.get<std::int64_t>());
}

inline double positive_number(const nlohmann::json& settings, const char* key, const std::string& file) {
    const nlohmann::json& value = member(settings, key, file);
    if (!value.is_number() || !(value.get<double>() > 0.0) || !std::isfinite(value.get<double>()))
        throw format_error(message(file, ": settings.", key, " must be a positive number, got ", value.dump()));
    return value.get<double>();
}

inline void expect_setting(const nlohmann::json& settings, const char* key, const nlohmann::json& supported,
                           const std::string& file) {
    const nlohmann::json& value = member(settings, key, file);
    if (value != supported)
        throw format_error(message(file, ": settings.", key, " = ", value.dump(), " is not supported (attn implements ",
                                   supported.dump(), ")"));
}

/// The choice settings[key] names, of `choices` (name, value).
template <class Choice>
Choice one_of(const nlohmann::json& settings, const char* key, const std::string& file,
              std::initializer_list<std::pair<const char*, Choice>> choices) {
    const nlohmann::json& value = member(settings, key, file);
    std::string names;
    for (const auto& [name, choice] : choices) {
        if (value == name) return choice;
        names += (names.empty() ? "\"" : " or \"") + std::string(name) + "\"";
    }
    throw format_error(message(file, ": settings.", key, " = ", value.dump(), " is not supported (", names, ")"));
}

inline void check_format(const nlohmann::json& manifest, const std::string& file) {
    const nlohmann::json& format = member(manifest, "format", file);
    if (format != kManifestFormat)
        throw format_error(message(file, ": \"format\" is ", format.dump(), ", expected \"", kManifestFormat, "\""));
    const nlohmann::json& version = member(manifest, "version", file);
    if (!version.is_number_integer() || version.get<std::int64_t>() != kManifestVersion)
        throw format_error(message(file, ": \"version\" is ", version.dump(), "; this attn reads version ",
                                   kManifestVersion, " (a newer attn may read it)"));
}

inline ModelSettings parse_settings(const nlohmann::json& manifest, const std::string& file) {
    const nlohmann::json& s = member(manifest, "settings", file);
    if (!s.is_object()) throw format_error(file + ": \"settings\" must be an object");
    ModelSettings settings;
    settings.architecture = Architecture::store;
    settings.layers = positive_integer(s, "layers", file);
    settings.heads = positive_integer(s, "heads", file);
    settings.dimensions = positive_integer(s, "dimensions", file);
    settings.head_size = positive_integer(s, "head_size", file);
    settings.mlp_width = positive_integer(s, "mlp_width", file);
    settings.longest = positive_integer(s, "longest", file);
    settings.vocabulary_size = positive_integer(s, "vocabulary_size", file);
    const double norm_epsilon = positive_number(s, "norm_epsilon", file);
    RotarySpec rotary;
    rotary.base = positive_number(s, "rope_base", file);
    if (settings.heads * settings.head_size != settings.dimensions)
        throw format_error(message(file, ": settings.heads (", settings.heads, ") × head_size (", settings.head_size,
                                   ") must equal dimensions (", settings.dimensions, ")"));
    if (settings.head_size % 2 != 0)
        throw format_error(message(file, ": settings.head_size must be even for rotary positions"));
    settings.key_value_heads = settings.heads;
    settings.end_token = 2;  // </s>: the store tokenizer's fixed ids are <s> <sep> </s> <unk>
    expect_setting(s, "norm", "layernorm", file);
    expect_setting(s, "attention_bias", false, file);
    expect_setting(s, "tied_embeddings", true, file);
    expect_setting(s, "weight_layout", "in_out", file);
    rotary.pairing =
        one_of<RopePairing>(s, "rope_pairing", file,
                            {{"rotate_half", RopePairing::rotate_half}, {"interleaved", RopePairing::interleaved}});
    rotary.rotated = settings.head_size;
    const MlpActivation activation = one_of<MlpActivation>(
        s, "activation", file, {{"gelu_erf", MlpActivation::gelu_erf}, {"gelu_tanh", MlpActivation::gelu_tanh}});
    describe_store_layers(settings, norm_epsilon, activation, rotary);
    return settings;
}

}  // namespace detail::manifest

/// Reads and checks directory/manifest.json. Throws io_error if it cannot be opened and
/// format_error, naming the file and the entry, if it is not JSON, is of another format
/// or version, or declares settings attn does not implement.
inline Manifest read_manifest(const std::filesystem::path& directory) {
    namespace json = detail::manifest;
    const std::filesystem::path path = directory / "manifest.json";
    const std::string file = path.string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error(detail::message(file, ": cannot open the model manifest"));
    const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_discarded()) throw format_error(detail::message(file, ": not valid JSON"));
    if (!manifest.is_object()) throw format_error(file + ": the manifest must be a JSON object");
    json::check_format(manifest, file);

    Manifest result;
    result.settings = json::parse_settings(manifest, file);
    const nlohmann::json& tokenizer = json::member(manifest, "tokenizer", file);
    result.vocabulary = directory / json::string_member(tokenizer, "vocabulary", file, "tokenizer.vocabulary");
    result.merges = directory / json::string_member(tokenizer, "merges", file, "tokenizer.merges");
    result.weights = directory / json::string_member(manifest, "weights", file, "weights");
    return result;
}

}  // namespace attn
