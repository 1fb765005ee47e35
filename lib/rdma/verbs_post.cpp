// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// VerbsSeam's work requests: SENDs (one, a chain, the drain WR), receive
// chains for the SRQ or a QP's own RQ, and the SRQ limit. Each post is one
// ibv_post_* call (one doorbell); chains are built in the seam's scratch
// vectors, so posting allocates nothing once they have grown.
#include <arpa/inet.h>

#include <string>

#include "rdma/verbs_seam.hpp"

namespace rcnet::rdma {

Result<void> VerbsSeam::post_send(CmIdHandle h, std::uint64_t wr_id, const Sge& sge,
                                  std::uint32_t imm, bool signaled) {
  auto qp = qp_of(h, "ibv_post_send");
  if (!qp)
    return qp.error();
  ibv_sge s{sge.addr, sge.length, sge.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = imm != 0 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  wr.imm_data = htonl(imm);
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  ibv_send_wr* bad = nullptr;
  return check_ibv_rc(ibv_post_send(*qp, &wr, &bad), "ibv_post_send");
}

PostSendsResult VerbsSeam::post_sends(CmIdHandle h, std::span<const SendWr> wrs) {
  PostSendsResult res;
  if (wrs.empty())
    return res;
  auto qp = qp_of(h, "ibv_post_send");
  if (!qp) {
    res.error = qp.error();
    return res;
  }
  const std::size_t n = wrs.size();
  send_chain_.assign(n, ibv_send_wr{});
  send_sges_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    send_sges_[i] = ibv_sge{wrs[i].sge.addr, wrs[i].sge.length, wrs[i].sge.lkey};
    ibv_send_wr& w = send_chain_[i];
    w.wr_id = wrs[i].wr_id;
    w.sg_list = &send_sges_[i];
    w.num_sge = 1;
    w.opcode = wrs[i].imm != 0 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    w.imm_data = htonl(wrs[i].imm);
    w.send_flags = wrs[i].signaled ? IBV_SEND_SIGNALED : 0;
    w.next = i + 1 < n ? &send_chain_[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(*qp, send_chain_.data(), &bad);
  if (rc == 0) {
    res.posted = n;
    return res;
  }
  // bad_wr: the first WR not posted (ibv_post_send(3)); a provider that
  // leaves it unset posted none we can vouch for.
  res.posted = bad != nullptr ? static_cast<std::size_t>(bad - send_chain_.data()) : 0;
  res.error =
      Error::from_errno(rc < 0 ? -rc : rc, "ibv_post_send: posted " + std::to_string(res.posted) +
                                               " of " + std::to_string(n) + " WRs");
  return res;
}

Result<void> VerbsSeam::post_drain(CmIdHandle h, std::uint64_t wr_id) {
  auto qp = qp_of(h, "ibv_post_send(drain)");
  if (!qp)
    return qp.error();
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = nullptr;
  wr.num_sge = 0;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  return check_ibv_rc(ibv_post_send(*qp, &wr, &bad), "ibv_post_send(drain)");
}

namespace {
// Links wrs[i] → wrs[i+1]; returns the head or nullptr when empty.
ibv_recv_wr* build_recv_chain(std::span<const std::uint64_t> wr_ids, std::span<const Sge> sges,
                              std::vector<ibv_recv_wr>& wrs, std::vector<ibv_sge>& sg) {
  const std::size_t n = wr_ids.size();
  wrs.assign(n, ibv_recv_wr{});
  sg.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    sg[i] = ibv_sge{sges[i].addr, sges[i].length, sges[i].lkey};
    wrs[i].wr_id = wr_ids[i];
    wrs[i].sg_list = &sg[i];
    wrs[i].num_sge = 1;
    wrs[i].next = i + 1 < n ? &wrs[i + 1] : nullptr;
  }
  return n == 0 ? nullptr : wrs.data();
}

Result<void> recv_result(int rc, const char* what, const ibv_recv_wr* bad,
                         const std::vector<ibv_recv_wr>& wrs) {
  if (rc == 0)
    return {};
  const auto posted = bad != nullptr ? static_cast<std::size_t>(bad - wrs.data()) : 0;
  return Error::from_errno(rc < 0 ? -rc : rc, std::string(what) + ": posted " +
                                                  std::to_string(posted) + " of " +
                                                  std::to_string(wrs.size()) + " WRs");
}
}  // namespace

Result<void> VerbsSeam::post_srq_recv(std::span<const std::uint64_t> wr_ids,
                                      std::span<const Sge> sges) {
  ibv_srq* srq = device_ ? device_->srq() : nullptr;
  if (srq == nullptr)
    return Error::from_errno(EINVAL, "ibv_post_srq_recv: the seam has no SRQ");
  if (wr_ids.size() != sges.size()) {
    return Error::invalid("ibv_post_srq_recv: wr_ids and sges differ in length");
  }
  ibv_recv_wr* head = build_recv_chain(wr_ids, sges, recv_wrs_, recv_sges_);
  if (head == nullptr)
    return {};
  ibv_recv_wr* bad = nullptr;
  return recv_result(ibv_post_srq_recv(srq, head, &bad), "ibv_post_srq_recv", bad, recv_wrs_);
}

Result<void> VerbsSeam::post_qp_recv(CmIdHandle h, std::span<const std::uint64_t> wr_ids,
                                     std::span<const Sge> sges) {
  auto qp = qp_of(h, "ibv_post_recv");
  if (!qp)
    return qp.error();
  if (wr_ids.size() != sges.size()) {
    return Error::invalid("ibv_post_recv: wr_ids and sges differ in length");
  }
  ibv_recv_wr* head = build_recv_chain(wr_ids, sges, recv_wrs_, recv_sges_);
  if (head == nullptr)
    return {};
  ibv_recv_wr* bad = nullptr;
  return recv_result(ibv_post_recv(*qp, head, &bad), "ibv_post_recv", bad, recv_wrs_);
}

Result<void> VerbsSeam::arm_srq_limit(std::uint32_t limit) {
  ibv_srq* srq = device_ ? device_->srq() : nullptr;
  if (srq == nullptr)
    return Error::from_errno(EINVAL, "ibv_modify_srq(IBV_SRQ_LIMIT): no SRQ");
  ibv_srq_attr attr{};
  attr.srq_limit = limit;
  if (auto r =
          check_ibv_rc(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), "ibv_modify_srq(IBV_SRQ_LIMIT)");
      !r) {
    return r;
  }
  // Its one event goes to this seam (the device's async fd is shared).
  device_->srq_limit_armed_by(this);
  return {};
}

}  // namespace rcnet::rdma
