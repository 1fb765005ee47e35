// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "util/random.hpp"

#include <array>
#include <cstdint>
#include "catch2_compat.hpp"

namespace util_random_test {
using rcnet::splitmix64;

TEST_CASE("splitmix64 gives the published sequence for seed 1234567", "[util][random]") {
  // The outputs of the reference splitmix64.c (prng.di.unimi.it) for this seed: the
  // simulated fabric and the manager's jitter depend on these exact values.
  constexpr std::array<std::uint64_t, 5> kExpected = {
      6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
      4593380528125082431ULL, 16408922859458223821ULL};
  std::uint64_t state = 1234567;
  for (const std::uint64_t want : kExpected)
    CHECK(splitmix64(state) == want);
}

TEST_CASE("splitmix64 advances its state by the golden-ratio increment", "[util][random]") {
  std::uint64_t state = 0;
  CHECK(splitmix64(state) == 0xe220a8397b1dcdafULL);
  CHECK(state == 0x9e3779b97f4a7c15ULL);
  // Same state, same output: the caller's copy is the whole generator.
  std::uint64_t a = 42;
  std::uint64_t b = 42;
  CHECK(splitmix64(a) == splitmix64(b));
  CHECK(a == b);
}

}  // namespace util_random_test
