// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// One config for the whole cluster (node.interface, tun.address_from_underlay,
// drop-ins, --check-config's origins), the configs refused because they
// cannot work, and the shipped template.
#include <unistd.h>
#include "catch2_compat.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "config/config.hpp"
#include "config/example_toml.hpp"
#include "config/keys.hpp"
#include "parse_helpers.hpp"

namespace config_cluster_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

namespace {

// A machine's interfaces: name -> addresses in the kernel's order.
InterfaceLookup interfaces(std::map<std::string, std::vector<std::string>> m) {
  return [m](const std::string& name) -> std::optional<std::vector<IpAddr>> {
    const auto it = m.find(name);
    if (it == m.end())
      return std::nullopt;
    std::vector<IpAddr> out;
    for (const std::string& s : it->second)
      out.push_back(*IpAddr::parse(s));
    return out;
  };
}

// The cluster's one file: the interface, the prefix rule, the derived overlay.
constexpr const char* kCluster = R"([node]
interface = "ib0"
[tun]
address = "10.100.0.0/24"
address_from_underlay = true
[peers]
underlay_prefix = "10.99.0.0/24"
)";

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/rcnet-config-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace

TEST_CASE("cluster: the shipped template fails until this node's addresses are set", "[config]") {
  const std::string text = kExampleToml;
  const auto node_line = std::count(text.begin(), text.begin() + text.find("\n[node]\n") + 1, '\n');
  CHECK(parse_err(text) == "t.toml:" + std::to_string(node_line + 1) +
                               ": node.address: required key is missing: set this node's underlay "
                               "address, or node.interface = \"ib0\", the interface that holds it");
  // node.address alone: tun.address is next.
  std::string with_addr = text;
  with_addr.erase(with_addr.find("\n#address = \"10.99") + 1, 1);
  CHECK_THAT(parse_err(with_addr), Catch::EndsWith(": tun.address: required key is missing"));
}

TEST_CASE("cluster: node.interface reads the rail's address from the interface", "[config]") {
  const std::string tun = "address = \"10.100.0.1/24\"";
  // The first IPv4 address, in the kernel's order (the primary first).
  auto c = parse_ok(file("interface = \"ib0\"", tun),
                    interfaces({{"ib0", {"fe80::1", "10.99.0.5", "10.99.0.6"}}}));
  CHECK(c.manager.local.addr == ip("10.99.0.5"));
  CHECK(c.rails.at(0).local.addr == ip("10.99.0.5"));
  CHECK(c.unresolved.empty());
  CHECK(find_key("node.address")->get(c) == Value(std::string("10.99.0.5")));
  CHECK(find_key("node.interface")->get(c) == Value(std::string("ib0")));
  // With a prefix rule: the first address inside it.
  c = parse_ok(file("interface = \"ib0\"", "address = \"10.100.0.7/24\"",
                    "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"),
               interfaces({{"ib0", {"192.168.1.5", "10.99.0.7"}}}));
  CHECK(c.manager.local.addr == ip("10.99.0.7"));
  // No IPv4: the first global IPv6 address.
  c = parse_ok(file("interface = \"ib0\"", "address = \"fd00:100::1/64\""),
               interfaces({{"ib0", {"fe80::1", "fd00:99::5"}}}));
  CHECK(c.manager.local.addr == ip("fd00:99::5"));
  // One interface per rail.
  c = parse_ok(file("interface = [\"ib0\", \"ib1\"]", tun),
               interfaces({{"ib0", {"10.99.0.5"}}, {"ib1", {"10.98.0.5"}}}));
  REQUIRE(c.rail_count() == 2);
  CHECK(c.rails[1].local.addr == ip("10.98.0.5"));
  CHECK(find_key("node.address")->get(c) ==
        Value(std::vector<std::string>{"10.99.0.5", "10.98.0.5"}));
}

