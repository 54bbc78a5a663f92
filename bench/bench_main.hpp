#pragma once
// The main() every benchmark binary shares: Google Benchmark with defaults a flag on the
// command line overrides (a filter that leaves out the long shapes, a short minimum time).

#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include <cstring>
#include <string>
#include <vector>

namespace bench {

/// Registers nothing itself: call after registering. default_filter (without the flag name) is
/// used unless --benchmark_filter is given, and default_min_time unless --benchmark_min_time is;
/// an empty default adds nothing.
inline int run(int argc, char** argv, const std::string& default_filter, const std::string& default_min_time) {
    Eigen::setNbThreads(1);
    std::vector<char*> args(argv, argv + argc);
    const auto given = [&](const char* flag) {
        for (int i = 1; i < argc; ++i)
            if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
        return false;
    };
    std::string filter = "--benchmark_filter=" + default_filter;
    std::string min_time = "--benchmark_min_time=" + default_min_time;
    if (!default_filter.empty() && !given("--benchmark_filter")) args.push_back(filter.data());
    if (!default_min_time.empty() && !given("--benchmark_min_time")) args.push_back(min_time.data());
    int count = int(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

}  // namespace bench
