// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-load: many rcnet connections into one rcnetd, for the lab's
// setup-rate and scale figures. One process runs one cm::Manager per local
// underlay address (each on its own rdma::VerbsSeam: node ids derive from
// addresses, so N connections to one hub need N addresses), all driven by one
// epoll loop, single-threaded like rcnetd. A wakeup costs O(ready): only the
// managers whose fds are ready, whose timer is due (one deadline heap) or
// whose CQ drain stopped at its budget are visited, as ucmatose's one event
// channel per process would (it was a poll(2) over 3 fds per manager, 750
// per process, rebuilt on every wakeup).
//
//   rcnet-bench-load --peer HUB --addrs A1,A2,...|--addr-file FILE
//                    [--start-at-ms T] [--go-file F] [--connect-limit-s S] [--hold-s S]
//                    [--summary FILE] [--log-level LEVEL] [--retry-count N]
//   1. starts every manager (bind, listen, PD/CQ/SRQ, buffer pools);
//   2. at CLOCK_REALTIME T ms, or once file F exists (so several generators
//      start together), each
//      manager sends one IPv4/UDP packet to HUB: the connection is made on
//      demand (REQ from each address);
//   3. waits until every manager has its connection ESTABLISHED;
//   4. serves until --hold-s passes or SIGTERM/SIGINT, then shuts every
//      manager down gracefully (DREQ, spec teardown) and times it.
// --retry-count is the clients' RC transport retry count (default 7, which
// rxe treats as infinite). With rcnet's default 3 (and ACK timeout 14, ~0.27
// s), a hub that is slow to ACK under TCG made 805 of 1000 clients' first
// SEND end in RETRY_EXC_ERR and reap a healthy connection as a dead peer
// (lab, 4 x 250): the clients exist to hold connections open on the hub,
// not to judge it, so they wait. Pass 3 to see the default's behaviour.
// One JSON summary line on stdout (and --summary). Exit 0 when every
// connection was ESTABLISHED and every manager stopped.
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <string>
#include <utility>
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

// Every manager's next deadline, earliest first. A rescheduled timer leaves
// its old entry behind; an entry counts only while it equals the manager's
// current deadline.
using Deadline = std::pair<TimePoint, std::size_t>;  // (when, client index)
using DeadlineHeap = std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>;

struct Timer final : TimerService {
  DeadlineHeap* heap = nullptr;
  std::size_t index = 0;
  TimePoint deadline = TimePoint::max();
  TimePoint now() const override { return Clock::now(); }
  void schedule(TimePoint d) override {
    deadline = d;
    if (d != TimePoint::max())
      heap->emplace(d, index);
  }
};

struct NullSink final : cm::PacketSink {
  std::uint64_t packets = 0;
  void deliver(NodeId, std::span<const std::byte>) override { ++packets; }
  void send_capacity(bool) override {}
};

struct Client {
  IpAddr addr;
  std::unique_ptr<rdma::VerbsSeam> seam;
  Timer timer;
  NullSink sink;
  std::unique_ptr<cm::Manager> mgr;
  std::optional<rdma::SeamPump> pump;  // over *seam
  TimePoint established{};
};

std::int64_t realtime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

// A well-formed IPv4/UDP datagram from a TEST-NET-1 source (RFC 5737) to the
// hub's discard port: the hub's kernel accepts it from the TUN device and any
// ICMP answer has no route back, so the benchmark causes no further traffic.
std::vector<std::byte> udp_probe(const IpAddr& hub_overlay) {
  std::vector<std::uint8_t> p(64, 0);
  p[0] = 0x45;
  p[2] = 0;
  p[3] = 64;  // total length
  p[8] = 64;  // TTL
  p[9] = 17;  // UDP
  p[12] = 192, p[13] = 0, p[14] = 2, p[15] = 1;
  const std::uint32_t dst = hub_overlay.v4_host_order();
  p[16] = static_cast<std::uint8_t>(dst >> 24), p[17] = static_cast<std::uint8_t>(dst >> 16);
  p[18] = static_cast<std::uint8_t>(dst >> 8), p[19] = static_cast<std::uint8_t>(dst);
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2)
    sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  p[10] = static_cast<std::uint8_t>(~sum >> 8), p[11] = static_cast<std::uint8_t>(~sum);
  p[20] = 0x30, p[21] = 0x39;  // source port 12345
  p[23] = 9;                   // discard
  p[25] = 44;                  // UDP length; checksum 0 = none (IPv4)
  std::vector<std::byte> out(p.size());
  std::memcpy(out.data(), p.data(), p.size());
  return out;
}

