// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The ctl request handler (ctl_handler.hpp) on a fake backend: what each
// command answers, who may ask it, and the error replies; and the peer
// credentials it decides by.
#include "ctl_server.hpp"

#include <sys/socket.h>

#include <set>
#include <string>
#include <vector>

#include "catch2_compat.hpp"

#include "config/keys.hpp"
#include "ctl_server_fixture.hpp"

namespace daemon_ctl_handler_test {
using namespace rcnet;
using namespace rcnet::daemon;
using namespace rcnet::daemon::test;
using ctl::json;

namespace {

json reply_of(const HandledRequest& h) {
  REQUIRE(!h.reply.empty());
  REQUIRE(h.reply.back() == '\n');
  auto r = json::parse(h.reply);
  return r;
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

}  // namespace daemon_ctl_handler_test
