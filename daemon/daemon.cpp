// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "daemon.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fd_store.hpp"
#include "logging.hpp"

namespace rcnet::daemon {

std::uint64_t new_incarnation() {
  std::uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
      // getrandom(2) only fails before the pool is initialised or on EINTR;
      // fall back to time-derived bits rather than refusing to start.
      v = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) ^
          (static_cast<std::uint64_t>(::getpid()) << 32);
    }
  }
  return v;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}
}  // namespace

Daemon::Daemon(EventLoop loop, config::Config cfg, DaemonOptions opts)
    : loop_(std::move(loop)), cfg_(std::move(cfg)), opts_(std::move(opts)) {}

Daemon::~Daemon() {
  // The managers' observers forward to the ctl server: unhook them first.
  if (port_)
    port_->set_observer({});
  // Before the parts it serves from (as its place among the members ensures).
  ctl_.reset();
  // The TUN fd closes before tun_path_ goes (member order); stop watching it.
  if (tun_path_)
    tun_path_->detach();
  tun_path_.reset();
  port_.reset();
  rails_.clear();
}

Result<std::unique_ptr<Daemon>> Daemon::create(config::Config cfg, DaemonOptions opts) {
  auto loop = EventLoop::create();
  if (!loop)
    return loop.error();
  std::unique_ptr<Daemon> d(new Daemon(std::move(*loop), std::move(cfg), std::move(opts)));
  if (auto r = d->start(); !r)
    return r.error();
  return d;
}

Result<void> Daemon::start() {
  incarnation_ = new_incarnation();
  // What systemd kept of the last rcnetd (fd_store.hpp): taken by name below.
  fd_passed_ = FdStore::from_environment();
  // The cluster keys (auth.keys): read now, re-read by each reload.
  if (cfg_.auth.mode != config::AuthMode::kOff && !auth::ready())
    return Error::invalid("auth.mode " + std::string(auth::to_string(cfg_.auth.mode)) +
                          ": libsodium cannot start (no random source)");
  auto keys = config::read_auth_keys(cfg_);
  if (!keys)
    return keys.error();
  cfg_.manager.auth_keys = std::move(*keys);
  if (cfg_.auth.mode != config::AuthMode::kOff) {
    std::string ids;
    for (const auth::Key& k : cfg_.manager.auth_keys)
      ids += (ids.empty() ? "" : ", ") + std::to_string(k.id);
    spdlog::info("peer proofs: auth.mode {}, overlay id \"{}\", keys {} (key {} proves)",
                 auth::to_string(cfg_.auth.mode), cfg_.auth.overlay, ids,
                 cfg_.manager.auth_keys.front().id);
  }

  // Signals first, so a SIGTERM during a slow start is not lost.
  auto term = loop_.add_signal(SIGTERM, "SIGTERM",
                               [this](const signalfd_siginfo&) { request_stop("SIGTERM"); });
  if (!term)
    return term.error();
  sig_term_ = std::move(*term);
  auto intr = loop_.add_signal(SIGINT, "SIGINT",
                               [this](const signalfd_siginfo&) { request_stop("SIGINT"); });
  if (!intr)
    return intr.error();
  sig_int_ = std::move(*intr);
  auto hup = loop_.add_signal(SIGHUP, "SIGHUP", [this](const signalfd_siginfo&) {
    if (auto r = reload(); !r)
      spdlog::warn("reload: {}", r.error().context);
  });
  if (!hup)
    return hup.error();
  sig_hup_ = std::move(*hup);

  if (auto r = start_rails(); !r)
    return r;
  start_rdma_monitor();

  if (auto r = setup_tun(); !r)
    return r;
  setup_peer_memory();

  auto status = loop_.add_time(Clock::now() + kStatusInterval, std::chrono::milliseconds(50),
                               "status", [this] { on_status_tick(); });
  if (!status)
    return status.error();
  status_timer_ = std::move(*status);
  auto trim = loop_.add_time(TimePoint::max(), std::chrono::milliseconds(500), "heap-trim", [this] {
    last_heap_trim_ = Clock::now();
    // A walk of the arena's free chunks (a few hundred KiB here; the
    // buffers are mmap'ed chunks of their own and stay).
    ::malloc_trim(0);
  });
  if (!trim)
    return trim.error();
  heap_trim_timer_ = std::move(*trim);
  // Off until a graceful stop begins: an enabled post source costs every
  // event a second loop iteration, and it only has work while stopping.
  auto post = loop_.add_post("after-iteration", [this] { after_iteration(); });
  if (!post)
    return post.error();
  after_iteration_ = std::move(*post);
  if (auto r = after_iteration_.set_enabled(SD_EVENT_OFF); !r)
    return r;
  auto deadline = loop_.add_time(TimePoint::max(), std::chrono::milliseconds(10), "stop-deadline",
                                 [this] { on_stop_deadline(); });
  if (!deadline)
    return deadline.error();
  stop_deadline_ = std::move(*deadline);
  if (auto r = loop_.enable_watchdog(); !r)
    return r;

  return start_ctl_server();
}

