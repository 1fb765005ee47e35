// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Two rails per node (cm/rails.hpp) on the simulated fabric: a rail node is
// two simulated hosts of one fabric, rail 0 at 10.99.0.i and rail 1 at
// 10.98.0.i (each with its own HCA and manager), and a RailSet over their
// two managers on a timer of its own (sim/timer.hpp), as rcnetd runs it.
// Rails pair by index: only 10.99 <-> 10.99 and 10.98 <-> 10.98 connect.
// Overlay 10.100.0.i is node i, on both rails (the prefix rule's mapping).
//
// Every packet carries a sequence number; what each node's TUN would have
// received is recorded with the rail it came in on, so loss, duplicates
// and order are checked, not assumed (the fixture: rails_harness.hpp).
// Every scenario ends by shutting every manager down and requiring every
// simulated host to hold no QP and no rdma_cm id.
#include "catch2_compat.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "cm/rails.hpp"
#include "harness.hpp"
#include "rails_harness.hpp"
#include "sim/timer.hpp"

namespace cm_rails_test {
using namespace rcnet;
using namespace rcnet::test;
using cm::RailState;
using sim::Profile;

namespace {

using namespace rcnet::test::rails;

// How a stream of numbered packets arrived.
struct Arrival {
  std::size_t missing = 0;  // numbers in [first, last] never received
  std::size_t repeats = 0;  // arrivals of a number already received
  bool ordered = true;      // each number's first arrival, in ascending order
};
Arrival arrival(const std::vector<std::uint32_t>& got, std::uint32_t first, std::uint32_t last) {
  Arrival a;
  std::set<std::uint32_t> seen;
  std::uint32_t prev = 0;
  for (const std::uint32_t s : got) {
    if (s < first || s > last)
      continue;
    if (!seen.insert(s).second) {
      ++a.repeats;
      continue;
    }
    a.ordered = a.ordered && s > prev;
    prev = s;
  }
  a.missing = (last - first + 1) - seen.size();
  return a;
}

// `got` holds every number in [first, last], first arrivals in ascending
// order. Returns how many arrivals were repeats (a failover's resends).
std::size_t require_all_in_order(const std::vector<std::uint32_t>& got, std::uint32_t first,
                                 std::uint32_t last) {
  const Arrival a = arrival(got, first, last);
  INFO("packets " << first << ".." << last);
  CHECK(a.missing == 0);
  CHECK(a.ordered);
  return a.repeats;
}

// Among `n`'s events from index `from` on: one fail-back of node `peer`'s
// traffic (named by any of its addresses) from rail 1 to rail 0, and before it a connection
// ESTABLISHED on rail 0: the switch never went onto a link still in its handshake.
void require_failback_onto_established(const RailNode& n, std::size_t from, int peer) {
  std::optional<std::size_t> established, failback;
  for (std::size_t e = from; e < n.events.size(); ++e) {
    const SeenEvent& ev = n.events[e];
    if (ev.kind == cm::EventKind::kState && ev.rail == 0 && ev.to == cm::ConnState::kEstablished)
      established = established.value_or(e);
    if (ev.kind == cm::EventKind::kFailover && ev.reason == "failback") {
      CHECK_FALSE(failback);
      failback = e;
    }
  }
  REQUIRE(established);
  REQUIRE(failback);
  CHECK(*established < *failback);
  CHECK(n.events[*failback].from_rail == 1);
  CHECK(n.events[*failback].rail == 0);
  CHECK((n.events[*failback].peer.v4_host_order() & 0xff) == static_cast<std::uint32_t>(peer));
}

std::uint64_t failovers(const cm::Counters& c) {
  return c.failovers_port_error + c.failovers_device_lost + c.failovers_carrier +
         c.failovers_retry_exceeded + c.failovers_peer_notice + c.failovers_link_lost;
}

// Packets dropped anywhere on a rail node (its managers and its RailSet).
std::uint64_t drops(RailNode& n) {
  std::uint64_t d = n.rails_ctr().failover_no_link;
  for (std::size_t k = 0; k < kRails; ++k) {
    const auto& c = n.mgr(k).counters();
    d += c.drops_queue_full + c.drops_connect_failed + c.drops_shutting_down;
  }
  return d;
}

}  // namespace

// Two two-rail nodes (active-backup) after 3 s of traffic from node 1 to
// node 2: rail 0 carries it, the standby links on rail 1 are made.
struct RailPair {
  RailCluster c;
  RailNode& a = c.add(1);
  RailNode& b = c.add(2);
  std::uint32_t seq = 1;
  RailPair() { c.exchange(a, {&b}, seq, 3s); }
};

TEST_CASE_METHOD(RailPair,
                 "rails: active-backup carries on rail 0, the standby on rail 1 is probed and kept",
                 "[cm][rails]") {
  REQUIRE(a.carrier(2) == 0);
  REQUIRE(b.carrier(1) == 0);
  // The standby link exists on both ends, made without a packet.
  const auto standby_a = established_conn(a.mgr(1), rail_ep(1, 2));
  const auto standby_b = established_conn(b.mgr(1), rail_ep(1, 1));
  REQUIRE(standby_a != 0);
  REQUIRE(standby_b != 0);
  const auto probes = a.rails_ctr().rail_probes_sent;

  // Three idle timeouts (5 s) of traffic on rail 0 only: the standby is not
  // reaped, because the probes keep it active.
  c.exchange(a, {&b}, seq, 15s);
  CHECK(a.rails_ctr().rail_probes_sent >= probes + 12);
  CHECK(b.rails_ctr().rail_probes_sent >= 12);
  CHECK(established_conn(a.mgr(1), rail_ep(1, 2)) == standby_a);
  CHECK(established_conn(b.mgr(1), rail_ep(1, 1)) == standby_b);
  CHECK(a.mgr(1).counters().idle_reaps == 0);
  CHECK(b.mgr(1).counters().idle_reaps == 0);
  // Every data packet came on rail 0, each once and in order.
  CHECK(b.from(1, 1).empty());
  CHECK(a.from(2, 1).empty());
  CHECK(require_all_in_order(b.from(1, 0), 1, seq - 1) == 0);
  CHECK(require_all_in_order(a.from(2, 0), 1, seq - 1) == 0);
  CHECK(failovers(a.rails_ctr()) == 0);
  CHECK(failovers(b.rails_ctr()) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE("rails: a silent drop on rail 0 moves both directions to rail 1, nothing lost",
          "[cm][rails]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kRxe);
  INFO("profile " << sim::to_string(profile));
  RailCluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  REQUIRE(a.carrier(2) == 0);
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);

  // A streams to B, one packet every 5 ms; 100 ms in, rail 0 between them
  // silently drops everything. B sends nothing meanwhile: it can learn of
  // the failure only from A's notice.
  const std::uint32_t first = seq;
  for (int i = 0; i < 400; ++i) {
    if (i == 20)
      c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2));
    CHECK(RailCluster::send(a, 2, seq++) != cm::SendResult::kRefused);
    c.run(5ms);
  }
  c.run(2s);
  const std::uint32_t last = seq - 1;

