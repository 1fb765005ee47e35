// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The RailSet's side of its managers (cm/rails.hpp): what each rail's
// manager reports (links down and up, rail messages, the rail itself), and
// the timer path that acts on it out of the managers' call stacks (notices,
// failing a peer's end of a link, the handed-over packets), holddowns, the
// standby probes and the retries of failed links.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cm/rails.hpp"
#include "util/log.hpp"
#include "wire/rail_message.hpp"

namespace rcnet::cm {

// --- what the managers report (no manager call from here) ------------------------------

void RailSet::link_down(std::size_t k, const Endpoint& peer_ep, bool failed, LinkCause cause,
                        std::string_view why, std::vector<std::vector<std::byte>>& packets,
                        std::size_t in_flight) {
  PeerLinks* p = find(k, peer_ep);
  if (p == nullptr || stopping_) {
    if (!packets.empty() && !stopping_)
      ctr_.failover_no_link += packets.size();
    return;
  }
  Link& l = p->links[k];
  l.up = false;
  if (!failed && l.peer_down) {
    // The peer said its end of this link is down, and the link ended
    // gracefully (its DREQ) before our kFailLink ran: still a failure, or
    // the peer's traffic would wait on this rail for a reconnect that
    // cannot succeed (seen in the lab: 3.4 s, 127 pings lost).
    failed = true;
    cause = LinkCause::kPeerNotice;
  }
  if (!failed) {
    // Idle, DREQ, eviction or operator: nothing failed. The link stays the
    // peer's choice and is made again on demand, as a one-rail node's is;
    // moving the traffic would count a failover, and later a fail-back.
    return;
  }
  l.failed = true;
  l.dialled_at = TimePoint::max();
  ++l.failures;
  l.backoff = l.failures <= kFastRedials
                  ? kRedialInterval
                  : std::min<Duration>(std::max<Duration>(l.backoff * 2, std::chrono::seconds(1)),
                                       kLinkRetryCap);
  l.retry_at = timers_.now() + l.backoff;
  next_redial_ = std::min(next_redial_, l.retry_at);
  const int was = p->carrier;
  choose(*p, cause);
  spdlog::debug("peer {}: link on rail {} failed ({}: {}), {} packets to move", p->overlay, k,
                to_string(cause), why, packets.size());
  if (!packets.empty()) {
    if (p->carrier < 0 || p->carrier == static_cast<int>(k)) {
      ctr_.failover_no_link += packets.size();
    } else {
      ctr_.failover_resent += in_flight;
      ctr_.failover_queue_moved += packets.size() - in_flight;
      // Older than anything waiting: in front, in their order.
      p->pending.insert(p->pending.begin(), std::make_move_iterator(packets.begin()),
                        std::make_move_iterator(packets.end()));
      flush_wanted_ = true;
    }
  }
  // Tell the peer over the link that carries it now, unless it told us.
  // At once, on the other rail's manager (RailHooks allows calls to a
  // manager other than the caller; via != k here): the peer's traffic to
  // us stays on the failed link until the notice arrives, so it leaves
  // before this manager's teardown goes on (the QP's move to Error, its
  // log lines, the other peers of a rail that went down). Refused (no send
  // slot), it is tried once more from the timer path.
  if (cause != LinkCause::kPeerNotice && p->carrier >= 0 && p->carrier != static_cast<int>(k) &&
      (was == static_cast<int>(k) || was < 0 || cause != LinkCause::kLinkLost)) {
    const Action a{Action::kDownNotice, p->overlay, static_cast<std::size_t>(p->carrier),
                   static_cast<std::uint8_t>(k), cause};
    if (!send_notice(*p, a))
      actions_.push_back(a);
  }
  wake_now();
}

void RailSet::link_up(std::size_t k, const Endpoint& peer_ep, const IpAddr& overlay, bool capable,
                      std::uint8_t peer_rail_count) {
  if (stopping_)
    return;
  IpAddr o = overlay;
  if (!o.is_v4() && !o.is_v6()) {
    auto it = rails_[k].overlay_of.find(peer_ep.addr);
    if (it == rails_[k].overlay_of.end())
      return;  // a peer that neither we route nor names itself: not ours to carry
    o = it->second;
  }
  PeerLinks& p = peer(o);
  rails_[k].overlay_of[peer_ep.addr] = o;
  Link& l = p.links[k];
  if (!l.routed) {
    // The peer connected to us on a rail our config does not map it on
    // (its own static table): the link is real, use it.
    l.ep = peer_ep;
    l.routed = true;
  }
  const bool was_failed = l.failed;
  l.up = true;
  l.failed = false;
  l.peer_down = false;
  l.backoff = Duration::zero();
  l.failures = 0;
  l.dialled_at = TimePoint::max();
  l.rails_capable = capable;
  if (was_failed) {
    // This rail's path works again: its other failed links need not wait
    // out their backoff (after a long outage, one link that comes back,
    // either end's, brings the rest at once).
    const TimePoint t = timers_.now();
    for (auto& [o2, q] : peers_) {
      Link& m = q.links[k];
      if (m.failed && !m.up && m.dialled_at == TimePoint::max())
        m.retry_at = std::min(m.retry_at, t);
    }
    next_redial_ = t;
  }
  apply_rail_count(p, peer_rail_count);
  // We told the peer this link was down (its failure): now that it works
  // again on a rail that carries traffic, say so, or the peer keeps holding
  // it. A rail in holddown says so when the holddown ends (on_timer()).
  if (was_failed && capable && rails_[k].state == RailState::kUp)
    actions_.push_back(
        {Action::kUpNotice, o, k, static_cast<std::uint8_t>(k), LinkCause::kLinkLost});
  choose(p, std::nullopt);
  if (!p.pending.empty())
    flush_wanted_ = true;
  wake_now();
}

void RailSet::rail_message(std::size_t k, const Endpoint& peer_ep, std::span<const std::byte> msg) {
  const auto m = wire::decode_rail_msg(msg);
  PeerLinks* p = find(k, peer_ep);
  if (!m || p == nullptr || stopping_)
    return;
  if (m->type == wire::RailMsgType::kProbe)
    return;  // the manager counted it as activity; nothing else to do
  ++ctr_.rail_notices_received;
  if (m->rail >= rails_.size())
    return;
  // "Up" comes on the rail it is about (the link it names works); "down"
  // on another one, necessarily.
  if (m->type == wire::RailMsgType::kUp) {
    Link& l = p->links[m->rail];
    l.held = false;
    l.peer_down = false;
    l.failed = false;  // dialled again by the probe tick if not up
    choose(*p, std::nullopt);
    next_probe_ = timers_.now();
    wake_now();
    return;
  }
  if (m->type != wire::RailMsgType::kDown || m->rail == k)
    return;
  const auto cause = static_cast<LinkCause>(std::min<std::uint8_t>(m->cause, 5));
  spdlog::info("peer {}: says its rail {} is down ({})", p->overlay, m->rail, to_string(cause));
  Link& l = p->links[m->rail];
  l.peer_down = true;
  // The peer's rail itself is down (port, carrier, device): it says "up"
  // when it carries traffic again; until then the link is neither used nor
  // dialled. A path that failed (retry exceeded, a lost link) is no state
  // of the peer's rail: both ends may have seen it and told each other, and
  // a hold on both would leave the link to kPeerHoldMax. Only failed, then:
  // re-dialled as any failed link is, which finds the path healed.
  if (cause == LinkCause::kPortError || cause == LinkCause::kCarrier ||
      cause == LinkCause::kDeviceLost) {
    l.held = true;
    l.held_until = timers_.now() + kPeerHoldMax;
  }
  if (l.up) {
    // Our end of that link would find out by its own RC retries: fail it
    // now, from the timer path (its packets then move to this link).
    actions_.push_back({Action::kFailLink, p->overlay, m->rail, m->rail, LinkCause::kPeerNotice});
    wake_now();
  } else if (!l.failed) {
    l.failed = true;
    l.retry_at = timers_.now() + kRedialInterval;
    next_redial_ = std::min(next_redial_, l.retry_at);
  }
  // The traffic moves at once: a link the peer declared down is not usable
  // (usable()), so the next packet goes on another link, not after the
  // teardown of this one (its unfinished SENDs follow, as resends).
  choose(*p, LinkCause::kPeerNotice);
}

void RailSet::rail_changed(std::size_t k, bool up, LinkCause cause, std::string_view why) {
  if (stopping_)
    return;
  RailInfo& r = rails_[k];
  const TimePoint t = timers_.now();
  if (!up) {
    // Flap memory: halves every kFlapMemory since the last failure.
    const auto quiet = (t - r.last_failure) / kFlapMemory;
    r.flaps = quiet >= 32 ? 0 : r.flaps >> quiet;
    ++r.flaps;
    r.last_failure = t;
    r.holddown = cfg_.holddown * (1u << std::min<std::uint32_t>(r.flaps - 1, 4));
    r.holddown_until = TimePoint::max();
    set_rail_state(k, cause == LinkCause::kDeviceLost ? RailState::kRemoved : RailState::kDown,
                   why);
    for (auto& [o, p] : peers_) {
      p.links[k].up = false;
      choose(p, cause);
    }
  } else {
    r.holddown_until = t + r.holddown;
    set_rail_state(k, RailState::kHolddown, why);
    next_redial_ = t;  // its failed links are dialled during the holddown
    reschedule();
  }
}

void RailSet::set_rail_state(std::size_t k, RailState s, std::string_view cause) {
  RailInfo& r = rails_[k];
  if (r.state == s)
    return;
  r.state = s;
  r.cause = std::string(cause);
  r.since = timers_.now();
  log::Fields f;
  f.message_id = s == RailState::kUp ? log::kMsgRailUp : log::kMsgRailDown;
  f.rail = static_cast<int>(k);
  f.reason = r.cause;
  log::event(s == RailState::kUp ? spdlog::level::info : spdlog::level::warn, f,
             "rail {} ({}) {}: {}{}", k, r.rail.manager->config().local, to_string(s), cause,
             s == RailState::kHolddown
                 ? fmt::format(", carries traffic again in {:.0f} ms", to_ms(r.holddown))
                 : "");
  if (observer_) {
    Event e;
    e.kind = EventKind::kRail;
    e.time = r.since;
    e.rail = static_cast<std::uint32_t>(k);
    e.reason = to_string(s);
    e.detail = r.cause;
    observer_(e);
  }
}

void RailSet::emit_failover(const PeerLinks& p, int from, int to, std::string_view reason,
                            std::string_view cause) {
  if (!observer_)
    return;
  Event e;
  e.kind = EventKind::kFailover;
  e.time = timers_.now();
  e.rail = static_cast<std::uint32_t>(to);
  e.from_rail = static_cast<std::uint32_t>(from);
  // The peer as the other events name it: its underlay endpoint, here the
  // one of the link its traffic moved to.
  e.peer_addr = p.links[static_cast<std::size_t>(to)].ep;
  e.peer = node_id_for(e.peer_addr.addr);
  e.reason = reason;
  e.detail = cause;
  observer_(e);
}

// --- the timer path -----------------------------------------------------------------------

void RailSet::wake_now() {
  timers_.schedule(timers_.now());
}

bool RailSet::send_notice(const PeerLinks& p, const Action& a) {
  const auto msg = wire::encode_rail_msg(
      {a.kind == Action::kUpNotice ? wire::RailMsgType::kUp : wire::RailMsgType::kDown, a.rail,
       static_cast<std::uint8_t>(a.cause)});
  if (!p.links[a.via].rails_capable ||
      !rails_[a.via].rail.manager->send_rail_message(p.links[a.via].ep, msg))
    return false;
  ++ctr_.rail_notices_sent;
  return true;
}

void RailSet::on_timer() {
  if (stopping_)
    return;
  const TimePoint t = timers_.now();
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    RailInfo& r = rails_[k];
    if (r.state == RailState::kHolddown && t >= r.holddown_until) {
      r.holddown_until = TimePoint::max();
      set_rail_state(k, RailState::kUp, "holddown over");
      for (auto& [o, p] : peers_) {
        // Links made during the holddown: the peers may use them now.
        if (p.links[k].up && p.links[k].rails_capable)
          actions_.push_back(
              {Action::kUpNotice, o, k, static_cast<std::uint8_t>(k), LinkCause::kLinkLost});
        choose(p, std::nullopt);
      }
      next_probe_ = t;  // links on it now, not in a second
    }
  }
  auto actions = std::move(actions_);
  actions_.clear();
  for (const Action& a : actions) {
    auto it = peers_.find(a.overlay);
    if (it == peers_.end())
      continue;
    PeerLinks& p = it->second;
    if (a.kind != Action::kFailLink) {
      (void)send_notice(p, a);
    } else {
      (void)rails_[a.via].rail.manager->link_failed(p.links[a.via].ep, a.cause,
                                                    "the peer said its end of this rail is down");
    }
  }
  if (flush_wanted_) {
    flush_wanted_ = false;
    for (auto& [o, p] : peers_)
      flush_pending(p);
  }
  if (t >= next_probe_)
    probe_tick(t);
  if (t >= next_redial_)
    redial_tick(t);
  reschedule();
}

