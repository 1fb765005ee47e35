// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The simulated rdma_cm: handshake, REJ, private data limits, failures to
// reach a peer, simultaneous open, disconnect.
#include "catch2_compat.hpp"

#include "harness.hpp"

namespace sim_node_cm_test {
using namespace rcnet;
using namespace rcnet::sim;
using namespace rcnet::sim::test;
using rdma::CmEventType;

TEST_CASE("sim open: only the node's own address, one listener", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx, 64, 0, /*open=*/false);
  const Endpoint wrong{IpAddr::v4(0x0a000063), kPort};
  auto r = a.seam().open(wrong, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code.value() == EADDRNOTAVAIL);
  auto ok = a.seam().open(a.ep, {});
  REQUIRE(ok.ok());
  CHECK(ok->max_qp > 0);
  CHECK(a.node->live_cm_ids() == 0);  // the listener is not counted
  auto again = a.seam().open(a.ep, {});
  CHECK_FALSE(again.ok());
}

TEST_CASE("sim connect/accept: both sides ESTABLISHED with padded private data", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kEhca, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof);
    Conn c = lab.connect(a, b);
    const rdma::CmEvent* req = b.rec.find(CmEventType::kConnectRequest);
    REQUIRE(req != nullptr);
    CHECK(req->private_data.size() == 56);
    CHECK(req->private_data[0] == 1);
    CHECK(req->private_data[3] == 4);
    CHECK(req->private_data[4] == 0);
    CHECK(req->src.addr == a.ep.addr);
    CHECK(req->dst == b.ep);
    CHECK(req->remote_qpn == c.a_qpn);
    CHECK(req->listen_id != rdma::kNoCmId);
    CHECK(req->listen_id != req->id);
    const rdma::CmEvent* est_a = a.rec.find(CmEventType::kEstablished, c.a_id);
    REQUIRE(est_a != nullptr);
    CHECK(est_a->private_data.size() == 196);
    CHECK(est_a->private_data[0] == 9);
    CHECK(est_a->remote_qpn == c.b_qpn);
    const rdma::CmEvent* est_b = b.rec.find(CmEventType::kEstablished, c.b_id);
    REQUIRE(est_b != nullptr);
    CHECK(est_b->remote_qpn == c.a_qpn);
    CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kRts);
    CHECK(b.node->qp_state(c.b_qpn) == QpStateSim::kRts);
    CHECK(a.node->live_cm_ids() == 1);
    CHECK(b.node->live_cm_ids() == 1);
    CHECK(a.node->stats().misuse == 0);
    CHECK(b.node->stats().misuse == 0);
  }
}

TEST_CASE("sim reject: REJECTED status 28 with the REJ private data intact", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kRxe);
  TNode& b = lab.add(2, Profile::kRxe);
  rdma::Qpn qpn = 0;
  const rdma::CmIdHandle id = lab.prepare(a, b, {}, &qpn);
  REQUIRE(a.seam().connect(id, {}).ok());
  lab.fabric.run_for(1ms);
  REQUIRE(b.rec.count(CmEventType::kConnectRequest) == 1);
  std::vector<std::uint8_t> rej(148);
  for (std::size_t i = 0; i < rej.size(); ++i)
    rej[i] = static_cast<std::uint8_t>(i * 7 + 1);
  REQUIRE(b.seam().reject(b.rec.cm.back().id, rej).ok());
  lab.fabric.run_for(1ms);
  const rdma::CmEvent* ev = a.rec.find(CmEventType::kRejected, id);
  REQUIRE(ev != nullptr);
  CHECK(ev->status == 28);
  CHECK(ev->private_data == rej);
  CHECK(a.node->qp_state(qpn) == QpStateSim::kInit);
}

