// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The simulated HCA and fabric: many nodes (one HCA port + its rdma_cm
// each; a node is port 1 of an HCA of its own, or another port of one
// through Fabric::add_port) in one process, on a virtual clock,
// deterministically. Tests drive the
// connection manager through each node's rdma::Seam and TimerService.
//
// Determinism: one event queue ordered by (virtual time, sequence number) and
// one seeded PRNG (splitmix64) for every latency jitter. No threads, no
// sleeps, no real clock. The same seed and the same calls give the same trace.
//
// Delivery (rdma::Seam contract): events reach a node's EventSink only from
// inside Fabric::run_*; CM and async events one by one, completions in
// batches of at most kCompletionBatch. A sink may call back into the seam;
// what that generates is queued, never delivered recursively.
//
// Semantics follow rdma_cm(7), rdma_connect(3), rdma_accept(3),
// rdma_disconnect(3), ibv_modify_qp(3), ibv_post_send(3), ibv_poll_cq(3),
// ibv_get_async_event(3), IB spec 10.3.1 / 11.6.3, and the Soft-RoCE facts in
// docs/lab.md for Profile::kRxe. Where the real stack leaks or deadlocks on misuse
// (destroy_id with a QP, destroy_id from inside its own event), the simulator
// refuses the call and counts it in SimStats::misuse instead.
//
// Ownership: the Fabric owns every SimNode; references stay valid for the
// Fabric's lifetime (crash()/restart() keep the object). Single-threaded.
//
// What is modelled, beyond the rdma::Seam comments (the choices made where
// the man pages leave room):
//  - rdma_cm: REQ/REP/RTU/REJ/DREQ/DREP each take Timing::cm_hop (+ seeded
//    jitter), in order between any two nodes. The receiver of a REQ sees 56
//    bytes of private data, of a REP 196, of a REJ 148, zero-padded. REQ to a
//    host that is up but not listening: REJECTED status 8. No REP or REJ
//    within Timing::unreachable (crashed host, cut link, listen_backlog
//    unanswered REQs already pending, or the peer never answers):
//    UNREACHABLE; a REP arriving later is answered with a REJ (the peer sees
//    REJECTED). No RTU within Timing::unreachable of accept(): CONNECT_ERROR.
//    The passive QP is RTR after accept() and RTS on the RTU; the active QP
//    is RTS on the REP. Data can reach the passive QP before the RTU (it
//    receives in RTR); mlx/ehca then report COMM_EST once.
//  - disconnect(): QP → ERR first (librdmacm does so on IB/RoCE). Connected:
//    DREQ; the peer gets DISCONNECTED (its QP → ERR except on rxe) and
//    answers DREP; we get DISCONNECTED on the DREP, or after
//    Timing::dreq_timeout if the peer is gone or cut off. Each id reports DISCONNECTED
//    at most once. REQ/REP outstanding: the attempt is abandoned (a REP
//    arriving later gives CONNECT_ERROR locally, REJECTED at the peer). Never
//    connected: EINVAL. Again: no-op.
//  - destroy_id(): a connected id sends DREQ; an unanswered REQ or a REP
//    awaiting RTU is answered with REJ (status 28). CM events still queued
//    for a destroyed id are discarded, as the real stack does, except copies
//    made by FaultAction::kDuplicate / kDelay / kReorder (late events).
//  - Data path: one SEND in flight per QP (in order), Timing::wire each way
//    plus size / link rate. The bytes are copied at post time. A SEND
//    posted with a nonzero immediate carries it (has_imm), one with 0 none. No
//    receive WR (or Faults::starve_receives) → RNR NAK, retried after the
//    responder's DeviceConfig::min_rnr_timer (rdma/ib_timers.hpp; 12 =
//    0.64 ms), which its QPs hold from creation. No responder (host crashed
//    or cut off, QP destroyed, QP not RTR/RTS) → RETRY_EXC_ERR at first try +
//    (retry_count + 1) × 4.096 us × 2^ack_timeout (the requester's
//    DeviceConfig); never on rxe with retry_count 7, nor with ack_timeout 0
//    (no timer). Both errors move the QP to ERR and flush the rest of its
//    SQ. SGEs are checked against registered memory (lkey and bounds):
//    LOC_PROT_ERR otherwise.
//  - ERR: SQ WRs flush in order; a non-SRQ QP's RQ WRs flush in posting order
//    (rxe: opcode SEND, byte_len 0); an SRQ QP's receives stay on the SRQ.
//    mlx then delivers Last WQE Reached after Timing::last_wqe.
//  - CQ: completions are delivered in CQ order, at most kCompletionBatch per
//    on_completions(). More unpolled CQEs than cq_size → CQ_ERR, every QP of
//    the node → ERR, later CQEs are lost (counted).
//  - Handles are unique per node across restarts; a handle of another node or
//    of a destroyed id is "unknown" (misuse), one from before a restart is
//    "stale" (not misuse: it belonged to the crashed owner).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdma/seam.hpp"
#include "sim/profiles.hpp"
#include "util/address.hpp"
#include "util/time.hpp"
#include "util/timer_service.hpp"

