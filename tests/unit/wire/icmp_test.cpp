// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The ICMP errors of the TUN data path: checksums verified here with a sum
// of our own (not wire::checksum_add), the quote's length against RFC 1812
// and RFC 4443, and the packets no error may answer.
#include "wire/icmp.hpp"

#include <cstring>
#include <vector>
#include "catch2_compat.hpp"

#include "wire/ip_packet.hpp"

namespace wire_icmp_test {
using rcnet::IpAddr;
using namespace rcnet::wire;

namespace {

const IpAddr kOurs4 = *IpAddr::parse("10.100.0.1");
const IpAddr kSender4 = *IpAddr::parse("10.100.0.1");
const IpAddr kRemote4 = *IpAddr::parse("192.168.5.9");
const IpAddr kOurs6 = *IpAddr::parse("fd00:100::1");
const IpAddr kSender6 = *IpAddr::parse("fd00:100::5");
const IpAddr kRemote6 = *IpAddr::parse("fd00:200::9");

unsigned b(const std::vector<std::byte>& p, std::size_t i) {
  return std::to_integer<unsigned>(p[i]);
}

// RFC 1071, written out independently: 16-bit big-endian words added with
// end-around carry; a region whose checksum is right sums to 0xffff.
std::uint32_t ones_sum(const std::byte* p, std::size_t n, std::uint32_t sum = 0) {
  for (std::size_t i = 0; i < n; i += 2) {
    const unsigned hi = std::to_integer<unsigned>(p[i]);
    const unsigned lo = i + 1 < n ? std::to_integer<unsigned>(p[i + 1]) : 0;
    sum += (hi << 8) | lo;
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return sum;
}

std::vector<std::byte> v4_packet(const IpAddr& src, const IpAddr& dst, std::size_t len,
                                 std::uint8_t proto = 17) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x45};
  p[2] = std::byte(len >> 8);
  p[3] = std::byte(len & 0xff);
  p[6] = std::byte{0x40};  // DF
  p[8] = std::byte{64};
  p[9] = std::byte{proto};
  std::memcpy(p.data() + 12, src.bytes.data(), 4);
  std::memcpy(p.data() + 16, dst.bytes.data(), 4);
  for (std::size_t i = 20; i < len; ++i)
    p[i] = std::byte(i * 7 + 3);
  return p;
}

std::vector<std::byte> v6_packet(const IpAddr& src, const IpAddr& dst, std::size_t len,
                                 std::uint8_t next = 17) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x60};
  p[4] = std::byte((len - 40) >> 8);
  p[5] = std::byte((len - 40) & 0xff);
  p[6] = std::byte{next};
  p[7] = std::byte{64};
  std::memcpy(p.data() + 8, src.bytes.data(), 16);
  std::memcpy(p.data() + 24, dst.bytes.data(), 16);
  for (std::size_t i = 40; i < len; ++i)
    p[i] = std::byte(i * 5 + 1);
  return p;
}

std::vector<std::byte> build(IcmpError kind, const std::vector<std::byte>& pkt, const IpAddr& from,
                             std::uint32_t mtu = 0) {
  std::vector<std::byte> out(kIcmpErrorMax);
  out.resize(build_icmp_error(kind, pkt, from, mtu, out));
  return out;
}

void check_v4(const std::vector<std::byte>& e, const std::vector<std::byte>& orig) {
  REQUIRE(e.size() >= 28);
  CHECK(b(e, 0) == 0x45);
  CHECK(((b(e, 2) << 8) | b(e, 3)) == e.size());
  CHECK(b(e, 9) == 1);                                      // ICMP
  CHECK(ones_sum(e.data(), 20) == 0xffff);                  // IP header checksum
  CHECK(ones_sum(e.data() + 20, e.size() - 20) == 0xffff);  // ICMP checksum
  CHECK(*ip_source(e) == kOurs4);
  CHECK(*ip_destination(e) == *ip_source(orig));
  // The quote is the original from its first byte.
  CHECK(std::memcmp(e.data() + 28, orig.data(), e.size() - 28) == 0);
}

void check_v6(const std::vector<std::byte>& e, const std::vector<std::byte>& orig) {
  REQUIRE(e.size() >= 48);
  CHECK(b(e, 0) >> 4 == 6);
  CHECK(((b(e, 4) << 8) | b(e, 5)) == e.size() - 40);
  CHECK(b(e, 6) == 58);
  // Pseudo-header (RFC 8200 section 8.1): addresses, length, next header.
  std::uint32_t sum = ones_sum(e.data() + 8, 32);
  const std::size_t len = e.size() - 40;
  sum += static_cast<std::uint32_t>(len >> 16) + static_cast<std::uint32_t>(len & 0xffff) + 58;
  sum = (sum & 0xffff) + (sum >> 16);
  CHECK(ones_sum(e.data() + 40, len, sum) == 0xffff);
  CHECK(*ip_source(e) == kOurs6);
  CHECK(*ip_destination(e) == *ip_source(orig));
  CHECK(std::memcmp(e.data() + 48, orig.data(), e.size() - 48) == 0);
}

}  // namespace

TEST_CASE("icmp: IPv4 host unreachable quotes a small packet whole", "[wire][icmp]") {
  const auto orig = v4_packet(kSender4, kRemote4, 101);  // odd length: the sum's last byte
  const auto e = build(IcmpError::kUnreachable, orig, kOurs4);
  REQUIRE(e.size() == 20 + 8 + 101);
  check_v4(e, orig);
  CHECK(b(e, 20) == 3);
  CHECK(b(e, 21) == 1);
  CHECK(b(e, 26) == 0);
  CHECK(b(e, 27) == 0);
}

