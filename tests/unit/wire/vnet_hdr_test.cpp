// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The vnet header (wire/vnet_hdr.hpp) and software GSO (wire/gso.hpp),
// checked against an independent checksum (gso_packets.hpp).
#include "catch2_compat.hpp"

#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "gso_packets.hpp"
#include "wire/gso.hpp"
#include "wire/vnet_hdr.hpp"

namespace wire_vnet_hdr_test {
using namespace rcnet;
using namespace rcnet::wire;
using rcnet::test::at;
using rcnet::test::be16_at;
using rcnet::test::be32_at;

namespace {

// Cuts `packet` per `h` into segments with build_segment().
std::vector<std::vector<std::byte>> segments_of(const VnetHdr& h,
                                                const std::vector<std::byte>& packet) {
  const auto plan = plan_segments(h, packet);
  REQUIRE(plan.has_value());
  std::vector<std::vector<std::byte>> out;
  for (std::uint32_t i = 0; i < plan->segments; ++i) {
    std::vector<std::byte> seg(plan->segment_len(i) + 64, std::byte{0xEE});
    const std::size_t n = build_segment(*plan, packet, i, seg);
    REQUIRE(n == plan->segment_len(i));
    seg.resize(n);
    out.push_back(std::move(seg));
  }
  return out;
}

}  // namespace

TEST_CASE("vnet header: 10 little-endian bytes at the documented offsets", "[wire][gso]") {
  VnetHdr h;
  h.flags = kNeedsCsum;
  h.gso_type = kGsoTcpV4 | kGsoEcn;
  h.hdr_len = 0x0102;
  h.gso_size = 0x05A8;  // 1448
  h.csum_start = 0x0014;
  h.csum_offset = 0x0010;
  const auto b = build_vnet_hdr(h);
  REQUIRE(b.size() == 10);
  const std::uint8_t want[10] = {0x01, 0x81, 0x02, 0x01, 0xA8, 0x05, 0x14, 0x00, 0x10, 0x00};
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("byte " << i);
    CHECK(std::to_integer<std::uint8_t>(b[i]) == want[i]);
  }
  const auto back = parse_vnet_hdr(b);
  REQUIRE(back.has_value());
  CHECK(*back == h);
  CHECK(back->needs_csum());
  CHECK(back->is_gso());
  CHECK(back->gso_kind() == kGsoTcpV4);

  CHECK_FALSE(parse_vnet_hdr(std::span(b).first(9)).has_value());
  const VnetHdr none = *parse_vnet_hdr(build_vnet_hdr(VnetHdr{}));
  CHECK_FALSE(none.is_gso());
  CHECK_FALSE(none.needs_csum());
}

TEST_CASE("software GSO: a 64 KiB TCP/IPv4 super-packet becomes MSS segments", "[wire][gso]") {
  const std::size_t payload = 65535 - 40;
  const auto sp = test::tcp_super_packet(false, payload);
  const VnetHdr h = test::tso_hdr(false, 1448);
  const auto segs = segments_of(h, sp);
  REQUIRE(segs.size() == (payload + 1447) / 1448);  // 46

  std::vector<std::byte> joined;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const auto& s = segs[i];
    INFO("segment " << i);
    const bool last = i + 1 == segs.size();
    CHECK(s.size() == (last ? 40 + payload - 1448 * i : 40 + 1448));
    CHECK(be16_at(s, 2) == s.size());                                // IPv4 total length
    CHECK(be16_at(s, 4) == static_cast<std::uint16_t>(0x1234 + i));  // IP ID counts up
    CHECK(be32_at(s, 24) == 1000 + 1448 * i);                        // TCP sequence number
    const std::uint8_t flags = at(s, 33);
    CHECK(((flags & 0x80) != 0) == (i == 0));  // CWR first only
    CHECK(((flags & 0x09) != 0) == last);      // PSH, FIN last only
    CHECK((flags & 0x10) != 0);                // ACK everywhere
    CHECK(test::checksums_ok(s));
    joined.insert(joined.end(), s.begin() + 40, s.end());
  }
  CHECK(std::equal(joined.begin(), joined.end(), sp.begin() + 40, sp.end()));
}

