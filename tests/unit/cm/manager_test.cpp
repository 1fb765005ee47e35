// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The connection manager on the simulated fabric, virtual clock, no sleeps.
// Its reaping is in reaper_test.cpp, its data path in datapath_test.cpp and
// connection setup in establish_test.cpp.
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include "catch2_compat.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "cm/manager.hpp"
#include "harness.hpp"
#include "raw_client.hpp"
#include "rdma/ib_timers.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"

namespace cm_manager_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

TEST_CASE("on-demand connect delivers queued packets in order", "[cm]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  auto& b = c.add(2);
  for (std::uint32_t i = 0; i < 10; ++i) {
    CHECK(a.mgr->send(b.ep(), packet(i)) == cm::SendResult::kQueued);
  }
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 10);
  for (std::uint32_t i = 0; i < 10; ++i) {
    CHECK(seq_of(b.sink.packets[i].bytes) == i);
    CHECK(b.sink.packets[i].bytes == packet(i));
    CHECK(b.sink.packets[i].from == a.mgr->node_id());
  }
  // Now ESTABLISHED: the next one is sent directly, and the other way works.
  CHECK(a.mgr->send(b.ep(), packet(10)) == cm::SendResult::kSent);
  CHECK(b.mgr->send(a.ep(), packet(11, 2048)) == cm::SendResult::kSent);
  CHECK(b.mgr->send(a.ep(), packet(12, 2049)) == cm::SendResult::kOversize);
  c.run(10ms);
  CHECK(b.sink.packets.size() == 11);
  REQUIRE(a.sink.packets.size() == 1);
  CHECK(a.sink.packets[0].bytes == packet(11, 2048));
  CHECK(a.ctr().connects_established == 1);
  CHECK(b.ctr().accepts == 1);
  CHECK(b.ctr().drops_oversize == 1);
  auto s = a.mgr->snapshot();
  REQUIRE(s.qps.size() == 1);
  CHECK(s.qps[0].state == cm::ConnState::kEstablished);
  CHECK(s.qps[0].tx_packets == 11);
  CHECK(s.qps[0].rx_packets == 1);
  CHECK(s.qps[0].remote_qpn == b.mgr->live_qpns().at(0));
  REQUIRE(s.peers.size() == 1);
  CHECK(s.peers[0].incarnation == b.mgr->config().incarnation);
  CHECK(s.peers[0].overlay == b.mgr->config().overlay);
}

TEST_CASE("connect/teardown cycles leave nothing behind", "[cm][cycles]") {
  const auto profile = any_profile();
  Cluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  const int cycles = 10000;
  std::size_t delivered = 0;
  for (int i = 0; i < cycles; ++i) {
    // Alternate who opens and who closes.
    Node& from = (i % 2) ? a : b;
    Node& to = (i % 2) ? b : a;
    from.mgr->send(to.ep(), packet(static_cast<std::uint32_t>(i)));
    c.run(5ms);
    REQUIRE(from.mgr->disconnect_peer(to.mgr->node_id(), "test cycle"));
    c.run(700ms);  // > disconnect + last_wqe + drain bounds
    delivered = a.sink.packets.size() + b.sink.packets.size();
    if (static_cast<int>(delivered) != i + 1)
      FAIL("cycle " << i << " lost its packet");
  }
  CHECK(delivered == cycles);
  require_clean(a);
  require_clean(b);
  CHECK(a.ctr().qps_created + b.ctr().qps_created == 2 * cycles);
  if (profile == Profile::kMlx) {
    CHECK(a.ctr().last_wqe_timeouts + b.ctr().last_wqe_timeouts == 0);
    CHECK(a.ctr().last_wqe_received + b.ctr().last_wqe_received == 2 * cycles);
  } else {
    // ehca and rxe never deliver Last WQE Reached: every QP took the bounded fallback.
    CHECK(a.ctr().last_wqe_received + b.ctr().last_wqe_received == 0);
    CHECK(a.ctr().last_wqe_timeouts + b.ctr().last_wqe_timeouts == 2 * cycles);
  }
  CHECK(a.ctr().drains_completed + b.ctr().drains_completed == 2 * cycles);
  CHECK(a.ctr().forced_destroys + b.ctr().forced_destroys == 0);
}

