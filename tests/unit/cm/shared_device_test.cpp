// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Two rails that are ports of one device (docs/design.md "Rails"), on the
// simulated fabric: rail 0 of node i at 10.99.0.i is port 1 of the node's
// HCA, rail 1 at 10.98.0.i is port 2 of the same HCA (sim::Fabric::add_port).
// The two rails' managers share the device's PD and SRQ and the SRQ's
// registered receive buffers (rdma::Seam::device_share, cm::SrqBuffers);
// each keeps its own listener, QPs, CQ and send slots. A RailSet over the
// two managers, as rcnetd runs them.
#include "catch2_compat.hpp"

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "cm/manager.hpp"
#include "cm/rails.hpp"
#include "harness.hpp"
#include "rails_harness.hpp"

namespace cm_shared_device_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

using namespace rcnet::test::rails;

// Node i of `c` with its two rails on two ports of one HCA (or, with
// `shared` false, each on a device of its own: the layout before), holddown 1 s.
RailNode& add(RailCluster& c, int i, bool shared = true) {
  return c.add(i, cm::RailsMode::kActiveBackup, shared, 1s);
}

// The objects of a whole node's device(s) are gone: no QP, cm id or MR, no
// PD or SRQ, on either port.
void require_released(RailNode& n) {
  for (std::size_t k = 0; k < 2; ++k) {
    INFO("rail " << k);
    CHECK(n.sim(k).live_qps() == 0);
    CHECK(n.sim(k).live_cm_ids() == 0);
    CHECK(n.sim(k).registered_regions() == 0);
    CHECK_FALSE(n.sim(k).device_open());
    CHECK_FALSE(n.sim(k).device_pd());
    CHECK_FALSE(n.sim(k).device_srq());
    CHECK_FALSE(n.mgr(k).device_present());
  }
}

}  // namespace

TEST_CASE("sim: a port of another node's HCA shares its device", "[sim][rails][shared]") {
  sim::Fabric f;
  auto& a = f.add_node(rail_addr(0, 1), Profile::kMlx);
  auto& b = f.add_port(rail_addr(0, 1), rail_addr(1, 1));
  auto& other = f.add_node(rail_addr(0, 2), Profile::kMlx);
  CHECK(a.device_ports() == 2);
  CHECK(b.device_ports() == 2);
  CHECK(other.device_ports() == 1);
  CHECK(a.port_num() == 1);
  CHECK(b.port_num() == 2);
  rdma::DeviceConfig dc;
  dc.srq_size = 16;
  auto ia = a.seam().open(Endpoint{a.address(), kPort}, dc);
  auto ib = b.seam().open(Endpoint{b.address(), kPort}, dc);
  REQUIRE(ia);
  REQUIRE(ib);
  CHECK(ia->name == ib->name);
  CHECK(ia->port == 1);
  CHECK(ib->port == 2);
  CHECK(a.device_stats().pd_allocs == 1);
  CHECK(a.device_stats().srq_creates == 1);
  CHECK(&a.seam().device_share() == &b.seam().device_share());
  CHECK(&a.seam().device_share() != &other.seam().device_share());
  // The PD and SRQ stay while one port has them open.
  a.seam().close_device();
  CHECK(b.device_pd());
  CHECK(b.device_srq());
  b.seam().close_device();
  CHECK_FALSE(b.device_pd());
  CHECK_FALSE(b.device_srq());
}

TEST_CASE("shared device: two rails on two ports share one PD, SRQ and receive buffers",
          "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& a = add(c, 1);
  auto& b = add(c, 2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  const std::uint32_t srq_size = a.mgr(0).config().srq_size;

  for (auto* n : {&a, &b}) {
    INFO("node " << n->index);
    // One PD and one SRQ for the device, however many rails use it.
    CHECK(n->sim(0).device_stats().pd_allocs == 1);
    CHECK(n->sim(0).device_stats().srq_creates == 1);
    // The receive buffers are registered once: the SRQ holds one set, and
    // the device's MRs are the SRQ buffers and each rail's send slots.
    CHECK(n->sim(0).srq_posted() == srq_size);
    CHECK(n->sim(0).registered_regions() == 3);
    CHECK(n->sim(0).device_stats().mr_registrations == 3);
    // Both managers see the one SRQ, full.
    CHECK(n->mgr(0).snapshot().srq.posted == srq_size);
    CHECK(n->mgr(1).snapshot().srq.posted == srq_size);
  }
  // Traffic on both rails: active-backup carries on rail 0; the standby's
  // probes arrive on rail 1 (its QPs take receive WRs of the shared SRQ).
  CHECK(a.received(0) > 20);
  CHECK(b.received(0) > 20);
  CHECK(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);
  CHECK(a.sim(1).stats().packets_delivered > 0);
  CHECK(b.sim(1).stats().packets_delivered > 0);
  for (auto* n : {&a, &b}) {
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK(n->mgr(k).counters().recv_errors == 0);
      CHECK(n->mgr(k).counters().completions_ignored == 0);
    }
    CHECK(n->sim(0).stats().misuse + n->sim(1).stats().misuse == 0);
    CHECK(n->sim(0).stats().protection_errors + n->sim(1).stats().protection_errors == 0);
  }
}

