// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The connection manager on the simulated fabric, virtual clock, no sleeps.
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
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

namespace {

// `n` received packet(0) .. packet(last), exactly those, in order.
void require_in_order(Node& n, std::uint32_t last) {
  REQUIRE(n.sink.packets.size() == std::size_t{last} + 1);
  for (std::uint32_t i = 0; i <= last; ++i)
    CHECK(seq_of(n.sink.packets[i].bytes) == i);
}

}  // namespace

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

TEST_CASE("peer crash without DREQ: reaped at idle_timeout", "[cm][reap]") {
  const auto profile = any_profile();
  Cluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  a.mgr->send(b.ep(), packet(1));
  c.run(300ms);  // the send's reclaim SEND has completed: nothing outstanding towards b
  const auto t0 = c.fabric.now() - 300ms;
  b.sim->crash();
  const auto cfg = a.mgr->config();
  // Just before idle_timeout: still there.
  c.run(cfg.idle_timeout - cfg.reaper_interval - 300ms);
  CHECK(a.ctr().idle_reaps == 0);
  // By idle_timeout + one reaper tick the reap has started.
  c.run(2 * cfg.reaper_interval + 10ms);
  CHECK(a.ctr().idle_reaps == 1);
  CHECK(c.fabric.now() - t0 <= cfg.idle_timeout + 2 * cfg.reaper_interval);
  c.run(2s);
  require_clean(a);
}

TEST_CASE("send to a dead peer: retry exceeded reaps it at once", "[cm][reap]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kEhca));
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  b.sim->crash();
  for (std::uint32_t i = 0; i < 20; ++i)
    a.mgr->send(b.ep(), packet(i));  // some signaled
  c.run(2s);                         // < idle_timeout
  CHECK(a.ctr().dead_peer_reaps == 1);
  CHECK(a.ctr().idle_reaps == 0);
  require_clean(a);
}