TEST_CASE("cluster: an interface without an address yet leaves the config unresolved", "[config]") {
  const std::string tun = "address = \"10.100.0.1/24\"";
  auto c = parse_ok(file("interface = \"ib9\"", tun), interfaces({{"ib0", {"10.99.0.5"}}}));
  CHECK(c.unresolved == "no interface ib9");
  CHECK(c.manager.local.addr.empty());
  CHECK(find_key("node.address")->get(c) == Value());
  c = parse_ok(file("interface = \"ib0\"", tun), interfaces({{"ib0", {"fe80::1"}}}));
  CHECK(c.unresolved == "ib0 has no IPv4 address nor global IPv6 address");
  c = parse_ok(file("interface = \"ib0\"", tun, "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"),
               interfaces({{"ib0", {"10.98.0.5"}}}));
  CHECK(c.unresolved == "ib0 has no address inside peers.underlay_prefix 10.99.0.0/24");
  // No lookup (parse() without one): no interface exists.
  CHECK(parse_ok(file("interface = \"ib0\"", tun)).unresolved == "no interface ib0");
}

TEST_CASE("cluster: node.interface errors name the key and line", "[config]") {
  const std::string tun = "address = \"10.100.0.1/24\"";
  CHECK(parse_err(file("address = \"10.99.0.1\"\ninterface = \"ib0\"", tun)) ==
        "t.toml:3: node.interface: set node.address or node.interface, not both");
  CHECK(parse_err(file("interface = \"ib/0\"", tun)) ==
        "t.toml:2: node.interface: expected 1..15 characters without '/', ':', '%' or "
        "whitespace");
  CHECK(parse_err(file("interface = 7", tun)) ==
        "t.toml:2: node.interface: expected an interface name such as \"ib0\"");
  CHECK(parse_err(file("interface = \"lo\"", tun), interfaces({{"lo", {"127.0.0.1"}}})) ==
        "t.toml:2: node.interface: lo's address 127.0.0.1 must be this node's own underlay "
        "address (on the RDMA device's interface), not a loopback address");
  // The rails' checks name the key that gave the addresses.
  CHECK(parse_err(file("interface = [\"ib0\", \"ib1\"]", tun),
                  interfaces({{"ib0", {"10.99.0.5"}}, {"ib1", {"10.99.0.5"}}})) ==
        "t.toml:2: node.interface[1]: duplicate: 10.99.0.5 is already node.interface[0]");
}

TEST_CASE("cluster: tun.address_from_underlay takes the host bits of the underlay address",
          "[config]") {
  const auto c = parse_ok(kCluster, interfaces({{"ib0", {"10.99.0.7"}}}));
  CHECK(c.tun_address == *IpPrefix::parse("10.100.0.7/24"));
  CHECK(c.manager.overlay == ip("10.100.0.7"));
  // The prefix rule maps it back: peers find this node.
  CHECK(c.underlay_for(ip("10.100.0.7")) == ip("10.99.0.7"));
  // Unresolved: tun.address stays the prefix.
  const auto u = parse_ok(kCluster, interfaces({}));
  CHECK(u.tun_address == *IpPrefix::parse("10.100.0.0/24"));
  CHECK_FALSE(u.unresolved.empty());
  // IPv6 overlay over an IPv4 underlay: the low 8 bits.
  const auto v6 = parse_ok(file("address = \"10.99.0.9\"",
                                "address = \"fd00:100::/120\"\naddress_from_underlay = true"));
  CHECK(v6.tun_address.addr == ip("fd00:100::9"));
}

