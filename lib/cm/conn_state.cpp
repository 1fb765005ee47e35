// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/conn_state.hpp"

namespace rcnet::cm {

std::string_view to_string(ConnState s) {
  switch (s) {
    case ConnState::kResolvingAddr:
      return "RESOLVING_ADDR";
    case ConnState::kResolvingRoute:
      return "RESOLVING_ROUTE";
    case ConnState::kConnecting:
      return "CONNECTING";
    case ConnState::kAccepting:
      return "ACCEPTING";
    case ConnState::kEstablished:
      return "ESTABLISHED";
    case ConnState::kDisconnecting:
      return "DISCONNECTING";
    case ConnState::kError:
      return "ERROR";
    case ConnState::kAwaitLastWqe:
      return "AWAIT_LAST_WQE";
    case ConnState::kDraining:
      return "DRAINING";
    case ConnState::kDestroyed:
      return "DESTROYED";
  }
  return "?";
}

}  // namespace rcnet::cm
