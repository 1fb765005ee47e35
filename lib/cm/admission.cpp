// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Admission control (docs/design.md "Admission control"): at most
// limits.max_pending_setups passive setups at a time, a REQ beyond them
// answered with REJ busy and a retry-after; at most as many of our own, the
// rest waiting in the order they asked. Nothing above it changes: packets
// wait in their peer's queue meanwhile.
#include <algorithm>

#include "cm/manager_impl.hpp"
#include "util/random.hpp"

namespace rcnet::cm {

namespace {
// The retry-after of a REJ busy: never shorter than kBusyMin (a REQ costs
// the hub a CM event even when refused), never longer than kBusyMax (a
// quiet hub should not keep a peer out for long), in whole milliseconds on
// the wire.
constexpr Duration kBusyMin = 10ms;
constexpr Duration kBusyMax = 30s;
// The busy peers are given retry times kBusySlotMin apart at least: about
// the rate at which one node's CM sets connections up on a real HCA
// (thousands a second), so even on a node whose setups look instant (the
// simulated HCA) a storm comes back spread out instead of in one wave.
constexpr Duration kBusySlotMin = 100us;
// Weight of one finished passive setup in the estimate of the setup time.
constexpr double kEstimateWeight = 1.0 / 8;
}  // namespace

bool Manager::Impl::admit_req(const rdma::CmEvent& ev, const wire::PrivateData& req) {
  const std::uint32_t limit = cfg_.max_pending_setups;
  if (limit == 0 || table_.setups(false) < limit)
    return true;
  const Duration after = busy_retry_after();
  const auto ms =
      static_cast<std::uint16_t>(std::chrono::ceil<std::chrono::milliseconds>(after).count());
  reject(ev.id, wire::RejectReason::kBusy, ev.src,
         fmt::format("{} setups in progress (max_pending_setups): retry after {} ms",
                     table_.setups(false), ms),
         ms, req.busy);
  return false;
}

bool Manager::Impl::pending_attempt(const Peer& p) {
  const Conn* c = table_.conn_of(p);
  return c != nullptr &&
         (c->state == ConnState::kResolvingAddr || c->state == ConnState::kResolvingRoute ||
          c->state == ConnState::kConnecting);
}

// Little's law: with the limit reached, setups finish at about limit /
// setup_estimate_ a second, so the k-th peer turned away can be served
// about k such intervals from now. Each REJ busy takes the next interval
// after the last one handed out (busy_horizon_), at least kBusyMin away:
// the peers come back about as fast as the node serves them, not all at
// once. (A first version also kept them one whole setup time away: in the
// lab that made a 320-connection storm at a limit of 64 take 2.6 times as
// long as with no limit at all.)
Duration Manager::Impl::busy_retry_after() {
  const TimePoint t = now();
  const Duration slot =
      std::max(setup_estimate_ / std::max<std::uint32_t>(cfg_.max_pending_setups, 1), kBusySlotMin);
  busy_horizon_ = std::max(busy_horizon_, t + kBusyMin) + slot;
  return std::clamp<Duration>(busy_horizon_ - t, kBusyMin, kBusyMax);
}

void Manager::Impl::setup_done(const Conn& c) {
  if (c.active)
    return;
  const Duration took = now() - c.created;
  setup_estimate_ = setup_estimate_ == Duration::zero()
                        ? took
                        : std::chrono::duration_cast<Duration>(
                              setup_estimate_ * (1 - kEstimateWeight) + took * kEstimateWeight);
}

void Manager::Impl::busy_rejected(Conn& c, const wire::PrivateData& rej, std::string why) {
  ++ctr_.rejects_received_busy;
  Peer* p = table_.find_peer(c.peer);
  auto f = fields(c);
  log::event(spdlog::level::debug, f, "peer {} is busy: {}, retry after {} ms", c.peer_addr, why,
             rej.retry_after_ms);
  teardown(c, TeardownKind::kHard, std::move(why));
  if (p == nullptr)
    return;
  // Told when to come back: that, plus up to a quarter more so the peers it
  // turned away together do not return together. Not a failed attempt: the
  // peer is alive and the queue stays, however often it says busy.
  const Duration told = rej.retry_after_ms != 0 ? std::chrono::milliseconds(rej.retry_after_ms)
                                                : std::chrono::duration_cast<Duration>(kBusyMin);
  const double f01 = static_cast<double>(splitmix64(rng_) >> 11) * 0x1.0p-53;  // [0, 1)
  retry_later(*p, told + std::chrono::duration_cast<Duration>(told * (f01 / 4)));
}

bool Manager::Impl::pace_connect(Peer& p) {
  const std::uint32_t limit = cfg_.max_pending_setups;
  if (limit == 0 ||
      (table_.setups(true) < limit && (connect_queue_.empty() || admitting_ == p.node)))
    return true;
  if (!p.admission_wait) {
    p.admission_wait = true;
    connect_queue_.push_back(p.node);
    ++ctr_.connects_paced;
    spdlog::debug("connect to {} waits: {} of our setups in progress (max_pending_setups)",
                  p.underlay, table_.setups(true));
  }
  return false;
}

void Manager::Impl::admit_waiting() {
  if (!sends_allowed()) {
    // Stopping, link or device down: those paths dropped the queues.
    for (const NodeId n : connect_queue_) {
      if (Peer* p = table_.find_peer(n))
        p->admission_wait = false;
    }
    connect_queue_.clear();
    return;
  }
  const std::uint32_t limit = cfg_.max_pending_setups;
  while (!connect_queue_.empty() && (limit == 0 || table_.setups(true) < limit)) {
    const NodeId n = connect_queue_.front();
    connect_queue_.pop_front();
    Peer* p = table_.find_peer(n);
    if (p == nullptr || !p->admission_wait)
      continue;
    p->admission_wait = false;
    // Connected meanwhile (its REQ came first), or a retry of its own is
    // due: nothing to start here.
    if (p->conn != 0 || p->retry_at != TimePoint::max())
      continue;
    admitting_ = n;
    start_connect(*p);
    admitting_ = 0;
  }
}

}  // namespace rcnet::cm
