#pragma once
// The tensors of a Hugging Face model directory as one namespace, whether they sit in
// one model.safetensors or in shards listed by model.safetensors.index.json:
//
//   {"metadata": {"total_size": 1234},                      (optional, any object)
//    "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors", ...}}
//
// TensorFiles::open reads the index, opens each shard it names once (header only: see
// SafeTensors) and checks the index against the shards' headers before any tensor is
// read. Every problem found is reported together, in one format_error naming the index
// ("<index>: the shard index is invalid or does not match its shards; <kind>: <items>; ..."):
//   * a weight_map value that is not a string, or not a plain file name in the
//     directory (empty, absolute, with a path separator, "..", ':' or a control
//     character);
//   * a shard the index names that does not exist;
//   * a tensor the index maps to a shard that does not hold it (in no shard), a
//     tensor a shard holds that the index does not list or maps to another shard,
//     and a tensor held by two shards (duplicated);
//   * a key given twice in the index, and "metadata" that is not an object.
// Problems that leave nothing to check (the index is not JSON, not an object, or has
// no weight_map object) throw at once. A shard that exists but cannot be read or is
// malformed throws SafeTensors::open's io_error or format_error, naming the shard.
//
// Reading delegates to the shard that holds the tensor, with SafeTensors' API and
// guarantees (const methods are safe to call from several threads at once).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/core/types.hpp"
#include "attn/detail/check.hpp"
#include "attn/error.hpp"
#include "attn/formats/safetensors.hpp"

namespace attn {

/// A model.safetensors.index.json, parsed.
struct ShardIndex {
    std::map<std::string, std::string> weight_map;       ///< tensor name → shard file name (plain file names only)
    nlohmann::json metadata = nlohmann::json::object();  ///< the "metadata" object, empty if absent
};

namespace detail {

/// Problems found in an index, grouped by kind in the order the kinds first appear; one
/// message lists them all (at most `shown` items per kind, then how many more).
class IndexProblems {
public:
    void add(const std::string& kind, std::string item) {
        for (auto& [k, items] : kinds_)
            if (k == kind) {
                items.push_back(std::move(item));
                return;
            }
        kinds_.push_back({kind, {std::move(item)}});
    }

    bool empty() const { return kinds_.empty(); }

