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
// The commands and their args: kCommands (commands.hpp). After the ok reply
// to "monitor" the connection stays open and the daemon pushes one line per
// connection event (event_line), and a last end_line when it begins a
// graceful stop. The data of each reply: views.hpp.
//
// JSON conventions: durations are milliseconds in keys ending "_ms" (except
// in the config reply, which speaks rcnetd.toml's syntax); node ids
// are numbers (exact 64-bit integers, written in decimal as the tables,
// the logs and the journal's PEER_NODE spell them); incarnations are
// 16-digit hex strings,
// since they are random 64-bit values and many JSON tools keep only 53 bits.
//
// Nothing here throws: nlohmann exceptions are caught inside.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "cm/events.hpp"
#include "config/log_level.hpp"
#include "ctl/commands.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::ctl {

using json = nlohmann::json;

inline constexpr int kVersion = 1;
// A request line longer than this (without its '\n') is refused unparsed.
// The daemon's reader should stop buffering at kMaxRequestBytes + 1.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

// A parsed request: the command and the values of its args, one field (or
// pair) per ArgKind (commands.hpp).
struct Request {
  Command cmd = Command::kStatus;
  // ArgKind::kPeer (disconnect): exactly one of the two is set.
  std::optional<NodeId> peer_node;
  std::optional<IpAddr> peer_addr;
  // ArgKind::kSeconds (reap): nullopt = the configured idle timeout.
  std::optional<Duration> reap_idle;
  // ArgKind::kLogLevel (log-level)
  config::LogLevel level = config::LogLevel::kInfo;
  // ArgKind::kAddress (route)
  std::optional<IpAddr> address;
};

// Reply error codes ("code" of an error reply), named by a table in
// protocol.cpp. kBusy: the daemon refused the connection itself (too many
// ctl clients, overall or for the client's uid); the client may try again
// later.
enum class ErrorCode : std::uint8_t {
  kBadRequest,
  kUnknownCommand,
  kForbidden,
  kFailed,
  kVersion,
  kBusy,
};
std::string_view to_string(ErrorCode c);  // "bad_request", ..., "busy"; else "failed"
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

// --- Monitor: the lines pushed after the ok reply to "monitor" ------------------------
// {"v":1,"event":event_json(e, wall_ms)}   (views.hpp)
// {"v":1,"end":"rcnetd stopping"}   the last line before the daemon closes it
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

}  // namespace rcnet::ctl
