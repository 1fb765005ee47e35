// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "catch2_compat.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "config/example_toml.hpp"
#include "config/key_docs.hpp"
#include "config/keys.hpp"
#include "parse_helpers.hpp"
#include "sim/fabric.hpp"

namespace config_config_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

namespace {

// The smallest valid file: the two required keys.
constexpr const char* kMinimal = R"(
[node]
address = "10.99.0.1"
[tun]
address = "10.100.0.1/24"
)";

// The task's full example, with values off the defaults where possible.
constexpr const char* kFull = R"([node]
address = "10.99.0.1"
port = 7472
[tun]
name = "rc1"
address = "10.100.0.1/24"
mtu = 9000
netns = "node1"
source_check = false
[peers]
underlay_prefix = "10.99.0.0/24"
allowed = ["10.99.0.0/24", "10.98.0.0/16"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = "10.99.1.7"
[[peers.static]]
overlay = "10.100.0.8"
underlay = "10.99.1.8"
[rails]
mode = "stripe"
holddown = "2s"
[srq]
enabled = false
size = 2048
limit = 100
rq_depth = 32
[limits]
max_connections = 100
max_pending_setups = 100
send_slots = 512
qp_send_depth = 63
peer_queue_depth = 16
[timeouts]
idle = "30s"
last_wqe = "250ms"
drain = 2
disconnect = 1.5
resolve = "3s"
connect = "1m"
reaper_interval = "500ms"
[transport]
retry_count = 5
ack_timeout = 12
rnr_retry_count = 6
rnr_timer = 14
connect_retries = 4
framing = "header"
credits = 24
offload = false
poll_us = 50
[log]
level = "debug"
target = "journal"
[ctl]
socket = "/run/rcnet/test.sock"
group = "wheel"
)";

// kMinimal plus `block` ("[table]\nkey = value..."). A [node] or [tun] block
// goes into kMinimal's table of that name (TOML forbids defining it twice);
// any other block is appended. `last_line` gets the line of the block's last line.
std::string with(const std::string& block, int* last_line = nullptr) {
  std::string text = kMinimal;
  std::string body = block;
  std::size_t at = std::string::npos;
  for (const char* header : {"[node]\n", "[tun]\n"}) {
    if (block.rfind(header, 0) == 0) {
      at = text.find(header) + std::string(header).size();
      body = block.substr(std::string(header).size()) + "\n";
    }
  }
  if (at == std::string::npos) {
    at = text.size();
    body = block + "\n";
  }
  text.insert(at, body);
  if (last_line != nullptr) {
    const auto end = text.begin() + static_cast<std::ptrdiff_t>(at + body.size() - 1);
    *last_line = static_cast<int>(std::count(text.begin(), end, '\n')) + 1;
  }
  return text;
}

// The shipped example with node.address and tun.address set (uncommented):
// a template, it names neither.
std::string example_set() {
  std::string text = kExampleToml;
  for (const char* key : {"\n#address = ", "\n#address = "}) {
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at + 1, 1);
  }
  return text;
}

}  // namespace

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

