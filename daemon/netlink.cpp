// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "netlink.hpp"

#include <algorithm>
#include <array>
#include <fstream>
// <net/if.h> (if_indextoname) before <linux/if.h>, in a block of its own:
// the kernel header then leaves out what glibc's defines.
#include <net/if.h>

#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>

namespace rcnet::daemon {

std::optional<bool> LinkTracker::update(int ifindex, unsigned flags, bool deleted) {
  if (ifindex != ifindex_)
    return std::nullopt;
  const bool now_up = !deleted && (flags & IFF_UP) != 0 && (flags & IFF_RUNNING) != 0;
  if (up_ == now_up)
    return std::nullopt;
  const bool first = !up_.has_value();
  up_ = now_up;
  // The first observation is the initial state, not a change, unless the
  // link starts down (the manager assumes up until told otherwise).
  if (first && now_up)
    return std::nullopt;
  return now_up;
}

bool neighbour_failed(int nud_state) {
  return (nud_state & NUD_FAILED) != 0;
}

Duration neighbour_probe_window(const std::string& dir) {
  const auto read = [&](const char* name, long fallback) {
    std::ifstream in(dir + "/" + name);
    long v = 0;
    return (in >> v) && v >= 0 ? v : fallback;
  };
  const long probes = read("ucast_solicit", 3) + read("app_solicit", 0) +
                      std::max(read("mcast_solicit", 3), read("mcast_resolicit", 0));
  return std::chrono::milliseconds(read("retrans_time_ms", 1000) * probes);
}

Result<int> ifindex_of_address(nl_sock* sock, const IpAddr& addr) {
  nl_cache* raw = nullptr;
  if (int r = rtnl_addr_alloc_cache(sock, &raw); r < 0)
    return nl_error(r, "RTM_GETADDR dump");
  NlCachePtr cache(raw);
  struct Search {
    const IpAddr* want;
    int ifindex = 0;
  } search{&addr};
  nl_cache_foreach(
      cache.get(),
      [](nl_object* obj, void* arg) {
        auto* s = static_cast<Search*>(arg);
        auto* a = reinterpret_cast<rtnl_addr*>(obj);
        if (s->ifindex != 0)
          return;
        if (auto ip = to_ip(rtnl_addr_get_local(a)); ip && *ip == *s->want) {
          s->ifindex = rtnl_addr_get_ifindex(a);
        }
      },
      &search);
  if (search.ifindex == 0) {
    return Error::from_errno(EADDRNOTAVAIL, "no interface holds address " + addr.to_string());
  }
  return search.ifindex;
}

Result<std::unique_ptr<NetlinkMonitor>> NetlinkMonitor::create(EventLoop& loop,
                                                               const IpAddr& underlay,
                                                               Handlers handlers) {
  auto query = open_request_socket(NETLINK_ROUTE);
  if (!query)
    return query.error();
  auto ifindex = ifindex_of_address(query->get(), underlay);
  if (!ifindex)
    return ifindex.error();

  std::unique_ptr<NetlinkMonitor> m(new NetlinkMonitor(*ifindex, underlay, std::move(handlers)));
  m->query_ = std::move(*query);

  const NlGroup addr_group = underlay.is_v6() ? NlGroup{RTNLGRP_IPV6_IFADDR, "RTNLGRP_IPV6_IFADDR"}
                                              : NlGroup{RTNLGRP_IPV4_IFADDR, "RTNLGRP_IPV4_IFADDR"};
  auto ev = open_notification_socket({
      .protocol = NETLINK_ROUTE,
      .groups = {{RTNLGRP_LINK, "RTNLGRP_LINK"}, {RTNLGRP_NEIGH, "RTNLGRP_NEIGH"}, addr_group},
      .on_message = &NetlinkMonitor::on_message,
      .arg = m.get(),
      // Neighbour tables churn on busy hosts; a larger buffer makes overflow
      // rare (and resync() covers it when it happens).
      .receive_buffer = 1 << 20,
  });
  if (!ev)
    return ev.error();
  m->events_ = std::move(*ev);

  auto src = loop.add_io(nl_socket_get_fd(m->events_.get()), EPOLLIN, "netlink",
                         [p = m.get()](std::uint32_t) { p->on_readable(); });
  if (!src)
    return src.error();
  m->source_ = std::move(*src);
  m->resync();
  return m;
}

NetlinkMonitor::~NetlinkMonitor() = default;

void NetlinkMonitor::on_readable() {
  const int r = drain_notifications(events_.get(), [this] {
    spdlog::warn("netlink: notifications lost (socket overflow); re-reading the underlay link");
    resync();
  });
  if (r < 0)
    spdlog::warn("netlink: receive failed: {}", nl_geterror(-r));
}

int NetlinkMonitor::on_message(nl_msg* msg, void* self) {
  auto* m = static_cast<NetlinkMonitor*>(self);
  const int type = nlmsg_hdr(msg)->nlmsg_type;
  struct Ctx {
    NetlinkMonitor* m;
    int type;
  } ctx{m, type};
  nl_msg_parse(
      msg,
      [](nl_object* obj, void* arg) {
        auto* c = static_cast<Ctx*>(arg);
        c->m->on_object(obj, c->type);
      },
      &ctx);
  return NL_OK;
}

void NetlinkMonitor::on_object(nl_object* obj, int msg_type) {
  if (msg_type == RTM_NEWLINK || msg_type == RTM_DELLINK) {
    auto* link = reinterpret_cast<rtnl_link*>(obj);
    const auto changed = tracker_.update(rtnl_link_get_ifindex(link), rtnl_link_get_flags(link),
                                         msg_type == RTM_DELLINK);
    if (changed && *changed && addr_removed_)
      return;  // up again, but without our address: still down for us
    if (changed) {
      spdlog::info("underlay link {} (ifindex {}) is {}",
                   rtnl_link_get_name(link) ? rtnl_link_get_name(link) : "?", tracker_.ifindex(),
                   *changed ? "up" : "down");
      if (handlers_.link_changed)
        handlers_.link_changed(*changed);
    }
    return;
  }
  if (msg_type == RTM_NEWADDR || msg_type == RTM_DELADDR) {
    auto* a = reinterpret_cast<rtnl_addr*>(obj);
    const auto ip = to_ip(rtnl_addr_get_local(a));
    if (!ip || *ip != underlay_ || rtnl_addr_get_ifindex(a) != tracker_.ifindex())
      return;
    const bool removed = msg_type == RTM_DELADDR;
    if (removed == addr_removed_)
      return;
    addr_removed_ = removed;
    spdlog::info("underlay address {} {} interface {}", underlay_.to_string(),
                 removed ? "removed from" : "back on", tracker_.ifindex());
    if (tracker_.up().value_or(true) && handlers_.link_changed)
      handlers_.link_changed(!removed);
    return;
  }
  if (msg_type == RTM_NEWNEIGH) {
    auto* n = reinterpret_cast<rtnl_neigh*>(obj);
    if (rtnl_neigh_get_ifindex(n) != tracker_.ifindex())
      return;
    if (spdlog::should_log(spdlog::level::trace)) {
      if (const auto a = to_ip(rtnl_neigh_get_dst(n)))
        spdlog::trace("underlay neighbour {}: state {:#x}", a->to_string(),
                      rtnl_neigh_get_state(n));
    }
    if (!neighbour_failed(rtnl_neigh_get_state(n)))
      return;
    const auto addr = to_ip(rtnl_neigh_get_dst(n));
    if (!addr)
      return;
    ++neighbour_failures_;
    std::array<char, IF_NAMESIZE> name{};
    const Duration probing =
        if_indextoname(static_cast<unsigned>(tracker_.ifindex()), name.data()) == nullptr
            ? neighbour_probe_window("")
            : neighbour_probe_window(fmt::format("/proc/sys/net/{}/neigh/{}",
                                                 addr->is_v6() ? "ipv6" : "ipv4", name.data()));
    spdlog::info("underlay neighbour {} is FAILED (its resolution lasted {:.0f} ms at most)",
                 addr->to_string(), to_ms(probing));
    if (handlers_.neighbour_failed)
      handlers_.neighbour_failed(*addr, probing);
  }
}

namespace {

// One neighbour request for `dst` on `ifindex` (an ndmsg and NDA_DST,
// rtnetlink(7)); null when it cannot be built.
NlMsgPtr neighbour_msg(int type, int flags, int ifindex, const IpAddr& dst,
                       std::uint8_t ndm_flags = 0) {
  NlMsgPtr msg(nlmsg_alloc_simple(type, flags));
  ndmsg ndm{};
  ndm.ndm_family = dst.is_v6() ? AF_INET6 : AF_INET;
  ndm.ndm_ifindex = ifindex;
  ndm.ndm_flags = ndm_flags;
  if (!msg || nlmsg_append(msg.get(), &ndm, sizeof ndm, NLMSG_ALIGNTO) < 0 ||
      nla_put(msg.get(), NDA_DST, static_cast<int>(dst.size()), dst.bytes.data()) < 0)
    return nullptr;
  return msg;
}

// The NUD_* state of the neighbour entry of `dst` on `ifindex`
// (RTM_GETNEIGH of one entry, Linux >= 5.0); nullopt when there is none or
// the kernel cannot say.
std::optional<int> neighbour_state(nl_sock* sock, int ifindex, const IpAddr& dst) {
  NlMsgPtr msg = neighbour_msg(RTM_GETNEIGH, 0, ifindex, dst);
  if (!msg || nl_send_auto(sock, msg.get()) < 0)
    return std::nullopt;
  std::optional<int> state;
  NlCbPtr cb(nl_cb_clone(nl_socket_get_cb(sock)));
  if (!cb)
    return std::nullopt;
  nl_cb_set(
      cb.get(), NL_CB_VALID, NL_CB_CUSTOM,
      [](nl_msg* m, void* arg) {
        const nlmsghdr* h = nlmsg_hdr(m);
        if (h->nlmsg_type == RTM_NEWNEIGH && nlmsg_datalen(h) >= static_cast<int>(sizeof(ndmsg)))
          *static_cast<std::optional<int>*>(arg) =
              static_cast<const ndmsg*>(nlmsg_data(h))->ndm_state;
        return static_cast<int>(NL_OK);
      },
      &state);
  // The reply, then the ACK nl_send_auto() asked for: both must be read, or
  // the next request on this socket reads the stale ACK as its answer. No
  // entry: one error message (ENOENT), which is the ACK.
  if (nl_recvmsgs(sock, cb.get()) >= 0 && state)
    (void)nl_wait_for_ack(sock);
  return state;
}

// Sends `msg` and waits for the kernel's ACK; a negative NLE_* code on failure.
int send_sync(nl_sock* sock, NlMsgPtr msg) {
  return msg ? nl_send_sync(sock, msg.release()) : -NLE_NOMEM;  // frees the message
}

}  // namespace

bool NetlinkMonitor::flush_neighbour(const IpAddr& peer) {
  const auto state = neighbour_state(query_.get(), tracker_.ifindex(), peer);
  // None, or permanent / no-ARP: the operator's, and it queues nothing.
  if (!state || (*state & (NUD_PERMANENT | NUD_NOARP)) != 0) {
    spdlog::trace("underlay neighbour {}: {}, not deleted", peer.to_string(),
                  state ? fmt::format("state {:#x}", *state) : std::string("no entry"));
    return false;
  }
  if (int r = send_sync(query_.get(), neighbour_msg(RTM_DELNEIGH, 0, tracker_.ifindex(), peer));
      r < 0) {
    spdlog::debug("underlay neighbour {}: RTM_DELNEIGH failed: {}", peer.to_string(),
                  nl_geterror(-r));
    return false;
  }
  ++neighbours_flushed_;
  spdlog::debug("underlay neighbour {} (state {:#x}) deleted: the link is down", peer.to_string(),
                *state);
  return true;
}

void NetlinkMonitor::use_neighbour(const IpAddr& peer) {
  if (!tracker_.up().value_or(true))
    return;
  // Only an entry that is missing or unresolved. NTF_USE goes through the
  // kernel's neighbour update (Linux >= 5.16), which takes NUD_PERMANENT off
  // an entry: an operator's static entry would turn into one that must be
  // resolved, and fail where nothing answers (the IPv6 lab's links).
  if (const auto state = neighbour_state(query_.get(), tracker_.ifindex(), peer);
      state && (*state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
                          NUD_NOARP)) != 0)
    return;
  // NTF_USE: the kernel starts resolving the entry (neigh_event_send).
  if (int r = send_sync(query_.get(), neighbour_msg(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE,
                                                    tracker_.ifindex(), peer, NTF_USE));
      r < 0)
    spdlog::debug("underlay neighbour {}: RTM_NEWNEIGH (NTF_USE) failed: {}", peer.to_string(),
                  nl_geterror(-r));
}

