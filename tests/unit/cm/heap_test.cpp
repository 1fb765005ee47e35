// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A node's heap through the lab soak's faults (docs/lab.md "The soak
// benchmark"; rcnet issue 33): the heap in use of every rcnetd rose by a few
// KiB around some faults. Here the faults the simulator can make run in a
// loop on four two-rail nodes, and the heap of node 1's managers and RailSet
// (their operator new bytes, charged by tools/bench/meter.hpp) must hold
// still once every container has reached its size: a table keyed by QPN, cm
// id or incarnation that a fault's path fills and nothing empties grows with
// every cycle, and fails this. What the daemon adds around the core (ctl
// server, netlink, libibverbs, librdmacm) is not here.
//
// Its own binary (tests/unit/cm/meson.build): meter.cpp replaces the global
// operator new.
#include "catch2_compat.hpp"

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "../wire/gso_packets.hpp"
#include "cm/rails.hpp"
#include "meter.hpp"
#include "metered.hpp"
#include "rails_harness.hpp"
#include "sim/timer.hpp"
#include "wire/vnet_hdr.hpp"

namespace cm_heap_test {

using namespace rcnet;
using namespace std::chrono_literals;
using bench::Part;
using bench::Scope;
using test::rails::kRails;
using test::rails::overlay_addr;
using test::rails::rail_addr;
using test::rails::rail_ep;

// As the soak's nodes: connections outlive the run (timeouts.idle 600 s).
constexpr Duration kIdle = 600s;

struct Host final : bench::MeteredNode, cm::PacketSink {
  explicit Host(Part p) : MeteredNode(p) {}
  std::uint64_t received = 0;
  cm::PacketSink& packet_sink() override { return *this; }
  void deliver(NodeId, std::span<const std::byte>) override { ++received; }
  void send_capacity(bool) override {}
};

// A two-rail node as rcnetd runs one: a manager per rail and a RailSet over
// them on a timer of its own, everything charged to `part`.
struct RailNode {
  RailNode(sim::Fabric& f, int i, Part p) : index(i), part(p), timer(f), timers(timer) {}
  int index;
  Part part;
  std::array<Host*, kRails> hosts{};
  sim::FabricTimer timer;
  bench::MeteredTimers timers;
  std::unique_ptr<cm::RailSet> set;
};

class Soak {
 public:
  explicit Soak(sim::Profile p, bool offload = false) : cluster_(p), offload_(offload) {}

  RailNode& add(int i, Part part) {
    nodes_.push_back(std::make_unique<RailNode>(cluster_.fabric, i, part));
    RailNode& n = *nodes_.back();
    for (std::size_t k = 0; k < kRails; ++k)
      n.hosts[k] = &cluster_.add_node<Host>(rail_addr(k, i), part);
    start(n, 0x1000 + static_cast<std::uint64_t>(i));
    return n;
  }
  RailNode& node(int i) { return *nodes_.at(static_cast<std::size_t>(i - 1)); }

  // (Re)starts n's daemon: both managers and the RailSet over them.
  void start(RailNode& n, std::uint64_t incarnation) {
    Scope s(n.part);
    n.set.reset();
    std::vector<cm::RailSet::Rail> rails;
    for (std::size_t k = 0; k < kRails; ++k) {
      Host& h = *n.hosts[k];
      auto cfg = test::test_config(h.addr, incarnation);
      cfg.rail_count = kRails;
      cfg.idle_timeout = kIdle;
      cfg.offload = offload_;
      REQUIRE(cluster_.start(h, cfg).ok());
      rails.push_back(
          {.manager = h.mgr.get(),
           .map = {.underlay = [k, i = n.index](const IpAddr& o) -> std::optional<Endpoint> {
             const std::uint32_t v = o.v4_host_order();
             const int j = static_cast<int>(v & 0xff);
             if ((v & 0xffffff00u) != 0x0a640000u || j == 0 || j == 255 || j == i)
               return std::nullopt;
             return test::rails::rail_ep(k, j);
           }}});
    }
    n.set = std::make_unique<cm::RailSet>(cm::RailSetConfig{.holddown = 1s, .idle_timeout = kIdle},
                                          std::move(rails), n.timers);
    // Every rail delivers through the RailSet to one TUN, as in rcnetd.
    n.set->set_upper(n.hosts[0]);
    n.timer.set_callback([&n] {
      Scope t(n.part);
      n.set->on_timer();
    });
  }

