// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// VerbsSeam's event dispatch: rdma_cm events, device async events and the
// completion queue (channel events acknowledged in batches, WCs polled in
// batches, re-armed with the race closed), each copied and acknowledged
// before the sink sees it.
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "rdma/verbs_map.hpp"
#include "rdma/verbs_seam.hpp"

namespace rcnet::rdma {

namespace {

constexpr int kPollBatch = 64;
// ibv_ack_cq_events(3) takes a mutex: acknowledge in batches, but often
// enough that the counter never grows without bound.
constexpr unsigned int kCqAckBatch = 64;

CmIdHandle handle_of(const rdma_cm_id* id) {
  if (id == nullptr)
    return kNoCmId;
  return static_cast<CmIdHandle>(reinterpret_cast<std::uintptr_t>(id->context));
}

}  // namespace

bool VerbsSeam::cm_events_queued() {
  if (!channel_)
    return false;
  pollfd p{channel_->fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

bool VerbsSeam::dispatch_cm_events(std::size_t max_events) {
  if (!channel_)
    return false;
  for (std::size_t n = 0;; ++n) {
    if (n == max_events)
      return true;
    rdma_cm_event* raw = nullptr;
    if (rdma_get_cm_event(channel_.get(), &raw) != 0) {
      const int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        spdlog::error("rdma_get_cm_event: {}", std::generic_category().message(err));
      }
      return false;
    }
    CmEvent ev;
    ev.type = map_cm_event(raw->event);
    ev.status = raw->status;
    if (ev.type == CmEventType::kConnectRequest) {
      // A new passive id, on our channel, whose context is the listener's:
      // give it a handle of its own and take ownership.
      ev.listen_id = handle_of(raw->listen_id);
      ev.id = adopt(raw->id);
      set_ack_timeout(raw->id);
      if (auto src = endpoint_from_sockaddr(rdma_get_peer_addr(raw->id)))
        ev.src = *src;
      if (auto dst = endpoint_from_sockaddr(rdma_get_local_addr(raw->id)))
        ev.dst = *dst;
    } else {
      ev.id = handle_of(raw->id);
    }
    const bool has_conn_param = ev.type == CmEventType::kConnectRequest ||
                                ev.type == CmEventType::kEstablished ||
                                ev.type == CmEventType::kRejected;
    if (has_conn_param) {
      const auto& c = raw->param.conn;
      if (c.private_data != nullptr && c.private_data_len > 0) {
        const auto* p = static_cast<const std::uint8_t*>(c.private_data);
        ev.private_data.assign(p, p + c.private_data_len);
      }
      if (ev.type != CmEventType::kRejected)
        ev.remote_qpn = c.qp_num;
    }
    const auto raw_type = raw->event;
    // The private data lives in the event: copied above, so ack now.
    if (rdma_ack_cm_event(raw) != 0) {
      spdlog::error("rdma_ack_cm_event: {}", std::generic_category().message(errno));
    }
    if (ev.type == CmEventType::kDeviceRemoval && device_) {
      // Dead for every seam on it: none may open on its objects again.
      device_->mark_lost();
    }
    if (ev.type == CmEventType::kEstablished) {
      // Active side: librdmacm moved the QP to RTS on the REP, before the RTU.
      if (auto it = ids_.find(ev.id); it != ids_.end())
        set_min_rnr_timer(it->second);
    }
    if (ev.type == CmEventType::kOther) {
      spdlog::debug("rdma_cm event {} ({}) mapped to OTHER", rdma_event_str(raw_type),
                    static_cast<int>(raw_type));
    }
    if (sink_ != nullptr) {
      sink_->on_cm_event(ev);
    } else {
      spdlog::warn("rdma_cm event {} on id {} dropped: no sink", to_string(ev.type), ev.id);
    }
  }
}

void VerbsSeam::dispatch_async_events() {
  if (device_)
    device_->dispatch_async_events();
}

void VerbsSeam::ack_cq_events(bool all) {
  if (!cq_ || unacked_cq_events_ == 0)
    return;
  if (all || unacked_cq_events_ >= kCqAckBatch) {
    ibv_ack_cq_events(cq_.get(), unacked_cq_events_);
    unacked_cq_events_ = 0;
  }
}

bool VerbsSeam::dispatch_completions(int budget) {
  if (!cq_ || !comp_channel_)
    return false;
  // One armed notification raises at most one event (ibv_req_notify_cq(3)),
  // and the CQ is re-armed only after an empty poll: so at most one event
  // waits in the channel, and only while armed. Read that one and no more:
  // a drain to EAGAIN costs a failed read(2) per wakeup, and a call that
  // continues a drain cut by the budget (not armed) reads nothing.
  if (cq_armed_) {
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    if (ibv_get_cq_event(comp_channel_.get(), &ev_cq, &ev_ctx) == 0) {
      ++unacked_cq_events_;
      cq_armed_ = false;
    } else {
      const int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        spdlog::error("ibv_get_cq_event: {}", std::generic_category().message(err));
      }
    }
  }
  ack_cq_events(false);

  std::array<ibv_wc, kPollBatch> raw{};
  std::array<WorkCompletion, kPollBatch> wcs{};
  int handed = 0;
  bool armed = false;
  for (;;) {
    if (handed >= budget)
      return true;
    const int want = std::min(kPollBatch, budget - handed);
    const int n = ibv_poll_cq(cq_.get(), want, raw.data());
    if (n < 0) {
      // ibv_poll_cq(3): negative on error; the CQ may be in error (CQ_ERR
      // arrives as an async event). Nothing to retry here.
      spdlog::error("ibv_poll_cq failed: {}", n);
      return false;
    }
    if (n > 0) {
      for (int i = 0; i < n; ++i)
        wcs[static_cast<std::size_t>(i)] = to_work_completion(raw[static_cast<std::size_t>(i)]);
      handed += n;
      if (sink_ != nullptr) {
        sink_->on_completions(
            std::span<const WorkCompletion>(wcs.data(), static_cast<std::size_t>(n)));
      } else {
        spdlog::warn("{} work completions dropped: no sink", n);
      }
      continue;
    }
    if (armed)
      return false;
    // Empty: re-arm, then poll once more, since a WC that arrived between the
    // empty poll and the re-arm raises no event (ibv_get_cq_event(3)).
    if (auto r = check_ibv_rc(ibv_req_notify_cq(cq_.get(), 0), "ibv_req_notify_cq"); !r) {
      spdlog::error("{}", r.error().message());
      return false;
    }
    armed = true;
    cq_armed_ = true;
  }
}

}  // namespace rcnet::rdma
