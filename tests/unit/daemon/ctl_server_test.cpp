// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl_server.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <set>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "config/keys.hpp"

namespace daemon_ctl_server_test {
using namespace rcnet;
using namespace rcnet::daemon;
using ctl::json;

namespace {

class FakeBackend final : public CtlBackend {
 public:
  FakeBackend() {
    snap.node = node_id_for(*IpAddr::parse("10.99.0.1"));
    snap.device = "rxe_1";
    cm::PeerSnapshot p;
    p.node = node_id_for(*IpAddr::parse("10.99.0.2"));
    p.underlay = Endpoint{*IpAddr::parse("10.99.0.2"), 7471};
    p.conn_id = 7;
    snap.peers.push_back(p);
    cm::QpSnapshot q;
    q.id = 7;
    q.peer_node = p.node;
    q.peer_addr = p.underlay;
    q.qpn = 17;
    q.remote_qpn = 18;
    q.state = cm::ConnState::kEstablished;
    q.in_service = true;
    snap.qps.push_back(q);
    snap.counters.connects_established = 3;
    cfg.manager.idle_timeout = std::chrono::seconds(10);
  }
  cm::Snapshot snapshot() const override { return snap; }
  json daemon_status() const override { return {{"version", "test"}, {"pid", 42}}; }
  json daemon_counters() const override {
    return json::array({{{"name", "tun_rx_packets"}, {"value", 5}, {"help", "h"}}});
  }
  const config::Config& config() const override { return cfg; }
  Result<json> audit() override {
    if (audit_error)
      return Error::from_errno(EPROTONOSUPPORT, "RDMA netlink: connect");
    return json{{"ok", true}};
  }
  bool disconnect(NodeId node, std::string_view) override {
    disconnected.push_back(node);
    for (const auto& p : snap.peers)
      if (p.node == node)
        return true;
    return false;
  }
  std::size_t reap(Duration idle) override {
    reaped_with.push_back(idle);
    return 2;
  }
  config::LogLevel log_level() const override { return level; }
  void set_log_level(config::LogLevel l) override { level = l; }

