// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The simulated verbs: SEND with immediate, RNR, transport retry, ERR
// flushes, Last WQE Reached per profile, the drain WR, teardown misuse, the
// CQ and the SRQ limit.
#include "catch2_compat.hpp"

#include <algorithm>
#include <string>

#include "harness.hpp"

namespace sim_node_verbs_test {
using namespace rcnet;
using namespace rcnet::sim;
using namespace rcnet::sim::test;
using rdma::AsyncEventType;
using rdma::CmEventType;
using rdma::WcOpcode;
using rdma::WcStatus;

namespace {
std::string slot_text(TNode& n, std::size_t slot, std::size_t len) {
  return std::string(reinterpret_cast<const char*>(n.recv_slot(slot)), len);
}
std::size_t slot_of(std::uint64_t wr_id) {
  return static_cast<std::size_t>(wr_id - kRecvBase);
}
}  // namespace

TEST_CASE("sim SEND: bytes copied into the receive buffer, immediate preserved", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kEhca, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof);
    Conn c = lab.connect(a, b);
    const std::uint32_t srq_before = b.node->srq_posted();
    Lab::send(a, c.a_id, "hello, fabric", 0xabcd1234u, 5);
    // Overwriting the send buffer after the post must not change what arrives.
    std::memset(a.send_slot(0), 'X', 13);
    lab.fabric.run_for(1ms);
    auto rx = b.rec.wcs_for(c.b_qpn);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].status == WcStatus::kSuccess);
    CHECK(rx[0].opcode == WcOpcode::kRecv);
    CHECK(rx[0].byte_len == 13);
    CHECK(rx[0].has_imm);
    CHECK(rx[0].imm == 0xabcd1234u);
    CHECK(slot_text(b, slot_of(rx[0].wr_id), 13) == "hello, fabric");
    CHECK(b.node->srq_posted() == srq_before - 1);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].wr_id == 5);
    CHECK(tx[0].status == WcStatus::kSuccess);
    CHECK(tx[0].opcode == WcOpcode::kSend);
    // Unsignaled: delivered, no local CQE.
    Lab::send(a, c.a_id, "quiet", 7, 6, /*signaled=*/false);
    lab.fabric.run_for(1ms);
    CHECK(b.rec.wcs_for(c.b_qpn).size() == 2);
    CHECK(a.rec.wcs_for(c.a_qpn).size() == 1);
    CHECK(b.node->stats().bytes_delivered == 18);
  }
}

TEST_CASE("sim SEND: in order on one QP; per-QP RQ without SRQ", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx, 0);
  TNode& b = lab.add(2, Profile::kMlx, 0);
  rdma::QpCaps caps;
  caps.use_srq = false;
  caps.max_recv_wr = 8;
  Conn c = lab.connect(a, b, caps);
  std::vector<std::uint64_t> ids;
  std::vector<rdma::Sge> sges;
  for (std::size_t i = 0; i < 8; ++i) {
    ids.push_back(kRecvBase + i);
    sges.push_back(b.recv_sge(i));
  }
  REQUIRE(b.seam().post_qp_recv(c.b_id, ids, sges).ok());
  CHECK(b.node->rq_posted(c.b_qpn) == 8);
  for (std::uint32_t i = 0; i < 5; ++i) {
    const std::string msg = "m" + std::to_string(i);
    std::memcpy(a.send_slot(i), msg.data(), msg.size());
    REQUIRE(a.seam().post_send(c.a_id, i, a.send_sge(i, 2), i, true).ok());
  }
  lab.fabric.run_for(1ms);
  auto rx = b.rec.wcs_for(c.b_qpn);
  REQUIRE(rx.size() == 5);
  for (std::uint32_t i = 0; i < 5; ++i) {
    CHECK(rx[i].imm == i);
    CHECK(rx[i].wr_id == kRecvBase + i);  // RQ consumed in posting order
    CHECK(slot_text(b, i, 2) == "m" + std::to_string(i));
  }
  CHECK(b.node->rq_posted(c.b_qpn) == 3);
}

