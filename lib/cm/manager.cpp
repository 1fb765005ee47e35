// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The facade, start-up, the timer and async-event dispatch, the one
// state-changing function and the read-only views. The concerns live in
// establish.cpp, teardown.cpp, datapath.cpp and limits.cpp (manager_impl.hpp).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "cm/lifecycle.hpp"
#include "cm/manager_impl.hpp"

namespace rcnet::cm {

Manager::Impl::Impl(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink)
    : cfg_(with_defaults(std::move(cfg))),
      seam_(seam),
      timers_(timers),
      dp_(cfg_, ctr_, seam, timers, sink, table_, *this) {
  self_ = node_id_for(cfg_.local.addr);
  rng_ = cfg_.incarnation * 0x9e3779b97f4a7c15ull + self_;
  (void)auth_.configure(cfg_);
}

std::string_view to_string(Framing f) {
  switch (f) {
    case Framing::kAuto:
      return "auto";
    case Framing::kImmediate:
      return "immediate";
    case Framing::kHeader:
      return "header";
  }
  return "?";
}

std::uint32_t buffer_size(const ManagerConfig& cfg) {
  // The receive headroom (kReceiveHeadroom) is one virtio_net_hdr.
  return static_cast<std::uint32_t>(
      wire::kFrameHeaderLen + (cfg.offload ? kReceiveHeadroom + wire::kVnetHdrLen +
                                                 std::max<std::size_t>(cfg.mtu, wire::kGsoMaxPacket)
                                           : cfg.mtu));
}

RegisteredBytes registered_bytes(const ManagerConfig& cfg) {
  RegisteredBytes r;
  r.buffer = buffer_size(cfg);
  r.send_slots = std::uint64_t{cfg.send_slots} * r.buffer;
  const ManagerConfig c = Manager::Impl::with_defaults(cfg);
  r.receive = c.use_srq ? std::uint64_t{c.srq_size} * r.buffer
                        : std::uint64_t{c.rq_depth} * r.buffer * c.max_connections;
  return r;
}

ManagerConfig Manager::Impl::with_defaults(ManagerConfig c) {
  if (c.max_connections == 0)
    c.max_connections = c.use_srq ? 4096 : 128;
  if (c.srq_limit == 0)
    c.srq_limit = std::max<std::uint32_t>(1, c.srq_size / 8);
  if (c.signal_every == 0)
    c.signal_every = 1;
  return c;
}

Manager::Impl::~Impl() {
  // Best effort: destroy what is left without the spec sequence. A clean
  // stop goes through shutdown() first and leaves nothing here.
  table_.for_each([&](const Conn& c) {
    if (c.has_qp())
      (void)seam_.destroy_qp(c.cm_id);
    if (c.cm_id != rdma::kNoCmId)
      (void)seam_.destroy_id(c.cm_id);
  });
  for (auto id : pending_id_destroy_)
    (void)seam_.destroy_id(id);
}

Result<void> Manager::Impl::start() {
  rdma::DeviceConfig dc;
  dc.srq_size = cfg_.use_srq ? cfg_.srq_size : 0;
  dc.ack_timeout = cfg_.ack_timeout;
  dc.min_rnr_timer = cfg_.min_rnr_timer;
  const std::uint64_t cqes =
      std::uint64_t{cfg_.use_srq ? cfg_.srq_size : 0} +
      std::uint64_t{cfg_.use_srq ? 0 : cfg_.rq_depth} * cfg_.max_connections + cfg_.send_slots +
      2ull * cfg_.max_connections + 1024;
  dc.cq_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(cqes, 1u << 22));
  auto info = seam_.open(cfg_.local, dc);
  if (!info)
    return info.error();
  device_ = *info;
  if (auto r = dp_.set_profile(device_.profile); !r)
    return r;
  if (auto r = dp_.start(); !r)
    return r;
  const std::uint32_t buf_size = dp_.buffer_size();
  const auto mib = [buf_size](std::uint64_t n) {
    return static_cast<double>(n) * buf_size / 1048576.0;
  };
  spdlog::info(
      "rcnet manager up: node {} incarnation {:#x} on {} ({}), {}; {} send slots x {} bytes "
      "({:.1f} MiB); mtu {}, offload {}, max {} connections; {} device: {} framing{}",
      self_, cfg_.incarnation, cfg_.local, device_.name,
      cfg_.use_srq
          ? fmt::format("SRQ of {} receive WRs x {} bytes ({:.1f} MiB registered)", cfg_.srq_size,
                        buf_size, mib(cfg_.srq_size))
          : fmt::format("per-QP RQ of {} receive WRs x {} bytes ({:.1f} MiB registered per QP)",
                        cfg_.rq_depth, buf_size, mib(cfg_.rq_depth)),
      cfg_.send_slots, buf_size, mib(cfg_.send_slots), cfg_.mtu,
      cfg_.offload ? "on (GSO frames up to 64 KiB)" : "off", max_connections(),
      dp_.profile().transport, dp_.wants_header() ? "header" : "immediate",
      dp_.grant() != 0 ? fmt::format(", {} receive credits per connection (no RNR)", dp_.grant())
                       : std::string());
  if (max_connections() < cfg_.max_connections) {
    spdlog::warn(
        "max_connections {} lowered to {}: the device has no RNR retry, and the SRQ's {} "
        "receive buffers hold {} connections' {} credits each (one window kept for a "
        "connection in teardown); raise srq.size for more",
        cfg_.max_connections, max_connections(), cfg_.srq_size, max_connections(), dp_.grant());
  }
  return {};
}

