// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// One owning type per rdma-core object (docs/design.md "Conventions" item 2). Each is a
// std::unique_ptr with a noexcept deleter: a failed destroy is logged with the
// call's name and errno text and never throws, because deleters run from
// destructors and from event-loop callbacks.
//
// Each destroy call has its own error contract, and the deleters follow it:
//   ibv_destroy_qp/srq/cq/comp_channel, ibv_dealloc_pd, ibv_dereg_mr
//       return 0 or the errno value (ibv_create_qp(3), ibv_alloc_pd(3), ...);
//   ibv_close_device returns -1 and sets errno (ibv_open_device(3));
//   rdma_destroy_id returns -1 and sets errno (rdma_destroy_id(3));
//   rdma_destroy_event_channel and rdma_destroy_qp return void.
// A destroy that fails leaves the object alive in the kernel: there is nothing
// more a destructor can do than say so loudly.
//
// Ownership notes:
//   - With rdma_cm the device context (ibv_context) belongs to librdmacm and is
//     reached through rdma_cm_id::verbs; ContextPtr is only for a context
//     opened with ibv_open_device.
//   - A QP made by rdma_create_qp(3) is owned through IdQpPtr, whose deleter
//     calls rdma_destroy_qp on the id (which also clears id->qp). The id itself
//     stays owned by its CmIdPtr and must outlive the IdQpPtr.
//   - Objects with dependencies must be released in reverse order of creation
//     (QP before its CQ/SRQ/PD, MR before PD, ids before their event channel);
//     the owner of several of these types orders its members accordingly.
//   - ibv_destroy_cq(3) blocks/fails while CQ events are unacknowledged:
//     acknowledge them with ibv_ack_cq_events before resetting a CqPtr.
//
// Threading: like every rdma-core call in rcnet, only on the loop's thread.

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rcnet::rdma {

struct ContextDeleter {
  void operator()(ibv_context* p) const noexcept;
};
struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept;
};
struct CqDeleter {
  void operator()(ibv_cq* p) const noexcept;
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* p) const noexcept;
};
struct SrqDeleter {
  void operator()(ibv_srq* p) const noexcept;
};
struct MrDeleter {
  void operator()(ibv_mr* p) const noexcept;
};
// For a QP not created through rdma_cm (ibv_create_qp(3)).
struct QpDeleter {
  void operator()(ibv_qp* p) const noexcept;
};
struct EventChannelDeleter {
  void operator()(rdma_event_channel* p) const noexcept;
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* p) const noexcept;
};
// Owns the QP of an rdma_cm id: holds the id (borrowed) and calls
// rdma_destroy_qp(3) on it.
struct IdQpDeleter {
  void operator()(rdma_cm_id* id) const noexcept;
};

using ContextPtr = std::unique_ptr<ibv_context, ContextDeleter>;
using PdPtr = std::unique_ptr<ibv_pd, PdDeleter>;
using CqPtr = std::unique_ptr<ibv_cq, CqDeleter>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using SrqPtr = std::unique_ptr<ibv_srq, SrqDeleter>;
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;
using QpPtr = std::unique_ptr<ibv_qp, QpDeleter>;
using EventChannelPtr = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, CmIdDeleter>;
// Non-null ⇔ the id has a QP that this owner must destroy. get() is the id.
using IdQpPtr = std::unique_ptr<rdma_cm_id, IdQpDeleter>;

}  // namespace rcnet::rdma