TEST_CASE("Last WQE never delivered: destroyed within last_wqe_timeout + drain", "[cm][teardown]") {
  const auto profile = GENERATE(Profile::kEhca, Profile::kRxe);
  Cluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  REQUIRE(in_service(a) == 1);
  const auto start = c.fabric.now();
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  // Stage visible while it happens.
  c.run(50ms);
  auto s = a.mgr->snapshot();
  REQUIRE(s.qps.size() == 1);
  CHECK(s.qps[0].state == cm::ConnState::kAwaitLastWqe);
  CHECK(s.qps[0].teardown_reason == "test");
  // Step until gone and measure when.
  TimePoint gone{};
  while (c.fabric.now() - start < 2s) {
    c.run(1ms);
    if (a.mgr->live_qpns().empty()) {
      gone = c.fabric.now();
      break;
    }
  }
  REQUIRE(gone != TimePoint{});
  const auto cfg = a.mgr->config();
  CHECK(gone - start >= cfg.last_wqe_timeout);
  CHECK(gone - start <= cfg.disconnect_timeout + cfg.last_wqe_timeout + cfg.drain_timeout);
  CHECK(a.ctr().last_wqe_timeouts == 1);
  CHECK(a.ctr().drains_completed == 1);
  CHECK(a.ctr().forced_destroys == 0);
  c.run(1s);
  require_clean(a);
  require_clean(b);
}

TEST_CASE("drain WR never completes: destroyed at drain_timeout, counted", "[cm][teardown]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  const auto qpn = a.mgr->live_qpns().at(0);
  c.fabric.faults().drop_drain_completion(a.addr, qpn);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(1s);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.ctr().drain_timeouts == 1);
  CHECK(a.ctr().forced_destroys == 1);
  CHECK(a.ctr().drains_completed == 0);
  c.run(1s);
  require_clean(a);
  require_clean(b);
}

TEST_CASE("QP FATAL and Last WQE on one QP: one teardown", "[cm][async]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  const auto qpn = a.mgr->live_qpns().at(0);
  REQUIRE(c.fabric.faults().inject_qp_fatal(a.addr, qpn));
  c.run(5ms);
  // A duplicate Last WQE on top of the real one.
  c.fabric.faults().inject_last_wqe(a.addr, qpn);
  c.run(1s);
  CHECK(a.ctr().qp_fatal_events == 1);
  CHECK(a.ctr().qps_destroyed == 1);
  CHECK(a.ctr().last_wqe_timeouts == 0);
  CHECK(a.ctr().async_events_ignored >= 1);
  require_clean(a);
  // The peer notices through DREQ/retries and is clean too; traffic reconnects.
  a.mgr->send(b.ep(), packet(2));
  c.run(2s);
  CHECK(b.sink.packets.size() == 2);
}

TEST_CASE("duplicate and reordered async and CM events are counted, never fatal", "[cm][async]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.fabric.faults().async(sim::FaultAction::kDuplicate, rdma::AsyncEventType::kLastWqeReached, 4);
  c.fabric.faults().cm(sim::FaultAction::kDuplicate, rdma::CmEventType::kEstablished, 2);
  c.fabric.faults().cm(sim::FaultAction::kReorder, rdma::CmEventType::kDisconnected, 2);
  c.connect(a, b);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(2s);
  CHECK(a.ctr().async_events_ignored + b.ctr().async_events_ignored >= 1);
  CHECK(a.ctr().cm_events_ignored + b.ctr().cm_events_ignored >= 1);
  require_clean(a);
  require_clean(b);
  // Still works afterwards.
  b.mgr->send(a.ep(), packet(2));
  c.run(100ms);
  CHECK(a.sink.packets.size() == 1);
}

