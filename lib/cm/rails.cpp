// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The RailSet (cm/rails.hpp; docs/design.md "Rails"): which link carries a
// peer's traffic, the data path over the rails, and the merged view of
// every rail. What the managers report and the timer path that acts on it:
// rails_events.cpp.
#include "cm/rails.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "util/log.hpp"
#include "util/random.hpp"
#include "wire/rail_message.hpp"
#include "wire/vnet_hdr.hpp"

namespace rcnet::cm {

std::string_view to_string(RailsMode m) {
  switch (m) {
    case RailsMode::kActiveBackup:
      return "active-backup";
    case RailsMode::kStripe:
      return "stripe";
  }
  return "?";
}

namespace {

// The counter failovers_<cause> of `cause`.
std::uint64_t& failover_counter(Counters& c, LinkCause cause) {
  switch (cause) {
    case LinkCause::kPortError:
      return c.failovers_port_error;
    case LinkCause::kDeviceLost:
      return c.failovers_device_lost;
    case LinkCause::kCarrier:
      return c.failovers_carrier;
    case LinkCause::kRetryExceeded:
      return c.failovers_retry_exceeded;
    case LinkCause::kPeerNotice:
      return c.failovers_peer_notice;
    case LinkCause::kLinkLost:
      break;
  }
  return c.failovers_link_lost;
}

// A flow's hash for stripe mode: addresses, protocol and (TCP, UDP, SCTP)
// ports of an IPv4 or IPv6 packet; 0 for anything it cannot read (such
// packets share one link).
std::uint64_t flow_hash(std::span<const std::byte> p) {
  auto u8 = [&](std::size_t i) { return std::to_integer<std::uint64_t>(p[i]); };
  std::uint64_t h = 0;
  auto mix = [&](std::size_t from, std::size_t n) {
    for (std::size_t i = from; i < from + n; ++i)
      h = (h << 8 | h >> 56) ^ u8(i);
  };
  std::size_t l4 = 0;
  std::uint64_t proto = 0;
  if (p.size() >= 20 && (u8(0) >> 4) == 4) {
    proto = u8(9);
    mix(12, 8);
    l4 = (u8(0) & 0x0f) * 4;
  } else if (p.size() >= 40 && (u8(0) >> 4) == 6) {
    proto = u8(6);
    mix(8, 32);
    l4 = 40;
  } else {
    return 0;
  }
  h ^= proto << 56;
  if ((proto == 6 || proto == 17 || proto == 132) && p.size() >= l4 + 4)
    mix(l4, 4);
  return splitmix64(h);
}

}  // namespace

// One per rail: what its manager reports, tagged with the rail.
class RailSet::Hooks final : public RailHooks {
 public:
  Hooks(RailSet& set, std::size_t k) : set_(set), k_(k) {}
  void link_down(const Endpoint& peer, bool failed, LinkCause cause, std::string_view why,
                 std::vector<std::vector<std::byte>>& packets, std::size_t in_flight) override {
    set_.link_down(k_, peer, failed, cause, why, packets, in_flight);
  }
  void link_up(const Endpoint& peer, const IpAddr& overlay, bool capable,
               std::uint8_t peer_rail_count) override {
    set_.link_up(k_, peer, overlay, capable, peer_rail_count);
  }
  void rail_message(const Endpoint& peer, std::span<const std::byte> msg) override {
    set_.rail_message(k_, peer, msg);
  }
  void rail_changed(bool up, LinkCause cause, std::string_view why) override {
    set_.rail_changed(k_, up, cause, why);
  }

 private:
  RailSet& set_;
  std::size_t k_;
};

RailSet::RailSet(RailSetConfig cfg, std::vector<Rail> rails, TimerService& timers)
    : PacketPort(std::min(rails.size(), kMaxRails)), cfg_(cfg), timers_(timers) {
  const TimePoint t = timers_.now();
  rails_.reserve(rails.size());
  for (std::size_t k = 0; k < rails.size() && k < kMaxRails; ++k) {
    RailInfo r;
    r.rail = std::move(rails[k]);
    r.hooks = std::make_unique<Hooks>(*this, k);
    r.since = t;
    r.holddown = cfg_.holddown;
    r.state = r.rail.manager->device_present() ? RailState::kUp : RailState::kRemoved;
    rails_.push_back(std::move(r));
  }
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    rails_[k].rail.manager->set_rail_hooks(rails_[k].hooks.get());
    bind_rail(k, *rails_[k].rail.manager);
    rails_[k].rail.manager->set_observer([this, k](const Event& e) {
      if (!observer_)
        return;
      Event tagged = e;
      tagged.rail = static_cast<std::uint32_t>(k);
      observer_(tagged);
    });
  }
}

