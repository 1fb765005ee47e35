// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The clocks and resource counters the benchmark programs read.

#include <cstdint>
#include <optional>
#include <string>

namespace rcnet::bench {

// CLOCK_MONOTONIC in ns and in s: intervals.
std::int64_t monotonic_ns();
double monotonic_s();
// CLOCK_REALTIME in ms since the epoch: instants that several processes (or
// hosts) compare.
std::int64_t realtime_ms();
// User + system CPU seconds of getrusage(2) `who` (RUSAGE_SELF: every
// thread; RUSAGE_THREAD: the caller's); nullopt when getrusage fails (errno
// says why).
std::optional<double> cpu_s(int who);
// The process's peak resident set (getrusage(2) ru_maxrss), KiB.
long maxrss_kib();
// The kernel's current clocksource (sysfs), "unknown" when unreadable: a
// guest's tsc against kvm-clock or acpi_pm changes what a clock read costs.
std::string clocksource();

}  // namespace rcnet::bench
