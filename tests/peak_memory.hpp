#pragma once
// What the peak-memory tests share. One program, attn_peak_memory (tests/peak_memory_main.cpp),
// measures three kinds of load, named by its first argument: `safetensors`
// (tests/safetensors_peak_memory.cpp), `gguf` (tests/gguf_peak_memory.cpp) and `model`
// (tests/model_peak_memory.cpp). Each runs the program again as a child that loads a file and
// prints "<peak> <bytes>", so that the peak resident set (VmHWM) is that load's alone, and holds
// the ratio to a bound (not under a sanitizer, whose shadow memory counts too).

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace attn::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool under_sanitizer = true;
#else
constexpr bool under_sanitizer = false;
#endif
#else
constexpr bool under_sanitizer = false;
#endif

constexpr double peak_bound = 1.25;  ///< peak resident set over the bytes loaded
constexpr int skipped = 77;          ///< ctest's SKIP_RETURN_CODE: no VmHWM to read

/// The peak resident set in bytes (VmHWM), or -1 if /proc/self/status has none.
inline long long peak_resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
    return -1;
}

/// The three measurements. Each takes the arguments after its kind: none for the parent, or
/// `--measure ...` for the child, which the parent runs as "<this program> <kind> --measure ...".
namespace safetensors_load {
int run(int argc, char** argv);
}
namespace gguf_load {
int run(int argc, char** argv);
}
namespace model_load {
int run(int argc, char** argv);
}

/// A child's "<peak> <bytes>" line and exit status.
struct ChildMeasurement {
    bool read = false;
    long long peak = 0, bytes = 0;
    int exit_status = -1;
    bool ok() const { return read && exit_status == 0 && bytes > 0; }
};

/// Runs `command` and reads its "<peak> <bytes>".
inline ChildMeasurement measure_in_child(const std::string& command) {
    ChildMeasurement m;
    FILE* child = popen(command.c_str(), "r");
    m.read = child && std::fscanf(child, "%lld %lld", &m.peak, &m.bytes) == 2;
    m.exit_status = child ? pclose(child) : -1;
    return m;
}

}  // namespace attn::test
