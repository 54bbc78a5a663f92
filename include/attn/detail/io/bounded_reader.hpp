#pragma once
// Sequential little-endian reading of an untrusted binary header, from an opened file
// (ReadOnlyFile: pread, a chunk at a time) or from bytes in memory, never past a limit.
//
// Every read first checks that the bytes it needs lie before the limit and, if not,
// throws format_error saying what was being read, where, and how many bytes it needed:
// nothing is read, and nothing sized from the file is allocated, before that check. The
// caller checks counts read from the file (string lengths, array lengths) against
// remaining() before reserving room for them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/detail/io/read_only_file.hpp"
#include "attn/error.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attn/detail/io/bounded_reader.hpp supports little-endian hosts only"
#endif

namespace attn::detail {

class BoundedReader {
public:
    /// Reads `file` from byte 0 up to `limit` (≤ the file's size). `name` starts every
    /// error message.
    BoundedReader(const ReadOnlyFile& file, std::uint64_t limit, std::string name)
        : file_(&file), size_(file.size()), limit_(std::min(limit, file.size())), name_(std::move(name)) {}

    /// Reads `size` bytes at `memory` up to `limit` (≤ size).
    BoundedReader(const std::uint8_t* memory, std::uint64_t size, std::uint64_t limit, std::string name)
        : memory_(memory), size_(size), limit_(std::min(limit, size)), name_(std::move(name)) {}

    std::uint64_t position() const { return position_; }

    /// Bytes left before the limit.
    std::uint64_t remaining() const { return limit_ - position_; }

    std::uint64_t limit() const { return limit_; }

    /// Throws format_error unless `count` more bytes lie before the limit.
    void require(std::uint64_t count, const std::string& what) const {
        if (count > remaining())
            throw format_error(message(name_, ": ", what, " at byte ", position_, " needs ", count, " bytes, but only ",
                                       remaining(), " remain before ", limit_description()));
    }

    std::uint8_t u8(const std::string& what) { return scalar<std::uint8_t>(what); }
    std::uint16_t u16(const std::string& what) { return scalar<std::uint16_t>(what); }
    std::uint32_t u32(const std::string& what) { return scalar<std::uint32_t>(what); }
    std::uint64_t u64(const std::string& what) { return scalar<std::uint64_t>(what); }

    /// Copies the next `count` bytes into `out` (checked first).
    void bytes(std::uint64_t count, void* out, const std::string& what) {
        require(count, what);
        auto* destination = static_cast<std::uint8_t*>(out);
        std::uint64_t done = 0;
        while (done < count) {
            if (buffer_position_ == buffer_.size()) fill(what);
            const std::size_t take =
                static_cast<std::size_t>(std::min<std::uint64_t>(count - done, buffer_.size() - buffer_position_));
            std::memcpy(destination + done, buffer_.data() + buffer_position_, take);
            buffer_position_ += take;
            position_ += take;
            done += take;
        }
    }

    /// The next `count` bytes as a string (checked before the string is sized).
    std::string text(std::uint64_t count, const std::string& what) {
        require(count, what);
        std::string out(static_cast<std::size_t>(count), '\0');
        bytes(count, out.data(), what);
        return out;
    }

    /// Skips `count` bytes (checked first).
    void skip(std::uint64_t count, const std::string& what) {
        require(count, what);
        const std::uint64_t buffered = buffer_.size() - buffer_position_;
        if (count <= buffered) {
            buffer_position_ += static_cast<std::size_t>(count);
        } else {
            buffer_.clear();
            buffer_position_ = 0;
        }
        position_ += count;
    }

private:
    /// Bytes fetched from the file at a time: large enough that a header of many short
    /// fields costs few preads, small enough to be no burden.
    static constexpr std::size_t chunk_bytes = std::size_t(1) << 16;

    template <class U>
    U scalar(const std::string& what) {
        U value;
        bytes(sizeof value, &value, what);  // little-endian host
        return value;
    }

    /// Refills the buffer from position_ (called with bytes left before the limit).
    void fill(const std::string& what) {
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, remaining()));
        buffer_.resize(count);
        buffer_position_ = 0;
        if (file_)
            file_->read(position_, count, buffer_.data(), what);
        else
            std::memcpy(buffer_.data(), memory_ + position_, count);
    }

    std::string limit_description() const {
        if (limit_ == size_) return message("the end of the file (", size_, " bytes)");
        return message("the limit of ", limit_, " bytes on what a header may take");
    }

    const ReadOnlyFile* file_ = nullptr;
    const std::uint8_t* memory_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t limit_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint8_t> buffer_;  // bytes [position_ - buffer_position_, ...) of the source
    std::size_t buffer_position_ = 0;
    std::string name_;
};

}  // namespace attn::detail