void Manager::Impl::settle() {
  admit_waiting();
  dp_.settle();
  reschedule();
}

void Manager::Impl::reschedule() {
  TimePoint next = TimePoint::max();
  if (!pending_id_destroy_.empty() || release_pending_)
    next = now();
  next = std::min({next, table_.next_deadline(), table_.next_retry()});
  // The reaper's wakeup is recomputed only when one of its two lists became
  // non-empty, and it is cancelled when both are empty. A list's
  // front due never moves earlier while the list stays non-empty (conns
  // join at the back, with `now`; reconfigure() drops the request), while
  // traffic moves it later on every packet: following it would re-arm the
  // timer per packet, a syscall each in the daemon. A wakeup that comes too
  // early finds nothing expired and asks for the next one (for a busy idle
  // front, at most one per idle_timeout).
  const bool idle = table_.idle_front() != nullptr;
  const bool reclaim = table_.reclaim_front() != nullptr;
  if (!idle && !reclaim)
    next_reap_ = TimePoint::max();
  else if (next_reap_ == TimePoint::max() || (idle && !reap_watch_idle_) ||
           (reclaim && !reap_watch_reclaim_))
    next_reap_ = std::min(next_reap_, reaper_due());
  reap_watch_idle_ = idle;
  reap_watch_reclaim_ = reclaim;
  next = std::min(next, next_reap_);
  if (next != scheduled_) {
    scheduled_ = next;
    timers_.schedule(next);
  }
}

void Manager::Impl::on_timer() {
  const TimePoint t = now();
  scheduled_ = TimePoint::max();  // that wakeup is used up
  cm_backlog_.reset();
  forget_idle_peers();
  // Deferred rdma_cm id destruction (never inside the id's own callback).
  auto ids = std::move(pending_id_destroy_);
  pending_id_destroy_.clear();
  for (auto id : ids)
    destroy_id_now(id);
  if (release_pending_)
    release_device();

  while (Conn* c = table_.pop_expired(t))
    on_deadline(*c);
  while (Peer* p = table_.pop_retry(t)) {
    if (p->conn == 0 && !p->queue.empty() && !shutting_down_ && link_up_)
      start_connect(*p);
  }
  if (next_reap_ <= t) {
    next_reap_ = TimePoint::max();
    reap_tick(t);
  }
}

