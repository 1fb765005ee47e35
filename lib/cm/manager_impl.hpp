// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Manager::Impl, shared by the files of lib/cm (not part of the contract:
// include cm/manager.hpp). One room per concern:
//   manager.cpp    the facade, start, the timer and event dispatch, the one
//                  state-changing function, views
//   establish.cpp  resolve, REQ/REP/REJ, simultaneous-open merge, restarts
//   admission.cpp  max_pending_setups: REJ busy and its retry-after, our
//                  own connects paced in order
//   teardown.cpp   DREQ -> ERROR -> AWAIT_LAST_WQE -> DRAINING -> DESTROYED,
//                  the fallbacks, cm id release, shutdown
//   datapath.*     class DataPath, owned here as dp_: send slots, batching,
//                  back-pressure (datapath.cpp); SRQ/RQ reposts and
//                  completions (datapath_recv.cpp); it calls back through
//                  DataPathHooks, which Impl implements
//   limits.cpp     the reaper, LRU eviction, dead peers (neighbour events,
//                  failed sends), link events, operator actions, live
//                  reconfiguration
//   rail_link.cpp  what a RailSet (cm/rails.hpp, rails*.cpp) asks of and hears from
//                  one rail's manager: failed links' packets handed over,
//                  rail messages, standby links
//   conn_table.*   Conn, Peer and every index and deadline
//
// Entry points (the Manager's public calls) end in settle(), called once by
// the facade; nothing inside reschedules on its own.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/conn_table.hpp"
#include "cm/datapath.hpp"
#include "cm/manager.hpp"
#include "cm/peer_auth.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

enum class TeardownKind : std::uint8_t {
  kGraceful,  // we send DREQ and wait (bounded) for DISCONNECTED
  kRemote,    // DREQ received: answer it and go on
  kHard,      // the peer is gone or must not be waited for
};

class Manager::Impl final : private DataPathHooks {
 public:
  Impl(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink);
  ~Impl();

  // --- manager.cpp ------------------------------------------------------------------
  // `c` with its "0 = default" fields resolved, at construction and at
  // reconfigure(): max_connections (128 without SRQ, 4096 with: IPoIB-CM's),
  // srq_limit (srq_size / 8, at least 1), signal_every (1).
  static ManagerConfig with_defaults(ManagerConfig c);
  Result<void> start();
  // cfg.max_connections, lowered to what the SRQ's receive credits hold on
  // a device without RNR (DataPath::credit_conn_cap).
  std::uint32_t max_connections() const {
    return std::min(cfg_.max_connections, dp_.credit_conn_cap());
  }
  // After every entry point: one wakeup request for the earliest deadline, and
  // the true edge of back-pressure when room came back.
  void settle();
  // admission.cpp, from settle(): starts the connects waiting in
  // connect_queue_ while fewer than max_pending_setups of ours are in
  // progress (drops the waits when sends are not allowed).
  void admit_waiting();
  void on_timer();
  void on_async_event(const rdma::AsyncEvent& ev);
  Snapshot snapshot() const;
  std::vector<rdma::Qpn> live_qpns() const;
  std::size_t live_cm_ids() const;
  bool stopped() const;

  // --- establish.cpp ----------------------------------------------------------------
  void on_cm_event(const rdma::CmEvent& ev);

  // --- limits.cpp -------------------------------------------------------------------
  void peer_failed(const IpAddr& addr, std::string_view why, Duration probing);
  // `cause`: what the rail hooks are told (kCarrier from the daemon's
  // netlink, kPortError from IBV_EVENT_PORT_ERR/PORT_ACTIVE).
  void link_changed(bool up, LinkCause cause = LinkCause::kCarrier);
  // The cause peer_failed()'s teardown reports (reset after it).
  LinkCause peer_failed_cause_ = LinkCause::kLinkLost;
  bool disconnect_peer(NodeId node, std::string_view why);
  std::size_t reap_idle(Duration idle);
  void reconfigure(const ManagerConfig& n);

  // --- teardown.cpp -----------------------------------------------------------------
  void shutdown();
  // Manager::readopt().
  Result<void> readopt(DevicePath noticed_by);
  // Manager::device_unregistered().
  void device_unregistered(std::string_view why) {
    device_lost(std::string(why), DevicePath::kNetlinkMonitor);
  }
  bool device_gone() const { return device_gone_; }

