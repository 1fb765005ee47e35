// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The unit tests' cluster of connection managers on the simulated fabric
// (sim/cluster.hpp): node i at 10.99.0.i, small pools and short timeouts,
// every delivered packet recorded.

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch2_compat.hpp"

#include "cm/manager.hpp"
#include "sim/cluster.hpp"
#include "sim/fabric.hpp"

namespace rcnet::test {

inline constexpr std::uint16_t kPort = sim::kClusterPort;

// What a node's TUN device would have received.
struct RecordingSink final : cm::PacketSink {
  struct Packet {
    NodeId from;
    std::vector<std::byte> bytes;
  };
  std::vector<Packet> packets;
  int capacity_off = 0, capacity_on = 0;
  void deliver(NodeId from, std::span<const std::byte> p) override {
    packets.push_back({from, {p.begin(), p.end()}});
  }
  void send_capacity(bool available) override { (available ? capacity_on : capacity_off)++; }
};

inline cm::ManagerConfig test_config(const IpAddr& addr, std::uint64_t incarnation) {
  cm::ManagerConfig c = sim::cluster_config(addr, incarnation);
  c.mtu = 2048;
  c.srq_size = 128;
  c.send_slots = 256;
  c.qp_send_depth = 64;
  c.rq_depth = 16;
  c.peer_queue_depth = 64;
  c.idle_timeout = 5s;
  c.last_wqe_timeout = 200ms;
  c.drain_timeout = 200ms;
  c.disconnect_timeout = 200ms;
  c.resolve_timeout = 500ms;
  c.connect_timeout = 2s;
  c.reaper_interval = 100ms;
  return c;
}

struct Node final : sim::ClusterNode {
  RecordingSink sink;
  cm::PacketSink& packet_sink() override { return sink; }
};

// For Cluster::add: a node with offload (GSO frames, kCapGso).
inline void offload_on(cm::ManagerConfig& c) {
  c.offload = true;
}

inline IpAddr node_addr(int i) {
  return sim::cluster_addr(static_cast<std::uint32_t>(i));
}

inline std::vector<std::byte> packet(std::uint32_t seq, std::size_t size = 100) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i)
    p[i] = static_cast<std::byte>((seq * 31 + i) & 0xff);
  std::memcpy(p.data(), &seq, sizeof seq);
  return p;
}
inline std::uint32_t seq_of(const std::vector<std::byte>& p) {
  std::uint32_t s = 0;
  std::memcpy(&s, p.data(), sizeof s);
  return s;
}

// `n` received packet(0) .. packet(last), exactly those, in order.
inline void require_in_order(Node& n, std::uint32_t last) {
  REQUIRE(n.sink.packets.size() == std::size_t{last} + 1);
  for (std::uint32_t i = 0; i <= last; ++i)
    CHECK(seq_of(n.sink.packets[i].bytes) == i);
}

// Each device profile of the fabric in turn (a Catch2 GENERATE: the test
// case runs once per profile).
inline sim::Profile any_profile() {
  return GENERATE(sim::Profile::kMlx, sim::Profile::kEhca, sim::Profile::kRxe);
}

// Nothing left on `n`: no QP, no cm id (but the listener), the SRQ full,
// every send slot back, no misuse of the verbs, every QP and cm id made
// also destroyed.
inline void require_clean(Node& n) {
  INFO("node " << n.addr.to_string());
  CHECK(n.mgr->live_qpns().empty());
  CHECK(n.mgr->live_cm_ids() == 0);
  CHECK(n.sim->live_qps() == 0);
  CHECK(n.sim->live_cm_ids() == 0);
  CHECK(n.sim->srq_posted() == n.mgr->config().srq_size);
  CHECK(n.sim->stats().misuse == 0);
  CHECK(n.ctr().qps_created == n.ctr().qps_destroyed);
  CHECK(n.ctr().cm_ids_created == n.ctr().cm_ids_destroyed);
  auto s = n.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

// How many of `n`'s connections are established and in service.
inline std::size_t in_service(Node& n) {
  auto s = n.mgr->snapshot();
  return static_cast<std::size_t>(std::count_if(s.qps.begin(), s.qps.end(), [](auto& q) {
    return q.in_service && q.state == cm::ConnState::kEstablished;
  }));
}

// Nodes by number: c.add(1) is 10.99.0.1, incarnation 0x1001.
class Cluster : public sim::Cluster {
 public:
  using Tweak = std::function<void(cm::ManagerConfig&)>;
  explicit Cluster(sim::Profile profile, std::uint64_t seed = 1) : sim::Cluster(profile, seed) {}

  // Node i at node_addr(i) with test_config(), changed by `tweak`; started.
  Node& add(int i, const Tweak& tweak = {}) {
    Node& n = add_node<Node>(node_addr(i));
    by_number_[i] = &n;
    start_node(n, tweak, 0x1000 + static_cast<std::uint64_t>(i));
    return n;
  }

  // A new daemon incarnation on node i (after crash()/restart()), with a
  // fresh sink.
  void restart(int i, std::uint64_t incarnation, const Tweak& tweak = {}) {
    Node& n = (*this)[i];
    n.mgr.reset();
    n.sink = RecordingSink{};
    start_node(n, tweak, incarnation);
  }

  Node& operator[](int i) { return *by_number_.at(i); }

  // The usual way a test gets a connection: `from` sends packet(seq) to
  // `to` (the connection is made on demand) and the fabric runs `settle`,
  // long enough for the handshake and the packet on every profile.
  void connect(Node& from, Node& to, std::uint32_t seq = 1, Duration settle = 10ms) {
    from.mgr->send(to.ep(), packet(seq));
    run(settle);
  }
  // packet(first) .. packet(last) from `from` to `to`, without running the
  // fabric in between.
  static void send_range(Node& from, Node& to, std::uint32_t first, std::uint32_t last) {
    for (std::uint32_t i = first; i <= last; ++i)
      from.mgr->send(to.ep(), packet(i));
  }

 private:
  void start_node(Node& n, const Tweak& tweak, std::uint64_t incarnation) {
    auto cfg = test_config(n.addr, incarnation);
    if (tweak)
      tweak(cfg);
    auto r = start(n, cfg);
    if (!r)
      throw std::runtime_error("manager start: " + r.error().message());
  }
  std::map<int, Node*> by_number_;
};

}  // namespace rcnet::test
