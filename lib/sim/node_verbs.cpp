// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The simulated verbs of one node: memory regions, QPs, the SRQ, the shared
// CQ, and the RC data path (SEND with immediate, ACK, RNR, transport retry).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rdma/ib_timers.hpp"
#include "sim/internal.hpp"

namespace rcnet::sim {

namespace {
constexpr std::uint8_t kInfiniteRetry = 7;  // rnr_retry 7; retry_cnt 7 on rxe (docs/lab.md)
}  // namespace

Result<rdma::MemoryRegion> SimNode::Impl::register_memory(std::span<std::byte> mem) {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, "sim ibv_reg_mr: node crashed");
  }
  if (device_removed)
    return Error::from_errno(ENODEV, "sim ibv_reg_mr: device removed");
  if (!opened)
    return fail(EINVAL, "ibv_reg_mr before open");
  // On the device's PD: every port of the device can use it.
  const std::uint32_t h = dev->next_mr++;
  ++dev->stats.mr_registrations;
  // Distinct, recognisable lkeys: a key from another region fails the check.
  const std::uint32_t lkey =
      (static_cast<std::uint32_t>(dev->index) << 20) ^ (h * 0x9e37U + 0x100U);
  dev->regions[h] = Region{reinterpret_cast<std::uintptr_t>(mem.data()), mem.size(), lkey};
  return rdma::MemoryRegion{h, lkey};
}

void SimNode::Impl::unregister_memory(const rdma::MemoryRegion& mr) {
  dev->regions.erase(mr.handle);
}

bool SimNode::Impl::region_ok(const rdma::Sge& sge) const {
  if (sge.length == 0)
    return true;
  for (const auto& [h, r] : dev->regions) {
    if (r.lkey == sge.lkey && sge.addr >= r.base && sge.addr + sge.length <= r.base + r.len) {
      return true;
    }
  }
  return false;
}

Result<rdma::Qpn> SimNode::Impl::create_qp(rdma::CmIdHandle h, const rdma::QpCaps& caps) {
  auto idr = lookup(h, "rdma_create_qp");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  switch (id.state) {
    case IdState::kAddrResolved:
    case IdState::kRouteQuery:
    case IdState::kRouteResolved:
    case IdState::kReqReceived:
      break;
    default:
      return fail(EINVAL, fmt::format("rdma_create_qp: id in {}", to_string(id.state)));
  }
  if (id.qpn)
    return fail(EINVAL, "rdma_create_qp: id already has a QP");
  if (caps.use_srq && !dev->has_srq)
    return fail(EINVAL, "rdma_create_qp: no SRQ");
  if (caps.max_send_wr == 0 || caps.max_send_wr > 32768 || caps.max_recv_wr > 32768) {
    return fail(EINVAL, "rdma_create_qp: caps");
  }
  if (qps.size() >= max_qp)
    return Error::from_errno(ENOMEM, "sim rdma_create_qp: max_qp");
  SimQp qp;
  qp.qpn = next_qpn++;
  qp.id = h;
  qp.use_srq = caps.use_srq;
  qp.max_send_wr = caps.max_send_wr;
  qp.max_recv_wr = caps.use_srq ? 0 : caps.max_recv_wr;
  qp.ack_timeout = cfg.ack_timeout;
  // The real seam sets it once the QP is RTS; here it holds from the start.
  qp.min_rnr_timer = cfg.min_rnr_timer;
  id.qpn = qp.qpn;
  qps.emplace(qp.qpn, std::move(qp));
  return id.qpn.value();
}

Result<void> SimNode::Impl::destroy_qp(rdma::CmIdHandle h) {
  auto qp = lookup_qp(h, "rdma_destroy_qp");
  if (!qp)
    return qp.error();
  const rdma::Qpn qpn = (*qp)->qpn;
  // Completions already in the CQ stay there, naming the dead QPN.
  qps.erase(qpn);
  ids.at(h).qpn.reset();
  return {};
}

Result<void> SimNode::Impl::modify_qp_to_error(rdma::CmIdHandle h) {
  auto qp = lookup_qp(h, "ibv_modify_qp(ERR)");
  if (!qp)
    return qp.error();
  qp_to_error(**qp);
  // iWARP: Error closes the TCP stream; the peer's CM reports DISCONNECTED.
  if (provider().error_closes_stream) {
    CmId& id = ids.at(h);
    if (id.state == IdState::kConnected) {
      id.state = IdState::kDisconnecting;
      send_dreq(id);
    }
  }
  return {};
}

