// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "daemon.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>

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
  // The manager's observer forwards to the ctl server: unhook it first.
  if (manager_)
    manager_->set_observer({});
  // Before the parts it serves from (as its place among the members ensures).
  ctl_.reset();
  // The TUN fd closes before tun_path_ goes (member order); stop watching it.
  if (tun_path_)
    tun_path_->detach();
  if (seam_) {
    seam_->set_sink(nullptr);
    seam_->set_close_hook({});
  }
  manager_.reset();
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
  const Endpoint local = cfg_.manager.local;

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

  // The underlay must exist before anything touches a device.
  auto nl = NetlinkMonitor::create(loop_, local.addr,
                                   {.link_changed =
                                        [this](bool up) {
                                          if (manager_)
                                            manager_->link_changed(up);
                                        },
                                    .neighbour_failed =
                                        [this](const IpAddr& a) {
                                          if (manager_)
                                            manager_->peer_failed(a, "neighbour FAILED");
                                        }});
  if (!nl)
    return nl.error();
  netlink_ = std::move(*nl);

  auto seam = rdma::VerbsSeam::create();
  if (!seam)
    return seam.error();
  seam_ = std::move(*seam);

  auto timer = LoopTimer::create(loop_);
  if (!timer)
    return timer.error();
  timer_ = std::move(*timer);

  tun_path_ = std::make_unique<TunPath>(
      loop_,
      TunPath::Hooks{
          .route = [this](const IpAddr& dst) -> std::optional<Endpoint> {
            auto ep = cfg_.peer_endpoint_for(dst);
            // A mapping back to ourselves would make us connect to our
            // own listener.
            if (ep && ep->addr == cfg_.manager.local.addr)
              return std::nullopt;
            return ep;
          },
          .send = [this](const Endpoint& ep,
                         std::span<const std::byte> p) { return manager_->send(ep, p); },
          .lend = [this] { return manager_->lend_send_buffer(); },
          .send_lent = [this](const Endpoint& ep,
                              std::size_t len) { return manager_->send_lent(ep, len); },
          .return_lent = [this] { manager_->return_lent(); },
          .batch_begin = [this] { manager_->begin_send_batch(); },
          .batch_end = [this] { manager_->end_send_batch(); },
      },
      cfg_.manager.offload ? wire::kVnetHdrLen : 0);

  cm::ManagerConfig mc = cfg_.manager;
  mc.incarnation = incarnation_;
  manager_ = std::make_unique<cm::Manager>(mc, *seam_, *timer_, *tun_path_);
  seam_->set_sink(manager_.get());
  pump_.emplace(*seam_);
  timer_->set_handler([this] { manager_->on_timer(); });
  if (!netlink_->link_up())
    manager_->link_changed(false);

  if (auto r = manager_->start(); !r) {
    return Error{r.error().code,
                 "cannot listen on " + local.to_string() + " (RDMA device): " + r.error().context};
  }
  spdlog::info("listening on {} (node id {}, incarnation {:016x})", local.to_string(),
               manager_->node_id(), incarnation_);

  auto cm_src = loop_.add_io(seam_->cm_fd(), EPOLLIN, "rdma_cm",
                             [this](std::uint32_t) { pump_->on_cm_readable(); });
  if (!cm_src)
    return cm_src.error();
  cm_src_ = std::move(*cm_src);
  auto more = loop_.add_defer("cq-more", [this] { on_completions_ready(); });
  if (!more)
    return more.error();
  cq_more_ = std::move(*more);
  if (auto r = watch_device(); !r)
    return r;
  // Device loss (docs/design.md "Connection lifecycle"): the manager releases
  // the device from its timer path; the seam calls this before it closes
  // the async and completion fds, and the readopt timer takes over.
  seam_->set_close_hook([this] { on_device_closing(); });
  auto readopt = loop_.add_time(TimePoint::max(), std::chrono::milliseconds(50), "readopt",
                                [this] { on_readopt_tick(); });
  if (!readopt)
    return readopt.error();
  readopt_timer_ = std::move(*readopt);

  if (auto r = setup_tun(); !r)
    return r;

  auto status = loop_.add_time(Clock::now() + kStatusInterval, std::chrono::milliseconds(50),
                               "status", [this] { on_status_tick(); });
  if (!status)
    return status.error();
  status_timer_ = std::move(*status);
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