  // Every node sends to every other every 100 ms for `d`.
  void traffic(Duration d) {
    for (Duration t{}; t < d; t += 100ms) {
      for (auto& a : nodes_) {
        for (auto& b : nodes_) {
          if (a == b)
            continue;
          const auto p = test::packet(seq_++, 200);
          Scope s(a->part);
          (void)a->set->send(Endpoint{overlay_addr(b->index), 0}, p);
        }
      }
      run(100ms);
    }
  }
  void run(Duration d) {
    Scope s(Part::kSim);
    cluster_.run(d);
  }
  sim::Faults& faults() { return cluster_.fabric.faults(); }

  // One cycle of the soak's faults (tests/lab/soak/soak.sh), all on or
  // around node 1, each followed by traffic until it has healed.
  void cycle() {
    RailNode& hub = node(1);
    Host& r0 = *hub.hosts[0];
    // SIGKILL of node 2's rcnetd and a restart: a new incarnation.
    for (Host* h : node(2).hosts)
      faults().crash(h->addr);
    run(20ms);
    for (Host* h : node(2).hosts)
      h->sim->restart();
    start(node(2), next_incarnation_++);
    traffic(2s);
    // A carrier flap of rail 0.
    faults().isolate(r0.addr);
    with(hub, [&] { r0.mgr->link_changed(false); });
    traffic(2s);
    faults().isolate(r0.addr, false);
    with(hub, [&] { r0.mgr->link_changed(true); });
    traffic(3s);
    // A silent drop toward node 3 on rail 0: retry exceeded, failover, and back.
    faults().partition(r0.addr, node(3).hosts[0]->addr);
    traffic(3s);
    faults().partition(r0.addr, node(3).hosts[0]->addr, false);
    traffic(3s);
    // The neighbour entry of node 4 on rail 0 FAILED (rtnetlink).
    with(hub, [&] { r0.mgr->peer_failed(node(4).hosts[0]->addr, "neighbour FAILED"); });
    traffic(1s);
    // `rdma link delete` of rail 0's device and `rdma link add`, the daemon's
    // readopt poll every 250 ms.
    faults().remove_device(r0.addr);
    traffic(1s);
    faults().restore_device(r0.addr);
    for (int k = 0; k < 8; ++k) {
      with(hub, [&] { (void)r0.mgr->readopt(); });
      run(250ms);
    }
    traffic(3s);
    // A reload, and the ctl flood (200 requests) with a disconnect and a reap.
    with(hub, [&] {
      for (Host* h : hub.hosts)
        h->mgr->reconfigure(h->mgr->config());
      hub.set->reconfigure(1s, kIdle);
      for (int k = 0; k < 200; ++k)
        (void)hub.set->snapshot();
      (void)r0.mgr->disconnect_peer(node_id_for(node(2).hosts[0]->addr), "rcnetctl disconnect");
      (void)hub.hosts[1]->mgr->reap_idle(0s);
    });
    traffic(3s);
  }

  static std::int64_t live_bytes(Part p) {
    return bench::stats()[static_cast<std::size_t>(p)].live_bytes;
  }

 private:
  template <class F>
  static void with(RailNode& n, F&& f) {
    Scope s(n.part);
    f();
  }

