// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/icmp.hpp"

#include <algorithm>
#include <cstring>

#include "wire/gso.hpp"
#include "wire/ip_packet.hpp"

namespace rcnet::wire {

namespace {

constexpr std::size_t kIpv4Header = 20;  // ours: no options
constexpr std::size_t kIcmpHeader = 8;   // type, code, checksum, 4 bytes
constexpr std::uint8_t kProtoIcmp = 1;
constexpr std::uint8_t kProtoIcmpv6 = 58;

std::uint8_t u8(std::span<const std::byte> p, std::size_t i) {
  return std::to_integer<std::uint8_t>(p[i]);
}
std::uint16_t be16(std::span<const std::byte> p, std::size_t i) {
  return static_cast<std::uint16_t>((u8(p, i) << 8) | u8(p, i + 1));
}
void put16(std::span<std::byte> p, std::size_t i, std::uint16_t v) {
  p[i] = std::byte(v >> 8);
  p[i + 1] = std::byte(v & 0xff);
}
void put32(std::span<std::byte> p, std::size_t i, std::uint32_t v) {
  put16(p, i, static_cast<std::uint16_t>(v >> 16));
  put16(p, i + 2, static_cast<std::uint16_t>(v & 0xffff));
}

// RFC 1122 section 3.2.1.3 / RFC 1812 section 4.3.2.7: a source that names
// no single host gets no error.
bool v4_unicast_source(const std::uint8_t* a) {
  // Not "this network" (0/8), loopback, multicast, class E or broadcast.
  return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

// ICMPv4 types that are errors (RFC 792): destination unreachable, source
// quench, redirect, time exceeded, parameter problem.
bool v4_icmp_error_type(std::uint8_t type) {
  return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

std::size_t build_v4(IcmpError kind, std::span<const std::byte> packet, const IpAddr& from,
                     std::uint32_t mtu, std::span<std::byte> out) {
  const std::size_t ihl = std::size_t{u8(packet, 0) & 0x0fu} * 4;
  if (ihl < kIpv4Header || packet.size() < ihl)
    return 0;
  const std::uint16_t frag = be16(packet, 6);
  if ((frag & 0x1fff) != 0)
    return 0;  // not the first fragment
  const auto* src = reinterpret_cast<const std::uint8_t*>(packet.data() + 12);
  const auto* dst = reinterpret_cast<const std::uint8_t*>(packet.data() + 16);
  if (!v4_unicast_source(src))
    return 0;
  if (dst[0] >= 224 && dst[0] < 240)
    return 0;  // multicast
  if (dst[0] == 255 && dst[1] == 255 && dst[2] == 255 && dst[3] == 255)
    return 0;  // limited broadcast
  if (u8(packet, 9) == kProtoIcmp) {
    // An error about an error could loop; a header cut short is not judged
    // an error (the type byte is missing), and is quoted as it is.
    if (packet.size() > ihl && v4_icmp_error_type(u8(packet, ihl)))
      return 0;
  }
  const std::size_t total = std::max<std::size_t>(be16(packet, 2), ihl);
  const std::size_t quote =
      std::min({packet.size(), total, kIcmp4ErrorMax - kIpv4Header - kIcmpHeader});
  const std::size_t len = kIpv4Header + kIcmpHeader + quote;
  std::fill_n(out.begin(), kIpv4Header + kIcmpHeader, std::byte{0});
  // IP header (RFC 791): TOS "internetwork control", as the kernel's errors.
  out[0] = std::byte{0x45};
  out[1] = std::byte{0xc0};
  put16(out, 2, static_cast<std::uint16_t>(len));
  out[8] = std::byte{kIcmpErrorTtl};
  out[9] = std::byte{kProtoIcmp};
  std::memcpy(out.data() + 12, from.bytes.data(), 4);
  std::memcpy(out.data() + 16, src, 4);
  put16(out, 10, fold_checksum(checksum_add(out.first(kIpv4Header))));
  // ICMP header: type 3, code 1 or 4; next-hop MTU in the low half of the
  // second word (RFC 1191 section 4), 0 for host unreachable.
  const std::span<std::byte> icmp = out.subspan(kIpv4Header, kIcmpHeader + quote);
  icmp[0] = std::byte{3};
  icmp[1] = std::byte{kind == IcmpError::kTooBig ? std::uint8_t{4} : std::uint8_t{1}};
  if (kind == IcmpError::kTooBig)
    put16(icmp, 6, static_cast<std::uint16_t>(std::min<std::uint32_t>(mtu, 0xffff)));
  std::memcpy(icmp.data() + kIcmpHeader, packet.data(), quote);
  put16(icmp, 2, fold_checksum(checksum_add(icmp)));
  return len;
}

// The upper-layer protocol of an IPv6 packet past the extension headers
// RFC 8200 section 4 lists (hop-by-hop, routing, fragment, destination
// options), and its offset; nullopt when a header is cut short.
std::optional<std::pair<std::uint8_t, std::size_t>> v6_upper_layer(
    std::span<const std::byte> packet) {
  std::uint8_t next = u8(packet, 6);
  std::size_t off = kIpv6Header;
  for (int hops = 0; hops < 8; ++hops) {
    if (next != 0 && next != 43 && next != 44 && next != 60)
      return std::pair{next, off};
    if (packet.size() < off + 8)
      return std::nullopt;
    const std::uint8_t following = u8(packet, off);
    off += next == 44 ? 8 : (std::size_t{u8(packet, off + 1)} + 1) * 8;
    next = following;
  }
  return std::nullopt;
}

std::size_t build_v6(IcmpError kind, std::span<const std::byte> packet, const IpAddr& from,
                     std::uint32_t mtu, std::span<std::byte> out) {
  const auto* src = reinterpret_cast<const std::uint8_t*>(packet.data() + 8);
  const auto* dst = reinterpret_cast<const std::uint8_t*>(packet.data() + 24);
  static constexpr std::uint8_t kZero[16] = {};
  static constexpr std::uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (std::memcmp(src, kZero, 16) == 0 || std::memcmp(src, kLoopback, 16) == 0 || src[0] == 0xff)
    return 0;
  if (dst[0] == 0xff && kind != IcmpError::kTooBig)
    return 0;  // RFC 4443 section 2.4 (e.3): only packet too big for multicast
  // RFC 4443 section 2.4 (e.1): no error about an error (types 0..127).
  if (const auto upper = v6_upper_layer(packet); upper && upper->first == kProtoIcmpv6) {
    if (packet.size() > upper->second && u8(packet, upper->second) < 128)
      return 0;
  }
  const std::size_t total = kIpv6Header + be16(packet, 4);
  const std::size_t quote =
      std::min({packet.size(), total, kIcmp6ErrorMax - kIpv6Header - kIcmpHeader});
  const std::size_t icmp_len = kIcmpHeader + quote;
  std::fill_n(out.begin(), kIpv6Header + kIcmpHeader, std::byte{0});
  out[0] = std::byte{0x60};
  put16(out, 4, static_cast<std::uint16_t>(icmp_len));
  out[6] = std::byte{kProtoIcmpv6};
  out[7] = std::byte{kIcmpErrorTtl};
  std::memcpy(out.data() + 8, from.bytes.data(), 16);
  std::memcpy(out.data() + 24, src, 16);
  const std::span<std::byte> icmp = out.subspan(kIpv6Header, icmp_len);
  // Type 1 code 3 (address unreachable) or type 2 with the MTU (RFC 4443
  // sections 3.1 and 3.2).
  if (kind == IcmpError::kTooBig) {
    icmp[0] = std::byte{2};
    put32(icmp, 4, mtu);
  } else {
    icmp[0] = std::byte{1};
    icmp[1] = std::byte{3};
  }
  std::memcpy(icmp.data() + kIcmpHeader, packet.data(), quote);
  // Checksum over the pseudo-header (RFC 8200 section 8.1): addresses,
  // upper-layer length, next header.
  std::uint64_t sum = checksum_add(out.subspan(8, 32));
  sum += icmp_len + kProtoIcmpv6;
  put16(icmp, 2, fold_checksum(checksum_add(icmp, sum)));
  return kIpv6Header + icmp_len;
}

}  // namespace

std::size_t build_icmp_error(IcmpError kind, std::span<const std::byte> packet, const IpAddr& from,
                             std::uint32_t mtu, std::span<std::byte> out) {
  if (packet.empty() || out.size() < kIcmpErrorMax)
    return 0;
  const unsigned version = u8(packet, 0) >> 4;
  if (version == 4 && from.is_v4() && packet.size() >= kIpv4Header)
    return build_v4(kind, packet, from, mtu, out);
  if (version == 6 && from.is_v6() && packet.size() >= kIpv6Header)
    return build_v6(kind, packet, from, mtu, out);
  return 0;
}

}  // namespace rcnet::wire
