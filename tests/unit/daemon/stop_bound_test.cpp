// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetd's timing rules, as pure functions of the clock: the graceful-stop
// bound (Daemon::extend_stop: extended while the teardowns move, never past
// kStopCap, not at all when nothing moved) and the heap trim (next_heap_trim).
#include "catch2_compat.hpp"

#include "daemon.hpp"

namespace daemon_stop_bound_test {
using namespace rcnet;
using rcnet::daemon::Daemon;
using namespace std::chrono_literals;

TEST_CASE("graceful stop: extended while teardowns move, up to the cap", "[daemon][stop]") {
  const TimePoint t0{};
  // The first deadline (5 s with the default timeouts): 31 QPs ESTABLISHED
  // at the start (5 stages each to DESTROYED), now some further on.
  auto next = Daemon::extend_stop(t0, t0 + 5s, 155, 12);
  REQUIRE(next);
  CHECK(*next == t0 + 5s + Daemon::kStopSlack);
  // Progress again at the next one.
  next = Daemon::extend_stop(t0, *next, 12, 3);
  REQUIRE(next);
  CHECK(*next == t0 + 7s + Daemon::kStopSlack);
  // Close to the cap: the deadline is the cap itself, never beyond.
  next = Daemon::extend_stop(t0, t0 + Daemon::kStopCap - 500ms, 3, 2);
  REQUIRE(next);
  CHECK(*next == t0 + Daemon::kStopCap);
}

TEST_CASE("graceful stop: gives up without progress or at the cap", "[daemon][stop]") {
  const TimePoint t0{};
  // Nothing moved since the last deadline (a QP stuck in its teardown).
  CHECK_FALSE(Daemon::extend_stop(t0, t0 + 5s, 4, 4));
  // The cap, even with progress.
  CHECK_FALSE(Daemon::extend_stop(t0, t0 + Daemon::kStopCap, 10, 2));
  // The rdma_cm ids only (no QP left but the stop still waits): nothing moves.
  CHECK_FALSE(Daemon::extend_stop(t0, t0 + 5s, 0, 0));
}

TEST_CASE("heap trim: after the burst settles, at most once per interval, never dropped",
          "[daemon][heap]") {
  const TimePoint t0 = TimePoint{} + 1h;
  // Long after the last trim: kHeapTrimSettle after the activity.
  CHECK(Daemon::next_heap_trim(t0 - 10min, t0) == t0 + Daemon::kHeapTrimSettle);
  // Soon after one: deferred to the interval's end, not skipped.
  CHECK(Daemon::next_heap_trim(t0 - 1s, t0) == t0 - 1s + Daemon::kHeapTrimInterval);
  // The settle time still holds at the interval's very end.
  const TimePoint last = t0 - Daemon::kHeapTrimInterval + 1s;
  CHECK(Daemon::next_heap_trim(last, t0) == t0 + Daemon::kHeapTrimSettle);
  // Never yet trimmed (the epoch of the steady clock).
  CHECK(Daemon::next_heap_trim(TimePoint{}, t0) == t0 + Daemon::kHeapTrimSettle);
}

}  // namespace daemon_stop_bound_test
