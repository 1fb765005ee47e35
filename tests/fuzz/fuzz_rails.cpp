// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fuzzer `rails`: two rail nodes (cm/rails.hpp) on the simulated fabric,
// deterministically, on its virtual clock. Node i (1 or 2) is two hosts,
// rail 0 at 10.99.0.i and rail 1 at 10.98.0.i, each with its HCA and
// manager, and a RailSet over the two managers on a timer of its own
// (sim/timer.hpp), as rcnetd runs them. Overlay 10.100.0.i is node i.
//
// Input: a header (kHeaderSize bytes: quirk profile and, in its top bit,
// whether a node's two rails are two ports of one device (sim::Fabric::
// add_port: one PD and SRQ, removed together); fabric seed, rails mode,
// holddown, idle timeout, pool sizes), then 4-byte steps {op, a, b, x}:
// numbered packets A -> B or B -> A (bursts, flows, send batches, lent
// send buffers), clock advances (with the daemon's once-a-second
// Manager::readopt() of a lost device), silent
// drop of one rail between the nodes (partition) or of one host
// (isolation), carrier (link_changed) and IBV_EVENT_PORT_ERR / PORT_ACTIVE
// on a rail, device removal and its return, a retry exceeded on one QP,
// neighbour FAILED, and the operator's disconnect and reap.
//
// After every step:
//   - the simulator saw no misuse on any host, the managers logged no "BUG:";
//   - every packet delivered is one that was sent, intact, from the node
//     its bytes name, to the node it was sent to;
//   - every host's HCA holds exactly the QPs its manager knows;
//   - a removed device holds no object (MR, PD, CQ, SRQ, listener, QP, cm
//     id) from kReleaseBound after its removal until it is adopted again.
// At the end, every fault is healed and the clock runs past every holddown:
//   - every packet sent while a link between the two was ESTABLISHED on a
//     rail that was healthy end to end (no cut, carrier, port and device
//     up, the rail up on both RailSets) arrived, or the sender counted a
//     drop for it; packets sent within kGracefulWindow of a graceful
//     teardown of one of the pair's links (idle reap, DREQ, operator) are
//     exempt: a graceful teardown hands nothing over (RailHooks) and the
//     packets its QP flushes are lost uncounted, rails or not;
//   - new packets each way all arrive, in order per flow (nothing stuck);
// then every manager shuts down: no connection is started after that, and
// no host keeps a QP or an rdma_cm id.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "cm/rails.hpp"
#include "fuzz_check.hpp"
#include "fuzz_sim.hpp"
#include "sim/cluster.hpp"
#include "sim/fabric.hpp"
#include "sim/timer.hpp"

using namespace rcnet;
using sim::Profile;