TEST_CASE("sim private data limits: 56/196/148, one more is EINVAL", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  rdma::Qpn qpn = 0;
  const rdma::CmIdHandle id = lab.prepare(a, b, {}, &qpn);
  std::vector<std::uint8_t> big(57, 1);
  rdma::ConnParams p;
  p.private_data = big;
  auto r = a.seam().connect(id, p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code.value() == EINVAL);
  big.resize(56);
  p.private_data = big;
  REQUIRE(a.seam().connect(id, p).ok());
  lab.fabric.run_for(1ms);
  REQUIRE(b.rec.count(CmEventType::kConnectRequest) == 1);
  const rdma::CmIdHandle bid = b.rec.cm.back().id;
  REQUIRE(b.seam().create_qp(bid, {}).ok());
  std::vector<std::uint8_t> rej(149, 2);
  CHECK(b.seam().reject(bid, rej).error().code.value() == EINVAL);
  std::vector<std::uint8_t> rep(197, 3);
  rdma::ConnParams bp;
  bp.private_data = rep;
  CHECK(b.seam().accept(bid, bp).error().code.value() == EINVAL);
  lab.fabric.run_for(1ms);
  // The kernel rejects the connection after an oversized accept.
  const rdma::CmEvent* ev = a.rec.find(CmEventType::kRejected, id);
  REQUIRE(ev != nullptr);
  CHECK(ev->status == 28);
  CHECK(a.rec.count(CmEventType::kEstablished) == 0);
}

TEST_CASE("sim unreachable peers: no address, not listening, crashed", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& idle = lab.add(2, Profile::kMlx, 64, 0, /*open=*/false);
  TNode& dead = lab.add(3, Profile::kMlx);

  SECTION("an address no node has: ADDR_ERROR at the timeout") {
    auto id = a.seam().create_id();
    REQUIRE(id.ok());
    const TimePoint t0 = lab.fabric.now();
    REQUIRE(a.seam().resolve_addr(*id, Endpoint{IpAddr::v4(0x0a0000fe), kPort}, 500ms).ok());
    lab.fabric.run_for(499ms);
    CHECK(a.rec.count(CmEventType::kAddrError) == 0);
    lab.fabric.run_for(2ms);
    REQUIRE(a.rec.count(CmEventType::kAddrError) == 1);
    CHECK(lab.fabric.now() - t0 >= 500ms);
  }
  SECTION("node up but not listening: REJECTED status 8") {
    rdma::Qpn qpn = 0;
    const rdma::CmIdHandle id = lab.prepare(a, idle, {}, &qpn);
    REQUIRE(a.seam().connect(id, {}).ok());
    lab.fabric.run_for(1ms);
    const rdma::CmEvent* ev = a.rec.find(CmEventType::kRejected, id);
    REQUIRE(ev != nullptr);
    CHECK(ev->status == 8);
  }
  SECTION("crashed node: UNREACHABLE after the CM timeout") {
    rdma::Qpn qpn = 0;
    const rdma::CmIdHandle id = lab.prepare(a, dead, {}, &qpn);
    dead.node->crash();
    CHECK_FALSE(dead.node->is_up());
    REQUIRE(a.seam().connect(id, {}).ok());
    lab.fabric.run_for(lab.fabric.timing().unreachable / 2);
    CHECK(a.rec.count(CmEventType::kUnreachable) == 0);
    lab.fabric.run_for(lab.fabric.timing().unreachable);
    CHECK(a.rec.count(CmEventType::kUnreachable) == 1);
    CHECK(dead.rec.cm.empty());
  }
}

