// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// DataPath alone, without a Manager: a fake seam records every post, the
// test plays the HCA (completions, received bytes) and the conn table holds
// hand-made ESTABLISHED connections. Slot accounting, doorbell chains, the
// back-pressure edges, SRQ reposts and the hooks it calls. Then the data
// path through Managers on the simulated fabric (harness.hpp): back-pressure
// and its end, unsignaled sends reclaimed, SRQ limit events, a small SQ.
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include "catch2_compat.hpp"

#include <cstring>
#include <utility>
#include <vector>

#include "cm/conn_table.hpp"
#include "cm/datapath.hpp"
#include "harness.hpp"
#include "wire/immediate.hpp"

namespace cm_datapath_test {
using namespace rcnet;
using namespace rcnet::cm;

namespace {

// Records every post; the test decides when (and how) anything completes.
class FakeSeam final : public rdma::Seam {
 public:
  struct Send {
    rdma::CmIdHandle id;
    rdma::SendWr wr;
  };
  std::vector<Send> single;                                                    // post_send calls
  std::vector<std::pair<rdma::CmIdHandle, std::vector<rdma::SendWr>>> chains;  // post_sends
  std::vector<std::vector<std::uint64_t>> srq_posts;  // post_srq_recv calls, their wr_ids
  std::vector<std::vector<rdma::Sge>> srq_sges;
  int srq_limit_arms = 0;
  // post_sends takes this many WRs of the next chain, then fails (-1: all).
  long take_of_next_chain = -1;

  Result<rdma::DeviceInfo> open(const Endpoint&, const rdma::DeviceConfig&) override {
    return rdma::DeviceInfo{};
  }
  Result<rdma::MemoryRegion> register_memory(std::span<std::byte>) override {
    ++mrs_;
    return rdma::MemoryRegion{mrs_, 0x100 + mrs_};
  }
  void unregister_memory(const rdma::MemoryRegion&) override {}
  Result<rdma::CmIdHandle> create_id() override { return Error::invalid("fake"); }
  Result<void> resolve_addr(rdma::CmIdHandle, const Endpoint&, Duration) override { return {}; }
  Result<void> resolve_route(rdma::CmIdHandle, Duration) override { return {}; }
  Result<rdma::Qpn> create_qp(rdma::CmIdHandle, const rdma::QpCaps&) override {
    return Error::invalid("fake");
  }
  Result<void> connect(rdma::CmIdHandle, const rdma::ConnParams&) override { return {}; }
  Result<void> accept(rdma::CmIdHandle, const rdma::ConnParams&) override { return {}; }
  Result<void> reject(rdma::CmIdHandle, std::span<const std::uint8_t>) override { return {}; }
  Result<void> disconnect(rdma::CmIdHandle) override { return {}; }
  Result<void> notify_established(rdma::CmIdHandle) override { return {}; }
  Result<void> destroy_qp(rdma::CmIdHandle) override { return {}; }
  Result<void> destroy_id(rdma::CmIdHandle) override { return {}; }
  Result<void> modify_qp_to_error(rdma::CmIdHandle) override { return {}; }
  Result<void> post_send(rdma::CmIdHandle id, std::uint64_t wr_id, const rdma::Sge& sge,
                         std::uint32_t imm, bool signaled) override {
    single.push_back({id, rdma::SendWr{wr_id, sge, imm, signaled}});
    return {};
  }
  rdma::PostSendsResult post_sends(rdma::CmIdHandle id,
                                   std::span<const rdma::SendWr> wrs) override {
    chains.emplace_back(id, std::vector<rdma::SendWr>(wrs.begin(), wrs.end()));
    rdma::PostSendsResult r;
    r.posted = wrs.size();
    if (take_of_next_chain >= 0) {
      r.posted = static_cast<std::size_t>(take_of_next_chain);
      r.error = Error::from_errno(ENOMEM, "fake ibv_post_send");
      take_of_next_chain = -1;
    }
    return r;
  }
  Result<void> post_drain(rdma::CmIdHandle, std::uint64_t) override { return {}; }
  Result<void> post_srq_recv(std::span<const std::uint64_t> ids,
                             std::span<const rdma::Sge> sges) override {
    srq_posts.emplace_back(ids.begin(), ids.end());
    srq_sges.emplace_back(sges.begin(), sges.end());
    return {};
  }
  Result<void> post_qp_recv(rdma::CmIdHandle, std::span<const std::uint64_t>,
                            std::span<const rdma::Sge>) override {
    return {};
  }
  Result<void> arm_srq_limit(std::uint32_t) override {
    ++srq_limit_arms;
    return {};
  }
  bool cm_events_queued() override { return false; }