TEST_CASE("cluster: tun.address_from_underlay refuses what cannot be a node's address",
          "[config]") {
  const std::string derive = "address_from_underlay = true";
  CHECK(parse_err(file("address = \"10.99.0.7\"", "address = \"10.100.0.1/24\"\n" + derive)) ==
        "t.toml:4: tun.address: with tun.address_from_underlay = true, give the overlay prefix "
        "(host bits zero, e.g. 10.100.0.0/24): the host bits come from the underlay address");
  CHECK(parse_err(file("address = \"10.99.1.0\"", "address = \"10.100.0.0/24\"\n" + derive)) ==
        "t.toml:5: tun.address_from_underlay: node.address 10.99.1.0 gives 10.100.0.0, the subnet "
        "address of 10.100.0.0/24: no node's address");
  CHECK(parse_err(file("address = \"10.99.1.255\"", "address = \"10.100.0.0/24\"\n" + derive)) ==
        "t.toml:5: tun.address_from_underlay: node.address 10.99.1.255 gives 10.100.0.255, the "
        "broadcast address of 10.100.0.0/24: no node's address");
  CHECK(parse_err(std::string(kCluster), interfaces({{"ib0", {"10.99.0.0"}}})) ==
        "t.toml:5: tun.address_from_underlay: ib0's address 10.99.0.0 gives 10.100.0.0, the "
        "subnet address of 10.100.0.0/24: no node's address");
  // The rule would map our overlay to another address: peers could not reach us.
  CHECK(parse_err(file("address = \"10.99.1.7\"", "address = \"10.100.0.0/24\"\n" + derive,
                       "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n")) ==
        "t.toml:5: tun.address_from_underlay: node.address 10.99.1.7 gives 10.100.0.7, which "
        "peers.underlay_prefix 10.99.0.0/24 maps to 10.99.0.7, not to this node");
  CHECK(parse_err(file("address = \"10.99.0.7\"", "address = \"fd00:100::/64\"\n" + derive)) ==
        "t.toml:5: tun.address_from_underlay: tun.address has 64 host bits, more than an IPv4 "
        "address has");
}

TEST_CASE("cluster: one file on three nodes gives each its own overlay, and each finds the others",
          "[config]") {
  std::vector<Config> nodes;
  for (const char* a : {"10.99.0.1", "10.99.0.2", "10.99.0.3"})
    nodes.push_back(parse_ok(kCluster, interfaces({{"ib0", {"fe80::2", a}}})));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const IpAddr overlay = ip(("10.100.0." + std::to_string(i + 1)).c_str());
    CHECK(nodes[i].tun_address.addr == overlay);
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      // Node j reaches node i at i's underlay, and maps i's REQ back to i.
      CHECK(nodes[j].underlay_for(overlay) == nodes[i].manager.local.addr);
      if (i != j)
        CHECK(nodes[j].overlay_for(nodes[i].manager.local.addr, 0) == overlay);
    }
  }
}

