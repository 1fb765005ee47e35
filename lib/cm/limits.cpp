// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Reaping and limits (docs/design.md "Reaping and limits"): the idle reaper and
// its reclaim SENDs, LRU eviction at max_connections, dead peers learnt from the
// underlay (neighbour FAILED, link down) or from a failed send, the
// operator's disconnect and reap, and live reconfiguration.
#include <algorithm>

#include "cm/manager_impl.hpp"

namespace rcnet::cm {

namespace {
// A connection ESTABLISHED less than this long ago is not evicted at
// max_connections. Without it, more peers with traffic than max_connections
// churn at the handshake's rate: each REQ evicts a connection a moment old,
// whose peer reconnects at once for its queued packets, and QPs in teardown
// pile up beyond any limit (found by the manager fuzzer: 1,806 QPs on a
// node at max_connections 2). With it, each slot changes hands at most once
// per kEvictMinAge, and the peers take turns: an age, not an idle time, so
// that busy connections cannot shut a peer out for good.
constexpr Duration kEvictMinAge = 1s;
}  // namespace

TimePoint Manager::Impl::evictable_at(const Conn& c) const {
  return c.state_since + kEvictMinAge;
}

std::string Manager::Impl::no_room_detail() const {
  return fmt::format("max_connections {} in use, none older than {:.0f} ms", max_connections(),
                     to_ms(kEvictMinAge));
}

// Makes room for one more connection: evicts the least recently used
// ESTABLISHED connection (the idle list's front), if it has been ESTABLISHED
// for kEvictMinAge. False when nothing can be evicted: the REQ gets REJ
// full and its sender backs off, or our own connect waits until the LRU
// connection is old enough (start_connect()).
bool Manager::Impl::make_room() {
  if (table_.in_service() < max_connections())
    return true;
  Conn* lru = table_.idle_front();
  if (lru == nullptr)
    return false;
  if (now() < evictable_at(*lru)) {
    ++ctr_.evictions_refused;
    return false;
  }
  ++ctr_.evictions;
  std::string why =
      fmt::format("evicted: least recently used at max_connections {}", max_connections());
  emit(EventKind::kEvict, *lru, why, lru->state);
  teardown(*lru, TeardownKind::kGraceful, std::move(why));
  return true;
}

// The reaper (docs/design.md "Reaping and limits"). It wakes only when something
// is due: no ESTABLISHED connection, no wakeup. Its wakeups lie on a grid of
// reaper_interval, so connections expiring within one interval share one
// wakeup, and a connection with no traffic for idle_timeout is reaped with
//   idle_timeout <= idle < idle_timeout + reaper_interval
// (plus the loop's wakeup latency). Each wakeup visits only the conns it acts
// on, plus one on each list where it stops: O(expired), not O(established).
TimePoint Manager::Impl::grid_floor(TimePoint t) const {
  const auto step = cfg_.reaper_interval.count();
  if (step <= 0)
    return t;
  const auto since = t.time_since_epoch().count();
  auto r = since % step;
  if (r < 0)
    r += step;
  return TimePoint(Duration(since - r));
}

TimePoint Manager::Impl::grid_ceil(TimePoint t) const {
  const TimePoint f = grid_floor(t);
  if (f == t || t > TimePoint::max() - cfg_.reaper_interval)
    return t;
  return f + cfg_.reaper_interval;
}

TimePoint Manager::Impl::reaper_due() const {
  TimePoint due = TimePoint::max();
  if (const Conn* c = table_.idle_front())
    due = grid_ceil(c->last_activity + cfg_.idle_timeout);
  // A reclaim SEND waits for the first grid point after its tail became unsignaled:
  // at most one reaper_interval, as when the reaper ticked every interval.
  if (const Conn* c = table_.reclaim_front())
    due = std::min(due, grid_floor(c->unsignaled_since) + std::max(cfg_.reaper_interval, 1ns));
  return due;
}

void Manager::Impl::reap_tick(TimePoint t) {
  while (Conn* c = table_.pop_idle(t, cfg_.idle_timeout)) {
    ++ctr_.reaper_visits;
    ++ctr_.idle_reaps;
    teardown(*c, TeardownKind::kGraceful,
             fmt::format("idle for {:.0f} ms (idle_timeout {:.0f} ms)", to_ms(t - c->last_activity),
                         to_ms(cfg_.idle_timeout)),
             log::kMsgReapedIdle);
  }
  if (table_.idle_front() != nullptr)
    ++ctr_.reaper_visits;  // the first one not expired: the walk stopped there
  // Reclaim every conn whose tail became unsignaled before this grid point
  // (grid_floor(unsignaled_since) + interval <= t, see reaper_due()).
  while (Conn* c = table_.pop_reclaim(grid_floor(t) - 1ns)) {
    ++ctr_.reaper_visits;
    if (!c->sends.empty() && !c->sends.back().signaled)
      dp_.post_reclaim(*c);
  }
  if (table_.reclaim_front() != nullptr)
    ++ctr_.reaper_visits;
}

std::size_t Manager::Impl::reap_idle(Duration idle) {
  std::size_t n = 0;
  const TimePoint t = now();
  while (Conn* c = table_.pop_idle(t, idle)) {
    ++ctr_.idle_reaps;
    teardown(*c, TeardownKind::kGraceful,
             fmt::format("idle {:.0f} ms (reap request)", to_ms(t - c->last_activity)),
             log::kMsgReapedIdle);
    ++n;
  }
  return n;
}

void Manager::Impl::peer_failed(const IpAddr& addr, std::string_view why, Duration probing) {
  Peer* p = table_.find_peer(node_id_for(addr));
  if (p == nullptr)
    return;
  Conn* c = table_.conn_of(*p);
  const TimePoint t = now();
  if (c != nullptr && c->state == ConnState::kEstablished && probing > Duration::zero() &&
      c->last_heard > t - probing) {
    // Seen in the lab on every other fail-back under load: the peer's
    // entry failed a resolution begun while the link was down, after the
    // new connection came up over it (REP/RTU need no ARP of ours).
    ++ctr_.neighbour_failed_stale;
    peer_failed_cause_ = LinkCause::kLinkLost;
    auto f = fields(*c);
    log::event(spdlog::level::info, f,
               "{} for {}, but QPN {} heard from it {:.0f} ms ago (the failed resolution may "
               "have lasted {:.0f} ms): kept, resolving again",
               why, addr.to_string(), c->qpn, to_ms(t - c->last_heard), to_ms(probing));
    if (neighbour_.use)
      neighbour_.use(addr);
    return;
  }
  if (c != nullptr) {
    ++ctr_.dead_peer_reaps;
    cause_ = peer_failed_cause_;
    teardown(*c, TeardownKind::kHard, std::string(why), log::kMsgReapedDead);
  }
  peer_failed_cause_ = LinkCause::kLinkLost;
  // With rail hooks the teardown handed the queue over; else it is dropped.
  if ((p = table_.find_peer(node_id_for(addr))) != nullptr)
    drop_queue(*p, ctr_.drops_connect_failed);
}

void Manager::Impl::drop_queue(Peer& p, std::uint64_t& counter) {
  counter += p.queue.size();
  p.queue.clear();
}

// A send completion failed on a live connection: retry exceeded means the
// peer is gone (as a neighbour FAILED would say); anything else is an error
// of this QP. Either way it is torn down at once.
void Manager::Impl::send_failed(Conn& c, const rdma::WorkCompletion& wc) {
  const rdma::WcStatus status = wc.status;
  if (status == rdma::WcStatus::kRetryExceeded || status == rdma::WcStatus::kRnrRetryExceeded) {
    ++ctr_.dead_peer_reaps;
    if (Peer* p = table_.find_peer(c.peer); p != nullptr && rail_hooks_ == nullptr)
      drop_queue(*p, ctr_.drops_connect_failed);
    cause_ = LinkCause::kRetryExceeded;
    teardown(c, TeardownKind::kHard,
             fmt::format("send completion {}: peer unreachable{}", rdma::describe_status(wc),
                         blame_carrier()),
             log::kMsgReapedDead);
    return;
  }
  ++ctr_.send_errors;
  teardown(c, TeardownKind::kHard,
           fmt::format("send completion {}{}{}", rdma::describe_status(wc), failed_wr(c, wc),
                       blame_carrier()));
}

// What the failed WR carried, for the teardown's reason: an error that is
// the peer's answer (REM_OP_ERR, REM_INV_REQ_ERR: IB spec 9.7.5.2.4) reads
// differently for a 60-byte SEND and a 64 KiB one. The WR is the head of
// c.sends: DataPath forgot the ones before it (RC completes in order).
std::string Manager::Impl::failed_wr(const Conn& c, const rdma::WorkCompletion& wc) {
  if (c.sends.empty() || c.sends.front().wr_id != wc.wr_id)
    return {};
  const SendEntry& e = c.sends.front();
  return fmt::format(" ({} SEND of {} bytes; WRs not completed: {})",
                     e.data ? "a packet's" : "a control", e.len, c.sends.size());
}

void Manager::Impl::link_changed(bool up, LinkCause cause) {
  if (up == link_up_)
    return;
  link_up_ = up;
  if (!up) {
    spdlog::warn("underlay link down: tearing down {} connections, refusing new ones",
                 table_.in_service());
    table_.for_each_peer([&](Peer& p) {
      if (Conn* c = table_.conn_of(p)) {
        ++ctr_.link_down_teardowns;
        cause_ = cause;
        teardown(*c, TeardownKind::kHard, "underlay link down");
      }
      // With rail hooks the teardown handed the queue over; else dropped.
      drop_queue(p, ctr_.drops_shutting_down);
    });
  } else {
    spdlog::info("underlay link up: accepting connections again");
  }
  report_rail(cause, up ? "underlay link up" : "underlay link down");
}

bool Manager::Impl::disconnect_peer(NodeId node, std::string_view why) {
  Peer* p = table_.find_peer(node);
  Conn* c = p != nullptr ? table_.conn_of(*p) : nullptr;
  if (c == nullptr)
    return false;
  teardown(*c, c->state == ConnState::kEstablished ? TeardownKind::kGraceful : TeardownKind::kHard,
           std::string(why));
  return true;
}

void Manager::Impl::reconfigure(const ManagerConfig& n) {
  // Taken whole: only the live settings differ from cfg_ (manager.hpp), so
  // what start() sized stays as it is.
  cfg_ = with_defaults(n);
  auth_reconfigured(auth_.configure(cfg_));
  // A lower depth applies to packets already queued: oldest dropped, counted.
  table_.for_each_peer([&](Peer& p) {
    while (p.queue.size() > cfg_.peer_queue_depth) {
      p.queue.pop_front();
      ++ctr_.drops_queue_full;
    }
  });
  next_reap_ = TimePoint::max();
}

}  // namespace rcnet::cm