TEST_CASE("config: restart_required lists only keys that cannot change live", "[config]") {
  const Config a = parse_ok(kFull);
  CHECK(restart_required(a, a).empty());

  // Everything the daemon can apply live changes: nothing to restart.
  Config live = a;
  live.manager.idle_timeout = 99s;
  live.manager.connect_timeout = 1s;
  live.manager.max_connections = 5;
  live.manager.peer_queue_depth = 5;
  live.manager.retry_count = 1;
  live.manager.rnr_retry_count = 1;
  live.manager.connect_retries = 0;
  live.manager.allowed_peers.clear();
  live.static_peers.clear();
  live.underlay_prefix.reset();
  live.log_level = LogLevel::kTrace;
  CHECK(restart_required(a, live).empty());

  // Everything else is named, in file order.
  const Config b = parse_ok(kMinimal);
  const std::vector<std::string> want = {"node.port",
                                         "tun.name",
                                         "tun.mtu",
                                         "tun.netns",
                                         "rails.mode",
                                         "srq.enabled",
                                         "srq.size",
                                         "srq.limit",
                                         "srq.rq_depth",
                                         "limits.send_slots",
                                         "limits.qp_send_depth",
                                         "transport.ack_timeout",
                                         "transport.rnr_timer",
                                         "transport.framing",
                                         "transport.credits",
                                         "transport.offload",
                                         "transport.poll_us",
                                         "log.target",
                                         "ctl.socket",
                                         "ctl.group"};
  CHECK(restart_required(a, b) == want);

  Config addr = a;
  addr.manager.local.addr = ip("10.99.0.2");
  addr.tun_address.length = 16;
  CHECK(restart_required(a, addr) == std::vector<std::string>{"node.address", "tun.address"});
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

// --- The key table ---------------------------------------------------------------------

namespace {

// One change per row to kFull: (row, text in kFull, replacement). Under a
// prefix rule node.address and tun.address cannot change alone (the rule
// must map one to the other, lib/config/sanity.cpp): their rows change
// kFull without its rule.
struct Change {
  const char* key;
  const char* from;
  const char* to;
  bool without_rule = false;
};
constexpr Change kChanges[] = {
    {"node.address", "\naddress = \"10.99.0.1\"", "\naddress = \"10.99.0.3\"", true},
    {"node.port", "\nport = 7472", "\nport = 7473"},
    {"tun.name", "\nname = \"rc1\"", "\nname = \"rc2\""},
    {"tun.address", "\naddress = \"10.100.0.1/24\"", "\naddress = \"10.100.0.2/24\"", true},
    {"tun.mtu", "\nmtu = 9000", "\nmtu = 9001"},
    {"tun.netns", "\nnetns = \"node1\"", "\nnetns = \"node2\""},
    {"tun.source_check", "\nsource_check = false", "\nsource_check = true"},
    {"peers.underlay_prefix", "\nunderlay_prefix = \"10.99.0.0/24\"",
     "\nunderlay_prefix = \"10.99.0.0/16\""},
    {"peers.allowed", "\nallowed = [\"10.99.0.0/24\", \"10.98.0.0/16\"]",
     "\nallowed = [\"10.99.0.0/24\"]"},
    {"peers.static", "\nunderlay = \"10.99.1.8\"", "\nunderlay = \"10.99.1.9\""},
    {"rails.mode", "\nmode = \"stripe\"", "\nmode = \"active-backup\""},
    {"rails.holddown", "\nholddown = \"2s\"", "\nholddown = \"0s\""},
    {"srq.enabled", "\nenabled = false", "\nenabled = true"},
    {"srq.size", "\nsize = 2048", "\nsize = 4096"},
    {"srq.limit", "\nlimit = 100", "\nlimit = 101"},
    {"srq.rq_depth", "\nrq_depth = 32", "\nrq_depth = 33"},
    {"limits.max_connections", "\nmax_connections = 100", "\nmax_connections = 101"},
    {"limits.max_pending_setups", "\nmax_pending_setups = 100", "\nmax_pending_setups = 99"},
    {"limits.send_slots", "\nsend_slots = 512", "\nsend_slots = 511"},
    {"limits.qp_send_depth", "\nqp_send_depth = 63", "\nqp_send_depth = 127"},
    {"limits.peer_queue_depth", "\npeer_queue_depth = 16", "\npeer_queue_depth = 17"},
    {"timeouts.idle", "\nidle = \"30s\"", "\nidle = \"31s\""},
    {"timeouts.last_wqe", "\nlast_wqe = \"250ms\"", "\nlast_wqe = \"251ms\""},
    {"timeouts.drain", "\ndrain = 2", "\ndrain = 3"},
    {"timeouts.disconnect", "\ndisconnect = 1.5", "\ndisconnect = 2.5"},
    {"timeouts.resolve", "\nresolve = \"3s\"", "\nresolve = \"4s\""},
    {"timeouts.connect", "\nconnect = \"1m\"", "\nconnect = \"2m\""},
    {"timeouts.reaper_interval", "\nreaper_interval = \"500ms\"", "\nreaper_interval = \"600ms\""},
    {"transport.retry_count", "\nretry_count = 5", "\nretry_count = 4"},
    {"transport.ack_timeout", "\nack_timeout = 12", "\nack_timeout = 13"},
    {"transport.rnr_retry_count", "\nrnr_retry_count = 6", "\nrnr_retry_count = 5"},
    {"transport.rnr_timer", "\nrnr_timer = 14", "\nrnr_timer = 0"},
    {"transport.connect_retries", "\nconnect_retries = 4", "\nconnect_retries = 3"},
    {"transport.framing", "\nframing = \"header\"", "\nframing = \"immediate\""},
    {"transport.credits", "\ncredits = 24", "\ncredits = 32"},
    {"transport.offload", "\noffload = false", "\noffload = true"},
    {"transport.poll_us", "\npoll_us = 50", "\npoll_us = 0"},
    {"log.level", "\nlevel = \"debug\"", "\nlevel = \"trace\""},
    {"log.target", "\ntarget = \"journal\"", "\ntarget = \"stderr\""},
    {"ctl.socket", "\nsocket = \"/run/rcnet/test.sock\"", "\nsocket = \"/run/rcnet/t2.sock\""},
    {"ctl.group", "\ngroup = \"wheel\"", "\ngroup = \"adm\""},
};

// kFull, without its prefix rule for the rows that ask.
std::string base(const Change& ch) {
  std::string text = kFull;
  if (ch.without_rule) {
    const std::string rule = "underlay_prefix = \"10.99.0.0/24\"\n";
    text.erase(text.find(rule), rule.size());
  }
  return text;
}

// base(ch) with `ch` made; ch.from occurs exactly once.
std::string changed(const Change& ch) {
  std::string text = base(ch);
  const std::size_t at = text.find(ch.from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(ch.from, at + 1) == std::string::npos);
  text.replace(at, std::string(ch.from).size(), ch.to);
  return text;
}

std::set<std::string> table_keys() {
  std::set<std::string> out;
  for (const Key& k : keys())
    out.emplace(k.dotted);
  return out;
}

// What man/rcnetd.toml.5.scd documents: each "*key* = _SYNTAX_ ..." entry
// under a "# [section]" heading (or "*[[peers.static]]*"), whether it is
// marked "(live)" or its section says "All live", and its syntax token.
struct ManEntry {
  bool live = false;
  std::string syntax;  // "_1..65535_" or "" when the entry has none
};

std::map<std::string, ManEntry> man_entries(const std::string& text) {
  std::map<std::string, ManEntry> out;
  std::istringstream in(text);
  std::string line, section;
  bool section_live = false;
  while (std::getline(in, line)) {
    if (line.rfind("# [", 0) == 0 && line.back() == ']') {
      section = line.substr(3, line.size() - 4);
      section_live = false;
    } else if (line.rfind("# ", 0) == 0) {
      section.clear();  // EXAMPLE, SEE ALSO, ...
    } else if (!section.empty() && line.rfind("All live", 0) == 0) {
      section_live = true;
    } else if (!section.empty() && line.size() > 2 && line[0] == '*') {
      const std::size_t end = line.find('*', 1);
      REQUIRE(end != std::string::npos);
      std::string name = line.substr(1, end - 1);
      std::string dotted;
      if (name.rfind("[[", 0) == 0) {
        dotted = name.substr(2, name.size() - 4);
      } else {
        dotted = section + "." + name;
      }
      ManEntry e;
      e.live = section_live || line.find("(live)") != std::string::npos;
      const std::size_t eq = line.find(" = _", end);
      if (eq != std::string::npos)
        e.syntax = line.substr(eq + 3, line.find('_', eq + 4) - eq - 2);
      INFO(line);
      CHECK(out.emplace(dotted, e).second);  // documented once
    }
  }
  return out;
}

// The example with its commented-out keys set: "#key = value" lines (no
// space after the "#", unlike prose) lose their "#".
std::string uncommented(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.size() > 1 && line[0] == '#' && std::islower(static_cast<unsigned char>(line[1])))
      line = line.substr(1);
    out += line + "\n";
  }
  return out;
}

