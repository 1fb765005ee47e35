// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The rails of rcnetd.toml (issue 21): node.address, peers.underlay_prefix
// and a static peer's underlay with one entry per rail, the [rails] table,
// the per-rail mappings and their checks.
#include "catch2_compat.hpp"

#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/keys.hpp"
#include "ctl/render.hpp"
#include "ctl/views.hpp"
#include "parse_helpers.hpp"

namespace config_rails_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

namespace {

// Two rails, each with its prefix rule; static peer .7 has only rail 0,
// .8 has both (its rail-1 address outside the rule's prefix).
constexpr const char* kTwoRails = R"([node]
address = ["10.99.0.1", "10.98.0.1"]
port = 7472
[tun]
address = "10.100.0.1/24"
[peers]
underlay_prefix = ["10.99.0.0/24", "10.98.0.0/24"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = "10.99.1.7"
[[peers.static]]
overlay = "10.100.0.8"
underlay = ["10.99.1.8", "10.97.1.8"]
[rails]
holddown = "5s"
)";

// `text` with `from` (which occurs exactly once) replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(from, at + 1) == std::string::npos);
  return text.replace(at, from.size(), to);
}

// The 1-based line of the first line of `text` that contains `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + 1;
}

}  // namespace

TEST_CASE("config rails: a string and a list of one are the same single rail", "[config][rails]") {
  const Config s = parse_ok(R"([node]
address = "10.99.0.1"
[tun]
address = "10.100.0.1/24"
[peers]
underlay_prefix = "10.99.0.0/24"
[[peers.static]]
overlay = "10.100.0.7"
underlay = "10.99.1.7"
)");
  const Config l = parse_ok(R"([node]
address = ["10.99.0.1"]
[tun]
address = "10.100.0.1/24"
[peers]
underlay_prefix = ["10.99.0.0/24"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = ["10.99.1.7"]
)");
  for (const Config* c : {&s, &l}) {
    REQUIRE(c->rail_count() == 1);
    CHECK(c->rails[0].local == Endpoint{ip("10.99.0.1"), kDefaultPort});
    CHECK(c->rails[0].local == c->manager.local);
    CHECK(c->rails[0].underlay_prefix == c->underlay_prefix);
    CHECK(c->underlay_prefix->to_string() == "10.99.0.0/24");
    CHECK(c->static_peers[0] ==
          StaticPeer{ip("10.100.0.7"), ip("10.99.1.7"), std::vector<IpAddr>{ip("10.99.1.7")}});
    CHECK(c->underlay_for(ip("10.100.0.9"), 0) == ip("10.99.0.9"));
    CHECK_FALSE(c->underlay_for(ip("10.100.0.9"), 1));
    CHECK(c->manager_for_rail(0).local == c->manager.local);
  }
  // Every key reads back alike, as the single value the file wrote.
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(k.get(s) == k.get(l));
  }
  CHECK(find_key("node.address")->get(l) == Value(std::string("10.99.0.1")));
  CHECK(find_key("peers.underlay_prefix")->get(l) == Value(std::string("10.99.0.0/24")));
  CHECK(find_key("peers.static")->get(l) ==
        Value(std::vector<InlineTable>{{{"overlay", "10.100.0.7"}, {"underlay", "10.99.1.7"}}}));
  CHECK(restart_required(s, l).empty());
}

