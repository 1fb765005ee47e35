// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Internals of the simulated fabric, shared by fabric.cpp (queue, clock,
// nodes), faults.cpp (fault rules and injection), node.cpp (the SimNode
// facade and shared plumbing), node_cm.cpp (rdma_cm) and node_verbs.cpp
// (QPs, data path).
// Not part of the contract: include sim/fabric.hpp instead.

#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/fabric.hpp"
#include "util/random.hpp"

namespace rcnet::sim {

// The fabric's one seeded generator (util/random.hpp: the same numbers on
// every standard library, which the determinism promise needs).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() { return splitmix64(state); }
  // Uniform in [lo, hi); lo when the range is empty.
  Duration uniform(Duration lo, Duration hi) {
    if (hi <= lo)
      return lo;
    const auto span = static_cast<std::uint64_t>((hi - lo).count());
    return lo + Duration(static_cast<Duration::rep>(next() % span));
  }
};

struct Fabric::Impl {
  explicit Impl(std::uint64_t seed) : rng{seed} {}

  struct Item {
    bool is_timer = false;
    // With an owner: run only if that node is up in the same life
    // (SimNode::Impl::later).
    const SimNode::Impl* owner = nullptr;
    std::uint64_t life = 0;
    std::function<void()> fn;
  };
  // Schedules fn at t (never in the past). Timer items do not keep
  // run_until_idle() busy.
  void at(TimePoint t, std::function<void()> fn, bool is_timer = false,
          const SimNode::Impl* owner = nullptr, std::uint64_t life = 0);
  void after(Duration d, std::function<void()> fn) { at(now + d, std::move(fn)); }
  // Runs the earliest item; false if none.
  bool step();
  // When the earliest item is due; queue must not be empty.
  TimePoint next_due() const { return queue.front().t; }
  // One trace line, "t=<ns> <node> <what>", formatted only when a tracer
  // is set: a run without one formats nothing.
  template <class... Args>
  void trace(const IpAddr& node, fmt::format_string<Args...> what, Args&&... args) {
    if (!tracer)
      return;
    tracer(fmt::format("t={} {} ", (now - TimePoint()).count(), node.to_string()) +
           fmt::format(what, std::forward<Args>(args)...));
  }

