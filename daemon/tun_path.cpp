// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tun_path.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "wire/gso.hpp"
#include "wire/ip_packet.hpp"

namespace rcnet::daemon {

namespace {

// The network or the broadcast address of `prefix` (IPv4): no host owns
// either, and a broadcast gets no ICMP error (RFC 1812 section 4.3.2.7).
bool v4_network_or_broadcast(const IpPrefix& prefix, const IpAddr& a) {
  if (!a.is_v4() || !prefix.addr.is_v4() || prefix.length >= 31)
    return false;
  const std::uint32_t host_mask = ~std::uint32_t{0} >> prefix.length;
  const std::uint32_t host = a.v4_host_order() & host_mask;
  return host == 0 || host == host_mask;
}

// Link-scope multicast (RFC 4291 2.7: scope 1 interface-local, 2
// link-local; RFC 5771: IPv4 224.0.0.0/24, never forwarded): what the
// kernel sends on the link by itself (router solicitations to ff02::2, MLD
// reports to ff02::16 or the group, DAD to ff02::1:ffXX:XXXX, IGMP). No
// peer owns such an address, and no ICMP error answers multicast (RFC 4443
// 2.4 (e.3), RFC 1812 4.3.2.7).
bool link_scope_multicast(const IpAddr& a) {
  if (a.is_v6())
    return a.bytes[0] == 0xff && (a.bytes[1] & 0x0f) <= 2;
  return a.is_v4() && a.bytes[0] == 224 && a.bytes[1] == 0 && a.bytes[2] == 0;
}

}  // namespace

TunPath::TunPath(EventLoop& loop, cm::PacketPort& port, std::size_t vnet_hdr_len, Overlay overlay,
                 NextHop next_hop)
    : loop_(loop),
      port_(port),
      next_hop_(std::move(next_hop)),
      vnet_hdr_len_(vnet_hdr_len),
      overlay_(overlay),
      icmp_buf_(vnet_hdr_len + wire::kIcmpErrorMax),
      buf_(kBufferSize) {
  port_.set_upper(this);
}

TunPath::~TunPath() {
  port_.set_upper(nullptr);
}

Result<void> TunPath::attach(int fd) {
  auto src = loop_.add_io(fd, EPOLLIN, "tun", [this](std::uint32_t) { on_readable(); });
  if (!src)
    return src.error();
  source_ = std::move(*src);
  fd_ = fd;
  if (stopped_)
    (void)source_.set_enabled(SD_EVENT_OFF);
  return {};
}

void TunPath::detach() {
  source_.reset();
  fd_ = -1;
}

void TunPath::stop_reading() {
  stopped_ = true;
  if (source_.valid())
    (void)source_.set_enabled(SD_EVENT_OFF);
}

void TunPath::send_capacity(bool available) {
  if (!source_.valid())
    return;
  const bool want = available && !stopped_;
  if (want == source_.enabled())
    return;
  if (!want && !stopped_)
    ++counters_.read_pauses;
  if (auto r = source_.set_enabled(want ? SD_EVENT_ON : SD_EVENT_OFF); !r) {
    spdlog::error("TUN: cannot {} reading: {}", want ? "resume" : "pause", r.error().message());
  }
}

void TunPath::on_readable() {
  port_.begin_send_batch();
  read_packets();
  port_.end_send_batch();
}

void TunPath::read_packets() {
  // reading() turns false inside port_.send() when the manager signals
  // send_capacity(false): the packet just handed over is held, the rest wait
  // in the kernel's queue.
  //
  // The io source is level-triggered, so a pass may stop before EAGAIN: what
  // is left wakes the loop again at once. The budget adapts (read_budget_):
  // a pass that found the queue empty (EAGAIN) puts it back to one read per
  // wakeup, so that at low load a packet costs one read(2) and rarely a
  // failed one; kGrowAfter passes in a row that used their whole budget
  // double it, up to kReadBatch, so that under load a wakeup (one
  // epoll_wait) serves many packets.
  int i = 0;
  for (; i < read_budget_ && reading(); ++i) {
    // Into a lent send buffer when the manager has one (the packet then
    // goes out from there), else into our own.
    std::span<std::byte> into = port_.lend_send_buffer();
    const bool lent = !into.empty();
    if (!lent)
      into = buf_;
    auto give_back = [&] {
      if (lent)
        port_.return_lent();
    };
    ssize_t n = 0;
    do {
      n = ::read(fd_, into.data(), into.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      give_back();
      if (errno != EAGAIN)
        spdlog::warn("TUN: read failed: {}", std::generic_category().message(errno));
      ++counters_.read_empty;
      read_budget_ = 1;
      full_passes_ = 0;
      return;
    }
    const std::span<const std::byte> pkt(into.data(), static_cast<std::size_t>(n));
    ++counters_.tun_rx_packets;
    counters_.tun_rx_bytes += pkt.size();
    if (lent && pkt.size() == into.size()) {
      // A lent buffer is larger than any packet the manager accepts: one
      // that fills it may be cut short, and is oversize either way.
      give_back();
      ++counters_.drops_refused;
      continue;
    }

    const auto dst = pkt.size() < vnet_hdr_len_ ? std::nullopt
                                                : wire::ip_destination(pkt.subspan(vnet_hdr_len_));
    if (!dst) {
      give_back();
      ++counters_.drops_not_ip;
      continue;
    }
    if (link_scope_multicast(*dst)) {
      give_back();
      ++counters_.link_scope_multicast;
      continue;
    }
    const auto peer = route(*dst);
    if (!peer) {
      ++counters_.drops_unmapped;
      spdlog::debug("TUN: no peer for {}, dropped", dst->to_string());
      const IpPrefix* ours = overlay_.prefix_for(*dst);
      if (ours == nullptr || !v4_network_or_broadcast(*ours, *dst))
        send_icmp(wire::IcmpError::kUnreachable, pkt, 0);
      give_back();
      continue;
    }
    // A GSO super-packet is judged here, by its segments (the manager
    // takes it whole, or cuts it for a peer without offload and drops
    // segments too big for that peer without a word). A plain packet costs
    // no peer lookup here: the manager says kOversize when it is larger than
    // the peer's MTU, and too_big() runs only then.
    if (vnet_hdr_len_ != 0 && is_gso(pkt) && too_big(*peer, pkt)) {
      give_back();
      continue;
    }
    switch (lent ? port_.send_lent(*peer, pkt.size()) : port_.send(*peer, pkt)) {
      case cm::SendResult::kSent:
      case cm::SendResult::kQueued:
      case cm::SendResult::kDroppedOldest:
        break;
      case cm::SendResult::kOversize:
        // send_lent() gave the buffer back, but nothing reuses it before
        // the next read: `pkt` still holds the packet to quote.
        if (!too_big(*peer, pkt))
          ++counters_.drops_refused;
        break;
      case cm::SendResult::kRefused:
        ++counters_.drops_refused;
        break;
    }
  }
  if (i < read_budget_)
    return;  // paused by the manager: says nothing about the load
  if (++full_passes_ >= kGrowAfter) {
    read_budget_ = std::min(kReadBatch, read_budget_ * 2);
    full_passes_ = 0;
  }
}

std::optional<Endpoint> TunPath::route(const IpAddr& dst) {
  // Inside the overlay prefix (or without one) the destination is the
  // peer's own address: no lookup on this, the common path.
  if (overlay_.address.addr.empty() || overlay_.contains(dst) || !next_hop_)
    return port_.route(dst);
  const auto gw = next_hop_(dst);
  if (!gw)
    return port_.route(dst);
  auto peer = port_.route(*gw);
  if (peer)
    ++counters_.tx_via_gateway;
  return peer;
}

bool TunPath::is_gso(std::span<const std::byte> frame) const {
  const auto h = wire::parse_vnet_hdr(frame);
  return h && h->is_gso();
}

bool TunPath::too_big(const Endpoint& peer, std::span<const std::byte> frame) {
  const auto mtu = port_.peer_mtu(peer);
  if (!mtu || wire_length(frame) <= *mtu)
    return false;
  // As IPoIB-CM (ipoib_cm_send): larger than the peer takes, whatever DF
  // says; the sender's stack lowers its path MTU and fragments or
  // resegments itself.
  ++counters_.drops_too_big;
  send_icmp(wire::IcmpError::kTooBig, frame, *mtu);
  return true;
}

std::size_t TunPath::wire_length(std::span<const std::byte> frame) const {
  const auto ip = frame.subspan(vnet_hdr_len_);
  if (vnet_hdr_len_ == 0)
    return ip.size();
  const auto h = wire::parse_vnet_hdr(frame);
  if (!h || !h->is_gso())
    return ip.size();
  // A super-packet whose segments fit is not too big: what the peer's link
  // carries is one segment at a time (or the frame whole to a peer with
  // offload, whose stack segments it the same way when it forwards it).
  if (const auto plan = wire::plan_segments(*h, ip))
    return plan->max_segment_len();
  return std::min<std::size_t>(ip.size(), std::size_t{h->hdr_len} + h->gso_size);
}

bool TunPath::send_icmp(wire::IcmpError kind, std::span<const std::byte> frame, std::uint32_t mtu) {
  if (overlay_.address.addr.empty() || fd_ < 0)
    return false;
  const auto ip = frame.subspan(vnet_hdr_len_);
  // From our address in the packet's family (ICMP for IPv4, ICMPv6 for
  // IPv6); none when the TUN does not carry that family.
  const auto dst = wire::ip_destination(ip);
  const IpPrefix* ours = dst ? overlay_.prefix_for(*dst) : nullptr;
  if (ours == nullptr)
    return false;
  // The vnet header in front stays all zero: no offload asked, the
  // receiving stack verifies the checksums we computed.
  const std::size_t n = wire::build_icmp_error(kind, ip, ours->addr, mtu,
                                               std::span(icmp_buf_).subspan(vnet_hdr_len_));
  if (n == 0)
    return false;
  if (kind == wire::IcmpError::kUnreachable &&
      !icmp_limit_.allow(*wire::ip_source(ip), Clock::now())) {
    ++counters_.icmp_rate_limited;
    return false;
  }
  if (!write_frame(std::span(icmp_buf_).first(vnet_hdr_len_ + n)))
    return false;
  ++(kind == wire::IcmpError::kTooBig ? counters_.icmp_too_big_sent
                                      : counters_.icmp_unreachable_sent);
  return true;
}

bool TunPath::source_allowed(NodeId peer, std::span<const std::byte> packet) {
  const auto src = wire::ip_source(packet);
  if (!src)
    return true;  // not IP: the stack drops it, counted there
  std::optional<PeerOverlays> own;
  if (auto it = peer_overlays_.find(peer); it != peer_overlays_.end()) {
    own = it->second;
  } else if (peer != 0 && (own = port_.peer_overlays(peer))) {
    if (peer_overlays_.size() >= kMaxPeerOverlays)
      peer_overlays_.clear();
    peer_overlays_.emplace(peer, *own);
  }
  if (!own)
    return false;
  const auto is_own = [&](const IpAddr& a) {
    return !a.empty() && (a == (*own)[0] || a == (*own)[1]);
  };
  if (is_own(*src))
    return true;
  // An overlay address belongs to its node alone; any other source must be
  // one our route sends via this peer (the same question as on the way out,
  // and the same cache), in the source's family.
  if (overlay_.contains(*src) || !next_hop_)
    return false;
  const auto gw = next_hop_(*src);
  return gw && is_own(*gw);
}

bool TunPath::write_frame(std::span<const std::byte> frame) {
  for (;;) {
    const ssize_t n = ::write(fd_, frame.data(), frame.size());
    if (n >= 0)
      return true;
    if (errno == EINTR)
      continue;
    // EAGAIN/ENOBUFS: the TUN queue toward the stack is full; EIO: the
    // device is down. Either way the packet is lost, as on a NIC.
    ++counters_.drops_tun_write;
    return false;
  }
}

void TunPath::deliver(NodeId peer, std::span<const std::byte> packet) {
  if (fd_ < 0) {
    ++counters_.drops_not_attached;
    return;
  }
  if (overlay_.source_check && !overlay_.address.addr.empty() && packet.size() >= vnet_hdr_len_ &&
      !source_allowed(peer, packet.subspan(vnet_hdr_len_))) {
    ++counters_.drops_source;
    return;
  }
  if (!uso_ && vnet_hdr_len_ == wire::kVnetHdrLen) {
    const auto h = wire::parse_vnet_hdr(packet);
    if (h && h->gso_kind() == wire::kGsoUdpL4) {
      write_segments(packet);
      return;
    }
  }
  if (!write_frame(packet))
    return;
  ++counters_.tun_tx_packets;
  counters_.tun_tx_bytes += packet.size();
}

void TunPath::write_segments(std::span<const std::byte> frame) {
  const auto h = wire::parse_vnet_hdr(frame);
  const auto packet = frame.subspan(vnet_hdr_len_);
  const auto plan = wire::plan_segments(*h, packet);
  if (!plan) {
    ++counters_.drops_tun_write;  // what the TUN would have refused
    return;
  }
  ++counters_.rx_uso_segmented;
  seg_buf_.resize(vnet_hdr_len_ + plan->max_segment_len());
  // A zeroed header: no GSO, checksums complete (build_segment's).
  std::fill_n(seg_buf_.begin(), vnet_hdr_len_, std::byte{0});
  for (std::uint32_t i = 0; i < plan->segments; ++i) {
    const std::size_t len =
        wire::build_segment(*plan, packet, i, std::span(seg_buf_).subspan(vnet_hdr_len_));
    if (!write_frame(std::span(seg_buf_).first(vnet_hdr_len_ + len)))
      continue;
    ++counters_.tun_tx_packets;
    counters_.tun_tx_bytes += vnet_hdr_len_ + len;
  }
}

}  // namespace rcnet::daemon
