// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Device loss (`rdma link delete`, DEVICE_REMOVAL) on the simulated fabric:
// every object of the device is released within a bound far below the
// teardown bounds, the device is adopted again once it is back, and
// connections come back on demand.
#include "catch2_compat.hpp"

#include "cm/manager.hpp"
#include "harness.hpp"

namespace cm_device_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

bool received(const Node& n, std::uint32_t seq) {
  for (const auto& p : n.sink.packets) {
    if (seq_of(p.bytes) == seq)
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("device removed: every object released at once, adopted again, traffic resumes",
          "[cm][device]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kEhca, Profile::kRxe);
  const bool srq = GENERATE(true, false);
  INFO("profile " << sim::to_string(profile) << (srq ? " with SRQ" : " without SRQ"));
  const Cluster::Tweak tweak = [srq](cm::ManagerConfig& m) { m.use_srq = srq; };
  Cluster c(profile);
  auto& a = c.add(1, tweak);
  auto& b = c.add(2, tweak);
  c.connect(a, b, 1);
  REQUIRE(received(b, 1));
  REQUIRE(a.sim->live_qps() == 1);
  REQUIRE(a.sim->registered_regions() > 0);
  REQUIRE(a.sim->device_open());

  c.fabric.faults().remove_device(a.addr);
  // The teardown bounds are 200 ms each (test_config): 1 ms shows that none
  // of them was waited out.
  c.run(1ms);
  CHECK(a.sim->live_qps() == 0);
  CHECK(a.sim->live_cm_ids() == 0);
  CHECK(a.sim->registered_regions() == 0);  // send slots, SRQ or per-QP receive buffers
  CHECK_FALSE(a.sim->device_open());        // listener, PD, CQ, SRQ
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.mgr->live_cm_ids() == 0);
  CHECK_FALSE(a.mgr->device_present());
  CHECK(a.mgr->snapshot().device_removed);
  CHECK(a.ctr().device_removals == 1);
  CHECK(a.ctr().forced_destroys == 1);
  CHECK(a.ctr().qps_created == a.ctr().qps_destroyed);
  CHECK(a.ctr().cm_ids_created == a.ctr().cm_ids_destroyed);

  // While it is gone: packets are dropped and counted, the device cannot be
  // opened, and nothing is created.
  const auto drops = a.ctr().drops_shutting_down;
  CHECK(a.mgr->send(b.ep(), packet(2)) == cm::SendResult::kRefused);
  CHECK(a.ctr().drops_shutting_down == drops + 1);
  CHECK_FALSE(a.mgr->readopt());
  c.run(100ms);
  CHECK(a.sim->live_qps() == 0);
  CHECK(a.ctr().device_readopts == 0);

  c.fabric.faults().restore_device(a.addr);
  REQUIRE(a.mgr->readopt());
  CHECK(a.mgr->device_present());
  CHECK_FALSE(a.mgr->snapshot().device_removed);
  CHECK(a.ctr().device_readopts == 1);
  CHECK(a.sim->device_open());
  if (srq)
    CHECK(a.sim->srq_posted() == a.mgr->config().srq_size);

  // a → b: a new connection (b replaces its stale one) carries the packet.
  a.mgr->send(b.ep(), packet(3));
  c.run(1s);
  CHECK(received(b, 3));
  // b → a over whatever b has now.
  b.mgr->send(a.ep(), packet(4));
  c.run(2s);
  CHECK(received(a, 4));
  CHECK(a.ctr().device_removals == 1);
  CHECK(a.sim->stats().misuse == 0);
  CHECK(b.sim->stats().misuse == 0);
  CHECK(a.ctr().illegal_transitions + b.ctr().illegal_transitions == 0);
}

TEST_CASE("device loss and return: the first path acts, the other is counted, each is named",
          "[cm][device][rdma_monitor]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b, 1);
  REQUIRE(received(b, 1));

  SECTION("DEVICE_REMOVAL first, UNREGISTER late; back through the monitor") {
    c.fabric.faults().remove_device(a.addr);
    c.run(1ms);
    CHECK_FALSE(a.mgr->device_present());
    CHECK(a.ctr().device_removals_async == 1);
    CHECK(a.mgr->snapshot().device_removed_by == "async event");
    // The kernel sends UNREGISTER once every client let go: late, counted
    // once however often it comes, nothing released twice.
    a.mgr->device_unregistered("UNREGISTER of rxe0 (index 3)");
    a.mgr->device_unregistered("UNREGISTER of rxe0 (index 3)");
    c.run(1ms);
    CHECK(a.ctr().device_notices_late == 1);
    CHECK(a.ctr().device_removals == 1);
    CHECK(a.ctr().device_removals_monitor == 0);
    c.fabric.faults().restore_device(a.addr);
    REQUIRE(a.mgr->readopt(cm::DevicePath::kNetlinkMonitor));
    CHECK(a.ctr().device_readopts == 1);
    CHECK(a.ctr().device_readopts_monitor == 1);
    CHECK(a.ctr().device_readopts_poll == 0);
    CHECK(a.mgr->snapshot().device_readopted_by == "netlink monitor");
  }
  SECTION("UNREGISTER first: released at once; back through the poll") {
    a.mgr->device_unregistered("UNREGISTER of rxe0 (index 3)");
    c.run(1ms);
    CHECK(a.sim->live_qps() == 0);
    CHECK(a.sim->live_cm_ids() == 0);
    CHECK_FALSE(a.sim->device_open());
    CHECK(a.ctr().device_removals == 1);
    CHECK(a.ctr().device_removals_monitor == 1);
    CHECK(a.ctr().device_removals_async == 0);
    CHECK(a.mgr->snapshot().device_removed_by == "netlink monitor");
    CHECK(a.mgr->snapshot().device_readopted_by.empty());
    REQUIRE(a.mgr->readopt());  // the device never left the fabric: the poll finds it
    CHECK(a.ctr().device_readopts_poll == 1);
    CHECK(a.mgr->snapshot().device_readopted_by == "poll");
  }
  // Either way traffic resumes, and a second loss counts afresh.
  a.mgr->send(b.ep(), packet(3));
  c.run(1s);
  CHECK(received(b, 3));
  a.mgr->device_unregistered("UNREGISTER of rxe0 (index 4)");
  c.run(1ms);
  CHECK(a.ctr().device_removals == 2);
  CHECK(a.ctr().device_notices_late <= 1);
  CHECK(a.ctr().illegal_transitions + b.ctr().illegal_transitions == 0);
}

TEST_CASE("device fatal: every object released at once, adopted again, traffic resumes",
          "[cm][device]") {
  const auto profile = GENERATE(Profile::kMlx, Profile::kRxe);
  INFO("profile " << sim::to_string(profile));
  Cluster c(profile);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b, 1);
  REQUIRE(received(b, 1));
  REQUIRE(a.sim->live_qps() == 1);

  REQUIRE(c.fabric.faults().inject_device_fatal(a.addr));
  // The teardown bounds are 200 ms each: 1 ms shows none was waited out.
  c.run(1ms);
  CHECK(a.sim->live_qps() == 0);
  CHECK(a.sim->live_cm_ids() == 0);
  CHECK(a.sim->registered_regions() == 0);
  CHECK_FALSE(a.sim->device_open());
  CHECK_FALSE(a.mgr->device_present());
  CHECK(a.ctr().device_removals == 1);
  CHECK(a.ctr().qps_created == a.ctr().qps_destroyed);
  CHECK(a.ctr().cm_ids_created == a.ctr().cm_ids_destroyed);

  REQUIRE(a.mgr->readopt());
  CHECK(a.ctr().device_readopts == 1);
  a.mgr->send(b.ep(), packet(2));
  c.run(1s);
  CHECK(received(b, 2));
  CHECK(a.sim->stats().misuse == 0);
  CHECK(a.ctr().illegal_transitions + b.ctr().illegal_transitions == 0);
}

TEST_CASE("a PORT_ERR of another port of the device is not ours: nothing torn down",
          "[cm][device][rails]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  c.connect(a, b, 1);
  REQUIRE(received(b, 1));
  // Two rails on two ports of one HCA each receive both ports' events.
  REQUIRE(c.fabric.faults().port_down(a.addr, true, 2));
  c.run(50ms);
  CHECK(a.ctr().link_down_teardowns == 0);
  CHECK(a.mgr->live_qpns().size() == 1);
  CHECK(a.ctr().async_events_ignored >= 1);
  // Its own port's event is acted on.
  REQUIRE(c.fabric.faults().port_down(a.addr, true, 1));
  c.run(50ms);
  CHECK(a.ctr().link_down_teardowns == 1);
}

}  // namespace cm_device_test
