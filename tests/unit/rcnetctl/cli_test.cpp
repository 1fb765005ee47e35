// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include "catch2_compat.hpp"

#include "cli.hpp"
#include "config/keys.hpp"
#include "ctl/protocol.hpp"
#include "ctl/views.hpp"

namespace rcnetctl_cli_test {
using namespace rcnet;
using namespace rcnet::rcnetctl;
using ctl::json;

namespace {

// A daemon that answers every request with `reply` (or fails with `error`),
// remembering what it was sent.
struct FakeDaemon {
  std::optional<Error> error;
  std::string reply = ctl::ok_reply(json::object());
  std::string socket, request;
  int calls = 0;
  Transport transport() {
    return [this](const std::string& s, const std::string& line) -> Result<std::string> {
      ++calls;
      socket = s;
      request = line;
      if (error)
        return *error;
      return reply;
    };
  }
};

struct Run {
  int rc = -1;
  std::string out, err;
};

Run run_with(FakeDaemon& d, std::vector<std::string> args) {
  std::ostringstream out, err;
  Run r;
  r.rc = run(args, d.transport(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

ctl::Request sent(const FakeDaemon& d) {
  auto r = ctl::parse_request(d.request);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("rcnetctl: usage errors exit 2 without talking to the daemon", "[ops][rcnetctl]") {
  FakeDaemon d;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {},
           {"frobnicate"},
           {"disconnect"},
           {"disconnect", "not-a-peer"},
           {"disconnect", "0"},
           {"log-level", "loud"},
           {"reap", "--idle", "-3"},
           {"status", "extra"},
       }) {
    std::string joined;
    for (const auto& a : args)
      joined += a + " ";
    INFO(joined);
    CHECK(run_with(d, args).rc == kExitUsage);
  }
  CHECK(d.calls == 0);
  CHECK(run_with(d, {"--help"}).rc == kExitOk);
}

TEST_CASE("rcnetctl: requests carry the parsed arguments", "[ops][rcnetctl]") {
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::disconnect_json(1));
  REQUIRE(run_with(d, {"-s", "/tmp/x.sock", "disconnect", "10.99.0.2"}).rc == kExitOk);
  CHECK(d.socket == "/tmp/x.sock");
  auto r = sent(d);
  CHECK(r.cmd == ctl::Command::kDisconnect);
  CHECK(r.peer_addr == IpAddr::parse("10.99.0.2"));
  CHECK_FALSE(r.peer_node.has_value());

  REQUIRE(run_with(d, {"disconnect", "174325762"}).rc == kExitOk);
  CHECK(sent(d).peer_node == std::optional<NodeId>(174325762));
  CHECK(d.socket == kDefaultSocket);
  REQUIRE(run_with(d, {"disconnect", "0x0a630002"}).rc == kExitOk);
  CHECK(sent(d).peer_node == std::optional<NodeId>(0x0a630002));

  d.reply = ctl::ok_reply(ctl::reap_json(0));
  REQUIRE(run_with(d, {"reap", "--idle", "2.5"}).rc == kExitOk);
  CHECK(sent(d).reap_idle == std::optional<Duration>(std::chrono::milliseconds(2500)));
  REQUIRE(run_with(d, {"reap"}).rc == kExitOk);
  CHECK_FALSE(sent(d).reap_idle.has_value());

  d.reply = ctl::ok_reply(ctl::log_level_json(config::LogLevel::kInfo, config::LogLevel::kDebug));
  REQUIRE(run_with(d, {"log-level", "debug"}).rc == kExitOk);
  CHECK(sent(d).level == config::LogLevel::kDebug);
}

TEST_CASE("rcnetctl: a daemon that is not running exits 3 with a hint", "[ops][rcnetctl]") {
  FakeDaemon d;
  for (int e : {ENOENT, ECONNREFUSED}) {
    d.error = Error::from_errno(e, "connect /run/rcnet/rcnetd.sock");
    auto r = run_with(d, {"status"});
    CHECK(r.rc == kExitNotRunning);
    CHECK(r.err.find("systemctl status rcnetd") != std::string::npos);
  }
  d.error = Error::from_errno(EACCES, "connect /run/rcnet/rcnetd.sock");
  auto r = run_with(d, {"status"});
  CHECK(r.rc == kExitFailed);
  CHECK(r.err.find("ctl group") != std::string::npos);
  d.error = Error::from_errno(ETIMEDOUT, "waiting for rcnetd's reply");
  CHECK(run_with(d, {"qps"}).rc == kExitFailed);
}

TEST_CASE("rcnetctl: error replies exit 1 and show the daemon's message", "[ops][rcnetctl]") {
  FakeDaemon d;
  d.reply =
      ctl::error_reply(ctl::ErrorCode::kForbidden, "\"reap\" changes the daemon and needs root");
  auto r = run_with(d, {"reap"});
  CHECK(r.rc == kExitFailed);
  CHECK(r.err.find("needs root") != std::string::npos);
  CHECK(r.err.find("forbidden") != std::string::npos);
  CHECK(r.out.empty());
  d.reply = "garbage\n";
  CHECK(run_with(d, {"status"}).rc == kExitFailed);
}

TEST_CASE("rcnetctl: audit exits 1 on a mismatch, 0 when the tables agree", "[ops][rcnetctl]") {
  FakeDaemon d;
  // The daemon has QPs 17 and 19; the kernel the same, or 23 as well.
  const ctl::AuditResult same{
      .kernel_only = {}, .daemon_only = {}, .daemon_count = 2, .kernel_count = 2};
  const ctl::AuditResult leak{
      .kernel_only = {23}, .daemon_only = {}, .daemon_count = 2, .kernel_count = 3};
  d.reply = ctl::ok_reply(ctl::audit_json(same));
  auto ok = run_with(d, {"audit"});
  CHECK(ok.rc == kExitOk);
  CHECK_FALSE(ok.out.empty());
  d.reply = ctl::ok_reply(ctl::audit_json(leak));
  auto bad = run_with(d, {"audit"});
  CHECK(bad.rc == kExitFailed);
  CHECK(bad.out.find("23") != std::string::npos);
  // A mismatch only the seam saw (the daemon sets ok=false) counts as well.
  json j = ctl::audit_json(same);
  j["ok"] = false;
  j["seam_only"] = {31};
  d.reply = ctl::ok_reply(j);
  auto seam = run_with(d, {"audit"});
  CHECK(seam.rc == kExitFailed);
  CHECK(seam.out.find("seam only") != std::string::npos);
  CHECK(seam.out.find(": 31\n") != std::string::npos);
}

TEST_CASE("rcnetctl: -j prints the reply's data, tables otherwise", "[ops][rcnetctl]") {
  FakeDaemon d;
  json data{{"qps", json::array({{{"id", 7}, {"qpn", 17}, {"state", "DRAINING"}}})}};
  d.reply = ctl::ok_reply(data);
  auto j = run_with(d, {"-j", "qps"});
  REQUIRE(j.rc == kExitOk);
  CHECK(json::parse(j.out) == data);
  auto t = run_with(d, {"qps"});
  REQUIRE(t.rc == kExitOk);
  CHECK(t.out.find("DRAINING") != std::string::npos);
  CHECK_THROWS(json::parse(t.out));

  json st{{"node", 1}, {"daemon", {{"version", "9.9.9"}, {"pid", 77}, {"uptime_ms", 61000}}}};
  d.reply = ctl::ok_reply(st);
  auto s = run_with(d, {"status"});
  CHECK(s.out.find("rcnetd 9.9.9") != std::string::npos);
  CHECK(s.out.find("pid 77") != std::string::npos);
  CHECK(s.out.find("up 1m01s") != std::string::npos);
  // Printed once: rcnetctl no longer adds its own copy to the renderer's.
  CHECK(s.out.find("rcnetd 9.9.9") == s.out.rfind("rcnetd 9.9.9"));
}

TEST_CASE("rcnetctl stats --format prometheus: counters and gauges in the exposition format",
          "[ops][rcnetctl]") {
  cm::Snapshot s;
  s.counters.packets_tx = 42;
  s.counters.last_wqe_timeouts = 3;
  s.send_slots_total = 256;
  s.send_slots_free = 250;
  s.srq.enabled = true;
  s.srq.size = 512;
  s.srq.posted = 500;
  s.srq.limit = 64;
  cm::QpSnapshot q;
  q.qpn = 17;
  q.state = cm::ConnState::kEstablished;
  q.in_service = true;
  s.qps.push_back(q);
  q.qpn = 18;
  q.state = cm::ConnState::kAwaitLastWqe;
  q.in_service = false;
  s.qps.push_back(q);
  std::vector<std::string> cmds;
  Transport t = [&](const std::string&, const std::string& line) -> Result<std::string> {
    auto r = ctl::parse_request(line);
    REQUIRE(r.ok());
    cmds.emplace_back(ctl::to_string(r->cmd));
    if (r->cmd == ctl::Command::kStats)
      return ctl::ok_reply(ctl::stats_json(s.counters));
    return ctl::ok_reply(ctl::status_json(s));
  };
  std::ostringstream out, err;
  const std::vector<std::string> args{"stats", "--format", "prometheus"};
  REQUIRE(run(args, t, out, err) == kExitOk);
  CHECK(cmds == std::vector<std::string>{"stats", "status"});
  const std::string text = out.str();
  CHECK(text.find("# HELP rcnet_tx_packets_total packets sent\n") != std::string::npos);
  CHECK(text.find("# TYPE rcnet_tx_packets_total counter\n") != std::string::npos);
  CHECK(text.find("\nrcnet_tx_packets_total 42\n") != std::string::npos);
  CHECK(text.find("\nrcnet_last_wqe_timeouts_total 3\n") != std::string::npos);
  CHECK(text.find("rcnet_qps{state=\"ESTABLISHED\"} 1\n") != std::string::npos);
  CHECK(text.find("rcnet_qps{state=\"AWAIT_LAST_WQE\"} 1\n") != std::string::npos);
  CHECK(text.find("rcnet_qps{state=\"DRAINING\"} 0\n") != std::string::npos);
  CHECK(text.find("\nrcnet_connections 1\n") != std::string::npos);
  CHECK(text.find("\nrcnet_srq_posted 500\n") != std::string::npos);
  CHECK(text.find("\nrcnet_send_slots_free 250\n") != std::string::npos);
  CHECK(text.find("\nrcnet_send_slots 256\n") != std::string::npos);
  // The rails come with status: this snapshot has none, so its own one rail.
  CHECK(text.find("\nrcnet_rail_up{rail=\"0\",device=\"\"} 1\n") != std::string::npos);
  CHECK(text.find("\nrcnet_failovers_total{cause=\"port_error\"} 0\n") != std::string::npos);
  CHECK(text.find("\nrcnet_peers_without_redundancy 0\n") != std::string::npos);
  // Every sample line names a metric announced by a TYPE line before it.
  std::istringstream lines(text);
  std::set<std::string> typed;
  std::string line;
  std::size_t samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (!line.empty() && line[0] != '#') {
      ++samples;
      const std::string metric = line.substr(0, line.find_first_of("{ "));
      CHECK(typed.count(metric) == 1);
    }
  }
  std::size_t counters = 0;
  s.counters.for_each([&](std::string_view, std::uint64_t, std::string_view) { ++counters; });
  CHECK(samples > counters);
  // promtool, where Debian's prometheus package is installed (tools/install-deps.sh).
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = "/tmp/rcnet-unit-prom.txt";
    {
      std::ofstream f(path);
      f << text;
    }
    CHECK(std::system(("promtool check metrics < " + path).c_str()) == 0);
    std::remove(path.c_str());
  }
}

TEST_CASE("rcnetctl stats --format prometheus --output writes the file atomically",
          "[ops][rcnetctl]") {
  char dir[] = "/tmp/rcnet-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/rcnet.prom";
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::stats_json(cm::Counters{}));
  std::ostringstream out, err;
  const std::vector<std::string> args{"stats", "--format", "prometheus", "--output", path};
  REQUIRE(run(args, d.transport(), out, err) == kExitOk);
  CHECK(out.str().empty());
  std::ifstream f(path);
  std::stringstream got;
  got << f.rdbuf();
  CHECK(got.str().find("rcnet_tx_packets_total 0\n") != std::string::npos);
  CHECK(got.str().find("rcnet_up 1\n") != std::string::npos);
  // The daemon is gone: the file says so instead of going stale.
  d.error = Error::from_errno(ECONNREFUSED, "connect");
  std::ostringstream out2, err2;
  CHECK(run(args, d.transport(), out2, err2) == kExitNotRunning);
  std::ifstream f2(path);
  std::stringstream got2;
  got2 << f2.rdbuf();
  CHECK(got2.str().find("rcnet_up 0\n") != std::string::npos);
  // No temporary file is left behind.
  CHECK(std::system((std::string("test $(ls -A ") + dir + " | wc -l) -eq 1").c_str()) == 0);
  std::remove(path.c_str());
  ::rmdir(dir);
  // --output without the prometheus format is a usage error.
  std::ostringstream out3, err3;
  CHECK(run(std::vector<std::string>{"stats", "--output", path}, d.transport(), out3, err3) ==
        kExitUsage);
}