namespace rcnet::sim {

// The hardware QP state (ibv_qp_state), as the simulated HCA sees it.
enum class QpStateSim : std::uint8_t { kReset, kInit, kRtr, kRts, kErr };
std::string_view to_string(QpStateSim s);

// Latencies of the simulated fabric. Defaults are in the range docs/lab.md measured
// or the IB spec gives; change them through Fabric::timing() before running.
struct Timing {
  Duration resolve = 50us;                  // rdma_resolve_addr / rdma_resolve_route
  Duration cm_hop = 100us;                  // one CM MAD (REQ, REP, RTU, REJ, DREQ, DREP) one way
  Duration cm_jitter = 20us;                // uniform [0, cm_jitter) added to each CM hop (seeded)
  Duration wire = 2us;                      // one data packet or ACK one way, plus size / link rate
  std::uint64_t link_bytes_per_us = 12500;  // 100 Gb/s
  Duration last_wqe = 100us;                // ERR → Last WQE Reached (mlx)
  Duration async = 10us;                    // injected async events (QP FATAL, ...)
  Duration drain = 10us;                    // drain WR flush on mlx/ehca
  Duration drain_rxe_min = 2ms;             // rxe: drain flush after [min, max) (docs/lab.md)
  Duration drain_rxe_max = 3ms;
  Duration unreachable = 1s;      // REQ unanswered → UNREACHABLE (CM retries exhausted)
  Duration dreq_timeout = 100ms;  // DREQ without DREP → DISCONNECTED anyway
  Duration reorder_hold = 10ms;   // a reordered event waits at most this for a successor
  // Time a node's owner takes per rdma_cm event it reads (its loop's work
  // for a REQ, an ESTABLISHED...): events wait on the channel
  // (Seam::cm_events_queued() true) and are read one per cm_event_cost, in
  // order. 0 (default): read at once. For storms: a hub that reads slower
  // than REQs arrive.
  Duration cm_event_cost = 0ns;
  // From the first CQE of an unpolled CQ to its owner's poll: a loop busy
  // elsewhere. Receives are reposted only after the poll, so a receiver
  // this slow runs its SRQ dry under a burst (RNR on IB, a terminated
  // connection on iWARP). 0 (default): polled at once.
  Duration cq_poll = 0ns;
};

// Counters of what the simulator saw. Misuse is what leaks or deadlocks in
// the real stack; tests of the manager assert it stays 0.
struct SimStats {
  std::uint64_t misuse = 0;                  // sum of the next three
  std::uint64_t destroy_id_with_qp = 0;      // rdma_destroy_id while its QP exists (leak)
  std::uint64_t destroy_id_in_dispatch = 0;  // rdma_destroy_id inside its own event (deadlock)
  std::uint64_t unknown_handle = 0;          // cm id never created here or already destroyed
  std::uint64_t stale_handle = 0;            // handle from before a restart (not misuse: old owner)
  std::uint64_t bad_state = 0;        // call refused with EINVAL because of the object's state
  std::uint64_t on_crashed_node = 0;  // calls while crashed (ENODEV)

