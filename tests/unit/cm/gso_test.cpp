// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Offload on the simulated fabric: GSO frames between two capable peers
// travel whole, header bytes intact; a peer without the capability (an old
// rcnet, or offload = false) gets plain packets of at most its MTU.
#include "catch2_compat.hpp"

#include <algorithm>
#include <vector>

#include "../wire/gso_packets.hpp"
#include "cm/manager.hpp"
#include "harness.hpp"
#include "wire/gso.hpp"
#include "wire/vnet_hdr.hpp"

namespace cm_gso_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

const cm::QpSnapshot& only_qp(const cm::Snapshot& s) {
  REQUIRE(s.qps.size() == 1);
  return s.qps[0];
}

// A small plain IPv4 packet as a frame with a header of no flags.
std::vector<std::byte> plain_frame(std::uint32_t seq, std::size_t size = 100) {
  return frame_of(wire::VnetHdr{}, packet(seq, size));
}

}  // namespace

TEST_CASE("offload: a 64 KiB super-packet crosses whole between capable peers", "[cm][gso]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2, offload_on);
  // mtu 2048 here, yet the receive buffers take a whole frame.
  const auto sp = tcp_super_packet(false, 65535 - 40);
  wire::VnetHdr h = tso_hdr(false, 1448);
  h.gso_type |= wire::kGsoEcn;
  const auto frame = frame_of(h, sp);
  REQUIRE(frame.size() == 10 + 65535);

  CHECK(a.mgr->send(b.ep(), frame) == cm::SendResult::kQueued);
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(b.sink.packets[0].bytes == frame);  // header and every byte as sent
  CHECK(b.sink.packets[0].from == a.mgr->node_id());
  CHECK(a.ctr().gso_sent == 1);
  CHECK(a.ctr().gso_segmented == 0);
  CHECK(b.sim->stats().length_errors == 0);
  CHECK(only_qp(a.mgr->snapshot()).offload);
  CHECK(only_qp(b.mgr->snapshot()).offload);

  // The other way, and a plain packet keeps its (empty) header too.
  CHECK(b.mgr->send(a.ep(), frame) == cm::SendResult::kSent);
  CHECK(b.mgr->send(a.ep(), plain_frame(7)) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(a.sink.packets.size() == 2);
  CHECK(a.sink.packets[0].bytes == frame);
  CHECK(a.sink.packets[1].bytes == plain_frame(7));

  // Limits: a plain packet above the MTU, a super-packet above 64 KiB, a
  // frame without a whole header.
  CHECK(a.mgr->send(b.ep(), plain_frame(8, 2049)) == cm::SendResult::kOversize);
  auto huge = frame;
  huge.resize(10 + wire::kGsoMaxPacket + 1);
  CHECK(a.mgr->send(b.ep(), huge) == cm::SendResult::kOversize);
  CHECK(a.mgr->send(b.ep(), std::vector<std::byte>(9)) == cm::SendResult::kRefused);
  CHECK(a.ctr().drops_gso_to_legacy_peer == 0);
  CHECK(b.ctr().drops_gso_to_legacy_peer == 0);
}

TEST_CASE("offload: a peer without it gets MSS segments, never more than its MTU", "[cm][gso]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& old = c.add(3);  // plain packets only: advertises no capability
  const std::size_t payload = 65535 - 40;
  const auto sp = tcp_super_packet(false, payload);
  const auto frame = frame_of(tso_hdr(false, 1448), sp);

  CHECK(a.mgr->send(old.ep(), frame) == cm::SendResult::kQueued);  // segmented once ESTABLISHED
  c.run(100ms);
  CHECK_FALSE(only_qp(a.mgr->snapshot()).offload);
  CHECK_FALSE(only_qp(old.mgr->snapshot()).offload);
  const std::size_t n = (payload + 1447) / 1448;
  REQUIRE(old.sink.packets.size() == n);
  std::vector<std::byte> joined;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = old.sink.packets[i].bytes;
    INFO("segment " << i);
    CHECK(p.size() <= old.mgr->config().mtu);
    CHECK(at(p, 0) == 0x45);  // an IP packet, no vnet header in front
    CHECK(checksums_ok(p));
    CHECK(be32_at(p, 24) == 1000 + 1448 * i);
    joined.insert(joined.end(), p.begin() + 40, p.end());
  }
  CHECK(std::equal(joined.begin(), joined.end(), sp.begin() + 40, sp.end()));
  CHECK(a.ctr().gso_segmented == 1);
  CHECK(a.ctr().gso_sent == 0);
  CHECK(a.ctr().packets_tx == n);

  // A packet whose checksum the kernel left to the device gets it completed.
  auto partial = tcp_super_packet(false, 500);
  wire::VnetHdr csum = tso_hdr(false, 0);
  csum.gso_type = wire::kGsoNone;
  CHECK(a.mgr->send(old.ep(), frame_of(csum, partial)) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(old.sink.packets.size() == n + 1);
  CHECK(old.sink.packets[n].bytes.size() == partial.size());
  CHECK(checksums_ok(old.sink.packets[n].bytes));
  CHECK_FALSE(checksums_ok(partial));

  // The old peer's plain packets reach a's sink with an empty header.
  CHECK(old.mgr->send(a.ep(), packet(5, 300)) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(a.sink.packets.size() == 1);
  CHECK(a.sink.packets[0].bytes == plain_frame(5, 300));

  // What cannot be cut is dropped and counted, never sent whole.
  wire::VnetHdr ufo = tso_hdr(false, 1448);
  ufo.gso_type = wire::kGsoUdp;
  CHECK(a.mgr->send(old.ep(), frame_of(ufo, sp)) == cm::SendResult::kSent);
  // MSS segments larger than the old peer's MTU (2048): oversize.
  CHECK(a.mgr->send(old.ep(), frame_of(tso_hdr(false, 4000), sp)) == cm::SendResult::kSent);
  c.run(10ms);
  CHECK(old.sink.packets.size() == n + 1);
  CHECK(a.ctr().drops_gso_to_legacy_peer == 1);
  CHECK(a.ctr().drops_oversize == 1);
  CHECK(old.ctr().recv_errors == 0);
  CHECK(old.sim->stats().length_errors == 0);
}

TEST_CASE("offload: segments wait for send slots all together, nothing lost", "[cm][gso]") {
  Cluster c(Profile::kRxe);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.offload = true;
    m.send_slots = 60;  // one super-packet (46 segments) at a time
  });
  auto& old = c.add(3);
  const auto frame = frame_of(tso_hdr(false, 1448), tcp_super_packet(false, 65535 - 40));
  a.mgr->send(old.ep(), plain_frame(0));
  c.run(100ms);
  REQUIRE(old.sink.packets.size() == 1);
  for (int i = 0; i < 4; ++i)
    a.mgr->send(old.ep(), frame);
  c.run(100ms);
  CHECK(old.sink.packets.size() == 1 + 4 * 46);
  CHECK(a.ctr().gso_segmented == 4);
  CHECK(a.ctr().drops_queue_full == 0);
  CHECK(a.ctr().drops_gso_to_legacy_peer == 0);
  CHECK(a.sink.capacity_off >= 1);
  CHECK(a.sink.capacity_on >= 1);
}