TEST_CASE("config rails: two rails map overlay to underlay and back, per rail", "[config][rails]") {
  const Config c = parse_ok(kTwoRails);
  REQUIRE(c.rail_count() == 2);
  CHECK(c.rails[0].local == c.manager.local);
  CHECK(c.rails[0].local == Endpoint{ip("10.99.0.1"), 7472});
  CHECK(c.rails[1].local == Endpoint{ip("10.98.0.1"), 7472});  // node.port on every rail
  CHECK(c.rails[0].underlay_prefix == c.underlay_prefix);
  CHECK(c.rails[1].underlay_prefix->to_string() == "10.98.0.0/24");

  // A rail's manager differs from `manager` only in what it binds.
  const cm::ManagerConfig m1 = c.manager_for_rail(1);
  CHECK(m1.local == Endpoint{ip("10.98.0.1"), 7472});
  CHECK(m1.overlay == c.manager.overlay);
  CHECK(m1.mtu == c.manager.mtu);
  CHECK(m1.offload == c.manager.offload);
  CHECK(c.manager_for_rail(0).local == c.manager.local);

  // The prefix rule, per rail; the one-argument functions are rail 0.
  CHECK(c.underlay_for(ip("10.100.0.9"), 0) == ip("10.99.0.9"));
  CHECK(c.underlay_for(ip("10.100.0.9"), 1) == ip("10.98.0.9"));
  CHECK(c.underlay_for(ip("10.100.0.9")) == ip("10.99.0.9"));
  CHECK_FALSE(c.underlay_for(ip("10.100.0.9"), 2));
  REQUIRE(c.peer_endpoint_for(ip("10.100.0.9"), 1));
  CHECK(c.peer_endpoint_for(ip("10.100.0.9"), 1)->to_string() == "10.98.0.9:7472");
  CHECK(c.peer_endpoint_for(ip("10.100.0.9"))->to_string() == "10.99.0.9:7472");
  CHECK_FALSE(c.peer_endpoint_for(ip("10.100.0.9"), 2));

  // Static peers: .7 gave one underlay, so it has no link on rail 1 (the
  // rule is not consulted for it); .8 gave one per rail.
  CHECK(c.underlay_for(ip("10.100.0.7"), 0) == ip("10.99.1.7"));
  CHECK_FALSE(c.underlay_for(ip("10.100.0.7"), 1));
  CHECK_FALSE(c.peer_endpoint_for(ip("10.100.0.7"), 1));
  CHECK(c.underlay_for(ip("10.100.0.8"), 0) == ip("10.99.1.8"));
  CHECK(c.underlay_for(ip("10.100.0.8"), 1) == ip("10.97.1.8"));
  CHECK(c.static_peers[1].rail_underlays == std::vector<IpAddr>{ip("10.99.1.8"), ip("10.97.1.8")});
  CHECK(c.static_peers[1].underlay == ip("10.99.1.8"));

  // And back: a REQ's source address on a rail names the peer's overlay.
  CHECK(c.overlay_for(ip("10.99.0.9"), 0) == ip("10.100.0.9"));
  CHECK(c.overlay_for(ip("10.98.0.9"), 1) == ip("10.100.0.9"));
  CHECK_FALSE(c.overlay_for(ip("10.98.0.9"), 0));  // rail 1's subnet, asked on rail 0
  CHECK_FALSE(c.overlay_for(ip("10.99.0.9"), 1));
  CHECK_FALSE(c.overlay_for(ip("10.98.0.9"), 2));
  CHECK(c.overlay_for(ip("10.99.1.7"), 0) == ip("10.100.0.7"));
  CHECK_FALSE(c.overlay_for(ip("10.99.1.7"), 1));
  CHECK(c.overlay_for(ip("10.97.1.8"), 1) == ip("10.100.0.8"));
  CHECK_FALSE(c.overlay_for(ip("10.97.1.8"), 0));
  // The rule's image of a static overlay is not that peer: the static
  // entry overrides the rule, and .7 has no link on rail 1.
  CHECK_FALSE(c.overlay_for(ip("10.99.0.7"), 0));
  CHECK_FALSE(c.overlay_for(ip("10.98.0.7"), 1));
  // Our own overlay, the subnet and the broadcast are nobody's.
  CHECK_FALSE(c.overlay_for(ip("10.98.0.1"), 1));
  CHECK_FALSE(c.overlay_for(ip("10.98.0.0"), 1));
  CHECK_FALSE(c.overlay_for(ip("10.98.0.255"), 1));
  CHECK_FALSE(c.overlay_for(ip("fd00::9"), 1));
  CHECK_FALSE(c.overlay_for(IpAddr{}, 0));

  // Both ways agree for every host of the overlay, on both rails.
  int mapped = 0;
  for (std::uint32_t h = 0; h < 256; ++h) {
    const IpAddr o = IpAddr::v4((10U << 24) | (100U << 16) | h);
    for (std::size_t rail : {0U, 1U}) {
      INFO(o.to_string() << " rail " << rail);
      if (const auto u = c.underlay_for(o, rail)) {
        // Our own overlay maps to our own address, which is no peer's.
        CHECK(c.overlay_for(*u, rail) ==
              (o == c.tun_address.addr ? std::nullopt : std::optional<IpAddr>(o)));
        ++mapped;
      }
    }
  }
  CHECK(mapped == 254 + 253);  // .7 has no rail 1
}

