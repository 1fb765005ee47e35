// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetd's startup wait (daemon/underlay_wait.hpp): what a rail's address
// still lacks, read from this machine's interfaces.
#include "catch2_compat.hpp"

#include "config/config.hpp"
#include "underlay_wait.hpp"

namespace daemon_underlay_wait_test {
using namespace rcnet;

namespace {
config::Config with_rails(std::vector<const char*> addrs) {
  config::Config c;
  c.rails.clear();
  for (const char* a : addrs)
    c.rails.push_back(config::RailConfig{Endpoint{*IpAddr::parse(a), 7471}, std::nullopt});
  c.manager.local = c.rails.front().local;
  return c;
}
}  // namespace

TEST_CASE("underlay wait: an address on an interface is present, another is missing", "[daemon]") {
  // 127.0.0.1 is on lo wherever the test runs; 192.0.2.77 (TEST-NET-1,
  // RFC 5737) on no interface of a test machine.
  CHECK(daemon::missing_underlay(with_rails({"127.0.0.1"})).empty());
  CHECK(daemon::missing_underlay(with_rails({"192.0.2.77"})) ==
        "node.address 192.0.2.77 is on no interface");
  CHECK(daemon::missing_underlay(with_rails({"127.0.0.1", "192.0.2.78"})) ==
        "node.address[1] 192.0.2.78 is on no interface");
}

TEST_CASE("underlay wait: node.interface not resolved yet says which interface", "[daemon]") {
  config::Config c = with_rails({"127.0.0.1"});
  c.rail_interfaces = {"ib0"};
  c.unresolved = "no interface ib0";
  CHECK(daemon::missing_underlay(c) == "node.interface: no interface ib0");
  c.unresolved.clear();
  CHECK(daemon::missing_underlay(c).empty());
  c = with_rails({"192.0.2.79"});
  c.rail_interfaces = {"ib0"};
  CHECK(daemon::missing_underlay(c) == "node.interface 192.0.2.79 is on no interface");
}

TEST_CASE("underlay wait: a present address is returned at once, unchanged", "[daemon]") {
  config::Config c = with_rails({"127.0.0.1"});
  c.tun_name = "rcwait0";
  auto r = daemon::wait_for_underlay("/nonexistent/never-read.toml", c);
  REQUIRE(r);
  REQUIRE(r->has_value());
  CHECK((*r)->tun_name == "rcwait0");
}

}  // namespace daemon_underlay_wait_test
