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

void note_allocation() {
    if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

long attn::test::count_allocations(bool on) {
    if (on) allocations = 0;
    counting = on;
    return allocations.load();
}

#ifdef ATTN_TEST_WRAP_MALLOC
extern "C" {
void* __real_malloc(std::size_t size);
void* __real_calloc(std::size_t count, std::size_t size);
void* __real_realloc(void* p, std::size_t size);
void* __wrap_malloc(std::size_t size) {
    note_allocation();
    return __real_malloc(size);
}
void* __wrap_calloc(std::size_t count, std::size_t size) {
    note_allocation();
    return __real_calloc(count, size);
}
void* __wrap_realloc(void* p, std::size_t size) {
    note_allocation();
    return __real_realloc(p, size);
}
}
#endif

void* operator new(std::size_t size) {
    note_allocation();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    note_allocation();
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
    note_allocation();
    return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    note_allocation();
    return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
