// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// VerbsSeam: rcnet::rdma::Seam over librdmacm + libibverbs. The semantics of
// every Seam operation are those written in rdma/seam.hpp; this header only
// adds what the daemon needs to drive it from its event loop.
//
// Objects: one rdma_cm event channel (created by the constructor), one
// listener id bound to the local address, and on the listener's device one
// completion channel and one CQ shared by the send and receive queues of
// every QP; the PD, the SRQ (unless DeviceConfig::srq_size is 0) and the MRs
// are the device's (rdma/verbs_device.hpp), shared with the other seams of
// the same VerbsDevices registry that open on ports of that device. Every
// rdma_cm id (active, passive and the listener) is named by a CmIdHandle kept
// in id->context; handles count up from 1 and are never reused.
//
// Threading: single-threaded. Every call, including the destructor, on the
// loop's thread; never call any of it from a second thread (docs/design.md
// "Why it exists", item 3).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "rdma/raii.hpp"
#include "rdma/seam.hpp"
#include "rdma/verbs_device.hpp"

namespace rcnet::rdma {

class VerbsSeam final : public Seam {
 public:
  // Creates the rdma_cm event channel; no device yet. If that fails (no
  // /dev/infiniband/rdma_cm: rdma_ucm not loaded) the seam is inert: cm_fd()
  // is -1 and open() returns the saved error. Prefer create().
  // `devices`: the registry through which seams on ports of one device
  // share it (rcnetd gives its rails one); none: this seam's device is its
  // own, as if no other seam existed.
  explicit VerbsSeam(std::shared_ptr<VerbsDevices> devices = nullptr);
  ~VerbsSeam() override;
  VerbsSeam(const VerbsSeam&) = delete;
  VerbsSeam& operator=(const VerbsSeam&) = delete;

  // A seam with a working event channel, or the error of
  // rdma_create_event_channel(3) with a context naming the missing device.
  static Result<std::unique_ptr<VerbsSeam>> create(std::shared_ptr<VerbsDevices> devices = nullptr);

  // Borrowed; must outlive the seam or be reset to nullptr first. Events
  // arriving with no sink are acknowledged and dropped (logged).
  void set_sink(EventSink* sink);
  // Called by close_device() before async_fd() and cq_fd() are closed, so
  // that a poller drops its watches on them first (an fd closed under an
  // epoll watch may be reused by the next open). Empty = none.
  void set_close_hook(std::function<void()> hook);

  // The fds to watch for EPOLLIN, all O_NONBLOCK. -1 when not (yet) valid.
  int cm_fd() const;  // rdma_event_channel fd
  // The device's async-event fd, valid after open(); one fd for every seam
  // on the device: watch it once (device()).
  int async_fd() const;
  int cq_fd() const;  // completion channel fd; valid after open()

  // Every event is copied and acknowledged before it is handed to the sink
  // (seam.hpp "Event delivery"). Event loops call these through
  // rdma::SeamPump (rdma/seam_pump.hpp), which keeps the budgets and the
  // "completions pending" state.
  // dispatch_cm_events reads until EAGAIN or `max_events` events (> 0), and
  // returns true when it stopped at the budget: the channel fd stays
  // readable (ucma polls readable while its event list is not empty), so a
  // level-triggered poller comes back to it after its other sources.
  bool dispatch_cm_events(std::size_t max_events = SIZE_MAX);
  // Reads the device's async events until EAGAIN (they are rare) and hands
  // each to the sink of the seam it belongs to (VerbsDevice).
  void dispatch_async_events();
  // The device while open (shared with the seams on its other ports), else
  // nullptr.
  const std::shared_ptr<VerbsDevice>& device() const { return device_; }
  // Consumes completion-channel events (acknowledged in batches), polls the
  // CQ in batches of up to 64 WCs and hands each batch to the sink, then
  // re-arms with ibv_req_notify_cq and polls once more to close the race
  // (ibv_get_cq_event(3) "EXAMPLES"). Hands over at most `budget` WCs per
  // call; returns true when more may be pending, and then the CQ may not be
  // armed: the caller must schedule another pass rather than wait for cq_fd.
  bool dispatch_completions(int budget = 1024);

  // For the audit: the QPNs of every QP this seam created and has not
  // destroyed, in ascending order.
  std::vector<Qpn> qpns() const;

