// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/verbs_seam.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "rdma/verbs_map.hpp"
#include "rdma/verbs_util.hpp"

namespace rcnet::rdma {
namespace {

// rdma_resolve_addr(3)/rdma_resolve_route(3) take an int of milliseconds.
int to_timeout_ms(Duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms, 1, INT_MAX));
}

}  // namespace

VerbsSeam::VerbsSeam(std::shared_ptr<VerbsDevices> devices) : devices_(std::move(devices)) {
  errno = 0;
  channel_.reset(rdma_create_event_channel());
  if (!channel_) {
    // rdma_create_event_channel(3): NULL and errno. Without the rdma_ucm
    // module /dev/infiniband/rdma_cm does not exist (ENOENT or ENODEV).
    const int err = errno != 0 ? errno : ENODEV;
    channel_error_ =
        Error::from_errno(err,
                          "rdma_create_event_channel: cannot open /dev/infiniband/rdma_cm "
                          "(no RDMA device, or rdma_ucm not loaded)");
    return;
  }
  if (auto r = set_nonblocking(channel_->fd, "the rdma_cm event channel"); !r) {
    channel_error_ = r.error();
    channel_.reset();
    return;
  }
  channel_ok_ = true;
}

VerbsSeam::~VerbsSeam() {
  release_device_objects();
  channel_.reset();  // ids before their channel
}

// The order rdma-core requires: a QP before its id, CQ and SRQ; MRs before
// the PD; every CQ event acknowledged before the CQ; the listener (which
// keeps librdmacm's context of the device open) after the device objects.
// The device's MRs, SRQ and PD go with the last seam on it.
void VerbsSeam::release_device_objects() {
  for (auto& [h, e] : ids_)
    drop_qp(e);
  for (auto& [h, e] : ids_)
    e.id.reset();
  ids_.clear();
  ack_cq_events(true);
  cq_.reset();
  cq_armed_ = false;
  comp_channel_.reset();
  if (device_) {
    device_->detach(this);
    device_.reset();
  }
  listener_.reset();
  listener_handle_ = kNoCmId;
}

Result<std::unique_ptr<VerbsSeam>> VerbsSeam::create(std::shared_ptr<VerbsDevices> devices) {
  auto seam = std::make_unique<VerbsSeam>(std::move(devices));
  if (!seam->channel_ok_)
    return seam->channel_error_;
  return seam;
}

void VerbsSeam::set_sink(EventSink* sink) {
  sink_ = sink;
}

void VerbsSeam::set_close_hook(std::function<void()> hook) {
  close_hook_ = std::move(hook);
}

void VerbsSeam::close_device() {
  if (!listener_ && ids_.empty())
    return;
  if (close_hook_)
    close_hook_();
  if (!ids_.empty())
    spdlog::warn("closing the RDMA device with {} cm ids left: releasing them", ids_.size());
  const bool last = !device_ || device_->seams() == 1;
  release_device_objects();
  if (!last) {
    spdlog::info("RDMA device let go by this rail; another rail on it still holds its PD and SRQ");
    return;
  }
  // librdmacm keeps its own ibv_context (the uverbs fd, with the async fd)
  // of every device it has seen, and closes one whose device is gone only
  // when it resynchronises its device list with no id left on it
  // (rdma_get_devices(3) does). Without this the removal still waits. The
  // price: rdma_get_devices opens librdmacm's context of every other RDMA
  // device of the host, kept until exit; on a driver without
  // disassociate_ucontext, removing one of those then waits for rcnetd.
  if (ibv_context** devs = rdma_get_devices(nullptr); devs != nullptr)
    rdma_free_devices(devs);
  spdlog::info("RDMA device released: no QP, cm id, MR, SRQ, CQ or PD left");
}

int VerbsSeam::cm_fd() const {
  return channel_ ? channel_->fd : -1;
}
int VerbsSeam::async_fd() const {
  return device_ ? device_->async_fd() : -1;
}

std::weak_ptr<DeviceShare>& VerbsSeam::device_share() {
  return device_ ? device_->share() : no_share_;
}

