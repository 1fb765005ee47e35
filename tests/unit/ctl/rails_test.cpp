// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The rails in the ctl views and rcnetctl's renderers: the rails command
// (JSON and table), the one-rail fallback of a snapshot without rails, the
// rail of each peer, connection and QP, the rail and failover events of the
// monitor, and the rails' Prometheus metrics.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "columns.hpp"
#include "ctl/protocol.hpp"
#include "ctl/render.hpp"
#include "ctl/views.hpp"
#include "test_helpers.hpp"

namespace ctl_rails_test {
using namespace rcnet;
using namespace rcnet::ctl;
using rcnet::unit::ip;
using rcnet::unit::lines;
using rcnet::unit::words;

namespace {

const NodeId kPeerA = node_id_for(ip("10.99.0.2"));
const NodeId kPeerB = node_id_for(ip("10.99.0.3"));

// Node 10.99.0.1 with rail 0 (10.99.0.1 on rxe0) up and rail 1 (10.99.1.1
// on rxe1) back from a port error, in holddown. Peer A has a link on each
// rail (both connection id 1: ids are unique per rail only), the one on
// rail 0 carrying; peer B has no connection.
cm::Snapshot two_rails() {
  cm::Snapshot s;
  s.node = node_id_for(ip("10.99.0.1"));
  s.local = Endpoint{ip("10.99.0.1"), 7471};
  s.device = "rxe0";
  s.rails_mode = "active-backup";
  s.peers_without_redundancy = 1;

  cm::RailSnapshot r0;
  r0.index = 0;
  r0.local = Endpoint{ip("10.99.0.1"), 7471};
  r0.device = "rxe0";
  r0.port = 1;
  r0.state = cm::RailState::kUp;
  r0.since_change = 184s;
  r0.links = 1;
  r0.carrying = 1;
  r0.tx_packets = 10;
  r0.tx_bytes = 1572864;  // 1.5 MiB
  r0.rx_packets = 7;
  r0.rx_bytes = 700;
  cm::RailSnapshot r1;
  r1.index = 1;
  r1.local = Endpoint{ip("10.99.1.1"), 7471};
  r1.device = "rxe1";
  r1.port = 2;
  r1.state = cm::RailState::kHolddown;
  r1.cause = "IBV_EVENT_PORT_ACTIVE";
  r1.since_change = 1200ms;
  r1.holddown = 5s;
  r1.flaps = 2;
  r1.links = 1;
  r1.carrying = 0;
  r1.tx_packets = 3;
  r1.tx_bytes = 2048;
  r1.removed_by = "async event";
  r1.readopted_by = "netlink monitor";
  s.rails = {r0, r1};

  cm::QpSnapshot a0;
  a0.id = 1;
  a0.rail = 0;
  a0.peer_node = kPeerA;
  a0.peer_addr = Endpoint{ip("10.99.0.2"), 7471};
  a0.qpn = 17;
  a0.remote_qpn = 4242;
  a0.state = cm::ConnState::kEstablished;
  a0.in_service = true;
  cm::QpSnapshot a1 = a0;
  a1.rail = 1;
  a1.peer_addr = Endpoint{ip("10.99.1.2"), 7471};
  a1.qpn = 33;
  a1.remote_qpn = 4300;
  a1.state = cm::ConnState::kConnecting;
  s.qps = {a0, a1};

  cm::PeerSnapshot pa0;
  pa0.node = kPeerA;
  pa0.rail = 0;
  pa0.underlay = a0.peer_addr;
  pa0.overlay = ip("10.100.0.2");
  pa0.conn_id = 1;
  pa0.carries = true;
  cm::PeerSnapshot pa1 = pa0;
  pa1.rail = 1;
  pa1.underlay = a1.peer_addr;
  pa1.carries = false;
  cm::PeerSnapshot pb;
  pb.node = kPeerB;
  pb.underlay = Endpoint{ip("10.99.0.3"), 7471};
  s.peers = {pa0, pa1, pb};
  return s;
}

// A bare Manager's snapshot: no rails.
cm::Snapshot one_rail() {
  cm::Snapshot s;
  s.node = node_id_for(ip("10.99.0.1"));
  s.local = Endpoint{ip("10.99.0.1"), 7471};
  s.device = "rxe0";
  cm::QpSnapshot q;
  q.id = 4;
  q.peer_node = kPeerA;
  q.peer_addr = Endpoint{ip("10.99.0.2"), 7471};
  q.qpn = 21;
  q.state = cm::ConnState::kEstablished;
  q.in_service = true;
  cm::QpSnapshot gone = q;
  gone.id = 3;
  gone.qpn = 20;
  gone.state = cm::ConnState::kDraining;
  gone.in_service = false;
  s.qps = {gone, q};
  cm::PeerSnapshot p;
  p.node = kPeerA;
  p.underlay = q.peer_addr;
  p.conn_id = 4;
  cm::PeerSnapshot idle;
  idle.node = kPeerB;
  idle.underlay = Endpoint{ip("10.99.0.3"), 7471};
  s.peers = {p, idle};
  s.counters.packets_tx = 5;
  s.counters.bytes_tx = 3072;
  s.counters.packets_rx = 6;
  s.counters.bytes_rx = 4096;
  return s;
}

}  // namespace

TEST_CASE("ctl rails: JSON of two rails, every field by its name", "[ctl][rails]") {
  const json j = rails_json(two_rails());
  CHECK(j["mode"] == "active-backup");
  CHECK(j["peers_without_redundancy"] == 1);
  REQUIRE(j["rails"].size() == 2);
  json want0 = {
      {"rail", 0},          {"address", "10.99.0.1"},
      {"port", 7471},       {"device", "rxe0"},
      {"device_port", 1},   {"state", "up"},
      {"cause", ""},        {"since_change_ms", 184000.0},
      {"holddown_ms", 0.0}, {"flaps", 0},
      {"links", 1},         {"carrying", 1},
      {"tx_packets", 10},   {"tx_bytes", 1572864},
      {"rx_packets", 7},    {"rx_bytes", 700},
  };
  want0["removed_by"] = nullptr;  // no device loss since start
  want0["readopted_by"] = nullptr;
  CHECK(j["rails"][0] == want0);
  const json want1 = {
      {"rail", 1},
      {"address", "10.99.1.1"},
      {"port", 7471},
      {"device", "rxe1"},
      {"device_port", 2},
      {"state", "holddown"},
      {"cause", "IBV_EVENT_PORT_ACTIVE"},
      {"since_change_ms", 1200.0},
      {"holddown_ms", 5000.0},
      {"flaps", 2},
      {"links", 1},
      {"carrying", 0},
      {"tx_packets", 3},
      {"tx_bytes", 2048},
      {"rx_packets", 0},
      {"rx_bytes", 0},
      {"removed_by", "async event"},
      {"readopted_by", "netlink monitor"},
  };
  CHECK(j["rails"][1] == want1);

  // status carries the same rails, for the one-glance line and Prometheus.
  const json st = status_json(two_rails());
  CHECK(st["rails"] == j["rails"]);
  CHECK(st["rails_mode"] == "active-backup");
  CHECK(st["peers_without_redundancy"] == 1);
  // Three per-rail entries of two peers; a link per peer and rail.
  CHECK(st["peers"] == 2);
  CHECK(st["connections"] == 2);
}

TEST_CASE("ctl rails: the table of two rails", "[ctl][rails]") {
  const std::string out = render_rails(rails_json(two_rails()));
  CHECK(out ==
        "mode active-backup\n"
        "RAIL  ADDRESS         DEVICE/PORT  STATE     LINKS  CARRYING      TX    RX  CHANGED  "
        "LOSS/RETURN    CAUSE\n"
        "   0  10.99.0.1:7471  rxe0/1       up            1         1  1.5MiB  700B    3m04s  "
        "-/-            -\n"
        "   1  10.99.1.1:7471  rxe1/2       holddown      1         0  2.0KiB    0B     1.2s  "
        "async/monitor  IBV_EVENT_PORT_ACTIVE\n"
        "peers without a redundant link: 1\n");
  CHECK(render(Command::kRails, rails_json(two_rails())) == out);

  // IPv6 in brackets; a removed rail has no device.
  cm::Snapshot s = two_rails();
  s.rails[1].local = Endpoint{ip("fd00:99::1"), 7471};
  s.rails[1].device.clear();
  s.rails[1].state = cm::RailState::kRemoved;
  const auto row = words(lines(render_rails(rails_json(s)))[3]);
  REQUIRE(row.size() >= 5);
  CHECK(row[1] == "[fd00:99::1]:7471");
  CHECK(row[2] == "-");
  CHECK(row[3] == "removed");
}

TEST_CASE("ctl rails: a snapshot without rails is one rail of its own", "[ctl][rails]") {
  const cm::Snapshot s = one_rail();
  const json j = rails_json(s);
  CHECK(j["mode"] == "active-backup");
  CHECK(j["peers_without_redundancy"] == 0);
  REQUIRE(j["rails"].size() == 1);
  json want = {
      {"rail", 0},          {"address", "10.99.0.1"},
      {"port", 7471},       {"device", "rxe0"},
      {"device_port", 1},   {"state", "up"},
      {"cause", ""},        {"since_change_ms", nullptr},
      {"holddown_ms", 0.0}, {"flaps", 0},
      {"links", 1},         {"carrying", 1},
      {"tx_packets", 5},    {"tx_bytes", 3072},
      {"rx_packets", 6},    {"rx_bytes", 4096},
  };
  want["removed_by"] = nullptr;
  want["readopted_by"] = nullptr;
  CHECK(j["rails"][0] == want);
  CHECK(lines(render_rails(j)) ==
        std::vector<std::string>{
            "mode active-backup",
            "RAIL  ADDRESS         DEVICE/PORT  STATE  LINKS  CARRYING      TX      RX  CHANGED  "
            "LOSS/RETURN  CAUSE",
            "   0  10.99.0.1:7471  rxe0/1       up         1         1  3.0KiB  4.0KiB        -  "
            "-/-          -",
            "peers without a redundant link: 0"});

  cm::Snapshot removed = s;
  removed.device_removed = true;
  CHECK(rails_json(removed)["rails"][0]["state"] == "removed");

  // Its one link carries the peer's traffic; a peer without one carries nothing.
  const json peers = peers_json(s)["peers"];
  REQUIRE(peers.size() == 2);
  CHECK(peers[0]["rail"] == 0);
  CHECK(peers[0]["carries"] == true);
  CHECK(peers[0]["state"] == "ESTABLISHED");
  CHECK(peers[1]["carries"] == false);
  CHECK_THAT(
      render_status(status_json(s)),
      Catch::Contains("\nrails: 0 up  mode active-backup  peers without a redundant link 0\n"));
}

TEST_CASE("ctl rails: peers, connections and QPs name their rail", "[ctl][rails]") {
  const cm::Snapshot s = two_rails();
  const json peers = peers_json(s)["peers"];
  REQUIRE(peers.size() == 3);
  CHECK(peers[0]["rail"] == 0);
  CHECK(peers[0]["underlay"] == "10.99.0.2:7471");
  CHECK(peers[0]["carries"] == true);
  CHECK(peers[0]["state"] == "ESTABLISHED");  // rail 0's connection 1, not rail 1's
  CHECK(peers[1]["rail"] == 1);
  CHECK(peers[1]["carries"] == false);
  CHECK(peers[1]["state"] == "CONNECTING");
  CHECK(peers[2]["carries"] == false);
  CHECK(peers[2]["state"].is_null());

  const auto pt = lines(render_peers(peers_json(s)));
  REQUIRE(pt.size() == 4);
  CHECK(words(pt[0]) == test::kPeersColumns);
  CHECK(words(pt[1]) == std::vector<std::string>{std::to_string(kPeerA), "0", "10.99.0.2:7471",
                                                 "10.100.0.2", "-", "ESTABLISHED", "-", "0", "1",
                                                 "-", "-", "-", "*"});
  CHECK(words(pt[2]) == std::vector<std::string>{std::to_string(kPeerA), "1", "10.99.1.2:7471",
                                                 "10.100.0.2", "-", "CONNECTING", "-", "0", "1",
                                                 "-", "-", "-"});
  CHECK(pt[1].find('*') == pt[0].find("CARRIES"));

  const json qps = qps_json(s)["qps"];
  REQUIRE(qps.size() == 2);
  CHECK(qps[0]["rail"] == 0);
  CHECK(qps[1]["rail"] == 1);
  const auto qt = lines(render_qps(qps_json(s)));
  REQUIRE(qt.size() == 3);
  CHECK(words(qt[0])[1] == "RAIL");
  CHECK(words(qt[2])[1] == "1");
  CHECK(words(qt[2])[3] == "33");

  const json conns = connections_json(s)["connections"];
  REQUIRE(conns.size() == 2);
  CHECK(conns[1]["rail"] == 1);
  CHECK(conns[1]["overlay"] == "10.100.0.2");
  const auto ct = lines(render_connections(connections_json(s)));
  REQUIRE(ct.size() == 3);
  CHECK(words(ct[0])[1] == "RAIL");
  CHECK(words(ct[1])[1] == "0");
  CHECK(words(ct[2])[1] == "1");
  CHECK(words(ct[2])[2] == "10.99.1.2:7471");

  CHECK_THAT(render_status(status_json(s)),
             Catch::Contains("\nrails: 0 up, 1 holddown  mode active-backup  peers without a "
                             "redundant link 1\n"));
}

TEST_CASE("ctl rails: the monitor's rail and failover events", "[ctl][rails]") {
  // The clock's "HH:MM:SS.mmm " is local time: compare what follows it.
  const auto after_clock = [](const std::string& line) {
    REQUIRE(line.size() > 13);
    CHECK(line[2] == ':');
    CHECK(line[12] == ' ');
    return line.substr(13);
  };
  cm::Event rail;
  rail.kind = cm::EventKind::kRail;
  rail.rail = 1;
  rail.reason = "down";
  rail.detail = "IBV_EVENT_PORT_ERR";
  const json rj = event_json(rail, 1704110401234);
  CHECK(rj == json{{"kind", "rail"},
                   {"time_ms", 1704110401234},
                   {"rail", 1},
                   {"state", "down"},
                   {"cause", "IBV_EVENT_PORT_ERR"}});
  CHECK(after_clock(render_event(rj)) == "rail 1 down (IBV_EVENT_PORT_ERR)\n");
  rail.reason = "up";
  rail.detail = "";
  CHECK(after_clock(render_event(event_json(rail, 0))) == "rail 1 up\n");

  cm::Event fo;
  fo.kind = cm::EventKind::kFailover;
  fo.peer = kPeerA;
  fo.peer_addr = Endpoint{ip("10.99.0.2"), 7471};
  fo.from_rail = 0;
  fo.rail = 1;
  fo.reason = "failover";
  fo.detail = "carrier lost";
  const json fj = event_json(fo, 5);
  CHECK(fj == json{{"kind", "failover"},
                   {"time_ms", 5},
                   {"peer_node", kPeerA},
                   {"peer_addr", "10.99.0.2:7471"},
                   {"from_rail", 0},
                   {"rail", 1},
                   {"reason", "failover"},
                   {"cause", "carrier lost"}});
  CHECK(after_clock(render_event(fj)) == "failover peer 10.99.0.2 rail 0 -> 1 (carrier lost)\n");
  fo.from_rail = 1;
  fo.rail = 0;
  fo.reason = "failback";
  fo.detail = "holddown over";
  CHECK(after_clock(render_event(event_json(fo, 5))) ==
        "failback peer 10.99.0.2 rail 1 -> 0 (holddown over)\n");

  // A connection's event says its rail when it is not rail 0.
  cm::Event st;
  st.kind = cm::EventKind::kState;
  st.rail = 1;
  st.peer = kPeerA;
  st.peer_addr = Endpoint{ip("10.99.1.2"), 7471};
  st.qpn = 33;
  st.from = cm::ConnState::kConnecting;
  st.to = cm::ConnState::kEstablished;
  st.reason = "REP received";
  CHECK(event_json(st, 0)["rail"] == 1);
  CHECK(after_clock(render_event(event_json(st, 0))) ==
        "QPN 33 peer 10.99.1.2 rail 1 CONNECTING -> ESTABLISHED (REP received)\n");
  st.rail = 0;
  CHECK(after_clock(render_event(event_json(st, 0))) ==
        "QPN 33 peer 10.99.1.2 CONNECTING -> ESTABLISHED (REP received)\n");
}

namespace {

// metric name -> its lines (HELP, TYPE, samples) in order; fails when a
// family's lines are not contiguous or a metric is announced twice.
std::map<std::string, std::vector<std::string>> families(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::string current;
  for (const std::string& l : lines(text)) {
    std::string name;
    if (l.rfind("# HELP ", 0) == 0 || l.rfind("# TYPE ", 0) == 0)
      name = l.substr(7, l.find(' ', 7) - 7);
    else
      name = l.substr(0, l.find_first_of("{ "));
    if (name != current) {
      INFO(l);
      CHECK(out.count(name) == 0);  // each family in one piece
      current = name;
    }
    out[name].push_back(l);
  }
  return out;
}

}  // namespace

TEST_CASE("ctl rails: Prometheus rail_up, rail_state, failovers_total by cause", "[ctl][rails]") {
  cm::Snapshot s = two_rails();
  s.counters.failovers_port_error = 3;
  s.counters.failovers_carrier = 1;
  s.counters.failbacks = 2;
  s.counters.failover_resent = 9;
  const std::string text = render_prometheus(stats_json(s.counters), status_json(s));
  const auto fam = families(text);

  REQUIRE(fam.count("rcnet_failovers_total") == 1);
  CHECK(fam.at("rcnet_failovers_total") ==
        std::vector<std::string>{
            "# HELP rcnet_failovers_total peers moved off a failed link to another rail, by cause",
            "# TYPE rcnet_failovers_total counter",
            "rcnet_failovers_total{cause=\"port_error\"} 3",
            "rcnet_failovers_total{cause=\"device_lost\"} 0",
            "rcnet_failovers_total{cause=\"carrier\"} 1",
            "rcnet_failovers_total{cause=\"retry_exceeded\"} 0",
            "rcnet_failovers_total{cause=\"peer_notice\"} 0",
            "rcnet_failovers_total{cause=\"link_lost\"} 0",
        });
  CHECK(fam.count("rcnet_failovers_port_error_total") == 0);  // not a metric of its own
  REQUIRE(fam.count("rcnet_failbacks_total") == 1);
  CHECK(fam.at("rcnet_failbacks_total").back() == "rcnet_failbacks_total 2");
  REQUIRE(fam.count("rcnet_failover_resent_packets_total") == 1);
  CHECK(fam.at("rcnet_failover_resent_packets_total").back() ==
        "rcnet_failover_resent_packets_total 9");

  REQUIRE(fam.count("rcnet_rail_up") == 1);
  CHECK(fam.at("rcnet_rail_up") ==
        std::vector<std::string>{
            "# HELP rcnet_rail_up 1 when the rail is up (it carries traffic or stands by), 0 "
            "otherwise",
            "# TYPE rcnet_rail_up gauge",
            "rcnet_rail_up{rail=\"0\",device=\"rxe0\"} 1",
            "rcnet_rail_up{rail=\"1\",device=\"rxe1\"} 0",
        });
  REQUIRE(fam.count("rcnet_rail_state") == 1);
  const auto& state = fam.at("rcnet_rail_state");
  REQUIRE(state.size() == 2 + 8);
  CHECK(state[2] == "rcnet_rail_state{rail=\"0\",device=\"rxe0\",state=\"up\"} 1");
  CHECK(state[3] == "rcnet_rail_state{rail=\"0\",device=\"rxe0\",state=\"down\"} 0");
  CHECK(state[6] == "rcnet_rail_state{rail=\"1\",device=\"rxe1\",state=\"up\"} 0");
  CHECK(state[8] == "rcnet_rail_state{rail=\"1\",device=\"rxe1\",state=\"holddown\"} 1");
  REQUIRE(fam.count("rcnet_peers_without_redundancy") == 1);
  CHECK(fam.at("rcnet_peers_without_redundancy").at(1) ==
        "# TYPE rcnet_peers_without_redundancy gauge");
  CHECK(fam.at("rcnet_peers_without_redundancy").back() == "rcnet_peers_without_redundancy 1");
  CHECK(fam.at("rcnet_rail_links").back() == "rcnet_rail_links{rail=\"1\",device=\"rxe1\"} 1");
  CHECK(fam.at("rcnet_rail_carrying").back() ==
        "rcnet_rail_carrying{rail=\"1\",device=\"rxe1\"} 0");
  CHECK(fam.at("rcnet_rail_tx_bytes_total").at(1) == "# TYPE rcnet_rail_tx_bytes_total counter");
  CHECK(fam.at("rcnet_rail_tx_bytes_total").at(2) ==
        "rcnet_rail_tx_bytes_total{rail=\"0\",device=\"rxe0\"} 1572864");
  CHECK(fam.at("rcnet_peers").back() == "rcnet_peers 2");

  // promtool, where Debian's prometheus package is installed (tools/install-deps.sh).
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = "/tmp/rcnet-unit-rails-prom-" + std::to_string(::getpid()) + ".txt";
    {
      std::ofstream f(path);
      f << text;
    }
    CHECK(std::system(("promtool check metrics < " + path).c_str()) == 0);
    std::remove(path.c_str());
  }

