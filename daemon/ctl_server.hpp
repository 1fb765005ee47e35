// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's ctl server: the daemon side of rcnetctl (rcnetctl(8)). A Unix
// stream socket (config ctl.socket), newline-delimited JSON requests and
// replies in the protocol of lib/ctl/protocol.hpp, served from the daemon's
// one sd-event loop: the listening socket and every client are non-blocking
// io sources, and nothing here ever blocks the loop.
//
// Access (ctl::access_for): the client's SO_PEERCRED uid and its groups
// (SO_PEERGROUPS, else /proc/PID/status "Groups:"; peer_cred.hpp) decide,
// once at accept: root may do everything, members of ctl.group the read-only
// commands, anyone else gets a `forbidden` reply to every request. Each
// complete request line goes through handle_request (ctl_handler.hpp).
//
// Bounds, per client: a request line longer than ctl::kMaxRequestBytes gets a
// bad_request reply and the connection is closed; a client that sends
// nothing at all within CtlServerOptions::first_request_timeout (1 s) is
// closed, one that sent a byte but no complete request within
// request_timeout (5 s, from its connect, then from its last reply) is
// closed; replies waiting to be written are bounded by max_output_bytes (the
// client is dropped beyond it).
//
// Slots, so that no ctl.group member can lock root out (issue 11): at most
// max_clients (64) at once, of which root_reserved_clients (8) only uid 0 may
// take, and at most max_clients_per_uid (16) per non-root uid; root has no
// per-uid cap. Idle connections never lock anyone out (issue 22): when the
// slots are full (or only root's are left), a new client closes the
// connection idle the longest instead of being refused (root: anyone's; any
// other uid: a non-root one), counted as ctl_clients_evicted. Idle: no
// request begun and no reply waiting to be written; a monitor is never idle.
// A connection still refused (the per-uid cap, or no idle one to take) gets
// one error reply line with code "busy" and is closed; each reason has its
// own counter.
//
// Monitor ("monitor" command, rcnetctl monitor): after its ok reply a client
// becomes a subscriber. publish() appends one event line per connection
// event to every subscriber's output, written as the socket takes it; a
// subscriber has no request timeout, its further input is read and ignored,
// and it still holds its slot. Its pending output is bounded by
// monitor_buffer_bytes (256 KiB): a subscriber that does not keep up is
// closed and counted (ctl_monitor_dropped), never waited for. stopping()
// sends every subscriber the end line and closes it once that is written.
//
// Owned by the Daemon (daemon/daemon.hpp), which tells it about reloads and
// the start of a graceful stop and destroys it before the parts it serves
// from (CtlDaemonParts) and the loop.
//
// Thread: the loop's, always.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "ctl/access.hpp"
#include "ctl/server_counters.hpp"
#include "ctl_handler.hpp"
#include "event_loop.hpp"
#include "peer_cred.hpp"
#include "unique_fd.hpp"

