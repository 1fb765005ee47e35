// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/lifecycle.hpp"

namespace rcnet::cm {
namespace {

Stage bounded(Duration bound, Expiry on_expiry, std::string_view why = {}) {
  return Stage{bound, on_expiry, why};
}

}  // namespace

// One row per state: what it waits for, how long, and what expiry does.
Stage stage(ConnState s, const ManagerConfig& cfg) {
  using S = ConnState;
  switch (s) {
    // Waiting for ADDR_RESOLVED / ROUTE_RESOLVED. rdma_cm reports an
    // ADDR_ERROR or ROUTE_ERROR itself after resolve_timeout
    // (rdma_resolve_addr(3)); twice that catches an answer that never comes.
    case S::kResolvingAddr:
    case S::kResolvingRoute:
      return bounded(cfg.resolve_timeout * 2, Expiry::kAttemptFails,
                     "address/route resolution timed out");
    // REQ or REP sent, waiting for ESTABLISHED (or a REJ).
    case S::kConnecting:
    case S::kAccepting:
      return bounded(cfg.connect_timeout, Expiry::kAttemptFails,
                     "connect_timeout: not ESTABLISHED in time");
    // Ended by a DREQ, an error or the reaper (idle_timeout is not a bound
    // of the state: traffic moves it).
    case S::kEstablished:
      return {};
    // DREQ sent, waiting for DREP / DISCONNECTED.
    case S::kDisconnecting:
      return bounded(cfg.disconnect_timeout, Expiry::kToError);
    // Left within the call that entered it (for AWAIT_LAST_WQE, DRAINING or
    // DESTROYED): nothing to wait for.
    case S::kError:
      return {};
    // Waiting for Last WQE Reached (SRQ) or the RQ's flush (IB spec 10.3.1).
    case S::kAwaitLastWqe:
      return bounded(cfg.last_wqe_timeout, Expiry::kDrainAnyway);
    // Waiting for the drain WR's completion, which comes after every earlier
    // WR's.
    case S::kDraining:
      return bounded(cfg.drain_timeout, Expiry::kForceDestroy);
    case S::kDestroyed:
      return {};
  }
  return {};
}

}  // namespace rcnet::cm
