// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/one_rail_port.hpp"

namespace rcnet::cm {

OneRailPort::OneRailPort(Manager& manager, RailMap map)
    : PacketPort(1), m_(manager), map_(std::move(map)) {
  bind_rail(0, m_);
}

OneRailPort::~OneRailPort() {
  unbind_rail(m_);
}

std::optional<PeerOverlays> OneRailPort::peer_overlays(NodeId peer) const {
  const auto u = m_.peer_underlay(peer);
  if (!u || !map_.overlays)
    return std::nullopt;
  return map_.overlays(u->addr);
}

}  // namespace rcnet::cm