void VerbsSeam::deliver_async(const AsyncEvent& ev) {
  if (sink_ != nullptr) {
    sink_->on_async_event(ev);
  } else {
    spdlog::warn("async event {} (QPN {}) dropped: no sink", to_string(ev.type), ev.qpn);
  }
}
int VerbsSeam::cq_fd() const {
  return comp_channel_ ? comp_channel_->fd : -1;
}

std::vector<Qpn> VerbsSeam::qpns() const {
  std::vector<Qpn> out;
  for (const auto& [h, e] : ids_) {
    if (e.qp && e.qp->qp != nullptr)
      out.push_back(e.qp->qp->qp_num);
  }
  std::sort(out.begin(), out.end());
  return out;
}

CmIdHandle VerbsSeam::adopt(rdma_cm_id* id) {
  const CmIdHandle h = next_handle_++;
  id->context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(h));
  ids_[h].id.reset(id);
  return h;
}

void VerbsSeam::set_ack_timeout(rdma_cm_id* id) {
  // Without it rdma_cm uses timeout 19: ~9 s to RETRY_EXC_ERR on a dead peer
  // instead of ~0.27 s (docs/lab.md). Not fatal: the connection still works.
  std::uint8_t t = cfg_.ack_timeout;
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t) != 0) {
    spdlog::warn("rdma_set_option RDMA_OPTION_ID_ACK_TIMEOUT={} failed: {}", t,
                 std::generic_category().message(errno));
  }
}

void VerbsSeam::set_min_rnr_timer(IdEntry& e) {
  // rdma_set_option(3) has no option for it (the kernel's
  // rdma_set_min_rnr_timer() serves in-kernel users only) and the kernel's CM
  // sets 0 (655.36 ms) in the RTR attributes rdma_cm applies. For an RC QP, IBV_QP_MIN_RNR_TIMER is
  // an optional attribute of the RTS→RTS transition (ibv_modify_qp(3); the kernel's qp_state_table
  // checks it), so the state is left out of the mask. Not fatal: the QP still works, a peer only
  // waits longer after an RNR NAK.
  if (e.rnr_timer_set || !e.qp || e.id->qp == nullptr)
    return;
  e.rnr_timer_set = true;
  ibv_qp_attr attr{};
  attr.min_rnr_timer = cfg_.min_rnr_timer;
  if (auto r = check_ibv_rc(ibv_modify_qp(e.id->qp, &attr, IBV_QP_MIN_RNR_TIMER),
                            "ibv_modify_qp(IBV_QP_MIN_RNR_TIMER)");
      !r) {
    // Once per seam: a provider that refuses it refuses it for every QP.
    spdlog::log(rnr_timer_warned_ ? spdlog::level::debug : spdlog::level::warn,
                "QPN {}: min_rnr_timer={} not set, RNR NAKs keep rdma_cm's 0 (655.36 ms): {}",
                e.id->qp->qp_num, cfg_.min_rnr_timer, r.error().message());
    rnr_timer_warned_ = true;
  }
}

void VerbsSeam::drop_qp(IdEntry& e) {
  if (!e.qp)
    return;
  if (device_ && e.id->qp != nullptr)
    device_->qp_destroyed(e.id->qp->qp_num);
  e.qp.reset();
}

Result<VerbsSeam::IdEntry*> VerbsSeam::entry(CmIdHandle h, const char* what) {
  auto it = ids_.find(h);
  if (it == ids_.end()) {
    return Error::from_errno(ENOENT, std::string(what) + ": unknown cm id " + std::to_string(h));
  }
  return &it->second;
}

Result<ibv_qp*> VerbsSeam::qp_of(CmIdHandle h, const char* what) {
  auto e = entry(h, what);
  if (!e)
    return e.error();
  if (!(*e)->qp || (*e)->id->qp == nullptr) {
    return Error::from_errno(EINVAL,
                             std::string(what) + ": cm id " + std::to_string(h) + " has no QP");
  }
  return (*e)->id->qp;
}

// --- memory ------------------------------------------------------------------

Result<MemoryRegion> VerbsSeam::register_memory(std::span<std::byte> mem) {
  if (!device_)
    return Error::from_errno(ENODEV, "ibv_reg_mr: seam not open");
  return device_->register_memory(mem);
}

void VerbsSeam::unregister_memory(const MemoryRegion& mr) {
  if (!device_ || !device_->unregister_memory(mr.handle)) {
    spdlog::warn("unregister_memory: unknown MR handle {}", mr.handle);
  }
}

