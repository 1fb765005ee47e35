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
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
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
#include "common/args.hpp"
#include "common/clock.hpp"
#include "common/report.hpp"
#include "rdma/seam_pump.hpp"
#include "rdma/verbs_seam.hpp"

using namespace rcnet;
using bench::realtime_ms;

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

void add_options(CLI::App& app, Args& a) {
  app.add_option("--peer", a.peer, "the hub's underlay address");
  app.add_option("--addrs", a.addrs, "local underlay addresses, comma-separated");
  app.add_option("--addr-file", a.addr_file, "more of them, one line each (commas allowed)");
  app.add_option("--hub-overlay", a.hub_overlay, "the hub's overlay address (the probe's target)");
  app.add_option("--summary", a.summary, "also write the JSON summary to FILE");
  app.add_option("--go-file", a.go_file, "start once FILE exists");
  app.add_option("--log-level", a.log_level, "spdlog level");
  app.add_option("--start-at-ms", a.start_at_ms, "start at this CLOCK_REALTIME ms")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--connect-limit-s", a.connect_limit_s, "give up connecting after S s")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--hold-s", a.hold_s, "hold the connections S s (0: until SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retry-count", a.retry_count, "the clients' RC retry count")
      ->check(CLI::Range(0, 7));
}

// --addrs and the lines of --addr-file, split at commas.
std::vector<std::string> address_texts(const Args& a) {
  std::string all = a.addrs;
  if (!a.addr_file.empty()) {
    std::ifstream f(a.addr_file);
    for (std::string line; std::getline(f, line);)
      all += "," + line;
  }
  std::vector<std::string> texts;
  std::size_t pos = 0;
  while (pos <= all.size()) {
    const auto comma = all.find(',', pos);
    const auto item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty())
      texts.push_back(item);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return texts;
}

// The client managers and the one epoll loop that drives them all.
class Driver {
 public:
  std::vector<std::unique_ptr<Client>> clients;
  // Managers visited by the last pump(): their state may have moved.
  std::vector<std::size_t> changed;

  // One manager per address (bind, listen, PD/CQ/SRQ, buffer pools);
  // returns how many could not be started.
  std::uint32_t start(const std::vector<std::string>& texts, const Args& a) {
    std::uint32_t failures = 0;
    for (const auto& t : texts) {
      if (!start_one(t, a))
        ++failures;
    }
    return failures;
  }

