// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Admission control (limits.max_pending_setups) on the simulated fabric:
// REJ busy and its retry-after, our own connects paced in order, and the
// simultaneous-open merge kept at the limit.
#include "catch2_compat.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "cm/manager.hpp"
#include "harness.hpp"
#include "raw_client.hpp"
#include "wire/private_data.hpp"

namespace cm_admission_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

std::size_t count_states(Node& n, bool active) {
  auto s = n.mgr->snapshot();
  return static_cast<std::size_t>(std::count_if(s.qps.begin(), s.qps.end(), [&](auto& q) {
    using S = cm::ConnState;
    return active ? (q.state == S::kResolvingAddr || q.state == S::kResolvingRoute ||
                     q.state == S::kConnecting)
                  : q.state == S::kAccepting;
  }));
}

}  // namespace

TEST_CASE(
    "max_pending_setups: a storm into one node is answered REJ busy, retried after the "
    "retry-after, and every peer ends in service with nothing lost",
    "[cm][admission]") {
  Cluster c(any_profile());
  constexpr std::uint32_t kLimit = 4;
  constexpr int kClients = 20;
  constexpr std::uint32_t kPackets = 5;
  auto& hub = c.add(1, [](cm::ManagerConfig& m) { m.max_pending_setups = kLimit; });
  for (int i = 2; i < 2 + kClients; ++i)
    c.add(i);
  const TimePoint t0 = c.fabric.now();
  for (int i = 2; i < 2 + kClients; ++i)
    Cluster::send_range(c[i], hub, static_cast<std::uint32_t>(i) * 100,
                        static_cast<std::uint32_t>(i) * 100 + kPackets - 1);
  // The hub never has more passive setups in progress than the limit.
  std::size_t most = 0;
  for (int k = 0; k < 900; ++k) {  // 9 ms
    c.run(10us);
    most = std::max(most, count_states(hub, false));
  }
  CHECK(most == kLimit);
  REQUIRE(hub.ctr().rejects_sent_busy > 0);
  // Told to come back after at least 10 ms: none of the peers turned away
  // has tried again yet (their ordinary backoff would not say so much, but
  // nor would it let them back before 50 ms; see the next check).
  std::uint64_t busy_seen = 0;
  for (int i = 2; i < 2 + kClients; ++i) {
    busy_seen += c[i].ctr().rejects_received_busy;
    if (c[i].ctr().rejects_received_busy > 0)
      CHECK(c[i].ctr().connects_started == 1);
  }
  CHECK(busy_seen == hub.ctr().rejects_sent_busy);
  // Back well before an ordinary backoff (100 ms x [0.5, 1.5)) would allow.
  for (int k = 0; k < 4000 && in_service(hub) < kClients; ++k) {
    c.run(10us);
    most = std::max(most, count_states(hub, false));
  }
  CHECK(most == kLimit);
  INFO("all in service after " << to_ms(c.fabric.now() - t0) << " ms");
  CHECK(c.fabric.now() - t0 < 50ms);
  c.run(20ms);
  CHECK(in_service(hub) == kClients);
  REQUIRE(hub.sink.packets.size() == kClients * kPackets);
  std::map<NodeId, std::vector<std::uint32_t>> by_peer;
  for (auto& p : hub.sink.packets)
    by_peer[p.from].push_back(seq_of(p.bytes));
  for (int i = 2; i < 2 + kClients; ++i) {
    INFO("client " << i);
    const auto& got = by_peer[c[i].mgr->node_id()];
    REQUIRE(got.size() == kPackets);
    for (std::uint32_t k = 0; k < kPackets; ++k)
      CHECK(got[k] == static_cast<std::uint32_t>(i) * 100 + k);  // in order
    CHECK(c[i].ctr().connect_failures == 0);
    CHECK(c[i].ctr().drops_connect_failed + c[i].ctr().drops_queue_full == 0);
    CHECK(c[i].sim->stats().misuse == 0);
  }
  CHECK(hub.ctr().connect_failures == 0);
  CHECK(hub.ctr().rejects_sent_full == 0);
  CHECK(hub.sim->stats().misuse == 0);
  CHECK(hub.mgr->live_qpns().size() == kClients);
}

