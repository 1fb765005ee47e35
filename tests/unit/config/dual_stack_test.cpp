// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Both IP families on one TUN (rcnetd.toml(5) tun.address): the list form,
// each peer's address in each family mapped to its one underlay address
// (so both share its connection), static peers with one overlay per
// family, the errors with their key and line, and the own-mapping check
// for each family.
#include "catch2_compat.hpp"

#include <string>

#include "config/config.hpp"
#include "config/keys.hpp"
#include "parse_helpers.hpp"

namespace config_dual_stack_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

namespace {

// One underlay family at a time: node 2 of the lab's fabrics.
struct Underlay {
  const char* name;
  std::string self;    // node.address
  std::string prefix;  // peers.underlay_prefix
  const char* peer7;   // node 7's underlay address
};
const Underlay kUnderlays[] = {
    {"IPv4 underlay", "10.99.0.2", "10.99.0.0/24", "10.99.0.7"},
    {"IPv6 underlay", "fd99::2", "fd99::/64", "fd99::7"},
};

std::string dual(const Underlay& u, const std::string& tun) {
  return file("address = \"" + u.self + "\"", tun,
              "[peers]\nunderlay_prefix = \"" + u.prefix + "\"\n");
}

}  // namespace

TEST_CASE("dual stack: tun.address takes one IPv4 and one IPv6 prefix, in either order",
          "[config][dual]") {
  for (const Underlay& u : kUnderlays) {
    INFO(u.name);
    for (const char* tun : {"address = [\"10.100.0.2/24\", \"fd00:100::2/120\"]",
                            "address = [\"fd00:100::2/120\", \"10.100.0.2/24\"]"}) {
      INFO(tun);
      const Config c = parse_ok(dual(u, tun));
      CHECK(c.tun_address == *IpPrefix::parse("10.100.0.2/24"));
      REQUIRE(c.tun_address6);
      CHECK(*c.tun_address6 == *IpPrefix::parse("fd00:100::2/120"));
      // The first family's address is the one private data carries.
      CHECK(c.manager.overlay == ip("10.100.0.2"));
      CHECK(c.overlay_prefixes().size() == 2);
      // A peer's two addresses map to its one underlay address: one
      // connection carries both.
      CHECK(c.underlay_for(ip("10.100.0.7")) == ip(u.peer7));
      CHECK(c.underlay_for(ip("fd00:100::7")) == ip(u.peer7));
      CHECK(c.overlay_for(ip(u.peer7), 0) == ip("10.100.0.7"));
      CHECK(c.overlay_for(ip(u.peer7), 0, AF_INET6) == ip("fd00:100::7"));
      CHECK(c.primary_overlay(ip("fd00:100::7")) == ip("10.100.0.7"));
      CHECK(c.primary_overlay(ip("10.100.0.7")) == ip("10.100.0.7"));
      // Outside the prefixes, our own, the subnet: no peer.
      CHECK_FALSE(c.underlay_for(ip("fd00:200::7")));
      CHECK_FALSE(c.overlay_for(ip(u.self.c_str()), 0, AF_INET6));
      CHECK_FALSE(c.primary_overlay(ip("fd00:100::")));
      // The listing keeps the file's order and reads back.
      const Config back = parse_ok(show(c));
      CHECK(back.tun_address == c.tun_address);
      CHECK(back.tun_address6 == c.tun_address6);
      CHECK(back.tun_address6_index == c.tun_address6_index);
      CHECK(find_key("tun.address")->get(back) == find_key("tun.address")->get(c));
    }
  }
  // The single string still works, either family, and has no second entry.
  const Config one = parse_ok(dual(kUnderlays[0], "address = \"fd00:100::2/120\""));
  CHECK(one.tun_address.addr == ip("fd00:100::2"));
  CHECK_FALSE(one.tun_address6);
  CHECK(one.overlay_for(ip("10.99.0.7"), 0, AF_INET) == std::nullopt);
  CHECK(find_key("tun.address")->get(one) == Value(std::string("fd00:100::2/120")));
}