Result<void> Daemon::start_ctl_server() {
  auto backend = make_daemon_backend({
      .manager = *manager_,
      .seam = *seam_,
      .config = cfg_,
      .tun_counters = tun_path_->counters(),
      .config_path = opts_.config_path,
      .start_time = start_time_,
      .status_text = [this] { return status_text(); },
  });
  auto ctl = CtlServer::create(loop_, std::move(backend),
                               {.socket_path = cfg_.ctl_socket, .group = cfg_.ctl_group});
  if (!ctl)
    return ctl.error();
  ctl_ = std::move(*ctl);
  // rcnetctl monitor: every connection event, as it happens. Every change
  // of the STATUS= text is a QP state change, hence an event: it arms the
  // status timer, which sends at most one update per kStatusInterval and
  // does not wake a daemon whose connections do not change.
  manager_->set_observer([this](const cm::Event& e) {
    if (ctl_)
      ctl_->publish(e);
    if (!status_timer_.enabled())
      (void)status_timer_.arm_at(Clock::now() + kStatusInterval);
  });
  return {};
}

Result<void> Daemon::setup_tun() {
  auto tun = TunDevice::open(cfg_.tun_name, cfg_.manager.offload, cfg_.tun_netns);
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
  if (auto r = tun->configure(cfg_.tun_address, cfg_.manager.mtu); !r) {
    if (cfg_.tun_netns.empty())
      return r;
    // Configuring inside the namespace needs setns(2), i.e. CAP_SYS_ADMIN
    // (systemd: the rcnetd-netns.conf drop-in).
    return Error{r.error().code, "cannot configure TUN " + cfg_.tun_name + " in tun.netns \"" +
                                     cfg_.tun_netns +
                                     "\" (setns needs CAP_SYS_ADMIN): " + r.error().context};
  }
  tun_.emplace(std::move(*tun));
  if (auto r = tun_path_->attach(tun_->fd()); !r)
    return r;
  spdlog::info("TUN {} up: {} mtu {}{}, offloads: {}", tun_->name(), cfg_.tun_address.to_string(),
               cfg_.manager.mtu, cfg_.tun_netns.empty() ? "" : " in netns " + cfg_.tun_netns,
               tun_->offloads());
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
  manager_->counters().for_each(add);
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

Result<void> Daemon::watch_device() {
  auto async_src = loop_.add_io(seam_->async_fd(), EPOLLIN, "verbs-async",
                                [this](std::uint32_t) { pump_->on_async_readable(); });
  if (!async_src)
    return async_src.error();
  async_src_ = std::move(*async_src);
  auto cq_src = loop_.add_io(seam_->cq_fd(), EPOLLIN, "cq",
                             [this](std::uint32_t) { on_completions_ready(); });
  if (!cq_src)
    return cq_src.error();
  cq_src_ = std::move(*cq_src);
  return {};
}

void Daemon::on_device_closing() {
  // Off the loop before the seam closes the fds: a closed fd's number may be
  // reused by the next open while a watch still names it.
  async_src_.reset();
  cq_src_.reset();
  (void)cq_more_.set_enabled(SD_EVENT_OFF);
  (void)readopt_timer_.arm_at(Clock::now() + kReadoptInterval);
}

void Daemon::on_readopt_tick() {
  if (stopping_ || manager_->device_present())
    return;
  if (auto r = manager_->readopt(); !r) {
    spdlog::debug("RDMA device on {} not back yet: {}", cfg_.manager.local.to_string(),
                  r.error().message());
    (void)readopt_timer_.arm_at(Clock::now() + kReadoptInterval);
    return;
  }
  if (auto r = watch_device(); !r) {
    // Without the completion fd the data path would stall: stop rather
    // than run deaf (systemd restarts the daemon).
    spdlog::critical("cannot watch the adopted RDMA device: {}", r.error().message());
    loop_.exit(1);
    return;
  }
  on_completions_ready();
}

void Daemon::on_completions_ready() {
  if (pump_->drain_completions()) {
    // More WCs may be waiting and the CQ may not be armed: poll again on the
    // next iteration, after the other sources had their turn.
    (void)cq_more_.set_enabled(SD_EVENT_ONESHOT);
  }
}

std::string Daemon::status_text() const {
  std::size_t established = 0, teardown = 0;
  const auto snap = manager_->snapshot();
  for (const auto& q : snap.qps) {
    if (q.state == cm::ConnState::kEstablished && q.in_service)
      ++established;
    if (cm::is_teardown(q.state))
      ++teardown;
  }
  std::string s = std::to_string(established) + " connections established, " +
                  std::to_string(teardown) + " QPs in teardown";
  if (!manager_->device_present())
    s = "RDMA device removed, waiting for it: " + s;
  if (stopping_)
    s = "stopping: " + s;
  return s;
}

void Daemon::on_status_tick() {
  const std::string s = status_text();
  if (s != last_status_) {
    last_status_ = s;
    sd_notifyf(0, "STATUS=%s", s.c_str());
  }
  // Not re-armed here: the next connection event does (start_ctl_server).
}

void Daemon::request_stop(std::string_view why) {
  if (stopping_) {
    spdlog::info("{}: already stopping", why);
    return;
  }
  stopping_ = true;
  stop_started_ = Clock::now();
  const auto& mc = manager_->config();
  const Duration bound =
      mc.disconnect_timeout + mc.last_wqe_timeout + mc.drain_timeout + kStopSlack;
  spdlog::info("{}: stopping; tearing down {} QPs (bound {:.0f} ms)", why,
               manager_->live_qpns().size(), to_ms(bound));
  sd_notify(0, "STOPPING=1");
  tun_path_->stop_reading();
  if (ctl_)
    ctl_->stopping();
  manager_->shutdown();
  (void)stop_deadline_.arm_at(stop_started_ + bound);
  // From now on the post source ends the loop once the manager reports
  // stopped(), checking after every iteration. Enabled here, it is not
  // pending for this one; the manager may already be stopped (no
  // connections), so check once now.
  (void)after_iteration_.set_enabled(SD_EVENT_ON);
  after_iteration();
}

void Daemon::after_iteration() {
  if (!stopping_ || !manager_->stopped())
    return;
  if (manager_->live_cm_ids() != 0 || !manager_->live_qpns().empty())
    return;
  spdlog::info("stopped: every QP torn down in {:.0f} ms", to_ms(Clock::now() - stop_started_));
  (void)after_iteration_.set_enabled(SD_EVENT_OFF);
  loop_.exit(0);
}

void Daemon::on_stop_deadline() {
  const auto qpns = manager_->live_qpns();
  std::string list;
  for (auto q : qpns)
    list += (list.empty() ? "" : " ") + std::to_string(q);
  spdlog::critical(
      "graceful stop did not finish within {:.0f} ms: {} QPs ({}) and {} rdma_cm ids left; "
      "exiting anyway (the kernel destroys them with the process)",
      to_ms(Clock::now() - stop_started_), qpns.size(), list.empty() ? "none" : list,
      manager_->live_cm_ids());
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
  const auto keys = config::reload(cfg_, *next);
  if (!keys.empty()) {
    sd_notify(0, "READY=1");
    return Error::invalid("not applied, keeping the running configuration: " + join(keys) +
                          (keys.size() == 1 ? " needs" : " need") + " a restart");
  }
  cm::ManagerConfig mc = cfg_.manager;
  mc.incarnation = incarnation_;
  manager_->reconfigure(mc);
  rcnet::daemon::set_log_level(opts_.log_level.value_or(cfg_.log_level));
  if (ctl_)
    ctl_->reloaded(cfg_);
  spdlog::info("reload applied");
  sd_notify(0, "READY=1");
  return {};
}

}  // namespace rcnet::daemon
