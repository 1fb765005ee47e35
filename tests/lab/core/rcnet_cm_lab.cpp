// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-cm-lab: the connection manager on the real RDMA seam, for the lab.
// A test program (not the daemon): a plain poll() loop over the seam's three
// fds and a CLOCK_MONOTONIC timer, no TUN. Every node echoes each packet it
// receives back to its sender, so a client can verify round trips.
//
//   rcnet-cm-lab --local A [--peer B] --mode echo|cycles|burst [options]
//     echo    serve until SIGTERM/SIGINT (or --duration), then shut down
//             gracefully (every QP torn down) and print the summary
//     cycles  --count N: N times: send a packet to B, wait for its echo,
//             disconnect B, wait until the QP is destroyed
//     burst   at --start-at-ms (CLOCK_REALTIME ms; 0 = now) send --count
//             packets to B and wait for their echoes (then --linger)
//   Options: --idle-ms, --last-wqe-ms, --drain-ms, --no-srq, --summary FILE,
//   --linger S (keep serving S seconds after the mode's work, before shutdown,
//   so the lab can read the kernel's QP table while the process is alive)
// The summary is one JSON object (counters, live QPNs, round trips) printed
// on stdout and written to --summary. Exit 0 when the mode's goal was met.
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cm/manager.hpp"
#include "rdma/seam_pump.hpp"
#include "rdma/verbs_seam.hpp"

using namespace rcnet;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

struct Timer final : TimerService {
  TimePoint deadline = TimePoint::max();
  TimePoint now() const override { return Clock::now(); }
  void schedule(TimePoint d) override { deadline = d; }
};

struct Sink final : cm::PacketSink {
  std::vector<std::pair<NodeId, std::vector<std::byte>>> echo;  // to send after dispatch
  std::map<std::uint32_t, int> echoed_back;                     // seq → times seen back
  bool is_reply(const std::byte* p) const { return std::to_integer<int>(p[4]) == 1; }
  void deliver(NodeId from, std::span<const std::byte> p) override {
    if (p.size() < 8)
      return;
    if (is_reply(p.data())) {
      std::uint32_t seq = 0;
      std::memcpy(&seq, p.data(), 4);
      ++echoed_back[seq];
      return;
    }
    std::vector<std::byte> r(p.begin(), p.end());
    r[4] = std::byte{1};
    echo.emplace_back(from, std::move(r));
  }
  void send_capacity(bool) override {}
};

std::vector<std::byte> make_packet(std::uint32_t seq, std::size_t size) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i)
    p[i] = static_cast<std::byte>((seq + i) & 0xff);
  std::memcpy(p.data(), &seq, 4);
  p[4] = std::byte{0};
  return p;
}

