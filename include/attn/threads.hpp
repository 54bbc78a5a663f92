#pragma once
// Threads for attn's parallel work, all in one place. Every threaded call (the attention
// kernel, a model's forward pass, a decoding step) runs as a Team of workers in lockstep (a
// barrier between phases) on a Workers: one the caller keeps across calls, or a temporary one
// started for the call and joined before it returns. The caller's thread is always worker 0.
// Nothing is global: concurrent callers share nothing unless they share a Workers, whose runs
// then take turns. An options struct says which with its `threads` member (a Threads).

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "attn/detail/check.hpp"
#include "attn/error.hpp"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <immintrin.h>
#endif

namespace attn::detail {

/// One poll of a value another core will change: a hint to the core that it is spinning, which
/// costs no system call. On x86 `pause` (tens of cycles on AMD, about 140 on recent Intel) also
/// keeps the loop from flooding the memory pipeline and frees the core's sibling hyperthread.
inline void spin_pause() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/// How a worker waits for another: spin_pause for the first kPolls polls, then
/// std::this_thread::yield. A decoding step meets about a hundred times, each wait a few
/// microseconds, so spinning keeps them cheap: yielding at once is a system call each, which in
/// a VM costs more than the wait (a Zen 5 profile found 18 % of both cores in sched_yield). The
/// yield after ~50–150 µs gives the core back when the other worker is descheduled.
class Backoff {
public:
    void wait() {
        if (polls_ < kPolls) {
            ++polls_;
            spin_pause();
        } else {
            std::this_thread::yield();
        }
    }

private:
    static constexpr int kPolls = 2048;
    int polls_ = 0;
};

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
    /// them wrote before its call is then visible to all. Workers spin (Backoff), then yield.
    void sync() {
        if (size_ == 1) return;
        const unsigned generation = generation_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {  // the last to arrive
            arrived_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
            return;
        }
        for (Backoff backoff; generation_.load(std::memory_order_acquire) == generation; backoff.wait())
            if (failed_.load(std::memory_order_acquire)) throw TeamStopped{};
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

namespace attn {

/// `size()` workers: the thread that calls run() is worker 0, and size() − 1 threads are
/// started here and wait for work until the destructor joins them. Between runs they
/// spin and yield briefly, then sleep. Runs from several threads at once take turns; the object
/// must outlive every run (destroy it only when no call is using it).
class Workers {
public:
    /// threads: how many workers, the caller included; 0 means one per hardware thread.
    /// If the system refuses a thread, size() is smaller. Throws argument_error if negative.
    explicit Workers(int threads = 0) : Workers(threads, kPollsBeforeSleep) {}

    /// Workers for a single run that starts right away (detail::run_team's temporary ones):
    /// the helpers poll until it comes instead of going to sleep first, so that a busy
    /// machine's wake-up latency is not added to every call.
    static Workers for_one_run(int threads) { return Workers(threads, std::numeric_limits<int>::max()); }

    Workers(const Workers&) = delete;
    Workers& operator=(const Workers&) = delete;

    ~Workers() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_.store(true, std::memory_order_release);
        }
        wake_.notify_all();
        for (std::thread& helper : helpers_) helper.join();
    }

    int size() const { return 1 + static_cast<int>(helpers_.size()); }

    /// Calls work(worker) for every worker 0 … size() − 1, worker 0 on the calling thread,
    /// and returns once all have returned. work must not throw.
    template <class Work>
    void run(Work& work) noexcept {
        const std::lock_guard<std::mutex> turn(run_mutex_);
        job_ = [](void* context, int worker) { (*static_cast<Work*>(context))(worker); };
        context_ = &work;
        running_.store(static_cast<int>(helpers_.size()), std::memory_order_relaxed);
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        work(0);
        for (detail::Backoff backoff; running_.load(std::memory_order_acquire) != 0;) backoff.wait();
    }

private:
    // Polls for the next run this many times (Backoff: spinning, then yielding) before
    // sleeping: back-to-back calls then start without a wake-up.
    static constexpr int kPollsBeforeSleep = 4096;

    Workers(int threads, int polls_before_sleep) : polls_before_sleep_(polls_before_sleep) {
        auto serve_as = [this](int worker) { serve(worker); };
        helpers_ = detail::start_helpers(detail::resolve_threads("Workers", threads), serve_as);
    }

    void serve(int worker) {
        unsigned seen = 0;
        for (;;) {
            // A helper that is still polling when the Workers is destroyed (a temporary one,
            // right after its only run) leaves at once rather than after its polls.
            detail::Backoff backoff;
            for (int polls = 0; polls < polls_before_sleep_ && generation_.load(std::memory_order_acquire) == seen;
                 ++polls) {
                if (stopping_.load(std::memory_order_acquire)) return;
                backoff.wait();
            }
            if (generation_.load(std::memory_order_acquire) == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] {
                    return stopping_.load(std::memory_order_acquire) ||
                           generation_.load(std::memory_order_acquire) != seen;
                });
                if (stopping_.load(std::memory_order_acquire)) return;
            }
            seen = generation_.load(std::memory_order_acquire);
            job_(context_, worker);
            running_.fetch_sub(1, std::memory_order_release);
        }
    }

    const int polls_before_sleep_;
    std::vector<std::thread> helpers_;
    std::mutex run_mutex_;  // one run at a time
    std::mutex mutex_;      // orders stopping_ and new runs with the sleepers' wake-up
    std::condition_variable wake_;
    std::atomic<bool> stopping_{false};
    std::atomic<unsigned> generation_{0};  // one more per run
    std::atomic<int> running_{0};          // helpers still in the current run
    void (*job_)(void*, int) = nullptr;    // written before generation_ moves on
    void* context_ = nullptr;
};