TEST_CASE("cluster: configs that cannot work are refused, naming the key", "[config]") {
  const std::string node = "address = \"10.99.0.1\"";
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {file(node, "address = \"10.100.0.1/0\""),
       "t.toml:4: tun.address: a /0 overlay takes every IPv4 address: give the overlay's subnet, "
       "e.g. 10.100.0.1/24"},
      {file(node, "address = \"10.100.0.1/32\""),
       "t.toml:4: tun.address: a /32 overlay has room for no peer: give the overlay's subnet "
       "length, e.g. 10.100.0.1/24"},
      {file(node, "address = \"fd00:100::1/128\""),
       "t.toml:4: tun.address: a /128 overlay has room for no peer: give the overlay's subnet "
       "length, e.g. 10.100.0.1/24"},
      {file(node, "address = \"10.100.0.0/24\""),
       "t.toml:4: tun.address: 10.100.0.0 is the subnet address of 10.100.0.0/24, not a node's: "
       "give this node's own address in it (or set tun.address_from_underlay = true)"},
      {file(node, "address = \"10.100.0.255/24\""),
       "t.toml:4: tun.address: 10.100.0.255 is the broadcast address of 10.100.0.255/24, not a "
       "node's: give this node's own address in it (or set tun.address_from_underlay = true)"},
      {file(node, "address = \"fd00:100::/64\""),
       "t.toml:4: tun.address: fd00:100:: is the subnet address of fd00:100::/64, not a node's: "
       "give this node's own address in it (or set tun.address_from_underlay = true)"},
      {file(node, "address = \"10.100.0.1/24\"", "[peers]\nunderlay_prefix = \"10.100.0.0/16\"\n"),
       "t.toml:6: peers.underlay_prefix: 10.100.0.0/16 overlaps tun.address 10.100.0.1/24: the "
       "overlay and the underlay need subnets of their own"},
      {file(node, "address = \"10.99.0.2/24\""),
       "t.toml:2: node.address: 10.99.0.1 is inside tun.address 10.99.0.2/24: the overlay and the "
       "underlay need subnets of their own"},
      {file(node, "address = \"10.100.0.1/24\"",
            "[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"10.100.0.9\"\n"),
       "t.toml:7: peers.static[0].underlay: 10.100.0.9 is inside tun.address 10.100.0.1/24: the "
       "overlay and the underlay need subnets of their own"},
      {file("address = \"127.0.0.1\"", "address = \"10.100.0.1/24\""),
       "t.toml:2: node.address: must be this node's own underlay address (on the RDMA device's "
       "interface), not a loopback address"},
      {file("address = \"::1\"", "address = \"fd00:100::1/64\""),
       "t.toml:2: node.address: must be this node's own underlay address (on the RDMA device's "
       "interface), not a loopback address"},
      {file(node, "address = \"10.100.0.1/24\"",
            "[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"127.0.0.7\"\n"),
       "t.toml:7: peers.static[0].underlay: must be the peer's own underlay address, not a "
       "loopback address"},
      {file("address = \"127.0.0.1\"", "address = \"10.100.0.1/24\"",
            "[peers]\nunderlay_prefix = \"127.0.0.0/24\"\n"),
       "t.toml:2: node.address: must be this node's own underlay address (on the RDMA device's "
       "interface), not a loopback address"},
      {file(node, "address = \"10.100.0.1/24\"", "[peers]\nunderlay_prefix = \"127.0.0.0/24\"\n"),
       "t.toml:6: peers.underlay_prefix: 127.0.0.0/24 is a loopback prefix: give the prefix of "
       "the RDMA devices' subnet"},
  };
  for (const Case& c : cases)
    CHECK(parse_err(c.text) == c.want);
  // A /31 has two nodes and no subnet address: accepted.
  CHECK(parse_ok(file(node, "address = \"10.100.0.0/31\"")).tun_address.length == 31);
}