TEST_CASE("config rails: the inverse of a wide prefix, an IPv6 rail, a single rule for two rails",
          "[config][rails]") {
  // A /16 rule under a /22 overlay: the rule writes zeros between the
  // prefix and the overlay's 10 host bits, so other addresses there are
  // nobody's.
  const Config wide = parse_ok(
      "[node]\naddress = [\"172.16.1.1\", \"172.17.1.1\"]\n[tun]\naddress = \"10.100.1.1/22\"\n"
      "[peers]\nunderlay_prefix = [\"172.16.5.5/16\", \"172.17.0.0/16\"]\n");
  CHECK(wide.underlay_for(ip("10.100.3.7"), 1) == ip("172.17.3.7"));
  CHECK(wide.overlay_for(ip("172.17.3.7"), 1) == ip("10.100.3.7"));
  CHECK(wide.overlay_for(ip("172.16.3.7"), 0) == ip("10.100.3.7"));
  CHECK_FALSE(wide.overlay_for(ip("172.17.4.7"), 1));
  CHECK_FALSE(wide.overlay_for(ip("172.17.128.7"), 1));

  const Config v6 = parse_ok(
      "[node]\naddress = [\"fd00:99::1\", \"fd00:98::1\"]\n[tun]\naddress = "
      "\"fd00:100::1/112\"\n[peers]\nunderlay_prefix = [\"fd00:99::/64\", \"fd00:98::/64\"]\n");
  CHECK(v6.underlay_for(ip("fd00:100::abcd"), 1) == ip("fd00:98::abcd"));
  CHECK(v6.overlay_for(ip("fd00:98::abcd"), 1) == ip("fd00:100::abcd"));
  CHECK(v6.overlay_for(ip("fd00:98::ffff"), 1) == ip("fd00:100::ffff"));  // no broadcast in IPv6
  CHECK_FALSE(v6.overlay_for(ip("fd00:98::1:abcd"), 1));

  // One rule for two rails is rail 0's: rail 1 reaches only static peers
  // that name an underlay for it.
  const Config one = parse_ok(
      "[node]\naddress = [\"10.99.0.1\", \"10.98.0.1\"]\n[tun]\naddress = \"10.100.0.1/24\"\n"
      "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n"
      "[[peers.static]]\noverlay = \"10.100.0.8\"\nunderlay = [\"10.99.0.8\", \"10.98.0.8\"]\n");
  CHECK(one.underlay_for(ip("10.100.0.9"), 0) == ip("10.99.0.9"));
  CHECK_FALSE(one.underlay_for(ip("10.100.0.9"), 1));
  CHECK_FALSE(one.rails[1].underlay_prefix);
  CHECK(one.underlay_for(ip("10.100.0.8"), 1) == ip("10.98.0.8"));
  CHECK(one.overlay_for(ip("10.98.0.8"), 1) == ip("10.100.0.8"));
  CHECK_FALSE(one.overlay_for(ip("10.98.0.9"), 1));
  CHECK(find_key("peers.underlay_prefix")->get(one) == Value(std::string("10.99.0.0/24")));
}

