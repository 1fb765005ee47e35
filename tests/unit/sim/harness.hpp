// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Test harness for the simulated fabric: a recording EventSink per node and
// helpers that walk the rdma_cm handshake through the seam directly.
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "catch2_compat.hpp"

#include "rdma/seam.hpp"
#include "sim/fabric.hpp"

namespace rcnet::sim::test {

struct Recorder final : rdma::EventSink {
  std::vector<rdma::CmEvent> cm;
  std::vector<rdma::AsyncEvent> async;
  std::vector<rdma::WorkCompletion> wcs;
  std::vector<std::size_t> batches;
  std::function<void(const rdma::CmEvent&)> on_cm;
  std::function<void(const rdma::AsyncEvent&)> on_async;
  int depth = 0, max_depth = 0;  // re-entrancy check

  void on_cm_event(const rdma::CmEvent& ev) override {
    max_depth = std::max(max_depth, ++depth);
    cm.push_back(ev);
    if (on_cm)
      on_cm(ev);
    --depth;
  }
  void on_async_event(const rdma::AsyncEvent& ev) override {
    max_depth = std::max(max_depth, ++depth);
    async.push_back(ev);
    if (on_async)
      on_async(ev);
    --depth;
  }
  void on_completions(std::span<const rdma::WorkCompletion> w) override {
    max_depth = std::max(max_depth, ++depth);
    batches.push_back(w.size());
    wcs.insert(wcs.end(), w.begin(), w.end());
    --depth;
  }
  std::size_t count(rdma::CmEventType t) const {
    return static_cast<std::size_t>(
        std::count_if(cm.begin(), cm.end(), [t](const auto& e) { return e.type == t; }));
  }
  std::size_t count(rdma::AsyncEventType t) const {
    return static_cast<std::size_t>(
        std::count_if(async.begin(), async.end(), [t](const auto& e) { return e.type == t; }));
  }
  const rdma::CmEvent* find(rdma::CmEventType t, rdma::CmIdHandle id = rdma::kNoCmId) const {
    for (const auto& e : cm) {
      if (e.type == t && (id == rdma::kNoCmId || e.id == id))
        return &e;
    }
    return nullptr;
  }
  std::vector<rdma::WorkCompletion> wcs_for(rdma::Qpn qpn) const {
    std::vector<rdma::WorkCompletion> out;
    for (const auto& w : wcs) {
      if (w.qpn == qpn)
        out.push_back(w);
    }
    return out;
  }
};

inline constexpr std::uint16_t kPort = 7471;
inline constexpr std::uint32_t kSlot = 2048;  // bytes per receive / send buffer
inline constexpr std::uint32_t kSlots = 64;
inline constexpr std::uint64_t kRecvBase = 0x1000;  // wr_id of receive slot i = base + i

struct TNode {
  SimNode* node = nullptr;
  Recorder rec;
  std::vector<std::byte> mem = std::vector<std::byte>(std::size_t{kSlot} * kSlots * 2);
  rdma::MemoryRegion mr;
  Endpoint ep;
  rdma::Seam& seam() { return node->seam(); }
  std::byte* recv_slot(std::size_t i) { return mem.data() + i * kSlot; }
  std::byte* send_slot(std::size_t i) { return mem.data() + (kSlots + i) * kSlot; }
  rdma::Sge recv_sge(std::size_t i, std::uint32_t len = kSlot) {
    return rdma::Sge{reinterpret_cast<std::uint64_t>(recv_slot(i)), len, mr.lkey};
  }
  rdma::Sge send_sge(std::size_t i, std::uint32_t len) {
    return rdma::Sge{reinterpret_cast<std::uint64_t>(send_slot(i)), len, mr.lkey};
  }
  // Posts `n` receive slots on the SRQ, starting at slot `first`.
  void post_srq(std::size_t first, std::size_t n) {
    std::vector<std::uint64_t> ids;
    std::vector<rdma::Sge> sges;
    for (std::size_t i = first; i < first + n; ++i) {
      ids.push_back(kRecvBase + i);
      sges.push_back(recv_sge(i));
    }
    REQUIRE(seam().post_srq_recv(ids, sges).ok());
  }
};

struct Conn {
  rdma::CmIdHandle a_id = rdma::kNoCmId, b_id = rdma::kNoCmId;
  rdma::Qpn a_qpn = 0, b_qpn = 0;
};

struct Lab {
  explicit Lab(std::uint64_t seed = 1) : fabric(seed) {}
  Fabric fabric;
  std::deque<TNode> nodes;
  // What add() opens nodes with (its cq_size and srq_size are add()'s).
  rdma::DeviceConfig device;

