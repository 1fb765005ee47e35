// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Software GSO and checksum completion, for a peer that did not negotiate
// offload (wire/private_data.hpp kCapGso). Pure functions, no I/O.
//
// Why it exists: TUN offloads (TUNSETOFFLOAD) belong to the device, not to a
// destination. Once rc0 has TSO on, the kernel hands rcnetd TCP super-packets
// of up to 64 KiB (and, with TUN_F_CSUM, packets whose L4 checksum holds only
// the pseudo-header sum) whichever peer they are routed to. A peer running an
// rcnet without offload (or with transport.offload = false) takes plain IP
// packets of at most its MTU with complete checksums, so for that peer this
// node does here what the kernel would have done for a device without the
// features (net/core/dev.c validate_xmit_skb: skb_gso_segment,
// skb_checksum_help): cut the super-packet into MSS-sized segments with their
// own IP and TCP/UDP headers and checksums. Peers that negotiated offload get
// the super-packet untouched and no checksum is computed anywhere in between.
//
// Supported: TCP over IPv4 and IPv6 (kGsoTcpV4/kGsoTcpV6, with or without
// kGsoEcn) and UDP segmentation (kGsoUdpL4). Anything else is refused
// (plan_segments() returns nullopt) and the caller drops and counts it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "wire/vnet_hdr.hpp"

namespace rcnet::wire {

// How one super-packet splits. Every segment is header_len bytes of headers
// (the super-packet's, with lengths, IDs, sequence numbers and checksums
// rewritten) followed by at most mss bytes of payload.
struct GsoPlan {
  bool ipv6 = false;
  std::uint8_t l4_proto = 0;    // 6 TCP, 17 UDP
  std::size_t l4_offset = 0;    // bytes from the IP header to the TCP/UDP header
  std::size_t header_len = 0;   // l4_offset + TCP/UDP header length
  std::size_t payload_len = 0;  // bytes after header_len in the super-packet
  std::size_t mss = 0;          // gso_size
  std::uint32_t segments = 0;   // >= 1
  // Length of segment `i` (< segments) in bytes.
  std::size_t segment_len(std::uint32_t i) const;
  // The longest segment (the first), in bytes.
  std::size_t max_segment_len() const { return segment_len(0); }
};

// Checks `packet` (the IP packet after the vnet header `h`, h.is_gso()) and
// says how it splits. nullopt when the GSO type is not supported, the IP or
// L4 header is malformed or disagrees with h, the IP length field disagrees
// with packet.size(), or gso_size is 0.
std::optional<GsoPlan> plan_segments(const VnetHdr& h, std::span<const std::byte> packet);

// Writes segment `i` of `packet` per `plan` into `out` (at least
// plan.segment_len(i) bytes) with complete IP and L4 checksums; returns its
// length in bytes. IPv4 IDs count up from the super-packet's, as the kernel's
// inet_gso_segment does; TCP keeps CWR on the first segment only and FIN and
// PSH on the last only (net/ipv4/tcp_offload.c tcp_gso_segment).
std::size_t build_segment(const GsoPlan& plan, std::span<const std::byte> packet, std::uint32_t i,
                          std::span<std::byte> out);

// A packet with VIRTIO_NET_HDR_F_NEEDS_CSUM (h.needs_csum()): the checksum
// field at csum_start + csum_offset holds the pseudo-header sum; completes it
// in place over csum_start..end, as skb_checksum_help does (0 becomes
// 0xffff). false, with `packet` untouched, when the field lies outside it.
bool complete_checksum(const VnetHdr& h, std::span<std::byte> packet);

// The RFC 1071 one's-complement sum of `data` added to `sum` (not folded,
// not inverted): chain calls (every span but the last of even length), then
// fold_checksum().
std::uint64_t checksum_add(std::span<const std::byte> data, std::uint64_t sum = 0);
// ~(sum folded to 16 bits): the value for a checksum field.
std::uint16_t fold_checksum(std::uint64_t sum);

}  // namespace rcnet::wire
