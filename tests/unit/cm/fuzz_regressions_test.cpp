// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Bugs the `manager` fuzzer found (inputs: tests/fuzz/corpus/manager/regression-*), each
// pinned by a test. Found while lib/cm was being restructured, fixed after
// the merge; each test failed (was tagged [!shouldfail]) before its fix.
#include "catch2_compat.hpp"

#include "cm/manager.hpp"
#include "harness.hpp"

namespace cm_fuzz_regressions_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

// Regression `duplicate-connect-request`: the simulator delivers one
// CONNECT_REQUEST twice (FaultAction::kDuplicate; "duplicate events are
// counted and ignored, never fatal", docs/design.md "Connection lifecycle").
// Manager::Impl::handle_req() does not look the event's cm id up in
// by_cm_id_: the copy is judged as a new REQ from a peer already ACCEPTING
// with this incarnation, gets REJ `duplicate`, and reject() defers
// rdma_destroy_id() on the id that the accepted connection owns, while its QP
// exists (SimStats::destroy_id_with_qp: a leak on the real stack, which
// refuses to destroy the id). cm_ids_created is counted twice for the one id.
TEST_CASE("a duplicated CONNECT_REQUEST is ignored, not rejected on the live id", "[cm][fuzz]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.fabric.faults().cm(sim::FaultAction::kDuplicate, rdma::CmEventType::kConnectRequest, 1);
  c.connect(a, b, 1, 100ms);
  CHECK(b.sim->stats().misuse == 0);
  CHECK(b.ctr().rejects_sent_duplicate == 0);
  CHECK(b.ctr().cm_events_ignored >= 1);
  CHECK(b.sink.packets.size() == 1);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(2s);
  CHECK(b.ctr().cm_ids_created == b.ctr().cm_ids_destroyed);
  CHECK(b.sim->live_cm_ids() == 0);
  CHECK(b.sim->stats().misuse == 0);
}

// Regression `queue-over-depth`: Manager::reconfigure() lowers
// peer_queue_depth but leaves longer queues as they are, and enqueue() only
// drops one packet per packet added, so a peer keeps more packets than the
// configured depth until its connection is up (or fails).
TEST_CASE("a lower peer_queue_depth applies to packets already queued", "[cm][fuzz]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.fabric.faults().isolate(b.addr);  // the REQ goes unanswered
  for (std::uint32_t i = 0; i < 10; ++i)
    a.mgr->send(b.ep(), packet(i));
  c.run(1ms);
  cm::ManagerConfig n = a.mgr->config();
  n.peer_queue_depth = 4;
  a.mgr->reconfigure(n);
  a.mgr->send(b.ep(), packet(10));
  const auto s = a.mgr->snapshot();
  REQUIRE(s.peers.size() == 1);
  CHECK(s.peers[0].queue_depth <= 4);
}

// Regression `capacity-after-drain-timeout`: send slots run out (here 2
// slots, both held by completed but unsignaled SENDs, which only a later
// signaled WR gives back), so the next packet waits in its peer's queue and
// the manager signals send_capacity(false): the daemon stops reading TUN.
// The connection is then torn down and its drain WR never completes:
// on_deadline(kDraining) -> destroy_qp() frees the slots, but nothing calls
// unblock() on that timer path (only on_completions() does), so the true edge
// never comes (TUN reading stays paused for every peer, for good) and the
// queued packet stays in a peer with no connection and no retry: lost,
// although docs/design.md "Decisions taken" says "No send slot: the packet
// waits ... nothing is dropped".
TEST_CASE("send capacity comes back when a blocked peer's QP is destroyed at drain_timeout",
          "[cm][fuzz]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.send_slots = 2; });
  auto& b = c.add(2);
  a.mgr->send(b.ep(), packet(1));
  c.run(1ms);
  a.mgr->send(b.ep(), packet(2));
  c.run(1ms);
  CHECK(a.mgr->send(b.ep(), packet(3)) == cm::SendResult::kQueued);
  REQUIRE(a.sink.capacity_off == 1);
  const auto qpn = a.mgr->live_qpns().at(0);
  c.fabric.faults().drop_drain_completion(a.addr, qpn);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(2s);
  CHECK(a.ctr().drain_timeouts == 1);
  CHECK(a.mgr->snapshot().send_slots_free == 2);
  CHECK(a.sink.capacity_on == 1);     // the true edge came back
  CHECK(b.sink.packets.size() == 3);  // and the waiting packet went out
}

// Found by the long `manager` fuzzer run of session 5 (input in
// corpus/manager/regression-superseded-attempt-no-peer). A simultaneous open
// leaves b's own attempt abandoned (out of service, CONNECTING until
// connect_timeout). Its REQ reaches a late, after the connection that won was
// torn down, so a accepts it. Meanwhile b forgot the peer (no connection, no
// queue). When the REP comes, established() looked the peer up first and
// returned when it was gone, before the "superseded attempt" teardown: the
// QP stayed ESTABLISHED out of service, on no list and with no deadline, for
// good (a leaked QP: the idle reaper never sees it, and only a DREQ from a
// could end it; here a crashes, as in the fuzzer's input).
TEST_CASE("an abandoned attempt that gets through after its peer was forgotten is torn down",
          "[cm][fuzz]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2);
  REQUIRE(a.mgr->node_id() < b.mgr->node_id());  // b abandons its own attempt
  // b's REQ reaches a 600 ms late: within b's connect_timeout (2 s) and
  // before the simulated CM gives up on an unanswered REQ (UNREACHABLE).
  c.fabric.faults().cm(sim::FaultAction::kDelay, rdma::CmEventType::kConnectRequest, 1, a.addr,
                       600ms);
  a.mgr->send(b.ep(), packet(1));
  b.mgr->send(a.ep(), packet(2));
  c.run(50ms);
  REQUIRE(b.ctr().collisions_merged == 1);
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  c.run(400ms);  // teardown on both sides (rxe: no Last WQE Reached, last_wqe_timeout)
  REQUIRE(b.mgr->snapshot().peers.empty());  // b forgot a; its old attempt is still out there
  c.run(300ms);
  REQUIRE(b.ctr().connects_established == 2);  // the old attempt did get through
  a.sim->crash();                              // and nothing will ever come from a again (no DREQ)
  c.run(10s);
  CHECK(b.mgr->live_qpns().empty());
  CHECK(b.sim->live_qps() == 0);
  CHECK(b.ctr().qps_created == b.ctr().qps_destroyed);
}

}  // namespace cm_fuzz_regressions_test