  // --- Seam ------------------------------------------------------------------
  Result<DeviceInfo> open(const Endpoint& local, const DeviceConfig& cfg) override;
  Result<MemoryRegion> register_memory(std::span<std::byte> mem) override;
  void unregister_memory(const MemoryRegion& mr) override;
  Result<CmIdHandle> create_id() override;
  Result<void> resolve_addr(CmIdHandle id, const Endpoint& dst, Duration timeout) override;
  Result<void> resolve_route(CmIdHandle id, Duration timeout) override;
  Result<Qpn> create_qp(CmIdHandle id, const QpCaps& caps) override;
  Result<void> connect(CmIdHandle id, const ConnParams& p) override;
  Result<void> accept(CmIdHandle id, const ConnParams& p) override;
  Result<void> reject(CmIdHandle id, std::span<const std::uint8_t> private_data) override;
  Result<void> disconnect(CmIdHandle id) override;
  Result<void> notify_established(CmIdHandle id) override;
  // Also used by destroy_id() when the id still has a QP (logged): a QP is
  // never leaked behind its id.
  Result<void> destroy_qp(CmIdHandle id) override;
  Result<void> destroy_id(CmIdHandle id) override;
  Result<void> modify_qp_to_error(CmIdHandle id) override;
  PostSendsResult post_sends(CmIdHandle id, std::span<const SendWr> wrs) override;
  Result<void> post_send(CmIdHandle id, std::uint64_t wr_id, const Sge& sge, std::uint32_t imm,
                         bool signaled) override;
  Result<void> post_drain(CmIdHandle id, std::uint64_t wr_id) override;
  // When a chain fails part-way, the WRs before the failing one ARE posted
  // (ibv_post_srq_recv(3) bad_wr); the error context says how many.
  Result<void> post_srq_recv(std::span<const std::uint64_t> wr_ids,
                             std::span<const Sge> sges) override;
  Result<void> post_qp_recv(CmIdHandle id, std::span<const std::uint64_t> wr_ids,
                            std::span<const Sge> sges) override;
  Result<void> arm_srq_limit(std::uint32_t limit) override;
  bool cm_events_queued() override;
  // Also destroys every id and QP still open (logged as leftovers), lets go
  // of the device (the last seam on it releases its MRs, SRQ and PD), and
  // makes librdmacm resynchronise its device list, which closes its own
  // context of a removed device (rdma_get_devices(3)); the rdma_cm event
  // channel (cm_fd()) stays: it holds no device.
  void close_device() override;
  std::weak_ptr<DeviceShare>& device_share() override;

 private:
  friend class VerbsDevice;  // deliver_async, cq_
  // ~VerbsSeam releases these explicitly in the order rdma-core needs: QPs,
  // ids, CQ, completion channel, the device (MRs, SRQ, PD when last),
  // listener, event channel.
  struct IdEntry {
    CmIdPtr id;
    IdQpPtr qp;                  // non-null while the id has a QP
    bool rnr_timer_set = false;  // DeviceConfig::min_rnr_timer applied to qp
  };

  Result<IdEntry*> entry(CmIdHandle h, const char* what);
  Result<ibv_qp*> qp_of(CmIdHandle h, const char* what);
  CmIdHandle adopt(rdma_cm_id* id);  // new handle, context set, owned
  // rdma_destroy_qp(3) of e's QP, if any, and the device forgets its QPN.
  void drop_qp(IdEntry& e);
  void set_ack_timeout(rdma_cm_id* id);
  // DeviceConfig::min_rnr_timer on `e`'s QP, once, when it is RTS.
  void set_min_rnr_timer(IdEntry& e);
  void ack_cq_events(bool all);
  // An async event of this seam's, from the device's dispatch.
  void deliver_async(const AsyncEvent& ev);
  // Opens or joins the device of `verbs` (the listener's context).
  Result<std::shared_ptr<VerbsDevice>> join_device(ibv_context* verbs, const DeviceInfo& info);
  // Every object of the device, in rdma-core's order (the destructor and
  // close_device()); the rdma_cm event channel stays.
  void release_device_objects();

  Error channel_error_{};
  bool channel_ok_ = false;
  EventChannelPtr channel_;
  CmIdPtr listener_;
  CmIdHandle listener_handle_ = kNoCmId;
  std::shared_ptr<VerbsDevices> devices_;  // may be null: no sharing
  std::shared_ptr<VerbsDevice> device_;    // from open() to close_device()
  std::weak_ptr<DeviceShare> no_share_;    // device_share() while closed
  CompChannelPtr comp_channel_;
  CqPtr cq_;
  std::map<CmIdHandle, IdEntry> ids_;

  EventSink* sink_ = nullptr;
  std::function<void()> close_hook_;
  DeviceConfig cfg_{};
  CmIdHandle next_handle_ = 1;
  unsigned int unacked_cq_events_ = 0;
  // The CQ's notification is armed: its one event may wait in the channel.
  bool cq_armed_ = false;
  bool rnr_timer_warned_ = false;  // set_min_rnr_timer failed once already
  // Scratch for building receive WR chains without allocating per call.
  std::vector<ibv_recv_wr> recv_wrs_;
  std::vector<ibv_sge> recv_sges_;
  // And send WR chains (post_sends).
  std::vector<ibv_send_wr> send_chain_;
  std::vector<ibv_sge> send_sges_;
};

}  // namespace rcnet::rdma