// The bound of the conn's current state ran out: the row's Expiry
// (cm/lifecycle.cpp has the bounds).
void Manager::Impl::on_deadline(Conn& c) {
  const Stage st = stage(c.state, cfg_);
  switch (st.on_expiry) {
    case Expiry::kAttemptFails:
      if (!defer_for_cm_backlog(c, *st.bound))
        attempt_failed(c, std::string(st.why));
      break;
    case Expiry::kToError:
      to_error(c);
      break;
    case Expiry::kDrainAnyway:
      last_wqe_timed_out(c);
      break;
    case Expiry::kForceDestroy:
      drain_timed_out(c);
      break;
    case Expiry::kNone:
      // ESTABLISHED's only bound: the peer's proof (auth_established()).
      if (c.state == ConnState::kEstablished && c.auth == AuthState::kAwaiting)
        auth_refused(c, Refusal::kNoProof, "no proof within timeouts.connect");
      break;
  }
}

// A deadline put off for rdma_cm events queued on the channel is looked at
// again this much later (kCmBacklogGrace, manager.hpp).
constexpr Duration kCmBacklogRecheck = 100ms;

// The deadline is ours: the event that ends the wait (ESTABLISHED, REJECTED,
// ADDR_RESOLVED...) may already be queued on the channel, unread because
// the loop reads kCmEventBudget events per wakeup and a storm of REQs came
// first. Tearing the attempt down then would throw away a connection the
// peer holds ESTABLISHED (lab, 1,000 REQs to one hub: 854 of them). So the
// deadline acts only once the channel was seen empty, or at the grace.
bool Manager::Impl::defer_for_cm_backlog(Conn& c, Duration bound) {
  const TimePoint t = now();
  const TimePoint cap = c.state_since + bound + kCmBacklogGrace;
  if (t >= cap)
    return false;
  if (!cm_backlog_)
    cm_backlog_ = seam_.cm_events_queued();
  if (!*cm_backlog_)
    return false;
  if (!c.cm_deferred) {
    c.cm_deferred = true;
    ++ctr_.connect_deadlines_deferred;
    auto f = fields(c);
    log::event(spdlog::level::debug, f,
               "QPN {} peer {}: {} deadline put off: rdma_cm events queued unread", c.qpn,
               c.peer_addr, to_string(c.state));
  }
  // Not entering a state: the same state's deadline, put off (the one
  // deadline written outside arm_bound()).
  table_.set_deadline(c, std::min(t + kCmBacklogRecheck, cap));
  return true;
}

void Manager::Impl::on_async_event(const rdma::AsyncEvent& ev) {
  using T = rdma::AsyncEventType;
  switch (ev.type) {
    case T::kSrqLimitReached:
      dp_.srq_limit_reached();
      break;
    case T::kLastWqeReached:
      on_last_wqe(ev.qpn);
      break;
    case T::kQpFatal:
    case T::kQpReqErr:
    case T::kQpAccessErr: {
      ++ctr_.qp_fatal_events;
      Conn* c = table_.by_qpn(ev.qpn);
      if (c == nullptr || is_teardown(c->state)) {
        ++ctr_.async_events_ignored;  // unknown, or already in its one teardown
        break;
      }
      teardown(*c, TeardownKind::kHard,
               fmt::format("{}{}", rdma::to_string(ev.type), blame_carrier()));
      break;
    }
    case T::kPortError:
    case T::kPortActive:
      // Another port of our device (two rails on one HCA each see both).
      if (ev.port != 0 && device_.port != 0 && ev.port != device_.port) {
        ++ctr_.async_events_ignored;
        break;
      }
      if (ev.type == T::kPortActive) {
        if (!link_up_)
          link_changed(true, LinkCause::kPortError);
        break;
      }
      // A link flap: recovered from by itself when the port comes back, so
      // warn, not error (an operator's alerting keys on error).
      spdlog::warn(
          "RDMA port down (IBV_EVENT_PORT_ERR): tearing every connection down until it "
          "is active again");
      link_changed(false, LinkCause::kPortError);
      break;

    case T::kCqErr:
    case T::kSrqErr:
      device_failed(std::string(rdma::to_string(ev.type)));
      break;
    case T::kDeviceFatal:
      device_lost(std::string(rdma::to_string(ev.type)));
      break;
    case T::kCommEstablished:
      comm_established(ev.qpn);
      break;
    case T::kSqDrained:
    case T::kPathMigrated:
    case T::kOther:
      ++ctr_.async_events_ignored;
      break;
  }
}

