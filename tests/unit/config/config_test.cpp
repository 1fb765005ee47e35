// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Parsing a config file: its values, the defaults, and every error naming
// the file, line and key (the key table: key_table_test.cpp; reload:
// reload_test.cpp).
#include "catch2_compat.hpp"

#include <string>

#include "config/config.hpp"
#include "config_texts.hpp"

namespace config_config_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

TEST_CASE("config: the full example parses to its values", "[config]") {
  const Config c = parse_ok(kFull);
  const cm::ManagerConfig& m = c.manager;
  CHECK(m.local.addr == ip("10.99.0.1"));
  CHECK(m.local.port == 7472);
  CHECK(c.tun_name == "rc1");
  CHECK(c.tun_address.addr == ip("10.100.0.1"));
  CHECK(c.tun_address.length == 24);
  CHECK(m.overlay == ip("10.100.0.1"));
  CHECK(m.mtu == 9000);
  CHECK(c.tun_netns == "node1");
  CHECK_FALSE(c.tun_source_check);
  REQUIRE(c.underlay_prefix);
  CHECK(c.underlay_prefix->to_string() == "10.99.0.0/24");
  REQUIRE(m.allowed_peers.size() == 2);
  CHECK(m.allowed_peers[1].to_string() == "10.98.0.0/16");
  REQUIRE(c.static_peers.size() == 2);
  CHECK(c.static_peers[0] == StaticPeer{ip("10.100.0.7"), ip("10.99.1.7"), {ip("10.99.1.7")}});
  CHECK(c.static_peers[1] == StaticPeer{ip("10.100.0.8"), ip("10.99.1.8"), {ip("10.99.1.8")}});
  CHECK(c.rails_mode == RailsMode::kStripe);
  CHECK(c.rails_holddown == 2s);
  CHECK_FALSE(m.use_srq);
  CHECK(m.srq_size == 2048);
  CHECK(m.srq_limit == 100);
  CHECK(m.rq_depth == 32);
  CHECK(m.max_connections == 100);
  CHECK(m.send_slots == 512);
  CHECK(m.qp_send_depth == 63);
  CHECK(m.peer_queue_depth == 16);
  CHECK(m.idle_timeout == 30s);
  CHECK(m.last_wqe_timeout == 250ms);
  CHECK(m.drain_timeout == 2s);
  CHECK(m.disconnect_timeout == 1500ms);
  CHECK(m.resolve_timeout == 3s);
  CHECK(m.connect_timeout == 60s);
  CHECK(m.reaper_interval == 500ms);
  CHECK(m.retry_count == 5);
  CHECK(m.rnr_retry_count == 6);
  CHECK(m.ack_timeout == 12);
  CHECK(m.min_rnr_timer == 14);
  CHECK(m.connect_retries == 4);
  CHECK(c.log_level == LogLevel::kDebug);
  CHECK(c.log_target == LogTarget::kJournal);
  CHECK(c.ctl_socket == "/run/rcnet/test.sock");
  CHECK(c.ctl_group == "wheel");
  CHECK(m.incarnation == 0);  // drawn by the daemon, never configured
}

TEST_CASE("config: a minimal file gets the documented defaults", "[config]") {
  const Config c = parse_ok(kMinimal);
  const cm::ManagerConfig def;
  const cm::ManagerConfig& m = c.manager;
  CHECK(m.local.port == kDefaultPort);
  CHECK(c.tun_name == "rc0");
  CHECK(m.mtu == 65520);
  CHECK(c.tun_netns.empty());
  CHECK_FALSE(c.underlay_prefix);
  CHECK(m.allowed_peers.empty());
  CHECK(c.static_peers.empty());
  CHECK(c.rail_count() == 1);
  CHECK(c.rails_mode == RailsMode::kActiveBackup);
  CHECK(c.rails_holddown == 5s);
  CHECK(m.use_srq);
  CHECK(m.srq_size == def.srq_size);
  CHECK(m.srq_limit == 0);
  CHECK(m.send_slots == def.send_slots);
  CHECK(m.max_connections == 0);
  CHECK(m.idle_timeout == 5min);
  CHECK(m.reaper_interval == 1s);
  CHECK(m.retry_count == 3);
  CHECK(m.rnr_retry_count == 7);
  CHECK(m.ack_timeout == 14);    // 4.096 us * 2^14 = 67 ms per transport retry
  CHECK(m.min_rnr_timer == 12);  // 0.64 ms
  CHECK(c.log_level == LogLevel::kInfo);
  CHECK(c.log_target == LogTarget::kAuto);
  CHECK(c.ctl_socket == "/run/rcnet/rcnetd.sock");
  CHECK(c.ctl_group == "rcnet");
}