  std::uint64_t sends_posted = 0;
  std::uint64_t post_send_calls = 0;    // post_send/post_sends calls (one doorbell each)
  std::uint64_t packets_delivered = 0;  // receive completions with success
  std::uint64_t bytes_delivered = 0;
  std::uint64_t rnr_naks = 0;  // RNR NAKs this node received as sender
  // kIwarp (this node's side of the connection): SENDs with immediate
  // refused at post; connections terminated because a SEND found no receive
  // WR here; connections terminated because our passive QP sent first.
  std::uint64_t imm_refused = 0;
  std::uint64_t no_buffer_terminations = 0;
  std::uint64_t passive_first_terminations = 0;
  std::uint64_t retry_exceeded = 0;
  std::uint64_t rnr_retry_exceeded = 0;
  std::uint64_t length_errors = 0;      // receive buffer too small (this node's receive side)
  std::uint64_t protection_errors = 0;  // SGE outside registered memory / wrong lkey
  std::uint64_t flushed = 0;            // kFlushErr CQEs generated (drain included)
  std::uint64_t last_wqe_events = 0;    // Last WQE Reached generated (before faults)

  std::uint64_t cm_events_dropped = 0, cm_events_duplicated = 0, cm_events_delayed = 0,
                cm_events_reordered = 0;
  std::uint64_t async_events_dropped = 0, async_events_duplicated = 0, async_events_delayed = 0,
                async_events_reordered = 0;
  std::uint64_t reqs_over_backlog = 0;  // REQs dropped: listen_backlog unanswered REQs pending
  std::uint64_t cm_events_for_destroyed_ids = 0;  // discarded as the real stack does
  std::uint64_t events_without_sink = 0;          // discarded: no sink set
  std::uint64_t drains_dropped = 0;
  std::uint64_t cq_overflows = 0;
  std::uint64_t cqes_lost = 0;  // generated after the CQ overflowed
};

// What one simulated HCA allocated, over every port and every life of it
// (SimNode::device_stats): ports of one device (Fabric::add_port) share one
// PD, its MRs and one SRQ, so a second port's open() adds nothing here.
struct DeviceStats {
  std::uint64_t pd_allocs = 0;         // ibv_alloc_pd: the first port's open()
  std::uint64_t srq_creates = 0;       // ibv_create_srq: likewise, with srq_size
  std::uint64_t mr_registrations = 0;  // ibv_reg_mr through any port
};

enum class FaultAction : std::uint8_t {
  kDrop,       // the event is never delivered
  kDuplicate,  // delivered twice
  kDelay,      // delivered `delay` later (even if its id is destroyed by then)
  kReorder,    // held back and delivered right after the node's next event of
               // the same class (CM or async), or after Timing::reorder_hold
};

class Fabric;
struct SimDevice;

inline constexpr std::size_t kCompletionBatch = 64;

// One HCA and its rdma_cm on one host.
class SimNode {
 public:
  ~SimNode();
  SimNode(const SimNode&) = delete;
  SimNode& operator=(const SimNode&) = delete;

  rdma::Seam& seam();
  // now() is fabric time; schedule() arms this node's single wakeup.
  TimerService& timers();
  // Where the node's events go (borrowed; nullptr discards and counts them).
  void set_sink(rdma::EventSink* sink);
  // Called from inside Fabric::run_* when the scheduled deadline is reached.
  void set_timer_callback(std::function<void()> cb);

  // The host dies: no DREQ, every id, QP, SRQ, CQ and pending event is gone,
  // the sink and timer callback are dropped, calls fail with ENODEV. Peers
  // see it only through timeouts (retry exceeded, UNREACHABLE). Every port
  // of the node's device goes with it (one host).
  void crash();
  // The host is back at the same address with a fresh device and nothing
  // open, every port of the device with it. QPNs and handles continue from
  // before (never reused in a run).
  void restart();
  bool is_up() const;

  const IpAddr& address() const;
  Profile profile() const;

  // --- test oracles ---
  // The wakeup the node's owner last asked for (TimerService::schedule),
  // TimePoint::max() when none is pending.
  TimePoint timer_deadline() const;
  std::size_t live_qps() const;
  // Every live QPN with its state, ascending: the device's own view, as
  // `rdma resource show qp` prints it (for audit tests).
  std::vector<std::pair<rdma::Qpn, QpStateSim>> qp_table() const;
  std::size_t live_cm_ids() const;  // excluding the listener
  // MRs (ibv_reg_mr) not unregistered, and their bytes: the device's, so
  // every port of one device reports the same.
  std::size_t registered_regions() const;
  std::size_t registered_bytes() const;
  // open() succeeded and close_device() was not called since: the listener,
  // the CQ, and the device's PD and (with srq_size) SRQ exist.
  bool device_open() const;
  std::uint32_t srq_posted() const;  // the device's SRQ
  // The device this node is a port of: its number of ports, this node's
  // port number (1 for a node of Fabric::add_node), what it allocated, and
  // whether its PD and SRQ exist now (some port is open).
  std::size_t device_ports() const;
  std::uint8_t port_num() const;
  const DeviceStats& device_stats() const;
  bool device_pd() const;
  bool device_srq() const;
  std::size_t rq_posted(rdma::Qpn qpn) const;  // per-QP RQ (non-SRQ QPs)
  std::size_t sends_outstanding(rdma::Qpn qpn) const;
  std::optional<QpStateSim> qp_state(rdma::Qpn qpn) const;  // nullopt: no such QP
  std::size_t cq_unpolled() const;
  const SimStats& stats() const;
  // One line per misuse, for test failure messages.
  const std::vector<std::string>& misuse_log() const;