TEST_CASE("sim simultaneous open: each side gets the other's REQ while its own is pending",
          "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kRxe);
  TNode& b = lab.add(2, Profile::kRxe);
  rdma::Qpn qa = 0, qb = 0;
  const rdma::CmIdHandle ia = lab.prepare(a, b, {}, &qa);
  const rdma::CmIdHandle ib = lab.prepare(b, a, {}, &qb);
  bool a_pending_at_req = false, b_pending_at_req = false;
  a.rec.on_cm = [&](const rdma::CmEvent& ev) {
    if (ev.type == CmEventType::kConnectRequest) {
      a_pending_at_req = a.rec.find(CmEventType::kEstablished, ia) == nullptr &&
                         a.rec.find(CmEventType::kRejected, ia) == nullptr;
    }
  };
  b.rec.on_cm = [&](const rdma::CmEvent& ev) {
    if (ev.type == CmEventType::kConnectRequest) {
      b_pending_at_req = b.rec.find(CmEventType::kEstablished, ib) == nullptr &&
                         b.rec.find(CmEventType::kRejected, ib) == nullptr;
    }
  };
  REQUIRE(a.seam().connect(ia, {}).ok());
  REQUIRE(b.seam().connect(ib, {}).ok());
  lab.fabric.run_for(1ms);
  CHECK(a.rec.count(CmEventType::kConnectRequest) == 1);
  CHECK(b.rec.count(CmEventType::kConnectRequest) == 1);
  CHECK(a_pending_at_req);
  CHECK(b_pending_at_req);
  // Resolve the collision: a (lower id) rejects b's REQ, b accepts a's.
  const rdma::CmEvent* a_req = a.rec.find(CmEventType::kConnectRequest);
  const rdma::CmEvent* b_req = b.rec.find(CmEventType::kConnectRequest);
  REQUIRE(a_req != nullptr);
  REQUIRE(b_req != nullptr);
  const rdma::CmIdHandle a_passive = a_req->id, b_passive = b_req->id;
  REQUIRE(a.seam().reject(a_passive, {}).ok());
  REQUIRE(b.seam().create_qp(b_passive, {}).ok());
  REQUIRE(b.seam().accept(b_passive, {}).ok());
  lab.fabric.run_for(2ms);
  CHECK(a.rec.find(CmEventType::kEstablished, ia) != nullptr);
  CHECK(b.rec.find(CmEventType::kEstablished, b_passive) != nullptr);
  CHECK(b.rec.find(CmEventType::kRejected, ib) != nullptr);
}

TEST_CASE("sim disconnect: DREQ, both DISCONNECTED, QP states per profile", "[sim]") {
  for (Profile prof : {Profile::kMlx, Profile::kEhca, Profile::kRxe}) {
    Lab lab;
    TNode& a = lab.add(1, prof);
    TNode& b = lab.add(2, prof);
    Conn c = lab.connect(a, b);
    REQUIRE(a.seam().disconnect(c.a_id).ok());
    CHECK(a.node->qp_state(c.a_qpn) == QpStateSim::kErr);
    REQUIRE(a.seam().disconnect(c.a_id).ok());  // harmless
    lab.fabric.run_for(10ms);
    CHECK(a.rec.count(CmEventType::kDisconnected) == 1);
    CHECK(b.rec.count(CmEventType::kDisconnected) == 1);
    // docs/lab.md: on rxe the passive QP stays RTS after DISCONNECTED.
    CHECK(b.node->qp_state(c.b_qpn) ==
          (prof == Profile::kRxe ? QpStateSim::kRts : QpStateSim::kErr));
  }
}

TEST_CASE("sim disconnect: never connected is EINVAL; both sides at once report once each",
          "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  auto id = a.seam().create_id();
  REQUIRE(id.ok());
  auto r = a.seam().disconnect(*id);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code.value() == EINVAL);
  Conn c = lab.connect(a, b);
  REQUIRE(a.seam().disconnect(c.a_id).ok());
  REQUIRE(b.seam().disconnect(c.b_id).ok());
  lab.fabric.run_for(10ms);
  CHECK(a.rec.count(CmEventType::kDisconnected) == 1);
  CHECK(b.rec.count(CmEventType::kDisconnected) == 1);
}

TEST_CASE("sim disconnect to a crashed peer: DISCONNECTED after the DREQ timeout", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  Conn c = lab.connect(a, b);
  b.node->crash();
  REQUIRE(a.seam().disconnect(c.a_id).ok());
  lab.fabric.run_for(lab.fabric.timing().dreq_timeout / 2);
  CHECK(a.rec.count(CmEventType::kDisconnected) == 0);
  lab.fabric.run_for(lab.fabric.timing().dreq_timeout);
  CHECK(a.rec.count(CmEventType::kDisconnected) == 1);
}

