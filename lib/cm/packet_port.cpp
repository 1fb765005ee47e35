// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The packet port's receive side (cm/packet_port.hpp): the rails' packets
// go up to the TUN side, their capacity edges joined into one.
#include "cm/packet_port.hpp"

namespace rcnet::cm {

namespace {
class NullSink final : public PacketSink {
 public:
  void deliver(NodeId, std::span<const std::byte>) override {}
  void send_capacity(bool) override {}
};
}  // namespace

PacketSink& null_sink() {
  static NullSink sink;
  return sink;
}

// What rail k's Manager delivers into.
class PacketPort::RailSink final : public PacketSink {
 public:
  RailSink(PacketPort& port, std::size_t rail) : port_(port), rail_(rail) {}
  void deliver(NodeId peer, std::span<const std::byte> packet) override {
    port_.deliver(peer, packet);
  }
  void send_capacity(bool available) override { port_.capacity(rail_, available); }

 private:
  PacketPort& port_;
  std::size_t rail_;
};

PacketPort::PacketPort(std::size_t rails) : blocked_(rails, false) {
  for (std::size_t k = 0; k < rails; ++k)
    sinks_.push_back(std::make_unique<RailSink>(*this, k));
}

PacketPort::~PacketPort() = default;

PacketSink& PacketPort::rail_sink(std::size_t k) {
  return *sinks_.at(k);
}

void PacketPort::deliver(NodeId peer, std::span<const std::byte> packet) {
  if (upper_ == nullptr) {
    ++dropped_early_;
    return;
  }
  upper_->deliver(peer, packet);
}

void PacketPort::capacity(std::size_t rail, bool available) {
  if (blocked_[rail] == !available)
    return;
  blocked_[rail] = !available;
  if (!available) {
    if (blocked_count_++ == 0 && upper_ != nullptr)
      upper_->send_capacity(false);
  } else if (--blocked_count_ == 0 && upper_ != nullptr) {
    upper_->send_capacity(true);
  }
}

}  // namespace rcnet::cm
