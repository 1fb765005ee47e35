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
#include <functional>
#include <ostream>
#include <span>
#include <string>

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

// Runs rcnetctl with `args` (without the program name). Tables or JSON go
// to `out`, errors and hints to `err`. Returns the exit code.
int run(std::span<const std::string> args, const Transport& transport, std::ostream& out,
        std::ostream& err);

}  // namespace rcnet::rcnetctl
