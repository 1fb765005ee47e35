// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The next hop the kernel's FIB gives for a destination routed into the TUN
// (docs/design.md "Data path", rcnetd(8) "THE OVERLAY AS AN IP LINK"): `ip route add
// 192.168.5.0/24 via 10.100.0.7 dev rc0` makes 10.100.0.7 the peer that
// carries 192.168.5.0/24. A TUN has no neighbour layer to hand us the next
// hop with the packet, so it is asked of the kernel (RTM_GETROUTE,
// rtnetlink(7)) in the TUN's namespace and cached per destination; any
// route, address or link notification there (RTNLGRP_IPV4_ROUTE,
// RTNLGRP_IPV6_ROUTE, the IFADDR groups, RTNLGRP_LINK) empties the cache,
// so the next packet asks again. The lookup is for the destination alone
// (no source, mark or input interface): policy routing rules that select
// on those are not seen.
//
// Thread: the loop's. A lookup is one synchronous RTM_GETROUTE round trip
// (the kernel answers it within the send; SO_RCVTIMEO bounds the wait to
// kQueryTimeout) and happens only on a cache miss.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "event_loop.hpp"
#include "nl.hpp"
#include "util/address.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

// Destination → gateway (nullopt: no gateway through the TUN), bounded.
class NextHopCache {
 public:
  static constexpr std::size_t kMaxEntries = 4096;
  // The cached answer, or nullptr when `dst` is not cached.
  const std::optional<IpAddr>* find(const IpAddr& dst) const;
  // Caches `gateway` for `dst`; a full cache is emptied first (entries are
  // one kernel query each to get back).
  void insert(const IpAddr& dst, std::optional<IpAddr> gateway);
  void clear() { map_.clear(); }
  std::size_t size() const { return map_.size(); }

 private:
  std::unordered_map<IpAddr, std::optional<IpAddr>> map_;
};

class FibNextHop {
 public:
  static constexpr auto kQueryTimeout = std::chrono::milliseconds(100);

  // Opens the query and notification sockets in `netns` (empty: ours; the
  // TunDevice's namespace) and finds `ifname`'s index there. Errors:
  // setns(2), netlink, ENODEV when there is no such interface.
  static Result<std::unique_ptr<FibNextHop>> create(EventLoop& loop, const std::string& netns,
                                                    const std::string& ifname);
  ~FibNextHop();

  // The gateway of the kernel's route to `dst` when that route leaves
  // through the TUN via a gateway; nullopt when it is a direct route, leaves
  // through another interface, is not unicast, or there is none (or the
  // query failed: logged at debug). Either answer is cached.
  std::optional<IpAddr> gateway(const IpAddr& dst);

  std::uint64_t queries() const { return queries_; }
  std::uint64_t flushes() const { return flushes_; }
  const NextHopCache& cache() const { return cache_; }

 private:
  FibNextHop() = default;
  void on_notification();
  std::optional<IpAddr> query(const IpAddr& dst);

  int ifindex_ = 0;
  NlSockPtr query_;
  NlSockPtr events_;
  EventSource source_;
  NextHopCache cache_;
  std::uint64_t queries_ = 0;
  std::uint64_t flushes_ = 0;
};

}  // namespace rcnet::daemon
