// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The connection manager on the simulated iWARP device (sim::Profile::kIwarp;
// docs/design.md "Providers"): no immediate data on SEND, no RNR, the active
// side sends first, no Last WQE Reached, no drain completion after Error.
// The simulator terminates a connection on each rule broken and counts it
// (SimStats::imm_refused, passive_first_terminations,
// no_buffer_terminations), so these tests fail when the manager breaks one.
#include "catch2_compat.hpp"

#include <algorithm>
#include <set>

#include "cm/manager.hpp"
#include "harness.hpp"

namespace cm_iwarp_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

// No rule of iWARP was broken on `n`'s device.
void require_iwarp_rules_kept(Node& n) {
  INFO("node " << n.addr.to_string());
  const sim::SimStats& st = n.sim->stats();
  CHECK(st.imm_refused == 0);
  CHECK(st.passive_first_terminations == 0);
  CHECK(st.no_buffer_terminations == 0);
  CHECK(st.rnr_naks == 0);
  CHECK(st.misuse == 0);
  CHECK(n.ctr().send_errors == 0);
  CHECK(n.ctr().recv_errors == 0);
  CHECK(n.ctr().qp_fatal_events == 0);
}

std::set<std::uint32_t> seqs(const Node& n) {
  std::set<std::uint32_t> out;
  for (const auto& p : n.sink.packets)
    out.insert(seq_of(p.bytes));
  return out;
}

const cm::QpSnapshot* in_service_qp(Node& n, const cm::Snapshot& s) {
  (void)n;
  for (const auto& q : s.qps) {
    if (q.in_service)
      return &q;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("iWARP: packets flow both ways on header framing, no SEND carries an immediate",
          "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);
  Node& b = c.add(2);
  Cluster::send_range(a, b, 0, 39);  // a is the active side
  c.run(20ms);
  Cluster::send_range(b, a, 100, 139);
  Cluster::send_range(a, b, 40, 79);
  c.run(20ms);
  CHECK(b.sink.packets.size() == 80);
  CHECK(a.sink.packets.size() == 40);
  for (Node* n : {&a, &b}) {
    require_iwarp_rules_kept(*n);
    const auto s = n->mgr->snapshot();
    CHECK(s.transport == "iwarp");
    CHECK(s.header);
    CHECK(s.credits == 16);
    const auto* q = in_service_qp(*n, s);
    REQUIRE(q != nullptr);
    CHECK(q->header);
    CHECK(q->peer_grant == 16);
  }
  CHECK(seqs(b).size() == 80);
}

TEST_CASE("iWARP: the passive side holds its packets until the active side's first SEND",
          "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);
  Node& b = c.add(2);
  // a makes the connection without a packet of its own (a standby link):
  // its first SEND is the control SEND it posts at ESTABLISHED.
  CHECK(a.mgr->ensure_link(b.ep()));
  // b has packets for a as soon as it knows the peer, before or while the
  // connection comes up: they must wait for a's first SEND. a's loop is
  // busy (its rdma_cm channel unread) while b's ESTABLISHED comes, so a's
  // first SEND comes well after it: b must not send meanwhile.
  REQUIRE(c.run_until([&] { return !b.mgr->live_qpns().empty(); }, 10us, 10ms));
  c.fabric.faults().hold_cm_channel(a.addr, true);
  Cluster::send_range(b, a, 0, 19);
  c.run(5ms);
  CHECK(a.sink.packets.empty());
  c.fabric.faults().hold_cm_channel(a.addr, false);
  c.run(20ms);
  CHECK(a.sink.packets.size() == 20);
  require_iwarp_rules_kept(a);
  require_iwarp_rules_kept(b);
  CHECK(b.ctr().connects_started == 0);  // b was the passive side
}

TEST_CASE("iWARP: simultaneous open merges and keeps the active-first rule", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);
  Node& b = c.add(2);
  Cluster::send_range(a, b, 0, 9);
  Cluster::send_range(b, a, 0, 9);
  c.run(50ms);
  CHECK(a.sink.packets.size() == 10);
  CHECK(b.sink.packets.size() == 10);
  CHECK(a.ctr().collisions_merged + b.ctr().collisions_merged >= 1);
  require_iwarp_rules_kept(a);
  require_iwarp_rules_kept(b);
}

TEST_CASE("iWARP: fan-in never finds an empty receive queue (credits)", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  // The hub's loop polls its CQ 200 us after a completion came: without
  // credits, six senders would empty its SRQ of 32 buffers meanwhile.
  c.fabric.timing().cq_poll = 200us;
  constexpr int kSenders = 6;
  // A small SRQ: 32 buffers, 4 credits per connection, room for 7.
  Node& hub = c.add(1, [](cm::ManagerConfig& m) {
    m.srq_size = 32;
    m.credits = 4;
  });
  std::vector<Node*> senders;
  for (int i = 0; i < kSenders; ++i)
    senders.push_back(&c.add(2 + i, [](cm::ManagerConfig& m) { m.peer_queue_depth = 1000; }));
  // Every sender bursts at once, far more than the SRQ holds, in rounds.
  std::uint32_t seq = 0;
  for (int round = 0; round < 10; ++round) {
    for (Node* s : senders) {
      for (int k = 0; k < 40; ++k)
        s->mgr->send(hub.ep(), packet(seq++));
    }
    c.run(2ms);
  }
  c.run(200ms);
  std::uint64_t dropped = 0;
  for (Node* s : senders) {
    require_iwarp_rules_kept(*s);
    dropped += s->ctr().drops_queue_full;
  }
  require_iwarp_rules_kept(hub);
  CHECK(hub.sim->stats().no_buffer_terminations == 0);
  CHECK(dropped == 0);
  CHECK(hub.sink.packets.size() == seq);
  std::uint64_t waits = 0;
  for (Node* s : senders)
    waits += s->ctr().credit_waits;
  CHECK(waits > 0);  // the credits, not luck, kept the SRQ from running dry
  const auto s = hub.mgr->snapshot();
  CHECK(s.max_connections == 7);
}

TEST_CASE("iWARP: a one-way stream gets its credits back by credit-only SENDs", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1, [](cm::ManagerConfig& m) { m.peer_queue_depth = 2000; });
  Node& b = c.add(2, [](cm::ManagerConfig& m) { m.credits = 4; });
  Cluster::send_range(a, b, 0, 999);
  c.run(200ms);
  CHECK(b.sink.packets.size() == 1000);
  CHECK(b.ctr().credit_updates > 0);
  CHECK(a.ctr().credit_waits > 0);
  require_iwarp_rules_kept(a);
  require_iwarp_rules_kept(b);
}