TEST_CASE("REJ busy carries a retry-after; a peer without kCapBusy gets REJ full instead",
          "[cm][admission][wire]") {
  Cluster c(Profile::kRxe);  // no COMM_EST: a passive setup without its RTU stays
  auto& hub = c.add(1, [](cm::ManagerConfig& m) { m.max_pending_setups = 1; });
  auto& peer = c.add(2);
  // Occupy the hub's one passive setup: the ESTABLISHED of peer 2's
  // connection never reaches it, so that setup stays in ACCEPTING.
  c.fabric.faults().cm(sim::FaultAction::kDrop, rdma::CmEventType::kEstablished, 1, hub.addr);
  peer.mgr->ensure_link(hub.ep());
  c.run(5ms);
  REQUIRE(count_states(hub, false) == 1);

  const bool knows_busy = GENERATE(true, false);
  INFO((knows_busy ? "REQ advertises kCapBusy" : "REQ of an older peer"));
  RawClient client;
  client.attach(c.fabric, node_addr(9), Profile::kRxe);
  wire::PrivateData req = raw_req(node_addr(9));
  req.busy = knows_busy;
  client.connect(hub.ep(), wire::encode(req));
  c.run(5ms);
  const rdma::CmEvent* rej = client.rejected();
  REQUIRE(rej != nullptr);
  const auto d = wire::decode(rej->private_data, wire::Kind::kRej);
  REQUIRE(d.ok);
  if (knows_busy) {
    CHECK(d.data.reason == wire::RejectReason::kBusy);
    CHECK(d.data.retry_after_ms >= 10);
    CHECK(d.data.retry_after_ms <= 30000);
  } else {
    // What a first-version decoder understands: retry with backoff, keep
    // the queue. The retry-after bytes are zero outside a REJ busy.
    CHECK(d.data.reason == wire::RejectReason::kFull);
    CHECK(d.data.retry_after_ms == 0);
  }
  CHECK(hub.ctr().rejects_sent_busy == 1);
  CHECK(hub.ctr().rejects_sent_full == 0);
  CHECK(hub.ctr().accepts == 1);
}

TEST_CASE("max_pending_setups: our own connects beyond the limit wait in order, packets kept",
          "[cm][admission]") {
  Cluster c(any_profile());
  constexpr std::uint32_t kLimit = 3;
  constexpr int kPeers = 12;
  constexpr std::uint32_t kPackets = 4;
  auto& hub = c.add(1, [](cm::ManagerConfig& m) { m.max_pending_setups = kLimit; });
  for (int i = 2; i < 2 + kPeers; ++i)
    c.add(i);
  // The order in which the hub's connects reach RESOLVING_ROUTE (each one
  // resolves once: no attempt fails here).
  std::vector<NodeId> order;
  hub.mgr->set_observer([&](const cm::Event& e) {
    if (e.kind == cm::EventKind::kState && e.to == cm::ConnState::kResolvingRoute)
      order.push_back(e.peer);
  });
  for (int i = 2; i < 2 + kPeers; ++i)
    Cluster::send_range(hub, c[i], 0, kPackets - 1);
  CHECK(count_states(hub, true) == kLimit);
  CHECK(hub.ctr().connects_paced == kPeers - kLimit);
  std::size_t most = 0;
  for (int k = 0; k < 2000 && in_service(hub) < kPeers; ++k) {
    c.run(10us);
    most = std::max(most, count_states(hub, true));
  }
  CHECK(most == kLimit);
  REQUIRE(in_service(hub) == kPeers);
  REQUIRE(order.size() == kPeers);
  for (int i = 2; i < 2 + kPeers; ++i)
    CHECK(order[static_cast<std::size_t>(i - 2)] == c[i].mgr->node_id());
  c.run(5ms);
  for (int i = 2; i < 2 + kPeers; ++i) {
    INFO("peer " << i);
    REQUIRE(c[i].sink.packets.size() == kPackets);
    for (std::uint32_t k = 0; k < kPackets; ++k)
      CHECK(seq_of(c[i].sink.packets[k].bytes) == k);
  }
  CHECK(hub.ctr().connects_started == kPeers);
  CHECK(hub.ctr().connect_failures == 0);
  CHECK(hub.ctr().drops_connect_failed + hub.ctr().drops_queue_full == 0);
  CHECK(hub.sim->stats().misuse == 0);
}