  CHECK(a.rails_ctr().failovers_retry_exceeded >= 1);
  CHECK(a.carrier(2) == 1);
  CHECK(a.rails_ctr().rail_notices_sent >= 1);
  CHECK(b.rails_ctr().rail_notices_received >= 1);
  CHECK(b.rails_ctr().failovers_peer_notice == 1);
  CHECK(b.carrier(1) == 1);
  // None lost; the in-flight ones resent on rail 1 ahead of newer ones.
  const std::size_t repeats = require_all_in_order(b.from(1), first, last);
  CHECK(repeats <= a.rails_ctr().failover_resent);
  CHECK(a.rails_ctr().failover_resent + a.rails_ctr().failover_queue_moved >= 1);
  CHECK(drops(a) == 0);
  CHECK(b.from(1, 1).back() == last);

  // B's traffic goes on rail 1 at once, not after its own RC retries.
  const std::uint32_t back = seq;
  for (int i = 0; i < 20; ++i)
    RailCluster::send(b, 1, seq++);
  c.run(10ms);
  CHECK(require_all_in_order(a.from(2, 1), back, seq - 1) == 0);
  CHECK(b.rails_ctr().failovers_retry_exceeded == 0);
  CHECK(drops(b) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE("rails: a burst on a silently dropped rail 0 goes again whole on rail 1", "[cm][rails]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kRxe);
  INFO("profile " << sim::to_string(profile));
  RailCluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  c.run(1s);  // every send completed and reclaimed: the burst's first is the SQ's head
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);

  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2));
  const std::uint32_t first = seq;
  for (int i = 0; i < 10; ++i)
    RailCluster::send(a, 2, seq++);
  c.run(2s);
  // The head ends in retry exceeded, the rest flush: not one of them
  // completed, so all ten go again on rail 1, the head first.
  CHECK(a.rails_ctr().failovers_retry_exceeded == 1);
  CHECK(a.carrier(2) == 1);
  CHECK(require_all_in_order(b.from(1), first, seq - 1) == 0);
  CHECK(b.from(1, 1).size() == 10);
  CHECK(a.rails_ctr().failover_resent == 10);
  CHECK(drops(a) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE_METHOD(
    RailPair, "rails: carrier or port error on rail 0, holddown, fail-back on an ESTABLISHED link",
    "[cm][rails]") {
  REQUIRE(a.carrier(2) == 0);
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);

  const bool port = GENERATE(false, true);
  INFO((port ? "IBV_EVENT_PORT_ERR" : "carrier lost"));
  auto fail = [&](bool down) {
    if (port)
      REQUIRE(c.fabric.faults().port_down(rail_addr(0, 1), down));
    else
      a.mgr(0).link_changed(!down);
  };

  const std::uint32_t first = seq;
  for (int i = 0; i < 100; ++i) {
    if (i == 20)
      fail(true);
    RailCluster::send(a, 2, seq++);
    c.run(5ms);
  }
  CHECK(a.state(0) == RailState::kDown);
  CHECK(a.carrier(2) == 1);
  if (port) {
    CHECK(a.rails_ctr().failovers_port_error == 1);
  } else {
    CHECK(a.rails_ctr().failovers_carrier == 1);
  }
  CHECK(failovers(a.rails_ctr()) == 1);
  c.run(1s);
  require_all_in_order(b.from(1), first, seq - 1);
  CHECK(drops(a) == 0);

  // Back: holddown for `holddown`, traffic stays on rail 1 meanwhile. The
  // link on rail 0 is made at once, during the holddown.
  const std::size_t events_before = a.events.size();
  fail(false);
  c.run(1ms);
  CHECK(a.state(0) == RailState::kHolddown);
  CHECK(a.set->snapshot().rails.at(0).holddown == kHolddown);
  for (int i = 0; i < 49; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  CHECK(a.state(0) == RailState::kHolddown);
  CHECK(a.carrier(2) == 1);
  CHECK(a.rails_ctr().failbacks == 0);
  c.run(200ms);
  CHECK(a.state(0) == RailState::kUp);
  c.run(1s);
  CHECK(a.rails_ctr().failbacks == 1);
  CHECK(a.carrier(2) == 0);
  require_failback_onto_established(a, events_before, 2);

  // New traffic goes on rail 0, on the very link it failed back onto:
  // made during the holddown, that link was kept alive there, not left to
  // idle out under the first packets it carries.
  const auto link0 = established_conn(a.mgr(0), rail_ep(0, 2));
  REQUIRE(link0 != 0);
  const std::uint32_t again = seq;
  for (int i = 0; i < 80; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  CHECK(require_all_in_order(b.from(1, 0), again, seq - 1) == 0);
  CHECK(established_conn(a.mgr(0), rail_ep(0, 2)) == link0);
  CHECK(a.mgr(0).counters().idle_reaps == 0);
  CHECK(a.rails_ctr().failbacks == 1);
  CHECK(failovers(a.rails_ctr()) == 1);
  require_all_in_order(b.from(1), first, seq - 1);
  c.shutdown_and_require_clean();
}

TEST_CASE_METHOD(
    RailPair, "rails: the down notice leaves with the failover, and the peer moves as it arrives",
    "[cm][rails]") {
  // Neither RailSet's timer runs until the end: what happens below happens
  // inside the managers' own calls (A's carrier loss, B's CQ poll), not on
  // a later turn of the loop.
  a.run_timer(false);
  b.run_timer(false);
  // A's rail 0 loses its carrier: nothing crosses it, not even A's DREQ.
  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2));
  const auto sent = a.rails_ctr().rail_notices_sent;
  const auto received = b.rails_ctr().rail_notices_received;
  a.mgr(0).link_changed(false);
  CHECK(a.carrier(2) == 1);
  CHECK(a.rails_ctr().rail_notices_sent == sent + 1);

  c.run(50ms);
  CHECK(b.rails_ctr().rail_notices_received == received + 1);
  CHECK(b.carrier(1) == 1);
  CHECK(b.rails_ctr().failovers_peer_notice == 1);
  // B's own end of rail 0 is still ESTABLISHED (its teardown is the timer
  // path's), but B's packets already go on rail 1.
  CHECK(established_conn(b.mgr(0), rail_ep(0, 1)) != 0);
  const std::uint32_t back = seq;
  for (int i = 0; i < 5; ++i)
    RailCluster::send(b, 1, seq++);
  c.run(10ms);
  CHECK(require_all_in_order(a.from(2, 1), back, seq - 1) == 0);

  // The timers again: B fails its end of rail 0; nothing lost, one failover
  // each.
  for (RailNode* n : {&a, &b}) {
    n->run_timer(true);
    n->set->on_timer();
  }
  c.run(1s);
  CHECK(established_conn(b.mgr(0), rail_ep(0, 1)) == 0);
  CHECK(failovers(a.rails_ctr()) == 1);
  CHECK(failovers(b.rails_ctr()) == 1);
  CHECK(drops(a) == 0);
  CHECK(drops(b) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE_METHOD(RailPair,
                 "rails: a live QP that fails on a rail without carrier is a carrier failover",
                 "[cm][rails]") {
  // Linux 6.12's rxe errors the QPs of a netdev that lost its carrier
  // before the kernel's notice of the carrier loss reaches rcnetd: the QP
  // failure, not link_changed(), is the first thing the manager hears.
  REQUIRE(a.carrier(2) == 0);
  const bool carrier = GENERATE(false, true);
  INFO((carrier ? "carrier present: a QP error like any other" : "no carrier"));
  int asked = 0;
  a.mgr(0).set_carrier_probe([&] {
    ++asked;
    return carrier;
  });
  const auto qpns = a.mgr(0).live_qpns();
  REQUIRE(qpns.size() == 1);
  REQUIRE(c.fabric.faults().inject_last_wqe(rail_addr(0, 1), qpns[0]));
  c.run(50ms);
  CHECK(asked == 1);
  CHECK(a.carrier(2) == 1);
  CHECK(failovers(a.rails_ctr()) == 1);
  CHECK(a.rails_ctr().failovers_carrier == (carrier ? 0 : 1));
  CHECK(a.rails_ctr().failovers_link_lost == (carrier ? 1 : 0));
}

TEST_CASE_METHOD(RailPair, "rails: no fail-back while the preferred rail's link cannot be made",
                 "[cm][rails]") {
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);
  a.mgr(0).link_changed(false);
  c.run(10ms);
  REQUIRE(a.carrier(2) == 1);

  // A's rail 0 is back, but the path to B on it still drops everything.
  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2));
  a.mgr(0).link_changed(true);
  const std::uint32_t first = seq;
  for (int i = 0; i < 100; ++i) {  // the holddown and 5 s past it
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  CHECK(a.state(0) == RailState::kUp);
  CHECK(a.carrier(2) == 1);
  CHECK(a.rails_ctr().failbacks == 0);
  CHECK(failovers(a.rails_ctr()) == 1);
  CHECK(require_all_in_order(b.from(1, 1), first, seq - 1) == 0);

  // The path heals: the next attempt on rail 0 (backing off, at most
  // 16 s away) makes the link, and traffic goes back once it is ESTABLISHED.
  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2), false);
  const std::size_t events_before = a.events.size();
  for (int i = 0; i < 200 && a.rails_ctr().failbacks == 0; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  CHECK(a.rails_ctr().failbacks == 1);
  CHECK(a.carrier(2) == 0);
  require_failback_onto_established(a, events_before, 2);
  c.run(100ms);
  CHECK(arrival(b.from(1), first, seq - 1).missing == 0);
  CHECK(drops(a) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE(
    "rails: a silent drop that heals: fail-back within a second, not after a lost REQ's "
    "retransmit",
    "[cm][rails]") {
  RailCluster c;
  // A lost REQ is answered by nothing for long: rdma_cm sends it again only
  // after its CM response timeout (about 4.3 s), and reports UNREACHABLE
  // after its REQ retries; the simulator resends none, so this stands in.
  c.fabric.timing().unreachable = 20s;
  auto& a = c.add(1);
  auto& b = c.add(2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  REQUIRE(a.carrier(2) == 0);
  // Rail 0 between A and B drops everything for 4 s while A sends: A fails
  // over by retry exceeded and re-dials rail 0 meanwhile, and every REQ of
  // those re-dials is lost.
  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2));
  for (int i = 0; i < 40; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  REQUIRE(a.carrier(2) == 1);
  const auto started = a.mgr(0).counters().connects_started;
  CHECK(started >= 3);  // re-dialled every kRedialInterval, each abandoned
  c.fabric.faults().partition(rail_addr(0, 1), rail_addr(0, 2), false);
  const TimePoint healed = c.fabric.now();
  const std::size_t events_before = a.events.size();
  TimePoint back{};
  for (int i = 0; i < 100 && a.rails_ctr().failbacks == 0; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(10ms);
    if (a.rails_ctr().failbacks == 1)
      back = c.fabric.now();
  }
  REQUIRE(a.rails_ctr().failbacks == 1);
  // Simulated time, not the machine's: the next re-dial goes out within
  // kRedialInterval of the heal, and holddown is not involved (the rail
  // never went down). The old rule waited out a lost REQ's retransmit.
  CHECK(back - healed <= 2 * cm::kRedialInterval);
  CHECK(a.carrier(2) == 0);
  require_failback_onto_established(a, events_before, 2);
  CHECK(drops(a) == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE("rails: rail 0's device removed: rail 1 carries, the device is released, fail-back",
          "[cm][rails]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kRxe);
  INFO("profile " << sim::to_string(profile));
  RailCluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  REQUIRE(a.carrier(2) == 0);
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);

  // The device goes while a burst of ten is on rail 0's QP.
  const std::uint32_t first = seq;
  for (int i = 0; i < 100; ++i) {
    if (i == 20) {
      for (int j = 0; j < 10; ++j)
        RailCluster::send(a, 2, seq++);
      c.fabric.faults().remove_device(rail_addr(0, 1));
    }
    RailCluster::send(a, 2, seq++);
    c.run(5ms);
  }
  CHECK(a.state(0) == RailState::kRemoved);
  CHECK(a.carrier(2) == 1);
  CHECK(a.rails_ctr().failovers_device_lost == 1);
  // Released at once: nothing of the device is held.
  CHECK(a.sim(0).registered_regions() == 0);
  CHECK_FALSE(a.sim(0).device_open());
  CHECK(a.sim(0).live_qps() == 0);
  CHECK(a.sim(0).live_cm_ids() == 0);
  c.run(1s);
  // What was on rail 0's QP or queued for it went again on rail 1. Lost at
  // most: a packet handed to rail 0 between the removal and its
  // DEVICE_REMOVAL event, whose post fails (ENODEV), dropped and counted.
  const Arrival got = arrival(b.from(1), first, seq - 1);
  CHECK(got.ordered);
  CHECK(got.missing <= a.mgr(0).counters().send_errors);
  CHECK(got.missing <= 1);
  CHECK(got.repeats <= a.rails_ctr().failover_resent);
  CHECK(a.rails_ctr().failover_resent >= 1);
  CHECK(a.rails_ctr().failover_no_link == 0);
  CHECK(drops(a) == 0);
  CHECK(a.set->snapshot().rails.at(0).state == RailState::kRemoved);
  CHECK(a.set->snapshot().rails.at(0).device.empty());

  // While it is gone, readopt fails and the rail stays removed.
  CHECK_FALSE(a.mgr(0).readopt());
  c.run(2s);
  CHECK(a.state(0) == RailState::kRemoved);
  c.fabric.faults().restore_device(rail_addr(0, 1));
  REQUIRE(a.mgr(0).readopt());
  CHECK(a.state(0) == RailState::kHolddown);
  for (int i = 0; i < 49; ++i) {
    RailCluster::send(a, 2, seq++);
    c.run(100ms);
  }
  CHECK(a.carrier(2) == 1);
  c.run(1500ms);
  CHECK(a.state(0) == RailState::kUp);
  CHECK(a.rails_ctr().failbacks == 1);
  CHECK(a.carrier(2) == 0);
  const std::uint32_t again = seq;
  for (int i = 0; i < 10; ++i)
    RailCluster::send(a, 2, seq++);
  c.run(10ms);
  CHECK(require_all_in_order(b.from(1, 0), again, seq - 1) == 0);
  CHECK(arrival(b.from(1), first, seq - 1).missing == got.missing);
  c.shutdown_and_require_clean();
}

TEST_CASE_METHOD(RailPair,
                 "rails: a peer that goes quiet: its links idle out, no failover, redundancy kept",
                 "[cm][rails]") {
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);

  // 6 s of quiet: the carrying link on rail 0 idles out (5 s), the standby
  // on rail 1, probed until then, not yet. An idle link is a healthy one:
  // nothing failed over, no redundancy lost.
  int without_redundancy = 0;
  for (int i = 0; i < 60; ++i) {
    c.run(100ms);
    without_redundancy += a.set->snapshot().peers_without_redundancy != 0 ? 1 : 0;
  }
  REQUIRE(established_conn(a.mgr(0), rail_ep(0, 2)) == 0);
  REQUIRE(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);
  CHECK(without_redundancy == 0);
  CHECK(failovers(a.rails_ctr()) == 0);
  CHECK(failovers(b.rails_ctr()) == 0);
  CHECK(a.carrier(2) == 0);
  CHECK(b.carrier(1) == 0);

  // Traffic again: on rail 0, connected on demand, as a one-rail node's.
  const std::uint32_t again = seq;
  c.exchange(a, {&b}, seq, 3s);
  CHECK(require_all_in_order(b.from(1, 0), again, seq - 1) == 0);
  CHECK(require_all_in_order(a.from(2, 0), again, seq - 1) == 0);
  CHECK(b.from(1, 1).empty());
  CHECK(failovers(a.rails_ctr()) == 0);
  CHECK(a.rails_ctr().failbacks == 0);
  CHECK(b.rails_ctr().failbacks == 0);
  c.shutdown_and_require_clean();
}

TEST_CASE_METHOD(RailPair, "rails: flapping makes the holddown grow, and quiet time makes it decay",
                 "[cm][rails]") {
  auto rail0 = [&] { return a.set->snapshot().rails.at(0); };
  // One failure and its recovery, then the holddown it waited.
  auto flap = [&] {
    a.mgr(0).link_changed(false);
    c.run(1s);
    a.mgr(0).link_changed(true);
    c.run(1ms);
    REQUIRE(a.state(0) == RailState::kHolddown);
    const Duration waits = rail0().holddown;
    c.run(waits);
    CHECK(a.state(0) == RailState::kUp);
    return waits;
  };
  CHECK(flap() == kHolddown);
  CHECK(flap() == 2 * kHolddown);
  CHECK(flap() == 4 * kHolddown);
  CHECK(rail0().flaps == 3);
  // The memory halves every kFlapMemory without a failure.
  c.run(cm::kFlapMemory);
  CHECK(rail0().flaps == 1);
  CHECK(flap() == 2 * kHolddown);  // 1 remembered + this one
  c.run(3 * cm::kFlapMemory);
  CHECK(rail0().flaps == 0);
  CHECK(flap() == kHolddown);
  // Nothing of it was a failover of rail 1's traffic, and the flaps on
  // rail 0 left rail 1 alone.
  CHECK(a.state(1) == RailState::kUp);
  CHECK(a.set->snapshot().rails.at(1).flaps == 0);
  (void)b;
  c.shutdown_and_require_clean();
}

TEST_CASE("rails: a one-rail peer without kCapRails is served on rail 0, no rail messages",
          "[cm][rails]") {
  // P says it has one rail, or (an older rcnet) says nothing.
  const std::uint8_t said = GENERATE(std::uint8_t{1}, std::uint8_t{0});
  INFO("P's rail count " << int(said));
  RailCluster c;
  auto& a = c.add(1);
  auto& p = c.add_plain(3, said);
  // A sends every 500 ms for a minute (active: probe ticks try rail 1);
  // P answers each.
  std::uint32_t seq = 1;
  for (int i = 0; i < 120; ++i) {
    CHECK(RailCluster::send(a, 3, seq) != cm::SendResult::kRefused);
    p.mgr->send(rail_ep(0, 1), packet(seq));
    ++seq;
    c.run(500ms);
  }
  CHECK(a.carrier(3) == 0);
  std::vector<std::uint32_t> at_p;
  for (const auto& r : p.sink.packets)
    at_p.push_back(seq_of(r.bytes));
  CHECK(require_all_in_order(at_p, 1, seq - 1) == 0);
  CHECK(require_all_in_order(a.from(3, 0), 1, seq - 1) == 0);
  // No rail message went to P: no probe, no notice, and every SEND on rail
  // 0 was a data packet.
  CHECK(a.rails_ctr().rail_probes_sent == 0);
  CHECK(a.rails_ctr().rail_notices_sent == 0);
  CHECK(a.mgr(0).counters().packets_tx == seq - 1);
  CHECK(p.ctr().packets_rx == seq - 1);
  // 10.98.0.3 does not exist. A P that said it has one rail is never
  // dialled there once rail 0 is up (the one attempt a probe tick may start
  // before rail 0's REP). One that said nothing: rail 1's attempts back off
  // (kFastRedials every 0.5 s, then 1 s doubling to 30 s: at most 26 in a
  // minute), they do not come every redial tick.
  const auto attempts = a.mgr(1).counters().connects_started;
  if (said == 1) {
    CHECK(attempts <= 1);
  } else {
    CHECK(attempts >= cm::kFastRedials);
    CHECK(attempts <= cm::kFastRedials + 6);
  }
  CHECK(failovers(a.rails_ctr()) == 0);
  CHECK(a.set->snapshot().peers_without_redundancy == 1);
  c.shutdown_and_require_clean();
}

TEST_CASE("rails: the merged snapshot tags QPs and peers with their rail and sums counters",
          "[cm][rails]") {
  RailCluster c;
  auto& a = c.add(1);
  auto& b = c.add(2);
  auto& d = c.add(3);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  for (int i = 0; i < 5; ++i)
    RailCluster::send(a, 3, seq++);
  c.exchange(a, {&b, &d}, seq, 3s);

  cm::Snapshot s = a.set->snapshot();
  REQUIRE(s.rails.size() == kRails);
  CHECK(s.rails[0].local.addr == rail_addr(0, 1));
  CHECK(s.rails[1].local.addr == rail_addr(1, 1));
  CHECK(s.rails[0].state == RailState::kUp);
  CHECK(s.rails[0].links == 2);
  CHECK(s.rails[1].links == 2);
  CHECK(s.rails[0].carrying == 2);
  CHECK(s.rails[1].carrying == 0);
  // Every QP is tagged with the rail whose host holds it.
  REQUIRE(s.qps.size() == 4);
  for (const auto& q : s.qps) {
    INFO("QP to " << q.peer_addr.addr.to_string());
    CHECK(q.peer_addr.addr == rail_addr(q.rail, static_cast<int>(q.peer_node & 0xff)));
  }
  // Each peer has an entry on each rail; exactly one of them carries.
  for (const int j : {2, 3}) {
    int entries = 0, carrying = 0;
    for (const auto& pe : s.peers) {
      if ((pe.node & 0xff) != static_cast<NodeId>(j))
        continue;
      ++entries;
      CHECK(pe.underlay.addr == rail_addr(pe.rail, j));
      if (pe.carries) {
        ++carrying;
        CHECK(pe.rail == 0);
      }
    }
    CHECK(entries == 2);
    CHECK(carrying == 1);
  }
  // Counters: the two managers' summed, plus the RailSet's own.
  const auto& c0 = a.mgr(0).counters();
  const auto& c1 = a.mgr(1).counters();
  CHECK(s.counters.packets_tx == c0.packets_tx + c1.packets_tx);
  CHECK(s.counters.connects_established == c0.connects_established + c1.connects_established);
  CHECK(s.counters.rail_probes_sent == a.rails_ctr().rail_probes_sent);
  CHECK(s.counters.rail_probes_sent > 0);
  CHECK(s.rails[1].tx_packets == c1.packets_tx);
  CHECK(s.peers_without_redundancy == 0);

  // Rail 1 between A and D drops silently: the next probe fails the
  // standby, and D is a peer without redundancy; B is not. No traffic moved.
  c.fabric.faults().partition(rail_addr(1, 1), rail_addr(1, 3));
  c.exchange(a, {&b, &d}, seq, 2s);
  s = a.set->snapshot();
  CHECK(s.peers_without_redundancy == 1);
  CHECK(s.rails[1].links == 1);
  CHECK(a.carrier(3) == 0);
  CHECK(failovers(a.rails_ctr()) == 0);
  c.shutdown_and_require_clean();
}

}  // namespace cm_rails_test
