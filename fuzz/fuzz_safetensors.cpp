// libFuzzer target: arbitrary bytes → attn::SafeTensors::from_bytes and, written to a
// file, attn::SafeTensors::open (which reads the header, then each tensor on demand);
// the two must agree. Then every tensor is read in every way. Only attn::error may be
// thrown (and is caught); any other exception, crash, sanitizer report or broken
// invariant is a finding.
//
// Invariants checked for files that load: the tensors tile the data section, each
// conversion yields elements() values, a transposed read is the transpose of the plain
// one, and writing the tensors back with attn::safetensors_bytes gives a file that
// loads to the same tensors.

#include "fuzz_support.hpp"

#include <attn/formats/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

void require(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_safetensors: invariant broken: %s\n", what);
        std::abort();
    }
}

template <class F>
void tolerate(F&& f) {
    try {
        f();
    } catch (const attn::format_error&) {
        // wrong dtype or rank for this request: fine
    }
}

void read_everything(const attn::SafeTensors& file) {
    for (const std::string& name : file.names()) {
        const attn::TensorInfo& info = file.info(name);
        require(info.name == name, "info().name");
        require(info.begin <= info.end, "begin <= end");
        const std::vector<std::uint8_t> raw = file.raw(name);
        require(raw.size() == info.end - info.begin, "raw size");
        const std::size_t n = static_cast<std::size_t>(info.elements());
        require(n * attn::dtype_size(info.dtype) == raw.size(), "elements × dtype size");
        tolerate([&] { require(file.tensor<float>(name).values.size() == n, "tensor<float> size"); });
        tolerate([&] { require(file.tensor<double>(name).values.size() == n, "tensor<double> size"); });
        tolerate([&] { require(file.integers(name).size() == n, "integers size"); });
        tolerate([&] { require(static_cast<std::size_t>(file.matrix<float>(name).size()) == n, "matrix size"); });
        tolerate([&] { require(static_cast<std::size_t>(file.vector<double>(name).size()) == n, "vector size"); });
        tolerate([&] {
            const attn::Matrix<float> m = file.matrix<float>(name);
            const attn::Matrix<float> back = file.transposed_matrix<float>(name).transpose();
            require(back.rows() == m.rows() && back.cols() == m.cols(), "transposed_matrix shape");
            require(m.size() == 0 || std::memcmp(back.data(), m.data(), sizeof(float) * std::size_t(m.size())) == 0,
                    "transposed_matrix values");
        });
    }
}

void round_trip(const attn::SafeTensors& file) {
    std::vector<attn::SafeTensorsEntry> entries;
    for (const std::string& name : file.names()) {
        const attn::TensorInfo& info = file.info(name);
        entries.push_back({name, info.dtype, info.shape, file.raw(name)});
    }
    const auto again = attn::SafeTensors::from_bytes(attn::safetensors_bytes(entries, file.metadata()), "round trip");
    require(again.names() == file.names(), "round trip names");
    require(again.metadata() == file.metadata(), "round trip metadata");
    for (const std::string& name : file.names()) {
        require(file.raw(name) == again.raw(name), "round trip bytes");
        require(again.info(name).shape == file.info(name).shape, "round trip shape");
        require(again.info(name).dtype == file.info(name).dtype, "round trip dtype");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The same bytes from memory and from a file (read tensor by tensor) must give the
    // same verdict, the same message and the same tensors.
    static const attn_fuzz::ScratchFile scratch("fuzz_safetensors");
    const std::filesystem::path& path = scratch.hold(data, size);
    std::string memory_error, file_error;
    const auto from_memory = attn_fuzz::load_or_error(
        [&] { return attn::SafeTensors::from_bytes(std::vector<std::uint8_t>(data, data + size), path.string()); },
        memory_error);
    const auto from_file = attn_fuzz::load_or_error([&] { return attn::SafeTensors::open(path); }, file_error);
    require(from_memory.has_value() == from_file.has_value(), "open and from_bytes agree on accepting");
    require(memory_error == file_error, "open and from_bytes give the same message");
    if (!from_memory) return 0;  // a rejected file: the expected outcome for most inputs

    read_everything(*from_memory);
    read_everything(*from_file);
    require(from_file->names() == from_memory->names(), "open and from_bytes: names");
    require(from_file->metadata() == from_memory->metadata(), "open and from_bytes: metadata");
    for (const std::string& name : from_memory->names()) {
        require(from_file->raw(name) == from_memory->raw(name), "open and from_bytes: bytes");
        require(from_file->info(name).shape == from_memory->info(name).shape, "open and from_bytes: shape");
    }
    try {
        round_trip(*from_memory);
    } catch (const attn::error& e) {
        std::fprintf(stderr, "fuzz_safetensors: a valid file does not round-trip: %s\n", e.what());
        std::abort();
    }
    return 0;
}