Result<void> Daemon::start_rails() {
  const std::size_t n = cfg_.rail_count();
  watches_.emplace(loop_);
  const RailShared shared{.devices = devices_, .watches = &*watches_};
  for (std::size_t k = 0; k < n; ++k) {
    cm::ManagerConfig mc = cfg_.manager_for_rail(k);
    mc.incarnation = incarnation_;
    // Each manager delivers into the packet port made below (it binds itself).
    auto rail =
        RailRuntime::create(loop_, k, mc, cm::null_sink(), shared, [this] { loop_.exit(1); });
    if (!rail) {
      if (n == 1)
        return rail.error();
      return Error{rail.error().code, fmt::format("rail {}: {}", k, rail.error().context)};
    }
    rails_.push_back(std::move(*rail));
  }
  if (auto r = make_port(); !r)
    return r;
  // The overlay as an IP link (tun_path.hpp): next hops from the kernel's
  // FIB (fib_, made with the TUN).
  tun_path_ = std::make_unique<TunPath>(loop_, *port_, cfg_.manager.offload ? wire::kVnetHdrLen : 0,
                                        TunPath::Overlay{.address = cfg_.tun_address,
                                                         .address6 = cfg_.tun_address6,
                                                         .source_check = cfg_.tun_source_check},
                                        [this](const IpAddr& dst) -> std::optional<IpAddr> {
                                          return fib_ ? fib_->gateway(dst) : std::nullopt;
                                        });
  return {};
}

cm::RailMap Daemon::rail_map(std::size_t k) const {
  const IpAddr own = cfg_.rails[k].local.addr;
  return {
      .underlay = [this, k, own](const IpAddr& overlay) -> std::optional<Endpoint> {
        auto ep = cfg_.peer_endpoint_for(overlay, k);
        // A mapping back to ourselves would make us connect to our own
        // listener.
        if (ep && ep->addr == own)
          return std::nullopt;
        return ep;
      },
      .overlays = [this, k](const IpAddr& underlay) -> std::optional<cm::PeerOverlays> {
        const auto primary = cfg_.overlay_for(underlay, k);
        if (!primary)
          return std::nullopt;
        cm::PeerOverlays o = {*primary, IpAddr{}};
        if (cfg_.tun_address6) {
          if (auto six = cfg_.overlay_for(underlay, k, AF_INET6))
            o[1] = *six;
        }
        return o;
      },
  };
}

// The one place that chooses between one rail and several: every other
// part of the daemon talks to port_ (cm/packet_port.hpp).
Result<void> Daemon::make_port() {
  const std::size_t n = rails_.size();
  if (n == 1) {
    // One rail: straight to its manager, as it always did; no RailSet.
    port_ = std::make_unique<cm::OneRailPort>(manager(0), rail_map(0));
    return {};
  }
  auto timer = LoopTimer::create(loop_);
  if (!timer)
    return timer.error();
  rails_timer_ = std::move(*timer);
  std::vector<cm::RailSet::Rail> rails;
  for (std::size_t k = 0; k < n; ++k)
    rails.push_back({.manager = &manager(k), .map = rail_map(k)});
  auto set = std::make_unique<cm::RailSet>(
      cm::RailSetConfig{.mode = cfg_.rails_mode == config::RailsMode::kStripe
                                    ? cm::RailsMode::kStripe
                                    : cm::RailsMode::kActiveBackup,
                        .holddown = cfg_.rails_holddown,
                        .idle_timeout = cfg_.manager.idle_timeout},
      std::move(rails), *rails_timer_);
  rails_timer_->set_handler([s = set.get()] { s->on_timer(); });
  port_ = std::move(set);
  spdlog::info("{} rails, mode {} (holddown {:.0f} ms)", n, config::to_string(cfg_.rails_mode),
               to_ms(cfg_.rails_holddown));
  return {};
}

