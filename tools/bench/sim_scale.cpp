// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-sim: the connection manager at scale on the simulated fabric
// (no lab, no device). One "hub" manager opens --connections connections
// (one per client node, each client its own manager) on one SRQ, idles, moves
// --packets packets over them, and shuts down. For each phase it reports:
//   - wall time of the whole process (steady_clock; simulator + all managers),
//   - the hub manager's own heap (operator new bytes charged by meter.hpp),
//   - process max RSS deltas (getrusage(2) ru_maxrss: simulator and every
//     manager together),
//   - calls into the hub manager ("events") and its allocations,
// and, when run under valgrind --tool=callgrind --collect-atstart=no, one
// callgrind dump per phase holding only the instructions of the parts named
// by --measure (tools/bench/sim-callgrind.sh divides them per connection,
// per event and per packet).
//
// --inbound turns the setup phase into a storm: every client sends its
// first packet to the hub at one instant, so the hub takes --connections
// REQs at once, answering those beyond --hub-pending (its
// limits.max_pending_setups, 0 = no limit) with REJ busy. --cm-event-cost-us
// makes every node read its rdma_cm events that slowly (sim Timing), as a
// loaded hub does; the summary then also counts the clients' connect
// failures and dropped packets, the REJs busy and the REQs the hub's CM
// dropped over its listen backlog.
//
// Exit status: 0 when every phase reached its goal (all connections
// ESTABLISHED, every packet delivered, the hub stopped with no QP left),
// 1 otherwise, 2 on bad arguments. The JSON summary goes to stdout and
// --json FILE.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cm/manager.hpp"
#include "common/args.hpp"
#include "common/clock.hpp"
#include "common/report.hpp"
#include "meter.hpp"
#include "metered.hpp"
#include "sim/cluster.hpp"
#include "sim/fabric.hpp"

using namespace rcnet;
using bench::Part;
using bench::Scope;

namespace {

// What the TUN device would have received: counts only.
struct CountingSink final : cm::PacketSink {
  std::uint64_t packets = 0, bytes = 0, capacity_off = 0;
  void deliver(NodeId, std::span<const std::byte> p) override {
    ++packets;
    bytes += p.size();
  }
  void send_capacity(bool available) override {
    if (!available)
      ++capacity_off;
  }
};

// A host of the benchmark: its manager runs on the metered seam and timers,
// and every event or timer expiry the fabric hands it is charged to `part`
// (metered.hpp); what the TUN device would have received is counted.
class BenchNode final : public bench::MeteredNode {
 public:
  explicit BenchNode(Part p) : MeteredNode(p) {}
  CountingSink sink;
  cm::PacketSink& packet_sink() override { return sink; }
};

// The fabric's work for a new host is the simulator's.
class BenchCluster final : public sim::Cluster {
 public:
  using sim::Cluster::Cluster;
  BenchNode& at(std::size_t i) { return static_cast<BenchNode&>(node(i)); }

