// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// How other parts of rcnetd (the ctl server, daemon/ctl_server.*) plug into
// the Daemon without the Daemon knowing them.
//
// An Extension is created by a factory after the connection manager has
// started and before READY=1, owned by the Daemon, told about reloads and the
// start of a graceful stop, and destroyed before the manager and the loop
// (so it may keep EventSources of Daemon::loop() and a reference to the
// manager). Everything runs on the loop's thread.
#include <memory>

#include "config/config.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

class Daemon;

class Extension {
 public:
  virtual ~Extension() = default;
  // SIGHUP applied `next` (only called when the reload was accepted).
  virtual void reloaded(const config::Config& next) { (void)next; }
  // Graceful stop began (SIGTERM/SIGINT or Daemon::request_stop()); the loop
  // keeps running until every QP is torn down.
  virtual void stopping() {}
};

// Defined in daemon/ctl_server.cpp; daemon/meson.build defines
// RCNETD_HAVE_CTL_SERVER when that file exists, and only then is it called.
// An error aborts startup (exit 1), e.g. when the socket cannot be bound.
Result<std::unique_ptr<Extension>> make_ctl_server(Daemon& daemon);

}  // namespace rcnet::daemon