 private:
  std::uint32_t mrs_ = 0;
};

struct FakeTimers final : TimerService {
  TimePoint t{std::chrono::seconds(1000)};
  TimePoint now() const override { return t; }
  void schedule(TimePoint) override {}
};

struct Sink final : PacketSink {
  std::vector<std::pair<NodeId, std::vector<std::byte>>> delivered;
  int off = 0, on = 0;  // send_capacity edges
  void deliver(NodeId from, std::span<const std::byte> p) override {
    delivered.emplace_back(from, std::vector<std::byte>(p.begin(), p.end()));
  }
  void send_capacity(bool available) override { ++(available ? on : off); }
};

struct Hooks final : DataPathHooks {
  std::vector<NodeId> connects;
  std::vector<std::pair<std::uint64_t, rdma::WcStatus>> failed;
  std::vector<std::uint64_t> destroyed, drains;
  bool sends_allowed() const override { return true; }
  void start_connect(Peer& p) override { connects.push_back(p.node); }
  void send_failed(Conn& c, const rdma::WorkCompletion& wc) override {
    failed.emplace_back(c.id, wc.status);
  }
  void destroy_qp(Conn& c, std::string_view) override { destroyed.push_back(c.id); }
  void post_drain(Conn& c) override { drains.push_back(c.id); }
  void rail_message(Conn& c, std::span<const std::byte> m) override {
    rail_msgs.emplace_back(c.id, std::vector<std::byte>(m.begin(), m.end()));
  }
  void auth_message(Conn& c, std::span<const std::byte>) override { auth_msgs.push_back(c.id); }
  void unproven_data(Conn& c) override { unproven.push_back(c.id); }
  log::Fields fields(const Conn&) const override { return {}; }
  std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> rail_msgs;
  std::vector<std::uint64_t> auth_msgs, unproven;
};

std::vector<std::byte> bytes(std::uint32_t seq, std::size_t size = 100) {
  std::vector<std::byte> p(size, std::byte{0x5a});
  std::memcpy(p.data(), &seq, sizeof seq);
  return p;
}

// A DataPath on the fakes, started, with ESTABLISHED connections made by hand.
struct Rig {
  explicit Rig(void (*tweak)(ManagerConfig&) = nullptr) : cfg(config(tweak)) {
    REQUIRE(dp.start().ok());
  }
  static ManagerConfig config(void (*tweak)(ManagerConfig&)) {
    ManagerConfig c;
    c.local = Endpoint{IpAddr::v4(0x0a630001u), 7471};
    c.mtu = 2048;
    c.send_slots = 16;
    c.qp_send_depth = 64;
    c.signal_every = 4;
    c.srq_size = 8;
    c.srq_limit = 2;
    if (tweak != nullptr)
      tweak(c);
    return c;
  }
  Endpoint ep(std::uint32_t host) const { return Endpoint{IpAddr::v4(0x0a630000u + host), 7471}; }
  Conn& connect(std::uint32_t host) {
    Peer& p = table.peer_for(node_id_for(ep(host).addr), ep(host));
    Conn& c = table.add(p, true, timers.t);
    c.cm_id = 100 + host;
    c.qpn = 200 + host;
    table.index_cm_id(c);
    table.index_qpn(c);
    table.make_in_service(p, c);
    table.set_state(c, ConnState::kEstablished, timers.t);
    return c;
  }
  Snapshot snap() const {
    Snapshot s;
    dp.snapshot(s);
    return s;
  }
  std::uint32_t free_slots() const { return snap().send_slots_free; }
  static rdma::WorkCompletion send_wc(const Conn& c, std::uint64_t wr_id,
                                      rdma::WcStatus st = rdma::WcStatus::kSuccess) {
    rdma::WorkCompletion wc;
    wc.wr_id = wr_id;
    wc.status = st;
    wc.opcode = rdma::WcOpcode::kSend;
    wc.qpn = c.qpn;
    return wc;
  }
  void complete(const rdma::WorkCompletion& wc) { dp.on_completions(std::span(&wc, 1)); }

