#pragma once
/* a comment that never ends
namespace attn {
}  // namespace attn
