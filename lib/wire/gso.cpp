// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/gso.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "wire/bytes.hpp"
#include "wire/ip_packet.hpp"

namespace rcnet::wire {

namespace {

constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;
constexpr std::size_t kIpv4MinHeader = 20;
constexpr std::size_t kTcpMinHeader = 20;
constexpr std::size_t kUdpHeader = 8;
// TCP flags byte (RFC 9293 3.1, RFC 3168 for CWR).
constexpr std::size_t kTcpFlags = 13;
constexpr std::uint8_t kTcpFin = 0x01;
constexpr std::uint8_t kTcpPsh = 0x08;
constexpr std::uint8_t kTcpCwr = 0x80;
constexpr std::size_t kTcpCsum = 16;
constexpr std::size_t kUdpCsum = 6;

// The pseudo-header's sum (RFC 9293 3.1 for IPv4, RFC 8200 8.1 for IPv6).
std::uint64_t pseudo_header_sum(const GsoPlan& p, std::span<const std::byte> seg,
                                std::size_t l4_len) {
  std::uint64_t sum = 0;
  if (p.ipv6) {
    sum = checksum_add(seg.subspan(8, 32));  // source and destination
    sum += (l4_len >> 16) + (l4_len & 0xffffu);
  } else {
    sum = checksum_add(seg.subspan(12, 8));
    sum += l4_len;
  }
  return sum + p.l4_proto;
}

}  // namespace

std::uint64_t checksum_add(std::span<const std::byte> data, std::uint64_t sum) {
  std::size_t i = 0;
  for (; i + 1 < data.size(); i += 2)
    sum += (std::uint64_t{u8(data, i)} << 8) | u8(data, i + 1);
  if (i < data.size())
    sum += std::uint64_t{u8(data, i)} << 8;
  return sum;
}

std::uint16_t fold_checksum(std::uint64_t sum) {
  while ((sum >> 16) != 0)
    sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffffu);
}

std::size_t GsoPlan::segment_len(std::uint32_t i) const {
  const std::size_t start = std::size_t{i} * mss;
  const std::size_t left = payload_len > start ? payload_len - start : 0;
  return header_len + std::min(left, mss);
}

std::optional<GsoPlan> plan_segments(const VnetHdr& h, std::span<const std::byte> packet) {
  GsoPlan p;
  switch (h.gso_kind()) {
    case kGsoTcpV4:
      p.l4_proto = kProtoTcp;
      break;
    case kGsoTcpV6:
      p.l4_proto = kProtoTcp;
      p.ipv6 = true;
      break;
    case kGsoUdpL4:
      p.l4_proto = kProtoUdp;
      break;
    default:
      return std::nullopt;  // kGsoNone, UFO or unknown
  }
  if (h.gso_size == 0 || packet.empty())
    return std::nullopt;
  const unsigned version = u8(packet, 0) >> 4;
  if (h.gso_kind() == kGsoUdpL4)
    p.ipv6 = version == 6;
  if (version != (p.ipv6 ? 6u : 4u))
    return std::nullopt;

  std::size_t ip_header = 0;
  if (p.ipv6) {
    if (packet.size() < kIpv6Header ||
        std::size_t{be16(packet, 4)} + kIpv6Header != packet.size()) {
      return std::nullopt;
    }
    ip_header = kIpv6Header;
  } else {
    ip_header = std::size_t{u8(packet, 0) & 0x0fu} * 4;
    if (ip_header < kIpv4MinHeader || packet.size() < ip_header ||
        be16(packet, 2) != packet.size() || u8(packet, 9) != p.l4_proto) {
      return std::nullopt;
    }
  }
  // The L4 header: where the kernel said the checksum starts (IPv6
  // extension headers included), else right after the IP header when that
  // says it is the protocol the GSO type names.
  if (h.needs_csum()) {
    p.l4_offset = h.csum_start;
    if (p.l4_offset < ip_header)
      return std::nullopt;
  } else {
    if (p.ipv6 && u8(packet, 6) != p.l4_proto)
      return std::nullopt;
    p.l4_offset = ip_header;
  }
  std::size_t l4_header = kUdpHeader;
  if (p.l4_proto == kProtoTcp) {
    if (packet.size() < p.l4_offset + kTcpMinHeader)
      return std::nullopt;
    l4_header = static_cast<std::size_t>(u8(packet, p.l4_offset + 12) >> 4) * 4;
    if (l4_header < kTcpMinHeader)
      return std::nullopt;
  }
  p.header_len = p.l4_offset + l4_header;
  if (packet.size() < p.header_len)
    return std::nullopt;
  p.payload_len = packet.size() - p.header_len;
  p.mss = h.gso_size;
  p.segments =
      static_cast<std::uint32_t>(std::max<std::size_t>(1, (p.payload_len + p.mss - 1) / p.mss));
  return p;
}