TEST_CASE("software GSO: TCP/IPv6 and a payload of one segment", "[wire][gso]") {
  const auto sp = test::tcp_super_packet(true, 3000);
  const auto segs = segments_of(test::tso_hdr(true, 1400), sp);
  REQUIRE(segs.size() == 3);
  for (std::size_t i = 0; i < segs.size(); ++i) {
    INFO("segment " << i);
    CHECK(be16_at(segs[i], 4) == segs[i].size() - 40);  // IPv6 payload length
    CHECK(be32_at(segs[i], 44) == 1000 + 1400 * i);
    CHECK(test::checksums_ok(segs[i]));
  }
  CHECK(segs[2].size() == 60 + 200);

  // Less than one MSS of payload: one segment, its checksum completed.
  const auto small = test::tcp_super_packet(true, 100);
  const auto one = segments_of(test::tso_hdr(true, 1400), small);
  REQUIRE(one.size() == 1);
  CHECK(one[0].size() == small.size());
  CHECK(test::checksums_ok(one[0]));
}

TEST_CASE("software GSO: UDP segmentation (USO) gives each segment its UDP header", "[wire][gso]") {
  // An IPv4/UDP packet of 3000 payload bytes, NEEDS_CSUM at the UDP header.
  auto p = test::tcp_super_packet(false, 3000 + 12);  // IPv4 header reused
  p[9] = std::byte{17};
  p.resize(20 + 8 + 3000);
  test::set16(p, 2, static_cast<std::uint16_t>(p.size()));
  test::set16(p, 10, 0);
  test::set16(p, 10, static_cast<std::uint16_t>(~test::ref_sum(p, 0, 20)));
  test::set16(p, 24, static_cast<std::uint16_t>(p.size() - 20));
  test::set16(p, 26, 0);
  VnetHdr h;
  h.flags = kNeedsCsum;
  h.gso_type = kGsoUdpL4;
  h.gso_size = 1200;
  h.csum_start = 20;
  h.csum_offset = 6;
  const auto segs = segments_of(h, p);
  REQUIRE(segs.size() == 3);
  for (const auto& s : segs) {
    CHECK(be16_at(s, 24) == s.size() - 20);  // UDP length
    CHECK(be16_at(s, 26) != 0);              // a checksum is present
    CHECK(test::checksums_ok(s));
  }
  CHECK(segs[2].size() == 28 + 600);
}

namespace {

std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// A UDP super-packet as a TUN with USO hands it over: 10 payload bytes
// ("abcdefghij") from port 40000 to 5201, the UDP checksum field holding the
// pseudo-header sum (CHECKSUM_PARTIAL), cut at gso_size 4 into 4 + 4 + 2.
VnetHdr uso_hdr(std::size_t l4) {
  VnetHdr h;
  h.flags = kNeedsCsum;
  h.gso_type = kGsoUdpL4;
  h.hdr_len = static_cast<std::uint16_t>(l4 + 8);
  h.gso_size = 4;
  h.csum_start = static_cast<std::uint16_t>(l4);
  h.csum_offset = 6;
  return h;
}

}  // namespace

TEST_CASE("software GSO: UDP/IPv4 segments, exact bytes", "[wire][gso][uso]") {
  // 10.100.0.1 -> 10.100.0.2, ID 0x1c46, DF. Expected bytes computed apart
  // from lib/wire (RFC 768/791 by hand): each segment has its own IP total
  // length, the next IP ID and header checksum, UDP length and a full UDP
  // checksum.
  const auto super = from_hex(
      "450000261c464000401109b70a6400010a640002"
      "9c401451001214ee"
      "6162636465666768696a");
  const auto segs = segments_of(uso_hdr(20), super);
  REQUIRE(segs.size() == 3);
  CHECK(segs[0] == from_hex("450000201c464000401109bd0a6400010a640002"
                            "9c401451000c75b3"
                            "61626364"));
  CHECK(segs[1] == from_hex("450000201c474000401109bc0a6400010a640002"
                            "9c401451000c6dab"
                            "65666768"));
  CHECK(segs[2] == from_hex("4500001e1c484000401109bd0a6400010a640002"
                            "9c401451000ad113"
                            "696a"));
  for (const auto& s : segs)
    CHECK(test::checksums_ok(s));
}

