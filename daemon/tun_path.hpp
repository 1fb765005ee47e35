// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The TUN side of the data path (docs/design.md "Data path"): packets read from
// the TUN fd are routed by IP destination to a peer and handed to the packet
// port (cm/packet_port.hpp: the links, one rail's Manager or the RailSet);
// packets the port delivers are written to the TUN fd. It is the port's
// upper cm::PacketSink.
//
// The overlay behaves like an IP link (rcnetd(8) "THE OVERLAY AS AN IP
// LINK"), as the kernel's IPoIB-CM does: a destination outside the overlay
// prefix goes to the peer that the kernel's route names as its gateway
// (NextHop); a destination no peer owns is answered with ICMP
// host unreachable (rate-limited: icmp_limit.hpp), a packet larger than
// the peer's MTU with "fragmentation needed" / "packet too big"
// (wire/icmp.hpp), written back into the TUN; and a received packet whose
// inner source is neither the sending peer's overlay address nor routed via
// that peer is dropped (the source check). With both families on the TUN
// (tun.address a list of two) each family behaves so on its own: an ICMP
// error comes from our address in the offending packet's family, and a
// peer may send from its overlay address in either family.
//
// What the kernel sends on the TUN by itself, link-scope multicast (IPv6
// router solicitations, MLD reports, DAD neighbour solicitations; IPv4
// 224.0.0.0/24, e.g. IGMP), is for no peer: it is counted as
// link_scope_multicast, neither sent nor a drop, and gets no ICMP error.
// TunDevice::configure() stops most of it at the source.
//
// Back-pressure has one channel, cm::PacketSink::send_capacity(): on false
// (called from inside the port's send(); the port joins its rails' edges)
// the TUN io source is disabled at once, so packets wait in the kernel's TUN
// queue (and the kernel drops there, counted by the interface) instead of
// being read and dropped here; on true it is enabled again. The io source's
// enabled state is the only record of it here; the port owns the capacity
// state.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cm/manager.hpp"
#include "cm/packet_port.hpp"
#include "ctl/tun_counters.hpp"
#include "event_loop.hpp"
#include "icmp_limit.hpp"
#include "util/address.hpp"
#include "wire/icmp.hpp"
#include "wire/vnet_hdr.hpp"

namespace rcnet::daemon {

// The TUN side's counters: one row each in ctl/tun_counters.hpp.
using ctl::TunCounters;

class TunPath final : public cm::PacketSink {
 public:
  // Most packets read per wakeup before yielding to the other sources (the
  // budget adapts between 1 and this: on_readable()).
  static constexpr int kReadBatch = 64;
  // Passes in a row that read their whole budget before it doubles.
  static constexpr int kGrowAfter = 4;
  // Read buffer: a vnet header and the largest IP packet (the TUN MTU is at
  // most 65520; a GSO super-packet at most wire::kGsoMaxPacket).
  static constexpr std::size_t kBufferSize = wire::kVnetHdrLen + wire::kGsoMaxPacket;

  using PeerOverlays = cm::PeerOverlays;
  // The gateway of the kernel's route to a destination outside the overlay
  // prefix when that route goes through the TUN (FibNextHop::gateway);
  // nullopt: none. Empty: such destinations go to the port as they are.
  using NextHop = std::function<std::optional<IpAddr>(const IpAddr& dst)>;

  // Our place on the overlay. Default (no address): every destination goes
  // to the port's route() as it is, no ICMP error is sent, no source is
  // checked.
  struct Overlay {
    IpPrefix address;  // tun.address: ours, with the overlay prefix length
    // tun.address's IPv6 entry when it has two (address is then the IPv4 one).
    std::optional<IpPrefix> address6 = std::nullopt;
    bool source_check = false;  // tun.source_check
    // Our prefix in `a`'s family, or nullptr.
    const IpPrefix* prefix_for(const IpAddr& a) const {
      if (!address.addr.empty() && address.addr.family == a.family)
        return &address;
      return address6 && address6->addr.family == a.family ? &*address6 : nullptr;
    }
    // `a` is inside one of our prefixes.
    bool contains(const IpAddr& a) const {
      const IpPrefix* p = prefix_for(a);
      return p != nullptr && p->contains(a);
    }
  };

