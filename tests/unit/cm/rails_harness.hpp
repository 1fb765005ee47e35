// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The rails' test fixture (cm/rails.hpp on the simulated fabric), shared by
// rails_test.cpp and shared_device_test.cpp: a rail node is two simulated
// hosts of one fabric, rail 0 at 10.99.0.i and rail 1 at 10.98.0.i (each
// with its own HCA and manager, or, with `shared`, rail 1 a second port of
// rail 0's HCA), and a RailSet over their two managers on a timer of its
// own (sim/timer.hpp), as rcnetd runs it. Rails pair by index: only 10.99
// <-> 10.99 and 10.98 <-> 10.98 connect. Overlay 10.100.0.i is node i, on
// both rails (the prefix rule's mapping).
//
// Every packet carries a sequence number; what each node's TUN would have
// received is recorded with the rail it came in on, so loss, duplicates
// and order are checked, not assumed.
#include "catch2_compat.hpp"

#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "cm/rails.hpp"
#include "harness.hpp"
#include "sim/timer.hpp"

namespace rcnet::test::rails {

using cm::RailState;
using sim::Profile;

inline constexpr std::size_t kRails = 2;
inline constexpr Duration kHolddown = std::chrono::seconds(5);

// Node i's underlay address on rail k.
inline IpAddr rail_addr(std::size_t k, int i) {
  return IpAddr::v4((k == 0 ? 0x0a630000u : 0x0a620000u) + static_cast<std::uint32_t>(i));
}
inline IpAddr overlay_addr(int i) {
  return IpAddr::v4(0x0a640000u + static_cast<std::uint32_t>(i));
}
inline Endpoint rail_ep(std::size_t k, int i) {
  return Endpoint{rail_addr(k, i), kPort};
}

// A packet received: the rail it came in on, the sending host, its number.
struct Rx {
  std::size_t rail;
  NodeId from;
  std::uint32_t seq;
};

struct RailNode;

// One rail's host of a rail node; what its manager delivers goes to the
// node's one record (the node's TUN device).
struct RailHost final : sim::ClusterNode, cm::PacketSink {
  RailNode* owner = nullptr;
  std::size_t rail = 0;
  cm::PacketSink& packet_sink() override { return *this; }
  void deliver(NodeId from, std::span<const std::byte> p) override;
  void send_capacity(bool) override {}
};

// What the RailSet's observer saw, copied (string views die with the call).
struct SeenEvent {
  cm::EventKind kind;
  std::uint32_t rail;
  std::uint32_t from_rail;
  cm::ConnState to;
  IpAddr peer;
  std::string reason;
};

struct RailNode {
  RailNode(sim::Fabric& f, int i) : index(i), timer(f) {}
  int index;
  std::array<RailHost*, kRails> hosts{};
  sim::FabricTimer timer;
  std::unique_ptr<cm::RailSet> set;
  std::vector<Rx> rx;
  std::vector<SeenEvent> events;

  // Whether the RailSet's timer calls it (as rcnetd's loop does); stopped,
  // only what happens inside the managers' own calls happens, and a wakeup
  // due meanwhile is lost (call set->on_timer() after restarting it).
  void run_timer(bool on) {
    timer.set_callback(on ? std::function<void()>([s = set.get()] { s->on_timer(); })
                          : std::function<void()>());
  }
  cm::Manager& mgr(std::size_t k) { return *hosts.at(k)->mgr; }
  sim::SimNode& sim(std::size_t k) { return *hosts.at(k)->sim; }
  const cm::Counters& rails_ctr() const { return set->counters(); }
  RailState state(std::size_t k) const { return set->state(k); }
  // The rail carrying the traffic to node `to`, -1 when none.
  int carrier(int to) const {
    auto c = set->carrier(overlay_addr(to));
    return c ? static_cast<int>(*c) : -1;
  }
  // How many packets came in on `rail`.
  std::size_t received(std::size_t rail) const {
    std::size_t n = 0;
    for (const Rx& r : rx)
      n += r.rail == rail ? 1 : 0;
    return n;
  }
  // Packet `seq` came in (from anyone, on any rail).
  bool got(std::uint32_t seq) const {
    for (const Rx& r : rx) {
      if (r.seq == seq)
        return true;
    }
    return false;
  }
  // Sequence numbers received from node `sender`, in arrival order; on
  // `rail` only when given.
  std::vector<std::uint32_t> from(int sender, std::optional<std::size_t> rail = {}) const {
    std::vector<std::uint32_t> out;
    for (const Rx& r : rx) {
      if ((r.from & 0xff) == static_cast<NodeId>(sender) && (!rail || r.rail == *rail))
        out.push_back(r.seq);
    }
    return out;
  }
};

inline void RailHost::deliver(NodeId from, std::span<const std::byte> p) {
  std::uint32_t seq = 0;
  REQUIRE(p.size() >= sizeof seq);
  std::memcpy(&seq, p.data(), sizeof seq);
  owner->rx.push_back({rail, from, seq});
}

class RailCluster : public sim::Cluster {
 public:
  explicit RailCluster(Profile p = Profile::kMlx) : sim::Cluster(p) {}
  // The RailSets go before the managers they borrow (sim::Cluster's).
  ~RailCluster() override { nodes_.clear(); }

