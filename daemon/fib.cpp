// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "fib.hpp"

#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "netns.hpp"

namespace rcnet::daemon {

const std::optional<IpAddr>* NextHopCache::find(const IpAddr& dst) const {
  auto it = map_.find(dst);
  return it == map_.end() ? nullptr : &it->second;
}

void NextHopCache::insert(const IpAddr& dst, std::optional<IpAddr> gateway) {
  if (map_.size() >= kMaxEntries && map_.find(dst) == map_.end())
    map_.clear();
  map_[dst] = gateway;
}

namespace {

struct Reply {
  bool seen = false;
  int oif = 0;
  unsigned char type = 0;
  std::optional<IpAddr> gateway;
};

int on_reply(nl_msg* msg, void* arg) {
  auto* r = static_cast<Reply*>(arg);
  nlmsghdr* h = nlmsg_hdr(msg);
  if (h->nlmsg_type != RTM_NEWROUTE)
    return NL_SKIP;
  nlattr* tb[RTA_MAX + 1] = {};
  if (nlmsg_parse(h, sizeof(rtmsg), tb, RTA_MAX, nullptr) < 0)
    return NL_SKIP;
  const auto* rtm = static_cast<const rtmsg*>(nlmsg_data(h));
  r->seen = true;
  r->type = rtm->rtm_type;
  if (tb[RTA_OIF] != nullptr)
    r->oif = static_cast<int>(nla_get_u32(tb[RTA_OIF]));
  if (tb[RTA_GATEWAY] != nullptr) {
    const int len = nla_len(tb[RTA_GATEWAY]);
    IpAddr gw;
    if (len == 4 && rtm->rtm_family == AF_INET)
      gw.family = AF_INET;
    else if (len == 16 && rtm->rtm_family == AF_INET6)
      gw.family = AF_INET6;
    if (!gw.empty()) {
      std::memcpy(gw.bytes.data(), nla_data(tb[RTA_GATEWAY]), static_cast<std::size_t>(len));
      r->gateway = gw;
    }
  }
  return NL_OK;
}

}  // namespace

Result<std::unique_ptr<FibNextHop>> FibNextHop::create(EventLoop& loop, const std::string& netns,
                                                       const std::string& ifname) {
  std::unique_ptr<FibNextHop> f(new FibNextHop());
  {
    auto in_ns = NetnsSwitch::enter(netns);
    if (!in_ns)
      return in_ns.error();
    // One reply per request, no ACK after it (nl_send_auto would ask for
    // one, and it would be left for the next query to read). The kernel
    // answers RTM_GETROUTE before send(2) returns; the timeout only bounds
    // a kernel that does not.
    auto q =
        open_request_socket(NETLINK_ROUTE, {.receive_timeout = kQueryTimeout, .auto_ack = false});
    if (!q)
      return q.error();
    f->query_ = std::move(*q);
    // What changed does not matter (on_notification), so no handler.
    auto ev = open_notification_socket({
        .protocol = NETLINK_ROUTE,
        .groups = {{RTNLGRP_IPV4_ROUTE, "RTNLGRP_IPV4_ROUTE"},
                   {RTNLGRP_IPV6_ROUTE, "RTNLGRP_IPV6_ROUTE"},
                   {RTNLGRP_IPV4_IFADDR, "RTNLGRP_IPV4_IFADDR"},
                   {RTNLGRP_IPV6_IFADDR, "RTNLGRP_IPV6_IFADDR"},
                   {RTNLGRP_LINK, "RTNLGRP_LINK"}},
    });
    if (!ev)
      return ev.error();
    f->events_ = std::move(*ev);
  }  // back home: both sockets stay in the TUN's namespace
  const std::string where = netns.empty() ? ifname : ifname + " (netns " + netns + ")";
  rtnl_link* raw = nullptr;
  if (int r = rtnl_link_get_kernel(f->query_.get(), 0, ifname.c_str(), &raw); r < 0)
    return nl_error(r, "look up link " + where);
  RtnlLinkPtr link(raw);
  f->ifindex_ = rtnl_link_get_ifindex(link.get());

  auto src = loop.add_io(nl_socket_get_fd(f->events_.get()), EPOLLIN, "netlink-routes",
                         [p = f.get()](std::uint32_t) { p->on_notification(); });
  if (!src)
    return src.error();
  f->source_ = std::move(*src);
  return f;
}

FibNextHop::~FibNextHop() = default;

void FibNextHop::on_notification() {
  // What changed does not matter: any route, address or link change may
  // move a next hop, so every cached answer goes (also when the socket
  // overflowed: ENOBUFS means changes were lost).
  if (int r = drain_notifications(events_.get(), {}); r < 0)
    spdlog::debug("FIB notifications: receive failed: {}", nl_geterror(-r));
  if (cache_.size() != 0)
    ++flushes_;
  cache_.clear();
}

std::optional<IpAddr> FibNextHop::gateway(const IpAddr& dst) {
  if (const auto* hit = cache_.find(dst))
    return *hit;
  auto gw = query(dst);
  cache_.insert(dst, gw);
  return gw;
}

std::optional<IpAddr> FibNextHop::query(const IpAddr& dst) {
  ++queries_;
  NlMsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST));
  if (!msg)
    return std::nullopt;
  rtmsg rtm{};
  rtm.rtm_family = dst.family;
  rtm.rtm_dst_len = static_cast<unsigned char>(dst.size() * 8);
  if (nlmsg_append(msg.get(), &rtm, sizeof rtm, NLMSG_ALIGNTO) < 0 ||
      nla_put(msg.get(), RTA_DST, static_cast<int>(dst.size()), dst.bytes.data()) < 0) {
    return std::nullopt;
  }
  // Whatever an earlier query left (a reply that came after its timeout)
  // would be taken for this one's.
  const int fd = nl_socket_get_fd(query_.get());
  char stale[4096];
  while (::recv(fd, stale, sizeof stale, MSG_DONTWAIT) > 0) {
  }
  Reply reply;
  nl_socket_modify_cb(query_.get(), NL_CB_VALID, NL_CB_CUSTOM, &on_reply, &reply);
  if (int r = nl_send_auto(query_.get(), msg.get()); r < 0) {
    spdlog::debug("FIB lookup of {}: send: {}", dst.to_string(), nl_geterror(-r));
    return std::nullopt;
  }
  // One reply: RTM_NEWROUTE, or NLMSG_ERROR (no route: ENETUNREACH).
  if (int r = nl_recvmsgs_default(query_.get()); r < 0 || !reply.seen) {
    spdlog::debug("FIB lookup of {}: {}", dst.to_string(), r < 0 ? nl_geterror(-r) : "no reply");
    return std::nullopt;
  }
  if (reply.type != RTN_UNICAST || reply.oif != ifindex_ || !reply.gateway)
    return std::nullopt;
  return reply.gateway;
}

}  // namespace rcnet::daemon