TEST_CASE("sim SEND larger than the receive buffer: LOC_LEN_ERR, both QPs ERR", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx, kSlots, 0);
  Conn c = lab.connect(a, b);
  std::vector<std::uint64_t> id{kRecvBase};
  std::vector<rdma::Sge> sge{b.recv_sge(0, 8)};
  REQUIRE(b.seam().post_srq_recv(id, sge).ok());
  Lab::send(a, c.a_id, "far too long for eight", 1);
  lab.fabric.run_for(1ms);
  auto rx = b.rec.wcs_for(c.b_qpn);
  REQUIRE_FALSE(rx.empty());
  CHECK(rx[0].status == WcStatus::kLocalLengthErr);
  CHECK(b.node->qp_state(c.b_qpn) == QpStateSim::kErr);
  CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kErr);
  auto tx = a.rec.wcs_for(c.a_qpn);
  REQUIRE(tx.size() == 1);
  CHECK(tx[0].status != WcStatus::kSuccess);
}

TEST_CASE("sim RNR: retried every rnr timer, forever with 7, fails after N otherwise", "[sim]") {
  SECTION("rnr_retry 7: waits until a receive is posted") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kMlx);
    TNode& b = lab.add(2, Profile::kMlx, kSlots, 0);
    Conn c = lab.connect(a, b, {}, 3, 7);
    Lab::send(a, c.a_id, "wait for me", 9);
    lab.fabric.run_for(50ms);
    CHECK(b.rec.wcs_for(c.b_qpn).empty());
    CHECK(a.rec.wcs_for(c.a_qpn).empty());
    CHECK(a.node->stats().rnr_naks >= 40);
    b.post_srq(0, 1);
    lab.fabric.run_for(5ms);
    REQUIRE(b.rec.wcs_for(c.b_qpn).size() == 1);
    CHECK(slot_text(b, 0, 11) == "wait for me");
    REQUIRE(a.rec.wcs_for(c.a_qpn).size() == 1);
    CHECK(a.rec.wcs_for(c.a_qpn)[0].status == WcStatus::kSuccess);
  }
  SECTION("rnr_retry 2: RNR_RETRY_EXC_ERR and ERR") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kRxe);
    TNode& b = lab.add(2, Profile::kRxe);
    Conn c = lab.connect(a, b, {}, 3, 2);
    lab.fabric.faults().starve_receives(b.ep.addr);
    Lab::send(a, c.a_id, "nobody home", 9);
    Lab::send(a, c.a_id, "queued behind", 10, 78, true, 1);
    lab.fabric.run_for(50ms);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 2);
    CHECK(tx[0].status == WcStatus::kRnrRetryExceeded);
    CHECK(tx[1].status == WcStatus::kFlushErr);
    CHECK(tx[1].wr_id == 78);
    CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kErr);
    CHECK(a.node->stats().rnr_naks == 3);
    CHECK(b.rec.wcs_for(c.b_qpn).empty());
  }
}

TEST_CASE("sim RNR: the retry waits the responder's min_rnr_timer", "[sim]") {
  Lab lab;
  lab.device.min_rnr_timer = 0;  // the sender's own value does not matter
  TNode& a = lab.add(1, Profile::kMlx);
  lab.device.min_rnr_timer = 18;  // 5.12 ms
  TNode& b = lab.add(2, Profile::kMlx, kSlots, 0);
  Conn c = lab.connect(a, b, {}, 3, 7);
  Lab::send(a, c.a_id, "wait", 9);
  lab.fabric.run_for(48ms);  // NAKs at ~0, 5.12, ..., 46.08 ms
  CHECK(a.node->stats().rnr_naks == 10);
  b.post_srq(0, 1);
  lab.fabric.run_for(3ms);  // the next retry is due at 51.2 ms
  CHECK(b.rec.wcs_for(c.b_qpn).empty());
  lab.fabric.run_for(2ms);
  CHECK(b.rec.wcs_for(c.b_qpn).size() == 1);
  CHECK(a.node->stats().rnr_naks == 10);
}

