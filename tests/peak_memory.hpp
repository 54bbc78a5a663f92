#pragma once
// What the peak-memory tests share. One program, attn_peak_memory (tests/peak_memory_main.cpp),
// measures three kinds of load, named by its first argument: `safetensors`
// (tests/safetensors_peak_memory.cpp), `gguf` (tests/gguf_peak_memory.cpp) and `model`
// (tests/model_peak_memory.cpp). Each runs the program again as a child that loads a file and
// prints "<peak> <bytes>", so that the peak resident set (VmHWM) is that load's alone, and holds
// the ratio to a bound (not under a sanitizer, whose shadow memory counts too).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "sanitizers.hpp"

namespace attn::test {

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

/// A measurement's parent side: this program, which it runs again as its child, and a fresh
/// temporary directory (not yet created) for the files it writes.
struct Parent {
    std::string kind;  ///< the program's first argument: safetensors, gguf or model
    std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
    std::filesystem::path scratch = std::filesystem::temp_directory_path() /
                                    ("attn_" + kind + "_peak_memory_" + std::to_string(std::random_device{}()));

    /// "'<this program>' <kind> --measure <arguments>": the child, which loads and prints "<peak> <bytes>".
    std::string child_command(const std::string& arguments) const {
        return "'" + self.string() + "' " + kind + " --measure " + arguments;
    }
};

/// A child run with the wrong arguments: says what it takes, exit status 2.
inline int usage_error(const char* arguments) {
    std::fprintf(stderr, "usage: attn_peak_memory %s\n", arguments);
    return 2;
}

/// The three measurements, each as parent (writes its files, runs and judges its children) and as
/// child (the arguments after `--measure`).
namespace safetensors_load {
int parent(const Parent& parent);
int child(int argc, char** argv);
}  // namespace safetensors_load
namespace gguf_load {
int parent(const Parent& parent);
int child(int argc, char** argv);
}  // namespace gguf_load
namespace model_load {
int parent(const Parent& parent);
int child(int argc, char** argv);
}  // namespace model_load

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