TEST_CASE("shared device: half the registered memory of two rails on two devices",
          "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& shared = add(c, 1, true);
  auto& apart = add(c, 2, false);
  std::uint32_t seq = 1;
  c.exchange(shared, {&apart}, seq, 2s);
  const auto cfg = shared.mgr(0).config();
  const std::size_t buf = shared.mgr(0).snapshot().srq.buffer_size;
  const std::size_t srq_bytes = std::size_t{cfg.srq_size} * buf;
  const std::size_t slot_bytes = std::size_t{cfg.send_slots} * buf;
  // Two devices: each rail registers its SRQ buffers and its send slots.
  CHECK(apart.sim(0).registered_bytes() == srq_bytes + slot_bytes);
  CHECK(apart.sim(1).registered_bytes() == srq_bytes + slot_bytes);
  // One device: one set of SRQ buffers for both rails.
  CHECK(shared.sim(0).registered_bytes() == srq_bytes + 2 * slot_bytes);
  CHECK(shared.sim(1).registered_bytes() == shared.sim(0).registered_bytes());
  CHECK(shared.got(seq - 1));
  CHECK(apart.got(seq - 1));
}

TEST_CASE("shared device: a port down fails over; the other rail keeps the shared SRQ serving",
          "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& a = add(c, 1);
  auto& b = add(c, 2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  REQUIRE(a.set->carrier(overlay_addr(2)) == 0u);
  const std::size_t before = b.received(1);

  // Port 1 of a's device (rail 0) goes down: both rails hear PORT_ERR of
  // port 1, only rail 0 acts.
  REQUIRE(c.fabric.faults().port_down(rail_addr(0, 1), true));
  c.run(50ms);
  CHECK(a.mgr(0).counters().link_down_teardowns == 1);
  CHECK(a.mgr(1).counters().link_down_teardowns == 0);
  CHECK(a.mgr(1).counters().async_events_ignored >= 1);
  CHECK(a.set->carrier(overlay_addr(2)) == 1u);
  const std::uint32_t first = seq;
  c.exchange(a, {&b}, seq, 2s);
  // Every packet after the failover arrived, on rail 1, through the SRQ the
  // two rails share.
  for (std::uint32_t s = first; s < seq; ++s) {
    INFO("seq " << s);
    CHECK(b.got(s));
    CHECK(a.got(s));
  }
  CHECK(b.received(1) >= before + (seq - first));
  CHECK(a.received(1) > 0);
  CHECK(a.sim(1).srq_posted() == a.mgr(1).config().srq_size);
  CHECK(a.mgr(1).counters().recv_errors == 0);
  CHECK(a.sim(0).device_stats().srq_creates == 1);

  REQUIRE(c.fabric.faults().port_down(rail_addr(0, 1), false));
  c.exchange(a, {&b}, seq, 3s);
  CHECK(a.set->carrier(overlay_addr(2)) == 0u);
  CHECK(a.sim(0).stats().misuse + a.sim(1).stats().misuse == 0);
}

TEST_CASE("shared device: removal releases both rails' objects, re-adoption rebuilds them",
          "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& a = add(c, 1);
  auto& b = add(c, 2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 3s);
  REQUIRE(a.sim(0).live_qps() == 1);
  REQUIRE(a.sim(1).live_qps() == 1);

  // One removal takes the device: both ports, both rails.
  c.fabric.faults().remove_device(rail_addr(1, 1));
  // The teardown bounds are 200 ms each: 1 ms shows none was waited out.
  c.run(1ms);
  require_released(a);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(a.mgr(k).counters().device_removals == 1);
    CHECK(a.mgr(k).counters().qps_created == a.mgr(k).counters().qps_destroyed);
    CHECK(a.mgr(k).counters().cm_ids_created == a.mgr(k).counters().cm_ids_destroyed);
  }
  // Gone means gone: not open again before the device is back.
  CHECK_FALSE(a.mgr(0).readopt());
  CHECK_FALSE(a.mgr(1).readopt());

  c.fabric.faults().restore_device(rail_addr(0, 1));
  REQUIRE(a.mgr(1).readopt());
  REQUIRE(a.mgr(0).readopt());
  CHECK(a.sim(0).device_stats().pd_allocs == 2);
  CHECK(a.sim(0).device_stats().srq_creates == 2);
  CHECK(a.sim(0).registered_regions() == 3);
  CHECK(a.sim(0).srq_posted() == a.mgr(0).config().srq_size);
  CHECK(a.mgr(0).snapshot().srq.posted == a.mgr(0).config().srq_size);

  const std::uint32_t first = seq;
  c.exchange(a, {&b}, seq, 5s);
  CHECK(b.got(seq - 1));
  CHECK(a.got(seq - 1));
  CHECK(first < seq);
  CHECK(established_conn(a.mgr(0), rail_ep(0, 2)) != 0);
  CHECK(established_conn(a.mgr(1), rail_ep(1, 2)) != 0);
  CHECK(a.sim(0).stats().misuse + a.sim(1).stats().misuse == 0);
}

