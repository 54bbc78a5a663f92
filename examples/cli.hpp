#pragma once
// Command-line handling shared by the examples: --help for all, --seed N for the ones
// that draw random numbers. No dependency beyond the standard library.
//
//   --help       usage on stdout, exit status 0
//   --seed N     N a non-negative integer below 2^64 (also --seed=N); default 2026
//   anything else (an unknown flag, a missing or non-numeric seed): the problem and
//   the usage on stderr, exit status 2

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace examples {

/// What an example is, for its usage text.
struct Program {
    const char* name;
    const char* summary;
    bool takes_seed = true;
};

struct Options {
    std::uint64_t seed = 2026;
};

inline void print_usage(std::ostream& out, const Program& program) {
    out << "usage: " << program.name << (program.takes_seed ? " [--seed N]" : "") << " [--help]\n\n"
        << program.summary << "\n\noptions:\n";
    if (program.takes_seed)
        out << "  --seed N  seed for np.random.default_rng, a non-negative integer (default 2026,\n"
               "            the seed of the chapter's printed output)\n";
    out << "  --help    show this help and exit\n";
}

/// A decimal non-negative integer that fits in 64 bits, nothing else (no sign, no spaces).
inline std::optional<std::uint64_t> parse_seed(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

/// A flag's whole number from `low` to `high` (0 ≤ low ≤ high), written as parse_seed reads one:
/// digits only. The examples' and attn_bench_checkpoint's whole-number flags go through it, so
/// that none takes what std::stol would (" 7", "+7", "7 " and the 7 of "7x" are refused); each
/// names its flag and range in its own words when it gets nullopt. (Lists of token ids keep
/// store::parse_ids, which calls a negative entry "not a token id".)
inline std::optional<long long> parse_whole_number(std::string_view text, long long low, long long high) {
    const std::optional<std::uint64_t> value = parse_seed(text);
    if (!value || *value < static_cast<std::uint64_t>(low) || *value > static_cast<std::uint64_t>(high))
        return std::nullopt;
    return static_cast<long long>(*value);
}

[[noreturn]] inline void usage_error(const Program& program, const std::string& problem) {
    std::cerr << program.name << ": " << problem << "\n";
    print_usage(std::cerr, program);
    std::exit(2);
}

/// Parses the command line; returns only if it is valid (see the top of this file).
inline Options parse_command_line(int argc, char** argv, const Program& program) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            print_usage(std::cout, program);
            std::exit(0);
        }
        std::optional<std::string_view> seed_text;
        if (program.takes_seed && arg == "--seed") {
            if (i + 1 >= argc) usage_error(program, "--seed needs a value");
            seed_text = std::string_view(argv[++i]);
        } else if (program.takes_seed && arg.substr(0, 7) == "--seed=") {
            seed_text = arg.substr(7);
        } else {
            usage_error(program, "unknown argument '" + std::string(arg) + "'");
        }
        const std::optional<std::uint64_t> seed = parse_seed(*seed_text);
        if (!seed)
            usage_error(program,
                        "--seed needs a non-negative integer below 2^64, got '" + std::string(*seed_text) + "'");
        options.seed = *seed;
    }
    return options;
}

}  // namespace examples
