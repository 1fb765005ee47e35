// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The idle reaper and LRU eviction (lib/cm/limits.cpp): reaped within
// idle_timeout + reaper_interval, no wakeup unless something is due, and a
// wakeup's cost in connections visited is what it reaps, not what exists.
// Then dead peers: reaped at idle_timeout after a crash, at once on retry
// exceeded (sooner with a smaller ack_timeout), neighbour FAILED or link
// down, and the neighbour table's use and flush around them.
#include "catch2_compat.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "harness.hpp"
#include "rdma/ib_timers.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"

namespace cm_reaper_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

// The reaper's wakeups lie on multiples of reaper_interval since the clock's
// epoch (cm/manager.hpp, ManagerConfig::reaper_interval).
TimePoint grid_ceil(TimePoint t, Duration step) {
  const auto since = t.time_since_epoch().count();
  const auto r = since % step.count();
  return r == 0 ? t : TimePoint(Duration(since - r + step.count()));
}

// The passive side keeps its connections longer, so that the side under
// test is the one that reaps.
void long_idle(cm::ManagerConfig& m) {
  m.idle_timeout = 1h;
}

// When the in-service connection of `n` to `peer` last carried traffic.
TimePoint last_activity(Cluster& c, Node& n, NodeId peer) {
  const auto s = n.mgr->snapshot();
  auto q = std::find_if(s.qps.begin(), s.qps.end(),
                        [&](auto& x) { return x.in_service && x.peer_node == peer; });
  REQUIRE(q != s.qps.end());
  return c.fabric.now() - q->idle;
}

// The oldest last_activity among the in-service connections of `n`.
TimePoint oldest_activity(Cluster& c, Node& n) {
  const auto s = n.mgr->snapshot();
  TimePoint oldest = TimePoint::max();
  for (const auto& q : s.qps) {
    if (q.in_service && q.state == cm::ConnState::kEstablished)
      oldest = std::min(oldest, c.fabric.now() - q.idle);
  }
  return oldest;
}

std::size_t established(Node& n) {
  const auto s = n.mgr->snapshot();
  return static_cast<std::size_t>(std::count_if(s.qps.begin(), s.qps.end(), [](auto& q) {
    return q.in_service && q.state == cm::ConnState::kEstablished;
  }));
}

}  // namespace

TEST_CASE("an idle connection is reaped within idle_timeout + reaper_interval, a busy one never",
          "[cm][reap]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kEhca, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2, long_idle);
  auto& d = c.add(3, long_idle);
  const auto cfg = a.mgr->config();
  std::vector<std::pair<TimePoint, NodeId>> reaped;  // (when, peer)
  a.mgr->set_observer([&](const cm::Event& e) {
    if (e.kind == cm::EventKind::kTeardown && e.message_id == log::kMsgReapedIdle)
      reaped.emplace_back(e.time, e.peer);
  });
  a.mgr->send(b.ep(), packet(1));
  a.mgr->send(d.ep(), packet(1));
  c.run(50ms);
  REQUIRE(established(a) == 2);
  const TimePoint b_since = last_activity(c, a, b.mgr->node_id());
  // Traffic with d for 4 idle_timeouts: first only received by a, then only
  // sent by a; b sees nothing.
  for (Duration t{}; t < 4 * cfg.idle_timeout; t += 1s) {
    if (t < 2 * cfg.idle_timeout)
      d.mgr->send(a.ep(), packet(2));
    else
      a.mgr->send(d.ep(), packet(3));
    c.run(1s);
  }
  REQUIRE(reaped.size() == 1);
  CHECK(reaped[0].second == b.mgr->node_id());
  CHECK(reaped[0].first - b_since >= cfg.idle_timeout);
  CHECK(reaped[0].first - b_since < cfg.idle_timeout + cfg.reaper_interval);
  CHECK(a.ctr().idle_reaps == 1);
  CHECK(established(a) == 1);
  CHECK(last_activity(c, a, d.mgr->node_id()) >= c.fabric.now() - 1s);
}

TEST_CASE("the reaper sleeps until the oldest connection expires, and not at all with none",
          "[cm][reap]") {
  constexpr int kClients = 4;
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  int wakeups = 0;
  a.sim->set_timer_callback([&] {
    ++wakeups;
    a.mgr->on_timer();
  });
  const auto cfg = a.mgr->config();
  c.run(5s);
  CHECK(a.sim->timer_deadline() == TimePoint::max());  // nothing to watch: no wakeup
  CHECK(wakeups == 0);
  for (int i = 0; i < kClients; ++i) {
    c.add(2 + i, long_idle);
    a.mgr->send(c[2 + i].ep(), packet(1));
    c.run(700ms);
  }
  c.run(cfg.reaper_interval);  // the first packets' reclaim SENDs are done
  REQUIRE(established(a) == kClients);
  const TimePoint now = c.fabric.now();
  const TimePoint expiry = grid_ceil(oldest_activity(c, a) + cfg.idle_timeout, cfg.reaper_interval);
  // The next wakeup is the oldest connection's expiry on the reaper grid,
  // seconds away, not the next reaper_interval.
  CHECK(a.sim->timer_deadline() == expiry);
  CHECK(expiry > now + 2 * cfg.reaper_interval);
  wakeups = 0;
  c.fabric.run_until(expiry - 1ms);
  CHECK(wakeups == 0);
  CHECK(a.ctr().idle_reaps == 0);
  c.fabric.run_until(expiry);
  CHECK(wakeups == 1);
  CHECK(a.ctr().idle_reaps == 1);
  // The others expire in turn, their teardowns finish, and then nothing
  // wakes the manager any more.
  c.run(kClients * 700ms + 2s);
  CHECK(a.ctr().idle_reaps == kClients);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sim->timer_deadline() == TimePoint::max());
  const int settled = wakeups;
  c.run(30s);
  CHECK(wakeups == settled);
}