RailSet::~RailSet() {
  for (auto& r : rails_) {
    r.rail.manager->set_rail_hooks(nullptr);
    r.rail.manager->set_observer({});
    unbind_rail(*r.rail.manager);
  }
}

void RailSet::stopping() {
  stopping_ = true;
  actions_.clear();
  for (auto& [o, p] : peers_)
    p.pending.clear();
  timers_.schedule(TimePoint::max());
}

void RailSet::set_observer(EventObserver observer) {
  observer_ = std::move(observer);
}

void RailSet::reconfigure(Duration holddown, Duration idle_timeout) {
  cfg_.holddown = holddown;
  cfg_.idle_timeout = idle_timeout;
}

// --- peers and the choice of link ------------------------------------------------------

void RailSet::dial(const IpAddr& overlay) {
  for (auto& r : rails_) {
    if (const auto ep = r.rail.map.underlay(overlay))
      (void)r.rail.manager->ensure_link(*ep);
  }
}

bool RailSet::maps(const IpAddr& overlay) const {
  if (peers_.contains(overlay))
    return true;
  for (const auto& r : rails_) {
    if (r.rail.map.underlay(overlay))
      return true;
  }
  return false;
}

RailSet::PeerLinks& RailSet::peer(const IpAddr& overlay) {
  auto [it, fresh] = peers_.try_emplace(overlay);
  PeerLinks& p = it->second;
  if (fresh) {
    p.overlay = overlay;
    for (std::size_t k = 0; k < rails_.size(); ++k)
      route_link(p, k);
    choose(p, std::nullopt);
  }
  return p;
}

void RailSet::route_link(PeerLinks& p, std::size_t k) {
  if (auto ep = rails_[k].rail.map.underlay(p.overlay)) {
    p.links[k].ep = *ep;
    p.links[k].routed = true;
    rails_[k].overlay_of[ep->addr] = p.overlay;
  }
}

RailSet::PeerLinks* RailSet::find(std::size_t k, const Endpoint& underlay) {
  auto o = rails_[k].overlay_of.find(underlay.addr);
  if (o == rails_[k].overlay_of.end())
    return nullptr;
  auto p = peers_.find(o->second);
  return p == peers_.end() ? nullptr : &p->second;
}

void RailSet::choose(PeerLinks& p, std::optional<LinkCause> cause) {
  int best = -1;
  // An ESTABLISHED usable link first; else a usable one to connect; else
  // any routed link on a rail that is up (its manager retries with its own
  // backoff), so a peer that is down on every link is still tried.
  for (std::size_t k = 0; k < rails_.size() && best < 0; ++k) {
    if (usable(k, p.links[k]) && p.links[k].up)
      best = static_cast<int>(k);
  }
  for (std::size_t k = 0; k < rails_.size() && best < 0; ++k) {
    if (usable(k, p.links[k]))
      best = static_cast<int>(k);
  }
  for (std::size_t k = 0; k < rails_.size() && best < 0; ++k) {
    if (rails_[k].state == RailState::kUp && p.links[k].routed)
      best = static_cast<int>(k);
  }
  const int from = p.carrier;
  p.carrier = best;
  if (from == best || from < 0 || best < 0)
    return;
  if (best < from && !cause) {
    ++ctr_.failbacks;
    emit_failover(p, from, best, "failback", "preferred rail healthy again");
    spdlog::info("peer {}: traffic back on rail {} from rail {}", p.overlay, best, from);
    return;
  }
  const LinkCause c = cause.value_or(LinkCause::kLinkLost);
  ++failover_counter(ctr_, c);
  emit_failover(p, from, best, "failover", to_string(c));
  log::Fields f;
  f.message_id = log::kMsgRailFailover;
  log::event(spdlog::level::warn, f, "peer {}: traffic moved from rail {} to rail {} ({})",
             p.overlay, from, best, to_string(c));
}

