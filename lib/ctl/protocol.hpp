// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ctl protocol between rcnetctl and rcnetd: newline-delimited JSON over a
// Unix stream socket, one request line → one reply line. No I/O here: the
// daemon's ctl server and rcnetctl feed lines in and send lines out.
//
// Request: {"v":1,"cmd":"qps","args":{...}}           ("args" optional)
// Reply:   {"v":1,"ok":true,"data":{...}}
//          {"v":1,"ok":false,"error":{"code":"bad_request","message":"..."}}
//
// Commands and their args:
//   status, peers, connections, qps, srq, stats, audit, config   no args
//   disconnect  {"peer": node id (number or decimal string) or underlay address}
//   reap        {"idle_s": seconds >= 0, optional; default = timeouts.idle}
//   log-level   {"level": "trace"|"debug"|"info"|"warn"|"error"|"critical"|"off"}
//   monitor     no args; after the ok reply the connection stays open and the
//               daemon pushes one line per connection event (event_line),
//               and a last end_line when it begins a graceful stop
//
// JSON conventions: durations are milliseconds in keys ending "_ms" (except
// in the config reply, which speaks rcnetd.toml's syntax); node ids
// are numbers (exact 64-bit integers); incarnations are 16-digit hex strings,
// since they are random 64-bit values and many JSON tools keep only 53 bits.
//
// Nothing here throws: nlohmann exceptions are caught inside.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cm/events.hpp"
#include "cm/snapshot.hpp"
#include "config/config.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::ctl {

using json = nlohmann::json;

inline constexpr int kVersion = 1;
// A request line longer than this (without its '\n') is refused unparsed.
// The daemon's reader should stop buffering at kMaxRequestBytes + 1.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

enum class Command : std::uint8_t {
  kStatus,
  kPeers,
  kConnections,
  kQps,
  kSrq,
  kStats,
  kAudit,
  kConfig,
  kDisconnect,
  kReap,
  kLogLevel,
  kMonitor,
};
inline constexpr int kCommandCount = 12;
std::string_view to_string(Command c);  // the wire name: "status", ..., "log-level"
std::optional<Command> parse_command(std::string_view name);

// Commands that change the daemon: admin only.
bool is_mutating(Command c);

struct Request {
  Command cmd = Command::kStatus;
  // disconnect: exactly one of the two is set.
  std::optional<NodeId> peer_node;
  std::optional<IpAddr> peer_addr;
  // reap: nullopt = the configured idle timeout.
  std::optional<Duration> reap_idle;
  // log-level
  config::LogLevel level = config::LogLevel::kInfo;
};

// Reply error codes ("code" of an error reply).
// kBusy: the daemon refused the connection itself (too many ctl clients,
// overall or for the client's uid); the client may try again later.
enum class ErrorCode : std::uint8_t {
  kBadRequest,
  kUnknownCommand,
  kForbidden,
  kFailed,
  kVersion,
  kBusy,
};
std::string_view to_string(ErrorCode c);  // "bad_request", ..., "busy"
std::optional<ErrorCode> parse_error_code(std::string_view name);

// Parses and validates one request line (a trailing "\n" or "\r\n" is
// ignored). Errors are Error values whose context is the message for the
// reply and whose errno selects the reply code (error_code_of):
//   EMSGSIZE  longer than kMaxRequestBytes        → bad_request
//   EINVAL    not JSON, not an object, bad/missing/extra field or arg
//                                                 → bad_request
//   EPROTONOSUPPORT  "v" is a number other than kVersion → version
//   ENOSYS    unknown "cmd"                       → unknown_command
Result<Request> parse_request(std::string_view line);
ErrorCode error_code_of(const Error& e);

// The request line rcnetctl sends for `r`, '\n'-terminated.
std::string encode_request(const Request& r);

// Reply lines, '\n'-terminated. Strings that are not valid UTF-8 are replaced,
// never thrown about.
std::string ok_reply(const json& data);
std::string error_reply(ErrorCode code, std::string_view message);
std::string error_reply(const Error& e);  // error_code_of(e), e.context

// A reply as rcnetctl sees it.
struct Reply {
  bool ok = false;
  json data;                            // ok replies
  ErrorCode code = ErrorCode::kFailed;  // error replies
  std::string message;                  // error replies
};
// Errors (EINVAL / EPROTONOSUPPORT): not a reply line of this protocol.
Result<Reply> parse_reply(std::string_view line);

