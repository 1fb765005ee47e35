// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The packet port of a node with one rail (cm/packet_port.hpp): straight to
// its one Manager, keyed by the peer's underlay endpoint. No RailSet runs on
// such a node (docs/design.md "Rails"): no probes, no timer, no failover.
//
// Ownership: borrows the Manager (must outlive the port; the port binds
// itself as its PacketSink and unbinds in its destructor). Thread: the loop's.
#include "cm/packet_port.hpp"

namespace rcnet::cm {

class OneRailPort final : public PacketPort {
 public:
  OneRailPort(Manager& manager, RailMap map);
  ~OneRailPort() override;

  std::optional<Endpoint> route(const IpAddr& dst) override { return map_.underlay(dst); }
  SendResult send(const Endpoint& peer, std::span<const std::byte> frame) override {
    return m_.send(peer, frame);
  }
  std::span<std::byte> lend_send_buffer() override { return m_.lend_send_buffer(); }
  SendResult send_lent(const Endpoint& peer, std::size_t len) override {
    return m_.send_lent(peer, len);
  }
  void return_lent() override { m_.return_lent(); }
  void begin_send_batch() override { m_.begin_send_batch(); }
  void end_send_batch() override { m_.end_send_batch(); }
  std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const override {
    return m_.peer_mtu(peer);
  }
  std::optional<PeerOverlays> peer_overlays(NodeId peer) const override;
  void set_observer(EventObserver observer) override { m_.set_observer(std::move(observer)); }
  Snapshot snapshot() const override { return m_.snapshot(); }
  // Nothing of its own to stop or reconfigure: the Manager is its owner's.
  void stopping() override {}
  void reconfigure(Duration, Duration) override {}
  void dial(const IpAddr& overlay) override {
    if (const auto ep = map_.underlay(overlay))
      (void)m_.ensure_link(*ep);
  }

 private:
  Manager& m_;
  RailMap map_;
};

}  // namespace rcnet::cm
