#pragma once
// Small fork-join helpers on std::thread: run_two_phases for the attention kernel's
// tasks, run_team for the model's forward pass (workers in lockstep, with barriers).
// Nothing is kept between calls (no pool, no global state), so concurrent callers
// never share anything; the caller's thread is one of the workers. run_team_on runs a
// team on threads the caller keeps (attn::Workers) instead.

#include <Eigen/Core>

#include <algorithm>
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

/// The first exception any worker throws, kept to be rethrown by the caller.
class FirstError {
public:
    /// Call from a catch block: keeps the exception being handled if it is the first.
    void keep_current() {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
    }
    void rethrow_if_any() const {
        if (error_) std::rethrow_exception(error_);
    }

private:
    std::mutex mutex_;
    std::exception_ptr error_;
};

/// Starts work(1) … work(workers − 1) on new threads, as many as the system lets it
/// (the caller is worker 0 and runs its own share). Returns the threads to join.
template <class Work>
std::vector<std::thread> start_helpers(int workers, Work& work) {
    std::vector<std::thread> helpers;
    if (workers <= 1) return helpers;
    helpers.reserve(static_cast<std::size_t>(workers - 1));
    for (int worker = 1; worker < workers; ++worker) {
        try {
            helpers.emplace_back(work, worker);
        } catch (const std::system_error&) {
            break;  // no more threads: the ones running do the rest
        }
    }
    return helpers;
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
    FirstError error;

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
            error.keep_current();
            failed = true;
        }
    };

    std::vector<std::thread> helpers = start_helpers(workers, work);
    work(0);
    for (std::thread& helper : helpers) helper.join();
    error.rethrow_if_any();
}

/// Thrown inside a worker by Team::sync() once another worker has failed; run_team
/// swallows it and rethrows the failure itself.
struct TeamStopped {};

/// The workers of one run_team call: how many there are, and a barrier.
class Team {
public:
    int size() const { return size_; }

    /// Returns once every worker has called sync() as many times as this one: what any of
    /// them wrote before its call is then visible to all. Workers spin briefly, then yield.
    void sync() {
        if (size_ == 1) return;
        const unsigned generation = generation_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {  // the last to arrive
            arrived_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
            return;
        }
        for (int spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins) {
            if (failed_.load(std::memory_order_acquire)) throw TeamStopped{};
            if (spins >= kSpinsBeforeYield) std::this_thread::yield();
        }
    }

private:
    template <class Body>
    friend void run_team(int workers, Body&& body);
    template <class Pool, class Body>
    friend void run_team_on(Pool& pool, int workers, Body&& body);

    /// body(worker, *this) if the worker is in the team, its first exception kept in error.
    template <class Body>
    void run_member(int worker, Body& body, FirstError& error) {
        if (worker >= size_) return;
        try {
            body(worker, *this);
        } catch (const TeamStopped&) {
        } catch (...) {
            error.keep_current();
            failed_.store(true, std::memory_order_release);
        }
    }

    static constexpr int kSpinsBeforeYield = 4096;

    int size_ = 1;
    std::atomic<int> arrived_{0};
    std::atomic<unsigned> generation_{0};
    std::atomic<bool> failed_{false};
};

/// Runs body(worker, team) once on each of up to `workers` threads (the caller is worker
/// 0) and returns when all have finished. Every worker must call team.sync() the same
/// number of times. team.size() is fixed before any body starts: if a thread cannot be
/// started, the team is smaller. The first exception a body throws is rethrown here,
/// after the others have stopped at their next sync() or finished.
template <class Body>
void run_team(int workers, Body&& body) {
    Team team;
    std::atomic<bool> go{false};
    FirstError error;
    auto work = [&](int worker) {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        team.run_member(worker, body, error);
    };
    std::vector<std::thread> helpers = start_helpers(workers, work);  // fewer if the system refuses: a smaller team
    team.size_ = 1 + static_cast<int>(helpers.size());
    go.store(true, std::memory_order_release);
    work(0);
    for (std::thread& helper : helpers) helper.join();
    error.rethrow_if_any();
}

/// run_team on threads kept by the caller: pool.run(work) must call work(0 … pool.size() − 1),
/// each once, worker 0 on the calling thread (attn::Workers). min(workers, pool.size())
/// workers take part.
template <class Pool, class Body>
void run_team_on(Pool& pool, int workers, Body&& body) {
    Team team;
    team.size_ = std::max(1, std::min(workers, pool.size()));
    FirstError error;
    auto work = [&](int worker) { team.run_member(worker, body, error); };
    if (team.size_ == 1)
        work(0);  // the kept threads stay asleep
    else
        pool.run(work);
    error.rethrow_if_any();
}

}  // namespace attn::detail
