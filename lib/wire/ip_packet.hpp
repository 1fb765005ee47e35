// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What the TUN data path reads from a packet: its IP destination and source
// (RFC 791 section 3.1: IPv4 header, source at offset 12, destination at 16;
// RFC 8200 section 3: IPv6 header, source at offset 8, destination at 24).
// No I/O.
#include <cstddef>
#include <optional>
#include <span>

#include "util/address.hpp"

namespace rcnet::wire {

// The fixed IPv6 header's size (RFC 8200 section 3); extension headers
// follow it.
inline constexpr std::size_t kIpv6Header = 40;

// The destination address of an IP packet as read from a TUN device opened
// with IFF_NO_PI (the packet starts at the IP header). nullopt when the
// packet is shorter than its fixed header, the version nibble is neither 4 nor
// 6, or an IPv4 IHL is below 5.
std::optional<IpAddr> ip_destination(std::span<const std::byte> packet);
// The source address, with the same rules.
std::optional<IpAddr> ip_source(std::span<const std::byte> packet);

}  // namespace rcnet::wire
