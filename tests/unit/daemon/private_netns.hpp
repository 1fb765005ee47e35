// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Runs part of a test in a fresh, empty network namespace (unshare(2)
// CLONE_NEWNET) and returns to the original one afterwards, so TUN and
// netlink tests never touch the host's interfaces. Needs CAP_SYS_ADMIN; the
// namespace vanishes once the last socket and device in it are closed.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "unique_fd.hpp"

namespace rcnet::daemon::test {

class PrivateNetns {
 public:
  PrivateNetns() : home_(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) {
    REQUIRE(home_.valid());
    entered_ = ::unshare(CLONE_NEWNET) == 0;
  }
  ~PrivateNetns() {
    if (entered_)
      (void)::setns(home_.get(), CLONE_NEWNET);
  }
  bool entered() const { return entered_; }

 private:
  UniqueFd home_;
  bool entered_ = false;
};

}  // namespace rcnet::daemon::test
