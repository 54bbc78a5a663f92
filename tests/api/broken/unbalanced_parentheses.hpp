#pragma once
namespace attn {

/// Never closed: (
inline int call(int x {
    return x; }

}  // namespace attn