TEST_CASE("max_pending_setups reached: a simultaneous open still merges", "[cm][admission]") {
  Cluster c(Profile::kRxe);  // no COMM_EST: a passive setup without its RTU stays
  auto tweak = [](cm::ManagerConfig& m) { m.max_pending_setups = 1; };
  auto& a = c.add(1, tweak);
  auto& b = c.add(2, tweak);
  auto& third = c.add(3);
  // b's one passive setup is taken by node 3's connection, whose
  // ESTABLISHED never reaches b.
  c.fabric.faults().cm(sim::FaultAction::kDrop, rdma::CmEventType::kEstablished, 1, b.addr);
  third.mgr->ensure_link(b.ep());
  c.run(5ms);
  REQUIRE(count_states(b, false) == 1);
  a.mgr->send(b.ep(), packet(1));
  b.mgr->send(a.ep(), packet(2));
  c.run(20ms);
  // a (the lower node id) wins: b merges a's REQ although its passive
  // setups are at the limit, instead of answering REJ busy.
  CHECK(b.ctr().collisions_merged == 1);
  CHECK(a.ctr().rejects_sent_collision == 1);
  CHECK(b.ctr().rejects_sent_busy == 0);
  CHECK(a.ctr().rejects_received_busy == 0);
  REQUIRE(a.sink.packets.size() == 1);
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(seq_of(a.sink.packets[0].bytes) == 2);
  CHECK(seq_of(b.sink.packets[0].bytes) == 1);
  CHECK(a.sim->stats().misuse + b.sim->stats().misuse == 0);
}

// The CI-sized storm (rcnet-bench-sim --inbound runs 10,000): 1,000 peers
// send their first packet to one hub at the same instant.
TEST_CASE("storm: 1,000 peers connect to one hub at once; every one ends in service",
          "[cm][admission][storm]") {
  Cluster c(Profile::kRxe);
  constexpr int kClients = 1000;
  constexpr std::uint32_t kLimit = 64;
  auto& hub = c.add(1, [](cm::ManagerConfig& m) {
    m.max_pending_setups = kLimit;
    m.max_connections = kClients;
  });
  const auto small = [](cm::ManagerConfig& m) {
    // 1,000 managers share this process: as small as they can be.
    m.srq_size = 8;
    m.send_slots = 4;
    m.qp_send_depth = 4;
  };
  for (int i = 2; i < 2 + kClients; ++i)
    c.add(i, small);
  for (int i = 2; i < 2 + kClients; ++i)
    c[i].mgr->send(hub.ep(), packet(static_cast<std::uint32_t>(i)));
  std::size_t most = 0;
  for (int k = 0; k < 3000 && hub.sink.packets.size() < kClients; ++k) {
    c.run(1ms);
    most = std::max(most, count_states(hub, false));
  }
  CHECK(most <= kLimit);
  CHECK(hub.ctr().rejects_sent_busy > 0);
  REQUIRE(hub.sink.packets.size() == kClients);
  c.run(10ms);
  CHECK(in_service(hub) == kClients);
  CHECK(hub.mgr->live_qpns().size() == kClients);
  std::uint64_t failures = 0, drops = 0, busy = 0;
  for (int i = 2; i < 2 + kClients; ++i) {
    failures += c[i].ctr().connect_failures;
    drops += c[i].ctr().drops_connect_failed + c[i].ctr().drops_queue_full;
    busy += c[i].ctr().rejects_received_busy;
  }
  CHECK(failures == 0);
  CHECK(drops == 0);
  CHECK(busy == hub.ctr().rejects_sent_busy);
  CHECK(hub.ctr().connect_failures == 0);
  CHECK(hub.sim->stats().misuse == 0);
}

TEST_CASE("sim Timing::cm_event_cost: a node reads its rdma_cm events one per cost, in order",
          "[cm][admission][sim]") {
  Cluster c(Profile::kMlx);
  c.fabric.timing().cm_event_cost = 1ms;
  auto& hub = c.add(1);
  constexpr int kClients = 5;
  for (int i = 2; i < 2 + kClients; ++i)
    c.add(i);
  for (int i = 2; i < 2 + kClients; ++i)
    c[i].mgr->send(hub.ep(), packet(static_cast<std::uint32_t>(i)));
  // The REQs reach the hub together; it reads (and accepts) one a ms.
  std::vector<TimePoint> accepted;
  for (int k = 0; k < 400 && accepted.size() < kClients; ++k) {
    const auto before = hub.ctr().accepts;
    c.run(50us);
    for (auto n = before; n < hub.ctr().accepts; ++n)
      accepted.push_back(c.fabric.now());
  }
  REQUIRE(accepted.size() == kClients);
  for (std::size_t i = 1; i < accepted.size(); ++i)
    CHECK(accepted[i] - accepted[i - 1] >= 950us);
  c.run(50ms);
  CHECK(in_service(hub) == kClients);
  CHECK(hub.sink.packets.size() == kClients);
  CHECK(hub.ctr().connect_failures == 0);
}

}  // namespace cm_admission_test