 protected:
  sim::SimNode& add_host(const IpAddr& addr) override {
    Scope s(Part::kSim);
    return sim::Cluster::add_host(addr);
  }
};

struct Options {
  std::uint32_t connections = 16000;
  std::uint64_t packets = 100000;
  std::uint32_t packet_size = 1024;
  std::uint32_t data_peers = 1;
  std::uint32_t batch = 32;
  int idle_s = 30;
  std::string profile = "mlx";
  std::string measure = "hub";
  std::string json_out;
  std::string log_level = "warn";
  bool time_split = false;
  bool inbound = false;
  std::uint32_t hub_pending = 256;
  double cm_event_cost_us = 0;
  // The hub is configured as rcnetd's defaults (lib/config/rcnetd.example.toml)
  std::uint32_t hub_mtu = 65520, hub_srq = 512, hub_slots = 256;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--connections", o.connections, "client nodes, one connection each")
      ->check(CLI::Range(1u, 60000u));
  app.add_option("--packets", o.packets, "packets of the data phase")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  app.add_option("--packet-size", o.packet_size, "bytes")->check(CLI::Range(8u, 2048u));
  app.add_option("--data-peers", o.data_peers, "clients the data phase sends to, round robin")
      ->check(CLI::Range(1u, 60000u));
  app.add_option("--batch", o.batch, "packets between fabric runs")->check(CLI::Range(1u, 64u));
  app.add_option("--idle-s", o.idle_s, "virtual seconds of the idle phase")
      ->check(CLI::Range(0, 3600));
  app.add_option("--profile", o.profile, "simulated HCA")
      ->check(CLI::IsMember({"mlx", "ehca", "rxe"}));
  app.add_option("--measure", o.measure, "parts callgrind counts")
      ->check(CLI::IsMember({"hub", "clients", "managers", "sim", "all", "none"}));
  app.add_option("--hub-mtu", o.hub_mtu, "bytes")->check(CLI::Range(2048u, 65520u));
  app.add_option("--hub-srq", o.hub_srq, "SRQ size")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--hub-slots", o.hub_slots, "send slots")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--json", o.json_out, "also write the summary to FILE");
  app.add_option("--log-level", o.log_level, "spdlog level");
  app.add_flag("--inbound", o.inbound,
               "setup: every client connects to the hub at one instant (a storm)");
  app.add_option("--hub-pending", o.hub_pending, "hub's max_pending_setups, 0 = no limit")
      ->check(CLI::Range(0u, 65536u));
  app.add_option("--cm-event-cost-us", o.cm_event_cost_us,
                 "virtual time a node takes per rdma_cm event it reads")
      ->check(CLI::Range(0.0, 100000.0));
  app.add_flag("--time-split", o.time_split,
               "charge wall time to each part (two clock reads per crossing)");
}

// Which parts callgrind counts (--measure).
unsigned measured_parts(const std::string& measure) {
  auto bit = [](Part p) { return 1u << static_cast<unsigned>(p); };
  if (measure == "hub")
    return bit(Part::kHub);
  if (measure == "clients")
    return bit(Part::kClients);
  if (measure == "managers")
    return bit(Part::kHub) | bit(Part::kClients);
  if (measure == "sim")
    return bit(Part::kSim);
  if (measure == "all")
    return bit(Part::kHub) | bit(Part::kClients) | bit(Part::kSim) | bit(Part::kDriver);
  return 0;
}

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// One phase's figures, relative to the phase's start.
class Phase {
 public:
  explicit Phase(std::string name)
      : name_(std::move(name)),
        t0_(Clock::now()),
        m0_(bench::stats()),
        rss0_(bench::maxrss_kib()) {}

  nlohmann::json finish(nlohmann::json extra) {
    const auto t1 = Clock::now();
    const auto m1 = bench::stats();
    bench::callgrind_dump(name_.c_str());
    nlohmann::json j = std::move(extra);
    j["wall_s"] = secs(t1 - t0_);
    j["maxrss_kib_before"] = rss0_;
    j["maxrss_kib_after"] = bench::maxrss_kib();
    for (std::size_t i = 0; i < bench::kPartCount; ++i) {
      const auto name = std::string(bench::to_string(static_cast<Part>(i)));
      auto& p = j["parts"][name];
      p["heap_bytes_after"] = m1[i].live_bytes;
      p["heap_bytes_delta"] = m1[i].live_bytes - m0_[i].live_bytes;
      p["allocs"] = m1[i].allocs - m0_[i].allocs;
      p["entries"] = m1[i].entries - m0_[i].entries;
      if (bench::stats()[i].wall_ns != 0)
        p["wall_s"] = static_cast<double>(m1[i].wall_ns - m0_[i].wall_ns) / 1e9;
    }
    return j;
  }

 private:
  std::string name_;
  TimePoint t0_;
  std::array<bench::PartStats, bench::kPartCount> m0_;
  long rss0_;
};

