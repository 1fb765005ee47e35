// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
#include <map>
#include <memory>

#include "event_loop.hpp"
#include "rdma/verbs_device.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

// The one io source on each RDMA device's async-event fd. Rails on ports of
// one device share its context and so its async fd (rdma/verbs_device.hpp),
// which epoll watches once: the first rail on the device makes the watch,
// each rail holds it while its seam is open, and the last one to let go
// removes it before the device's context can close. Each readable wakeup
// reads the device's events and routes them to the rails' managers.
class AsyncWatches {
 public:
  explicit AsyncWatches(EventLoop& loop) : loop_(loop) {}
  // Errors: sd_event_add_io's.
  Result<std::shared_ptr<EventSource>> watch(const std::shared_ptr<rdma::VerbsDevice>& device);

 private:
  EventLoop& loop_;
  std::map<const rdma::VerbsDevice*, std::weak_ptr<EventSource>> watches_;
};

}  // namespace rcnet::daemon