  Rng rng;
  TimePoint now = TimePoint(std::chrono::hours(24));
  std::uint64_t seq = 0;
  // The queue: a binary heap (std::push_heap / pop_heap with Later) of
  // small keys ordered by (t, seq), which is unique: the order a sorted map
  // would give, without a node allocation per item. Each key names its
  // Item's slot in `items`; free slots are reused.
  struct Key {
    TimePoint t;
    std::uint64_t seq = 0;  // ties at one time run in the order scheduled
    std::uint32_t slot = 0;
  };
  struct Later {
    bool operator()(const Key& a, const Key& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  std::vector<Key> queue;
  std::vector<Item> items;
  std::vector<std::uint32_t> free_slots;
  std::size_t pending_events = 0;  // non-timer items in the queue
  std::uint64_t processed = 0;
  std::vector<std::unique_ptr<SimNode>> nodes;
  std::map<IpAddr, SimNode*> by_addr;
  Timing timing;
  std::function<void(const std::string&)> tracer;
  std::unique_ptr<Faults> faults;
  std::set<std::pair<IpAddr, IpAddr>> cut;  // partitioned pairs, (lower, higher)
  std::set<IpAddr> isolated;                // nodes whose underlay link is down
};

enum class IdState : std::uint8_t {
  kIdle,
  kListening,
  kAddrQuery,
  kAddrResolved,
  kRouteQuery,
  kRouteResolved,
  kConnecting,   // REQ sent
  kReqReceived,  // passive, REQ not answered yet
  kRepSent,      // passive, waiting for RTU
  kConnected,
  kDisconnecting,  // DREQ sent, waiting for DREP
  kDisconnected,
  kRejected,
  kAborted,  // rdma_disconnect before the connection was ESTABLISHED
  kFailed,   // UNREACHABLE / CONNECT_ERROR / ADDR_ERROR
};

// Another node's object as it was when we learnt of it; `life` tells whether
// that node has crashed or restarted since.
struct PeerRef {
  SimNode::Impl* node = nullptr;
  std::uint64_t life = 0;
  rdma::CmIdHandle id = rdma::kNoCmId;
  rdma::Qpn qpn = 0;
};

struct CmId {
  rdma::CmIdHandle handle = rdma::kNoCmId;
  IdState state = IdState::kIdle;
  Endpoint local, remote;
  std::optional<rdma::Qpn> qpn;
  PeerRef peer;
  bool disconnected_reported = false;
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  rdma::Sge sge;
};

struct SendWr {
  std::uint64_t wr_id = 0;
  bool signaled = true;
  std::vector<std::uint8_t> bytes;  // copied at post time (the buffer may be reused)
  std::uint32_t imm = 0;
};

struct Region {
  std::uintptr_t base = 0;
  std::size_t len = 0;
  std::uint32_t lkey = 0;
};

// The HCA itself, shared by its ports: a node made by Fabric::add_node is
// port 1 of a device of its own, Fabric::add_port adds ports to it. What a
// process opens once per device (one ibv_context, whatever the port) lives
// here: the PD and its MRs, and the SRQ; each port keeps its own rdma_cm
// (listener, ids), QPs and CQ. The first port's open() creates the PD and
// the SRQ, the last port's close_device() releases them.
struct SimDevice {
  std::vector<SimNode::Impl*> ports;  // port k + 1 is ports[k]
  std::size_t index = 0;              // the first port's node index (name, lkeys)
  std::size_t open_ports = 0;         // ports between open() and close_device()
  bool pd = false;
  bool has_srq = false;
  std::uint32_t srq_size = 0;
  std::deque<RecvWr> srq;
  std::uint32_t srq_limit = 0;  // 0 = disarmed
  // Where the SRQ limit event goes: the port that armed it last (the real
  // one goes to the one async fd of the context).
  SimNode::Impl* srq_limit_port = nullptr;
  std::map<std::uint32_t, Region> regions;
  std::uint32_t next_mr = 1;
  DeviceStats stats;
  // Removed or fatal while some port had it open: until the last port
  // closed it, no port may open it again (it would share dead objects).
  bool lost = false;
  std::weak_ptr<rdma::DeviceShare> share;  // rdma::Seam::device_share
  // PD and SRQ gone (the last port closed, or the host crashed).
  void release() {
    lost = false;
    share.reset();
    pd = has_srq = false;
    srq_size = 0;
    srq.clear();
    srq_limit = 0;
    srq_limit_port = nullptr;
  }
};

struct SimQp {
  rdma::Qpn qpn = 0;
  rdma::CmIdHandle id = rdma::kNoCmId;
  QpStateSim state = QpStateSim::kInit;
  bool use_srq = true;
  std::uint32_t max_send_wr = 0, max_recv_wr = 0;
  std::deque<RecvWr> rq;
  std::deque<SendWr> sq;
  bool in_flight = false;      // the head of sq is on the wire
  std::uint64_t epoch = 0;     // bumped on ERR: cancels scheduled transmissions
  TimePoint head_first_try{};  // for the transport retry budget
  std::uint32_t rnr_tries = 0;
  std::uint8_t retry_count = 7, rnr_retry_count = 7, ack_timeout = 14;
  std::uint8_t min_rnr_timer = 12;  // DeviceConfig's; sent in this QP's RNR NAKs
  PeerRef peer;
  std::optional<rdma::WcStatus> fail_next_send;  // Faults::inject_send_error
  bool comm_est_reported = false;                // IBV_EVENT_COMM_EST: first receive while RTR
  bool passive = false;                          // created for an accepted REQ
  bool sent = false;                             // a SEND of this QP reached the responder
};

struct SimNode::Impl final : public rdma::Seam, public TimerService {
  Impl(Fabric& f, SimNode& s, const IpAddr& a, Profile p, std::size_t idx,
       std::shared_ptr<SimDevice> device);