  ManagerConfig cfg;
  Counters ctr;
  FakeSeam seam;
  FakeTimers timers;
  Sink sink;
  ConnTable table;
  Hooks hooks;
  DataPath dp{cfg, ctr, seam, timers, sink, table, hooks};
};

}  // namespace

TEST_CASE("datapath: send slots come back exactly when a signaled completion covers them",
          "[cm][datapath]") {
  Rig r;
  Conn& c = r.connect(2);
  REQUIRE(r.free_slots() == 16);
  for (std::uint32_t i = 0; i < 6; ++i)
    REQUIRE(r.dp.send(r.ep(2), bytes(i)) == SendResult::kSent);
  // Selective signalling: one in signal_every (the 4th); each SEND its own doorbell.
  REQUIRE(r.seam.single.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(r.seam.single[i].id == c.cm_id);
    CHECK(r.seam.single[i].wr.signaled == (i == 3));
    CHECK(r.seam.single[i].wr.imm == wire::kImmData);
  }
  CHECK(r.free_slots() == 10);
  CHECK(c.sends.size() == 6);
  CHECK(r.ctr.packets_tx == 6);
  CHECK(r.ctr.send_doorbells == 6);

  // A completion naming another QP (the slot's former owner) is stale.
  auto stale = Rig::send_wc(c, r.seam.single[3].wr.wr_id);
  stale.qpn = c.qpn + 1;
  r.complete(stale);
  CHECK(r.ctr.completions_ignored == 1);
  CHECK(r.free_slots() == 10);

  // The signaled 4th completes: it and the three before it are done.
  r.complete(Rig::send_wc(c, r.seam.single[3].wr.wr_id));
  CHECK(r.free_slots() == 14);
  REQUIRE(c.sends.size() == 2);
  CHECK(c.sends.front().wr_id == r.seam.single[4].wr.wr_id);

  // The tail is unsignaled: a reclaim SEND (a zero-length control SEND) covers it.
  r.dp.post_reclaim(c);
  REQUIRE(r.seam.single.size() == 7);
  const auto reclaim = r.seam.single.back().wr;
  CHECK(reclaim.signaled);
  CHECK(reclaim.imm == wire::kImmControl);
  CHECK(reclaim.sge.length == 0);
  CHECK(r.free_slots() == 14);  // nothing before its completion
  r.complete(Rig::send_wc(c, reclaim.wr_id));
  CHECK(r.free_slots() == 16);
  CHECK(c.sends.empty());
  CHECK(r.ctr.packets_tx == 6);  // the reclaim SEND is no traffic
}

TEST_CASE("datapath: a batch posts one chain per connection, each with one call",
          "[cm][datapath][batch]") {
  Rig r;
  Conn& a = r.connect(2);
  Conn& b = r.connect(3);
  r.dp.begin_batch();
  r.dp.begin_batch();  // nested: only the outermost end posts
  for (std::uint32_t i = 0; i < 5; ++i)
    REQUIRE(r.dp.send(r.ep(i % 2 == 0 ? 2 : 3), bytes(i)) == SendResult::kSent);
  r.dp.end_batch();
  // Accounted as posted, but on no SQ yet.
  CHECK(r.ctr.packets_tx == 5);
  CHECK(r.free_slots() == 11);
  CHECK(a.sends.size() == 3);
  CHECK(r.seam.single.empty());
  CHECK(r.seam.chains.empty());
  r.dp.end_batch();
  CHECK(r.seam.single.empty());
  REQUIRE(r.seam.chains.size() == 2);
  CHECK(r.ctr.send_doorbells == 2);
  const auto& [id_a, chain_a] = r.seam.chains[0];
  const auto& [id_b, chain_b] = r.seam.chains[1];
  CHECK(id_a == a.cm_id);
  CHECK(id_b == b.cm_id);
  REQUIRE(chain_a.size() == 3);
  REQUIRE(chain_b.size() == 2);
  // In c.sends' order (the SQ's order), and nothing posted twice.
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(chain_a[i].wr_id == a.sends[i].wr_id);
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(chain_b[i].wr_id == b.sends[i].wr_id);
  r.dp.flush_sends();
  CHECK(r.seam.chains.size() == 2);

  // The chain holds what was sent: the payload sits in the slot its SGE names.
  std::vector<std::byte> second(chain_b[1].sge.length);
  std::memcpy(second.data(), reinterpret_cast<const void*>(chain_b[1].sge.addr), second.size());
  CHECK(second == bytes(3));
}

TEST_CASE("datapath: the tail of a chain the HCA did not take is un-accounted",
          "[cm][datapath][batch]") {
  Rig r;
  Conn& c = r.connect(2);
  r.seam.take_of_next_chain = 1;
  {
    DataPath::BatchScope batch(r.dp);
    for (std::uint32_t i = 0; i < 3; ++i)
      REQUIRE(r.dp.send(r.ep(2), bytes(i, 100 + i)) == SendResult::kSent);
  }
  REQUIRE(r.seam.chains.size() == 1);
  CHECK(r.seam.chains[0].second.size() == 3);
  // Only the first WR is on the SQ: the other two gave their slots back and
  // are no longer counted as sent.
  REQUIRE(c.sends.size() == 1);
  CHECK(c.sends.front().wr_id == r.seam.chains[0].second[0].wr_id);
  CHECK(r.free_slots() == 15);
  CHECK(r.ctr.packets_tx == 1);
  CHECK(r.ctr.bytes_tx == 100);
  CHECK(c.tx_packets == 1);
  CHECK(c.tx_bytes == 100);
  CHECK(r.ctr.send_errors == 2);
  // The SQ's tail is the first WR, unsignaled: the conn waits for a reclaim SEND.
  CHECK(r.table.reclaim_front() == &c);
}

TEST_CASE("datapath: back-pressure goes off once when slots run out, on once when they return",
          "[cm][datapath][backpressure]") {
  Rig r([](ManagerConfig& cfg) {
    cfg.send_slots = 8;
    cfg.signal_every = 16;
  });
  Conn& c = r.connect(2);
  for (std::uint32_t i = 0; i < 8; ++i)
    REQUIRE(r.dp.send(r.ep(2), bytes(i)) == SendResult::kSent);
  CHECK(r.sink.off == 0);
  CHECK(r.free_slots() == 0);
  // Slots are scarce (under a quarter free): the last two are signaled.
  REQUIRE(r.seam.single.size() == 8);
  CHECK_FALSE(r.seam.single[5].wr.signaled);
  CHECK(r.seam.single[6].wr.signaled);
  CHECK(r.seam.single[7].wr.signaled);

  CHECK(r.dp.send(r.ep(2), bytes(8)) == SendResult::kQueued);
  CHECK(r.dp.send(r.ep(2), bytes(9)) == SendResult::kQueued);
  CHECK(r.sink.off == 1);  // an edge, not a level
  Peer* p = r.table.find_peer(c.peer);
  REQUIRE(p != nullptr);
  CHECK(p->queue.size() == 2);
  CHECK(p->blocked);
  r.dp.settle();  // no slot came back: still off
  CHECK(r.sink.on == 0);

  r.complete(Rig::send_wc(c, r.seam.single[7].wr.wr_id));
  CHECK(r.sink.on == 0);  // the true edge waits for settle()
  r.dp.settle();
  CHECK(r.sink.on == 1);
  CHECK(p->queue.empty());
  CHECK_FALSE(p->blocked);
  CHECK(r.seam.chains.size() == 1);  // the queue went as one chain
  CHECK(r.ctr.packets_tx == 10);
  r.dp.settle();
  CHECK(r.sink.on == 1);
  CHECK(r.sink.off == 1);
}

TEST_CASE("datapath: a receive completion error is counted and its status logged once per QP",
          "[cm][datapath][srq]") {
  Rig r;
  Conn& c = r.connect(2);
  REQUIRE(r.seam.srq_posts.size() == 1);
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto logger = std::make_shared<spdlog::logger>("capture", ring);
  logger->set_level(spdlog::level::warn);
  auto old = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  std::vector<rdma::WorkCompletion> wcs;
  for (std::uint32_t i = 0; i < 3; ++i) {
    rdma::WorkCompletion wc;
    wc.wr_id = r.seam.srq_posts[0][i];
    wc.status = rdma::WcStatus::kRemoteOpErr;
    wc.opcode = rdma::WcOpcode::kRecv;
    wc.qpn = c.qpn;
    wcs.push_back(wc);
  }
  r.dp.on_completions(wcs);
  spdlog::set_default_logger(old);
  CHECK(r.ctr.recv_errors == 3);
  CHECK(r.sink.delivered.empty());
  const auto lines = ring->last_formatted();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(std::string(rdma::to_string(rdma::WcStatus::kRemoteOpErr))) !=
        std::string::npos);
  CHECK(lines[0].find("QPN " + std::to_string(c.qpn)) != std::string::npos);
  // The buffers go back to the SRQ all the same.
  REQUIRE(r.seam.srq_posts.size() == 2);
  CHECK(r.seam.srq_posts[1].size() == 3);
}