TEST_CASE("simultaneous open of two nodes converges on one connection", "[cm][collision]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  auto& b = c.add(2);
  for (std::uint32_t i = 0; i < 5; ++i) {
    a.mgr->send(b.ep(), packet(i));
    b.mgr->send(a.ep(), packet(100 + i));
  }
  c.run(500ms);
  CHECK(in_service(a) == 1);
  CHECK(in_service(b) == 1);
  CHECK(a.mgr->live_qpns().size() == 1);
  CHECK(b.mgr->live_qpns().size() == 1);
  CHECK(a.sink.packets.size() == 5);
  CHECK(b.sink.packets.size() == 5);
  // Lower node id wins: a (10.99.0.1) rejected b's REQ; b merged.
  CHECK(a.ctr().rejects_sent_collision == 1);
  CHECK(b.ctr().collisions_merged == 1);
  // Both sides name the same QP pair.
  auto sa = a.mgr->snapshot(), sb = b.mgr->snapshot();
  CHECK(sa.qps[0].remote_qpn == sb.qps[0].qpn);
  CHECK(sb.qps[0].remote_qpn == sa.qps[0].qpn);
  c.run(2s);
  CHECK(a.sim->stats().misuse == 0);
  CHECK(b.sim->stats().misuse == 0);
}

TEST_CASE("16 nodes all connecting to all at one instant: one connection per pair",
          "[cm][collision]") {
  Cluster c(any_profile());
  const int n = 16;
  for (int i = 1; i <= n; ++i)
    c.add(i);
  for (int i = 1; i <= n; ++i) {
    for (int j = 1; j <= n; ++j) {
      if (i != j)
        c[i].mgr->send(c[j].ep(), packet(static_cast<std::uint32_t>(i * 100 + j)));
    }
  }
  c.run(3s);
  std::size_t merged = 0, rejected = 0;
  for (int i = 1; i <= n; ++i) {
    INFO("node " << i);
    CHECK(in_service(c[i]) == n - 1);
    CHECK(c[i].mgr->live_qpns().size() == n - 1);
    CHECK(c[i].sim->live_qps() == n - 1);
    CHECK(c[i].sink.packets.size() == n - 1);  // no packet lost from the queues
    std::set<NodeId> from;
    for (auto& p : c[i].sink.packets)
      from.insert(p.from);
    CHECK(from.size() == n - 1);
    CHECK(c[i].ctr().drops_queue_full + c[i].ctr().drops_connect_failed == 0);
    CHECK(c[i].sim->stats().misuse == 0);
    merged += c[i].ctr().collisions_merged;
    rejected += c[i].ctr().rejects_sent_collision;
  }
  CHECK(merged == rejected);
  // Every pair's QPs point at each other.
  for (int i = 1; i <= n; ++i) {
    for (auto& q : c[i].mgr->snapshot().qps) {
      int j = static_cast<int>(q.peer_node & 0xff);
      auto theirs = c[j].mgr->snapshot().qps;
      auto it = std::find_if(theirs.begin(), theirs.end(),
                             [&](auto& t) { return t.qpn == q.remote_qpn; });
      REQUIRE(it != theirs.end());
      CHECK(it->remote_qpn == q.qpn);
    }
  }
}