  // A node at 10.0.0.<host>, opened with an SRQ of srq_size (0 = none) and
  // `srq_posted` receive slots on it.
  TNode& add(int host, Profile p, std::uint32_t srq_size = kSlots, std::uint32_t srq_posted = 16,
             bool open = true) {
    TNode& t = nodes.emplace_back();
    const IpAddr a = IpAddr::v4((10u << 24) | static_cast<std::uint32_t>(host));
    t.node = &fabric.add_node(a, p);
    t.node->set_sink(&t.rec);
    t.ep = Endpoint{a, kPort};
    if (!open)
      return t;
    rdma::DeviceConfig cfg = device;
    cfg.cq_size = 1024;
    cfg.srq_size = srq_size;
    REQUIRE(t.seam().open(t.ep, cfg).ok());
    auto mr = t.seam().register_memory(t.mem);
    REQUIRE(mr.ok());
    t.mr = *mr;
    if (srq_size > 0 && srq_posted > 0)
      t.post_srq(0, srq_posted);
    return t;
  }

  // Active side up to ROUTE_RESOLVED with a QP; returns the id.
  rdma::CmIdHandle prepare(TNode& a, const TNode& b, rdma::QpCaps caps, rdma::Qpn* qpn) {
    auto id = a.seam().create_id();
    REQUIRE(id.ok());
    REQUIRE(a.seam().resolve_addr(*id, b.ep, 2s).ok());
    fabric.run_for(1ms);
    REQUIRE(a.rec.find(rdma::CmEventType::kAddrResolved, *id) != nullptr);
    REQUIRE(a.seam().resolve_route(*id, 2s).ok());
    fabric.run_for(1ms);
    REQUIRE(a.rec.find(rdma::CmEventType::kRouteResolved, *id) != nullptr);
    auto q = a.seam().create_qp(*id, caps);
    REQUIRE(q.ok());
    *qpn = *q;
    return *id;
  }

  // Full handshake a → b; both sides ESTABLISHED.
  Conn connect(TNode& a, TNode& b, rdma::QpCaps caps = {}, std::uint8_t retry = 3,
               std::uint8_t rnr = 7) {
    Conn c;
    c.a_id = prepare(a, b, caps, &c.a_qpn);
    const std::uint8_t req[4] = {1, 2, 3, 4};
    rdma::ConnParams p;
    p.private_data = req;
    p.retry_count = retry;
    p.rnr_retry_count = rnr;
    REQUIRE(a.seam().connect(c.a_id, p).ok());
    const std::size_t before = b.rec.count(rdma::CmEventType::kConnectRequest);
    fabric.run_for(1ms);
    REQUIRE(b.rec.count(rdma::CmEventType::kConnectRequest) == before + 1);
    c.b_id = b.rec.cm.back().id;
    auto q = b.seam().create_qp(c.b_id, caps);
    REQUIRE(q.ok());
    c.b_qpn = *q;
    const std::uint8_t rep[3] = {9, 8, 7};
    rdma::ConnParams bp;
    bp.private_data = rep;
    bp.retry_count = retry;
    bp.rnr_retry_count = rnr;
    REQUIRE(b.seam().accept(c.b_id, bp).ok());
    fabric.run_for(1ms);
    REQUIRE(a.rec.find(rdma::CmEventType::kEstablished, c.a_id) != nullptr);
    REQUIRE(b.rec.find(rdma::CmEventType::kEstablished, c.b_id) != nullptr);
    return c;
  }

  // One SEND of `text` from slot 0 of `from` on `id`.
  static void send(TNode& from, rdma::CmIdHandle id, std::string_view text, std::uint32_t imm,
                   std::uint64_t wr_id = 77, bool signaled = true, std::size_t slot = 0) {
    std::memcpy(from.send_slot(slot), text.data(), text.size());
    REQUIRE(from.seam()
                .post_send(id, wr_id, from.send_sge(slot, static_cast<std::uint32_t>(text.size())),
                           imm, signaled)
                .ok());
  }
};

}  // namespace rcnet::sim::test