TEST_CASE("config rails: the keys read back as the file writes them, through rcnetctl config too",
          "[config][rails]") {
  const Config c = parse_ok(replaced(kTwoRails, "holddown = \"5s\"",
                                     "mode = \"stripe\"\n"
                                     "holddown = \"1500ms\""));
  CHECK(c.rails_mode == RailsMode::kStripe);
  CHECK(c.rails_holddown == std::chrono::milliseconds(1500));
  CHECK(to_string(c.rails_mode) == "stripe");
  CHECK(to_string(RailsMode::kActiveBackup) == "active-backup");
  CHECK(find_key("node.address")->get(c) ==
        Value(std::vector<std::string>{"10.99.0.1", "10.98.0.1"}));
  CHECK(find_key("peers.underlay_prefix")->get(c) ==
        Value(std::vector<std::string>{"10.99.0.0/24", "10.98.0.0/24"}));
  CHECK(find_key("peers.static")->get(c) ==
        Value(std::vector<InlineTable>{
            {{"overlay", "10.100.0.7"}, {"underlay", "10.99.1.7"}},
            {{"overlay", "10.100.0.8"},
             {"underlay", std::vector<std::string>{"10.99.1.8", "10.97.1.8"}}}}));
  CHECK(find_key("rails.mode")->get(c) == Value(std::string("stripe")));
  CHECK(find_key("rails.holddown")->get(c) == Value(std::string("1500ms")));
  CHECK(find_key("rails.mode")->default_value() == Value(std::string("active-backup")));
  CHECK(find_key("rails.holddown")->default_value() == Value(std::string("5s")));

  // rcnetctl config shows the lists as lists, and its text parses back to
  // the same configuration.
  const ctl::json j = ctl::config_json(c);
  CHECK(j["node.address"] == ctl::json::array({"10.99.0.1", "10.98.0.1"}));
  CHECK(j["peers.static"][1]["underlay"] == ctl::json::array({"10.99.1.8", "10.97.1.8"}));
  CHECK(j["peers.static"][0]["underlay"] == "10.99.1.7");
  CHECK(j["rails.mode"] == "stripe");
  const std::string text = ctl::render_config(j);
  INFO(text);
  const Config back = parse_ok(text);
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(k.get(back) == k.get(c));
  }
  CHECK(back.rails == c.rails);
  CHECK(back.static_peers == c.static_peers);
}

