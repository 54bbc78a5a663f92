#pragma once
namespace attn {

/// A function whose body never closes.
inline int broken(int x) {
    if (x > 0) {
        return x;
        return 0;
    }

}  // namespace attn