TEST_CASE(
    "an unsignaled send is reclaimed within reaper_interval while the reaper waits for an expiry",
    "[cm][reap][datapath]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.signal_every = 1000; });
  auto& b = c.add(2, long_idle);
  a.mgr->send(b.ep(), packet(0));
  c.run(2s);  // ESTABLISHED, first packet reclaimed: the next wakeup is the idle expiry
  const auto cfg = a.mgr->config();
  REQUIRE(a.sim->timer_deadline() > c.fabric.now() + cfg.reaper_interval);
  a.mgr->send(b.ep(), packet(1));  // unsignaled: holds its send slot
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total - 1);
  CHECK(a.sim->timer_deadline() <= c.fabric.now() + cfg.reaper_interval);
  c.run(cfg.reaper_interval + 10ms);
  s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
  CHECK(a.ctr().idle_reaps == 0);
}

TEST_CASE("LRU eviction takes the least recently active connection, sent or received",
          "[cm][limits]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.max_connections = 4; });
  std::vector<NodeId> evicted;
  a.mgr->set_observer([&](const cm::Event& e) {
    if (e.kind == cm::EventKind::kEvict)
      evicted.push_back(e.peer);
  });
  for (int i = 2; i <= 8; ++i)
    c.add(i);
  for (int i = 2; i <= 5; ++i) {
    a.mgr->send(c[i].ep(), packet(1));
    c.run(50ms);
  }
  REQUIRE(established(a) == 4);
  // Least recently used first: 2 3 4 5. Traffic received from 2, then sent
  // to 3: 4 5 2 3.
  c[2].mgr->send(a.ep(), packet(2));
  c.run(50ms);
  a.mgr->send(c[3].ep(), packet(2));
  c.run(50ms);
  c.run(1s);  // every connection older than kEvictMinAge: all evictable
  for (int i = 6; i <= 8; ++i) {
    a.mgr->send(c[i].ep(), packet(1));
    c.run(50ms);
    CHECK(c[i].sink.packets.size() == 1);
  }
  CHECK(evicted ==
        std::vector<NodeId>{c[4].mgr->node_id(), c[5].mgr->node_id(), c[2].mgr->node_id()});
  CHECK(a.ctr().evictions == 3);
  CHECK(established(a) == 4);
}

TEST_CASE("a reaper wakeup at 16000 connections visits only the expiring ones",
          "[cm][reap][scale]") {
  constexpr int kConns = 16000, kExpiring = 10;
  Cluster c(Profile::kMlx);
  auto& hub = c.add(1, [](cm::ManagerConfig& m) {
    m.max_connections = kConns;
    m.idle_timeout = 10s;
    m.reaper_interval = 1s;
  });
  for (int i = 0; i < kConns; ++i) {
    // As small as the manager allows: 16,000 of them share the process.
    c.add(2 + i, [](cm::ManagerConfig& m) {
      m.mtu = wire::kMinMtu;
      m.srq_size = 4;
      m.send_slots = 2;
      m.qp_send_depth = 8;
      m.max_connections = 2;
      m.idle_timeout = 1h;
    });
  }
  const auto cfg = hub.mgr->config();
  // The first kExpiring connections start just after a reaper grid point, so
  // that they expire together, in one wakeup.
  c.fabric.run_until(grid_ceil(c.fabric.now(), cfg.reaper_interval) + 1ms);
  for (int i = 0; i < kExpiring; ++i)
    hub.mgr->send(c[2 + i].ep(), packet(1));
  c.run(200ms);
  REQUIRE(established(hub) == kExpiring);
  const TimePoint expiry =
      grid_ceil(oldest_activity(c, hub) + cfg.idle_timeout, cfg.reaper_interval);
  c.run(1s);
  for (int i = kExpiring; i < kConns; ++i)
    hub.mgr->send(c[2 + i].ep(), packet(1));
  for (int k = 0; k < 50 && hub.ctr().connects_established < kConns; ++k)
    c.run(100ms);
  REQUIRE(hub.ctr().connects_established == kConns);
  REQUIRE(c.fabric.now() + 2 * cfg.reaper_interval < expiry);
  c.run(2 * cfg.reaper_interval);  // every reclaim SEND is done
  const auto visits = hub.ctr().reaper_visits;
  c.fabric.run_until(expiry);
  CHECK(hub.ctr().idle_reaps == kExpiring);
  // The kExpiring reaped, plus the first one not expired where the walk
  // stopped; the old reaper looked at all 16,000.
  CHECK(hub.ctr().reaper_visits - visits <= kExpiring + 1);
  CHECK(established(hub) == kConns - kExpiring);
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

}  // namespace cm_reaper_test
