// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The one state machine of a QP and the connection it carries
// (docs/design.md "Connection lifecycle"): its states, the names operators
// see, and the legality table. Every other file takes ConnState from here.
// How long each state may last and what its expiry does: cm/lifecycle.hpp.
//
// Establishment:  RESOLVING_ADDR -> RESOLVING_ROUTE -> CONNECTING (REQ sent)
//                 or ACCEPTING (REP sent; a passive QP is born here)
//                 -> ESTABLISHED
// Teardown (IB spec 10.3.1 for a QP on an SRQ):
//                 DISCONNECTING (DREQ sent or received) -> ERROR (modified to
//                 IBV_QPS_ERR) -> AWAIT_LAST_WQE -> DRAINING (drain WR posted)
//                 -> DESTROYED
#include <cstdint>
#include <string_view>

namespace rcnet::cm {

enum class ConnState : std::uint8_t {
  kResolvingAddr,
  kResolvingRoute,
  kConnecting,  // REQ sent
  kAccepting,   // REP sent
  kEstablished,
  kDisconnecting,  // DREQ sent or received
  kError,          // modified to IBV_QPS_ERR
  kAwaitLastWqe,   // waiting for Last WQE Reached (bounded by last_wqe_timeout)
  kDraining,       // drain WR posted (bounded by drain_timeout)
  kDestroyed,
};
inline constexpr int kConnStateCount = 10;
static_assert(static_cast<int>(ConnState::kDestroyed) + 1 == kConnStateCount,
              "kConnStateCount must follow the enum");

// "RESOLVING_ADDR", ..., "DESTROYED": the names operators see in rcnetctl and
// the journal's CONN_STATE / TEARDOWN_STAGE fields.
std::string_view to_string(ConnState s);

// The teardown stages: DISCONNECTING and every state after it.
constexpr bool is_teardown(ConnState s) {
  return s >= ConnState::kDisconnecting;
}

namespace detail {
constexpr std::uint16_t bit(ConnState s) {
  return static_cast<std::uint16_t>(1u << static_cast<int>(s));
}
// kLegal[from] has the bit of every state `from` may move to (each state's
// time bound and expiry, the rest of its row: cm/lifecycle.cpp).
inline constexpr std::uint16_t kLegal[kConnStateCount] = {
    /* RESOLVING_ADDR  */ bit(ConnState::kResolvingRoute) | bit(ConnState::kDestroyed),
    /* RESOLVING_ROUTE */ bit(ConnState::kConnecting) | bit(ConnState::kError) |
        bit(ConnState::kDestroyed),
    /* CONNECTING      */ bit(ConnState::kEstablished) | bit(ConnState::kError),
    /* ACCEPTING       */ bit(ConnState::kEstablished) | bit(ConnState::kError) |
        bit(ConnState::kDestroyed),
    /* ESTABLISHED     */ bit(ConnState::kDisconnecting) | bit(ConnState::kError),
    /* DISCONNECTING   */ bit(ConnState::kError),
    /* ERROR           */ bit(ConnState::kAwaitLastWqe) | bit(ConnState::kDraining) |
        bit(ConnState::kDestroyed),
    /* AWAIT_LAST_WQE  */ bit(ConnState::kDraining) | bit(ConnState::kDestroyed),
    /* DRAINING        */ bit(ConnState::kDestroyed),
    /* DESTROYED       */ 0,
};
}  // namespace detail

// Whether the state machine allows from -> to.
constexpr bool is_legal_transition(ConnState from, ConnState to) {
  return (detail::kLegal[static_cast<int>(from)] & detail::bit(to)) != 0;
}

// What the table promises, checked at compile time.
namespace detail {
constexpr bool no_self_loops() {
  for (int i = 0; i < kConnStateCount; ++i)
    if (is_legal_transition(static_cast<ConnState>(i), static_cast<ConnState>(i)))
      return false;
  return true;
}
// Teardown never goes back: no teardown stage leads to a state before it.
constexpr bool teardown_only_forward() {
  for (int f = 0; f < kConnStateCount; ++f)
    for (int t = 0; t < kConnStateCount; ++t)
      if (is_teardown(static_cast<ConnState>(f)) && t <= f &&
          is_legal_transition(static_cast<ConnState>(f), static_cast<ConnState>(t)))
        return false;
  return true;
}
// Every state but DESTROYED has a way out, so no QP can be stranded.
constexpr bool every_state_can_end() {
  for (int i = 0; i + 1 < kConnStateCount; ++i)
    if (kLegal[i] == 0)
      return false;
  return kLegal[kConnStateCount - 1] == 0;
}
}  // namespace detail
static_assert(detail::no_self_loops());
static_assert(detail::teardown_only_forward());
static_assert(detail::every_state_can_end());
// An ESTABLISHED QP always passes through ERROR before it is destroyed
// (never destroyed in RTS).
static_assert(!is_legal_transition(ConnState::kEstablished, ConnState::kDestroyed));
static_assert(!is_legal_transition(ConnState::kDisconnecting, ConnState::kDestroyed));

}  // namespace rcnet::cm
