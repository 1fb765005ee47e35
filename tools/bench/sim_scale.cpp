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
// Exit status: 0 when every phase reached its goal (all connections
// ESTABLISHED, every packet delivered, the hub stopped with no QP left),
// 1 otherwise, 2 on bad arguments. The JSON summary goes to stdout and
// --json FILE.
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cm/manager.hpp"
#include "meter.hpp"
#include "sim/fabric.hpp"

using namespace rcnet;
using bench::Part;
using bench::Scope;

namespace {

constexpr std::uint16_t kPort = 7471;

// Every call from the manager into the simulated HCA is charged to the
// simulator: what the manager costs is what remains.
class MeteredSeam final : public rdma::Seam {
 public:
  explicit MeteredSeam(rdma::Seam& inner) : in_(inner) {}
  Result<rdma::DeviceInfo> open(const Endpoint& l, const rdma::DeviceConfig& c) override {
    Scope s(Part::kSim);
    return in_.open(l, c);
  }
  Result<rdma::MemoryRegion> register_memory(std::span<std::byte> m) override {
    Scope s(Part::kSim);
    return in_.register_memory(m);
  }
  void unregister_memory(const rdma::MemoryRegion& mr) override {
    Scope s(Part::kSim);
    in_.unregister_memory(mr);
  }
  Result<rdma::CmIdHandle> create_id() override {
    Scope s(Part::kSim);
    return in_.create_id();
  }
  Result<void> resolve_addr(rdma::CmIdHandle id, const Endpoint& d, Duration t) override {
    Scope s(Part::kSim);
    return in_.resolve_addr(id, d, t);
  }
  Result<void> resolve_route(rdma::CmIdHandle id, Duration t) override {
    Scope s(Part::kSim);
    return in_.resolve_route(id, t);
  }
  Result<rdma::Qpn> create_qp(rdma::CmIdHandle id, const rdma::QpCaps& c) override {
    Scope s(Part::kSim);
    return in_.create_qp(id, c);
  }
  Result<void> connect(rdma::CmIdHandle id, const rdma::ConnParams& p) override {
    Scope s(Part::kSim);
    return in_.connect(id, p);
  }
  Result<void> accept(rdma::CmIdHandle id, const rdma::ConnParams& p) override {
    Scope s(Part::kSim);
    return in_.accept(id, p);
  }
  Result<void> reject(rdma::CmIdHandle id, std::span<const std::uint8_t> pd) override {
    Scope s(Part::kSim);
    return in_.reject(id, pd);
  }
  Result<void> disconnect(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.disconnect(id);
  }
  Result<void> notify_established(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.notify_established(id);
  }
  Result<void> destroy_qp(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.destroy_qp(id);
  }
  Result<void> destroy_id(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.destroy_id(id);
  }
  Result<void> modify_qp_to_error(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.modify_qp_to_error(id);
  }
  Result<void> post_send(rdma::CmIdHandle id, std::uint64_t wr_id, const rdma::Sge& sge,
                         std::uint32_t imm, bool signaled) override {
    Scope s(Part::kSim);
    return in_.post_send(id, wr_id, sge, imm, signaled);
  }
  Result<void> post_drain(rdma::CmIdHandle id, std::uint64_t wr_id) override {
    Scope s(Part::kSim);
    return in_.post_drain(id, wr_id);
  }
  Result<void> post_srq_recv(std::span<const std::uint64_t> w,
                             std::span<const rdma::Sge> g) override {
    Scope s(Part::kSim);
    return in_.post_srq_recv(w, g);
  }
  Result<void> post_qp_recv(rdma::CmIdHandle id, std::span<const std::uint64_t> w,
                            std::span<const rdma::Sge> g) override {
    Scope s(Part::kSim);
    return in_.post_qp_recv(id, w, g);
  }
  Result<void> arm_srq_limit(std::uint32_t limit) override {
    Scope s(Part::kSim);
    return in_.arm_srq_limit(limit);
  }
  bool cm_events_queued() override {
    Scope s(Part::kSim);
    return in_.cm_events_queued();
  }

