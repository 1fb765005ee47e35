// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fuzzer `manager`: the input drives 2-4 connection managers (lib/cm) on the
// simulated fabric (lib/sim), deterministically, on its virtual clock.
//
// Input: a header (kHeaderSize bytes: quirk profile, node count, fabric seed,
// offload per node and the peer proofs (auth.mode required) on or off, pool
// sizes, depths, retries, limits, timeouts), then
// 4-byte steps
// {op, a, b, c}: sends and bursts (some as one send batch), clock advances, rdma_cm / async event
// faults (drop, duplicate, delay, reorder), QP FATAL, retry exceeded, Last WQE
// Reached, RNR (starved receives), partitions, isolation, crashes and
// restarts, CQ overflow, lost drain completions, the ctl actions
// (disconnect_peer, reap_idle), config reloads (reconfigure), neighbour
// FAILED, link down/up, shutdown.
//
// After every step, on every live node (check_node):
//   - at most one connection in service per peer, and a peer's conn_id names
//     an in-service QP of that peer that is not in teardown;
//   - every QP's state is one of cm::ConnState (a name from the state list);
//   - SRQ accounting: the device never holds more receive WRs than the
//     manager counts as posted, which never exceeds srq.size; send slots
//     free <= total;
//   - every QPN in the manager's live_qpns() is a QP of the simulated HCA, and
//     the HCA has no QP the manager forgot (that would be a leak); (cm ids:
//     at quiescence only, see check_node);
//   - the simulator saw no misuse (SimStats::misuse: destroy_id with a QP,
//     destroy_id inside its own event, unknown handles);
//   - the manager logged no "BUG:" (an illegal state transition);
//   - every delivered packet is one that was sent, intact, from the node its
//     bytes name; to a node with offload, as a frame with an empty header
//     (from a capable peer as sent, from any other one added on receipt);
//   - send_capacity() edges alternate (edges only, docs/design.md "Data path");
//   - LRU evictions no faster than max_connections per second of the
//     manager's life (kEvictMinAge: no eviction churn).
// At the end (quiesce): every fault is healed (rules cleared, partitions and
// isolation lifted, receives fed, links up, crashed nodes restarted with a
// new incarnation), and the clock runs until every timer ran out. Then on
// every node: no QP (manager and HCA), no cm id (manager and HCA), every
// QP/cm id created was destroyed, the SRQ full again (manager and HCA), every
// send slot free, capacity available; a node that was shut down is stopped().
// A node whose CQ overflowed lost its device (CQEs are gone by definition):
// only "no QP, no cm id" is required of it.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/proof.hpp"
#include "cm/manager.hpp"
#include "fuzz_check.hpp"
#include "fuzz_sim.hpp"
#include "sim/cluster.hpp"
#include "sim/fabric.hpp"
#include "wire/vnet_hdr.hpp"

using namespace rcnet;
using sim::Profile;

namespace {

using fuzz::BugSink;
using fuzz::Input;

BugSink* g_log = nullptr;

constexpr std::size_t kHeaderSize = 8;
constexpr std::size_t kMaxSteps = 400;

template <class T, std::size_t N>
T pick(const std::array<T, N>& table, std::uint8_t b) {
  return table[b % N];
}

constexpr std::array<Duration, 20> kAdvance = {
    0ns,  1us,  10us, 50us,  100us, 200us, 500us, 1ms, 2ms, 5ms,
    10ms, 20ms, 50ms, 100ms, 200ms, 300ms, 500ms, 1s,  2s,  5s,
};

// ------------------------------------------------------------------ cluster
// What a node's TUN device would have received, checked as it arrives.
struct Sink final : cm::PacketSink {
  std::function<void(NodeId, std::span<const std::byte>)> on_packet;
  bool capacity = true;
  std::uint64_t delivered = 0;
  std::uint64_t edge_errors = 0;
  void deliver(NodeId from, std::span<const std::byte> p) override {
    ++delivered;
    if (on_packet)
      on_packet(from, p);
  }
  void send_capacity(bool available) override {
    if (available == capacity)
      ++edge_errors;  // two edges the same way
    capacity = available;
  }
};

struct Node final : sim::ClusterNode {
  int index = 0;
  Sink sink;
  std::uint64_t incarnation = 0;
  bool up = true;            // not crashed
  bool link_down = false;    // link_changed(false) told to the manager
  bool device_lost = false;  // CQ overflowed: its CQEs are gone
  bool shut_down = false;
  // starve_receives was ever on here, or its CQ overflowed (completions, and
  // so reposts, lost): iWARP then terminates connections for want of a
  // receive WR. Kept across restarts: the simulator's counters are.
  bool starved = false;
  // For the eviction-rate bound: when this manager started, and the largest
  // max_connections it has run with (reloads may change it).
  TimePoint started{};
  std::uint32_t max_connections_seen = 0;
  cm::PacketSink& packet_sink() override { return sink; }
};

// Node i (from 0) is host i + 1 of the cluster: 10.99.0.1 upwards.
IpAddr node_addr(int i) {
  return sim::cluster_addr(1 + static_cast<std::uint32_t>(i));
}

// Packet bytes: [sender index][seq, 4 bytes][pattern...]. Packets shorter
// than 5 bytes carry only what fits.
std::vector<std::byte> make_packet(int from, std::uint32_t seq, std::size_t size) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i)
    p[i] = static_cast<std::byte>((seq * 31 + i) & 0xff);
  if (size >= 1)
    p[0] = static_cast<std::byte>(from);
  if (size >= 5)
    std::memcpy(p.data() + 1, &seq, 4);
  return p;
}

