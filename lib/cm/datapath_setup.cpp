// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The data path's set-up (datapath.hpp): the device's profile and the
// credits it calls for, the send slots and SRQ that start() registers and
// their figures, and what each connection negotiated in REQ and REP up to
// ESTABLISHED. The send side is in datapath.cpp, the receive side and
// completions in datapath_recv.cpp; the decisions, docs/design.md "Data
// path" and "Receive credits".
#include <algorithm>
#include <limits>

#include "cm/datapath.hpp"

namespace rcnet::cm {

DataPath::DataPath(const ManagerConfig& cfg, Counters& ctr, rdma::Seam& seam, TimerService& timers,
                   PacketSink& sink, ConnTable& table, DataPathHooks& hooks)
    : cfg_(cfg),
      ctr_(ctr),
      seam_(seam),
      timers_(timers),
      sink_(&sink),
      table_(table),
      hooks_(hooks),
      self_(node_id_for(cfg.local.addr)) {}

Result<void> DataPath::set_profile(const rdma::ProviderProfile& device) {
  profile_ = device;
  if (cfg_.framing == Framing::kHeader)
    profile_.send_imm = false;
  else if (cfg_.framing == Framing::kImmediate)
    profile_.send_imm = true;
  grant_ = 0;
  if (profile_.rnr)
    return {};
  const std::uint32_t g = cfg_.use_srq ? cfg_.credits : cfg_.rq_depth;
  if (g < 4) {
    return Error::from_errno(
        EINVAL, fmt::format("the device has no RNR retry ({}): every connection needs at least 4 "
                            "receive credits, {} has {}",
                            profile_.transport, cfg_.use_srq ? "credits" : "srq.rq_depth", g));
  }
  if (cfg_.use_srq && cfg_.srq_size < 2 * g) {
    return Error::from_errno(
        EINVAL, fmt::format("the device has no RNR retry ({}): srq.size {} holds fewer than two "
                            "connections' {} receive credits each",
                            profile_.transport, cfg_.srq_size, g));
  }
  grant_ = static_cast<std::uint16_t>(std::min<std::uint32_t>(g, 0xffff));
  return {};
}

std::uint32_t DataPath::credit_conn_cap() const {
  if (grant_ == 0 || !cfg_.use_srq)
    return std::numeric_limits<std::uint32_t>::max();
  // Rails on ports of one device share its SRQ (docs/design.md "Rails"):
  // each data path holding it gets an equal part.
  const auto sharing = static_cast<std::uint32_t>(std::max<long>(1, srq_.use_count()));
  return std::max<std::uint32_t>(1, (cfg_.srq_size / grant_ - 1) / sharing);
}

void DataPath::negotiated(Conn& c, const wire::PrivateData& peer) {
  // The header where the peer needs it (credits come back in headers: a
  // peer that grants them gets headers too), or where we do, unless the
  // peer would drop it and the immediate can do instead.
  c.header = peer.header || peer.credits != 0 ||
             (wants_header() && (peer.header_ok || !profile_.send_imm || grant_ != 0));
  c.grant = grant_;
  c.peer_grant = peer.credits;
  c.tx_credits = peer.credits != 0 ? peer.credits : kNoCreditLimit;
}

void DataPath::established(Peer& p, Conn& c) {
  // Passive, the active side's proof not verified yet: its queue waits
  // (auth_released()), as it does for the active side's first SEND.
  if (c.auth == AuthState::kAwaiting)
    c.hold_auth = true;
  if (!c.active && c.header && profile_.active_sends_first && !c.peer_spoke)
    c.hold_first = true;  // receive() lets the queue go
  if (c.hold_auth || c.hold_first)
    return;
  // Queued packets first: the first of them is the active side's first
  // SEND, and a control SEND must not take the send slot they need.
  flush_queue(p, c);
  if (c.active && c.header && !c.sent_any && !post_control(c)) {
    c.control_due = true;  // sent from settle() once a slot is free
    control_due_.push_back(c.id);
  }
  if (c.grant != 0)
    maybe_update_credits(c);  // SENDs that came before ESTABLISHED was read
}

Result<void> DataPath::start() {
  // Offload: a receive holds a whole frame (header + super-packet) after a
  // header's worth of headroom; a send slot is as large (one pool size).
  // Every buffer has room for a frame header too (wire/frame_header.hpp):
  // the framing is per connection, the buffers are shared.
  buf_size_ = cm::buffer_size(cfg_);
  headroom_ = cfg_.offload ? kReceiveHeadroom : 0;
  if (auto r = send_pool_.init(seam_, cfg_.send_slots, buf_size_); !r)
    return r;
  slot_owner_.assign(cfg_.send_slots, 0);
  // send_lent()'s fallback copy holds one frame. Sized and touched here, so
  // that its first use under load does not grow the heap in use by a frame
  // (64 KiB with offload) long after the start: the soak's sender did.
  lent_copy_.resize(payload_room());
  lent_copy_.clear();
  if (cfg_.use_srq) {
    if (auto r = fill_srq(); !r)
      return r;
  }
  started_ = true;
  return {};
}

void DataPath::snapshot(Snapshot& s) const {
  s.send_slots_total = send_pool_.count();
  s.send_slots_free = send_pool_.free_count();
  s.srq = {.enabled = cfg_.use_srq,
           .size = cfg_.use_srq ? cfg_.srq_size : 0,
           .posted = srq_ ? srq_->posted : 0,
           .limit = cfg_.use_srq ? cfg_.srq_limit : 0,
           .limit_events = srq_ ? srq_->limit_events : 0,
           .buffer_size = buf_size_};
}

}  // namespace rcnet::cm
