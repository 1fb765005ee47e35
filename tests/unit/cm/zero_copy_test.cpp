// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Zero-copy send on the simulated fabric: a packet read into a lent send
// buffer is posted from it when it can go out at once, whole; in every other
// case it takes send()'s path from a copy, and the buffer always comes back.
#include "catch2_compat.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "../wire/gso_packets.hpp"
#include "cm/manager.hpp"
#include "harness.hpp"
#include "wire/vnet_hdr.hpp"

namespace cm_zero_copy_test {
using namespace rcnet;
using namespace rcnet::test;
using sim::Profile;

namespace {

// What TunPath does: the frame read straight into the lent buffer.
cm::SendResult send_via_lent(cm::Manager& m, const Endpoint& to,
                             const std::vector<std::byte>& frame) {
  const auto buf = m.lend_send_buffer();
  REQUIRE(buf.size() > frame.size());
  std::memcpy(buf.data(), frame.data(), frame.size());
  return m.send_lent(to, frame.size());
}

}  // namespace

TEST_CASE("zero copy: a lent buffer goes out from where it was read", "[cm][zerocopy]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2, offload_on);
  const auto first = frame_of(wire::VnetHdr{}, packet(1));
  CHECK(a.mgr->send(b.ep(), first) == cm::SendResult::kQueued);  // connects
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 1);

  const auto small = frame_of(wire::VnetHdr{}, packet(2));
  const auto super = frame_of(tso_hdr(false, 1448), tcp_super_packet(false, 65535 - 40));
  CHECK(send_via_lent(*a.mgr, b.ep(), small) == cm::SendResult::kSent);
  CHECK(send_via_lent(*a.mgr, b.ep(), super) == cm::SendResult::kSent);
  CHECK(a.ctr().sends_zero_copy == 2);
  CHECK(a.ctr().gso_sent == 1);
  c.run(50ms);
  REQUIRE(b.sink.packets.size() == 3);
  CHECK(b.sink.packets[1].bytes == small);
  CHECK(b.sink.packets[2].bytes == super);  // header and every byte as read
  // Unsignaled sends hold their slots until a signaled completion (the
  // reaper's reclaim SEND at the latest, docs/design.md "Selective signalling").
  c.run(2s);
  const auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);  // both slots came back
}

TEST_CASE("zero copy: with no connection yet the lent packet is queued as send() would",
          "[cm][zerocopy]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2, offload_on);
  const auto frame = frame_of(wire::VnetHdr{}, packet(5));
  CHECK(send_via_lent(*a.mgr, b.ep(), frame) == cm::SendResult::kQueued);
  CHECK(a.ctr().sends_zero_copy == 0);
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);  // not held while queued
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 1);
  CHECK(b.sink.packets[0].bytes == frame);
  c.run(2s);  // the reclaim SEND frees the unsignaled send's slot
  s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

TEST_CASE("zero copy: a peer without offload gets plain packets cut from a lent buffer",
          "[cm][zerocopy]") {
  Cluster c(GENERATE(Profile::kMlx, Profile::kRxe));
  auto& a = c.add(1, offload_on);
  auto& b = c.add(2);  // offload off: no kCapGso
  const auto first = frame_of(wire::VnetHdr{}, packet(1));
  CHECK(a.mgr->send(b.ep(), first) == cm::SendResult::kQueued);
  c.run(100ms);
  REQUIRE(b.sink.packets.size() == 1);
  const auto super = frame_of(tso_hdr(false, 1000), tcp_super_packet(false, 4000));
  CHECK(send_via_lent(*a.mgr, b.ep(), super) == cm::SendResult::kSent);
  CHECK(a.ctr().sends_zero_copy == 0);  // copied: it is cut in software
  CHECK(a.ctr().gso_segmented == 1);
  c.run(50ms);
  CHECK(b.sink.packets.size() == 1 + 4);
  c.run(2s);  // the reclaim SEND frees the unsignaled sends' slots
  const auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

TEST_CASE("zero copy: one buffer lent at a time, given back unused, none without offload",
          "[cm][zerocopy]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, offload_on);
  auto& plain = c.add(2);
  const auto total = a.mgr->snapshot().send_slots_total;
  const auto b1 = a.mgr->lend_send_buffer();
  const auto b2 = a.mgr->lend_send_buffer();
  REQUIRE(!b1.empty());
  CHECK(b1.data() == b2.data());  // the same one until sent or returned
  CHECK(a.mgr->snapshot().send_slots_free == total - 1);
  a.mgr->return_lent();
  CHECK(a.mgr->snapshot().send_slots_free == total);
  CHECK(a.mgr->send_lent(plain.ep(), 10) == cm::SendResult::kRefused);  // nothing lent
  // Offload off: buffers are exactly mtu bytes, so a read that fills one
  // could not be told from a cut one; nothing is lent.
  CHECK(plain.mgr->lend_send_buffer().empty());
}

}  // namespace cm_zero_copy_test
