// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl/protocol.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <type_traits>
#include <variant>

#include "config/keys.hpp"
#include "util/log.hpp"

namespace rcnet::ctl {

namespace {

constexpr std::array<std::string_view, kCommandCount> kCommandNames = {
    "status", "peers",  "connections", "qps",  "srq",       "stats",
    "audit",  "config", "disconnect",  "reap", "log-level", "monitor",
};
constexpr std::array<std::string_view, 6> kErrorNames = {
    "bad_request", "unknown_command", "forbidden", "failed", "version", "busy"};

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

// Only the args `allowed` may appear.
Result<void> only_args(const json& args, Command cmd,
                       std::initializer_list<std::string_view> allowed) {
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return bad("unknown argument \"" + it.key() + "\" for " + std::string(to_string(cmd)));
    }
  }
  return {};
}

Result<void> parse_args(const json& args, Request& r) {
  switch (r.cmd) {
    case Command::kDisconnect: {
      if (auto ok = only_args(args, r.cmd, {"peer"}); !ok)
        return ok.error();
      const auto it = args.find("peer");
      if (it == args.end())
        return bad("disconnect needs \"peer\": a node id or underlay address");
      if (it->is_number_unsigned()) {
        r.peer_node = it->get<NodeId>();
      } else if (it->is_string()) {
        const std::string& s = it->get_ref<const std::string&>();
        if (auto n = parse_decimal_u64(s)) {
          r.peer_node = *n;
        } else if (auto a = IpAddr::parse(s)) {
          r.peer_addr = *a;
        } else {
          return bad("\"peer\": \"" + s + "\" is neither a node id nor an IP address");
        }
      } else {
        return bad("\"peer\" must be a node id or an underlay address string");
      }
      if (r.peer_node && *r.peer_node == 0)
        return bad("\"peer\": node id 0 is never valid");
      return {};
    }
    case Command::kReap: {
      if (auto ok = only_args(args, r.cmd, {"idle_s"}); !ok)
        return ok.error();
      const auto it = args.find("idle_s");
      if (it == args.end())
        return {};
      if (!it->is_number())
        return bad("\"idle_s\" must be a number of seconds");
      const double s = it->get<double>();
      if (!std::isfinite(s) || s < 0 || s > kMaxIdleSeconds) {
        return bad("\"idle_s\" must be between 0 and 1000000");
      }
      r.reap_idle = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
      return {};
    }
    case Command::kLogLevel: {
      if (auto ok = only_args(args, r.cmd, {"level"}); !ok)
        return ok.error();
      const auto it = args.find("level");
      if (it == args.end())
        return bad("log-level needs \"level\"");
      const auto l = it->is_string() ? config::parse_log_level(it->get_ref<const std::string&>())
                                     : std::nullopt;
      if (!l) {
        return bad("\"level\" must be one of trace, debug, info, warn, error, critical, off");
      }
      r.level = *l;
      return {};
    }
    default:
      return only_args(args, r.cmd, {});
  }
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

std::string_view to_string(Command c) {
  const auto i = static_cast<std::size_t>(c);
  return i < kCommandNames.size() ? kCommandNames[i] : "?";
}

std::optional<Command> parse_command(std::string_view name) {
  const auto it = std::find(kCommandNames.begin(), kCommandNames.end(), name);
  if (it == kCommandNames.end())
    return std::nullopt;
  return static_cast<Command>(it - kCommandNames.begin());
}

bool is_mutating(Command c) {
  return c == Command::kDisconnect || c == Command::kReap || c == Command::kLogLevel;
}

std::string_view to_string(ErrorCode c) {
  const auto i = static_cast<std::size_t>(c);
  return i < kErrorNames.size() ? kErrorNames[i] : "failed";
}

std::optional<ErrorCode> parse_error_code(std::string_view name) {
  const auto it = std::find(kErrorNames.begin(), kErrorNames.end(), name);
  if (it == kErrorNames.end())
    return std::nullopt;
  return static_cast<ErrorCode>(it - kErrorNames.begin());
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
  switch (r.cmd) {
    case Command::kDisconnect:
      if (r.peer_node) {
        args["peer"] = *r.peer_node;
      } else if (r.peer_addr) {
        args["peer"] = r.peer_addr->to_string();
      }
      break;
    case Command::kReap:
      if (r.reap_idle)
        args["idle_s"] = std::chrono::duration<double>(*r.reap_idle).count();
      break;
    case Command::kLogLevel:
      args["level"] = std::string(config::to_string(r.level));
      break;
    default:
      break;
  }
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

namespace {

// The teardown's journal MESSAGE_ID as a word a monitor can show and match.
std::string_view cause_name(std::string_view message_id) {
  if (message_id.empty())
    return "";
  if (message_id == log::kMsgPeerDisconnected)
    return "peer_disconnected";
  if (message_id == log::kMsgReapedIdle)
    return "reaped_idle";
  if (message_id == log::kMsgReapedDead)
    return "reaped_dead";
  if (message_id == log::kMsgRestartDetected)
    return "restart_detected";
  if (message_id == log::kMsgCollisionMerged)
    return "collision_merged";
  if (message_id == log::kMsgLastWqeTimeout)
    return "last_wqe_timeout";
  if (message_id == log::kMsgForcedDestroy)
    return "forced_destroy";
  if (message_id == log::kMsgPeerConnected)
    return "peer_connected";
  return "other";
}

}  // namespace

json event_json(const cm::Event& e, std::int64_t wall_ms) {
  json j = {
      {"kind", std::string(cm::to_string(e.kind))},
      {"time_ms", wall_ms},
      {"conn", e.conn},
      {"peer_node", e.peer},
      {"peer_addr", e.peer_addr.to_string()},
      {"qpn", e.qpn},
      {"remote_qpn", e.remote_qpn},
      {"to", std::string(cm::to_string(e.to))},
      {"reason", std::string(e.reason)},
  };
  switch (e.kind) {
    case cm::EventKind::kState:
      j["from"] = std::string(cm::to_string(e.from));
      break;
    case cm::EventKind::kTeardown:
      j["cause"] = std::string(cause_name(e.message_id));
      break;
    case cm::EventKind::kReject:
      j.erase("to");  // no connection, no state
      j["detail"] = std::string(e.detail);
      break;
    case cm::EventKind::kEvict:
      break;
  }
  return j;
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

Access access_for(uid_t uid, std::span<const gid_t> groups, gid_t rcnet_gid) {
  if (uid == 0)
    return Access::kAdmin;
  if (std::find(groups.begin(), groups.end(), rcnet_gid) != groups.end())
    return Access::kRead;
  return Access::kDenied;
}

std::optional<std::string> authorize(Command c, Access access) {
  switch (access) {
    case Access::kAdmin:
      return std::nullopt;
    case Access::kRead:
      if (!is_mutating(c))
        return std::nullopt;
      return "\"" + std::string(to_string(c)) + "\" changes the daemon and needs root";
    case Access::kDenied:
      break;
  }
  return "permission denied: only root and members of the ctl group may use rcnetd's ctl socket";
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// --- Encoders ------------------------------------------------------------------------

json status_json(const cm::Snapshot& s) {
  json states = json::object();
  for (int i = 0; i < cm::kQpStateCount; ++i) {
    states[std::string(cm::to_string(static_cast<cm::QpState>(i)))] = 0;
  }
  std::size_t in_service = 0;
  std::size_t established = 0;
  std::size_t teardown = 0;
  for (const cm::QpSnapshot& q : s.qps) {
    auto& n = states[std::string(cm::to_string(q.state))];
    n = n.get<std::uint64_t>() + 1;
    if (q.in_service)
      ++in_service;
    if (q.state == cm::QpState::kEstablished)
      ++established;
    if (cm::is_teardown(q.state))
      ++teardown;
  }
  return {
      {"node", s.node},
      {"incarnation", hex64(s.incarnation)},
      {"local", s.local.to_string()},
      {"device", s.device},
      {"mtu", s.mtu},
      {"offload", s.offload},
      {"peers", s.peers.size()},
      {"qps", s.qps.size()},
      {"connections", in_service},
      {"established", established},
      {"in_teardown", teardown},
      {"states", std::move(states)},
      {"send_slots", {{"total", s.send_slots_total}, {"free", s.send_slots_free}}},
      {"srq", srq_json(s.srq)},
  };
}

json peers_json(const cm::Snapshot& s) {
  json arr = json::array();
  for (const cm::PeerSnapshot& p : s.peers) {
    json state = nullptr;
    for (const cm::QpSnapshot& q : s.qps) {
      if (p.conn_id != 0 && q.id == p.conn_id)
        state = std::string(cm::to_string(q.state));
    }
    arr.push_back({
        {"node", p.node},
        {"underlay", p.underlay.to_string()},
        {"overlay", p.overlay.empty() ? json(nullptr) : json(p.overlay.to_string())},
        {"incarnation", p.incarnation == 0 ? json(nullptr) : json(hex64(p.incarnation))},
        {"queue_depth", p.queue_depth},
        {"conn_id", p.conn_id},
        {"state", std::move(state)},
    });
  }
  return {{"peers", std::move(arr)}};
}

json qp_json(const cm::QpSnapshot& q) {
  return {
      {"id", q.id},
      {"peer_node", q.peer_node},
      {"peer_addr", q.peer_addr.to_string()},
      {"qpn", q.qpn},
      {"remote_qpn", q.remote_qpn},
      {"state", std::string(cm::to_string(q.state))},
      {"active", q.active},
      {"in_service", q.in_service},
      {"offload", q.offload},
      {"time_in_state_ms", to_ms(q.time_in_state)},
      {"age_ms", to_ms(q.age)},
      {"idle_ms", to_ms(q.idle)},
      {"tx_packets", q.tx_packets},
      {"tx_bytes", q.tx_bytes},
      {"rx_packets", q.rx_packets},
      {"rx_bytes", q.rx_bytes},
      {"teardown_reason", q.teardown_reason},
  };
}

json qps_json(const cm::Snapshot& s) {
  json arr = json::array();
  for (const cm::QpSnapshot& q : s.qps)
    arr.push_back(qp_json(q));
  return {{"qps", std::move(arr)}};
}

json connections_json(const cm::Snapshot& s) {
  json arr = json::array();
  for (const cm::QpSnapshot& q : s.qps) {
    if (!q.in_service)
      continue;
    json j = qp_json(q);
    j["overlay"] = nullptr;
    for (const cm::PeerSnapshot& p : s.peers) {
      if (p.node == q.peer_node && !p.overlay.empty())
        j["overlay"] = p.overlay.to_string();
    }
    arr.push_back(std::move(j));
  }
  return {{"connections", std::move(arr)}};
}

json srq_json(const cm::SrqSnapshot& s) {
  return {
      {"enabled", s.enabled},
      {"size", s.size},
      {"posted", s.posted},
      {"limit", s.limit},
      {"limit_events", s.limit_events},
      {"buffer_size", s.buffer_size},
  };
}

json stats_json(const cm::Counters& c) {
  json arr = json::array();
  c.for_each([&](std::string_view name, std::uint64_t value, std::string_view help) {
    arr.push_back({{"name", std::string(name)}, {"value", value}, {"help", std::string(help)}});
  });
  return {{"counters", std::move(arr)}};
}

namespace {

// A config::Value as JSON: the same types, unset as null.
json value_json(const config::Value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, std::vector<config::InlineTable>>) {
          json arr = json::array();
          for (const config::InlineTable& t : x) {
            json o = json::object();
            for (const auto& [k, val] : t)
              o[k] = val;
            arr.push_back(std::move(o));
          }
          return arr;
        } else {
          return x;
        }
      },
      v);
}

}  // namespace

json config_json(const config::Config& c) {
  json out = json::object();
  for (const config::Key& k : config::keys())
    out[std::string(k.dotted)] = value_json(k.get(c));
  return out;
}

json disconnect_json(NodeId node) {
  return {{"disconnected", node}};
}

json reap_json(std::size_t reaped) {
  return {{"reaped", reaped}};
}

json log_level_json(config::LogLevel previous, config::LogLevel now) {
  return {{"previous", std::string(config::to_string(previous))},
          {"level", std::string(config::to_string(now))}};
}

AuditResult audit_compare(std::span<const rdma::Qpn> daemon, std::span<const rdma::Qpn> kernel) {
  std::vector<rdma::Qpn> d(daemon.begin(), daemon.end());
  std::vector<rdma::Qpn> k;
  for (rdma::Qpn q : kernel) {
    if (q > 1)
      k.push_back(q);
  }
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  AuditResult r;
  r.daemon_count = d.size();
  r.kernel_count = k.size();
  std::set_difference(k.begin(), k.end(), d.begin(), d.end(), std::back_inserter(r.kernel_only));
  std::set_difference(d.begin(), d.end(), k.begin(), k.end(), std::back_inserter(r.daemon_only));
  return r;
}

json audit_json(const AuditResult& a) {
  return {
      {"ok", a.ok()},
      {"daemon_qps", a.daemon_count},
      {"kernel_qps", a.kernel_count},
      {"kernel_only", a.kernel_only},
      {"daemon_only", a.daemon_only},
  };
}

}  // namespace rcnet::ctl