// --- Access control ------------------------------------------------------------
// Who may do what, from the peer's credentials (SO_PEERCRED uid; `groups` are
// its primary and supplementary gids, e.g. from SO_PEERGROUPS or
// /proc/PID/status): uid 0 → kAdmin; a member of `rcnet_gid` → kRead;
// anyone else → kDenied.
enum class Access : std::uint8_t { kDenied, kRead, kAdmin };
Access access_for(uid_t uid, std::span<const gid_t> groups, gid_t rcnet_gid);
// nullopt if `access` allows `c`; else the refusal message for a `forbidden` reply.
std::optional<std::string> authorize(Command c, Access access);

// --- Encoders: the "data" of each read command ------------------------------------
// status: node, incarnation, local, device, mtu, peer and QP counts, QPs by
// state name (every state, zeros included), send slots, SRQ summary.
json status_json(const cm::Snapshot& s);
// peers: {"peers":[{node, underlay, overlay, incarnation, queue_depth,
// conn_id, state}]}; state is the in-service QP's state name, or null.
json peers_json(const cm::Snapshot& s);
// One QP: every field of cm::QpSnapshot, state by cm::to_string(QpState).
json qp_json(const cm::QpSnapshot& q);
// qps: {"qps":[qp_json...]}, every QP in service and in teardown.
json qps_json(const cm::Snapshot& s);
// connections: {"connections":[qp_json + "overlay"]}, in-service QPs only.
json connections_json(const cm::Snapshot& s);
// srq: enabled, size, posted, limit, limit_events.
json srq_json(const cm::SrqSnapshot& s);
// stats: {"counters":[{name, value, help}]} in cm::Counters declaration order.
json stats_json(const cm::Counters& c);
// config: the running configuration, one member per row of config::keys(),
// named by the TOML dotted key ("timeouts.idle") and valued as rcnetd.toml
// writes it (config::Value): durations are duration strings ("10s", "1500ms",
// config::format_duration), not milliseconds, so that a value read here can
// be pasted into the file and a key looked up in rcnetd.toml(5) as shown;
// an unset optional key (peers.underlay_prefix) is null; peers.static is a
// list of {"overlay", "underlay"}.
json config_json(const config::Config& c);
// Results of the mutating commands.
json disconnect_json(NodeId node);
json reap_json(std::size_t reaped);
json log_level_json(config::LogLevel previous, config::LogLevel now);

// --- Monitor: the lines pushed after the ok reply to "monitor" ------------------------
// {"v":1,"event":{"kind":"state"|"teardown"|"reject"|"evict", "time_ms": wall
//   clock (Unix epoch ms), "conn", "peer_node", "peer_addr" (as in qp_json),
//   "qpn", "remote_qpn", "from" (state events only), "to" (the state after the
//   event), "reason", "detail" (reject only), "cause" (teardown: a short name
//   of its journal MESSAGE_ID, e.g. "reaped_idle", "reaped_dead", or "")}}
// {"v":1,"end":"rcnetd stopping"}   the last line before the daemon closes it
json event_json(const cm::Event& e, std::int64_t wall_ms);
std::string event_line(const cm::Event& e, std::int64_t wall_ms);  // '\n'-terminated
std::string end_line(std::string_view why);                        // '\n'-terminated
// One pushed line as rcnetctl sees it: an event, or the end.
struct Push {
  bool end = false;
  std::string end_message;  // end
  json event;               // otherwise
};
// Errors (EINVAL / EPROTONOSUPPORT): neither an event nor an end line.
Result<Push> parse_push(std::string_view line);

// --- Audit ---------------------------------------------------------------------------
// The daemon's QPNs against the kernel's (RDMA netlink, what `rdma resource
// show qp` prints, already filtered to rcnetd's pid by the caller). QPN 0 and
// 1 (SMI/GSI special QPs) are ignored on the kernel side.
struct AuditResult {
  std::vector<rdma::Qpn> kernel_only;  // leaked or unknown to the daemon (sorted)
  std::vector<rdma::Qpn> daemon_only;  // daemon thinks alive, kernel has none (sorted)
  std::size_t daemon_count = 0;
  std::size_t kernel_count = 0;
  bool ok() const { return kernel_only.empty() && daemon_only.empty(); }
};
AuditResult audit_compare(std::span<const rdma::Qpn> daemon, std::span<const rdma::Qpn> kernel);
// {"ok", "daemon_qps", "kernel_qps", "kernel_only":[...], "daemon_only":[...]}
json audit_json(const AuditResult& a);

// "0123456789abcdef"
std::string hex64(std::uint64_t v);

}  // namespace rcnet::ctl
