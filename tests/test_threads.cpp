// attn/threads.hpp: the thread team (sync, failures) on temporary threads, threads kept between calls
// (Workers), run_team_on on them, and the Threads policy.
#include <doctest/doctest.h>
#include <attn/core/types.hpp>
#include <attn/threads.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using attn::Index;

namespace {

/// Rounds of write, sync, read another worker's writes, sync, on the team run_team(body) runs:
/// counts reads that saw a stale value.
template <class RunTeam>
int stale_reads(RunTeam run_team, Index rounds, int& team_size) {
    const Index n = 64;
    std::vector<Index> a(n, 0), b(n, 0);
    std::atomic<int> stale{0}, size{0};
    run_team([&](int worker, attn::detail::Team& team) {
        size = team.size();
        for (Index round = 1; round <= rounds; ++round) {
            const Index first = n * worker / team.size(), last = n * (worker + 1) / team.size();
            for (Index i = first; i < last; ++i) a[std::size_t(i)] = round;
            team.sync();
            for (Index i = first; i < last; ++i) b[std::size_t(i)] = a[std::size_t(n - 1 - i)];  // others' rows
            team.sync();
            for (Index i = 0; i < n; ++i)
                if (b[std::size_t(i)] != round) ++stale;
            team.sync();
        }
    });
    team_size = size;
    return stale;
}

/// stale_reads on `workers` of the kept `pool`.
int stale_reads(attn::Workers& pool, int workers, int& team_size) {
    return stale_reads([&](auto body) { attn::detail::run_team_on(pool, workers, body); }, 20, team_size);
}

}  // namespace

TEST_CASE("Workers threads: size counts the caller; 0 means one per hardware thread; negative is an error") {
    CHECK(attn::Workers(1).size() == 1);
    CHECK(attn::Workers(3).size() == 3);
    const unsigned hardware = std::thread::hardware_concurrency();
    CHECK(attn::Workers(0).size() == (hardware == 0 ? 1 : int(hardware)));
    CHECK_THROWS_WITH_AS(attn::Workers(-2), doctest::Contains("Workers: threads must be ≥ 0, got -2"),
                         attn::argument_error);
}

TEST_CASE("Workers threads: run calls work once per worker, worker 0 on the caller, every run") {
    attn::Workers pool(3);
    const std::thread::id caller = std::this_thread::get_id();
    for (int run = 0; run < 200; ++run) {  // back to back, and after the helpers have gone to sleep
        if (run % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::vector<std::atomic<int>> calls(3);
        std::atomic<bool> zero_on_caller{false};
        auto work = [&](int worker) {
            ++calls[std::size_t(worker)];
            if (worker == 0) zero_on_caller = std::this_thread::get_id() == caller;
        };
        pool.run(work);
        CHECK((calls[0] == 1 && calls[1] == 1 && calls[2] == 1));
        CHECK(zero_on_caller);
    }
}

TEST_CASE("Workers threads: run_team_on orders writes between phases, for teams of 1 to 4 on 1 to 4 workers") {
    for (int kept : {1, 2, 4})
        for (int workers : {1, 2, 3, 4}) {
            CAPTURE(kept);
            CAPTURE(workers);
            attn::Workers pool(kept);
            for (int repeat = 0; repeat < 5; ++repeat) {
                int team_size = 0;
                CHECK(stale_reads(pool, workers, team_size) == 0);
                CHECK(team_size == std::min(kept, workers));
            }
        }
}

TEST_CASE("Workers threads: an exception in one worker is rethrown, and the workers serve the next run") {
    attn::Workers pool(2);
    for (int thrower : {0, 1}) {
        std::atomic<int> phases_after{0};
        CHECK_THROWS_WITH_AS(attn::detail::run_team_on(pool, 2,
                                                       [&](int worker, attn::detail::Team& team) {
                                                           team.sync();
                                                           if (worker == thrower) throw std::runtime_error("failed");
                                                           team.sync();
                                                           ++phases_after;
                                                       }),
                             "failed", std::runtime_error);
        CHECK(phases_after == 0);
        int team_size = 0;
        CHECK(stale_reads(pool, 2, team_size) == 0);
        CHECK(team_size == 2);
    }
}

TEST_CASE("Workers threads: runs from several threads at once take turns") {
    attn::Workers pool(2);
    std::vector<int> failures(3, 0);
    std::vector<std::thread> callers;
    for (std::size_t c = 0; c < failures.size(); ++c)
        callers.emplace_back([&, c] {
            for (int repeat = 0; repeat < 20; ++repeat) {
                int team_size = 0;
                failures[c] += stale_reads(pool, 2, team_size) != 0 || team_size != 2;
            }
        });
    for (std::thread& caller : callers) caller.join();
    CHECK(failures == std::vector<int>(3, 0));
}

TEST_CASE("run_team threads: sync() orders writes between phases, for 1 to 4 workers") {
    for (int workers : {1, 2, 3, 4}) {
        CAPTURE(workers);
        int team_size = 0;
        CHECK(stale_reads([&](auto body) { attn::detail::run_team(nullptr, workers, body); }, 50, team_size) == 0);
        CHECK(team_size == workers);
    }
}

TEST_CASE("run_team threads: an exception in one worker is rethrown once the others stop at their next sync") {
    for (int thrower : {0, 1}) {
        std::atomic<int> phases_after{0};
        CHECK_THROWS_WITH_AS(attn::detail::run_team(nullptr, 2,
                                                    [&](int worker, attn::detail::Team& team) {
                                                        team.sync();
                                                        if (worker == thrower) throw std::runtime_error("task failed");
                                                        team.sync();  // the other worker waits here forever, unless…
                                                        ++phases_after;
                                                    }),
                             "task failed", std::runtime_error);
        CHECK(phases_after == 0);
    }
}