void RailSet::probe_tick(TimePoint t) {
  next_probe_ = t + kProbeInterval;
  if (rails_.size() < 2)
    return;
  for (auto it = peers_.begin(); it != peers_.end();) {
    PeerLinks& p = it->second;
    const bool active = t - p.last_tx < cfg_.idle_timeout;
    bool any_up = false;
    for (std::size_t k = 0; k < rails_.size(); ++k) {
      Link& l = p.links[k];
      any_up = any_up || l.up;
      if (l.held && t >= l.held_until) {
        l.held = false;
        choose(p, std::nullopt);
      }
      // A rail in holddown has its links made and probed too: a link made
      // there (by either end) is not left to idle out before the fail-back
      // puts traffic on it, and the fail-back needs no handshake.
      const RailState st = rails_[k].state;
      if (!active || !l.routed || l.held || (st != RailState::kUp && st != RailState::kHolddown))
        continue;
      Manager& m = *rails_[k].rail.manager;
      if (l.up) {
        if (static_cast<int>(k) != p.carrier && l.rails_capable) {
          const auto msg = wire::encode_rail_msg({wire::RailMsgType::kProbe, 0, 0});
          if (m.send_rail_message(l.ep, msg))
            ++ctr_.rail_probes_sent;
        }
      } else if (!l.failed) {
        m.ensure_link(l.ep);  // failed ones: redial_tick()
      }
    }
    if (!active && !any_up && p.pending.empty()) {
      for (std::size_t k = 0; k < rails_.size(); ++k) {
        if (p.links[k].routed)
          rails_[k].overlay_of.erase(p.links[k].ep.addr);
      }
      it = peers_.erase(it);
    } else {
      ++it;
    }
  }
}

