// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "loop_timer.hpp"

#include <spdlog/spdlog.h>

namespace rcnet::daemon {

Result<std::unique_ptr<LoopTimer>> LoopTimer::create(EventLoop& loop) {
  std::unique_ptr<LoopTimer> t(new LoopTimer());
  t->loop_ = &loop;
  auto src = loop.add_time(TimePoint::max(), kAccuracy, "cm-timer", [p = t.get()] { p->fire(); });
  if (!src)
    return src.error();
  t->source_ = std::move(*src);
  return t;
}

void LoopTimer::schedule(TimePoint deadline) {
  deadline_ = deadline;
  if (auto r = source_.arm_at(deadline); !r) {
    spdlog::critical("cannot arm the connection manager's timer: {}", r.error().message());
  }
}

void LoopTimer::fire() {
  // The manager usually schedules the next deadline from inside on_timer();
  // clear ours first so that a handler that schedules nothing leaves it off.
  deadline_ = TimePoint::max();
  ++expiries_;
  if (on_expiry_)
    on_expiry_();
}

}  // namespace rcnet::daemon
