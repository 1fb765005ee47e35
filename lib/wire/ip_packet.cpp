// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/ip_packet.hpp"

#include <cstring>

namespace rcnet::wire {

namespace {
constexpr std::size_t kIpv4HeaderMin = 20;
constexpr std::size_t kIpv4SrcOffset = 12;
constexpr std::size_t kIpv4DstOffset = 16;
constexpr std::size_t kIpv6SrcOffset = 8;
constexpr std::size_t kIpv6DstOffset = 24;

std::optional<IpAddr> ip_address_at(std::span<const std::byte> packet, std::size_t v4_offset,
                                    std::size_t v6_offset) {
  if (packet.empty())
    return std::nullopt;
  const auto first = std::to_integer<unsigned>(packet[0]);
  IpAddr dst;
  switch (first >> 4) {
    case 4:
      if (packet.size() < kIpv4HeaderMin || (first & 0x0f) < 5)
        return std::nullopt;
      dst.family = AF_INET;
      std::memcpy(dst.bytes.data(), packet.data() + v4_offset, 4);
      return dst;
    case 6:
      if (packet.size() < kIpv6Header)
        return std::nullopt;
      dst.family = AF_INET6;
      std::memcpy(dst.bytes.data(), packet.data() + v6_offset, 16);
      return dst;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<IpAddr> ip_destination(std::span<const std::byte> packet) {
  return ip_address_at(packet, kIpv4DstOffset, kIpv6DstOffset);
}

std::optional<IpAddr> ip_source(std::span<const std::byte> packet) {
  return ip_address_at(packet, kIpv4SrcOffset, kIpv6SrcOffset);
}

}  // namespace rcnet::wire