TEST_CASE("peer restart: old QP reaped at the new REQ, not at the timer", "[cm][restart]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  const auto old_qpn = a.mgr->live_qpns().at(0);
  b.sim->crash();
  c.run(1ms);
  b.sim->restart();
  c.restart(2, 0xbeef);
  auto& b2 = c[2];
  b2.mgr->send(a.ep(), packet(2));
  c.run(100ms);  // far below idle_timeout (5 s)
  CHECK(a.ctr().restarts_detected == 1);
  CHECK(a.ctr().idle_reaps == 0);
  auto s = a.mgr->snapshot();
  CHECK(std::none_of(s.qps.begin(), s.qps.end(),
                     [&](auto& q) { return q.qpn == old_qpn && q.in_service; }));
  CHECK(a.sink.packets.size() == 1);
  c.run(1s);  // teardown bounds
  auto qpns = a.mgr->live_qpns();
  CHECK(std::find(qpns.begin(), qpns.end(), old_qpn) == qpns.end());
  CHECK(qpns.size() == 1);
  CHECK(in_service(a) == 1);
  REQUIRE(a.mgr->snapshot().peers.size() == 1);
  CHECK(a.mgr->snapshot().peers[0].incarnation == 0xbeef);
}

TEST_CASE("rnr_timer reaches the QPs: a peer resends after our RNR NAK that much later",
          "[cm][faults]") {
  // The responder's min_rnr_timer sets the pause, whatever the sender's is.
  const auto naks_in_100ms = [](std::uint8_t receiver_rnr_timer) {
    Cluster c(Profile::kMlx);
    auto& a = c.add(1, [](cm::ManagerConfig& m) { m.min_rnr_timer = 0; });
    auto& b = c.add(2, [&](cm::ManagerConfig& m) { m.min_rnr_timer = receiver_rnr_timer; });
    c.connect(a, b, 0);
    REQUIRE(b.sink.packets.size() == 1);
    c.fabric.faults().starve_receives(b.addr, true);
    const std::uint64_t before = a.sim->stats().rnr_naks;
    a.mgr->send(b.ep(), packet(1));
    c.run(100ms);
    const std::uint64_t naks = a.sim->stats().rnr_naks - before;
    c.fabric.faults().starve_receives(b.addr, false);
    c.run(50ms);
    CHECK(b.sink.packets.size() == 2);  // rnr_retry_count 7: nothing lost
    return naks;
  };
  CHECK(cm::ManagerConfig{}.min_rnr_timer == 12);
  const std::uint64_t slow = naks_in_100ms(20);  // 10.24 ms
  const std::uint64_t fast = naks_in_100ms(12);  // 0.64 ms
  CHECK(slow >= 9);
  CHECK(slow <= 11);
  CHECK(fast >= 150);
  CHECK(fast <= 160);
}

TEST_CASE("max_connections with SRQ: LRU evicted, new peer gets through", "[cm][limits]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.max_connections = 3; });
  for (int i = 2; i <= 5; ++i)
    c.add(i);
  for (int i = 2; i <= 4; ++i) {
    a.mgr->send(c[i].ep(), packet(1));
    c.run(50ms);
  }
  REQUIRE(in_service(a) == 3);
  // Touch 2 and 4 so that 3 is least recently used.
  a.mgr->send(c[2].ep(), packet(2));
  a.mgr->send(c[4].ep(), packet(2));
  c.run(1s);  // older than kEvictMinAge: evictable
  a.mgr->send(c[5].ep(), packet(1));
  c.run(1s);
  CHECK(a.ctr().evictions == 1);
  CHECK(in_service(a) == 3);
  CHECK(c[5].sink.packets.size() == 1);
  auto s = a.mgr->snapshot();
  const NodeId evicted = c[3].mgr->node_id();
  CHECK(std::none_of(s.qps.begin(), s.qps.end(), [&](auto& q) { return q.peer_node == evicted; }));
}

