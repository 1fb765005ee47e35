// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ctl commands, one row each in kCommands, as dbus-broker's driver
// keeps its method table (name, handler, signature): the wire name (also
// rcnetctl's subcommand), whether it changes the daemon (authorize() lets
// only root run those), the handler that answers it, the renderer that
// prints its reply, its arguments (the only members the request's "args"
// may have, how each is read and written, and rcnetctl's spelling of it)
// and rcnetctl's help line. parse_request and encode_request (protocol.cpp),
// authorize (access.cpp), the daemon's dispatch (daemon/ctl_handler.cpp,
// through the handler), render() (render.cpp, through the renderer) and
// rcnetctl's subcommands and help (tools/rcnetctl/cli.cpp) all read the
// table.
//
// Both halves of a command's code are named here and neither sees a daemon
// type: a handler answers over the ctl::Backend interface (handlers.hpp),
// which rcnetd implements (daemon/ctl_handler.cpp) and the unit tests fake;
// a renderer turns the reply's data into rcnetctl's text (render.hpp).
// rcnetctl(8) and the bash completion are held to the table by
// tests/unit/rcnetctl/docs_test.cpp. So a new command is an enumerator, its
// row, its handler (handlers.cpp) and renderer (render.cpp) declared below,
// and its lines in the two documents.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rcnet::ctl {

// One row in kCommands each, in this order.
enum class Command : std::uint8_t {
  kStatus,
  kRails,
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
  kReload,
  kRoute,
};

// Read-only commands are open to the ctl group; mutating ones need root.
enum class Effect : std::uint8_t { kReadOnly, kMutating };

// How an argument's value is checked and which Request field holds it
// (protocol.hpp). Each kind is read and written in one place per side:
// protocol.cpp for the JSON, tools/rcnetctl/cli.cpp for the command line.
enum class ArgKind : std::uint8_t {
  // Request::peer_node or peer_addr: a node id (JSON number or decimal
  // string, never 0) or an underlay IP address string. rcnetctl also takes
  // hexadecimal node ids ("0x0a630002").
  kPeer,
  // Request::reap_idle: a JSON number of seconds, 0 to 1e6 (fractions allowed).
  kSeconds,
  // Request::level: a log level name (config/log_level.hpp).
  kLogLevel,
  // Request::address: an IP address string (an overlay destination).
  kAddress,
};

struct Arg {
  std::string_view key;  // its member of the request's "args"
  ArgKind kind;
  bool required;
  // rcnetctl's spelling: "PEER" is a positional argument, "--idle" an option.
  // A command whose first arg is positional may put a fixed word before it
  // in CommandInfo::verb ("route get ADDR").
  std::string_view cli;
  // rcnetctl's help for it. A kLogLevel argument's help is the level names.
  std::string_view help;
};

using json = nlohmann::json;
struct Request;  // protocol.hpp
struct Context;  // handlers.hpp
struct Handled;  // handlers.hpp

// Answers a parsed, authorized request: its reply line (handlers.hpp).
using Handler = Handled (*)(const Request& req, Context& ctx);
// rcnetctl's text for the "data" of an ok reply, '\n'-terminated lines
// (render.hpp). Reads JSON from a socket: never trusts it, never throws.
using Renderer = std::string (*)(const json& data);

// The handlers, defined in handlers.cpp, one per row.
Handled handle_status(const Request&, Context&);
Handled handle_rails(const Request&, Context&);
Handled handle_peers(const Request&, Context&);
Handled handle_connections(const Request&, Context&);
Handled handle_qps(const Request&, Context&);
Handled handle_srq(const Request&, Context&);
Handled handle_stats(const Request&, Context&);
Handled handle_audit(const Request&, Context&);
Handled handle_config(const Request&, Context&);
Handled handle_disconnect(const Request&, Context&);
Handled handle_reap(const Request&, Context&);
Handled handle_log_level(const Request&, Context&);
Handled handle_monitor(const Request&, Context&);
Handled handle_reload(const Request&, Context&);
Handled handle_route(const Request&, Context&);

// The renderers, one per row; what each prints: render.hpp (render_config
// is in config_text.cpp, the others in render.cpp).
std::string render_status(const json& data);
std::string render_rails(const json& data);
std::string render_peers(const json& data);
std::string render_connections(const json& data);
std::string render_qps(const json& data);
std::string render_srq(const json& data);
std::string render_stats(const json& data);
std::string render_audit(const json& data);
std::string render_config(const json& data);
std::string render_disconnect(const json& data);
std::string render_reap(const json& data);
std::string render_log_level(const json& data);
std::string render_monitor(const json& data);
std::string render_reload(const json& data);
std::string render_route(const json& data);

struct CommandInfo {
  Command cmd;
  std::string_view name;
  Effect effect;
  Handler handle;   // rcnetd's side
  Renderer render;  // rcnetctl's side
  std::span<const Arg> args;
  // rcnetctl's help line; rcnetctl adds "; root only" to mutating ones.
  std::string_view help;
  // A word rcnetctl wants between the command and its args ("get" in
  // "rcnetctl route get ADDR"), as ip(8) spells it; empty for none.
  std::string_view verb = {};
};

