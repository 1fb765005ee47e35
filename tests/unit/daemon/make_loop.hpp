// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A fresh EventLoop for one test; the test fails where the loop cannot be
// made (sd_event_new(3)'s error in the REQUIRE's message).
#include <utility>

#include "catch2_compat.hpp"

#include "event_loop.hpp"

namespace rcnet::daemon::test {

inline EventLoop make_loop() {
  auto l = EventLoop::create();
  REQUIRE(l.ok());
  return std::move(*l);
}

}  // namespace rcnet::daemon::test
