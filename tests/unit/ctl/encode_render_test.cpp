// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "catch2_compat.hpp"

#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "columns.hpp"
#include "test_helpers.hpp"

#include "config/config.hpp"
#include "config/keys.hpp"
#include "ctl/protocol.hpp"
#include "ctl/render.hpp"
#include "ctl/views.hpp"

namespace ctl_encode_render_test {
using namespace rcnet;
using namespace rcnet::ctl;
using rcnet::unit::ip;
using rcnet::unit::lines;
using rcnet::unit::words;

namespace {

cm::Snapshot sample() {
  cm::Snapshot s;
  s.node = node_id_for(ip("10.99.0.1"));
  s.incarnation = 0x00000000deadbeefull;
  s.local = Endpoint{ip("10.99.0.1"), 7471};
  s.device = "rxe0";
  s.mtu = 65520;
  s.send_slots_total = 256;
  s.send_slots_free = 250;

  cm::QpSnapshot a;
  a.id = 1;
  a.peer_node = node_id_for(ip("10.99.0.2"));
  a.peer_addr = Endpoint{ip("10.99.0.2"), 7471};
  a.qpn = 17;
  a.remote_qpn = 4242;
  a.state = cm::ConnState::kEstablished;
  a.active = true;
  a.in_service = true;
  a.offload = true;
  a.time_in_state = 1200ms;
  a.age = 184s;
  a.idle = 350ms;
  a.tx_packets = 10;
  a.tx_bytes = 1572864;  // 1.5 MiB
  a.rx_packets = 7;
  a.rx_bytes = 700;

  cm::QpSnapshot b;
  b.id = 2;
  b.peer_node = node_id_for(ip("10.99.0.3"));
  b.peer_addr = Endpoint{ip("10.99.0.3"), 7471};
  b.qpn = 18;
  b.remote_qpn = 99;
  b.state = cm::ConnState::kAwaitLastWqe;
  b.time_in_state = 800ms;
  b.age = 20s;
  b.idle = 11s;
  b.teardown_reason = "idle";
  s.qps = {a, b};

  cm::PeerSnapshot p;
  p.node = a.peer_node;
  p.underlay = a.peer_addr;
  p.overlay = ip("10.100.0.2");
  p.incarnation = 0x1122334455667788ull;
  p.queue_depth = 3;
  p.conn_id = 1;
  cm::PeerSnapshot q;
  q.node = b.peer_node;
  q.underlay = b.peer_addr;
  s.peers = {p, q};

  s.srq.enabled = true;
  s.srq.size = 512;
  s.srq.posted = 448;
  s.srq.limit = 64;
  s.srq.limit_events = 2;
  s.counters.packets_tx = 10;
  s.counters.last_wqe_timeouts = 4;
  return s;
}

}  // namespace

TEST_CASE("ctl: human durations and sizes", "[ctl]") {
  CHECK(format_duration_ms(0) == "0ms");
  CHECK(format_duration_ms(350) == "350ms");
  CHECK(format_duration_ms(999.4) == "999ms");
  CHECK(format_duration_ms(1000) == "1.0s");
  CHECK(format_duration_ms(1200) == "1.2s");
  CHECK(format_duration_ms(59940) == "59.9s");
  CHECK(format_duration_ms(184000) == "3m04s");
  CHECK(format_duration_ms(7500000) == "2h05m");
  CHECK(format_duration_ms(3 * 86400000.0 + 4 * 3600000.0) == "3d04h");
  CHECK(format_duration_ms(-1) == "-");
  CHECK(format_bytes(0) == "0B");
  CHECK(format_bytes(1023) == "1023B");
  CHECK(format_bytes(1536) == "1.5KiB");
  CHECK(format_bytes(1572864) == "1.5MiB");
  CHECK(format_bytes(1048575) == "1.0MiB");
  CHECK(format_bytes(2ull << 30) == "2.0GiB");
  CHECK(format_bytes(~0ull) == "16.0EiB");
}

TEST_CASE("ctl: status encoder counts QPs by state", "[ctl]") {
  const json j = status_json(sample());
  CHECK(j["node"] == node_id_for(ip("10.99.0.1")));
  CHECK(j["incarnation"] == "00000000deadbeef");
  CHECK(j["local"] == "10.99.0.1:7471");
  CHECK(j["device"] == "rxe0");
  CHECK(j["mtu"] == 65520);
  CHECK(j["peers"] == 2);
  CHECK(j["qps"] == 2);
  CHECK(j["connections"] == 1);
  CHECK(j["established"] == 1);
  CHECK(j["in_teardown"] == 1);
  CHECK(j["states"].size() == static_cast<std::size_t>(cm::kConnStateCount));
  CHECK(j["states"]["ESTABLISHED"] == 1);
  CHECK(j["states"]["AWAIT_LAST_WQE"] == 1);
  CHECK(j["states"]["DRAINING"] == 0);
  CHECK(j["send_slots"]["free"] == 250);
  CHECK(j["srq"]["posted"] == 448);
}

TEST_CASE("ctl: qps encoder carries every QpSnapshot field", "[ctl]") {
  const json j = qps_json(sample());
  REQUIRE(j["qps"].size() == 2);
  const json& a = j["qps"][0];
  CHECK(a["id"] == 1);
  CHECK(a["peer_node"] == node_id_for(ip("10.99.0.2")));
  CHECK(a["peer_addr"] == "10.99.0.2:7471");
  CHECK(a["qpn"] == 17);
  CHECK(a["remote_qpn"] == 4242);
  CHECK(a["state"] == "ESTABLISHED");
  CHECK(a["active"] == true);
  CHECK(a["in_service"] == true);
  CHECK(a["offload"] == true);
  CHECK(j["qps"][1]["offload"] == false);
  CHECK(a["time_in_state_ms"] == 1200.0);
  CHECK(a["age_ms"] == 184000.0);
  CHECK(a["idle_ms"] == 350.0);
  CHECK(a["tx_packets"] == 10);
  CHECK(a["tx_bytes"] == 1572864);
  CHECK(a["rx_packets"] == 7);
  CHECK(a["rx_bytes"] == 700);
  CHECK(a["teardown_reason"] == "");
  CHECK(j["qps"][1]["state"] == "AWAIT_LAST_WQE");
  CHECK(j["qps"][1]["teardown_reason"] == "idle");
  CHECK(j["qps"][1]["in_service"] == false);
}

TEST_CASE("ctl: peers, connections, srq and stats encoders", "[ctl]") {
  const cm::Snapshot s = sample();
  const json peers = peers_json(s)["peers"];
  REQUIRE(peers.size() == 2);
  CHECK(peers[0]["overlay"] == "10.100.0.2");
  CHECK(peers[0]["incarnation"] == "1122334455667788");
  CHECK(peers[0]["state"] == "ESTABLISHED");
  CHECK(peers[0]["queue_depth"] == 3);
  CHECK(peers[1]["overlay"].is_null());
  CHECK(peers[1]["incarnation"].is_null());
  CHECK(peers[1]["state"].is_null());

  const json conns = connections_json(s)["connections"];
  REQUIRE(conns.size() == 1);  // the QP in teardown is not a connection
  CHECK(conns[0]["qpn"] == 17);
  CHECK(conns[0]["overlay"] == "10.100.0.2");

  const json srq = srq_json(s.srq);
  CHECK(srq["enabled"] == true);
  CHECK(srq["size"] == 512);
  CHECK(srq["limit"] == 64);
  CHECK(srq["limit_events"] == 2);

  const json stats = stats_json(s.counters)["counters"];
  std::size_t n = 0;
  s.counters.for_each([&](std::string_view, std::uint64_t, std::string_view) { ++n; });
  REQUIRE(stats.size() == n);
  CHECK(stats[0]["name"] == "connects_started");
  bool found = false;
  for (const json& c : stats) {
    CHECK_FALSE(c["help"].get<std::string>().empty());
    if (c["name"] == "last_wqe_timeouts") {
      found = true;
      CHECK(c["value"] == 4);
    }
  }
  CHECK(found);
}

TEST_CASE("ctl: config encoder mirrors the file", "[ctl]") {
  auto c = config::parse(
      "[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1/24\"\n"
      "[timeouts]\nidle = \"30s\"\n[[peers.static]]\noverlay = \"10.100.0.7\"\n"
      "underlay = \"10.99.1.7\"\n",
      "t.toml");
  REQUIRE(c.ok());
  const json j = config_json(*c);
  // The file's dotted names and syntax (durations as duration strings).
  CHECK(j["node.address"] == "10.99.0.1");
  CHECK(j["node.port"] == 7471);
  CHECK(j["tun.address"] == "10.100.0.1/24");
  CHECK(j["timeouts.idle"] == "30s");
  CHECK(j["timeouts.last_wqe"] == "1s");
  CHECK(j["peers.static"][0]["underlay"] == "10.99.1.7");
  CHECK(j["peers.underlay_prefix"].is_null());
  CHECK(j["peers.allowed"] == json::array());
  CHECK(j["srq.enabled"] == true);
  CHECK(j["log.level"] == "info");
  // One member per row of the key table, nothing else.
  std::set<std::string> names, rows;
  for (auto it = j.begin(); it != j.end(); ++it)
    names.insert(it.key());
  for (const config::Key& k : config::keys())
    rows.emplace(k.dotted);
  CHECK(names == rows);

  const std::string text = render_config(j);
  CHECK_THAT(text, Catch::Contains("\ntimeouts.idle = \"30s\" "));
  CHECK_THAT(text,
             Catch::Contains(
                 "\npeers.static = [{ overlay = \"10.100.0.7\", underlay = \"10.99.1.7\" }] "));
  CHECK_THAT(text, Catch::Contains("\n# peers.underlay_prefix is not set"));
  CHECK_THAT(text, Catch::StartsWith("node.address = \"10.99.0.1\" "));  // the table's order
}

TEST_CASE("ctl: config lines say the unit and what a reload does", "[ctl]") {
  auto c = config::parse("[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1/24\"\n",
                         "t.toml");
  REQUIRE(c.ok());
  json j = config_json(*c);
  j["future.key"] = 5;  // from a newer rcnetd: shown last, without a comment
  const std::string text = render_config(j);
  std::istringstream in(text);
  std::string line, last;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    last = line;
    const auto key = line.substr(0, line.find(" = "));
    const config::Key* k = config::find_key(key);
    if (k == nullptr)
      continue;
    INFO(line);
    const std::string want = (k->unit.empty() ? "" : std::string(k->unit) + ", ") +
                             (k->apply == config::Apply::kLive ? "live" : "needs a restart");
    CHECK_THAT(line, Catch::EndsWith("  # " + want));
  }
  CHECK(n == config::keys().size() + 1);
  CHECK(last == "future.key = 5");
  CHECK_THAT(text, Catch::Contains("\ntun.mtu = 65520 "));
  CHECK_THAT(text, Catch::Contains("  # bytes, needs a restart\n"));
}