  struct Impl;
  Impl& impl();  // the simulator's own access

 private:
  friend class Fabric;
  // `device`: the HCA this node is another port of; nullptr: a new one.
  SimNode(Fabric& fabric, const IpAddr& underlay, Profile profile, std::size_t index,
          std::shared_ptr<SimDevice> device);
  std::unique_ptr<Impl> impl_;
};

// Fault injection. Rules apply to events the simulator generates from now
// on, first matching rule first; injected copies are never matched again.
// All of it is deterministic.
class Faults {
 public:
  // The next `count` rdma_cm events of `type` (for `node` only, when given).
  void cm(FaultAction action, rdma::CmEventType type, std::uint32_t count = 1,
          std::optional<IpAddr> node = std::nullopt, Duration delay = 0ns);
  // The next `count` async events of `type` (for `node` only, when given).
  void async(FaultAction action, rdma::AsyncEventType type, std::uint32_t count = 1,
             std::optional<IpAddr> node = std::nullopt, Duration delay = 0ns);
  void clear();  // forget every pending rule

  // QP → ERR (flushing) and kQpFatal; on mlx an SRQ QP then also gets Last WQE
  // Reached, so a manager sees both on one QP. false if no such QP.
  bool inject_qp_fatal(const IpAddr& node, rdma::Qpn qpn);
  // The QP's outstanding send (or, if none, its next one) completes with
  // `status` and the QP goes to ERR. false if no such QP.
  bool inject_send_error(const IpAddr& node, rdma::Qpn qpn, rdma::WcStatus status);
  bool inject_retry_exceeded(const IpAddr& node, rdma::Qpn qpn) {
    return inject_send_error(node, qpn, rdma::WcStatus::kRetryExceeded);
  }
  // An (unsolicited or duplicate) Last WQE Reached for `qpn`, on any profile.
  bool inject_last_wqe(const IpAddr& node, rdma::Qpn qpn);
  // IBV_EVENT_DEVICE_FATAL (an unaffiliated async event) on `node`, on any
  // profile, with every QP moved to ERR as a dead device leaves them. The
  // device itself stays usable, so the owner can open it again at once.
  // Every port of the node's device gets it. false if the node is down.
  bool inject_device_fatal(const IpAddr& node);
  // While on, incoming SENDs at `node` find no receive WR (RNR NAK).
  void starve_receives(const IpAddr& node, bool on = true);
  // While on, the node's owner does not read its rdma_cm channel, as a loop
  // busy with a storm of REQs does not: the node's CM events queue up there
  // (Seam::cm_events_queued() is then true) and reach the sink in order,
  // from inside Fabric::run_*, once it is turned off. Timers still fire.
  void hold_cm_channel(const IpAddr& node, bool on = true);
  // Packets and CM MADs between `a` and `b` are lost while cut (both ways):
  // sends end in retry exceeded, REQs in UNREACHABLE, DREQs in the DREQ
  // timeout. Both hosts stay up.
  void partition(const IpAddr& a, const IpAddr& b, bool cut = true);
  // The node's underlay link is down: nothing in or out (partition from all).
  void isolate(const IpAddr& node, bool cut = true);
  // The node's RDMA port goes down (`down`): isolate() and, on any
  // profile, IBV_EVENT_PORT_ERR (an unaffiliated async event); QPs stay in
  // their state, as on a real port whose cable was pulled (their sends end
  // in retry exceeded). Up: the isolation lifted and IBV_EVENT_PORT_ACTIVE.
  // false if the node is down. `port` other than 1: the event a second port
  // of the same HCA raises (the host's traffic is not touched). On a device
  // of several ports (Fabric::add_port), `node` names the port and `port`
  // is ignored: that port's address is isolated, and every port of the
  // device gets the event with that port's number, as on a real HCA.
  bool port_down(const IpAddr& node, bool down = true, std::uint8_t port = 1);
  // The host dies: no DREQ, state gone (SimNode::crash()).
  void crash(const IpAddr& node);
  // The node's RDMA device is removed (`rdma link delete`): every QP goes to
  // ERR (peers' sends end in retry exceeded), every cm id of the node, the
  // listener included, gets DEVICE_REMOVAL, and every call but the releasing
  // ones fails with ENODEV (open() too) until restore_device(). The objects
  // stay until their owner releases them (SimNode oracles). Every port of
  // the node's device goes with it.
  void remove_device(const IpAddr& node);
  // A device owns the node's address again: open() works (once the owner
  // closed the old one, Seam::close_device). Every port of the device.
  void restore_device(const IpAddr& node);
  // The node's CQ overflows now: kCqErr, every QP on it to ERR, later CQEs lost.
  void cq_overflow(const IpAddr& node);
  // The drain WR of `qpn` never completes (to exercise drain_timeout).
  void drop_drain_completion(const IpAddr& node, rdma::Qpn qpn);
  // The next `count` RTUs sent to `passive` are lost on the wire; the
  // passive id then waits for its REP timeout unless data arrives first and
  // the manager passes COMM_EST on (Seam::notify_established).
  void lose_rtu(const IpAddr& passive, std::uint32_t count = 1);
  // For the simulator: consumes one pending RTU loss toward `passive`.
  bool take_rtu_loss(const IpAddr& passive);