// The benchmark's cluster: the hub first (node 0), then one client per
// connection (node i + 1).
class Run {
 public:
  explicit Run(const Options& o)
      : o_(o),
        cluster_(o.profile == "ehca"  ? sim::Profile::kEhca
                 : o.profile == "rxe" ? sim::Profile::kRxe
                                      : sim::Profile::kMlx) {
    cluster_.reserve(o.connections + 1);
    cluster_.fabric.timing().cm_event_cost = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double, std::micro>(o.cm_event_cost_us));
  }

  // Hub 10.98.0.1; clients 10.99.0.1 upwards (one /16 holds 60,000).
  bool add_nodes() {
    const bool hub_ok =
        add(IpAddr::v4(0x0a620001u), Part::kHub, 0x4855420000000001ull, [&](cm::ManagerConfig& c) {
          c.mtu = o_.hub_mtu;
          c.srq_size = o_.hub_srq;
          c.send_slots = o_.hub_slots;
          c.max_connections = o_.connections;
          c.max_pending_setups = o_.hub_pending;
        });
    if (!hub_ok)
      return false;
    for (std::uint32_t i = 0; i < o_.connections; ++i) {
      // Clients are as small as the manager allows: their memory is not what
      // is measured, and 16,000 of them share this process.
      if (!add(sim::cluster_addr(i + 1), Part::kClients, 0xC11E000000000000ull + i + 1,
               [](cm::ManagerConfig& c) {
                 c.mtu = 2048;
                 c.srq_size = 16;
                 c.send_slots = 4;
                 c.qp_send_depth = 4;
                 c.max_connections = 4;
               }))
        return false;
    }
    return true;
  }

  // --- setup: the hub sends one packet to every client; each send starts a
  // connection on demand (active side: REQ), and the packet waits in the
  // peer queue until ESTABLISHED.
  nlohmann::json setup(std::span<const std::byte> pkt) {
    if (o_.inbound)
      return storm(pkt);
    Phase ph("setup");
    for (std::uint32_t i = 0; i < o_.connections; ++i) {
      Scope s(Part::kHub);
      (void)hub().mgr->send(cluster_.node(i + 1).ep(), pkt);
    }
    const TimePoint vt0 = cluster_.fabric.now();
    for (int k = 0; k < 600; ++k) {
      if (hub().ctr().connects_established >= o_.connections &&
          delivered_to_clients() >= o_.connections)
        break;
      run_fabric(100ms);
    }
    const auto est = hub().ctr().connects_established;
    const auto del = delivered_to_clients();
    const bool ok = est == o_.connections && del == o_.connections;
    return ph.finish({{"ok", ok},
                      {"established", est},
                      {"first_packets_delivered", del},
                      {"virtual_ms", to_ms(cluster_.fabric.now() - vt0)},
                      {"sim_live_qps_hub", hub().sim->live_qps()}});
  }

  // --- setup, --inbound: every client sends one packet to the hub at one
  // instant; each starts a connection (the hub is the passive side of all).
  nlohmann::json storm(std::span<const std::byte> pkt) {
    Phase ph("setup");
    for (std::uint32_t i = 0; i < o_.connections; ++i) {
      Scope s(Part::kClients);
      (void)cluster_.at(i + 1).mgr->send(hub().ep(), pkt);
    }
    const TimePoint vt0 = cluster_.fabric.now();
    TimePoint all_in{};
    for (int k = 0; k < 3000; ++k) {
      if (hub().sink.packets >= o_.connections && hub().mgr->live_qpns().size() == o_.connections) {
        all_in = cluster_.fabric.now();
        break;
      }
      run_fabric(100ms);
    }
    std::uint64_t failures = 0, drops = 0, busy = 0, started = 0;
    for (std::size_t i = 1; i < cluster_.size(); ++i) {
      const auto& c = cluster_.at(i).ctr();
      failures += c.connect_failures;
      drops += c.drops_connect_failed + c.drops_queue_full;
      busy += c.rejects_received_busy;
      started += c.connects_started;
    }
    const auto& h = hub().ctr();
    const bool ok = all_in != TimePoint{} && failures == 0 && drops == 0;
    return ph.finish(
        {{"ok", ok},
         {"inbound", true},
         {"hub_pending", o_.hub_pending},
         {"cm_event_cost_us", o_.cm_event_cost_us},
         {"established", hub().mgr->live_qpns().size()},
         {"first_packets_delivered", hub().sink.packets},
         {"virtual_ms", to_ms((all_in != TimePoint{} ? all_in : cluster_.fabric.now()) - vt0)},
         {"client_connects_started", started},
         {"client_connect_failures", failures},
         {"client_packets_dropped", drops},
         {"client_rejects_busy", busy},
         {"hub_rejects_sent_busy", h.rejects_sent_busy},
         {"hub_accepts", h.accepts},
         {"hub_connect_failures", h.connect_failures},
         {"hub_connect_deadlines_deferred", h.connect_deadlines_deferred},
         {"hub_reqs_over_listen_backlog", hub().sim->stats().reqs_over_backlog},
         {"sim_live_qps_hub", hub().sim->live_qps()}});
  }

  // --- idle: nothing to send; only the reaper's ticks run.
  nlohmann::json idle() {
    Phase ph("idle");
    const auto ticks_before = bench::stats()[static_cast<std::size_t>(Part::kHub)].entries;
    {
      Scope s(Part::kSim);
      cluster_.run(std::chrono::seconds(o_.idle_s));
    }
    const auto ticks = bench::stats()[static_cast<std::size_t>(Part::kHub)].entries - ticks_before;
    const bool ok = hub().mgr->live_qpns().size() == o_.connections;
    return ph.finish({{"ok", ok}, {"virtual_s", o_.idle_s}, {"hub_timer_wakeups", ticks}});
  }

  // --- data: the hub sends --packets packets round robin to --data-peers
  // clients, --batch at a time, the fabric running between batches.
  nlohmann::json data(std::span<const std::byte> pkt) {
    Phase ph("data");
    const auto before = delivered_to_clients();
    std::uint64_t sent = 0, refused = 0, queued = 0;
    std::uint32_t peer = 0;
    while (sent < o_.packets) {
      for (std::uint32_t b = 0; b < o_.batch && sent < o_.packets; ++b, ++sent) {
        cm::SendResult r;
        {
          Scope s(Part::kHub);
          r = hub().mgr->send(cluster_.node(1 + peer).ep(), pkt);
        }
        if (r == cm::SendResult::kQueued)
          ++queued;
        else if (r != cm::SendResult::kSent)
          ++refused;
        peer = (peer + 1) % o_.data_peers;
      }
      run_fabric(10ms);
    }
    for (int k = 0; k < 100 && delivered_to_clients() - before < o_.packets - refused; ++k)
      run_fabric(100ms);
    const auto got = delivered_to_clients() - before;
    return ph.finish({{"ok", got == o_.packets},
                      {"packets", o_.packets},
                      {"packet_bytes", o_.packet_size},
                      {"data_peers", o_.data_peers},
                      {"delivered", got},
                      {"queued_by_backpressure", queued},
                      {"refused_or_dropped", refused}});
  }

  // --- teardown: graceful shutdown of the hub (DREQ to every client, the
  // spec teardown of every QP on the profile's Last WQE behaviour).
  nlohmann::json teardown() {
    Phase ph("teardown");
    {
      Scope s(Part::kHub);
      hub().mgr->shutdown();
    }
    const TimePoint vt0 = cluster_.fabric.now();
    for (int k = 0; k < 600 && !hub().mgr->stopped(); ++k) {
      Scope s(Part::kSim);
      cluster_.run(100ms);
    }
    const bool ok = hub().mgr->stopped() && hub().sim->live_qps() == 0;
    const auto& c = hub().ctr();
    return ph.finish({{"ok", ok},
                      {"virtual_ms", to_ms(cluster_.fabric.now() - vt0)},
                      {"hub_qps_destroyed", c.qps_destroyed},
                      {"last_wqe_received", c.last_wqe_received},
                      {"last_wqe_timeouts", c.last_wqe_timeouts},
                      {"drain_timeouts", c.drain_timeouts},
                      {"sim_live_qps_hub", hub().sim->live_qps()},
                      {"sim_misuse_hub", hub().sim->stats().misuse}});
  }

 private:
  template <class Tweak>
  bool add(const IpAddr& addr, Part part, std::uint64_t incarnation, Tweak tweak) {
    BenchNode& n = cluster_.add_node<BenchNode>(addr, part);
    auto cfg = sim::cluster_config(addr, incarnation);
    // Nothing may be reaped by the idle timer while the benchmark idles.
    cfg.idle_timeout = std::chrono::hours(1);
    tweak(cfg);
    Result<void> r;
    {
      Scope s(part);
      r = cluster_.start(n, cfg);
    }
    if (!r) {
      std::fprintf(stderr, "manager start %s: %s\n", addr.to_string().c_str(),
                   r.error().message().c_str());
      return false;
    }
    return true;
  }

  BenchNode& hub() { return cluster_.at(0); }
  std::uint64_t delivered_to_clients() {
    std::uint64_t n = 0;
    for (std::size_t i = 1; i < cluster_.size(); ++i)
      n += cluster_.at(i).sink.packets;
    return n;
  }
  void run_fabric(Duration limit) {
    Scope s(Part::kSim);
    (void)cluster_.fabric.run_until_idle(limit);
  }

  const Options& o_;
  BenchCluster cluster_;
};

