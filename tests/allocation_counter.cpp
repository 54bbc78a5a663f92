// Replaces operator new for the whole test binary, counting calls while counting is on; on
// Linux the binary is linked with --wrap=malloc,calloc,realloc (tests/CMakeLists.txt), so
// calls from its own code, Eigen's buffers among them, are counted as well. Kept in a file of
// its own: inlined into other code, the replacements confuse gcc's new/delete matching.
#include "allocation_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
std::atomic<std::size_t> largest{0};

void note_allocation(std::size_t size) {
    if (!counting.load(std::memory_order_relaxed)) return;
    allocations.fetch_add(1, std::memory_order_relaxed);
    std::size_t seen = largest.load(std::memory_order_relaxed);
    while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
    }
}
}  // namespace

long attn::test::count_allocations(bool on) {
    if (on) {
        allocations = 0;
        largest = 0;
    }
    counting = on;
    return allocations.load();
}

std::size_t attn::test::largest_allocation() {
    return largest.load();
}

#ifdef ATTN_TEST_WRAP_MALLOC
extern "C" {
void* __real_malloc(std::size_t size);
void* __real_calloc(std::size_t count, std::size_t size);
void* __real_realloc(void* p, std::size_t size);
void* __wrap_malloc(std::size_t size) {
    note_allocation(size);
    return __real_malloc(size);
}
void* __wrap_calloc(std::size_t count, std::size_t size) {
    note_allocation(count > 0 && size > static_cast<std::size_t>(-1) / count ? static_cast<std::size_t>(-1)
                                                                             : count * size);
    return __real_calloc(count, size);
}
void* __wrap_realloc(void* p, std::size_t size) {
    note_allocation(size);
    return __real_realloc(p, size);
}
}
#endif

void* operator new(std::size_t size) {
    note_allocation(size);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    note_allocation(size);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
// The nothrow forms (std::stable_sort's temporary buffer asks for one) must come from the same
// malloc as the deletes above, or a sanitizer sees new and free mismatched.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    note_allocation(size);
    return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    note_allocation(size);
    return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