TEST_CASE("sim retry exceeded follows DeviceConfig::ack_timeout; 0 never times out", "[sim]") {
  for (const std::uint8_t ack : {std::uint8_t{8}, std::uint8_t{0}}) {
    INFO(int{ack});
    Lab lab;
    lab.device.ack_timeout = ack;
    TNode& a = lab.add(1, Profile::kMlx);
    TNode& b = lab.add(2, Profile::kMlx);
    Conn c = lab.connect(a, b, {}, 2);
    b.node->crash();
    Lab::send(a, c.a_id, "into the void", 1);
    // 8: 3 timeouts of 4.096 us * 2^8 = 1.05 ms each.
    lab.fabric.run_for(3ms);
    CHECK(a.rec.wcs_for(c.a_qpn).empty());
    lab.fabric.run_for(1ms);
    if (ack == 0) {
      lab.fabric.run_for(60s);
      CHECK(a.rec.wcs_for(c.a_qpn).empty());
      CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kRts);
    } else {
      auto tx = a.rec.wcs_for(c.a_qpn);
      REQUIRE(tx.size() == 1);
      CHECK(tx[0].status == WcStatus::kRetryExceeded);
    }
  }
}

TEST_CASE("sim retry exceeded: after (retry+1) ack timeouts; infinite on rxe with 7", "[sim]") {
  SECTION("mlx, retry 3, ack_timeout 14: ~0.27 s") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kMlx);
    TNode& b = lab.add(2, Profile::kMlx);
    Conn c = lab.connect(a, b, {}, 3);
    b.node->crash();
    const TimePoint t0 = lab.fabric.now();
    Lab::send(a, c.a_id, "into the void", 1);
    Lab::send(a, c.a_id, "and more", 2, 78, true, 1);
    lab.fabric.run_for(260ms);
    CHECK(a.rec.wcs_for(c.a_qpn).empty());
    lab.fabric.run_for(20ms);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 2);
    CHECK(tx[0].status == WcStatus::kRetryExceeded);
    CHECK(tx[1].status == WcStatus::kFlushErr);
    CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kErr);
    CHECK(lab.fabric.now() - t0 >= 4 * 67ms);
    // Later sends flush.
    Lab::send(a, c.a_id, "late", 3, 79);
    lab.fabric.run_for(1ms);
    CHECK(a.rec.wcs_for(c.a_qpn).back().status == WcStatus::kFlushErr);
  }
  SECTION("peer QP destroyed (peer alive): retry exceeded too; rxe no async event") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kRxe);
    TNode& b = lab.add(2, Profile::kRxe);
    Conn c = lab.connect(a, b, {}, 3);
    REQUIRE(b.seam().destroy_qp(c.b_id).ok());
    Lab::send(a, c.a_id, "gone", 1);
    lab.fabric.run_for(1s);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].status == WcStatus::kRetryExceeded);
    CHECK(a.rec.async.empty());
  }
  SECTION("rxe, retry 7: the send never completes") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kRxe);
    TNode& b = lab.add(2, Profile::kRxe);
    Conn c = lab.connect(a, b, {}, 7);
    b.node->crash();
    Lab::send(a, c.a_id, "forever", 1);
    lab.fabric.run_for(60s);
    CHECK(a.rec.wcs_for(c.a_qpn).empty());
    CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kRts);
    CHECK(a.node->sends_outstanding(c.a_qpn) == 1);
    // Only moving the QP to ERR ends it.
    REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
    lab.fabric.run_for(1ms);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].status == WcStatus::kFlushErr);
  }
  SECTION("mlx, retry 7 is finite") {
    Lab lab;
    TNode& a = lab.add(1, Profile::kMlx);
    TNode& b = lab.add(2, Profile::kMlx);
    Conn c = lab.connect(a, b, {}, 7);
    b.node->crash();
    Lab::send(a, c.a_id, "finite", 1);
    lab.fabric.run_for(1s);
    auto tx = a.rec.wcs_for(c.a_qpn);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].status == WcStatus::kRetryExceeded);
  }
}