std::optional<std::size_t> RailSet::carrier(const IpAddr& overlay) const {
  auto it = peers_.find(overlay);
  if (it == peers_.end() || it->second.carrier < 0)
    return std::nullopt;
  return static_cast<std::size_t>(it->second.carrier);
}

std::size_t RailSet::stripe_pick(const PeerLinks& p, std::span<const std::byte> packet) const {
  std::array<std::size_t, kMaxRails> up{};
  std::size_t n = 0;
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    if (usable(k, p.links[k]) && p.links[k].up)
      up[n++] = k;
  }
  if (n < 2)
    return static_cast<std::size_t>(p.carrier);
  const std::size_t hdr = rails_[0].rail.manager->config().offload ? wire::kVnetHdrLen : 0;
  const auto ip = packet.size() > hdr ? packet.subspan(hdr) : std::span<const std::byte>{};
  return up[flow_hash(ip) % n];
}

// --- the data path ------------------------------------------------------------------------

RailSet::PeerLinks* RailSet::mapped_peer(const IpAddr& overlay) {
  if (auto it = peers_.find(overlay); it != peers_.end())
    return &it->second;
  return maps(overlay) ? &peer(overlay) : nullptr;
}

std::optional<Endpoint> RailSet::route(const IpAddr& dst) {
  // A known peer's key (its primary overlay address): one hash lookup.
  if (peers_.contains(dst))
    return Endpoint{dst, 0};
  for (const auto& r : rails_) {
    const auto u = r.rail.map.underlay(dst);
    if (!u)
      continue;
    // Either family of a peer's addresses goes by its primary one: one
    // RailSet peer, one link per rail.
    if (!r.rail.map.overlays)
      return Endpoint{dst, 0};
    const auto o = r.rail.map.overlays(u->addr);
    if (!o || (*o)[0].empty())
      return std::nullopt;
    return Endpoint{(*o)[0].family == dst.family ? dst : (*o)[0], 0};
  }
  return std::nullopt;
}

std::optional<std::uint32_t> RailSet::peer_mtu(const Endpoint& peer) const {
  for (const auto& r : rails_) {
    if (auto u = r.rail.map.underlay(peer.addr))
      if (auto mtu = r.rail.manager->peer_mtu(*u))
        return mtu;
  }
  return std::nullopt;
}

std::optional<PeerOverlays> RailSet::peer_overlays(NodeId node) const {
  for (const auto& r : rails_) {
    const auto u = r.rail.manager->peer_underlay(node);
    if (!u)
      continue;
    if (!r.rail.map.overlays)
      return std::nullopt;
    return r.rail.map.overlays(u->addr);
  }
  return std::nullopt;
}

SendResult RailSet::send(const Endpoint& peer, std::span<const std::byte> packet) {
  const IpAddr& overlay = peer.addr;
  PeerLinks* pp = stopping_ ? nullptr : mapped_peer(overlay);
  if (pp == nullptr)
    return SendResult::kRefused;
  PeerLinks& p = *pp;
  p.last_tx = timers_.coarse_now();
  if (!p.pending.empty()) {
    // Older packets of a failed link go first.
    p.pending.emplace_back(packet.begin(), packet.end());
    wake_now();
    return SendResult::kQueued;
  }
  if (p.carrier < 0) {
    ++ctr_.failover_no_link;
    return SendResult::kRefused;
  }
  const std::size_t k = cfg_.mode == RailsMode::kStripe ? stripe_pick(p, packet)
                                                        : static_cast<std::size_t>(p.carrier);
  return rails_[k].rail.manager->send(p.links[k].ep, packet);
}

std::size_t RailSet::lender() const {
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    if (rails_[k].state == RailState::kUp)
      return k;
  }
  return 0;
}

std::span<std::byte> RailSet::lend_send_buffer() {
  if (!lent_from_)
    lent_from_ = lender();
  return rails_[*lent_from_].rail.manager->lend_send_buffer();
}

SendResult RailSet::send_lent(const Endpoint& peer, std::size_t len) {
  const IpAddr& overlay = peer.addr;
  if (!lent_from_)
    return SendResult::kRefused;
  const std::size_t from = *lent_from_;
  Manager& m = *rails_[from].rail.manager;
  PeerLinks* it = mapped_peer(overlay);
  if (it != nullptr && it->pending.empty() && it->carrier == static_cast<int>(from) &&
      cfg_.mode == RailsMode::kActiveBackup) {
    it->last_tx = timers_.coarse_now();
    lent_from_.reset();
    return m.send_lent(it->links[from].ep, len);
  }
  // Another rail (or stripe, or packets waiting): copied by send(), then
  // the buffer goes back.
  const auto buf = m.lend_send_buffer();
  const SendResult r = send(peer, buf.first(std::min(len, buf.size())));
  m.return_lent();
  lent_from_.reset();
  return r;
}