struct Args {
  std::string local, peer, mode = "echo", summary;
  std::uint32_t count = 10;
  std::int64_t start_at_ms = 0;
  int duration_s = 0;
  int linger_s = 0;
  int idle_ms = 10000, last_wqe_ms = 500, drain_ms = 1000;
  bool srq = true;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--local")
      a.local = next();
    else if (k == "--peer")
      a.peer = next();
    else if (k == "--mode")
      a.mode = next();
    else if (k == "--count")
      a.count = static_cast<std::uint32_t>(std::stoul(next()));
    else if (k == "--start-at-ms")
      a.start_at_ms = std::stoll(next());
    else if (k == "--duration")
      a.duration_s = std::stoi(next());
    else if (k == "--idle-ms")
      a.idle_ms = std::stoi(next());
    else if (k == "--last-wqe-ms")
      a.last_wqe_ms = std::stoi(next());
    else if (k == "--drain-ms")
      a.drain_ms = std::stoi(next());
    else if (k == "--linger")
      a.linger_s = std::stoi(next());
    else if (k == "--no-srq")
      a.srq = false;
    else if (k == "--summary")
      a.summary = next();
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  auto local = IpAddr::parse(a.local);
  if (!local) {
    std::fprintf(stderr, "--local needs an IP address\n");
    return 2;
  }
  std::optional<Endpoint> peer;
  if (!a.peer.empty()) {
    auto p = IpAddr::parse(a.peer);
    if (!p)
      return 2;
    peer = Endpoint{*p, 7471};
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  spdlog::set_pattern("[%H:%M:%S.%e] [" + a.local + "] [%l] %v");

  auto seam = rdma::VerbsSeam::create();
  if (!seam) {
    std::fprintf(stderr, "%s\n", seam.error().message().c_str());
    return 1;
  }
  cm::ManagerConfig cfg;
  cfg.local = Endpoint{*local, 7471};
  {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    cfg.incarnation =
        (static_cast<std::uint64_t>(ts.tv_nsec) << 20) ^ static_cast<std::uint64_t>(getpid()) ^ 1;
  }
  cfg.mtu = 4096;
  cfg.use_srq = a.srq;
  cfg.srq_size = 256;
  cfg.send_slots = 256;
  cfg.idle_timeout = std::chrono::milliseconds(a.idle_ms);
  cfg.last_wqe_timeout = std::chrono::milliseconds(a.last_wqe_ms);
  cfg.drain_timeout = std::chrono::milliseconds(a.drain_ms);
  cfg.disconnect_timeout = 500ms;
  cfg.reaper_interval = 200ms;
  Timer timer;
  Sink sink;
  cm::Manager mgr(cfg, **seam, timer, sink);
  (*seam)->set_sink(&mgr);
  rdma::SeamPump seam_pump(**seam);
  if (auto r = mgr.start(); !r) {
    std::fprintf(stderr, "start: %s\n", r.error().message().c_str());
    return 1;
  }
  std::printf("LISTENING %s\n", cfg.local.to_string().c_str());
  std::fflush(stdout);

  auto pump = [&](Duration max_wait) {
    const auto seam_fds = seam_pump.fds();
    pollfd fds[3] = {{seam_fds[0], POLLIN, 0}, {seam_fds[1], POLLIN, 0}, {seam_fds[2], POLLIN, 0}};
    Duration wait = max_wait;
    if (timer.deadline != TimePoint::max())
      wait = std::min(wait, timer.deadline - Clock::now());
    if (seam_pump.completions_pending())
      wait = 0ns;
    const int ms = static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wait + 999us).count()));
    poll(fds, 3, ms);
    seam_pump.pump({.cm = (fds[0].revents & POLLIN) != 0,
                    .async = (fds[1].revents & POLLIN) != 0,
                    .cq = (fds[2].revents & POLLIN) != 0});
    if (timer.deadline <= Clock::now()) {
      timer.deadline = TimePoint::max();
      mgr.on_timer();
    }
    auto echo = std::move(sink.echo);
    sink.echo.clear();
    for (auto& [node, pkt] : echo)
      mgr.send(Endpoint{IpAddr::v4(static_cast<std::uint32_t>(node)), 7471}, pkt);
  };
  auto run_until = [&](auto pred, Duration limit) {
    const auto end = Clock::now() + limit;
    while (!pred() && Clock::now() < end && !g_stop)
      pump(50ms);
    return pred();
  };

  bool ok = true;
  std::uint32_t done = 0;
  double max_teardown_ms = 0;
  const auto t_start = Clock::now();
  if (a.mode == "cycles" && peer) {
    for (std::uint32_t i = 0; i < a.count && !g_stop; ++i) {
      mgr.send(*peer, make_packet(i, 1000));
      if (!run_until([&] { return sink.echoed_back.count(i) != 0; }, 5s)) {
        std::fprintf(stderr, "cycle %u: no echo\n", i);
        ok = false;
        break;
      }
      const auto t0 = Clock::now();
      mgr.disconnect_peer(node_id_for(peer->addr), "lab cycle");
      if (!run_until([&] { return mgr.live_qpns().empty() && mgr.live_cm_ids() == 0; }, 10s)) {
        std::fprintf(stderr, "cycle %u: QP not destroyed\n", i);
        ok = false;
        break;
      }
      max_teardown_ms = std::max(max_teardown_ms, to_ms(Clock::now() - t0));
      ++done;
    }
    ok = ok && done == a.count;
  } else if (a.mode == "burst" && peer) {
    if (a.start_at_ms > 0) {
      for (;;) {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        const std::int64_t now_ms = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
        if (now_ms >= a.start_at_ms)
          break;
        pump(std::chrono::milliseconds(std::min<std::int64_t>(a.start_at_ms - now_ms, 50)));
      }
    }
    for (std::uint32_t i = 0; i < a.count; ++i)
      mgr.send(*peer, make_packet(i, 1000));
    ok = run_until([&] { return sink.echoed_back.size() == a.count; }, 10s);
    done = static_cast<std::uint32_t>(sink.echoed_back.size());
  } else {
    const auto end =
        a.duration_s > 0 ? Clock::now() + std::chrono::seconds(a.duration_s) : TimePoint::max();
    while (!g_stop && Clock::now() < end)
      pump(100ms);
  }

  std::printf("MODE-DONE %s ok=%d done=%u\n", a.mode.c_str(), ok ? 1 : 0, done);
  std::fflush(stdout);
  const auto linger_end = Clock::now() + std::chrono::seconds(a.linger_s);
  while (Clock::now() < linger_end && !g_stop)
    pump(100ms);

  // Graceful stop: every QP through teardown.
  const auto t_stop = Clock::now();
  mgr.shutdown();
  g_stop = 0;
  run_until([&] { return mgr.stopped(); }, 10s);
  const bool stopped = mgr.stopped();

  nlohmann::json j;
  j["local"] = a.local;
  j["mode"] = a.mode;
  j["ok"] = ok && stopped;
  j["done"] = done;
  j["stopped"] = stopped;
  j["shutdown_ms"] = to_ms(Clock::now() - t_stop);
  j["run_ms"] = to_ms(t_stop - t_start);
  j["max_teardown_ms"] = max_teardown_ms;
  j["live_qpns"] = mgr.live_qpns();
  j["seam_qpns"] = (*seam)->qpns();
  mgr.counters().for_each([&](std::string_view name, std::uint64_t v, std::string_view) {
    j["counters"][std::string(name)] = v;
  });
  const std::string out = j.dump();
  std::printf("SUMMARY %s\n", out.c_str());
  std::fflush(stdout);
  if (!a.summary.empty())
    std::ofstream(a.summary) << out << "\n";
  return (ok && stopped) ? 0 : 1;
}
