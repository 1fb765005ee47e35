// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The daemon's half of the ctl commands: each row of kCommands
// (commands.hpp) names a handler that answers a parsed, authorized request
// over Backend, the daemon as the ctl commands see it. rcnetd implements
// Backend over its parts (daemon/ctl_handler.cpp, make_daemon_backend), the
// unit tests with fakes; nothing here knows sockets, sd-event or the daemon's
// types. Pure apart from the backend's calls.
//
// Thread: the loop's, always.
#include <cerrno>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/snapshot.hpp"
#include "config/config.hpp"
#include "ctl/protocol.hpp"
#include "util/result.hpp"

namespace rcnet::ctl {

// What the handlers need from the daemon. Loop thread only.
class Backend {
 public:
  virtual ~Backend() = default;
  // The daemon began a graceful stop; "status" says so from now on.
  virtual void stopping() {}
  virtual cm::Snapshot snapshot() const = 0;
  // Daemon facts for "status" beside the manager's snapshot: version, pid,
  // uptime_ms, tun {name, address, netns}, stopping, log_level, status text.
  virtual json daemon_status() const = 0;
  // Daemon-side counters for "stats", as {name, value, help} objects.
  virtual json daemon_counters() const = 0;
  virtual const config::Config& config() const = 0;
  // The "audit" data (audit_json plus details), or the error reading the
  // kernel's QP table.
  virtual Result<json> audit() = 0;
  // false when there is no such peer.
  virtual bool disconnect(NodeId node, std::string_view why) = 0;
  virtual std::size_t reap(Duration idle) = 0;
  virtual config::LogLevel log_level() const = 0;
  virtual void set_log_level(config::LogLevel level) = 0;
  // Re-reads the config file as SIGHUP does (daemon/daemon.hpp, reload).
  // The dotted keys whose running value changed, or the error: a parse
  // error, or the keys that need a restart (nothing applied either way).
  virtual Result<std::vector<std::string>> reload() {
    return Error::from_errno(ENOTSUP, "reload is not available");
  }
};

// What a handler answers with.
struct Handled {
  std::string reply;     // one '\n'-terminated reply line
  bool refused = false;  // forbidden, unparsable or unknown command
  bool monitor = false;  // an accepted "monitor": the client becomes a subscriber
};

// What a handler works with: the daemon, and the ctl server's own counters
// as counters_json rows, which "stats" appends after the daemon's (empty:
// none, as when a test calls without a server).
struct Context {
  Backend& backend;
  std::function<json()> server_counters = {};
};

}  // namespace rcnet::ctl