TEST_CASE("non-SRQ mode: LRU eviction at the limit, teardown without Last WQE", "[cm][limits]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto no_srq = [](cm::ManagerConfig& m) {
    m.use_srq = false;
    m.max_connections = 4;
    m.idle_timeout = 30s;  // evicted, never reaped, in the 8 s this test runs
  };
  auto& a = c.add(1, no_srq);
  for (int i = 2; i <= 7; ++i) {
    c.add(i, [](cm::ManagerConfig& m) {
      m.use_srq = false;
      m.idle_timeout = 30s;
    });
  }
  for (int i = 2; i <= 7; ++i) {
    a.mgr->send(c[i].ep(), packet(static_cast<std::uint32_t>(i)));
    c.run(1s);  // each connection is older than kEvictMinAge when 6 and 7 come
  }
  CHECK(in_service(a) == 4);
  CHECK(a.ctr().evictions == 2);
  for (int i = 2; i <= 7; ++i)
    CHECK(c[i].sink.packets.size() == 1);
  c.run(2s);
  CHECK(a.ctr().last_wqe_received == 0);
  CHECK(a.ctr().last_wqe_timeouts == 0);  // flushed receives counted instead
  CHECK(a.ctr().flushed_recvs_counted >= 2 * a.mgr->config().rq_depth);
  CHECK(a.ctr().qps_destroyed == 2);
  CHECK(a.sim->stats().misuse == 0);
  // Default limit without SRQ is IPoIB-CM's 128.
  Cluster d(Profile::kRxe);
  auto& x = d.add(1, [](cm::ManagerConfig& m) {
    m.use_srq = false;
    m.max_connections = 0;
  });
  CHECK(x.mgr->config().max_connections == 128);
}

// Found by the manager fuzzer (its REQs got slow): 4 nodes at
// max_connections 2, each with traffic for all 3 others. LRU eviction took
// connections a moment old, so every REQ evicted one, every evicted peer
// reconnected at once for its queued packets, and the cluster churned at the
// handshake's rate: one node held 1,806 QPs in teardown (and as many cm ids)
// within 0.4 s of virtual time, at max_connections 2. A connection
// ESTABLISHED less than kEvictMinAge (1 s) ago is not evictable: the REQ gets
// REJ full, the peer backs off, and the peers take turns.
TEST_CASE("max_connections below the peers with traffic: no eviction churn, QPs bounded",
          "[cm][limits]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kEhca, Profile::kRxe);
  Cluster c(profile);
  for (int i = 1; i <= 4; ++i)
    c.add(i, [](cm::ManagerConfig& m) { m.max_connections = 2; });
  std::map<int, std::size_t> peak_qps;
  std::uint32_t seq = 0;
  const Duration run_time = 3s;
  for (Duration t{}; t < run_time; t += 10ms) {
    for (int i = 1; i <= 4; ++i) {
      for (int j = 1; j <= 4; ++j) {
        if (i != j)
          (void)c[i].mgr->send(c[j].ep(), packet(seq++));
      }
    }
    c.run(10ms);
    for (int i = 1; i <= 4; ++i)
      peak_qps[i] = std::max(peak_qps[i], c[i].sim->live_qps());
  }
  for (int i = 1; i <= 4; ++i) {
    INFO("node " << i << " (" << sim::to_string(profile) << "): peak QPs " << peak_qps[i]
                 << ", QPs created " << c[i].ctr().qps_created << ", evictions "
                 << c[i].ctr().evictions);
    // In service: at most 2. In teardown: what the node evicted (2 per
    // kEvictMinAge at most), what its peers evicted (DREQs) and abandoned
    // attempts, each for at most last_wqe + drain + disconnect timeouts.
    CHECK(peak_qps[i] <= 12);
    // Each of the 2 slots is evicted at most once per kEvictMinAge (1 s).
    CHECK(c[i].ctr().evictions <= 2 * (3 + 1));
    CHECK(c[i].ctr().qps_created <= 40);
    // Traffic still flows: the 2 connections in service carry packets.
    CHECK(c[i].sink.packets.size() > 100);
  }
  // max_connections is too low for this traffic, and the counter says so.
  std::uint64_t refused = 0;
  for (int i = 1; i <= 4; ++i)
    refused += c[i].ctr().evictions_refused;
  CHECK(refused > 0);
  // And it all ends: nothing left once the traffic stops.
  c.run(20s);
  for (int i = 1; i <= 4; ++i) {
    CHECK(c[i].sim->live_qps() == 0);
    CHECK(c[i].sim->stats().misuse == 0);
  }
}