TEST_CASE("ctl: the rendered config parses back to the same configuration", "[ctl]") {
  auto a = config::parse(R"([node]
address = "fd00:99::1"
port = 7472
[tun]
name = "rc1"
address = "10.100.0.1/24"
mtu = 9000
netns = "ns \"q\""
[peers]
underlay_prefix = "fd00:99::/120"
allowed = ["fd00:99::/64", "fd00:98::5"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = "fd00:99::7"
[srq]
enabled = false
limit = 10
[timeouts]
idle = "90s"
last_wqe = 0.25
drain = "1500ms"
connect = "2m"
[log]
level = "warn"
)",
                         "t.toml");
  REQUIRE(a.ok());
  const std::string text = render_config(config_json(*a));
  INFO(text);
  auto b = config::parse(text, "rendered");
  REQUIRE(b.ok());
  for (const config::Key& k : config::keys()) {
    INFO(k.dotted);
    CHECK(k.get(*a) == k.get(*b));
  }
  CHECK(config::restart_required(*a, *b).empty());
}

TEST_CASE("ctl: qps renderer prints the columns and values", "[ctl]") {
  const auto out = lines(render_qps(qps_json(sample())));
  REQUIRE(out.size() == 3);
  CHECK(words(out[0]) == std::vector<std::string>{"PEER", "RAIL", "ADDR", "QPN", "RQPN", "STATE",
                                                  "GSO", "IN-STATE", "AGE", "IDLE", "TX", "RX",
                                                  "REASON"});
  CHECK(words(out[1]) == std::vector<std::string>{std::to_string(node_id_for(ip("10.99.0.2"))), "0",
                                                  "10.99.0.2:7471", "17", "4242", "ESTABLISHED",
                                                  "yes", "1.2s", "3m04s", "350ms", "10/1.5MiB",
                                                  "7/700B", "-"});
  CHECK(words(out[2]) == std::vector<std::string>{std::to_string(node_id_for(ip("10.99.0.3"))), "0",
                                                  "10.99.0.3:7471", "18", "99", "AWAIT_LAST_WQE",
                                                  "no", "800ms", "20.0s", "11.0s", "0/0B", "0/0B",
                                                  "idle"});
  // Aligned: every column starts at the same offset on every line.
  CHECK(out[1].find("10.99.0.2") == out[0].find("ADDR"));
  CHECK(out[2].find("AWAIT_LAST_WQE") == out[0].find("STATE"));
  for (const auto& l : out)
    CHECK(l.back() != ' ');
}