namespace {

using fuzz::BugSink;
using fuzz::Input;

BugSink* g_log = nullptr;

constexpr std::size_t kHeaderSize = 6;
constexpr std::size_t kMaxSteps = 300;
constexpr std::size_t kRails = 2;
// Device removal: the manager releases every object from the timer path
// right after DEVICE_REMOVAL (docs/design.md "Connection lifecycle"); the
// unit test sees it done within 1 ms.
constexpr Duration kReleaseBound = 10ms;
constexpr Duration kGracefulWindow = 1s;

template <class T, std::size_t N>
T pick(const std::array<T, N>& table, std::uint8_t b) {
  return table[b % N];
}

constexpr std::array<Duration, 16> kAdvance = {
    0ns, 2us, 50us, 200us, 1ms, 3ms, 10ms, 30ms, 100ms, 200ms, 300ms, 500ms, 1s, 2s, 3s, 5s,
};

IpAddr rail_addr(std::size_t k, int node) {
  return IpAddr::v4((k == 0 ? 0x0a630000u : 0x0a620000u) + static_cast<std::uint32_t>(node));
}
IpAddr overlay_addr(int node) {
  return IpAddr::v4(0x0a640000u + static_cast<std::uint32_t>(node));
}

// A packet: an IPv4 header (so that stripe mode hashes flows: protocol UDP,
// the nodes' overlay addresses, source port = flow), a UDP port pair, then
// [sender node][seq, 4 bytes][pattern].
constexpr std::size_t kPayloadAt = 28;
constexpr std::size_t kPacketSize = 96;

std::vector<std::byte> make_packet(int from, int to, std::uint32_t seq, std::uint8_t flow) {
  std::vector<std::byte> p(kPacketSize);
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = static_cast<std::byte>((seq * 31 + i) & 0xff);
  p[0] = std::byte{0x45};
  p[9] = std::byte{17};
  const std::uint32_t src = overlay_addr(from).v4_host_order();
  const std::uint32_t dst = overlay_addr(to).v4_host_order();
  for (int i = 0; i < 4; ++i) {
    p[12 + i] = static_cast<std::byte>(src >> (24 - 8 * i));
    p[16 + i] = static_cast<std::byte>(dst >> (24 - 8 * i));
  }
  p[20] = std::byte{0x80};
  p[21] = static_cast<std::byte>(flow);
  p[22] = std::byte{0x80};
  p[23] = std::byte{0};
  p[kPayloadAt] = static_cast<std::byte>(from);
  std::memcpy(p.data() + kPayloadAt + 1, &seq, 4);
  return p;
}

struct RailNode;
class Rails;

// One rail's host; its manager delivers into the node's record.
struct Host final : sim::ClusterNode, cm::PacketSink {
  Rails* rails = nullptr;
  RailNode* owner = nullptr;
  std::size_t rail = 0;
  bool isolated = false;   // Faults::isolate or port_down
  bool port_down = false;  // Faults::port_down
  bool link_down = false;  // Manager::link_changed(false)
  bool removed = false;    // Faults::remove_device, until readopt() succeeded
  bool restored = false;   // Faults::restore_device since the removal
  TimePoint removed_at{};
  cm::PacketSink& packet_sink() override { return *this; }
  void deliver(NodeId from, std::span<const std::byte> p) override;
  void send_capacity(bool) override {}
};

struct RailNode {
  int index = 0;
  std::array<Host*, kRails> hosts{};
  std::unique_ptr<sim::FabricTimer> timer;
  std::unique_ptr<cm::RailSet> set;
  // seq -> arrivals
  std::map<std::uint32_t, int> arrived;
  std::vector<std::pair<std::uint8_t, std::uint32_t>> order;  // (flow, seq) as they arrived
  std::vector<TimePoint> graceful;  // graceful teardowns of links to the other node
  cm::Manager& mgr(std::size_t k) { return *hosts[k]->mgr; }
};

struct Sent {
  int from = 0, to = 0;
  std::uint32_t seq = 0;
  TimePoint at{};
  bool owed = false;  // sent while a healthy link was ESTABLISHED
};

class Rails {
 public:
  explicit Rails(Input& in)
      : cluster_(static_cast<Profile>(in.bytes[0] % 3), 1 + std::uint64_t{in.bytes[1]}) {
    shared_ = (in.u8() & 0x80) != 0;
    in.u8();
    const std::uint8_t h2 = in.u8(), h3 = in.u8(), h4 = in.u8(), h5 = in.u8();
    cm::RailSetConfig rc;
    rc.mode = (h2 & 1) != 0 ? cm::RailsMode::kStripe : cm::RailsMode::kActiveBackup;
    rc.holddown = pick(std::array<Duration, 4>{100ms, 300ms, 1s, 0ns}, h2 >> 1);
    base_.idle_timeout = pick(std::array<Duration, 4>{10s, 3s, 30s, 1500ms}, h3);
    rc.idle_timeout = base_.idle_timeout;
    base_.reaper_interval = 100ms;
    base_.use_srq = (h3 & 0x04) == 0;
    base_.srq_size = pick(std::array<std::uint32_t, 2>{64, 16}, h4);
    base_.rq_depth = 16;
    base_.send_slots = pick(std::array<std::uint32_t, 2>{64, 16}, h4 >> 1);
    base_.qp_send_depth = pick(std::array<std::uint32_t, 2>{31, 15}, h4 >> 2);
    base_.signal_every = 1 + (h4 >> 3) % 8;
    base_.peer_queue_depth = 64;
    base_.mtu = 1024;
    base_.last_wqe_timeout = 100ms;
    base_.drain_timeout = 100ms;
    base_.disconnect_timeout = 100ms;
    base_.resolve_timeout = 200ms;
    base_.connect_timeout = pick(std::array<Duration, 2>{1s, 300ms}, h5);
    base_.connect_retries = 2;
    if (std::getenv("RCNET_FUZZ_TRACE") != nullptr)
      cluster_.fabric.set_tracer(
          [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    for (int i = 1; i <= 2; ++i)
      add(i, rc);
  }
  // The RailSets go before the managers they borrow.
  ~Rails() { nodes_.clear(); }

  sim::Fabric& fabric() { return cluster_.fabric; }
  RailNode& node(std::uint8_t b) { return *nodes_[b % 2]; }
  RailNode& other(const RailNode& n) { return *nodes_[n.index == 1 ? 1 : 0]; }
  std::vector<Host*> hosts() {
    std::vector<Host*> out;
    for (auto& n : nodes_)
      out.insert(out.end(), n->hosts.begin(), n->hosts.end());
    return out;
  }
  std::vector<Sent>& sent() { return sent_; }

  // A link between the two on rail k is ESTABLISHED at both ends and
  // nothing on its path is down.
  bool healthy(std::size_t k) {
    RailNode& a = *nodes_[0];
    RailNode& b = *nodes_[1];
    if (cut_[k])
      return false;
    for (RailNode* n : {&a, &b}) {
      const Host& h = *n->hosts[k];
      if (h.isolated || h.port_down || h.link_down || h.removed ||
          n->set->state(k) != cm::RailState::kUp)
        return false;
    }
    return a.mgr(k).link_established(b.hosts[k]->ep()) &&
           b.mgr(k).link_established(a.hosts[k]->ep());
  }

  // One packet from `from` to the other node; with `lent`, read into the
  // RailSet's lent send buffer first, as the daemon's TUN path does.
  void send(RailNode& from, std::uint8_t flow, bool lent = false) {
    RailNode& to = other(from);
    const std::uint32_t seq = next_seq_++;
    bool owed = false;
    for (std::size_t k = 0; k < kRails; ++k)
      owed = owed || healthy(k);
    const auto p = make_packet(from.index, to.index, seq, flow);
    const Endpoint dst{overlay_addr(to.index), 0};
    cm::SendResult r{};
    const auto buf = lent ? from.set->lend_send_buffer() : std::span<std::byte>{};
    if (buf.size() > p.size()) {
      std::memcpy(buf.data(), p.data(), p.size());
      r = from.set->send_lent(dst, p.size());
    } else {
      if (lent)
        from.set->return_lent();
      r = from.set->send(dst, p);
    }
    FUZZ_CHECK(r != cm::SendResult::kOversize);
    if (r == cm::SendResult::kRefused)
      return;
    sent_.push_back({from.index, to.index, seq, fabric().now(), owed});
  }

  void cut(std::size_t k, bool on) {
    cut_[k] = on;
    fabric().faults().partition(nodes_[0]->hosts[k]->addr, nodes_[1]->hosts[k]->addr, on);
  }

  // The hosts on h's device: with shared devices, both of its node's.
  std::vector<Host*> device_of(Host& h) const {
    if (!shared_)
      return {&h};
    return {h.owner->hosts.begin(), h.owner->hosts.end()};
  }
  void remove(Host& h) {
    if (h.removed)
      return;
    fabric().faults().remove_device(h.addr);
    for (Host* d : device_of(h)) {
      d->removed = true;
      d->restored = false;
      d->removed_at = fabric().now();
    }
  }
  void restore(Host& h) {
    if (!h.removed || h.restored)
      return;
    fabric().faults().restore_device(h.addr);
    for (Host* d : device_of(h))
      d->restored = d->removed;
    for (Host* d : device_of(h))
      readopt(*d);
  }
  // What the daemon does every second for a device its manager lost
  // (readopt() is a no-op before the manager has seen DEVICE_REMOVAL).
  void readopt(Host& h) {
    if (h.removed && h.restored && !h.mgr->device_present() && h.mgr->readopt())
      h.removed = false;
  }

  // Time passes as the daemon's loop lets it: readopt() once a second.
  void advance(Duration d) {
    const TimePoint end = fabric().now() + d;
    while (fabric().now() < end) {
      const Duration step = std::min<Duration>(end - fabric().now(), 1s);
      fabric().run_for(step);
      for (Host* h : hosts())
        readopt(*h);
    }
  }

  std::uint32_t next_seq() const { return next_seq_; }

  void check_packet(RailNode& to, NodeId from, std::span<const std::byte> p) {
    FUZZ_CHECK_MSG(p.size() == kPacketSize, "packet size changed");
    const int sender = static_cast<int>(p[kPayloadAt]);
    FUZZ_CHECK_MSG(sender == 1 || sender == 2, "packet names no node");
    FUZZ_CHECK_MSG(sender != to.index, "packet from the node itself");
    FUZZ_CHECK_MSG(
        from == node_id_for(rail_addr(0, sender)) || from == node_id_for(rail_addr(1, sender)),
        "packet from the wrong host");
    std::uint32_t seq = 0;
    std::memcpy(&seq, p.data() + kPayloadAt + 1, 4);
    FUZZ_CHECK_MSG(seq < next_seq_, "packet never sent");
    for (std::size_t i = kPayloadAt + 5; i < p.size(); ++i)
      FUZZ_CHECK_MSG(p[i] == static_cast<std::byte>((seq * 31 + i) & 0xff), "packet corrupted");
    ++to.arrived[seq];
    to.order.emplace_back(static_cast<std::uint8_t>(p[21]), seq);
  }

 private:
  void add(int i, const cm::RailSetConfig& rc) {
    auto n = std::make_unique<RailNode>();
    n->index = i;
    n->timer = std::make_unique<sim::FabricTimer>(cluster_.fabric);
    std::vector<cm::RailSet::Rail> rails;
    for (std::size_t k = 0; k < kRails; ++k) {
      Host& h = k == 1 && shared_ ? cluster_.add_port_node<Host>(rail_addr(0, i), rail_addr(1, i))
                                  : cluster_.add_node<Host>(rail_addr(k, i));
      h.rails = this;
      h.owner = n.get();
      h.rail = k;
      n->hosts[k] = &h;
      const auto r = cluster_.start(
          h, sim::cluster_config(h.addr, 0x1000 + static_cast<std::uint64_t>(i), base_));
      FUZZ_CHECK_MSG(r.ok(), r.ok() ? std::string() : r.error().message());
      rails.push_back({.manager = h.mgr.get(),
                       .map = {.underlay = [k, i](const IpAddr& o) -> std::optional<Endpoint> {
                         const int j = o == overlay_addr(1) ? 1 : o == overlay_addr(2) ? 2 : 0;
                         if (j == 0 || j == i)
                           return std::nullopt;
                         return Endpoint{rail_addr(k, j), sim::kClusterPort};
                       }}});
    }
    n->set = std::make_unique<cm::RailSet>(rc, std::move(rails), *n->timer);
    n->timer->set_callback([s = n->set.get()] { s->on_timer(); });
    // Each host records its rail's deliveries (where the RailSet's receive
    // side would stand).
    for (std::size_t k = 0; k < kRails; ++k)
      n->hosts[k]->mgr->set_sink(*n->hosts[k]);
    RailNode* raw = n.get();
    n->set->set_observer([this, raw](const cm::Event& e) {
      if (e.kind != cm::EventKind::kTeardown)
        return;
      // Graceful: idle reap (also the operator's reap), the peer's DREQ,
      // the operator's disconnect.
      if (e.reason.starts_with("idle") || e.reason.starts_with("DREQ") ||
          e.reason.starts_with("fuzz"))
        raw->graceful.push_back(fabric().now());
    });
    nodes_.push_back(std::move(n));
  }

  sim::Cluster cluster_;
  bool shared_ = false;  // rail 1 of a node is port 2 of rail 0's device
  cm::ManagerConfig base_;
  std::vector<std::unique_ptr<RailNode>> nodes_;
  std::array<bool, kRails> cut_{};
  std::vector<Sent> sent_;
  std::uint32_t next_seq_ = 1;
};

void Host::deliver(NodeId from, std::span<const std::byte> p) {
  rails->check_packet(*owner, from, p);
}

// ------------------------------------------------------------------ invariants
std::string where(const Host& h, const char* what) {
  return std::string(what) + " on " + h.addr.to_string();
}

void check_step(Rails& r) {
  const TimePoint now = r.fabric().now();
  for (Host* h : r.hosts()) {
    const sim::SimStats& st = h->sim->stats();
    FUZZ_CHECK_MSG(
        st.misuse == 0,
        where(*h, "simulator misuse") + ": " +
            (h->sim->misuse_log().empty() ? std::string() : h->sim->misuse_log().back()));
    FUZZ_CHECK_MSG(g_log->bugs == 0, where(*h, "manager BUG") + ": " + g_log->last);
    FUZZ_CHECK_MSG(h->sim->live_qps() == h->mgr->live_qpns().size(),
                   where(*h, "HCA and manager disagree on the QPs"));
    if (h->removed && now - h->removed_at >= kReleaseBound) {
      // MRs are the device's: none once every port of it is released.
      bool all = true;
      for (Host* d : r.device_of(*h))
        all = all && d->removed && now - d->removed_at >= kReleaseBound;
      FUZZ_CHECK_MSG(!all || h->sim->registered_regions() == 0,
                     where(*h, "removed device keeps an MR"));
      FUZZ_CHECK_MSG(!all || !h->sim->device_pd(), where(*h, "removed device keeps its PD"));
      FUZZ_CHECK_MSG(!all || !h->sim->device_srq(), where(*h, "removed device keeps its SRQ"));
      FUZZ_CHECK_MSG(!h->sim->device_open(), where(*h, "removed device kept open"));
      FUZZ_CHECK_MSG(h->sim->live_qps() == 0, where(*h, "removed device keeps a QP"));
      FUZZ_CHECK_MSG(h->sim->live_cm_ids() == 0, where(*h, "removed device keeps a cm id"));
      FUZZ_CHECK_MSG(!h->mgr->device_present(), where(*h, "removed device still present"));
    }
  }
}

// Packets a node counted as dropped (its managers and its RailSet).
std::uint64_t counted_drops(RailNode& n) {
  std::uint64_t d = n.set->counters().failover_no_link;
  for (std::size_t k = 0; k < kRails; ++k) {
    const cm::Counters& c = n.mgr(k).counters();
    d += c.drops_queue_full + c.drops_connect_failed + c.drops_shutting_down + c.send_errors +
         c.drops_no_slot;
  }
  return d;
}

bool near_graceful(const RailNode& a, const RailNode& b, TimePoint t) {
  for (const RailNode* n : {&a, &b}) {
    for (const TimePoint g : n->graceful) {
      if (g >= t - kGracefulWindow && g <= t + kGracefulWindow)
        return true;
    }
  }
  return false;
}

// Heals every fault, runs past every holddown, and checks that nothing is
// stuck, that nothing owed was lost uncounted, and that a shutdown leaves
// nothing behind.
void finish(Rails& r) {
  auto& f = r.fabric().faults();
  for (std::size_t k = 0; k < kRails; ++k)
    r.cut(k, false);
  for (Host* h : r.hosts()) {
    if (h->port_down) {
      FUZZ_CHECK(f.port_down(h->addr, false));
      h->port_down = false;
    }
    f.isolate(h->addr, false);
    h->isolated = false;
    if (h->link_down) {
      h->mgr->link_changed(true);
      h->link_down = false;
    }
    r.restore(*h);
  }
  // The longest holddown (16 x 1 s), the slowest link retry (30 s), a probe
  // tick and the handshakes.
  r.advance(50s);
  check_step(r);
  for (Host* h : r.hosts())
    FUZZ_CHECK_MSG(!h->removed, where(*h, "device not adopted again"));

  RailNode& a = r.node(0);
  RailNode& b = r.node(1);
  std::map<int, std::uint64_t> missing;
  for (const Sent& s : r.sent()) {
    RailNode& to = s.to == a.index ? a : b;
    if (s.owed && !to.arrived.contains(s.seq) && !near_graceful(a, b, s.at))
      ++missing[s.from];
  }
  for (RailNode* n : {&a, &b}) {
    FUZZ_CHECK_MSG(missing[n->index] <= counted_drops(*n),
                   "node " + std::to_string(n->index) + " lost " +
                       std::to_string(missing[n->index]) +
                       " packets sent while a healthy link was ESTABLISHED, counted " +
                       std::to_string(counted_drops(*n)));
  }

  // Nothing is stuck: new packets each way arrive, each flow in order.
  const std::uint32_t first = r.next_seq();
  for (int i = 0; i < 20; ++i) {
    r.send(a, static_cast<std::uint8_t>(i % 4));
    r.send(b, static_cast<std::uint8_t>(i % 4));
    r.advance(1ms);
  }
  r.advance(3s);
  const std::uint32_t last = r.next_seq() - 1;
  for (RailNode* n : {&a, &b}) {
    std::uint32_t got = 0;
    for (auto it = n->arrived.lower_bound(first); it != n->arrived.end() && it->first <= last; ++it)
      ++got;
    FUZZ_CHECK_MSG(got == 20, "node " + std::to_string(n->index) + " got " + std::to_string(got) +
                                  " of the 20 packets sent after healing");
    std::map<std::uint8_t, std::uint32_t> last_of_flow;
    std::set<std::uint32_t> seen;
    for (const auto& [flow, seq] : n->order) {
      if (seq < first || seq > last || !seen.insert(seq).second)
        continue;
      FUZZ_CHECK_MSG(seq > last_of_flow[flow], "node " + std::to_string(n->index) +
                                                   ": a flow's packets out of order after healing");
      last_of_flow[flow] = seq;
    }
  }
  check_step(r);

  // Shutdown: nothing new is started, nothing is left.
  std::vector<std::uint64_t> started;
  for (Host* h : r.hosts()) {
    h->mgr->shutdown();
    started.push_back(h->mgr->counters().connects_started);
  }
  r.advance(10s);
  std::size_t i = 0;
  for (Host* h : r.hosts()) {
    const cm::Counters& c = h->mgr->counters();
    FUZZ_CHECK_MSG(c.connects_started == started[i++], where(*h, "connect after shutdown"));
    FUZZ_CHECK_MSG(h->mgr->stopped(), where(*h, "not stopped after shutdown"));
    FUZZ_CHECK_MSG(h->sim->live_qps() == 0, where(*h, "QP left after shutdown"));
    FUZZ_CHECK_MSG(h->sim->live_cm_ids() == 0, where(*h, "cm id left after shutdown"));
    FUZZ_CHECK_MSG(c.qps_created == c.qps_destroyed, where(*h, "QPs created != destroyed"));
    FUZZ_CHECK_MSG(c.cm_ids_created == c.cm_ids_destroyed,
                   where(*h, "cm ids created != destroyed"));
  }
  check_step(r);
}

// ------------------------------------------------------------------ steps
Host& host(Rails& r, std::uint8_t a, std::uint8_t b) {
  return *r.node(a).hosts[b % kRails];
}

rdma::Qpn qpn_of(Host& h, std::uint8_t x) {
  const auto live = h.mgr->live_qpns();
  return live.empty() ? 0 : live[x % live.size()];
}

void step(Rails& r, std::uint8_t op, std::uint8_t a, std::uint8_t b, std::uint8_t x) {
  auto& f = r.fabric().faults();
  switch (op % 16) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: {  // packets from node a to the other one, one flow or several
      // b & 0x40: as one send batch (the TUN path's per wakeup); b & 0x20:
      // each from a lent send buffer.
      RailNode& from = r.node(a);
      const int n = 1 + x % 8;
      const bool batch = (b & 0x40) != 0;
      if (batch)
        from.set->begin_send_batch();
      for (int i = 0; i < n; ++i)
        r.send(from, static_cast<std::uint8_t>((b & 0x80) != 0 ? i % 4 : b % 4), (b & 0x20) != 0);
      if (batch)
        from.set->end_send_batch();
      break;
    }
    case 5:
    case 6:
    case 7:
      r.advance(pick(kAdvance, x));
      break;
    case 8:  // one rail between the nodes drops everything, or heals
      r.cut(b % kRails, (x & 1) != 0);
      break;
    case 9: {  // one host's underlay link drops everything, or heals
      Host& h = host(r, a, b);
      h.isolated = (x & 1) != 0;
      f.isolate(h.addr, h.isolated);
      break;
    }
    case 10: {  // carrier / address of a rail (the daemon's netlink)
      Host& h = host(r, a, b);
      h.link_down = !h.link_down;
      h.mgr->link_changed(!h.link_down);
      break;
    }
    case 11: {  // IBV_EVENT_PORT_ERR / PORT_ACTIVE
      Host& h = host(r, a, b);
      h.port_down = !h.port_down;
      FUZZ_CHECK(f.port_down(h.addr, h.port_down));
      h.isolated = h.port_down;
      break;
    }
    case 12: {  // `rdma link delete`, and the device back
      Host& h = host(r, a, b);
      if (!h.removed)
        r.remove(h);
      else
        r.restore(h);
      break;
    }
    case 13: {  // a silent failure of one QP
      Host& h = host(r, a, b);
      if (const rdma::Qpn q = qpn_of(h, x); q != 0)
        (void)f.inject_retry_exceeded(h.addr, q);
      break;
    }
    case 14: {  // neighbour FAILED for the other node's host on this rail
      Host& h = host(r, a, b);
      h.mgr->peer_failed(r.other(*h.owner).hosts[h.rail]->addr, "fuzz: neighbour FAILED");
      break;
    }
    case 15: {  // the operator: disconnect or reap
      Host& h = host(r, a, b);
      if ((x & 1) != 0)
        (void)h.mgr->disconnect_peer(node_id_for(r.other(*h.owner).hosts[h.rail]->addr),
                                     "fuzz: disconnect");
      else
        (void)h.mgr->reap_idle(pick(std::array<Duration, 3>{0ns, 100ms, 1s}, x >> 1));
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_log = fuzz::install_bug_sink();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::run_input<Rails>({data, size}, {kHeaderSize, kMaxSteps}, *g_log, check_step, step,
                                finish);
}
