// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/ip_packet.hpp"

#include <vector>
#include "catch2_compat.hpp"

namespace wire_ip_packet_test {
using rcnet::IpAddr;
using rcnet::wire::ip_destination;

namespace {
std::vector<std::byte> ipv4_packet(const IpAddr& src, const IpAddr& dst, std::size_t len = 28) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x45};
  for (int i = 0; i < 4; ++i) {
    p[12 + i] = std::byte{src.bytes[i]};
    p[16 + i] = std::byte{dst.bytes[i]};
  }
  return p;
}
std::vector<std::byte> ipv6_packet(const IpAddr& src, const IpAddr& dst) {
  std::vector<std::byte> p(48);
  p[0] = std::byte{0x60};
  for (int i = 0; i < 16; ++i) {
    p[8 + i] = std::byte{src.bytes[i]};
    p[24 + i] = std::byte{dst.bytes[i]};
  }
  return p;
}
}  // namespace

TEST_CASE("ip_destination reads the IPv4 destination, not the source", "[daemon][ip]") {
  const auto src = *IpAddr::parse("10.100.0.1");
  const auto dst = *IpAddr::parse("10.100.0.7");
  const auto got = ip_destination(ipv4_packet(src, dst));
  REQUIRE(got.has_value());
  CHECK(*got == dst);
  CHECK(got->is_v4());
}

TEST_CASE("ip_destination reads the IPv6 destination", "[daemon][ip]") {
  const auto src = *IpAddr::parse("fd00:100::1");
  const auto dst = *IpAddr::parse("fd00:100::2:3");
  const auto got = ip_destination(ipv6_packet(src, dst));
  REQUIRE(got.has_value());
  CHECK(*got == dst);
}

TEST_CASE("ip_destination refuses what is not a whole IP header", "[daemon][ip]") {
  const auto a = *IpAddr::parse("10.0.0.1");
  auto v4 = ipv4_packet(a, a);
  CHECK_FALSE(ip_destination(std::span(v4).first(19)).has_value());
  CHECK(ip_destination(std::span(v4).first(20)).has_value());
  v4[0] = std::byte{0x44};  // IHL 4: below the minimum header
  CHECK_FALSE(ip_destination(v4).has_value());
  v4[0] = std::byte{0x55};  // version 5
  CHECK_FALSE(ip_destination(v4).has_value());
  auto v6 = ipv6_packet(*IpAddr::parse("::1"), *IpAddr::parse("::2"));
  CHECK_FALSE(ip_destination(std::span(v6).first(39)).has_value());
  CHECK_FALSE(ip_destination({}).has_value());
}

}  // namespace wire_ip_packet_test
