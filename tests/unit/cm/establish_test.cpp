// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Connection setup on the simulated fabric (lib/cm/establish.cpp): connect
// deadlines against a busy CM channel, a lost RTU, a REQ from the same live
// incarnation, connect retries' backoff and hold-down, and what a peer's
// snapshot says about why it is unreachable.
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include "catch2_compat.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "harness.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"

namespace cm_establish_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

// A storm of REQs keeps a hub's loop busy: it reads kCmEventBudget CM events
// per wakeup and the rest wait on the channel, ESTABLISHED behind the REQs.
// Lab, 1,000 connections to one hub: 854 healthy passive connections were
// torn down by connect_timeout while their ESTABLISHED sat unread there.
TEST_CASE("a connect deadline does not beat an ESTABLISHED queued on the CM channel",
          "[cm][establish]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  auto& b = c.add(2);
  const bool passive = GENERATE(true, false);
  INFO((passive ? "the passive side's" : "the active side's") << " channel is held");
  Node& held = passive ? b : a;
  a.mgr->send(b.ep(), packet(1));
  for (int i = 0; i < 1000 && b.ctr().accepts == 0; ++i)
    c.run(10us);
  REQUIRE(b.ctr().accepts == 1);  // REP sent; the RTU (or the REP) is on its way
  c.fabric.faults().hold_cm_channel(held.addr);
  c.run(held.mgr->config().connect_timeout + 1s);
  CHECK(held.ctr().connect_failures == 0);
  CHECK(held.ctr().connect_deadlines_deferred >= 1);
  c.fabric.faults().hold_cm_channel(held.addr, false);
  c.run(50ms);
  CHECK(a.ctr().connects_established == 1);
  CHECK(b.ctr().connects_established == 1);
  CHECK(a.ctr().connect_failures + b.ctr().connect_failures == 0);
  REQUIRE(in_service(a) == 1);
  REQUIRE(in_service(b) == 1);
  CHECK(b.sink.packets.size() == 1);
  b.mgr->send(a.ep(), packet(2));
  c.run(10ms);
  REQUIRE(a.sink.packets.size() == 1);
  CHECK(seq_of(a.sink.packets[0].bytes) == 2);
}

TEST_CASE("a connect deadline deferred for the CM channel still ends, at kCmBacklogGrace",
          "[cm][establish]") {
  // The channel never drains (the loop never catches up): the attempt is given
  // up kCmBacklogGrace after its deadline, and nothing leaks. (idle_timeout
  // past the grace: a's idle reap would otherwise end the wait first.)
  Cluster c(any_profile());
  const auto long_idle = [](cm::ManagerConfig& m) { m.idle_timeout = 60s; };
  auto& a = c.add(1, long_idle);
  auto& b = c.add(2, long_idle);
  a.mgr->send(b.ep(), packet(1));
  for (int i = 0; i < 1000 && b.ctr().accepts == 0; ++i)
    c.run(10us);
  REQUIRE(b.ctr().accepts == 1);
  c.fabric.faults().hold_cm_channel(b.addr);
  const Duration deadline = b.mgr->config().connect_timeout;
  c.run(deadline + cm::kCmBacklogGrace - 200ms);
  CHECK(b.ctr().connect_failures == 0);
  c.run(400ms);
  CHECK(b.ctr().connect_failures == 1);
  CHECK(b.ctr().connect_deadlines_deferred >= 1);
  c.fabric.faults().hold_cm_channel(b.addr, false);
  c.run(a.mgr->config().idle_timeout + 10s);
  require_clean(a);
  require_clean(b);
}

TEST_CASE("lost RTU: COMM_EST is passed to rdma_notify and the passive side establishes",
          "[cm][establish]") {
  // mlx and ehca report COMM_EST when data reaches a QP still in RTR; rxe
  // reports no async event at all (there the REP timeout stays the bound).
  Cluster c(GENERATE(Profile::kMlx, Profile::kEhca));
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.fabric.faults().lose_rtu(b.addr);
  a.mgr->send(b.ep(), packet(1));
  c.run(20ms);  // far below connect_timeout (5 s)
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(b.ctr().comm_est_notified == 1);
  CHECK(in_service(b) == 1);
  CHECK(b.ctr().connects_established == 1);
  CHECK(b.ctr().connect_failures == 0);
  // The connection carries traffic both ways.
  b.mgr->send(a.ep(), packet(2));
  c.run(10ms);
  REQUIRE(a.sink.packets.size() == 1);
  CHECK(seq_of(a.sink.packets[0].bytes) == 2);
}