// Derived figures (the raw ones in `phases` stay for anyone who distrusts
// these).
nlohmann::json derived(const nlohmann::json& ph, const Options& o) {
  const double n = o.connections;
  const auto num = [](const nlohmann::json& v) { return static_cast<double>(v); };
  const auto hub_part = [&](const char* phase) -> const nlohmann::json& {
    return ph[phase]["parts"]["hub_manager"];
  };
  nlohmann::json d;
  d["hub_heap_bytes_per_connection"] =
      (num(hub_part("setup")["heap_bytes_delta"]) + num(hub_part("idle")["heap_bytes_delta"])) / n;
  d["process_maxrss_bytes_per_connection_setup"] =
      (num(ph["setup"]["maxrss_kib_after"]) - num(ph["setup"]["maxrss_kib_before"])) * 1024.0 / n;
  d["process_wall_us_per_connection_setup"] = num(ph["setup"]["wall_s"]) * 1e6 / n;
  d["process_wall_us_per_packet"] =
      num(ph["data"]["wall_s"]) * 1e6 / static_cast<double>(o.packets);
  d["process_wall_us_per_connection_teardown"] = num(ph["teardown"]["wall_s"]) * 1e6 / n;
  d["hub_allocs_per_packet"] = num(hub_part("data")["allocs"]) / static_cast<double>(o.packets);
  d["client_allocs_per_packet"] =
      num(ph["data"]["parts"]["client_managers"]["allocs"]) / static_cast<double>(o.packets);
  d["hub_heap_residual_after_teardown_bytes"] =
      num(hub_part("teardown")["heap_bytes_after"]) - num(hub_part("init")["heap_bytes_after"]);
  d["hub_registered_bytes"] = (std::uint64_t{o.hub_srq} + o.hub_slots) * o.hub_mtu;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rcnet-bench-sim: the connection manager at scale on the simulated fabric",
               "rcnet-bench-sim"};
  add_options(app, o);
  if (const int rc = bench::parse_args(app, argc, argv); rc >= 0)
    return rc;
  o.data_peers = std::min(o.data_peers, o.connections);
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  bench::set_measured(measured_parts(o.measure));
  bench::set_timing(o.time_split);

  nlohmann::json out;
  out["benchmark"] = "rcnet-bench-sim";
  out["connections"] = o.connections;
  out["profile"] = o.profile;
  out["measure"] = o.measure;
  out["under_valgrind"] = bench::running_on_valgrind();
  out["log_level"] = o.log_level;

  const auto rss_start = bench::maxrss_kib();
  Phase init("init");
  Run run(o);
  if (!run.add_nodes())
    return 1;
  auto& ph = out["phases"];
  ph["init"] = init.finish({{"maxrss_kib_process_start", rss_start}});
  const std::vector<std::byte> pkt(o.packet_size, std::byte{0x45});
  ph["setup"] = run.setup(pkt);
  ph["idle"] = run.idle();
  ph["data"] = run.data(pkt);
  ph["teardown"] = run.teardown();

  bool ok = true;
  for (const char* name : {"setup", "idle", "data", "teardown"})
    ok = ok && ph[name]["ok"].get<bool>();
  out["derived"] = derived(ph, o);
  out["ok"] = ok;
  (void)bench::print_summary(out, o.json_out, 2);
  return ok ? 0 : 1;
}
