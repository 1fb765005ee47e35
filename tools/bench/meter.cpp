// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "meter.hpp"

#include <valgrind/callgrind.h>
#include <valgrind/valgrind.h>

#include <chrono>
#include <cstdlib>
#include <new>

namespace rcnet::bench {

namespace {

Part g_part = Part::kDriver;
std::array<PartStats, kPartCount> g_stats{};
unsigned g_measured = 0;
bool g_collecting = false;
bool g_timing = false;
std::chrono::steady_clock::time_point g_last{};

// Precedes every block handed out. 16 bytes keeps the default new alignment
// (__STDCPP_DEFAULT_NEW_ALIGNMENT__ is 16 on x86-64).
struct alignas(16) Header {
  void* base;           // what malloc/posix_memalign returned
  std::uint64_t bytes;  // requested size
  std::uint8_t part;
};
static_assert(sizeof(Header) % 16 == 0);
constexpr std::size_t kHeaderSpace = (sizeof(Header) + 15) / 16 * 16;

void* allocate(std::size_t n, std::size_t align) noexcept {
  void* base = nullptr;
  std::size_t offset = kHeaderSpace;
  if (align <= 16) {
    base = std::malloc(n + offset);
  } else {
    offset = (kHeaderSpace + align - 1) / align * align;
    if (posix_memalign(&base, align, n + offset) != 0)
      base = nullptr;
  }
  if (base == nullptr)
    return nullptr;
  auto* p = static_cast<unsigned char*>(base) + offset;
  auto* h = reinterpret_cast<Header*>(p - kHeaderSpace);
  h->base = base;
  h->bytes = n;
  h->part = static_cast<std::uint8_t>(g_part);
  auto& s = g_stats[static_cast<std::size_t>(g_part)];
  s.live_bytes += static_cast<std::int64_t>(n);
  ++s.allocs;
  return p;
}

void release(void* p) noexcept {
  if (p == nullptr)
    return;
  auto* h = reinterpret_cast<Header*>(static_cast<unsigned char*>(p) - kHeaderSpace);
  auto& s = g_stats[h->part];
  s.live_bytes -= static_cast<std::int64_t>(h->bytes);
  ++s.frees;
  std::free(h->base);
}

void* allocate_or_throw(std::size_t n, std::size_t align) {
  void* p = allocate(n, align);
  if (p == nullptr)
    throw std::bad_alloc();
  return p;
}

void switch_to(Part to) {
  if (to == g_part)
    return;
  if (g_timing) {
    const auto now = std::chrono::steady_clock::now();
    g_stats[static_cast<std::size_t>(g_part)].wall_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - g_last).count());
    g_last = now;
  }
  g_part = to;
  const bool want = (g_measured & (1u << static_cast<unsigned>(to))) != 0;
  if (want != g_collecting) {
    CALLGRIND_TOGGLE_COLLECT;
    g_collecting = want;
  }
}

}  // namespace

std::string_view to_string(Part p) {
  switch (p) {
    case Part::kDriver:
      return "driver";
    case Part::kSim:
      return "sim";
    case Part::kHub:
      return "hub_manager";
    case Part::kClients:
      return "client_managers";
  }
  return "?";
}

std::array<PartStats, kPartCount> stats() {
  if (g_timing) {
    // Charge the running interval so a snapshot is up to date.
    const auto now = std::chrono::steady_clock::now();
    g_stats[static_cast<std::size_t>(g_part)].wall_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - g_last).count());
    g_last = now;
  }
  return g_stats;
}

Part current() {
  return g_part;
}

void set_measured(unsigned mask) {
  g_measured = mask;
  const bool want = (g_measured & (1u << static_cast<unsigned>(g_part))) != 0;
  if (want != g_collecting) {
    CALLGRIND_TOGGLE_COLLECT;
    g_collecting = want;
  }
}

void set_timing(bool on) {
  g_timing = on;
  g_last = std::chrono::steady_clock::now();
}

bool running_on_valgrind() {
  return RUNNING_ON_VALGRIND != 0;
}

void callgrind_dump(const char* name) {
  CALLGRIND_DUMP_STATS_AT(name);
}

Scope::Scope(Part p) : prev_(g_part) {
  // An entry is a call into a part from another one (an event handed to a
  // manager, a seam call): the unit of "per event". Returns are not entries.
  if (p != g_part)
    ++g_stats[static_cast<std::size_t>(p)].entries;
  switch_to(p);
}
Scope::~Scope() {
  switch_to(prev_);
}

}  // namespace rcnet::bench

// --- the replaced global allocation functions ([new.delete]) -------------------
using rcnet::bench::allocate;
using rcnet::bench::allocate_or_throw;
using rcnet::bench::release;

void* operator new(std::size_t n) {
  return allocate_or_throw(n, 16);
}
void* operator new[](std::size_t n) {
  return allocate_or_throw(n, 16);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 16);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 16);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}