  // One epoll set over every manager's three fds, level-triggered like
  // rcnetd's sd-event sources. An fd can belong to several managers:
  // librdmacm opens each device once per process, so every seam on it
  // shares the context's async fd. Each registered fd is a Watch with its
  // owners; data.u64 is the Watch's index. False on error (printed).
  bool watch() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) {
      std::perror("epoll_create1");
      return false;
    }
    std::map<int, std::size_t> watch_of;  // fd -> index in watches_
    for (std::size_t i = 0; i < clients.size(); ++i) {
      const auto seam_fds = clients[i]->pump->fds();
      for (int k = 0; k < 3; ++k) {
        const int fd = seam_fds[static_cast<std::size_t>(k)];
        if (fd < 0)
          continue;
        if (auto it = watch_of.find(fd); it != watch_of.end()) {
          watches_[it->second].owners.push_back(i);
          continue;
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = watches_.size();
        if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) {
          std::perror("epoll_ctl");
          return false;
        }
        watch_of.emplace(fd, watches_.size());
        watches_.push_back({k, {i}});
      }
    }
    events_.resize(256);
    ready_.resize(clients.size());
    touched_.assign(clients.size(), 0);
    return true;
  }

  // One wakeup, at most `max_wait` from now: visits only the managers whose
  // fds are ready, whose timer is due or whose CQ drain stopped at its
  // budget (O(ready)); they are in `changed` afterwards.
  void pump(Duration max_wait) {
    changed.clear();
    TimePoint next = Clock::now() + max_wait;
    while (!deadlines_.empty() &&
           clients[deadlines_.top().second]->timer.deadline != deadlines_.top().first)
      deadlines_.pop();  // stale entry
    if (!deadlines_.empty())
      next = std::min(next, deadlines_.top().first);
    const auto wait = pending_.empty() ? next - Clock::now() : Duration{0};
    const int ms = static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wait + 999us).count()));
    const int n = epoll_wait(ep_, events_.data(), static_cast<int>(events_.size()), ms);
    visit_.clear();
    for (int e = 0; e < n; ++e) {
      const Watch& w = watches_[events_[static_cast<std::size_t>(e)].data.u64];
      for (auto i : w.owners) {
        (w.kind == 0 ? ready_[i].cm : w.kind == 1 ? ready_[i].async : ready_[i].cq) = true;
        mark(i);
      }
    }
    for (auto i : pending_)
      mark(i);
    pending_.clear();
    for (auto i : visit_) {
      if (clients[i]->pump->pump(ready_[i]))
        pending_.push_back(i);
      ready_[i] = {};
      touched_[i] = 0;
      changed.push_back(i);
    }
    fire_timers();
  }

 private:
  struct Watch {
    int kind;  // 0 cm, 1 async, 2 cq
    std::vector<std::size_t> owners;
  };

  bool start_one(const std::string& text, const Args& a) {
    auto addr = IpAddr::parse(text);
    if (!addr)
      return false;
    auto c = std::make_unique<Client>();
    c->addr = *addr;
    c->timer.heap = &deadlines_;
    c->timer.index = clients.size();
    auto seam = rdma::VerbsSeam::create();
    if (!seam) {
      std::fprintf(stderr, "%s: %s\n", text.c_str(), seam.error().message().c_str());
      return false;
    }
    c->seam = std::move(*seam);
    c->mgr = std::make_unique<cm::Manager>(client_config(*addr, a), *c->seam, c->timer, c->sink);
    c->seam->set_sink(c->mgr.get());
    c->pump.emplace(*c->seam);
    if (auto r = c->mgr->start(); !r) {
      std::fprintf(stderr, "%s: start: %s\n", text.c_str(), r.error().message().c_str());
      return false;
    }
    clients.push_back(std::move(c));
    return true;
  }

  static cm::ManagerConfig client_config(const IpAddr& addr, const Args& a) {
    cm::ManagerConfig cfg;
    cfg.local = Endpoint{addr, 7471};
    cfg.incarnation = (static_cast<std::uint64_t>(realtime_ms()) << 16) ^ addr.v4_host_order() ^ 1;
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
    return cfg;
  }

  void mark(std::size_t i) {
    if (!touched_[i]) {
      touched_[i] = 1;
      visit_.push_back(i);
    }
  }

  void fire_timers() {
    const TimePoint now = Clock::now();
    while (!deadlines_.empty() && deadlines_.top().first <= now) {
      const auto [when, i] = deadlines_.top();
      deadlines_.pop();
      auto& c = *clients[i];
      if (c.timer.deadline != when)
        continue;  // stale entry
      c.timer.deadline = TimePoint::max();
      c.mgr->on_timer();
      changed.push_back(i);
    }
  }

  DeadlineHeap deadlines_;
  int ep_ = -1;
  std::vector<Watch> watches_;
  std::vector<epoll_event> events_;
  std::vector<rdma::SeamPump::Ready> ready_;
  std::vector<char> touched_;
  std::vector<std::size_t> visit_;    // managers to pump on this wakeup
  std::vector<std::size_t> pending_;  // managers whose CQ drain hit its budget
};

// Three fds per seam (rdma_cm channel, async, completion channel).
void raise_fd_limit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
}

// Until --start-at-ms, then until --go-file exists (each only if given).
// Returns the go instant (CLOCK_REALTIME ms).
std::int64_t wait_for_go(const Args& a, Driver& d) {
  while (a.start_at_ms > 0 && realtime_ms() < a.start_at_ms && !g_stop)
    d.pump(std::chrono::milliseconds(std::min<std::int64_t>(a.start_at_ms - realtime_ms(), 20)));
  while (!a.go_file.empty() && access(a.go_file.c_str(), F_OK) != 0 && !g_stop)
    d.pump(20ms);
  return realtime_ms();
}

struct Connected {
  std::size_t established = 0;  // ever ESTABLISHED
  std::int64_t last_established_realtime = 0;
  double connect_ms = 0;
};

// Each manager sends one probe to the hub (a REQ from each address) and the
// loop runs until every manager has had its connection ESTABLISHED, or
// --connect-limit-s.
Connected connect_all(Driver& d, const Endpoint& hub, const std::vector<std::byte>& probe,
                      int limit_s) {
  Connected r;
  const auto t_go = Clock::now();
  for (auto& c : d.clients)
    (void)c->mgr->send(hub, probe);
  const auto connect_end = t_go + std::chrono::seconds(limit_s);
  // The sends above may have changed every manager: look at each once.
  d.changed.clear();
  for (std::size_t i = 0; i < d.clients.size(); ++i)
    d.changed.push_back(i);
  while (r.established < d.clients.size() && Clock::now() < connect_end && !g_stop) {
    // Only managers visited since the last look can have become ESTABLISHED.
    for (auto i : d.changed) {
      auto& c = *d.clients[i];
      if (c.established == TimePoint{} && c.mgr->counters().connects_established > 0) {
        c.established = Clock::now();
        r.last_established_realtime = realtime_ms();
        ++r.established;
      }
    }
    d.changed.clear();
    if (r.established < d.clients.size())
      d.pump(50ms);
  }
  r.connect_ms = to_ms(Clock::now() - t_go);
  return r;
}