TEST_CASE("REQ from the same live incarnation replaces our stale connection", "[cm][establish]") {
  // a's REP event is lost: a gives up its attempt at connect_timeout while b
  // already holds the connection ESTABLISHED, and b misses the disconnect of
  // that attempt too (its DISCONNECTED event is lost). a's next REQ (same incarnation)
  // proves a holds no connection to b: b accepts it and tears the stale one
  // down instead of answering REJ duplicate until a gives up.
  const Profile prof = any_profile();
  Cluster c(prof);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.fabric.faults().cm(sim::FaultAction::kDrop, rdma::CmEventType::kEstablished, 1, a.addr);
  c.fabric.faults().cm(sim::FaultAction::kDrop, rdma::CmEventType::kDisconnected, 1, b.addr);
  c.connect(a, b);
  REQUIRE(in_service(b) == 1);
  REQUIRE(in_service(a) == 0);
  c.run(a.mgr->config().connect_timeout + 500ms);
  CHECK(b.ctr().rejects_sent_duplicate == 0);
  // mlx and ehca move b's QP to ERR on the lost DREQ and report Last WQE
  // Reached, so b learns on its own; on rxe nothing moves it (docs/lab.md)
  // and only the new REQ reveals the stale connection.
  if (prof == Profile::kRxe)
    CHECK(b.ctr().stale_replaced == 1);
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(in_service(a) == 1);
  CHECK(in_service(b) == 1);
  // One connection, the QPNs point at each other.
  auto sa = a.mgr->snapshot();
  auto sb = b.mgr->snapshot();
  const auto live = [](const cm::Snapshot& s) {
    for (const auto& q : s.qps)
      if (q.in_service)
        return q;
    return cm::QpSnapshot{};
  };
  CHECK(live(sa).remote_qpn == live(sb).qpn);
  CHECK(live(sb).remote_qpn == live(sa).qpn);
  c.run(3s);
  b.mgr->send(a.ep(), packet(2));
  c.run(10ms);
  CHECK(a.sink.packets.size() == 1);
}

TEST_CASE("connect retries back off with jitter: a storm does not retry in lockstep",
          "[cm][establish]") {
  // Eight nodes start connecting to one unreachable peer at the same instant;
  // their attempts fail at the same instant. The retries must spread out.
  Cluster c(Profile::kMlx);
  auto& target = c.add(100);
  std::vector<Node*> senders;
  for (int i = 1; i <= 8; ++i)
    senders.push_back(&c.add(i, [](cm::ManagerConfig& m) { m.connect_retries = 3; }));
  c.fabric.faults().isolate(target.addr);
  for (Node* n : senders)
    n->mgr->send(target.ep(), packet(1));
  std::map<Node*, std::vector<TimePoint>> starts;
  std::map<Node*, std::uint64_t> seen;
  for (int ms = 0; ms < 30000; ++ms) {
    c.run(1ms);
    for (Node* n : senders) {
      if (n->ctr().connects_started != seen[n]) {
        seen[n] = n->ctr().connects_started;
        starts[n].push_back(c.fabric.now());
      }
    }
  }
  std::set<TimePoint> second;
  for (Node* n : senders) {
    REQUIRE(starts[n].size() >= 2);
    CHECK(starts[n].size() <= 4);  // 1 + connect_retries
    second.insert(starts[n][1]);
  }
  CHECK(second.size() >= 6);  // no lockstep: (nearly) every node retries at its own time
}

TEST_CASE("REJ from a node where rcnetd is not running: retried with backoff, then held down",
          "[cm][establish]") {
  // The peer's host is up but nothing listens on rcnet's port (the daemon is
  // restarting): its CM answers every REQ with REJ "invalid service id".
  // Packets must not each send a REQ; they wait for a retry with backoff, and
  // once the peer's daemon is back the next retry connects.
  Cluster c(Profile::kRxe);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.connect_retries = 3; });
  auto& b = c.add(2);
  // kill -9 of the daemon: its ids and QPs are gone, the host and its CM stay.
  b.sim->crash();
  b.mgr.reset();
  b.sim->restart();
  for (std::uint32_t i = 0; i < 200; ++i) {
    a.mgr->send(b.ep(), packet(i));
    c.run(10ms);
  }
  const auto& k = a.ctr();
  CHECK(k.rejects_received >= 2);
  // 1 attempt + connect_retries retries (100, 200, 400 ms x [0.5, 1.5)),
  // then the peer is held down for ~5 s: at most 4 REQs in these 2 s, where
  // one REQ per packet would be about 200.
  CHECK(k.connects_started <= 4);
  CHECK(k.drops_connect_failed > 0);
  CHECK(a.mgr->live_qpns().empty());
  // The daemon comes back: the packets sent meanwhile go out with the next
  // retry, without a REQ per packet.
  c.restart(2, 0x2002);
  const auto before = k.connects_started;
  for (std::uint32_t i = 0; i < 800; ++i) {
    a.mgr->send(b.ep(), packet(1000 + i));
    c.run(10ms);
  }
  CHECK(k.connects_started - before <= 2);
  CHECK(in_service(a) == 1);
  CHECK(!c[2].sink.packets.empty());
}

