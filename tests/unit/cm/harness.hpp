// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A cluster of connection managers on the simulated fabric, for tests.

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "sim/fabric.hpp"

namespace rcnet::test {

inline constexpr std::uint16_t kPort = 7471;

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
  cm::ManagerConfig c;
  c.local = Endpoint{addr, kPort};
  c.incarnation = incarnation;
  c.overlay = IpAddr::v4(0x0a640000u | (addr.v4_host_order() & 0xff));
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

struct Node {
  sim::SimNode* sim = nullptr;
  RecordingSink sink;
  std::unique_ptr<cm::Manager> mgr;
  IpAddr addr;
  Endpoint ep() const { return Endpoint{addr, kPort}; }
  const cm::Counters& ctr() const { return mgr->counters(); }
};

// For Cluster::add: a node with offload (GSO frames, kCapGso).
inline void offload_on(cm::ManagerConfig& c) {
  c.offload = true;
}

inline IpAddr node_addr(int i) {
  return IpAddr::v4(0x0a630000u + static_cast<std::uint32_t>(i));
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

class Cluster {
 public:
  explicit Cluster(sim::Profile profile, std::uint64_t seed = 1)
      : fabric(seed), profile_(profile) {}

  Node& add(int i, std::function<void(cm::ManagerConfig&)> tweak = {}) {
    auto n = std::make_unique<Node>();
    n->addr = node_addr(i);
    n->sim = &fabric.add_node(n->addr, profile_);
    start(*n, tweak, 0x1000 + static_cast<std::uint64_t>(i));
    Node& ref = *n;
    nodes[i] = std::move(n);
    return ref;
  }

  // A new daemon incarnation on the node (after crash()/restart()).
  void restart(int i, std::uint64_t incarnation,
               std::function<void(cm::ManagerConfig&)> tweak = {}) {
    Node& n = *nodes[i];
    n.mgr.reset();
    n.sink = RecordingSink{};
    start(n, tweak, incarnation);
  }

  Node& operator[](int i) { return *nodes.at(i); }
  void run(Duration d) { fabric.run_for(d); }

  sim::Fabric fabric;
  std::map<int, std::unique_ptr<Node>> nodes;

 private:
  void start(Node& n, const std::function<void(cm::ManagerConfig&)>& tweak, std::uint64_t inc) {
    auto cfg = test_config(n.addr, inc);
    if (tweak)
      tweak(cfg);
    n.mgr = std::make_unique<cm::Manager>(cfg, n.sim->seam(), n.sim->timers(), n.sink);
    n.sim->set_sink(n.mgr.get());
    n.sim->set_timer_callback([m = n.mgr.get()] { m->on_timer(); });
    auto r = n.mgr->start();
    if (!r)
      throw std::runtime_error("manager start: " + r.error().message());
  }
  sim::Profile profile_;
};

}  // namespace rcnet::test
