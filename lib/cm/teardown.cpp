// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Teardown (docs/design.md "Connection lifecycle", IB spec 10.3.1 for a QP
// on an SRQ): DISCONNECTING -> ERROR -> AWAIT_LAST_WQE -> DRAINING ->
// DESTROYED, every wait bounded (cm/lifecycle.cpp) and every fallback
// counted; then the rdma_cm id is released from the timer path, never inside
// its own event. Also the graceful stop of the whole manager.
#include "cm/lifecycle.hpp"
#include "cm/manager_impl.hpp"

namespace rcnet::cm {

namespace {
// A destroy this slow is worth a warning (counter slow_destroys).
constexpr auto kSlowDestroy = std::chrono::milliseconds(100);
}  // namespace

void Manager::Impl::teardown(Conn& c, TeardownKind kind, std::string reason,
                             std::string_view msg_id) {
  if (is_teardown(c.state))
    return;  // one teardown per QP
  const bool was_in_service = c.in_service;
  if (was_in_service)
    report_link_down(c, kind == TeardownKind::kHard, reason);
  cause_ = LinkCause::kLinkLost;
  table_.leave_service(c);
  // Packets still queued for the peer (no send slot, or sent while the
  // connection was being set up) are not dropped with its connection: a new
  // attempt starts from the timer path. Callers that decide otherwise (a
  // failed attempt's backoff, a REJ, a dead peer) replace or cancel it.
  if (Peer* p = table_.find_peer(c.peer);
      was_in_service && p != nullptr && !p->queue.empty() && !shutting_down_ && link_up_)
    retry_later(*p, Duration::zero());
  c.teardown_reason = std::move(reason);
  c.teardown_since = now();
  auto f = fields(c);
  f.message_id = !msg_id.empty()                      ? msg_id
                 : c.state == ConnState::kEstablished ? log::kMsgPeerDisconnected
                                                      : std::string_view{};
  log::event(spdlog::level::info, f, "tearing down QPN {} to {}: {}", c.qpn, c.peer_addr,
             c.teardown_reason);
  emit(EventKind::kTeardown, c, c.teardown_reason, c.state, f.message_id);
  if (!c.has_qp()) {
    // Never got a QP (still resolving, or a passive id whose QP failed): only
    // the id to release.
    if (!set_state(c, ConnState::kDestroyed, "no QP"))
      return abandon(c, "illegal transition");
    finish(c);
    return;
  }
  dp_.flush_sends();  // rdma_disconnect moves the QP to Error: chains first
  const bool was_established = c.state == ConnState::kEstablished;
  if (was_established && kind != TeardownKind::kHard) {
    (void)seam_.disconnect(c.cm_id);  // DREQ (or DREP when the peer sent DREQ)
    if (!set_state(c, ConnState::kDisconnecting,
                   kind == TeardownKind::kRemote ? "DREQ received, DREP sent" : "DREQ sent"))
      return abandon(c, "illegal transition");
    // DREQ received, or DISCONNECTED seen already: nothing to wait for.
    // Otherwise DISCONNECTING waits for DISCONNECTED (its bound armed).
    if (kind == TeardownKind::kRemote || c.disconnected_seen)
      to_error(c);
    return;
  }
  if (was_established)
    (void)seam_.disconnect(c.cm_id);  // tell a live peer; harmless for a dead one
  to_error(c);
}

// Step 1: move the QP to Error, then wait for Last WQE Reached (SRQ) or for
// every receive WR to flush (own RQ).
void Manager::Impl::to_error(Conn& c) {
  dp_.flush_sends();
  if (auto r = seam_.modify_qp_to_error(c.cm_id); !r) {
    auto f = fields(c);
    log::event(spdlog::level::err, f, "ibv_modify_qp(ERR) QPN {}: {}", c.qpn, r.error().message());
  }
  if (!set_state(c, ConnState::kError, "modified to IBV_QPS_ERR"))
    return abandon(c, "illegal transition");
  if (c.last_wqe_seen || (!cfg_.use_srq && c.rq_posted == 0)) {
    post_drain(c);
    return;
  }
  if (cfg_.use_srq && !dp_.profile().last_wqe) {
    // The device has no Last WQE Reached (iWARP): waiting for it would
    // only spend last_wqe_timeout per QP.
    ++ctr_.last_wqe_skipped;
    post_drain(c);
    return;
  }
  if (!set_state(c, ConnState::kAwaitLastWqe,
                 cfg_.use_srq ? "waiting for Last WQE Reached" : "waiting for RQ flush"))
    return abandon(c, "illegal transition");
}

void Manager::Impl::on_last_wqe(rdma::Qpn qpn) {
  Conn* c = table_.by_qpn(qpn);
  if (c == nullptr || c->last_wqe_seen) {
    ++ctr_.async_events_ignored;  // unknown QP, or a duplicate
    return;
  }
  c->last_wqe_seen = true;
  ++ctr_.last_wqe_received;
  if (c->state == ConnState::kAwaitLastWqe) {
    post_drain(*c);
  } else if (!is_teardown(c->state)) {
    // The QP went to Error on its own (FATAL, retry exceeded on some
    // devices): the same single teardown, with Last WQE already seen.
    teardown(*c, TeardownKind::kHard,
             fmt::format("Last WQE Reached on a live QP{}", blame_carrier()));
  } else if (c->state == ConnState::kDraining || c->state == ConnState::kDestroyed) {
    ++ctr_.async_events_ignored;  // late
  }
  // DISCONNECTING / ERROR: remembered; to_error() goes straight to the drain.
}

// Step 3: the drain WR completes after every earlier WR of the QP.
void Manager::Impl::post_drain(Conn& c) {
  dp_.flush_sends();
  if (!dp_.profile().drain_after_error) {
    // A drain WR on a QP in Error never completes on this device (siw,
    // docs/lab.md): no drain_timeout per QP. Its flushed WRs are in the CQ
    // already (the device flushes at the move to Error); DRAINING waits
    // kCqSweep for the loop to poll them, so that none is read after its
    // QPN went to a new QP (siw hands out the lowest free QPN again).
    ++ctr_.drains_skipped;
    c.cq_sweep = true;
    if (!set_state(c, ConnState::kDraining, "no drain WR on this device: one CQ sweep"))
      return abandon(c, "illegal transition");
    table_.set_deadline(c, now() + kCqSweep);
    return;
  }
  if (auto r = seam_.post_drain(c.cm_id, make_wr(kTagDrain, c.id)); !r) {
    auto f = fields(c);
    log::event(spdlog::level::err, f,
               "posting the drain WR on QPN {} failed: {}: destroying it now", c.qpn,
               r.error().message());
    ++ctr_.forced_destroys;
    destroy_qp(c, "drain WR could not be posted");
    return;
  }
  if (!set_state(c, ConnState::kDraining, "drain WR posted"))
    return abandon(c, "illegal transition");
}

void Manager::Impl::last_wqe_timed_out(Conn& c) {
  ++ctr_.last_wqe_timeouts;
  auto f = fields(c);
  f.message_id = log::kMsgLastWqeTimeout;
  log::event(spdlog::level::info, f,
             "QPN {}: no Last WQE Reached within last_wqe_timeout {:.0f} ms: posting the drain WR "
             "anyway",
             c.qpn, to_ms(cfg_.last_wqe_timeout));
  post_drain(c);
}

void Manager::Impl::drain_timed_out(Conn& c) {
  if (c.cq_sweep) {
    destroy_qp(c, "CQ swept (the device completes no drain WR after Error)");
    return;
  }
  ++ctr_.drain_timeouts;
  ++ctr_.forced_destroys;
  auto f = fields(c);
  f.message_id = log::kMsgForcedDestroy;
  log::event(spdlog::level::err, f,
             "QPN {}: drain WR did not complete within drain_timeout {:.0f} ms: destroying the QP "
             "anyway",
             c.qpn, to_ms(cfg_.drain_timeout));
  destroy_qp(c, "drain_timeout");
}

// Destroys the QP (the seam acknowledged every event of it before the manager
// saw it) and returns its unfinished send slots.
void Manager::Impl::release_qp(Conn& c) {
  dp_.flush_sends();
  // Sends not known complete: their slots are ours again (stale completions
  // are recognised by QPN and ignored).
  dp_.free_sends(c);
  if (!link_up_ && neighbour_.flush)
    neighbour_.flush(c.peer_addr.addr);
  // A destroy is a kernel call on the one loop thread: one that blocks (a
  // driver waiting for its packets) stalls every QP of every rail, so say so.
  const auto t0 = std::chrono::steady_clock::now();
  if (auto r = seam_.destroy_qp(c.cm_id); !r) {
    auto f = fields(c);
    log::event(spdlog::level::err, f, "rdma_destroy_qp QPN {}: {}", c.qpn, r.error().message());
  }
  if (const auto took = std::chrono::steady_clock::now() - t0; took >= kSlowDestroy) {
    ++ctr_.slow_destroys;
    auto f = fields(c);
    log::event(spdlog::level::warn, f,
               "rdma_destroy_qp QPN {} blocked the event loop for {:.0f} ms", c.qpn,
               std::chrono::duration<double, std::milli>(took).count());
  }
  ++ctr_.qps_destroyed;
  table_.unindex_qpn(c);
  c.rq.reset();
}

void Manager::Impl::destroy_qp(Conn& c, std::string_view why) {
  if (!set_state(c, ConnState::kDestroyed, why))
    return abandon(c, "illegal transition");
  release_qp(c);
  finish(c);
}

void Manager::Impl::abandon(Conn& c, std::string_view why) {
  ++ctr_.forced_destroys;
  table_.leave_service(c);
  if (c.has_qp())
    release_qp(c);
  auto f = fields(c);
  log::event(spdlog::level::critical, f, "QPN {} to {} abandoned: {}", c.qpn, c.peer_addr, why);
  finish(c);
}

// The QP is gone: release the id (deferred) and forget the conn.
void Manager::Impl::finish(Conn& c) {
  if (c.cm_id != rdma::kNoCmId) {
    table_.unindex_cm_id(c);
    defer_destroy_id(c.cm_id);
    c.cm_id = rdma::kNoCmId;
  }
  forget_candidates_.push_back(c.peer);
  table_.erase(c);  // `c` is dangling from here on
}

void Manager::Impl::destroy_id_now(rdma::CmIdHandle id) {
  if (auto r = seam_.destroy_id(id); !r)
    spdlog::error("rdma_destroy_id {}: {}", id, r.error().message());
  ++ctr_.cm_ids_destroyed;
}

// A peer with no connection, nothing queued and no retry pending is
// forgotten, so a node that talked to many peers over time does not keep
// them all. Runs from on_timer() only: no caller holds a Peer& there.
void Manager::Impl::forget_idle_peers() {
  for (const NodeId node : forget_candidates_) {
    const Peer* p = table_.find_peer(node);
    if (p != nullptr && p->conn == 0 && p->queue.empty() && p->retry_at == TimePoint::max() &&
        !p->blocked && !p->admission_wait)
      table_.erase_peer(node);
  }
  forget_candidates_.clear();
}

void Manager::Impl::device_failed(const std::string& why) {
  spdlog::critical("RDMA device failure ({}): tearing every connection down", why);
  // Nothing queued can go out on a failed device: dropped, not retried.
  table_.for_each_peer([&](Peer& p) { drop_queue(p, ctr_.drops_shutting_down); });
  for (Conn* c : table_.all()) {
    if (!is_teardown(c->state))
      teardown(*c, TeardownKind::kHard, why);
  }
}

void Manager::Impl::device_lost(const std::string& why, DevicePath path) {
  // Every id of the device reports DEVICE_REMOVAL: the first one acts. The
  // other path's notice of the same loss is counted once and ignored.
  if (device_gone_) {
    if (removed_by_ && path != *removed_by_ && !late_notice_counted_) {
      late_notice_counted_ = true;
      ++ctr_.device_notices_late;
      spdlog::info(
          "RDMA device loss on {} noticed again by the {} ({}), {:.0f} ms after the {}: ignored",
          cfg_.local, to_string(path), why, to_ms(now() - removed_at_), to_string(*removed_by_));
    }
    return;
  }
  device_gone_ = true;
  release_pending_ = true;
  removed_by_ = path;
  late_notice_counted_ = false;
  removed_at_ = now();
  ++ctr_.device_removals;
  ++(path == DevicePath::kNetlinkMonitor ? ctr_.device_removals_monitor
                                         : ctr_.device_removals_async);
  log::Fields f;
  f.message_id = log::kMsgDeviceRemoved;
  log::event(spdlog::level::critical, f,
             "RDMA device lost ({}, noticed by {}): releasing every QP, cm id, MR, SRQ, CQ and PD "
             "of it; retrying {} until a device owns it again",
             why, to_string(path), cfg_.local);
  // Each in-service link's unfinished sends and queue go to the rail hooks
  // (another rail takes them); without hooks, nothing queued can go out on
  // a failed device: dropped, not retried.
  for (Conn* c : table_.all()) {
    if (c->in_service) {
      cause_ = LinkCause::kDeviceLost;
      report_link_down(*c, true, why);
    }
  }
  table_.for_each_peer([&](Peer& p) { drop_queue(p, ctr_.drops_shutting_down); });
  // No teardown sequence: the device is gone, so neither Last WQE Reached
  // nor a drain completion will come, and a driver without
  // disassociate_ucontext (rxe) keeps `rdma link delete` waiting until
  // every object is closed (docs/lab.md). Each QP is destroyed at once,
  // counted as a forced destroy; the ids follow from the timer path (never
  // inside their own event), then release_device().
  for (Conn* c : table_.all()) {
    ++ctr_.forced_destroys;
    table_.leave_service(*c);
    if (c->has_qp())
      release_qp(*c);
    finish(*c);
  }
  report_rail(LinkCause::kDeviceLost, why);
}

// From on_timer(), after the deferred ids were destroyed: the buffers'
// MRs, then the device-wide objects (Seam::close_device).
void Manager::Impl::release_device() {
  release_pending_ = false;
  for (auto id : pending_id_destroy_)
    destroy_id_now(id);
  pending_id_destroy_.clear();
  dp_.stop();
  seam_.close_device();
}

Result<void> Manager::Impl::readopt(DevicePath noticed_by) {
  if (!device_gone_)
    return {};
  if (release_pending_)
    return Error::from_errno(EBUSY, "the lost device is still being released");
  // The device's setup (open, PD, CQ, SRQ, the buffers' MRs, the posted
  // receives, the listen) runs on the loop thread: the line below says how
  // long, apart from how late the path noticed the device.
  const auto t0 = std::chrono::steady_clock::now();
  if (auto r = start(); !r) {
    // start() may have opened the device before the data path failed.
    dp_.stop();
    seam_.close_device();
    return r;
  }
  device_gone_ = false;
  readopted_by_ = noticed_by;
  ++ctr_.device_readopts;
  ++(noticed_by == DevicePath::kNetlinkMonitor ? ctr_.device_readopts_monitor
                                               : ctr_.device_readopts_poll);
  report_rail(LinkCause::kDeviceLost, "RDMA device adopted again");
  log::Fields f;
  f.message_id = log::kMsgDeviceReadopted;
  log::event(
      spdlog::level::warn, f,
      "RDMA device {} adopted again on {} (noticed by {}, {:.0f} ms after its loss, set up in "
      "{:.0f} ms): accepting connections",
      device_.name, cfg_.local, to_string(noticed_by), to_ms(now() - removed_at_),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return {};
}

void Manager::Impl::shutdown() {
  if (shutting_down_)
    return;
  shutting_down_ = true;
  spdlog::info("shutting down: {} connections, {} QPs", table_.in_service(), table_.size());
  table_.for_each_peer([&](Peer& p) { drop_queue(p, ctr_.drops_shutting_down); });
  for (Conn* c : table_.all()) {
    if (is_teardown(c->state))
      continue;
    teardown(*c,
             c->state == ConnState::kEstablished ? TeardownKind::kGraceful : TeardownKind::kHard,
             "shutting down");
  }
}

}  // namespace rcnet::cm
