// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetctl's logic without its socket: argument parsing (CLI11), the request,
// output, and the exit code, so that tests can run it against a fake daemon.
// rcnetctl(8) documents the commands; lib/ctl/protocol.hpp the wire format.
//
// Exit codes (rcnetctl(8) "EXIT STATUS"):
//   0  the request succeeded (audit: the daemon's and the kernel's QPs agree)
//   1  an error reply (refused, unknown peer, ...), an audit mismatch, or
//      another failure talking to the daemon
//   2  usage error
//   3  rcnetd is not running: connect(2) failed with ENOENT or ECONNREFUSED
// doctor: 0 no check failed, 1 one did, 2 usage or a config it cannot read.
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "doctor.hpp"
#include "util/result.hpp"

namespace rcnet::rcnetctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNotRunning = 3;

inline constexpr const char* kDefaultSocket = "/run/rcnet/rcnetd.sock";

// Sends one '\n'-terminated request line to the daemon at `socket` and
// returns its one reply line. Errors carry the errno of the failing call
// (connect's ENOENT / ECONNREFUSED mean the daemon is not running).
using Transport =
    std::function<Result<std::string>(const std::string& socket, const std::string& request_line)>;

// The real transport: a blocking Unix stream socket, whole exchange bounded
// by `timeout_ms` (ETIMEDOUT).
Result<std::string> unix_socket_transport(const std::string& socket,
                                          const std::string& request_line, int timeout_ms = 10000);

// For `monitor`: sends one request line, then hands every line the daemon
// sends (its reply, then the pushed events, without '\n') to `on_line`
// until on_line returns false or the daemon closes the connection (both
// success). Errors carry the errno of the failing call as for Transport;
// EINTR means the wait was interrupted by SIGINT or SIGTERM (Ctrl-C).
using LineSink = std::function<bool(std::string_view line)>;
using StreamTransport = std::function<Result<void>(
    const std::string& socket, const std::string& request_line, const LineSink& on_line)>;

// The real stream: a blocking Unix stream socket; the first line (the
// reply) must come within `reply_timeout_ms` (ETIMEDOUT), events may take
// any time. While it runs, SIGINT and SIGTERM interrupt it (EINTR) instead
// of killing the process, so that Ctrl-C ends a monitor with exit status 0.
Result<void> unix_socket_stream(const std::string& socket, const std::string& request_line,
                                const LineSink& on_line, int reply_timeout_ms = 10000);

// rcnetctl's commands that do not talk to rcnetd, one row each after the
// ctl commands (lib/ctl/commands.hpp): the name and rcnetctl's help line.
// rcnetctl(8) and the bash completion are held to both tables
// (tests/unit/rcnetctl/docs_test.cpp).
struct LocalCommand {
  std::string_view name;
  std::string_view help;
};
inline constexpr LocalCommand kLocalCommands[] = {
    {"doctor",
     "check this host against rcnetd's config without starting rcnetd (modules, devices, "
     "ports, addresses, sysctls, locked memory, routes); exit 1 when a check fails"},
};

// Runs rcnetctl with `args` (without the program name). Tables or JSON go
// to `out`, errors and hints to `err`. Returns the exit code. `stream`
// serves `monitor` only; without one, monitor fails. `doctor_host` is the
// host `doctor` checks; nullptr: this one (doctor::system_host()).
int run(std::span<const std::string> args, const Transport& transport, std::ostream& out,
        std::ostream& err, const StreamTransport& stream = {},
        const doctor::Host* doctor_host = nullptr);

}  // namespace rcnet::rcnetctl
