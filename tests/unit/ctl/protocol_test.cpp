// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "catch2_compat.hpp"

#include <cerrno>
#include <string>
#include <vector>

#include "ctl/access.hpp"
#include "ctl/protocol.hpp"

namespace ctl_protocol_test {
using namespace rcnet;
using namespace rcnet::ctl;

namespace {

Request parse_ok(const std::string& line) {
  auto r = parse_request(line);
  INFO(line);
  if (!r)
    FAIL(r.error().context);
  return r.value();
}

// The error reply the daemon would send for `line`.
json error_of(const std::string& line) {
  auto r = parse_request(line);
  INFO(line);
  REQUIRE_FALSE(r.ok());
  const std::string reply = error_reply(r.error());
  REQUIRE(reply.back() == '\n');
  const json j = json::parse(reply);
  CHECK(j["v"] == kVersion);
  CHECK(j["ok"] == false);
  return j["error"];
}

}  // namespace

TEST_CASE("ctl: every command parses without args, with empty args, and round-trips", "[ctl]") {
  for (const CommandInfo& row : kCommands) {
    const Command c = row.cmd;
    INFO(to_string(c));
    CHECK(to_string(c) == row.name);
    CHECK(parse_command(to_string(c)) == c);
    if (c == Command::kDisconnect || c == Command::kLogLevel || c == Command::kRoute)
      continue;  // required args
    const std::string name(to_string(c));
    CHECK(parse_ok(R"({"v":1,"cmd":")" + name + "\"}").cmd == c);
    CHECK(parse_ok(R"({"v":1,"cmd":")" + name + R"(","args":{}})" + "\n").cmd == c);
    Request r;
    r.cmd = c;
    CHECK(parse_ok(encode_request(r)).cmd == c);
  }
  CHECK(to_string(Command::kLogLevel) == "log-level");
}

TEST_CASE("ctl: command arguments", "[ctl]") {
  Request r = parse_ok(R"({"v":1,"cmd":"disconnect","args":{"peer":174260225}})");
  CHECK(r.peer_node == 174260225u);
  CHECK_FALSE(r.peer_addr);
  Request route = parse_ok(R"({"v":1,"cmd":"route","args":{"address":"10.100.0.7"}})");
  CHECK(route.address == IpAddr::parse("10.100.0.7"));
  CHECK(parse_ok(encode_request(route)).address == route.address);
  CHECK(error_of(R"({"v":1,"cmd":"route","args":{"address":7}})")["code"] == "bad_request");
  CHECK(error_of(R"({"v":1,"cmd":"route"})")["message"] ==
        "route needs \"address\": an IP address");

  r = parse_ok(R"({"v":1,"cmd":"disconnect","args":{"peer":"18446744073709551615"}})");
  CHECK(r.peer_node == 18446744073709551615ull);

  r = parse_ok(R"({"v":1,"cmd":"disconnect","args":{"peer":"10.99.0.2"}})");
  REQUIRE(r.peer_addr);
  CHECK(r.peer_addr->to_string() == "10.99.0.2");
  CHECK_FALSE(r.peer_node);
  CHECK(parse_ok(encode_request(r)).peer_addr == r.peer_addr);

  r = parse_ok(R"({"v":1,"cmd":"disconnect","args":{"peer":"fd00::2"}})");
  REQUIRE(r.peer_addr);
  CHECK(r.peer_addr->is_v6());

  r = parse_ok(R"({"v":1,"cmd":"reap","args":{"idle_s":2.5}})");
  CHECK(r.reap_idle == std::chrono::milliseconds(2500));
  CHECK(parse_ok(encode_request(r)).reap_idle == r.reap_idle);
  r = parse_ok(R"({"v":1,"cmd":"reap","args":{"idle_s":0}})");
  CHECK(r.reap_idle == Duration::zero());
  CHECK_FALSE(parse_ok(R"({"v":1,"cmd":"reap"})").reap_idle);

  r = parse_ok(R"({"v":1,"cmd":"log-level","args":{"level":"debug"}})");
  CHECK(r.level == config::LogLevel::kDebug);
  r.level = config::LogLevel::kCritical;
  CHECK(parse_ok(encode_request(r)).level == config::LogLevel::kCritical);
}

