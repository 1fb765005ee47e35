// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// SeamPump: the one way rcnet moves what a VerbsSeam's three fds have ready
// (rdma_cm events, verbs async events, work completions) into the seam's
// EventSink, normally the connection manager. rcnetd (one sd-event io source
// per fd, daemon/daemon.cpp), rcnet-bench-load and rcnet-cm-lab (a poll(2)
// loop) all drive their seams through it.
//
// It never waits and registers nothing: the caller watches fds() for
// readability with its own poller and tells the pump what it found. One rule
// every caller must follow: while completions_pending() is true, more WCs
// may sit in the CQ with its notification unarmed (VerbsSeam::
// dispatch_completions), so the cq fd may stay quiet; the caller must not
// block and must let the pump drain again soon, after its other sources had
// their turn.
//
// Thread: the loop's, like the seam. No errors: the seam logs and counts its
// own (VerbsSeam::dispatch_*).
#include <array>
#include <cstddef>

#include "rdma/verbs_seam.hpp"

namespace rcnet::rdma {

class SeamPump {
 public:
  // Work completions handed to the sink per drain, so that a busy CQ cannot
  // starve the other sources (TUN, timers, the ctl socket).
  static constexpr int kCompletionBudget = 1024;
  // rdma_cm events handled per wakeup of the cm fd. A passive side's
  // CONNECT_REQUEST costs a QP creation and an rdma_accept; drained to
  // EAGAIN, a storm of 1,000 REQs kept the CQ unpolled for seconds, the SRQ
  // ran dry and every client's SEND was answered by RNR NAKs every
  // min_rnr_timer (lab, 1,000 connections: 222,150 RNR NAKs sent by the hub,
  // 14,529 frames dropped by the guest's input backlog in the retry storm).
  // The fd is level-triggered: the rest waits for the next loop iteration.
  static constexpr std::size_t kCmEventBudget = 16;

  // Which of fds() the caller's poller found readable (EPOLLIN / POLLIN).
  struct Ready {
    bool cm = false;
    bool async = false;
    bool cq = false;
  };

  // `seam` is borrowed and must outlive the pump; events go to the sink set
  // on it (VerbsSeam::set_sink). `completion_budget` is in WCs, > 0.
  explicit SeamPump(VerbsSeam& seam, int completion_budget = kCompletionBudget);

  // The fds to watch for readability, in the order cm, async, cq
  // (VerbsSeam::cm_fd, async_fd, cq_fd); -1 for one that is not valid yet.
  std::array<int, 3> fds() const;

  // For a caller with one callback per fd (rcnetd).
  // rdma_cm fd readable: up to kCmEventBudget CM events (the fd stays
  // readable while more are queued).
  void on_cm_readable();
  // async fd readable: every async event, until EAGAIN.
  void on_async_readable();
  // cq fd readable, or completions_pending(): up to the budget of WCs.
  // Returns completions_pending().
  bool drain_completions();

  // For a caller that waits on all three at once (poll(2)): CM events, then
  // async events, then completions when `ready.cq` or still pending. Returns
  // completions_pending().
  bool pump(Ready ready);

  // The last drain stopped at the budget: see the rule above.
  bool completions_pending() const { return completions_pending_; }

 private:
  VerbsSeam& seam_;
  int budget_;
  bool completions_pending_ = false;
};

}  // namespace rcnet::rdma
