// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/seam_pump.hpp"

namespace rcnet::rdma {

SeamPump::SeamPump(VerbsSeam& seam, int completion_budget)
    : seam_(seam), budget_(completion_budget) {}

std::array<int, 3> SeamPump::fds() const {
  return {seam_.cm_fd(), seam_.async_fd(), seam_.cq_fd()};
}

void SeamPump::on_cm_readable() {
  (void)seam_.dispatch_cm_events(kCmEventBudget);
}

void SeamPump::on_async_readable() {
  seam_.dispatch_async_events();
}

bool SeamPump::drain_completions() {
  completions_pending_ = seam_.dispatch_completions(budget_);
  return completions_pending_;
}

bool SeamPump::pump(Ready ready) {
  if (ready.cm)
    on_cm_readable();
  if (ready.async)
    on_async_readable();
  if (ready.cq || completions_pending_)
    drain_completions();
  return completions_pending_;
}

}  // namespace rcnet::rdma
