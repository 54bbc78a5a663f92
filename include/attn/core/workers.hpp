#pragma once
// Threads for attn's parallel work. Every threaded call (the attention kernel, a model's
// forward pass) runs as a team on a Workers: one the caller keeps and passes in
// (AttentionOptions::workers, ForwardOptions::workers), or else a temporary one started
// for the call and joined before it returns. Keeping one saves starting and joining
// threads in every call (docs/bench/performance.md has what that costs).

#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "attn/detail/parallel.hpp"

namespace attn {

/// `size()` workers: the thread that calls run() is worker 0, and size() − 1 threads are
/// started here and wait for work until the destructor joins them. Between runs they
/// yield briefly, then sleep. Runs from several threads at once take turns; the object
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
        while (running_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    }

private:
    // Polls for the next run this many times (yielding) before sleeping: back-to-back
    // calls then start without a wake-up.
    static constexpr int kPollsBeforeSleep = 256;

    Workers(int threads, int polls_before_sleep) : polls_before_sleep_(polls_before_sleep) {
        auto serve_as = [this](int worker) { serve(worker); };
        helpers_ = detail::start_helpers(detail::resolve_threads("Workers", threads), serve_as);
    }

    void serve(int worker) {
        unsigned seen = 0;
        for (;;) {
            // A helper that is still polling when the Workers is destroyed (a temporary one,
            // right after its only run) leaves at once rather than after its polls.
            for (int polls = 0; polls < polls_before_sleep_ && generation_.load(std::memory_order_acquire) == seen;
                 ++polls) {
                if (stopping_.load(std::memory_order_acquire)) return;
                std::this_thread::yield();
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

namespace detail {

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
