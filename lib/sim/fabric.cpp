// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The fabric: virtual clock, event queue, nodes, fault rules, and the
// delivery of events to each node's sink.
#include <fmt/format.h>
#include <algorithm>
#include <utility>

#include "sim/internal.hpp"

namespace rcnet::sim {

std::string_view to_string(Profile p) {
  switch (p) {
    case Profile::kMlx:
      return "mlx";
    case Profile::kEhca:
      return "ehca";
    case Profile::kRxe:
      return "rxe";
  }
  return "?";
}

std::string_view to_string(QpStateSim s) {
  switch (s) {
    case QpStateSim::kReset:
      return "RESET";
    case QpStateSim::kInit:
      return "INIT";
    case QpStateSim::kRtr:
      return "RTR";
    case QpStateSim::kRts:
      return "RTS";
    case QpStateSim::kErr:
      return "ERR";
  }
  return "?";
}

// --- Fabric::Impl -------------------------------------------------------------

void Fabric::Impl::at(TimePoint t, std::function<void()> fn, bool is_timer) {
  if (t < now)
    t = now;
  queue.emplace(std::make_pair(t, seq++), Item{is_timer, std::move(fn)});
  if (!is_timer)
    ++pending_events;
}

bool Fabric::Impl::step() {
  if (queue.empty())
    return false;
  auto first = queue.begin();
  now = first->first.first;
  Item item = std::move(first->second);
  queue.erase(first);
  if (!item.is_timer)
    --pending_events;
  ++processed;
  item.fn();
  return true;
}

// --- Fabric -------------------------------------------------------------------

Fabric::Fabric(std::uint64_t seed) : impl_(std::make_unique<Impl>(seed)) {
  impl_->faults.reset(new Faults(*this));
}
Fabric::~Fabric() = default;

TimePoint Fabric::now() const {
  return impl_->now;
}
Fabric::Impl& Fabric::impl() {
  return *impl_;
}
Faults& Fabric::faults() {
  return *impl_->faults;
}
Timing& Fabric::timing() {
  return impl_->timing;
}
std::uint64_t Fabric::events_processed() const {
  return impl_->processed;
}
void Fabric::set_tracer(std::function<void(const std::string&)> tracer) {
  impl_->tracer = std::move(tracer);
}

SimNode& Fabric::add_node(const IpAddr& underlay, Profile profile) {
  if (auto* n = node(underlay))
    return *n;
  impl_->nodes.push_back(
      std::unique_ptr<SimNode>(new SimNode(*this, underlay, profile, impl_->nodes.size())));
  SimNode* n = impl_->nodes.back().get();
  impl_->by_addr[underlay] = n;
  return *n;
}

SimNode* Fabric::node(const IpAddr& underlay) {
  auto it = impl_->by_addr.find(underlay);
  return it == impl_->by_addr.end() ? nullptr : it->second;
}

std::vector<SimNode*> Fabric::nodes() {
  std::vector<SimNode*> out;
  for (auto& n : impl_->nodes)
    out.push_back(n.get());
  return out;
}

void Fabric::run_until(TimePoint t) {
  while (!impl_->queue.empty() && impl_->queue.begin()->first.first <= t)
    impl_->step();
  if (impl_->now < t)
    impl_->now = t;
}

void Fabric::run_for(Duration d) {
  run_until(impl_->now + d);
}

bool Fabric::run_until_idle(Duration limit) {
  const TimePoint deadline = impl_->now + limit;
  for (;;) {
    if (impl_->queue.empty())
      return true;
    if (impl_->queue.begin()->first.first > deadline) {
      if (impl_->pending_events == 0)
        return true;
      impl_->now = deadline;
      return false;
    }
    impl_->step();
  }
}

// --- Faults -------------------------------------------------------------------

void Faults::cm(FaultAction action, rdma::CmEventType type, std::uint32_t count,
                std::optional<IpAddr> node, Duration delay) {
  rules_.push_back(Rule{true, action, static_cast<std::uint8_t>(type), node, count, delay});
}

void Faults::async(FaultAction action, rdma::AsyncEventType type, std::uint32_t count,
                   std::optional<IpAddr> node, Duration delay) {
  rules_.push_back(Rule{false, action, static_cast<std::uint8_t>(type), node, count, delay});
}

void Faults::clear() {
  rules_.clear();
  rtu_losses_.clear();
}

void Faults::lose_rtu(const IpAddr& passive, std::uint32_t count) {
  rtu_losses_.emplace_back(passive, count);
}

bool Faults::take_rtu_loss(const IpAddr& passive) {
  for (auto it = rtu_losses_.begin(); it != rtu_losses_.end(); ++it) {
    if (it->first == passive && it->second > 0) {
      if (--it->second == 0)
        rtu_losses_.erase(it);
      return true;
    }
  }
  return false;
}

const Faults::Rule* Faults::match(bool cm, std::uint8_t type, const IpAddr& node) {
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->cm != cm || it->type != type || it->remaining == 0)
      continue;
    if (it->node && *it->node != node)
      continue;
    last_ = *it;
    if (--it->remaining == 0)
      rules_.erase(it);
    return &last_;
  }
  return nullptr;
}