  // A removed rail: down, with an empty device label; a hostile device
  // name is escaped.
  s.rails[0].state = cm::RailState::kRemoved;
  s.rails[0].device.clear();
  s.rails[1].device = "a\"b\\c";
  const auto fam2 = families(render_prometheus(stats_json(s.counters), status_json(s)));
  CHECK(fam2.at("rcnet_rail_up").at(2) == "rcnet_rail_up{rail=\"0\",device=\"\"} 0");
  CHECK(fam2.at("rcnet_rail_up").at(3) == "rcnet_rail_up{rail=\"1\",device=\"a\\\"b\\\\c\"} 0");

  // An older rcnetd's status has no rails: no rail metrics.
  json old = status_json(s);
  old.erase("rails");
  CHECK(text.find("rcnet_rail_up") != std::string::npos);
  const std::string without = render_prometheus(stats_json(s.counters), old);
  CHECK(without.find("rcnet_rail_up") == std::string::npos);
  CHECK(without.find("rcnet_rail_state") == std::string::npos);
  CHECK(without.find("rcnet_rail_tx_bytes_total") == std::string::npos);
}

TEST_CASE("ctl rails: renderers survive hostile rails", "[ctl][rails]") {
  const json bad = json::parse(R"({"mode":7,"rails":[1,null,{"rail":"x","tx_bytes":-1,
                                   "address":5,"device":[],"since_change_ms":"soon"}],
                                   "peers_without_redundancy":"many"})");
  std::string out;
  REQUIRE_NOTHROW(out = render_rails(bad));
  const auto l = lines(out);
  REQUIRE(l.size() == 6);
  CHECK(l[0] == "mode 7");
  CHECK(words(l[4])[0] == "x");
  CHECK(words(l[4])[6] == "-");  // a negative byte count
  CHECK(l[5] == "peers without a redundant link: many");
  CHECK_NOTHROW(render_prometheus(json::object(), bad));
  CHECK_NOTHROW(render_status(bad));
  json ev = {{"kind", "failover"}, {"rail", "x"}};
  CHECK_NOTHROW(render_event(ev));
}

}  // namespace ctl_rails_test