// At max_connections with every connection younger than kEvictMinAge, a
// packet for a new peer waits in that peer's queue until the oldest
// connection may be evicted: no packet-by-packet connect attempt (each was
// a warning and a drop), and the queued packets get through afterwards.
TEST_CASE("max_connections, all connections young: a new peer's packets wait, then go",
          "[cm][limits]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.max_connections = 1; });
  c.add(2);
  c.add(3);
  a.mgr->send(c[2].ep(), packet(1));
  c.run(50ms);
  REQUIRE(c[2].sink.packets.size() == 1);
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  auto logger = std::make_shared<spdlog::logger>("capture", ring);
  logger->set_level(spdlog::level::warn);
  auto old = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  for (std::uint32_t i = 0; i < 20; ++i) {
    a.mgr->send(c[3].ep(), packet(100 + i));
    c.run(10ms);
  }
  spdlog::set_default_logger(old);
  CHECK(ring->last_formatted().empty());  // no warning per packet
  CHECK(a.ctr().drops_connect_failed == 0);
  CHECK(c[3].sink.packets.empty());  // 2's connection is 0.25 s old: not evictable yet
  c.run(1500ms);
  CHECK(a.ctr().evictions == 1);
  CHECK(c[3].sink.packets.size() == 20);  // all of them, once 2's connection could go
}

TEST_CASE("malformed REQ private data: REJ malformed, counted, nothing leaked", "[cm][wire]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1);
  // A raw client on node 9 speaking garbage through the seam directly.
  RawClient client;
  client.attach(c.fabric, node_addr(9), Profile::kRxe);
  auto bad = GENERATE(std::vector<std::uint8_t>{1, 2, 3}, std::vector<std::uint8_t>(56, 0xff),
                      std::vector<std::uint8_t>(56, 0));
  client.connect(a.ep(), bad);
  c.run(100ms);
  const rdma::CmEvent* rej = client.rejected();
  REQUIRE(rej != nullptr);
  auto d = wire::decode(rej->private_data, wire::Kind::kRej);
  REQUIRE(d.ok);
  CHECK((d.data.reason == wire::RejectReason::kMalformed ||
         d.data.reason == wire::RejectReason::kVersion));
  CHECK(a.ctr().malformed_private_data == 1);
  CHECK(a.ctr().rejects_sent_malformed + a.ctr().rejects_sent_version == 1);
  c.run(100ms);
  require_clean(a);
}

TEST_CASE("REQ from outside the allowed subnets is refused", "[cm]") {
  Cluster c(Profile::kMlx);
  auto& a =
      c.add(1, [](cm::ManagerConfig& m) { m.allowed_peers = {*IpPrefix::parse("10.99.0.0/30")}; });
  auto& b = c.add(2);
  auto& far = c.add(5);
  b.mgr->send(a.ep(), packet(1));
  far.mgr->send(a.ep(), packet(1));
  c.run(100ms);
  CHECK(a.sink.packets.size() == 1);
  CHECK(a.ctr().rejects_sent_not_allowed == 1);
  CHECK(far.ctr().drops_connect_failed == 1);
  c.run(1s);
  require_clean(far);
}

TEST_CASE("shutdown tears every QP down and stops", "[cm]") {
  Cluster c(any_profile());
  auto& a = c.add(1);
  for (int i = 2; i <= 5; ++i) {
    c.add(i);
    a.mgr->send(c[i].ep(), packet(1));
  }
  c.run(50ms);
  REQUIRE(in_service(a) == 4);
  a.mgr->shutdown();
  CHECK_FALSE(a.mgr->stopped());
  CHECK(a.mgr->send(c[2].ep(), packet(2)) == cm::SendResult::kRefused);
  c.run(1s);
  CHECK(a.mgr->stopped());
  require_clean(a);
  for (int i = 2; i <= 5; ++i) {
    c.run(1s);
    CHECK(c[i].mgr->live_qpns().empty());
  }
}