  ManagerConfig cfg_;
  Counters ctr_;
  Histogram connect_time_, teardown_time_;  // Snapshot::connect_time, teardown_time
  NodeId self_ = 0;
  EventObserver observer_;  // cm/events.hpp; may be empty

  // --- rail_link.cpp ----------------------------------------------------------------
  RailHooks* rail_hooks_ = nullptr;    // cm/rails.hpp; nullptr on a single-rail node
  Manager::NeighbourOps neighbour_;    // Manager::set_neighbour_ops
  std::function<bool()> has_carrier_;  // Manager::set_carrier_probe
  // A live QP failed on its own: when the underlay has no carrier now, makes
  // that the cause of the coming teardown's report (cause_) and returns the
  // words to add to its reason; else changes nothing and returns "".
  std::string_view blame_carrier();
  bool send_rail_message(const Endpoint& peer, std::span<const std::byte> msg);
  bool ensure_link(const Endpoint& peer);
  bool abandon_attempt(const Endpoint& peer, std::string_view why);
  // The connection of the peer listening on `peer` (its current one), or
  // nullptr: what the rail hooks' calls act on.
  Conn* conn_to(const Endpoint& peer);
  bool link_established(const Endpoint& peer) const;
  std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const;  // Manager::peer_mtu
  std::optional<Endpoint> peer_underlay(NodeId node) const;           // Manager::peer_underlay
  bool link_failed(const Endpoint& peer, LinkCause cause, std::string_view why);

 private:
  // --- manager.cpp: shared helpers ----------------------------------------------------
  TimePoint now() const { return timers_.now(); }
  log::Fields fields(const Conn& c) const override;
  // The one state-changing function: checks the legality table, arms the
  // new state's bound (arm_bound()), logs `old -> new` with the QP's journal
  // fields. false on an illegal transition, which is a bug: the caller must
  // then abandon(c) at once and not touch `c` again.
  [[nodiscard]] bool set_state(Conn& c, ConnState to, std::string_view why);
  // A new conn of `p`, born without set_state() in RESOLVING_ADDR (`active`)
  // or ACCEPTING, that state's bound armed. Owned by table_.
  Conn& add_conn(Peer& p, bool active);
  // c's deadline: its state's bound (cm/lifecycle.hpp) after c.state_since,
  // or none.
  void arm_bound(Conn& c);
  // Reports `kind` about `c` to the observer, if any (cm/events.hpp).
  void emit(EventKind kind, const Conn& c, std::string_view reason, ConnState from,
            std::string_view message_id = {});
  void reschedule();
  void on_deadline(Conn& c);
  // `c` waits for an rdma_cm event and its deadline (`bound` after it
  // entered its state) ran out: true when rdma_cm events are queued unread
  // on the channel, in which case its deadline is put off by
  // kCmBacklogRecheck (manager.cpp; never past bound + kCmBacklogGrace)
  // instead.
  bool defer_for_cm_backlog(Conn& c, Duration bound);

  // --- establish.cpp ----------------------------------------------------------------
  void start_connect(Peer& p) override;
  Result<void> create_qp(Conn& c);
  wire::PrivateData my_pd(wire::Kind kind,
                          wire::RejectReason reason = wire::RejectReason::kNone) const;
  rdma::ConnParams params(std::span<const std::uint8_t> pd) const;
  void addr_resolved(Conn& c);
  void send_req(Conn& c);
  void handle_rep(Conn& c, const rdma::CmEvent& ev);
  void established(Conn& c);
  void attempt_failed(Conn& c, std::string reason);
  void retry_later(Peer& p, Duration after);
  // `d` scaled by a factor in [0.5, 1.5) (splitmix64 seeded from the
  // incarnation, so the simulated fabric stays deterministic).
  Duration jitter(Duration d);
  // The jittered wait before attempt `attempts` + 1: kRetryBase * 2^(attempts-1)
  // capped at kRetryCap, times [0.5, 1.5).
  Duration backoff(unsigned attempts);
  void handle_rej(Conn& c, const rdma::CmEvent& ev);
  // REJ `reason` to the REQ on `id`. kBusy carries `retry_after_ms` and goes
  // out as kFull to a peer whose REQ did not advertise kCapBusy
  // (`peer_knows_busy`), counted as busy either way.
  // A peer whose answer was a considered no (a REJ that is not transient, a
  // refused proof): its queue dropped (drops_connect_failed), one retry
  // kRetryCap (jittered) later, for the packets that come meanwhile.
  void hold_down(Peer& p);
  void reject(rdma::CmIdHandle id, wire::RejectReason reason, const Endpoint& from,
              std::string_view detail, std::uint16_t retry_after_ms = 0,
              bool peer_knows_busy = true, bool quiet = false);
  bool allowed(const IpAddr& a) const;
  void handle_req(const rdma::CmEvent& ev);
  void ignore_cm(const Conn& c, const rdma::CmEvent& ev);
  void comm_established(rdma::Qpn qpn);