    std::string text() const {
        constexpr std::size_t shown = 10;
        std::string out;
        for (const auto& [kind, items] : kinds_) {
            out += " " + kind + ": ";
            for (std::size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
            if (items.size() > shown) out += message(" and ", items.size() - shown, " more");
            out += ";";
        }
        if (!out.empty()) out.pop_back();
        return out;
    }

private:
    std::vector<std::pair<std::string, std::vector<std::string>>> kinds_;
};

/// Why `name` is not a plain file name that stays in the index's directory, or nullptr.
inline const char* shard_file_name_problem(const std::string& name) {
    if (name.empty()) return "empty";
    if (name == "." || name == "..") return "not a file name";
    if (name.find("..") != std::string::npos) return "contains '..'";
    if (name.find_first_of("/\\") != std::string::npos) return "contains a path separator";
    if (name.find(':') != std::string::npos) return "contains ':' (a drive or stream name)";
    for (const char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return "contains a control character";
    if (std::filesystem::path(name).is_absolute()) return "absolute";
    return nullptr;
}

/// Parses an index's text. Throws format_error naming `index_name` when there is nothing
/// to check (not JSON, not an object, no weight_map object); appends every other problem
/// to `problems` and leaves the entries it concerns out of the result.
inline ShardIndex parse_shard_index(std::string_view text, const std::string& index_name, IndexProblems& problems) {
    // nlohmann keeps the last of duplicate keys silently: note every repeat. Nesting is
    // bounded because no index needs more and the parsed value is freed recursively.
    constexpr std::size_t deepest = 32;
    std::vector<std::set<std::string>> keys;  // per open object or array
    std::vector<std::string> opened_by;       // the key whose value each open container is
    std::string last_key;
    const nlohmann::json::parser_callback_t callback = [&](int, nlohmann::json::parse_event_t event,
                                                           nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        switch (event) {
            case E::object_start:
            case E::array_start:
                if (keys.size() >= deepest)
                    throw format_error(message(index_name, ": the index is nested deeper than ", deepest,
                                               " levels, which no index needs"));
                opened_by.push_back(keys.empty() ? std::string() : last_key);
                keys.emplace_back();
                break;
            case E::object_end:
            case E::array_end:
                if (!keys.empty()) {
                    keys.pop_back();
                    opened_by.pop_back();
                }
                break;
            case E::key:
                if (keys.empty() || !parsed.is_string()) break;
                last_key = parsed.get<std::string>();
                if (!keys.back().insert(last_key).second) {
                    if (keys.size() == 2 && opened_by.back() == "weight_map")
                        problems.add("tensors listed twice in weight_map", "'" + last_key + "'");
                    else
                        problems.add("keys given twice", keys.size() == 1
                                                             ? "'" + last_key + "'"
                                                             : "'" + last_key + "' in '" + opened_by.back() + "'");
                }
                break;
            case E::value:
                break;
        }
        return true;
    };
    nlohmann::json index;
    try {
        index = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                      /*ignore_comments=*/false);
    } catch (const nlohmann::json::exception& e) {
        throw format_error(message(index_name, ": the index is not valid JSON: ", e.what()));
    }
    if (!index.is_object())
        throw format_error(message(index_name, ": the index is a JSON ", index.type_name(), ", expected an object"));
    const auto weight_map = index.find("weight_map");
    if (weight_map == index.end())
        throw format_error(message(index_name, ": the index has no \"weight_map\" (tensor name → shard file name)"));
    if (!weight_map->is_object())
        throw format_error(message(index_name, ": \"weight_map\" is a JSON ", weight_map->type_name(),
                                   ", expected an object of tensor name → shard file name"));

    ShardIndex out;
    const auto metadata = index.find("metadata");
    if (metadata != index.end()) {
        if (metadata->is_object())
            out.metadata = *metadata;
        else
            problems.add("\"metadata\" is not an object", detail::message("it is a JSON ", metadata->type_name()));
    }
    std::map<std::string, std::pair<const char*, std::size_t>> bad_files;  // file → (why, tensors)
    for (const auto& [tensor, file] : weight_map->items()) {
        if (!file.is_string()) {
            problems.add("weight_map values that are not strings",
                         message("'", tensor, "' → a JSON ", file.type_name()));
            continue;
        }
        const auto& name = file.get_ref<const std::string&>();
        if (const char* why = shard_file_name_problem(name)) {
            auto& bad = bad_files[name];
            bad.first = why;
            ++bad.second;
            continue;
        }
        out.weight_map.emplace(tensor, name);
    }
    for (const auto& [file, bad] : bad_files)
        problems.add(
            "shard file names that are not plain file names in the directory",
            message("'", file, "' (", bad.first, "; for ", bad.second, bad.second == 1 ? " tensor)" : " tensors)"));
    return out;
}

}  // namespace detail

/// The tensors of a model directory (one safetensors file, or shards and their index)
/// as one namespace, read tensor by tensor from the shard that holds each.
class TensorFiles {
public:
    static constexpr const char* index_file_name = "model.safetensors.index.json";
    static constexpr const char* single_file_name = "model.safetensors";
    /// Largest index accepted (an index of 100,000 tensors is a few MB).
    static constexpr std::uint64_t max_index_bytes = 100'000'000;

    /// Opens directory/model.safetensors.index.json and the shards it names if the index
    /// exists, else directory/model.safetensors. io_error if neither exists or one cannot
    /// be read; format_error for a malformed index, its mismatch with the shards (all
    /// problems in one message), or a malformed shard.
    static TensorFiles open(const std::filesystem::path& directory) {
        const std::filesystem::path index_path = directory / index_file_name;
        const std::filesystem::path single_path = directory / single_file_name;
        std::error_code failed;
        if (std::filesystem::exists(index_path, failed)) {
            const std::string text = read_index(index_path);
            return build(index_path.string(), text, [&](const std::string& file) -> std::optional<SafeTensors> {
                const std::filesystem::path shard = directory / file;
                std::error_code missing;
                if (!std::filesystem::exists(shard, missing)) return std::nullopt;
                return SafeTensors::open(shard);
            });
        }
        if (std::filesystem::exists(single_path, failed)) return open_file(single_path);
        throw io_error(detail::message("TensorFiles::open: neither '", index_path.string(), "' nor '",
                                       single_path.string(), "' exists"));
    }