TEST_CASE("config: the shipped example file parses and matches the defaults", "[config]") {
  const Config ex = parse_ok(example_set());
  const Config min =
      parse_ok(std::string(kMinimal) + "[peers]\nunderlay_prefix = \"10.99.0.0/24\"\n");
  // The example documents the defaults: apart from its addresses it must
  // mean the same as a file that sets nothing.
  CHECK(restart_required(ex, min).empty());
  CHECK(ex.manager.idle_timeout == min.manager.idle_timeout);
  CHECK(ex.manager.last_wqe_timeout == min.manager.last_wqe_timeout);
  CHECK(ex.manager.drain_timeout == min.manager.drain_timeout);
  CHECK(ex.manager.disconnect_timeout == min.manager.disconnect_timeout);
  CHECK(ex.manager.resolve_timeout == min.manager.resolve_timeout);
  CHECK(ex.manager.connect_timeout == min.manager.connect_timeout);
  CHECK(ex.manager.reaper_interval == min.manager.reaper_interval);
  CHECK(ex.manager.max_connections == min.manager.max_connections);
  CHECK(ex.manager.peer_queue_depth == min.manager.peer_queue_depth);
  CHECK(ex.manager.retry_count == min.manager.retry_count);
  CHECK(ex.manager.rnr_retry_count == min.manager.rnr_retry_count);
  CHECK(ex.manager.connect_retries == min.manager.connect_retries);
  CHECK(ex.log_level == min.log_level);
  CHECK(ex.underlay_for(ip("10.100.0.9")) == ip("10.99.0.9"));
}

TEST_CASE("config: duration forms", "[config]") {
  struct Case {
    const char* value;
    Duration want;
  };
  for (const Case& k :
       {Case{"\"500ms\"", 500ms}, Case{"\"2m\"", 120s}, Case{"\"1h\"", 3600s},
        Case{"\"1.5s\"", 1500ms}, Case{"3", 3s}, Case{"0.25", 250ms}, Case{"\"10s\"", 10s}}) {
    const Config c = parse_ok(with(std::string("[timeouts]\nconnect = ") + k.value));
    INFO(k.value);
    CHECK(c.manager.connect_timeout == k.want);
  }
  for (const char* bad : {"\"10\"", "\"10 s\"", "\"s\"", "\"-1s\"", "\"1.2.3s\"", "\"1d\"", "true",
                          "-3", "\"\"", "[1]"}) {
    int line = 0;
    const std::string e = parse_err(with(std::string("[timeouts]\nconnect = ") + bad, &line));
    INFO(bad);
    CHECK(e == "t.toml:" + std::to_string(line) +
                   ": timeouts.connect: expected a duration such as \"10s\" or \"500ms\"");
  }
  for (const char* out_of_range : {"0", "\"0s\"", "\"25h\"", "\"0.1ms\""}) {
    const std::string e = parse_err(with(std::string("[timeouts]\nconnect = ") + out_of_range));
    INFO(out_of_range);
    CHECK_THAT(e, Catch::Contains("timeouts.connect: must be between 1ms and 24h"));
  }
}

