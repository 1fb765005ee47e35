// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The data path's receive side and its completions: SRQ and per-QP RQ
// fills and reposts, the SRQ limit, and every work completion sorted by its
// wr_id tag (datapath.hpp; docs/design.md "Data path"). The send side is in
// datapath.cpp.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

#include "cm/datapath.hpp"

#include "wire/immediate.hpp"

namespace rcnet::cm {

Result<void> DataPath::fill_rq(Conn& c) {
  c.rq = std::make_unique<BufferPool>();
  if (auto r = c.rq->init(seam_, cfg_.rq_depth, buf_size_, headroom_); !r)
    return r;
  std::vector<std::uint64_t> ids;
  std::vector<rdma::Sge> sges;
  while (auto i = c.rq->take()) {
    ids.push_back(make_wr(kTagQpRecv, (c.id << 20) | *i));
    sges.push_back(c.rq->sge(*i));
  }
  if (auto r = seam_.post_qp_recv(c.cm_id, ids, sges); !r)
    return r;
  c.rq_posted = static_cast<std::uint32_t>(ids.size());
  return {};
}

Result<void> DataPath::fill_srq() {
  std::weak_ptr<rdma::DeviceShare>& slot = seam_.device_share();
  if (auto shared = std::dynamic_pointer_cast<SrqBuffers>(slot.lock())) {
    // Another rail on a port of this device filled the SRQ we share: its
    // buffers are ours too, as long as they fit what we receive.
    const BufferPool& p = shared->pool;
    if (p.count() != cfg_.srq_size || p.buffer_size() != buf_size_ ||
        p.headroom() != (headroom_ < buf_size_ ? headroom_ : 0)) {
      return Error::from_errno(
          EINVAL, fmt::format("the SRQ of this device holds {} buffers of {} bytes, this rail "
                              "wants {} of {}: rails on one device need the same srq_size, mtu "
                              "and offload",
                              p.count(), p.buffer_size(), cfg_.srq_size, buf_size_));
    }
    srq_ = std::move(shared);
    kept_srq_.reset();  // the other rail's buffers serve: ours would only sit
    spdlog::info("{}: sharing the device's SRQ and its {} receive buffers with another rail",
                 cfg_.local, srq_->pool.count());
    return {};
  }
  // The buffers this rail kept through a device loss, if any: init()
  // registers their memory again when the geometry still fits.
  auto own = kept_srq_ ? std::move(kept_srq_) : std::make_shared<SrqBuffers>();
  own->posted = 0;
  own->limit_armed = false;
  own->limit_events = 0;
  if (auto r = own->pool.init(seam_, cfg_.srq_size, buf_size_, headroom_); !r) {
    kept_srq_ = std::move(own);
    return r;
  }
  std::vector<std::uint64_t> ids;
  std::vector<rdma::Sge> sges;
  while (auto i = own->pool.take()) {
    ids.push_back(make_wr(kTagSrqRecv, *i));
    sges.push_back(own->pool.sge(*i));
  }
  if (auto r = seam_.post_srq_recv(ids, sges); !r)
    return r;
  own->posted = static_cast<std::uint32_t>(ids.size());
  srq_ = own;
  slot = own;
  arm_srq_limit();
  return {};
}

void DataPath::srq_limit_reached() {
  ++ctr_.srq_limit_events;
  if (!srq_)
    return;
  ++srq_->limit_events;
  srq_->limit_armed = false;
  spdlog::warn("SRQ limit reached: {} of {} receive WRs posted (limit {})", srq_->posted,
               cfg_.srq_size, cfg_.srq_limit);
}

void DataPath::arm_srq_limit() {
  if (auto r = seam_.arm_srq_limit(cfg_.srq_limit); !r) {
    spdlog::warn("arming the SRQ limit: {}", r.error().message());
    return;
  }
  srq_->limit_armed = true;
}

void DataPath::on_completions(std::span<const rdma::WorkCompletion> wcs) {
  in_completions_ = true;
  for (const auto& wc : wcs)
    on_wc(wc);
  in_completions_ = false;
  flush_srq_reposts();
  if (!credit_conns_.empty())
    return_credits();
  if (!released_.empty())
    release_held();
}

void DataPath::release_held() {
  // Passive connections whose active side has spoken (and proved the key
  // where a proof is due): their queues go.
  auto ids = std::move(released_);
  released_.clear();
  for (const std::uint64_t id : ids) {
    Conn* c = table_.find(id);
    Peer* p = c != nullptr ? table_.find_peer(c->peer) : nullptr;
    if (p != nullptr && c->in_service && may_send(*c)) {
      flush_queue(*p, *c);
      if (c->grant != 0)
        maybe_update_credits(*c);
    }
  }
}

void DataPath::on_wc(const rdma::WorkCompletion& wc) {
  const std::uint64_t low = wr_low(wc.wr_id);
  switch (wr_tag(wc.wr_id)) {
    case kTagSrqRecv: {
      const auto idx = static_cast<std::uint32_t>(low);
      if (!srq_ || idx >= srq_->pool.count()) {
        ++ctr_.completions_ignored;
        return;
      }
      --srq_->posted;
      if (wc.status == rdma::WcStatus::kSuccess) {
        receive(table_.by_qpn(wc.qpn), wc, srq_->pool.data(idx));
      } else if (wc.status != rdma::WcStatus::kFlushErr) {
        recv_error(table_.by_qpn(wc.qpn), wc);
      }
      srq_reposts_.push_back(idx);
      return;
    }
    case kTagQpRecv:
      on_qp_recv(wc);
      return;
    case kTagSend:
    case kTagReclaim: {
      Conn* c = nullptr;
      if (wr_tag(wc.wr_id) == kTagSend) {
        const auto slot = static_cast<std::uint32_t>(low);
        c = slot < slot_owner_.size() ? table_.find(slot_owner_[slot]) : nullptr;
      } else {
        c = table_.find(low);
      }
      if (c == nullptr || c->qpn != wc.qpn) {
        ++ctr_.completions_ignored;  // stale: its QP is gone and the slot reclaimed
        return;
      }
      if (wc.status != rdma::WcStatus::kSuccess && !is_teardown(c->state)) {
        // An error on a live QP: this WR did not complete, so it stays on
        // c.sends with those after it for take_unsent() (failover,
        // cm/rails.hpp); the QP's destroy gives their slots back. A flush
        // here means the QP went to ERR under us (device loss, a QP FATAL
        // or CQ error whose event may be read after the flushed WCs): that
        // event tears it down, and every flushed WR must still be there
        // then, so none is forgotten. Any other error: the WRs before it
        // completed (RC completes in order), and it is the failure.
        if (wc.status == rdma::WcStatus::kFlushErr)
          return;
        forget_before(*c, wc.wr_id);
        hooks_.send_failed(*c, wc);
        return;
      }
      complete_sends(*c, wc.wr_id);
      return;
    }
    case kTagDrain: {
      Conn* c = table_.find(low);
      if (c == nullptr || c->state != ConnState::kDraining) {
        ++ctr_.completions_ignored;
        return;
      }
      ++ctr_.drains_completed;
      hooks_.destroy_qp(*c, fmt::format("drain WR completed ({})", rdma::describe_status(wc)));
      return;
    }
    default:
      ++ctr_.completions_ignored;
      return;
  }
}

// A receive on a QP's own RQ (no SRQ): reposted at once while the QP lives;
// in teardown the flushes are counted until the RQ is empty (the non-SRQ
// stand-in for Last WQE Reached).
void DataPath::on_qp_recv(const rdma::WorkCompletion& wc) {
  const std::uint64_t low = wr_low(wc.wr_id);
  Conn* c = table_.find(low >> 20);
  if (c == nullptr || c->rq == nullptr || c->qpn != wc.qpn) {
    ++ctr_.completions_ignored;
    return;
  }
  const auto idx = static_cast<std::uint32_t>(low & 0xFFFFF);
  --c->rq_posted;
  if (wc.status == rdma::WcStatus::kSuccess) {
    receive(c, wc, c->rq->data(idx));
    if (!is_teardown(c->state)) {
      const std::uint64_t id = make_wr(kTagQpRecv, (c->id << 20) | idx);
      const rdma::Sge sge = c->rq->sge(idx);
      if (seam_.post_qp_recv(c->cm_id, std::span(&id, 1), std::span(&sge, 1)))
        ++c->rq_posted;
    }
  } else if (wc.status == rdma::WcStatus::kFlushErr) {
    ++ctr_.flushed_recvs_counted;
  } else {
    recv_error(c, wc);
  }
  if (c->state == ConnState::kAwaitLastWqe && c->rq_posted == 0)
    hooks_.post_drain(*c);
}

void DataPath::recv_error(Conn* c, const rdma::WorkCompletion& wc) {
  ++ctr_.recv_errors;
  if (c == nullptr) {
    spdlog::debug("receive completion error on QPN {} (no connection): {}", wc.qpn,
                  rdma::describe_status(wc));
    return;
  }
  if (c->recv_error_logged)
    return;
  c->recv_error_logged = true;
  auto f = hooks_.fields(*c);
  log::event(spdlog::level::warn, f,
             "receive completion error on QPN {} from {}: {} (counted in recv_errors; logged "
             "once per connection)",
             c->qpn, c->peer_addr, rdma::describe_status(wc));
}

void DataPath::header_received(Conn& c, std::uint16_t credits) {
  if (c.peer_grant != 0)
    c.tx_credits = std::min<std::uint32_t>(c.tx_credits + credits, c.peer_grant);
  if (c.grant != 0) {
    // One of the credits we granted is used; owed once its buffer is
    // reposted (return_credits()).
    ++c.credits_pending;
    if (!c.credit_listed) {
      c.credit_listed = true;
      credit_conns_.push_back(c.id);
    }
  }
  if (!c.peer_spoke) {
    c.peer_spoke = true;
    if (c.hold_first) {
      c.hold_first = false;
      released_.push_back(c.id);
    }
  }
}

void DataPath::receive(Conn* c, const rdma::WorkCompletion& wc, std::byte* buf) {
  if (c != nullptr)
    c->last_heard = timers_.coarse_now();  // whatever it is, the peer sent it
  std::byte* data = buf + headroom_;
  std::size_t len = wc.byte_len;
  std::uint32_t imm = wc.imm;
  if (!wc.has_imm) {
    // No immediate: the SEND says what it is in its frame header
    // (wire/frame_header.hpp), whatever this side recorded of the
    // negotiation (see kImmFrame).
    const auto h = wire::parse_frame_header(std::span<const std::byte>(data, len));
    if (!h) {
      ++ctr_.recv_errors;
      if (c != nullptr)
        header_received(*c, 0);  // it used a receive buffer all the same
      return;
    }
    imm = h->imm;
    data += wire::kFrameHeaderLen;
    len -= wire::kFrameHeaderLen;
    // Credits and the active side's first SEND exist only on header-framed
    // connections (a peer that grants credits or must send first asks for
    // the header): connections with the immediate pay the one branch above.
    if (c != nullptr)
      header_received(*c, h->credits);
  }
  if (imm == wire::kImmAuth) {
    if (c != nullptr)
      hooks_.auth_message(*c, std::span<const std::byte>(data, len));
    return;
  }
  // Before the peer proved the cluster key nothing of it is delivered, and
  // a SEND that is not its proof ends the connection (docs/design.md
  // "Trust"); with auth on, a SEND on no known QP is not delivered either.
  if (cfg_.auth_mode != auth::Mode::kOff && (c == nullptr || c->auth == AuthState::kAwaiting) &&
      (imm == wire::kImmData || imm == wire::kImmFrame || imm == wire::kImmRail)) {
    ++ctr_.drops_unproven;
    if (c != nullptr)
      hooks_.unproven_data(*c);
    return;
  }
  if (imm == wire::kImmRail && c != nullptr) {
    // Not traffic for the counters, but activity: a probed standby link is
    // not idle (cm/rails.hpp).
    table_.touch(*c, timers_.coarse_now());
    hooks_.rail_message(*c, std::span<const std::byte>(data, len));
    return;
  }
  if (imm != wire::kImmData && imm != wire::kImmFrame)
    return;  // control (first SEND, credit update, reclaim SEND) or foreign
  if (len == 0 || len > buf_size_ - headroom_ - wire::kFrameHeaderLen) {
    ++ctr_.recv_errors;
    return;
  }
  const bool framed = imm == wire::kImmFrame;
  if (framed && (!cfg_.offload || len <= wire::kVnetHdrLen)) {
    ++ctr_.recv_errors;  // a frame we never negotiated, or one without a packet
    return;
  }
  const std::size_t bytes = len;
  if (cfg_.offload && !framed) {
    // The headroom (kReceiveHeadroom) takes the zeroed header in front of
    // the packet, past a frame header if one came first.
    data -= wire::kVnetHdrLen;
    len += wire::kVnetHdrLen;
    wire::put_vnet_hdr(wire::VnetHdr{}, std::span(data, wire::kVnetHdrLen));
  }
  ++ctr_.packets_rx;
  ctr_.bytes_rx += bytes;
  NodeId from = 0;
  if (c != nullptr) {
    ++c->rx_packets;
    c->rx_bytes += bytes;
    table_.touch(*c, timers_.coarse_now());
    from = c->peer;
  }
  sink_->deliver(from, std::span<const std::byte>(data, len));
}

void DataPath::flush_srq_reposts() {
  if (srq_reposts_.empty() || !srq_)
    return;
  repost_ids_.clear();
  repost_sges_.clear();
  for (auto idx : srq_reposts_) {
    repost_ids_.push_back(make_wr(kTagSrqRecv, idx));
    repost_sges_.push_back(srq_->pool.sge(idx));
  }
  if (auto r = seam_.post_srq_recv(repost_ids_, repost_sges_); !r) {
    spdlog::error("ibv_post_srq_recv of {} buffers: {}", repost_ids_.size(), r.error().message());
  } else {
    srq_->posted += static_cast<std::uint32_t>(repost_ids_.size());
  }
  srq_reposts_.clear();
  if (!srq_->limit_armed && srq_->posted >= cfg_.srq_limit)
    arm_srq_limit();
}

}  // namespace rcnet::cm