TEST_CASE("datapath: SRQ receives are delivered and reposted in one call per batch",
          "[cm][datapath][srq]") {
  Rig r;
  Conn& c = r.connect(2);
  REQUIRE(r.seam.srq_posts.size() == 1);  // start() filled the SRQ
  REQUIRE(r.seam.srq_posts[0].size() == 8);
  CHECK(r.seam.srq_limit_arms == 1);
  CHECK(r.snap().srq.posted == 8);

  // The HCA writes five packets into the first five buffers; a sixth
  // receive is flushed.
  std::vector<rdma::WorkCompletion> wcs;
  for (std::uint32_t i = 0; i < 6; ++i) {
    const auto pkt = bytes(i);
    const rdma::Sge& sge = r.seam.srq_sges[0][i];
    std::memcpy(reinterpret_cast<void*>(sge.addr), pkt.data(), pkt.size());
    rdma::WorkCompletion wc;
    wc.wr_id = r.seam.srq_posts[0][i];
    wc.status = i < 5 ? rdma::WcStatus::kSuccess : rdma::WcStatus::kFlushErr;
    wc.opcode = rdma::WcOpcode::kRecv;
    wc.byte_len = static_cast<std::uint32_t>(pkt.size());
    wc.has_imm = true;
    wc.imm = wire::kImmData;
    wc.qpn = c.qpn;
    wcs.push_back(wc);
  }
  r.dp.srq_limit_reached();  // the SRQ ran low meanwhile: re-armed once refilled
  CHECK(r.ctr.srq_limit_events == 1);
  r.dp.on_completions(wcs);

  REQUIRE(r.sink.delivered.size() == 5);
  for (std::uint32_t i = 0; i < 5; ++i) {
    CHECK(r.sink.delivered[i].first == c.peer);
    CHECK(r.sink.delivered[i].second == bytes(i));
  }
  CHECK(c.rx_packets == 5);
  CHECK(r.ctr.recv_errors == 0);
  REQUIRE(r.seam.srq_posts.size() == 2);  // one repost for the whole batch
  CHECK(r.seam.srq_posts[1] ==
        std::vector<std::uint64_t>(r.seam.srq_posts[0].begin(), r.seam.srq_posts[0].begin() + 6));
  CHECK(r.snap().srq.posted == 8);
  CHECK(r.snap().srq.limit_events == 1);
  CHECK(r.seam.srq_limit_arms == 2);
}

