#pragma once
// Nothing public.
namespace attn::detail {
inline int hidden() {
    return 0;
}
}  // namespace attn::detail
