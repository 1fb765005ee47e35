// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// What a RailSet (cm/rails.hpp) asks of one rail's manager and hears from
// it (docs/design.md "Rails"): a failed link's unfinished sends and queued
// packets handed over instead of dropped, the rail's own ups and downs,
// rail messages, and links made without a packet (standby, fail-back).
#include "cm/manager_impl.hpp"

namespace rcnet::cm {

std::string_view to_string(DevicePath p) {
  switch (p) {
    case DevicePath::kAsyncEvent:
      return "async event";
    case DevicePath::kNetlinkMonitor:
      return "netlink monitor";
    case DevicePath::kPoll:
      return "poll";
  }
  return "unknown";
}

std::string_view to_string(LinkCause c) {
  switch (c) {
    case LinkCause::kPortError:
      return "port_error";
    case LinkCause::kDeviceLost:
      return "device_lost";
    case LinkCause::kCarrier:
      return "carrier";
    case LinkCause::kRetryExceeded:
      return "retry_exceeded";
    case LinkCause::kPeerNotice:
      return "peer_notice";
    case LinkCause::kLinkLost:
      return "link_lost";
  }
  return "?";
}

void Manager::Impl::report_link_down(Conn& c, bool failed, std::string_view why) {
  const LinkCause cause = cause_;
  cause_ = LinkCause::kLinkLost;
  if (rail_hooks_ == nullptr)
    return;
  std::vector<std::vector<std::byte>> packets;
  std::size_t in_flight = 0;
  if (failed) {
    if (c.has_qp())
      dp_.take_unsent(c, packets);
    in_flight = packets.size();
    if (Peer* p = table_.find_peer(c.peer)) {
      for (auto& q : p->queue)
        packets.push_back(std::move(q));
      p->queue.clear();
    }
  }
  rail_hooks_->link_down(c.peer_addr, failed, cause, why, packets, in_flight);
}

void Manager::Impl::report_rail(LinkCause cause, std::string_view why) {
  const bool up = sends_allowed();
  if (up == rail_reported_up_)
    return;
  rail_reported_up_ = up;
  if (rail_hooks_ != nullptr)
    rail_hooks_->rail_changed(up, cause, why);
}

void Manager::Impl::rail_message(Conn& c, std::span<const std::byte> msg) {
  if (rail_hooks_ != nullptr && c.in_service)
    rail_hooks_->rail_message(c.peer_addr, msg);
}

Conn* Manager::Impl::conn_to(const Endpoint& peer) {
  Peer* p = table_.find_peer(node_id_for(peer.addr));
  return p != nullptr ? table_.conn_of(*p) : nullptr;
}

bool Manager::Impl::send_rail_message(const Endpoint& peer, std::span<const std::byte> msg) {
  Conn* c = conn_to(peer);
  if (c == nullptr || !c->rails)
    return false;
  return dp_.post_rail_message(*c, msg);
}

bool Manager::Impl::ensure_link(const Endpoint& peer) {
  if (!sends_allowed())
    return false;
  const NodeId node = node_id_for(peer.addr);
  if (node == 0 || node == self_)
    return false;
  Peer& p = table_.peer_for(node, peer);
  if (table_.conn_of(p) != nullptr || p.retry_at != TimePoint::max())
    return false;
  start_connect(p);
  const Conn* c = table_.conn_of(p);
  return c != nullptr && c->active;
}

bool Manager::Impl::abandon_attempt(const Endpoint& peer, std::string_view why) {
  Conn* c = conn_to(peer);
  if (c == nullptr || !c->active || !c->in_service || c->state == ConnState::kEstablished ||
      is_teardown(c->state))
    return false;
  teardown(*c, TeardownKind::kHard, std::string(why));
  return true;
}

bool Manager::Impl::link_established(const Endpoint& peer) const {
  const Conn* c = const_cast<Impl*>(this)->conn_to(peer);  // a lookup only
  return c != nullptr && c->state == ConnState::kEstablished;
}

bool Manager::Impl::link_failed(const Endpoint& peer, LinkCause cause, std::string_view why) {
  Conn* c = conn_to(peer);
  if (c == nullptr)
    return false;
  cause_ = cause;
  teardown(*c, TeardownKind::kHard, std::string(why));
  return true;
}

void Manager::set_neighbour_ops(NeighbourOps ops) {
  impl_->neighbour_ = std::move(ops);
}
void Manager::set_carrier_probe(std::function<bool()> has_carrier) {
  impl_->has_carrier_ = std::move(has_carrier);
}

std::string_view Manager::Impl::blame_carrier() {
  if (!link_up_ || !has_carrier_ || has_carrier_())
    return {};
  cause_ = LinkCause::kCarrier;
  return " (the underlay has no carrier)";
}
void Manager::set_rail_hooks(RailHooks* hooks) {
  impl_->rail_hooks_ = hooks;
}
void Manager::set_sink(PacketSink& sink) {
  impl_->dp_.set_sink(sink);
}
bool Manager::send_rail_message(const Endpoint& peer, std::span<const std::byte> msg) {
  const bool r = impl_->send_rail_message(peer, msg);
  impl_->settle();
  return r;
}
bool Manager::ensure_link(const Endpoint& peer) {
  const bool r = impl_->ensure_link(peer);
  impl_->settle();
  return r;
}
bool Manager::abandon_attempt(const Endpoint& peer, std::string_view why) {
  const bool r = impl_->abandon_attempt(peer, why);
  impl_->settle();
  return r;
}
bool Manager::link_established(const Endpoint& peer) const {
  return impl_->link_established(peer);
}
bool Manager::link_failed(const Endpoint& peer, LinkCause cause, std::string_view why) {
  const bool r = impl_->link_failed(peer, cause, why);
  impl_->settle();
  return r;
}

}  // namespace rcnet::cm
