# attn's dependencies: the system's packages first (Debian: libeigen3-dev,
# nlohmann-json3-dev, doctest-dev, libbenchmark-dev); FetchContent downloads a
# source only where find_package finds nothing (FIND_PACKAGE_ARGS, CMake ≥ 3.24).
include(FetchContent)

if(NOT TARGET Eigen3::Eigen)
  FetchContent_Declare(Eigen3
    URL https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz
    FIND_PACKAGE_ARGS 3.4 NO_MODULE)  # reshaped(), PropagateNaN
  set(EIGEN_BUILD_DOC OFF CACHE BOOL "")
  FetchContent_MakeAvailable(Eigen3)
endif()

if(NOT TARGET nlohmann_json::nlohmann_json)
  FetchContent_Declare(nlohmann_json
    URL https://github.com/nlohmann/json/releases/download/v3.11.3/json.tar.xz
    FIND_PACKAGE_ARGS 3.9)  # parse(…, ignore_comments)
  FetchContent_MakeAvailable(nlohmann_json)
endif()

# Test and benchmark frameworks, only for attn's own targets.
macro(attn_require_doctest)
  if(NOT TARGET doctest::doctest)
    FetchContent_Declare(doctest
      URL https://github.com/doctest/doctest/archive/refs/tags/v2.4.11.tar.gz
      FIND_PACKAGE_ARGS 2.4)
    FetchContent_MakeAvailable(doctest)
  endif()
endmacro()

macro(attn_require_benchmark)
  if(NOT TARGET benchmark::benchmark)
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "")
    FetchContent_Declare(benchmark
      URL https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz
      FIND_PACKAGE_ARGS 1.6)
    FetchContent_MakeAvailable(benchmark)
  endif()
endmacro()
