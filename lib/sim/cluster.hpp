// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A cluster of connection managers (lib/cm) on the simulated fabric: one
// cm::Manager per simulated host, wired as rcnetd wires its one (the manager
// runs on the host's seam and timer service; the host hands it its rdma
// events and timer expiries). The unit tests, the manager fuzzer and
// rcnet-bench-sim are built on it. Scaffolding for those: rcnetd never uses
// it.
//
// Single-threaded and deterministic like the fabric: everything happens on
// the fabric's virtual clock, inside run().

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "cm/manager.hpp"
#include "sim/fabric.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::sim {

// The port every manager of a cluster listens on (rcnetd's default).
inline constexpr std::uint16_t kClusterPort = 7471;

// Host `n`'s underlay address: 10.99.0.0 + n (host 1 is 10.99.0.1, host 256
// is 10.99.1.0). `n` below 65,536.
IpAddr cluster_addr(std::uint32_t host);

// `base` with the identity of a manager at `addr`: local endpoint (addr,
// kClusterPort), `incarnation`, and overlay 10.100.0.0 + the low 16 bits of
// addr (10.99.0.5 gets 10.100.0.5). Every other field is base's.
cm::ManagerConfig cluster_config(const IpAddr& addr, std::uint64_t incarnation,
                                 cm::ManagerConfig base = {});

// One host of a cluster and the manager on it. A harness derives from it to
// give the manager its PacketSink (what the host's TUN device would have
// received) and, where it meters or checks them, to stand between the
// manager and its seam, timers, events or timer expiries.
class ClusterNode {
 public:
  ClusterNode() = default;
  virtual ~ClusterNode() = default;
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  IpAddr addr;
  SimNode* sim = nullptr;            // the simulated host; owned by the cluster's fabric
  std::unique_ptr<cm::Manager> mgr;  // null until Cluster::start()
  cm::ManagerConfig cfg;             // what mgr was last started with (not reconfigure()'s)

  Endpoint ep() const { return Endpoint{addr, kClusterPort}; }
  // The manager's counters; mgr must be started.
  const cm::Counters& ctr() const { return mgr->counters(); }

  // Where the manager delivers received packets and capacity edges. Lives
  // as long as the node; read by the manager from Cluster::start() on.
  virtual cm::PacketSink& packet_sink() = 0;
  // What the manager is constructed on: the host's own seam and timers.
  virtual rdma::Seam& seam() { return sim->seam(); }
  virtual TimerService& timers() { return sim->timers(); }
  // What the host hands its rdma events to (called once mgr exists): the
  // manager itself.
  virtual rdma::EventSink& events() { return *mgr; }
  // The host's timer fired: the manager's on_timer().
  virtual void on_timer() { mgr->on_timer(); }
};

class Cluster {
 public:
  // Every host runs `profile`; `seed` seeds the fabric (CM jitter, rxe drain).
  explicit Cluster(Profile profile, std::uint64_t seed = 1);
  // Destroys the managers before the fabric: they borrow its seams.
  virtual ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Adds a host at `addr` to the fabric as a new NodeT (a ClusterNode). Its
  // manager is not started: start() does that. The node lives as long as
  // the cluster.
  template <class NodeT, class... Args>
  NodeT& add_node(const IpAddr& addr, Args&&... args) {
    auto n = std::make_unique<NodeT>(std::forward<Args>(args)...);
    NodeT& ref = *n;
    attach(std::move(n), addr, add_host(addr));
    return ref;
  }
  // Likewise, a host that is another port of the HCA of the node at
  // `device` (Fabric::add_port): rails that are ports of one device.
  template <class NodeT, class... Args>
  NodeT& add_port_node(const IpAddr& device, const IpAddr& addr, Args&&... args) {
    auto n = std::make_unique<NodeT>(std::forward<Args>(args)...);
    NodeT& ref = *n;
    attach(std::move(n), addr, fabric.add_port(device, addr));
    return ref;
  }
  // Room for `n` nodes, so that adding them allocates nothing here.
  void reserve(std::size_t n) { nodes_.reserve(n); }

  // (Re)starts n's manager with `cfg`: destroys the one it had (its handles
  // are stale after SimNode::restart(), which is not misuse), constructs a
  // new one on n.seam() and n.timers() with n.packet_sink(), gives the host
  // n.events() and n.on_timer(), and calls Manager::start(). Returns
  // start()'s error (device, listener or buffer pools, from the seam); the
  // manager stays in n.mgr either way.
  Result<void> start(ClusterNode& n, const cm::ManagerConfig& cfg);

  // Nodes in the order they were added.
  std::size_t size() const { return nodes_.size(); }
  ClusterNode& node(std::size_t i) { return *nodes_.at(i); }
  Profile profile() const { return profile_; }

  // Runs the fabric's virtual clock `d` forward.
  void run(Duration d) { fabric.run_for(d); }
  // Runs `step` at a time until `done()` holds, at most `limit` of virtual
  // time; `done()` is asked before each step. Returns done() at the end.
  bool run_until(const std::function<bool()>& done, Duration step, Duration limit);

  Fabric fabric;

 protected:
  // Creates the host at `addr` on the fabric with this cluster's profile (a
  // benchmark overrides it to charge that work to the simulator).
  virtual SimNode& add_host(const IpAddr& addr);

 private:
  void attach(std::unique_ptr<ClusterNode> n, const IpAddr& addr, SimNode& host);

  Profile profile_;
  std::vector<std::unique_ptr<ClusterNode>> nodes_;
};

}  // namespace rcnet::sim