TEST_CASE("ack_timeout reaches the QPs: a smaller one reaps a dead peer sooner", "[cm][reap]") {
  // retry_count 3: retry exceeded after 4 local ACK timeouts of 4.096 us *
  // 2^ack_timeout, i.e. 17 ms with 10 and 268 ms with the default 14.
  const auto time_to_reap = [](std::optional<std::uint8_t> ack_timeout) {
    Cluster c(Profile::kMlx);
    auto& a = c.add(1, [&](cm::ManagerConfig& m) {
      if (ack_timeout)
        m.ack_timeout = *ack_timeout;
    });
    auto& b = c.add(2);
    c.connect(a, b);
    REQUIRE(in_service(a) == 1);
    b.sim->crash();
    const TimePoint t0 = c.fabric.now();
    a.mgr->send(b.ep(), packet(2));
    while (a.ctr().dead_peer_reaps == 0 && c.fabric.now() - t0 < 2s)
      c.run(1ms);
    CHECK(a.ctr().dead_peer_reaps == 1);
    CHECK(a.ctr().idle_reaps == 0);
    return c.fabric.now() - t0;
  };
  CHECK(cm::ManagerConfig{}.ack_timeout == 14);
  const Duration fast = time_to_reap(10);
  const Duration dflt = time_to_reap(std::nullopt);
  CHECK(fast >= 4 * rdma::ack_timeout_duration(10).value());
  CHECK(fast < 30ms);
  CHECK(dflt >= 4 * rdma::ack_timeout_duration(14).value());
  CHECK(dflt < 300ms);
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

TEST_CASE("neighbour FAILED and link down reap at once", "[cm][reap]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1);
  auto& b = c.add(2);
  auto& d = c.add(3);
  a.mgr->send(b.ep(), packet(1));
  a.mgr->send(d.ep(), packet(1));
  c.run(10ms);
  REQUIRE(in_service(a) == 2);
  a.mgr->peer_failed(b.addr, "neighbour FAILED");
  CHECK(in_service(a) == 1);
  CHECK(a.ctr().dead_peer_reaps == 1);
  a.mgr->link_changed(false);
  CHECK(in_service(a) == 0);
  CHECK(a.mgr->send(d.ep(), packet(2)) == cm::SendResult::kRefused);
  c.run(1s);
  require_clean(a);
  a.mgr->link_changed(true);
  a.mgr->send(d.ep(), packet(3));
  c.run(50ms);
  CHECK(in_service(a) == 1);
}

TEST_CASE("neighbour FAILED about a peer heard from while it was resolved: kept, resolved again",
          "[cm][reap]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.idle_timeout = 60s; });
  auto& b = c.add(2, [](cm::ManagerConfig& m) { m.idle_timeout = 60s; });
  std::vector<std::string> uses;
  a.mgr->set_neighbour_ops(
      {.flush = {}, .use = [&](const IpAddr& p) { uses.push_back(p.to_string()); }});
  c.connect(a, b);
  b.mgr->send(a.ep(), packet(2));  // a hears from b
  c.run(10ms);
  REQUIRE(in_service(a) == 1);
  const std::size_t resolves = uses.size();
  // The lab's case: the resolution that failed began before the link came
  // back; b answered since. Believing it would tear down a working link.
  a.mgr->peer_failed(b.addr, "neighbour FAILED", 6s);
  CHECK(in_service(a) == 1);
  CHECK(a.ctr().neighbour_failed_stale == 1);
  CHECK(a.ctr().dead_peer_reaps == 0);
  REQUIRE(uses.size() == resolves + 1);  // a new resolution, started at once
  CHECK(uses.back() == b.addr.to_string());
  // Silent for longer than the resolution can last: this FAILED is news.
  c.run(6500ms);
  REQUIRE(in_service(a) == 1);
  a.mgr->peer_failed(b.addr, "neighbour FAILED", 6s);
  CHECK(in_service(a) == 0);
  CHECK(a.ctr().dead_peer_reaps == 1);
  CHECK(a.ctr().neighbour_failed_stale == 1);
}

TEST_CASE("neighbour ops: use before every resolve, flush before a destroy on a down link",
          "[cm][reap]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1);
  auto& b = c.add(2);
  std::vector<std::string> calls;  // "use ADDR" / "flush ADDR", in order
  std::uint64_t destroyed_at_flush = 0;
  a.mgr->set_neighbour_ops(
      {.flush =
           [&](const IpAddr& p) {
             calls.push_back("flush " + p.to_string());
             destroyed_at_flush = a.ctr().qps_destroyed;
           },
       .use = [&](const IpAddr& p) { calls.push_back("use " + p.to_string()); }});
  a.mgr->send(b.ep(), packet(1));
  c.run(10ms);
  REQUIRE(in_service(a) == 1);
  REQUIRE(calls == std::vector<std::string>{"use " + b.addr.to_string()});
  // A teardown with the link up (an operator's disconnect) flushes nothing.
  a.mgr->disconnect_peer(b.mgr->node_id(), "test");
  c.run(1s);
  CHECK(calls.size() == 1);
  a.mgr->send(b.ep(), packet(2));
  c.run(10ms);
  REQUIRE(in_service(a) == 1);
  CHECK(calls.size() == 2);
  const std::uint64_t before = a.ctr().qps_destroyed;
  a.mgr->link_changed(false);
  c.run(3s);
  require_clean(a);
  REQUIRE(calls.size() == 3);
  CHECK(calls.back() == "flush " + b.addr.to_string());
  CHECK(destroyed_at_flush == before);  // before the QP's destroy, not after
  CHECK(a.ctr().qps_destroyed == before + 1);
  CHECK(a.ctr().slow_destroys == 0);
}

TEST_CASE("idle connections are reaped and come back on demand", "[cm][reap]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b);
  c.run(a.mgr->config().idle_timeout + 1s);
  CHECK(a.ctr().idle_reaps + b.ctr().idle_reaps >= 1);
  c.run(2s);
  require_clean(a);
  require_clean(b);
  a.mgr->send(b.ep(), packet(2));
  c.run(50ms);
  CHECK(b.sink.packets.size() == 2);
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

TEST_CASE("back-pressure: slots run out, sending resumes, nothing lost", "[cm][datapath]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.send_slots = 8;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 200);
  CHECK(a.sink.capacity_off >= 1);
  c.run(100ms);
  CHECK(a.sink.capacity_on >= 1);
  CHECK(a.sink.capacity_on == a.sink.capacity_off);  // every pause was ended
  require_in_order(b, 200);
}

TEST_CASE("an idle QP's unsignaled sends are reclaimed so their slots come back",
          "[cm][datapath]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.signal_every = 1000; });
  auto& b = c.add(2);
  for (std::uint32_t i = 0; i < 5; ++i)
    a.mgr->send(b.ep(), packet(i));
  c.run(10ms);
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free < s.send_slots_total);
  c.run(300ms);  // a reaper tick or two
  s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
  CHECK(b.sink.packets.size() == 5);  // the reclaim SEND is not delivered as a packet
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

TEST_CASE("SRQ limit events are counted and the data path goes on", "[cm][datapath]") {
  // The simulated HCA reposts faster than one sender can drain the SRQ, so
  // the event is handed to the manager directly, as the seam would.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2, [](cm::ManagerConfig& m) {
    m.srq_size = 32;
    m.srq_limit = 16;
  });
  c.connect(a, b, 0);
  for (int k = 0; k < 2; ++k) {
    b.mgr->on_async_event(rdma::AsyncEvent{rdma::AsyncEventType::kSrqLimitReached, 0});
    for (std::uint32_t i = 1; i <= 40; ++i)
      a.mgr->send(b.ep(), packet(static_cast<std::uint32_t>(k) * 100 + i));
    c.run(50ms);
  }
  CHECK(b.ctr().srq_limit_events == 2);
  CHECK(b.sink.packets.size() == 81);
  CHECK(b.sim->srq_posted() == 32);
  auto s = b.mgr->snapshot();
  CHECK(s.srq.limit_events == 2);
  CHECK(s.srq.posted == 32);
  CHECK(s.srq.limit == 16);
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

TEST_CASE("back-pressure ends when a blocked peer's QP is destroyed without completions",
          "[cm][datapath]") {
  // The CQ overflows while the sender is paused: no completion will ever free
  // a slot, the QPs are destroyed at their drain bounds, and the true edge must
  // still come, from the entry point that destroyed them.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.send_slots = 8;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 100);
  REQUIRE(a.sink.capacity_off == 1);
  c.fabric.faults().cq_overflow(a.addr);
  c.run(3s);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sink.capacity_on == a.sink.capacity_off);
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

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

TEST_CASE("a small SQ never fills with unsignaled sends: a burst goes through at once",
          "[cm][datapath]") {
  // qp_send_depth 8 with signal_every 16: without a signaled WR among the
  // posted ones no completion would free room until the reaper's reclaim SEND (one
  // reaper_interval later), and TUN reading would stall that long.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.qp_send_depth = 8;
    m.signal_every = 16;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 40);
  c.run(50ms);  // far below reaper_interval (1 s)
  require_in_order(b, 40);
  CHECK(a.sink.capacity_on == a.sink.capacity_off);
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

}  // namespace cm_manager_test