  // --- admission.cpp ----------------------------------------------------------------
  // A REQ that would start a passive setup: true when fewer than
  // max_pending_setups are in progress; otherwise it has been answered with
  // REJ busy (its id is ours to destroy, deferred) and false.
  bool admit_req(const rdma::CmEvent& ev, const wire::PrivateData& req);
  // `p`'s connection in service is our own attempt, still resolving or
  // CONNECTING (a REQ from `p` then collides with it).
  bool pending_attempt(const Peer& p);
  // The retry-after of the next REJ busy (see admission.cpp).
  Duration busy_retry_after();
  // `c` reached ESTABLISHED: a passive one's setup time feeds the estimate.
  void setup_done(const Conn& c);
  // REJ busy on our attempt `c`: torn down, retried after the peer's
  // retry-after plus jitter, the queue kept; not a failed attempt.
  void busy_rejected(Conn& c, const wire::PrivateData& rej, std::string why);
  // start_connect()'s gate: true when our connect to `p` may start now;
  // false when max_pending_setups of ours are in progress (or others wait
  // before it): `p` then waits in connect_queue_.
  bool pace_connect(Peer& p);

  // --- teardown.cpp -----------------------------------------------------------------
  void teardown(Conn& c, TeardownKind kind, std::string reason, std::string_view msg_id = {});
  void to_error(Conn& c);
  void on_last_wqe(rdma::Qpn qpn);
  void post_drain(Conn& c) override;
  void last_wqe_timed_out(Conn& c);
  void drain_timed_out(Conn& c);
  void destroy_qp(Conn& c, std::string_view why) override;
  // The way out of any state when the machine itself went wrong: destroys
  // the QP and releases the id without the spec sequence, counted. `c`
  // dangles afterwards.
  void abandon(Conn& c, std::string_view why);
  void release_qp(Conn& c);
  void finish(Conn& c);
  void defer_destroy_id(rdma::CmIdHandle id) { pending_id_destroy_.push_back(id); }
  void destroy_id_now(rdma::CmIdHandle id);
  void forget_idle_peers();
  // CQ or SRQ error: every connection torn down (hard), queues dropped; the
  // device objects stay.
  void device_failed(const std::string& why);
  // DEVICE_REMOVAL / DEVICE_FATAL: every QP destroyed at once, queues
  // dropped, the release of the rest asked of the timer path.
  void device_lost(const std::string& why, DevicePath path = DevicePath::kAsyncEvent);
  void release_device();

  // --- DataPathHooks ------------------------------------------------------------------
  bool sends_allowed() const override { return !shutting_down_ && link_up_ && !device_gone_; }
  void rail_message(Conn& c, std::span<const std::byte> msg) override;
  void auth_message(Conn& c, std::span<const std::byte> msg) override;
  void unproven_data(Conn& c) override;

  // --- auth_link.cpp: the peer proof (cm/peer_auth.hpp) ----------------------------
  // Counts `r`, logs it (once per peer and PeerAuth::kLogInterval, debug
  // after), tears `c` down and, unless revoked, drops its peer's queue and
  // holds the peer down as a REJ that is not transient does.
  void auth_refused(Conn& c, Refusal r, std::string_view detail);
  // auth.mode optional, a peer that offers no proof: admitted, counted, logged.
  void auth_unproven(Conn& c);
  // Passive, ESTABLISHED while the peer's proof is due: its bound.
  void auth_established(Conn& c);
  // Active, ESTABLISHED: posts our proof message first, before any packet;
  // false when it could not (c torn down, and the peer's next attempt
  // waits out a failed attempt's backoff).
  bool post_auth_proof(Conn& c);
  // After reconfigure(): connections proven with a key in `gone` go
  // (revoked); with auth.mode required, connections without a proof go.
  void auth_reconfigured(const std::vector<std::uint8_t>& gone);
  PeerAuth auth_;

