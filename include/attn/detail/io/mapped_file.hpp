#pragma once
// A whole file mapped read-only into memory (POSIX mmap), for readers that hand out
// pointers to tensor bytes instead of copying them. The pages are the kernel's page
// cache: mapping a file allocates nothing the size of the file.
//
// Unlike ReadOnlyFile, a mapping cannot notice that the file changed after it was
// opened: if another process truncates the file, touching a page past its new end
// raises SIGBUS. Use it for files nothing else rewrites (or read through ReadOnlyFile).
// Where mmap is not available (or with ATTN_PORTABLE_FILE_IO), constructing one throws
// io_error.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"

#if !defined(ATTN_PORTABLE_FILE_IO) && (defined(__unix__) || defined(__APPLE__))
#define ATTN_DETAIL_POSIX_MAPPING 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#endif

namespace attn::detail {

class MappedFile {
public:
    /// Maps `path` read-only; io_error naming it if it cannot be opened or mapped.
    explicit MappedFile(const std::filesystem::path& path) : name_(path.string()) {
#ifdef ATTN_DETAIL_POSIX_MAPPING
        int descriptor;
        do {
            descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        } while (descriptor < 0 && errno == EINTR);
        if (descriptor < 0) throw io_error(message("cannot open '", name_, "': ", std::strerror(errno)));
        struct stat status;
        if (::fstat(descriptor, &status) != 0) {
            const int failure = errno;
            ::close(descriptor);
            throw io_error(message("cannot inspect '", name_, "': ", std::strerror(failure)));
        }
        if (S_ISDIR(status.st_mode)) {
            ::close(descriptor);
            throw io_error(message("'", name_, "' is a directory, not a file"));
        }
        size_ = static_cast<std::uint64_t>(status.st_size);
        if (size_ > 0) {  // mmap of 0 bytes fails; an empty file maps to no pages
            void* start = ::mmap(nullptr, static_cast<std::size_t>(size_), PROT_READ, MAP_PRIVATE, descriptor, 0);
            const int failure = errno;
            if (start == MAP_FAILED) {
                ::close(descriptor);
                throw io_error(message("cannot map '", name_, "' into memory: ", std::strerror(failure)));
            }
            data_ = static_cast<const std::uint8_t*>(start);
        }
        ::close(descriptor);  // the mapping keeps the file
#else
        throw io_error(message("cannot map '", name_, "' into memory: memory mapping is not available here"));
#endif
    }

    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    ~MappedFile() {
#ifdef ATTN_DETAIL_POSIX_MAPPING
        if (data_) ::munmap(const_cast<std::uint8_t*>(data_), static_cast<std::size_t>(size_));
#endif
    }

    /// The first byte (nullptr for an empty file).
    const std::uint8_t* data() const {
        return data_;
    }

    /// The size in bytes when the file was mapped.
    std::uint64_t size() const {
        return size_;
    }

    const std::string& name() const {
        return name_;
    }

private:
    std::string name_;
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
};

}  // namespace attn::detail
