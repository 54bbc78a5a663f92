#include <doctest/doctest.h>
#include <attn/core/types.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "sanitizers.hpp"

TEST_CASE_TEMPLATE("HeadStack: head(h) is a contiguous (rows × cols) slice, head axis first", T, float, double) {
    attn::HeadStack<T> stack(3, 2, 4);
    CHECK(stack.heads() == 3);
    CHECK(stack.rows() == 2);
    CHECK(stack.cols() == 4);
    CHECK(stack.size() == 24);
    stack.head(1)(1, 2) = T(7);
    CHECK(stack(1, 1, 2) == T(7));
    CHECK(stack.data()[1 * 8 + 1 * 4 + 2] == T(7));  // heads × rows × cols, row-major
    CHECK(stack.head(0).isZero());
    CHECK(stack.head(2).isZero());
}

TEST_CASE_TEMPLATE("HeadStack: a stack of 4 MiB or more starts on a 2 MiB boundary and behaves as a small one", T,
                   float, double) {
    // 2 × 1,024 × 1,024 numbers: 8 or 16 MB, from detail::LargeArrayAllocator (huge pages where there are)
    attn::HeadStack<T> large(2, 1024, 1024);
    REQUIRE(large.size() * sizeof(T) >= attn::detail::kLargeArrayBytes);
    CHECK(reinterpret_cast<std::uintptr_t>(large.data()) % attn::detail::kHugePageBytes == 0);
    CHECK(large.head(1).isZero());
    large(1, 1023, 1023) = T(3);
    attn::HeadStack<T> copy = large;
    CHECK(copy == large);
    CHECK(reinterpret_cast<std::uintptr_t>(copy.data()) % attn::detail::kHugePageBytes == 0);
    copy(0, 0, 0) = T(1);
    CHECK(copy != large);
    attn::HeadStack<T> small(2, 3, 4);
    small = std::move(copy);
    CHECK(small(1, 1023, 1023) == T(3));
    large = attn::HeadStack<T>(1, 2, 2);  // the large array goes back where it came from (ASan checks)
    CHECK(large.size() == 4);
}

TEST_CASE("HeadStack: an out-of-range head is an argument_error naming h") {
    attn::HeadStack<float> stack(2, 3, 3);
    CHECK_THROWS_AS(stack.head(2), attn::argument_error);
    CHECK_THROWS_AS(stack.head(-1), attn::argument_error);
    try {
        (void)stack.head(5);
    } catch (const attn::argument_error& e) {
        CHECK(std::string(e.what()).find("h = 5") != std::string::npos);
    }
}

TEST_CASE("error types share the attn::error base") {
    CHECK_THROWS_AS(throw attn::shape_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::format_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::numeric_error("x"), attn::error);
    CHECK_THROWS_AS(throw attn::io_error("x"), std::runtime_error);
}

TEST_CASE("populate_pages: a fresh array's pages mapped at once, every byte around it as it was") {
    const std::size_t bytes = std::size_t(8) << 20;  // from the allocator's own mapping: never touched
    const std::unique_ptr<unsigned char[]> memory(new unsigned char[bytes]);
    const std::size_t edge = 100;  // written first: the pages at either end hold them
    for (std::size_t i = 0; i < edge; ++i) memory[i] = memory[bytes - 1 - i] = static_cast<unsigned char>(i + 1);
    const bool mapped = attn::detail::populate_pages(memory.get() + edge, bytes - 2 * edge);
#if defined(__linux__)
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
#endif
    for (std::size_t i = edge; i < bytes - edge; i += 512) memory[i] = 7;
#if defined(__linux__)
    getrusage(RUSAGE_SELF, &after);
    const long faults = after.ru_minflt - before.ru_minflt;
    MESSAGE("populate_pages: " << std::string(mapped ? "mapped" : "not supported here") << "; " << faults
                               << " faults writing 2,048 pages");
    // without it, a fault a page (a sanitizer's shadow memory faults on its own)
    if (mapped && !attn::test::under_sanitizer) CHECK(faults < 64);
#endif
    for (std::size_t i = 0; i < edge; ++i) {
        CHECK(memory[i] == static_cast<unsigned char>(i + 1));
        CHECK(memory[bytes - 1 - i] == static_cast<unsigned char>(i + 1));
    }
    CHECK_FALSE(attn::detail::populate_pages(memory.get(), attn::detail::kPopulateBytes - 1));  // too small to ask
}
