// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The QP state machine's tables: the legal transitions (cm/conn_state.hpp) and
// each state's time bound and expiry (cm/lifecycle.hpp).
#include "catch2_compat.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cm/conn_state.hpp"
#include "cm/lifecycle.hpp"
#include "cm/manager.hpp"

namespace cm_conn_state_test {
using namespace rcnet;
using cm::ConnState;
using cm::Expiry;

namespace {

std::vector<ConnState> all_states() {
  std::vector<ConnState> v;
  for (int i = 0; i < cm::kConnStateCount; ++i)
    v.push_back(static_cast<ConnState>(i));
  return v;
}

// Every timeout of ManagerConfig a different value, none a multiple of
// another, so a bound read from the wrong field shows.
cm::ManagerConfig distinct_timeouts() {
  cm::ManagerConfig c;
  c.resolve_timeout = 1100ms;
  c.connect_timeout = 1300ms;
  c.disconnect_timeout = 1700ms;
  c.last_wqe_timeout = 1900ms;
  c.drain_timeout = 2300ms;
  c.idle_timeout = 2900ms;
  c.reaper_interval = 3100ms;
  return c;
}

// One timeout of ManagerConfig, the states whose bound it is, and the
// bound it gives them: written here independently of lifecycle.cpp.
struct Knob {
  std::string name;
  Duration cm::ManagerConfig::*field;
  std::set<ConnState> states;
  int times;  // bound = times * the field
};

std::vector<Knob> knobs() {
  using C = cm::ManagerConfig;
  return {
      {"resolve_timeout",
       &C::resolve_timeout,
       {ConnState::kResolvingAddr, ConnState::kResolvingRoute},
       2},
      {"connect_timeout", &C::connect_timeout, {ConnState::kConnecting, ConnState::kAccepting}, 1},
      {"disconnect_timeout", &C::disconnect_timeout, {ConnState::kDisconnecting}, 1},
      {"last_wqe_timeout", &C::last_wqe_timeout, {ConnState::kAwaitLastWqe}, 1},
      {"drain_timeout", &C::drain_timeout, {ConnState::kDraining}, 1},
      // Not the bound of any state: ESTABLISHED ends by the reaper, whose
      // expiry traffic moves.
      {"idle_timeout", &C::idle_timeout, {}, 1},
      {"reaper_interval", &C::reaper_interval, {}, 1},
  };
}

}  // namespace

TEST_CASE("state names and the transition table", "[cm]") {
  std::set<std::string_view> names;
  for (const ConnState s : all_states()) {
    const auto name = cm::to_string(s);
    CHECK(name != "?");
    names.insert(name);
    CHECK_FALSE(cm::is_legal_transition(s, s));  // no self-loops
    CHECK_FALSE(cm::is_legal_transition(ConnState::kDestroyed, s));
  }
  CHECK(names.size() == cm::kConnStateCount);
  // Teardown only moves forward, through the spec's order.
  CHECK(cm::is_legal_transition(ConnState::kEstablished, ConnState::kDisconnecting));
  CHECK(cm::is_legal_transition(ConnState::kError, ConnState::kAwaitLastWqe));
  CHECK(cm::is_legal_transition(ConnState::kAwaitLastWqe, ConnState::kDraining));
  CHECK(cm::is_legal_transition(ConnState::kDraining, ConnState::kDestroyed));
  CHECK_FALSE(cm::is_legal_transition(ConnState::kEstablished, ConnState::kDestroyed));
  CHECK_FALSE(cm::is_legal_transition(ConnState::kDraining, ConnState::kAwaitLastWqe));
  CHECK_FALSE(cm::is_legal_transition(ConnState::kAwaitLastWqe, ConnState::kEstablished));
  CHECK(cm::is_teardown(ConnState::kDisconnecting));
  CHECK_FALSE(cm::is_teardown(ConnState::kEstablished));
}

TEST_CASE("every state's bound and expiry", "[cm]") {
  const cm::ManagerConfig cfg = distinct_timeouts();
  std::set<ConnState> bounded;
  for (const ConnState s : all_states()) {
    INFO(cm::to_string(s));
    const cm::Stage st = cm::stage(s, cfg);
    CHECK(cm::bound(s, cfg) == st.bound);
    // A bound and an expiry action come together, and only a failed
    // attempt carries a reason of its own.
    CHECK(st.bound.has_value() == (st.on_expiry != Expiry::kNone));
    CHECK(st.why.empty() == (st.on_expiry != Expiry::kAttemptFails));
    if (st.bound) {
      bounded.insert(s);
      CHECK(*st.bound > Duration::zero());
    }
  }
  // Every state that waits for something outside (rdma_cm, the HCA) is
  // bounded; ESTABLISHED and DESTROYED are not, and ERROR is left within the
  // call that entered it.
  CHECK(bounded == std::set<ConnState>{ConnState::kResolvingAddr, ConnState::kResolvingRoute,
                                       ConnState::kConnecting, ConnState::kAccepting,
                                       ConnState::kDisconnecting, ConnState::kAwaitLastWqe,
                                       ConnState::kDraining});

  // What each expiry does, and that it leads out of the state by a legal
  // transition: a failed attempt tears down (to ERROR with a QP, to
  // DESTROYED without); the rest go one teardown stage on.
  using S = ConnState;
  CHECK(cm::stage(S::kResolvingAddr, cfg).why == "address/route resolution timed out");
  CHECK(cm::stage(S::kResolvingRoute, cfg).why == "address/route resolution timed out");
  CHECK(cm::stage(S::kConnecting, cfg).why == "connect_timeout: not ESTABLISHED in time");
  CHECK(cm::stage(S::kAccepting, cfg).why == "connect_timeout: not ESTABLISHED in time");
  for (const S s : {S::kResolvingAddr, S::kResolvingRoute, S::kConnecting, S::kAccepting}) {
    INFO(cm::to_string(s));
    CHECK(cm::stage(s, cfg).on_expiry == Expiry::kAttemptFails);
    CHECK((cm::is_legal_transition(s, S::kError) || cm::is_legal_transition(s, S::kDestroyed)));
  }
  CHECK(cm::stage(S::kDisconnecting, cfg).on_expiry == Expiry::kToError);
  CHECK(cm::is_legal_transition(S::kDisconnecting, S::kError));
  CHECK(cm::stage(S::kAwaitLastWqe, cfg).on_expiry == Expiry::kDrainAnyway);
  CHECK(cm::is_legal_transition(S::kAwaitLastWqe, S::kDraining));
  CHECK(cm::stage(S::kDraining, cfg).on_expiry == Expiry::kForceDestroy);
  CHECK(cm::is_legal_transition(S::kDraining, S::kDestroyed));
}

TEST_CASE("each timeout moves exactly the bounds it is", "[cm]") {
  const cm::ManagerConfig base = distinct_timeouts();
  for (const Knob& k : knobs()) {
    INFO(k.name);
    // Each knob's bound as it is set today.
    for (const ConnState s : k.states) {
      INFO(cm::to_string(s));
      CHECK(cm::bound(s, base) == k.times * (base.*k.field));
    }
    cm::ManagerConfig moved = base;
    moved.*k.field = 37ms;  // unlike any value of distinct_timeouts()
    for (const ConnState s : all_states()) {
      INFO(cm::to_string(s));
      if (k.states.count(s) != 0) {
        CHECK(cm::bound(s, moved) == k.times * 37ms);
      } else {
        CHECK(cm::bound(s, moved) == cm::bound(s, base));
      }
      // The action on expiry never depends on a timeout.
      CHECK(cm::stage(s, moved).on_expiry == cm::stage(s, base).on_expiry);
    }
  }
  // The knobs above cover every bounded state once.
  std::multiset<ConnState> covered;
  for (const Knob& k : knobs())
    covered.insert(k.states.begin(), k.states.end());
  for (const ConnState s : all_states()) {
    INFO(cm::to_string(s));
    CHECK(covered.count(s) == (cm::bound(s, base) ? 1u : 0u));
  }
}

}  // namespace cm_conn_state_test
