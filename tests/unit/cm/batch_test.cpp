// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Doorbell batching on the simulated fabric: the data SENDs of one batch go
// to each peer as one chained ibv_post_send; a queue flushed on ESTABLISHED
// and the segments of one super-packet go as one chain too; anything that
// touches a QP inside a batch posts the chain first; a chain the HCA
// refuses gives every slot back.
#include "catch2_compat.hpp"

#include <cstring>
#include <vector>

#include "../wire/gso_packets.hpp"
#include "cm/manager.hpp"
#include "harness.hpp"
#include "wire/vnet_hdr.hpp"

namespace cm_batch_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

// Connected: one packet each way delivered, every send slot back.
void connect(Cluster& c, Node& a, Node& b) {
  a.mgr->send(b.ep(), packet(1000));
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 1);
  c.run(2s);  // the reaper's reclaim SEND returns the unsignaled tail's slots
  b.sink.packets.clear();
}

void slots_all_free(Node& n) {
  const auto s = n.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

}  // namespace

TEST_CASE("batch: the packets of one batch go to each peer with one doorbell", "[cm][batch]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2);
  auto& d = c.add(3);
  connect(c, a, b);
  connect(c, a, d);
  const auto calls0 = a.sim->stats().post_send_calls;
  const auto bells0 = a.ctr().send_doorbells;
  const auto tx0 = a.ctr().packets_tx;

  a.mgr->begin_send_batch();
  for (std::uint32_t i = 0; i < 8; ++i)
    CHECK(a.mgr->send((i % 2 == 0 ? b : d).ep(), packet(i)) == cm::SendResult::kSent);
  // Accounted as posted (slots taken, counted), but on no SQ yet.
  CHECK(a.ctr().packets_tx == tx0 + 8);
  CHECK(a.sim->stats().post_send_calls == calls0);
  a.mgr->end_send_batch();
  CHECK(a.sim->stats().post_send_calls == calls0 + 2);  // one chain per peer
  CHECK(a.ctr().send_doorbells == bells0 + 2);

  c.run(50ms);
  REQUIRE(b.sink.packets.size() == 4);
  REQUIRE(d.sink.packets.size() == 4);
  for (std::uint32_t i = 0; i < 4; ++i) {
    CHECK(b.sink.packets[i].bytes == packet(2 * i));  // in order
    CHECK(d.sink.packets[i].bytes == packet(2 * i + 1));
  }
  c.run(2s);
  slots_all_free(a);
  CHECK(a.ctr().send_errors == 0);

  // Without a batch: one doorbell per packet, as before.
  const auto bells1 = a.ctr().send_doorbells;
  for (std::uint32_t i = 0; i < 3; ++i)
    a.mgr->send(b.ep(), packet(100 + i));
  CHECK(a.ctr().send_doorbells == bells1 + 3);
}

TEST_CASE("batch: a queue flushed on ESTABLISHED and a cut super-packet are one chain each",
          "[cm][batch][gso]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& old = c.add(2);  // no offload: super-packets are cut for it
  for (std::uint32_t i = 0; i < 6; ++i)
    CHECK(a.mgr->send(old.ep(), frame_of(wire::VnetHdr{}, packet(i))) != cm::SendResult::kRefused);
  c.run(100ms);
  REQUIRE(old.sink.packets.size() == 6);
  CHECK(a.ctr().send_doorbells == 1);  // the six queued packets, one chain
  c.run(2s);

  const auto bells = a.ctr().send_doorbells;
  const auto frame = frame_of(tso_hdr(false, 1000), tcp_super_packet(false, 10000));
  CHECK(a.mgr->send(old.ep(), frame) == cm::SendResult::kSent);
  CHECK(a.ctr().gso_segmented == 1);
  CHECK(a.ctr().send_doorbells == bells + 1);  // 10 segments, one doorbell
  c.run(50ms);
  CHECK(old.sink.packets.size() == 6 + 10);
}

TEST_CASE("batch: a teardown inside a batch posts the chain first, nothing leaks", "[cm][batch]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kEhca, Profile::kRxe));
  auto& a = c.add(1);
  auto& b = c.add(2);
  connect(c, a, b);
  a.mgr->begin_send_batch();
  for (std::uint32_t i = 0; i < 4; ++i)
    a.mgr->send(b.ep(), packet(i));
  const auto calls = a.sim->stats().post_send_calls;
  REQUIRE(a.mgr->disconnect_peer(b.mgr->node_id(), "test"));
  // The chain went before the DREQ moved the QP to Error.
  CHECK(a.sim->stats().post_send_calls == calls + 1);
  CHECK(a.mgr->send(b.ep(), packet(9)) != cm::SendResult::kSent);  // no QP in service
  a.mgr->end_send_batch();
  CHECK(a.sim->stats().post_send_calls == calls + 1);  // nothing left to post
  c.run(10s);
  slots_all_free(a);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sim->live_qps() == 0);
  CHECK(a.sim->misuse_log().empty());
}

TEST_CASE("batch: a chain the HCA refuses gives its slots back and is counted", "[cm][batch]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2);
  connect(c, a, b);
  const auto s0 = a.mgr->snapshot();
  REQUIRE(s0.send_slots_free == s0.send_slots_total);
  const auto tx0 = a.ctr().packets_tx;
  const auto bytes0 = a.ctr().bytes_tx;
  a.mgr->begin_send_batch();
  for (std::uint32_t i = 0; i < 5; ++i)
    a.mgr->send(b.ep(), packet(i));
  CHECK(a.mgr->snapshot().send_slots_free == s0.send_slots_total - 5);
  // The device goes away under the batch: ibv_post_send fails on the first WR.
  a.sim->crash();
  a.mgr->end_send_batch();
  CHECK(a.ctr().send_errors == 5);
  CHECK(a.ctr().packets_tx == tx0);
  CHECK(a.ctr().bytes_tx == bytes0);
  CHECK(a.mgr->snapshot().send_slots_free == s0.send_slots_total);
}

}  // namespace cm_batch_test
