#pragma once
// The allocator of HeadStack (core/types.hpp), whose largest use is attention weights:
// heads × positions² numbers, 64 MB at 2,048 positions. Arrays from 4 MiB up are aligned to
// 2 MiB and, on Linux, marked MADV_HUGEPAGE, so that where transparent huge pages are
// enabled "always" or "madvise" (the common defaults) the kernel backs them with 2 MiB pages.
// A fresh 2,048-position result then takes 32 page faults instead of 16,384, and rows are
// written without a TLB walk every 4 KiB (docs/DESIGN.md has what it saves, measured).
// Smaller arrays start at a cache line (kArrayAlignment). Arrays allocated to be written whole at once (these
// allocators' vectors, a model's weights, a forward pass's buffers) are mapped in one system
// call (populate_pages) rather than a page fault per 4 KiB.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attn::detail {

inline constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;
inline constexpr std::size_t kLargeArrayBytes = std::size_t(4) << 20;

/// Where every array of these allocators starts, at least: a cache line. std::allocator's large
/// blocks start 16 bytes past one (glibc's header in an mmap), so every 64-byte load of a weight
/// panel's row spanned two lines: aligned, the products from memory ran 1.5–11.6 % faster (Zen 5,
/// AVX-512, one thread, the same bits; docs/bench/2026-12-06-epyc-zen5-avx512/aligned_panels_ab).
inline constexpr std::size_t kArrayAlignment = 64;

/// count T's from operator new, starting at a cache line; free with deallocate_aligned.
template <class T>
T* allocate_aligned(std::size_t count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new (count * sizeof(T), std::align_val_t{kArrayAlignment}));
}
/// (Unsized: clang leaves sized deallocation off unless given -fsized-deallocation.)
inline void deallocate_aligned(void* memory) noexcept {
    ::operator delete (memory, std::align_val_t{kArrayAlignment});
}

/// Asks for 2 MiB pages under the whole 2 MiB pages of an array from another allocator (an
/// Eigen matrix's), arrays from kLargeArrayBytes up: call it before the array is first written,
/// since pages already touched stay small.
inline void advise_huge_pages([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes < kLargeArrayBytes) return;
    const auto start = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t first = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    const std::uintptr_t last = (start + bytes) / kHugePageBytes * kHugePageBytes;
    // a request: where huge pages are off, nothing changes
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
}

/// Smallest array populate_pages maps ahead: below it a fault or two costs less than the call.
inline constexpr std::size_t kPopulateBytes = std::size_t(64) << 10;

/// Maps the pages of an array just allocated, and about to be written, in one system call
/// (Linux's MADV_POPULATE_WRITE, from 5.14) instead of a page fault per 4 KiB at its first
/// writes: the same zeroed pages, without a trap each. In a VM whose faults are dear it pays
/// most (the Zen 5 VM of docs/bench/2026-12-05-epyc-zen5-avx512/page_faults: 10.5–13.7 µs a
/// fault, 5.2–6.0 µs a page populated). The pages at either end may hold other data of the
/// same mapping, which stays as it is. A request: true if the pages were mapped; where the
/// call is unknown or fails (or the array is under kPopulateBytes), nothing changes and the
/// writes fault the pages in.
inline bool populate_pages([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__)
#if defined(MADV_POPULATE_WRITE)
    constexpr int populate_write = MADV_POPULATE_WRITE;
#else
    constexpr int populate_write = 23;  // Linux's value, for headers older than the call
#endif
    if (bytes < kPopulateBytes) return false;
    constexpr std::uintptr_t page = 4096;  // the smallest page: larger ones are whole multiples of it
    const auto start = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t first = start / page * page, last = (start + bytes + page - 1) / page * page;
    return madvise(reinterpret_cast<void*>(first), last - first, populate_write) == 0;
#else
    return false;
#endif
}

template <class T>
struct LargeArrayAllocator {
    using value_type = T;

    LargeArrayAllocator() = default;
    template <class U>
    LargeArrayAllocator(const LargeArrayAllocator<U>&) noexcept {}

    T* allocate(std::size_t count) {
        if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t bytes = count * sizeof(T);
        if (bytes < kLargeArrayBytes) {
            T* memory = allocate_aligned<T>(count);
            populate_pages(memory, bytes);  // a vector's new elements are written at once
            return memory;
        }
        const std::size_t whole_pages = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
        void* memory = std::aligned_alloc(kHugePageBytes, whole_pages);
        if (!memory) throw std::bad_alloc();
        advise_huge_pages(memory, whole_pages);  // 2 MiB-aligned, whole pages: all of it
        populate_pages(memory, bytes);           // a vector's new elements are written at once
        return static_cast<T*>(memory);
    }

    void deallocate(T* memory, std::size_t count) noexcept {
        if (count * sizeof(T) < kLargeArrayBytes)
            deallocate_aligned(memory);
        else
            std::free(memory);
    }

    friend bool operator==(const LargeArrayAllocator&, const LargeArrayAllocator&) { return true; }
    friend bool operator!=(const LargeArrayAllocator&, const LargeArrayAllocator&) { return false; }
};

/// Cache-line-aligned arrays (allocate_aligned), asking for 2 MiB pages under the whole 2 MiB pages of each large array
/// (advise_huge_pages) before it is written: for arrays kept for long (16-bit weights), where
/// LargeArrayAllocator's rounding up to whole 2 MiB pages would cost up to 2 MiB each.
template <class T>
struct HugePagesInside {
    using value_type = T;

    HugePagesInside() = default;
    template <class U>
    HugePagesInside(const HugePagesInside<U>&) noexcept {}

    T* allocate(std::size_t count) {
        T* memory = allocate_aligned<T>(count);
        advise_huge_pages(memory, count * sizeof(T));
        populate_pages(memory, count * sizeof(T));
        return memory;
    }
    void deallocate(T* memory, std::size_t) noexcept { deallocate_aligned(memory); }

    friend bool operator==(const HugePagesInside&, const HugePagesInside&) { return true; }
    friend bool operator!=(const HugePagesInside&, const HugePagesInside&) { return false; }
};

}  // namespace attn::detail
