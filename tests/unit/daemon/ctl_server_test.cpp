// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The ctl server on a real loop and socket: replies, limits and timeouts,
// the socket file, and the lockout bounds per uid (issue 11).
#include "ctl_server.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "catch2_compat.hpp"

#include "ctl_server_fixture.hpp"

namespace daemon_ctl_server_test {
using namespace rcnet;
using namespace rcnet::daemon;
using namespace rcnet::daemon::test;

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

}  // namespace daemon_ctl_server_test
