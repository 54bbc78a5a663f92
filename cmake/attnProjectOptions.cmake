# Build settings for attn's own tests, examples and benchmarks (never for consumers).
add_library(attn_project_options INTERFACE)
target_compile_options(attn_project_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic>
  $<$<AND:$<BOOL:${ATTN_WERROR}>,$<CXX_COMPILER_ID:GNU,Clang,AppleClang>>:-Werror>
  $<$<BOOL:${ATTN_NATIVE}>:-march=native>)
if(ATTN_SANITIZE)
  target_compile_options(attn_project_options INTERFACE -fsanitize=${ATTN_SANITIZE} -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  target_link_options(attn_project_options INTERFACE -fsanitize=${ATTN_SANITIZE})
endif()
# gcc 12's AVX-512 intrinsics headers trip -Wmaybe-uninitialized and -Wuninitialized inside
# Eigen (its exp of double packets; GCC bug 105593, fixed in gcc 13); only with -march=native on
# such machines.
if(ATTN_NATIVE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(attn_project_options INTERFACE -Wno-maybe-uninitialized -Wno-uninitialized)
endif()
find_package(Threads REQUIRED)
target_link_libraries(attn_project_options INTERFACE attn::attn Threads::Threads)

# attn::Model<float> and its forward pass compiled once (examples/store/model_instance.cpp) for the
# programs here that load a model: the store examples, the model benchmarks and the peak-memory
# test include model_instance.hpp, which declares them extern, and link this.
add_library(attn_model_instance STATIC EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/examples/store/model_instance.cpp)
target_link_libraries(attn_model_instance PUBLIC attn_project_options)
target_include_directories(attn_model_instance PUBLIC ${PROJECT_SOURCE_DIR}/examples/store)