TEST_CASE("sim ERR: RQ flushes in posting order (rxe: as SEND, len 0); SRQ not flushed", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof, 0);
    TNode& b = lab.add(2, prof, 0);
    rdma::QpCaps caps;
    caps.use_srq = false;
    caps.max_recv_wr = 8;
    Conn c = lab.connect(a, b, caps);
    std::vector<std::uint64_t> ids{31, 32, 33};
    std::vector<rdma::Sge> sges{a.recv_sge(0), a.recv_sge(1), a.recv_sge(2)};
    REQUIRE(a.seam().post_qp_recv(c.a_id, ids, sges).ok());
    REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
    lab.fabric.run_for(1ms);
    auto wcs = a.rec.wcs_for(c.a_qpn);
    REQUIRE(wcs.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(wcs[i].wr_id == ids[i]);
      CHECK(wcs[i].status == WcStatus::kFlushErr);
      CHECK(wcs[i].byte_len == 0);
      CHECK(wcs[i].opcode == (prof == Profile::kRxe ? WcOpcode::kSend : WcOpcode::kRecv));
    }
  }
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  Conn c = lab.connect(a, b);
  const std::uint32_t posted = a.node->srq_posted();
  REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
  lab.fabric.run_for(1ms);
  CHECK(a.node->srq_posted() == posted);
  CHECK(a.rec.wcs_for(c.a_qpn).empty());
}

TEST_CASE("sim Last WQE Reached: mlx delivers it, ehca and rxe never", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kEhca, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof);
    Conn c = lab.connect(a, b);
    REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
    lab.fabric.run_for(10s);
    if (prof == Profile::kMlx) {
      REQUIRE(a.rec.count(AsyncEventType::kLastWqeReached) == 1);
      CHECK(a.rec.async[0].qpn == c.a_qpn);
    } else {
      CHECK(a.rec.async.empty());
    }
  }
}

TEST_CASE("sim drain WR: EINVAL unless ERR; last CQE of its QP; rxe after 2-3 ms", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kEhca, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof, kSlots, 0);
    Conn c = lab.connect(a, b, {}, 3, 7);
    auto bad = a.seam().post_drain(c.a_id, 999);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code.value() == EINVAL);
    // Two sends stuck on RNR, then ERR: both flush before the drain.
    Lab::send(a, c.a_id, "one", 1, 1);
    Lab::send(a, c.a_id, "two", 2, 2, true, 1);
    lab.fabric.run_for(3ms);
    REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
    const TimePoint t0 = lab.fabric.now();
    TimePoint drained{};
    REQUIRE(a.seam().post_drain(c.a_id, 999).ok());
    while (drained == TimePoint{} && lab.fabric.now() - t0 < 10ms) {
      lab.fabric.run_for(10us);
      auto w = a.rec.wcs_for(c.a_qpn);
      if (!w.empty() && w.back().wr_id == 999)
        drained = lab.fabric.now();
    }
    lab.fabric.run_for(10ms);
    auto wcs = a.rec.wcs_for(c.a_qpn);
    REQUIRE(wcs.size() == 3);
    CHECK(wcs[0].wr_id == 1);
    CHECK(wcs[1].wr_id == 2);
    CHECK(wcs[2].wr_id == 999);
    CHECK(wcs[2].status == WcStatus::kFlushErr);
    if (prof == Profile::kRxe) {
      CHECK(drained - t0 >= 2ms);
      CHECK(drained - t0 <= 3ms + 10us);
    } else {
      CHECK(drained - t0 < 1ms);
    }
  }
}

