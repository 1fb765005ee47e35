// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Runs part of a test in a fresh, empty network namespace (unshare(2)
// CLONE_NEWNET) and returns to the original one afterwards, so TUN and
// netlink tests never touch the host's interfaces. Needs CAP_SYS_ADMIN; the
// namespace vanishes once the last socket and device in it are closed.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include "catch2_compat.hpp"

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

// A fresh, empty network namespace bound at /run/netns/<name> (what
// `ip netns add` makes: a bind mount of the namespace's nsfs file), for code
// that takes a namespace by name. The calling thread stays where it was.
// Unmounted and removed on destruction.
class NamedNetns {
 public:
  explicit NamedNetns(std::string name) : path_("/run/netns/" + name) {
    ::mkdir("/run/netns", 0755);
    UniqueFd anchor(::open(path_.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (!anchor)
      return;
    created_ = true;
    UniqueFd home(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home || ::unshare(CLONE_NEWNET) != 0)
      return;
    mounted_ = ::mount("/proc/thread-self/ns/net", path_.c_str(), nullptr, MS_BIND, nullptr) == 0;
    (void)::setns(home.get(), CLONE_NEWNET);
  }
  ~NamedNetns() {
    if (mounted_)
      (void)::umount2(path_.c_str(), MNT_DETACH);
    if (created_)
      (void)::unlink(path_.c_str());
  }
  NamedNetns(const NamedNetns&) = delete;
  NamedNetns& operator=(const NamedNetns&) = delete;
  bool ok() const { return mounted_; }

 private:
  std::string path_;
  bool created_ = false;
  bool mounted_ = false;
};

}  // namespace rcnet::daemon::test