void RailSet::return_lent() {
  if (lent_from_)
    rails_[*lent_from_].rail.manager->return_lent();
  lent_from_.reset();
}

void RailSet::begin_send_batch() {
  for (auto& r : rails_)
    r.rail.manager->begin_send_batch();
}

void RailSet::end_send_batch() {
  for (auto& r : rails_)
    r.rail.manager->end_send_batch();
}

void RailSet::flush_pending(PeerLinks& p) {
  while (!p.pending.empty()) {
    if (p.carrier < 0) {
      ctr_.failover_no_link += p.pending.size();
      p.pending.clear();
      return;
    }
    const auto k = static_cast<std::size_t>(p.carrier);
    (void)rails_[k].rail.manager->send(p.links[k].ep, p.pending.front());
    p.pending.pop_front();
  }
}

// --- the operator's view ------------------------------------------------------------------

Snapshot RailSet::snapshot() const {
  Snapshot s;
  const TimePoint t = timers_.now();
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    const RailInfo& r = rails_[k];
    Snapshot sk = r.rail.manager->snapshot();
    RailSnapshot rs;
    rs.index = static_cast<std::uint32_t>(k);
    rs.local = sk.local;
    rs.device = sk.device_removed ? std::string() : sk.device;
    rs.removed_by = sk.device_removed_by;
    rs.readopted_by = sk.device_readopted_by;
    if (sk.port != 0)
      rs.port = sk.port;
    rs.state = r.state;
    rs.cause = r.cause;
    rs.since_change = t - r.since;
    rs.holddown = r.holddown;
    const auto quiet = (t - r.last_failure) / kFlapMemory;
    rs.flaps = quiet >= 32 ? 0 : r.flaps >> quiet;
    rs.tx_packets = sk.counters.packets_tx;
    rs.tx_bytes = sk.counters.bytes_tx;
    rs.rx_packets = sk.counters.packets_rx;
    rs.rx_bytes = sk.counters.bytes_rx;
    for (auto& q : sk.qps) {
      q.rail = rs.index;
      if (q.in_service && q.state == ConnState::kEstablished)
        ++rs.links;
      s.qps.push_back(std::move(q));
    }
    for (auto& pe : sk.peers) {
      pe.rail = rs.index;
      auto it = rails_[k].overlay_of.find(pe.underlay.addr);
      if (it != rails_[k].overlay_of.end()) {
        auto p = peers_.find(it->second);
        pe.carries = p != peers_.end() && p->second.carrier == static_cast<int>(k);
      }
      if (pe.carries)
        ++rs.carrying;
      s.peers.push_back(std::move(pe));
    }
    if (k == 0) {
      s.node = sk.node;
      s.incarnation = sk.incarnation;
      s.local = sk.local;
      s.device = sk.device;
      s.device_removed = sk.device_removed;
      s.mtu = sk.mtu;
      s.offload = sk.offload;
      s.srq = sk.srq;
    }
    s.send_slots_total += sk.send_slots_total;
    s.send_slots_free += sk.send_slots_free;
    s.counters += sk.counters;
    s.connect_time += sk.connect_time;
    s.teardown_time += sk.teardown_time;
    s.rails.push_back(std::move(rs));
  }
  s.counters += ctr_;
  s.rails_mode = std::string(to_string(cfg_.mode));
  if (rails_.size() > 1) {
    // A link that idled out is healthy (made again on demand): what counts
    // is a link in service and no second link that has not failed.
    for (const auto& [o, p] : peers_) {
      std::size_t up = 0, healthy = 0;
      for (std::size_t k = 0; k < rails_.size(); ++k) {
        up += usable(k, p.links[k]) && p.links[k].up ? 1 : 0;
        healthy += usable(k, p.links[k]) ? 1 : 0;
      }
      if (up >= 1 && healthy == 1)
        ++s.peers_without_redundancy;
    }
  }
  return s;
}

}  // namespace rcnet::cm
