#pragma once
// What the fuzz targets of file readers share: a scratch file to hand the input to a reader
// that opens a path, and loading with the error's message kept, so that the in-memory and the
// file readers can be held to the same verdict.

#include <attn/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

namespace attn_fuzz {

/// A file of this process's own: in memory (memfd, reached through /proc/self/fd) where
/// Linux offers it, since rewriting a disk file per input costs milliseconds; else a
/// temporary file, removed at exit. `name` names it, and its failures.
class ScratchFile {
public:
    explicit ScratchFile(const char* name) : name_(name) {
#ifdef __linux__
        descriptor_ = ::memfd_create(name, MFD_CLOEXEC);
        if (descriptor_ >= 0) path_ = "/proc/self/fd/" + std::to_string(descriptor_);
#endif
        if (descriptor_ < 0)
            path_ = std::filesystem::temp_directory_path() / (std::string(name) + "_" + std::to_string(::getpid()));
    }
    ~ScratchFile() {
        if (descriptor_ >= 0) {
            ::close(descriptor_);
        } else {
            std::error_code ignored;
            std::filesystem::remove(path_, ignored);
        }
    }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;

    /// Replaces the contents with `size` bytes at `data`.
    const std::filesystem::path& hold(const std::uint8_t* data, std::size_t size) const {
        if (descriptor_ >= 0) {
            check(::ftruncate(descriptor_, 0) == 0, "emptying the scratch file");
            for (std::size_t done = 0; done < size;) {
                const ssize_t wrote = ::pwrite(descriptor_, data + done, size - done, static_cast<off_t>(done));
                check(wrote > 0, "writing the scratch file");
                done += static_cast<std::size_t>(wrote);
            }
            return path_;
        }
        std::ofstream out(path_, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        out.close();
        check(out.good(), "writing the scratch file");
        return path_;
    }

private:
    void check(bool condition, const char* what) const {
        if (!condition) {
            std::fprintf(stderr, "%s: invariant broken: %s\n", name_, what);
            std::abort();
        }
    }

    const char* name_;
    int descriptor_ = -1;
    std::filesystem::path path_;
};

/// The outcome of loading: what load_file returns, or nothing and the attn error's message.
template <class Load>
auto load_or_error(Load&& load_file, std::string& error) -> std::optional<decltype(load_file())> {
    try {
        return load_file();
    } catch (const attn::error& e) {
        error = e.what();
        return std::nullopt;
    }
}

}  // namespace attn_fuzz