void Daemon::start_rdma_monitor() {
  auto offered = RdmaMonitor::probe();
  if (!offered || !*offered) {
    rdma_monitor_state_ =
        offered ? "not offered by this kernel" : "not offered (" + offered.error().message() + ")";
    spdlog::info(
        "RDMA netlink monitor: {} (Linux 6.12 and later): a returning RDMA device is found by "
        "polling every {:.0f} ms",
        rdma_monitor_state_, to_ms(RailRuntime::kReadoptInterval));
    return;
  }
  auto m =
      RdmaMonitor::create(loop_, {.event = [this](const MonitorEvent& ev) { on_rdma_event(ev); },
                                  .overflow = [this] { on_rdma_overflow(); }});
  if (!m) {
    rdma_monitor_state_ = "failed: " + m.error().message();
    spdlog::warn(
        "RDMA netlink monitor: cannot subscribe ({}); a returning RDMA device is found by "
        "polling every {:.0f} ms",
        m.error().message(), to_ms(RailRuntime::kReadoptInterval));
    return;
  }
  rdma_monitor_ = std::move(*m);
  rdma_monitor_state_ = "subscribed";
  spdlog::info(
      "RDMA netlink monitor: subscribed (RDMA_NL_GROUP_NOTIFY): device removal and return "
      "noticed at once; the readopt poll stays as the fallback");
}

void Daemon::on_rdma_event(const MonitorEvent& ev) {
  std::vector<RailDeviceView> views;
  for (const auto& r : rails_)
    views.push_back(r->device_view());
  const auto actions = decide(ev, views);
  const bool any = std::any_of(actions.begin(), actions.end(),
                               [](MonitorAction a) { return a != MonitorAction::kNone; });
  spdlog::log(any ? spdlog::level::info : spdlog::level::debug, "RDMA netlink monitor: {}",
              describe(ev));
  if (stopping_)
    return;
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    switch (actions[k]) {
      case MonitorAction::kRelease:
      case MonitorAction::kLate:
        rails_[k]->device_unregistered(describe(ev));
        break;
      case MonitorAction::kAdopt:
        (void)rails_[k]->adopt_now(cm::DevicePath::kNetlinkMonitor);
        break;
      case MonitorAction::kNone:
        break;
    }
  }
}

void Daemon::on_rdma_overflow() {
  // The lost notices may have been a return: the poll's check, now.
  for (auto& r : rails_)
    (void)r->adopt_now(cm::DevicePath::kPoll);
}

std::string Daemon::rdma_monitor_state() const {
  if (rdma_monitor_ && !rdma_monitor_->healthy())
    return "failed: receive error";
  return rdma_monitor_state_;
}

Result<void> Daemon::start_ctl_server() {
  std::vector<CtlDaemonParts::Rail> rails;
  for (auto& r : rails_)
    rails.push_back({&r->manager(), &r->seam()});
  auto backend = make_daemon_backend({
      .rails = std::move(rails),
      .snapshot = [this] { return snapshot(); },
      .config = cfg_,
      .tun_counters = tun_path_->counters(),
      .config_path = opts_.config_path,
      .start_time = start_time_,
      .status_text = [this] { return status_text(); },
      .reload = [this] { return reload(); },
      .rdma_monitor = [this] { return rdma_monitor_state(); },
  });
  auto ctl =
      CtlServer::create(loop_, std::move(backend),
                        {.socket_path = cfg_.ctl_socket, .group = cfg_.ctl_group, .served = [this] {
                           heap_activity();
                         }});
  if (!ctl)
    return ctl.error();
  ctl_ = std::move(*ctl);
  // rcnetctl monitor: every connection event, as it happens. Every change
  // of the STATUS= text is a QP state change, hence an event: it arms the
  // status timer, which sends at most one update per kStatusInterval and
  // does not wake a daemon whose connections do not change.
  auto observer = [this](const cm::Event& e) {
    if (ctl_)
      ctl_->publish(e);
    if (!status_timer_.enabled())
      (void)status_timer_.arm_at(Clock::now() + kStatusInterval);
    heap_activity();
  };
  port_->set_observer(observer);
  return {};
}