TEST_CASE("rcnetctl stats NAME...: the named counters' values, in the order asked",
          "[ops][rcnetctl]") {
  cm::Counters c;
  c.connects_started = 7;
  c.failovers_carrier = 2;
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::stats_json(c));
  Run r = run_with(d, {"stats", "failovers_carrier", "connects_started"});
  CHECK(r.rc == kExitOk);
  CHECK(r.out == "2\n7\n");
  CHECK(sent(d).cmd == ctl::Command::kStats);
  // -j: one object, name: value.
  r = run_with(d, {"-j", "stats", "connects_started", "failovers_carrier"});
  CHECK(r.rc == kExitOk);
  CHECK(json::parse(r.out) == json{{"connects_started", 7}, {"failovers_carrier", 2}});
  // A name rcnetd has no counter of: a usage error naming it, no values printed.
  r = run_with(d, {"stats", "connects_started", "connects_startd"});
  CHECK(r.rc == kExitUsage);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("no counter 'connects_startd'"));
  // Values are not an exposition format.
  r = run_with(d, {"stats", "--format", "prometheus", "connects_started"});
  CHECK(r.rc == kExitUsage);
}

TEST_CASE("rcnetctl rails: asks for rails, prints the table or the JSON", "[ops][rcnetctl]") {
  cm::Snapshot s;
  s.rails_mode = "stripe";
  s.peers_without_redundancy = 3;
  cm::RailSnapshot r;
  r.index = 1;
  r.local = Endpoint{*IpAddr::parse("10.99.1.1"), 7471};
  r.device = "rxe1";
  r.state = cm::RailState::kDown;
  r.cause = "carrier lost";
  r.since_change = 2500ms;
  s.rails = {r};
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::rails_json(s));
  auto t = run_with(d, {"rails"});
  REQUIRE(t.rc == kExitOk);
  CHECK(sent(d).cmd == ctl::Command::kRails);
  CHECK(d.request.find(R"("cmd":"rails")") != std::string::npos);
  CHECK(t.out ==
        "mode stripe\n"
        "RAIL  ADDRESS         DEVICE/PORT  STATE  LINKS  CARRYING  TX  RX  CHANGED  LOSS/RETURN  "
        "CAUSE\n"
        "   1  10.99.1.1:7471  rxe1/1       down       0         0  0B  0B     2.5s  -/-          "
        "carrier lost\n"
        "peers without a redundant link: 3\n");
  auto j = run_with(d, {"-j", "rails"});
  REQUIRE(j.rc == kExitOk);
  const json data = json::parse(j.out);
  CHECK(data["mode"] == "stripe");
  CHECK(data["peers_without_redundancy"] == 3);
  CHECK(data["rails"][0]["rail"] == 1);
  CHECK(data["rails"][0]["state"] == "down");
  CHECK(data["rails"][0]["cause"] == "carrier lost");
  CHECK(data["rails"][0]["since_change_ms"] == 2500.0);
}