TEST_CASE("sim teardown order: destroy_id with a QP or inside its event is misuse", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  Conn c = lab.connect(a, b);
  auto r = a.seam().destroy_id(c.a_id);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code.value() == EBUSY);
  CHECK(a.node->stats().destroy_id_with_qp == 1);
  CHECK(a.node->stats().misuse == 1);
  CHECK(a.node->misuse_log().size() == 1);

  // Destroying the id from inside its own DISCONNECTED event.
  std::optional<bool> inside_ok;
  b.rec.on_cm = [&](const rdma::CmEvent& ev) {
    if (ev.type != CmEventType::kDisconnected)
      return;
    REQUIRE(b.seam().destroy_qp(ev.id).ok());
    inside_ok = b.seam().destroy_id(ev.id).ok();
  };
  REQUIRE(a.seam().disconnect(c.a_id).ok());
  lab.fabric.run_for(10ms);
  REQUIRE(inside_ok.has_value());
  CHECK_FALSE(*inside_ok);
  CHECK(b.node->stats().destroy_id_in_dispatch == 1);
  // Outside the handler the same call is fine.
  CHECK(b.seam().destroy_id(c.b_id).ok());
  CHECK(b.node->live_cm_ids() == 0);
  CHECK(b.node->live_qps() == 0);

  // The right order on a: QP first, then the id.
  REQUIRE(a.seam().destroy_qp(c.a_id).ok());
  REQUIRE(a.seam().destroy_id(c.a_id).ok());
  CHECK(a.node->live_qps() == 0);
  CHECK(a.node->live_cm_ids() == 0);
  CHECK(a.node->stats().misuse == 1);
  // Unknown handles: EINVAL and counted.
  CHECK_FALSE(a.seam().destroy_id(c.a_id).ok());
  CHECK_FALSE(a.seam().post_send(0x1234, 1, {}, 0, true).ok());
  CHECK(a.node->stats().unknown_handle == 2);
}

TEST_CASE("sim destroy_qp: CQEs already generated stay in the CQ with the dead QPN", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx, 0);
  TNode& b = lab.add(2, Profile::kMlx, 0);
  rdma::QpCaps caps;
  caps.use_srq = false;
  caps.max_recv_wr = 4;
  Conn c = lab.connect(a, b, caps);
  std::vector<std::uint64_t> ids{41, 42};
  std::vector<rdma::Sge> sges{a.recv_sge(0), a.recv_sge(1)};
  REQUIRE(a.seam().post_qp_recv(c.a_id, ids, sges).ok());
  REQUIRE(a.seam().modify_qp_to_error(c.a_id).ok());
  REQUIRE(a.seam().destroy_qp(c.a_id).ok());  // before the CQ is polled
  CHECK(a.node->cq_unpolled() == 2);
  lab.fabric.run_for(1ms);
  auto wcs = a.rec.wcs_for(c.a_qpn);
  REQUIRE(wcs.size() == 2);
  CHECK(a.node->qp_state(c.a_qpn) == std::nullopt);
}

TEST_CASE("sim CQ: completions come in batches of at most 64", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx, 0);
  rdma::QpCaps caps;
  caps.use_srq = false;
  caps.max_recv_wr = 200;
  Conn c = lab.connect(a, b, caps);
  std::vector<std::uint64_t> ids;
  std::vector<rdma::Sge> sges;
  for (std::uint64_t i = 0; i < 150; ++i) {
    ids.push_back(i);
    sges.push_back(b.recv_sge(0));
  }
  REQUIRE(b.seam().post_qp_recv(c.b_id, ids, sges).ok());
  REQUIRE(b.seam().modify_qp_to_error(c.b_id).ok());
  lab.fabric.run_for(1ms);
  CHECK(b.rec.wcs.size() == 150);
  REQUIRE(b.rec.batches.size() >= 3);
  CHECK(*std::max_element(b.rec.batches.begin(), b.rec.batches.end()) <= kCompletionBatch);
  CHECK(b.rec.batches[0] == kCompletionBatch);
}

TEST_CASE("sim SRQ limit: one event when posted WRs drop below it; rxe none", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof, kSlots, 6);
    Conn c = lab.connect(a, b);
    REQUIRE(b.seam().arm_srq_limit(4).ok());
    for (int i = 0; i < 4; ++i)
      Lab::send(a, c.a_id, "x", 0, static_cast<std::uint64_t>(i));
    lab.fabric.run_for(1ms);
    CHECK(b.node->srq_posted() == 2);
    CHECK(b.rec.count(AsyncEventType::kSrqLimitReached) == (prof == Profile::kRxe ? 0u : 1u));
  }
}