namespace rcnet::daemon {

// The ctl server's own counters, reported by "stats" after the daemon's;
// their rows (name, Prometheus series, help) are ctl/server_counters.hpp's.
struct CtlCounters {
#define RCNET_X(name, series, help) std::uint64_t name = 0;
  RCNET_CTL_COUNTERS(RCNET_X)
#undef RCNET_X
  template <class F>
  void for_each(F&& f) const {
#define RCNET_X(name, series, help) f(std::string_view(#name), name, std::string_view(help));
    RCNET_CTL_COUNTERS(RCNET_X)
#undef RCNET_X
  }
};

struct CtlServerOptions {
  std::string socket_path;  // absolute; its directory is created 0755 if missing
  std::string group;        // socket group and read-only access; may not exist
  // From connect to the first complete request, and from each reply to the
  // next request.
  Duration request_timeout = std::chrono::seconds(5);
  // A client that has sent no byte at all by then is closed: an idle
  // connection holds a slot for 1 s, not 5. Capped by request_timeout.
  Duration first_request_timeout = std::chrono::seconds(1);
  std::size_t max_clients = 64;
  // Of max_clients, this many only root may take (clamped to
  // max_clients - 1, so that other users always have one slot).
  std::size_t root_reserved_clients = 8;
  // Connections one non-root uid may hold at once.
  std::size_t max_clients_per_uid = 16;
  std::size_t max_output_bytes = 16 * 1024 * 1024;
  // Events waiting to be written to one monitor subscriber; beyond, it is dropped.
  std::size_t monitor_buffer_bytes = 256 * 1024;
  // Called after each request is answered (rcnetd: a reply's JSON was
  // built and freed, so its heap may have a trim due). May be empty.
  std::function<void()> served = {};
  // Test seam: a client's credentials; empty = peer_credentials(fd).
  std::function<Result<PeerCred>(int fd)> credentials = {};
};

class CtlServer final {
 public:
  // Binds and listens. A socket file left by a dead daemon is replaced; one
  // that still accepts connections means another rcnetd owns it: EADDRINUSE.
  // The socket is chmod 0660 and its group set to `group` when that exists;
  // the owner stays rcnetd's user (root, or "rcnet" under the shipped unit).
  // EPERM from that chown (neither CAP_CHOWN nor a member of the group) is
  // logged, not fatal. Errors: the
  // directory, socket(2), bind(2), listen(2), the loop's sources.
  static Result<std::unique_ptr<CtlServer>> create(EventLoop& loop,
                                                   std::unique_ptr<CtlBackend> backend,
                                                   CtlServerOptions opts);
  ~CtlServer();  // closes every client and unlinks the socket file
  CtlServer(const CtlServer&) = delete;
  CtlServer& operator=(const CtlServer&) = delete;

  // SIGHUP applied `next` (called only when the reload was accepted):
  // re-resolves ctl.group (membership may have changed); socket and group
  // names themselves need a restart (config::restart_required).
  void reloaded(const config::Config& next);
  // Graceful stop began. Clients keep being served until the loop ends, so
  // that an operator can watch the teardown; the backend is told.
  void stopping();
  // One connection event for every monitor subscriber (cm::EventObserver
  // contract: never blocks, never throws, does not call the manager). The
  // wall clock is read here: the manager's clock is steady.
  void publish(const cm::Event& e) noexcept;

  std::size_t client_count() const;
  std::size_t monitor_count() const;
  const CtlCounters& counters() const { return counters_; }
  CtlBackend& backend() { return *backend_; }

 private:
  struct Client;
  CtlServer(EventLoop& loop, std::unique_ptr<CtlBackend> backend, CtlServerOptions opts);
  Result<void> listen();
  void on_accept();
  enum class Refusal : std::uint8_t { kNone, kFull, kReserved, kPerUid };
  // Why a client of `uid` may not have a slot now.
  Refusal refusal(uid_t uid) const;
  // Counts `why` and says it for the busy reply.
  std::string refusal_message(Refusal why, uid_t uid);
  // Closes the connection idle the longest that a client of `uid` may take
  // the slot of (root: anyone's; others: a non-root one). false if none.
  bool evict_idle_for(uid_t uid);
  // One "busy" error reply line, then close.
  void refuse(UniqueFd fd, std::string_view message);
  void on_client_io(std::uint64_t id, std::uint32_t revents);
  void on_client_timeout(std::uint64_t id);
  void process_input(Client& c);
  void flush(Client& c);
  void update_events(Client& c);
  // Closing is deferred to a defer source: the client's own io callback may
  // be on the stack (event_loop.hpp).
  void close_client(Client& c);
  void reap_closed();

  EventLoop& loop_;
  std::unique_ptr<CtlBackend> backend_;
  CtlServerOptions opts_;
  std::optional<gid_t> gid_;
  UniqueFd listen_fd_;
  dev_t sock_dev_ = 0;
  ino_t sock_ino_ = 0;
  EventSource listen_src_;
  EventSource reaper_;
  std::map<std::uint64_t, std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<Client>> closed_;
  std::uint64_t next_id_ = 1;
  std::size_t monitors_ = 0;  // subscribers among clients_
  bool stopping_ = false;
  CtlCounters counters_;
};

}  // namespace rcnet::daemon