// The keys rcnetd.example.toml writes, "[[peers.static]]" and "#key = "
// lines included even when commented out (shown, not set, in the example).
std::set<std::string> example_keys(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(uncommented(text));
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("# [[", 0) == 0)
      line = line.substr(2);
    if (line.rfind("[[", 0) == 0) {
      section = line.substr(2, line.find("]]") - 2);
      out.insert(section);
    } else if (line.rfind('[', 0) == 0) {
      section = line.substr(1, line.find(']') - 1);
    } else if (!line.empty() && line[0] != '#' && line.find(" = ") != std::string::npos) {
      out.insert(section + "." + line.substr(0, line.find(" = ")));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("config: the key table has one row per key, each in its section", "[config]") {
  std::set<std::string> seen;
  std::vector<std::string> sections;
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(seen.emplace(k.dotted).second);
    CHECK(find_key(k.dotted) == &k);
    CHECK_FALSE(k.section().empty());
    CHECK_FALSE(k.name().empty());
    CHECK(k.dotted == std::string(k.section()) + "." + std::string(k.name()));
    CHECK_FALSE(k.help.empty());
    CHECK(k.min <= k.max);
    CHECK((k.copy != nullptr) == (k.apply == Apply::kLive));  // what config::reload() copies
    // A section's rows are contiguous, so errors come in file order.
    if (sections.empty() || sections.back() != k.section()) {
      CHECK(std::find(sections.begin(), sections.end(), k.section()) == sections.end());
      sections.emplace_back(k.section());
    }
  }
  CHECK(find_key("timeouts.idle_ms") == nullptr);
  CHECK(find_key("timeouts") == nullptr);
}

