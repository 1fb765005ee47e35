// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <cerrno>

namespace rcnet::daemon {

Result<UniqueFd> open_netns(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    return Error::invalid("network namespace name '" + name + "'");
  }
  const std::string path = "/run/netns/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return Error::from_errno(errno, "open " + path);
  return fd;
}

Result<NetnsSwitch> NetnsSwitch::enter(const std::string& name) {
  NetnsSwitch s;
  if (name.empty())
    return s;
  auto target = open_netns(name);
  if (!target)
    return target.error();
  UniqueFd home(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!home)
    return Error::from_errno(errno, "open /proc/self/ns/net");
  if (::setns(target->get(), CLONE_NEWNET) < 0) {
    return Error::from_errno(errno, "setns into network namespace " + name);
  }
  s.home_ = std::move(home);
  return s;
}

NetnsSwitch::~NetnsSwitch() {
  if (!home_)
    return;
  if (::setns(home_.get(), CLONE_NEWNET) < 0) {
    spdlog::critical("cannot return to the daemon's network namespace: {}",
                     std::generic_category().message(errno));
  }
}

}  // namespace rcnet::daemon
