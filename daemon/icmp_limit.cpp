// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "icmp_limit.hpp"

#include <algorithm>
#include <iterator>

namespace rcnet::daemon {

namespace {
constexpr Duration kDestCap = IcmpLimiter::kPerDestination * IcmpLimiter::kDestinationBurst;
}  // namespace

bool IcmpLimiter::allow(const IpAddr& to, TimePoint now) {
  // The host's bucket refills continuously at kHostPerSecond.
  if (!host_started_) {
    host_started_ = true;
    host_last_ = now;
  }
  if (now > host_last_) {
    const double add = std::chrono::duration<double>(now - host_last_).count() * kHostPerSecond;
    host_tokens_ = std::min<double>(kHostBurst, host_tokens_ + add);
    host_last_ = now;
  }
  if (host_tokens_ < 1.0)
    return false;

  auto it = per_dest_.find(to);
  if (it == per_dest_.end()) {
    if (per_dest_.size() >= kMaxDestinations) {
      std::erase_if(per_dest_, [&](const auto& kv) {
        return kv.second.tokens + (now - kv.second.last) >= kDestCap;
      });
    }
    if (per_dest_.size() >= kMaxDestinations) {
      host_tokens_ -= 1.0;
      return true;
    }
    // A destination not seen before starts with a full bucket.
    it = per_dest_.emplace(to, Bucket{kDestCap, now}).first;
  }
  Bucket& b = it->second;
  if (now > b.last) {
    b.tokens = std::min(kDestCap, b.tokens + (now - b.last));
    b.last = now;
  }
  if (b.tokens < kPerDestination)
    return false;
  b.tokens -= kPerDestination;
  host_tokens_ -= 1.0;
  return true;
}

}  // namespace rcnet::daemon
