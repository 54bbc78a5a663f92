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

#include <attn/formats/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

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

/// A file of this process's own: in memory (memfd, reached through /proc/self/fd)
/// where Linux offers it, since rewriting a disk file per input costs milliseconds;
/// else a temporary file, removed at exit.
class ScratchFile {
public:
    ScratchFile() {
#ifdef __linux__
        descriptor_ = ::memfd_create("fuzz_safetensors", MFD_CLOEXEC);
        if (descriptor_ >= 0) path_ = "/proc/self/fd/" + std::to_string(descriptor_);
#endif
        if (descriptor_ < 0)
            path_ = std::filesystem::temp_directory_path() / ("fuzz_safetensors_" + std::to_string(::getpid()));
    }
    ~ScratchFile() {
        if (descriptor_ >= 0) {
            ::close(descriptor_);
        } else {
            std::error_code ignored;
            std::filesystem::remove(path_, ignored);
        }
    }

    /// Replaces the contents with `size` bytes at `data`.
    const std::filesystem::path& hold(const std::uint8_t* data, std::size_t size) const {
        if (descriptor_ >= 0) {
            require(::ftruncate(descriptor_, 0) == 0, "emptying the scratch file");
            for (std::size_t done = 0; done < size;) {
                const ssize_t wrote = ::pwrite(descriptor_, data + done, size - done, static_cast<off_t>(done));
                require(wrote > 0, "writing the scratch file");
                done += static_cast<std::size_t>(wrote);
            }
            return path_;
        }
        std::ofstream out(path_, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        out.close();
        require(out.good(), "writing the scratch file");
        return path_;
    }

private:
    int descriptor_ = -1;
    std::filesystem::path path_;
};

/// The outcome of loading: the file, or the error's message.
template <class Load>
std::optional<attn::SafeTensors> load(Load&& load_file, std::string& error) {
    try {
        return load_file();
    } catch (const attn::error& e) {
        error = e.what();
        return std::nullopt;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The same bytes from memory and from a file (read tensor by tensor) must give the
    // same verdict, the same message and the same tensors.
    static const ScratchFile scratch;
    const std::filesystem::path& path = scratch.hold(data, size);
    std::string memory_error, file_error;
    const auto from_memory =
        load([&] { return attn::SafeTensors::from_bytes(std::vector<std::uint8_t>(data, data + size), path.string()); },
             memory_error);
    const auto from_file = load([&] { return attn::SafeTensors::open(path); }, file_error);
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
