#pragma once
// TEMPORARY shim: one safetensors file behind the TensorFiles interface.
#include <filesystem>
#include <string>
#include <vector>

#include "attn/model/safetensors.hpp"

namespace attn {

class TensorFiles {
public:
    static TensorFiles open(const std::filesystem::path& directory) { return open_file(directory / "model.safetensors"); }
    static TensorFiles open_file(const std::filesystem::path& path) { return TensorFiles(SafeTensors::open(path)); }
    std::string description() const { return file_.source(); }
    std::string source(std::string_view) const { return file_.source(); }
    std::vector<std::string> names() const { return file_.names(); }
    bool contains(std::string_view name) const { return file_.contains(name); }
    const TensorInfo& info(std::string_view name) const { return file_.info(name); }
    template <class T>
    Vector<T> vector(std::string_view name) const {
        return file_.vector<T>(name);
    }
    template <class T, class Block>
    void read_matrix_into(std::string_view name, Block&& out, bool transpose) const {
        const Matrix<T> m = file_.matrix<T>(name);
        if (transpose)
            out = m.transpose();
        else
            out = m;
    }

private:
    explicit TensorFiles(SafeTensors file) : file_(std::move(file)) {}
    SafeTensors file_;
};

}  // namespace attn
