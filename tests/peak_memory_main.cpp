// attn_peak_memory: the peak-memory tests in one program (tests/peak_memory.hpp), compiled as one
// translation unit with the three files it runs, so that the loaders are compiled once for all
// three, not once per test; Model<float> and its forward pass come compiled from
// attn_model_instance (examples/store/model_instance.hpp).
//
//   attn_peak_memory safetensors   tensors of a safetensors file read one by one
//   attn_peak_memory gguf          a quantized GGUF model kept quantized
//   attn_peak_memory model         a checkpoint read into panels, F32 and BF16
//
// Exit status: 0 within the bound, 1 above it or on a failure, 77 where VmHWM cannot be read,
// 2 for an unknown kind or a child run with the wrong arguments.

#include <cstdio>
#include <string>

#include "peak_memory.hpp"

namespace {

using namespace attn::test;

struct Kind {
    const char* name;
    int (*parent)(const Parent&);
    int (*child)(int, char**);
};
constexpr Kind kinds[] = {{"safetensors", safetensors_load::parent, safetensors_load::child},
                          {"gguf", gguf_load::parent, gguf_load::child},
                          {"model", model_load::parent, model_load::child}};

}  // namespace

int main(int argc, char** argv) {
    const std::string name = argc > 1 ? argv[1] : "";
    for (const Kind& kind : kinds) {
        if (name != kind.name) continue;
        if (argc > 2 && std::string(argv[2]) == "--measure") return kind.child(argc - 3, argv + 3);
        if (peak_resident_bytes() < 0) {
            std::printf("no VmHWM in /proc/self/status: peak memory not measured\n");
            return skipped;
        }
        return kind.parent(Parent{name});
    }
    return usage_error("safetensors|gguf|model");
}
