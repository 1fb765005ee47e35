// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What the ctl server's tests share (ctl_handler_test.cpp,
// ctl_server_test.cpp, ctl_monitor_test.cpp): a backend with one peer and
// one QP that records what it was asked to do, a request line, and a
// server on a real loop and socket in a directory of its own, whose
// clients' uids the test chooses.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catch2_compat.hpp"

#include "ctl_server.hpp"

namespace rcnet::daemon::test {

using ctl::json;

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

inline std::string req(const std::string& cmd, const json& args = nullptr) {
  json j{{"v", ctl::kVersion}, {"cmd", cmd}};
  if (!args.is_null())
    j["args"] = args;
  return j.dump() + "\n";
}

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

// Reads a refused connection's one line; it must be a "busy" error, then EOF.
inline ctl::Reply refused_reply(ServerFixture& f, int fd) {
  bool eof = false;
  const std::string got = f.read_reply(fd, eof);
  CHECK(eof);
  auto r = ctl::parse_reply(got);
  REQUIRE(r.ok());
  CHECK_FALSE(r->ok);
  CHECK(r->code == ctl::ErrorCode::kBusy);
  return *r;
}

}  // namespace rcnet::daemon::test
