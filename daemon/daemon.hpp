// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's object graph and lifecycle: one sd-event loop owning every fd,
// timer and signal; the VerbsSeam and the connection manager; the TUN device
// and its data path; underlay monitoring over netlink; the ctl server;
// sd_notify.
//
// Lifecycle (docs/design.md "Observability", sd_notify(3)):
//   create()  netlink (underlay must exist) → seam → manager.start() (the
//             listener is bound) → TUN created, moved, configured → ctl
//             server (the socket is bound)
//   run()     READY=1, then the loop; STATUS= with live counts; WATCHDOG=1
//             from the loop (sd_event_set_watchdog(3))
//   SIGTERM/SIGINT → STOPPING=1, manager.shutdown(); the loop runs until
//             manager.stopped(), bounded by disconnect + last_wqe + drain
//             timeouts + 2 s; exit 0 when every QP is gone, 1 on the bound.
//   SIGHUP    reload the config file; keys that need a restart are named in
//             one log line and nothing changes; else manager.reconfigure().
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/manager.hpp"
#include "config/config.hpp"
#include "ctl_server.hpp"
#include "event_loop.hpp"
#include "loop_timer.hpp"
#include "netlink.hpp"
#include "rdma/seam_pump.hpp"
#include "rdma/verbs_seam.hpp"
#include "tun.hpp"
#include "tun_path.hpp"

namespace rcnet::daemon {

struct DaemonOptions {
  std::string config_path;  // re-read on SIGHUP
  // Command-line overrides; they keep winning over the file across reloads.
  std::optional<config::LogLevel> log_level;
  std::optional<config::LogTarget> log_target;
  // --ctl-socket: replaces ctl.socket from the file, also on every reload, so
  // that one config file can serve rcnetd@NAME instances with their own
  // socket and SIGHUP does not see a ctl.socket change.
  std::optional<std::string> ctl_socket;
};

class Daemon {
 public:
  // Extra time beyond the teardown timeouts before a graceful stop gives up.
  static constexpr Duration kStopSlack = std::chrono::seconds(2);
  // STATUS= is recomputed at most this often, only after a connection event
  // (an idle daemon is not woken for it), and sent when it changed.
  static constexpr Duration kStatusInterval = std::chrono::seconds(1);
  // While the RDMA device is lost: how often opening it again is tried
  // (cm::Manager::readopt).
  static constexpr Duration kReadoptInterval = std::chrono::seconds(1);

  // Builds everything up to (not including) READY=1. The signals SIGTERM,
  // SIGINT and SIGHUP must already be blocked (block_signals()). Errors, each
  // one line for the operator: no interface holds node.address
  // (EADDRNOTAVAIL), no RDMA device or rdma_cm (ENODEV, ENOENT), the
  // listener cannot bind, the TUN device or its namespace cannot be set up.
  static Result<std::unique_ptr<Daemon>> create(config::Config cfg, DaemonOptions opts);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Sends READY=1 and runs the loop. Returns the process exit code.
  int run();

  // The same graceful stop as SIGTERM. Loop thread only.
  void request_stop(std::string_view why);
  // Re-reads the config file as SIGHUP does; the error (a config error, or
  // the keys needing a restart) when nothing was applied. Loop thread only.
  Result<void> reload();
  // STATUS= text right now: "N connections established, M QPs in teardown"
  // ("stopping: " in front once a graceful stop began).
  std::string status_text() const;

 private:
  Daemon(EventLoop loop, config::Config cfg, DaemonOptions opts);
  Result<void> start();
  Result<void> setup_tun();
  Result<void> start_ctl_server();
  void on_completions_ready();
  // io sources on the seam's async and completion fds (valid after open).
  Result<void> watch_device();
  // VerbsSeam's close hook: drops those sources, arms the readopt timer.
  void on_device_closing();
  void on_readopt_tick();
  void on_status_tick();
  void after_iteration();
  void on_stop_deadline();

  // Member order is destruction order reversed: the loop outlives every
  // source; the seam outlives the manager and the pump; the manager's timer
  // and packet sink outlive it; the ctl server, which serves from the
  // manager, the seam, cfg_ and the TUN counters, goes first.
  EventLoop loop_;
  config::Config cfg_;
  DaemonOptions opts_;
  std::uint64_t incarnation_ = 0;
  // When this Daemon was constructed (steady clock, the loop's clock), before
  // any device was touched: the ctl "status" uptime counts from here.
  TimePoint start_time_ = Clock::now();
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<TunPath> tun_path_;
  std::unique_ptr<rdma::VerbsSeam> seam_;
  std::optional<rdma::SeamPump> pump_;  // over *seam_, into *manager_
  std::unique_ptr<cm::Manager> manager_;
  std::optional<TunDevice> tun_;
  std::unique_ptr<NetlinkMonitor> netlink_;
  EventSource sig_term_, sig_int_, sig_hup_;
  EventSource cm_src_, async_src_, cq_src_, cq_more_;
  EventSource status_timer_, stop_deadline_, after_iteration_, readopt_timer_;
  std::string last_status_;
  bool stopping_ = false;
  TimePoint stop_started_{};
  std::unique_ptr<CtlServer> ctl_;
};

// A random nonzero 64-bit incarnation (getrandom(2)).
std::uint64_t new_incarnation();

}  // namespace rcnet::daemon
