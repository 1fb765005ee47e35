// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ctl server's request → reply step, without sockets: a request line and
// the client's access in, one reply line out (lib/ctl/protocol.hpp), served
// from a CtlBackend: the running daemon's (make_daemon_backend) or a unit
// test's fake. Which commands exist, their names, args and who may run them,
// and the handler that answers each: the table in lib/ctl/commands.hpp (the
// handlers are in lib/ctl/handlers.cpp).
//
// Thread: the loop's, always.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cm/manager.hpp"
#include "config/config.hpp"
#include "ctl/access.hpp"
#include "ctl/handlers.hpp"
#include "ctl/protocol.hpp"
#include "rdma/verbs_seam.hpp"
#include "tun_path.hpp"

namespace rcnet::daemon {

// What the handlers need from the daemon (lib/ctl/handlers.hpp): implemented
// over CtlDaemonParts in ctl_handler.cpp (make_daemon_backend), and by fakes
// in the unit tests.
using CtlBackend = ctl::Backend;

// The parts of rcnetd the ctl server serves from, lent by their owner (the
// Daemon), which keeps each alive at the same address until the CtlServer is
// gone. Loop thread only.
struct CtlDaemonParts {
  struct Rail {
    cm::Manager* manager;         // live QPNs, disconnect, reap
    const rdma::VerbsSeam* seam;  // its own record of live QPNs ("audit")
  };
  std::vector<Rail> rails;  // rail 0 first (one on a single-rail node)
  // Every rail's view together (cm::RailSet::snapshot, or the one manager's).
  std::function<cm::Snapshot()> snapshot;
  const config::Config& config;     // the running config: a reload assigns to it
  const TunCounters& tun_counters;  // "stats", after the manager's
  std::string config_path;          // "status"
  // When the daemon was constructed (steady clock): "status" uptime counts
  // from there, so bringing the device, listener and TUN up is included.
  TimePoint start_time;
  // The STATUS= line the daemon would send systemd now (sd_notify(3)).
  std::function<std::string()> status_text;
  // Daemon::reload: what SIGHUP does. Empty: "reload" fails.
  std::function<Result<void>()> reload = {};
  // The RDMA netlink monitor's state for "status" (daemon/rdma_monitor.hpp):
  // "subscribed", "not offered by this kernel", "failed: ...". Empty: absent.
  std::function<std::string()> rdma_monitor = {};
};

// The CtlBackend of the running daemon. Live log level changes go through
// daemon/logging.hpp; "audit" through daemon/rdma_audit.hpp (audit_qps).
std::unique_ptr<CtlBackend> make_daemon_backend(CtlDaemonParts parts);

struct CtlCounters;  // ctl_server.hpp

using HandledRequest = ctl::Handled;

// One request line (without or with its '\n') from a client with `access` →
// its reply. Pure apart from the backend's calls; never throws (an internal
// failure becomes a `failed` reply). `ctl` counters, when given, are appended
// to "stats".
HandledRequest handle_request(std::string_view line, ctl::Access access, CtlBackend& backend,
                              const CtlCounters* ctl = nullptr);

}  // namespace rcnet::daemon
