#pragma once

#define ATTN_VERSION_MAJOR 0
#define ATTN_VERSION_MINOR 1
#define ATTN_VERSION_PATCH 0

namespace attn {
inline constexpr const char* version = "0.1.0";
}
