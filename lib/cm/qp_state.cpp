// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/qp_state.hpp"

namespace rcnet::cm {

std::string_view to_string(QpState s) {
  switch (s) {
    case QpState::kResolvingAddr:
      return "RESOLVING_ADDR";
    case QpState::kResolvingRoute:
      return "RESOLVING_ROUTE";
    case QpState::kConnecting:
      return "CONNECTING";
    case QpState::kAccepting:
      return "ACCEPTING";
    case QpState::kEstablished:
      return "ESTABLISHED";
    case QpState::kDisconnecting:
      return "DISCONNECTING";
    case QpState::kError:
      return "ERROR";
    case QpState::kAwaitLastWqe:
      return "AWAIT_LAST_WQE";
    case QpState::kDraining:
      return "DRAINING";
    case QpState::kDestroyed:
      return "DESTROYED";
  }
  return "?";
}

}  // namespace rcnet::cm
