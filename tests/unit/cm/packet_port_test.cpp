// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The packet port (cm/packet_port.hpp): its receive side (every rail's
// packets go up to one sink, capacity edges joined), and OneRailPort over a
// manager on the simulated fabric, used as TunPath uses a port.
#include "catch2_compat.hpp"

#include "../wire/gso_packets.hpp"
#include "cm/one_rail_port.hpp"
#include "fake_port.hpp"
#include "harness.hpp"
#include "wire/vnet_hdr.hpp"

namespace cm_packet_port_test {
using namespace rcnet;
using namespace rcnet::test;

namespace {

// Node i's overlay address 10.100.0.i and back, as the config's prefix rule.
cm::RailMap overlay_map(int self) {
  return {.underlay = [self](const IpAddr& o) -> std::optional<Endpoint> {
            const std::uint32_t v = o.v4_host_order();
            const int j = static_cast<int>(v & 0xff);
            if ((v & 0xffffff00u) != 0x0a640000u || j == 0 || j == 255 || j == self)
              return std::nullopt;
            return Endpoint{node_addr(j), kPort};
          },
          .overlays = [](const IpAddr& u) -> std::optional<cm::PeerOverlays> {
            return cm::PeerOverlays{IpAddr::v4((10u << 24) | (100u << 16) | u.bytes[3]), IpAddr{}};
          }};
}

IpAddr overlay(int i) {
  return IpAddr::v4((10u << 24) | (100u << 16) | static_cast<std::uint32_t>(i));
}

}  // namespace

TEST_CASE("packet port: every rail delivers up, a packet before the upper sink is counted",
          "[cm][port]") {
  FakePort port(2);  // its rail sinks reached as a Manager reaches its sink
  const auto p = packet(7);
  port.rail_sink(1).deliver(2, p);
  CHECK(port.dropped_early() == 1);
  RecordingSink up;
  port.set_upper(&up);
  port.rail_sink(0).deliver(3, p);
  port.rail_sink(1).deliver(4, p);
  REQUIRE(up.packets.size() == 2);
  CHECK(up.packets[0].from == 3);
  CHECK(up.packets[1].from == 4);
  CHECK(up.packets[1].bytes == p);
  CHECK(port.dropped_early() == 1);
}

TEST_CASE("packet port: reading pauses when any rail lacks room, resumes when all have it",
          "[cm][port]") {
  FakePort port(2);  // its rail sinks reached as a Manager reaches its sink
  RecordingSink up;
  port.set_upper(&up);
  port.rail_sink(0).send_capacity(false);
  CHECK(up.capacity_off == 1);
  port.rail_sink(0).send_capacity(false);  // the same edge again: nothing new
  port.rail_sink(1).send_capacity(false);
  CHECK(up.capacity_off == 1);
  port.rail_sink(0).send_capacity(true);
  CHECK(up.capacity_on == 0);  // rail 1 still lacks room
  port.rail_sink(1).send_capacity(true);
  CHECK(up.capacity_on == 1);
  port.rail_sink(1).send_capacity(true);
  CHECK(up.capacity_on == 1);
}

TEST_CASE("one-rail port: a packet routed by overlay address reaches the peer's upper sink",
          "[cm][port]") {
  // With offload, as rcnetd runs by default: frames carry a vnet header,
  // and send buffers are lent (they are larger than any frame).
  Cluster c(sim::Profile::kRxe);
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2, offload_on);
  const auto f1 = frame_of(wire::VnetHdr{}, packet(1));
  const auto f2 = frame_of(wire::VnetHdr{}, packet(2));
  cm::OneRailPort pa(*a.mgr, overlay_map(1));
  cm::OneRailPort pb(*b.mgr, overlay_map(2));
  RecordingSink up_b;
  pb.set_upper(&up_b);

  CHECK_FALSE(pa.route(overlay(1)));  // ourselves
  CHECK_FALSE(pa.route(*IpAddr::parse("192.168.0.2")));
  const auto peer = pa.route(overlay(2));
  REQUIRE(peer);
  CHECK(*peer == b.ep());
  CHECK_FALSE(pa.peer_mtu(*peer));  // no connection yet

  pa.begin_send_batch();
  CHECK(pa.send(*peer, f1) == cm::SendResult::kQueued);  // connects
  pa.end_send_batch();
  c.run(100ms);
  REQUIRE(up_b.packets.size() == 1);
  CHECK(up_b.packets[0].bytes == f1);
  CHECK(b.sink.packets.empty());  // the port took the manager's deliveries
  CHECK(pa.peer_mtu(*peer) == b.mgr->config().mtu);
  // Who sent it, by the id the manager delivers with.
  const auto from = pb.peer_overlays(up_b.packets[0].from);
  REQUIRE(from);
  CHECK((*from)[0] == overlay(1));

  // Zero copy through the port.
  const auto buf = pa.lend_send_buffer();
  REQUIRE(buf.size() > f2.size());
  std::copy(f2.begin(), f2.end(), buf.begin());
  CHECK(pa.send_lent(*peer, f2.size()) == cm::SendResult::kSent);
  c.run(10ms);
  REQUIRE(up_b.packets.size() == 2);
  CHECK(up_b.packets[1].bytes == f2);
  CHECK(pa.snapshot().counters.packets_tx == 2);
}

}  // namespace cm_packet_port_test