  sim::Cluster cluster_;
  bool offload_;
  std::vector<std::unique_ptr<RailNode>>
      nodes_;  // destroyed first: the RailSets borrow the managers
  std::uint32_t seq_ = 0;
  std::uint64_t next_incarnation_ = 0x5000;
};

TEST_CASE("a node's heap holds still through the soak's faults, cycle after cycle",
          "[cm][rails][heap]") {
  const auto profile = GENERATE(sim::Profile::kMlx, sim::Profile::kRxe);
  Soak s(profile);
  RailNode& hub = s.add(1, Part::kHub);
  for (int i = 2; i <= 4; ++i)
    s.add(i, Part::kClients);
  s.traffic(3s);
  constexpr int kCycles = 40;
  std::vector<std::int64_t> bytes;
  for (int c = 1; c <= kCycles; ++c) {
    s.cycle();
    bytes.push_back(Soak::live_bytes(Part::kHub));
  }
  INFO("node 1's heap (bytes) after cycles 5, 10, 20, 40: " << bytes[4] << ", " << bytes[9] << ", "
                                                            << bytes[19] << ", " << bytes[39]);
  // The plateau: whatever the first cycles sized, the second half of the run
  // adds nothing.
  CHECK(bytes[kCycles - 1] == bytes[kCycles / 2 - 1]);
  CHECK(bytes[kCycles - 1] == bytes[kCycles - 2]);
  // The faults took place, every one of them each cycle.
  const auto ctr = hub.set->snapshot().counters;
  CHECK(ctr.restarts_detected >= kCycles);
  CHECK(ctr.link_down_teardowns >= kCycles);
  CHECK(ctr.dead_peer_reaps >= kCycles);
  CHECK(ctr.device_readopts == kCycles);
  // Rail 0 fails three times a cycle: its holddown stays at 16 x (docs/design.md
  // "Rails", health with memory), so not every fault finds traffic on it.
  CHECK(ctr.failovers_carrier > 0);
  CHECK(ctr.failovers_device_lost > 0);
  CHECK(ctr.failovers_retry_exceeded + ctr.failovers_link_lost > 0);
  CHECK(ctr.failbacks > 0);
  for (Host* h : hub.hosts)
    CHECK(h->sim->stats().misuse == 0);
}

TEST_CASE("a lost device's buffers keep their memory, and its re-adoption registers it again",
          "[cm][rails][heap][device]") {
  // Registering fresh pages makes the kernel fault in and zero each of them
  // inside ibv_reg_mr(3): most of a re-adoption's setup under the lab's
  // QEMU. The MRs go with the device; the memory under them stays.
  Soak s(sim::Profile::kRxe);
  RailNode& hub = s.add(1, Part::kHub);
  s.add(2, Part::kClients);
  s.traffic(1s);
  Host& r0 = *hub.hosts[0];
  const std::int64_t bytes = static_cast<std::int64_t>(r0.sim->registered_bytes());
  REQUIRE(bytes > 0);  // the send slots and the SRQ's receive buffers
  const std::int64_t before = Soak::live_bytes(Part::kHub);

  s.faults().remove_device(r0.addr);
  s.traffic(1s);
  REQUIRE_FALSE(r0.mgr->device_present());
  CHECK(r0.sim->registered_regions() == 0);
  const std::int64_t kept = Soak::live_bytes(Part::kHub);
  INFO("node 1's heap: " << before << " bytes before the loss, " << kept
                         << " after it; the device's MRs were " << bytes << " bytes");
  CHECK(before - kept < bytes);  // freed, the heap would have shrunk by them

  s.faults().restore_device(r0.addr);
  {
    Scope sc(Part::kHub);
    REQUIRE(r0.mgr->readopt());
  }
  INFO("after the re-adoption: " << Soak::live_bytes(Part::kHub) << " bytes");
  CHECK(r0.sim->registered_bytes() == static_cast<std::size_t>(bytes));
  CHECK(Soak::live_bytes(Part::kHub) - kept < bytes);  // registered again, not allocated
  if (r0.mgr->config().use_srq)
    CHECK(r0.sim->srq_posted() == r0.mgr->config().srq_size);

  // And the re-registered buffers carry traffic again, on rail 0 too.
  const auto received = r0.received;
  s.traffic(5s);
  CHECK(r0.received > received);
  CHECK(r0.sim->stats().misuse == 0);
}

TEST_CASE("a lent buffer's fallback copy is sized at start, not by its first use under load",
          "[cm][heap][zerocopy]") {
  // The soak's iperf3 sender grew its heap in use by one GSO frame, once,
  // cycles into the run: the copy send_lent() falls back to when a frame read
  // from the TUN cannot be posted at once (here: no connection yet).
  Soak s(sim::Profile::kRxe, /*offload=*/true);
  RailNode& hub = s.add(1, Part::kHub);
  s.add(2, Part::kClients);
  cm::Manager& m = *hub.hosts[0]->mgr;
  const auto frame =
      test::frame_of(test::tso_hdr(false, 1448), test::tcp_super_packet(false, 65535 - 40));
  const std::int64_t before = Soak::live_bytes(Part::kHub);
  {
    Scope sc(Part::kHub);
    const auto buf = m.lend_send_buffer();
    REQUIRE(buf.size() > frame.size());
    std::memcpy(buf.data(), frame.data(), frame.size());
    REQUIRE(m.send_lent(rail_ep(0, 2), frame.size()) == cm::SendResult::kQueued);
  }
  s.run(2s);  // connected, sent, the peer's queue empty again
  const auto snap = m.snapshot();
  REQUIRE(snap.counters.gso_sent == 1);
  const std::int64_t after = Soak::live_bytes(Part::kHub);
  INFO("node 1's heap: " << before << " bytes before the fallback, " << after
                         << " once the frame has gone; the frame is " << frame.size() << " bytes");
  // What stays is the connection's state, not a frame's copy.
  CHECK(after - before < static_cast<std::int64_t>(frame.size()));
}

}  // namespace cm_heap_test