TEST_CASE("cluster: drop-ins merge over the file in name order, errors naming the drop-in",
          "[config]") {
  TempDir d;
  const std::string main = d.write("rcnetd.toml", std::string(kCluster) +
                                                      "[timeouts]\n"
                                                      "idle = \"1m\"\n");
  const std::string late = d.write("rcnetd.toml.d/20-late.toml", "[timeouts]\nidle = \"2m\"\n");
  const std::string early = d.write("rcnetd.toml.d/10-early.toml",
                                    "[timeouts]\nidle = \"30s\"\nconnect = \"9s\"\n"
                                    "[log]\nlevel = \"debug\"\n");
  d.write("rcnetd.toml.d/README", "not a drop-in");
  CHECK(drop_ins(main) == std::vector<std::string>{early, late});
  auto c = load(main, interfaces({{"ib0", {"10.99.0.4"}}}));
  REQUIRE(c);
  CHECK(c->manager.idle_timeout == std::chrono::minutes(2));  // the last file's
  CHECK(c->manager.connect_timeout == std::chrono::seconds(9));
  CHECK(c->log_level == LogLevel::kDebug);
  CHECK(c->tun_address.addr == ip("10.100.0.4"));
  CHECK(c->origins.at("timeouts.idle") == Origin{late, 2});
  CHECK(c->origins.at("timeouts.connect") == Origin{early, 3});
  CHECK(c->origins.at("tun.address") == Origin{main, 4});
  // --check-config's listing: each value with its origin, and TOML that
  // reads back to the same config.
  const std::string shown = show(*c);
  CHECK_THAT(shown, Catch::Contains("\nidle = \"2m\"  # " + late + ":2\n"));
  CHECK_THAT(shown, Catch::Contains("\n# address = \"10.99.0.4\"  # from node.interface\n"
                                    "interface = \"ib0\"  # " +
                                    main + ":2\n"));
  CHECK_THAT(shown, Catch::Contains("\naddress = \"10.100.0.0/24\"  # " + main +
                                    ":4\n# this node: 10.100.0.4/24 (host bits from the underlay "
                                    "address)\n"));
  CHECK_THAT(shown, Catch::Contains("\nport = 7471  # default\n"));
  CHECK(c->origins.at("log.level") == Origin{early, 5});  // a section only a drop-in has
  // The listing reads back to the same config on the same machine.
  auto back = parse(shown, "shown.toml", interfaces({{"ib0", {"10.99.0.4"}}}));
  REQUIRE(back);
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(k.get(*back) == k.get(*c));
  }
  // Not resolved yet: said so.
  auto later = load(main, interfaces({}));
  REQUIRE(later);
  CHECK_THAT(show(*later), Catch::Contains("\n# address: not yet (no interface ib0)\n"));
  CHECK_THAT(show(*later), Catch::Contains("\n# this node: not yet (no interface ib0)\n"));

  // An error in a drop-in names the drop-in and its line.
  d.write("rcnetd.toml.d/30-bad.toml", "[srq]\nsize = 0\n");
  auto bad = load(main, interfaces({{"ib0", {"10.99.0.4"}}}));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().context == d.path.string() +
                                   "/rcnetd.toml.d/30-bad.toml:2: srq.size: 0 is out of range "
                                   "1..1048576");
  d.write("rcnetd.toml.d/30-bad.toml", "[srq\n");
  bad = load(main, interfaces({{"ib0", {"10.99.0.4"}}}));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().context,
             Catch::StartsWith(d.path.string() + "/rcnetd.toml.d/30-bad.toml:1:"));
  d.write("rcnetd.toml.d/30-bad.toml", "[tun]\nsize = 1\n");
  bad = load(main, interfaces({{"ib0", {"10.99.0.4"}}}));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().context ==
        d.path.string() + "/rcnetd.toml.d/30-bad.toml:2: tun.size: unknown key");
}

TEST_CASE("cluster: show() of a plain file reads back to the same config", "[config]") {
  const Config c = parse_ok(file("address = \"10.99.0.1\"", "address = \"10.100.0.1/24\"",
                                 "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"
                                 "[[peers.static]]\noverlay = \"10.100.0.7\"\n"
                                 "underlay = \"10.99.1.7\"\n"));
  const std::string shown = show(c);
  CHECK_THAT(shown, Catch::Contains("\n# interface (not set)\n"));
  CHECK_THAT(shown, Catch::Contains(
                        "\nstatic = [{ overlay = \"10.100.0.7\", underlay = \"10.99.1.7\" }]"));
  const Config back = parse_ok(shown);
  CHECK(restart_required(c, back).empty());
  Config running = c;
  CHECK(reload(running, back).empty());
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(k.get(back) == k.get(c));
  }
}

TEST_CASE("cluster: a directory given as the config file says so", "[config]") {
  TempDir d;
  auto r = load(d.path.string());
  REQUIRE_FALSE(r);
  CHECK(r.error().code == std::errc::invalid_argument);
  CHECK(r.error().context == d.path.string() +
                                 ": is a directory, not a configuration file (rcnetd -c FILE, "
                                 "e.g. " +
                                 d.path.string() + "/rcnetd.toml)");
}