TEST_CASE("ctl: every parse error yields its reply code and a message", "[ctl]") {
  struct Case {
    std::string line;
    const char* code;
    const char* msg;
  };
  const Case cases[] = {
      {"", "bad_request", "not valid JSON"},
      {"status", "bad_request", "not valid JSON"},
      {R"({"v":1,"cmd":"status")", "bad_request", "not valid JSON"},
      {"[1,2]", "bad_request", "must be a JSON object"},
      {"\"status\"", "bad_request", "must be a JSON object"},
      {R"({"cmd":"status"})", "bad_request", "missing \"v\""},
      {R"({"v":"1","cmd":"status"})", "bad_request", "\"v\" must be an integer"},
      {R"({"v":1.5,"cmd":"status"})", "bad_request", "\"v\" must be an integer"},
      {R"({"v":2,"cmd":"status"})", "version", "protocol version 2 not supported"},
      {R"({"v":0,"cmd":"status"})", "version", "not supported"},
      {R"({"v":1})", "bad_request", "missing \"cmd\""},
      {R"({"v":1,"cmd":7})", "bad_request", "\"cmd\" must be a string"},
      {R"({"v":1,"cmd":"reboot"})", "unknown_command", "unknown command \"reboot\""},
      {R"({"v":1,"cmd":"Status"})", "unknown_command", "unknown command"},
      {R"({"v":1,"cmd":"status","extra":1})", "bad_request", "unknown field \"extra\""},
      {R"({"v":1,"cmd":"status","args":[]})", "bad_request", "\"args\" must be an object"},
      {R"({"v":1,"cmd":"status","args":{"x":1}})", "bad_request",
       "unknown argument \"x\" for status"},
      {R"({"v":1,"cmd":"disconnect"})", "bad_request", "disconnect needs \"peer\""},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":true}})", "bad_request",
       "\"peer\" must be a node id"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":-5}})", "bad_request",
       "\"peer\" must be a node id"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":1.5}})", "bad_request",
       "\"peer\" must be a node id"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":0}})", "bad_request", "node id 0"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":"node7"}})", "bad_request",
       "neither a node id nor an IP address"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":"18446744073709551616"}})", "bad_request",
       "neither a node id"},
      {R"({"v":1,"cmd":"disconnect","args":{"peer":1,"force":true}})", "bad_request",
       "unknown argument \"force\" for disconnect"},
      {R"({"v":1,"cmd":"reap","args":{"idle_s":"5"}})", "bad_request",
       "\"idle_s\" must be a number"},
      {R"({"v":1,"cmd":"reap","args":{"idle_s":-1}})", "bad_request", "between 0 and"},
      {R"({"v":1,"cmd":"reap","args":{"idle_s":1e300}})", "bad_request", "between 0 and"},
      {R"({"v":1,"cmd":"log-level"})", "bad_request", "log-level needs \"level\""},
      {R"({"v":1,"cmd":"log-level","args":{"level":"loud"}})", "bad_request",
       "\"level\" must be one of"},
      {R"({"v":1,"cmd":"log-level","args":{"level":3}})", "bad_request",
       "\"level\" must be one of"},
  };
  for (const Case& k : cases) {
    const json e = error_of(k.line);
    INFO(k.line);
    CHECK(e["code"] == k.code);
    CHECK_THAT(e["message"].get<std::string>(), Catch::Contains(k.msg));
  }
}