struct Args {
  std::string peer, addrs, addr_file, summary;
  std::string hub_overlay = "10.100.0.1";
  std::string go_file;
  std::string log_level = "warn";
  std::int64_t start_at_ms = 0;
  int connect_limit_s = 120, hold_s = 0;
  int retry_count = 7;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: needs a value\n", k.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    const bool num = end != v.c_str() && *end == '\0' && n >= 0;
    if (k == "--peer")
      a.peer = v;
    else if (k == "--addrs")
      a.addrs = v;
    else if (k == "--addr-file")
      a.addr_file = v;
    else if (k == "--hub-overlay")
      a.hub_overlay = v;
    else if (k == "--summary")
      a.summary = v;
    else if (k == "--go-file")
      a.go_file = v;
    else if (k == "--log-level")
      a.log_level = v;
    else if (k == "--start-at-ms" && num)
      a.start_at_ms = n;
    else if (k == "--connect-limit-s" && num)
      a.connect_limit_s = static_cast<int>(n);
    else if (k == "--hold-s" && num)
      a.hold_s = static_cast<int>(n);
    else if (k == "--retry-count" && num && n <= 7)
      a.retry_count = static_cast<int>(n);
    else {
      std::fprintf(stderr, "bad argument %s %s\n", k.c_str(), v.c_str());
      return 2;
    }
  }
  std::vector<std::string> texts;
  {
    std::string all = a.addrs;
    if (!a.addr_file.empty()) {
      std::ifstream f(a.addr_file);
      for (std::string line; std::getline(f, line);)
        all += "," + line;
    }
    std::size_t pos = 0;
    while (pos <= all.size()) {
      const auto comma = all.find(',', pos);
      const auto item =
          all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (!item.empty())
        texts.push_back(item);
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  const auto hub = IpAddr::parse(a.peer);
  const auto hub_overlay = IpAddr::parse(a.hub_overlay);
  if (!hub || !hub_overlay || !hub_overlay->is_v4() || texts.empty()) {
    std::fprintf(stderr, "need --peer ADDR and --addrs/--addr-file with addresses\n");
    return 2;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  // info shows every attempt's states and teardown reasons (why a REQ was
  // not sent, why a connection was dropped); warn keeps long runs readable.
  spdlog::set_level(spdlog::level::from_str(a.log_level));
  // Three fds per seam (rdma_cm channel, async, completion channel).
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  std::vector<std::unique_ptr<Client>> clients;
  DeadlineHeap deadlines;
  std::uint32_t start_failures = 0;
  const auto t_start0 = Clock::now();
  for (const auto& t : texts) {
    auto addr = IpAddr::parse(t);
    if (!addr) {
      ++start_failures;
      continue;
    }
    auto c = std::make_unique<Client>();
    c->addr = *addr;
    c->timer.heap = &deadlines;
    c->timer.index = clients.size();
    auto seam = rdma::VerbsSeam::create();
    if (!seam) {
      std::fprintf(stderr, "%s: %s\n", t.c_str(), seam.error().message().c_str());
      ++start_failures;
      continue;
    }
    c->seam = std::move(*seam);
    cm::ManagerConfig cfg;
    cfg.local = Endpoint{*addr, 7471};
    cfg.incarnation = (static_cast<std::uint64_t>(realtime_ms()) << 16) ^ addr->v4_host_order() ^ 1;
    cfg.overlay = IpAddr::v4(0xc0000201u);
    // Small on purpose: only the hub's memory is measured.
    cfg.mtu = 2048;
    cfg.srq_size = 16;
    cfg.send_slots = 4;
    cfg.qp_send_depth = 4;
    cfg.max_connections = 4;
    cfg.idle_timeout = std::chrono::hours(1);
    cfg.connect_timeout = 30s;
    cfg.retry_count = static_cast<std::uint8_t>(a.retry_count);
    cfg.resolve_timeout = 10s;
    c->mgr = std::make_unique<cm::Manager>(cfg, *c->seam, c->timer, c->sink);
    c->seam->set_sink(c->mgr.get());
    c->pump.emplace(*c->seam);
    if (auto r = c->mgr->start(); !r) {
      std::fprintf(stderr, "%s: start: %s\n", t.c_str(), r.error().message().c_str());
      ++start_failures;
      continue;
    }
    clients.push_back(std::move(c));
  }
  const double start_ms = to_ms(Clock::now() - t_start0);
  std::printf("READY %zu managers in %.0f ms (%u failed)\n", clients.size(), start_ms,
              start_failures);
  std::fflush(stdout);

  // One epoll set over every manager's three fds, level-triggered like
  // rcnetd's sd-event sources. An fd can belong to several managers:
  // librdmacm opens each device once per process, so every seam on it
  // shares the context's async fd. Each registered fd is a Watch with its
  // owners; data.u64 is the Watch's index.
  struct Watch {
    int kind;  // 0 cm, 1 async, 2 cq
    std::vector<std::size_t> owners;
  };
  std::vector<Watch> watches;
  std::map<int, std::size_t> watch_of;  // fd -> index in watches
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    std::perror("epoll_create1");
    return 1;
  }
  for (std::size_t i = 0; i < clients.size(); ++i) {
    const auto seam_fds = clients[i]->pump->fds();
    for (int k = 0; k < 3; ++k) {
      const int fd = seam_fds[static_cast<std::size_t>(k)];
      if (fd < 0)
        continue;
      if (auto it = watch_of.find(fd); it != watch_of.end()) {
        watches[it->second].owners.push_back(i);
        continue;
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = watches.size();
      if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        std::perror("epoll_ctl");
        return 1;
      }
      watch_of.emplace(fd, watches.size());
      watches.push_back({k, {i}});
    }
  }
  std::vector<epoll_event> events(256);
  std::vector<rdma::SeamPump::Ready> ready(clients.size());
  std::vector<char> touched(clients.size(), 0);
  std::vector<std::size_t> visit;    // managers to pump on this wakeup
  std::vector<std::size_t> pending;  // managers whose CQ drain hit its budget
  std::vector<std::size_t> changed;  // managers visited: their state may have moved
  auto pump = [&](Duration max_wait) {
    changed.clear();
    TimePoint next = Clock::now() + max_wait;
    while (!deadlines.empty() &&
           clients[deadlines.top().second]->timer.deadline != deadlines.top().first)
      deadlines.pop();  // stale entry
    if (!deadlines.empty())
      next = std::min(next, deadlines.top().first);
    const auto wait = pending.empty() ? next - Clock::now() : Duration{0};
    const int ms = static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wait + 999us).count()));
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), ms);
    visit.clear();
    auto mark = [&](std::size_t i) {
      if (!touched[i]) {
        touched[i] = 1;
        visit.push_back(i);
      }
    };
    for (int e = 0; e < n; ++e) {
      const Watch& w = watches[events[static_cast<std::size_t>(e)].data.u64];
      for (auto i : w.owners) {
        (w.kind == 0 ? ready[i].cm : w.kind == 1 ? ready[i].async : ready[i].cq) = true;
        mark(i);
      }
    }
    for (auto i : pending)
      mark(i);
    pending.clear();
    for (auto i : visit) {
      if (clients[i]->pump->pump(ready[i]))
        pending.push_back(i);
      ready[i] = {};
      touched[i] = 0;
      changed.push_back(i);
    }
    const TimePoint now = Clock::now();
    while (!deadlines.empty() && deadlines.top().first <= now) {
      const auto [when, i] = deadlines.top();
      deadlines.pop();
      auto& c = *clients[i];
      if (c.timer.deadline != when)
        continue;  // stale entry
      c.timer.deadline = TimePoint::max();
      c.mgr->on_timer();
      changed.push_back(i);
    }
  };

  while (a.start_at_ms > 0 && realtime_ms() < a.start_at_ms && !g_stop)
    pump(std::chrono::milliseconds(std::min<std::int64_t>(a.start_at_ms - realtime_ms(), 20)));
  while (!a.go_file.empty() && access(a.go_file.c_str(), F_OK) != 0 && !g_stop)
    pump(20ms);
  const std::int64_t go_realtime = realtime_ms();
  const auto t_go = Clock::now();
  const auto probe = udp_probe(*hub_overlay);
  for (auto& c : clients)
    (void)c->mgr->send(Endpoint{*hub, 7471}, probe);
  std::size_t established = 0;
  std::int64_t last_established_realtime = 0;
  const auto connect_end = t_go + std::chrono::seconds(a.connect_limit_s);
  // The sends above may have changed every manager: look at each once.
  changed.clear();
  for (std::size_t i = 0; i < clients.size(); ++i)
    changed.push_back(i);
  while (established < clients.size() && Clock::now() < connect_end && !g_stop) {
    // Only managers visited since the last look can have become ESTABLISHED.
    for (auto i : changed) {
      auto& c = *clients[i];
      if (c.established == TimePoint{} && c.mgr->counters().connects_established > 0) {
        c.established = Clock::now();
        last_established_realtime = realtime_ms();
        ++established;
      }
    }
    changed.clear();
    if (established < clients.size())
      pump(50ms);
  }
  const double connect_ms = to_ms(Clock::now() - t_go);
  // "ever ESTABLISHED" is what the setup rate counts; "in service now" is what
  // the hub's memory is divided by, and the two differ when a connection was
  // made and then dropped (the state counts below say where the rest are).
  std::size_t in_service = 0;
  std::map<std::string, std::size_t> states;
  std::vector<std::string> never;
  for (auto& c : clients) {
    const auto snap = c->mgr->snapshot();
    for (const auto& q : snap.qps) {
      ++states[std::string(cm::to_string(q.state))];
      if (q.in_service && q.state == cm::QpState::kEstablished)
        ++in_service;
    }
    if (c->established == TimePoint{} && never.size() < 20)
      never.push_back(c->addr.to_string());
  }
  // All three times are integers in ms (64-bit): shell arithmetic can add
  // and subtract them, where awk's printf %d clamps at 2^31 - 1.
  std::printf(
      "ESTABLISHED %zu of %zu in %.1f ms go_realtime_ms %lld last_realtime_ms %lld "
      "in_service %zu\n",
      established, clients.size(), connect_ms, static_cast<long long>(go_realtime),
      static_cast<long long>(last_established_realtime), in_service);
  std::string st;
  for (const auto& [k, v] : states)
    st += " " + k + "=" + std::to_string(v);
  std::string nv;
  for (const auto& n : never)
    nv += " " + n;
  std::printf("STATES%s\nNEVER_ESTABLISHED%s\n", st.c_str(), nv.c_str());
  std::fflush(stdout);

  const auto hold_end = Clock::now() + std::chrono::seconds(a.hold_s);
  while (!g_stop && (a.hold_s == 0 || Clock::now() < hold_end))
    pump(200ms);
  g_stop = 0;

  const auto t_down = Clock::now();
  for (auto& c : clients)
    c->mgr->shutdown();
  const auto down_end = t_down + 60s;
  std::size_t stopped = 0;
  while (Clock::now() < down_end && !g_stop) {
    stopped = 0;
    for (auto& c : clients)
      stopped += c->mgr->stopped() ? 1 : 0;
    if (stopped == clients.size())
      break;
    pump(50ms);
  }
  const double shutdown_ms = to_ms(Clock::now() - t_down);
  // Every counter summed over the managers: the reasons behind a shortfall
  // (connect_failures, rejects_received, evictions, ...) are all here.
  nlohmann::json sums = nlohmann::json::object();
  for (auto& c : clients) {
    c->mgr->counters().for_each([&](std::string_view name, std::uint64_t v, std::string_view) {
      auto& slot = sums[std::string(name)];
      slot = (slot.is_null() ? 0 : slot.get<std::uint64_t>()) + v;
    });
  }
  nlohmann::json j;
  j["managers"] = clients.size();
  j["start_failures"] = start_failures;
  j["managers_start_ms"] = start_ms;
  j["go_realtime_ms"] = go_realtime;
  j["last_established_realtime_ms"] = last_established_realtime;
  j["established"] = established;
  j["in_service_after_connect"] = in_service;
  j["connect_ms"] = connect_ms;
  j["shutdown_ms"] = shutdown_ms;
  j["stopped"] = stopped;
  j["counters"] = sums;
  const bool ok = established == clients.size() && stopped == clients.size() &&
                  start_failures == 0 && !clients.empty();
  j["ok"] = ok;
  const std::string out = j.dump();
  std::printf("SUMMARY %s\n", out.c_str());
  std::fflush(stdout);
  if (!a.summary.empty())
    std::ofstream(a.summary) << out << "\n";
  return ok ? 0 : 1;
}
