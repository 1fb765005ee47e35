// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The ctl server's monitor (issue 12): subscribers get every event and
// the end line, a subscriber that never reads is dropped, and a monitor
// keeps its slot when the oldest idle connection gives way.
#include "ctl_server.hpp"

#include <unistd.h>

#include <string>
#include <vector>

#include "catch2_compat.hpp"

#include "ctl_server_fixture.hpp"

namespace daemon_ctl_monitor_test {
using namespace rcnet;
using namespace rcnet::daemon;
using namespace rcnet::daemon::test;

namespace {

cm::Event sample_event(rdma::Qpn qpn) {
  cm::Event e;
  e.kind = cm::EventKind::kState;
  e.conn = 7;
  e.peer = node_id_for(*IpAddr::parse("10.99.0.2"));
  e.peer_addr = Endpoint{*IpAddr::parse("10.99.0.2"), 7471};
  e.qpn = qpn;
  e.remote_qpn = 18;
  e.from = cm::ConnState::kEstablished;
  e.to = cm::ConnState::kDisconnecting;
  e.reason = "DREQ sent";
  return e;
}

// Subscribes `fd` and returns once the ok reply is read.
void subscribe(ServerFixture& f, int fd) {
  const std::string m = req("monitor");
  REQUIRE(::write(fd, m.data(), m.size()) == static_cast<ssize_t>(m.size()));
  std::string got;
  for (int k = 0; k < 100 && got.find('\n') == std::string::npos; ++k) {
    REQUIRE(f.loop->run_once(std::chrono::milliseconds(10)).ok());
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      got.append(buf, static_cast<std::size_t>(n));
  }
  auto r = ctl::parse_reply(got);
  REQUIRE(r.ok());
  REQUIRE(r->ok);
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (std::size_t nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1)
    out.push_back(s.substr(at, nl - at));
  return out;
}

}  // namespace

TEST_CASE("ctl server: a monitor gets every event, then the end line on stopping",
          "[ops][ctl][socket][monitor]") {
  CtlServerOptions o;
  o.request_timeout = std::chrono::milliseconds(50);
  ServerFixture f(o);
  UniqueFd m = f.connect_client();
  subscribe(f, m.get());
  CHECK(f.server->monitor_count() == 1);
  f.server->publish(sample_event(17));
  f.server->publish(sample_event(19));
  // Longer than the request timeout: a subscriber is not timed out.
  bool eof = false;
  std::string got = f.read_reply(m.get(), eof, 10);
  CHECK_FALSE(eof);
  CHECK(f.server->counters().ctl_clients_timed_out == 0);
  f.server->stopping();
  got += f.read_reply(m.get(), eof);
  CHECK(eof);
  const auto lines = split_lines(got);
  REQUIRE(lines.size() == 3);
  auto e1 = ctl::parse_push(lines[0]);
  REQUIRE(e1.ok());
  REQUIRE_FALSE(e1->end);
  CHECK(e1->event["kind"] == "state");
  CHECK(e1->event["qpn"] == 17);
  CHECK(e1->event["from"] == "ESTABLISHED");
  CHECK(e1->event["to"] == "DISCONNECTING");
  CHECK(e1->event["reason"] == "DREQ sent");
  CHECK(e1->event["peer_addr"] == "10.99.0.2:7471");
  CHECK(ctl::parse_push(lines[1])->event["qpn"] == 19);
  auto end = ctl::parse_push(lines[2]);
  REQUIRE(end.ok());
  CHECK(end->end);
  CHECK(end->end_message == "rcnetd stopping");
  CHECK(f.server->counters().ctl_monitors == 1);
  CHECK(f.server->counters().ctl_monitor_events == 2);
  CHECK(f.server->monitor_count() == 0);
}

TEST_CASE("ctl server: a monitor that never reads is dropped; others are served",
          "[ops][ctl][socket][monitor]") {
  CtlServerOptions o;
  o.monitor_buffer_bytes = 16 * 1024;
  ServerFixture f(o);
  UniqueFd stalled = f.connect_client();
  subscribe(f, stalled.get());
  UniqueFd reader = f.connect_client();
  subscribe(f, reader.get());
  REQUIRE(f.server->monitor_count() == 2);
  std::size_t read_bytes = 0;
  int events = 0;
  for (int round = 0; round < 400 && f.server->counters().ctl_monitor_dropped == 0; ++round) {
    for (int k = 0; k < 50; ++k, ++events)
      f.server->publish(sample_event(static_cast<rdma::Qpn>(events + 1)));
    REQUIRE(f.loop->run_once(std::chrono::milliseconds(0)).ok());
    char buf[65536];
    for (ssize_t n; (n = ::read(reader.get(), buf, sizeof buf)) > 0;)
      read_bytes += static_cast<std::size_t>(n);
  }
  CHECK(f.server->counters().ctl_monitor_dropped == 1);
  CHECK(f.server->monitor_count() == 1);
  // The stalled one sees the end of its stream (after what was buffered).
  bool eof = false;
  for (int k = 0; k < 200 && !eof; ++k) {
    REQUIRE(f.loop->run_once(std::chrono::milliseconds(5)).ok());
    char buf[65536];
    ssize_t n;
    while ((n = ::read(stalled.get(), buf, sizeof buf)) > 0) {
    }
    eof = n == 0;
  }
  CHECK(eof);
  // The reader got everything so far, and a request on a new connection is
  // answered at once.
  f.server->publish(sample_event(1));
  ++events;
  std::string tail;
  for (int k = 0; k < 20; ++k) {
    REQUIRE(f.loop->run_once(std::chrono::milliseconds(5)).ok());
    char buf[65536];
    for (ssize_t n; (n = ::read(reader.get(), buf, sizeof buf)) > 0;)
      read_bytes += static_cast<std::size_t>(n);
  }
  const std::size_t line_size = ctl::event_line(sample_event(1), 0).size();
  CHECK(read_bytes >= static_cast<std::size_t>(events) * (line_size - 20));
  CHECK(f.server->counters().ctl_monitor_events == static_cast<std::uint64_t>(events));
  UniqueFd c = f.connect_client();
  const std::string q = req("status");
  REQUIRE(::write(c.get(), q.data(), q.size()) == static_cast<ssize_t>(q.size()));
  ::shutdown(c.get(), SHUT_WR);
  const std::string got = f.read_reply(c.get(), eof);
  CHECK(eof);
  CHECK(ctl::parse_reply(got).ok());
}

TEST_CASE("ctl server: monitor after the stop began gets the end line at once",
          "[ops][ctl][socket][monitor]") {
  ServerFixture f;
  f.server->stopping();
  UniqueFd m = f.connect_client();
  const std::string q = req("monitor");
  REQUIRE(::write(m.get(), q.data(), q.size()) == static_cast<ssize_t>(q.size()));
  bool eof = false;
  const auto lines = split_lines(f.read_reply(m.get(), eof));
  CHECK(eof);
  REQUIRE(lines.size() == 2);
  CHECK(ctl::parse_reply(lines[0])->ok);
  CHECK(ctl::parse_push(lines[1])->end);
}

TEST_CASE(
    "ctl server: when idle connections hold every slot, root's included, the oldest gives way",
    "[ops][ctl][socket][lockout]") {
  CtlServerOptions o;
  o.max_clients = 6;
  o.root_reserved_clients = 2;
  o.request_timeout = std::chrono::seconds(60);
  o.first_request_timeout = std::chrono::seconds(60);
  ServerFixture f(o);
  // Root holds every slot: two silent connections, one that had its answer
  // and stays open, a monitor, and one halfway through a request.
  std::vector<UniqueFd> held;
  held.push_back(f.connect_as(0));
  held.push_back(f.connect_as(0));
  UniqueFd answered = f.connect_as(0);
  const std::string q = req("srq");
  REQUIRE(::write(answered.get(), q.data(), q.size()) == static_cast<ssize_t>(q.size()));
  bool eof = false;
  REQUIRE(ctl::parse_reply(f.read_reply(answered.get(), eof, 5)).ok());
  UniqueFd monitor = f.connect_as(0);
  subscribe(f, monitor.get());
  UniqueFd partial = f.connect_as(0);
  const std::string head = "{\"v\":1,";
  REQUIRE(::write(partial.get(), head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  held.push_back(f.connect_as(0));
  REQUIRE(f.server->client_count() == 6);

  // A seventh root client is served: the oldest idle one (held[0]) gave way.
  UniqueFd root = f.connect_as(0);
  CHECK(f.server->client_count() == 6);
  CHECK(f.server->counters().ctl_clients_evicted == 1);
  CHECK(f.server->counters().ctl_clients_refused_full == 0);
  CHECK(f.read_reply(held[0].get(), eof, 3).empty());
  CHECK(eof);
  REQUIRE(::write(root.get(), q.data(), q.size()) == static_cast<ssize_t>(q.size()));
  auto r = ctl::parse_reply(f.read_reply(root.get(), eof, 5));
  REQUIRE(r.ok());
  CHECK(r->ok);

  // Then held[1], then the one that had its answer (idle since its request).
  held.push_back(f.connect_as(0));
  held.push_back(f.connect_as(0));
  CHECK(f.server->counters().ctl_clients_evicted == 3);
  CHECK(f.read_reply(held[1].get(), eof, 3).empty());
  CHECK(eof);
  CHECK(f.read_reply(answered.get(), eof, 3).empty());
  CHECK(eof);
  // Neither the monitor nor the request halfway done was closed.
  f.read_reply(monitor.get(), eof, 2);
  CHECK_FALSE(eof);
  f.read_reply(partial.get(), eof, 2);
  CHECK_FALSE(eof);
  CHECK(f.server->monitor_count() == 1);

  // A non-root client may not take root's idle slots: it is refused.
  UniqueFd user = f.connect_as(1000);
  CHECK(refused_reply(f, user.get()).message.find("too many") != std::string::npos);
  CHECK(f.server->counters().ctl_clients_refused_full == 1);
}

}  // namespace daemon_ctl_monitor_test