TEST_CASE("cluster: node.interface and tun.address_from_underlay need a restart", "[config]") {
  const Config a = parse_ok(kCluster, interfaces({{"ib0", {"10.99.0.7"}}}));
  std::string other = kCluster;
  other.replace(other.find("\"ib0\""), 5, "\"ib1\"");
  const Config b = parse_ok(other, interfaces({{"ib1", {"10.99.0.7"}}}));
  CHECK(restart_required(a, b) == std::vector<std::string>{"node.interface"});
  // The same address from the file: the derived tun.address is the same too.
  const Config c = parse_ok(file("address = \"10.99.0.7\"", "address = \"10.100.0.7/24\"",
                                 "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"));
  CHECK(restart_required(a, c) ==
        std::vector<std::string>{"node.interface", "tun.address_from_underlay"});
}

// The lab's own configs (tests/lab/daemon/rcnetd_lib.sh rcd_config,
// tests/lab/rails/rails_lib.sh rails_config, tests/lab/daemon/ipv6.sh cfg
// and mesh3.sh), with what they write around the addresses.
TEST_CASE("cluster: the lab's configs map each node's overlay to its own underlay", "[config]") {
  const std::string rest = "[log]\nlevel = \"info\"\ntarget = \"stderr\"\n";
  for (int i = 1; i <= 8; ++i) {
    const std::string n = std::to_string(i);
    INFO("node " << n);
    const Config one = parse_ok("[node]\naddress = \"10.99.0." + n +
                                "\"\n[tun]\naddress = \"10.100.0." + n + "/24\"\nnetns = \"node" +
                                n + "\"\n[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n" + rest);
    CHECK(one.underlay_for(one.tun_address.addr) == one.manager.local.addr);
    const Config two =
        parse_ok("[node]\naddress = [\"10.99.0." + n + "\", \"10.98.0." + n +
                 "\"]\n[tun]\naddress = \"10.100.0." + n +
                 "/24\"\n[peers]\nunderlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\"]\n"
                 "[rails]\nmode = \"active-backup\"\nholddown = \"2s\"\n" +
                 rest);
    CHECK(two.underlay_for(two.tun_address.addr, 1) == ip(("10.98.0." + n).c_str()));
  }
  // ipv6.sh's phases: both families each way, the prefix rule or static peers.
  parse_ok(file("address = \"fd99::2\"", "address = \"10.100.0.2/24\"",
                "[[peers.static]]\noverlay = \"10.100.0.1\"\nunderlay = \"fd99::1\"\n"));
  parse_ok(file("address = \"10.99.0.2\"", "address = \"fd00:100::2/120\"\nmtu = 1500",
                "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"));
  parse_ok(file("address = \"fd99::2\"", "address = \"fd00:100::2/64\"\nmtu = 1500",
                "[peers]\nunderlay_prefix = \"fd99::/64\"\n"));
  // mesh3.sh: the derived address cannot disagree.
  for (const char* a : {"10.99.0.1", "10.99.0.2", "10.99.0.3"})
    parse_ok(kCluster, interfaces({{"ib0", {a}}}));
  parse_ok(file("address = \"10.99.0.9\"",
                "address = \"10.100.0.0/24\"\naddress_from_underlay = true",
                "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"));
  // IPv6 has no broadcast address: all ones is a node's.
  parse_ok(file("address = \"fd99::ffff:ffff:ffff:ffff\"",
                "address = \"fd00:100::ffff:ffff:ffff:ffff/64\"",
                "[peers]\nunderlay_prefix = \"fd99::/64\"\n"));
  // An underlay wider than the overlay: the rule writes zeros above the
  // overlay's host bits.
  parse_ok(file("address = \"10.99.0.7\"", "address = \"10.100.0.7/24\"",
                "[peers]\nunderlay_prefix = \"10.99.0.0/16\"\n"));
  // Without a rule, peers find this node only by their static tables.
  parse_ok(file("address = \"10.99.7.7\"", "address = \"10.100.0.1/24\""));
}