void SimNode::Impl::qp_to_error(SimQp& qp) {
  if (qp.state == QpStateSim::kErr)
    return;
  qp.state = QpStateSim::kErr;
  ++qp.epoch;
  qp.in_flight = false;
  for (const SendWr& wr : qp.sq) {
    push_cqe(rdma::WorkCompletion{wr.wr_id, rdma::WcStatus::kFlushErr, rdma::WcOpcode::kSend, 0,
                                  false, 0, qp.qpn});
  }
  qp.sq.clear();
  if (!qp.use_srq) {
    // docs/lab.md: rxe reports flushed receives as SEND with byte_len 0.
    const auto op = caps().flushed_recv_as_send ? rdma::WcOpcode::kSend : rdma::WcOpcode::kRecv;
    for (const RecvWr& wr : qp.rq) {
      push_cqe(rdma::WorkCompletion{wr.wr_id, rdma::WcStatus::kFlushErr, op, 0, false, 0, qp.qpn});
    }
    qp.rq.clear();
  } else if (caps().last_wqe_on_srq_error) {
    // IB spec 11.6.3: an SRQ QP in ERR reports Last WQE Reached. ehca never
    // did (its RQ is always empty here), rxe never does (docs/lab.md).
    ++stats.last_wqe_events;
    emit_async(fab.timing.last_wqe,
               rdma::AsyncEvent{rdma::AsyncEventType::kLastWqeReached, qp.qpn});
  }
}

Result<void> SimNode::Impl::post_send(rdma::CmIdHandle h, std::uint64_t wr_id, const rdma::Sge& sge,
                                      std::uint32_t imm, bool signaled) {
  ++stats.post_send_calls;
  return post_one_send(h, wr_id, sge, imm, signaled);
}

// A chain: WR by WR as the HCA would take them, stopping at the first one
// refused (bad_wr); one call, one doorbell.
rdma::PostSendsResult SimNode::Impl::post_sends(rdma::CmIdHandle h,
                                                std::span<const rdma::SendWr> wrs) {
  ++stats.post_send_calls;
  rdma::PostSendsResult r;
  for (const auto& w : wrs) {
    if (auto p = post_one_send(h, w.wr_id, w.sge, w.imm, w.signaled); !p) {
      r.error = p.error();
      return r;
    }
    ++r.posted;
  }
  return r;
}

Result<void> SimNode::Impl::post_one_send(rdma::CmIdHandle h, std::uint64_t wr_id,
                                          const rdma::Sge& sge, std::uint32_t imm, bool signaled) {
  auto qpr = lookup_qp(h, "ibv_post_send");
  if (!qpr)
    return qpr.error();
  SimQp& qp = **qpr;
  if (qp.state != QpStateSim::kRts && qp.state != QpStateSim::kErr) {
    return fail(EINVAL, fmt::format("ibv_post_send on a QP in {}", to_string(qp.state)));
  }
  if (qp.sq.size() >= qp.max_send_wr)
    return Error::from_errno(ENOMEM, "sim ibv_post_send: SQ full");
  if (imm != 0 && !provider().send_imm) {
    // libsiw maps IBV_WR_SEND_WITH_IMM to an opcode the kernel refuses.
    ++stats.imm_refused;
    return fail(EINVAL, "ibv_post_send: SEND_WITH_IMM on an iWARP device");
  }
  ++stats.sends_posted;
  if (qp.state == QpStateSim::kErr) {
    push_cqe(rdma::WorkCompletion{wr_id, rdma::WcStatus::kFlushErr, rdma::WcOpcode::kSend, 0, false,
                                  0, qp.qpn});
    return {};
  }
  if (!region_ok(sge)) {
    ++stats.protection_errors;
    push_cqe(rdma::WorkCompletion{wr_id, rdma::WcStatus::kLocalProtErr, rdma::WcOpcode::kSend, 0,
                                  false, 0, qp.qpn});
    qp_to_error(qp);
    return {};
  }
  SendWr wr;
  wr.wr_id = wr_id;
  wr.signaled = signaled;
  wr.imm = imm;
  if (sge.length > 0) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(sge.addr);
    wr.bytes.assign(p, p + sge.length);
  }
  qp.sq.push_back(std::move(wr));
  kick(qp);
  return {};
}

void SimNode::Impl::kick(SimQp& qp) {
  if (qp.in_flight || qp.sq.empty() || qp.state != QpStateSim::kRts)
    return;
  if (qp.fail_next_send) {
    const rdma::WcStatus status = *qp.fail_next_send;
    qp.fail_next_send.reset();
    fail_head(qp, status);
    return;
  }
  qp.in_flight = true;
  qp.head_first_try = fab.now;
  qp.rnr_tries = 0;
  const Duration wire =
      fab.timing.wire +
      std::chrono::microseconds(qp.sq.front().bytes.size() /
                                std::max<std::uint64_t>(1, fab.timing.link_bytes_per_us));
  later(wire, [this, qpn = qp.qpn, epoch = qp.epoch] { attempt(qpn, epoch); });
}