TEST_CASE(
    "shared device: DEVICE_FATAL takes both rails; a port may not reopen what the other "
    "still holds",
    "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& a = add(c, 1);
  auto& b = add(c, 2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 2s);
  REQUIRE(c.fabric.faults().inject_device_fatal(rail_addr(0, 1)));
  c.run(1ms);
  require_released(a);
  CHECK(a.mgr(0).counters().device_removals == 1);
  CHECK(a.mgr(1).counters().device_removals == 1);
  REQUIRE(a.mgr(0).readopt());
  REQUIRE(a.mgr(1).readopt());
  CHECK(a.sim(0).device_stats().pd_allocs == 2);
  c.exchange(a, {&b}, seq, 3s);
  CHECK(b.got(seq - 1));
  CHECK(a.got(seq - 1));
}

TEST_CASE("sim: a port cannot open a lost device another port still holds", "[sim][shared]") {
  sim::Fabric f;
  auto& a = f.add_node(rail_addr(0, 1), Profile::kMlx);
  auto& b = f.add_port(rail_addr(0, 1), rail_addr(1, 1));
  rdma::DeviceConfig dc;
  dc.srq_size = 16;
  REQUIRE(a.seam().open(Endpoint{a.address(), kPort}, dc));
  REQUIRE(b.seam().open(Endpoint{b.address(), kPort}, dc));
  REQUIRE(f.faults().inject_device_fatal(a.address()));
  a.seam().close_device();
  auto again = a.seam().open(Endpoint{a.address(), kPort}, dc);
  REQUIRE_FALSE(again);
  CHECK(again.error().code.value() == EBUSY);
  b.seam().close_device();
  CHECK(a.seam().open(Endpoint{a.address(), kPort}, dc));
  CHECK(a.device_stats().pd_allocs == 2);
}

TEST_CASE(
    "shared device: the SRQ buffers outlive a rail that lets go of them while the other "
    "receives",
    "[cm][rails][shared]") {
  // Plain managers, no RailSet: rail k of node 1 talks to rail k of node 2,
  // each node's two rails on two ports of one device.
  sim::Cluster c(Profile::kMlx);
  std::array<std::array<Node*, 2>, 2> n{};
  for (int i = 0; i < 2; ++i) {
    n[i][0] = &c.add_node<Node>(rail_addr(0, i + 1));
    n[i][1] = &c.add_port_node<Node>(rail_addr(0, i + 1), rail_addr(1, i + 1));
    for (Node* p : n[i])
      REQUIRE(c.start(*p, test_config(p->addr, 0x1000 + static_cast<std::uint64_t>(i))).ok());
  }
  Node& a1 = *n[0][1];
  Node& b1 = *n[1][1];
  for (std::uint32_t s = 1; s <= 10; ++s) {
    n[0][0]->mgr->send(n[1][0]->ep(), packet(s));
    a1.mgr->send(b1.ep(), packet(s));
  }
  c.run(100ms);
  REQUIRE(b1.sink.packets.size() == 10);
  REQUIRE(n[1][0]->sink.packets.size() == 10);
  REQUIRE(n[1][0]->sim->srq_posted() == n[1][0]->cfg.srq_size);

  // Rail 0 of node 2 goes away (its manager destroyed, as a daemon's rail
  // that stops); rail 1 still receives into the buffers both shared.
  n[1][0]->mgr.reset();
  for (std::uint32_t s = 11; s <= 300; ++s) {
    a1.mgr->send(b1.ep(), packet(s));
    if (s % 10 == 0)
      c.run(10ms);
  }
  c.run(100ms);
  CHECK(b1.sink.packets.size() == 300);
  CHECK(b1.ctr().recv_errors == 0);
  CHECK(b1.sim->stats().protection_errors == 0);
  CHECK(b1.sim->srq_posted() == b1.cfg.srq_size);
  CHECK(b1.sim->registered_regions() == 2);  // the SRQ buffers and rail 1's send slots
}

TEST_CASE("shared device: the SRQ limit is the device's, whichever rail hears its event",
          "[cm][rails][shared]") {
  RailCluster c(Profile::kMlx);
  auto& a = add(c, 1);
  auto& b = add(c, 2);
  std::uint32_t seq = 1;
  c.exchange(a, {&b}, seq, 2s);
  // The simulated HCA reposts faster than a sender drains the SRQ, so the
  // event is handed over as the seam would: to rail 0's manager.
  b.mgr(0).on_async_event(rdma::AsyncEvent{rdma::AsyncEventType::kSrqLimitReached, 0});
  CHECK(b.mgr(0).counters().srq_limit_events == 1);
  CHECK(b.mgr(1).counters().srq_limit_events == 0);
  // One SRQ, one limit: both rails' snapshots show the event.
  CHECK(b.mgr(0).snapshot().srq.limit_events == 1);
  CHECK(b.mgr(1).snapshot().srq.limit_events == 1);
  c.exchange(a, {&b}, seq, 1s);
  CHECK(b.got(seq - 1));
  CHECK(b.sim(1).srq_posted() == b.mgr(1).config().srq_size);
}

}  // namespace cm_shared_device_test
