// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ICMP errors the TUN data path sends back to a sender, as a router (and
// the kernel's IPoIB-CM, drivers/infiniband/ulp/ipoib/ipoib_cm.c) would:
// destination unreachable for a destination no peer owns, and
// "fragmentation needed" (IPv4, RFC 792, RFC 1191) / "packet too big"
// (IPv6, RFC 4443 section 3.2) for a packet larger than the peer's MTU. The
// packets are built whole here (IP header, ICMP header, quote, checksums),
// to be written into the TUN device, which hands them to the local stack.
// No I/O, no allocation.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "util/address.hpp"

namespace rcnet::wire {

// Largest ICMPv4 error, IP header included: RFC 1812 section 4.3.2.3 (as
// much of the original datagram as fits in 576 bytes).
inline constexpr std::size_t kIcmp4ErrorMax = 576;
// Largest ICMPv6 error, IPv6 header included: RFC 4443 section 2.4 (c) (as
// much of the invoking packet as fits in the minimum IPv6 MTU).
inline constexpr std::size_t kIcmp6ErrorMax = 1280;
// Bytes `out` must hold for any build_icmp_error().
inline constexpr std::size_t kIcmpErrorMax = kIcmp6ErrorMax;
// Hop limit / TTL of the errors built here (the kernel's default TTL).
inline constexpr std::uint8_t kIcmpErrorTtl = 64;

enum class IcmpError : std::uint8_t {
  // IPv4 type 3 code 1 (host unreachable); IPv6 type 1 code 3 (address
  // unreachable): what the kernel sends when a neighbour never answers.
  kUnreachable,
  // IPv4 type 3 code 4 (fragmentation needed, next-hop MTU in bytes 6..7,
  // RFC 1191); IPv6 type 2 (packet too big, MTU in bytes 4..7).
  kTooBig,
};

// Builds into `out` the error of kind `kind` about `packet` (an IP packet
// starting at its header, as read from the TUN), from `from` (our overlay
// address, of the packet's family) to the packet's source; `mtu` (bytes) is
// the MTU written into a kTooBig error, unused otherwise. Returns the
// error's length, or 0 when none may be sent: `packet` is not a whole IP
// header or `from` is of the other family; the packet is itself an ICMP
// error (RFC 1122 section 3.2.2, RFC 4443 section 2.4 (e)); it is an IPv4
// fragment other than the first; its destination is multicast or limited
// broadcast (for IPv6 unless kTooBig, which RFC 4443 allows); its source is
// not a unicast host (unspecified, loopback, multicast, broadcast, IPv4
// class E). The quote is the packet from its IP header on, up to its IP
// total length and as much as fits the limit above. `out` needs at least
// kIcmpErrorMax bytes (0 otherwise).
std::size_t build_icmp_error(IcmpError kind, std::span<const std::byte> packet, const IpAddr& from,
                             std::uint32_t mtu, std::span<std::byte> out);

}  // namespace rcnet::wire