 private:
  rdma::Seam& in_;
};

class MeteredTimers final : public TimerService {
 public:
  explicit MeteredTimers(TimerService& inner) : in_(inner) {}
  // Not metered: a read of the fabric's clock, and called so often that a
  // Scope here would dominate the manager's own figures.
  TimePoint now() const override { return in_.now(); }
  void schedule(TimePoint d) override {
    Scope s(Part::kSim);
    in_.schedule(d);
  }

 private:
  TimerService& in_;
};

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

// Every event the fabric hands a node is charged to that node's manager.
class MeteredEvents final : public rdma::EventSink {
 public:
  MeteredEvents(cm::Manager& m, Part part) : mgr_(m), part_(part) {}
  void on_cm_event(const rdma::CmEvent& ev) override {
    Scope s(part_);
    mgr_.on_cm_event(ev);
  }
  void on_async_event(const rdma::AsyncEvent& ev) override {
    Scope s(part_);
    mgr_.on_async_event(ev);
  }
  void on_completions(std::span<const rdma::WorkCompletion> wcs) override {
    Scope s(part_);
    mgr_.on_completions(wcs);
  }

 private:
  cm::Manager& mgr_;
  Part part_;
};

struct BenchNode {
  BenchNode(sim::SimNode& n, Part p) : sim(n), seam(n.seam()), timers(n.timers()), part(p) {}
  sim::SimNode& sim;
  MeteredSeam seam;
  MeteredTimers timers;
  CountingSink sink;
  Part part;
  std::unique_ptr<cm::Manager> mgr;
  std::unique_ptr<MeteredEvents> events;
  Endpoint ep() const { return Endpoint{sim.address(), kPort}; }
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
  // The hub is configured as rcnetd's defaults (lib/config/rcnetd.example.toml)
  std::uint32_t hub_mtu = 65520, hub_srq = 512, hub_slots = 256;
};

constexpr const char* kUsage =
    "usage: rcnet-bench-sim [--connections N] [--packets N] [--packet-size BYTES]\n"
    "  [--data-peers N] [--batch N] [--idle-s S] [--profile mlx|ehca|rxe]\n"
    "  [--measure hub|clients|managers|sim|all|none] [--hub-mtu BYTES] [--hub-srq N]\n"
    "  [--hub-slots N] [--json FILE] [--log-level LEVEL] [--time-split]\n";

// -1: parsed, go on; otherwise the exit status (0 for --help, 2 for an error).
int parse_args(int argc, char** argv, Options& o) {
  auto number = [](const char* text, std::uint64_t lo, std::uint64_t hi, std::uint64_t& out) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
      return false;
    out = v;
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (k == "--time-split") {
      o.time_split = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: needs a value\n%s", k.c_str(), kUsage);
      return 2;
    }
    const char* v = argv[++i];
    std::uint64_t n = 0;
    bool good = true;
    if (k == "--connections")
      good = number(v, 1, 60000, n), o.connections = static_cast<std::uint32_t>(n);
    else if (k == "--packets")
      good = number(v, 0, 1ull << 40, n), o.packets = n;
    else if (k == "--packet-size")
      good = number(v, 8, 2048, n), o.packet_size = static_cast<std::uint32_t>(n);
    else if (k == "--data-peers")
      good = number(v, 1, 60000, n), o.data_peers = static_cast<std::uint32_t>(n);
    else if (k == "--batch")
      good = number(v, 1, 64, n), o.batch = static_cast<std::uint32_t>(n);
    else if (k == "--idle-s")
      good = number(v, 0, 3600, n), o.idle_s = static_cast<int>(n);
    else if (k == "--hub-mtu")
      good = number(v, 2048, 65520, n), o.hub_mtu = static_cast<std::uint32_t>(n);
    else if (k == "--hub-srq")
      good = number(v, 1, 1u << 20, n), o.hub_srq = static_cast<std::uint32_t>(n);
    else if (k == "--hub-slots")
      good = number(v, 1, 1u << 20, n), o.hub_slots = static_cast<std::uint32_t>(n);
    else if (k == "--profile")
      o.profile = v, good = o.profile == "mlx" || o.profile == "ehca" || o.profile == "rxe";
    else if (k == "--measure")
      o.measure = v, good = o.measure == "hub" || o.measure == "clients" ||
                            o.measure == "managers" || o.measure == "sim" || o.measure == "all" ||
                            o.measure == "none";
    else if (k == "--json")
      o.json_out = v;
    else if (k == "--log-level")
      o.log_level = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n%s", k.c_str(), kUsage);
      return 2;
    }
    if (!good) {
      std::fprintf(stderr, "%s: bad value '%s'\n%s", k.c_str(), v, kUsage);
      return 2;
    }
  }
  return -1;
}

