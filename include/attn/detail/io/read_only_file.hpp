#pragma once
// A file opened for reading at explicit offsets, safe to read from several threads at
// once: on POSIX systems each read is a pread on one descriptor (no shared stream
// position); elsewhere (or with ATTN_PORTABLE_FILE_IO defined) a std::ifstream whose
// seek + read pairs are serialised by a mutex.
//
// The size and modification time seen at open are kept: every read first checks that
// the file still has them and refuses to read otherwise, and a read that comes up short
// (the file shrank between that check and the read) is an error too. A file replaced or
// rewritten after open therefore fails with io_error instead of handing back bytes
// that no longer match the header validated at open.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"

#if !defined(ATTN_PORTABLE_FILE_IO) && (defined(__unix__) || defined(__APPLE__))
#define ATTN_DETAIL_POSIX_FILE_IO 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#else
#include <fstream>
#include <mutex>
#endif

namespace attn::detail {

class ReadOnlyFile {
public:
    /// Opens `path`; io_error naming it if it is missing, a directory or unreadable.
    explicit ReadOnlyFile(const std::filesystem::path& path) : name_(path.string()) {
#ifdef ATTN_DETAIL_POSIX_FILE_IO
        do {
            descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        } while (descriptor_ < 0 && errno == EINTR);
        if (descriptor_ < 0) throw io_error(message("cannot open '", name_, "': ", std::strerror(errno)));
        try {
            const Stamp stamp = current_stamp();
            if (stamp.directory) throw io_error(message("'", name_, "' is a directory, not a file"));
            opened_ = stamp;
        } catch (...) {
            ::close(descriptor_);
            throw;
        }
#else
        std::error_code failed;
        if (std::filesystem::is_directory(path, failed))
            throw io_error(message("'", name_, "' is a directory, not a file"));
        stream_.open(path, std::ios::binary);
        if (!stream_) throw io_error(message("cannot open '", name_, "'"));
        path_ = path;
        opened_ = current_stamp();
#endif
    }

    ReadOnlyFile(const ReadOnlyFile&) = delete;
    ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

#ifdef ATTN_DETAIL_POSIX_FILE_IO
    ~ReadOnlyFile() {
        ::close(descriptor_);
    }
#endif

    const std::string& name() const {
        return name_;
    }

    /// The size in bytes when the file was opened.
    std::uint64_t size() const {
        return opened_.size;
    }

    /// Reads `count` bytes at byte `offset` into `out`. io_error naming the file and
    /// `what` (e.g. "tensor 'w'") if the bytes lie outside the file as opened, if the
    /// file's size or modification time changed since it was opened, or if reading fails.
    void read(std::uint64_t offset, std::size_t count, void* out, const std::string& what) const {
        if (offset > opened_.size || count > opened_.size - offset)
            throw io_error(message(name_, ": cannot read ", what, ": bytes [", offset, ", ", offset + count,
                                   ") lie outside the file (", opened_.size, " bytes)"));
        if (count == 0) return;
        check_unchanged(what);
#ifdef ATTN_DETAIL_POSIX_FILE_IO
        auto* bytes = static_cast<unsigned char*>(out);
        std::size_t done = 0;
        while (done < count) {
            // Linux reads at most about 2 GB per call; ask for no more than off_t and
            // ssize_t can express.
            const std::size_t chunk =
                std::min<std::size_t>(count - done, static_cast<std::size_t>(std::numeric_limits<int>::max()));
            const std::uint64_t at = offset + done;
            const ssize_t got = ::pread(descriptor_, bytes + done, chunk, static_cast<off_t>(at));
            if (got < 0) {
                if (errno == EINTR) continue;
                throw io_error(message(name_, ": cannot read ", what, " at byte ", at, ": ", std::strerror(errno)));
            }
            if (got == 0) throw changed(what, message("it ended at byte ", at));
            done += static_cast<std::size_t>(got);
        }
#else
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stream_.clear();
            stream_.seekg(static_cast<std::streamoff>(offset));
            stream_.read(static_cast<char*>(out), static_cast<std::streamsize>(count));
            const auto got = static_cast<std::size_t>(stream_.gcount());
            if (got != count) throw changed(what, message("it ended at byte ", offset + got));
        }
#endif
        check_unchanged(what);  // a change during the read may have mixed old and new bytes
    }

private:
    struct Stamp {
        std::uint64_t size = 0;
        std::int64_t modified_seconds = 0;
        std::int64_t modified_nanoseconds = 0;
        bool directory = false;
        bool operator==(const Stamp& o) const {
            return size == o.size && modified_seconds == o.modified_seconds &&
                   modified_nanoseconds == o.modified_nanoseconds;
        }
    };

    Stamp current_stamp() const {
        Stamp stamp;
#ifdef ATTN_DETAIL_POSIX_FILE_IO
        struct stat status;
        if (::fstat(descriptor_, &status) != 0)
            throw io_error(message("cannot inspect '", name_, "': ", std::strerror(errno)));
        stamp.directory = S_ISDIR(status.st_mode);
        stamp.size = static_cast<std::uint64_t>(status.st_size);
#if defined(__APPLE__)
        stamp.modified_seconds = static_cast<std::int64_t>(status.st_mtimespec.tv_sec);
        stamp.modified_nanoseconds = static_cast<std::int64_t>(status.st_mtimespec.tv_nsec);
#else
        stamp.modified_seconds = static_cast<std::int64_t>(status.st_mtim.tv_sec);
        stamp.modified_nanoseconds = static_cast<std::int64_t>(status.st_mtim.tv_nsec);
#endif
#else
        std::error_code failed;
        stamp.size = static_cast<std::uint64_t>(std::filesystem::file_size(path_, failed));
        if (failed) throw io_error(message("cannot inspect '", name_, "': ", failed.message()));
        const auto modified = std::filesystem::last_write_time(path_, failed);
        if (failed) throw io_error(message("cannot inspect '", name_, "': ", failed.message()));
        stamp.modified_nanoseconds = static_cast<std::int64_t>(modified.time_since_epoch().count());
#endif
        return stamp;
    }

    void check_unchanged(const std::string& what) const {
        const Stamp now = current_stamp();
        if (!(now == opened_))
            throw changed(what, now.size != opened_.size ? message("it is now ", now.size, " bytes")
                                                         : std::string("its modification time differs"));
    }

    io_error changed(const std::string& what, const std::string& how) const {
        return io_error(message(name_, ": cannot read ", what, ": the file changed after it was opened (it was ",
                                opened_.size, " bytes; ", how, ")"));
    }

    std::string name_;
    Stamp opened_;
#ifdef ATTN_DETAIL_POSIX_FILE_IO
    int descriptor_ = -1;
#else
    std::filesystem::path path_;
    mutable std::ifstream stream_;
    mutable std::mutex mutex_;
#endif
};

}  // namespace attn::detail
