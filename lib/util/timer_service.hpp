// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The core's only clock and its single wakeup. The connection manager keeps
// its own deadlines and asks for one wakeup at the earliest; the owner calls
// the manager's on_timer() then. CLOCK_MONOTONIC over sd-event in the daemon
// (daemon/loop_timer.hpp), a virtual clock in the simulated fabric.
// Loop thread only.
#include "util/time.hpp"

namespace rcnet {

class TimerService {
 public:
  virtual ~TimerService() = default;
  // The current time of this service's clock (steady_clock time points).
  virtual TimePoint now() const = 0;
  // The same clock, possibly cached: at most as old as the current event
  // loop iteration (the daemon's: sd_event_now(3), which reads no clock).
  // For per-packet stamps (idle activity), never for stage durations.
  virtual TimePoint coarse_now() const { return now(); }
  // Replaces any earlier request; TimePoint::max() cancels.
  virtual void schedule(TimePoint deadline) = 0;
};

}  // namespace rcnet