long maxrss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// One phase's figures, relative to the phase's start.
class Phase {
 public:
  explicit Phase(std::string name)
      : name_(std::move(name)), t0_(Clock::now()), m0_(bench::stats()), rss0_(maxrss_kib()) {}

  nlohmann::json finish(nlohmann::json extra) {
    const auto t1 = Clock::now();
    const auto m1 = bench::stats();
    bench::callgrind_dump(name_.c_str());
    nlohmann::json j = std::move(extra);
    j["wall_s"] = secs(t1 - t0_);
    j["maxrss_kib_before"] = rss0_;
    j["maxrss_kib_after"] = maxrss_kib();
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

cm::ManagerConfig base_config(const IpAddr& addr, std::uint64_t incarnation) {
  cm::ManagerConfig c;
  c.local = Endpoint{addr, kPort};
  c.incarnation = incarnation;
  c.overlay = IpAddr::v4(0x0a640000u + (addr.v4_host_order() & 0xffffu));
  // Nothing may be reaped by the idle timer while the benchmark idles.
  c.idle_timeout = std::chrono::hours(1);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int rc = parse_args(argc, argv, o); rc >= 0)
    return rc;
  if (o.data_peers > o.connections)
    o.data_peers = o.connections;

  spdlog::set_level(spdlog::level::from_str(o.log_level));
  unsigned mask = 0;
  auto bit = [](Part p) { return 1u << static_cast<unsigned>(p); };
  if (o.measure == "hub")
    mask = bit(Part::kHub);
  else if (o.measure == "clients")
    mask = bit(Part::kClients);
  else if (o.measure == "managers")
    mask = bit(Part::kHub) | bit(Part::kClients);
  else if (o.measure == "sim")
    mask = bit(Part::kSim);
  else if (o.measure == "all")
    mask = bit(Part::kHub) | bit(Part::kClients) | bit(Part::kSim) | bit(Part::kDriver);
  bench::set_measured(mask);
  bench::set_timing(o.time_split);

  const sim::Profile profile = o.profile == "ehca"  ? sim::Profile::kEhca
                               : o.profile == "rxe" ? sim::Profile::kRxe
                                                    : sim::Profile::kMlx;
  bool ok = true;
  nlohmann::json out;
  out["benchmark"] = "rcnet-bench-sim";
  out["connections"] = o.connections;
  out["profile"] = o.profile;
  out["measure"] = o.measure;
  out["under_valgrind"] = bench::running_on_valgrind();
  out["log_level"] = o.log_level;

  const auto rss_start = maxrss_kib();
  Phase init("init");
  sim::Fabric fabric(1);
  std::vector<std::unique_ptr<BenchNode>> nodes;
  nodes.reserve(o.connections + 1);
  auto add = [&](const IpAddr& addr, Part part, std::uint64_t inc, auto tweak) -> bool {
    sim::SimNode* sn = nullptr;
    {
      Scope s(Part::kSim);
      sn = &fabric.add_node(addr, profile);
    }
    auto n = std::make_unique<BenchNode>(*sn, part);
    auto cfg = base_config(addr, inc);
    tweak(cfg);
    {
      Scope s(part);
      n->mgr = std::make_unique<cm::Manager>(cfg, n->seam, n->timers, n->sink);
      n->events = std::make_unique<MeteredEvents>(*n->mgr, part);
    }
    sn->set_sink(n->events.get());
    sn->set_timer_callback([m = n->mgr.get(), part] {
      Scope s(part);
      m->on_timer();
    });
    Result<void> r;
    {
      Scope s(part);
      r = n->mgr->start();
    }
    nodes.push_back(std::move(n));
    if (!r) {
      std::fprintf(stderr, "manager start %s: %s\n", addr.to_string().c_str(),
                   r.error().message().c_str());
      return false;
    }
    return true;
  };
  // Hub 10.98.0.1; clients 10.99.0.1 upwards (one /16 holds 60,000).
  const IpAddr hub_addr = IpAddr::v4(0x0a620001u);
  const bool hub_ok = add(hub_addr, Part::kHub, 0x4855420000000001ull, [&](cm::ManagerConfig& c) {
    c.mtu = o.hub_mtu;
    c.srq_size = o.hub_srq;
    c.send_slots = o.hub_slots;
    c.max_connections = o.connections;
  });
  if (!hub_ok)
    return 1;
  BenchNode& hub = *nodes.front();
  for (std::uint32_t i = 0; i < o.connections; ++i) {
    // Clients are as small as the manager allows: their memory is not what is
    // measured, and 16,000 of them share this process.
    if (!add(IpAddr::v4(0x0a630001u + i), Part::kClients, 0xC11E000000000000ull + i + 1,
             [](cm::ManagerConfig& c) {
               c.mtu = 2048;
               c.srq_size = 16;
               c.send_slots = 4;
               c.qp_send_depth = 4;
               c.max_connections = 4;
             }))
      return 1;
  }
  out["phases"]["init"] = init.finish({{"maxrss_kib_process_start", rss_start}});

  const auto hub_id = [&] { return hub.mgr->counters(); };
  std::vector<std::byte> pkt(o.packet_size, std::byte{0x45});
  auto delivered_to_clients = [&] {
    std::uint64_t n = 0;
    for (std::size_t i = 1; i < nodes.size(); ++i)
      n += nodes[i]->sink.packets;
    return n;
  };
  auto run_fabric = [&](Duration limit) {
    Scope s(Part::kSim);
    return fabric.run_until_idle(limit);
  };

  // --- setup: the hub sends one packet to every client; each send starts a
  // connection on demand (active side: REQ), and the packet waits in the
  // peer queue until ESTABLISHED.
  {
    Phase ph("setup");
    for (std::uint32_t i = 0; i < o.connections; ++i) {
      Scope s(Part::kHub);
      (void)hub.mgr->send(nodes[i + 1]->ep(), pkt);
    }
    const TimePoint vt0 = fabric.now();
    for (int k = 0; k < 600; ++k) {
      if (hub_id().connects_established >= o.connections && delivered_to_clients() >= o.connections)
        break;
      run_fabric(100ms);
    }
    const auto est = hub_id().connects_established;
    const auto del = delivered_to_clients();
    const bool phase_ok = est == o.connections && del == o.connections;
    ok = ok && phase_ok;
    out["phases"]["setup"] = ph.finish({{"ok", phase_ok},
                                        {"established", est},
                                        {"first_packets_delivered", del},
                                        {"virtual_ms", to_ms(fabric.now() - vt0)},
                                        {"sim_live_qps_hub", hub.sim.live_qps()}});
  }

  // --- idle: nothing to send; only the reaper's ticks run.
  {
    Phase ph("idle");
    const auto ticks_before = bench::stats()[static_cast<std::size_t>(Part::kHub)].entries;
    {
      Scope s(Part::kSim);
      fabric.run_for(std::chrono::seconds(o.idle_s));
    }
    const auto ticks = bench::stats()[static_cast<std::size_t>(Part::kHub)].entries - ticks_before;
    const bool phase_ok = hub.mgr->live_qpns().size() == o.connections;
    ok = ok && phase_ok;
    out["phases"]["idle"] =
        ph.finish({{"ok", phase_ok}, {"virtual_s", o.idle_s}, {"hub_timer_wakeups", ticks}});
  }

  // --- data: the hub sends --packets packets round robin to --data-peers
  // clients, --batch at a time, the fabric running between batches.
  {
    Phase ph("data");
    const auto before = delivered_to_clients();
    std::uint64_t sent = 0, refused = 0, queued = 0;
    std::uint32_t peer = 0;
    while (sent < o.packets) {
      for (std::uint32_t b = 0; b < o.batch && sent < o.packets; ++b, ++sent) {
        cm::SendResult r;
        {
          Scope s(Part::kHub);
          r = hub.mgr->send(nodes[1 + peer]->ep(), pkt);
        }
        if (r == cm::SendResult::kQueued)
          ++queued;
        else if (r != cm::SendResult::kSent)
          ++refused;
        peer = (peer + 1) % o.data_peers;
      }
      run_fabric(10ms);
    }
    for (int k = 0; k < 100 && delivered_to_clients() - before < o.packets - refused; ++k)
      run_fabric(100ms);
    const auto got = delivered_to_clients() - before;
    const bool phase_ok = got == o.packets;
    ok = ok && phase_ok;
    out["phases"]["data"] = ph.finish({{"ok", phase_ok},
                                       {"packets", o.packets},
                                       {"packet_bytes", o.packet_size},
                                       {"data_peers", o.data_peers},
                                       {"delivered", got},
                                       {"queued_by_backpressure", queued},
                                       {"refused_or_dropped", refused}});
  }

  // --- teardown: graceful shutdown of the hub (DREQ to every client, the
  // spec teardown of every QP on the profile's Last WQE behaviour).
  {
    Phase ph("teardown");
    {
      Scope s(Part::kHub);
      hub.mgr->shutdown();
    }
    const TimePoint vt0 = fabric.now();
    for (int k = 0; k < 600 && !hub.mgr->stopped(); ++k) {
      Scope s(Part::kSim);
      fabric.run_for(100ms);
    }
    const bool phase_ok = hub.mgr->stopped() && hub.sim.live_qps() == 0;
    ok = ok && phase_ok;
    const auto& c = hub.mgr->counters();
    out["phases"]["teardown"] = ph.finish({{"ok", phase_ok},
                                           {"virtual_ms", to_ms(fabric.now() - vt0)},
                                           {"hub_qps_destroyed", c.qps_destroyed},
                                           {"last_wqe_received", c.last_wqe_received},
                                           {"last_wqe_timeouts", c.last_wqe_timeouts},
                                           {"drain_timeouts", c.drain_timeouts},
                                           {"sim_live_qps_hub", hub.sim.live_qps()},
                                           {"sim_misuse_hub", hub.sim.stats().misuse}});
  }

  // Derived figures (the raw ones above stay for anyone who distrusts these).
  auto& ph = out["phases"];
  const double n = o.connections;
  const double hub_after_setup = ph["setup"]["parts"]["hub_manager"]["heap_bytes_delta"];
  const double idle_delta = ph["idle"]["parts"]["hub_manager"]["heap_bytes_delta"];
  auto& d = out["derived"];
  d["hub_heap_bytes_per_connection"] = (hub_after_setup + idle_delta) / n;
  d["process_maxrss_bytes_per_connection_setup"] =
      (static_cast<double>(ph["setup"]["maxrss_kib_after"]) -
       static_cast<double>(ph["setup"]["maxrss_kib_before"])) *
      1024.0 / n;
  d["process_wall_us_per_connection_setup"] = static_cast<double>(ph["setup"]["wall_s"]) * 1e6 / n;
  d["process_wall_us_per_packet"] =
      static_cast<double>(ph["data"]["wall_s"]) * 1e6 / static_cast<double>(o.packets);
  d["process_wall_us_per_connection_teardown"] =
      static_cast<double>(ph["teardown"]["wall_s"]) * 1e6 / n;
  d["hub_allocs_per_packet"] = static_cast<double>(ph["data"]["parts"]["hub_manager"]["allocs"]) /
                               static_cast<double>(o.packets);
  d["client_allocs_per_packet"] =
      static_cast<double>(ph["data"]["parts"]["client_managers"]["allocs"]) /
      static_cast<double>(o.packets);
  d["hub_heap_residual_after_teardown_bytes"] =
      static_cast<double>(ph["teardown"]["parts"]["hub_manager"]["heap_bytes_after"]) -
      static_cast<double>(ph["init"]["parts"]["hub_manager"]["heap_bytes_after"]);
  d["hub_registered_bytes"] = (std::uint64_t{o.hub_srq} + o.hub_slots) * o.hub_mtu;
  out["ok"] = ok;

  const std::string text = out.dump(2);
  std::printf("%s\n", text.c_str());
  if (!o.json_out.empty())
    std::ofstream(o.json_out) << text << "\n";
  return ok ? 0 : 1;
}
