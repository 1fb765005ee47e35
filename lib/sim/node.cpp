// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// One simulated host: the SimNode facade (lifecycle and test oracles) and the
// plumbing its rdma_cm half (node_cm.cpp) and verbs half (node_verbs.cpp)
// share: scheduling, reachability, handle lookup, and the hand-off of events
// to the node's sink.
#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "sim/internal.hpp"

namespace rcnet::sim {

std::string_view to_string(Profile p) {
  return caps_of(p).name;
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

// --- SimNode --------------------------------------------------------------------

SimNode::SimNode(Fabric& fabric, const IpAddr& underlay, Profile profile, std::size_t index,
                 std::shared_ptr<SimDevice> device)
    : impl_(std::make_unique<Impl>(fabric, *this, underlay, profile, index, std::move(device))) {}
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

void SimNode::crash() {
  if (!impl_->up)
    return;
  for (Impl* p : impl_->dev->ports)
    p->crash_port();
  impl_->dev->release();
  impl_->dev->regions.clear();
  impl_->dev->open_ports = 0;
}

void SimNode::restart() {
  if (impl_->up)
    return;
  for (Impl* p : impl_->dev->ports)
    p->restart_port();
  impl_->dev->release();
  impl_->dev->regions.clear();
  impl_->dev->open_ports = 0;
}

void SimNode::Impl::crash_port() {
  if (!up)
    return;
  fab.trace(addr, "CRASH");
  up = false;
  ++life;  // every closure scheduled for the old life is now void
  reset_device();
  sink = nullptr;
  timer_cb = nullptr;
  timer_deadline = TimePoint::max();
  ++timer_gen;
}

void SimNode::Impl::restart_port() {
  if (up)
    return;
  fab.trace(addr, "RESTART");
  up = true;
  ++life;
  reset_device();
  first_handle_of_life = next_handle;
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
std::size_t SimNode::registered_regions() const {
  return impl_->dev->regions.size();
}
std::size_t SimNode::registered_bytes() const {
  std::size_t n = 0;
  for (const auto& [h, r] : impl_->dev->regions)
    n += r.len;
  return n;
}
bool SimNode::device_open() const {
  return impl_->opened;
}
std::uint32_t SimNode::srq_posted() const {
  return static_cast<std::uint32_t>(impl_->dev->srq.size());
}
std::size_t SimNode::device_ports() const {
  return impl_->dev->ports.size();
}
std::uint8_t SimNode::port_num() const {
  return impl_->port_num;
}
const DeviceStats& SimNode::device_stats() const {
  return impl_->dev->stats;
}
bool SimNode::device_pd() const {
  return impl_->dev->pd;
}
bool SimNode::device_srq() const {
  return impl_->dev->has_srq;
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

SimNode::Impl::Impl(Fabric& f, SimNode& s, const IpAddr& a, Profile p, std::size_t idx,
                    std::shared_ptr<SimDevice> device)
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
      max_qp(caps_of(p).max_qp) {
  if (!device) {
    device = std::make_shared<SimDevice>();
    device->index = idx;
  }
  dev = std::move(device);
  dev->ports.push_back(this);
  port_num = static_cast<std::uint8_t>(dev->ports.size());
}

void SimNode::Impl::close_device() {
  if (!opened)
    return;
  fab.trace(addr, "close_device");
  opened = false;
  ids.erase(listener);
  listener = rdma::kNoCmId;
  cq.clear();
  cq_broken = false;
  // The device's PD and SRQ go with its last open port; MRs the owner left
  // stay registered (the oracles show them).
  if (dev->open_ports > 0 && --dev->open_ports == 0)
    dev->release();
  else if (dev->srq_limit_port == this)
    dev->srq_limit_port = nullptr;
}

void SimNode::Impl::reset_device() {
  opened = false;
  device_removed = false;
  cfg = {};
  local_ep = {};
  listener = rdma::kNoCmId;
  ids.clear();
  qps.clear();
  cq.clear();
  cq_poll_scheduled = false;
  cq_broken = false;
  dispatching = dispatching_listen = rdma::kNoCmId;
  starved = false;
  drop_drain.clear();
  held.clear();
  cm_channel_held = false;
  cm_backlog.clear();
  cm_read_pending = cm_reading = false;
  cm_busy_until = TimePoint{};
  cm_fifo.clear();
}

void SimNode::Impl::later(Duration d, std::function<void()> fn) {
  // The fabric checks up and life when the item is due (one function
  // object, not one wrapping the other).
  fab.at(fab.now + d, std::move(fn), /*is_timer=*/false, this, life);
}

bool SimNode::Impl::link_up(const SimNode::Impl* to) const {
  if (to == nullptr)
    return false;
  if (fab.isolated.contains(addr) || fab.isolated.contains(to->addr))
    return false;
  // Most runs cut nothing: no address comparisons then.
  return fab.cut.empty() || !fab.cut.contains(std::minmax(addr, to->addr));
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
  // The releasing calls still work on a removed device (rdma_destroy_qp,
  // rdma_destroy_id): that is how its owner lets the removal finish.
  if (device_removed && std::string_view(op).rfind("rdma_destroy", 0) != 0)
    return Error::from_errno(ENODEV, std::string("sim: ") + op + ": device removed");
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

// --- Delivery to the sink -------------------------------------------------------

void SimNode::Impl::deliver_cm(const rdma::CmEvent& ev, bool injected) {
  if (cm_channel_held || (fab.timing.cm_event_cost > 0ns && !cm_reading)) {
    cm_backlog.emplace_back(ev, injected);
    if (!cm_channel_held)
      read_cm_later();
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

void SimNode::Impl::read_cm_later() {
  if (cm_read_pending)
    return;
  cm_read_pending = true;
  later(cm_busy_until > fab.now ? cm_busy_until - fab.now : 0ns, [this] {
    cm_read_pending = false;
    if (cm_channel_held || cm_backlog.empty())
      return;
    auto [ev, injected] = std::move(cm_backlog.front());
    cm_backlog.pop_front();
    cm_busy_until = fab.now + fab.timing.cm_event_cost;
    cm_reading = true;
    deliver_cm(ev, injected);
    cm_reading = false;
    if (!cm_backlog.empty())
      read_cm_later();
  });
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