void RailSet::redial_tick(TimePoint t) {
  next_redial_ = TimePoint::max();
  // Re-dials not answered in time: abandoned (see kRedialInterval), and in
  // the fast phase dialled again at once, so a path that heals is found
  // within about kRedialInterval.
  struct Stale {
    IpAddr overlay;
    std::size_t k;
    Endpoint ep;
    Duration bound;
  };
  std::vector<Stale> stale;
  for (auto& [o, p] : peers_) {
    for (std::size_t k = 0; k < rails_.size(); ++k) {
      const Link& l = p.links[k];
      const Duration bound = std::max(kRedialInterval, l.backoff);
      if (l.failed && !l.up && l.dialled_at != TimePoint::max() && t - l.dialled_at >= bound)
        stale.push_back({o, k, l.ep, bound});
    }
  }
  for (const Stale& st : stale) {
    (void)rails_[st.k].rail.manager->abandon_attempt(
        st.ep,
        fmt::format("re-dial of a failed link not ESTABLISHED within {:.0f} ms", to_ms(st.bound)));
    auto it = peers_.find(st.overlay);
    if (it == peers_.end())
      continue;
    Link& l = it->second.links[st.k];
    l.dialled_at = TimePoint::max();  // also when no attempt was ours to abandon
    if (l.failures <= kFastRedials)
      l.retry_at = t;
  }
  bool any_failed = false;
  for (auto& [o, p] : peers_) {
    const bool active = t - p.last_tx < cfg_.idle_timeout;
    for (std::size_t k = 0; k < rails_.size(); ++k) {
      Link& l = p.links[k];
      if (!l.failed || l.up || !l.routed)
        continue;
      any_failed = true;
      const RailState st = rails_[k].state;
      if (!active || l.held || l.dialled_at != TimePoint::max() || t < l.retry_at ||
          (st != RailState::kUp && st != RailState::kHolddown))
        continue;
      // Only an attempt this started is ours to abandon: one the manager
      // made for queued packets keeps its own bounds.
      if (rails_[k].rail.manager->ensure_link(l.ep))
        l.dialled_at = t;
      else
        l.retry_at = t + kRedialInterval;
    }
  }
  if (any_failed)
    next_redial_ = t + kRedialInterval;
}

void RailSet::apply_rail_count(PeerLinks& p, std::uint8_t count) {
  if (count == 0)
    return;  // not said: an older peer
  for (std::size_t j = 0; j < rails_.size(); ++j) {
    Link& l = p.links[j];
    if (j >= count && l.routed && !l.up) {
      // The peer has no rail j: nothing to dial there. It still counts as
      // a peer without a redundant link (snapshot()).
      rails_[j].overlay_of.erase(l.ep.addr);
      l = Link{};
    } else if (j < count && !l.routed) {
      route_link(p, j);
    }
  }
}

void RailSet::reschedule() {
  TimePoint due = peers_.empty() ? TimePoint::max() : next_probe_;
  due = std::min(due, next_redial_);
  if (next_probe_ == TimePoint::max() && !peers_.empty())
    due = next_probe_ = timers_.now() + kProbeInterval;
  for (const auto& r : rails_)
    due = std::min(due, r.holddown_until);
  if (!actions_.empty() || flush_wanted_)
    due = timers_.now();
  timers_.schedule(due);
}

}  // namespace rcnet::cm
