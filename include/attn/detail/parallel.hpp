#pragma once
// The one way attn runs work on several threads: a Team of workers in lockstep (a
// barrier between phases), run by run_team_on on an attn::Workers: one the caller keeps
// across calls, or a temporary one that lives for a single call. The caller's thread is
// always worker 0. Nothing is global: concurrent callers share nothing unless they share
// a Workers, whose runs then take turns.

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/detail/check.hpp"

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

/// Thrown inside a worker by Team::sync() once another worker has failed; run_team_on
/// swallows it and rethrows the failure itself.
struct TeamStopped {};

/// The workers of one run_team_on call: how many there are, and a barrier.
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

    /// Whether a worker has failed: long loops between syncs may stop early.
    bool stopped() const { return failed_.load(std::memory_order_acquire); }

private:
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

/// Runs body(worker, team) once for each of min(workers, pool.size()) workers and returns
/// when all have finished; pool.run(work) must call work(0 … pool.size() − 1), each once,
/// worker 0 on the calling thread (attn::Workers). Every worker must call team.sync() the
/// same number of times. The first exception a body throws is rethrown here, after the
/// others have stopped at their next sync() or finished. With one worker the pool's
/// threads stay asleep and the body runs on the caller.
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
