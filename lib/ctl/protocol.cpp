// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl/protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "ctl/views.hpp"

namespace rcnet::ctl {

namespace {

struct ErrorCodeName {
  ErrorCode code;
  std::string_view name;
};
constexpr ErrorCodeName kErrorCodes[] = {
    {ErrorCode::kBadRequest, "bad_request"}, {ErrorCode::kUnknownCommand, "unknown_command"},
    {ErrorCode::kForbidden, "forbidden"},    {ErrorCode::kFailed, "failed"},
    {ErrorCode::kVersion, "version"},        {ErrorCode::kBusy, "busy"},
};

// Reaping with an idle threshold above this is surely a typo (11.5 days).
constexpr double kMaxIdleSeconds = 1e6;

Error bad(std::string msg) {
  return Error::from_errno(EINVAL, std::move(msg));
}

std::string dump(const json& j) {
  // Strings from the manager (teardown reasons) or echoed from a request may
  // hold invalid UTF-8; replacing is better than throwing in the loop.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string_view strip_eol(std::string_view line) {
  if (!line.empty() && line.back() == '\n')
    line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return line;
}

std::optional<NodeId> parse_decimal_u64(std::string_view s) {
  if (s.empty() || s.size() > 20)
    return std::nullopt;
  NodeId v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    const auto d = static_cast<NodeId>(c - '0');
    if (v > (UINT64_MAX - d) / 10)
      return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// --- Args: one reader and one writer per ArgKind -------------------------------------------

std::string quoted(std::string_view key) {
  return "\"" + std::string(key) + "\"";
}

// What a missing required arg of `kind` should have been, after its name.
std::string_view missing_hint(ArgKind kind) {
  switch (kind) {
    case ArgKind::kPeer:
      return ": a node id or underlay address";
    case ArgKind::kAddress:
      return ": an IP address";
    case ArgKind::kSeconds:
    case ArgKind::kLogLevel:
      break;
  }
  return "";
}

Result<void> read_arg(const Arg& a, const json& v, Request& r) {
  switch (a.kind) {
    case ArgKind::kPeer: {
      if (v.is_number_unsigned()) {
        r.peer_node = v.get<NodeId>();
      } else if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (auto n = parse_decimal_u64(s)) {
          r.peer_node = *n;
        } else if (auto addr = IpAddr::parse(s)) {
          r.peer_addr = *addr;
        } else {
          return bad(quoted(a.key) + ": \"" + s + "\" is neither a node id nor an IP address");
        }
      } else {
        return bad(quoted(a.key) + " must be a node id or an underlay or overlay address string");
      }
      if (r.peer_node && *r.peer_node == 0)
        return bad(quoted(a.key) + ": node id 0 is never valid");
      return {};
    }
    case ArgKind::kSeconds: {
      if (!v.is_number())
        return bad(quoted(a.key) + " must be a number of seconds");
      const double s = v.get<double>();
      if (!std::isfinite(s) || s < 0 || s > kMaxIdleSeconds)
        return bad(quoted(a.key) + " must be between 0 and 1000000");
      r.reap_idle = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
      return {};
    }
    case ArgKind::kLogLevel: {
      const auto l =
          v.is_string() ? config::parse_log_level(v.get_ref<const std::string&>()) : std::nullopt;
      if (!l)
        return bad(quoted(a.key) + " must be one of " + config::log_level_list());
      r.level = *l;
      return {};
    }
    case ArgKind::kAddress: {
      const auto addr =
          v.is_string() ? IpAddr::parse(v.get_ref<const std::string&>()) : std::nullopt;
      if (!addr)
        return bad(quoted(a.key) + " must be an IPv4 or IPv6 address string");
      r.address = *addr;
      return {};
    }
  }
  return bad("unhandled argument " + quoted(a.key));
}

// Adds `a`'s value from `r` to `args` when `r` has one.
void write_arg(const Arg& a, const Request& r, json& args) {
  const std::string key(a.key);
  switch (a.kind) {
    case ArgKind::kPeer:
      if (r.peer_node) {
        args[key] = *r.peer_node;
      } else if (r.peer_addr) {
        args[key] = r.peer_addr->to_string();
      }
      return;
    case ArgKind::kSeconds:
      if (r.reap_idle)
        args[key] = std::chrono::duration<double>(*r.reap_idle).count();
      return;
    case ArgKind::kLogLevel:
      args[key] = std::string(config::to_string(r.level));
      return;
    case ArgKind::kAddress:
      if (r.address)
        args[key] = r.address->to_string();
      return;
  }
}

// Only the row's args may appear; each required one must.
Result<void> parse_args(const json& args, Request& r) {
  const CommandInfo& row = info(r.cmd);
  for (auto it = args.begin(); it != args.end(); ++it) {
    const bool known = std::any_of(row.args.begin(), row.args.end(),
                                   [&](const Arg& a) { return a.key == it.key(); });
    if (!known)
      return bad("unknown argument \"" + it.key() + "\" for " + std::string(row.name));
  }
  for (const Arg& a : row.args) {
    const auto it = args.find(std::string(a.key));
    if (it == args.end()) {
      if (a.required)
        return bad(std::string(row.name) + " needs " + quoted(a.key) +
                   std::string(missing_hint(a.kind)));
      continue;
    }
    if (auto ok = read_arg(a, *it, r); !ok)
      return ok;
  }
  return {};
}

Result<Request> parse_request_json(std::string_view line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return bad("request is not valid JSON");
  if (!j.is_object())
    return bad("request must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "v" && it.key() != "cmd" && it.key() != "args") {
      return bad("unknown field \"" + it.key() + "\"");
    }
  }
  const auto v = j.find("v");
  if (v == j.end())
    return bad("missing \"v\" (protocol version)");
  if (!v->is_number_integer())
    return bad("\"v\" must be an integer");
  if (v->get<std::int64_t>() != kVersion) {
    return Error::from_errno(EPROTONOSUPPORT, "protocol version " + v->dump() +
                                                  " not supported; this daemon speaks " +
                                                  std::to_string(kVersion));
  }
  const auto cmd = j.find("cmd");
  if (cmd == j.end())
    return bad("missing \"cmd\"");
  if (!cmd->is_string())
    return bad("\"cmd\" must be a string");
  const std::string& name = cmd->get_ref<const std::string&>();
  const auto c = parse_command(name);
  if (!c)
    return Error::from_errno(ENOSYS, "unknown command \"" + name + "\"");