log::Fields Manager::Impl::fields(const Conn& c) const {
  log::Fields f;
  f.peer_node = c.peer;
  f.peer_addr = c.peer_addr.addr;
  f.peer_port = c.peer_addr.port;
  f.qpn = c.qpn;
  f.remote_qpn = c.remote_qpn;
  f.conn_state = to_string(c.state);
  if (is_teardown(c.state))
    f.teardown_stage = to_string(c.state);
  f.reason = c.teardown_reason;
  return f;
}

bool Manager::Impl::set_state(Conn& c, ConnState to, std::string_view why) {
  const ConnState from = c.state;
  if (!is_legal_transition(from, to)) {
    ++ctr_.illegal_transitions;
    auto f = fields(c);
    log::event(spdlog::level::critical, f,
               "BUG: illegal QP transition {} -> {} ({}) for QPN {} peer {}: abandoning the QP",
               to_string(from), to_string(to), why, c.qpn, c.peer_addr);
    return false;
  }
  const TimePoint t = now();
  const Duration spent = t - c.state_since;
  table_.set_state(c, to, t);
  arm_bound(c);
  if (to == ConnState::kEstablished)
    connect_time_.observe(t - c.created);
  else if (to == ConnState::kDestroyed && !c.teardown_reason.empty())
    teardown_time_.observe(t - c.teardown_since);
  auto f = fields(c);
  log::event(
      is_teardown(to) || to == ConnState::kEstablished ? spdlog::level::info : spdlog::level::debug,
      f, "QPN {} peer {}: {} -> {} after {:.1f} ms ({})", c.qpn, c.peer_addr, to_string(from),
      to_string(to), to_ms(spent), why);
  emit(EventKind::kState, c, why, from);
  return true;
}

Conn& Manager::Impl::add_conn(Peer& p, bool active) {
  Conn& c = table_.add(p, active, now());
  arm_bound(c);
  return c;
}

void Manager::Impl::arm_bound(Conn& c) {
  const std::optional<Duration> b = bound(c.state, cfg_);
  table_.set_deadline(c, b ? c.state_since + *b : TimePoint::max());
}

void Manager::Impl::emit(EventKind kind, const Conn& c, std::string_view reason, ConnState from,
                         std::string_view message_id) {
  if (!observer_)
    return;
  Event e;
  e.kind = kind;
  e.time = now();
  e.conn = c.id;
  e.peer = c.peer;
  e.peer_addr = c.peer_addr;
  e.qpn = c.qpn;
  e.remote_qpn = c.remote_qpn;
  e.from = from;
  e.to = c.state;
  e.reason = reason;
  e.message_id = message_id;
  observer_(e);
}

bool Manager::Impl::stopped() const {
  return shutting_down_ && table_.size() == 0 && pending_id_destroy_.empty();
}