TEST_CASE("cluster: a tun.address the prefix rule does not map to this node is refused",
          "[config]") {
  const std::string v4 = "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n";
  const std::string v6 = "[peers]\nunderlay_prefix = \"fd99::/64\"\n";
  const std::string tun = "address = \"10.100.0.1/24\"";
  const std::string then =
      ": peers would send this node's packets to 10.99.0.1 and drop the ones it sends";
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      // Another node's overlay address.
      {file("address = \"10.99.0.2\"", tun, v4),
       "t.toml:4: tun.address: 10.100.0.1 and node.address 10.99.0.2 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 to 10.99.0.1 and "
       "10.99.0.2 to 10.100.0.2" +
           then},
      // The overlay's broadcast and subnet addresses.
      {file("address = \"10.99.0.255\"", tun, v4),
       "t.toml:4: tun.address: 10.100.0.1 and node.address 10.99.0.255 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 to 10.99.0.1 and "
       "10.99.0.255 to 10.100.0.255, the overlay's broadcast address" +
           then},
      {file("address = \"10.99.0.0\"", tun, v4),
       "t.toml:4: tun.address: 10.100.0.1 and node.address 10.99.0.0 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 to 10.99.0.1 and "
       "10.99.0.0 to 10.100.0.0, the overlay's subnet address" +
           then},
      // Outside the rule's prefix: no overlay address maps to it.
      {file("address = \"10.99.7.7\"", tun, v4),
       "t.toml:4: tun.address: 10.100.0.1 and node.address 10.99.7.7 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 to 10.99.0.1 and no "
       "overlay address to 10.99.7.7" +
           then},
      // Inside a wider prefix, with ones above the overlay's host bits.
      {file("address = \"10.99.1.1\"", tun, "[peers]\nunderlay_prefix = \"10.99.0.0/16\"\n"),
       "t.toml:4: tun.address: 10.100.0.1 and node.address 10.99.1.1 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/16 (line 6): it maps 10.100.0.1 to 10.99.0.1 and no "
       "overlay address to 10.99.1.1" +
           then},
      // IPv6 underlay and overlay.
      {file("address = \"fd99::2\"", "address = \"fd00:100::1/64\"", v6),
       "t.toml:4: tun.address: fd00:100::1 and node.address fd99::2 (line 2) disagree under "
       "peers.underlay_prefix fd99::/64 (line 6): it maps fd00:100::1 to fd99::1 and fd99::2 to "
       "fd00:100::2: peers would send this node's packets to fd99::1 and drop the ones it sends"},
      {file("address = \"fd99::\"", "address = \"fd00:100::1/64\"", v6),
       "t.toml:4: tun.address: fd00:100::1 and node.address fd99:: (line 2) disagree under "
       "peers.underlay_prefix fd99::/64 (line 6): it maps fd00:100::1 to fd99::1 and fd99:: to "
       "fd00:100::, the overlay's subnet address: peers would send this node's packets to "
       "fd99::1 and drop the ones it sends"},
      // An IPv6 overlay over an IPv4 underlay, and the other way round.
      {file("address = \"10.99.0.2\"", "address = \"fd00:100::1/120\"", v4),
       "t.toml:4: tun.address: fd00:100::1 and node.address 10.99.0.2 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps fd00:100::1 to 10.99.0.1 and "
       "10.99.0.2 to fd00:100::2" +
           then},
      {file("address = \"fd99::ff\"", tun, v6),
       "t.toml:4: tun.address: 10.100.0.1 and node.address fd99::ff (line 2) disagree under "
       "peers.underlay_prefix fd99::/64 (line 6): it maps 10.100.0.1 to fd99::1 and fd99::ff to "
       "10.100.0.255, the overlay's broadcast address: peers would send this node's packets to "
       "fd99::1 and drop the ones it sends"},
      // Rail 1 disagrees; rail 0 agrees.
      {file("address = [\"10.99.0.1\", \"10.98.0.2\"]", tun,
            "[peers]\nunderlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\"]\n"),
       "t.toml:4: tun.address: 10.100.0.1 and node.address[1] 10.98.0.2 (line 2) disagree under "
       "peers.underlay_prefix[1] 10.98.0.0/24 (line 6): it maps 10.100.0.1 to 10.98.0.1 and "
       "10.98.0.2 to 10.100.0.2: peers would send this node's packets to 10.98.0.1 and drop the "
       "ones it sends"},
      // A /31's subnet address is a node's (RFC 3021), but the rule maps it to none.
      {file("address = \"10.99.0.1\"", "address = \"10.100.0.0/31\"", v4),
       "t.toml:4: tun.address: 10.100.0.0 and node.address 10.99.0.1 (line 2) disagree under "
       "peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.0 to no underlay address "
       "and 10.99.0.1 to 10.100.0.1: peers could not send this node any packet and drop the "
       "ones it sends"},
  };
  for (const Case& c : cases)
    CHECK(parse_err(c.text) == c.want);
  // The address read from node.interface.
  CHECK(parse_err(file("interface = \"ib0\"", tun, v4), interfaces({{"ib0", {"10.99.0.7"}}})) ==
        "t.toml:4: tun.address: 10.100.0.1 and ib0's address 10.99.0.7 (node.interface, line 2) "
        "disagree under peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 to "
        "10.99.0.1 and 10.99.0.7 to 10.100.0.7" +
            then);
  // tun.address_from_underlay agrees on rail 0 by construction; rail 1 is
  // still checked.
  CHECK(parse_err(file("address = [\"10.99.0.7\", \"10.98.0.8\"]",
                       "address = \"10.100.0.0/24\"\naddress_from_underlay = true",
                       "[peers]\nunderlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\"]\n")) ==
        "t.toml:4: tun.address: 10.100.0.7 and node.address[1] 10.98.0.8 (line 2) disagree under "
        "peers.underlay_prefix[1] 10.98.0.0/24 (line 7): it maps 10.100.0.7 to 10.98.0.7 and "
        "10.98.0.8 to 10.100.0.8: peers would send this node's packets to 10.98.0.7 and drop the "
        "ones it sends");
  // A static peer with this node's overlay address names tun.address's line.
  CHECK(parse_err(
            file("address = \"10.99.0.1\"", tun,
                 v4 + "[[peers.static]]\noverlay = \"10.100.0.1\"\nunderlay = \"10.99.1.1\"\n")) ==
        "t.toml:8: peers.static[0].overlay: 10.100.0.1 is this node's own tun.address (line 4)");
}

TEST_CASE("cluster: a disagreement between the file and a drop-in names the drop-in", "[config]") {
  TempDir d;
  const std::string main =
      d.write("rcnetd.toml", file("address = \"10.99.0.1\"", "address = \"10.100.0.1/24\"",
                                  "[peers]\nunderlay_prefix = "
                                  "\"10.99.0.0/24\"\n"));
  REQUIRE(load(main));
  const std::string node2 =
      d.write("rcnetd.toml.d/50-node2.toml", "[node]\naddress = \"10.99.0.2\"\n");
  auto bad = load(main);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().context ==
        main + ":4: tun.address: 10.100.0.1 and node.address 10.99.0.2 (" + node2 +
            ":2) disagree under peers.underlay_prefix 10.99.0.0/24 (line 6): it maps 10.100.0.1 "
            "to 10.99.0.1 and 10.99.0.2 to 10.100.0.2: peers would send this node's packets to "
            "10.99.0.1 and drop the ones it sends");
  // The drop-in that sets both agrees.
  d.write("rcnetd.toml.d/50-node2.toml",
          "[node]\naddress = \"10.99.0.2\"\n[tun]\naddress = \"10.100.0.2/24\"\n");
  REQUIRE(load(main));
}

}  // namespace config_cluster_test
