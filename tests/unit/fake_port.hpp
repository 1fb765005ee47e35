// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A packet port (cm/packet_port.hpp) for tests: each call goes to a
// std::function the test sets, with the answers of a port that has no link
// (nothing mapped, no lending, no MTU known, no peer known) by default; its
// rails' sinks are open to the test (what a Manager delivers into).
#include <functional>
#include <optional>
#include <span>

#include "cm/packet_port.hpp"

namespace rcnet::test {

struct FakePort final : cm::PacketPort {
  explicit FakePort(std::size_t rails = 1) : cm::PacketPort(rails) {}
  using cm::PacketPort::rail_sink;
  std::function<std::optional<Endpoint>(const IpAddr&)> on_route = [](const IpAddr&) {
    return std::optional<Endpoint>{};
  };
  std::function<cm::SendResult(const Endpoint&, std::span<const std::byte>)> on_send =
      [](const Endpoint&, std::span<const std::byte>) { return cm::SendResult::kSent; };
  std::function<std::span<std::byte>()> on_lend = [] { return std::span<std::byte>{}; };
  std::function<cm::SendResult(const Endpoint&, std::size_t)> on_send_lent =
      [](const Endpoint&, std::size_t) { return cm::SendResult::kRefused; };
  std::function<void()> on_return_lent = [] {};
  std::function<void()> on_begin_batch = [] {};
  std::function<void()> on_end_batch = [] {};
  std::function<std::optional<std::uint32_t>(const Endpoint&)> on_peer_mtu = [](const Endpoint&) {
    return std::optional<std::uint32_t>{};
  };
  std::function<std::optional<cm::PeerOverlays>(NodeId)> on_peer_overlays = [](NodeId) {
    return std::optional<cm::PeerOverlays>{};
  };

  std::optional<Endpoint> route(const IpAddr& dst) override { return on_route(dst); }
  cm::SendResult send(const Endpoint& peer, std::span<const std::byte> frame) override {
    return on_send(peer, frame);
  }
  std::span<std::byte> lend_send_buffer() override { return on_lend(); }
  cm::SendResult send_lent(const Endpoint& peer, std::size_t len) override {
    return on_send_lent(peer, len);
  }
  void return_lent() override { on_return_lent(); }
  void begin_send_batch() override { on_begin_batch(); }
  void end_send_batch() override { on_end_batch(); }
  std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const override {
    return on_peer_mtu(peer);
  }
  std::optional<cm::PeerOverlays> peer_overlays(NodeId peer) const override {
    return on_peer_overlays(peer);
  }
  void set_observer(cm::EventObserver) override {}
  cm::Snapshot snapshot() const override { return {}; }
  void stopping() override {}
  void reconfigure(Duration, Duration) override {}
  void dial(const IpAddr& overlay) override { dialled.push_back(overlay); }
  std::vector<IpAddr> dialled;
};

}  // namespace rcnet::test
