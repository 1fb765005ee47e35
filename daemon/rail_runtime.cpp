// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rail_runtime.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <cerrno>

#include "rdma_audit.hpp"

namespace rcnet::daemon {

Result<std::unique_ptr<RailRuntime>> RailRuntime::create(EventLoop& loop, std::size_t index,
                                                         const cm::ManagerConfig& mc,
                                                         cm::PacketSink& sink,
                                                         const RailShared& shared,
                                                         std::function<void()> fatal) {
  std::unique_ptr<RailRuntime> r(new RailRuntime(loop, index, shared));
  r->fatal_ = std::move(fatal);
  if (auto s = r->start(mc, sink); !s)
    return s.error();
  return r;
}

RailRuntime::~RailRuntime() {
  if (seam_) {
    seam_->set_sink(nullptr);
    seam_->set_close_hook({});
  }
  manager_.reset();
}

Result<void> RailRuntime::start(const cm::ManagerConfig& mc, cm::PacketSink& sink) {
  const Endpoint local = mc.local;
  // The underlay must exist before anything touches a device.
  auto nl = NetlinkMonitor::create(loop_, local.addr,
                                   {.link_changed =
                                        [this](bool up) {
                                          if (manager_)
                                            manager_->link_changed(up);
                                        },
                                    .neighbour_failed =
                                        [this](const IpAddr& a, Duration probing) {
                                          if (manager_)
                                            manager_->peer_failed(a, "neighbour FAILED", probing);
                                        }});
  if (!nl)
    return nl.error();
  netlink_ = std::move(*nl);

  auto seam = rdma::VerbsSeam::create(shared_.devices);
  if (!seam)
    return seam.error();
  seam_ = std::move(*seam);
  auto timer = LoopTimer::create(loop_);
  if (!timer)
    return timer.error();
  timer_ = std::move(*timer);

  manager_ = std::make_unique<cm::Manager>(mc, *seam_, *timer_, sink);
  seam_->set_sink(manager_.get());
  pump_.emplace(*seam_);
  timer_->set_handler([this] { manager_->on_timer(); });
  manager_->set_carrier_probe([this] { return netlink_->carrier_now().value_or(true); });
  manager_->set_neighbour_ops(
      {.flush = [this](const IpAddr& peer) { netlink_->flush_neighbour(peer); },
       .use = [this](const IpAddr& peer) { netlink_->use_neighbour(peer); }});
  if (!netlink_->link_up())
    manager_->link_changed(false);
  if (auto r = manager_->start(); !r) {
    return Error{r.error().code,
                 "cannot listen on " + local.to_string() + " (RDMA device): " + r.error().context};
  }
  spdlog::info("rail {}: listening on {} (RDMA device {}, node id {}, incarnation {:016x})", index_,
               local.to_string(), manager_->snapshot().device, manager_->node_id(), mc.incarnation);
  if (seam_->device() && seam_->device()->seams() > 1) {
    // Legal and useful (a port or a cable may fail alone), but the operator
    // should know what it does not protect against.
    spdlog::warn(
        "rail {}: on RDMA device {} with another rail: the rails fail over between "
        "its ports, not away from the device itself (a fatal error or removal takes "
        "both)",
        index_, manager_->snapshot().device);
  }

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
  read_device_index();
  auto readopt = loop_.add_time(TimePoint::max(), std::chrono::milliseconds(50), "readopt",
                                [this] { on_readopt_tick(); });
  if (!readopt)
    return readopt.error();
  readopt_timer_ = std::move(*readopt);
  return {};
}

Result<void> RailRuntime::watch_device() {
  auto w = shared_.watches->watch(seam_->device());
  if (!w)
    return w.error();
  async_watch_ = std::move(*w);
  auto cq_src = loop_.add_io(seam_->cq_fd(), EPOLLIN, "cq",
                             [this](std::uint32_t) { on_completions_ready(); });
  if (!cq_src)
    return cq_src.error();
  cq_src_ = std::move(*cq_src);
  return {};
}

void RailRuntime::on_device_closing() {
  // Off the loop before the seam closes the fds: a closed fd's number may be
  // reused by the next open while a watch still names it.
  async_watch_.reset();
  cq_src_.reset();
  (void)cq_more_.set_enabled(SD_EVENT_OFF);
  (void)readopt_timer_.arm_at(Clock::now() + kReadoptInterval);
}

void RailRuntime::on_readopt_tick() {
  if (!try_readopt(cm::DevicePath::kPoll) && !stopping_ && !manager_->device_present())
    (void)readopt_timer_.arm_at(Clock::now() + kReadoptInterval);
}

// The poll's tick and the monitor's notices both end here; the poll stays
// armed until an adoption succeeds, whoever tried.
bool RailRuntime::try_readopt(cm::DevicePath by) {
  if (stopping_ || manager_->device_present())
    return false;
  if (auto r = manager_->readopt(by); !r) {
    spdlog::debug("rail {}: RDMA device on {} not back yet ({}): {}", index_,
                  manager_->config().local.to_string(), cm::to_string(by), r.error().message());
    return false;
  }
  (void)readopt_timer_.arm_at(TimePoint::max());
  read_device_index();
  if (auto r = watch_device(); !r) {
    // Without the completion fd the data path would stall: stop rather
    // than run deaf (systemd restarts the daemon).
    spdlog::critical("rail {}: cannot watch the adopted RDMA device: {}", index_,
                     r.error().message());
    if (fatal_)
      fatal_();
    return true;
  }
  on_completions_ready();
  return true;
}

void RailRuntime::read_device_index() {
  device_index_.reset();
  const std::string name = manager_->snapshot().device;
  auto devices = dump_kernel_devices();
  if (!devices) {
    spdlog::debug("rail {}: index of RDMA device {}: {}", index_, name, devices.error().message());
    return;
  }
  for (const KernelDevice& d : *devices) {
    if (d.name == name)
      device_index_ = d.index;
  }
}

RailDeviceView RailRuntime::device_view() const {
  const cm::Snapshot s = manager_->snapshot();
  return {.device = s.device,
          .index = device_index_,
          .present = manager_->device_present(),
          .ifindex = netlink_ ? netlink_->underlay_ifindex() : 0};
}

void RailRuntime::device_unregistered(const std::string& what) {
  if (stopping_)
    return;
  manager_->device_unregistered(what);
}

bool RailRuntime::adopt_now(cm::DevicePath by) {
  return try_readopt(by);
}

void RailRuntime::on_completions_ready() {
  if (pump_->drain_completions()) {
    // More WCs may be waiting and the CQ may not be armed: poll again on the
    // next iteration, after the other sources had their turn.
    (void)cq_more_.set_enabled(SD_EVENT_ONESHOT);
  }
}

}  // namespace rcnet::daemon
