// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The data path's send side (its set-up: datapath_setup.cpp; the receive
// side and completions: datapath_recv.cpp): what it does and owns,
// datapath.hpp; the decisions, docs/design.md "Data path", "Selective
// signalling" and "Offloads".
#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "cm/datapath.hpp"

#include "wire/gso.hpp"
#include "wire/immediate.hpp"

namespace rcnet::cm {

SendResult DataPath::send(const Endpoint& dst, std::span<const std::byte> packet) {
  std::size_t limit = cfg_.mtu;
  if (cfg_.offload) {
    const auto h = wire::parse_vnet_hdr(packet);
    if (!h)
      return SendResult::kRefused;
    limit = wire::kVnetHdrLen + (h->is_gso() ? wire::kGsoMaxPacket : cfg_.mtu);
  }
  if (packet.size() > limit) {
    ++ctr_.drops_oversize;
    return SendResult::kOversize;
  }
  if (!started_ || !hooks_.sends_allowed()) {
    ++ctr_.drops_shutting_down;
    return SendResult::kRefused;
  }
  const NodeId node = node_id_for(dst.addr);
  if (node == 0 || node == self_)
    return SendResult::kRefused;
  Peer& p = table_.peer_for(node, dst);
  Conn* c = table_.conn_of(p);
  if (c != nullptr && c->state == ConnState::kEstablished && (c->hold_first || c->hold_auth)) {
    // The active side has not sent yet, or not proved the cluster key: the
    // packet waits for it (receive(), auth_released()).
    const bool dropped = enqueue(p, packet);
    return dropped ? SendResult::kDroppedOldest : SendResult::kQueued;
  }
  if (c != nullptr && c->state == ConnState::kEstablished) {
    if (too_big_for(*c, packet)) {
      ++ctr_.drops_oversize;
      return SendResult::kOversize;
    }
    if (p.queue.empty() && post_packet(*c, packet))
      return SendResult::kSent;
    // No send slot or the SQ is full: hold it in the peer's queue until
    // completions free room, and tell the daemon to stop reading TUN.
    const bool dropped = enqueue(p, packet);
    mark_blocked(p);
    return dropped ? SendResult::kDroppedOldest : SendResult::kQueued;
  }
  const bool dropped = enqueue(p, packet);
  if (c == nullptr && p.retry_at == TimePoint::max())
    hooks_.start_connect(p);
  return dropped ? SendResult::kDroppedOldest : SendResult::kQueued;
}

std::span<std::byte> DataPath::lend_send_buffer() {
  if (!lent_slot_) {
    const std::size_t largest =
        cfg_.offload ? wire::kVnetHdrLen + std::max<std::size_t>(wire::kGsoMaxPacket, cfg_.mtu)
                     : cfg_.mtu;
    if (!started_ || payload_room() <= largest)
      return {};
    const auto slot = send_pool_.take();
    if (!slot)
      return {};
    lent_slot_ = *slot;
  }
  return {payload(*lent_slot_), payload_room()};
}

SendResult DataPath::send_lent(const Endpoint& dst, std::size_t len) {
  if (!lent_slot_)
    return SendResult::kRefused;
  const std::uint32_t slot = *lent_slot_;
  lent_slot_.reset();
  const std::span<const std::byte> frame(payload(slot), std::min<std::size_t>(len, payload_room()));
  if (Conn* c = direct_target(dst, frame)) {
    if (cfg_.offload && wire::parse_vnet_hdr(frame)->is_gso())
      ++ctr_.gso_sent;
    ++ctr_.sends_zero_copy;
    post_slot(*c, slot, frame.size());
    return SendResult::kSent;
  }
  // Anything else (a queue, no connection yet, a peer without offload, no
  // SQ room, a bad frame): exactly send()'s path, from a copy, with the
  // buffer back in the pool first so that send() can take it.
  lent_copy_.assign(frame.begin(), frame.end());
  send_pool_.give(slot);
  return send(dst, lent_copy_);
}

// send()'s checks for the one case posted without a copy: an established
// connection with nothing queued, SQ room, and a frame that goes whole.
Conn* DataPath::direct_target(const Endpoint& dst, std::span<const std::byte> frame) {
  if (!started_ || !hooks_.sends_allowed())
    return nullptr;
  if (cfg_.offload) {
    const auto h = wire::parse_vnet_hdr(frame);
    if (!h || frame.size() > wire::kVnetHdrLen + (h->is_gso() ? wire::kGsoMaxPacket : cfg_.mtu))
      return nullptr;
  } else if (frame.size() > cfg_.mtu) {
    return nullptr;
  }
  const NodeId node = node_id_for(dst.addr);
  if (node == 0 || node == self_)
    return nullptr;
  Peer* p = table_.find_peer(node);
  if (p == nullptr || !p->queue.empty())
    return nullptr;
  Conn* c = table_.conn_of(*p);
  if (c == nullptr || !may_send(*c) || too_big_for(*c, frame))
    return nullptr;
  if (cfg_.offload && (!c->gso || !goes_whole(*c, *wire::parse_vnet_hdr(frame))))
    return nullptr;  // plain packets or segments: post_packet() strips, cuts, completes
  // room_for(c, 1) without the pool check: the slot is taken already.
  if (c->sends.size() + 3 > cfg_.qp_send_depth || !credit_for(*c, 1))
    return nullptr;
  return c;
}

bool DataPath::enqueue(Peer& p, std::span<const std::byte> packet) {
  bool dropped = false;
  if (cfg_.peer_queue_depth == 0) {
    ++ctr_.drops_queue_full;
    return true;
  }
  if (p.queue.size() >= cfg_.peer_queue_depth) {
    p.queue.pop_front();
    ++ctr_.drops_queue_full;
    dropped = true;
  }
  p.queue.emplace_back(packet.begin(), packet.end());
  return dropped;
}

void DataPath::forget_sends(Conn& c, std::deque<SendEntry>::iterator end) {
  for (auto i = c.sends.begin(); i != end; ++i) {
    if (wr_tag(i->wr_id) == kTagSend)
      free_slot(static_cast<std::uint32_t>(wr_low(i->wr_id)));
  }
  c.sends.erase(c.sends.begin(), end);
}

bool DataPath::too_big_for(const Conn& c, std::span<const std::byte> frame) const {
  if (!cfg_.offload)
    return frame.size() > c.peer_mtu;
  // A super-packet goes whole (within kGsoMaxPacket, checked by send()) or
  // in segments, each checked against the peer's MTU in post_segments().
  const auto h = wire::parse_vnet_hdr(frame);
  return !h->is_gso() && frame.size() - wire::kVnetHdrLen > c.peer_mtu;
}

bool DataPath::goes_whole(const Conn& c, const wire::VnetHdr& h) {
  // A TUN without USO refuses a UDP GSO frame on write (kCapUso).
  return c.gso && (h.gso_kind() != wire::kGsoUdpL4 || c.peer_uso);
}

bool DataPath::post_packet(Conn& c, std::span<const std::byte> frame) {
  std::optional<wire::VnetHdr> h;
  std::span<const std::byte> payload = frame;  // what the one SEND carries
  if (cfg_.offload) {
    h = wire::parse_vnet_hdr(frame);  // send() let only frames with one in
    if (!c.gso) {
      payload = frame.subspan(wire::kVnetHdrLen);
      if (h->is_gso())
        return post_segments(c, *h, payload);
    } else if (!goes_whole(c, *h)) {
      return post_segments(c, *h, frame.subspan(wire::kVnetHdrLen));
    }
  }
  if (!room_for(c, 1)) {
    if (!credit_for(c, 1))
      ++ctr_.credit_waits;
    return false;
  }
  const std::uint32_t slot = *send_pool_.take();
  std::memcpy(this->payload(slot), payload.data(), payload.size());
  if (h && !c.gso && h->needs_csum() &&
      !wire::complete_checksum(*h, std::span(this->payload(slot), payload.size()))) {
    send_pool_.give(slot);
    ++ctr_.drops_gso_to_legacy_peer;
    return true;
  }
  if (h && c.gso && h->is_gso())
    ++ctr_.gso_sent;
  post_slot(c, slot, payload.size());
  return true;
}

// A super-packet for a peer without offload: all its segments or none, so
// a packet never goes out in part.
bool DataPath::post_segments(Conn& c, const wire::VnetHdr& h, std::span<const std::byte> packet) {
  const auto plan = wire::plan_segments(h, packet);
  if (!plan || plan->segments > send_pool_.count() || plan->segments + 2 > cfg_.qp_send_depth ||
      plan->max_segment_len() + (c.gso ? wire::kVnetHdrLen : 0) > payload_room() ||
      (c.peer_grant != 0 && plan->segments + kCreditReserve > c.peer_grant)) {
    ++ctr_.drops_gso_to_legacy_peer;
    auto f = hooks_.fields(c);
    log::event(spdlog::level::debug, f,
               "QPN {}: GSO type {:#x} size {} ({} bytes) cannot be segmented for a peer "
               "without offload, dropped",
               c.qpn, h.gso_type, h.gso_size, packet.size());
    return true;
  }
  if (plan->max_segment_len() > c.peer_mtu) {
    ++ctr_.drops_oversize;
    return true;
  }
  if (!room_for(c, plan->segments)) {
    if (!credit_for(c, plan->segments))
      ++ctr_.credit_waits;
    return false;
  }
  // On a connection that carries frames (c.gso, a UDP super-packet for a
  // peer without USO) every SEND is one: each segment goes behind a zeroed
  // header (no GSO, checksums complete).
  const std::size_t hdr = c.gso ? wire::kVnetHdrLen : 0;
  BatchScope batch(*this);  // the segments of one super-packet: one doorbell
  for (std::uint32_t i = 0; i < plan->segments; ++i) {
    const std::uint32_t slot = *send_pool_.take();
    std::byte* buf = payload(slot);
    std::memset(buf, 0, hdr);
    const std::size_t len =
        wire::build_segment(*plan, packet, i, std::span(buf + hdr, payload_room() - hdr));
    post_slot(c, slot, hdr + len);
  }
  ++(c.gso ? ctr_.uso_segmented : ctr_.gso_segmented);
  return true;
}

void DataPath::post_slot(Conn& c, std::uint32_t slot, std::size_t len, std::uint32_t imm,
                         bool force_signal) {
  const bool scarce = send_pool_.free_count() < send_pool_.count() / 4;
  // The last WR that fits before the room kept for reclaim SEND and drain is always
  // signaled: an SQ full of unsignaled WRs would otherwise produce no
  // completion until the reaper's reclaim SEND, and the TUN would stall that long.
  const bool last_room = c.sends.size() + 3 >= cfg_.qp_send_depth;
  const bool signaled =
      force_signal || scarce || last_room || ++c.unsignaled_run >= cfg_.signal_every;
  if (signaled)
    c.unsignaled_run = 0;
  // c.gso: every data SEND on c carries a frame (post_packet, the lent path).
  if (imm == wire::kImmData && c.gso)
    imm = wire::kImmFrame;
  const bool data = imm == wire::kImmData || imm == wire::kImmFrame;
  rdma::SendWr w{make_wr(kTagSend, slot), send_pool_.sge(slot, static_cast<std::uint32_t>(len)),
                 imm, signaled};
  std::uint16_t returned = 0;
  if (c.header) {
    // The one branch the immediate's connections pay: the header goes in
    // front of the payload, with the credits owed, and no immediate.
    returned = static_cast<std::uint16_t>(std::min<std::uint32_t>(c.credits_owed, 0xffff));
    c.credits_owed -= returned;
    wire::put_frame_header({imm, returned}, std::span<std::byte, wire::kFrameHeaderLen>(
                                                send_pool_.data(slot), wire::kFrameHeaderLen));
    w.sge.length += wire::kFrameHeaderLen;
    w.imm = 0;
    if (c.peer_grant != 0)
      --c.tx_credits;
  } else {
    w.sge.addr += wire::kFrameHeaderLen;
  }
  c.sent_any = true;
  if (batch_depth_ > 0) {
    std::size_t i = 0;
    while (i < chains_used_ && chains_[i].conn != c.id)
      ++i;
    if (i == chains_used_) {
      if (chains_used_ == chains_.size())
        chains_.emplace_back();
      chains_[chains_used_].conn = c.id;
      chains_[chains_used_].wrs.clear();
      ++chains_used_;
    }
    chains_[i].wrs.push_back(w);
  } else {
    ++ctr_.send_doorbells;
    if (auto r = seam_.post_send(c.cm_id, w.wr_id, w.sge, w.imm, w.signaled); !r) {
      send_pool_.give(slot);
      c.credits_owed += returned;
      if (c.header && c.peer_grant != 0)
        ++c.tx_credits;
      ++ctr_.send_errors;
      auto f = hooks_.fields(c);
      log::event(spdlog::level::warn, f, "ibv_post_send QPN {}: {}", c.qpn, r.error().message());
      return;  // consumed (dropped); do not retry this packet
    }
  }
  slot_owner_[slot] = c.id;
  c.sends.push_back({w.wr_id, signaled, static_cast<std::uint32_t>(len), data});
  const TimePoint t = timers_.coarse_now();
  table_.sq_tail_posted(c, signaled, t);
  if (imm == wire::kImmControl)
    return;  // not traffic: the idle time and the packet counters stay
  table_.touch(c, t);
  ++c.tx_packets;
  c.tx_bytes += len;
  ++ctr_.packets_tx;
  ctr_.bytes_tx += len;
}

void DataPath::flush_sends() {
  // Cleared first: nothing below appends, but a chain must never be posted
  // twice.
  const std::size_t used = std::exchange(chains_used_, 0);
  for (std::size_t i = 0; i < used; ++i) {
    auto& ch = chains_[i];
    Conn* c = table_.find(ch.conn);
    if (ch.wrs.empty() || c == nullptr || !c->has_qp())
      continue;  // cannot happen: every teardown step flushes first
    ++ctr_.send_doorbells;
    const auto r = seam_.post_sends(c->cm_id, ch.wrs);
    if (r.error)
      unpost_tail(*c, ch.wrs, r.posted, *r.error);
    ch.wrs.clear();
  }
}

void DataPath::unpost_tail(Conn& c, std::span<const rdma::SendWr> wrs, std::size_t posted,
                           const Error& why) {
  const std::size_t lost = wrs.size() - posted;
  for (std::size_t k = wrs.size(); k-- > posted;) {
    // The chain is c.sends' tail, in order (see flush_sends' callers).
    if (c.sends.empty() || c.sends.back().wr_id != wrs[k].wr_id)
      break;
    const bool data = c.sends.back().data;
    const std::uint32_t len = c.sends.back().len;
    c.sends.pop_back();
    const auto slot = static_cast<std::uint32_t>(wr_low(wrs[k].wr_id));
    if (c.header) {
      // The credits this WR was to return are owed again.
      if (const auto h = wire::parse_frame_header(
              std::span<const std::byte>(send_pool_.data(slot), wire::kFrameHeaderLen)))
        c.credits_owed += h->credits;
    }
    if (c.header && c.peer_grant != 0)
      ++c.tx_credits;
    free_slot(slot);
    if (data) {
      --c.tx_packets;
      c.tx_bytes -= len;
      --ctr_.packets_tx;
      ctr_.bytes_tx -= len;
    }
    ++ctr_.send_errors;
  }
  // What is now the SQ's tail decides the reclaim list; when unsure (nothing of
  // the chain went), list c: a needless reclaim SEND costs one WR.
  table_.sq_tail_posted(c, posted > 0 && wrs[posted - 1].signaled, timers_.coarse_now());
  auto f = hooks_.fields(c);
  log::event(spdlog::level::warn, f, "ibv_post_send QPN {}: {} WRs not posted: {}", c.qpn, lost,
             why.message());
}

bool DataPath::post_rail_message(Conn& c, std::span<const std::byte> msg) {
  if (!started_ || !may_send(c) || msg.size() > payload_room() || !room_for(c, 1))
    return false;
  const std::uint32_t slot = *send_pool_.take();
  std::memcpy(payload(slot), msg.data(), msg.size());
  post_slot(c, slot, msg.size(), wire::kImmRail);
  return true;
}

bool DataPath::post_auth_message(Conn& c, std::span<const std::byte> msg) {
  if (!started_ || c.state != ConnState::kEstablished || msg.size() > payload_room() ||
      !room_for(c, 1))
    return false;
  const std::uint32_t slot = *send_pool_.take();
  std::memcpy(payload(slot), msg.data(), msg.size());
  post_slot(c, slot, msg.size(), wire::kImmAuth);
  return true;
}

void DataPath::auth_released(Conn& c) {
  c.hold_auth = false;
  released_.push_back(c.id);
  if (!in_completions_)
    release_held();
}

bool DataPath::post_control(Conn& c) {
  // The last credit only for a SEND that returns some: otherwise two ends
  // that owe each other could both be left without one.
  const bool credit = c.tx_credits >= (c.credits_owed > 0 ? 1u : 2u);
  if (!started_ || !c.has_qp() || !c.header || !credit ||
      c.sends.size() + 2 + 1 > cfg_.qp_send_depth || send_pool_.free_count() == 0)
    return false;
  if (c.credits_owed > 0)
    ++ctr_.credit_updates;
  const std::uint32_t slot = *send_pool_.take();
  post_slot(c, slot, 0, wire::kImmControl, true);
  return true;
}

void DataPath::post_due_controls() {
  auto due = std::move(control_due_);
  control_due_.clear();
  for (const std::uint64_t id : due) {
    Conn* c = table_.find(id);
    if (c == nullptr || !c->control_due)
      continue;
    if (c->state != ConnState::kEstablished || (!c->active && !c->peer_spoke) ||
        (c->sent_any && c->credits_owed == 0)) {
      c->control_due = false;  // gone, not ours to send first, or no longer needed
      continue;
    }
    if (post_control(*c))
      c->control_due = false;
    else
      control_due_.push_back(id);
  }
}

void DataPath::return_credits() {
  for (const std::uint64_t id : credit_conns_) {
    Conn* c = table_.find(id);
    if (c == nullptr)
      continue;
    c->credit_listed = false;
    c->credits_owed += std::exchange(c->credits_pending, 0);
    maybe_update_credits(*c);
  }
  credit_conns_.clear();
}

void DataPath::maybe_update_credits(Conn& c) {
  // Half a window owed: say so now rather than wait for traffic the other
  // way (a peer that only sends would otherwise stop at its reserve). Not
  // below 2, or two ends would answer each other's update forever. Before
  // ESTABLISHED (SENDs can complete on the passive side before the RTU is
  // read) it waits for established().
  if (c.credits_owed < std::max<std::uint32_t>(2, c.grant / 2) || c.control_due || !may_send(c))
    return;
  if (!post_control(c)) {
    c.control_due = true;
    control_due_.push_back(c.id);
  }
}

void DataPath::take_unsent(Conn& c, std::vector<std::vector<std::byte>>& out) {
  flush_sends();
  for (const SendEntry& e : c.sends) {
    if (wr_tag(e.wr_id) != kTagSend || !e.data)
      continue;
    const auto* p = payload(static_cast<std::uint32_t>(wr_low(e.wr_id)));
    std::vector<std::byte> pkt;
    // What send() takes: with offload a frame. A slot holds a frame only
    // when c negotiated GSO; a plain packet (or a segment, its checksum
    // complete) gets a zeroed header: no flags, no GSO.
    const bool add_hdr = cfg_.offload && !c.gso;
    pkt.reserve(e.len + (add_hdr ? wire::kVnetHdrLen : 0));
    if (add_hdr)
      pkt.resize(wire::kVnetHdrLen, std::byte{0});
    pkt.insert(pkt.end(), p, p + e.len);
    out.push_back(std::move(pkt));
  }
}

void DataPath::post_reclaim(Conn& c) {
  flush_sends();
  if (c.header) {
    // A zero-length SEND without a header would mean nothing to the peer:
    // the control SEND (signaled) returns the slots the same way.
    if (c.state != ConnState::kEstablished || c.hold_first || !post_control(c))
      table_.sq_tail_posted(c, false, timers_.now());
    return;
  }
  const std::uint64_t wr = make_wr(kTagReclaim, c.id);
  if (!seam_.post_send(c.cm_id, wr, send_pool_.sge(0, 0), wire::kImmControl, true)) {
    table_.sq_tail_posted(c, false, timers_.now());  // the tail is still unsignaled: next tick
    return;
  }
  c.sends.push_back({wr, true});
  table_.sq_tail_posted(c, true, timers_.now());
  c.unsignaled_run = 0;
}

void DataPath::flush_queue(Peer& p, Conn& c) {
  BatchScope batch(*this);  // one doorbell for the whole queue
  while (!p.queue.empty()) {
    const auto& pkt = p.queue.front();
    if (too_big_for(c, pkt)) {
      ++ctr_.drops_oversize;
      p.queue.pop_front();
      continue;
    }
    if (!post_packet(c, pkt)) {
      mark_blocked(p);
      return;
    }
    p.queue.pop_front();
  }
}

void DataPath::mark_blocked(Peer& p) {
  if (!p.blocked) {
    p.blocked = true;
    blocked_.push_back(p.node);
  }
  if (capacity_) {
    capacity_ = false;
    sink_->send_capacity(false);
  }
}

// Runs from settle() while back-pressure is on: gives each blocked peer one
// turn (a peer whose SQ is still full goes to the back and waits for more
// completions) and sends the true edge once none is left waiting.
void DataPath::unblock() {
  for (std::size_t turns = blocked_.size();
       turns > 0 && !blocked_.empty() && send_pool_.free_count() > 0; --turns) {
    const NodeId node = blocked_.front();
    blocked_.pop_front();
    Peer* p = table_.find_peer(node);
    if (p == nullptr)
      continue;
    p->blocked = false;
    Conn* c = table_.conn_of(*p);
    if (c == nullptr || !may_send(*c))
      continue;
    flush_queue(*p, *c);  // may re-block it at the back
  }
  if (blocked_.empty() && !capacity_ && send_pool_.free_count() > 0) {
    capacity_ = true;
    sink_->send_capacity(true);
  }
}

void DataPath::forget_before(Conn& c, std::uint64_t wr) {
  auto it = std::find_if(c.sends.begin(), c.sends.end(),
                         [&](const SendEntry& e) { return e.wr_id == wr; });
  if (it != c.sends.end())
    forget_sends(c, it);
}

void DataPath::complete_sends(Conn& c, std::uint64_t wr) {
  auto it = std::find_if(c.sends.begin(), c.sends.end(),
                         [&](const SendEntry& e) { return e.wr_id == wr; });
  if (it != c.sends.end())
    forget_sends(c, std::next(it));
}

}  // namespace rcnet::cm