inline constexpr std::span<const Arg> kNoArgs{};
inline constexpr Arg kDisconnectArgs[] = {
    {"peer", ArgKind::kPeer, true, "PEER",
     "node id (decimal, or 0x hexadecimal), or the peer's underlay or overlay address"},
};
inline constexpr Arg kReapArgs[] = {
    {"idle_s", ArgKind::kSeconds, false, "--idle", "seconds (default: timeouts.idle)"},
};
inline constexpr Arg kLogLevelArgs[] = {
    {"level", ArgKind::kLogLevel, true, "LEVEL", ""},
};
inline constexpr Arg kRouteArgs[] = {
    {"address", ArgKind::kAddress, true, "ADDR", "a destination address on the overlay"},
};

inline constexpr CommandInfo kCommands[] = {
    {Command::kStatus, "status", Effect::kReadOnly, handle_status, render_status, kNoArgs,
     "daemon, device, counts of peers and QPs by state"},
    {Command::kRails, "rails", Effect::kReadOnly, handle_rails, render_rails, kNoArgs,
     "each rail (an underlay address on an RDMA port): state, links, traffic"},
    {Command::kPeers, "peers", Effect::kReadOnly, handle_peers, render_peers, kNoArgs,
     "known peers and their in-service connection on each rail"},
    {Command::kConnections, "connections", Effect::kReadOnly, handle_connections,
     render_connections, kNoArgs, "connections in service, with traffic"},
    {Command::kQps, "qps", Effect::kReadOnly, handle_qps, render_qps, kNoArgs,
     "every QP, in service and in teardown, with its stage"},
    {Command::kSrq, "srq", Effect::kReadOnly, handle_srq, render_srq, kNoArgs,
     "shared receive queue fill and limit events"},
    {Command::kStats, "stats", Effect::kReadOnly, handle_stats, render_stats, kNoArgs,
     "manager, data path and ctl counters"},
    {Command::kAudit, "audit", Effect::kReadOnly, handle_audit, render_audit, kNoArgs,
     "compare rcnetd's QPs with the kernel's (RDMA netlink)"},
    {Command::kConfig, "config", Effect::kReadOnly, handle_config, render_config, kNoArgs,
     "the running configuration"},
    {Command::kDisconnect, "disconnect", Effect::kMutating, handle_disconnect, render_disconnect,
     kDisconnectArgs, "tear a peer's connection down (DREQ)"},
    {Command::kReap, "reap", Effect::kMutating, handle_reap, render_reap, kReapArgs,
     "tear down connections idle for at least --idle"},
    {Command::kLogLevel, "log-level", Effect::kMutating, handle_log_level, render_log_level,
     kLogLevelArgs, "change the log level live"},
    {Command::kMonitor, "monitor", Effect::kReadOnly, handle_monitor, render_monitor, kNoArgs,
     "follow connection events live (state changes, teardowns, REJs, evictions, rail "
     "changes, failovers) until rcnetd stops or Ctrl-C; -j prints the event JSON lines"},
    {Command::kReload, "reload", Effect::kMutating, handle_reload, render_reload, kNoArgs,
     "re-read the config file as SIGHUP does and say what was applied, or why nothing was "
     "(exit 1)"},
    {Command::kRoute, "route", Effect::kReadOnly, handle_route, render_route, kRouteArgs,
     "route get ADDR: the peer, rail and underlay address a packet for ADDR would use, or why "
     "none",
     "get"},
};

namespace detail {
constexpr bool commands_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kCommands); ++i) {
    if (static_cast<std::size_t>(kCommands[i].cmd) != i || kCommands[i].handle == nullptr ||
        kCommands[i].render == nullptr)
      return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::commands_in_enum_order(),
              "kCommands: one row per Command, in order, each with its handler and renderer");

// The row of `c`. `c` must be an enumerator.
constexpr const CommandInfo& info(Command c) {
  return kCommands[static_cast<std::size_t>(c)];
}

// The wire name: "status", ..., "log-level"; "?" for a value that is no enumerator.
constexpr std::string_view to_string(Command c) {
  const auto i = static_cast<std::size_t>(c);
  return i < std::size(kCommands) ? kCommands[i].name : "?";
}

// Exact, case-sensitive wire names only.
constexpr std::optional<Command> parse_command(std::string_view name) {
  for (const CommandInfo& row : kCommands) {
    if (row.name == name)
      return row.cmd;
  }
  return std::nullopt;
}

// Commands that change the daemon: admin only (access.hpp).
constexpr bool is_mutating(Command c) {
  const auto i = static_cast<std::size_t>(c);
  return i < std::size(kCommands) && kCommands[i].effect == Effect::kMutating;
}

}  // namespace rcnet::ctl
