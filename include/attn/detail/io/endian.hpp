#pragma once
// The host's byte order, for the readers and writers of little-endian files
// (safetensors, .npy). C++17 has no std::endian.

#include <cstdint>
#include <cstring>

namespace attn::detail {

inline bool host_is_little_endian() {
    const std::uint16_t one = 1;
    std::uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

}  // namespace attn::detail
