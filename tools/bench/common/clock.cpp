// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "clock.hpp"

#include <sys/resource.h>
#include <time.h>

#include <fstream>

namespace rcnet::bench {

namespace {

timespec read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts;
}

}  // namespace

std::int64_t monotonic_ns() {
  const timespec ts = read_clock(CLOCK_MONOTONIC);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double monotonic_s() {
  const timespec ts = read_clock(CLOCK_MONOTONIC);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::int64_t realtime_ms() {
  const timespec ts = read_clock(CLOCK_REALTIME);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

std::optional<double> cpu_s(int who) {
  rusage ru{};
  if (::getrusage(who, &ru) != 0)
    return std::nullopt;
  auto s = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

long maxrss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

std::string clocksource() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string s;
  std::getline(f, s);
  return s.empty() ? "unknown" : s;
}

}  // namespace rcnet::bench