void SimNode::Impl::fail_head(SimQp& qp, rdma::WcStatus status) {
  if (qp.sq.empty())
    return;
  if (status == rdma::WcStatus::kRetryExceeded)
    ++stats.retry_exceeded;
  if (status == rdma::WcStatus::kRnrRetryExceeded)
    ++stats.rnr_retry_exceeded;
  push_cqe(rdma::WorkCompletion{qp.sq.front().wr_id, status, rdma::WcOpcode::kSend, 0, false, 0,
                                qp.qpn});
  qp.sq.pop_front();
  qp.in_flight = false;
  // The rest of the SQ flushes; rxe reports no async event for this.
  qp_to_error(qp);
}

void SimNode::Impl::attempt(rdma::Qpn qpn, std::uint64_t epoch) {
  auto qit = qps.find(qpn);
  if (qit == qps.end() || qit->second.epoch != epoch || qit->second.sq.empty())
    return;
  SimQp& qp = qit->second;
  const SendWr& wr = qp.sq.front();

  SimNode::Impl* r = can_reach(qp.peer) ? qp.peer.node : nullptr;
  SimQp* rqp = nullptr;
  if (r != nullptr) {
    auto rit = r->qps.find(qp.peer.qpn);
    if (rit != r->qps.end() &&
        (rit->second.state == QpStateSim::kRtr || rit->second.state == QpStateSim::kRts)) {
      rqp = &rit->second;
    }
  }
  if (rqp == nullptr) {
    // Nobody ACKs: the responder is gone, destroyed, or in ERR (drops silently).
    if (caps().retry_7_infinite && qp.retry_count == kInfiniteRetry)
      return;  // docs/lab.md
    const auto ack_time = rdma::ack_timeout_duration(qp.ack_timeout);
    if (!ack_time)
      return;  // ack_timeout 0: no transport timer, the send waits forever
    const Duration budget = *ack_time * (qp.retry_count + 1);
    later(qp.head_first_try + budget - fab.now, [this, qpn, epoch] {
      auto it = qps.find(qpn);
      if (it == qps.end() || it->second.epoch != epoch)
        return;
      fail_head(it->second, rdma::WcStatus::kRetryExceeded);
    });
    return;
  }

  std::deque<RecvWr>& source = rqp->use_srq ? r->dev->srq : rqp->rq;
  // iWARP: data reaching the active side before it sent anything is a
  // protocol error to its MPA initiator; a SEND that finds no receive WR
  // is a DDP "no buffer" error. Either terminates the connection.
  const bool passive_first =
      r->provider().active_sends_first && qp.passive && !rqp->passive && !rqp->sent;
  const bool no_buffer = !r->provider().rnr && (r->starved || source.empty());
  if (passive_first || no_buffer) {
    if (passive_first)
      ++stats.passive_first_terminations;
    else
      ++r->stats.no_buffer_terminations;
    fab.trace(r->addr, "iWARP terminate QPN {:#x} (from {:#x}): {}", rqp->qpn, qp.qpn,
              passive_first ? "the passive side sent first" : "no receive WR");
    r->qp_to_error(*rqp);
    r->emit_async(fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kQpFatal, rqp->qpn});
    later(fab.timing.wire, [this, qpn, epoch] {
      auto it = qps.find(qpn);
      if (it == qps.end() || it->second.epoch != epoch)
        return;
      fail_head(it->second, rdma::WcStatus::kRemoteOpErr);
    });
    return;
  }
  qp.sent = true;
  if (r->starved || source.empty()) {
    ++stats.rnr_naks;
    if (qp.rnr_retry_count != kInfiniteRetry && ++qp.rnr_tries > qp.rnr_retry_count) {
      later(fab.timing.wire, [this, qpn, epoch] {
        auto it = qps.find(qpn);
        if (it == qps.end() || it->second.epoch != epoch)
          return;
        fail_head(it->second, rdma::WcStatus::kRnrRetryExceeded);
      });
      return;
    }
    // The NAK carries the responder's min_rnr_timer; the requester waits that long.
    later(rdma::rnr_timer_duration(rqp->min_rnr_timer),
          [this, qpn, epoch] { attempt(qpn, epoch); });
    return;
  }

  const RecvWr rwr = source.front();
  source.pop_front();
  if (rqp->use_srq)
    r->srq_consumed();
  const rdma::Qpn rqpn = rqp->qpn;
  rdma::WcStatus remote_status = rdma::WcStatus::kSuccess;
  if (wr.bytes.size() > rwr.sge.length) {
    ++r->stats.length_errors;
    remote_status = rdma::WcStatus::kLocalLengthErr;
  } else if (!r->region_ok(rwr.sge)) {
    ++r->stats.protection_errors;
    remote_status = rdma::WcStatus::kLocalProtErr;
  }
  if (remote_status != rdma::WcStatus::kSuccess) {
    r->push_cqe(
        rdma::WorkCompletion{rwr.wr_id, remote_status, rdma::WcOpcode::kRecv, 0, false, 0, rqpn});
    r->qp_to_error(*rqp);
    // The responder NAKs: the requester sees a remote error.
    later(fab.timing.wire, [this, qpn, epoch] {
      auto it = qps.find(qpn);
      if (it == qps.end() || it->second.epoch != epoch)
        return;
      fail_head(it->second, rdma::WcStatus::kRemoteOpErr);
    });
    return;
  }
  if (!wr.bytes.empty()) {
    std::memcpy(reinterpret_cast<void*>(rwr.sge.addr), wr.bytes.data(), wr.bytes.size());
  }
  if (rqp->state == QpStateSim::kRtr && !rqp->comm_est_reported) {
    // Data before the RTU: the HCA reports communication established
    // (ibv_get_async_event(3)); rxe reports no async events (docs/lab.md).
    rqp->comm_est_reported = true;
    if (r->caps().async_events)
      r->emit_async(fab.timing.async,
                    rdma::AsyncEvent{rdma::AsyncEventType::kCommEstablished, rqpn});
  }
  ++r->stats.packets_delivered;
  r->stats.bytes_delivered += wr.bytes.size();
  r->push_cqe(rdma::WorkCompletion{rwr.wr_id, rdma::WcStatus::kSuccess, rdma::WcOpcode::kRecv,
                                   static_cast<std::uint32_t>(wr.bytes.size()), wr.imm != 0, wr.imm,
                                   rqpn});
  // The ACK comes back one wire latency later.
  later(fab.timing.wire, [this, qpn, epoch] {
    auto it = qps.find(qpn);
    if (it == qps.end() || it->second.epoch != epoch || it->second.sq.empty())
      return;
    SimQp& q = it->second;
    const SendWr done = std::move(q.sq.front());
    q.sq.pop_front();
    q.in_flight = false;
    if (done.signaled) {
      push_cqe(rdma::WorkCompletion{done.wr_id, rdma::WcStatus::kSuccess, rdma::WcOpcode::kSend,
                                    static_cast<std::uint32_t>(done.bytes.size()), false, 0, qpn});
    }
    kick(q);
  });
}