class Cluster {
 public:
  // `in` holds at least kHeaderSize bytes; byte 0 picks the profile (bit 6:
  // iWARP, else mlx, ehca or rxe by its value mod 3), byte 2 seeds the fabric.
  explicit Cluster(Input& in)
      : cluster_(
            (in.bytes[0] & 0x40) != 0 ? Profile::kIwarp : static_cast<Profile>(in.bytes[0] % 3),
            1 + std::uint64_t{in.bytes[2]}) {
    const std::uint8_t h0 = in.u8(), h1 = in.u8();
    // Byte 2 seeds the fabric and also says which nodes run with offload
    // (bit i: node i): GSO frames with a virtio_net_hdr, mixed with nodes
    // that take plain packets, and sends from a lent send buffer; its bit
    // 7 puts every node in auth.mode required (start()).
    offload_mask_ = in.u8();
    const std::uint8_t h3 = in.u8(), h4 = in.u8(), h5 = in.u8(), h6 = in.u8(), h7 = in.u8();
    const int n = 2 + (h1 % 3);
    base_.use_srq = (h0 & 0x80) == 0;
    base_.srq_size = pick(std::array<std::uint32_t, 4>{4, 8, 16, 64}, h3);
    base_.send_slots = pick(std::array<std::uint32_t, 4>{2, 4, 8, 32}, h3 >> 2);
    base_.rq_depth = pick(std::array<std::uint32_t, 4>{2, 4, 8, 16}, h3 >> 4);
    vary_mtu_ = (h3 & 0x40) != 0;
    base_.qp_send_depth = pick(std::array<std::uint32_t, 4>{7, 15, 31, 63}, h4);
    base_.signal_every = signal_every_for(base_.qp_send_depth, h4 >> 2);
    base_.retry_count = static_cast<std::uint8_t>(h5 % 8);
    base_.rnr_retry_count = static_cast<std::uint8_t>((h5 >> 3) % 8);
    base_.connect_retries = (h5 >> 6) % 3;
    base_.max_connections = h6 % 4;
    base_.peer_queue_depth = pick(std::array<std::uint32_t, 4>{1, 2, 4, 16}, h6 >> 2);
    // Admission control: a limit of 1 or 2 setups each way turns many of
    // the fuzzer's simultaneous opens and reconnects into REJ busy and
    // paced connects (0 bits: the default, 256, which never bites here).
    base_.max_pending_setups = pick(std::array<std::uint32_t, 4>{256, 1, 2, 0}, h6 >> 4);
    apply_timeouts(base_, h7);
    if (cluster_.profile() == Profile::kIwarp) {
      // No RNR: receive credits, at least 4 per connection, two windows on
      // the SRQ (cm::DataPath::set_profile refuses less).
      base_.credits = 4;
      base_.srq_size = std::max<std::uint32_t>(base_.srq_size, 8);
      base_.rq_depth = std::max<std::uint32_t>(base_.rq_depth, 4);
      // A loop slow to poll its CQ (reposts late): where the credits
      // matter. Bits 4-5 of byte 0 (free for iWARP inputs).
      cluster_.fabric.timing().cq_poll =
          pick(std::array<Duration, 4>{0ns, 50us, 300us, 2ms}, static_cast<std::uint8_t>(h0 >> 4));
    }
    // RCNET_FUZZ_TRACE=1: the simulator's own trace (every CM event, async
    // event, completion, timer, crash) on stderr, for a reproducer run.
    if (std::getenv("RCNET_FUZZ_TRACE") != nullptr)
      cluster_.fabric.set_tracer(
          [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    for (int i = 0; i < n; ++i) {
      Node& node = cluster_.add_node<Node>(node_addr(i));
      node.index = i;
      node.incarnation = 0x1000 + static_cast<std::uint64_t>(i);
      nodes_.push_back(&node);
    }
    for (Node* node : nodes_)
      start(*node);
  }

  // docs/design.md "Selective signalling": signal_every must stay below the SQ
  // depth minus the room kept for the reclaim SEND and the drain WR (2), or a burst
  // waits for the next reclaim SEND. The daemon's defaults (qp_send_depth 31, signal_every 16) keep
  // that; the fuzzer's small depths must too.
  static std::uint32_t signal_every_for(std::uint32_t qp_send_depth, std::uint8_t b) {
    const std::uint32_t max = std::min<std::uint32_t>(8, qp_send_depth - 3);
    return 1 + b % max;
  }

  // Timeouts from one byte: short, so that a run covers many of them.
  static void apply_timeouts(cm::ManagerConfig& c, std::uint8_t b) {
    c.idle_timeout = pick(std::array<Duration, 4>{300ms, 1s, 3s, 500ms}, b);
    c.reaper_interval = pick(std::array<Duration, 2>{50ms, 100ms}, b >> 2);
    c.last_wqe_timeout = pick(std::array<Duration, 4>{20ms, 100ms, 300ms, 1ms}, b >> 3);
    c.drain_timeout = pick(std::array<Duration, 2>{50ms, 200ms}, b >> 5);
    c.disconnect_timeout = pick(std::array<Duration, 2>{50ms, 200ms}, b >> 6);
    c.resolve_timeout = pick(std::array<Duration, 2>{100ms, 500ms}, b >> 7);
    c.connect_timeout = pick(std::array<Duration, 2>{2s, 200ms}, b >> 1);
  }

  std::size_t size() const { return nodes_.size(); }
  Node& node(std::uint8_t b) { return *nodes_[b % nodes_.size()]; }
  // A node other than `from`, chosen by `b`.
  Node& other(const Node& from, std::uint8_t b) {
    const std::size_t k = 1 + b % (nodes_.size() - 1);
    return *nodes_[(static_cast<std::size_t>(from.index) + k) % nodes_.size()];
  }
  sim::Fabric& fabric() { return cluster_.fabric; }
  Profile profile() const { return cluster_.profile(); }
  const cm::ManagerConfig& base() const { return base_; }

  void start(Node& n) {
    cm::ManagerConfig cfg = sim::cluster_config(n.addr, n.incarnation, base_);
    cfg.mtu = vary_mtu_ ? 576 + 512 * static_cast<std::uint32_t>(n.index) : 1024;
    cfg.offload = ((offload_mask_ >> n.index) & 1) != 0;
    if ((offload_mask_ & 0x80) != 0) {
      // Bit 7 (no node has index 7): every node proves one cluster key
      // (docs/design.md "Trust"): the handshake gains the proofs, the
      // passive side holds its packets until the active side's arrives.
      cfg.auth_mode = auth::Mode::kRequired;
      cfg.auth_keys = {auth::Key(1, auth::KeyBytes{0x52, 0x43})};
    }
    n.sink = Sink{};
    n.sink.on_packet = [this, &n](NodeId from, std::span<const std::byte> p) {
      check_packet(n, from, p);
    };
    const auto r = cluster_.start(n, cfg);
    FUZZ_CHECK_MSG(r.ok(), r.ok() ? std::string() : r.error().message());
    n.started = fabric().now();
    n.max_connections_seen = n.mgr->config().max_connections;
    n.up = true;
    n.link_down = false;
    n.device_lost = false;
    n.shut_down = false;
  }

  // The host dies; the daemon comes back later with a new incarnation.
  void crash(Node& n) {
    if (!n.up)
      return;
    fabric().faults().crash(n.addr);
    n.up = false;
  }
  void restart(Node& n) {
    if (n.up)
      return;
    n.sim->restart();
    n.mgr.reset();  // its handles are stale now: not misuse
    n.incarnation += 0x10000;
    start(n);
  }

  std::uint32_t next_seq() { return seq_++; }

  void check_packet(const Node& to, NodeId from, std::span<const std::byte> p) {
    if (to.cfg.offload) {
      // A frame: the header the sender's TUN gave (the harness sends none
      // with GSO), or an empty one for a packet from a node without offload.
      FUZZ_CHECK_MSG(p.size() > wire::kVnetHdrLen, "frame without a packet");
      const auto h = wire::parse_vnet_hdr(p);
      FUZZ_CHECK_MSG(h && !h->is_gso(), "frame header changed on the way");
      p = p.subspan(wire::kVnetHdrLen);
    }
    FUZZ_CHECK(!p.empty());
    FUZZ_CHECK(p.size() <= to.cfg.mtu);
    const auto idx = static_cast<std::size_t>(p[0]);
    FUZZ_CHECK_MSG(idx < nodes_.size(), "packet names no node");
    FUZZ_CHECK_MSG(node_id_for(nodes_[idx]->addr) == from, "packet from the wrong node");
    FUZZ_CHECK(static_cast<int>(idx) != to.index);
    if (p.size() < 5)
      return;
    std::uint32_t seq = 0;
    std::memcpy(&seq, p.data() + 1, 4);
    FUZZ_CHECK_MSG(seq < seq_, "packet never sent");
    for (std::size_t i = 5; i < p.size(); ++i)
      FUZZ_CHECK_MSG(p[i] == static_cast<std::byte>((seq * 31 + i) & 0xff), "packet corrupted");
  }

 private:
  sim::Cluster cluster_;
  cm::ManagerConfig base_;
  bool vary_mtu_ = false;
  std::vector<Node*> nodes_;  // cluster_'s, by index
  std::uint32_t seq_ = 0;
  std::uint8_t offload_mask_ = 0;
};

// ------------------------------------------------------------------ invariants
std::string where(const Node& n, const char* what) {
  return std::string(what) + " on node " + std::to_string(n.index) + " (" +
         std::string(sim::to_string(n.sim->profile())) + ")";
}

void check_node(Node& n, TimePoint now) {
  if (!n.up)
    return;
  const sim::SimStats& st = n.sim->stats();
  FUZZ_CHECK_MSG(st.misuse == 0,
                 where(n, "simulator misuse") + ": " +
                     (n.sim->misuse_log().empty() ? "" : n.sim->misuse_log().back()));
  // iWARP: no SEND with immediate, the passive side never first, and no
  // SEND finds an empty receive queue unless the fuzzer starved it or
  // overflowed its CQ.
  FUZZ_CHECK_MSG(st.imm_refused == 0, where(n, "SEND with immediate on iWARP"));
  FUZZ_CHECK_MSG(st.passive_first_terminations == 0, where(n, "passive side sent first"));
  FUZZ_CHECK_MSG(st.no_buffer_terminations == 0 || n.starved,
                 where(n, "a SEND found no receive WR (credits)"));
  FUZZ_CHECK_MSG(g_log->bugs == 0, where(n, "manager BUG") + ": " + g_log->last);
  FUZZ_CHECK_MSG(n.sink.edge_errors == 0, where(n, "send_capacity edges do not alternate"));
  // Eviction takes only connections ESTABLISHED for kEvictMinAge (1 s), and
  // at most max_connections are in service at once: so at most
  // max_connections evictions per second of the manager's life (plus one
  // round). More is the churn this rule exists for (docs/design.md "Reaping
  // and limits"; the fuzzer once saw 1,806 QPs on a node at max_connections
  // 2).
  const auto lived = std::chrono::duration_cast<std::chrono::seconds>(now - n.started);
  const std::uint64_t eviction_bound =
      std::uint64_t{n.max_connections_seen} * (static_cast<std::uint64_t>(lived.count()) + 1);
  FUZZ_CHECK_MSG(n.mgr->counters().evictions <= eviction_bound,
                 where(n, "evictions faster than max_connections per second") + ": " +
                     std::to_string(n.mgr->counters().evictions) + " in " +
                     std::to_string(lived.count()) + " s");

  const cm::Snapshot s = n.mgr->snapshot();
  // Sorted vectors, not node-based sets: this runs after every step.
  std::vector<NodeId> in_service;
  std::vector<std::uint64_t> ids;
  ids.reserve(s.qps.size());
  for (const cm::QpSnapshot& q : s.qps) {
    FUZZ_CHECK_MSG(static_cast<int>(q.state) < cm::kConnStateCount, where(n, "QP state"));
    FUZZ_CHECK(cm::to_string(q.state) != "?");
    ids.push_back(q.id);
    if (q.in_service) {
      in_service.push_back(q.peer_node);
      FUZZ_CHECK_MSG(!cm::is_teardown(q.state), where(n, "in-service QP in teardown"));
    }
  }
  std::sort(ids.begin(), ids.end());
  FUZZ_CHECK_MSG(std::adjacent_find(ids.begin(), ids.end()) == ids.end(),
                 where(n, "duplicate conn id"));
  std::sort(in_service.begin(), in_service.end());
  FUZZ_CHECK_MSG(std::adjacent_find(in_service.begin(), in_service.end()) == in_service.end(),
                 where(n, "two connections in service for one peer"));
  for (const cm::PeerSnapshot& p : s.peers) {
    if (p.conn_id == 0) {
      FUZZ_CHECK_MSG(!std::binary_search(in_service.begin(), in_service.end(), p.node),
                     where(n, "in-service QP its peer disowns"));
      continue;
    }
    const auto it = std::find_if(s.qps.begin(), s.qps.end(),
                                 [&](const cm::QpSnapshot& q) { return q.id == p.conn_id; });
    FUZZ_CHECK_MSG(it != s.qps.end(), where(n, "peer's conn_id names no QP"));
    FUZZ_CHECK_MSG(it->in_service && it->peer_node == p.node,
                   where(n, "peer's conn_id names another peer's or a retired QP"));
    FUZZ_CHECK_MSG(p.queue_depth <= n.mgr->config().peer_queue_depth,
                   where(n, "peer queue over its depth"));
  }

  FUZZ_CHECK_MSG(s.send_slots_free <= s.send_slots_total, where(n, "send slots"));
  FUZZ_CHECK(s.send_slots_total == n.cfg.send_slots);
  if (s.srq.enabled) {
    FUZZ_CHECK_MSG(s.srq.posted <= s.srq.size, where(n, "SRQ over-posted"));
    if (!n.device_lost) {
      FUZZ_CHECK_MSG(n.sim->srq_posted() <= s.srq.posted,
                     where(n, "HCA holds more SRQ WRs than the manager posted") + ": " +
                         std::to_string(n.sim->srq_posted()) + " > " +
                         std::to_string(s.srq.posted));
    }
  }

  // qp_table() is ascending (fabric.hpp).
  const std::vector<rdma::Qpn> live = n.mgr->live_qpns();
  const auto table = n.sim->qp_table();
  std::vector<rdma::Qpn> hca;
  hca.reserve(table.size());
  for (const auto& [qpn, state] : table)
    hca.push_back(qpn);
  for (const rdma::Qpn q : live) {
    FUZZ_CHECK_MSG(std::binary_search(hca.begin(), hca.end(), q),
                   where(n, "manager's QPN unknown to the HCA") + ": " + std::to_string(q));
  }
  FUZZ_CHECK_MSG(hca.size() == live.size(), where(n, "HCA QP the manager forgot (leak)") +
                                                ": HCA " + std::to_string(hca.size()) +
                                                ", manager " + std::to_string(live.size()));
  // cm ids are compared only at quiescence: between steps the HCA may hold
  // the passive id of a REQ whose CONNECT_REQUEST event is still queued.
}

void check_all(Cluster& c) {
  for (std::size_t i = 0; i < c.size(); ++i)
    check_node(c.node(static_cast<std::uint8_t>(i)), c.fabric().now());
}

bool clean(Node& n) {
  if (!n.mgr->live_qpns().empty() || n.mgr->live_cm_ids() != 0 || n.sim->live_qps() != 0 ||
      n.sim->live_cm_ids() != 0) {
    return false;
  }
  // Packets still queued for a peer mean a connect retry is pending (its
  // backoff timer): not quiescent yet, however empty the QP table is now.
  for (const cm::PeerSnapshot& p : n.mgr->snapshot().peers) {
    if (p.queue_depth != 0)
      return false;
  }
  if (n.shut_down)
    return n.mgr->stopped();
  return true;
}

// Heals every fault and runs the clock until every timer ran out.
void quiesce(Cluster& c) {
  auto& f = c.fabric().faults();
  f.clear();
  for (std::size_t i = 0; i < c.size(); ++i) {
    Node& a = c.node(static_cast<std::uint8_t>(i));
    f.isolate(a.addr, false);
    f.starve_receives(a.addr, false);
    f.hold_cm_channel(a.addr, false);
    for (std::size_t j = i + 1; j < c.size(); ++j)
      f.partition(a.addr, c.node(static_cast<std::uint8_t>(j)).addr, false);
  }
  for (std::size_t i = 0; i < c.size(); ++i) {
    Node& a = c.node(static_cast<std::uint8_t>(i));
    c.restart(a);
    if (a.link_down) {
      a.mgr->link_changed(true);
      a.link_down = false;
    }
  }
  check_all(c);

  // Everything ends within: idle_timeout (reaping) + connect attempts
  // (resolve, connect_timeout, unreachable, retries, backoff) + teardown
  // bounds. Generous: 120 s of virtual time.
  bool all_clean = false;
  for (int step = 0; step < 120 && !all_clean; ++step) {
    c.fabric().run_for(1s);
    check_all(c);
    all_clean = true;
    for (std::size_t i = 0; i < c.size(); ++i)
      all_clean = all_clean && clean(c.node(static_cast<std::uint8_t>(i)));
  }
  // Let the last timers (deferred id destruction, reaper) run out.
  (void)c.fabric().run_until_idle(10s);
  check_all(c);

  for (std::size_t i = 0; i < c.size(); ++i) {
    Node& n = c.node(static_cast<std::uint8_t>(i));
    const cm::Snapshot s = n.mgr->snapshot();
    const cm::Counters& k = n.mgr->counters();
    FUZZ_CHECK_MSG(n.mgr->live_qpns().empty(), where(n, "QP left at quiescence"));
    FUZZ_CHECK_MSG(s.qps.empty(), where(n, "connection left at quiescence"));
    FUZZ_CHECK_MSG(n.sim->live_qps() == 0, where(n, "HCA QP left at quiescence"));
    FUZZ_CHECK_MSG(n.mgr->live_cm_ids() == 0, where(n, "cm id left at quiescence"));
    FUZZ_CHECK_MSG(n.sim->live_cm_ids() == 0, where(n, "HCA cm id left at quiescence"));
    FUZZ_CHECK_MSG(k.qps_created == k.qps_destroyed, where(n, "QPs created != destroyed"));
    FUZZ_CHECK_MSG(k.cm_ids_created == k.cm_ids_destroyed, where(n, "cm ids created != destroyed"));
    if (n.shut_down)
      FUZZ_CHECK_MSG(n.mgr->stopped(), where(n, "shut down but not stopped"));
    // A queued packet is delivered, or dropped and counted: never stranded in
    // a peer with no connection and no retry.
    for (const auto& p : s.peers)
      FUZZ_CHECK_MSG(p.queue_depth == 0,
                     where(n, "packets stranded in a peer's queue at quiescence"));
    if (n.device_lost)
      continue;
    FUZZ_CHECK_MSG(s.send_slots_free == s.send_slots_total,
                   where(n, "send slots leaked at quiescence") + ": " +
                       std::to_string(s.send_slots_free) + "/" +
                       std::to_string(s.send_slots_total));
    if (s.srq.enabled) {
      FUZZ_CHECK_MSG(s.srq.posted == s.srq.size, where(n, "SRQ not full at quiescence") + ": " +
                                                     std::to_string(s.srq.posted) + "/" +
                                                     std::to_string(s.srq.size));
      FUZZ_CHECK_MSG(n.sim->srq_posted() == s.srq.size,
                     where(n, "HCA SRQ not full at quiescence") + ": " +
                         std::to_string(n.sim->srq_posted()) + "/" + std::to_string(s.srq.size));
    }
    FUZZ_CHECK_MSG(n.sink.capacity || n.shut_down,
                   where(n, "send capacity never came back at quiescence"));
  }
}

// ------------------------------------------------------------------ steps
rdma::Qpn qpn_of(Node& n, std::uint8_t b) {
  // Mostly a QP the manager owns; sometimes any QP of the HCA, or none.
  if ((b & 0xc0) == 0xc0) {
    const auto table = n.sim->qp_table();
    return table.empty() ? 1 + b % 4 : table[b % table.size()].first;
  }
  const auto live = n.mgr->live_qpns();
  return live.empty() ? 1 + b % 4 : live[b % live.size()];
}

constexpr std::array<rdma::CmEventType, 10> kCmTypes = {
    rdma::CmEventType::kAddrResolved,   rdma::CmEventType::kRouteResolved,
    rdma::CmEventType::kConnectRequest, rdma::CmEventType::kEstablished,
    rdma::CmEventType::kDisconnected,   rdma::CmEventType::kRejected,
    rdma::CmEventType::kUnreachable,    rdma::CmEventType::kConnectError,
    rdma::CmEventType::kAddrError,      rdma::CmEventType::kTimewaitExit,
};
constexpr std::array<rdma::AsyncEventType, 5> kAsyncTypes = {
    rdma::AsyncEventType::kLastWqeReached,  rdma::AsyncEventType::kQpFatal,
    rdma::AsyncEventType::kCommEstablished, rdma::AsyncEventType::kSrqLimitReached,
    rdma::AsyncEventType::kCqErr,
};
constexpr std::array<Duration, 4> kFaultDelay = {1ms, 50ms, 300ms, 2s};
constexpr std::array<Duration, 4> kReapIdle = {0ns, 10ms, 200ms, 5s};

// One packet of `size` bytes (IP packet, without a vnet header); with
// `lent`, read into a lent send buffer first, as the daemon's TUN path does.
void send(Cluster& c, Node& from, Node& to, std::size_t size, bool lent = false) {
  if (!from.up || size == 0)
    return;
  auto p = make_packet(from.index, c.next_seq(), size);
  if (from.cfg.offload)
    p.insert(p.begin(), wire::kVnetHdrLen, std::byte{0});  // a frame: empty header
  cm::SendResult r{};
  const auto buf = lent ? from.mgr->lend_send_buffer() : std::span<std::byte>{};
  if (!buf.empty() && buf.size() > p.size()) {
    std::memcpy(buf.data(), p.data(), p.size());
    r = from.mgr->send_lent(to.ep(), p.size());
  } else {
    if (!buf.empty())
      from.mgr->return_lent();
    r = from.mgr->send(to.ep(), p);
  }
  const auto slots = from.mgr->send_slots();
  FUZZ_CHECK_MSG(slots.free <= slots.total, where(from, "send slots after a send"));
  if (size > from.cfg.mtu)
    FUZZ_CHECK_MSG(r == cm::SendResult::kOversize, where(from, "oversize packet accepted"));
  // Above the peer's mtu (known from its private data once connected) a
  // packet may be refused as oversize too; within both it never is.
  else if (size <= std::min(from.cfg.mtu, to.cfg.mtu))
    FUZZ_CHECK_MSG(r != cm::SendResult::kOversize, where(from, "packet within mtu refused"));
}

void step(Cluster& c, std::uint8_t op, std::uint8_t a, std::uint8_t b, std::uint8_t x) {
  auto& faults = c.fabric().faults();
  Node& na = c.node(a);
  Node& nb = c.other(na, b);
  switch (op % 26) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5: {  // one packet: small, near the mtu, or oversize
      std::size_t size = 0;
      if (x < 200)
        size = 1 + x;
      else if (x < 250)
        size = na.cfg.mtu - (x - 200u);
      else
        size = na.cfg.mtu + 1;
      send(c, na, nb, size, (op & 0x80) != 0);
      break;
    }
    case 6: {  // a burst: runs the send slots and SQs out
      // With op & 0x80: one send batch (chained, one doorbell per peer, as
      // the TUN path does per wakeup) to two peers from lent buffers; with
      // op & 0x40 too, an operator disconnect in the middle of it.
      const bool batch = (op & 0x80) != 0 && na.up;
      if (batch)
        na.mgr->begin_send_batch();
      const int n = x % 48;
      for (int i = 0; i <= n; ++i) {
        send(c, na, i % 2 == 0 ? nb : c.other(na, static_cast<std::uint8_t>(b + 1)), 64, batch);
        if (batch && (op & 0x40) != 0 && i == n / 2)
          (void)na.mgr->disconnect_peer(node_id_for(nb.addr), "fuzz: disconnect in a batch");
      }
      if (batch)
        na.mgr->end_send_batch();
      break;
    }
    case 7:
    case 8:
    case 9:
      c.fabric().run_for(pick(kAdvance, x));
      break;
    case 10: {  // rdma_cm event fault
      auto action = static_cast<sim::FaultAction>(b % 4);
      // A CONNECT_REQUEST that never arrives would leave the passive id in
      // the HCA with no owner to destroy it (the simulator's artefact, not a
      // manager bug): delay it instead.
      if (action == sim::FaultAction::kDrop &&
          pick(kCmTypes, a >> 2) == rdma::CmEventType::kConnectRequest) {
        action = sim::FaultAction::kDelay;
      }
      const std::optional<IpAddr> who =
          (x & 3) == 0 ? std::nullopt : std::optional<IpAddr>(na.addr);
      faults.cm(action, pick(kCmTypes, a >> 2), 1 + (x >> 2) % 3, who, pick(kFaultDelay, x >> 4));
      break;
    }
    case 11: {  // async event fault
      const auto action = static_cast<sim::FaultAction>(b % 4);
      const std::optional<IpAddr> who =
          (x & 3) == 0 ? std::nullopt : std::optional<IpAddr>(na.addr);
      faults.async(action, pick(kAsyncTypes, a >> 2), 1 + (x >> 2) % 3, who,
                   pick(kFaultDelay, x >> 4));
      break;
    }
    case 12:
      if (na.up)
        (void)faults.inject_qp_fatal(na.addr, qpn_of(na, x));
      break;
    case 13:
      if (na.up)
        (void)faults.inject_retry_exceeded(na.addr, qpn_of(na, x));
      break;
    case 14:
      if (na.up)
        (void)faults.inject_last_wqe(na.addr, qpn_of(na, x));
      break;
    case 15:  // RNR, or a loop that leaves its rdma_cm channel unread (a REQ storm)
      if (x & 0x80)
        faults.hold_cm_channel(na.addr, (x & 1) != 0);
      else {
        faults.starve_receives(na.addr, (x & 1) != 0);
        na.starved = na.starved || (x & 1) != 0;
      }
      break;
    case 16:
      faults.partition(na.addr, nb.addr, (x & 1) != 0);
      break;
    case 17:
      faults.isolate(na.addr, (x & 1) != 0);
      break;
    case 18:
      c.crash(na);
      break;
    case 19:
      c.restart(na);
      break;
    case 20:
      if (na.up && x >= 0xe0) {  // rare: the node's device is lost for good
        faults.cq_overflow(na.addr);
        na.device_lost = true;
        na.starved = true;
      }
      break;
    case 21:
      if (na.up) {
        faults.drop_drain_completion(na.addr, qpn_of(na, x));
      }
      break;
    case 22:  // rcnetctl disconnect / reap
      if (!na.up)
        break;
      if (x & 1)
        (void)na.mgr->disconnect_peer(node_id_for(nb.addr), "fuzz: disconnect");
      else
        (void)na.mgr->reap_idle(pick(kReapIdle, x >> 1));
      break;
    case 23: {  // config reload: what config::restart_required lets apply live
      if (!na.up)
        break;
      cm::ManagerConfig n = na.cfg;
      Cluster::apply_timeouts(n, b);
      n.retry_count = static_cast<std::uint8_t>(x % 8);
      n.rnr_retry_count = static_cast<std::uint8_t>((x >> 3) % 8);
      n.connect_retries = (x >> 6) % 3;
      n.max_connections = a % 4;
      n.peer_queue_depth = 1 + (a >> 2) % 8;
      n.signal_every = Cluster::signal_every_for(n.qp_send_depth, b >> 4);
      n.allowed_peers.clear();
      if (x & 0x80)  // only nb's /32: everyone else gets REJ not_allowed
        n.allowed_peers.push_back(IpPrefix{nb.addr, 32});
      na.mgr->reconfigure(n);
      na.max_connections_seen = std::max(na.max_connections_seen, na.mgr->config().max_connections);
      break;
    }
    case 24:  // neighbour FAILED / link down or up
      if (!na.up)
        break;
      if (x & 1) {
        na.mgr->peer_failed(nb.addr, "fuzz: neighbour FAILED");
      } else {
        na.link_down = !na.link_down;
        na.mgr->link_changed(!na.link_down);
      }
      break;
    case 25:
      if (x >= 0xf0 && na.up && !na.shut_down) {  // rare: graceful stop, for good
        na.mgr->shutdown();
        na.shut_down = true;
      } else if (x < 0x10) {
        faults.clear();
      }
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_log = fuzz::install_bug_sink();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::run_input<Cluster>({data, size}, {kHeaderSize, kMaxSteps}, *g_log, check_all, step,
                                  quiesce);
}