TEST_CASE("config: every key rejects a bad type or range, naming file, line and key", "[config]") {
  struct Case {
    std::string block;  // see with()
    const char* key;
    const char* msg;  // a part of the message
  };
  const Case cases[] = {
      {"[node]\nport = 0", "node.port", "out of range 1..65535"},
      {"[node]\nport = 65536", "node.port", "out of range"},
      {"[node]\nport = \"7471\"", "node.port", "expected an integer"},
      {"[tun]\nname = \"a-name-longer-than-15\"", "tun.name", "1..15 characters"},
      {"[tun]\nname = \"\"", "tun.name", "1..15 characters"},
      {"[tun]\nname = \"rc/0\"", "tun.name", "1..15 characters"},
      {"[tun]\nname = 5", "tun.name", "expected a string"},
      {"[tun]\nmtu = 575", "tun.mtu", "out of range 576..65520"},
      {"[tun]\nmtu = 65521", "tun.mtu", "out of range"},
      {"[tun]\nnetns = \"a/b\"", "tun.netns", "namespace name"},
      {"[peers]\nunderlay_prefix = \"10.99.0.0\"", "peers.underlay_prefix", "address/prefix"},
      {"[peers]\nunderlay_prefix = \"10.99.0.0/33\"", "peers.underlay_prefix", "address/prefix"},
      {"[peers]\nallowed = \"10.99.0.0/24\"", "peers.allowed", "expected a list"},
      {"[peers]\nallowed = [\"10.99.0.0/24\", \"bogus\"]", "peers.allowed[1]", "address/prefix"},
      {"[peers]\nallowed = [42]", "peers.allowed[0]", "address/prefix"},
      {"[peers]\nstatic = 1", "peers.static", "[[peers.static]]"},
      {"[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"nope\"",
       "peers.static[0].underlay", "expected an IPv4 or IPv6 address"},
      {"[srq]\nenabled = 1", "srq.enabled", "expected true or false"},
      {"[srq]\nsize = 0", "srq.size", "out of range 1..1048576"},
      {"[srq]\nsize = 1048577", "srq.size", "out of range"},
      {"[srq]\nlimit = -1", "srq.limit", "out of range"},
      {"[srq]\nrq_depth = 0", "srq.rq_depth", "out of range"},
      {"[limits]\nmax_connections = -1", "limits.max_connections", "out of range"},
      {"[limits]\nmax_connections = 2000000", "limits.max_connections", "out of range"},
      {"[limits]\nsend_slots = 0", "limits.send_slots", "out of range"},
      {"[limits]\nqp_send_depth = 3", "limits.qp_send_depth", "out of range"},
      {"[limits]\npeer_queue_depth = 0", "limits.peer_queue_depth", "out of range"},
      {"[limits]\npeer_queue_depth = 1.5", "limits.peer_queue_depth", "expected an integer"},
      {"[timeouts]\nidle = \"x\"", "timeouts.idle", "expected a duration"},
      {"[timeouts]\nlast_wqe = \"x\"", "timeouts.last_wqe", "expected a duration"},
      {"[timeouts]\ndrain = \"x\"", "timeouts.drain", "expected a duration"},
      {"[timeouts]\ndisconnect = \"x\"", "timeouts.disconnect", "expected a duration"},
      {"[timeouts]\nresolve = \"x\"", "timeouts.resolve", "expected a duration"},
      {"[timeouts]\nreaper_interval = \"x\"", "timeouts.reaper_interval", "expected a duration"},
      {"[transport]\nretry_count = 8", "transport.retry_count", "out of range 0..7"},
      {"[transport]\nrnr_retry_count = -1", "transport.rnr_retry_count", "out of range 0..7"},
      {"[transport]\nconnect_retries = 101", "transport.connect_retries", "out of range"},
      {"[transport]\nack_timeout = 32", "transport.ack_timeout", "out of range 0..31"},
      {"[transport]\nack_timeout = -1", "transport.ack_timeout", "out of range 0..31"},
      {"[transport]\nack_timeout = \"67ms\"", "transport.ack_timeout", "expected an integer"},
      {"[transport]\nrnr_timer = 32", "transport.rnr_timer", "out of range 0..31"},
      {"[transport]\nrnr_timer = -1", "transport.rnr_timer", "out of range 0..31"},
      {"[transport]\nrnr_timer = 0.64", "transport.rnr_timer", "expected an integer"},
      {"[log]\nlevel = \"verbose\"", "log.level", "expected one of trace"},
      {"[log]\nlevel = 3", "log.level", "expected a string"},
      {"[log]\ntarget = \"syslog\"", "log.target", "expected one of auto, journal, stderr"},
      {"[ctl]\nsocket = \"relative.sock\"", "ctl.socket", "absolute path"},
      {"[ctl]\nsocket = \"/" + std::string(120, 'x') + "\"", "ctl.socket", "absolute path"},
      {"[ctl]\ngroup = \"\"", "ctl.group", "group name"},
  };
  for (const Case& k : cases) {
    int line = 0;
    const std::string e = parse_err(with(k.block, &line));
    INFO(k.block);
    CHECK(e.rfind("t.toml:" + std::to_string(line) + ": " + k.key + ": ", 0) == 0);
    CHECK_THAT(e, Catch::Contains(k.msg));
  }
}

TEST_CASE("config: a section that is not a table", "[config]") {
  CHECK(parse_err("srq = 1\n" + std::string(kMinimal)) ==
        "t.toml:1: srq: expected a table ([srq])");
}