Result<void> SimNode::Impl::post_drain(rdma::CmIdHandle h, std::uint64_t wr_id) {
  auto qpr = lookup_qp(h, "post drain WR");
  if (!qpr)
    return qpr.error();
  SimQp& qp = **qpr;
  if (qp.state != QpStateSim::kErr)
    return fail(EINVAL, "drain WR on a QP not in ERR");
  if (qp.sq.size() >= qp.max_send_wr)
    return Error::from_errno(ENOMEM, "sim drain WR: SQ full");
  if (drop_drain.contains(qp.qpn) || !provider().drain_after_error) {
    ++stats.drains_dropped;  // siw: a drain WR after Error never completed (docs/lab.md)
    return {};
  }
  const Duration d = caps().drain_delay_rxe
                         ? fab.rng.uniform(fab.timing.drain_rxe_min, fab.timing.drain_rxe_max)
                         : fab.timing.drain;
  later(d, [this, qpn = qp.qpn, wr_id] {
    if (!qps.contains(qpn))
      return;  // destroyed first: no completion
    push_cqe(rdma::WorkCompletion{wr_id, rdma::WcStatus::kFlushErr, rdma::WcOpcode::kSend, 0, false,
                                  0, qpn});
  });
  return {};
}

Result<void> SimNode::Impl::post_srq_recv(std::span<const std::uint64_t> wr_ids,
                                          std::span<const rdma::Sge> sges) {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, "sim ibv_post_srq_recv: node crashed");
  }
  if (device_removed)
    return Error::from_errno(ENODEV, "sim ibv_post_srq_recv: device removed");
  if (!opened || !dev->has_srq)
    return fail(EINVAL, "ibv_post_srq_recv: no SRQ");
  if (wr_ids.size() != sges.size())
    return fail(EINVAL, "ibv_post_srq_recv: wr_ids/sges");
  // All or nothing (the real call posts up to bad_wr; callers size batches).
  if (dev->srq.size() + wr_ids.size() > dev->srq_size) {
    return Error::from_errno(ENOMEM, "sim ibv_post_srq_recv: SRQ full");
  }
  for (std::size_t i = 0; i < wr_ids.size(); ++i)
    dev->srq.push_back(RecvWr{wr_ids[i], sges[i]});
  return {};
}