    /// One safetensors file (a store model's, named by its manifest) as a TensorFiles.
    static TensorFiles open_file(const std::filesystem::path& file) {
        TensorFiles files;
        files.origin_ = file.string();
        files.shards_.push_back(SafeTensors::open(file));
        files.shard_files_.push_back(file.filename().string());
        for (const std::string& name : files.shards_.front().names()) files.where_.emplace(name, 0);
        return files;
    }

    /// What open does with an index's text, with the shards given in memory (by file
    /// name; a name the index uses that is not among them counts as absent). Shards the
    /// index does not name are dropped. `index_name` is used in error messages.
    static TensorFiles from_index_text(std::string_view index_json, std::map<std::string, SafeTensors> shards,
                                       std::string index_name = "<index>") {
        return build(std::move(index_name), index_json, [&](const std::string& file) -> std::optional<SafeTensors> {
            const auto found = shards.find(file);
            if (found == shards.end()) return std::nullopt;
            return std::move(found->second);
        });
    }

    /// The index's path (or model.safetensors' path when there is no index).
    const std::string& origin() const { return origin_; }

    /// The index's "metadata" object (empty without one or without an index).
    const nlohmann::json& index_metadata() const { return metadata_; }

    /// The shards, each opened once, and their file names (same order).
    const std::vector<SafeTensors>& shards() const { return shards_; }
    const std::vector<std::string>& shard_files() const { return shard_files_; }

    /// Tensor names over all shards, sorted (std::string order, i.e. bytewise).
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        out.reserve(where_.size());
        for (const auto& entry : where_) out.push_back(entry.first);
        return out;
    }

    std::size_t size() const { return where_.size(); }
    bool contains(std::string_view name) const { return where_.find(name) != where_.end(); }

    /// The shard holding tensor `name`; format_error naming the origin if there is none.
    const SafeTensors& shard(std::string_view name) const {
        const auto found = where_.find(name);
        if (found == where_.end())
            throw format_error(detail::message(origin_, ": no tensor '", name, "' in ", shards_.size(),
                                               shards_.size() == 1 ? " file" : " shards", " (they hold ", where_.size(),
                                               " tensors)"));
        return shards_[found->second];
    }

    /// The path of the shard holding tensor `name`.
    const std::string& source(std::string_view name) const { return shard(name).source(); }

    const TensorInfo& info(std::string_view name) const { return shard(name).info(name); }

    /// The tensor's shape, row-major (PyTorch's order): {out, in} for a Linear weight.
    const std::vector<std::int64_t>& shape(std::string_view name) const { return info(name).shape; }
    /// The tensor's dtype as safetensors names it ("F32", "BF16", …).
    std::string type_name(std::string_view name) const { return dtype_name(info(name).dtype); }

    /// See SafeTensors: a 2-D tensor [rows, cols] as a (rows × cols) matrix.
    template <class T>
    Matrix<T> matrix(std::string_view name) const {
        return shard(name).template matrix<T>(name);
    }

    /// See SafeTensors: a 2-D tensor [rows, cols] as its (cols × rows) transpose.
    template <class T>
    Matrix<T> transposed_matrix(std::string_view name) const {
        return shard(name).template transposed_matrix<T>(name);
    }

    /// See SafeTensors: a 2-D tensor written into a block (rows × cols), or (cols × rows)
    /// if `transpose`.
    template <class T = void, class Block>
    void read_matrix_into(std::string_view name, Block&& out, bool transpose = false) const {
        shard(name).template read_matrix_into<T>(name, std::forward<Block>(out), transpose);
    }

    /// See SafeTensors: rows first … first + count − 1 of a 2-D tensor, converted, into out.
    template <class T>
    void convert_rows(std::string_view name, Index first, Index count, T* out) const {
        shard(name).template convert_rows<T>(name, first, count, out);
    }

    /// See SafeTensors: a 1-D tensor as a column vector.
    template <class T>
    Vector<T> vector(std::string_view name) const {
        return shard(name).template vector<T>(name);
    }

    /// See SafeTensors: a floating tensor of any rank, values in row-major order.
    template <class T>
    TensorData<T> tensor(std::string_view name) const {
        return shard(name).template tensor<T>(name);
    }

    std::vector<std::int64_t> integers(std::string_view name) const { return shard(name).integers(name); }
    std::vector<std::uint8_t> raw(std::string_view name) const { return shard(name).raw(name); }

private:
    TensorFiles() = default;

