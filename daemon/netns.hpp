// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Named network namespaces as iproute2 makes them (ip-netns(8): a bind mount
// at /run/netns/NAME). rcnetd only ever visits one briefly, to open a netlink
// socket there: a netlink socket stays bound to the namespace it was created
// in, so the thread can switch back at once. setns(2) switches only the
// calling thread; rcnetd has one thread, so nothing else can observe it.
#include <string>

#include "unique_fd.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

// O_RDONLY|O_CLOEXEC fd of /run/netns/NAME (ENOENT when it does not exist).
Result<UniqueFd> open_netns(const std::string& name);

// While alive, the calling thread is in another network namespace; the
// destructor returns it to where it was (and logs critically if that fails:
// every later socket would be created in the wrong namespace).
class NetnsSwitch {
 public:
  // An empty name means "stay here": the switch does nothing.
  static Result<NetnsSwitch> enter(const std::string& name);
  ~NetnsSwitch();
  NetnsSwitch(NetnsSwitch&&) noexcept = default;
  NetnsSwitch& operator=(NetnsSwitch&&) = delete;
  NetnsSwitch(const NetnsSwitch&) = delete;

 private:
  NetnsSwitch() = default;
  UniqueFd home_;  // invalid when no switch was made
};

}  // namespace rcnet::daemon
