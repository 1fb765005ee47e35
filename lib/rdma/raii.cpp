// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/raii.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace rcnet::rdma {
namespace {

// For the calls that return the errno value itself.
void log_rc(const char* call, int rc) noexcept {
  if (rc == 0)
    return;
  const int err = rc < 0 ? -rc : rc;
  try {
    spdlog::error("{} failed: {} (the object stays allocated in the kernel)", call,
                  std::strerror(err));
  } catch (...) {
    // Logging must not turn a failed destroy into a crash.
  }
}

// For the calls that return -1 and set errno.
void log_errno(const char* call, int rc, int err) noexcept {
  if (rc == 0)
    return;
  log_rc(call, err != 0 ? err : EIO);
}

}  // namespace

void ContextDeleter::operator()(ibv_context* p) const noexcept {
  const int rc = ibv_close_device(p);
  log_errno("ibv_close_device", rc, errno);
}
void PdDeleter::operator()(ibv_pd* p) const noexcept {
  log_rc("ibv_dealloc_pd", ibv_dealloc_pd(p));
}
void CqDeleter::operator()(ibv_cq* p) const noexcept {
  log_rc("ibv_destroy_cq", ibv_destroy_cq(p));
}
void CompChannelDeleter::operator()(ibv_comp_channel* p) const noexcept {
  log_rc("ibv_destroy_comp_channel", ibv_destroy_comp_channel(p));
}
void SrqDeleter::operator()(ibv_srq* p) const noexcept {
  log_rc("ibv_destroy_srq", ibv_destroy_srq(p));
}
void MrDeleter::operator()(ibv_mr* p) const noexcept {
  log_rc("ibv_dereg_mr", ibv_dereg_mr(p));
}
void QpDeleter::operator()(ibv_qp* p) const noexcept {
  log_rc("ibv_destroy_qp", ibv_destroy_qp(p));
}
void EventChannelDeleter::operator()(rdma_event_channel* p) const noexcept {
  rdma_destroy_event_channel(p);
}
void CmIdDeleter::operator()(rdma_cm_id* p) const noexcept {
  const int rc = rdma_destroy_id(p);
  log_errno("rdma_destroy_id", rc, errno);
}
void IdQpDeleter::operator()(rdma_cm_id* id) const noexcept {
  // rdma_destroy_qp(3) reports nothing; ibv_destroy_qp under it returns in
  // ~1 ms on rxe in any QP state (docs/lab.md).
  if (id->qp != nullptr)
    rdma_destroy_qp(id);
}

}  // namespace rcnet::rdma
