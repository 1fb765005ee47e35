// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The data path's send side (the receive side and completions:
// datapath_recv.cpp): what it does and owns, datapath.hpp; the decisions,
// docs/design.md "Data path", "Selective signalling" and "Offloads".
#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "cm/datapath.hpp"

#include "wire/gso.hpp"
#include "wire/immediate.hpp"

namespace rcnet::cm {

DataPath::DataPath(const ManagerConfig& cfg, Counters& ctr, rdma::Seam& seam, TimerService& timers,
                   PacketSink& sink, ConnTable& table, DataPathHooks& hooks)
    : cfg_(cfg),
      ctr_(ctr),
      seam_(seam),
      timers_(timers),
      sink_(sink),
      table_(table),
      hooks_(hooks),
      self_(node_id_for(cfg.local.addr)) {}

Result<void> DataPath::start() {
  // Offload: a receive holds a whole frame (header + super-packet) after a
  // header's worth of headroom; a send slot is as large (one pool size).
  buf_size_ = cfg_.offload
                  ? static_cast<std::uint32_t>(kReceiveHeadroom + wire::kVnetHdrLen +
                                               std::max<std::size_t>(cfg_.mtu, wire::kGsoMaxPacket))
                  : cfg_.mtu;
  headroom_ = cfg_.offload ? kReceiveHeadroom : 0;
  if (auto r = send_pool_.init(seam_, cfg_.send_slots, buf_size_); !r)
    return r;
  slot_owner_.assign(cfg_.send_slots, 0);
  if (cfg_.use_srq) {
    if (auto r = fill_srq(); !r)
      return r;
  }
  started_ = true;
  return {};
}

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
    if (!started_ || send_pool_.buffer_size() <= largest)
      return {};
    const auto slot = send_pool_.take();
    if (!slot)
      return {};
    lent_slot_ = *slot;
  }
  return {send_pool_.data(*lent_slot_), send_pool_.buffer_size()};
}

SendResult DataPath::send_lent(const Endpoint& dst, std::size_t len) {
  if (!lent_slot_)
    return SendResult::kRefused;
  const std::uint32_t slot = *lent_slot_;
  lent_slot_.reset();
  const std::span<const std::byte> frame(send_pool_.data(slot),
                                         std::min<std::size_t>(len, send_pool_.buffer_size()));
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
  if (c == nullptr || c->state != ConnState::kEstablished || too_big_for(*c, frame))
    return nullptr;
  if (cfg_.offload && (!c->gso || !goes_whole(*c, *wire::parse_vnet_hdr(frame))))
    return nullptr;  // plain packets or segments: post_packet() strips, cuts, completes
  // room_for(c, 1) without the pool check: the slot is taken already.
  if (c->sends.size() + 3 > cfg_.qp_send_depth)
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
  if (!room_for(c, 1))
    return false;
  const std::uint32_t slot = *send_pool_.take();
  std::memcpy(send_pool_.data(slot), payload.data(), payload.size());
  if (h && !c.gso && h->needs_csum() &&
      !wire::complete_checksum(*h, std::span(send_pool_.data(slot), payload.size()))) {
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
      plan->max_segment_len() + wire::kVnetHdrLen > send_pool_.buffer_size()) {
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
  if (!room_for(c, plan->segments))
    return false;
  // On a connection that carries frames (c.gso, a UDP super-packet for a
  // peer without USO) every SEND is one: each segment goes behind a zeroed
  // header (no GSO, checksums complete).
  const std::size_t hdr = c.gso ? wire::kVnetHdrLen : 0;
  BatchScope batch(*this);  // the segments of one super-packet: one doorbell
  for (std::uint32_t i = 0; i < plan->segments; ++i) {
    const std::uint32_t slot = *send_pool_.take();
    std::byte* buf = send_pool_.data(slot);
    std::memset(buf, 0, hdr);
    const std::size_t len =
        wire::build_segment(*plan, packet, i, std::span(buf + hdr, send_pool_.buffer_size() - hdr));
    post_slot(c, slot, hdr + len);
  }
  ++(c.gso ? ctr_.uso_segmented : ctr_.gso_segmented);
  return true;
}

void DataPath::post_slot(Conn& c, std::uint32_t slot, std::size_t len, bool rail_msg) {
  const bool scarce = send_pool_.free_count() < send_pool_.count() / 4;
  // The last WR that fits before the room kept for reclaim SEND and drain is always
  // signaled: an SQ full of unsignaled WRs would otherwise produce no
  // completion until the reaper's reclaim SEND, and the TUN would stall that long.
  const bool last_room = c.sends.size() + 3 >= cfg_.qp_send_depth;
  const bool signaled = scarce || last_room || ++c.unsignaled_run >= cfg_.signal_every;
  if (signaled)
    c.unsignaled_run = 0;
  // c.gso: every SEND on c carries a frame (post_packet, the lent path).
  const rdma::SendWr w{make_wr(kTagSend, slot),
                       send_pool_.sge(slot, static_cast<std::uint32_t>(len)),
                       rail_msg ? wire::kImmRail
                       : c.gso  ? wire::kImmFrame
                                : wire::kImmData,
                       signaled};
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
      ++ctr_.send_errors;
      auto f = hooks_.fields(c);
      log::event(spdlog::level::warn, f, "ibv_post_send QPN {}: {}", c.qpn, r.error().message());
      return;  // consumed (dropped); do not retry this packet
    }
  }
  slot_owner_[slot] = c.id;
  c.sends.push_back({w.wr_id, signaled, static_cast<std::uint32_t>(len), !rail_msg});
  const TimePoint t = timers_.coarse_now();
  table_.sq_tail_posted(c, signaled, t);
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
    c.sends.pop_back();
    free_slot(static_cast<std::uint32_t>(wr_low(wrs[k].wr_id)));
    --c.tx_packets;
    c.tx_bytes -= wrs[k].sge.length;
    --ctr_.packets_tx;
    ctr_.bytes_tx -= wrs[k].sge.length;
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
  if (!started_ || c.state != ConnState::kEstablished || msg.size() > buf_size_ || !room_for(c, 1))
    return false;
  const std::uint32_t slot = *send_pool_.take();
  std::memcpy(send_pool_.data(slot), msg.data(), msg.size());
  post_slot(c, slot, msg.size(), true);
  return true;
}

void DataPath::take_unsent(Conn& c, std::vector<std::vector<std::byte>>& out) {
  flush_sends();
  for (const SendEntry& e : c.sends) {
    if (wr_tag(e.wr_id) != kTagSend || !e.data)
      continue;
    const auto* p = send_pool_.data(static_cast<std::uint32_t>(wr_low(e.wr_id)));
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
    sink_.send_capacity(false);
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
    if (c == nullptr || c->state != ConnState::kEstablished)
      continue;
    flush_queue(*p, *c);  // may re-block it at the back
  }
  if (blocked_.empty() && !capacity_ && send_pool_.free_count() > 0) {
    capacity_ = true;
    sink_.send_capacity(true);
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
