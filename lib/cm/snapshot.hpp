// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Read-only views of the connection manager, for rcnetctl and the logs.
// Plain values: copying a snapshot never touches the manager again.

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/conn_state.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/counter_row.hpp"
#include "util/time.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

// The metric families of several counters (util/counter_row.hpp); a
// family of one counter is named in its row.
inline constexpr SeriesFamily kRejsSent{"rcnet_rejs_sent_total", "reason", "REJs sent, by reason"};
inline constexpr SeriesFamily kWaitsSkipped{"rcnet_teardown_waits_skipped_total", "wait", ""};
inline constexpr SeriesFamily kReaped{
    "rcnet_reaped_connections_total", "reason",
    "connections torn down by the reaper or a limit: idle, dead peer, underlay link down, LRU "
    "eviction"};
inline constexpr SeriesFamily kEventsIgnored{"rcnet_events_ignored_total", "kind",
                                             "duplicate, late or unknown events ignored, by kind"};
// Also the TUN side's drops (ctl/prometheus.cpp), and any counter named
// drops_<reason> that has no row.
inline constexpr SeriesFamily kDropped{"rcnet_dropped_packets_total", "reason",
                                       "packets dropped, by reason"};
// Which path noticed first (docs/design.md "Device loss and return").
inline constexpr SeriesFamily kRemovalsNoticed{"rcnet_device_removals_noticed_total", "path", ""};
inline constexpr SeriesFamily kReadoptsNoticed{"rcnet_device_readopts_noticed_total", "path", ""};
inline constexpr SeriesFamily kFailovers{"rcnet_failovers_total", "cause",
                                         "peers moved off a failed link to another rail, by cause"};

inline constexpr SeriesFamily kAuthRefused{
    "rcnet_auth_refused_total", "reason",
    "connections refused by the peer proof (docs/design.md \"Trust\"), by reason"};

// Why the peer proof refused a connection (docs/design.md "Trust"): one row
// per reason, X(ctx, enumerator, name, help). name is what to_string()
// gives (logs, the teardown reason "auth: <name>"), the counter
// auth_refused_<name> and its series rcnet_auth_refused_total{reason=...}.
#define RCNET_AUTH_REFUSALS(X, ctx)                                                       \
  X(ctx, kNoProof, no_proof,                                                              \
    "refused: no proof (none offered in required mode, none in time, or data before it)") \
  X(ctx, kBadProof, bad_proof, "refused: a proof that does not verify under its key")     \
  X(ctx, kUnknownKey, unknown_key, "refused: a key id not among auth.keys")               \
  X(ctx, kReplay, replay, "refused: a REQ nonce seen before (a replayed REQ)")            \
  X(ctx, kOverlay, overlay, "refused: a peer of another overlay id")                      \
  X(ctx, kRevoked, revoked, "torn down: proven with a key a reload removed")

