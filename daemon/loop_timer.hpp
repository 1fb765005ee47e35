// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// TimerService over the daemon's loop: one CLOCK_MONOTONIC time source,
// re-armed by every schedule(). The manager keeps its own deadlines and asks
// for a single wakeup at the earliest one (lib/cm/manager.hpp).
#include <functional>

#include "cm/manager.hpp"
#include "event_loop.hpp"

namespace rcnet::daemon {

class LoopTimer final : public TimerService {
 public:
  // Accuracy of the wakeup: sd-event may coalesce it up to this much later.
  static constexpr Duration kAccuracy = std::chrono::milliseconds(1);

  // Creates the (disabled) time source. `on_expiry` runs on the loop when the
  // scheduled deadline passes, typically Manager::on_timer(). Errors: sd-event.
  static Result<std::unique_ptr<LoopTimer>> create(EventLoop& loop);
  void set_handler(std::function<void()> on_expiry) { on_expiry_ = std::move(on_expiry); }

  // CLOCK_MONOTONIC, read fresh (not sd-event's per-iteration cache) so that
  // time-in-stage figures are exact.
  TimePoint now() const override { return Clock::now(); }
  // sd-event's time of this loop iteration (sd_event_now(3)): no clock read
  // per packet.
  TimePoint coarse_now() const override { return loop_->now(); }
  // TimePoint::max() cancels. Never fails in practice; a failure to arm is
  // logged as critical since the manager's timeouts would stop working.
  void schedule(TimePoint deadline) override;

  TimePoint deadline() const { return deadline_; }
  std::uint64_t expiries() const { return expiries_; }

 private:
  LoopTimer() = default;
  void fire();

  const EventLoop* loop_ = nullptr;
  EventSource source_;
  std::function<void()> on_expiry_;
  TimePoint deadline_ = TimePoint::max();
  std::uint64_t expiries_ = 0;
};

}  // namespace rcnet::daemon
