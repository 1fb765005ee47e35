// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// VerbsDevice: one RDMA device as the VerbsSeams on its ports share it.
//
// librdmacm opens one ibv_context per device and gives it to every cm id
// bound to any port of that device (rdma_cm_id.verbs), so seams on two ports
// of one HCA (two rails) reach one context and one async-event fd: an event
// read by one seam may name the other's QP. The device keeps what exists
// once per context and routes what arrives once per context:
//   - the PD, the SRQ and every MR (registered through any seam, valid on
//     all, unregistered through any; handles unique per device);
//   - the async-event fd (ibv_get_async_event(3)): a QP event goes to the
//     seam whose QP it names, a CQ event to the seam owning the CQ, the SRQ
//     limit event to the seam that armed it last, port and device events
//     (PORT_ACTIVE, PORT_ERR, DEVICE_FATAL, SRQ_ERR) to every seam, each
//     seam's manager keeping those of its own port (docs/design.md "Rails");
//   - the slot where the seams' users keep what they share in turn
//     (Seam::device_share).
// Each seam keeps its own listener, rdma_cm channel, completion channel and
// CQ. A seam made without a VerbsDevices registry has a device of its own.
//
// Lifetime: the first seam to open() on a context makes the device, each
// seam holds it while open, and the last close_device() (or destructor)
// releases MRs, SRQ and PD, in that order, before that seam lets go of its
// listener (which keeps librdmacm's context open). A device that reported
// DEVICE_FATAL, or whose removal (RDMA_CM_EVENT_DEVICE_REMOVAL) any seam
// read, is "lost": no seam may open on it again until every seam let go, as
// they would share dead objects (rxe gives a device that comes back the same
// GUID, and librdmacm keeps the old context while ids name it). A seam that
// closes for another reason (its open failed half-way) leaves it usable.
//
// Threading: the loop's, like everything of rdma-core in rcnet.

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdma/provider.hpp"
#include "rdma/raii.hpp"
#include "rdma/seam.hpp"

namespace rcnet::rdma {

class VerbsSeam;

// What choose_provider() (rdma/provider.hpp) matches `device` by: its
// transport_type, the vendor id of `attr` (ibv_query_device(3)) and the
// driver part of ibv_get_device_name(3). The string in it is the device's:
// valid while `device` is.
DeviceIdentity identity_of(ibv_device* device, const ibv_device_attr& attr);

// On a siw context whose mmap space is still empty (nothing created on it
// yet), places the CQ that keeps libsiw from ever being handed the one mmap
// key it mistakes for "no mapping" (SIW_INVAL_UOBJ_KEY, rdma/siw-abi.h; the
// reason and the evidence: verbs_device.cpp). Uses info.name (for the log)
// and info.max_cqe. The caller owns the CQ and keeps it as long as the
// context. nullptr when none is needed (a page size that no key of a page
// start can equal) or it could not be placed (logged as a warning: a CQ
// failed). Used by VerbsDevice::create, and by the lab's preload for
// rdma-core's tools (tools/bench/siw_key_guard_preload.cpp).
CqPtr siw_key_guard(ibv_context* verbs, const DeviceInfo& info);

class VerbsDevice {
 public:
  // `verbs` is librdmacm's context (borrowed: kept open by the seams'
  // listeners). Where the provider row asks for it (mmap_key_guard: siw),
  // first places a small CQ over the one mmap key libsiw cannot use
  // (siw_key_guard()). Allocates the
  // PD and, when srq_size > 0, the SRQ of
  // srq_size WRs clamped to info.max_srq_wr (logged); sets the async fd
  // O_NONBLOCK. Errors: those of ibv_alloc_pd(3), ibv_create_srq(3), fcntl(2).
  static Result<std::shared_ptr<VerbsDevice>> create(ibv_context* verbs, std::uint32_t srq_size,
                                                     const DeviceInfo& info);
  ~VerbsDevice();
  VerbsDevice(const VerbsDevice&) = delete;
  VerbsDevice& operator=(const VerbsDevice&) = delete;

  ibv_context* verbs() const { return verbs_; }
  int async_fd() const { return verbs_->async_fd; }
  const std::string& name() const { return name_; }
  ibv_pd* pd() const { return pd_.get(); }
  ibv_srq* srq() const { return srq_.get(); }  // nullptr: per-QP receive queues
  std::uint32_t srq_size() const { return srq_size_; }

  // Reads async events until EAGAIN; each is copied, acknowledged, then
  // handed to the sink of the seam it belongs to (above). Any seam's
  // dispatch_async_events() lands here; a poller watches async_fd() once.
  void dispatch_async_events();

  // The seams open on it, in the order they opened.
  void attach(VerbsSeam* seam);
  // Returns true when `seam` was the last: the device then released its
  // MRs (logged when any were left), SRQ and PD.
  bool detach(VerbsSeam* seam);
  std::size_t seams() const { return seams_.size(); }

  void qp_created(Qpn qpn, VerbsSeam* owner) { qp_owner_[qpn] = owner; }
  void qp_destroyed(Qpn qpn) { qp_owner_.erase(qpn); }
  // The seam that armed the SRQ limit last gets its one event.
  void srq_limit_armed_by(VerbsSeam* seam) { srq_limit_owner_ = seam; }

  // ibv_reg_mr(3) on the PD, IBV_ACCESS_LOCAL_WRITE. Errors: ibv_reg_mr's.
  Result<MemoryRegion> register_memory(std::span<std::byte> mem);
  // false: no such handle.
  bool unregister_memory(std::uint32_t handle) { return mrs_.erase(handle) != 0; }
  std::size_t mr_count() const { return mrs_.size(); }

  // It reported its removal or a fatal error: nobody opens on it again (above).
  void mark_lost() { lost_ = true; }
  bool lost() const { return lost_; }

  std::weak_ptr<DeviceShare>& share() { return share_; }

 private:
  explicit VerbsDevice(ibv_context* verbs) : verbs_(verbs) {}
  void release();
  void deliver(const AsyncEvent& ev, const ibv_async_event& raw);

  ibv_context* verbs_;
  std::string name_;
  PdPtr pd_;
  // siw only: the CQ that holds the mmap key libsiw mistakes for "none"
  // (siw_key_guard()); nullptr elsewhere.
  CqPtr key_guard_;
  SrqPtr srq_;
  std::uint32_t srq_size_ = 0;  // as configured by the first seam (0 = none)
  std::map<std::uint32_t, MrPtr> mrs_;
  std::uint32_t next_mr_ = 1;
  std::vector<VerbsSeam*> seams_;
  std::map<Qpn, VerbsSeam*> qp_owner_;
  VerbsSeam* srq_limit_owner_ = nullptr;
  bool lost_ = false;
  std::weak_ptr<DeviceShare> share_;
};

// The devices the seams of one process have open, by context: seams made
// with the same registry share a device where their listeners bind to ports
// of one (rcnetd's rails). Holds no device: the seams do.
class VerbsDevices {
 public:
  // The open device of `verbs`, or nullptr.
  std::shared_ptr<VerbsDevice> find(ibv_context* verbs);
  void add(const std::shared_ptr<VerbsDevice>& device);

 private:
  std::map<ibv_context*, std::weak_ptr<VerbsDevice>> devices_;
};

}  // namespace rcnet::rdma
