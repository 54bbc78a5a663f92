// attn_peak_memory: the peak-memory tests in one program (tests/peak_memory.hpp), compiled as one
// translation unit with the three files it runs, so that the loaders and Model<float> are compiled
// once for all three, not once per test.
//
//   attn_peak_memory safetensors   tensors of a safetensors file read one by one
//   attn_peak_memory gguf          a quantized GGUF model kept quantized
//   attn_peak_memory model         a checkpoint read into panels, F32 and BF16
//
// Exit status: 0 within the bound, 1 above it or on a failure, 77 where VmHWM cannot be read,
// 2 for an unknown kind.

#include <cstdio>
#include <string>

#include "peak_memory.hpp"

int main(int argc, char** argv) {
    const std::string kind = argc > 1 ? argv[1] : "";
    if (kind == "safetensors") return attn::test::safetensors_load::run(argc - 1, argv + 1);
    if (kind == "gguf") return attn::test::gguf_load::run(argc - 1, argv + 1);
    if (kind == "model") return attn::test::model_load::run(argc - 1, argv + 1);
    std::fprintf(stderr, "usage: %s safetensors|gguf|model\n", argc > 0 ? argv[0] : "attn_peak_memory");
    return 2;
}
