// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "async_watches.hpp"

#include <sys/epoll.h>

#include <cerrno>

namespace rcnet::daemon {

Result<std::shared_ptr<EventSource>> AsyncWatches::watch(
    const std::shared_ptr<rdma::VerbsDevice>& device) {
  if (!device)
    return Error::from_errno(ENODEV, "no RDMA device open to watch");
  std::erase_if(watches_, [](const auto& kv) { return kv.second.expired(); });
  if (auto it = watches_.find(device.get()); it != watches_.end())
    return it->second.lock();
  std::weak_ptr<rdma::VerbsDevice> weak = device;
  auto src = loop_.add_io(device->async_fd(), EPOLLIN, "verbs-async", [weak](std::uint32_t) {
    if (auto d = weak.lock())
      d->dispatch_async_events();
  });
  if (!src)
    return src.error();
  auto shared = std::make_shared<EventSource>(std::move(*src));
  watches_[device.get()] = shared;
  return shared;
}

}  // namespace rcnet::daemon
