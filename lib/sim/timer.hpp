// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A TimerService on the fabric's virtual clock that belongs to no simulated
// host: for a component that runs beside the managers of a cluster with a
// wakeup of its own, as a cm::RailSet over two hosts' managers does in
// rcnetd (its own sd-event timer there). Scaffolding like sim/cluster.hpp.
//
// Like a host's timer it does not keep Fabric::run_until_idle() busy, and
// its expiry runs from inside Fabric::run_*. Unlike one, it survives any
// host's crash. Single-threaded. The callback may call schedule().
#include <functional>
#include <memory>

#include "sim/fabric.hpp"
#include "util/time.hpp"
#include "util/timer_service.hpp"

namespace rcnet::sim {

class FabricTimer final : public TimerService {
 public:
  // Borrows `fabric`, which must outlive the timer. A wakeup still queued in
  // the fabric when the timer is destroyed does nothing.
  explicit FabricTimer(Fabric& fabric);
  ~FabricTimer() override;
  FabricTimer(const FabricTimer&) = delete;
  FabricTimer& operator=(const FabricTimer&) = delete;

  // What the expiry calls (empty: nothing).
  void set_callback(std::function<void()> cb);

  TimePoint now() const override;
  // Replaces any earlier request; TimePoint::max() cancels. A deadline in
  // the past fires at the fabric's current time, after what is queued there.
  void schedule(TimePoint deadline) override;
  // The pending deadline, TimePoint::max() when none.
  TimePoint deadline() const;

 private:
  struct State;
  Fabric& fabric_;
  std::shared_ptr<State> state_;  // shared with the queued wakeup, which holds it weakly
};

}  // namespace rcnet::sim