  cm::Snapshot snap;
  config::Config cfg;
  bool audit_error = false;
  std::vector<NodeId> disconnected;
  std::vector<Duration> reaped_with;
  config::LogLevel level = config::LogLevel::kInfo;
};

json reply_of(const HandledRequest& h) {
  REQUIRE(!h.reply.empty());
  REQUIRE(h.reply.back() == '\n');
  auto r = json::parse(h.reply);
  return r;
}

std::string req(const std::string& cmd, const json& args = nullptr) {
  json j{{"v", ctl::kVersion}, {"cmd", cmd}};
  if (!args.is_null())
    j["args"] = args;
  return j.dump() + "\n";
}

}  // namespace

TEST_CASE("ctl handler: read commands answer with the encoders' data", "[ops][ctl]") {
  FakeBackend b;
  auto st = reply_of(handle_request(req("status"), ctl::Access::kRead, b));
  CHECK(st["ok"] == true);
  CHECK(st["data"]["device"] == "rxe_1");
  CHECK(st["data"]["established"] == 1);
  CHECK(st["data"]["daemon"]["version"] == "test");

  auto qps = reply_of(handle_request(req("qps"), ctl::Access::kRead, b));
  REQUIRE(qps["data"]["qps"].size() == 1);
  CHECK(qps["data"]["qps"][0]["qpn"] == 17);

  CtlCounters cc;
  cc.ctl_requests = 9;
  auto stats = reply_of(handle_request(req("stats"), ctl::Access::kRead, b, &cc));
  std::map<std::string, std::uint64_t> byname;
  for (const auto& c : stats["data"]["counters"])
    byname[c["name"].get<std::string>()] = c["value"].get<std::uint64_t>();
  CHECK(byname.at("connects_established") == 3);
  CHECK(byname.at("tun_rx_packets") == 5);
  CHECK(byname.at("ctl_requests") == 9);
}

TEST_CASE("ctl handler: config answers with the key table's dotted keys", "[ops][ctl]") {
  FakeBackend b;
  auto r = reply_of(handle_request(req("config"), ctl::Access::kRead, b));
  REQUIRE(r["ok"] == true);
  const json& d = r["data"];
  std::set<std::string> names, rows;
  for (auto it = d.begin(); it != d.end(); ++it)
    names.insert(it.key());
  for (const config::Key& k : config::keys())
    rows.emplace(k.dotted);
  CHECK(names == rows);
  CHECK(d["timeouts.idle"] == "10s");
  CHECK(d["limits.send_slots"] == b.cfg.manager.send_slots);
}

TEST_CASE("ctl handler: credentials decide, before the request is even parsed", "[ops][ctl]") {
  FakeBackend b;
  auto h = handle_request(req("status"), ctl::Access::kDenied, b);
  CHECK(h.refused);
  auto j = reply_of(h);
  CHECK(j["ok"] == false);
  CHECK(j["error"]["code"] == "forbidden");
  CHECK(j["error"]["message"].get<std::string>().find("permission denied") != std::string::npos);
  // Garbage from a stranger is refused the same way: nothing about parsing leaks.
  CHECK(reply_of(handle_request("{nope", ctl::Access::kDenied, b))["error"]["code"] == "forbidden");

  auto ro = reply_of(handle_request(req("reap"), ctl::Access::kRead, b));
  CHECK(ro["error"]["code"] == "forbidden");
  CHECK(ro["error"]["message"].get<std::string>().find("root") != std::string::npos);
  CHECK(b.reaped_with.empty());
  auto dis =
      reply_of(handle_request(req("disconnect", {{"peer", "10.99.0.2"}}), ctl::Access::kRead, b));
  CHECK(dis["error"]["code"] == "forbidden");
  CHECK(b.disconnected.empty());
}

TEST_CASE("ctl handler: mutating commands as admin", "[ops][ctl]") {
  FakeBackend b;
  auto r = reply_of(handle_request(req("reap"), ctl::Access::kAdmin, b));
  CHECK(r["data"]["reaped"] == 2);
  REQUIRE(b.reaped_with.size() == 1);
  CHECK(b.reaped_with[0] == std::chrono::seconds(10));  // timeouts.idle
  reply_of(handle_request(req("reap", {{"idle_s", 0}}), ctl::Access::kAdmin, b));
  CHECK(b.reaped_with.at(1) == Duration::zero());

  const NodeId peer = node_id_for(*IpAddr::parse("10.99.0.2"));
  auto d =
      reply_of(handle_request(req("disconnect", {{"peer", "10.99.0.2"}}), ctl::Access::kAdmin, b));
  CHECK(d["ok"] == true);
  CHECK(d["data"]["disconnected"] == peer);
  auto d2 = reply_of(handle_request(req("disconnect", {{"peer", peer}}), ctl::Access::kAdmin, b));
  CHECK(d2["ok"] == true);
  auto unknown =
      reply_of(handle_request(req("disconnect", {{"peer", "10.99.0.9"}}), ctl::Access::kAdmin, b));
  CHECK(unknown["error"]["code"] == "failed");
  CHECK(unknown["error"]["message"].get<std::string>().find("10.99.0.9") != std::string::npos);

  auto ll =
      reply_of(handle_request(req("log-level", {{"level", "debug"}}), ctl::Access::kAdmin, b));
  CHECK(ll["data"]["previous"] == "info");
  CHECK(ll["data"]["level"] == "debug");
  CHECK(b.level == config::LogLevel::kDebug);
}

TEST_CASE("ctl handler: disconnect takes the overlay address operators ping", "[ops][ctl]") {
  FakeBackend b;
  b.snap.peers[0].overlay = *IpAddr::parse("10.100.0.2");
  const NodeId peer = node_id_for(*IpAddr::parse("10.99.0.2"));
  auto d =
      reply_of(handle_request(req("disconnect", {{"peer", "10.100.0.2"}}), ctl::Access::kAdmin, b));
  CHECK(d["ok"] == true);
  CHECK(d["data"]["disconnected"] == peer);
  // Not connected yet: the config's mapping (peers.underlay_prefix) names it.
  b.cfg.tun_address = *IpPrefix::parse("10.100.0.1/24");
  b.cfg.underlay_prefix = IpPrefix::parse("10.99.0.0/24");
  b.cfg.rails[0].underlay_prefix = b.cfg.underlay_prefix;
  b.snap.peers.push_back(b.snap.peers[0]);
  b.snap.peers[1].node = node_id_for(*IpAddr::parse("10.99.0.3"));
  b.snap.peers[1].underlay.addr = *IpAddr::parse("10.99.0.3");
  b.snap.peers[1].overlay = IpAddr{};
  auto d3 =
      reply_of(handle_request(req("disconnect", {{"peer", "10.100.0.3"}}), ctl::Access::kAdmin, b));
  CHECK(d3["ok"] == true);
  CHECK(b.disconnected.back() == b.snap.peers[1].node);
}

TEST_CASE("ctl handler: reload says which keys changed, or why nothing was applied", "[ops][ctl]") {
  config::Config running;
  TunCounters tun;
  Result<void> outcome;
  config::Config next = running;
  next.manager.idle_timeout = std::chrono::seconds(42);
  next.log_level = config::LogLevel::kDebug;
  auto backend = make_daemon_backend({
      .rails = {},
      .snapshot = [] { return cm::Snapshot{}; },
      .config = running,
      .tun_counters = tun,
      .config_path = "/etc/rcnet/rcnetd.toml",
      .start_time = Clock::now(),
      .status_text = [] { return std::string(); },
      .reload = [&]() -> Result<void> {
        if (!outcome)
          return outcome;
        running = next;
        return {};
      },
  });
  auto ok = reply_of(handle_request(req("reload"), ctl::Access::kAdmin, *backend));
  REQUIRE(ok["ok"] == true);
  CHECK(ok["data"]["applied"] == json::array({"timeouts.idle", "log.level"}));
  CHECK(running.manager.idle_timeout == std::chrono::seconds(42));
  // Nothing changed the second time.
  ok = reply_of(handle_request(req("reload"), ctl::Access::kAdmin, *backend));
  CHECK(ok["data"]["applied"] == json::array());
  // Refused: the daemon's reason, as a failed reply.
  outcome =
      Error::invalid("not applied, keeping the running configuration: tun.name needs a restart");
  auto refused = reply_of(handle_request(req("reload"), ctl::Access::kAdmin, *backend));
  CHECK(refused["ok"] == false);
  CHECK(refused["error"]["code"] == "failed");
  CHECK(refused["error"]["message"].get<std::string>().find("tun.name needs a restart") !=
        std::string::npos);
  // Root only.
  auto ro = reply_of(handle_request(req("reload"), ctl::Access::kRead, *backend));
  CHECK(ro["error"]["code"] == "forbidden");
}

TEST_CASE("ctl handler: route get answers from the config's mapping and the peers", "[ops][ctl]") {
  FakeBackend b;
  b.cfg.tun_address = *IpPrefix::parse("10.100.0.1/24");
  b.cfg.underlay_prefix = IpPrefix::parse("10.99.0.0/24");
  b.cfg.rails[0].underlay_prefix = b.cfg.underlay_prefix;
  b.cfg.manager.local = Endpoint{*IpAddr::parse("10.99.0.1"), 7471};
  b.cfg.rails[0].local = b.cfg.manager.local;
  b.snap.peers[0].overlay = *IpAddr::parse("10.100.0.2");
  auto r =
      reply_of(handle_request(req("route", {{"address", "10.100.0.2"}}), ctl::Access::kRead, b));
  REQUIRE(r["ok"] == true);
  CHECK(r["data"]["node"] == node_id_for(*IpAddr::parse("10.99.0.2")));
  CHECK(r["data"]["rail"] == 0);
  CHECK(r["data"]["underlay"] == "10.99.0.2:7471");
  CHECK(r["data"]["state"] == "ESTABLISHED");
  CHECK(r["data"]["reason"].is_null());
  auto own =
      reply_of(handle_request(req("route", {{"address", "10.100.0.1"}}), ctl::Access::kRead, b));
  CHECK(own["data"]["node"].is_null());
  CHECK(own["data"]["reason"].get<std::string>().find("own overlay") != std::string::npos);
  auto off =
      reply_of(handle_request(req("route", {{"address", "192.168.5.1"}}), ctl::Access::kRead, b));
  CHECK(off["data"]["reason"].get<std::string>().find("not on the overlay") != std::string::npos);
  b.cfg.underlay_prefix.reset();
  b.cfg.rails[0].underlay_prefix.reset();
  auto unmapped =
      reply_of(handle_request(req("route", {{"address", "10.100.0.9"}}), ctl::Access::kRead, b));
  CHECK(unmapped["data"]["reason"].get<std::string>().find("no peer") != std::string::npos);
  CHECK(reply_of(handle_request(req("route", {{"address", "x"}}), ctl::Access::kRead,
                                b))["error"]["code"] == "bad_request");
}

TEST_CASE("ctl handler: bad requests and a failing audit get error replies", "[ops][ctl]") {
  FakeBackend b;
  auto h = handle_request("not json\n", ctl::Access::kAdmin, b);
  CHECK(h.refused);
  CHECK(reply_of(h)["error"]["code"] == "bad_request");
  CHECK(reply_of(handle_request(req("frobnicate"), ctl::Access::kAdmin, b))["error"]["code"] ==
        "unknown_command");
  CHECK(reply_of(handle_request(req("reap", {{"idle_s", -1}}), ctl::Access::kAdmin,
                                b))["error"]["code"] == "bad_request");
  CHECK(b.reaped_with.empty());
  b.audit_error = true;
  auto a = reply_of(handle_request(req("audit"), ctl::Access::kRead, b));
  CHECK(a["error"]["code"] == "failed");
  CHECK(a["error"]["message"].get<std::string>().find("RDMA netlink") != std::string::npos);
}

TEST_CASE("peer credentials of a socketpair are our own, groups included", "[ops][ctl]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  auto c = peer_credentials(a.get());
  REQUIRE(c.ok());
  CHECK(c->pid == getpid());
  CHECK(c->uid == geteuid());
  REQUIRE_FALSE(c->groups.empty());
  CHECK(c->groups.front() == getegid());
  std::vector<gid_t> mine(static_cast<std::size_t>(getgroups(0, nullptr)));
  REQUIRE(getgroups(static_cast<int>(mine.size()), mine.data()) >= 0);
  for (gid_t g : mine)
    CHECK(std::find(c->groups.begin(), c->groups.end(), g) != c->groups.end());
  CHECK(lookup_group("root") == std::optional<gid_t>(0));
  CHECK_FALSE(lookup_group("no-such-group-rcnet-test").has_value());
}

// --- The server on a real loop and socket ---------------------------------------------

namespace {

struct ServerFixture {
  ServerFixture(CtlServerOptions o = {}) {
    dir = std::filesystem::temp_directory_path() /
          ("rcnet-ctl-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    path = (dir / "sub" / "ctl.sock").string();
    o.socket_path = path;
    if (o.group.empty())
      o.group = "no-such-group-rcnet-test";
    // Credentials seam: the next accepted client gets the next queued uid;
    // with none queued, its real credentials.
    o.credentials = [this](int fd) -> Result<PeerCred> {
      auto c = peer_credentials(fd);
      if (c && !uids.empty()) {
        c->uid = uids.front();
        uids.pop_front();
      }
      return c;
    };
    opts = o;
    auto l = EventLoop::create();
    REQUIRE(l.ok());
    loop.emplace(std::move(*l));
    auto be = std::make_unique<FakeBackend>();
    backend = be.get();
    auto s = CtlServer::create(*loop, std::move(be), opts);
    if (!s)
      FAIL(s.error().message());
    server = std::move(*s);
  }
  ~ServerFixture() {
    server.reset();
    std::filesystem::remove_all(dir);
  }
  UniqueFd connect_client() const {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    return fd;
  }
  // Connects as `uid` (through the credentials seam) and lets the server
  // accept it, so that the listen backlog never fills.
  UniqueFd connect_as(uid_t uid) {
    uids.push_back(uid);
    UniqueFd fd = connect_client();
    for (int k = 0; k < 10 && !uids.empty(); ++k)
      REQUIRE(loop->run_once(std::chrono::milliseconds(20)).ok());
    REQUIRE(uids.empty());
    return fd;
  }
  // Runs the loop until `fd` has a full line or EOF; returns what was read.
  // eof is set when the server closed the connection.
  std::string read_reply(int fd, bool& eof, int iterations = 200) {
    std::string got;
    eof = false;
    for (int k = 0; k < iterations; ++k) {
      REQUIRE(loop->run_once(std::chrono::milliseconds(20)).ok());
      char buf[4096];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
          got.append(buf, static_cast<std::size_t>(n));
          continue;
        }
        if (n == 0)
          eof = true;
        break;
      }
      if (eof)
        return got;
    }
    return got;
  }
  static inline int counter = 0;
  std::filesystem::path dir;
  std::string path;
  CtlServerOptions opts;
  std::optional<EventLoop> loop;
  FakeBackend* backend = nullptr;
  std::unique_ptr<CtlServer> server;
  std::deque<uid_t> uids;
};

}  // namespace

