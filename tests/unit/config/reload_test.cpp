// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A reload (config::reload(), then the running manager's reconfigure()):
// what needs a restart and what applies live, row by row.
#include "catch2_compat.hpp"

#include <set>
#include <span>
#include <string>
#include <vector>

#include "cm/manager.hpp"
#include "config/config.hpp"
#include "config/keys.hpp"
#include "config_texts.hpp"
#include "sim/fabric.hpp"

namespace config_reload_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

TEST_CASE("config: restart_required follows each row's reload flag", "[config]") {
  std::set<std::string> seen;
  for (const Change& ch : kChanges) {
    INFO(ch.key);
    const Config a = parse_ok(base(ch));
    const Key* k = find_key(ch.key);
    REQUIRE(k != nullptr);
    seen.insert(ch.key);
    const Config b = parse_ok(changed(ch));
    // Exactly this row changed...
    for (const Key& other : keys()) {
      INFO(other.dotted);
      CHECK((other.get(a) != other.get(b)) == (&other == k));
    }
    // ...and the reload names it iff its row says so.
    const auto want =
        k->apply == Apply::kRestart ? std::vector<std::string>{ch.key} : std::vector<std::string>{};
    CHECK(restart_required(a, b) == want);
    CHECK(restart_required(b, a) == want);
  }
  // node.interface excludes node.address and changes it; a derived
  // tun.address changes with tun.address_from_underlay: both are in
  // tests/unit/config/cluster_test.cpp.
  seen.insert("node.interface");
  seen.insert("tun.address_from_underlay");
  CHECK(seen == table_keys());  // a new row needs its line here
}

TEST_CASE("config: restart_required lists only keys that cannot change live", "[config]") {
  const Config a = parse_ok(kFull);
  CHECK(restart_required(a, a).empty());

  // Everything the daemon can apply live changes: nothing to restart.
  Config live = a;
  live.manager.idle_timeout = 99s;
  live.manager.connect_timeout = 1s;
  live.manager.max_connections = 5;
  live.manager.peer_queue_depth = 5;
  live.manager.retry_count = 1;
  live.manager.rnr_retry_count = 1;
  live.manager.connect_retries = 0;
  live.manager.allowed_peers.clear();
  live.static_peers.clear();
  live.underlay_prefix.reset();
  live.log_level = LogLevel::kTrace;
  live.auth.mode = AuthMode::kRequired;  // the keys are re-read, the mode applied
  live.auth.keys.pop_back();
  CHECK(restart_required(a, live).empty());

  // Everything else is named, in file order.
  const Config b = parse_ok(kMinimal);
  const std::vector<std::string> want = {"node.port",
                                         "tun.name",
                                         "tun.mtu",
                                         "tun.netns",
                                         "rails.mode",
                                         "srq.enabled",
                                         "srq.size",
                                         "srq.limit",
                                         "srq.rq_depth",
                                         "limits.send_slots",
                                         "limits.qp_send_depth",
                                         "transport.ack_timeout",
                                         "transport.rnr_timer",
                                         "transport.framing",
                                         "transport.credits",
                                         "transport.offload",
                                         "transport.poll_us",
                                         "auth.overlay",
                                         "log.target",
                                         "ctl.socket",
                                         "ctl.group"};
  CHECK(restart_required(a, b) == want);

  Config addr = a;
  addr.manager.local.addr = ip("10.99.0.2");
  addr.tun_address.length = 16;
  CHECK(restart_required(a, addr) == std::vector<std::string>{"node.address", "tun.address"});
}

namespace {

struct NoSink final : cm::PacketSink {
  void deliver(NodeId, std::span<const std::byte>) override {}
  void send_capacity(bool) override {}
};

struct Reloaded {
  std::vector<std::string> refused;  // config::reload()'s keys that need a restart
  Config running;                    // the daemon's config after the reload
  Config seen;  // `running` with the manager's fields read back from cm::Manager::config()
};

// What Daemon::reload does with `next` over a daemon started with `start`:
// config::reload(), then, when nothing needs a restart, reconfigure() of the
// running manager (one on the simulated fabric, not started: a reload
// touches nothing start() made).
Reloaded reload_manager(const Config& start, const Config& next) {
  sim::Fabric fabric;
  sim::SimNode& node = fabric.add_node(start.manager.local.addr, sim::Profile::kMlx);
  NoSink sink;
  cm::Manager mgr(start.manager, node.seam(), node.timers(), sink);
  Reloaded out{{}, start, {}};
  out.refused = reload(out.running, next);
  if (out.refused.empty())
    mgr.reconfigure(out.running.manager);
  out.seen = out.running;
  out.seen.manager = mgr.config();
  return out;
}

}  // namespace

TEST_CASE("config: a reload applies every live row, to the running manager too", "[config]") {
  for (const Change& ch : kChanges) {
    INFO(ch.key);
    const Config a = parse_ok(base(ch));
    const Key* k = find_key(ch.key);
    REQUIRE(k != nullptr);
    const Config b = parse_ok(changed(ch));
    const Reloaded r = reload_manager(a, b);
    const bool live = k->apply == Apply::kLive;
    CHECK(r.refused == (live ? std::vector<std::string>{} : std::vector<std::string>{ch.key}));
    // The changed row reads the new value back from what runs (the manager
    // for its fields), unless the reload was refused; every other row keeps
    // the running value.
    for (const Key& other : keys()) {
      INFO(other.dotted);
      CHECK(other.get(r.seen) == other.get(&other == k && live ? b : a));
      CHECK(other.get(r.running) == other.get(&other == k && live ? b : a));
    }
  }
}

TEST_CASE("config: limits.max_connections = 0 reloads to 128 without SRQ, 4096 with", "[config]") {
  // kFull: srq.enabled = false, max_connections = 100.
  const Reloaded no_srq = reload_manager(
      parse_ok(kFull), parse_ok(changed({"", "\nmax_connections = 100", "\nmax_connections = 0"})));
  CHECK(no_srq.refused.empty());
  CHECK(no_srq.running.manager.max_connections == 0);  // as the file writes it
  CHECK(no_srq.seen.manager.max_connections == 128);
  const Reloaded srq =
      reload_manager(parse_ok(with("[limits]\nmax_connections = 7")), parse_ok(kMinimal));
  CHECK(srq.refused.empty());
  CHECK(srq.running.manager.max_connections == 0);
  CHECK(srq.seen.manager.max_connections == 4096);
}

}  // namespace config_reload_test