TEST_CASE("config: bad required keys", "[config]") {
  for (const char* wildcard : {"0.0.0.0", "::"}) {
    CHECK(parse_err("[node]\naddress = \"" + std::string(wildcard) +
                    "\"\n[tun]\naddress = \"10.100.0.1/24\"\n") ==
          "t.toml:2: node.address: must be this node's own underlay address, not a wildcard");
  }
  CHECK(parse_err("[tun]\naddress = \"10.100.0.1/24\"\n") ==
        "t.toml: node.address: required key is missing: set this node's underlay address, or "
        "node.interface = \"ib0\", the interface that holds it");
  CHECK(parse_err("[node]\naddress = \"10.99.0.1\"\n[tun]\nname = \"rc0\"\n") ==
        "t.toml:3: tun.address: required key is missing");
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1\"\n"),
             Catch::StartsWith("t.toml:4: tun.address: expected an address/prefix"));
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.300\"\n[tun]\naddress = \"10.100.0.1/24\"\n"),
             Catch::StartsWith("t.toml:2: node.address: expected an IPv4 or IPv6 address"));
  CHECK_THAT(parse_err(with("[[peers.static]]\noverlay = \"10.100.0.7\"")),
             Catch::Contains("peers.static[0].underlay: required key is missing"));
}

TEST_CASE("config: node.address and a static underlay refuse broadcast and multicast", "[config]") {
  // Such an address parses but cannot be bound (node.address) or connected
  // to (a static peer): without this check it fails only at start-up.
  struct Case {
    const char* address;
    const char* what;
  };
  const Case cases[] = {
      {"255.255.255.255", "the broadcast address"},
      {"224.0.0.1", "a multicast address"},
      {"239.255.255.250", "a multicast address"},
      {"ff02::1", "a multicast address"},
      {"ff00::", "a multicast address"},
      {"ff3e::8000:1", "a multicast address"},
  };
  for (const Case& k : cases) {
    INFO(k.address);
    CHECK(parse_err("[node]\naddress = \"" + std::string(k.address) +
                    "\"\n[tun]\naddress = \"10.100.0.1/24\"\n") ==
          "t.toml:2: node.address: must be this node's own underlay address, not " +
              std::string(k.what));
    int line = 0;
    const std::string text = with(
        "[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"" + std::string(k.address) + "\"",
        &line);
    CHECK(parse_err(text) == "t.toml:" + std::to_string(line) +
                                 ": peers.static[0].underlay: must be the peer's own underlay "
                                 "address, not " +
                                 std::string(k.what));
  }
  // Neighbours of the refused ranges stay valid.
  for (const char* ok :
       {"223.255.255.255", "240.0.0.1", "255.255.255.254", "fe7f::1", "fec0::1", "fd00::1"}) {
    INFO(ok);
    CHECK(parse_ok("[node]\naddress = \"" + std::string(ok) +
                   "\"\n[tun]\naddress = \"10.100.0.1/24\"\n")
              .manager.local.addr == ip(ok));
  }
  // IPv6 link-local: rdma_bind_addr fails with EINVAL without a scope id
  // (seen in the lab: "rdma_bind_addr [fe80::99:1]:7471: Invalid argument").
  for (const char* ll : {"fe80::1", "fe80::99:1", "febf:ffff::1"}) {
    INFO(ll);
    CHECK(parse_err("[node]\naddress = \"" + std::string(ll) +
                    "\"\n[tun]\naddress = \"10.100.0.1/24\"\n") ==
          "t.toml:2: node.address: must not be an IPv6 link-local address (fe80::/10): rdma_cm "
          "needs a scope id for one");
    int line = 0;
    const std::string text =
        with("[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"" + std::string(ll) + "\"",
             &line);
    CHECK(parse_err(text) == "t.toml:" + std::to_string(line) +
                                 ": peers.static[0].underlay: must not be an IPv6 link-local "
                                 "address (fe80::/10): rdma_cm needs a scope id for one");
  }
  // peers.allowed filters REQ sources by prefix; a multicast prefix there
  // matches nobody and harms nothing, so it is left alone.
  CHECK(parse_ok(with("[peers]\nallowed = [\"224.0.0.0/4\"]")).manager.allowed_peers.size() == 1);
}

