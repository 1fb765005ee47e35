// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "sim/timer.hpp"

#include <cstdint>
#include <utility>

#include "sim/internal.hpp"

namespace rcnet::sim {

struct FabricTimer::State {
  std::function<void()> cb;
  TimePoint deadline = TimePoint::max();
  std::uint64_t gen = 0;  // a wakeup of an older schedule() finds it changed
};

FabricTimer::FabricTimer(Fabric& fabric) : fabric_(fabric), state_(std::make_shared<State>()) {}

FabricTimer::~FabricTimer() = default;

void FabricTimer::set_callback(std::function<void()> cb) {
  state_->cb = std::move(cb);
}

TimePoint FabricTimer::now() const {
  return fabric_.now();
}

TimePoint FabricTimer::deadline() const {
  return state_->deadline;
}

void FabricTimer::schedule(TimePoint deadline) {
  State& s = *state_;
  s.deadline = deadline;
  const std::uint64_t gen = ++s.gen;
  if (deadline == TimePoint::max())
    return;
  std::weak_ptr<State> weak = state_;
  fabric_.impl().at(
      deadline,
      [weak, gen] {
        auto live = weak.lock();
        if (!live || live->gen != gen)
          return;
        live->deadline = TimePoint::max();
        if (live->cb) {
          // The callback may replace itself: call a copy.
          auto cb = live->cb;
          cb();
        }
      },
      /*is_timer=*/true);
}

}  // namespace rcnet::sim
