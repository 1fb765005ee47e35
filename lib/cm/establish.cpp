// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Establishment (docs/design.md "Connection lifecycle", "Simultaneous open
// and restarts"): RESOLVING_ADDR -> RESOLVING_ROUTE -> CONNECTING or ACCEPTING ->
// ESTABLISHED; REQ/REP/REJ private data; the simultaneous-open merge (the
// attempt of the lower node id wins); restarts detected by incarnation.
#include <algorithm>

#include "cm/manager_impl.hpp"
#include "util/random.hpp"

namespace rcnet::cm {

// Wait for the winning REQ this long before retrying after REJ collision.
constexpr Duration kCollisionBackoff = 50ms;
// A failed attempt is retried after kRetryBase * 2^(attempt-1), capped at
// kRetryCap, each scaled by a random factor in [0.5, 1.5): N nodes whose
// attempts failed together (a hub restart, a link flap) do not retry in
// lockstep.
constexpr Duration kRetryBase = 100ms;
constexpr Duration kRetryCap = 5s;

void Manager::Impl::on_cm_event(const rdma::CmEvent& ev) {
  using T = rdma::CmEventType;
  if (ev.type == T::kConnectRequest) {
    handle_req(ev);
    return;
  }
  Conn* cp = table_.by_cm_id(ev.id);
  if (cp == nullptr) {
    if (ev.type == T::kDeviceRemoval) {
      device_lost("RDMA device removed");
    } else if (ev.type != T::kTimewaitExit) {
      ++ctr_.cm_events_ignored;
      spdlog::debug("ignored rdma_cm event {} for unknown id {}", rdma::to_string(ev.type), ev.id);
    }
    return;
  }
  Conn& c = *cp;
  switch (ev.type) {
    case T::kAddrResolved:
      if (c.state != ConnState::kResolvingAddr)
        return ignore_cm(c, ev);
      addr_resolved(c);
      break;
    case T::kRouteResolved:
      if (c.state != ConnState::kResolvingRoute)
        return ignore_cm(c, ev);
      send_req(c);
      break;
    case T::kAddrError:
    case T::kRouteError:
    case T::kUnreachable:
    case T::kConnectError:
      if (is_teardown(c.state))
        break;  // normal during teardown of an attempt
      if (c.state == ConnState::kEstablished) {
        teardown(c, TeardownKind::kHard,
                 fmt::format("{} (status {})", rdma::to_string(ev.type), ev.status));
      } else {
        attempt_failed(c, fmt::format("{} (status {})", rdma::to_string(ev.type), ev.status));
      }
      break;
    case T::kRejected:
      if (c.state != ConnState::kConnecting)
        return ignore_cm(c, ev);
      handle_rej(c, ev);
      break;
    case T::kEstablished:
      if (c.state == ConnState::kConnecting) {
        handle_rep(c, ev);
      } else if (c.state == ConnState::kAccepting) {
        if (ev.remote_qpn != 0)
          c.remote_qpn = ev.remote_qpn;
        established(c);
      } else {
        return ignore_cm(c, ev);
      }
      break;
    case T::kDisconnected:
      c.disconnected_seen = true;
      if (c.state == ConnState::kEstablished) {
        teardown(c, TeardownKind::kRemote, "DREQ received");
      } else if (c.state == ConnState::kDisconnecting) {
        to_error(c);
      } else if (c.state == ConnState::kConnecting || c.state == ConnState::kAccepting) {
        attempt_failed(c, "DISCONNECTED before ESTABLISHED");
      }
      break;
    case T::kTimewaitExit:
      break;
    case T::kDeviceRemoval:
      device_lost("RDMA device removed");
      break;
    default:
      return ignore_cm(c, ev);
  }
}

void Manager::Impl::ignore_cm(const Conn& c, const rdma::CmEvent& ev) {
  ++ctr_.cm_events_ignored;
  spdlog::debug("ignored rdma_cm event {} for QPN {} in {}", rdma::to_string(ev.type), c.qpn,
                to_string(c.state));
}

// IBV_EVENT_COMM_EST: data reached our passive QP before the RTU (it may be
// lost). rdma_notify(3) lets the CM complete the connection now; its
// kEstablished event then arrives as for an RTU.
void Manager::Impl::comm_established(rdma::Qpn qpn) {
  Conn* c = table_.by_qpn(qpn);
  if (c == nullptr || c->state != ConnState::kAccepting) {
    ++ctr_.async_events_ignored;  // the RTU won the race, or the QP is gone
    return;
  }
  ++ctr_.comm_est_notified;
  if (auto r = seam_.notify_established(c->cm_id); !r) {
    auto f = fields(*c);
    log::event(spdlog::level::debug, f, "rdma_notify(COMM_EST) QPN {}: {}", c->qpn,
               r.error().message());
  }
}

void Manager::Impl::start_connect(Peer& p) {
  if (!pace_connect(p))
    return;  // waits in order for one of our setups to end (admission.cpp)
  if (!make_room()) {
    if (const Conn* lru = table_.idle_front(); lru != nullptr) {
      // Every connection is younger than kEvictMinAge: the packets wait in
      // the peer's queue (bounded, oldest dropped) until the least recently
      // used one may be evicted, and meanwhile each new packet joins the
      // queue instead of trying again (and logging) per packet.
      const Duration wait = evictable_at(*lru) - now();
      spdlog::debug("connect to {} waits {:.0f} ms: max_connections {} in use", p.underlay,
                    to_ms(wait), max_connections());
      retry_later(p, wait + jitter(kCollisionBackoff));
      return;
    }
    spdlog::warn("cannot connect to {}: max_connections {} in use, all of them in setup",
                 p.underlay, max_connections());
    drop_queue(p, ctr_.drops_connect_failed);
    return;
  }
  auto id = seam_.create_id();
  if (!id) {
    spdlog::error("rdma_create_id for {}: {}", p.underlay, id.error().message());
    drop_queue(p, ctr_.drops_connect_failed);
    return;
  }
  ++ctr_.cm_ids_created;
  ++ctr_.connects_started;
  p.last_attempt = now();
  Conn& c = add_conn(p, true);
  c.cm_id = *id;
  table_.index_cm_id(c);
  table_.make_in_service(p, c);
  if (neighbour_.use)
    neighbour_.use(p.underlay.addr);
  if (auto r = seam_.resolve_addr(c.cm_id, p.underlay, cfg_.resolve_timeout); !r) {
    attempt_failed(c, "rdma_resolve_addr: " + r.error().message());
    return;
  }
  auto f = fields(c);
  log::event(spdlog::level::debug, f, "connecting to peer {} (node {})", p.underlay, p.node);
}

void Manager::Impl::addr_resolved(Conn& c) {
  if (auto r = seam_.resolve_route(c.cm_id, cfg_.resolve_timeout); !r) {
    attempt_failed(c, "rdma_resolve_route: " + r.error().message());
    return;
  }
  if (!set_state(c, ConnState::kResolvingRoute, "address resolved"))
    return abandon(c, "illegal transition");
}

Result<void> Manager::Impl::create_qp(Conn& c) {
  rdma::QpCaps caps;
  caps.use_srq = cfg_.use_srq;
  caps.max_send_wr = cfg_.qp_send_depth;
  caps.max_recv_wr = cfg_.use_srq ? 0 : cfg_.rq_depth;
  auto qpn = seam_.create_qp(c.cm_id, caps);
  if (!qpn)
    return qpn.error();
  c.qpn = *qpn;
  // Our grant is ours to decide (the REQ or REP says it): receives count
  // against it from the QP's first one, whatever the peer's private data.
  c.grant = dp_.grant();
  ++ctr_.qps_created;
  table_.index_qpn(c);
  if (!cfg_.use_srq)
    return dp_.fill_rq(c);
  return {};
}

wire::PrivateData Manager::Impl::my_pd(wire::Kind kind, wire::RejectReason reason) const {
  wire::PrivateData pd;
  pd.kind = kind;
  pd.node_id = self_;
  pd.incarnation = cfg_.incarnation;
  pd.mtu = cfg_.mtu;
  pd.srq = cfg_.use_srq;
  pd.gso = cfg_.offload;
  pd.uso = cfg_.offload && cfg_.uso;
  pd.rails = rail_hooks_ != nullptr;
  pd.rail_count = cfg_.rail_count;
  pd.busy = true;  // we understand REJ busy
  if (kind != wire::Kind::kRej) {
    pd.header = dp_.wants_header();
    pd.header_ok = true;  // DataPath::receive() frames by the completion
    pd.credits = dp_.grant();
  }
  pd.overlay = cfg_.overlay;
  pd.reason = reason;
  return pd;
}

rdma::ConnParams Manager::Impl::params(std::span<const std::uint8_t> pd) const {
  rdma::ConnParams p;
  p.private_data = pd;
  p.retry_count = cfg_.retry_count;
  p.rnr_retry_count = cfg_.rnr_retry_count;
  return p;
}

void Manager::Impl::send_req(Conn& c) {
  if (auto r = create_qp(c); !r) {
    attempt_failed(c, "create QP: " + r.error().message());
    return;
  }
  auto req = my_pd(wire::Kind::kReq);
  if (auth_.on())
    auth_.offer(c, req, cfg_.local.addr, c.peer_addr.addr);
  const auto pd = wire::encode(req);
  if (auto r = seam_.connect(c.cm_id, params(pd)); !r) {
    attempt_failed(c, "rdma_connect: " + r.error().message());
    return;
  }
  if (!set_state(c, ConnState::kConnecting, "REQ sent"))
    return abandon(c, "illegal transition");
}

void Manager::Impl::handle_rep(Conn& c, const rdma::CmEvent& ev) {
  const auto d = wire::decode(ev.private_data, wire::Kind::kRep);
  if (!d.ok || d.data.node_id != c.peer) {
    ++ctr_.malformed_private_data;
    attempt_failed(c, d.ok ? "REP from an unexpected node id"
                           : fmt::format("malformed REP: {}", wire::to_string(d.error)));
    return;
  }
  if (ev.remote_qpn != 0)
    c.remote_qpn = ev.remote_qpn;
  c.peer_mtu = d.data.mtu;
  c.gso = cfg_.offload && d.data.gso;
  c.peer_uso = c.gso && d.data.uso;
  c.rails = d.data.rails;
  c.peer_rail_count = d.data.rail_count;
  dp_.negotiated(c, d.data);
  if (Peer* p = table_.find_peer(c.peer)) {
    p->incarnation = d.data.incarnation;
    p->overlay = d.data.overlay;
  }
  if (c.auth_pending != nullptr) {
    // The passive side's proof, before anything is sent or delivered.
    if (auto r = auth_.check_rep(c, d.data)) {
      auth_refused(c, *r, d.data.auth ? "the REP's proof" : "the REP offers no proof");
      return;
    }
    if (c.auth == AuthState::kProven)
      ++ctr_.auth_proven;
    else
      auth_unproven(c);
  }
  established(c);
}

void Manager::Impl::established(Conn& c) {
  if (!set_state(c, ConnState::kEstablished, c.active ? "REP received" : "RTU received"))
    return abandon(c, "illegal transition");
  ++ctr_.connects_established;
  setup_done(c);
  auto f = fields(c);
  f.message_id = log::kMsgPeerConnected;
  log::event(spdlog::level::info, f, "connected to peer {} (node {}) QPN {} <-> {}", c.peer_addr,
             c.peer, c.qpn, c.remote_qpn);
  if (!c.in_service) {
    // An abandoned attempt that got through anyway (REP crossed our REJ, or
    // our REQ reached the peer late): not needed. Decided before the peer
    // lookup: its Peer may be forgotten by now, and an out-of-service
    // ESTABLISHED QP is on no list and has no deadline.
    teardown(c, TeardownKind::kGraceful, "superseded attempt");
    return;
  }
  Peer* p = table_.find_peer(c.peer);
  if (p == nullptr)
    return;
  p->last_result = "ESTABLISHED";
  p->last_result_at = now();
  if (!post_auth_proof(c))
    return;
  p->attempts = 0;  // after the proof went: an attempt that fails there counts
  auth_established(c);
  dp_.established(*p, c);
  if (rail_hooks_ != nullptr)
    rail_hooks_->link_up(c.peer_addr, p->overlay, c.rails, c.peer_rail_count);
}

void Manager::Impl::attempt_failed(Conn& c, std::string reason) {
  ++ctr_.connect_failures;
  const bool was_in_service = c.in_service;
  Peer* p = table_.find_peer(c.peer);
  if (p != nullptr && was_in_service) {
    p->last_result = reason;
    p->last_result_at = now();
  }
  auto f = fields(c);
  f.message_id = log::kMsgConnectFailed;
  log::event(spdlog::level::warn, f, "connection attempt to {} failed: {}", c.peer_addr, reason);
  teardown(c, TeardownKind::kHard, std::move(reason));
  if (!was_in_service || p == nullptr)
    return;
  if (p->queue.empty() || shutting_down_ || !link_up_)
    return;
  if (++p->attempts <= cfg_.connect_retries) {
    retry_later(*p, backoff(p->attempts));
  } else {
    p->attempts = 0;
    drop_queue(*p, ctr_.drops_connect_failed);
  }
}

void Manager::Impl::retry_later(Peer& p, Duration after) {
  table_.set_retry(p, now() + after);
}

Duration Manager::Impl::backoff(unsigned attempts) {
  const unsigned shift = std::min<unsigned>(attempts == 0 ? 0 : attempts - 1, 16);
  return jitter(std::min<Duration>(kRetryBase * (1u << shift), kRetryCap));
}

Duration Manager::Impl::jitter(Duration d) {
  const std::uint64_t z = splitmix64(rng_);
  const double f = 0.5 + static_cast<double>(z >> 11) * 0x1.0p-53;  // [0.5, 1.5)
  return std::chrono::duration_cast<Duration>(d * f);
}

void Manager::Impl::handle_rej(Conn& c, const rdma::CmEvent& ev) {
  ++ctr_.rejects_received;
  const auto d = wire::decode(ev.private_data, wire::Kind::kRej);
  std::string why;
  wire::RejectReason reason = wire::RejectReason::kNone;
  if (d.ok) {
    reason = d.data.reason;
    why = fmt::format("REJ {}", wire::to_string(reason));
  } else {
    why = fmt::format("REJ status {} without rcnet private data", ev.status);
  }
  if (!c.in_service) {  // an attempt we already abandoned
    teardown(c, TeardownKind::kHard, why);
    return;
  }
  if (reason == wire::RejectReason::kBusy)
    return busy_rejected(c, d.data, std::move(why));
  Peer* p = table_.find_peer(c.peer);
  if (p != nullptr) {
    p->last_result = why;
    p->last_result_at = now();
  }
  if (reason == wire::RejectReason::kCollision || reason == wire::RejectReason::kDuplicate) {
    // The peer's own attempt wins (or it still holds a connection to us):
    // keep the queue; its REQ is on its way. If it never comes, retry.
    teardown(c, TeardownKind::kHard, why);
    if (p != nullptr && ++p->attempts <= cfg_.connect_retries + 1) {
      retry_later(*p, jitter(reason == wire::RejectReason::kCollision ? kCollisionBackoff
                                                                      : cfg_.reaper_interval));
    } else if (p != nullptr) {
      drop_queue(*p, ctr_.drops_connect_failed);
    }
    return;
  }
  ++ctr_.connect_failures;
  // A REJ without rcnet's private data comes from the peer's CM: nothing
  // listens on the port (IB_CM_REJ_INVALID_SERVICE_ID, status 8: rcnetd is
  // restarting or stopped) or a foreign listener. That, and REJ full, may
  // pass: retry with backoff, keeping the queue. Every other reason is the
  // peer's considered answer: drop. Either way the peer is then held down
  // (a retry pending with the queue empty): packets wait in its queue for
  // that retry instead of each sending a new REQ to a node that just said no.
  const bool transient = !d.ok || reason == wire::RejectReason::kFull;
  auto f = fields(c);
  f.message_id = log::kMsgConnectFailed;
  log::event(p != nullptr && p->attempts > 0 ? spdlog::level::info : spdlog::level::warn, f,
             "peer {} rejected our REQ: {}", c.peer_addr, why);
  teardown(c, TeardownKind::kHard, why);
  if (p == nullptr)
    return;
  if (transient && !p->queue.empty() && !shutting_down_ && link_up_ &&
      ++p->attempts <= cfg_.connect_retries) {
    retry_later(*p, backoff(p->attempts));
    return;
  }
  hold_down(*p);
}

void Manager::Impl::hold_down(Peer& p) {
  drop_queue(p, ctr_.drops_connect_failed);
  p.attempts = 0;
  retry_later(p, jitter(kRetryCap));
}

void Manager::Impl::reject(rdma::CmIdHandle id, wire::RejectReason reason, const Endpoint& from,
                           std::string_view detail, std::uint16_t retry_after_ms,
                           bool peer_knows_busy, bool quiet) {
  const bool busy = reason == wire::RejectReason::kBusy;
  // A peer that does not know REJ busy would read it as a REJ without rcnet
  // private data; REJ full means the same to it (retry with backoff, keep
  // the queue).
  auto rej = my_pd(wire::Kind::kRej, busy && !peer_knows_busy ? wire::RejectReason::kFull : reason);
  rej.retry_after_ms = retry_after_ms;
  const auto pd = wire::encode(rej);
  (void)seam_.reject(id, pd);
  if (std::uint64_t* sent = rejects_sent(ctr_, reason))
    ++*sent;
  log::Fields f;
  f.peer_addr = from.addr;
  f.peer_port = from.port;
  f.reason = std::string(wire::to_string(reason));
  // Busy is logged at debug: a storm answers thousands of REQs so.
  log::event(quiet                                      ? spdlog::level::debug
             : reason == wire::RejectReason::kMalformed ? spdlog::level::warn
             : busy                                     ? spdlog::level::debug
                                                        : spdlog::level::info,
             f, "REJ {} to REQ from {}: {}", wire::to_string(reason), from, detail);
  if (observer_) {
    Event e;
    e.kind = EventKind::kReject;
    e.time = now();
    e.peer_addr = from;
    e.reason = wire::to_string(reason);
    e.detail = detail;
    observer_(e);
  }
  defer_destroy_id(id);
}

bool Manager::Impl::allowed(const IpAddr& a) const {
  if (cfg_.allowed_peers.empty())
    return true;
  return std::any_of(cfg_.allowed_peers.begin(), cfg_.allowed_peers.end(),
                     [&](const IpPrefix& p) { return p.contains(a); });
}

void Manager::Impl::handle_req(const rdma::CmEvent& ev) {
  if (table_.by_cm_id(ev.id) != nullptr ||
      std::find(pending_id_destroy_.begin(), pending_id_destroy_.end(), ev.id) !=
          pending_id_destroy_.end()) {
    // The same CONNECT_REQUEST twice: the id is ours already (accepted, or
    // rejected and waiting for its deferred destroy).
    ++ctr_.cm_events_ignored;
    return;
  }
  ++ctr_.cm_ids_created;  // the passive id is ours from now on
  const auto d = wire::decode(ev.private_data, wire::Kind::kReq);
  if (!d.ok) {
    ++ctr_.malformed_private_data;
    reject(ev.id,
           d.error == wire::DecodeError::kBadVersion ? wire::RejectReason::kVersion
                                                     : wire::RejectReason::kMalformed,
           ev.src, fmt::format("malformed REQ private data: {}", wire::to_string(d.error)));
    return;
  }
  if (shutting_down_ || !link_up_) {
    reject(ev.id, wire::RejectReason::kShuttingDown, ev.src,
           shutting_down_ ? "shutting down" : "underlay link down");
    return;
  }
  if (!allowed(ev.src.addr)) {
    reject(ev.id, wire::RejectReason::kNotAllowed, ev.src,
           "source outside the allowed peer subnets");
    return;
  }
  const NodeId node = d.data.node_id;
  if (node != node_id_for(ev.src.addr) || node == self_) {
    ++ctr_.malformed_private_data;
    reject(ev.id, wire::RejectReason::kMalformed, ev.src,
           fmt::format("node id {} does not match source address", node));
    return;
  }
  // The peer proof's checks of the REQ come before anything it could
  // change here (admission, a merge, a stale connection replaced).
  if (auth_.on()) {
    if (auto r = auth_.check_req(d.data)) {
      ++refused_counter(ctr_, *r);
      // A peer that offers no proof may be a release before proofs: it
      // gets not_allowed, which every release knows.
      const auto rej = *r == Refusal::kUnknownKey ? wire::RejectReason::kUnknownKey
                       : *r == Refusal::kReplay   ? wire::RejectReason::kReplay
                                                  : wire::RejectReason::kNotAllowed;
      reject(ev.id, rej, ev.src, fmt::format("auth: {}", to_string(*r)), 0, true,
             !auth_.should_log(node, now()));
      return;
    }
  }
  // Admission: a REQ that meets our own attempt to its node starts no new
  // setup (the merge replaces ours, or REJ collision refuses it), so a
  // simultaneous open merges whatever the load; any other one is a new
  // passive setup.
  if (const Peer* known = table_.find_peer(node); known == nullptr || !pending_attempt(*known)) {
    if (!admit_req(ev, d.data))
      return;
  }
  Peer& p = table_.peer_for(node, Endpoint{ev.src.addr, cfg_.local.port});
  if (Conn* cur = table_.conn_of(p)) {
    if (cur->state == ConnState::kEstablished || cur->state == ConnState::kAccepting) {
      if (p.incarnation == d.data.incarnation) {
        // A live peer sends a REQ only when it holds no connection to us (its
        // attempt timed out, or it lost our DREQ): ours is stale. Replace it
        // rather than answer REJ duplicate until the peer gives up.
        ++ctr_.stale_replaced;
        auto f = fields(*cur);
        f.reason = "stale: peer sent a new REQ";
        log::event(spdlog::level::info, f,
                   "peer {} sent a new REQ from the same incarnation: it holds no connection to "
                   "us; replacing QPN {}",
                   p.underlay, cur->qpn);
        teardown(*cur, TeardownKind::kHard, "stale: peer sent a new REQ");
      } else {
        ++ctr_.restarts_detected;
        auto f = fields(*cur);
        f.message_id = log::kMsgRestartDetected;
        f.reason = "peer restarted";
        log::event(spdlog::level::warn, f,
                   "peer {} restarted (incarnation {:#x} -> {:#x}): reaping QPN {} now", p.underlay,
                   p.incarnation, d.data.incarnation, cur->qpn);
        teardown(*cur, TeardownKind::kHard, "peer restarted", log::kMsgRestartDetected);
      }
    } else {
      // Simultaneous open: both sides have an attempt pending. The attempt
      // made by the lower node id wins (docs/design.md "Simultaneous open and
      // restarts").
      if (self_ < node) {
        reject(ev.id, wire::RejectReason::kCollision, ev.src,
               "simultaneous open: our attempt wins");
        return;
      }
      ++ctr_.collisions_merged;
      auto f = fields(*cur);
      f.message_id = log::kMsgCollisionMerged;
      log::event(spdlog::level::info, f,
                 "simultaneous open with {}: accepting its REQ, abandoning ours", p.underlay);
      table_.leave_service(*cur);
      if (cur->state == ConnState::kResolvingAddr || cur->state == ConnState::kResolvingRoute)
        teardown(*cur, TeardownKind::kHard, "collision: peer's attempt wins");
      // A CONNECTING attempt waits for the peer's REJ collision (bounded by connect_timeout).
    }
  }
  if (!make_room()) {
    reject(ev.id, wire::RejectReason::kFull, ev.src, no_room_detail());
    // Our own attempt may have been given up above for this REQ: packets
    // queued for the peer get a new attempt (start_connect() waits for room
    // or drops them, counted), never stay stranded.
    if (p.conn == 0 && !p.queue.empty() && p.retry_at == TimePoint::max() && !shutting_down_ &&
        link_up_)
      retry_later(p, jitter(kRetryBase));
    return;
  }
  table_.cancel_retry(p);
  p.incarnation = d.data.incarnation;
  p.overlay = d.data.overlay;
  Conn& c = add_conn(p, false);
  c.cm_id = ev.id;
  c.remote_qpn = ev.remote_qpn;
  c.peer_mtu = d.data.mtu;
  c.gso = cfg_.offload && d.data.gso;
  c.peer_uso = c.gso && d.data.uso;
  c.rails = d.data.rails;
  c.peer_rail_count = d.data.rail_count;
  dp_.negotiated(c, d.data);
  table_.index_cm_id(c);
  table_.make_in_service(p, c);
  ++ctr_.accepts;
  if (auto r = create_qp(c); !r) {
    attempt_failed(c, "create QP: " + r.error().message());
    return;
  }
  auto rep = my_pd(wire::Kind::kRep);
  if (auth_.on() && d.data.auth)
    auth_.answer(c, d.data, rep, ev.src.addr, cfg_.local.addr);
  else if (auth_.on())
    auth_unproven(c);
  const auto pd = wire::encode(rep);
  if (auto r = seam_.accept(c.cm_id, params(pd)); !r) {
    attempt_failed(c, "rdma_accept: " + r.error().message());
    return;
  }
  // A passive conn is born in ACCEPTING (there is no earlier state to
  // leave); add_conn() armed its bound.
  auto f = fields(c);
  log::event(spdlog::level::debug, f, "QPN {} peer {}: REQ accepted, REP sent", c.qpn, c.peer_addr);
}

}  // namespace rcnet::cm
