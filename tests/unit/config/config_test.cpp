// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "config/config.hpp"
#include "config/example_toml.hpp"

using namespace rcnet;
using namespace rcnet::config;

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
[peers]
underlay_prefix = "10.99.0.0/24"
allowed = ["10.99.0.0/24", "10.98.0.0/16"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = "10.99.1.7"
[[peers.static]]
overlay = "10.100.0.8"
underlay = "10.99.1.8"
[srq]
enabled = false
size = 2048
limit = 100
rq_depth = 32
[limits]
max_connections = 100
send_slots = 512
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
rnr_retry_count = 6
connect_retries = 4
[log]
level = "debug"
target = "journal"
[ctl]
socket = "/run/rcnet/test.sock"
group = "wheel"
)";

IpAddr ip(const char* s) {
  auto a = IpAddr::parse(s);
  REQUIRE(a);
  return *a;
}

Config parse_ok(const std::string& text) {
  auto r = parse(text, "t.toml");
  INFO(text);
  if (!r)
    FAIL(r.error().context);
  return std::move(r).value();
}

std::string parse_err(const std::string& text) {
  auto r = parse(text, "t.toml");
  INFO(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == std::errc::invalid_argument);
  return r.error().context;
}

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
  REQUIRE(c.underlay_prefix);
  CHECK(c.underlay_prefix->to_string() == "10.99.0.0/24");
  REQUIRE(m.allowed_peers.size() == 2);
  CHECK(m.allowed_peers[1].to_string() == "10.98.0.0/16");
  REQUIRE(c.static_peers.size() == 2);
  CHECK(c.static_peers[0] == StaticPeer{ip("10.100.0.7"), ip("10.99.1.7")});
  CHECK(c.static_peers[1] == StaticPeer{ip("10.100.0.8"), ip("10.99.1.8")});
  CHECK_FALSE(m.use_srq);
  CHECK(m.srq_size == 2048);
  CHECK(m.srq_limit == 100);
  CHECK(m.rq_depth == 32);
  CHECK(m.max_connections == 100);
  CHECK(m.send_slots == 512);
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
  CHECK(m.use_srq);
  CHECK(m.srq_size == def.srq_size);
  CHECK(m.srq_limit == 0);
  CHECK(m.send_slots == def.send_slots);
  CHECK(m.max_connections == 0);
  CHECK(m.idle_timeout == 10s);
  CHECK(m.reaper_interval == 1s);
  CHECK(m.retry_count == 3);
  CHECK(m.rnr_retry_count == 7);
  CHECK(c.log_level == LogLevel::kInfo);
  CHECK(c.log_target == LogTarget::kAuto);
  CHECK(c.ctl_socket == "/run/rcnet/rcnetd.sock");
  CHECK(c.ctl_group == "rcnet");
}

TEST_CASE("config: the shipped example file parses and matches the defaults", "[config]") {
  const Config ex = parse_ok(kExampleToml);
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
        "t.toml: node.address: required key is missing");
  CHECK(parse_err("[node]\naddress = \"10.99.0.1\"\n[tun]\nname = \"rc0\"\n") ==
        "t.toml:3: tun.address: required key is missing");
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1\"\n"),
             Catch::StartsWith("t.toml:4: tun.address: expected an address/prefix"));
  CHECK_THAT(parse_err("[node]\naddress = \"10.99.0.300\"\n[tun]\naddress = \"10.100.0.1/24\"\n"),
             Catch::StartsWith("t.toml:2: node.address: expected an IPv4 or IPv6 address"));
  CHECK_THAT(parse_err(with("[[peers.static]]\noverlay = \"10.100.0.7\"")),
             Catch::Contains("peers.static[0].underlay: required key is missing"));
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
      Catch::Contains("peers.static[0].overlay: is this node's own tun.address"));
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
      "[node]\naddress = \"172.16.0.1\"\n[tun]\naddress = \"10.100.1.1/22\"\n"
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
  const std::vector<std::string> want = {
      "node.port", "tun.name",     "tun.mtu",           "tun.netns",  "srq.enabled", "srq.size",
      "srq.limit", "srq.rq_depth", "limits.send_slots", "log.target", "ctl.socket",  "ctl.group"};
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
