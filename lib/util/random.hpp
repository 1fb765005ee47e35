// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The one pseudo-random generator of librcnet: splitmix64 (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
// Tiny, seedable and the same on every standard library, unlike
// std::uniform_*_distribution: a seeded run of the simulated fabric or of the
// manager's retry jitter gives the same numbers everywhere.
#include <cstdint>

namespace rcnet {

// Advances `state` by one step and returns the next 64-bit output. Any seed,
// 0 included, is fine.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace rcnet
