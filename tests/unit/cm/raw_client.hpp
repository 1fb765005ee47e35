// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A peer without a Manager, for what a Manager would never send: it speaks
// rdma_cm through a simulated node's seam directly, puts the REQ private
// data it is given in its connect, and records every event that comes back.

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "catch2_compat.hpp"

#include "harness.hpp"
#include "rdma/seam.hpp"
#include "sim/fabric.hpp"
#include "wire/private_data.hpp"

namespace rcnet::test {

// The REQ fields a RawClient at `from` starts from: its node id, a fixed
// incarnation, the cluster's MTU; nothing advertised.
inline wire::PrivateData raw_req(const IpAddr& from) {
  wire::PrivateData req;
  req.kind = wire::Kind::kReq;
  req.node_id = node_id_for(from);
  req.incarnation = 0x9999;
  req.mtu = 2048;
  return req;
}

struct RawClient final : rdma::EventSink {
  rdma::Seam* seam = nullptr;
  std::vector<std::uint8_t> pd;
  std::vector<rdma::CmEvent> events;
  rdma::CmIdHandle id = 0;

  // Adds node `addr` to `fabric`, this client its event sink, its seam open
  // on kPort.
  void attach(sim::Fabric& fabric, const IpAddr& addr, sim::Profile profile) {
    auto& node = fabric.add_node(addr, profile);
    seam = &node.seam();
    node.set_sink(this);
    REQUIRE(seam->open(Endpoint{addr, kPort}, rdma::DeviceConfig{}));
  }
  // A new cm id that connects to `to` with `private_data` in its REQ once
  // the fabric runs (address, then route, then connect: on_cm_event).
  void connect(const Endpoint& to, std::span<const std::uint8_t> private_data) {
    pd.assign(private_data.begin(), private_data.end());
    id = *seam->create_id();
    REQUIRE(seam->resolve_addr(id, to, 1s));
  }
  // The REJ that came back, or nullptr.
  const rdma::CmEvent* rejected() const {
    auto it = std::find_if(events.begin(), events.end(),
                           [](auto& e) { return e.type == rdma::CmEventType::kRejected; });
    return it == events.end() ? nullptr : &*it;
  }

  void on_cm_event(const rdma::CmEvent& ev) override {
    events.push_back(ev);
    if (ev.type == rdma::CmEventType::kAddrResolved)
      (void)seam->resolve_route(id, 1s);
    if (ev.type == rdma::CmEventType::kRouteResolved) {
      (void)seam->create_qp(id, rdma::QpCaps{});
      rdma::ConnParams p;
      p.private_data = pd;
      (void)seam->connect(id, p);
    }
  }
  void on_async_event(const rdma::AsyncEvent&) override {}
  void on_completions(std::span<const rdma::WorkCompletion>) override {}
};

}  // namespace rcnet::test
