#pragma once
namespace attn {

inline const char* text() {
    return "never closed; }

}  // namespace attn
