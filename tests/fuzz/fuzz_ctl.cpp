// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fuzzer `ctl`: the ctl protocol (lib/ctl) on arbitrary bytes.
//
// The input is one request line as the daemon's ctl server reads it:
//   - parse_request never crashes or throws;
//   - every rejection becomes an error reply that rcnetctl reads back as an
//     error with the same code, one of the codes parse_request documents
//     (bad_request, version, unknown_command), with a message;
//   - every accepted request round-trips through encode_request (what
//     rcnetctl would send for it parses to the same request), and its reply
//     renders: the data the daemon would answer with goes through ok_reply,
//     parse_reply and render() for that command.
// The same bytes are also handed to the renderers as a reply line and as
// bare JSON (rcnetctl trusts nothing it reads from the socket): no crash, no
// throw, every rendered text ends with a newline. Its first 8 bytes, read as
// a double and as an integer, go through format_duration_ms / format_bytes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "ctl/protocol.hpp"
#include "ctl/render.hpp"
#include "ctl/views.hpp"
#include "fuzz_check.hpp"

using namespace rcnet;
using namespace rcnet::ctl;

namespace {

void check_rendered(const std::string& text) {
  FUZZ_CHECK(text.empty() || text.back() == '\n');
}

void render_all(const json& data) {
  for (const CommandInfo& row : kCommands)
    check_rendered(render(row.cmd, data));
}

// The data the daemon answers `r` with, from an empty manager.
json reply_data(const Request& r) {
  static const cm::Snapshot kSnap = [] {
    cm::Snapshot s;
    s.node = 0x0a630001;
    s.incarnation = 0x1234;
    s.mtu = 65520;
    s.send_slots_total = s.send_slots_free = 256;
    return s;
  }();
  switch (r.cmd) {
    case Command::kStatus:
      return status_json(kSnap);
    case Command::kRails:
      return rails_json(kSnap);
    case Command::kPeers:
      return peers_json(kSnap);
    case Command::kConnections:
      return connections_json(kSnap);
    case Command::kQps:
      return qps_json(kSnap);
    case Command::kSrq:
      return srq_json(kSnap.srq);
    case Command::kStats:
      return stats_json(kSnap.counters);
    case Command::kAudit:
      return audit_json(AuditResult{});
    case Command::kConfig:
      return config_json(config::Config{});
    case Command::kDisconnect:
      return disconnect_json(r.peer_node.value_or(1));
    case Command::kReap:
      return reap_json(r.reap_idle ? 1 : 0);
    case Command::kLogLevel:
      return log_level_json(config::LogLevel::kInfo, r.level);
    case Command::kMonitor:
      return json{{"monitor", true}};
    case Command::kReload:
      return reload_json({"timeouts.idle"});
    case Command::kRoute:
      return route_json(r.address.value_or(IpAddr{}), config::Config{}, kSnap);
  }
  return json::object();
}

void check_request(std::string_view line) {
  const Result<Request> r = parse_request(line);
  if (!r) {
    const Error& e = r.error();
    const ErrorCode code = error_code_of(e);
    FUZZ_CHECK(code == ErrorCode::kBadRequest || code == ErrorCode::kVersion ||
               code == ErrorCode::kUnknownCommand);
    FUZZ_CHECK(!e.context.empty());
    const std::string reply = error_reply(e);
    FUZZ_CHECK(!reply.empty() && reply.back() == '\n');
    const Result<Reply> back = parse_reply(reply);
    FUZZ_CHECK_MSG(back.ok(), reply);
    FUZZ_CHECK(!back->ok);
    FUZZ_CHECK(back->code == code);
    FUZZ_CHECK(!back->message.empty());
    return;
  }
  const Request& req = *r;
  FUZZ_CHECK(to_string(req.cmd) != "?");
  if (req.cmd == Command::kDisconnect) {
    FUZZ_CHECK(req.peer_node.has_value() != req.peer_addr.has_value());
    FUZZ_CHECK(!req.peer_node || *req.peer_node != 0);
  } else {
    FUZZ_CHECK(!req.peer_node && !req.peer_addr);
  }
  if (req.reap_idle)
    FUZZ_CHECK(req.cmd == Command::kReap && req.reap_idle->count() >= 0);

  // rcnetctl's encoding of the same request means the same thing.
  const std::string enc = encode_request(req);
  const Result<Request> again = parse_request(enc);
  FUZZ_CHECK_MSG(again.ok(), enc);
  FUZZ_CHECK_MSG(again->cmd == req.cmd, enc);
  FUZZ_CHECK_MSG(again->peer_node == req.peer_node, enc);
  FUZZ_CHECK_MSG(again->peer_addr == req.peer_addr, enc);
  FUZZ_CHECK_MSG(again->reap_idle == req.reap_idle, enc);
  FUZZ_CHECK_MSG(again->level == req.level, enc);

  // Its reply renders.
  const std::string reply = ok_reply(reply_data(req));
  const Result<Reply> back = parse_reply(reply);
  FUZZ_CHECK_MSG(back.ok() && back->ok, reply);
  const std::string text = render(req.cmd, back->data);
  FUZZ_CHECK(!text.empty() && text.back() == '\n');
}

void check_renderers(std::string_view bytes) {
  // As a reply line from the daemon.
  const Result<Reply> rep = parse_reply(bytes);
  if (rep && rep->ok)
    render_all(rep->data);
  // As bare data.
  const json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded())
    render_all(j);
}

// The renderers' number formats: "-" only for what is not a duration;
// otherwise digits first, never a sign.
void check_formats(std::span<const std::uint8_t> in) {
  if (in.size() < 8)
    return;
  double ms = 0;
  std::uint64_t n = 0;
  std::memcpy(&ms, in.data(), 8);
  std::memcpy(&n, in.data(), 8);
  const std::string d = format_duration_ms(ms);
  if (!std::isfinite(ms) || ms < 0)
    FUZZ_CHECK(d == "-");
  else
    FUZZ_CHECK_MSG(!d.empty() && d[0] >= '0' && d[0] <= '9', d);
  const std::string b = format_bytes(n);
  FUZZ_CHECK_MSG(!b.empty() && b[0] >= '0' && b[0] <= '9' && b.back() == 'B', b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  check_request(line);
  check_renderers(line);
  check_formats(std::span<const std::uint8_t>(data, size));
  return 0;
}
