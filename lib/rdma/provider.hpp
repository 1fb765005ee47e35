// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What an RDMA device can and cannot do, as far as rcnet's data path and
// lifecycle care: one value, filled by the seam when it opens the device
// (rdma::DeviceInfo::profile) and read by the connection manager. No call
// site asks which provider it runs on; each asks the profile the question
// it needs answered (docs/design.md "Providers").
//
// InfiniBand and RoCE (rxe included) can do everything below. iWARP
// (IBV_TRANSPORT_IWARP: siw, irdma in iWARP mode, cxgb4, qedr) differs in
// every row (rdma_connect(3) for who sends first; the kernel's
// drivers/infiniband/sw/siw for the rest; docs/lab.md for what was measured).
#include <cstdint>
#include <string_view>

namespace rcnet::rdma {

struct ProviderProfile {
  // The device's transport as ibv_node_type_str / transport_type say it:
  // "infiniband" (IB and RoCE) or "iwarp"; for the log and rcnetctl.
  std::string_view transport = "infiniband";
  // A SEND may carry immediate data (IBV_WR_SEND_WITH_IMM) and a receive
  // completion reports it (IBV_WC_WITH_IMM). iWARP: no (libsiw refuses the
  // opcode; irdma offers WRITE_WITH_IMM only). Without it a connection frames
  // its SENDs with wire::FrameHeader.
  bool send_imm = true;
  // A SEND that finds no receive WR is NAKed and retried (RNR). iWARP: no,
  // it terminates the connection (DDP "no buffer"); the receiver must then
  // grant credits (docs/design.md "Receive credits").
  bool rnr = true;
  // IBV_EVENT_QP_LAST_WQE_REACHED may come for an SRQ QP in Error (IB spec
  // 11.6.3; some devices never send it, the bound covers them). iWARP has no
  // such event: AWAIT_LAST_WQE is skipped (counted, last_wqe_skipped).
  bool last_wqe = true;
  // A drain WR posted on a QP in Error completes (flushed) after every
  // earlier WR. On siw it never did (docs/lab.md): DRAINING is skipped and
  // the QP destroyed at once (counted, drains_skipped); completions of the
  // dead QPN still in the CQ are recognised and ignored as always.
  bool drain_after_error = true;
  // Only the active side may send the first message of a connection
  // (rdma_connect(3), iWARP: siw's initiator treats data right after the
  // MPA reply as a protocol error). The passive side then holds its packets
  // until the active side's first SEND has arrived.
  bool active_sends_first = false;
  // Moving a QP to Error closes the connection's stream (TCP) at once, and
  // rdma_disconnect(3) moves the QP to SQD rather than Error: the graceful
  // order (DREQ, wait for DISCONNECTED, then Error) is what keeps the last
  // SENDs; informational beyond that.
  bool error_closes_stream = false;
};

// The profile of an InfiniBand or RoCE device.
constexpr ProviderProfile infiniband_profile() {
  return ProviderProfile{};
}

// The profile of an iWARP device.
constexpr ProviderProfile iwarp_profile() {
  return ProviderProfile{.transport = "iwarp",
                         .send_imm = false,
                         .rnr = false,
                         .last_wqe = false,
                         .drain_after_error = false,
                         .active_sends_first = true,
                         .error_closes_stream = true};
}

}  // namespace rcnet::rdma