TEST_CASE("ctl: requests are bounded to kMaxRequestBytes", "[ctl]") {
  // A valid request padded with whitespace to exactly the limit is accepted...
  std::string line = R"({"v":1,"cmd":"status"})";
  line += std::string(kMaxRequestBytes - line.size(), ' ');
  REQUIRE(line.size() == kMaxRequestBytes);
  CHECK(parse_request(line + "\n").ok());
  // ...one byte more is refused before parsing.
  auto r = parse_request(line + " ");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code.value() == EMSGSIZE);
  const json e = error_of(line + " ");
  CHECK(e["code"] == "bad_request");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("exceeds the limit of 65536"));
}

TEST_CASE("ctl: hostile input never throws out of parse_request", "[ctl]") {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  CHECK_FALSE(parse_request(deep).ok());
  CHECK_FALSE(parse_request(std::string("{\"v\":1,\"cmd\":\"\xff\xfe\"}")).ok());
  CHECK_FALSE(parse_request(std::string("\0\0\0", 3)).ok());
  // An unknown command with invalid UTF-8 cannot be echoed as is; the reply
  // must still be valid JSON.
  auto r = parse_request(R"({"v":1,"cmd":"\udc00"})");
  if (!r.ok()) {
    json reply;
    CHECK_NOTHROW(reply = json::parse(error_reply(r.error())));
    CHECK(reply.is_object());
  }
}

TEST_CASE("ctl: replies round-trip through parse_reply", "[ctl]") {
  auto ok = parse_reply(ok_reply({{"reaped", 3}}));
  REQUIRE(ok.ok());
  CHECK(ok->ok);
  CHECK(ok->data["reaped"] == 3);

  auto err = parse_reply(error_reply(ErrorCode::kForbidden, "needs root"));
  REQUIRE(err.ok());
  CHECK_FALSE(err->ok);
  CHECK(err->code == ErrorCode::kForbidden);
  CHECK(err->message == "needs root");

  for (int i = 0; i <= static_cast<int>(ErrorCode::kBusy); ++i) {
    const auto c = static_cast<ErrorCode>(i);
    CHECK(parse_error_code(to_string(c)) == c);
  }
  CHECK_FALSE(parse_reply("garbage").ok());
  CHECK_FALSE(parse_reply(R"({"v":1})").ok());
  auto v2 = parse_reply(R"({"v":2,"ok":true,"data":{}})");
  REQUIRE_FALSE(v2.ok());
  CHECK(v2.error().code.value() == EPROTONOSUPPORT);
  // An invalid UTF-8 message is replaced, not thrown about.
  json reply;
  CHECK_NOTHROW(reply = json::parse(error_reply(ErrorCode::kFailed, "bad \xff byte")));
  CHECK(reply.is_object());
}

TEST_CASE("ctl: access matrix", "[ctl]") {
  const gid_t rcnet_gid = 990;
  const std::vector<gid_t> member = {100, 990};
  const std::vector<gid_t> outsider = {100, 27};
  CHECK(access_for(0, {}, rcnet_gid) == Access::kAdmin);
  CHECK(access_for(0, outsider, rcnet_gid) == Access::kAdmin);
  CHECK(access_for(1000, member, rcnet_gid) == Access::kRead);
  CHECK(access_for(1000, outsider, rcnet_gid) == Access::kDenied);
  CHECK(access_for(1000, {}, rcnet_gid) == Access::kDenied);

  for (const CommandInfo& row : kCommands) {
    const Command c = row.cmd;
    INFO(to_string(c));
    const bool mutating = c == Command::kDisconnect || c == Command::kReap ||
                          c == Command::kLogLevel || c == Command::kReload;
    CHECK(is_mutating(c) == mutating);
    CHECK_FALSE(authorize(c, Access::kAdmin));
    CHECK(authorize(c, Access::kRead).has_value() == mutating);
    const auto denied = authorize(c, Access::kDenied);
    REQUIRE(denied);
    CHECK_THAT(*denied, Catch::Contains("permission denied"));
  }
  CHECK_THAT(*authorize(Command::kReap, Access::kRead), Catch::Contains("needs root"));
}

}  // namespace ctl_protocol_test
