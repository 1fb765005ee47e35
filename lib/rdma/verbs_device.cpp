// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/verbs_device.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include "rdma/verbs_map.hpp"
#include "rdma/verbs_seam.hpp"

namespace rcnet::rdma {

Result<std::shared_ptr<VerbsDevice>> VerbsDevice::create(ibv_context* verbs, std::uint32_t srq_size,
                                                         const DeviceInfo& info) {
  std::shared_ptr<VerbsDevice> d(new VerbsDevice(verbs));
  d->name_ = info.name;
  auto pd = check_ibv_ptr(ibv_alloc_pd(verbs), "ibv_alloc_pd");
  if (!pd)
    return pd.error();
  d->pd_.reset(*pd);
  if (srq_size > 0) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = std::min(srq_size, info.max_srq_wr);
    sa.attr.max_sge = 1;
    if (sa.attr.max_wr != srq_size) {
      spdlog::warn("{}: srq_size {} clamped to max_srq_wr {}", info.name, srq_size, sa.attr.max_wr);
    }
    auto srq = check_ibv_ptr(ibv_create_srq(d->pd_.get(), &sa), "ibv_create_srq");
    if (!srq)
      return srq.error();
    d->srq_.reset(*srq);
  }
  d->srq_size_ = srq_size;
  const int flags = fcntl(verbs->async_fd, F_GETFL);
  if (flags < 0 || fcntl(verbs->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return Error::from_errno(errno, "fcntl O_NONBLOCK on the device async fd");
  return d;
}

VerbsDevice::~VerbsDevice() {
  release();
}

// MRs before the PD; the SRQ (every QP on it gone with its seam) before the PD.
void VerbsDevice::release() {
  mrs_.clear();
  srq_.reset();
  pd_.reset();
  qp_owner_.clear();
  srq_limit_owner_ = nullptr;
  share_.reset();
}

void VerbsDevice::attach(VerbsSeam* seam) {
  seams_.push_back(seam);
}

bool VerbsDevice::detach(VerbsSeam* seam) {
  std::erase(seams_, seam);
  std::erase_if(qp_owner_, [seam](const auto& kv) { return kv.second == seam; });
  if (srq_limit_owner_ == seam)
    srq_limit_owner_ = nullptr;
  if (!seams_.empty())
    return false;
  if (!mrs_.empty())
    spdlog::warn("{}: releasing the device with {} MRs left", name_, mrs_.size());
  release();
  return true;
}

Result<MemoryRegion> VerbsDevice::register_memory(std::span<std::byte> mem) {
  if (!pd_)
    return Error::from_errno(ENODEV, "ibv_reg_mr: device released");
  // int, not the enum: the ibv_reg_mr macro masks `access` with an enumerator
  // of another enum type, which clang warns about in C++20.
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;
  auto mr = check_ibv_ptr(ibv_reg_mr(pd_.get(), mem.data(), mem.size(), kAccess), "ibv_reg_mr");
  if (!mr) {
    Error e = mr.error();
    e.context = std::to_string(mem.size()) + " bytes: " + e.context;
    const int err = e.code.value();
    if (err == ENOMEM || err == EPERM) {
      // Pinning counts against RLIMIT_MEMLOCK: siw checks it even for root
      // (docs/lab.md), other providers through the kernel's common path.
      // Say what the limit is and how to raise it, not just "Cannot
      // allocate memory".
      rlimit rl{};
      const auto bytes = [](rlim_t v) {
        return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v) + " bytes";
      };
      if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        e.context += "; locked memory limit (RLIMIT_MEMLOCK) is " + bytes(rl.rlim_cur) + " (hard " +
                     bytes(rl.rlim_max) +
                     "): raise it with LimitMEMLOCK=infinity in the systemd unit or "
                     "`ulimit -l unlimited` in the shell that starts rcnetd";
      }
    }
    return e;
  }
  MemoryRegion out;
  out.handle = next_mr_++;
  out.lkey = (*mr)->lkey;
  mrs_[out.handle].reset(*mr);
  return out;
}

void VerbsDevice::dispatch_async_events() {
  if (!pd_)
    return;
  for (;;) {
    ibv_async_event raw{};
    if (ibv_get_async_event(verbs_, &raw) != 0) {
      const int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        spdlog::error("ibv_get_async_event: {}", std::generic_category().message(err));
      }
      return;
    }
    AsyncEvent ev;
    ev.type = map_async_event(raw.event_type);
    if (is_qp_event(raw.event_type) && raw.element.qp != nullptr)
      ev.qpn = raw.element.qp->qp_num;
    if (raw.event_type == IBV_EVENT_PORT_ACTIVE || raw.event_type == IBV_EVENT_PORT_ERR)
      ev.port = static_cast<std::uint8_t>(raw.element.port_num);
    if (raw.event_type == IBV_EVENT_DEVICE_FATAL)
      lost_ = true;  // for every seam on it (mark_lost)
    // Acknowledged before dispatch: ibv_destroy_qp(3) waits for outstanding
    // acks, and the sink may destroy that QP in response. Only the pointers'
    // values are used after this (which seam owns the CQ), never what they
    // point to.
    ibv_ack_async_event(&raw);
    if (ev.type == AsyncEventType::kOther) {
      spdlog::debug("async event {} mapped to OTHER", ibv_event_type_str(raw.event_type));
    }
    deliver(ev, raw);
  }
}

void VerbsDevice::deliver(const AsyncEvent& ev, const ibv_async_event& raw) {
  VerbsSeam* to = nullptr;
  if (is_qp_event(raw.event_type)) {
    if (auto it = qp_owner_.find(ev.qpn); it != qp_owner_.end())
      to = it->second;
  } else if (raw.event_type == IBV_EVENT_CQ_ERR) {
    for (VerbsSeam* s : seams_) {
      if (s->cq_.get() == raw.element.cq)
        to = s;
    }
  } else if (raw.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
    to = srq_limit_owner_ != nullptr ? srq_limit_owner_
                                     : (seams_.empty() ? nullptr : seams_.front());
  } else {
    // The device's or a port's: every seam (a handler may close its seam:
    // a copy of the list).
    const std::vector<VerbsSeam*> all = seams_;
    for (VerbsSeam* s : all)
      s->deliver_async(ev);
    if (all.empty())
      spdlog::warn("async event {} dropped: no seam open on {}", to_string(ev.type), name_);
    return;
  }
  if (to == nullptr) {
    // A QP or CQ of no open seam (or an SRQ event with no seam): nobody to tell.
    spdlog::debug("async event {} (QPN {}) on {}: no seam owns it", to_string(ev.type), ev.qpn,
                  name_);
    return;
  }
  to->deliver_async(ev);
}

std::shared_ptr<VerbsDevice> VerbsDevices::find(ibv_context* verbs) {
  auto it = devices_.find(verbs);
  if (it == devices_.end())
    return nullptr;
  auto d = it->second.lock();
  if (!d)
    devices_.erase(it);
  return d;
}

void VerbsDevices::add(const std::shared_ptr<VerbsDevice>& device) {
  std::erase_if(devices_, [](const auto& kv) { return kv.second.expired(); });
  devices_[device->verbs()] = device;
}

}  // namespace rcnet::rdma