std::size_t build_segment(const GsoPlan& p, std::span<const std::byte> packet, std::uint32_t i,
                          std::span<std::byte> out) {
  const std::size_t len = p.segment_len(i);
  const std::size_t payload = len - p.header_len;
  const std::size_t from = p.header_len + std::size_t{i} * p.mss;
  std::memcpy(out.data(), packet.data(), p.header_len);
  if (payload > 0)
    std::memcpy(out.data() + p.header_len, packet.data() + from, payload);
  const std::span<std::byte> seg = out.first(len);

  // IP header: length, ID, checksum.
  if (p.ipv6) {
    put_be16(seg, 4, static_cast<std::uint16_t>(len - kIpv6Header));
  } else {
    const std::size_t ihl = std::size_t{u8(seg, 0) & 0x0fu} * 4;
    put_be16(seg, 2, static_cast<std::uint16_t>(len));
    put_be16(seg, 4, static_cast<std::uint16_t>(be16(seg, 4) + i));
    put_be16(seg, 10, 0);
    put_be16(seg, 10, fold_checksum(checksum_add(seg.first(ihl))));
  }

  // L4 header and checksum over pseudo-header, header and payload.
  const std::size_t l4_len = len - p.l4_offset;
  const std::span<std::byte> l4 = seg.subspan(p.l4_offset);
  std::size_t csum_at = 0;
  if (p.l4_proto == kProtoTcp) {
    put_be32(l4, 4, static_cast<std::uint32_t>(be32(l4, 4) + std::size_t{i} * p.mss));
    auto flags = u8(l4, kTcpFlags);
    if (i > 0)
      flags = static_cast<std::uint8_t>(flags & ~kTcpCwr);
    if (i + 1 < p.segments)
      flags = static_cast<std::uint8_t>(flags & ~(kTcpFin | kTcpPsh));
    l4[kTcpFlags] = static_cast<std::byte>(flags);
    csum_at = kTcpCsum;
  } else {
    put_be16(l4, 4, static_cast<std::uint16_t>(l4_len));
    csum_at = kUdpCsum;
  }
  put_be16(l4, csum_at, 0);
  std::uint16_t csum = fold_checksum(checksum_add(l4, pseudo_header_sum(p, seg, l4_len)));
  if (csum == 0)
    csum = 0xffff;  // UDP: 0 means "no checksum" (RFC 768); the same value for TCP
  put_be16(l4, csum_at, csum);
  return len;
}

bool complete_checksum(const VnetHdr& h, std::span<std::byte> packet) {
  const std::size_t start = h.csum_start;
  const std::size_t field = start + h.csum_offset;
  if (field + 2 > packet.size())
    return false;
  std::uint16_t csum = fold_checksum(checksum_add(packet.subspan(start)));
  if (csum == 0)
    csum = 0xffff;
  put_be16(packet, field, csum);
  return true;
}

}  // namespace rcnet::wire