// The ESTABLISHED, STATES and NEVER_ESTABLISHED lines the lab scripts read.
// "ever ESTABLISHED" is what the setup rate counts; "in service now" is what
// the hub's memory is divided by, and the two differ when a connection was
// made and then dropped (the state counts say where the rest are). Returns
// the connections in service.
std::size_t print_connected(const Driver& d, const Connected& r, std::int64_t go_realtime) {
  std::size_t in_service = 0;
  std::map<std::string, std::size_t> states;
  std::vector<std::string> never;
  for (const auto& c : d.clients) {
    const auto snap = c->mgr->snapshot();
    for (const auto& q : snap.qps) {
      ++states[std::string(cm::to_string(q.state))];
      if (q.in_service && q.state == cm::ConnState::kEstablished)
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
      r.established, d.clients.size(), r.connect_ms, static_cast<long long>(go_realtime),
      static_cast<long long>(r.last_established_realtime), in_service);
  std::string st;
  for (const auto& [k, v] : states)
    st += " " + k + "=" + std::to_string(v);
  std::string nv;
  for (const auto& n : never)
    nv += " " + n;
  std::printf("STATES%s\nNEVER_ESTABLISHED%s\n", st.c_str(), nv.c_str());
  std::fflush(stdout);
  return in_service;
}

// Graceful shutdown of every manager (DREQ, spec teardown), at most 60 s;
// returns how many stopped and sets `ms` to the time it took.
std::size_t shutdown_all(Driver& d, double& ms) {
  const auto t_down = Clock::now();
  for (auto& c : d.clients)
    c->mgr->shutdown();
  const auto down_end = t_down + 60s;
  std::size_t stopped = 0;
  while (Clock::now() < down_end && !g_stop) {
    stopped = 0;
    for (auto& c : d.clients)
      stopped += c->mgr->stopped() ? 1 : 0;
    if (stopped == d.clients.size())
      break;
    d.pump(50ms);
  }
  ms = to_ms(Clock::now() - t_down);
  return stopped;
}

// Every counter summed over the managers: the reasons behind a shortfall
// (connect_failures, rejects_received, evictions, ...) are all here.
nlohmann::json counter_sums(const Driver& d) {
  nlohmann::json sums = nlohmann::json::object();
  for (const auto& c : d.clients) {
    c->mgr->counters().for_each([&](std::string_view name, std::uint64_t v, std::string_view) {
      auto& slot = sums[std::string(name)];
      slot = (slot.is_null() ? 0 : slot.get<std::uint64_t>()) + v;
    });
  }
  return sums;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"rcnet-bench-load: many rcnet connections into one rcnetd", "rcnet-bench-load"};
  add_options(app, a);
  if (const int rc = bench::parse_args(app, argc, argv); rc >= 0)
    return rc;
  const std::vector<std::string> texts = address_texts(a);
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
  raise_fd_limit();

  // 1. Every manager up.
  Driver d;
  const auto t_start0 = Clock::now();
  const std::uint32_t start_failures = d.start(texts, a);
  const double start_ms = to_ms(Clock::now() - t_start0);
  std::printf("READY %zu managers in %.0f ms (%u failed)\n", d.clients.size(), start_ms,
              start_failures);
  std::fflush(stdout);
  if (!d.watch())
    return 1;

  // 2. Go, 3. connect.
  const std::int64_t go_realtime = wait_for_go(a, d);
  const Connected conn =
      connect_all(d, Endpoint{*hub, 7471}, udp_probe(*hub_overlay), a.connect_limit_s);
  const std::size_t in_service = print_connected(d, conn, go_realtime);

  // 4. Hold, then shut down.
  const auto hold_end = Clock::now() + std::chrono::seconds(a.hold_s);
  while (!g_stop && (a.hold_s == 0 || Clock::now() < hold_end))
    d.pump(200ms);
  g_stop = 0;
  double shutdown_ms = 0;
  const std::size_t stopped = shutdown_all(d, shutdown_ms);

  nlohmann::json j;
  j["managers"] = d.clients.size();
  j["start_failures"] = start_failures;
  j["managers_start_ms"] = start_ms;
  j["go_realtime_ms"] = go_realtime;
  j["last_established_realtime_ms"] = conn.last_established_realtime;
  j["established"] = conn.established;
  j["in_service_after_connect"] = in_service;
  j["connect_ms"] = conn.connect_ms;
  j["shutdown_ms"] = shutdown_ms;
  j["stopped"] = stopped;
  j["counters"] = counter_sums(d);
  const bool ok = conn.established == d.clients.size() && stopped == d.clients.size() &&
                  start_failures == 0 && !d.clients.empty();
  j["ok"] = ok;
  (void)bench::print_summary(j, a.summary, -1, "SUMMARY ");
  return ok ? 0 : 1;
}
