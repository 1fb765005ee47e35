// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// libnl-3 in one room: ownership, error conversion, and the one way rcnetd
// opens, subscribes and drains a netlink socket. libnl returns negative NLE_*
// codes (not errno values; nl_geterror(3)); nl_error() maps the ones rcnetd
// meets to errno so that callers can test Error::code, and keeps libnl's text.
// Loop thread only: libnl's sockets and callbacks are not shared.
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>
#include <netlink/socket.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::daemon {

struct NlSockFree {
  void operator()(nl_sock* s) const noexcept { nl_socket_free(s); }
};
struct NlCacheFree {
  void operator()(nl_cache* c) const noexcept { nl_cache_free(c); }
};
struct RtnlLinkPut {
  void operator()(rtnl_link* l) const noexcept { rtnl_link_put(l); }
};
struct RtnlAddrPut {
  void operator()(rtnl_addr* a) const noexcept { rtnl_addr_put(a); }
};
struct NlAddrPut {
  void operator()(nl_addr* a) const noexcept { nl_addr_put(a); }
};
struct NlMsgFree {
  void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
struct NlCbPut {
  void operator()(nl_cb* c) const noexcept { nl_cb_put(c); }
};
using NlSockPtr = std::unique_ptr<nl_sock, NlSockFree>;
using NlCachePtr = std::unique_ptr<nl_cache, NlCacheFree>;
using RtnlLinkPtr = std::unique_ptr<rtnl_link, RtnlLinkPut>;
using RtnlAddrPtr = std::unique_ptr<rtnl_addr, RtnlAddrPut>;
using NlAddrPtr = std::unique_ptr<nl_addr, NlAddrPut>;
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgFree>;
using NlCbPtr = std::unique_ptr<nl_cb, NlCbPut>;

// A negative NLE_* code → Error (errno-mapped where one fits, else EIO).
Error nl_error(int nle, const std::string& what);

// --- Sockets -----------------------------------------------------------------
// A netlink socket is one of two kinds (netlink(7)). A request socket sends
// requests and reads their replies in the same call (dumps, RTM_GETLINK,
// RTM_GETROUTE, RDMA_NLDEV_CMD_SYS_GET): blocking, or bounded by
// SO_RCVTIMEO. A notification socket joins multicast groups, is
// non-blocking, and is read by drain_notifications() from an io source on
// the loop. Both are opened in the calling thread's network namespace (a
// netlink socket stays bound to the namespace it was opened in, whatever the
// thread does after) and belong to the caller: NlSockPtr closes the fd
// (nl_socket_free(3)). Errors: ENOMEM when nl_socket_alloc(3) fails,
// nl_error() of a failed libnl call (nl_connect(3) fails for a protocol the
// kernel lacks: NETLINK_RDMA without RDMA netlink), errno of setsockopt(2).
// The text names the protocol first ("rtnetlink: ", "RDMA netlink: ").

struct NlRequestOptions {
  // SO_RCVTIMEO (socket(7)): the longest one receive waits for the kernel's
  // answer, so that a kernel that does not answer cannot stall the loop;
  // zero waits without bound.
  Duration receive_timeout{};
  // false: nl_send_auto(3) does not add NLM_F_ACK to requests
  // (nl_socket_disable_auto_ack(3)). For requests whose answer ends by
  // itself (a dump's NLMSG_DONE, RTM_GETROUTE's one reply): an ACK nobody
  // waits for would be read by the next request as its answer.
  bool auto_ack = true;
};
// A connected request socket of `protocol` (NETLINK_ROUTE, NETLINK_RDMA).
Result<NlSockPtr> open_request_socket(int protocol, const NlRequestOptions& options = {});

// A multicast group (RTNLGRP_*, RDMA_NL_GROUP_*) and its name for errors.
struct NlGroup {
  int id = 0;
  std::string_view name;
};

struct NlSubscription {
  int protocol = NETLINK_ROUTE;
  // Joined in order (NETLINK_ADD_MEMBERSHIP, netlink(7)); the error names
  // the first that fails (EPERM where the kernel wants CAP_NET_ADMIN).
  std::vector<NlGroup> groups;
  // The NL_CB_VALID handler (nl_cb_set(3)) and its argument, called from
  // drain_notifications() once per message; it must not throw (libnl's C
  // frames are below it). Null: messages are read and dropped, for a
  // socket whose only news is that something arrived.
  nl_recvmsg_msg_cb_t on_message = nullptr;
  void* arg = nullptr;
  // SO_RCVBUF in bytes (nl_socket_set_buffer_size(3); the kernel caps it at
  // net.core.rmem_max); 0 keeps net.core.rmem_default. Larger for groups
  // that come in bursts, so that an overflow is rare.
  int receive_buffer = 0;
};
// A connected, non-blocking notification socket joined to `sub.groups`.
// Sequence numbers are not checked: notifications carry none of ours.
Result<NlSockPtr> open_notification_socket(const NlSubscription& sub);

// The most datagrams one drain_notifications() reads. The loop's other
// sources (the CQ's completion channel, the TUN) wait while a drain runs;
// stopping loses nothing, because the io source is level-triggered: what is
// left stays in the socket's receive buffer and is read on the loop's next
// turn, after them. 64 is the kernel's NAPI weight (NAPI_POLL_WEIGHT,
// include/linux/netdevice.h), set there for the same trade: one source's
// turn stays short, and the budget's cost is one more pass through
// epoll_wait(2) per 64 datagrams.
inline constexpr int kDrainBudget = 64;

// Reads `sock` (a notification socket) one datagram per
// nl_recvmsgs_default(3) call, each message to its NL_CB_VALID handler,
// until the socket is empty (NLE_AGAIN) or kDrainBudget datagrams were
// read. An overflow (recvmsg(2) fails with ENOBUFS, which libnl reports as
// NLE_NOMEM: the kernel dropped notifications for this socket) calls
// `on_overflow` where it is met, then the drain goes on. 0, or the negative
// NLE_* code of a receive that failed otherwise (nl_geterror(3)); the
// socket is then left as it is, for the caller to give up on or retry.
int drain_notifications(nl_sock* sock, const std::function<void()>& on_overflow);

// nl_addr <-> IpAddr. nullopt for other families.
std::optional<IpAddr> to_ip(const nl_addr* a);
NlAddrPtr to_nl_addr(const IpAddr& a, unsigned prefix_len);

}  // namespace rcnet::daemon
