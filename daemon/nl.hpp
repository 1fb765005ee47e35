// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// libnl-3 ownership and error conversion. libnl returns negative NLE_* codes
// (not errno values; nl_geterror(3)); nl_error() maps the ones rcnetd meets to
// errno so that callers can test Error::code, and keeps libnl's text.
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>
#include <netlink/socket.h>

#include <memory>
#include <optional>
#include <string>

#include "util/address.hpp"
#include "util/result.hpp"

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

// A NETLINK_ROUTE socket connected in the calling thread's current network
// namespace (a netlink socket stays bound to the namespace it was opened in).
Result<NlSockPtr> open_route_socket();

// nl_addr <-> IpAddr. nullopt for other families.
std::optional<IpAddr> to_ip(const nl_addr* a);
NlAddrPtr to_nl_addr(const IpAddr& a, unsigned prefix_len);

}  // namespace rcnet::daemon