TEST_CASE("RNR: a receiver without buffers stalls the sender, nothing is lost", "[cm][faults]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.fabric.faults().starve_receives(b.addr, true);
  c.send_range(a, b, 1, 10);
  c.run(50ms);
  CHECK(b.sink.packets.size() == 1);  // stalled by RNR (rnr_retry_count 7: retry forever)
  CHECK(a.sim->stats().rnr_naks >= 1);
  c.fabric.faults().starve_receives(b.addr, false);
  c.run(50ms);
  require_in_order(b, 10);
  CHECK(a.ctr().dead_peer_reaps == 0);
}

TEST_CASE("RNR retries exhausted: the peer is reaped as dead", "[cm][faults]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.rnr_retry_count = 2; });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.fabric.faults().starve_receives(b.addr, true);
  c.send_range(a, b, 1, 20);
  c.run(1s);
  CHECK(a.ctr().dead_peer_reaps == 1);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sim->stats().misuse == 0);
}

TEST_CASE("CQ overflow: every QP torn down, forced where its drain is lost, nothing leaked",
          "[cm][faults]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1);
  for (int i = 2; i <= 4; ++i) {
    c.add(i);
    a.mgr->send(c[i].ep(), packet(1));
  }
  c.run(20ms);
  REQUIRE(in_service(a) == 3);
  c.fabric.faults().cq_overflow(a.addr);
  c.run(2s);
  CHECK(in_service(a) == 0);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sim->live_qps() == 0);
  CHECK(a.ctr().qps_destroyed == 3);
  CHECK(a.sim->stats().misuse == 0);
}

TEST_CASE("peers with nothing left are forgotten after their connection ends", "[cm]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  for (int i = 2; i <= 6; ++i) {
    c.add(i);
    a.mgr->send(c[i].ep(), packet(1));
  }
  c.run(20ms);
  CHECK(a.mgr->snapshot().peers.size() == 5);
  for (int i = 2; i <= 6; ++i)
    a.mgr->disconnect_peer(c[i].mgr->node_id(), "test");
  c.run(1s);
  CHECK(a.mgr->snapshot().peers.empty());
  CHECK(c[2].mgr->snapshot().peers.empty());
  // And they come back on demand.
  a.mgr->send(c[2].ep(), packet(2));
  c.run(20ms);
  CHECK(a.mgr->snapshot().peers.size() == 1);
  CHECK(c[2].sink.packets.size() == 2);
}

TEST_CASE("a port error is a warning, not an error, and the port coming back recovers",
          "[cm][limits]") {
  // An operator's alerting fires on error level; a link flap rcnet recovers
  // from must not trigger it.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  REQUIRE(in_service(a) == 1);
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto logger = std::make_shared<spdlog::logger>("capture", ring);
  logger->set_level(spdlog::level::trace);
  auto old = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  a.mgr->on_async_event(rdma::AsyncEvent{rdma::AsyncEventType::kPortError, 0});
  spdlog::set_default_logger(old);
  bool port_line = false;
  for (const auto& m : ring->last_raw()) {
    const std::string text(m.payload.begin(), m.payload.end());
    if (text.find("RDMA port") != std::string::npos) {
      port_line = true;
      CHECK(m.level == spdlog::level::warn);
    }
    CHECK(m.level < spdlog::level::err);
  }
  CHECK(port_line);
  CHECK(a.ctr().link_down_teardowns == 1);
  c.run(2s);
  a.mgr->on_async_event(rdma::AsyncEvent{rdma::AsyncEventType::kPortActive, 0});
  a.mgr->send(b.ep(), packet(2));
  c.run(10ms);
  CHECK(b.sink.packets.size() == 2);
}

}  // namespace cm_manager_test