SimNode::Impl* Faults::live(const IpAddr& a) {
  SimNode* n = fabric_.node(a);
  if (n == nullptr || !n->impl().up)
    return nullptr;
  return &n->impl();
}

bool Faults::inject_qp_fatal(const IpAddr& node, rdma::Qpn qpn) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || !n->qps.contains(qpn))
    return false;
  n->qp_to_error(n->qps.at(qpn));
  // An injected fault is reported on every profile, rxe included.
  n->emit_async(n->fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kQpFatal, qpn});
  return true;
}

bool Faults::inject_retry_exceeded(const IpAddr& node, rdma::Qpn qpn) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || !n->qps.contains(qpn))
    return false;
  SimQp& qp = n->qps.at(qpn);
  if (qp.state == QpStateSim::kErr)
    return true;
  if (!qp.sq.empty()) {
    n->fail_head(qp, rdma::WcStatus::kRetryExceeded);
  } else {
    qp.fail_next_send = true;
  }
  return true;
}

bool Faults::inject_last_wqe(const IpAddr& node, rdma::Qpn qpn) {
  SimNode::Impl* n = live(node);
  if (n == nullptr)
    return false;
  n->later(n->fab.timing.async, [n, qpn] {
    n->deliver_async(rdma::AsyncEvent{rdma::AsyncEventType::kLastWqeReached, qpn});
  });
  return true;
}

void Faults::starve_receives(const IpAddr& node, bool on) {
  if (SimNode* n = fabric_.node(node))
    n->impl().starved = on;
}

void Faults::hold_cm_channel(const IpAddr& node, bool on) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || n->cm_channel_held == on)
    return;
  n->cm_channel_held = on;
  if (!on && !n->cm_backlog.empty()) {
    n->later(0ns, [n] {
      // Delivered one by one; an event the sink causes is queued behind.
      while (!n->cm_backlog.empty() && !n->cm_channel_held) {
        auto [ev, injected] = std::move(n->cm_backlog.front());
        n->cm_backlog.pop_front();
        n->deliver_cm(ev, injected);
      }
    });
  }
}

void Faults::partition(const IpAddr& a, const IpAddr& b, bool cut) {
  auto key = std::minmax(a, b);
  if (cut)
    fabric_.impl().cut.insert(key);
  else
    fabric_.impl().cut.erase(key);
}

void Faults::isolate(const IpAddr& node, bool cut) {
  if (cut)
    fabric_.impl().isolated.insert(node);
  else
    fabric_.impl().isolated.erase(node);
}

void Faults::crash(const IpAddr& node) {
  if (SimNode* n = fabric_.node(node))
    n->crash();
}

void Faults::cq_overflow(const IpAddr& node) {
  if (SimNode::Impl* n = live(node))
    n->overflow_cq();
}