TEST_CASE(
    "a restarted peer that dials at once: its REQ is taken while we back off, and what "
    "we queued goes at once",
    "[cm][establish][restart]") {
  // rcnetd restarted under systemd dials the peers it had (daemon
  // setup_peer_memory: PacketPort::dial, Manager::ensure_link) instead of
  // waiting for a packet; its peer, backing off after the REJs it got while
  // nothing listened, takes that REQ and sends its queue without waiting
  // for its own retry.
  Cluster c(Profile::kRxe);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.connect_retries = 5; });
  auto& b = c.add(2);
  c.connect(a, b);
  // systemctl restart: a graceful stop (DREQ), then nothing listens a while
  // (its CM answers REJ) while a has packets for it.
  b.mgr->shutdown();
  c.run(2s);
  REQUIRE(in_service(a) == 0);
  b.sim->crash();  // the process exits: what it still held goes with it
  b.mgr.reset();
  b.sim->restart();
  for (std::uint32_t i = 0; i < 5; ++i)
    a.mgr->send(b.ep(), packet(i));
  // Until a's next retry is at least 80 ms away (its second or third backoff).
  const auto retry_in = [&] {
    const auto s = a.mgr->snapshot();
    return s.peers.empty() || !s.peers[0].retry_in ? Duration::zero() : *s.peers[0].retry_in;
  };
  for (int i = 0; i < 2000 && retry_in() < 80ms; ++i)
    c.run(1ms);
  REQUIRE(retry_in() >= 80ms);
  REQUIRE(a.ctr().rejects_received >= 1);
  REQUIRE(a.mgr->snapshot().peers[0].queue_depth == 5);
  const auto started = a.ctr().connects_started;

  c.restart(2, 0x2002);
  REQUIRE(c[2].mgr->ensure_link(a.ep()));
  c.run(20ms);
  CHECK(a.ctr().connects_started == started);  // a did not dial: it was dialled
  CHECK(in_service(a) == 1);
  CHECK(c[2].sink.packets.size() == 5);
  CHECK(a.mgr->snapshot().peers[0].queue_depth == 0);
}

TEST_CASE("a peer's snapshot says why it is unreachable; connect and teardown times are kept",
          "[cm][establish]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.connect_retries = 3; });
  auto& b = c.add(2);
  b.sim->crash();
  b.mgr.reset();
  b.sim->restart();  // nothing listens: its CM answers REJ
  // The failed attempt's log record carries MESSAGE_ID connect_failed.
  struct IdSink final : spdlog::sinks::base_sink<spdlog::details::null_mutex> {
    std::vector<std::string> ids;
    void sink_it_(const spdlog::details::log_msg&) override {
      if (const log::Fields* f = log::current_fields(); f != nullptr && !f->message_id.empty())
        ids.emplace_back(f->message_id);
    }
    void flush_() override {}
  };
  auto ids = std::make_shared<IdSink>();
  auto old = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", ids));
  a.mgr->send(b.ep(), packet(0));
  c.run(20ms);
  spdlog::set_default_logger(old);
  CHECK(std::count(ids->ids.begin(), ids->ids.end(), std::string(log::kMsgConnectFailed)) >= 1);
  auto s = a.mgr->snapshot();
  REQUIRE(s.peers.size() == 1);
  const cm::PeerSnapshot& p = s.peers[0];
  CHECK(p.attempts >= 1);
  REQUIRE(p.since_attempt.has_value());
  CHECK(*p.since_attempt <= 20ms);
  CHECK_THAT(p.last_result, Catch::Contains("REJ"));
  REQUIRE(p.since_result.has_value());
  CHECK(*p.since_result <= *p.since_attempt);
  REQUIRE(p.retry_in.has_value());  // backing off, not given up
  CHECK(*p.retry_in > Duration::zero());
  CHECK(s.connect_time.count == 0);

  c.restart(2, 0x2002);
  for (int i = 0; i < 100 && in_service(a) == 0; ++i) {
    a.mgr->send(b.ep(), packet(1 + static_cast<std::uint32_t>(i)));
    c.run(50ms);
  }
  REQUIRE(in_service(a) == 1);
  s = a.mgr->snapshot();
  REQUIRE(s.peers.size() == 1);
  CHECK(s.peers[0].last_result == "ESTABLISHED");
  CHECK(s.peers[0].attempts == 0);
  CHECK_FALSE(s.peers[0].retry_in.has_value());
  CHECK(s.connect_time.count == 1);
  CHECK(s.connect_time.le.back() == 1);  // within 30 s
  CHECK(s.connect_time.sum_seconds > 0);

  const auto torn = s.teardown_time.count;
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(500ms);
  CHECK(a.mgr->live_qpns().empty());
  s = a.mgr->snapshot();
  CHECK(s.teardown_time.count > torn);
  CHECK(s.teardown_time.count <= a.ctr().cm_ids_destroyed);  // one per teardown at most
  // Cumulative buckets: each bound counts at least what the one before it does.
  for (std::size_t i = 1; i < cm::Histogram::kBuckets; ++i)
    CHECK(s.teardown_time.le[i] >= s.teardown_time.le[i - 1]);
}

}  // namespace cm_establish_test