TEST_CASE("config: every row is documented in rcnetd.toml(5), with its range and reload",
          "[config]") {
  const auto man = man_entries(kManRcnetdToml);
  std::set<std::string> documented;
  for (const auto& [k, e] : man)
    documented.insert(k);
  CHECK(documented == table_keys());
  for (const Key& k : keys()) {
    INFO(k.dotted);
    const auto it = man.find(std::string(k.dotted));
    if (it == man.end())
      continue;
    CHECK(it->second.live == (k.apply == Apply::kLive));
    if (k.max != 0)  // an integer: the man page shows its range
      CHECK(it->second.syntax == "_" + std::to_string(k.min) + ".." + std::to_string(k.max) + "_");
  }
}

// The keys rcnetd(8)'s SIGHUP entry says a reload applies: each "*key*" of
// the paragraph, "*section.\\**" standing for every key of the section.
static std::set<std::string> sighup_keys(const std::string& text) {
  const std::size_t start = text.find("*SIGHUP*");
  REQUIRE(start != std::string::npos);
  const std::string para = text.substr(start + 8, text.find("\n\n", start) - start - 8);
  std::set<std::string> out;
  for (std::size_t b = para.find('*'); b != std::string::npos; b = para.find('*', b)) {
    std::size_t e = para.find('*', b + 1);
    REQUIRE(e != std::string::npos);
    if (para[e - 1] == '\\')  // "*timeouts.\\**": the glob's star
      e = para.find('*', e + 1);
    REQUIRE(e != std::string::npos);
    std::string name = para.substr(b + 1, e - b - 1);
    b = e + 1;
    if (name.ends_with(".\\*")) {
      const std::string section = name.substr(0, name.size() - 2);
      for (const Key& k : keys())
        if (k.dotted.starts_with(section))
          out.emplace(k.dotted);
    } else if (name.find('.') != std::string::npos) {
      out.insert(name);
    }
  }
  return out;
}

TEST_CASE("config: rcnetd(8) names exactly the live rows under SIGHUP", "[config]") {
  std::set<std::string> live;
  for (const Key& k : keys())
    if (k.apply == Apply::kLive)
      live.emplace(k.dotted);
  CHECK(sighup_keys(kManRcnetd) == live);
}

// "a, b, ..., y or z" of `names`.
template <class Names>
static std::string prose_list(const Names& names) {
  std::string out;
  for (std::size_t i = 0; i < std::size(names); ++i)
    out += std::string(i == 0                      ? ""
                       : i + 1 == std::size(names) ? " or "
                                                   : ", ") +
           std::string(names[i]);
  return out;
}

