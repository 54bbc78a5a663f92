#pragma once
// Sequential little-endian reading of an untrusted binary header, from an opened file
// (ReadOnlyFile: pread, 64 KiB at a time) or from bytes in memory, never past the end.
//
// Every read first checks that the bytes it needs lie inside the source and, if not,
// throws format_error saying what was being read, where, and how many bytes it needed:
// nothing is read, and nothing sized from the file is allocated, before that check. The
// caller checks counts read from the file (string lengths, array lengths) against
// remaining() before reserving room for them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
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
    /// Reads `file` from byte 0. `name` starts every error message.
    BoundedReader(const ReadOnlyFile& file, std::string name)
        : file_(&file), size_(file.size()), name_(std::move(name)) {}

    /// Reads the `size` bytes at `memory` from the first.
    BoundedReader(const std::uint8_t* memory, std::uint64_t size, std::string name)
        : memory_(memory), size_(size), name_(std::move(name)) {}

    /// Bytes read so far: the offset of the next one.
    std::uint64_t position() const { return position_; }

    /// Bytes left after position().
    std::uint64_t remaining() const { return size_ - position_; }

    /// Throws format_error unless `count` more bytes lie inside the source.
    void require(std::uint64_t count, const std::string& what) const {
        if (count > remaining())
            throw format_error(message(name_, ": ", what, " at byte ", position_, " needs ", count, " bytes, but only ",
                                       remaining(), " remain before the end of the file (", size_, " bytes)"));
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
            const auto take =
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

private:
    /// Bytes fetched at a time: few preads for a header of many short fields, and no
    /// burden in memory.
    static constexpr std::size_t chunk_bytes = std::size_t(1) << 16;

    template <class U>
    U scalar(const std::string& what) {
        U value;
        bytes(sizeof value, &value, what);  // little-endian host
        return value;
    }

    /// Refills the buffer from position_ (called with bytes left in the source).
    void fill(const std::string& what) {
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, remaining()));
        buffer_.resize(count);
        buffer_position_ = 0;
        if (file_)
            file_->read(position_, count, buffer_.data(), what);
        else
            std::memcpy(buffer_.data(), memory_ + position_, count);
    }

    const ReadOnlyFile* file_ = nullptr;
    const std::uint8_t* memory_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint8_t> buffer_;  // the source's bytes [position_ - buffer_position_, ...)
    std::size_t buffer_position_ = 0;
    std::string name_;
};

}  // namespace attn::detail
