// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/verbs_device.hpp"

#include <fcntl.h>
#include <rdma/siw-abi.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <string>
#include <system_error>
#include <vector>

#include "rdma/verbs_map.hpp"
#include "rdma/verbs_seam.hpp"
#include "rdma/verbs_util.hpp"

namespace rcnet::rdma {

namespace {

// siw's mmap keys. The kernel hands user space one key per queue it maps
// (CQ, SRQ, each QP's SQ): the byte offset of the first page of a free run
// of pages in the context's mmap space, the lowest run that fits
// (drivers/infiniband/core/ib_core_uverbs.c), counted from 0 for each
// context. libsiw (rdma-core providers/siw/siw.c) takes a key equal to
// SIW_INVAL_UOBJ_KEY (rdma/siw-abi.h: 0x90000, page 144 of 4 KiB) for the
// kernel's "no mapping", destroys the new object and returns NULL without
// setting errno: a queue whose first page would be page 144 can never be
// created, and since the same free run comes back each time, every later
// attempt fails alike. With rcnetd's defaults (SRQ 14 pages, CQ 129) the
// second QP's SQ lands there: one connection per process, then
// "rdma_create_qp: <a stale errno>" for every other (lab, 2026-11-29).
//
// The guard: on the context's empty mmap space, CQs fill pages 0 to K-2
// (K the page of the bad key), a 2-page CQ takes K-1 and K and is kept,
// and the fillers are destroyed. Page K is then never the first page of
// anything, and the freed pages 0..K-2 take the SRQ, CQ and SQs as before.

// Pages a siw CQ of `cqe` entries maps: the kernel rounds cqe up to a
// power of two and adds its notification word (siw_create_cq()).
std::size_t siw_cq_pages(std::uint32_t cqe, std::size_t page) {
  const std::size_t bytes = std::bit_ceil(cqe) * sizeof(siw_cqe) + sizeof(siw_cq_ctrl);
  return (bytes + page - 1) / page;
}

}  // namespace

CqPtr siw_key_guard(ibv_context* verbs, const DeviceInfo& info) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (page == 0 || SIW_INVAL_UOBJ_KEY % page != 0)
    return nullptr;  // no page starts at the bad key
  const std::size_t bad = SIW_INVAL_UOBJ_KEY / page;
  if (bad == 0)
    return nullptr;
  std::vector<CqPtr> fillers;
  std::size_t left = bad - 1;
  while (left > 0) {
    // The largest CQ that fits what is left (1 entry is 1 page).
    std::uint32_t cqe = 1;
    while (cqe * 2 <= info.max_cqe && siw_cq_pages(cqe * 2, page) <= left)
      cqe *= 2;
    ibv_cq* cq = ibv_create_cq(verbs, static_cast<int>(cqe), nullptr, nullptr, 0);
    if (cq == nullptr) {
      spdlog::warn(
          "{}: cannot place the siw mmap key guard (filler CQ of {} entries failed); "
          "a queue mapped at key {:#x} will fail to be created",
          info.name, cqe, SIW_INVAL_UOBJ_KEY);
      return nullptr;
    }
    fillers.emplace_back(cq);
    left -= siw_cq_pages(cqe, page);
  }
  std::uint32_t cqe = 1;
  while (siw_cq_pages(cqe, page) < 2)
    cqe *= 2;
  ibv_cq* guard = ibv_create_cq(verbs, static_cast<int>(cqe), nullptr, nullptr, 0);
  if (guard == nullptr) {
    spdlog::warn("{}: cannot place the siw mmap key guard (CQ of {} entries failed)", info.name,
                 cqe);
    return nullptr;
  }
  spdlog::debug("{}: siw mmap key guard: a {}-entry CQ over pages {} and {} ({} fillers freed)",
                info.name, cqe, bad - 1, bad, fillers.size());
  return CqPtr(guard);
}

DeviceIdentity identity_of(ibv_device* device, const ibv_device_attr& attr) {
  return DeviceIdentity{.transport = device->transport_type == IBV_TRANSPORT_IWARP
                                         ? Transport::kIwarp
                                         : Transport::kInfiniband,
                        .vendor_id = attr.vendor_id,
                        .driver = driver_of(ibv_get_device_name(device))};
}

Result<std::shared_ptr<VerbsDevice>> VerbsDevice::create(ibv_context* verbs, std::uint32_t srq_size,
                                                         const DeviceInfo& info) {
  std::shared_ptr<VerbsDevice> d(new VerbsDevice(verbs));
  d->name_ = info.name;
  if (info.profile.mmap_key_guard)
    d->key_guard_ = siw_key_guard(verbs, info);
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
  if (auto r = set_nonblocking(verbs->async_fd, "the device async fd"); !r)
    return r.error();
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
  key_guard_.reset();
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
