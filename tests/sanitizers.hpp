#pragma once
// Which sanitizer a test build runs under. gcc says so with __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__, clang with __has_feature (which gcc 12 lacks).

#if defined(__has_feature)
#define ATTN_TEST_HAS_FEATURE(feature) __has_feature(feature)
#else
#define ATTN_TEST_HAS_FEATURE(feature) 0
#endif

namespace attn::test {

/// Under ThreadSanitizer, which makes every memory access some 5–15× dearer: the thread tests
/// then run the same code paths on less data (CI's TSan section).
#if defined(__SANITIZE_THREAD__) || ATTN_TEST_HAS_FEATURE(thread_sanitizer)
constexpr bool under_thread_sanitizer = true;
#else
constexpr bool under_thread_sanitizer = false;
#endif

/// Under any sanitizer with shadow memory (address, thread, memory), which counts in the
/// resident set: the peak-memory tests then report their ratio without holding it to a bound.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || ATTN_TEST_HAS_FEATURE(address_sanitizer) || \
    ATTN_TEST_HAS_FEATURE(thread_sanitizer) || ATTN_TEST_HAS_FEATURE(memory_sanitizer)
constexpr bool under_sanitizer = true;
#else
constexpr bool under_sanitizer = false;
#endif

}  // namespace attn::test
