// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Time in librcnet. The core never reads a clock: it is handed "now" by its
// TimerService, which is CLOCK_MONOTONIC in the daemon and a virtual clock in
// tests. TimePoint values from both are steady_clock time points.
#include <chrono>

namespace rcnet {
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;
using namespace std::chrono_literals;

// Milliseconds as a plain number, for logs and JSON.
inline double to_ms(Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}
}  // namespace rcnet