TEST_CASE("rcnetctl: config -j prints the TOML dotted keys, config the file's lines",
          "[ops][rcnetctl]") {
  auto c = config::parse(
      "[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1/24\"\n"
      "[timeouts]\nidle = \"1500ms\"\n",
      "t.toml");
  REQUIRE(c.ok());
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::config_json(*c));
  auto j = run_with(d, {"-j", "config"});
  REQUIRE(j.rc == kExitOk);
  const json out = json::parse(j.out);
  std::set<std::string> names, rows;
  for (auto it = out.begin(); it != out.end(); ++it)
    names.insert(it.key());
  for (const config::Key& k : config::keys())
    rows.emplace(k.dotted);
  CHECK(names == rows);
  CHECK(out["timeouts.idle"] == "1500ms");

  auto t = run_with(d, {"config"});
  REQUIRE(t.rc == kExitOk);
  CHECK(t.out.find("\ntimeouts.idle = \"1500ms\" ") != std::string::npos);
  CHECK(t.out.find("idle_ms") == std::string::npos);
}

// --- monitor ----------------------------------------------------------------------------

namespace {

// A daemon streaming `lines` (reply first) to a monitor, then closing (or
// failing with `error` after them).
struct FakeStream {
  std::vector<std::string> lines;
  std::optional<Error> error;
  std::string request;
  std::size_t delivered = 0;
  StreamTransport transport() {
    return [this](const std::string&, const std::string& line,
                  const LineSink& on_line) -> Result<void> {
      request = line;
      for (const std::string& l : lines) {
        ++delivered;
        if (!on_line(l))
          return {};
      }
      if (error)
        return *error;
      return {};
    };
  }
};

Run monitor_with(FakeStream& s, std::vector<std::string> args) {
  FakeDaemon d;
  std::ostringstream out, err;
  Run r;
  r.rc = run(args, d.transport(), out, err, s.transport());
  r.out = out.str();
  r.err = err.str();
  CHECK(d.calls == 0);  // monitor never uses the one-shot transport
  return r;
}

std::string strip_nl(std::string s) {
  if (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

// 12:00:01.234 UTC, 2024-01-01.
constexpr std::int64_t kNoon = 1704110401234;

cm::Event dreq_event() {
  cm::Event e;
  e.kind = cm::EventKind::kState;
  e.conn = 3;
  e.peer = node_id_for(*IpAddr::parse("10.99.0.2"));
  e.peer_addr = Endpoint{*IpAddr::parse("10.99.0.2"), 7471};
  e.qpn = 17;
  e.remote_qpn = 18;
  e.from = cm::ConnState::kEstablished;
  e.to = cm::ConnState::kDisconnecting;
  e.reason = "DREQ sent";
  return e;
}

struct UtcScope {
  UtcScope() {
    const char* tz = std::getenv("TZ");
    if (tz != nullptr)
      saved = tz;
    had = tz != nullptr;
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  ~UtcScope() {
    if (had)
      ::setenv("TZ", saved.c_str(), 1);
    else
      ::unsetenv("TZ");
    ::tzset();
  }
  std::string saved;
  bool had = false;
};

}  // namespace

TEST_CASE("rcnetctl monitor: one line per event, the end line, exit 0", "[ops][rcnetctl]") {
  UtcScope utc;
  FakeStream s;
  cm::Event rej;
  rej.kind = cm::EventKind::kReject;
  rej.peer_addr = Endpoint{*IpAddr::parse("fd00::5"), 7471};
  rej.reason = "not_allowed";
  rej.detail = "outside peers.allowed";
  s.lines = {strip_nl(ctl::ok_reply({{"monitor", true}})),
             strip_nl(ctl::event_line(dreq_event(), kNoon)),
             strip_nl(ctl::event_line(rej, kNoon + 5)), strip_nl(ctl::end_line("rcnetd stopping")),
             strip_nl(ctl::event_line(dreq_event(), kNoon))};  // never read
  auto r = monitor_with(s, {"monitor"});
  CHECK(r.rc == kExitOk);
  CHECK(ctl::parse_request(s.request)->cmd == ctl::Command::kMonitor);
  CHECK(r.out ==
        "12:00:01.234 QPN 17 peer 10.99.0.2 ESTABLISHED -> DISCONNECTING (DREQ sent)\n"
        "12:00:01.239 peer fd00::5 REJ not_allowed (outside peers.allowed)\n"
        "monitor ended: rcnetd stopping\n");
  CHECK(s.delivered == 4);
  CHECK(r.err.empty());

  // -j: the daemon's lines as they came, end line included.
  s.delivered = 0;
  auto j = monitor_with(s, {"-j", "monitor"});
  CHECK(j.rc == kExitOk);
  const auto nl = j.out.find('\n');
  REQUIRE(nl != std::string::npos);
  CHECK(j.out.substr(0, nl) == s.lines[1]);
  CHECK(j.out.find(R"("end":"rcnetd stopping")") != std::string::npos);
}

TEST_CASE("rcnetctl monitor: rail and failover events, one line each", "[ops][rcnetctl]") {
  UtcScope utc;
  cm::Event rail;
  rail.kind = cm::EventKind::kRail;
  rail.rail = 1;
  rail.reason = "down";
  rail.detail = "IBV_EVENT_PORT_ERR";
  cm::Event fo;
  fo.kind = cm::EventKind::kFailover;
  fo.peer = node_id_for(*IpAddr::parse("10.99.0.2"));
  fo.peer_addr = Endpoint{*IpAddr::parse("10.99.0.2"), 7471};
  fo.from_rail = 1;
  fo.rail = 0;
  fo.reason = "failover";
  fo.detail = "IBV_EVENT_PORT_ERR";
  cm::Event up = dreq_event();
  up.rail = 1;
  up.peer_addr = Endpoint{*IpAddr::parse("10.99.1.2"), 7471};
  FakeStream s;
  s.lines = {strip_nl(ctl::ok_reply({{"monitor", true}})), strip_nl(ctl::event_line(rail, kNoon)),
             strip_nl(ctl::event_line(fo, kNoon + 1)), strip_nl(ctl::event_line(up, kNoon + 2))};
  auto r = monitor_with(s, {"monitor"});
  CHECK(r.rc == kExitOk);
  CHECK(r.out ==
        "12:00:01.234 rail 1 down (IBV_EVENT_PORT_ERR)\n"
        "12:00:01.235 failover peer 10.99.0.2 rail 1 -> 0 (IBV_EVENT_PORT_ERR)\n"
        "12:00:01.236 QPN 17 peer 10.99.1.2 rail 1 ESTABLISHED -> DISCONNECTING (DREQ sent)\n"
        "monitor ended: rcnetd closed the connection\n");
  auto j = monitor_with(s, {"-j", "monitor"});
  REQUIRE(j.rc == kExitOk);
  const json first = json::parse(j.out.substr(0, j.out.find('\n')));
  CHECK(first["event"]["kind"] == "rail");
  CHECK(first["event"]["state"] == "down");
}

TEST_CASE("rcnetctl monitor: the daemon's close, Ctrl-C and refusals", "[ops][rcnetctl]") {
  UtcScope utc;
  FakeStream s;
  s.lines = {strip_nl(ctl::ok_reply({{"monitor", true}}))};
  auto closed = monitor_with(s, {"monitor"});
  CHECK(closed.rc == kExitOk);
  CHECK(closed.out == "monitor ended: rcnetd closed the connection\n");

  s.error = Error::from_errno(EINTR, "interrupted");
  CHECK(monitor_with(s, {"monitor"}).rc == kExitOk);

  s.error.reset();
  s.lines = {strip_nl(ctl::error_reply(ctl::ErrorCode::kBusy, "too many ctl clients"))};
  auto busy = monitor_with(s, {"monitor"});
  CHECK(busy.rc == kExitFailed);
  CHECK(busy.err.find("too many ctl clients (busy)") != std::string::npos);

  s.lines.clear();
  s.error = Error::from_errno(ENOENT, "connect /run/rcnet/rcnetd.sock");
  auto down = monitor_with(s, {"monitor"});
  CHECK(down.rc == kExitNotRunning);
}

// --- Errors that tell the truth (issue 22) ----------------------------------------------

TEST_CASE("rcnetctl: an unknown command names itself and the nearest ones", "[ops][rcnetctl]") {
  FakeDaemon d;
  auto r = run_with(d, {"stat"});
  CHECK(r.rc == kExitUsage);
  CHECK_THAT(r.err, Catch::Contains("unknown command 'stat'"));
  CHECK_THAT(r.err, Catch::Contains("did you mean status"));
  r = run_with(d, {"-j", "conections"});
  CHECK(r.rc == kExitUsage);
  CHECK_THAT(r.err, Catch::Contains("did you mean connections?"));
  r = run_with(d, {"frobnicate"});
  CHECK_THAT(r.err, Catch::Contains("unknown command 'frobnicate'"));
  CHECK_THAT(r.err, !Catch::Contains("did you mean"));
  CHECK_THAT(r.err, Catch::Contains("status, rails, peers"));
  r = run_with(d, {});
  CHECK(r.rc == kExitUsage);
  CHECK_THAT(r.err, Catch::Contains("no command given"));
  CHECK(d.calls == 0);
}

TEST_CASE("rcnetctl: --version, and options after the command", "[ops][rcnetctl]") {
  FakeDaemon d;
  auto v = run_with(d, {"--version"});
  CHECK(v.rc == kExitOk);
  CHECK(v.out.starts_with("rcnetctl "));
  CHECK(d.calls == 0);

  json data{{"qps", json::array()}};
  d.reply = ctl::ok_reply(data);
  auto j = run_with(d, {"qps", "-j", "-s", "/tmp/after.sock"});
  REQUIRE(j.rc == kExitOk);
  CHECK(json::parse(j.out) == data);
  CHECK(d.socket == "/tmp/after.sock");
  CHECK(sent(d).cmd == ctl::Command::kQps);
}

TEST_CASE("rcnetctl: bad numbers say what a number must be", "[ops][rcnetctl]") {
  FakeDaemon d;
  for (const char* idle : {"1e400", "abc", "-1", "2000000", "nan"}) {
    auto r = run_with(d, {"reap", "--idle", idle});
    INFO(idle << ": " << r.err);
    CHECK(r.rc == kExitUsage);
    CHECK_THAT(r.err, Catch::Contains("from 0 to 1000000"));
    CHECK(r.err.size() < 200);  // no 300-digit range
  }
  auto big = run_with(d, {"disconnect", "99999999999999999999999"});
  CHECK(big.rc == kExitUsage);
  CHECK_THAT(big.err, Catch::Contains("too large for a node id"));
  auto zero = run_with(d, {"disconnect", "0"});
  CHECK_THAT(zero.err, Catch::Contains("node id 0 is never valid"));
  CHECK(d.calls == 0);
}

TEST_CASE("rcnetctl: an empty or too long -s path is a usage error", "[ops][rcnetctl]") {
  FakeDaemon d;
  auto empty = run_with(d, {"-s", "", "status"});
  CHECK(empty.rc == kExitUsage);
  CHECK_THAT(empty.err, Catch::Contains("empty"));
  auto longer = run_with(d, {"-s", "/" + std::string(200, 'x'), "status"});
  CHECK(longer.rc == kExitUsage);
  CHECK_THAT(longer.err, Catch::Contains("at most 107"));
  CHECK(d.calls == 0);
  // 107 bytes fit.
  CHECK(run_with(d, {"-s", "/" + std::string(106, 'x'), "status"}).rc == kExitOk);
}

TEST_CASE("rcnetctl: the not-running hint names the unit of the socket", "[ops][rcnetctl]") {
  FakeDaemon d;
  d.error = Error::from_errno(ENOENT, "connect");
  auto inst = run_with(d, {"-s", "/run/rcnet/ib1.sock", "status"});
  CHECK(inst.rc == kExitNotRunning);
  CHECK_THAT(inst.err, Catch::Contains("systemctl status rcnetd@ib1\n"));
  auto dflt = run_with(d, {"status"});
  CHECK_THAT(dflt.err, Catch::Contains("systemctl status rcnetd\n"));
  auto other = run_with(d, {"-s", "/tmp/my.sock", "status"});
  CHECK(other.rc == kExitNotRunning);
  CHECK_THAT(other.err, Catch::Contains("ctl.socket /tmp/my.sock"));
}

TEST_CASE("rcnetctl reload: the keys applied, or the refusal and exit 1", "[ops][rcnetctl]") {
  FakeDaemon d;
  d.reply = ctl::ok_reply(ctl::reload_json({"timeouts.idle", "log.level"}));
  auto ok = run_with(d, {"reload"});
  CHECK(ok.rc == kExitOk);
  CHECK(sent(d).cmd == ctl::Command::kReload);
  CHECK(ok.out == "reload applied: timeouts.idle log.level\n");
  d.reply = ctl::ok_reply(ctl::reload_json({}));
  CHECK(run_with(d, {"reload"}).out == "reload applied: no key changed\n");
  d.reply = ctl::error_reply(ctl::ErrorCode::kFailed,
                             "not applied, keeping the running configuration: tun.name needs a "
                             "restart");
  auto refused = run_with(d, {"reload"});
  CHECK(refused.rc == kExitFailed);
  CHECK_THAT(refused.err, Catch::Contains("tun.name needs a restart"));
}

TEST_CASE("rcnetctl route get: asks for the address, prints the route or why none",
          "[ops][rcnetctl]") {
  FakeDaemon d;
  config::Config c;
  c.tun_address = *IpPrefix::parse("10.100.0.1/24");
  c.underlay_prefix = IpPrefix::parse("10.99.0.0/24");
  c.rails[0].underlay_prefix = c.underlay_prefix;
  c.manager.local = Endpoint{*IpAddr::parse("10.99.0.1"), 7471};
  c.rails[0].local = c.manager.local;
  d.reply = ctl::ok_reply(ctl::route_json(*IpAddr::parse("10.100.0.7"), c, cm::Snapshot{}));
  auto r = run_with(d, {"route", "get", "10.100.0.7"});
  REQUIRE(r.rc == kExitOk);
  CHECK(sent(d).address == IpAddr::parse("10.100.0.7"));
  CHECK_THAT(r.out, Catch::Contains("10.100.0.7 via peer 174260231"));
  CHECK_THAT(r.out, Catch::Contains("rail 0 underlay 10.99.0.7:7471"));
  CHECK_THAT(r.out, Catch::Contains("no connection yet"));

  d.reply = ctl::ok_reply(ctl::route_json(*IpAddr::parse("192.168.5.1"), c, cm::Snapshot{}));
  auto none = run_with(d, {"route", "get", "192.168.5.1"});
  CHECK(none.rc == kExitOk);
  CHECK_THAT(none.out, Catch::Contains("192.168.5.1: no route: not on the overlay"));
  CHECK(run_with(d, {"route", "10.100.0.7"}).rc == kExitUsage);
  CHECK(run_with(d, {"route", "get", "nope"}).rc == kExitUsage);
}

TEST_CASE("rcnetctl stats --format prometheus: reasons are labels, histograms, build info",
          "[ops][rcnetctl]") {
  cm::Snapshot s;
  s.counters.rejects_sent_full = 4;
  s.counters.rejects_sent_collision = 1;
  s.counters.drops_queue_full = 7;
  s.counters.drops_oversize = 2;
  s.connect_time.observe(std::chrono::milliseconds(3));
  s.connect_time.observe(std::chrono::milliseconds(700));
  s.teardown_time.observe(std::chrono::microseconds(200));
  json stats = ctl::stats_json(s);
  // The daemon's own counters come after the manager's (ctl_handler.cpp).
  stats["counters"].push_back({{"name", "drops_unmapped"}, {"value", 5}, {"help", "h"}});
  stats["counters"].push_back({{"name", "drops_refused"}, {"value", 2}, {"help", "h"}});
  stats["counters"].push_back(
      {{"name", "ctl_clients_refused_per_uid"}, {"value", 3}, {"help", "h"}});
  stats["counters"].push_back({{"name", "drops_brand_new"}, {"value", 1}, {"help", "h"}});
  json status = ctl::status_json(s);
  status["daemon"] = {{"version", "1.2.3"}, {"start_time_s", 1764150000.25}};
  Transport t = [&](const std::string&, const std::string& line) -> Result<std::string> {
    auto r = ctl::parse_request(line);
    REQUIRE(r.ok());
    return ctl::ok_reply(r->cmd == ctl::Command::kStats ? stats : status);
  };
  std::ostringstream out, err;
  REQUIRE(run(std::vector<std::string>{"stats", "--format", "prometheus"}, t, out, err) == kExitOk);
  const std::string text = out.str();
  INFO(text);
  for (const char* want : {
           "\nrcnet_rejs_sent_total{reason=\"collision\"} 1\n",
           "\nrcnet_rejs_sent_total{reason=\"full\"} 4\n",
           "\nrcnet_dropped_packets_total{reason=\"queue_full\"} 7\n",
           "\nrcnet_dropped_packets_total{reason=\"oversize\"} 2\n",
           "\nrcnet_dropped_packets_total{reason=\"unmapped\"} 5\n",
           // A drop counter this rcnetctl has no row for still joins the family.
           "\nrcnet_dropped_packets_total{reason=\"brand_new\"} 1\n",
           // Counted by the manager already (drops_oversize): not a drop reason.
           "\nrcnet_tun_refused_packets_total 2\n",
           "\nrcnet_ctl_clients_refused_total{reason=\"per_uid\"} 3\n",
           "\n# TYPE rcnet_connect_duration_seconds histogram\n",
           "\nrcnet_connect_duration_seconds_bucket{le=\"0.001\"} 0\n",
           "\nrcnet_connect_duration_seconds_bucket{le=\"0.005\"} 1\n",
           "\nrcnet_connect_duration_seconds_bucket{le=\"1\"} 2\n",
           "\nrcnet_connect_duration_seconds_bucket{le=\"+Inf\"} 2\n",
           "\nrcnet_connect_duration_seconds_sum 0.703000\n",
           "\nrcnet_connect_duration_seconds_count 2\n",
           "\nrcnet_teardown_duration_seconds_bucket{le=\"0.001\"} 1\n",
           "\nrcnet_build_info{version=\"1.2.3\"} 1\n",
           "\nrcnet_start_time_seconds 1764150000.250\n",
       }) {
    CHECK_THAT(text, Catch::Contains(want));
  }
  // No metric of its own per reason, and one TYPE line per family.
  CHECK_THAT(text, !Catch::Contains("rcnet_rejects_sent_full_total"));
  CHECK_THAT(text, !Catch::Contains("rcnet_drops_queue_full_total"));
  CHECK_THAT(text, !Catch::Contains("kind=\"total\""));
  std::istringstream lines(text);
  std::set<std::string> typed;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      CHECK(typed.insert(name).second);
      // <ns>_<what>_<unit>_total for every counter.
      if (line.ends_with(" counter"))
        CHECK(name.ends_with("_total"));
    }
  }
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = "/tmp/rcnet-unit-prom2-" + std::to_string(::getpid()) + ".txt";
    {
      std::ofstream f(path);
      f << text;
    }
    CHECK(std::system(("promtool check metrics < " + path).c_str()) == 0);
    std::remove(path.c_str());
  }
}

}  // namespace rcnetctl_cli_test