  // --- rdma::Seam (node_cm.cpp / node_verbs.cpp) ---
  Result<rdma::DeviceInfo> open(const Endpoint& local, const rdma::DeviceConfig& cfg) override;
  Result<rdma::MemoryRegion> register_memory(std::span<std::byte> mem) override;
  void unregister_memory(const rdma::MemoryRegion& mr) override;
  Result<rdma::CmIdHandle> create_id() override;
  Result<void> resolve_addr(rdma::CmIdHandle id, const Endpoint& dst, Duration timeout) override;
  Result<void> resolve_route(rdma::CmIdHandle id, Duration timeout) override;
  Result<rdma::Qpn> create_qp(rdma::CmIdHandle id, const rdma::QpCaps& caps) override;
  Result<void> connect(rdma::CmIdHandle id, const rdma::ConnParams& p) override;
  Result<void> accept(rdma::CmIdHandle id, const rdma::ConnParams& p) override;
  Result<void> reject(rdma::CmIdHandle id, std::span<const std::uint8_t> private_data) override;
  Result<void> disconnect(rdma::CmIdHandle id) override;
  Result<void> notify_established(rdma::CmIdHandle id) override;
  Result<void> destroy_qp(rdma::CmIdHandle id) override;
  Result<void> destroy_id(rdma::CmIdHandle id) override;
  Result<void> modify_qp_to_error(rdma::CmIdHandle id) override;
  Result<void> post_send(rdma::CmIdHandle id, std::uint64_t wr_id, const rdma::Sge& sge,
                         std::uint32_t imm, bool signaled) override;
  rdma::PostSendsResult post_sends(rdma::CmIdHandle id, std::span<const rdma::SendWr> wrs) override;
  Result<void> post_one_send(rdma::CmIdHandle id, std::uint64_t wr_id, const rdma::Sge& sge,
                             std::uint32_t imm, bool signaled);
  Result<void> post_drain(rdma::CmIdHandle id, std::uint64_t wr_id) override;
  Result<void> post_srq_recv(std::span<const std::uint64_t> wr_ids,
                             std::span<const rdma::Sge> sges) override;
  Result<void> post_qp_recv(rdma::CmIdHandle id, std::span<const std::uint64_t> wr_ids,
                            std::span<const rdma::Sge> sges) override;
  Result<void> arm_srq_limit(std::uint32_t limit) override;
  bool cm_events_queued() override { return !cm_backlog.empty(); }
  // The device's slot, one for all its ports (SimDevice).
  std::weak_ptr<rdma::DeviceShare>& device_share() override { return dev->share; }
  // Releases what open() created (listener, SRQ, CQ, PD); ids, QPs and MRs
  // the owner left are NOT released, so the oracles show them.
  void close_device() override;

  // --- TimerService ---
  TimePoint now() const override { return fab.now; }
  void schedule(TimePoint deadline) override;

  // --- helpers ---
  // Runs fn after d unless this node crashes or restarts in between.
  void later(Duration d, std::function<void()> fn);
  // Whether a packet from this node gets to `to` (no partition, no link down).
  bool link_up(const SimNode::Impl* to) const;
  // The peer is the life we knew and the fabric between us carries packets.
  bool can_reach(const PeerRef& p) const;
  // Delay of one CM MAD to `to` (nullptr: no such node).
  Duration cm_hop(const SimNode::Impl* to);
  Error fail(int err, const std::string& what);  // counts bad_state for EINVAL
  Result<CmId*> lookup(rdma::CmIdHandle h, const char* op);
  Result<SimQp*> lookup_qp(rdma::CmIdHandle h, const char* op);
  void count_misuse(std::uint64_t SimStats::*which, const std::string& what);

  // Event emission through the fault rules.
  void emit_cm(Duration d, rdma::CmEvent ev);
  void emit_async(Duration d, rdma::AsyncEvent ev);
  struct FaultCounters {
    std::uint64_t *dropped, *duplicated, *delayed, *reordered;
  };
  void apply_fault(const Faults::Rule& r, Duration d, bool cm,
                   std::function<void(bool injected)> deliver, FaultCounters n);
  void deliver_cm(const rdma::CmEvent& ev, bool injected);
  void deliver_async(const rdma::AsyncEvent& ev);
  void release_held(bool cm);
  void report_disconnected(CmId& id);

  // rdma_cm protocol steps, run on the receiving node.
  void on_req(const PeerRef& from, const Endpoint& src, const Endpoint& dst,
              std::vector<std::uint8_t> pd);
  void on_rep(rdma::CmIdHandle active, const PeerRef& from, std::vector<std::uint8_t> pd);
  void on_rtu(rdma::CmIdHandle passive);
  void on_rej(rdma::CmIdHandle active, int status, std::vector<std::uint8_t> pd);
  void on_dreq(rdma::CmIdHandle h, const PeerRef& from);
  void on_drep(rdma::CmIdHandle h);
  void send_dreq(CmId& id);