TEST_CASE("config: transport.ack_timeout and rnr_timer are 0..31, named with their line",
          "[config]") {
  int line = 0;
  std::string text = with("[transport]\nack_timeout = 32", &line);
  CHECK(parse_err(text) ==
        "t.toml:" + std::to_string(line) + ": transport.ack_timeout: 32 is out of range 0..31");
  text = with("[transport]\nretry_count = 3\nrnr_timer = 40", &line);
  CHECK(parse_err(text) ==
        "t.toml:" + std::to_string(line) + ": transport.rnr_timer: 40 is out of range 0..31");
  text = with("[transport]\nrnr_timer = \"1ms\"", &line);
  CHECK(parse_err(text) ==
        "t.toml:" + std::to_string(line) + ": transport.rnr_timer: expected an integer in 0..31");
  const Config c = parse_ok(with("[transport]\nack_timeout = 0\nrnr_timer = 31"));
  CHECK(c.manager.ack_timeout == 0);
  CHECK(c.manager.min_rnr_timer == 31);
  // Both are fixed when the device is opened: a reload cannot change them.
  CHECK(find_key("transport.ack_timeout")->apply == Apply::kRestart);
  CHECK(find_key("transport.rnr_timer")->apply == Apply::kRestart);
  CHECK(find_key("transport.ack_timeout")->unit == "4.096 us * 2^value");
}

TEST_CASE("config: unknown keys and tables are errors with their line", "[config]") {
  int line = 0;
  std::string text = with("[timeouts]\nidel = \"5s\"", &line);
  CHECK(parse_err(text) == "t.toml:" + std::to_string(line) + ": timeouts.idel: unknown key");
  CHECK(parse_err(with("[tunnel]\nname = \"x\"")) == "t.toml:6: tunnel: unknown key");
  text =
      with("[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"10.99.0.7\"\nport = 1", &line);
  CHECK(parse_err(text) ==
        "t.toml:" + std::to_string(line) + ": peers.static[0].port: unknown key");
  CHECK(parse_err("top = 1\n" + std::string(kMinimal)) == "t.toml:1: top: unknown key");
}

TEST_CASE("config: TOML syntax errors report line and column", "[config]") {
  const std::string e = parse_err("[node]\naddress = \"10.99.0.1\"\nport = = 3\n");
  CHECK_THAT(e, Catch::StartsWith("t.toml:3:"));
  CHECK_THAT(e, Catch::Contains("TOML syntax error"));
  // Defining a key twice is a TOML error too, reported where the second is.
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.1\"\naddress = \"10.99.0.2\"\n"),
             Catch::StartsWith("t.toml:3:"));
}

TEST_CASE("config: cross-field validation names the key to fix", "[config]") {
  CHECK_THAT(parse_err(with("[timeouts]\nidle = \"1s\"\nreaper_interval = \"1s\"")),
             Catch::Contains("timeouts.idle: must be longer than timeouts.reaper_interval"));
  int line = 0;
  const std::string text = with("[srq]\nsize = 64\nlimit = 64", &line);
  CHECK_THAT(parse_err(text),
             Catch::StartsWith("t.toml:" + std::to_string(line) + ": srq.limit: must be below"));
  CHECK_THAT(parse_err(with("[peers]\nunderlay_prefix = \"10.99.0.0/25\"")),
             Catch::Contains("peers.underlay_prefix: has 7 host bits, fewer than the 8"));
  CHECK_THAT(parse_err(with("[peers]\nunderlay_prefix = \"fd00::/64\"")),
             Catch::Contains("peers.underlay_prefix: is IPv6 but node.address is IPv4"));
  CHECK_THAT(parse_err(with("[peers]\nallowed = [\"fd00::/64\"]")),
             Catch::Contains("peers.allowed[0]: is IPv6"));
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"fd00:100::1/64\"\n"
                       "mtu = 1000\n"),
             Catch::StartsWith("t.toml:5: tun.mtu: an IPv6 overlay needs at least 1280"));
  CHECK_THAT(
      parse_err(with("[[peers.static]]\noverlay = \"10.101.0.7\"\nunderlay = \"10.99.0.7\"")),
      Catch::Contains("peers.static[0].overlay: 10.101.0.7 is outside tun.address"));
  CHECK_THAT(
      parse_err(with("[[peers.static]]\noverlay = \"10.100.0.1\"\nunderlay = \"10.99.0.7\"")),
      Catch::Contains("peers.static[0].overlay: 10.100.0.1 is this node's own tun.address "
                      "(line "));
  CHECK_THAT(
      parse_err(with("[[peers.static]]\noverlay = \"10.100.0.2\"\nunderlay = \"10.99.0.1\"")),
      Catch::Contains("peers.static[0].underlay: is this node's own address"));
  CHECK_THAT(parse_err(with("[[peers.static]]\noverlay = \"10.100.0.2\"\nunderlay = \"fd00::2\"")),
             Catch::Contains("peers.static[0].underlay: is IPv6 but node.address is IPv4"));
}

