// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// IP addresses (IPv4/IPv6) and endpoints, as plain values: the underlay
// address a peer's rdma_cm listens on, and overlay (TUN) addresses.
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rcnet {

struct IpAddr {
  // AF_INET (bytes[0..3] used, rest zero) or AF_INET6; AF_UNSPEC = none.
  std::uint8_t family = AF_UNSPEC;
  std::array<std::uint8_t, 16> bytes{};

  static IpAddr v4(std::uint32_t host_order);
  static std::optional<IpAddr> parse(std::string_view text);  // "10.0.0.1", "fe80::1"
  static std::optional<IpAddr> from_sockaddr(const sockaddr* sa);
  std::string to_string() const;
  bool is_v4() const { return family == AF_INET; }
  bool is_v6() const { return family == AF_INET6; }
  bool empty() const { return family == AF_UNSPEC; }
  std::uint32_t v4_host_order() const;  // only for is_v4()
  std::size_t size() const { return is_v4() ? 4 : is_v6() ? 16 : 0; }
  auto operator<=>(const IpAddr&) const = default;
};

// A prefix such as 10.99.0.0/24.
struct IpPrefix {
  IpAddr addr;
  std::uint8_t length = 0;
  static std::optional<IpPrefix> parse(std::string_view text);
  bool contains(const IpAddr& a) const;
  std::string to_string() const;
  auto operator<=>(const IpPrefix&) const = default;
};

struct Endpoint {
  IpAddr addr;
  std::uint16_t port = 0;  // host order
  // Fills a sockaddr_in/sockaddr_in6; returns its length.
  socklen_t to_sockaddr(sockaddr_storage& out) const;
  std::string to_string() const;  // "10.0.0.1:7471", "[fe80::1]:7471"
  auto operator<=>(const Endpoint&) const = default;
};

// A node's identity on the fabric. Derived from its underlay address so that
// a node knows a peer's id before it has ever talked to it (the simultaneous
// open rule compares ids): IPv4 → the address as a host-order number; IPv6 →
// a 64-bit FNV-1a hash of its 16 bytes with the top bit set (so it never
// equals an IPv4-derived id). 0 is never a valid id.
using NodeId = std::uint64_t;
NodeId node_id_for(const IpAddr& underlay);

}  // namespace rcnet

template <>
struct std::hash<rcnet::IpAddr> {
  std::size_t operator()(const rcnet::IpAddr& a) const noexcept;
};
