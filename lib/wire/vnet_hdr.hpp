// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The virtio_net_hdr that a TUN device opened with IFF_VNET_HDR puts in front
// of every packet (include/uapi/linux/virtio_net.h, struct virtio_net_hdr;
// drivers/net/tun.c tun_put_user / tun_get_user). Pure parse/build, no I/O.
//
// rcnetd sets TUNSETVNETHDRSZ to kVnetHdrLen and TUNSETVNETLE, so the 16-bit
// fields are little-endian on every host; the same 10 bytes travel in the RC
// SEND to a peer that negotiated offload (wire/private_data.hpp, kCapGso),
// so the wire form is this one too.
//
// Layout (10 bytes, little-endian):
//   off len field
//     0   1 flags        (kNeedsCsum, kDataValid)
//     1   1 gso_type     (kGsoNone, kGsoTcpV4, kGsoUdp, kGsoTcpV6, kGsoUdpL4; | kGsoEcn)
//     2   2 hdr_len      (bytes of headers; tun sets skb_headlen(), a hint only)
//     4   2 gso_size     (bytes of payload per segment, the MSS)
//     6   2 csum_start   (offset of the L4 header from the IP header)
//     8   2 csum_offset  (offset of the checksum field from csum_start)
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace rcnet::wire {

inline constexpr std::size_t kVnetHdrLen = 10;
// The largest packet a TUN hands over with offloads on: the kernel's default
// gso_max_size (GSO_MAX_SIZE, include/linux/netdevice.h), IP header included.
inline constexpr std::size_t kGsoMaxPacket = 65536;

inline constexpr std::uint8_t kNeedsCsum = 0x01;  // VIRTIO_NET_HDR_F_NEEDS_CSUM
inline constexpr std::uint8_t kDataValid = 0x02;  // VIRTIO_NET_HDR_F_DATA_VALID

inline constexpr std::uint8_t kGsoNone = 0;    // VIRTIO_NET_HDR_GSO_NONE
inline constexpr std::uint8_t kGsoTcpV4 = 1;   // TSO over IPv4
inline constexpr std::uint8_t kGsoUdp = 3;     // UFO (IP fragmentation): never enabled here
inline constexpr std::uint8_t kGsoTcpV6 = 4;   // TSO over IPv6
inline constexpr std::uint8_t kGsoUdpL4 = 5;   // USO: UDP segmentation (kernel >= 6.2)
inline constexpr std::uint8_t kGsoEcn = 0x80;  // flag: TCP with ECN (CWR on the first segment)

struct VnetHdr {
  std::uint8_t flags = 0;
  std::uint8_t gso_type = kGsoNone;
  std::uint16_t hdr_len = 0;
  std::uint16_t gso_size = 0;
  std::uint16_t csum_start = 0;
  std::uint16_t csum_offset = 0;

  bool needs_csum() const { return (flags & kNeedsCsum) != 0; }
  bool is_gso() const { return gso_type != kGsoNone; }
  // gso_type without the ECN flag.
  std::uint8_t gso_kind() const { return static_cast<std::uint8_t>(gso_type & ~kGsoEcn); }
  bool operator==(const VnetHdr&) const = default;
};

// The header at the start of `frame`; nullopt when `frame` is shorter than
// kVnetHdrLen. Field values are not judged here (the receiving kernel's
// virtio_net_hdr_to_skb does that; gso.hpp judges what it segments).
std::optional<VnetHdr> parse_vnet_hdr(std::span<const std::byte> frame);
// The 10 bytes of `h`.
std::array<std::byte, kVnetHdrLen> build_vnet_hdr(const VnetHdr& h);
// Writes `h` into out[0, kVnetHdrLen); `out` must hold that many bytes.
void put_vnet_hdr(const VnetHdr& h, std::span<std::byte> out);

}  // namespace rcnet::wire