Snapshot Manager::Impl::snapshot() const {
  Snapshot s;
  const TimePoint t = now();
  s.node = self_;
  s.incarnation = cfg_.incarnation;
  s.local = cfg_.local;
  s.device = device_.name;
  s.port = device_.port;
  s.device_removed = device_gone_;
  if (removed_by_)
    s.device_removed_by = std::string(to_string(*removed_by_));
  if (readopted_by_)
    s.device_readopted_by = std::string(to_string(*readopted_by_));
  s.mtu = cfg_.mtu;
  s.offload = cfg_.offload;
  s.transport = std::string(dp_.profile().transport);
  s.header = dp_.wants_header();
  s.credits = dp_.grant();
  s.max_connections = max_connections();
  dp_.snapshot(s);
  table_.for_each_peer([&](const Peer& p) {
    PeerSnapshot ps;
    ps.node = p.node;
    ps.underlay = p.underlay;
    ps.overlay = p.overlay;
    ps.incarnation = p.incarnation;
    ps.queue_depth = static_cast<std::uint32_t>(p.queue.size());
    ps.conn_id = p.conn;
    ps.attempts = p.attempts;
    if (p.last_attempt != TimePoint::min())
      ps.since_attempt = t - p.last_attempt;
    ps.last_result = p.last_result;
    if (p.last_result_at != TimePoint::min())
      ps.since_result = t - p.last_result_at;
    if (p.retry_at != TimePoint::max())
      ps.retry_in = std::max(Duration::zero(), p.retry_at - t);
    s.peers.push_back(std::move(ps));
  });
  std::sort(s.peers.begin(), s.peers.end(), [](auto& a, auto& b) { return a.node < b.node; });
  s.qps.reserve(table_.size());
  table_.for_each([&](const Conn& c) {
    QpSnapshot q;
    q.id = c.id;
    q.peer_node = c.peer;
    q.peer_addr = c.peer_addr;
    q.qpn = c.qpn;
    q.remote_qpn = c.remote_qpn;
    q.state = c.state;
    q.active = c.active;
    q.in_service = c.in_service;
    q.offload = c.gso;
    q.header = c.header;
    q.peer_grant = c.peer_grant;
    q.tx_credits = c.peer_grant != 0 ? c.tx_credits : 0;
    q.credits_owed = c.credits_owed;
    q.time_in_state = t - c.state_since;
    q.age = t - c.created;
    q.idle = t - c.last_activity;
    q.tx_packets = c.tx_packets;
    q.tx_bytes = c.tx_bytes;
    q.rx_packets = c.rx_packets;
    q.rx_bytes = c.rx_bytes;
    q.teardown_reason = c.teardown_reason;
    q.auth = to_string(c.auth);
    q.auth_key_id = c.auth == AuthState::kProven ? c.auth_key_id : 0;
    s.qps.push_back(std::move(q));
  });
  std::sort(s.qps.begin(), s.qps.end(), [](auto& a, auto& b) { return a.id < b.id; });
  s.counters = ctr_;
  s.connect_time = connect_time_;
  s.teardown_time = teardown_time_;
  return s;
}

std::vector<rdma::Qpn> Manager::Impl::live_qpns() const {
  std::vector<rdma::Qpn> v;
  table_.for_each([&](const Conn& c) {
    if (c.has_qp())
      v.push_back(c.qpn);
  });
  std::sort(v.begin(), v.end());
  return v;
}

std::size_t Manager::Impl::live_cm_ids() const {
  std::size_t n = pending_id_destroy_.size();
  table_.for_each([&](const Conn& c) { n += c.cm_id != rdma::kNoCmId ? 1 : 0; });
  return n;
}

// ================================================================ Manager
// Every entry point that can change state ends in one settle().
Manager::Manager(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink)
    : impl_(std::make_unique<Impl>(std::move(cfg), seam, timers, sink)) {}
Manager::~Manager() = default;

