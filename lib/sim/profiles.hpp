// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The simulated devices, one row each: which real device a profile stands
// for (its identity, from which it gets its provider row in
// rdma/provider.hpp, as a real device does at open), its limits, and the
// quirks the provider row does not speak of because rcnet need not know
// them (it copes with either way), though the simulator must reproduce
// them. lib/sim/node*.cpp asks a node's row (SimNode::Impl::caps(),
// provider()) the question it needs answered, never which profile it is.
//
// A new provider quirk rcnet acts on is a field of rdma::ProviderProfile
// and the row of its driver there; the simulator models it where the
// behaviour happens (node_cm.cpp, node_verbs.cpp) by reading provider().
// A quirk only the simulator models is a field here.
#include <array>
#include <cstdint>
#include <string_view>

#include "rdma/provider.hpp"

namespace rcnet::sim {

// Device quirk profiles (docs/design.md "Components"); the rows below say
// what each does.
enum class Profile : std::uint8_t {
  kMlx,    // a ConnectX HCA
  kEhca,   // an IBM eHCA
  kRxe,    // Soft-RoCE as measured in docs/lab.md
  kIwarp,  // an iWARP device as Soft-iWARP behaves (docs/lab.md; the kernel's
           // drivers/infiniband/sw/siw)
};
std::string_view to_string(Profile p);

struct SimCaps {
  std::string_view name;  // "mlx", "ehca", "rxe", "iwarp"; in the device name "sim<N>-<name>"
  // The real device this profile stands for, and its provider row
  // (rdma::choose_provider of it, filled in by the table): what open()
  // reports, and what the simulated device does where the row speaks:
  // no send_imm: a SEND with immediate is refused at post (EINVAL, as
  // libsiw); no rnr: a SEND that finds no receive WR terminates the
  // connection (both QPs to ERR, the sender's SEND fails with REM_OP_ERR,
  // the receiver gets QP FATAL); active_sends_first: data from the passive
  // side before the active side sent anything terminates it likewise (siw's
  // initiator); no drain_after_error: a drain WR on a QP in ERR never
  // completes; error_closes_stream: rdma_disconnect leaves the QP out of
  // ERR (SQD), and a QP moved to ERR closes the stream: the peer sees
  // DISCONNECTED.
  rdma::DeviceIdentity device;
  rdma::ProviderProfile provider = {};
  // ibv_device_attr limits open() reports (max_qp also bounds create_qp).
  std::uint32_t max_qp = 16384;
  std::uint32_t max_qp_wr = 32768;
  std::uint32_t max_srq_wr = 32767;
  std::uint32_t max_cqe = 4194303;
  // An SRQ QP entering ERR delivers Last WQE Reached (IB spec 11.6.3) after
  // Timing::last_wqe. ehca never did (its RQ is always empty there), rxe
  // never does (docs/lab.md).
  bool last_wqe_on_srq_error = false;
  // Async events from the device's own doing (COMM_EST, SRQ limit). rxe
  // reports none (docs/lab.md); injected faults are reported everywhere.
  bool async_events = true;
  // A peer's DREQ (DISCONNECTED) moves the passive QP to ERR. Not on rxe
  // (docs/lab.md): nothing moves it, it stays RTS.
  bool disconnected_errors_qp = true;
  // Flushed receives of a non-SRQ QP are reported as SEND with byte_len 0
  // (rxe, docs/lab.md), not RECV.
  bool flushed_recv_as_send = false;
  // retry_count 7 means retry forever: an unanswered SEND never fails (rxe,
  // docs/lab.md).
  bool retry_7_infinite = false;
  // A drain WR completes after a seeded delay in [Timing::drain_rxe_min,
  // drain_rxe_max) instead of Timing::drain (rxe, docs/lab.md).
  bool drain_delay_rxe = false;
};

namespace detail {
constexpr SimCaps row(SimCaps c) {
  c.provider = rdma::choose_provider(c.device);
  return c;
}
}  // namespace detail

// Indexed by Profile.
inline constexpr std::array<SimCaps, 4> kSimCaps = {
    detail::row({.name = "mlx",
                 .device = {.transport = rdma::Transport::kInfiniband,
                            .vendor_id = 0x02c9,
                            .driver = "mlx5"},
                 .max_qp = 262144,
                 .last_wqe_on_srq_error = true}),
    detail::row({.name = "ehca",
                 .device = {.transport = rdma::Transport::kInfiniband, .driver = "ehca"},
                 .max_qp_wr = 16384}),
    detail::row({.name = "rxe",
                 .device = {.transport = rdma::Transport::kInfiniband,
                            .vendor_id = 0xffffff,
                            .driver = "rxe"},
                 .max_qp = 1048560,
                 .max_srq_wr = 1048576,
                 .max_cqe = 32767,
                 .async_events = false,
                 .disconnected_errors_qp = false,
                 .flushed_recv_as_send = true,
                 .retry_7_infinite = true,
                 .drain_delay_rxe = true}),
    detail::row({.name = "iwarp",
                 .device = {.transport = rdma::Transport::kIwarp,
                            .vendor_id = rdma::kSiwVendorId,
                            .driver = "siw"}}),
};

constexpr const SimCaps& caps_of(Profile p) {
  return kSimCaps[static_cast<std::size_t>(p)];
}

}  // namespace rcnet::sim