TEST_CASE("datapath: a failed send completion is handed to the hooks, its WR kept; a flush is not",
          "[cm][datapath]") {
  Rig r([](ManagerConfig& cfg) { cfg.signal_every = 1; });
  Conn& a = r.connect(2);
  Conn& b = r.connect(3);
  REQUIRE(r.dp.send(r.ep(2), bytes(0)) == SendResult::kSent);
  REQUIRE(r.dp.send(r.ep(3), bytes(1)) == SendResult::kSent);
  REQUIRE(r.seam.single.size() == 2);
  r.complete(Rig::send_wc(a, r.seam.single[0].wr.wr_id, rdma::WcStatus::kRetryExceeded));
  r.complete(Rig::send_wc(b, r.seam.single[1].wr.wr_id, rdma::WcStatus::kFlushErr));
  REQUIRE(r.hooks.failed.size() == 1);
  CHECK(r.hooks.failed[0].first == a.id);
  CHECK(r.hooks.failed[0].second == rdma::WcStatus::kRetryExceeded);
  // Neither completed: both stay for take_unsent() (failover) until their
  // QPs are destroyed, which gives the slots back.
  CHECK(r.free_slots() == 14);
  std::vector<std::vector<std::byte>> unsent;
  r.dp.take_unsent(a, unsent);
  REQUIRE(unsent.size() == 1);
  CHECK(unsent[0] == bytes(0));
  r.dp.free_sends(a);
  r.dp.free_sends(b);
  CHECK(r.free_slots() == 16);

  // A packet for a peer without a connection is queued and one is started.
  CHECK(r.dp.send(r.ep(4), bytes(2)) == SendResult::kQueued);
  REQUIRE(r.hooks.connects.size() == 1);
  CHECK(r.hooks.connects[0] == node_id_for(r.ep(4).addr));
}