Result<void> Manager::start() {
  auto r = impl_->start();
  impl_->settle();
  return r;
}
SendResult Manager::send(const Endpoint& peer, std::span<const std::byte> packet) {
  const SendResult r = impl_->dp_.send(peer, packet);
  impl_->settle();
  return r;
}
std::span<std::byte> Manager::lend_send_buffer() {
  return impl_->dp_.lend_send_buffer();
}
SendResult Manager::send_lent(const Endpoint& peer, std::size_t len) {
  const SendResult r = impl_->dp_.send_lent(peer, len);
  impl_->settle();
  return r;
}
void Manager::return_lent() {
  impl_->dp_.return_lent();
  impl_->settle();
}
void Manager::begin_send_batch() {
  impl_->dp_.begin_batch();
}
void Manager::end_send_batch() {
  impl_->dp_.end_batch();
  impl_->settle();
}
void Manager::on_cm_event(const rdma::CmEvent& ev) {
  impl_->on_cm_event(ev);
  impl_->settle();
}
void Manager::on_async_event(const rdma::AsyncEvent& ev) {
  impl_->on_async_event(ev);
  impl_->settle();
}
void Manager::on_completions(std::span<const rdma::WorkCompletion> wcs) {
  impl_->dp_.on_completions(wcs);
  impl_->settle();
}
void Manager::on_timer() {
  impl_->on_timer();
  impl_->settle();
}
void Manager::peer_failed(const IpAddr& peer, std::string_view why, Duration probing) {
  impl_->peer_failed(peer, why, probing);
  impl_->settle();
}
void Manager::link_changed(bool up) {
  impl_->link_changed(up);
  impl_->settle();
}
bool Manager::disconnect_peer(NodeId node, std::string_view why) {
  const bool r = impl_->disconnect_peer(node, why);
  impl_->settle();
  return r;
}
std::size_t Manager::reap_idle(Duration idle) {
  const std::size_t n = impl_->reap_idle(idle);
  impl_->settle();
  return n;
}
void Manager::reconfigure(const ManagerConfig& cfg) {
  impl_->reconfigure(cfg);
  impl_->settle();
}
void Manager::shutdown() {
  impl_->shutdown();
  impl_->settle();
}
bool Manager::stopped() const {
  return impl_->stopped();
}
bool Manager::device_present() const {
  return !impl_->device_gone();
}
Result<void> Manager::readopt(DevicePath noticed_by) {
  auto r = impl_->readopt(noticed_by);
  impl_->settle();
  return r;
}
void Manager::device_unregistered(std::string_view why) {
  impl_->device_unregistered(why);
  impl_->settle();
}
void Manager::set_observer(EventObserver observer) {
  impl_->observer_ = std::move(observer);
}
Snapshot Manager::snapshot() const {
  return impl_->snapshot();
}
Manager::SendSlots Manager::send_slots() const {
  return {.free = impl_->dp_.send_slots_free(), .total = impl_->dp_.send_slots_total()};
}
const Counters& Manager::counters() const {
  return impl_->ctr_;
}
const ManagerConfig& Manager::config() const {
  return impl_->cfg_;
}
std::optional<std::uint32_t> Manager::Impl::peer_mtu(const Endpoint& peer) const {
  auto& table = const_cast<ConnTable&>(table_);  // lookups only
  Peer* p = table.find_peer(node_id_for(peer.addr));
  const Conn* c = p != nullptr ? table.conn_of(*p) : nullptr;
  if (c == nullptr || c->state != ConnState::kEstablished)
    return std::nullopt;
  return c->peer_mtu;
}
std::optional<Endpoint> Manager::Impl::peer_underlay(NodeId node) const {
  const Peer* p = const_cast<ConnTable&>(table_).find_peer(node);  // lookups only
  if (p == nullptr)
    return std::nullopt;
  return p->underlay;
}
std::optional<std::uint32_t> Manager::peer_mtu(const Endpoint& peer) const {
  return impl_->peer_mtu(peer);
}
std::optional<Endpoint> Manager::peer_underlay(NodeId node) const {
  return impl_->peer_underlay(node);
}
NodeId Manager::node_id() const {
  return impl_->self_;
}
std::vector<rdma::Qpn> Manager::live_qpns() const {
  return impl_->live_qpns();
}
std::size_t Manager::live_cm_ids() const {
  return impl_->live_cm_ids();
}

}  // namespace rcnet::cm
