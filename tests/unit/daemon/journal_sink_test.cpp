// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "journal_sink.hpp"

#include <syslog.h>

#include <algorithm>
#include <map>
#include "catch2_compat.hpp"

namespace daemon_journal_sink_test {
using namespace rcnet;
using namespace rcnet::daemon;

namespace {
std::map<std::string, std::string> as_map(const std::vector<std::string>& v) {
  std::map<std::string, std::string> m;
  for (const auto& f : v) {
    const auto eq = f.find('=');
    REQUIRE(eq != std::string::npos);
    const std::string key = f.substr(0, eq);
    // journald field names: upper case, digits, '_', not starting with '_'.
    CHECK(key.front() != '_');
    CHECK(std::all_of(key.begin(), key.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }));
    CHECK(m.count(key) == 0);
    m[key] = f.substr(eq + 1);
  }
  return m;
}
}  // namespace

TEST_CASE("journal: a plain record has MESSAGE, PRIORITY and the identifier only",
          "[ops][journal]") {
  spdlog::details::log_msg msg("rcnetd", spdlog::level::info, "reload applied");
  auto m = as_map(journal_fields(msg, nullptr));
  CHECK(m.size() == 3);
  CHECK(m.at("MESSAGE") == "reload applied");
  CHECK(m.at("PRIORITY") == "6");
  CHECK(m.at("SYSLOG_IDENTIFIER") == "rcnetd");
  CHECK(journal_fields(msg, nullptr).front().rfind("MESSAGE=", 0) == 0);
}

TEST_CASE("journal: a connection event carries every structured field", "[ops][journal]") {
  log::Fields f;
  f.peer_node = 0x0a630002;
  f.peer_addr = *IpAddr::parse("10.99.0.2");
  f.peer_port = 7471;
  f.qpn = 17;
  f.remote_qpn = 4242;
  f.conn_state = "AWAIT_LAST_WQE";
  f.teardown_stage = "AWAIT_LAST_WQE";
  f.reason = "last_wqe_timeout";
  f.message_id = log::kMsgLastWqeTimeout;
  spdlog::source_loc loc{"lib/cm/manager.cpp", 812, "on_timer"};
  spdlog::details::log_msg msg(loc, "rcnetd", spdlog::level::warn,
                               "drain WR posted\nwithout event");
  auto m = as_map(journal_fields(msg, &f));
  CHECK(m.at("MESSAGE") == "drain WR posted\nwithout event");
  CHECK(m.at("PRIORITY") == "4");
  CHECK(m.at("CODE_FILE") == "lib/cm/manager.cpp");
  CHECK(m.at("CODE_LINE") == "812");
  CHECK(m.at("CODE_FUNC") == "on_timer");
  CHECK(m.at("PEER_NODE") == "174260226");  // decimal, as rcnetctl and the ctl JSON spell it
  CHECK(m.at("PEER_ADDR") == "10.99.0.2");
  CHECK(m.at("PEER_PORT") == "7471");
  CHECK(m.at("QPN") == "17");
  CHECK(m.at("REMOTE_QPN") == "4242");
  CHECK(m.at("CONN_STATE") == "AWAIT_LAST_WQE");
  CHECK(m.at("TEARDOWN_STAGE") == "AWAIT_LAST_WQE");
  CHECK(m.at("REASON") == "last_wqe_timeout");
  CHECK(m.at("MESSAGE_ID") == std::string(log::kMsgLastWqeTimeout));
  CHECK(m.at("MESSAGE_ID").size() == 32);
}

TEST_CASE("journal: unset fields are left out, not sent empty", "[ops][journal]") {
  log::Fields f;
  f.peer_addr = *IpAddr::parse("10.99.0.3");
  f.conn_state = "CONNECTING";
  spdlog::details::log_msg msg("rcnetd", spdlog::level::debug, "REQ sent");
  auto m = as_map(journal_fields(msg, &f));
  CHECK(m.count("PEER_ADDR") == 1);
  CHECK(m.count("CONN_STATE") == 1);
  for (const char* k : {"PEER_NODE", "PEER_PORT", "QPN", "REMOTE_QPN", "TEARDOWN_STAGE", "REASON",
                        "MESSAGE_ID", "CODE_FILE"})
    CHECK(m.count(k) == 0);
}

TEST_CASE("journal: spdlog levels map to syslog priorities", "[ops][journal]") {
  using L = spdlog::level::level_enum;
  CHECK(syslog_priority(L::trace) == LOG_DEBUG);
  CHECK(syslog_priority(L::debug) == LOG_DEBUG);
  CHECK(syslog_priority(L::info) == LOG_INFO);
  CHECK(syslog_priority(L::warn) == LOG_WARNING);
  CHECK(syslog_priority(L::err) == LOG_ERR);
  CHECK(syslog_priority(L::critical) == LOG_CRIT);
}

}  // namespace daemon_journal_sink_test
