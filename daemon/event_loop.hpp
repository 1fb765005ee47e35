// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The daemon's one event loop: RAII over sd-event (sd-event(3)). Every fd,
// timer and signal of rcnetd is an EventSource of one EventLoop, and every
// callback runs on the loop's thread, one at a time.
//
// Callbacks are std::function. The trampolines are noexcept: an exception that
// escapes a callback is logged as critical and ends the loop with exit code 1,
// so it never unwinds through sd-event's C frames (docs/design.md "Conventions" item 3).
//
// A callback must not destroy its own EventSource (its std::function would be
// freed while running); disable it and destroy it from a later callback.
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-event.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::daemon {

struct SdEventUnref {
  void operator()(sd_event* e) const noexcept { sd_event_unref(e); }
};
using SdEventPtr = std::unique_ptr<sd_event, SdEventUnref>;

// Disable first, then unref: sd_event_source_unref(3) alone leaves a source
// that someone else still references armed, so its callback could fire into
// freed userdata.
struct SdEventSourceRelease {
  void operator()(sd_event_source* s) const noexcept {
    sd_event_source_set_enabled(s, SD_EVENT_OFF);
    sd_event_source_unref(s);
  }
};
using SdEventSourcePtr = std::unique_ptr<sd_event_source, SdEventSourceRelease>;

// sd-event counts CLOCK_MONOTONIC in microseconds; steady_clock is
// CLOCK_MONOTONIC on Linux (libstdc++). Rounds up so that a wakeup never comes
// before the deadline the manager asked for.
std::uint64_t to_monotonic_usec(TimePoint t);
TimePoint from_monotonic_usec(std::uint64_t usec);

class EventSource {
 public:
  struct Handler;  // callback + the loop it ends on failure; heap-pinned
  EventSource();
  ~EventSource();
  EventSource(EventSource&&) noexcept;
  EventSource& operator=(EventSource&&) noexcept;

  bool valid() const { return src_ != nullptr; }
  sd_event_source* get() const { return src_.get(); }
  // SD_EVENT_ON, SD_EVENT_OFF or SD_EVENT_ONESHOT (sd_event_source_set_enabled(3)).
  Result<void> set_enabled(int mode);
  bool enabled() const;
  // Time sources only: fire once at `when` (CLOCK_MONOTONIC); re-arms a source
  // that already fired or was disabled.
  Result<void> arm_at(TimePoint when);
  void reset();

 private:
  friend class EventLoop;
  // Order matters: the source is released before the handler it points to.
  std::unique_ptr<Handler> handler_;
  SdEventSourcePtr src_;
};

class EventLoop {
 public:
  // sd_event_new(3). Errors: whatever sd_event_new returns (negative errno).
  static Result<EventLoop> create();

  sd_event* get() const { return event_.get(); }

  // An io source (sd_event_add_io(3)); `events` is EPOLLIN etc. The fd stays
  // owned by the caller and must outlive the source.
  Result<EventSource> add_io(int fd, std::uint32_t events, std::string name,
                             std::function<void(std::uint32_t revents)> cb);
  // A one-shot CLOCK_MONOTONIC timer at `when`, firing within `accuracy`
  // after it (sd_event_add_time(3)); re-arm it with EventSource::arm_at().
  // TimePoint::max() creates it disabled.
  Result<EventSource> add_time(TimePoint when, Duration accuracy, std::string name,
                               std::function<void()> cb);
  // A signal source (sd_event_add_signal(3)). The signal must already be
  // blocked in this thread (block_signals()), or the call fails with EBUSY.
  Result<EventSource> add_signal(int sig, std::string name,
                                 std::function<void(const signalfd_siginfo&)> cb);
  // A defer source, created disabled: set_enabled(SD_EVENT_ONESHOT) asks for
  // one run in the next loop iteration (used for "more completions pending").
  Result<EventSource> add_defer(std::string name, std::function<void()> cb);
  // A post source: runs after every loop iteration that dispatched anything.
  Result<EventSource> add_post(std::string name, std::function<void()> cb);

  // sd_event_set_watchdog(3): WATCHDOG=1 from the loop when WATCHDOG_USEC is set.
  Result<void> enable_watchdog();

  // Runs until exit(); returns the exit code. With `busy_poll` 0:
  // sd_event_loop(3). Otherwise, after every iteration that dispatched
  // something, the loop keeps running non-blocking iterations
  // (sd_event_run(3) with timeout 0, one epoll_wait each) until `busy_poll`
  // passed without an event, and only then blocks: an event that comes
  // within the window is handled without a sleep and a wakeup, at the cost
  // of a core spinning for at most `busy_poll` after each burst of work (an
  // idle daemon wakes rarely and spins little).
  Result<int> run(Duration busy_poll = Duration::zero());
  // Iterations that ended in a blocking wait / non-blocking iterations that
  // found nothing, since create() (run() with busy_poll only).
  struct Stats {
    std::uint64_t sleeps = 0;
    std::uint64_t empty_polls = 0;
  };
  const Stats& stats() const { return stats_; }
  // One iteration, waiting at most `timeout` (sd_event_run(3)); for tests.
  Result<void> run_once(Duration timeout);
  void exit(int code);
  TimePoint now() const;

 private:
  explicit EventLoop(SdEventPtr e) : event_(std::move(e)) {}
  static EventSource wrap(std::unique_ptr<EventSource::Handler> h, sd_event_source* s);
  SdEventPtr event_;
  Stats stats_;
};

// Blocks `sigs` in the calling (the only) thread so that sd_event_add_signal
// can take them over a signalfd. Errors: sigprocmask(2).
Result<void> block_signals(std::initializer_list<int> sigs);

}  // namespace rcnet::daemon