TEST_CASE("sim re-entrant sink: accept from inside CONNECT_REQUEST, never recursive", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  b.rec.on_cm = [&](const rdma::CmEvent& ev) {
    if (ev.type != CmEventType::kConnectRequest)
      return;
    REQUIRE(b.seam().create_qp(ev.id, {}).ok());
    REQUIRE(b.seam().accept(ev.id, {}).ok());
  };
  rdma::Qpn qpn = 0;
  const rdma::CmIdHandle id = lab.prepare(a, b, {}, &qpn);
  REQUIRE(a.seam().connect(id, {}).ok());
  lab.fabric.run_for(2ms);
  CHECK(a.rec.find(CmEventType::kEstablished, id) != nullptr);
  CHECK(b.rec.count(CmEventType::kEstablished) == 1);
  CHECK(b.rec.max_depth == 1);
}

TEST_CASE("sim crash and restart: not listening after restart, handles never reused", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  Conn c = lab.connect(a, b);
  b.node->crash();
  CHECK(b.node->live_qps() == 0);
  CHECK(b.node->live_cm_ids() == 0);
  CHECK(b.seam().create_id().error().code.value() == ENODEV);
  b.node->restart();
  b.node->set_sink(&b.rec);  // crash() dropped the dead owner's sink
  // The old owner's handles are stale, not misuse.
  CHECK_FALSE(b.seam().destroy_id(c.b_id).ok());
  CHECK(b.node->stats().stale_handle == 1);
  CHECK(b.node->stats().misuse == 0);
  rdma::Qpn qpn = 0;
  const rdma::CmIdHandle id = lab.prepare(a, b, {}, &qpn);
  REQUIRE(a.seam().connect(id, {}).ok());
  lab.fabric.run_for(1ms);
  const rdma::CmEvent* rej = a.rec.find(CmEventType::kRejected, id);
  REQUIRE(rej != nullptr);
  CHECK(rej->status == 8);
  // After reopening, the node accepts again and allocates fresh QPNs.
  b.rec = Recorder{};
  rdma::DeviceConfig cfg;
  cfg.srq_size = 64;
  REQUIRE(b.seam().open(b.ep, cfg).ok());
  auto mr = b.seam().register_memory(b.mem);
  REQUIRE(mr.ok());
  b.mr = *mr;
  Conn c2 = lab.connect(a, b);
  CHECK(c2.b_qpn > c.b_qpn);
  CHECK(c2.b_id != c.b_id);
}

TEST_CASE("sim destroy_id of a live connection: DREQ / REJ sent for it", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  SECTION("connected: the peer gets DISCONNECTED") {
    Conn c = lab.connect(a, b);
    REQUIRE(a.seam().destroy_qp(c.a_id).ok());
    REQUIRE(a.seam().destroy_id(c.a_id).ok());
    lab.fabric.run_for(10ms);
    CHECK(b.rec.count(CmEventType::kDisconnected) == 1);
    CHECK(b.node->qp_state(c.b_qpn) == QpStateSim::kErr);
    CHECK(a.rec.count(CmEventType::kDisconnected) == 0);  // the id is gone
  }
  SECTION("REQ never answered: the active side gets REJECTED") {
    rdma::Qpn qpn = 0;
    const rdma::CmIdHandle id = lab.prepare(a, b, {}, &qpn);
    REQUIRE(a.seam().connect(id, {}).ok());
    lab.fabric.run_for(1ms);
    REQUIRE(b.rec.count(CmEventType::kConnectRequest) == 1);
    REQUIRE(b.seam().destroy_id(b.rec.cm.back().id).ok());
    lab.fabric.run_for(1ms);
    CHECK(a.rec.find(CmEventType::kRejected, id) != nullptr);
    CHECK(b.node->live_cm_ids() == 0);
  }
  SECTION("CM events of a destroyed id are not delivered") {
    auto id = a.seam().create_id();
    REQUIRE(id.ok());
    REQUIRE(a.seam().resolve_addr(*id, b.ep, 1s).ok());
    REQUIRE(a.seam().destroy_id(*id).ok());
    lab.fabric.run_for(10ms);
    CHECK(a.rec.cm.empty());
  }
}