TEST_CASE("dual stack: tun.address_from_underlay derives both families", "[config][dual]") {
  for (const Underlay& u : kUnderlays) {
    INFO(u.name);
    const Config c = parse_ok(
        dual(u, "address = [\"10.100.0.0/24\", \"fd00:100::/120\"]\naddress_from_underlay = true"));
    CHECK(c.tun_address.addr == ip("10.100.0.2"));
    CHECK(c.tun_address6->addr == ip("fd00:100::2"));
    const std::string listed = show(c);
    CHECK(listed.find("address = [\"10.100.0.0/24\", \"fd00:100::/120\"]") != std::string::npos);
    CHECK(listed.find("# this node: 10.100.0.2/24, fd00:100::2/120") != std::string::npos);
  }
  CHECK(
      parse_err(file("address = \"10.99.0.2\"",
                     "address = [\"10.100.0.0/24\", \"fd00:100::1/120\"]\naddress_from_underlay = "
                     "true")) ==
      "t.toml:4: tun.address[1]: with tun.address_from_underlay = true, give the overlay "
      "prefix (host bits zero, e.g. 10.100.0.0/24): the host bits come from the underlay "
      "address");
  CHECK(parse_err(file(
            "address = \"10.99.0.2\"",
            "address = [\"10.100.0.0/24\", \"fd00:100::/64\"]\naddress_from_underlay = true")) ==
        "t.toml:5: tun.address_from_underlay: tun.address[1] has 64 host bits, more than an IPv4 "
        "address has");
}

TEST_CASE("dual stack: malformed tun.address lists name the key and line", "[config][dual]") {
  const std::string node = "address = \"10.99.0.2\"";
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", \"10.101.0.2/24\"]")) ==
        "t.toml:4: tun.address[1]: is IPv4 like tun.address[0]: at most one prefix per family "
        "(one IPv4, one IPv6)");
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", \"fd00::2/64\", \"fd01::2/64\"]")) ==
        "t.toml:4: tun.address: expected one prefix or a list of two, one IPv4 and one IPv6, "
        "such as [\"10.100.0.1/24\", \"fd00:100::1/64\"]");
  CHECK(parse_err(file(node, "address = []")) ==
        "t.toml:4: tun.address: expected one prefix or a list of two, one IPv4 and one IPv6, "
        "such as [\"10.100.0.1/24\", \"fd00:100::1/64\"]");
  // An entry on a line of its own is named with its line.
  CHECK(parse_err(file(node, "address = [\n  \"10.100.0.2/24\",\n  \"fd00::2\",\n]")) ==
        "t.toml:6: tun.address[1]: expected an address/prefix such as \"10.99.0.0/24\" or "
        "\"fd00::/64\"");
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", 7]")) ==
        "t.toml:4: tun.address[1]: expected an address/prefix such as \"10.99.0.0/24\" or "
        "\"fd00::/64\"");
  // Each entry is checked as a single one is.
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", \"fd00:100::2/128\"]\nmtu = 1500")) ==
        "t.toml:4: tun.address[1]: a /128 overlay has room for no peer: give the overlay's "
        "subnet length, e.g. 10.100.0.1/24");
  CHECK(parse_err(file(node, "address = [\"fd00:100::2/64\", \"10.100.0.2/24\"]\nmtu = 1200")) ==
        "t.toml:5: tun.mtu: an IPv6 overlay needs at least 1280 (RFC 8200)");
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", \"fd00:100::/120\"]")) ==
        "t.toml:4: tun.address[1]: fd00:100:: is the subnet address of fd00:100::/120, not a "
        "node's: give this node's own address in it (or set tun.address_from_underlay = true)");
  // The prefix rule needs room for each family's host bits.
  CHECK(parse_err(file(node, "address = [\"10.100.0.2/24\", \"fd00:100::2/64\"]",
                       "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n")) ==
        "t.toml:6: peers.underlay_prefix: has 8 host bits, fewer than the 64 of tun.address[1] "
        "fd00:100::2/64");
}

TEST_CASE("dual stack: the own-mapping check runs for each family", "[config][dual]") {
  // IPv4 agrees (10.100.0.2 <-> 10.99.0.2), IPv6 does not (fd00:100::3).
  CHECK(parse_err(file("address = \"10.99.0.2\"",
                       "address = [\"10.100.0.2/24\", \"fd00:100::3/120\"]",
                       "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n")) ==
        "t.toml:4: tun.address[1]: fd00:100::3 and node.address 10.99.0.2 (line 2) disagree "
        "under peers.underlay_prefix 10.99.0.0/24 (line 6): it maps fd00:100::3 to 10.99.0.3 "
        "and 10.99.0.2 to fd00:100::2: peers would send this node's packets to 10.99.0.3 and "
        "drop the ones it sends");
  // In the other order the IPv6 entry is tun.address[0].
  CHECK(
      parse_err(file("address = \"fd99::2\"", "address = [\"fd00:100::3/120\", \"10.100.0.2/24\"]",
                     "[peers]\nunderlay_prefix = \"fd99::/64\"\n")) ==
      "t.toml:4: tun.address[0]: fd00:100::3 and node.address fd99::2 (line 2) disagree "
      "under peers.underlay_prefix fd99::/64 (line 6): it maps fd00:100::3 to fd99::3 and "
      "fd99::2 to fd00:100::2: peers would send this node's packets to fd99::3 and drop the "
      "ones it sends");
  // The IPv4 one disagreeing is found as well.
  CHECK(parse_err(file("address = \"10.99.0.2\"",
                       "address = [\"10.100.0.4/24\", \"fd00:100::2/120\"]",
                       "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"))
            .rfind("t.toml:4: tun.address[0]: 10.100.0.4 and node.address 10.99.0.2", 0) == 0);
}

