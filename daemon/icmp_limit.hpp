// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// How often the TUN data path may answer with an ICMP error, as the kernel
// limits its own (net/ipv4/icmp.c, ip-sysctl.rst): a token bucket per
// destination (icmp_ratelimit, default one error per 1000 ms with a burst
// of 6) and one for the host (icmp_msgs_per_sec 1000, icmp_msgs_burst 50).
// Like the kernel's default icmp_ratemask, only destination unreachable is
// limited: "fragmentation needed" / "packet too big" are not (path MTU
// discovery depends on each one arriving).
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "util/address.hpp"
#include "util/time.hpp"

namespace rcnet::daemon {

class IcmpLimiter {
 public:
  static constexpr Duration kPerDestination = std::chrono::milliseconds(1000);
  static constexpr std::uint32_t kDestinationBurst = 6;
  static constexpr std::uint32_t kHostPerSecond = 1000;
  static constexpr std::uint32_t kHostBurst = 50;
  // Destinations remembered at most; a full table forgets those whose
  // bucket is full again (as good as never seen), and past that a new
  // destination is only held to the host's bucket.
  static constexpr std::size_t kMaxDestinations = 1024;

  // One more error to `to` at `now` (the loop's clock): true when both
  // buckets have a token, which it then takes.
  bool allow(const IpAddr& to, TimePoint now);
  std::size_t destinations() const { return per_dest_.size(); }

 private:
  struct Bucket {
    Duration tokens{};  // credit, at most kDestinationBurst * kPerDestination
    TimePoint last{};
  };
  std::unordered_map<IpAddr, Bucket> per_dest_;
  double host_tokens_ = kHostBurst;
  TimePoint host_last_{};
  bool host_started_ = false;
};

}  // namespace rcnet::daemon