TEST_CASE("offload: without SRQ the per-QP receive buffers hold a frame too", "[cm][gso]") {
  Cluster c(Profile::kMlx);
  auto no_srq = [](cm::ManagerConfig& m) {
    m.offload = true;
    m.use_srq = false;
  };
  auto& a = c.add(1, no_srq);
  auto& b = c.add(2, no_srq);
  auto& old = c.add(3, [](cm::ManagerConfig& m) { m.use_srq = false; });
  const auto frame = frame_of(tso_hdr(true, 1400), tcp_super_packet(true, 20000));
  a.mgr->send(b.ep(), frame);
  old.mgr->send(b.ep(), packet(9, 500));
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 2);
  const auto from_a = std::find_if(b.sink.packets.begin(), b.sink.packets.end(),
                                   [&](auto& p) { return p.from == a.mgr->node_id(); });
  const auto from_old = std::find_if(b.sink.packets.begin(), b.sink.packets.end(),
                                     [&](auto& p) { return p.from == old.mgr->node_id(); });
  REQUIRE(from_a != b.sink.packets.end());
  REQUIRE(from_old != b.sink.packets.end());
  CHECK(from_a->bytes == frame);
  CHECK(from_old->bytes == plain_frame(9, 500));
  CHECK(b.sim->stats().length_errors == 0);
  // Headroom, vnet header and 64 KiB, plus room for a frame header
  // (wire/frame_header.hpp).
  CHECK(b.mgr->snapshot().srq.buffer_size == 20 + 65536 + 4);
}