// --- rdma_cm -----------------------------------------------------------------

Result<CmIdHandle> VerbsSeam::create_id() {
  if (!channel_ok_)
    return channel_error_;
  rdma_cm_id* raw = nullptr;
  if (auto r =
          check_rdma(rdma_create_id(channel_.get(), &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
      !r) {
    return r.error();
  }
  set_ack_timeout(raw);
  return adopt(raw);
}

Result<void> VerbsSeam::resolve_addr(CmIdHandle h, const Endpoint& dst, Duration timeout) {
  auto e = entry(h, "rdma_resolve_addr");
  if (!e)
    return e.error();
  if (!listener_)
    return Error::from_errno(ENODEV, "rdma_resolve_addr: seam not open");
  // Our own address as the source: an unbound connect loops back on the local
  // device when several nodes share one namespace (docs/lab.md).
  sockaddr_storage src{};
  sockaddr_storage dsts{};
  if (auto local = endpoint_from_sockaddr(rdma_get_local_addr(listener_.get()))) {
    local->port = 0;
    local->to_sockaddr(src);
  }
  dst.to_sockaddr(dsts);
  const int rc = rdma_resolve_addr((*e)->id.get(), reinterpret_cast<sockaddr*>(&src),
                                   reinterpret_cast<sockaddr*>(&dsts), to_timeout_ms(timeout));
  if (auto r = check_rdma(rc, "rdma_resolve_addr"); !r) {
    return with_context(r.error(), dst.to_string());
  }
  return {};
}

Result<void> VerbsSeam::resolve_route(CmIdHandle h, Duration timeout) {
  auto e = entry(h, "rdma_resolve_route");
  if (!e)
    return e.error();
  return check_rdma(rdma_resolve_route((*e)->id.get(), to_timeout_ms(timeout)),
                    "rdma_resolve_route");
}

Result<Qpn> VerbsSeam::create_qp(CmIdHandle h, const QpCaps& caps) {
  auto e = entry(h, "rdma_create_qp");
  if (!e)
    return e.error();
  if (!device_)
    return Error::from_errno(ENODEV, "rdma_create_qp: seam not open");
  if ((*e)->qp)
    return Error::from_errno(EEXIST, "rdma_create_qp: id already has a QP");
  ibv_srq* srq = device_->srq();
  if (caps.use_srq && srq == nullptr) {
    return Error::from_errno(EINVAL, "rdma_create_qp: use_srq but the seam has no SRQ");
  }
  rdma_cm_id* id = (*e)->id.get();
  if (id->verbs != nullptr && id->verbs != listener_->verbs) {
    // The route went out through another device than the one we listen on:
    // our PD and CQ cannot be used there.
    return Error::from_errno(EXDEV, "rdma_create_qp: id resolved to another RDMA device");
  }
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_.get();
  attr.recv_cq = cq_.get();
  attr.srq = caps.use_srq ? srq : nullptr;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;
  attr.cap.max_send_wr = caps.max_send_wr;
  attr.cap.max_recv_wr = caps.use_srq ? 0 : caps.max_recv_wr;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  // A provider may fail without setting errno (libsiw does, when the
  // kernel's mmap key is the one it takes for "none": verbs_device.cpp):
  // errno is cleared first so that a stale EAGAIN from the event loop is
  // not reported as the cause.
  errno = 0;
  if (rdma_create_qp(id, device_->pd(), &attr) != 0) {
    if (errno == 0)
      return Error::from_errno(EIO, "rdma_create_qp: the provider failed without an error code");
    return Error::from_errno(errno, "rdma_create_qp");
  }
  (*e)->qp.reset(id);
  device_->qp_created(id->qp->qp_num, this);
  return id->qp->qp_num;
}

namespace {
Result<rdma_conn_param> conn_param(const ConnParams& p, const char* what) {
  // rdma_conn_param::private_data_len is a uint8_t; the transport limit is
  // lower still (REQ 56, REP 196 bytes on IB/RoCE) and rdma_cm reports EINVAL.
  if (p.private_data.size() > UINT8_MAX) {
    return Error::from_errno(EINVAL, std::string(what) + ": private data of " +
                                         std::to_string(p.private_data.size()) + " bytes");
  }
  rdma_conn_param cp{};
  cp.private_data = p.private_data.empty() ? nullptr : p.private_data.data();
  cp.private_data_len = static_cast<std::uint8_t>(p.private_data.size());
  // SEND only: no RDMA READ or atomics in either direction.
  cp.responder_resources = 0;
  cp.initiator_depth = 0;
  cp.retry_count = p.retry_count;
  cp.rnr_retry_count = p.rnr_retry_count;
  return cp;
}
}  // namespace

Result<void> VerbsSeam::connect(CmIdHandle h, const ConnParams& p) {
  auto e = entry(h, "rdma_connect");
  if (!e)
    return e.error();
  auto cp = conn_param(p, "rdma_connect");
  if (!cp)
    return cp.error();
  return check_rdma(rdma_connect((*e)->id.get(), &*cp), "rdma_connect");
}

Result<void> VerbsSeam::accept(CmIdHandle h, const ConnParams& p) {
  auto e = entry(h, "rdma_accept");
  if (!e)
    return e.error();
  auto cp = conn_param(p, "rdma_accept");
  if (!cp)
    return cp.error();
  if (auto r = check_rdma(rdma_accept((*e)->id.get(), &*cp), "rdma_accept"); !r)
    return r;
  // rdma_accept moved the QP through RTR to RTS before sending the REP.
  set_min_rnr_timer(**e);
  return {};
}

Result<void> VerbsSeam::reject(CmIdHandle h, std::span<const std::uint8_t> private_data) {
  auto e = entry(h, "rdma_reject");
  if (!e)
    return e.error();
  if (private_data.size() > UINT8_MAX) {
    return Error::from_errno(
        EINVAL, "rdma_reject: private data of " + std::to_string(private_data.size()) + " bytes");
  }
  return check_rdma(
      rdma_reject((*e)->id.get(), private_data.empty() ? nullptr : private_data.data(),
                  static_cast<std::uint8_t>(private_data.size())),
      "rdma_reject");
}

Result<void> VerbsSeam::disconnect(CmIdHandle h) {
  auto e = entry(h, "rdma_disconnect");
  if (!e)
    return e.error();
  return check_rdma(rdma_disconnect((*e)->id.get()), "rdma_disconnect");
}

Result<void> VerbsSeam::notify_established(CmIdHandle h) {
  auto e = entry(h, "rdma_notify");
  if (!e)
    return e.error();
  return check_rdma(rdma_notify((*e)->id.get(), IBV_EVENT_COMM_EST), "rdma_notify");
}

Result<void> VerbsSeam::destroy_qp(CmIdHandle h) {
  auto e = entry(h, "rdma_destroy_qp");
  if (!e)
    return e.error();
  if (!(*e)->qp)
    return Error::from_errno(EINVAL, "rdma_destroy_qp: id has no QP");
  drop_qp(**e);
  return {};
}

Result<void> VerbsSeam::destroy_id(CmIdHandle h) {
  if (h == listener_handle_ && h != kNoCmId) {
    return Error::from_errno(EPERM, "rdma_destroy_id: the listener belongs to the seam");
  }
  auto it = ids_.find(h);
  if (it == ids_.end()) {
    return Error::from_errno(ENOENT, "rdma_destroy_id: unknown cm id " + std::to_string(h));
  }
  if (it->second.qp) {
    spdlog::warn("rdma_destroy_id: cm id {} still has QP {}; destroying the QP first", h,
                 it->second.id->qp != nullptr ? it->second.id->qp->qp_num : 0);
    drop_qp(it->second);
  }
  // Release by hand to see rdma_destroy_id's result (-1 and errno).
  rdma_cm_id* id = it->second.id.release();
  ids_.erase(it);
  return check_rdma(rdma_destroy_id(id), "rdma_destroy_id");
}

// --- verbs -------------------------------------------------------------------

Result<void> VerbsSeam::modify_qp_to_error(CmIdHandle h) {
  auto qp = qp_of(h, "ibv_modify_qp(ERR)");
  if (!qp)
    return qp.error();
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  return check_ibv_rc(ibv_modify_qp(*qp, &attr, IBV_QP_STATE), "ibv_modify_qp(ERR)");
}

}  // namespace rcnet::rdma