TEST_CASE("ctl: other renderers", "[ctl]") {
  const cm::Snapshot s = sample();

  const std::string status = render_status(status_json(s));
  CHECK_THAT(status, Catch::Contains("device rxe0"));
  CHECK_THAT(status, Catch::Contains("incarnation 00000000deadbeef"));
  CHECK_THAT(status, Catch::Contains("send slots 250/256 free"));
  CHECK_THAT(status, Catch::Contains("srq 448/512 posted"));
  CHECK_THAT(status, Catch::Contains("offload no"));
  CHECK_THAT(status, Catch::Contains("AWAIT_LAST_WQE 1"));
  CHECK_THAT(status, !Catch::Contains("DRAINING"));  // zero states are left out
  CHECK_THAT(status, !Catch::Contains("removed"));
  CHECK(status_json(s)["device_removed"] == false);

  cm::Snapshot gone = s;
  gone.device_removed = true;
  CHECK(status_json(gone)["device_removed"] == true);
  CHECK_THAT(render_status(status_json(gone)), Catch::Contains("device rxe0 (removed)"));

  // InfiniBand and RoCE: no transport line. iWARP: framing, credits and
  // the connection limit they leave (docs/design.md "Providers").
  CHECK_THAT(status, !Catch::Contains("transport"));
  cm::Snapshot iw = s;
  iw.transport = "iwarp";
  iw.header = true;
  iw.credits = 16;
  iw.max_connections = 31;
  CHECK(status_json(iw)["framing"] == "header");
  CHECK_THAT(render_status(status_json(iw)),
             Catch::Contains("transport iwarp  framing header  credits 16  max connections 31"));

  const auto peers = lines(render_peers(peers_json(s)));
  REQUIRE(peers.size() == 3);
  CHECK(words(peers[0]) == test::kPeersColumns);
  CHECK(words(peers[1])[3] == "10.100.0.2");
  CHECK(words(peers[2])[3] == "-");

  // Why a peer is unreachable: its last attempt, the result and when, the next retry.
  cm::Snapshot failing = s;
  failing.peers[1].attempts = 2;
  failing.peers[1].since_attempt = std::chrono::milliseconds(3200);
  failing.peers[1].last_result = "REJ full";
  failing.peers[1].since_result = std::chrono::milliseconds(3100);
  failing.peers[1].retry_in = std::chrono::milliseconds(1500);
  const json fj = peers_json(failing);
  CHECK(fj["peers"][1]["attempts"] == 2);
  CHECK(fj["peers"][1]["last_attempt_ms"] == 3200.0);
  CHECK(fj["peers"][1]["last_result"] == "REJ full");
  CHECK(fj["peers"][1]["next_retry_ms"] == 1500.0);
  CHECK(fj["peers"][0]["last_result"].is_null());
  CHECK(fj["peers"][0]["next_retry_ms"].is_null());
  const auto fl = lines(render_peers(fj));
  CHECK_THAT(fl[2], Catch::Contains("3.2s ago  REJ full (3.1s ago)  in 1.5s"));

  const auto conns = lines(render_connections(connections_json(s)));
  REQUIRE(conns.size() == 2);
  CHECK(words(conns[1])[3] == "10.100.0.2");
  CHECK(words(conns[1])[7] == "-");    // AUTH: auth.mode off
  CHECK(words(conns[1])[8] == "yes");  // GSO: offload negotiated
  CHECK(words(conns[1])[12] == "10/1.5MiB");
  // The peer proof's column: the key a connection was proven with.
  cm::Snapshot proven = s;
  proven.qps[0].auth = "proven";
  proven.qps[0].auth_key_id = 2;
  const json pj = connections_json(proven);
  CHECK(pj["connections"][0]["auth"] == "proven");
  CHECK(pj["connections"][0]["key_id"] == 2);
  CHECK(words(lines(render_connections(pj))[1])[7] == "proven:2");
  proven.qps[0].auth = "awaiting";
  proven.qps[0].auth_key_id = 0;
  CHECK(words(lines(render_connections(connections_json(proven)))[1])[7] == "awaiting");

  const auto srq = lines(render_srq(srq_json(s.srq)));
  REQUIRE(srq.size() == 2);
  CHECK(words(srq[1]) == std::vector<std::string>{"yes", "512", "448", "87%", "64", "2"});

  const auto stats = lines(render_stats(stats_json(s.counters)));
  CHECK(words(stats[0]) == std::vector<std::string>{"NAME", "VALUE", "HELP"});
  bool found = false;
  for (const auto& l : stats) {
    const auto w = words(l);
    if (w[0] == "last_wqe_timeouts") {
      found = true;
      CHECK(w[1] == "4");
      CHECK_THAT(l, Catch::Contains("drain WR posted without the event"));
    }
  }
  CHECK(found);

  // The daemon has 17 and 40, the kernel 17 and 21.
  const AuditResult mismatch{
      .kernel_only = {21}, .daemon_only = {40}, .daemon_count = 2, .kernel_count = 2};
  const auto audit = lines(render_audit(audit_json(mismatch)));
  REQUIRE(audit.size() == 3);
  CHECK_THAT(audit[0], Catch::StartsWith("audit MISMATCH"));
  CHECK_THAT(audit[1], Catch::StartsWith("kernel only") && Catch::EndsWith(" 21"));
  CHECK_THAT(audit[2], Catch::StartsWith("daemon only") && Catch::EndsWith(" 40"));
  const AuditResult agree{
      .kernel_only = {}, .daemon_only = {}, .daemon_count = 2, .kernel_count = 2};
  CHECK_THAT(render_audit(audit_json(agree)), Catch::StartsWith("audit ok"));

  CHECK(render(Command::kReap, reap_json(1)) == "reaped 1 connection\n");
  CHECK(render(Command::kReap, reap_json(3)) == "reaped 3 connections\n");
  CHECK(render(Command::kLogLevel,
               log_level_json(config::LogLevel::kInfo, config::LogLevel::kDebug)) ==
        "log level info -> debug\n");
  CHECK(render(Command::kDisconnect, disconnect_json(7)) == "disconnecting peer 7\n");
}