TEST_CASE("software GSO: UDP/IPv6 segments, exact bytes", "[wire][gso][uso]") {
  // fd00::1 -> fd00::2, hop limit 64; the IPv6 payload length and the UDP
  // length and checksum are per segment (RFC 8200 8.1 pseudo-header).
  const auto super = from_hex(
      "6000000000121140fd000000000000000000000000000001fd000000000000000000000000000002"
      "9c4014510012fa27"
      "6162636465666768696a");
  const auto segs = segments_of(uso_hdr(40), super);
  REQUIRE(segs.size() == 3);
  CHECK(segs[0] == from_hex("60000000000c1140fd000000000000000000000000000001"
                            "fd000000000000000000000000000002"
                            "9c401451000c9079"
                            "61626364"));
  CHECK(segs[1] == from_hex("60000000000c1140fd000000000000000000000000000001"
                            "fd000000000000000000000000000002"
                            "9c401451000c8871"
                            "65666768"));
  CHECK(segs[2] == from_hex("60000000000a1140fd000000000000000000000000000001"
                            "fd000000000000000000000000000002"
                            "9c401451000aebd9"
                            "696a"));
  for (const auto& s : segs)
    CHECK(test::checksums_ok(s));
}

TEST_CASE("software GSO refuses what it cannot cut", "[wire][gso]") {
  const auto sp = test::tcp_super_packet(false, 5000);
  VnetHdr h = test::tso_hdr(false, 1448);
  CHECK(plan_segments(h, sp).has_value());

  VnetHdr ufo = h;
  ufo.gso_type = kGsoUdp;  // UFO: IP fragmentation, never enabled
  CHECK_FALSE(plan_segments(ufo, sp).has_value());
  VnetHdr v6 = h;
  v6.gso_type = kGsoTcpV6;  // the type disagrees with the IP version
  CHECK_FALSE(plan_segments(v6, sp).has_value());
  VnetHdr zero = h;
  zero.gso_size = 0;
  CHECK_FALSE(plan_segments(zero, sp).has_value());
  VnetHdr start = h;
  start.csum_start = 10;  // inside the IP header
  CHECK_FALSE(plan_segments(start, sp).has_value());

  auto truncated = sp;
  truncated.resize(sp.size() - 1);  // IPv4 total length no longer matches
  CHECK_FALSE(plan_segments(h, truncated).has_value());
  auto not_tcp = sp;
  not_tcp[9] = std::byte{17};
  CHECK_FALSE(plan_segments(h, not_tcp).has_value());
}

TEST_CASE("checksum completion: NEEDS_CSUM filled in as skb_checksum_help does", "[wire][gso]") {
  auto p = test::tcp_super_packet(false, 999);  // odd length on purpose
  CHECK_FALSE(test::checksums_ok(p));           // only the pseudo-header sum so far
  const VnetHdr h = test::tso_hdr(false, 0);
  REQUIRE(complete_checksum(h, p));
  CHECK(test::checksums_ok(p));

  VnetHdr outside = h;
  outside.csum_offset = static_cast<std::uint16_t>(p.size());
  const auto before = p;
  CHECK_FALSE(complete_checksum(outside, p));
  CHECK(p == before);
}

TEST_CASE("RFC 1071 sum: known vector", "[wire][gso]") {
  // RFC 1071 section 3's example bytes: sum 0xddf2, checksum ~0xddf2.
  const std::vector<std::byte> b = {std::byte{0x00}, std::byte{0x01}, std::byte{0xf2},
                                    std::byte{0x03}, std::byte{0xf4}, std::byte{0xf5},
                                    std::byte{0xf6}, std::byte{0xf7}};
  CHECK(fold_checksum(checksum_add(b)) == static_cast<std::uint16_t>(~0xddf2));
}

}  // namespace wire_vnet_hdr_test