  Request r;
  r.cmd = *c;
  static const json kNoArgs = json::object();
  const auto a = j.find("args");
  if (a != j.end() && !a->is_object())
    return bad("\"args\" must be an object");
  if (auto ok = parse_args(a != j.end() ? *a : kNoArgs, r); !ok)
    return ok.error();
  return r;
}

}  // namespace

std::string_view to_string(ErrorCode c) {
  for (const ErrorCodeName& e : kErrorCodes) {
    if (e.code == c)
      return e.name;
  }
  return "failed";
}

std::optional<ErrorCode> parse_error_code(std::string_view name) {
  for (const ErrorCodeName& e : kErrorCodes) {
    if (e.name == name)
      return e.code;
  }
  return std::nullopt;
}

Result<Request> parse_request(std::string_view line) {
  line = strip_eol(line);
  if (line.size() > kMaxRequestBytes) {
    return Error::from_errno(EMSGSIZE, "request of " + std::to_string(line.size()) +
                                           " bytes exceeds the limit of " +
                                           std::to_string(kMaxRequestBytes));
  }
  try {
    return parse_request_json(line);
  } catch (const std::exception& e) {
    // Not expected (the parser runs without exceptions), but a thrown
    // nlohmann error must not escape into the event loop.
    return bad(std::string("malformed request: ") + e.what());
  }
}

