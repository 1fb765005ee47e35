// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The netlink room (daemon/nl.hpp): sockets opened as asked, and a drain
// that stops at its budget and reports an overflow where it meets one. The
// notifications are real: RTM_NEWADDR for addresses added to lo in a
// private network namespace.
#include "nl.hpp"

#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstdint>
#include "catch2_compat.hpp"

#include "private_netns.hpp"

namespace daemon_nl_test {
using namespace rcnet;
using namespace rcnet::daemon;

namespace {

int count_message(nl_msg*, void* arg) {
  ++*static_cast<int*>(arg);
  return NL_OK;
}

// Adds 10.77.<n / 256>.<n % 256>/32 to lo (ifindex 1 in a fresh namespace),
// for n in [0, count): one RTM_NEWADDR notification each.
void add_addresses(nl_sock* sock, int count) {
  for (int n = 0; n < count; ++n) {
    RtnlAddrPtr a(rtnl_addr_alloc());
    REQUIRE(a);
    IpAddr ip;
    ip.family = AF_INET;
    ip.bytes[0] = 10;
    ip.bytes[1] = 77;
    ip.bytes[2] = static_cast<std::uint8_t>(n / 256);
    ip.bytes[3] = static_cast<std::uint8_t>(n % 256);
    NlAddrPtr local = to_nl_addr(ip, 32);
    REQUIRE(local);
    rtnl_addr_set_ifindex(a.get(), 1);
    REQUIRE(rtnl_addr_set_local(a.get(), local.get()) == 0);
    REQUIRE(rtnl_addr_add(sock, a.get(), 0) == 0);
  }
}

// A private namespace with a notification socket on RTNLGRP_IPV4_IFADDR
// that counts what it is handed, and a request socket to add addresses.
struct IfaddrWatch {
  explicit IfaddrWatch(int receive_buffer) {
    REQUIRE(ns.entered());
    auto opened =
        open_notification_socket({.protocol = NETLINK_ROUTE,
                                  .groups = {{RTNLGRP_IPV4_IFADDR, "RTNLGRP_IPV4_IFADDR"}},
                                  .on_message = &count_message,
                                  .arg = &seen,
                                  .receive_buffer = receive_buffer});
    REQUIRE(opened.ok());
    ev = std::move(*opened);
    auto r = open_request_socket(NETLINK_ROUTE);
    REQUIRE(r.ok());
    req = std::move(*r);
  }
  int drain() {
    return drain_notifications(ev.get(), [this] { ++overflows; });
  }

  daemon::test::PrivateNetns ns;
  int seen = 0;
  int overflows = 0;
  NlSockPtr ev;
  NlSockPtr req;
};

}  // namespace

TEST_CASE("a request socket carries the receive timeout it was asked for", "[daemon][nl]") {
  auto sock =
      open_request_socket(NETLINK_ROUTE, {.receive_timeout = std::chrono::milliseconds(1500)});
  REQUIRE(sock.ok());
  timeval tv{};
  socklen_t len = sizeof tv;
  REQUIRE(::getsockopt(nl_socket_get_fd(sock->get()), SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0);
  CHECK(tv.tv_sec == 1);
  CHECK(tv.tv_usec == 500000);
}

TEST_CASE("a group the kernel refuses is named in the error", "[daemon][nl]") {
  // rtnetlink has fewer than 10,000 groups: NETLINK_ADD_MEMBERSHIP says EINVAL.
  auto sock = open_notification_socket(
      {.protocol = NETLINK_ROUTE,
       .groups = {{RTNLGRP_LINK, "RTNLGRP_LINK"}, {10000, "RTNLGRP_NONE_SUCH"}}});
  REQUIRE_FALSE(sock.ok());
  CHECK(sock.error().code == std::errc::invalid_argument);
  CHECK(sock.error().context.starts_with("rtnetlink: join RTNLGRP_NONE_SUCH"));
}

TEST_CASE("drain_notifications reads at most kDrainBudget datagrams a call",
          "[daemon][nl][netns]") {
  // Room for every notification: an overflow here would be another test's.
  IfaddrWatch w(1 << 20);
  const int total = kDrainBudget + 8;
  add_addresses(w.req.get(), total);
  CHECK(w.drain() == 0);
  CHECK(w.seen == kDrainBudget);  // the rest waits for the loop's next turn
  CHECK(w.drain() == 0);
  CHECK(w.seen == total);
  CHECK(w.drain() == 0);  // empty: NLE_AGAIN
  CHECK(w.seen == total);
  CHECK(w.overflows == 0);
}

TEST_CASE("drain_notifications reports an overflow and reads on", "[daemon][nl][netns]") {
  // The smallest buffer the kernel allows (SOCK_MIN_RCVBUF): a few
  // notifications fill it, and the rest are dropped (ENOBUFS).
  IfaddrWatch w(1);
  add_addresses(w.req.get(), kDrainBudget);
  CHECK(w.drain() == 0);
  CHECK(w.overflows == 1);
  CHECK(w.seen > 0);  // what was queued before the drop is still read
  CHECK(w.seen < kDrainBudget);
}

}  // namespace daemon_nl_test