// The data path through Managers on the simulated fabric.
namespace fabric {
using namespace rcnet::test;
using sim::Profile;

TEST_CASE("back-pressure: slots run out, sending resumes, nothing lost", "[cm][datapath]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.send_slots = 8;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 200);
  CHECK(a.sink.capacity_off >= 1);
  c.run(100ms);
  CHECK(a.sink.capacity_on >= 1);
  CHECK(a.sink.capacity_on == a.sink.capacity_off);  // every pause was ended
  require_in_order(b, 200);
}

TEST_CASE("an idle QP's unsignaled sends are reclaimed so their slots come back",
          "[cm][datapath]") {
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) { m.signal_every = 1000; });
  auto& b = c.add(2);
  for (std::uint32_t i = 0; i < 5; ++i)
    a.mgr->send(b.ep(), packet(i));
  c.run(10ms);
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free < s.send_slots_total);
  c.run(300ms);  // a reaper tick or two
  s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
  CHECK(b.sink.packets.size() == 5);  // the reclaim SEND is not delivered as a packet
}

TEST_CASE("SRQ limit events are counted and the data path goes on", "[cm][datapath]") {
  // The simulated HCA reposts faster than one sender can drain the SRQ, so
  // the event is handed to the manager directly, as the seam would.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1);
  auto& b = c.add(2, [](cm::ManagerConfig& m) {
    m.srq_size = 32;
    m.srq_limit = 16;
  });
  c.connect(a, b, 0);
  for (int k = 0; k < 2; ++k) {
    b.mgr->on_async_event(rdma::AsyncEvent{rdma::AsyncEventType::kSrqLimitReached, 0});
    for (std::uint32_t i = 1; i <= 40; ++i)
      a.mgr->send(b.ep(), packet(static_cast<std::uint32_t>(k) * 100 + i));
    c.run(50ms);
  }
  CHECK(b.ctr().srq_limit_events == 2);
  CHECK(b.sink.packets.size() == 81);
  CHECK(b.sim->srq_posted() == 32);
  auto s = b.mgr->snapshot();
  CHECK(s.srq.limit_events == 2);
  CHECK(s.srq.posted == 32);
  CHECK(s.srq.limit == 16);
}

TEST_CASE("back-pressure ends when a blocked peer's QP is destroyed without completions",
          "[cm][datapath]") {
  // The CQ overflows while the sender is paused: no completion will ever free
  // a slot, the QPs are destroyed at their drain bounds, and the true edge must
  // still come, from the entry point that destroyed them.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.send_slots = 8;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 100);
  REQUIRE(a.sink.capacity_off == 1);
  c.fabric.faults().cq_overflow(a.addr);
  c.run(3s);
  CHECK(a.mgr->live_qpns().empty());
  CHECK(a.sink.capacity_on == a.sink.capacity_off);
  auto s = a.mgr->snapshot();
  CHECK(s.send_slots_free == s.send_slots_total);
}

TEST_CASE("a small SQ never fills with unsignaled sends: a burst goes through at once",
          "[cm][datapath]") {
  // qp_send_depth 8 with signal_every 16: without a signaled WR among the
  // posted ones no completion would free room until the reaper's reclaim SEND (one
  // reaper_interval later), and TUN reading would stall that long.
  Cluster c(Profile::kMlx);
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    m.qp_send_depth = 8;
    m.signal_every = 16;
    m.peer_queue_depth = 1000;
  });
  auto& b = c.add(2);
  c.connect(a, b, 0);
  c.send_range(a, b, 1, 40);
  c.run(50ms);  // far below reaper_interval (1 s)
  require_in_order(b, 40);
  CHECK(a.sink.capacity_on == a.sink.capacity_off);
}

}  // namespace fabric

}  // namespace cm_datapath_test