TEST_CASE("ctl server: a request line gets its reply; the socket is 0660", "[ops][ctl][socket]") {
  int served = 0;
  CtlServerOptions o;
  o.served = [&served] { ++served; };
  ServerFixture f(o);
  struct stat st {};
  REQUIRE(::stat(f.path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0660);
  struct stat dst {};
  REQUIRE(::stat((f.dir / "sub").c_str(), &dst) == 0);
  CHECK((dst.st_mode & 0777) == 0755);

  UniqueFd c = f.connect_client();
  const std::string r1 = req("status") + req("qps");
  REQUIRE(::write(c.get(), r1.data(), r1.size()) == static_cast<ssize_t>(r1.size()));
  ::shutdown(c.get(), SHUT_WR);
  bool eof = false;
  const std::string got = f.read_reply(c.get(), eof);
  CHECK(eof);  // replies flushed, then closed after the client's shutdown
  const auto nl = got.find('\n');
  REQUIRE(nl != std::string::npos);
  auto first = ctl::parse_reply(got.substr(0, nl + 1));
  REQUIRE(first.ok());
  // The test runs as root (admin) or as a user without the group (denied).
  if (geteuid() == 0) {
    CHECK(first->ok);
    CHECK(first->data["device"] == "rxe_1");
    auto second = ctl::parse_reply(got.substr(nl + 1));
    REQUIRE(second.ok());
    CHECK(second->data["qps"].size() == 1);
  } else {
    CHECK(first->code == ctl::ErrorCode::kForbidden);
  }
  CHECK(f.server->counters().ctl_requests == 2);
  CHECK(served == 2);  // rcnetd's heap trim is told of each answered request
}

TEST_CASE("ctl server: an oversized request is answered once, then closed", "[ops][ctl][socket]") {
  ServerFixture f;
  UniqueFd c = f.connect_client();
  std::string big(ctl::kMaxRequestBytes + 100, 'x');
  std::size_t off = 0;
  bool eof = false;
  std::string got;
  // The client socket is non-blocking: write what fits, let the server read.
  for (int k = 0; k < 200 && off < big.size(); ++k) {
    const ssize_t n = ::write(c.get(), big.data() + off, big.size() - off);
    if (n > 0)
      off += static_cast<std::size_t>(n);
    got += f.read_reply(c.get(), eof, 1);
    if (eof)
      break;
  }
  if (!eof)
    got += f.read_reply(c.get(), eof);
  CHECK(eof);
  auto r = ctl::parse_reply(got);
  REQUIRE(r.ok());
  CHECK(r->code == ctl::ErrorCode::kBadRequest);
  CHECK(r->message.find("longer than") != std::string::npos);
  CHECK(f.server->counters().ctl_clients_dropped == 1);
}

TEST_CASE("ctl server: a silent client is closed after the request timeout", "[ops][ctl][socket]") {
  CtlServerOptions o;
  o.request_timeout = std::chrono::milliseconds(50);
  ServerFixture f(o);
  UniqueFd c = f.connect_client();
  bool eof = false;
  const std::string got = f.read_reply(c.get(), eof);
  CHECK(eof);
  CHECK(got.empty());
  CHECK(f.server->counters().ctl_clients_timed_out == 1);
  CHECK(f.server->client_count() == 0);
}

TEST_CASE("ctl server: beyond max_clients a client is told and closed", "[ops][ctl][socket]") {
  CtlServerOptions o;
  o.max_clients = 1;
  ServerFixture f(o);
  UniqueFd c1 = f.connect_client();
  // Halfway through a request: not idle, so it does not give way.
  const std::string head = "{\"v\":1,";
  REQUIRE(::write(c1.get(), head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  bool eof = false;
  f.read_reply(c1.get(), eof, 3);
  CHECK_FALSE(eof);
  CHECK(f.server->client_count() == 1);
  UniqueFd c2 = f.connect_client();
  const std::string got = f.read_reply(c2.get(), eof);
  CHECK(eof);
  auto r = ctl::parse_reply(got);
  REQUIRE(r.ok());
  CHECK(r->message.find("too many") != std::string::npos);
  CHECK(f.server->counters().ctl_clients_refused_full == 1);
}

TEST_CASE("ctl server: a stale socket file is replaced, a live one refused", "[ops][ctl][socket]") {
  ServerFixture f;
  // A second server on the same path while the first listens: EADDRINUSE.
  auto l = EventLoop::create();
  REQUIRE(l.ok());
  auto again = CtlServer::create(*l, std::make_unique<FakeBackend>(), f.opts);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == std::errc::address_in_use);
  // Leave a dead socket file behind (bound, never listening): it is replaced.
  f.server.reset();
  {
    UniqueFd s(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f.path.c_str());
    REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  }
  auto fresh = CtlServer::create(*l, std::make_unique<FakeBackend>(), f.opts);
  REQUIRE(fresh.ok());
  fresh->reset();
  // The server removes its own socket file when it goes.
  CHECK_FALSE(std::filesystem::exists(f.path));
}

// --- Lockout (issue 11) ------------------------------------------------------------------

namespace {

// Reads a refused connection's one line; it must be a "busy" error, then EOF.
ctl::Reply refused_reply(ServerFixture& f, int fd) {
  bool eof = false;
  const std::string got = f.read_reply(fd, eof);
  CHECK(eof);
  auto r = ctl::parse_reply(got);
  REQUIRE(r.ok());
  CHECK_FALSE(r->ok);
  CHECK(r->code == ctl::ErrorCode::kBusy);
  return *r;
}

}  // namespace

TEST_CASE("ctl server: idle connections of other users cannot lock root out",
          "[ops][ctl][socket][lockout]") {
  CtlServerOptions o;  // defaults: 64 slots, 8 for root only, 16 per uid
  // Long timeouts: the held connections must stay, however slow the machine.
  o.request_timeout = std::chrono::seconds(60);
  o.first_request_timeout = std::chrono::seconds(60);
  ServerFixture f(o);
  std::vector<UniqueFd> held;
  for (int i = 0; i < 100; ++i)
    held.push_back(f.connect_as(1000));
  CHECK(f.server->client_count() == 16);
  CHECK(f.server->counters().ctl_clients_refused_per_uid == 84);
  const ctl::Reply r = refused_reply(f, held.back().get());
  CHECK(r.message.find("uid 1000") != std::string::npos);
  // More users fill every slot but root's; beyond, each new one closes the
  // connection idle the longest (uid 1000's first ones) instead of being refused.
  for (uid_t uid : {1001u, 1002u, 1003u}) {
    for (int i = 0; i < 16; ++i)
      held.push_back(f.connect_as(uid));
  }
  CHECK(f.server->client_count() == 56);
  CHECK(f.server->counters().ctl_clients_refused_reserved == 0);
  CHECK(f.server->counters().ctl_clients_evicted == 8);
  bool evicted_eof = false;
  CHECK(f.read_reply(held[0].get(), evicted_eof, 3).empty());
  CHECK(evicted_eof);  // the oldest: closed without a line
  CHECK(f.read_reply(held[7].get(), evicted_eof, 3).empty());
  CHECK(evicted_eof);
  CHECK(f.read_reply(held[8].get(), evicted_eof, 3).empty());
  CHECK_FALSE(evicted_eof);  // the ninth stays

  // Root's status is answered at once: no waiting for a timeout to free a slot.
  UniqueFd root = f.connect_as(0);
  const std::string q = req("status");
  REQUIRE(::write(root.get(), q.data(), q.size()) == static_cast<ssize_t>(q.size()));
  ::shutdown(root.get(), SHUT_WR);
  const auto t0 = std::chrono::steady_clock::now();
  bool eof = false;
  const std::string got = f.read_reply(root.get(), eof);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
  auto reply = ctl::parse_reply(got);
  REQUIRE(reply.ok());
  CHECK(reply->ok);
  CHECK(reply->data["device"] == "rxe_1");
  CHECK(f.server->counters().ctl_clients_timed_out == 0);
}

TEST_CASE("ctl server: a non-root uid holds at most max_clients_per_uid",
          "[ops][ctl][socket][lockout]") {
  CtlServerOptions o;
  o.max_clients_per_uid = 3;
  o.request_timeout = std::chrono::seconds(60);
  o.first_request_timeout = std::chrono::seconds(60);
  ServerFixture f(o);
  std::vector<UniqueFd> mine;
  for (int i = 0; i < 5; ++i)
    mine.push_back(f.connect_as(1000));
  CHECK(f.server->client_count() == 3);
  CHECK(f.server->counters().ctl_clients_refused_per_uid == 2);
  CHECK(refused_reply(f, mine[3].get()).message.find("at most 3") != std::string::npos);
  refused_reply(f, mine[4].get());
  // Another user is not affected, and root has no per-uid cap.
  UniqueFd other = f.connect_as(1001);
  for (int i = 0; i < 5; ++i)
    mine.push_back(f.connect_as(0));
  CHECK(f.server->client_count() == 9);
  CHECK(f.server->counters().ctl_clients_refused_per_uid == 2);
  // A slot given back can be taken again.
  mine[0].reset();
  bool eof = false;
  f.read_reply(other.get(), eof, 3);
  CHECK(f.server->client_count() == 8);
  UniqueFd again = f.connect_as(1000);
  CHECK(f.server->client_count() == 9);
}

TEST_CASE("ctl server: a connection that sends nothing is closed after first_request_timeout",
          "[ops][ctl][socket][lockout]") {
  CtlServerOptions o;
  o.request_timeout = std::chrono::seconds(5);
  o.first_request_timeout = std::chrono::milliseconds(100);
  ServerFixture f(o);
  UniqueFd silent = f.connect_client();
  UniqueFd partial = f.connect_client();
  const std::string head = "{\"v\":1,";
  REQUIRE(::write(partial.get(), head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  const auto t0 = std::chrono::steady_clock::now();
  bool eof = false;
  const std::string got = f.read_reply(silent.get(), eof, 50);  // up to 1 s
  CHECK(eof);
  CHECK(got.empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(900));
  CHECK(f.server->counters().ctl_clients_timed_out_idle == 1);
  CHECK(f.server->client_count() == 1);
  // The partial request still has the full request timeout: finish it.
  f.read_reply(partial.get(), eof, 10);
  CHECK_FALSE(eof);
  const std::string tail = "\"cmd\":\"srq\"}\n";
  REQUIRE(::write(partial.get(), tail.data(), tail.size()) == static_cast<ssize_t>(tail.size()));
  const std::string r = f.read_reply(partial.get(), eof, 5);
  CHECK(ctl::parse_reply(r).ok());
  CHECK(f.server->counters().ctl_clients_timed_out == 1);
}

// --- Monitor (issue 12) ----------------------------------------------------------------

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

}  // namespace daemon_ctl_server_test