std::optional<bool> NetlinkMonitor::carrier_now() const {
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(query_.get(), tracker_.ifindex(), nullptr, &raw) < 0)
    return std::nullopt;
  RtnlLinkPtr link(raw);
  const unsigned flags = rtnl_link_get_flags(link.get());
  return (flags & IFF_UP) != 0 && (flags & IFF_LOWER_UP) != 0;
}

void NetlinkMonitor::resync() {
  ++resyncs_;
  rtnl_link* raw = nullptr;
  const int r = rtnl_link_get_kernel(query_.get(), tracker_.ifindex(), nullptr, &raw);
  if (r < 0) {
    if (r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND) {
      if (auto changed = tracker_.update(tracker_.ifindex(), 0, true); changed) {
        if (handlers_.link_changed)
          handlers_.link_changed(*changed);
      }
      return;
    }
    spdlog::warn("netlink: cannot read underlay link {}: {}", tracker_.ifindex(), nl_geterror(-r));
    return;
  }
  RtnlLinkPtr link(raw);
  if (auto changed = tracker_.update(tracker_.ifindex(), rtnl_link_get_flags(link.get()), false)) {
    spdlog::info("underlay link {} is {}", rtnl_link_get_name(link.get()),
                 *changed ? "up" : "down");
    if (handlers_.link_changed)
      handlers_.link_changed(*changed);
  }
}

}  // namespace rcnet::daemon
