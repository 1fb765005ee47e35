// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The manager's connection events (cm/events.hpp), as rcnetctl monitor sees
// them, on the simulated fabric with a virtual clock.
#include "catch2_compat.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "cm/events.hpp"
#include "cm/manager.hpp"
#include "harness.hpp"
#include "util/log.hpp"

namespace cm_events_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

// An observer's copy of one event (the views die with the call).
struct Seen {
  cm::EventKind kind;
  std::uint64_t conn;
  NodeId peer;
  Endpoint peer_addr;
  rdma::Qpn qpn, remote_qpn;
  cm::ConnState from, to;
  std::string reason, detail, message_id;
  TimePoint time;
};

struct Recorder {
  std::vector<Seen> events;
  void attach(Node& n) {
    n.mgr->set_observer([this](const cm::Event& e) {
      events.push_back({e.kind, e.conn, e.peer, e.peer_addr, e.qpn, e.remote_qpn, e.from, e.to,
                        std::string(e.reason), std::string(e.detail), std::string(e.message_id),
                        e.time});
    });
  }
  // "FROM->TO" of every state event, in order.
  std::vector<std::string> transitions() const {
    std::vector<std::string> out;
    for (const Seen& s : events) {
      if (s.kind == cm::EventKind::kState)
        out.push_back(std::string(to_string(s.from)) + "->" + std::string(to_string(s.to)));
    }
    return out;
  }
};

// Every state event starts where the conn's previous one ended, and the
// teardown event comes once, before DISCONNECTING or ERROR.
void check_chain(const std::vector<Seen>& ev, std::uint64_t conn) {
  std::optional<cm::ConnState> at;
  int teardowns = 0;
  for (const Seen& s : ev) {
    if (s.conn != conn)
      continue;
    if (s.kind == cm::EventKind::kTeardown) {
      ++teardowns;
      CHECK_FALSE(cm::is_teardown(s.to));
      continue;
    }
    if (s.kind != cm::EventKind::kState)
      continue;
    if (at)
      CHECK(s.from == *at);
    CHECK(cm::is_legal_transition(s.from, s.to));
    if (cm::is_teardown(s.to) && s.to != cm::ConnState::kDestroyed)
      CHECK(teardowns == 1);
    at = s.to;
  }
  CHECK(teardowns == 1);
  CHECK(at == cm::ConnState::kDestroyed);
}

// Two nodes with a recorder on each, connected by one packet a -> b.
struct Linked {
  Cluster c;
  Node& a;
  Node& b;
  Recorder ra, rb;
  explicit Linked(Profile p) : c(p), a(c.add(1)), b(c.add(2)) {
    ra.attach(a);
    rb.attach(b);
    c.connect(a, b, 1, 100ms);
  }
};

}  // namespace

TEST_CASE("events: connect and disconnect, both sides, in order", "[cm][events]") {
  Linked l(Profile::kMlx);
  auto& [c, a, b, ra, rb] = l;
  REQUIRE(b.sink.packets.size() == 1);
  const rdma::Qpn qa = a.mgr->live_qpns().at(0), qb = b.mgr->live_qpns().at(0);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "operator"));
  c.run(2s);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(b.mgr->live_qpns().empty());

  // The active side: resolve, REQ, REP, then our DREQ and the spec teardown.
  const auto ta = ra.transitions();
  REQUIRE(ta.size() >= 6);
  CHECK(ta[0] == "RESOLVING_ADDR->RESOLVING_ROUTE");
  CHECK(ta[1] == "RESOLVING_ROUTE->CONNECTING");
  CHECK(ta[2] == "CONNECTING->ESTABLISHED");
  CHECK(ta[3] == "ESTABLISHED->DISCONNECTING");
  CHECK(ta[4] == "DISCONNECTING->ERROR");
  CHECK(ta.back() == "DRAINING->DESTROYED");
  const std::uint64_t conn = ra.events.front().conn;
  check_chain(ra.events, conn);
  for (const Seen& s : ra.events) {
    CHECK(s.conn == conn);
    CHECK(s.peer == b.mgr->node_id());
    CHECK(s.peer_addr == b.ep());
  }
  auto find = [](const std::vector<Seen>& ev, cm::EventKind k, cm::ConnState to) -> const Seen& {
    for (const Seen& s : ev)
      if (s.kind == k && s.to == to)
        return s;
    FAIL("no such event");
    return ev.front();
  };
  const Seen& est = find(ra.events, cm::EventKind::kState, cm::ConnState::kEstablished);
  CHECK(est.reason == "REP received");
  CHECK(est.qpn == qa);
  CHECK(est.remote_qpn == qb);
  const Seen& td = find(ra.events, cm::EventKind::kTeardown, cm::ConnState::kEstablished);
  CHECK(td.reason == "operator");
  CHECK(find(ra.events, cm::EventKind::kState, cm::ConnState::kDisconnecting).reason ==
        "DREQ sent");
  // Times follow the manager's (virtual) clock, never backwards.
  for (std::size_t i = 1; i < ra.events.size(); ++i)
    CHECK(ra.events[i].time >= ra.events[i - 1].time);

  // The passive side: born ACCEPTING, RTU, then the peer's DREQ.
  const auto tb = rb.transitions();
  REQUIRE(tb.size() >= 4);
  CHECK(tb[0] == "ACCEPTING->ESTABLISHED");
  CHECK(tb[1] == "ESTABLISHED->DISCONNECTING");
  CHECK(tb.back() == "DRAINING->DESTROYED");
  check_chain(rb.events, rb.events.front().conn);
  CHECK(find(rb.events, cm::EventKind::kState, cm::ConnState::kEstablished).reason ==
        "RTU received");
  CHECK(find(rb.events, cm::EventKind::kState, cm::ConnState::kDisconnecting).reason ==
        "DREQ received, DREP sent");
  CHECK(find(rb.events, cm::EventKind::kState, cm::ConnState::kEstablished).remote_qpn == qa);
}

