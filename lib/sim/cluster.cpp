// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "sim/cluster.hpp"

#include <utility>

namespace rcnet::sim {

IpAddr cluster_addr(std::uint32_t host) {
  return IpAddr::v4(0x0a630000u + host);
}

cm::ManagerConfig cluster_config(const IpAddr& addr, std::uint64_t incarnation,
                                 cm::ManagerConfig base) {
  cm::ManagerConfig c = std::move(base);
  c.local = Endpoint{addr, kClusterPort};
  c.incarnation = incarnation;
  c.overlay = IpAddr::v4(0x0a640000u + (addr.v4_host_order() & 0xffffu));
  return c;
}

Cluster::Cluster(Profile profile, std::uint64_t seed) : fabric(seed), profile_(profile) {}

Cluster::~Cluster() {
  for (auto& n : nodes_)
    n->mgr.reset();
}

SimNode& Cluster::add_host(const IpAddr& addr) {
  return fabric.add_node(addr, profile_);
}

void Cluster::attach(std::unique_ptr<ClusterNode> n, const IpAddr& addr, SimNode& host) {
  n->addr = addr;
  n->sim = &host;
  nodes_.push_back(std::move(n));
}

Result<void> Cluster::start(ClusterNode& n, const cm::ManagerConfig& cfg) {
  n.mgr.reset();
  n.cfg = cfg;
  n.mgr = std::make_unique<cm::Manager>(cfg, n.seam(), n.timers(), n.packet_sink());
  n.sim->set_sink(&n.events());
  n.sim->set_timer_callback([&n] { n.on_timer(); });
  return n.mgr->start();
}

bool Cluster::run_until(const std::function<bool()>& done, Duration step, Duration limit) {
  for (Duration ran{}; ran < limit; ran += step) {
    if (done())
      return true;
    fabric.run_for(step);
  }
  return done();
}

}  // namespace rcnet::sim