TEST_CASE("dual stack: a static peer lists one overlay address per family", "[config][dual]") {
  const std::string node = "address = \"10.99.0.2\"";
  const std::string tun = "address = [\"10.100.0.2/24\", \"fd00:100::2/120\"]";
  const auto peer = [](const std::string& overlay) {
    return "[[peers.static]]\noverlay = " + overlay + "\nunderlay = \"10.99.1.7\"\n";
  };
  for (const char* overlay :
       {"[\"10.100.0.7\", \"fd00:100::7\"]", "[\"fd00:100::7\", \"10.100.0.7\"]"}) {
    const Config c = parse_ok(file(node, tun, peer(overlay)));
    REQUIRE(c.static_peers.size() == 1);
    CHECK(c.static_peers[0].overlay == ip("10.100.0.7"));
    CHECK(c.static_peers[0].overlay6 == ip("fd00:100::7"));
    CHECK(c.underlay_for(ip("10.100.0.7")) == ip("10.99.1.7"));
    CHECK(c.underlay_for(ip("fd00:100::7")) == ip("10.99.1.7"));
    CHECK(c.overlay_for(ip("10.99.1.7"), 0) == ip("10.100.0.7"));
    CHECK(c.overlay_for(ip("10.99.1.7"), 0, AF_INET6) == ip("fd00:100::7"));
    CHECK(c.primary_overlay(ip("fd00:100::7")) == ip("10.100.0.7"));
    // The listing writes the pair and reads back.
    const Config back = parse_ok(show(c));
    CHECK(back.static_peers == c.static_peers);
  }
  // peers.static is on lines 5..7 (overlay on 6).
  CHECK(parse_err(file(node, tun, peer("\"10.100.0.7\""))) ==
        "t.toml:6: peers.static[0].overlay: has 1 address for 2 prefixes of tun.address: one per "
        "family of tun.address");
  CHECK(parse_err(
            file(node, "address = \"10.100.0.2/24\"", peer("[\"10.100.0.7\", \"fd00:100::7\"]"))) ==
        "t.toml:6: peers.static[0].overlay: has 2 addresses for 1 prefix of tun.address: one per "
        "family of tun.address");
  CHECK(parse_err(file(node, tun, peer("[\"10.100.0.7\", \"10.100.0.8\"]"))) ==
        "t.toml:6: peers.static[0].overlay[1]: is IPv4 like peers.static[0].overlay[0]: at most "
        "one address per family (one IPv4, one IPv6)");
  CHECK(parse_err(file(node, tun, peer("[\"10.100.0.7\", \"fd00:200::7\"]"))) ==
        "t.toml:6: peers.static[0].overlay: fd00:200::7 is outside tun.address[1] "
        "fd00:100::2/120");
  CHECK(parse_err(file(node, tun, peer("[\"10.100.0.7\", \"fd00:100::2\"]"))) ==
        "t.toml:6: peers.static[0].overlay: fd00:100::2 is this node's own tun.address[1] (line "
        "4)");
  CHECK(parse_err(
            file(node, tun,
                 peer("[\"10.100.0.7\", \"fd00:100::7\"]") +
                     "[[peers.static]]\noverlay = [\"10.100.0.8\", \"fd00:100::7\"]\nunderlay = "
                     "\"10.99.1.8\"\n")) ==
        "t.toml:9: peers.static[1].overlay: duplicate: fd00:100::7 is already peers.static[0] "
        "(line 6)");
}

TEST_CASE("dual stack: with two rails a peer's two families map to its link on each rail",
          "[config][dual][rails]") {
  const Config c = parse_ok(
      "[node]\naddress = [\"10.99.0.2\", \"10.98.0.2\"]\n[tun]\naddress = [\"10.100.0.2/24\", "
      "\"fd00:100::2/120\"]\n[peers]\nunderlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\"]\n");
  for (std::size_t rail = 0; rail < 2; ++rail) {
    const IpAddr u = ip(rail == 0 ? "10.99.0.7" : "10.98.0.7");
    CHECK(c.underlay_for(ip("10.100.0.7"), rail) == u);
    CHECK(c.underlay_for(ip("fd00:100::7"), rail) == u);
    CHECK(c.overlay_for(u, rail, AF_INET6) == ip("fd00:100::7"));
  }
  // The RailSet's key for either family: the IPv4 address.
  CHECK(c.primary_overlay(ip("fd00:100::7")) == ip("10.100.0.7"));
}

}  // namespace config_dual_stack_test
