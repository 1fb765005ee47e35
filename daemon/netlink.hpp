// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Underlay monitoring over rtnetlink (rtnetlink(7)), in the loop: the state of
// the underlay link (the interface holding the node's address), the address
// itself (removed from it: the link counts as down until it is back), and
// neighbour entries (ARP and IPv6 ND) going FAILED on it. The socket is non-blocking and
// read from an io source; nothing here blocks except the initial dumps.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "event_loop.hpp"
#include "nl.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::daemon {

// The up/down decision for one link, from RTM_NEWLINK/RTM_DELLINK. "Up" means
// IFF_UP and IFF_RUNNING (carrier and operstate usable); a deleted link is
// down. update() returns the new state only when it changed, so a flood of
// unrelated link messages produces no manager calls.
class LinkTracker {
 public:
  explicit LinkTracker(int ifindex) : ifindex_(ifindex) {}
  std::optional<bool> update(int ifindex, unsigned flags, bool deleted);
  int ifindex() const { return ifindex_; }
  std::optional<bool> up() const { return up_; }

 private:
  int ifindex_;
  std::optional<bool> up_;
};

// A neighbour state (NUD_* of ndm_state, rtnetlink(7)) that means the peer's
// underlay address stopped answering ARP/ND.
bool neighbour_failed(int nud_state);

// The longest a resolution that ends FAILED can have lasted, from the
// neighbour sysctls in `dir` (/proc/sys/net/ipv4/neigh/IFNAME or its ipv6
// twin, neigh(7) "ARP"/ipv6 "neigh"): retrans_time_ms x (ucast_solicit +
// app_solicit + the larger of mcast_solicit and mcast_resolicit), the
// kernel's probe count for INCOMPLETE and PROBE alike. A file missing or
// unreadable counts at the kernel's default (1000 ms; 3, 0, 3, 0 probes):
// 6 s. The manager does not believe a FAILED about a peer heard from
// within this window (cm::Manager::peer_failed).
Duration neighbour_probe_window(const std::string& dir);

class NetlinkMonitor {
 public:
  struct Handlers {
    std::function<void(bool up)> link_changed;
    // `probing`: neighbour_probe_window() of the underlay interface, read
    // when the entry went FAILED.
    std::function<void(const IpAddr& addr, Duration probing)> neighbour_failed;
  };

  // Finds the interface holding `underlay` (RTM_GETADDR dump), subscribes to
  // RTNLGRP_LINK, RTNLGRP_NEIGH (IPv4 and IPv6 entries arrive on it) and the
  // address groups of underlay's family, and adds the socket to `loop`. Errors: EADDRNOTAVAIL when
  // no interface holds `underlay`; netlink errors otherwise.
  static Result<std::unique_ptr<NetlinkMonitor>> create(EventLoop& loop, const IpAddr& underlay,
                                                        Handlers handlers);
  ~NetlinkMonitor();

  int underlay_ifindex() const { return tracker_.ifindex(); }
  // Deletes the neighbour entry (ARP or ND) of `peer` on the underlay
  // interface, unless it is permanent (RTM_DELNEIGH, rtnetlink(7); needs
  // CAP_NET_ADMIN). For a QP about to be destroyed while the link is down:
  // packets the QP sent after the carrier loss wait in that entry's queue
  // until resolution fails (ucast_probes × retrans_time, 3 s by default),
  // and rxe's QP destroy blocks until each of them is freed; deleting the
  // entry frees them (docs/design.md "Rails"). true when one was deleted;
  // failures are logged at debug level (nothing to delete is the usual case).
  bool flush_neighbour(const IpAddr& peer);
  std::uint64_t neighbours_flushed() const { return neighbours_flushed_; }
  // Starts resolving the neighbour entry of `peer` on the underlay
  // interface, creating it when missing (RTM_NEWNEIGH with NTF_USE, as
  // `ip neigh replace ... use`; CAP_NET_ADMIN): before rdma_resolve_addr(3),
  // so that rdma_cm finds it resolved instead of missing an answer that
  // came back at once (cm::Manager::NeighbourOps). Failures are logged at
  // debug level; nothing depends on it.
  void use_neighbour(const IpAddr& peer);
  bool link_up() const { return tracker_.up().value_or(false); }
  // The underlay's carrier as the kernel has it now (RTM_GETLINK: IFF_UP
  // and IFF_LOWER_UP), not as the last notice said: the kernel sends the
  // carrier loss's notice through linkwatch, deferred, while rxe on 6.12
  // errors a QP at once. nullopt when it cannot be read.
  std::optional<bool> carrier_now() const;
  std::uint64_t neighbour_failures() const { return neighbour_failures_; }
  std::uint64_t resyncs() const { return resyncs_; }

 private:
  NetlinkMonitor(int ifindex, const IpAddr& underlay, Handlers h)
      : tracker_(ifindex), underlay_(underlay), handlers_(std::move(h)) {}
  void on_readable();
  static int on_message(nl_msg* msg, void* self);
  void on_object(nl_object* obj, int msg_type);
  // Re-reads the link state after the socket overflowed (ENOBUFS): messages
  // were lost, so the last one seen may be stale.
  void resync();

  LinkTracker tracker_;
  IpAddr underlay_;
  // RTM_DELADDR of underlay_ seen, no RTM_NEWADDR since: link_changed(false)
  // was reported (if the link was up) and up is not reported until it is back.
  bool addr_removed_ = false;
  Handlers handlers_;
  NlSockPtr events_;  // subscribed, non-blocking
  NlSockPtr query_;   // for resync's RTM_GETLINK
  EventSource source_;
  std::uint64_t neighbour_failures_ = 0;
  std::uint64_t resyncs_ = 0;
  std::uint64_t neighbours_flushed_ = 0;
};

// The interface index holding `addr` in the current namespace; ENOENT-style
// Error (EADDRNOTAVAIL) if none does.
Result<int> ifindex_of_address(nl_sock* sock, const IpAddr& addr);

}  // namespace rcnet::daemon
