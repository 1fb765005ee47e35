// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Attribution of heap bytes, wall time and instructions to one part of a
// benchmark process (the driver, the simulated fabric, one connection
// manager, the other managers), so that "memory per connection of the
// manager" means the manager's own heap and not the simulator's.
//
// How: meter.cpp replaces the global operator new/delete (every variant) and
// charges each allocation to the part current at the time (a 16-byte header
// remembers it, so a free is credited to the part that allocated). A Scope
// switches the current part for its lifetime; the benchmark wraps every call
// across a boundary (driver -> manager, manager -> seam, fabric -> manager)
// in one. Under valgrind --tool=callgrind --collect-atstart=no, a Scope also
// toggles instruction collection so that only the parts in the measured set
// are counted (CALLGRIND_TOGGLE_COLLECT, callgrind manual "Client request
// reference"). Outside valgrind the toggles are a few no-op instructions.
//
// Single-threaded, like everything it measures: plain globals, no atomics.
// Registered buffer pools are allocated with aligned operator new[], so they
// are charged to the manager that called BufferPool::init (start()).

#include <array>
#include <cstdint>
#include <string_view>

namespace rcnet::bench {

enum class Part : std::uint8_t { kDriver, kSim, kHub, kClients };
inline constexpr std::size_t kPartCount = 4;
std::string_view to_string(Part p);

struct PartStats {
  std::int64_t live_bytes = 0;  // requested bytes currently allocated (no header, no malloc slack)
  std::uint64_t allocs = 0;     // operator new calls
  std::uint64_t frees = 0;
  std::uint64_t entries = 0;  // Scope entries into this part from a different part
  std::uint64_t wall_ns = 0;  // only while timing is enabled (set_timing)
};

// Snapshot of every part's figures.
std::array<PartStats, kPartCount> stats();
Part current();

// Which parts callgrind counts (bit 1 << Part). Call once before any Scope
// when running under callgrind with --collect-atstart=no.
void set_measured(unsigned mask);
// Charges wall time (CLOCK_MONOTONIC via steady_clock) to the current part at
// every switch. Costs two clock reads per boundary crossing: off by default so
// the process wall-time figures are not inflated by the meter itself.
void set_timing(bool on);
bool running_on_valgrind();
// Writes callgrind's counters as a dump named `name` and zeroes them
// (CALLGRIND_DUMP_STATS_AT); a no-op outside valgrind.
void callgrind_dump(const char* name);

class Scope {
 public:
  explicit Scope(Part p);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Part prev_;
};

}  // namespace rcnet::bench