// An auth refusal's row as a counter row.
#define RCNET_AUTH_REFUSED_ROW(X, enumerator, name, help) \
  X(auth_refused_##name, kAuthRefused(#name), help)

// A REJ reason's row (wire/private_data.hpp) as a counter row.
#define RCNET_REJECT_SENT_ROW(X, enumerator, code, name, help) \
  X(rejects_sent_##name, kRejsSent(#name), help)

// Every counter of the manager, one row each: X(name, series, help)
// (util/counter_row.hpp). The ctl `stats` command, the journal and the
// Prometheus export enumerate them through this list; adding a counter is
// its row and the code that counts it.
#define RCNET_CM_COUNTERS(X)                                                                    \
  X(connects_started, "rcnet_connect_attempts_total", "active connection attempts started")     \
  X(connects_established, "rcnet_connections_established_total",                                \
    "connections ESTABLISHED (either side)")                                                    \
  X(connect_failures, "rcnet_connect_failures_total",                                           \
    "attempts that failed (addr/route/connect error, unreachable)")                             \
  X(accepts, "rcnet_reqs_accepted_total", "REQs accepted")                                      \
  RCNET_AUTH_REFUSALS(RCNET_AUTH_REFUSED_ROW, X)                                                \
  X(auth_proven, "rcnet_auth_proven_total", "connections whose peer's proof verified")          \
  X(auth_unproven, "rcnet_auth_unproven_total",                                                 \
    "connections admitted without a proof (auth.mode optional, a peer that offers none)")       \
  X(drops_unproven, kDropped("unproven"),                                                       \
    "packets dropped: received before the peer's proof verified")                               \
  RCNET_REJECT_REASONS(RCNET_REJECT_SENT_ROW, X)                                                \
  X(rejects_received, "rcnet_rejs_received_total", "REJ received")                              \
  X(rejects_received_busy, "rcnet_rejs_received_busy_total",                                    \
    "REJ busy received: retried after the peer's retry-after")                                  \
  X(connects_paced, "rcnet_connects_paced_total",                                               \
    "our connects that waited for max_pending_setups to start")                                 \
  X(collisions_merged, "rcnet_collisions_merged_total", "simultaneous opens merged")            \
  X(restarts_detected, "rcnet_peer_restarts_total",                                             \
    "REQ from a new incarnation of a connected peer")                                           \
  X(stale_replaced, "rcnet_stale_connections_replaced_total",                                   \
    "REQ from the same incarnation replaced our stale connection")                              \
  X(malformed_private_data, "rcnet_malformed_private_data_total",                               \
    "REQ/REP/REJ private data that failed validation")                                          \
  X(last_wqe_received, "rcnet_last_wqe_events_total", "Last WQE Reached events received")       \
  X(last_wqe_timeouts, "rcnet_last_wqe_timeouts_total",                                         \
    "last_wqe_timeout expired: drain WR posted without the event")                              \
  X(drains_completed, "rcnet_drains_completed_total", "drain WR completions seen")              \
  X(last_wqe_skipped, kWaitsSkipped("last_wqe"),                                                \
    "AWAIT_LAST_WQE skipped: the device has no Last WQE Reached")                               \
  X(drains_skipped, kWaitsSkipped("drain"),                                                     \
    "DRAINING skipped: the device completes no drain WR after Error")                           \
  X(drain_timeouts, "rcnet_drain_timeouts_total",                                               \
    "drain_timeout expired: QP destroyed without its drain completion")                         \
  X(forced_destroys, "rcnet_forced_destroys_total",                                             \
    "QPs destroyed without the full spec sequence")                                             \
  X(slow_destroys, "rcnet_slow_destroys_total",                                                 \
    "QP destroys that blocked the event loop for 100 ms or more")                               \
  X(flushed_recvs_counted, "rcnet_flushed_receives_total",                                      \
    "non-SRQ flushed receive completions counted in teardown")                                  \
  X(qps_created, "rcnet_qps_created_total", "QPs created")                                      \
  X(qps_destroyed, "rcnet_qps_destroyed_total", "QPs destroyed")                                \
  X(cm_ids_created, "rcnet_cm_ids_created_total", "rdma_cm ids created (active and passive)")   \
  X(cm_ids_destroyed, "rcnet_cm_ids_destroyed_total", "rdma_cm ids destroyed")                  \
  X(idle_reaps, kReaped("idle"), "connections torn down by idle_timeout")                       \
  X(dead_peer_reaps, kReaped("dead_peer"),                                                      \
    "connections reaped at once: retry exceeded, neighbour FAILED")                             \
  X(neighbour_failed_stale, "rcnet_neighbour_failed_stale_total",                               \
    "neighbour FAILED not believed: the peer was heard from while it was being resolved")       \
  X(link_down_teardowns, kReaped("link_down"),                                                  \
    "connections torn down because the underlay link went down")                                \
  X(evictions, kReaped("evicted"), "LRU evictions at max_connections")                          \
  X(evictions_refused, "rcnet_evictions_refused_total",                                         \
    "at max_connections, all connections under 1 s old: REJ full or connect deferred")          \
  X(reaper_visits, "rcnet_reaper_visits_total",                                                 \
    "conns the reaper looked at (acted on, +1 where it stopped)")                               \
  X(qp_fatal_events, "rcnet_qp_fatal_events_total", "QP FATAL / REQ_ERR / ACCESS_ERR events")   \
  X(async_events_ignored, kEventsIgnored("async"),                                              \
    "duplicate, late or unknown async events ignored")                                          \
  X(cm_events_ignored, kEventsIgnored("rdma_cm"),                                               \
    "duplicate, late or unknown rdma_cm events ignored")                                        \
  X(completions_ignored, kEventsIgnored("completion"), "completions for unknown QPs or wr_ids") \
  X(srq_limit_events, "rcnet_srq_limit_events_total", "SRQ limit reached events")               \
  X(packets_tx, "rcnet_tx_packets_total", "packets sent")                                       \
  X(bytes_tx, "rcnet_tx_bytes_total", "bytes sent")                                             \
  X(packets_rx, "rcnet_rx_packets_total", "packets received")                                   \
  X(bytes_rx, "rcnet_rx_bytes_total", "bytes received")                                         \
  X(send_errors, "rcnet_send_errors_total", "send completions with an error status")            \
  X(recv_errors, "rcnet_receive_errors_total",                                                  \
    "receive completions with an error status (not flush)")                                     \
  X(drops_queue_full, kDropped("queue_full"),                                                   \
    "packets dropped: per-peer queue full (oldest dropped)")                                    \
  X(drops_oversize, kDropped("oversize"), "packets dropped: larger than the MTU")               \
  X(drops_connect_failed, kDropped("connect_failed"),                                           \
    "packets dropped: queued for a peer whose connect failed")                                  \
  X(drops_no_slot, kDropped("no_slot"), "packets refused: no send slot")                        \
  X(drops_shutting_down, kDropped("shutting_down"),                                             \
    "packets dropped: stopping, link down, device lost")                                        \
  X(gso_sent, "rcnet_gso_sent_packets_total",                                                   \
    "GSO super-packets sent whole to peers that negotiated offload")                            \
  X(credit_waits, "rcnet_credit_waits_total",                                                   \
    "sends held in the peer's queue: no receive credit left (no RNR)")                          \
  X(credit_updates, "rcnet_credit_updates_total",                                               \
    "control SENDs that returned credits (no data went the other way)")                         \
  X(sends_zero_copy, "rcnet_zero_copy_sends_total",                                             \
    "packets posted from the send buffer they were read into (no copy)")                        \
  X(send_doorbells, "rcnet_send_doorbells_total",                                               \
    "ibv_post_send calls for data SENDs (a chain of WRs counts once)")                          \
  X(gso_segmented, "rcnet_gso_segmented_packets_total",                                         \
    "GSO super-packets cut in software for peers without offload")                              \
  X(drops_gso_to_legacy_peer, kDropped("gso_to_legacy_peer"),                                   \
    "packets for a peer without offload that could not be segmented or checksummed")            \
  X(uso_segmented, "rcnet_uso_segmented_packets_total",                                         \
    "UDP super-packets cut in software for a GSO peer without USO")                             \
  X(comm_est_notified, "rcnet_comm_est_notified_total",                                         \
    "COMM_EST (data before the RTU) passed on with rdma_notify")                                \
  X(connect_deadlines_deferred, "rcnet_connect_deadlines_deferred_total",                       \
    "attempts whose resolve/connect deadline was put off: rdma_cm events queued unread")        \
  X(device_removals, "rcnet_device_removals_total",                                             \
    "RDMA device lost (DEVICE_REMOVAL or FATAL): its objects released")                         \
  X(device_readopts, "rcnet_device_readopts_total",                                             \
    "lost RDMA device opened again on node.address")                                            \
  X(device_removals_async, kRemovalsNoticed("async_event"),                                     \
    "device losses noticed first by DEVICE_REMOVAL or FATAL")                                   \
  X(device_removals_monitor, kRemovalsNoticed("netlink_monitor"),                               \
    "device losses noticed first by the netlink monitor")                                       \
  X(device_readopts_monitor, kReadoptsNoticed("netlink_monitor"),                               \
    "re-adoptions started by the netlink monitor")                                              \
  X(device_readopts_poll, kReadoptsNoticed("poll"), "re-adoptions found by the readopt poll")   \
  X(device_notices_late, "rcnet_device_notices_late_total",                                     \
    "a loss noticed again by the other path: ignored")                                          \
  X(illegal_transitions, "rcnet_illegal_transitions_total",                                     \
    "BUG: QP transitions the state machine forbids (QP abandoned)")

// The rails' counters (cm/rails.hpp): counted by the RailSet over every
// rail's manager, not by one Manager.
#define RCNET_RAIL_COUNTERS(X)                                                \
  X(failovers_port_error, kFailovers("port_error"),                           \
    "peers moved off a link: IBV_EVENT_PORT_ERR on its rail")                 \
  X(failovers_device_lost, kFailovers("device_lost"),                         \
    "peers moved off a link: its rail's device removed or fatal")             \
  X(failovers_carrier, kFailovers("carrier"),                                 \
    "peers moved off a link: carrier or address of its rail's netdev lost")   \
  X(failovers_retry_exceeded, kFailovers("retry_exceeded"),                   \
    "peers moved off a link: retry exceeded on it (silent path)")             \
  X(failovers_peer_notice, kFailovers("peer_notice"),                         \
    "peers moved off a link: the peer said its rail went down")               \
  X(failovers_link_lost, kFailovers("link_lost"),                             \
    "peers moved off a link: its connection failed otherwise")                \
  X(failbacks, "rcnet_failbacks_total",                                       \
    "peers moved back to a preferred rail that is healthy again")             \
  X(failover_resent, "rcnet_failover_resent_packets_total",                   \
    "packets of a failed link posted again on another (duplicates possible)") \
  X(failover_queue_moved, "rcnet_failover_moved_packets_total",               \
    "packets waiting for a failed link's connection moved to another")        \
  X(failover_no_link, kDropped("failover_no_link"),                           \
    "packets of a failed link dropped: no other link to the peer")            \
  X(rail_notices_sent, "rcnet_rail_notices_sent_total",                       \
    "rail down/up notices sent to peers over a surviving link")               \
  X(rail_notices_received, "rcnet_rail_notices_received_total",               \
    "rail down/up notices received from peers")                               \
  X(rail_probes_sent, "rcnet_rail_probes_sent_total",                         \
    "probes sent on standby links (keep them alive, find silent failures)")

struct Counters {
#define RCNET_X(name, series, help) std::uint64_t name = 0;
  RCNET_CM_COUNTERS(RCNET_X)
  RCNET_RAIL_COUNTERS(RCNET_X)
#undef RCNET_X
  // Every counter's row, in declaration order.
  static constexpr CounterRow kRows[] = {RCNET_CM_COUNTERS(RCNET_COUNTER_ROW)
                                             RCNET_RAIL_COUNTERS(RCNET_COUNTER_ROW)};
  // Calls f(name, value, help) for every counter, in declaration order.
  template <class F>
  void for_each(F&& f) const {
#define RCNET_X(name, series, help) f(std::string_view(#name), name, std::string_view(help));
    RCNET_CM_COUNTERS(RCNET_X)
    RCNET_RAIL_COUNTERS(RCNET_X)
#undef RCNET_X
  }
  // Adds every counter of `o` (the RailSet's sum over its rails).
  Counters& operator+=(const Counters& o) {
#define RCNET_X(name, series, help) name += o.name;
    RCNET_CM_COUNTERS(RCNET_X)
    RCNET_RAIL_COUNTERS(RCNET_X)
#undef RCNET_X
    return *this;
  }
};

// The counter a REJ sent adds to, indexed by its reason's code
// (wire::RejectReason; kNone, 0, counts nothing).
#define RCNET_X(ctx, enumerator, code, name, help) &Counters::rejects_sent_##name,
inline constexpr std::uint64_t Counters::*kRejectsSent[] = {nullptr,
                                                            RCNET_REJECT_REASONS(RCNET_X, )};
#undef RCNET_X
// The counter of a REJ sent with `r`; nullptr for kNone (or a code no row has).
inline std::uint64_t* rejects_sent(Counters& c, wire::RejectReason r) {
  const auto i = static_cast<std::size_t>(r);
  return i < std::size(kRejectsSent) && kRejectsSent[i] != nullptr ? &(c.*kRejectsSent[i])
                                                                   : nullptr;
}

struct QpSnapshot {
  std::uint64_t id = 0;  // the manager's connection id (unique per rail, never reused)
  NodeId peer_node = 0;
  Endpoint peer_addr;
  rdma::Qpn qpn = 0;
  rdma::Qpn remote_qpn = 0;
  ConnState state = ConnState::kResolvingAddr;
  bool active = false;      // we sent the REQ
  bool in_service = false;  // the peer's connection (not one in teardown)
  bool offload = false;     // both ends advertised kCapGso: GSO frames travel whole
  bool header = false;      // SENDs framed by wire::FrameHeader (no immediate)
  // Receive credits (a device without RNR): what the peer granted (0 = no
  // credit flow), SENDs it can still take, and credits we owe it.
  std::uint32_t peer_grant = 0, tx_credits = 0, credits_owed = 0;
  Duration time_in_state{};
  Duration age{};
  Duration idle{};
  std::uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  std::string teardown_reason;  // empty until teardown starts
  std::uint32_t rail = 0;       // the rail (index into Snapshot::rails) this QP is on
  // The peer proof (docs/design.md "Trust"): "off" (auth.mode off, or a
  // peer this node asked nothing of), "awaiting", "proven", "unproven";
  // auth_key_id: the key it was proven with (0 when not proven).
  std::string_view auth = "off";
  std::uint8_t auth_key_id = 0;
};

struct PeerSnapshot {
  NodeId node = 0;
  Endpoint underlay;
  IpAddr overlay;                 // from the peer's private data, when known
  std::uint64_t incarnation = 0;  // 0 until known
  std::uint32_t queue_depth = 0;  // packets waiting for ESTABLISHED
  std::uint64_t conn_id = 0;      // in-service QP's id, 0 if none
  std::uint32_t rail = 0;         // the rail whose manager holds this entry (one per rail per peer)
  bool carries = false;  // this rail's link carries the peer's traffic now (RailSet's choice)
  // Why a peer is unreachable (cm/establish.cpp): its connection attempts.
  std::uint32_t attempts = 0;             // failed attempts since the last ESTABLISHED
  std::optional<Duration> since_attempt;  // since the last attempt began; none yet: nullopt
  std::string last_result;                // how it ended: "ESTABLISHED", "REJ full", ...
  std::optional<Duration> since_result;   // since it ended; nullopt while under way / none
  std::optional<Duration> retry_in;       // until the next attempt; nullopt: none pending
};

// A latency histogram in the Prometheus manner: cumulative counts of the
// observations at or below each bound, their count and their sum. Cheap
// enough for every connection's setup and teardown (a dozen compares).
struct Histogram {
  // Upper bounds in seconds: rdma_cm setup takes ms on a fabric and up to
  // timeouts.connect (and the deferral, 30 s) under a REQ storm; a teardown
  // takes µs without waits and up to the sum of its bounds otherwise.
  static constexpr double kBounds[] = {0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30};
  static constexpr std::size_t kBuckets = std::size(kBounds);
  std::array<std::uint64_t, kBuckets> le{};  // le[i]: observations <= kBounds[i]
  std::uint64_t count = 0;
  double sum_seconds = 0;
  void observe(Duration d) {
    const double s = std::chrono::duration<double>(d).count();
    for (std::size_t i = 0; i < kBuckets; ++i)
      le[i] += s <= kBounds[i] ? 1 : 0;
    ++count;
    sum_seconds += s;
  }
  Histogram& operator+=(const Histogram& o) {
    for (std::size_t i = 0; i < kBuckets; ++i)
      le[i] += o.le[i];
    count += o.count;
    sum_seconds += o.sum_seconds;
    return *this;
  }
};

struct SrqSnapshot {
  bool enabled = false;
  std::uint32_t size = 0;    // receive WRs
  std::uint32_t posted = 0;  // currently posted
  std::uint32_t limit = 0;   // armed low watermark
  std::uint64_t limit_events = 0;
  std::uint32_t buffer_size = 0;  // bytes per receive buffer (SRQ or per-QP RQ)
};

// A rail: one underlay address on one RDMA device port (cm/rails.hpp).
enum class RailState : std::uint8_t {
  kUp,        // carries traffic (or stands by, in active-backup)
  kDown,      // port error, carrier or address lost: no link on it
  kHolddown,  // healthy again, waiting `holddown` before it carries traffic
  kRemoved,   // its RDMA device is gone; adopted again when it returns
};
// "up", "down", "holddown", "removed": what rcnetctl rails shows.
constexpr std::string_view to_string(RailState s) {
  switch (s) {
    case RailState::kUp:
      return "up";
    case RailState::kDown:
      return "down";
    case RailState::kHolddown:
      return "holddown";
    case RailState::kRemoved:
      return "removed";
  }
  return "?";
}

struct RailSnapshot {
  std::uint32_t index = 0;  // rail 0 first, as node.address lists them
  Endpoint local;           // the rail's underlay address and port
  std::string device;       // RDMA device ("rxe0"); empty while removed
  std::uint8_t port = 1;    // its port
  RailState state = RailState::kUp;
  std::string cause;           // of the last change ("IBV_EVENT_PORT_ERR", "carrier lost", ...)
  Duration since_change{};     // time since that change (since start if none)
  Duration holddown{};         // the holddown a recovery waits now (grows with flaps)
  std::uint32_t flaps = 0;     // recent failures remembered (decays)
  std::uint32_t links = 0;     // connections in service on this rail
  std::uint32_t carrying = 0;  // of those, links that carry their peer's traffic now
  // Snapshot::device_removed_by / device_readopted_by of the rail's manager.
  std::string removed_by, readopted_by;
  std::uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
};

struct Snapshot {
  NodeId node = 0;
  std::uint64_t incarnation = 0;
  Endpoint local;
  std::string device;
  std::uint8_t port = 0;        // the device port the listener is bound to; 0 unknown
  bool device_removed = false;  // lost, not adopted again yet (Manager::device_present)
  // The path (to_string(DevicePath)) that noticed the last loss, and the
  // last return; empty: none since start.
  std::string device_removed_by;
  std::string device_readopted_by;
  std::uint32_t mtu = 0;
  bool offload = false;  // ManagerConfig::offload: GSO frames, kCapGso advertised
  // The device's profile (rdma/provider.hpp) as applied: its transport,
  // whether this node asks for header framing, the credits it grants per
  // connection (0: none, the device has RNR), and the connection limit
  // those leave (max_connections, lowered by credits).
  std::string transport = "infiniband";
  bool header = false;
  std::uint32_t credits = 0;
  std::uint32_t max_connections = 0;
  std::uint32_t send_slots_total = 0, send_slots_free = 0;
  std::vector<PeerSnapshot> peers;
  std::vector<QpSnapshot> qps;  // every QP, in service and in teardown
  SrqSnapshot srq;              // rail 0's (each rail has its own SRQ)
  Counters counters;            // summed over the rails, plus the rails' own
  // From the start of an attempt (REQ to send, or REQ received) to
  // ESTABLISHED; from the start of a teardown to DESTROYED. Summed over the rails.
  Histogram connect_time, teardown_time;
  // One entry per rail (a single-rail node has one). Filled by the RailSet;
  // a bare Manager's snapshot leaves it empty.
  std::vector<RailSnapshot> rails;
  std::string rails_mode = "active-backup";  // or "stripe"
  // Peers with a link in service but no second healthy link: the node has
  // lost redundancy toward them ("rcnet_peers_without_redundancy").
  std::uint32_t peers_without_redundancy = 0;
};

}  // namespace rcnet::cm
