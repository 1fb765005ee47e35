// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Connection events for a live observer (rcnetctl monitor, through the
// daemon's ctl server): what the journal says about connections, as plain
// data. The manager reports them synchronously, in the order they happen,
// from the functions that make them happen:
//   kState     Manager::Impl::set_state, every QP state change (from -> to,
//              reason = the transition's why: "REQ sent", "DREQ received, ...")
//   kTeardown  Manager::Impl::teardown, once per QP (reason = the teardown
//              reason; message_id = the journal MESSAGE_ID, e.g.
//              log::kMsgReapedIdle, or empty)
//   kReject    Manager::Impl::reject, a REJ sent to a REQ (reason = the wire
//              reject reason name, detail = why; only peer_addr is known)
//   kEvict     Manager::Impl::make_room, an LRU connection evicted at
//              max_connections (a kTeardown follows)
//   kRail      RailSet: a rail changed state (reason = the new state,
//              detail = the cause); conn, peer and QPNs are 0
//   kFailover  RailSet: a peer's traffic moved from one rail to another
//              (reason = "failover" or "failback", detail = the cause;
//              from_rail -> rail; peer and peer_addr: the peer on the
//              link it moved to; QPNs 0)
#include <cstdint>
#include <functional>
#include <string_view>

#include "cm/conn_state.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/time.hpp"

namespace rcnet::cm {

enum class EventKind : std::uint8_t { kState, kTeardown, kReject, kEvict, kRail, kFailover };
// "state", "teardown", "reject", "evict", "rail", "failover": the "kind"
// rcnetctl monitor shows.
constexpr std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::kState:
      return "state";
    case EventKind::kTeardown:
      return "teardown";
    case EventKind::kReject:
      return "reject";
    case EventKind::kEvict:
      return "evict";
    case EventKind::kRail:
      return "rail";
    case EventKind::kFailover:
      return "failover";
  }
  return "?";
}

struct Event {
  EventKind kind = EventKind::kState;
  TimePoint time{};             // the manager's clock (TimerService::now), not wall time
  std::uint32_t rail = 0;       // the rail (kFailover: the one traffic moved to)
  std::uint32_t from_rail = 0;  // kFailover: the one it left
  std::uint64_t conn = 0;       // connection id; 0 for kReject (no connection)
  NodeId peer = 0;              // 0 when not known (kReject)
  Endpoint peer_addr;
  rdma::Qpn qpn = 0;  // 0 until the QP exists
  rdma::Qpn remote_qpn = 0;
  ConnState from = ConnState::kResolvingAddr;  // kState only
  ConnState to = ConnState::kResolvingAddr;    // kState; the current state otherwise
  // The string views are valid only during the observer's call.
  std::string_view reason;
  std::string_view detail;
  std::string_view message_id;
};

// Called synchronously on the loop's thread, inside the manager's own call
// stack (often half-way through a transition). It must return quickly, must
// not block, must not throw, and must not call back into the Manager (not
// even snapshot()): copy what it needs and act later.
using EventObserver = std::function<void(const Event&)>;

}  // namespace rcnet::cm