void Faults::drop_drain_completion(const IpAddr& node, rdma::Qpn qpn) {
  if (SimNode* n = fabric_.node(node))
    n->impl().drop_drain.insert(qpn);
}

// --- SimNode --------------------------------------------------------------------

SimNode::SimNode(Fabric& fabric, const IpAddr& underlay, Profile profile, std::size_t index)
    : impl_(std::make_unique<Impl>(fabric, *this, underlay, profile, index)) {}
SimNode::~SimNode() = default;

SimNode::Impl& SimNode::impl() {
  return *impl_;
}
rdma::Seam& SimNode::seam() {
  return *impl_;
}
TimerService& SimNode::timers() {
  return *impl_;
}
void SimNode::set_sink(rdma::EventSink* sink) {
  impl_->sink = sink;
}
void SimNode::set_timer_callback(std::function<void()> cb) {
  impl_->timer_cb = std::move(cb);
}
bool SimNode::is_up() const {
  return impl_->up;
}
const IpAddr& SimNode::address() const {
  return impl_->addr;
}
Profile SimNode::profile() const {
  return impl_->profile;
}
void SimNode::set_max_qp(std::uint32_t max_qp) {
  impl_->max_qp = max_qp;
}

void SimNode::crash() {
  Impl& n = *impl_;
  if (!n.up)
    return;
  n.fab.trace(n.addr, "CRASH");
  n.up = false;
  ++n.life;  // every closure scheduled for the old life is now void
  n.reset_device();
  n.sink = nullptr;
  n.timer_cb = nullptr;
  n.timer_deadline = TimePoint::max();
  ++n.timer_gen;
}

void SimNode::restart() {
  Impl& n = *impl_;
  if (n.up)
    return;
  n.fab.trace(n.addr, "RESTART");
  n.up = true;
  ++n.life;
  n.reset_device();
  n.first_handle_of_life = n.next_handle;
}

TimePoint SimNode::timer_deadline() const {
  return impl_->timer_deadline;
}
std::size_t SimNode::live_qps() const {
  return impl_->qps.size();
}
std::vector<std::pair<rdma::Qpn, QpStateSim>> SimNode::qp_table() const {
  std::vector<std::pair<rdma::Qpn, QpStateSim>> out;
  for (const auto& [qpn, qp] : impl_->qps)
    out.emplace_back(qpn, qp.state);
  return out;
}
std::size_t SimNode::live_cm_ids() const {
  return impl_->ids.size() - (impl_->ids.contains(impl_->listener) ? 1 : 0);
}
std::uint32_t SimNode::srq_posted() const {
  return static_cast<std::uint32_t>(impl_->srq.size());
}
std::size_t SimNode::rq_posted(rdma::Qpn qpn) const {
  auto it = impl_->qps.find(qpn);
  return it == impl_->qps.end() ? 0 : it->second.rq.size();
}
std::size_t SimNode::sends_outstanding(rdma::Qpn qpn) const {
  auto it = impl_->qps.find(qpn);
  return it == impl_->qps.end() ? 0 : it->second.sq.size();
}
std::optional<QpStateSim> SimNode::qp_state(rdma::Qpn qpn) const {
  auto it = impl_->qps.find(qpn);
  if (it == impl_->qps.end())
    return std::nullopt;
  return it->second.state;
}
std::size_t SimNode::cq_unpolled() const {
  return impl_->cq.size();
}
const SimStats& SimNode::stats() const {
  return impl_->stats;
}
const std::vector<std::string>& SimNode::misuse_log() const {
  return impl_->misuse_log;
}

// --- SimNode::Impl: plumbing shared by the CM and verbs halves ------------------

SimNode::Impl::Impl(Fabric& f, SimNode& s, const IpAddr& a, Profile p, std::size_t idx)
    : fabric(f),
      fab(f.impl()),
      self(s),
      addr(a),
      profile(p),
      index(idx),
      // Handles differ between nodes too, so a handle passed to the wrong
      // node's seam is caught as unknown.
      handle_base((static_cast<rdma::CmIdHandle>(idx) + 1) << 32),
      next_handle(handle_base),
      first_handle_of_life(handle_base),
      max_qp(p == Profile::kRxe   ? 1048560
             : p == Profile::kMlx ? 262144
                                  : 16384) {}