ErrorCode error_code_of(const Error& e) {
  switch (e.code.value()) {
    case EINVAL:
    case EMSGSIZE:
      return ErrorCode::kBadRequest;
    case EPROTONOSUPPORT:
      return ErrorCode::kVersion;
    case ENOSYS:
      return ErrorCode::kUnknownCommand;
    case EACCES:
    case EPERM:
      return ErrorCode::kForbidden;
    default:
      return ErrorCode::kFailed;
  }
}

std::string encode_request(const Request& r) {
  json j = {{"v", kVersion}, {"cmd", std::string(to_string(r.cmd))}};
  json args = json::object();
  for (const Arg& a : info(r.cmd).args)
    write_arg(a, r, args);
  if (!args.empty())
    j["args"] = std::move(args);
  return dump(j);
}

std::string ok_reply(const json& data) {
  json j = {{"v", kVersion}, {"ok", true}, {"data", data}};
  return dump(j);
}

std::string error_reply(ErrorCode code, std::string_view message) {
  json j = {{"v", kVersion},
            {"ok", false},
            {"error", {{"code", std::string(to_string(code))}, {"message", std::string(message)}}}};
  return dump(j);
}

std::string error_reply(const Error& e) {
  return error_reply(error_code_of(e), e.context);
}

Result<Reply> parse_reply(std::string_view line) {
  try {
    const json j = json::parse(strip_eol(line), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return bad("reply is not a JSON object");
    const auto v = j.find("v");
    if (v == j.end() || !v->is_number_integer())
      return bad("reply has no version");
    if (v->get<std::int64_t>() != kVersion) {
      return Error::from_errno(EPROTONOSUPPORT, "daemon speaks protocol version " + v->dump() +
                                                    ", expected " + std::to_string(kVersion));
    }
    const auto ok = j.find("ok");
    if (ok == j.end() || !ok->is_boolean())
      return bad("reply has no \"ok\"");
    Reply r;
    r.ok = ok->get<bool>();
    if (r.ok) {
      const auto d = j.find("data");
      r.data = d != j.end() ? *d : json::object();
      return r;
    }
    const auto e = j.find("error");
    if (e == j.end() || !e->is_object())
      return bad("error reply has no \"error\" object");
    const auto code = e->find("code");
    const auto msg = e->find("message");
    if (code != e->end() && code->is_string()) {
      r.code = parse_error_code(code->get_ref<const std::string&>()).value_or(ErrorCode::kFailed);
    }
    if (msg != e->end() && msg->is_string())
      r.message = msg->get<std::string>();
    return r;
  } catch (const std::exception& ex) {
    return bad(std::string("malformed reply: ") + ex.what());
  }
}

std::string event_line(const cm::Event& e, std::int64_t wall_ms) {
  return dump({{"v", kVersion}, {"event", event_json(e, wall_ms)}});
}

std::string end_line(std::string_view why) {
  return dump({{"v", kVersion}, {"end", std::string(why)}});
}

Result<Push> parse_push(std::string_view line) {
  try {
    const json j = json::parse(strip_eol(line), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return bad("monitor line is not a JSON object");
    const auto v = j.find("v");
    if (v == j.end() || !v->is_number_integer())
      return bad("monitor line has no version");
    if (v->get<std::int64_t>() != kVersion) {
      return Error::from_errno(EPROTONOSUPPORT, "daemon speaks protocol version " + v->dump() +
                                                    ", expected " + std::to_string(kVersion));
    }
    Push p;
    if (const auto end = j.find("end"); end != j.end()) {
      p.end = true;
      p.end_message = end->is_string() ? end->get<std::string>() : std::string("end");
      return p;
    }
    const auto ev = j.find("event");
    if (ev == j.end() || !ev->is_object())
      return bad("monitor line has neither \"event\" nor \"end\"");
    p.event = *ev;
    return p;
  } catch (const std::exception& ex) {
    return bad(std::string("malformed monitor line: ") + ex.what());
  }
}

}  // namespace rcnet::ctl