  // Rail node i: its two hosts started with test_config(), one
  // incarnation as one daemon has, and the RailSet over them. `shared`:
  // rail 1 is a second port of rail 0's HCA (sim::Fabric::add_port), so
  // the two managers share its PD, SRQ and SRQ buffers.
  RailNode& add(int i, cm::RailsMode mode = cm::RailsMode::kActiveBackup, bool shared = false,
                Duration holddown = kHolddown) {
    auto n = std::make_unique<RailNode>(fabric, i);
    std::vector<cm::RailSet::Rail> rails;
    for (std::size_t k = 0; k < kRails; ++k) {
      RailHost& h = k == 1 && shared ? add_port_node<RailHost>(rail_addr(0, i), rail_addr(1, i))
                                     : add_node<RailHost>(rail_addr(k, i));
      h.owner = n.get();
      h.rail = k;
      n->hosts[k] = &h;
      auto cfg = test_config(h.addr, 0x1000 + static_cast<std::uint64_t>(i));
      cfg.rail_count = kRails;
      auto r = start(h, cfg);
      REQUIRE(r.ok());
      rails.push_back({.manager = h.mgr.get(),
                       .map = {.underlay = [k, i](const IpAddr& o) -> std::optional<Endpoint> {
                         // 10.100.0.j is 10.99.0.j on rail 0 and 10.98.0.j
                         // on rail 1, whether or not j has that rail.
                         const std::uint32_t v = o.v4_host_order();
                         const int j = static_cast<int>(v & 0xff);
                         if ((v & 0xffffff00u) != 0x0a640000u || j == 0 || j == 255 || j == i)
                           return std::nullopt;
                         return rail_ep(k, j);
                       }}});
    }
    n->set = std::make_unique<cm::RailSet>(
        cm::RailSetConfig{.mode = mode, .holddown = holddown, .idle_timeout = 5s}, std::move(rails),
        n->timer);
    // Each rail's deliveries are recorded with the rail they came in on:
    // the hosts stand where the RailSet's receive side would.
    for (std::size_t k = 0; k < kRails; ++k)
      n->hosts[k]->mgr->set_sink(*n->hosts[k]);
    n->run_timer(true);
    RailNode* raw = n.get();
    n->set->set_observer([raw](const cm::Event& e) {
      raw->events.push_back(
          {e.kind, e.rail, e.from_rail, e.to, e.peer_addr.addr, std::string(e.reason)});
    });
    nodes_.push_back(std::move(n));
    return *raw;
  }

  // A one-rail node i (a plain Manager at 10.99.0.i, no RailSet, so no
  // kCapRails), as a daemon with one node.address runs. `rail_count`: what
  // its REQ and REP say (0: a peer from before the field, which says nothing).
  Node& add_plain(int i, std::uint8_t rail_count = 1) {
    Node& n = add_node<Node>(rail_addr(0, i));
    auto cfg = test_config(n.addr, 0x1000 + static_cast<std::uint64_t>(i));
    cfg.rail_count = rail_count;
    auto r = start(n, cfg);
    REQUIRE(r.ok());
    return n;
  }

  // packet(seq) from `from` to node `to`'s overlay address, through the
  // RailSet as the TUN path hands it over.
  static cm::SendResult send(RailNode& from, int to, std::uint32_t seq) {
    const auto peer = from.set->route(overlay_addr(to));
    return peer ? from.set->send(*peer, packet(seq)) : cm::SendResult::kRefused;
  }

  // `a` and each of `peers` exchange a packet each way every 100 ms for
  // `d`, numbered from `seq` (advanced); long enough (a few probe ticks)
  // and both links are ESTABLISHED, rail 0 carrying.
  void exchange(RailNode& a, std::initializer_list<RailNode*> peers, std::uint32_t& seq,
                Duration d) {
    for (Duration t{}; t < d; t += 100ms) {
      for (RailNode* b : peers) {
        send(a, b->index, seq);
        send(*b, a.index, seq);
      }
      ++seq;
      run(100ms);
    }
  }

  // Shuts every manager down, runs past every teardown bound, and requires
  // that no simulated host holds a QP or an rdma_cm id, and that the
  // simulator saw no misuse.
  // No connection is started once a manager stops, whatever the RailSets'
  // timers do meanwhile.
  void shutdown_and_require_clean() {
    std::vector<std::uint64_t> started;
    for (std::size_t i = 0; i < size(); ++i) {
      node(i).mgr->shutdown();
      started.push_back(node(i).ctr().connects_started);
    }
    run(5s);
    for (std::size_t i = 0; i < size(); ++i) {
      sim::ClusterNode& n = node(i);
      INFO("host " << n.addr.to_string());
      CHECK(n.ctr().connects_started == started[i]);
      CHECK(n.mgr->stopped());
      CHECK(n.sim->live_qps() == 0);
      CHECK(n.sim->live_cm_ids() == 0);
      CHECK(n.mgr->live_qpns().empty());
      CHECK(n.sim->stats().misuse == 0);
      CHECK(n.ctr().qps_created == n.ctr().qps_destroyed);
      CHECK(n.ctr().cm_ids_created == n.ctr().cm_ids_destroyed);
    }
  }

 private:
  std::vector<std::unique_ptr<RailNode>> nodes_;
};

// The connection id of the in-service ESTABLISHED QP of `m` to `peer`; 0
// when none.
inline std::uint64_t established_conn(const cm::Manager& m, const Endpoint& peer) {
  for (const auto& q : m.snapshot().qps) {
    if (q.in_service && q.state == cm::ConnState::kEstablished && q.peer_addr.addr == peer.addr)
      return q.id;
  }
  return 0;
}

}  // namespace rcnet::test::rails
