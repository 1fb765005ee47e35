// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// How long a QP may stay in each state, and what happens when it stays
// longer (docs/design.md "Connection lifecycle"): beside the states and their
// legality table (cm/conn_state.hpp), the other half of the lifecycle.
//
// Manager::Impl::set_state() arms the bound of the state it enters (a conn is
// born in RESOLVING_ADDR or ACCEPTING by Manager::Impl::add_conn(), which
// arms it too) and clears the deadline on entering a state without one;
// Manager::Impl::on_deadline() does the row's Expiry. The only other writer
// of a deadline is the put-off for rdma_cm events queued unread
// (Manager::Impl::defer_for_cm_backlog()).
#include <cstdint>
#include <optional>
#include <string_view>

#include "cm/conn_state.hpp"
#include "cm/manager.hpp"
#include "util/time.hpp"

namespace rcnet::cm {

// DRAINING on a device that completes no drain WR after Error
// (rdma::ProviderProfile::drain_after_error false): no WR is posted, and
// the QP is destroyed once this much time let the loop poll the flushed
// WRs the move to Error put in the CQ (cm/teardown.cpp post_drain). Not
// counted as a drain timeout.
inline constexpr Duration kCqSweep = std::chrono::milliseconds(5);

// What the manager does when a state's bound ran out.
enum class Expiry : std::uint8_t {
  kNone,  // no bound: the state never expires
  // The connection attempt failed (Stage::why), unless rdma_cm events are
  // queued unread: then it is put off (kCmBacklogGrace, manager.hpp).
  kAttemptFails,
  kToError,       // no DISCONNECTED in time: move the QP to Error anyway
  kDrainAnyway,   // no Last WQE Reached in time: post the drain WR anyway (counted)
  kForceDestroy,  // the drain WR did not complete in time: destroy the QP anyway (counted)
};

struct Stage {
  // The longest a conn stays in the state, from entering it; nullopt: no
  // bound (the state ends by an event, or within the call that entered it).
  std::optional<Duration> bound;
  Expiry on_expiry = Expiry::kNone;
  // kAttemptFails: the failure reason (log line and teardown reason);
  // static storage.
  std::string_view why;
};

// State `s`'s row of the lifecycle under `cfg` (its timeouts, read at the
// call: a live reconfiguration applies to the states entered afterwards).
Stage stage(ConnState s, const ManagerConfig& cfg);

// stage(s, cfg).bound.
inline std::optional<Duration> bound(ConnState s, const ManagerConfig& cfg) {
  return stage(s, cfg).bound;
}

}  // namespace rcnet::cm
