// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The TUN side's counters of the data path (daemon/tun_path.hpp counts
// them; the manager counts its own), one row each: X(name, series, help)
// (util/counter_row.hpp). Here rather than beside TunPath so that the
// Prometheus export (ctl/prometheus.cpp), which rcnetctl runs, reads the
// same rows. drops_refused counts the packets the manager refused, which it
// counted itself (drops_oversize, ...): not a drop reason of its own, or
// sum() over rcnet_dropped_packets_total would count them twice.
#include <cstdint>
#include <string_view>

#include "cm/snapshot.hpp"
#include "util/counter_row.hpp"

namespace rcnet::ctl {

inline constexpr SeriesFamily kIcmpErrorsSent{"rcnet_icmp_errors_sent_total", "type", ""};

#define RCNET_TUN_COUNTERS(X)                                                                     \
  X(tun_rx_packets, "rcnet_tun_read_packets_total", "packets read from the TUN device")           \
  X(tun_rx_bytes, "rcnet_tun_read_bytes_total", "bytes read from the TUN device")                 \
  X(tun_tx_packets, "rcnet_tun_written_packets_total", "packets written to the TUN device")       \
  X(tun_tx_bytes, "rcnet_tun_written_bytes_total", "bytes written to the TUN device")             \
  X(drops_unmapped, cm::kDropped("unmapped"),                                                     \
    "packets dropped: no peer maps to the IP destination")                                        \
  X(link_scope_multicast, "rcnet_tun_link_scope_multicast_packets_total",                         \
    "the kernel's own link-scope multicast (RS, MLD, DAD, IGMP): for no peer")                    \
  X(drops_too_big, cm::kDropped("too_big"), "packets dropped: larger than the peer's MTU")        \
  X(drops_source, cm::kDropped("source"), "received packets dropped: source not the peer's own")  \
  X(tx_via_gateway, "rcnet_tun_gateway_packets_total",                                            \
    "packets sent to the peer a route names as gateway")                                          \
  X(icmp_unreachable_sent, kIcmpErrorsSent("unreachable"),                                        \
    "ICMP host unreachable written to the TUN")                                                   \
  X(icmp_too_big_sent, kIcmpErrorsSent("too_big"), "ICMP frag needed / packet too big written")   \
  X(icmp_rate_limited, "rcnet_icmp_errors_rate_limited_total",                                    \
    "ICMP host unreachable not sent: rate limit")                                                 \
  X(drops_not_ip, cm::kDropped("not_ip"),                                                         \
    "packets dropped: not IPv4/IPv6 or shorter than its header")                                  \
  X(drops_refused, "rcnet_tun_refused_packets_total",                                             \
    "packets the manager did not take (oversize, refused)")                                       \
  X(drops_tun_write, cm::kDropped("tun_write"), "received packets the TUN device did not accept") \
  X(drops_not_attached, cm::kDropped("not_attached"),                                             \
    "received packets before the TUN device existed")                                             \
  X(rx_uso_segmented, "rcnet_tun_uso_segmented_packets_total",                                    \
    "UDP super-packets received, cut here: TUN lacks USO")                                        \
  X(read_pauses, "rcnet_tun_read_pauses_total",                                                   \
    "times TUN reading stopped for want of send slots")                                           \
  X(read_empty, "rcnet_tun_reads_empty_total", "TUN reads that found the queue empty (EAGAIN)")

struct TunCounters {
#define RCNET_X(name, series, help) std::uint64_t name = 0;
  RCNET_TUN_COUNTERS(RCNET_X)
#undef RCNET_X
  template <class F>
  void for_each(F&& f) const {
#define RCNET_X(name, series, help) f(std::string_view(#name), name, std::string_view(help));
    RCNET_TUN_COUNTERS(RCNET_X)
#undef RCNET_X
  }
  static constexpr CounterRow kRows[] = {RCNET_TUN_COUNTERS(RCNET_COUNTER_ROW)};
};

}  // namespace rcnet::ctl