// Found by the manager fuzzer with offload on: the active side learns the
// peer's capability from the REP, in its ESTABLISHED event, but its QP is
// ready to receive before that event is read, and the passive side sends as
// soon as the RTU arrives. A frame that completed on the shared CQ first was
// taken for a plain packet (the connection's gso not yet set) and went to
// the TUN with a second, empty header in front: a garbled packet. The
// immediate now says which it is (kImmFrame).
TEST_CASE("offload: a frame that arrives before the active side's ESTABLISHED keeps its framing",
          "[cm][gso][fuzz]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2, offload_on);
  auto& old = c.add(3);
  c.fabric.faults().cm(sim::FaultAction::kDelay, rdma::CmEventType::kEstablished, 2, a.addr, 50ms);
  const auto frame = frame_of(tso_hdr(false, 1448), tcp_super_packet(false, 20000));
  a.mgr->send(b.ep(), plain_frame(1));
  a.mgr->send(old.ep(), plain_frame(2));
  // Until b's connection is established (the RTU arrived); a's event waits.
  for (int i = 0;
       i < 40 && (b.ctr().connects_established == 0 || old.ctr().connects_established == 0); ++i)
    c.run(1ms);
  REQUIRE(b.ctr().connects_established == 1);
  REQUIRE(old.ctr().connects_established == 1);
  REQUIRE(a.ctr().connects_established == 0);
  CHECK(b.mgr->send(a.ep(), frame) == cm::SendResult::kSent);
  CHECK(b.mgr->send(a.ep(), plain_frame(3)) == cm::SendResult::kSent);
  CHECK(old.mgr->send(a.ep(), packet(4, 300)) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(a.ctr().connects_established == 0);  // the frames came first
  REQUIRE(a.sink.packets.size() == 3);
  std::vector<std::vector<std::byte>> got;
  for (auto& p : a.sink.packets)
    got.push_back(p.bytes);
  CHECK(std::count(got.begin(), got.end(), frame) == 1);
  CHECK(std::count(got.begin(), got.end(), plain_frame(3)) == 1);
  CHECK(std::count(got.begin(), got.end(), plain_frame(4, 300)) == 1);
  c.run(100ms);
  CHECK(a.ctr().connects_established == 2);
  CHECK(a.ctr().recv_errors == 0);
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(b.sink.packets[0].bytes == plain_frame(1));
  REQUIRE(old.sink.packets.size() == 1);
  CHECK(old.sink.packets[0].bytes == packet(2));
}

TEST_CASE("offload: a UDP super-packet (USO) goes whole only to a peer whose TUN takes it",
          "[cm][gso][uso]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  const bool v6 = GENERATE(false, true);
  auto uso_on = [](cm::ManagerConfig& m) {
    m.offload = true;
    m.uso = true;
  };
  auto& a = c.add(1, uso_on);
  auto& capable = c.add(2, uso_on);     // 6.2+: its TUN granted USO
  auto& no_uso = c.add(3, offload_on);  // kCapGso without kCapUso: Linux 6.1
  auto& legacy = c.add(4);              // no offload at all
  const std::size_t payload = 8 * 1400 + 100;
  const auto sp = udp_super_packet(v6, payload);
  const auto frame = frame_of(uso_super_hdr(v6, 1400), sp);
  const std::size_t l4 = v6 ? 40 : 20;

  a.mgr->send(capable.ep(), frame);
  a.mgr->send(no_uso.ep(), frame);
  a.mgr->send(legacy.ep(), frame);
  c.run(100ms);

  // Whole: one frame, every byte as read from the TUN.
  REQUIRE(capable.sink.packets.size() == 1);
  CHECK(capable.sink.packets[0].bytes == frame);
  CHECK(a.ctr().gso_sent == 1);

  // Cut: 9 datagrams each; to the kCapGso peer each behind a zeroed vnet
  // header (the connection carries frames), to the legacy peer plain.
  const auto check_segments = [&](const std::vector<RecordingSink::Packet>& got, bool framed) {
    REQUIRE(got.size() == 9);
    std::vector<std::byte> joined;
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("segment " << i << (framed ? " framed" : " plain"));
      std::vector<std::byte> p = got[i].bytes;
      if (framed) {
        REQUIRE(p.size() > wire::kVnetHdrLen);
        CHECK(std::all_of(p.begin(), p.begin() + wire::kVnetHdrLen,
                          [](std::byte x) { return x == std::byte{0}; }));
        p.erase(p.begin(), p.begin() + wire::kVnetHdrLen);
      }
      CHECK(p.size() == l4 + 8 + (i < 8 ? 1400 : 100));
      CHECK(be16_at(p, l4 + 4) == p.size() - l4);  // UDP length
      CHECK(checksums_ok(p));
      joined.insert(joined.end(), p.begin() + static_cast<std::ptrdiff_t>(l4 + 8), p.end());
    }
    CHECK(std::equal(joined.begin(), joined.end(), sp.begin() + static_cast<std::ptrdiff_t>(l4 + 8),
                     sp.end()));
  };
  check_segments(no_uso.sink.packets, true);
  check_segments(legacy.sink.packets, false);
  CHECK(a.ctr().uso_segmented == 1);
  CHECK(a.ctr().gso_segmented == 1);
  CHECK(a.ctr().drops_gso_to_legacy_peer == 0);

  // TCP super-packets still go whole to the peer without USO.
  const auto tso = frame_of(tso_hdr(v6, 1448), tcp_super_packet(v6, 10000));
  CHECK(a.mgr->send(no_uso.ep(), tso) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(no_uso.sink.packets.size() == 10);
  CHECK(no_uso.sink.packets[9].bytes == tso);
  CHECK(a.ctr().gso_sent == 2);
}

}  // namespace cm_gso_test