Result<void> SimNode::Impl::post_qp_recv(rdma::CmIdHandle h, std::span<const std::uint64_t> wr_ids,
                                         std::span<const rdma::Sge> sges) {
  auto qpr = lookup_qp(h, "ibv_post_recv");
  if (!qpr)
    return qpr.error();
  SimQp& qp = **qpr;
  if (qp.use_srq)
    return fail(EINVAL, "ibv_post_recv on an SRQ QP");
  if (wr_ids.size() != sges.size())
    return fail(EINVAL, "ibv_post_recv: wr_ids/sges");
  if (qp.rq.size() + wr_ids.size() > qp.max_recv_wr) {
    return Error::from_errno(ENOMEM, "sim ibv_post_recv: RQ full");
  }
  for (std::size_t i = 0; i < wr_ids.size(); ++i) {
    if (qp.state == QpStateSim::kErr) {
      const auto op = caps().flushed_recv_as_send ? rdma::WcOpcode::kSend : rdma::WcOpcode::kRecv;
      push_cqe(rdma::WorkCompletion{wr_ids[i], rdma::WcStatus::kFlushErr, op, 0, false, 0, qp.qpn});
    } else {
      qp.rq.push_back(RecvWr{wr_ids[i], sges[i]});
    }
  }
  return {};
}

Result<void> SimNode::Impl::arm_srq_limit(std::uint32_t limit) {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, "sim ibv_modify_srq: node crashed");
  }
  if (device_removed)
    return Error::from_errno(ENODEV, "sim ibv_modify_srq: device removed");
  if (!opened || !dev->has_srq)
    return fail(EINVAL, "ibv_modify_srq: no SRQ");
  if (limit > dev->srq_size)
    return fail(EINVAL, "ibv_modify_srq: limit > SRQ size");
  dev->srq_limit = limit;
  dev->srq_limit_port = this;
  return {};
}

void SimNode::Impl::srq_consumed() {
  if (dev->srq_limit == 0 || dev->srq.size() >= dev->srq_limit)
    return;
  dev->srq_limit = 0;  // one event per arming (ibv_modify_srq(3))
  // rxe reports no async events at all (docs/lab.md).
  if (!caps().async_events)
    return;
  Impl* to = dev->srq_limit_port != nullptr ? dev->srq_limit_port : this;
  to->emit_async(fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kSrqLimitReached, 0});
}

void SimNode::Impl::push_cqe(const rdma::WorkCompletion& wc) {
  if (cq_broken) {
    ++stats.cqes_lost;
    return;
  }
  if (wc.status == rdma::WcStatus::kFlushErr)
    ++stats.flushed;
  cq.push_back(wc);
  if (cq.size() > cfg.cq_size) {
    overflow_cq();
    return;
  }
  if (!cq_poll_scheduled) {
    cq_poll_scheduled = true;
    later(fab.timing.cq_poll, [this] { poll_cq(); });
  }
}

void SimNode::Impl::poll_cq() {
  cq_poll_scheduled = false;
  if (cq.empty())
    return;
  const std::size_t n = std::min(cq.size(), kCompletionBatch);
  std::vector<rdma::WorkCompletion> batch(cq.begin(), cq.begin() + static_cast<std::ptrdiff_t>(n));
  cq.erase(cq.begin(), cq.begin() + static_cast<std::ptrdiff_t>(n));
  for (const auto& wc : batch) {
    fab.trace(addr, "WC wr_id={:#x} {} op={} len={} imm={} qpn={:#x}", wc.wr_id,
              rdma::to_string(wc.status), static_cast<int>(wc.opcode), wc.byte_len, wc.imm, wc.qpn);
  }
  if (!cq.empty()) {
    cq_poll_scheduled = true;
    later(0ns, [this] { poll_cq(); });
  }
  if (sink == nullptr) {
    stats.events_without_sink += n;
    return;
  }
  sink->on_completions(batch);
}

void SimNode::Impl::overflow_cq() {
  if (cq_broken)
    return;
  ++stats.cq_overflows;
  cq_broken = true;
  // A CQ in error takes every QP on it down; their CQEs are lost.
  for (auto& [qpn, qp] : qps)
    qp_to_error(qp);
  emit_async(fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kCqErr, 0});
}

}  // namespace rcnet::sim