TEST_CASE("ctl: renderers survive hostile data", "[ctl]") {
  const json bad[] = {json(nullptr), json(5), json::array({1, 2}),
                      json::parse(R"({"qps":[1,{"qpn":"x","age_ms":-3}],"peers":{"a":1},
                                      "counters":[null],"states":[],"srq":7,
                                      "send_slots":"no"})")};
  for (const json& j : bad) {
    for (const CommandInfo& row : kCommands) {
      CHECK_NOTHROW(render(row.cmd, j));
    }
  }
  const auto out = lines(render_qps(bad[3]));
  REQUIRE(out.size() == 3);
  CHECK(words(out[2])[3] == "x");
  CHECK(words(out[2])[8] == "-");  // a negative age prints as "-"
}

TEST_CASE("ctl: with both families on the TUN, peers, connections and route get show both",
          "[ctl][dual]") {
  config::Config c;
  c.tun_address = *IpPrefix::parse("10.100.0.1/24");
  c.tun_address6 = IpPrefix::parse("fd00:100::1/120");
  c.underlay_prefix = IpPrefix::parse("10.99.0.0/24");
  c.rails[0].underlay_prefix = c.underlay_prefix;
  c.manager.local = Endpoint{ip("10.99.0.1"), 7471};
  c.rails[0].local = c.manager.local;
  const cm::Snapshot s = sample();

  const json peers = peers_json(s, &c)["peers"];
  REQUIRE(peers.size() == 2);
  CHECK(peers[0]["overlay"] == "10.100.0.2");  // what its private data said
  CHECK(peers[0]["overlays"] == json::array({"10.100.0.2", "fd00:100::2"}));
  // Not said yet (no private data): both by the mapping.
  CHECK(peers[1]["overlays"] == json::array({"10.100.0.3", "fd00:100::3"}));
  CHECK(peers_json(s)["peers"][0]["overlays"] == json::array({"10.100.0.2"}));
  const auto table = lines(render_peers(peers_json(s, &c)));
  CHECK(words(table[1])[3] == "10.100.0.2,fd00:100::2");

  const json conns = connections_json(s, &c)["connections"];
  REQUIRE(conns.size() == 1);
  CHECK(conns[0]["overlays"] == json::array({"10.100.0.2", "fd00:100::2"}));
  CHECK(words(lines(render_connections(connections_json(s, &c)))[1])[3] ==
        "10.100.0.2,fd00:100::2");

  // route get in either family: the same peer, both of its addresses.
  const json r6 = route_json(ip("fd00:100::7"), c, cm::Snapshot{});
  CHECK(r6["node"] == node_id_for(ip("10.99.0.7")));
  CHECK(r6["overlay"] == "fd00:100::7");
  CHECK(r6["overlays"] == json::array({"10.100.0.7", "fd00:100::7"}));
  CHECK(r6["rails"][0]["underlay"] == "10.99.0.7:7471");
  CHECK(route_json(ip("10.100.0.7"), c, cm::Snapshot{})["node"] == r6["node"]);
  CHECK_THAT(render_route(r6), Catch::Contains("fd00:100::7 via peer " +
                                               std::to_string(node_id_for(ip("10.99.0.7"))) +
                                               " overlay 10.100.0.7,fd00:100::7"));
  CHECK(route_json(ip("fd00:100::1"), c, cm::Snapshot{})["reason"] ==
        "fd00:100::1 is this node's own overlay address (tun.address)");
  CHECK(route_json(ip("fd00:200::1"), c, cm::Snapshot{})["reason"] ==
        "not on the overlay (tun.address 10.100.0.1/24, fd00:100::1/120): the kernel does not "
        "route it into rc0");
}

}  // namespace ctl_encode_render_test
