// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ctl commands, one row each in kCommands: the wire name (also
// rcnetctl's subcommand), whether it changes the daemon (authorize() lets
// only root run those), its arguments (the only members the request's "args"
// may have, how each is read and written, and rcnetctl's spelling of it) and
// rcnetctl's help line. parse_request and encode_request (protocol.cpp),
// authorize (access.cpp) and rcnetctl's subcommands and help
// (tools/rcnetctl/cli.cpp) all read the table.
//
// What a command does is code, in switches over Command that -Wswitch holds
// to the enum: the daemon's dispatch (daemon/ctl_handler.cpp) and render()
// (render.cpp). rcnetctl(8) and the bash completion are held to the table by
// tests/unit/rcnetctl/docs_test.cpp. So a new command is an enumerator, its
// row, its case in those two switches, and its lines in the two documents.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
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

struct CommandInfo {
  Command cmd;
  std::string_view name;
  Effect effect;
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
    {Command::kStatus, "status", Effect::kReadOnly, kNoArgs,
     "daemon, device, counts of peers and QPs by state"},
    {Command::kRails, "rails", Effect::kReadOnly, kNoArgs,
     "each rail (an underlay address on an RDMA port): state, links, traffic"},
    {Command::kPeers, "peers", Effect::kReadOnly, kNoArgs,
     "known peers and their in-service connection on each rail"},
    {Command::kConnections, "connections", Effect::kReadOnly, kNoArgs,
     "connections in service, with traffic"},
    {Command::kQps, "qps", Effect::kReadOnly, kNoArgs,
     "every QP, in service and in teardown, with its stage"},
    {Command::kSrq, "srq", Effect::kReadOnly, kNoArgs,
     "shared receive queue fill and limit events"},
    {Command::kStats, "stats", Effect::kReadOnly, kNoArgs, "manager, data path and ctl counters"},
    {Command::kAudit, "audit", Effect::kReadOnly, kNoArgs,
     "compare rcnetd's QPs with the kernel's (RDMA netlink)"},
    {Command::kConfig, "config", Effect::kReadOnly, kNoArgs, "the running configuration"},
    {Command::kDisconnect, "disconnect", Effect::kMutating, kDisconnectArgs,
     "tear a peer's connection down (DREQ)"},
    {Command::kReap, "reap", Effect::kMutating, kReapArgs,
     "tear down connections idle for at least --idle"},
    {Command::kLogLevel, "log-level", Effect::kMutating, kLogLevelArgs,
     "change the log level live"},
    {Command::kMonitor, "monitor", Effect::kReadOnly, kNoArgs,
     "follow connection events live (state changes, teardowns, REJs, evictions, rail "
     "changes, failovers) until rcnetd stops or Ctrl-C; -j prints the event JSON lines"},
    {Command::kReload, "reload", Effect::kMutating, kNoArgs,
     "re-read the config file as SIGHUP does and say what was applied, or why nothing was "
     "(exit 1)"},
    {Command::kRoute, "route", Effect::kReadOnly, kRouteArgs,
     "route get ADDR: the peer, rail and underlay address a packet for ADDR would use, or why "
     "none",
     "get"},
};

namespace detail {
constexpr bool commands_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kCommands); ++i) {
    if (static_cast<std::size_t>(kCommands[i].cmd) != i)
      return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::commands_in_enum_order(), "kCommands: one row per Command, in order");

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