    static std::string read_index(const std::filesystem::path& path) {
        const std::string name = path.string();
        std::error_code failed;
        if (std::filesystem::is_directory(path, failed))
            throw io_error(detail::message("TensorFiles::open: '", name, "' is a directory, not a file"));
        std::ifstream in(path, std::ios::binary);
        if (!in) throw io_error(detail::message("TensorFiles::open: cannot open '", name, "'"));
        in.seekg(0, std::ios::end);
        const std::streamoff size = in.tellg();
        if (size < 0) throw io_error(detail::message("TensorFiles::open: cannot read '", name, "'"));
        if (static_cast<std::uint64_t>(size) > max_index_bytes)
            throw format_error(detail::message(name, ": the index is ", size, " bytes, above the limit of ",
                                               max_index_bytes, " bytes"));
        in.seekg(0, std::ios::beg);
        std::string text(static_cast<std::size_t>(size), '\0');
        if (size > 0 && !in.read(text.data(), size))
            throw io_error(detail::message("TensorFiles::open: cannot read '", name, "' (", size, " bytes expected)"));
        return text;
    }

    /// Parses the index, opens each shard it names once through `open_shard` (nothing if
    /// absent) and checks the index against the shards' headers.
    static TensorFiles build(std::string index_name, std::string_view text,
                             const std::function<std::optional<SafeTensors>(const std::string&)>& open_shard) {
        detail::IndexProblems problems;
        ShardIndex index = detail::parse_shard_index(text, index_name, problems);

        TensorFiles files;
        files.origin_ = std::move(index_name);
        files.metadata_ = std::move(index.metadata);
        std::map<std::string, std::size_t> shard_number;  // file name → position in shards_
        std::map<std::string, std::size_t> absent;        // file name → tensors the index puts there
        for (const auto& [tensor, file] : index.weight_map) {
            if (shard_number.count(file)) continue;
            if (const auto missing = absent.find(file); missing != absent.end()) {
                ++missing->second;
                continue;
            }
            std::optional<SafeTensors> shard = open_shard(file);
            if (!shard) {
                absent.emplace(file, 1);
                continue;
            }
            shard_number.emplace(file, files.shards_.size());
            files.shards_.push_back(std::move(*shard));
            files.shard_files_.push_back(file);
        }
        for (const auto& [file, tensors] : absent)
            problems.add("shards listed but absent",
                         detail::message(file, " (for ", tensors, tensors == 1 ? " tensor)" : " tensors)"));

        std::map<std::string, std::vector<std::size_t>> holders;  // tensor name → shards holding it
        for (std::size_t s = 0; s < files.shards_.size(); ++s)
            for (const std::string& name : files.shards_[s].names()) holders[name].push_back(s);
        for (const auto& [name, held_by] : holders) {
            files.where_.emplace(name, held_by.front());
            const std::string& file = files.shard_files_[held_by.front()];
            if (held_by.size() > 1) {
                std::string where;
                for (std::size_t k = 0; k < held_by.size(); ++k)
                    where += (k ? " and " : "") + files.shard_files_[held_by[k]];
                problems.add("tensors duplicated in two shards", detail::message("'", name, "' (in ", where, ")"));
                continue;
            }
            const auto listed = index.weight_map.find(name);
            if (listed == index.weight_map.end())
                problems.add("tensors the index does not list", detail::message("'", name, "' (in ", file, ")"));
            else if (listed->second != file)
                problems.add(
                    "tensors in another shard than the index says",
                    detail::message("'", name, "' (the index says ", listed->second, ", found in ", file, ")"));
        }
        for (const auto& [tensor, file] : index.weight_map)
            if (shard_number.count(file) && !files.where_.count(tensor))
                problems.add("tensors in no shard",
                             detail::message("'", tensor, "' (the index says ", file, ", which does not hold it)"));
        if (!problems.empty())
            throw format_error(detail::message(
                files.origin_, ": the shard index is invalid or does not match its shards;", problems.text()));
        return files;
    }

    std::string origin_;
    nlohmann::json metadata_ = nlohmann::json::object();
    std::vector<SafeTensors> shards_;
    std::vector<std::string> shard_files_;
    std::map<std::string, std::size_t, std::less<>> where_;  // tensor name → position in shards_
};

}  // namespace attn
