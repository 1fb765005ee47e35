// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Test packets for the GSO paths: super-packets as a TUN with TSO hands
// them over (TCP checksum field holding only the pseudo-header sum,
// NEEDS_CSUM pointing at it), and an independent checksum verifier (a plain
// RFC 1071 loop, not lib/wire's), so the tests can catch lib/wire's errors.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/vnet_hdr.hpp"

namespace rcnet::test {

inline std::uint8_t at(const std::vector<std::byte>& p, std::size_t i) {
  return std::to_integer<std::uint8_t>(p[i]);
}
inline std::uint16_t be16_at(const std::vector<std::byte>& p, std::size_t i) {
  return static_cast<std::uint16_t>((at(p, i) << 8) | at(p, i + 1));
}
inline std::uint32_t be32_at(const std::vector<std::byte>& p, std::size_t i) {
  return (std::uint32_t{be16_at(p, i)} << 16) | be16_at(p, i + 2);
}
inline void set16(std::vector<std::byte>& p, std::size_t i, std::uint16_t v) {
  p[i] = static_cast<std::byte>(v >> 8);
  p[i + 1] = static_cast<std::byte>(v & 0xff);
}

// 16-bit one's-complement sum of p[from, to), plus `extra`, folded.
inline std::uint16_t ref_sum(const std::vector<std::byte>& p, std::size_t from, std::size_t to,
                             std::uint32_t extra = 0) {
  std::uint64_t s = extra;
  for (std::size_t i = from; i < to; i += 2)
    s += (std::uint32_t{at(p, i)} << 8) | (i + 1 < to ? at(p, i + 1) : 0u);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint16_t>(s);
}

inline bool is_v6(const std::vector<std::byte>& p) {
  return (at(p, 0) >> 4) == 6;
}

// The pseudo-header sum of an IP packet for L4 at `l4` (no extension headers).
inline std::uint32_t ref_pseudo(const std::vector<std::byte>& p, std::size_t l4,
                                std::uint8_t proto) {
  const std::size_t l4_len = p.size() - l4;
  if (is_v6(p))
    return ref_sum(p, 8, 40) + static_cast<std::uint32_t>(l4_len) + proto;
  return ref_sum(p, 12, 20) + static_cast<std::uint32_t>(l4_len) + proto;
}

// Both checksums of a plain packet verify (the IPv4 header's, the L4's).
inline bool checksums_ok(const std::vector<std::byte>& p) {
  std::size_t l4 = 40;
  std::uint8_t proto = 0;
  if (is_v6(p)) {
    proto = at(p, 6);
  } else {
    l4 = std::size_t{at(p, 0) & 0x0fu} * 4;
    proto = at(p, 9);
    if (ref_sum(p, 0, l4) != 0xffff)
      return false;
  }
  return ref_sum(p, l4, p.size(), ref_pseudo(p, l4, proto)) == 0xffff;
}

// A TCP super-packet of `payload` bytes (payload byte i = i * 7 + 3), IPv4
// or IPv6, as the kernel hands it over with TSO: headers of the whole, the
// TCP checksum field holding the pseudo-header sum (not inverted), PSH|FIN
// set (to check they land on the last segment only) and CWR (first only).
inline std::vector<std::byte> tcp_super_packet(bool v6, std::size_t payload,
                                               std::uint32_t seq = 1000) {
  const std::size_t ip = v6 ? 40 : 20;
  const std::size_t l4 = ip;
  std::vector<std::byte> p(ip + 20 + payload);
  if (v6) {
    p[0] = std::byte{0x60};
    set16(p, 4, static_cast<std::uint16_t>(p.size() - 40));
    p[6] = std::byte{6};
    p[7] = std::byte{64};
    p[8] = std::byte{0xfd};  // fd00::1 -> fd00::2
    p[23] = std::byte{1};
    p[24] = std::byte{0xfd};
    p[39] = std::byte{2};
  } else {
    p[0] = std::byte{0x45};
    set16(p, 2, static_cast<std::uint16_t>(p.size()));
    set16(p, 4, 0x1234);     // IP ID
    p[6] = std::byte{0x40};  // DF
    p[8] = std::byte{64};
    p[9] = std::byte{6};
    const std::uint8_t addrs[8] = {10, 100, 0, 1, 10, 100, 0, 2};
    for (int i = 0; i < 8; ++i)
      p[12 + i] = std::byte{addrs[i]};
    set16(p, 10, static_cast<std::uint16_t>(~ref_sum(p, 0, 20)));
  }
  set16(p, l4, 40000);
  set16(p, l4 + 2, 5201);
  set16(p, l4 + 4, static_cast<std::uint16_t>(seq >> 16));
  set16(p, l4 + 6, static_cast<std::uint16_t>(seq & 0xffff));
  p[l4 + 12] = std::byte{0x50};                       // data offset 5
  p[l4 + 13] = std::byte{0x80 | 0x10 | 0x08 | 0x01};  // CWR ACK PSH FIN
  set16(p, l4 + 14, 512);
  for (std::size_t i = 0; i < payload; ++i)
    p[l4 + 20 + i] = static_cast<std::byte>((i * 7 + 3) & 0xff);
  // CHECKSUM_PARTIAL: the field holds the folded pseudo-header sum.
  std::uint64_t ps = ref_pseudo(p, l4, 6);
  while (ps >> 16)
    ps = (ps & 0xffff) + (ps >> 16);
  set16(p, l4 + 16, static_cast<std::uint16_t>(ps));
  return p;
}

inline wire::VnetHdr tso_hdr(bool v6, std::uint16_t mss) {
  wire::VnetHdr h;
  h.flags = wire::kNeedsCsum;
  h.gso_type = v6 ? wire::kGsoTcpV6 : wire::kGsoTcpV4;
  h.hdr_len = static_cast<std::uint16_t>(v6 ? 60 : 40);
  h.gso_size = mss;
  h.csum_start = static_cast<std::uint16_t>(v6 ? 40 : 20);
  h.csum_offset = 16;
  return h;
}

// A UDP super-packet of `payload` bytes (payload byte i = i * 5 + 1) from
// port 40000 to 5201, IPv4 or IPv6, as a TUN with USO hands it over: the UDP
// checksum field holding the pseudo-header sum (CHECKSUM_PARTIAL).
inline std::vector<std::byte> udp_super_packet(bool v6, std::size_t payload) {
  auto p = tcp_super_packet(v6, 0);  // the IP header; the TCP part rewritten
  const std::size_t l4 = v6 ? 40 : 20;
  p.resize(l4 + 8 + payload);
  if (v6) {
    p[6] = std::byte{17};
    set16(p, 4, static_cast<std::uint16_t>(p.size() - 40));
  } else {
    p[9] = std::byte{17};
    set16(p, 2, static_cast<std::uint16_t>(p.size()));
    set16(p, 10, 0);
    set16(p, 10, static_cast<std::uint16_t>(~ref_sum(p, 0, 20)));
  }
  set16(p, l4, 40000);
  set16(p, l4 + 2, 5201);
  set16(p, l4 + 4, static_cast<std::uint16_t>(8 + payload));
  for (std::size_t i = 0; i < payload; ++i)
    p[l4 + 8 + i] = static_cast<std::byte>((i * 5 + 1) & 0xff);
  std::uint64_t ps = ref_pseudo(p, l4, 17);
  while (ps >> 16)
    ps = (ps & 0xffff) + (ps >> 16);
  set16(p, l4 + 6, static_cast<std::uint16_t>(ps));
  return p;
}

inline wire::VnetHdr uso_super_hdr(bool v6, std::uint16_t gso_size) {
  wire::VnetHdr h;
  h.flags = wire::kNeedsCsum;
  h.gso_type = wire::kGsoUdpL4;
  h.hdr_len = static_cast<std::uint16_t>(v6 ? 48 : 28);
  h.gso_size = gso_size;
  h.csum_start = static_cast<std::uint16_t>(v6 ? 40 : 20);
  h.csum_offset = 6;
  return h;
}

// vnet header + packet, as one frame.
inline std::vector<std::byte> frame_of(const wire::VnetHdr& h, const std::vector<std::byte>& p) {
  const auto hb = wire::build_vnet_hdr(h);
  std::vector<std::byte> f(hb.begin(), hb.end());
  f.insert(f.end(), p.begin(), p.end());
  return f;
}

}  // namespace rcnet::test