void SimNode::Impl::reset_device() {
  opened = false;
  cfg = {};
  local_ep = {};
  listener = rdma::kNoCmId;
  ids.clear();
  qps.clear();
  has_srq = false;
  srq.clear();
  srq_limit = 0;
  cq.clear();
  cq_poll_scheduled = false;
  cq_broken = false;
  regions.clear();
  dispatching = dispatching_listen = rdma::kNoCmId;
  starved = false;
  drop_drain.clear();
  held.clear();
  cm_channel_held = false;
  cm_backlog.clear();
  cm_fifo.clear();
}

void SimNode::Impl::later(Duration d, std::function<void()> fn) {
  fab.after(d, [this, l = life, fn = std::move(fn)] {
    if (up && life == l)
      fn();
  });
}

bool SimNode::Impl::link_up(const SimNode::Impl* to) const {
  if (to == nullptr)
    return false;
  if (fab.isolated.contains(addr) || fab.isolated.contains(to->addr))
    return false;
  return !fab.cut.contains(std::minmax(addr, to->addr));
}

bool SimNode::Impl::can_reach(const PeerRef& p) const {
  return peer_alive(p) && link_up(p.node);
}

Duration SimNode::Impl::cm_hop(const SimNode::Impl* to) {
  // Jitter, but CM MADs between two nodes stay in order (an RTU is never
  // overtaken by the DREQ sent after it); only Faults reorder events.
  TimePoint at = fab.now + fab.timing.cm_hop + fab.rng.uniform(0ns, fab.timing.cm_jitter);
  TimePoint& last = cm_fifo[to];
  if (at <= last)
    at = last + 1ns;
  last = at;
  return at - fab.now;
}

void SimNode::Impl::schedule(TimePoint deadline) {
  timer_deadline = deadline;
  const std::uint64_t gen = ++timer_gen;
  if (deadline == TimePoint::max() || !up)
    return;
  fab.at(
      deadline,
      [this, gen] {
        if (gen != timer_gen || !up)
          return;
        timer_deadline = TimePoint::max();
        fab.trace(addr, "TIMER");
        if (timer_cb)
          timer_cb();
      },
      /*is_timer=*/true);
}

Error SimNode::Impl::fail(int err, const std::string& what) {
  if (err == EINVAL)
    ++stats.bad_state;
  return Error::from_errno(err, "sim " + addr.to_string() + ": " + what);
}

void SimNode::Impl::count_misuse(std::uint64_t SimStats::*which, const std::string& what) {
  ++(stats.*which);
  ++stats.misuse;
  misuse_log.push_back(
      fmt::format("t={} {}: {}", (fab.now - TimePoint()).count(), addr.to_string(), what));
}

Result<CmId*> SimNode::Impl::lookup(rdma::CmIdHandle h, const char* op) {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, std::string("sim: ") + op + " on a crashed node");
  }
  auto it = ids.find(h);
  if (it != ids.end())
    return &it->second;
  if (h >= handle_base && h < first_handle_of_life) {
    ++stats.stale_handle;
  } else {
    count_misuse(&SimStats::unknown_handle, fmt::format("{} on unknown cm id {:#x}", op, h));
  }
  return Error::from_errno(EINVAL, fmt::format("sim {}: {} unknown cm id", addr.to_string(), op));
}

Result<SimQp*> SimNode::Impl::lookup_qp(rdma::CmIdHandle h, const char* op) {
  auto id = lookup(h, op);
  if (!id)
    return id.error();
  if (!(*id)->qpn || !qps.contains(*(*id)->qpn))
    return fail(EINVAL, std::string(op) + ": no QP");
  return &qps.at(*(*id)->qpn);
}

// --- Event emission and delivery -----------------------------------------------