TEST_CASE("config: the man pages and the example spell the log levels and targets of the tables",
          "[config]") {
  const std::string levels = prose_list(log_level_names());
  // rcnetd(8) --log-level and --log-target.
  CHECK(std::string(kManRcnetd).find("\t" + levels + ". Overrides *log.level*") !=
        std::string::npos);
  CHECK(std::string(kManRcnetd).find("\t" + prose_list(kLogTargets) + ". Overrides *log.target*") !=
        std::string::npos);
  // rcnetd.toml(5) and the example: "trace, debug, info (default), ..., off".
  std::string listed = log_level_list();
  const std::string toml_man = kManRcnetdToml;
  std::string with_default = listed;
  with_default.replace(with_default.find("info"), 4, "info (default)");
  CHECK(toml_man.find("\t" + with_default + ".") != std::string::npos);
  CHECK(std::string(kExampleToml).find("# " + listed + ".") != std::string::npos);
  std::string targets = "_";
  for (std::size_t i = 0; i < kLogTargets.size(); ++i)
    targets += std::string(i == 0 ? "" : "|") + std::string(kLogTargets[i]);
  CHECK(toml_man.find("*target* = " + targets + "_") != std::string::npos);
}

TEST_CASE("config: the example file sets every row, to its default", "[config]") {
  CHECK(example_keys(kExampleToml) == table_keys());
  const Config ex = parse_ok(example_set());
  for (const Key& k : keys()) {
    INFO(k.dotted);
    // Required keys have no default; the example shows the prefix rule.
    if (k.required || k.dotted == "peers.underlay_prefix")
      continue;
    CHECK(k.get(ex) == k.default_value());
  }
}

TEST_CASE("config: defaults and values as the file writes them", "[config]") {
  CHECK(find_key("node.address")->default_value() == Value());
  CHECK(find_key("tun.address")->default_value() == Value());
  CHECK(find_key("node.port")->default_value() == Value(std::int64_t{kDefaultPort}));
  CHECK(find_key("tun.name")->default_value() == Value(std::string("rc0")));
  CHECK(find_key("srq.enabled")->default_value() == Value(true));
  CHECK(find_key("timeouts.idle")->default_value() == Value(std::string("5m")));
  CHECK(find_key("peers.underlay_prefix")->default_value() == Value());
  CHECK(find_key("peers.allowed")->default_value() == Value(std::vector<std::string>{}));
  CHECK(find_key("log.level")->default_value() == Value(std::string("info")));
  CHECK(find_key("transport.ack_timeout")->default_value() == Value(std::int64_t{14}));
  CHECK(find_key("transport.rnr_timer")->default_value() == Value(std::int64_t{12}));

  const Config c = parse_ok(kFull);
  CHECK(find_key("node.address")->get(c) == Value(std::string("10.99.0.1")));
  CHECK(find_key("tun.address")->get(c) == Value(std::string("10.100.0.1/24")));
  CHECK(find_key("tun.mtu")->get(c) == Value(std::int64_t{9000}));
  CHECK(find_key("srq.enabled")->get(c) == Value(false));
  CHECK(find_key("timeouts.last_wqe")->get(c) == Value(std::string("250ms")));
  CHECK(find_key("timeouts.disconnect")->get(c) == Value(std::string("1500ms")));
  CHECK(find_key("timeouts.connect")->get(c) == Value(std::string("1m")));
  CHECK(find_key("peers.allowed")->get(c) ==
        Value(std::vector<std::string>{"10.99.0.0/24", "10.98.0.0/16"}));
  CHECK(find_key("peers.static")->get(c) ==
        Value(std::vector<InlineTable>{{{"overlay", "10.100.0.7"}, {"underlay", "10.99.1.7"}},
                                       {{"overlay", "10.100.0.8"}, {"underlay", "10.99.1.8"}}}));
  CHECK(find_key("log.target")->get(c) == Value(std::string("journal")));
}

TEST_CASE("config: format_duration writes the largest exact unit, and parse reads it back",
          "[config]") {
  CHECK(format_duration(1h) == "1h");
  CHECK(format_duration(120s) == "2m");
  CHECK(format_duration(90s) == "90s");
  CHECK(format_duration(1s) == "1s");
  CHECK(format_duration(1500ms) == "1500ms");
  CHECK(format_duration(1ms) == "1ms");
  CHECK(format_duration(std::chrono::microseconds(1000500)) == "1.0005s");
  CHECK(format_duration(std::chrono::microseconds(1500)) == "0.0015s");
  CHECK(format_duration(Duration(0)) == "0s");
  for (Duration d : {Duration(1ms), Duration(999ms), Duration(1500ms), Duration(61s),
                     Duration(3600s), Duration(24h), Duration(90min)}) {
    const Config c = parse_ok(with("[timeouts]\nconnect = \"" + format_duration(d) + "\""));
    INFO(format_duration(d));
    CHECK(c.manager.connect_timeout == d);
  }
}