TEST_CASE("events: a REJ sent is reported with its reason", "[cm][events]") {
  Cluster c(Profile::kMlx);
  auto& a =
      c.add(1, [](cm::ManagerConfig& m) { m.allowed_peers = {*IpPrefix::parse("10.99.0.0/30")}; });
  auto& far = c.add(5);
  Recorder ra;
  ra.attach(a);
  far.mgr->send(a.ep(), packet(1));
  c.run(100ms);
  REQUIRE(a.ctr().rejects_sent_not_allowed == 1);
  REQUIRE(ra.events.size() == 1);
  const Seen& r = ra.events[0];
  CHECK(r.kind == cm::EventKind::kReject);
  CHECK(r.reason == "not_allowed");
  CHECK(r.peer_addr.addr == far.addr);
  CHECK(r.conn == 0);
  CHECK_FALSE(r.detail.empty());
}

TEST_CASE("events: an LRU eviction, then its teardown", "[cm][events]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.max_connections = 2; });
  for (int i = 2; i <= 4; ++i)
    c.add(i);
  a.mgr->send(c[2].ep(), packet(1));
  c.run(50ms);
  a.mgr->send(c[3].ep(), packet(1));
  c.run(1s);  // both older than kEvictMinAge: evictable
  Recorder ra;
  ra.attach(a);
  a.mgr->send(c[4].ep(), packet(1));
  c.run(1s);
  REQUIRE(a.ctr().evictions == 1);
  std::size_t evict = ra.events.size();
  for (std::size_t i = 0; i < ra.events.size(); ++i) {
    if (ra.events[i].kind == cm::EventKind::kEvict) {
      evict = i;
      break;
    }
  }
  REQUIRE(evict + 1 < ra.events.size());
  const Seen& e = ra.events[evict];
  CHECK(e.peer == c[2].mgr->node_id());  // least recently used
  CHECK(e.to == cm::ConnState::kEstablished);
  CHECK(e.reason.find("evicted") != std::string::npos);
  const Seen& t = ra.events[evict + 1];
  CHECK(t.kind == cm::EventKind::kTeardown);
  CHECK(t.conn == e.conn);
  CHECK(t.reason == e.reason);
}

TEST_CASE("events: a send completion error's teardown names the SEND that failed", "[cm][events]") {
  Linked l(Profile::kRxe);
  auto& [c, a, b, ra, rb] = l;
  c.run(1s);  // every WR of the setup completed
  const rdma::Qpn qa = a.mgr->live_qpns().at(0);
  // The peer's responder refused the next SEND (IB spec 9.7.5.2.4: a
  // remote operational error; rxe answers so a SEND its receive WR cannot
  // hold).
  REQUIRE(c.fabric.faults().inject_send_error(a.addr, qa, rdma::WcStatus::kRemoteOpErr));
  REQUIRE(a.mgr->send(b.ep(), packet(2, 1234)) == cm::SendResult::kSent);
  c.run(2s);
  std::string reason;
  for (const Seen& s : ra.events)
    if (s.kind == cm::EventKind::kTeardown && s.qpn == qa)
      reason = s.reason;
  INFO(reason);
  CHECK(reason.starts_with("send completion REM_OP_ERR"));
  CHECK(reason.find("a packet's SEND of 1234 bytes; WRs not completed: 1") != std::string::npos);
  CHECK(a.ctr().send_errors == 1);
  const auto live = a.mgr->live_qpns();
  CHECK(std::find(live.begin(), live.end(), qa) == live.end());
}

TEST_CASE("events: idle reap names its cause; no observer is fine", "[cm][events]") {
  Linked l(Profile::kMlx);
  auto& [c, a, b, ra, rb] = l;
  CHECK(a.mgr->reap_idle(Duration::zero()) == 1);
  bool reaped = false;
  for (const Seen& s : ra.events)
    reaped |= s.kind == cm::EventKind::kTeardown && s.message_id == log::kMsgReapedIdle;
  CHECK(reaped);
  a.mgr->set_observer({});
  const std::size_t n = ra.events.size();
  c.run(2s);
  CHECK(ra.events.size() == n);
  CHECK(a.mgr->live_qpns().empty());
}

}  // namespace cm_events_test