TEST_CASE("iWARP: teardown skips the waits the device rules out, no QP left", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);
  Node& b = c.add(2);
  c.connect(a, b);
  const TimePoint t0 = c.fabric.now();
  a.mgr->shutdown();
  b.mgr->shutdown();
  c.run(50ms);
  for (Node* n : {&a, &b}) {
    INFO("node " << n->addr.to_string());
    CHECK(n->mgr->stopped());
    require_clean(*n);
    CHECK(n->ctr().last_wqe_skipped >= 1);
    CHECK(n->ctr().drains_skipped >= 1);
    CHECK(n->ctr().last_wqe_timeouts == 0);
    CHECK(n->ctr().drain_timeouts == 0);
    CHECK(n->ctr().forced_destroys == 0);
  }
  // Well inside one last_wqe_timeout (200 ms in the test config).
  CHECK(c.fabric.now() - t0 <= 50ms);
}

TEST_CASE("iWARP: the idle reaper and a restarted peer leave no QP", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);
  Node& b = c.add(2);
  c.connect(a, b);
  c.run(6s);  // idle_timeout 5 s
  CHECK(a.ctr().idle_reaps + b.ctr().idle_reaps >= 1);
  require_clean(a);
  require_clean(b);
  c.connect(a, b, 2);
  CHECK(b.sink.packets.size() == 2);
  require_iwarp_rules_kept(a);
  require_iwarp_rules_kept(b);
}

TEST_CASE("transport.framing = header on a device with immediates: both ends use the header",
          "[cm][iwarp]") {
  const Profile p = GENERATE(Profile::kMlx, Profile::kRxe);
  Cluster c(p);
  Node& a = c.add(1, [](cm::ManagerConfig& m) { m.framing = cm::Framing::kHeader; });
  Node& b = c.add(2);
  Cluster::send_range(b, a, 0, 9);
  c.run(20ms);
  Cluster::send_range(a, b, 0, 9);
  c.run(20ms);
  CHECK(a.sink.packets.size() == 10);
  CHECK(b.sink.packets.size() == 10);
  for (Node* n : {&a, &b}) {
    const auto s = n->mgr->snapshot();
    const auto* q = in_service_qp(*n, s);
    REQUIRE(q != nullptr);
    CHECK(q->header);
    CHECK(q->peer_grant == 0);  // RNR retry: no credits
  }
}

TEST_CASE("InfiniBand and RoCE keep the immediate: no header, no credits", "[cm][iwarp]") {
  const Profile p = GENERATE(Profile::kMlx, Profile::kEhca, Profile::kRxe);
  Cluster c(p);
  Node& a = c.add(1);
  Node& b = c.add(2);
  c.connect(a, b);
  CHECK(b.sink.packets.size() == 1);
  for (Node* n : {&a, &b}) {
    const auto s = n->mgr->snapshot();
    CHECK(s.transport == "infiniband");
    CHECK_FALSE(s.header);
    CHECK(s.credits == 0);
    const auto* q = in_service_qp(*n, s);
    REQUIRE(q != nullptr);
    CHECK_FALSE(q->header);
    CHECK(q->peer_grant == 0);
  }
}

TEST_CASE("iWARP: a configuration without room for credits is refused at start", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& n = c.add_node<Node>(node_addr(1));
  auto cfg = test_config(n.addr, 1);
  cfg.srq_size = 16;
  cfg.credits = 16;
  auto r = c.start(n, cfg);
  REQUIRE_FALSE(r);
  CHECK(r.error().code.value() == EINVAL);
}

TEST_CASE("iWARP: rails on ports of one device split its SRQ's credits", "[cm][iwarp]") {
  Cluster c(Profile::kIwarp);
  Node& a = c.add(1);  // srq.size 128, 16 credits: 7 connections alone
  CHECK(a.mgr->snapshot().max_connections == 7);
  Node& a2 = c.add_port_node<Node>(node_addr(1), *IpAddr::parse("10.98.0.1"));
  REQUIRE(c.start(a2, test_config(a2.addr, 0x1001)));
  CHECK(a.mgr->snapshot().max_connections == 3);
  CHECK(a2.mgr->snapshot().max_connections == 3);
}

}  // namespace cm_iwarp_test