TEST_CASE("config: restart_required follows each row's reload flag", "[config]") {
  std::set<std::string> seen;
  for (const Change& ch : kChanges) {
    INFO(ch.key);
    const Config a = parse_ok(base(ch));
    const Key* k = find_key(ch.key);
    REQUIRE(k != nullptr);
    seen.insert(ch.key);
    const Config b = parse_ok(changed(ch));
    // Exactly this row changed...
    for (const Key& other : keys()) {
      INFO(other.dotted);
      CHECK((other.get(a) != other.get(b)) == (&other == k));
    }
    // ...and the reload names it iff its row says so.
    const auto want =
        k->apply == Apply::kRestart ? std::vector<std::string>{ch.key} : std::vector<std::string>{};
    CHECK(restart_required(a, b) == want);
    CHECK(restart_required(b, a) == want);
  }
  // node.interface excludes node.address and changes it; a derived
  // tun.address changes with tun.address_from_underlay: both are in
  // tests/unit/config/cluster_test.cpp.
  seen.insert("node.interface");
  seen.insert("tun.address_from_underlay");
  CHECK(seen == table_keys());  // a new row needs its line here
}

namespace {

struct NoSink final : cm::PacketSink {
  void deliver(NodeId, std::span<const std::byte>) override {}
  void send_capacity(bool) override {}
};

struct Reloaded {
  std::vector<std::string> refused;  // config::reload()'s keys that need a restart
  Config running;                    // the daemon's config after the reload
  Config seen;  // `running` with the manager's fields read back from cm::Manager::config()
};

// What Daemon::reload does with `next` over a daemon started with `start`:
// config::reload(), then, when nothing needs a restart, reconfigure() of the
// running manager (one on the simulated fabric, not started: a reload
// touches nothing start() made).
Reloaded reload_manager(const Config& start, const Config& next) {
  sim::Fabric fabric;
  sim::SimNode& node = fabric.add_node(start.manager.local.addr, sim::Profile::kMlx);
  NoSink sink;
  cm::Manager mgr(start.manager, node.seam(), node.timers(), sink);
  Reloaded out{{}, start, {}};
  out.refused = reload(out.running, next);
  if (out.refused.empty())
    mgr.reconfigure(out.running.manager);
  out.seen = out.running;
  out.seen.manager = mgr.config();
  return out;
}

}  // namespace

TEST_CASE("config: a reload applies every live row, to the running manager too", "[config]") {
  for (const Change& ch : kChanges) {
    INFO(ch.key);
    const Config a = parse_ok(base(ch));
    const Key* k = find_key(ch.key);
    REQUIRE(k != nullptr);
    const Config b = parse_ok(changed(ch));
    const Reloaded r = reload_manager(a, b);
    const bool live = k->apply == Apply::kLive;
    CHECK(r.refused == (live ? std::vector<std::string>{} : std::vector<std::string>{ch.key}));
    // The changed row reads the new value back from what runs (the manager
    // for its fields), unless the reload was refused; every other row keeps
    // the running value.
    for (const Key& other : keys()) {
      INFO(other.dotted);
      CHECK(other.get(r.seen) == other.get(&other == k && live ? b : a));
      CHECK(other.get(r.running) == other.get(&other == k && live ? b : a));
    }
  }
}

TEST_CASE("config: limits.max_connections = 0 reloads to 128 without SRQ, 4096 with", "[config]") {
  // kFull: srq.enabled = false, max_connections = 100.
  const Reloaded no_srq = reload_manager(
      parse_ok(kFull), parse_ok(changed({"", "\nmax_connections = 100", "\nmax_connections = 0"})));
  CHECK(no_srq.refused.empty());
  CHECK(no_srq.running.manager.max_connections == 0);  // as the file writes it
  CHECK(no_srq.seen.manager.max_connections == 128);
  const Reloaded srq =
      reload_manager(parse_ok(with("[limits]\nmax_connections = 7")), parse_ok(kMinimal));
  CHECK(srq.refused.empty());
  CHECK(srq.running.manager.max_connections == 0);
  CHECK(srq.seen.manager.max_connections == 4096);
}

}  // namespace config_config_test
