#pragma once
// Counts heap allocations made on any thread while a function runs (allocation_counter.cpp).

#include <cstddef>
#include <functional>

namespace attn::test {

/// Starts or stops counting; returns the count so far.
long count_allocations(bool on);

/// The largest single allocation (bytes) since counting last started.
std::size_t largest_allocation();

/// Allocations f() makes, on any thread: operator new everywhere, and on Linux also malloc,
/// calloc and realloc from the test binary's own code (Eigen's buffers), linked with --wrap.
template <class F>
long allocations_in(F&& f) {
    count_allocations(true);
    f();
    return count_allocations(false);
}

}  // namespace attn::test