TEST_CASE("config rails: bad rails name file, line and key", "[config][rails]") {
  struct Case {
    std::string text;
    std::string at;    // the text on the line the error names
    std::string want;  // the message after "t.toml:LINE: "
  };
  const std::string base = kTwoRails;
  const std::string addr = "address = [\"10.99.0.1\", \"10.98.0.1\"]";
  const std::string rule = "underlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\"]";
  const std::string st8 = "underlay = [\"10.99.1.8\", \"10.97.1.8\"]";
  const Case cases[] = {
      // Two rails on one subnet: both addresses inside a rail's rule.
      {replaced(base, addr, "address = [\n  \"10.99.0.1\",\n  \"10.99.0.2\",\n]"),
       "  \"10.99.0.2\"",
       "node.address[1]: 10.99.0.2 is on the subnet of node.address[0] "
       "(peers.underlay_prefix[0] 10.99.0.0/24): each rail needs a subnet of its own"},
      {replaced(replaced(base, rule, "underlay_prefix = \"10.99.0.0/16\""), addr,
                "address = [\"10.99.0.1\", \"10.99.7.1\"]"),
       "address = [",
       "node.address[1]: 10.99.7.1 is on the subnet of node.address[0] "
       "(peers.underlay_prefix 10.99.0.0/16): each rail needs a subnet of its own"},
      // ... or the rules overlap.
      {replaced(base, rule, "underlay_prefix = [\"10.98.0.0/16\", \"10.98.0.0/24\"]"),
       "underlay_prefix",
       "peers.underlay_prefix[1]: overlaps peers.underlay_prefix[0] "
       "(10.98.0.0/16): each rail needs a subnet of its own"},
      // Duplicate and mixed-family addresses.
      {replaced(replaced(base, rule, "underlay_prefix = \"10.99.0.0/24\""), addr,
                "address = [\"10.99.0.1\", \"10.98.0.1\", \"10.99.0.1\"]"),
       "address = [", "node.address[2]: duplicate: 10.99.0.1 is already node.address[0]"},
      {replaced(base, addr, "address = [\"10.99.0.1\", \"fd00:98::1\"]"), "address = [",
       "node.address[1]: is IPv6 but node.address[0] is IPv4: all rails in one family"},
      // One rule per rail, or one for rail 0.
      {replaced(base, rule, "underlay_prefix = [\"10.99.0.0/24\"]"), "underlay_prefix",
       "peers.underlay_prefix: has 1 prefix for node.address's 2 addresses: one per rail, in "
       "the same order"},
      {replaced(base, rule,
                "underlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/24\", \"10.97.0.0/24\"]"),
       "underlay_prefix",
       "peers.underlay_prefix: has 3 prefixes for node.address's 2 addresses: one per rail, in "
       "the same order"},
      // The one-rail checks, per rail.
      {replaced(base, rule, "underlay_prefix = [\"10.99.0.0/24\", \"10.98.0.0/25\"]"),
       "underlay_prefix",
       "peers.underlay_prefix[1]: has 7 host bits, fewer than the 8 of tun.address"},
      {replaced(base, rule, "underlay_prefix = [\"10.99.0.0/24\", \"nope\"]"), "underlay_prefix",
       "peers.underlay_prefix[1]: expected an address/prefix such as \"10.99.0.0/24\" or "
       "\"fd00::/64\""},
      {replaced(base, addr, "address = [\"10.99.0.1\", \"224.0.0.1\"]"), "address = [",
       "node.address[1]: must be this node's own underlay address, not a multicast address"},
      {replaced(base, addr, "address = [\"10.99.0.1\", \"10.98.0.300\"]"), "address = [",
       "node.address[1]: expected an IPv4 or IPv6 address such as \"10.99.0.1\""},
      {replaced(base, addr, "address = []"), "address = [",
       "node.address: expected one address or a list of 1..8, one per rail"},
      {replaced(base, addr,
                "address = [\"10.99.0.1\", \"10.98.0.1\", \"10.97.0.1\", \"10.96.0.1\", "
                "\"10.95.0.1\", \"10.94.0.1\", \"10.93.0.1\", \"10.92.0.1\", \"10.91.0.1\"]"),
       "address = [", "node.address: expected one address or a list of 1..8, one per rail"},
      // A static peer's underlays.
      {replaced(base, st8, "underlay = [\"10.99.1.8\", \"10.97.1.8\", \"10.96.1.8\"]"),
       "underlay = [",
       "peers.static[1].underlay: has 3 addresses for node.address's 2 addresses: at most one "
       "per rail"},
      {replaced(base, st8, "underlay = [\"10.99.1.8\", \"10.98.0.1\"]"), "underlay = [",
       "peers.static[1].underlay[1]: is this node's own address"},
      {replaced(base, st8, "underlay = [\"10.99.1.8\", \"10.99.1.8\"]"), "underlay = [",
       "peers.static[1].underlay[1]: duplicate: 10.99.1.8 is already peers.static[1].underlay[0]"},
      {replaced(base, st8, "underlay = [\"10.99.1.8\", \"fd00::8\"]"), "underlay = [",
       "peers.static[1].underlay[1]: is IPv6 but node.address is IPv4"},
      {replaced(base, st8, "underlay = [\"10.99.1.8\", \"239.0.0.8\"]"), "underlay = [",
       "peers.static[1].underlay[1]: must be the peer's own underlay address, not a multicast "
       "address"},
      {replaced(base, st8, "underlay = []"), "underlay = [",
       "peers.static[1].underlay: expected one address or a list of 1..8, one per rail"},
      // [rails]
      {base + "mode = \"round-robin\"\n",
       "mode =", "rails.mode: expected one of active-backup, stripe"},
      {base + "mode = 1\n", "mode =", "rails.mode: expected a string"},
      {replaced(base, "holddown = \"5s\"", "holddown = \"11m\""), "holddown",
       "rails.holddown: must be between 0s and 10m"},
      {replaced(base, "holddown = \"5s\"", "holddown = \"soon\""), "holddown",
       "rails.holddown: expected a duration such as \"10s\" or \"500ms\""},
      {replaced(base, "holddown = \"5s\"", "holddown = -1"), "holddown",
       "rails.holddown: expected a duration such as \"10s\" or \"500ms\""},
      {base + "flap = 3\n", "flap", "rails.flap: unknown key"},
  };
  for (const Case& k : cases) {
    CHECK(parse_err(k.text) == "t.toml:" + std::to_string(line_of(k.text, k.at)) + ": " + k.want);
  }
  // The range's ends are accepted.
  CHECK(parse_ok(replaced(base, "holddown = \"5s\"", "holddown = 0")).rails_holddown ==
        Duration(0));
  CHECK(parse_ok(replaced(base, "holddown = \"5s\"", "holddown = \"10m\"")).rails_holddown ==
        std::chrono::minutes(10));
  // Eight rails are accepted.
  const Config eight = parse_ok(replaced(
      replaced(base, rule, "underlay_prefix = \"10.99.0.0/24\""), addr,
      "address = [\"10.99.0.1\", \"10.98.0.1\", \"10.97.0.1\", \"10.96.0.1\", \"10.95.0.1\", "
      "\"10.94.0.1\", \"10.93.0.1\", \"10.92.0.1\"]"));
  CHECK(eight.rail_count() == 8);
  CHECK(eight.rails[7].local == Endpoint{ip("10.92.0.1"), 7472});
}