  // --- rail_link.cpp ----------------------------------------------------------------
  // From teardown() and device_lost(): `c` was in service and goes down.
  // With rail hooks and `failed`, its unfinished sends and its peer's queue
  // are handed to RailHooks::link_down (cause_, then reset) instead of being
  // dropped or retried here.
  void report_link_down(Conn& c, bool failed, std::string_view why);
  // sends_allowed() may have changed: tells the rail hooks on a change.
  void report_rail(LinkCause cause, std::string_view why);
  // The cause the next failed link reports (set by the caller of a hard
  // teardown; reset to kLinkLost after each report).
  LinkCause cause_ = LinkCause::kLinkLost;
  bool rail_reported_up_ = true;

  // --- limits.cpp -------------------------------------------------------------------
  bool make_room();
  // When `c` may be evicted by make_room(): kEvictMinAge after it entered
  // its state (ESTABLISHED, the state of every conn on the idle list).
  TimePoint evictable_at(const Conn& c) const;
  // Why make_room() refused, for REJ full's log line and event.
  std::string no_room_detail() const;
  void drop_queue(Peer& p, std::uint64_t& counter);
  void send_failed(Conn& c, const rdma::WorkCompletion& wc) override;
  static std::string failed_wr(const Conn& c, const rdma::WorkCompletion& wc);
  void reap_tick(TimePoint t);
  // When the reaper must next run: the idle front's expiry rounded up to the
  // reaper grid, or the first grid point after the reclaim list front's tail became
  // unsignaled, whichever is earlier; TimePoint::max() when both lists are
  // empty (no wakeup at all).
  TimePoint reaper_due() const;
  // The reaper grid: multiples of reaper_interval since the clock's epoch.
  // grid_ceil(t) is the first grid point >= t, grid_floor(t) the last <= t.
  TimePoint grid_ceil(TimePoint t) const;
  TimePoint grid_floor(TimePoint t) const;

  // --- state ---------------------------------------------------------------------
  rdma::Seam& seam_;
  TimerService& timers_;
  rdma::DeviceInfo device_;
  bool shutting_down_ = false;
  bool link_up_ = true;
  // From the device's loss until readopt() succeeded.
  bool device_gone_ = false;
  // Which path noticed the current (or last) loss, and the last return;
  // whether the other path's notice of this loss was counted already.
  std::optional<DevicePath> removed_by_, readopted_by_;
  bool late_notice_counted_ = false;
  TimePoint removed_at_{};
  // device_lost() asked the timer path for release_device().
  bool release_pending_ = false;

  ConnTable table_;
  std::vector<rdma::CmIdHandle> pending_id_destroy_;
  std::vector<NodeId> forget_candidates_;  // peers whose conn ended
  // The reaper's requested wakeup: never later than reaper_due() (see
  // reschedule()); TimePoint::max() when it has nothing to watch.
  TimePoint next_reap_ = TimePoint::max();
  bool reap_watch_idle_ = false;     // the idle list was non-empty at the last reschedule()
  bool reap_watch_reclaim_ = false;  // the reclaim list was

  TimePoint scheduled_ = TimePoint::max();
  // Seam::cm_events_queued() as asked once per on_timer() (one poll(2), not
  // one per expired deadline); nullopt until asked.
  std::optional<bool> cm_backlog_;
  std::uint64_t rng_ = 0;  // jitter state

  // --- admission.cpp state ----------------------------------------------------------
  // Peers whose connect waits for one of our setups to end, in the order
  // they asked (each at most once: Peer::admission_wait).
  std::deque<NodeId> connect_queue_;
  // The peer admit_waiting() is starting (it may pass the queue), 0 = none.
  NodeId admitting_ = 0;
  // Moving average of a passive setup's time (REQ read to ESTABLISHED).
  Duration setup_estimate_{};
  // The last retry time handed out in a REJ busy.
  TimePoint busy_horizon_{};

 public:
  // Declared last: it borrows cfg_, ctr_, seam_, timers_, table_ and this
  // Impl (its hooks), so it is built after them and destroyed first.
  DataPath dp_;
};

}  // namespace rcnet::cm