TEST_CASE("sim timers: schedule, replace, cancel; run_until_idle", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  std::vector<TimePoint> fired;
  a.node->set_timer_callback([&] { fired.push_back(lab.fabric.now()); });
  TimerService& t = a.node->timers();
  const TimePoint t0 = t.now();
  CHECK(t0 == lab.fabric.now());
  t.schedule(t0 + 5ms);
  t.schedule(t0 + 3ms);  // replaces
  lab.fabric.run_for(10ms);
  REQUIRE(fired.size() == 1);
  CHECK(fired[0] == t0 + 3ms);
  t.schedule(lab.fabric.now() + 1ms);
  t.schedule(TimePoint::max());  // cancels
  lab.fabric.run_for(10ms);
  CHECK(fired.size() == 1);

  // Idle: only a timer beyond the limit remains.
  t.schedule(lab.fabric.now() + 10s);
  CHECK(lab.fabric.run_until_idle(1s));
  CHECK(fired.size() == 1);
  // Timers within the limit fire on the way.
  CHECK(lab.fabric.run_until_idle(20s));
  CHECK(fired.size() == 2);
  // Fabric work pending past the limit: false, clock at the limit.
  TNode& b = lab.add(2, Profile::kRxe);
  Conn c = lab.connect(a, b, {}, 7, 7);
  lab.fabric.faults().starve_receives(b.ep.addr);
  Lab::send(a, c.a_id, "rnr forever", 1);
  const TimePoint before = lab.fabric.now();
  CHECK_FALSE(lab.fabric.run_until_idle(100ms));
  CHECK(lab.fabric.now() == before + 100ms);
}

TEST_CASE("sim data before the RTU: received while RTR, COMM_EST except on rxe", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof);
    rdma::Qpn qa = 0;
    const rdma::CmIdHandle ia = lab.prepare(a, b, {}, &qa);
    a.rec.on_cm = [&](const rdma::CmEvent& ev) {
      if (ev.type == CmEventType::kEstablished)
        Lab::send(a, ia, "early", 3);
    };
    bool established_before_data = false;
    b.rec.on_cm = [&](const rdma::CmEvent& ev) {
      if (ev.type == CmEventType::kConnectRequest) {
        REQUIRE(b.seam().create_qp(ev.id, {}).ok());
        REQUIRE(b.seam().accept(ev.id, {}).ok());
      }
      if (ev.type == CmEventType::kEstablished)
        established_before_data = b.rec.wcs.empty();
    };
    REQUIRE(a.seam().connect(ia, {}).ok());
    lab.fabric.run_for(5ms);
    REQUIRE(b.rec.wcs.size() == 1);
    CHECK(b.rec.wcs[0].status == WcStatus::kSuccess);
    CHECK_FALSE(established_before_data);  // the data overtook the RTU
    CHECK(b.rec.count(AsyncEventType::kCommEstablished) == (prof == Profile::kRxe ? 0u : 1u));
  }
}

TEST_CASE("sim CM messages between two nodes stay in order despite jitter", "[sim]") {
  // Disconnect right after ESTABLISHED: the DREQ never overtakes the RTU, so
  // the passive side always sees ESTABLISHED before DISCONNECTED.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Lab lab(seed);
    TNode& a = lab.add(1, Profile::kMlx);
    TNode& b = lab.add(2, Profile::kMlx);
    rdma::Qpn qa = 0;
    const rdma::CmIdHandle ia = lab.prepare(a, b, {}, &qa);
    a.rec.on_cm = [&](const rdma::CmEvent& ev) {
      if (ev.type == CmEventType::kEstablished)
        REQUIRE(a.seam().disconnect(ia).ok());
    };
    b.rec.on_cm = [&](const rdma::CmEvent& ev) {
      if (ev.type == CmEventType::kConnectRequest) {
        REQUIRE(b.seam().create_qp(ev.id, {}).ok());
        REQUIRE(b.seam().accept(ev.id, {}).ok());
      }
    };
    REQUIRE(a.seam().connect(ia, {}).ok());
    lab.fabric.run_for(5ms);
    REQUIRE(b.rec.cm.size() == 3);
    CHECK(b.rec.cm[1].type == CmEventType::kEstablished);
    CHECK(b.rec.cm[2].type == CmEventType::kDisconnected);
  }
}

}  // namespace sim_node_verbs_test