  // Verbs.
  void push_cqe(const rdma::WorkCompletion& wc);
  void poll_cq();
  void qp_to_error(SimQp& qp);
  void kick(SimQp& qp);
  void attempt(rdma::Qpn qpn, std::uint64_t epoch);
  void fail_head(SimQp& qp, rdma::WcStatus status);
  bool region_ok(const rdma::Sge& sge) const;
  void srq_consumed();
  void overflow_cq();
  // Forgets every object of this port (crash, restart); the device's own
  // (SimDevice) are the caller's.
  void reset_device();
  // The port's part of a crash and a restart (SimNode::crash/restart do
  // every port of the device).
  void crash_port();
  void restart_port();

  Fabric& fabric;
  Fabric::Impl& fab;
  SimNode& self;
  IpAddr addr;
  Profile profile;
  std::size_t index;
  // What this node's device does: its row (sim/profiles.hpp) and the
  // provider row it reports (rdma/provider.hpp).
  const SimCaps& caps() const { return caps_of(profile); }
  const rdma::ProviderProfile& provider() const { return caps().provider; }

  std::uint64_t life = 1;
  bool up = true;
  bool opened = false;
  // Faults::remove_device until Faults::restore_device: every call but the
  // releasing ones (destroy_qp, destroy_id, unregister_memory,
  // close_device) fails with ENODEV, open() included.
  bool device_removed = false;
  rdma::DeviceConfig cfg;
  Endpoint local_ep;
  rdma::CmIdHandle listener = rdma::kNoCmId;
  std::map<rdma::CmIdHandle, CmId> ids;
  std::map<rdma::Qpn, SimQp> qps;
  std::shared_ptr<SimDevice> dev;  // the HCA this node is a port of
  std::uint8_t port_num = 1;       // this node's port on it
  std::deque<rdma::WorkCompletion> cq;
  bool cq_poll_scheduled = false;
  bool cq_broken = false;
  rdma::CmIdHandle handle_base;  // this node's handles are [base, base + 2^32)
  rdma::CmIdHandle next_handle;
  rdma::CmIdHandle first_handle_of_life;
  rdma::Qpn next_qpn = 0x100;
  std::uint16_t next_port = 40000;
  const std::uint32_t max_qp;  // the profile's ibv_device_attr::max_qp (create_qp: ENOMEM beyond)

  rdma::EventSink* sink = nullptr;
  std::function<void()> timer_cb;
  TimePoint timer_deadline = TimePoint::max();
  std::uint64_t timer_gen = 0;
  rdma::CmIdHandle dispatching = rdma::kNoCmId;
  rdma::CmIdHandle dispatching_listen = rdma::kNoCmId;

  bool starved = false;
  std::set<rdma::Qpn> drop_drain;
  struct Held {
    std::uint64_t token = 0;
    bool cm = true;
    std::function<void()> deliver;
  };
  std::vector<Held> held;
  // Faults::hold_cm_channel: while on, CM events wait here (the owner's loop
  // is busy elsewhere) and reach the sink in order once released.
  bool cm_channel_held = false;
  std::deque<std::pair<rdma::CmEvent, bool>> cm_backlog;  // event, injected
  // Timing::cm_event_cost: the next read of the backlog is scheduled
  // (cm_read_pending), the owner is busy until cm_busy_until, and
  // deliver_cm() is called by that read (cm_reading).
  bool cm_read_pending = false, cm_reading = false;
  TimePoint cm_busy_until{};
  // Reads the backlog's front event once the owner is free, then the next.
  void read_cm_later();
  std::map<const SimNode::Impl*, TimePoint> cm_fifo;  // last CM MAD arrival per destination
  std::uint64_t next_token = 1;

  SimStats stats;
  std::vector<std::string> misuse_log;
};

// Whether the node `p` names is still the life we learnt of.
inline bool peer_alive(const PeerRef& p) {
  return p.node != nullptr && p.node->up && p.node->life == p.life;
}

std::string_view to_string(IdState s);

}  // namespace rcnet::sim