  // `port`: the links (cm/packet_port.hpp): every packet read goes to it,
  // and it delivers here (this path is its upper sink until destroyed).
  // Borrowed: must outlive this object. `vnet_hdr_len`: bytes of
  // virtio_net_hdr in front of every packet read and written
  // (TunDevice::vnet_hdr_len(): 0, or 10 with offload). Frames go to and
  // come from the port whole, header included (cm::ManagerConfig::offload
  // must agree); routing looks past the header.
  TunPath(EventLoop& loop, cm::PacketPort& port, std::size_t vnet_hdr_len, Overlay overlay,
          NextHop next_hop = {});
  TunPath(EventLoop& loop, cm::PacketPort& port, std::size_t vnet_hdr_len = 0)
      : TunPath(loop, port, vnet_hdr_len, Overlay{}) {}
  ~TunPath() override;
  TunPath(const TunPath&) = delete;
  TunPath& operator=(const TunPath&) = delete;

  // Starts reading `fd` (a TUN fd opened IFF_TUN|IFF_NO_PI, with
  // IFF_VNET_HDR when vnet_hdr_len is 10, O_NONBLOCK, or any fd with the same
  // one-packet-per-read semantics). The fd is borrowed and
  // must outlive this object or a detach(). Errors: sd-event.
  Result<void> attach(int fd);
  void detach();
  // Stops reading for good (graceful shutdown); writes still go through.
  void stop_reading();
  // tun.source_check after a reload (call on every reload: it also forgets
  // the peers' overlay addresses, which a new peer table may change).
  void set_source_check(bool on) {
    overlay_.source_check = on;
    peer_overlays_.clear();
  }

  // Whether the TUN was granted USO (TunDevice::uso(); default true: frames
  // are written as they come). Without it a UDP super-packet from a peer
  // (an rcnet from before kCapUso on a 6.2+ kernel sends them to any GSO
  // peer) is cut here and written as datagrams: the TUN would refuse it.
  void set_uso(bool granted) { uso_ = granted; }

  // --- cm::PacketSink --------------------------------------------------------
  void deliver(NodeId peer, std::span<const std::byte> packet) override;
  void send_capacity(bool available) override;

  // One read pass, as the io source runs it; public for tests.
  void on_readable();
  // Reads the next pass may make (the adaptive budget); for tests.
  int read_budget() const { return read_budget_; }

  bool reading() const { return source_.valid() && source_.enabled(); }
  const TunCounters& counters() const { return counters_; }

 private:
  void read_packets();  // one wakeup's reads, inside the send batch
  // The peer (the port's key) for a packet to `dst`; counts a gateway.
  std::optional<Endpoint> route(const IpAddr& dst);
  // The packet's length on the peer's link: the IP packet's, or for a GSO
  // super-packet its largest segment's (wire::plan_segments).
  std::size_t wire_length(std::span<const std::byte> frame) const;
  bool is_gso(std::span<const std::byte> frame) const;  // with a vnet header
  // `frame` is larger than `peer`'s MTU (when known): counted and answered
  // with "fragmentation needed" / "packet too big".
  bool too_big(const Endpoint& peer, std::span<const std::byte> frame);
  // Builds and writes into the TUN the ICMP error about `frame` (vnet
  // header, if any, then the IP packet); false when none may be sent.
  bool send_icmp(wire::IcmpError kind, std::span<const std::byte> frame, std::uint32_t mtu);
  // The source check of deliver(): may `packet` (IP, no vnet header) come
  // from `peer`?
  bool source_allowed(NodeId peer, std::span<const std::byte> packet);
  bool write_frame(std::span<const std::byte> frame);
  // set_uso(false): writes the segments of a UDP super-packet `frame`.
  void write_segments(std::span<const std::byte> frame);
  EventLoop& loop_;
  cm::PacketPort& port_;
  NextHop next_hop_;
  std::size_t vnet_hdr_len_ = 0;
  Overlay overlay_;
  IcmpLimiter icmp_limit_;
  // port_.peer_overlays()'s answers: a node's overlay address stays what it
  // is until the peer table changes (set_source_check()). At most
  // kMaxPeerOverlays, emptied when full.
  static constexpr std::size_t kMaxPeerOverlays = 4096;
  std::unordered_map<NodeId, PeerOverlays> peer_overlays_;
  std::vector<std::byte> icmp_buf_;  // vnet header room + wire::kIcmpErrorMax
  bool uso_ = true;
  std::vector<std::byte> seg_buf_;  // write_segments(): one segment behind its header
  int fd_ = -1;
  EventSource source_;
  bool stopped_ = false;
  std::vector<std::byte> buf_;
  int read_budget_ = 1;  // reads in the next pass, 1..kReadBatch
  int full_passes_ = 0;  // passes in a row that used their whole budget
  TunCounters counters_;
};

}  // namespace rcnet::daemon