TEST_CASE("icmp: IPv4 fragmentation needed carries the MTU and stops at 576 bytes",
          "[wire][icmp]") {
  const auto orig = v4_packet(kSender4, kRemote4, 1500);
  const auto e = build(IcmpError::kTooBig, orig, kOurs4, 1400);
  REQUIRE(e.size() == kIcmp4ErrorMax);
  check_v4(e, orig);
  CHECK(b(e, 20) == 3);
  CHECK(b(e, 21) == 4);
  CHECK(((b(e, 26) << 8) | b(e, 27)) == 1400);
}

TEST_CASE("icmp: the quote stops at the IP total length, not at trailing bytes", "[wire][icmp]") {
  auto orig = v4_packet(kSender4, kRemote4, 60);
  orig.resize(90);  // 30 bytes past the datagram (padding a link left)
  const auto e = build(IcmpError::kUnreachable, orig, kOurs4);
  CHECK(e.size() == 28 + 60);
}

TEST_CASE("icmp: IPv6 packet too big carries the MTU and stops at 1280 bytes", "[wire][icmp]") {
  const auto orig = v6_packet(kSender6, kRemote6, 2000);
  const auto e = build(IcmpError::kTooBig, orig, kOurs6, 1500);
  REQUIRE(e.size() == kIcmp6ErrorMax);
  check_v6(e, orig);
  CHECK(b(e, 40) == 2);
  CHECK(b(e, 41) == 0);
  CHECK(((b(e, 44) << 24) | (b(e, 45) << 16) | (b(e, 46) << 8) | b(e, 47)) == 1500);
}

TEST_CASE("icmp: IPv6 address unreachable quotes a small packet whole", "[wire][icmp]") {
  const auto orig = v6_packet(kSender6, kRemote6, 77);
  const auto e = build(IcmpError::kUnreachable, orig, kOurs6);
  REQUIRE(e.size() == 40 + 8 + 77);
  check_v6(e, orig);
  CHECK(b(e, 40) == 1);
  CHECK(b(e, 41) == 3);
}

TEST_CASE("icmp: no error about an error, a later fragment, multicast or a non-host source",
          "[wire][icmp]") {
  // An ICMP echo request is answered; a destination unreachable is not.
  auto echo = v4_packet(kSender4, kRemote4, 84, 1);
  echo[20] = std::byte{8};
  CHECK(!build(IcmpError::kUnreachable, echo, kOurs4).empty());
  auto err = echo;
  err[20] = std::byte{3};
  CHECK(build(IcmpError::kUnreachable, err, kOurs4).empty());
  CHECK(build(IcmpError::kTooBig, err, kOurs4).empty());

  auto frag = v4_packet(kSender4, kRemote4, 100);
  frag[7] = std::byte{0x10};  // offset 16 * 8
  CHECK(build(IcmpError::kUnreachable, frag, kOurs4).empty());

  CHECK(build(IcmpError::kUnreachable, v4_packet(kSender4, *IpAddr::parse("224.0.0.5"), 60), kOurs4)
            .empty());
  CHECK(build(IcmpError::kUnreachable, v4_packet(kSender4, *IpAddr::parse("255.255.255.255"), 60),
              kOurs4)
            .empty());
  CHECK(build(IcmpError::kUnreachable, v4_packet(*IpAddr::parse("0.0.0.0"), kRemote4, 60), kOurs4)
            .empty());
  CHECK(build(IcmpError::kUnreachable, v4_packet(*IpAddr::parse("127.0.0.1"), kRemote4, 60), kOurs4)
            .empty());

  // IPv6: an ICMPv6 error (type < 128), also behind a destination options
  // header, is not answered; an echo request (128) is.
  auto echo6 = v6_packet(kSender6, kRemote6, 64, 58);
  echo6[40] = std::byte{128};
  CHECK(!build(IcmpError::kUnreachable, echo6, kOurs6).empty());
  auto err6 = echo6;
  err6[40] = std::byte{1};
  CHECK(build(IcmpError::kUnreachable, err6, kOurs6).empty());
  auto opts6 = v6_packet(kSender6, kRemote6, 72, 60);
  opts6[40] = std::byte{58};  // next header after the 8-byte options header
  opts6[41] = std::byte{0};
  opts6[48] = std::byte{2};  // packet too big
  CHECK(build(IcmpError::kUnreachable, opts6, kOurs6).empty());

  // Multicast: packet too big is allowed (RFC 4443 2.4 (e.3)), unreachable not.
  const auto mcast = v6_packet(kSender6, *IpAddr::parse("ff02::1"), 1400);
  CHECK(build(IcmpError::kUnreachable, mcast, kOurs6).empty());
  CHECK(!build(IcmpError::kTooBig, mcast, kOurs6, 1280).empty());
  CHECK(build(IcmpError::kUnreachable, v6_packet(*IpAddr::parse("::"), kRemote6, 60), kOurs6)
            .empty());

  // From the other family, or too short to be a header: nothing.
  CHECK(build(IcmpError::kUnreachable, v4_packet(kSender4, kRemote4, 60), kOurs6).empty());
  CHECK(
      build(IcmpError::kUnreachable, std::vector<std::byte>(12, std::byte{0x45}), kOurs4).empty());
}

}  // namespace wire_icmp_test
