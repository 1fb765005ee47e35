// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "netlink.hpp"

#include <linux/if.h>
#include <linux/neighbour.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "private_netns.hpp"
#include "tun.hpp"

namespace daemon_netlink_test {
using namespace rcnet;
using namespace rcnet::daemon;

TEST_CASE("LinkTracker reports changes of its own link only", "[daemon][netlink]") {
  LinkTracker t(7);
  // First sight of an up link is the initial state, not news.
  CHECK_FALSE(t.update(7, IFF_UP | IFF_RUNNING, false).has_value());
  CHECK(t.up() == true);
  CHECK_FALSE(t.update(8, 0, false).has_value());  // someone else's link
  CHECK_FALSE(t.update(7, IFF_UP | IFF_RUNNING | IFF_PROMISC, false).has_value());
  auto down = t.update(7, IFF_UP, false);  // carrier lost
  REQUIRE(down.has_value());
  CHECK(*down == false);
  CHECK_FALSE(t.update(7, 0, false).has_value());  // still down
  auto up = t.update(7, IFF_UP | IFF_RUNNING, false);
  REQUIRE(up.has_value());
  CHECK(*up == true);
  auto gone = t.update(7, IFF_UP | IFF_RUNNING, true);
  REQUIRE(gone.has_value());
  CHECK(*gone == false);
}

TEST_CASE("LinkTracker reports a link that starts down", "[daemon][netlink]") {
  LinkTracker t(3);
  auto first = t.update(3, IFF_UP, false);
  REQUIRE(first.has_value());
  CHECK(*first == false);
}

TEST_CASE("only NUD_FAILED counts as a dead neighbour", "[daemon][netlink]") {
  CHECK(neighbour_failed(NUD_FAILED));
  for (int s : {NUD_INCOMPLETE, NUD_REACHABLE, NUD_STALE, NUD_DELAY, NUD_PROBE, NUD_NOARP,
                NUD_PERMANENT, NUD_NONE}) {
    CHECK_FALSE(neighbour_failed(s));
  }
}

TEST_CASE("neighbour_probe_window: retrans_time x every probe the kernel sends",
          "[daemon][netlink]") {
  std::string dir = std::filesystem::temp_directory_path() / "rcnet-neigh-XXXXXX";
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  const auto put = [&](const char* name, const char* value) {
    std::ofstream(dir + "/" + name) << value << "\n";
  };
  // Nothing readable: the kernel's defaults, (3 + 0 + 3) x 1000 ms.
  CHECK(neighbour_probe_window(dir) == 6s);
  CHECK(neighbour_probe_window(dir + "/missing") == 6s);
  put("retrans_time_ms", "500");
  put("ucast_solicit", "2");
  put("app_solicit", "1");
  put("mcast_solicit", "3");
  CHECK(neighbour_probe_window(dir) == 3s);  // (2 + 1 + 3) x 500 ms
  put("mcast_resolicit", "5");               // PROBE's count, when it is the larger
  CHECK(neighbour_probe_window(dir) == 4s);
  put("retrans_time_ms", "soon");  // unreadable: its default
  CHECK(neighbour_probe_window(dir) == 8s);
  std::filesystem::remove_all(dir);
}

TEST_CASE("NetlinkMonitor follows the underlay link up and down", "[daemon][netlink][netns]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rcu%d");
  REQUIRE(tun.ok());
  REQUIRE(tun->configure(*IpPrefix::parse("10.98.0.1/24"), 1500).ok());

  auto loop = EventLoop::create();
  REQUIRE(loop.ok());
  std::vector<bool> changes;
  auto mon = NetlinkMonitor::create(
      *loop, *IpAddr::parse("10.98.0.1"),
      {.link_changed = [&](bool up) { changes.push_back(up); }, .neighbour_failed = {}});
  REQUIRE(mon.ok());
  CHECK((*mon)->link_up());
  CHECK(changes.empty());

  auto sock = open_request_socket(NETLINK_ROUTE);
  REQUIRE(sock.ok());
  rtnl_link* raw = nullptr;
  REQUIRE(rtnl_link_get_kernel(sock->get(), 0, tun->name().c_str(), &raw) == 0);
  RtnlLinkPtr link(raw);
  CHECK((*mon)->underlay_ifindex() == rtnl_link_get_ifindex(link.get()));

  auto set_up = [&](bool up) {
    RtnlLinkPtr change(rtnl_link_alloc());
    if (up) {
      rtnl_link_set_flags(change.get(), IFF_UP);
    } else {
      rtnl_link_unset_flags(change.get(), IFF_UP);
    }
    REQUIRE(rtnl_link_change(sock->get(), link.get(), change.get(), 0) == 0);
  };
  auto spin_until = [&](std::size_t n) {
    for (int i = 0; i < 20 && changes.size() < n; ++i) {
      REQUIRE(loop->run_once(std::chrono::seconds(1)).ok());
    }
  };
  set_up(false);
  spin_until(1);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0] == false);
  CHECK_FALSE((*mon)->link_up());
  set_up(true);
  spin_until(2);
  REQUIRE(changes.size() == 2);
  CHECK(changes[1] == true);
}

TEST_CASE("NetlinkMonitor refuses an address no interface holds", "[daemon][netlink][netns]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto loop = EventLoop::create();
  REQUIRE(loop.ok());
  auto mon = NetlinkMonitor::create(*loop, *IpAddr::parse("10.97.0.1"), {});
  REQUIRE_FALSE(mon.ok());
  CHECK(mon.error().code == std::errc::address_not_available);
  CHECK(mon.error().context.find("10.97.0.1") != std::string::npos);
}

}  // namespace daemon_netlink_test