// rc0 as the last rcnetd left it in systemd's fd store (fd_store.hpp), if
// it is still what the config asks for; else nullopt, the stored copy
// released (the kernel deletes that device once systemd closes it).
std::optional<TunDevice> Daemon::adopt_tun(const std::vector<IpPrefix>& addresses,
                                           std::uint32_t gso_segs) {
  UniqueFd kept = fd_passed_.take(kTunFdName);
  if (!kept)
    return std::nullopt;
  auto tun = TunDevice::adopt(std::move(kept), cfg_.tun_name, cfg_.manager.offload, cfg_.tun_netns);
  Result<void> r =
      tun ? tun->configure(addresses, cfg_.manager.mtu, gso_segs) : Result<void>(tun.error());
  if (r)
    return std::move(*tun);
  spdlog::warn("the TUN kept in systemd's fd store is not taken over ({}): a new {} replaces it",
               r.error().message(), cfg_.tun_name);
  FdStore::remove(kTunFdName);
  return std::nullopt;
}

Result<void> Daemon::setup_tun() {
  // A super-packet for a peer without offload goes as one SEND per segment,
  // all in its SQ at once (two WRs kept for reclaim and drain).
  const std::uint32_t gso_segs = cfg_.manager.offload ? cfg_.manager.qp_send_depth - 2 : 0;
  const std::vector<IpPrefix> addresses = cfg_.overlay_prefixes();
  if (auto kept = adopt_tun(addresses, gso_segs))
    return start_tun(std::move(*kept), addresses);
  // The device the stored fd held goes when systemd closes its copy (an
  // FDSTOREREMOVE above, handled after this message): its name is busy
  // until then.
  auto tun = TunDevice::open(cfg_.tun_name, cfg_.manager.offload, cfg_.tun_netns);
  for (int i = 0; i < 40 && !tun && tun.error().code == std::errc::device_or_resource_busy; ++i) {
    ::usleep(50'000);
    tun = TunDevice::open(cfg_.tun_name, cfg_.manager.offload, cfg_.tun_netns);
  }
  if (!tun) {
    // The operator needs the config key, not only the call that failed; a
    // hint only where it is the likely cause.
    const auto& e = tun.error();
    std::string ctx = "cannot create TUN " + cfg_.tun_name;
    if (!cfg_.tun_netns.empty())
      ctx += " in tun.netns \"" + cfg_.tun_netns + "\"";
    if (e.code == std::errc::operation_not_permitted && e.context.rfind("setns", 0) == 0)
      ctx += " (setns needs CAP_SYS_ADMIN)";
    if (e.context.rfind("TUNSETOFFLOAD", 0) == 0 || e.context.rfind("TUNSETVNET", 0) == 0)
      ctx += " with offloads (transport.offload = false turns them off)";
    return Error{e.code, ctx + ": " + e.context};
  }
  if (auto r = tun->configure(addresses, cfg_.manager.mtu, gso_segs); !r) {
    if (cfg_.tun_netns.empty())
      return r;
    // Configuring inside the namespace needs setns(2), i.e. CAP_SYS_ADMIN
    // (systemd: the rcnetd-netns.conf drop-in).
    return Error{r.error().code, "cannot configure TUN " + cfg_.tun_name + " in tun.netns \"" +
                                     cfg_.tun_netns +
                                     "\" (setns needs CAP_SYS_ADMIN): " + r.error().context};
  }
  // Kept across a restart: systemd holds a copy (no-op outside systemd).
  if (FdStore::store(tun->fd(), kTunFdName))
    spdlog::debug("TUN {} handed to systemd's fd store", tun->name());
  return start_tun(std::move(*tun), addresses);
}

Result<void> Daemon::start_tun(TunDevice tun, const std::vector<IpPrefix>& addresses) {
  tun_.emplace(std::move(tun));
  tun_path_->set_uso(tun_->uso());
  if (tun_->uso() && !cfg_.manager.uso) {
    // USO is the kernel's to grant (6.2+), known only now that the TUN is
    // open: the rails' next REQ/REP advertise kCapUso (wire/private_data.hpp).
    cfg_.manager.uso = true;
    for (std::size_t k = 0; k < rails_.size(); ++k) {
      cm::ManagerConfig mc = cfg_.manager_for_rail(k);
      mc.incarnation = incarnation_;
      manager(k).reconfigure(mc);
    }
  }
  auto fib = FibNextHop::create(loop_, tun_->netns(), tun_->name());
  if (!fib)
    return Error{fib.error().code, "route lookups on " + tun_->name() + ": " + fib.error().context};
  fib_ = std::move(*fib);
  if (auto r = tun_path_->attach(tun_->fd()); !r)
    return r;
  std::string shown;
  for (const IpPrefix& p : addresses)
    shown += (shown.empty() ? "" : " ") + p.to_string();
  spdlog::info("TUN {} up: {} mtu {}{}, offloads: {}{}", tun_->name(), shown, cfg_.manager.mtu,
               cfg_.tun_netns.empty() ? "" : " in netns " + cfg_.tun_netns, tun_->offloads(),
               tun_->adopted() ? "; kept from the last rcnetd by systemd's fd store (ifindex, "
                                 "addresses and routes unchanged)"
                               : "");
  return {};
}

int Daemon::run() {
  if (cfg_.poll_us != 0)
    spdlog::info("busy-poll: {} us after each burst of events (transport.poll_us)", cfg_.poll_us);
  last_status_ = status_text();
  sd_notifyf(0, "READY=1\nSTATUS=%s", last_status_.c_str());
  auto r = loop_.run(std::chrono::microseconds(cfg_.poll_us));
  // One line with every nonzero counter, so that a run's totals survive in
  // the journal after the ctl socket is gone.
  std::string totals;
  auto add = [&](std::string_view name, std::uint64_t v, std::string_view) {
    if (v != 0)
      totals += fmt::format("{}{}={}", totals.empty() ? "" : " ", name, v);
  };
  snapshot().counters.for_each(add);
  tun_path_->counters().for_each(add);
  if (cfg_.poll_us != 0) {
    add("loop_sleeps", loop_.stats().sleeps, "");
    add("loop_empty_polls", loop_.stats().empty_polls, "");
  }
  spdlog::info("counters at exit: {}", totals.empty() ? "all zero" : totals);
  if (!r) {
    spdlog::critical("event loop failed: {}", r.error().message());
    return 1;
  }
  return *r;
}

cm::Snapshot Daemon::snapshot() const {
  return port_->snapshot();
}

std::vector<rdma::Qpn> Daemon::live_qpns() const {
  std::vector<rdma::Qpn> all;
  for (const auto& r : rails_) {
    auto q = r->manager().live_qpns();
    all.insert(all.end(), q.begin(), q.end());
  }
  return all;
}

std::size_t Daemon::stop_work_left() const {
  std::size_t n = 0;
  for (const auto& r : rails_) {
    for (const auto& q : r->manager().snapshot().qps)
      n += static_cast<std::size_t>(cm::ConnState::kDestroyed) - static_cast<std::size_t>(q.state);
  }
  return n;
}

std::size_t Daemon::live_cm_ids() const {
  std::size_t n = 0;
  for (const auto& r : rails_)
    n += r->manager().live_cm_ids();
  return n;
}

std::string Daemon::status_text() const {
  return status_text(snapshot());
}

std::string Daemon::status_text(const cm::Snapshot& snap) const {
  std::size_t established = 0, teardown = 0;
  for (const auto& q : snap.qps) {
    if (q.state == cm::ConnState::kEstablished && q.in_service)
      ++established;
    if (cm::is_teardown(q.state))
      ++teardown;
  }
  std::string s = std::to_string(established) + " connections established, " +
                  std::to_string(teardown) + " QPs in teardown";
  for (const auto& r : rails_) {
    if (!r->manager().device_present()) {
      s = (rails_.size() == 1
               ? std::string("RDMA device removed, waiting for it: ")
               : fmt::format("rail {}: RDMA device removed, waiting for it: ", r->index())) +
          s;
    }
  }
  for (const auto& r : snap.rails) {
    if (r.state != cm::RailState::kUp && rails_.at(r.index)->manager().device_present())
      s = fmt::format("rail {} {}: ", r.index, cm::to_string(r.state)) + s;
  }
  if (stopping_)
    s = "stopping: " + s;
  return s;
}

// The peers the last rcnetd had links with (kept in systemd's fd store by
// record_peers()) are dialled now rather than on their first packet; then
// this process keeps the list, in a memfd of its own stored the same way.
void Daemon::setup_peer_memory() {
  UniqueFd kept = fd_passed_.take(kPeersFdName);
  if (kept) {
    std::string text(64 * 1024, '\0');
    const ssize_t n = ::pread(kept.get(), text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    std::size_t dialled = 0, pos = 0;
    while (pos < text.size()) {
      const std::size_t end = std::min(text.find('\n', pos), text.size());
      if (const auto a = IpAddr::parse(text.substr(pos, end - pos)); a) {
        port_->dial(*a);
        ++dialled;
      }
      pos = end + 1;
    }
    if (dialled > 0)
      spdlog::info("dialling the {} peers the last rcnetd had links with", dialled);
    peers_fd_ = std::move(kept);
  } else {
    UniqueFd fd(::memfd_create("rcnet-peers", MFD_CLOEXEC));
    if (fd && FdStore::store(fd.get(), kPeersFdName))
      peers_fd_ = std::move(fd);
  }
  if (fd_passed_.passed() > 0)
    spdlog::debug("systemd's fd store passed {} fds", fd_passed_.passed());
  fd_passed_ = FdStore();  // any other name passed is not ours: closed
}

void Daemon::record_peers(const cm::Snapshot& snap) {
  if (!peers_fd_)
    return;
  std::vector<IpAddr> up;
  for (const cm::PeerSnapshot& p : snap.peers) {
    if (p.conn_id != 0 && !p.overlay.empty())
      up.push_back(p.overlay);
  }
  std::sort(up.begin(), up.end());
  up.erase(std::unique(up.begin(), up.end()), up.end());
  std::string text;
  for (const IpAddr& a : up)
    text += a.to_string() + "\n";
  if (text == recorded_peers_)
    return;
  if (::pwrite(peers_fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
      ::ftruncate(peers_fd_.get(), static_cast<off_t>(text.size())) != 0) {
    spdlog::warn("cannot record the peers for the next rcnetd: {}", std::strerror(errno));
    return;
  }
  recorded_peers_ = std::move(text);
}

void Daemon::on_status_tick() {
  // One snapshot for both (a copy of every connection's state).
  const cm::Snapshot snap = snapshot();
  record_peers(snap);
  const std::string s = status_text(snap);
  if (s != last_status_) {
    last_status_ = s;
    sd_notifyf(0, "STATUS=%s", s.c_str());
  }
  // Not re-armed here: the next connection event does (start_ctl_server).
}

TimePoint Daemon::next_heap_trim(TimePoint last_trim, TimePoint now) {
  return std::max(now + kHeapTrimSettle, last_trim + kHeapTrimInterval);
}

void Daemon::heap_activity() {
  if (heap_trim_timer_.valid() && !heap_trim_timer_.enabled())
    (void)heap_trim_timer_.arm_at(next_heap_trim(last_heap_trim_, Clock::now()));
}

void Daemon::request_stop(std::string_view why) {
  if (stopping_) {
    spdlog::info("{}: already stopping", why);
    return;
  }
  stopping_ = true;
  stop_started_ = Clock::now();
  const auto& mc = cfg_.manager;
  const Duration bound = std::min<Duration>(
      mc.disconnect_timeout + mc.last_wqe_timeout + mc.drain_timeout + kStopSlack, kStopCap);
  stop_work_ = stop_work_left();
  spdlog::info(
      "{}: stopping; tearing down {} QPs (bound {:.0f} ms, extended while teardowns move, "
      "{:.0f} ms at most)",
      why, live_qpns().size(), to_ms(bound), to_ms(kStopCap));
  sd_notify(0, "STOPPING=1");
  tun_path_->stop_reading();
  if (ctl_)
    ctl_->stopping();
  port_->stopping();
  for (auto& r : rails_) {
    r->stopping();
    r->manager().shutdown();
  }
  (void)stop_deadline_.arm_at(stop_started_ + bound);
  // From now on the post source ends the loop once the manager reports
  // stopped(), checking after every iteration. Enabled here, it is not
  // pending for this one; the manager may already be stopped (no
  // connections), so check once now.
  (void)after_iteration_.set_enabled(SD_EVENT_ON);
  after_iteration();
}

void Daemon::after_iteration() {
  if (!stopping_)
    return;
  for (const auto& r : rails_) {
    if (!r->manager().stopped())
      return;
  }
  if (live_cm_ids() != 0 || !live_qpns().empty())
    return;
  spdlog::info("stopped: every QP torn down in {:.0f} ms", to_ms(Clock::now() - stop_started_));
  (void)after_iteration_.set_enabled(SD_EVENT_OFF);
  loop_.exit(0);
}

std::optional<TimePoint> Daemon::extend_stop(TimePoint started, TimePoint now,
                                             std::size_t qps_before, std::size_t qps_left) {
  const TimePoint cap = started + kStopCap;
  if (qps_left >= qps_before || now >= cap)
    return std::nullopt;
  return std::min(now + kStopSlack, cap);
}

void Daemon::on_stop_deadline() {
  const auto qpns = live_qpns();
  const std::size_t work = stop_work_left();
  if (auto next = extend_stop(stop_started_, Clock::now(), stop_work_, work)) {
    spdlog::info(
        "graceful stop: {} QPs left after {:.0f} ms, their teardowns still moving ({} stages "
        "to go, {} at the last check); extending to {:.0f} ms",
        qpns.size(), to_ms(Clock::now() - stop_started_), work, stop_work_,
        to_ms(*next - stop_started_));
    stop_work_ = work;
    (void)stop_deadline_.arm_at(*next);
    return;
  }
  std::string list;
  for (auto q : qpns)
    list += (list.empty() ? "" : " ") + std::to_string(q);
  spdlog::critical(
      "graceful stop did not finish within {:.0f} ms: {} QPs ({}) and {} rdma_cm ids left; "
      "exiting anyway (the kernel destroys them with the process)",
      to_ms(Clock::now() - stop_started_), qpns.size(), list.empty() ? "none" : list,
      live_cm_ids());
  loop_.exit(1);
}

Result<void> Daemon::reload() {
  spdlog::info("reloading {}", opts_.config_path);
  sd_notify(0, "RELOADING=1");
  auto next = config::load(opts_.config_path);
  if (!next) {
    sd_notify(0, "READY=1");
    return Error{next.error().code,
                 "not applied, keeping the running configuration: " + next.error().context};
  }
  if (opts_.ctl_socket)
    next->ctl_socket = *opts_.ctl_socket;
  // The key files are read before anything is applied: one that cannot be
  // read keeps the running configuration, keys included.
  auto auth_keys = config::read_auth_keys(*next);
  if (!auth_keys) {
    sd_notify(0, "READY=1");
    return Error{auth_keys.error().code,
                 "not applied, keeping the running configuration: " + auth_keys.error().context};
  }
  const auto keys = config::reload(cfg_, *next);
  if (!keys.empty()) {
    sd_notify(0, "READY=1");
    return Error::invalid("not applied, keeping the running configuration: " + join(keys) +
                          (keys.size() == 1 ? " needs" : " need") + " a restart");
  }
  cfg_.manager.auth_keys = std::move(*auth_keys);
  for (std::size_t k = 0; k < rails_.size(); ++k) {
    cm::ManagerConfig mc = cfg_.manager_for_rail(k);
    mc.incarnation = incarnation_;
    manager(k).reconfigure(mc);
  }
  port_->reconfigure(cfg_.rails_holddown, cfg_.manager.idle_timeout);
  tun_path_->set_source_check(cfg_.tun_source_check);
  rcnet::daemon::set_log_level(opts_.log_level.value_or(cfg_.log_level));
  if (ctl_)
    ctl_->reloaded(cfg_);
  spdlog::info("reload applied");
  sd_notify(0, "READY=1");
  return {};
}

}  // namespace rcnet::daemon