/// How many threads a call may use, the `threads` member of the options of every call that runs
/// work on threads (AttentionOptions, ForwardOptions, DecodeOptions, GenerationOptions):
/// a count started for the call and joined before it returns (1: the calling thread only;
/// 0: one per hardware thread), or a Workers the caller keeps (no threads started per call).
/// Either converts implicitly: `options.threads = 2;` or `options.threads = workers;`.
/// Results are the same bits for every choice.
class Threads {
public:
    Threads(int count = 1) : count_(count) {}            // NOLINT: implicit by design
    Threads(Workers& kept) : kept_(&kept), count_(0) {}  // NOLINT: implicit by design

    /// The caller's kept threads, or null.
    Workers* kept() const { return kept_; }
    /// The count asked for (0: one per hardware thread); not used when threads are kept.
    int count() const { return count_; }

private:
    Workers* kept_ = nullptr;
    int count_ = 1;
};

namespace detail {

/// How many workers a call may run on: the kept ones' size, else the count resolved (0: one per
/// hardware thread). Throws argument_error naming `function` if the count is negative.
inline int available_threads(const Threads& threads, const char* function) {
    return threads.kept() ? threads.kept()->size() : resolve_threads(function, threads.count());
}

/// The calling thread alone, as a pool of one (nothing to start or join).
struct CallerOnly {
    int size() const { return 1; }
    template <class Work>
    void run(Work& work) {
        work(0);
    }
};

/// Runs a team (detail::Team, run_team_on) of up to `workers` on `kept` if it is given,
/// else on threads started for this call; with one worker, on the caller alone.
template <class Body>
void run_team(Workers* kept, int workers, Body&& body) {
    if (kept) return run_team_on(*kept, workers, body);
    if (workers <= 1) {
        CallerOnly caller;
        return run_team_on(caller, 1, body);
    }
    Workers temporary = Workers::for_one_run(workers);
    run_team_on(temporary, workers, body);
}

}  // namespace detail

}  // namespace attn