TEST_CASE("sim scale: many nodes, many connections, traffic (timing printed)", "[.][sim][bench]") {
  const auto wall0 = std::chrono::steady_clock::now();
  Lab lab;
  constexpr int kNodes = 32;
  for (int i = 1; i <= kNodes; ++i)
    lab.add(i, Profile::kMlx, kSlots, kSlots);
  std::vector<std::pair<int, Conn>> conns;
  for (int i = 0; i < kNodes; ++i) {
    for (int j = i + 1; j < kNodes; ++j)
      conns.emplace_back(i, lab.connect(lab.nodes[i], lab.nodes[j]));
  }
  const auto wall1 = std::chrono::steady_clock::now();
  std::size_t sent = 0;
  for (int round = 0; round < 20; ++round) {
    for (auto& [i, c] : conns) {
      Lab::send(lab.nodes[static_cast<std::size_t>(i)], c.a_id, "payload", 1, sent++, false);
    }
    lab.fabric.run_for(1ms);
    // Repost what was consumed.
    for (auto& n : lab.nodes) {
      const std::uint32_t missing = kSlots - n.node->srq_posted();
      if (missing > 0)
        n.post_srq(0, missing);
    }
  }
  const auto wall2 = std::chrono::steady_clock::now();
  std::uint64_t delivered = 0;
  for (auto& n : lab.nodes)
    delivered += n.node->stats().packets_delivered;
  CHECK(delivered == sent);
  WARN(conns.size() << " connections in " << std::chrono::duration<double>(wall1 - wall0).count()
                    << " s wall; " << sent << " sends in "
                    << std::chrono::duration<double>(wall2 - wall1).count() << " s wall; "
                    << lab.fabric.events_processed() << " events");
}

TEST_CASE("sim listen backlog: REQs beyond it are dropped, the initiator is UNREACHABLE", "[sim]") {
  Lab lab;
  TNode& b = lab.add(1, Profile::kRxe, 64, 0, false);
  rdma::DeviceConfig cfg;
  cfg.listen_backlog = 2;
  REQUIRE(b.seam().open(b.ep, cfg).ok());
  std::vector<std::pair<TNode*, rdma::CmIdHandle>> attempts;
  for (int i = 2; i <= 4; ++i) {
    TNode& a = lab.add(i, Profile::kRxe);
    rdma::Qpn q = 0;
    const rdma::CmIdHandle id = lab.prepare(a, b, {}, &q);
    REQUIRE(a.seam().connect(id, {}).ok());
    attempts.emplace_back(&a, id);
  }
  lab.fabric.run_for(2s);
  CHECK(b.rec.count(CmEventType::kConnectRequest) == 2);
  CHECK(b.node->stats().reqs_over_backlog == 1);
  CHECK(attempts[2].first->rec.find(CmEventType::kUnreachable, attempts[2].second) != nullptr);
  // The two b never answered time out the same way.
  CHECK(attempts[0].first->rec.find(CmEventType::kUnreachable, attempts[0].second) != nullptr);
  // An accept after the initiator gave up: the REP is answered with a REJ.
  const rdma::CmIdHandle late = b.rec.cm[0].id;
  REQUIRE(b.seam().create_qp(late, {}).ok());
  REQUIRE(b.seam().accept(late, {}).ok());
  lab.fabric.run_for(10ms);
  CHECK(b.rec.find(CmEventType::kRejected, late) != nullptr);
  CHECK(attempts[0].first->rec.count(CmEventType::kEstablished) == 0);
}

TEST_CASE("sim qp_table: the device's own view of live QPs", "[sim]") {
  Lab lab;
  TNode& a = lab.add(1, Profile::kMlx);
  TNode& b = lab.add(2, Profile::kMlx);
  Conn c1 = lab.connect(a, b);
  Conn c2 = lab.connect(a, b);
  REQUIRE(a.seam().modify_qp_to_error(c1.a_id).ok());
  auto t = a.node->qp_table();
  REQUIRE(t.size() == 2);
  CHECK(t[0] == std::make_pair(c1.a_qpn, QpStateSim::kErr));
  CHECK(t[1] == std::make_pair(c2.a_qpn, QpStateSim::kRts));
  REQUIRE(a.seam().destroy_qp(c1.a_id).ok());
  CHECK(a.node->qp_table().size() == 1);
}

}  // namespace sim_node_cm_test
