// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's object graph and lifecycle: one sd-event loop owning every fd,
// timer and signal; one RailRuntime per rail (its VerbsSeam, connection
// manager and netlink monitor) and, with more than one rail, the RailSet
// over them (cm/rails.hpp); the TUN device and its data path; the ctl
// server; sd_notify.
//
// Lifecycle (docs/design.md "Observability", sd_notify(3)):
//   create()  per rail: netlink (underlay must exist) → seam →
//             manager.start() (the listener is bound); the RailSet → TUN
//             created, moved, configured → ctl server (the socket is bound)
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
#include "cm/one_rail_port.hpp"
#include "cm/rails.hpp"
#include "config/config.hpp"
#include "ctl_server.hpp"
#include "event_loop.hpp"
#include "fd_store.hpp"
#include "fib.hpp"
#include "loop_timer.hpp"
#include "rail_runtime.hpp"
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
  // A graceful stop gives up after this at most, whatever the teardown
  // timeouts add up to: within the units' TimeoutStopSec=30s, so systemd
  // never has to SIGKILL a stop that was still within its bound.
  static constexpr Duration kStopCap = std::chrono::seconds(25);
  // A graceful stop that reaches its bound while its teardowns still move:
  // each rdma_destroy_qp(3) blocks the loop (0.1-0.4 s each under the lab's
  // TCG), so a daemon with many QPs outlasts the per-QP teardown timeouts
  // the bound is made of (32 daemons with 31 QPs each: not one QP destroyed
  // at the 5 s bound, every one in a teardown stage). `started`: when the
  // stop began; `work_before`: stop_work_left() at the previous deadline
  // (at the start for the first); `work_left`: now. While it went down and
  // kStopCap is not reached, the next deadline (now + kStopSlack, at most
  // started + kStopCap); nullopt: give up (nothing moved, or the cap).
  static std::optional<TimePoint> extend_stop(TimePoint started, TimePoint now,
                                              std::size_t work_before, std::size_t work_left);
  // STATUS= is recomputed at most this often, only after a connection event
  // (an idle daemon is not woken for it), and sent when it changed.
  static constexpr Duration kStatusInterval = std::chrono::seconds(1);
  // glibc's free heap pages go back to the kernel (malloc_trim(3)) at most
  // this often, and always within it after the last connection event or
  // ctl request: a fault's teardowns, failovers and reconnects free what
  // their bursts allocated, and glibc keeps freed pages resident, so
  // without a trim RSS only ever steps up after faults while the heap in
  // use holds still (the lab's soak: docs/lab.md "The soak benchmark"). A
  // trim the rate limit holds back is deferred, never dropped; an idle
  // daemon is never woken for one. A trim walks a heap of a few hundred
  // KiB (the buffers are mmap'ed chunks of their own) and madvises its free
  // pages: tens of microseconds. 5 s, not 30: a ctl flood (200 requests
  // from 8 clients) leaves 100-148 KiB of freed pages in [heap] each time,
  // and a 30 s limit kept them resident for half a minute after it (the
  // lab's soak, 2026-12-02).
  static constexpr Duration kHeapTrimInterval = std::chrono::seconds(5);
  // A trim waits this long after the activity that arms it, so that a
  // burst (a fault's teardowns and reconnects) ends first.
  static constexpr Duration kHeapTrimSettle = std::chrono::seconds(2);
  // When the trim that activity at `now` arms runs, the last trim having
  // run at `last_trim`: kHeapTrimSettle after `now`, and no sooner than
  // kHeapTrimInterval after `last_trim`.
  static TimePoint next_heap_trim(TimePoint last_trim, TimePoint now);

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
  Result<void> start_rails();
  // The packet port (cm/packet_port.hpp) over rails_: OneRailPort for one,
  // the RailSet for more. The daemon's one fork between them.
  Result<void> make_port();
  // Rail k's mapping between overlay and underlay (the config's).
  cm::RailMap rail_map(std::size_t k) const;
  Result<void> setup_tun();
  std::optional<TunDevice> adopt_tun(const std::vector<IpPrefix>& addresses,
                                     std::uint32_t gso_segs);
  Result<void> start_tun(TunDevice tun, const std::vector<IpPrefix>& addresses);
  void setup_peer_memory();
  void record_peers(const cm::Snapshot& snap);
  std::string status_text(const cm::Snapshot& snap) const;
  Result<void> start_ctl_server();
  // The RDMA netlink monitor where the kernel has it (6.12+), else nothing
  // changes: the readopt poll alone finds a returning device. Never fatal.
  void start_rdma_monitor();
  void on_rdma_event(const MonitorEvent& ev);
  void on_rdma_overflow();
  std::string rdma_monitor_state() const;
  void on_status_tick();
  void after_iteration();
  void on_stop_deadline();
  // The view every rail together gives: the RailSet's merged snapshot, or
  // the one manager's.
  cm::Snapshot snapshot() const;
  std::vector<rdma::Qpn> live_qpns() const;
  std::size_t live_cm_ids() const;
  cm::Manager& manager(std::size_t rail) { return rails_.at(rail)->manager(); }

  // Member order is destruction order reversed: the loop outlives every
  // source; the rails outlive the packet port that hooks their managers,
  // which outlives the TUN path (its upper sink); the RailSet's timer
  // outlives the port; the ctl server, which serves from the rails, cfg_
  // and the TUN counters, goes first (the destructor resets them in that
  // order too).
  EventLoop loop_;
  config::Config cfg_;
  DaemonOptions opts_;
  std::uint64_t incarnation_ = 0;
  // When this Daemon was constructed (steady clock, the loop's clock), before
  // any device was touched: the ctl "status" uptime counts from here.
  TimePoint start_time_ = Clock::now();
  std::unique_ptr<FibNextHop> fib_;  // after setup_tun(); read by tun_path_'s next hop
  // What the rails share (devices on whose ports several rails are, and
  // their async-fd watches); declared before the rails, which hold them.
  std::optional<AsyncWatches> watches_;
  std::shared_ptr<rdma::VerbsDevices> devices_ = std::make_shared<rdma::VerbsDevices>();
  std::vector<std::unique_ptr<RailRuntime>> rails_;
  std::unique_ptr<LoopTimer> rails_timer_;  // the RailSet's, with more than one rail
  std::unique_ptr<cm::PacketPort> port_;
  std::unique_ptr<TunPath> tun_path_;
  // After the rails, which its handler calls; destroyed before them.
  std::unique_ptr<RdmaMonitor> rdma_monitor_;
  std::string rdma_monitor_state_ = "not started";
  std::optional<TunDevice> tun_;
  EventSource sig_term_, sig_int_, sig_hup_;
  EventSource status_timer_, stop_deadline_, after_iteration_, heap_trim_timer_;
  std::string last_status_;
  FdStore fd_passed_;           // what systemd passed at start, until taken
  UniqueFd peers_fd_;           // the memfd of record_peers(), in the fd store
  std::string recorded_peers_;  // what it holds
  TimePoint last_heap_trim_{};
  // Arms heap_trim_timer_ (next_heap_trim) unless it is armed already.
  void heap_activity();
  bool stopping_ = false;
  TimePoint stop_started_{};
  // The teardown stages every live QP still has to pass (DESTROYED minus
  // its state, summed): what a graceful stop has left to do.
  std::size_t stop_work_left() const;
  std::size_t stop_work_ = 0;  // stop_work_left() at the start or the last deadline
  std::unique_ptr<CtlServer> ctl_;
};

// A random nonzero 64-bit incarnation (getrandom(2)).
std::uint64_t new_incarnation();

}  // namespace rcnet::daemon