TEST_CASE(
    "config rails: a reload applies rails.holddown and the per-rail peers live; mode and "
    "addresses need a restart",
    "[config][rails]") {
  const Config a = parse_ok(kTwoRails);

  Config running = a;
  CHECK(reload(running, parse_ok(replaced(kTwoRails, "holddown = \"5s\"", "holddown = \"1s\"")))
            .empty());
  CHECK(running.rails_holddown == std::chrono::seconds(1));

  // Rail 1's rule and a static peer's rail-1 address apply live. (The rule
  // must still map our overlay address to rail 1's, lib/config/sanity.cpp.)
  running = a;
  const Config peers =
      parse_ok(replaced(replaced(kTwoRails, "\"10.98.0.0/24\"]", "\"10.98.0.0/16\"]"),
                        "\"10.97.1.8\"]", "\"10.96.1.8\"]"));
  CHECK(reload(running, peers).empty());
  CHECK(running.rails[1].underlay_prefix->to_string() == "10.98.0.0/16");
  CHECK(running.underlay_for(ip("10.100.0.9"), 1) == ip("10.98.0.9"));
  CHECK(running.overlay_for(ip("10.98.0.9"), 1) == ip("10.100.0.9"));
  CHECK(running.underlay_for(ip("10.100.0.8"), 1) == ip("10.96.1.8"));
  CHECK(running.underlay_for(ip("10.100.0.9"), 0) == ip("10.99.0.9"));

  struct Refused {
    std::string from, to, key;
    std::string rule_to = "";  // peers.underlay_prefix's new rail 1 onwards, if it changes
  };
  const Refused refused[] = {
      {"holddown = \"5s\"", "holddown = \"5s\"\nmode = \"stripe\"", "rails.mode"},
      {"address = [\"10.99.0.1\", \"10.98.0.1\"]", "address = [\"10.99.0.1\", \"10.97.0.1\"]",
       "node.address", "\"10.97.0.0/24\"]"},
      // A rail more, with its rule (a rule change alone applies live).
      {"address = [\"10.99.0.1\", \"10.98.0.1\"]",
       "address = [\"10.99.0.1\", \"10.98.0.1\", \"10.97.0.1\"]", "node.address",
       "\"10.98.0.0/24\", \"10.97.0.0/24\"]"},
  };
  for (const Refused& r : refused) {
    INFO(r.key);
    std::string text = replaced(kTwoRails, r.from, r.to);
    if (!r.rule_to.empty())
      text = replaced(text, "\"10.98.0.0/24\"]", r.rule_to);
    // With a live change beside it, which the refused reload leaves alone.
    text = replaced(text, "holddown = \"5s\"", "holddown = \"1s\"");
    const Config next = parse_ok(text);
    running = a;
    CHECK(reload(running, next) == std::vector<std::string>{r.key});
    CHECK(running.rails_holddown == std::chrono::seconds(5));
    CHECK(running.rails_mode == RailsMode::kActiveBackup);
    CHECK(running.rails == a.rails);
  }
}

}  // namespace config_rails_test