// One fault rule applied to one event; the same for CM and async events.
// `deliver(injected)` hands the event to the sink; injected copies (the
// duplicate, the delayed or reordered one) are never matched by a rule again.
void SimNode::Impl::apply_fault(const Faults::Rule& r, Duration d, bool cm,
                                std::function<void(bool injected)> deliver, FaultCounters n) {
  switch (r.action) {
    case FaultAction::kDrop:
      ++*n.dropped;
      return;
    case FaultAction::kDuplicate:
      ++*n.duplicated;
      later(d, [deliver] { deliver(false); });
      later(d, [deliver] { deliver(true); });
      return;
    case FaultAction::kDelay:
      ++*n.delayed;
      later(d + r.delay, [deliver] { deliver(true); });
      return;
    case FaultAction::kReorder: {
      ++*n.reordered;
      const std::uint64_t token = next_token++;
      later(d, [this, token, cm, deliver] {
        held.push_back(Held{token, cm, [deliver] { deliver(true); }});
        later(fab.timing.reorder_hold, [this, token] {
          auto it = std::find_if(held.begin(), held.end(),
                                 [token](const Held& h) { return h.token == token; });
          if (it == held.end())
            return;
          auto fn = std::move(it->deliver);
          held.erase(it);
          fn();
        });
      });
      return;
    }
  }
}

void SimNode::Impl::emit_cm(Duration d, rdma::CmEvent ev) {
  const Faults::Rule* r = fab.faults->match(true, static_cast<std::uint8_t>(ev.type), addr);
  auto deliver = [this, ev = std::move(ev)](bool injected) { deliver_cm(ev, injected); };
  if (r == nullptr) {
    later(d, [deliver] { deliver(false); });
    return;
  }
  apply_fault(*r, d, true, deliver,
              {&stats.cm_events_dropped, &stats.cm_events_duplicated, &stats.cm_events_delayed,
               &stats.cm_events_reordered});
}

void SimNode::Impl::emit_async(Duration d, rdma::AsyncEvent ev) {
  const Faults::Rule* r = fab.faults->match(false, static_cast<std::uint8_t>(ev.type), addr);
  auto deliver = [this, ev](bool) { deliver_async(ev); };
  if (r == nullptr) {
    later(d, [deliver] { deliver(false); });
    return;
  }
  apply_fault(*r, d, false, deliver,
              {&stats.async_events_dropped, &stats.async_events_duplicated,
               &stats.async_events_delayed, &stats.async_events_reordered});
}

void SimNode::Impl::release_held(bool is_cm) {
  std::vector<std::function<void()>> out;
  for (auto it = held.begin(); it != held.end();) {
    if (it->cm == is_cm) {
      out.push_back(std::move(it->deliver));
      it = held.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : out)
    later(0ns, std::move(fn));
}

void SimNode::Impl::deliver_cm(const rdma::CmEvent& ev, bool injected) {
  if (cm_channel_held) {
    cm_backlog.emplace_back(ev, injected);
    return;
  }
  // The real stack stops reporting events for a destroyed id; injected
  // copies (duplicates, delayed) are the "late event" a manager must survive.
  if (!injected && !ids.contains(ev.id)) {
    ++stats.cm_events_for_destroyed_ids;
    return;
  }
  fab.trace(addr, "CM {} id={:#x} status={} pd={} rqpn={:#x}", rdma::to_string(ev.type), ev.id,
            ev.status, ev.private_data.size(), ev.remote_qpn);
  if (sink == nullptr) {
    ++stats.events_without_sink;
  } else {
    dispatching = ev.id;
    dispatching_listen = ev.listen_id;
    sink->on_cm_event(ev);
    dispatching = dispatching_listen = rdma::kNoCmId;
  }
  if (!injected)
    release_held(true);
}

void SimNode::Impl::deliver_async(const rdma::AsyncEvent& ev) {
  fab.trace(addr, "ASYNC {} qpn={:#x}", rdma::to_string(ev.type), ev.qpn);
  if (sink == nullptr) {
    ++stats.events_without_sink;
  } else {
    sink->on_async_event(ev);
  }
  release_held(false);
}

}  // namespace rcnet::sim