TEST_CASE("config: a duplicate static peer names both entries", "[config]") {
  int line = 0;
  const std::string e =
      parse_err(with("[[peers.static]]\noverlay = \"10.100.0.7\"\nunderlay = \"10.99.1.7\"\n"
                     "[[peers.static]]\nunderlay = \"10.99.1.8\"\noverlay = \"10.100.0.7\"",
                     &line));
  CHECK(e == "t.toml:" + std::to_string(line) +
                 ": peers.static[1].overlay: duplicate: 10.100.0.7 is already peers.static[0] "
                 "(line " +
                 std::to_string(line - 4) + ")");
}

TEST_CASE("config: underlay_for maps static peers, then the prefix rule", "[config]") {
  const Config c = parse_ok(kFull);  // 10.100.0.1/24, rule 10.99.0.0/24, statics .7 .8
  CHECK(c.underlay_for(ip("10.100.0.7")) == ip("10.99.1.7"));  // static wins
  CHECK(c.underlay_for(ip("10.100.0.8")) == ip("10.99.1.8"));
  CHECK(c.underlay_for(ip("10.100.0.9")) == ip("10.99.0.9"));
  CHECK(c.underlay_for(ip("10.100.0.254")) == ip("10.99.0.254"));
  CHECK_FALSE(c.underlay_for(ip("10.100.0.0")));    // the subnet
  CHECK_FALSE(c.underlay_for(ip("10.100.0.255")));  // broadcast
  CHECK_FALSE(c.underlay_for(ip("10.101.0.9")));    // outside the overlay prefix
  CHECK_FALSE(c.underlay_for(ip("fd00::9")));
  CHECK_FALSE(c.underlay_for(IpAddr{}));
  const auto ep = c.peer_endpoint_for(ip("10.100.0.9"));
  REQUIRE(ep);
  CHECK(ep->to_string() == "10.99.0.9:7472");

  // Host bits go to the bottom of a wider underlay prefix, whose own host
  // bits (as written) are ignored.
  const Config wide = parse_ok(
      "[node]\naddress = \"172.16.1.1\"\n[tun]\naddress = \"10.100.1.1/22\"\n"
      "[peers]\nunderlay_prefix = \"172.16.5.5/16\"\n");
  CHECK(wide.underlay_for(ip("10.100.3.7")) == ip("172.16.3.7"));
  CHECK(wide.underlay_for(ip("10.100.0.1")) == ip("172.16.0.1"));

  const Config v6 = parse_ok(
      "[node]\naddress = \"fd00:99::1\"\n[tun]\naddress = \"fd00:100::1/112\"\n"
      "[peers]\nunderlay_prefix = \"fd00:99::/64\"\n");
  CHECK(v6.underlay_for(ip("fd00:100::abcd")) == ip("fd00:99::abcd"));
  CHECK(v6.underlay_for(ip("fd00:100::ffff")) == ip("fd00:99::ffff"));  // no broadcast in IPv6
  CHECK_FALSE(v6.underlay_for(ip("fd00:100::1:0")));

  // v4 overlay onto a v6 underlay: allowed, host bits at the bottom.
  const Config mixed = parse_ok(
      "[node]\naddress = \"fd00:99::1\"\n[tun]\naddress = \"10.100.0.1/24\"\n"
      "[peers]\nunderlay_prefix = \"fd00:99::/120\"\n");
  CHECK(mixed.underlay_for(ip("10.100.0.66")) == ip("fd00:99::42"));

  CHECK(parse_ok(with("[peers]\nstatic = []")).static_peers.empty());
  const Config none = parse_ok(kMinimal);
  CHECK_FALSE(none.underlay_for(ip("10.100.0.9")));
}

TEST_CASE("config: log level names", "[config]") {
  for (int i = 0; i <= static_cast<int>(LogLevel::kOff); ++i) {
    const auto l = static_cast<LogLevel>(i);
    CHECK(parse_log_level(to_string(l)) == l);
  }
  CHECK_FALSE(parse_log_level("INFO"));
  CHECK_FALSE(parse_log_level(""));
}

TEST_CASE("config: load reports a missing file with its errno and path", "[config]") {
  auto r = load("/nonexistent/rcnet/rcnetd.toml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == std::errc::no_such_file_or_directory);
  CHECK_THAT(r.error().context, Catch::Contains("/nonexistent/rcnet/rcnetd.toml"));
}

}  // namespace config_config_test
