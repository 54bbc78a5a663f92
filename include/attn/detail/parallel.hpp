#pragma once
// A small fork-join helper on std::thread, for the attention kernels. Nothing is
// kept between calls (no pool, no global state), so concurrent callers never share
// anything; the caller's thread is one of the workers.

#include <Eigen/Core>

#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"

namespace attn::detail {

/// The number of workers a `threads` option asks for: 0 means one per hardware
/// thread (std::thread::hardware_concurrency(), at least 1); negative is an error.
inline int resolve_threads(const char* function, int requested) {
    if (requested < 0) throw argument_error(message(function, ": threads must be ≥ 0, got ", requested));
    if (requested > 0) return requested;
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware == 0 ? 1 : static_cast<int>(hardware);
}

/// Runs two phases of independent tasks on up to `workers` threads (the caller
/// included): fn(phase, task, worker) for every task 0 … first_count − 1 of phase 0,
/// then, once all of them have finished, for every task 0 … second_count − 1 of
/// phase 1. Tasks are handed out in order from a shared counter, so a caller that
/// sorts them longest first gets a balanced schedule. `worker` is in [0, workers)
/// and is used by one thread at a time (index per-worker scratch with it). The
/// first exception a task throws stops the remaining tasks and is rethrown here
/// once every worker has stopped. If a thread cannot be started, the others (at
/// least the caller) do its share.
template <class Fn>
void run_two_phases(int workers, Eigen::Index first_count, Eigen::Index second_count, Fn&& fn) {
    using Eigen::Index;
    std::atomic<Index> next_first{0}, done_first{0}, next_second{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;

    auto work = [&](int worker) {
        try {
            for (Index task = next_first++; task < first_count && !failed.load(); task = next_first++) {
                fn(0, task, worker);
                ++done_first;
            }
            while (done_first.load() < first_count && !failed.load()) std::this_thread::yield();
            for (Index task = next_second++; task < second_count && !failed.load(); task = next_second++)
                fn(1, task, worker);
        } catch (...) {
            const std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
            failed = true;
        }
    };

    std::vector<std::thread> helpers;
    if (workers > 1) {
        helpers.reserve(static_cast<std::size_t>(workers - 1));
        for (int worker = 1; worker < workers; ++worker) {
            try {
                helpers.emplace_back(work, worker);
            } catch (const std::system_error&) {
                break;  // no more threads: the ones running share the tasks
            }
        }
    }
    work(0);
    for (std::thread& helper : helpers) helper.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace attn::detail