  struct Rule {
    bool cm = true;
    FaultAction action = FaultAction::kDrop;
    std::uint8_t type = 0;  // CmEventType or AsyncEventType
    std::optional<IpAddr> node;
    std::uint32_t remaining = 0;
    Duration delay{};
  };
  // For the simulator: consumes the first matching rule; nullptr if none.
  const Rule* match(bool cm, std::uint8_t type, const IpAddr& node);

 private:
  friend class Fabric;
  explicit Faults(Fabric& f) : fabric_(f) {}
  SimNode::Impl* live(const IpAddr& node);  // nullptr: unknown or crashed
  Fabric& fabric_;
  std::vector<Rule> rules_;
  Rule last_{};
  std::vector<std::pair<IpAddr, std::uint32_t>> rtu_losses_;
};

class Fabric {
 public:
  explicit Fabric(std::uint64_t seed = 1);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Virtual time; starts at a fixed epoch (not 0, so "unset" stays distinct).
  TimePoint now() const;
  // The fabric owns the node. Adding an address twice returns the existing node.
  // The node is port 1 of an HCA of its own.
  SimNode& add_node(const IpAddr& underlay, Profile profile);
  // Another port of the HCA of the node at `device` (port 2, 3, ...), at
  // its own address, on the same host: a node of its own for rdma_cm (its
  // listener and ids), QPs, CQ and sink, as librdmacm gives every port of a
  // device the one ibv_context, sharing that device's PD, MRs and SRQ (what
  // rails that are ports of one device share: docs/design.md "Rails").
  // Removal, DEVICE_FATAL, crash and restart take every port. Adding an
  // address twice returns the existing node; with no node at `device`, the
  // new node is port 1 of an mlx HCA of its own.
  SimNode& add_port(const IpAddr& device, const IpAddr& underlay);
  SimNode* node(const IpAddr& underlay);
  std::vector<SimNode*> nodes();

  // Processes everything due up to now()+d and leaves the clock there.
  void run_for(Duration d);
  void run_until(TimePoint t);
  // Processes events (node timers included) up to now()+limit. Returns true as
  // soon as nothing is scheduled but node timers beyond that point (the clock
  // stays at the last event processed); false if fabric events are still
  // pending there (the clock is then at now()+limit).
  bool run_until_idle(Duration limit);
  // Events processed so far (a cheap progress / determinism check).
  std::uint64_t events_processed() const;

  Faults& faults();
  Timing& timing();
  // Every dispatched event and completion as one line ("t=... node ... ev"),
  // for debugging and determinism checks. Empty function = off.
  void set_tracer(std::function<void(const std::string&)> tracer);

  struct Impl;
  Impl& impl();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcnet::sim
