// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// One rail of rcnetd (docs/design.md "Rails"): the underlay address
// node.address[k] on the RDMA device that owns it. Everything a rail needs
// on the one event loop: its VerbsSeam (device context, PD, CQ, SRQ,
// listener, rdma_cm channel), the SeamPump over it, the manager and its
// timer, the netlink monitor of the rail's interface (carrier, neighbours),
// and the io sources on the seam's fds, which follow the device through its
// loss and re-adoption (cm::Manager::readopt, every kReadoptInterval).
//
// Lifecycle: create() needs the rail's address on an interface (netlink)
// and an RDMA device owning it (the listener binds). The Daemon owns the
// rails and destroys them before the loop.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "async_watches.hpp"
#include "cm/manager.hpp"
#include "event_loop.hpp"
#include "loop_timer.hpp"
#include "netlink.hpp"
#include "rdma/seam_pump.hpp"
#include "rdma/verbs_seam.hpp"
#include "rdma_monitor.hpp"

namespace rcnet::daemon {

// What the rails of one daemon share: the devices their seams open
// (rdma::VerbsDevices) and the watches of those devices' async fds. Must
// outlive the rails.
struct RailShared {
  std::shared_ptr<rdma::VerbsDevices> devices;
  AsyncWatches* watches = nullptr;
};

class RailRuntime {
 public:
  // While the RDMA device is lost: how often opening it again is tried. A
  // try that fails costs an rdma_cm channel, an id and a bind that finds no
  // device (well under a millisecond); every 250 ms keeps a fail-back after
  // `rdma link add` (or a driver's return) within holddown + about 0.5 s,
  // where 1 s took 0.9-2.0 s in the lab's bench.
  static constexpr Duration kReadoptInterval = std::chrono::milliseconds(250);

  // `index`: the rail's place in node.address (for the log). `mc`: the
  // rail's manager config (config::Config::manager_for_rail, incarnation
  // set). `sink`: where the manager delivers (borrowed, outlives the rail).
  // `fatal`: called when the rail cannot go on (an adopted device whose
  // fds cannot be watched); the daemon exits. `shared`: what the rails
  // share (a rail on a port of a device another rail opened shares its PD,
  // SRQ, buffers and async fd). Errors, one line each for the operator: no
  // interface holds the address (EADDRNOTAVAIL), no RDMA device or rdma_cm
  // (ENODEV, ENOENT), the listener cannot bind.
  static Result<std::unique_ptr<RailRuntime>> create(EventLoop& loop, std::size_t index,
                                                     const cm::ManagerConfig& mc,
                                                     cm::PacketSink& sink, const RailShared& shared,
                                                     std::function<void()> fatal);
  ~RailRuntime();
  RailRuntime(const RailRuntime&) = delete;
  RailRuntime& operator=(const RailRuntime&) = delete;

  cm::Manager& manager() { return *manager_; }
  const cm::Manager& manager() const { return *manager_; }
  const rdma::VerbsSeam& seam() const { return *seam_; }
  std::size_t index() const { return index_; }
  // Stops re-adopting a lost device (a graceful stop began).
  void stopping() { stopping_ = true; }

  // --- The RDMA netlink monitor (daemon/rdma_monitor.hpp) -------------------------------
  // What the monitor's decide() needs of this rail.
  RailDeviceView device_view() const;
  // The ib_device index of the rail's device is read (RDMA_NLDEV_CMD_GET,
  // one short dump) at start and at each adoption, whoever adopted: an
  // UNREGISTER of the old device still unread when the poll adopted the
  // new one under the same name must not release the new one.
  // UNREGISTER of the rail's device: Manager::device_unregistered.
  void device_unregistered(const std::string& what);
  // REGISTER or NETDEV_ATTACH that may be the rail's device: try to adopt
  // it now (path `by`), as the poll would. true when it was adopted; the
  // poll stays armed otherwise.
  bool adopt_now(cm::DevicePath by);

 private:
  RailRuntime(EventLoop& loop, std::size_t index, const RailShared& shared)
      : loop_(loop), index_(index), shared_(shared) {}
  Result<void> start(const cm::ManagerConfig& mc, cm::PacketSink& sink);
  // io sources on the seam's async and completion fds (valid after open).
  Result<void> watch_device();
  // VerbsSeam's close hook: drops those sources, arms the readopt timer.
  void on_device_closing();
  void on_readopt_tick();
  bool try_readopt(cm::DevicePath by);
  void read_device_index();
  void on_completions_ready();

  EventLoop& loop_;
  std::size_t index_;
  RailShared shared_;
  std::function<void()> fatal_;
  bool stopping_ = false;
  std::optional<std::uint32_t> device_index_;
  // Destruction order (reverse of declaration): sources first, then the
  // manager, the pump, the seam it borrows, the timer.
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<rdma::VerbsSeam> seam_;
  std::optional<rdma::SeamPump> pump_;
  std::unique_ptr<cm::Manager> manager_;
  std::unique_ptr<NetlinkMonitor> netlink_;
  std::shared_ptr<EventSource> async_watch_;  // the device's, shared (AsyncWatches)
  EventSource cm_src_, cq_src_, cq_more_, readopt_timer_;
};

}  // namespace rcnet::daemon
