// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What an RDMA device can and cannot do, as far as rcnet's data path and
// lifecycle care: one row per provider in one table (kProviderRows), chosen
// once by the seam when it opens the device (choose_provider, put into
// rdma::DeviceInfo::profile) and read by the connection manager. No call
// site asks which provider or driver it runs on; each asks the profile the
// question it needs answered (docs/design.md "Providers").
//
// A driver's quirk is one row: a field here (defaulting to what every other
// device does) and the row of the driver that differs, placed above the
// generic row of its transport. The simulator's devices choose their rows
// from this table too (lib/sim/profiles.hpp), so a quirk is simulated where
// the row says so.
//
// InfiniBand and RoCE (rxe included) can do everything below. iWARP
// (IBV_TRANSPORT_IWARP: siw, irdma in iWARP mode, cxgb4, qedr) differs in
// every row (rdma_connect(3) for who sends first; the kernel's
// drivers/infiniband/sw/siw for the rest; docs/lab.md for what was measured).
#include <cstdint>
#include <span>
#include <string_view>

namespace rcnet::rdma {

struct ProviderProfile {
  // The row's name, for the log: "siw", "iwarp", "infiniband".
  std::string_view name = "infiniband";
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
  // Listening takes the TCP port of the same number on the address (iWARP
  // runs over TCP): a TCP listener there makes rdma_listen fail, reported
  // as such (verbs_open.cpp).
  bool listen_takes_tcp_port = false;
  // libsiw mistakes one mmap key for "no mapping" (SIW_INVAL_UOBJ_KEY,
  // rdma/siw-abi.h): the device gets a small CQ over it before anything
  // else is created (rdma::siw_key_guard, verbs_device.cpp).
  bool mmap_key_guard = false;
};

enum class Transport : std::uint8_t {
  kInfiniband,  // IBV_TRANSPORT_IB: InfiniBand and RoCE
  kIwarp,       // IBV_TRANSPORT_IWARP
};

// What the seam knows of a device when it opens it: the key a row is
// chosen by.
struct DeviceIdentity {
  Transport transport = Transport::kInfiniband;
  std::uint32_t vendor_id = 0;  // ibv_device_attr.vendor_id
  // The kernel's device name less its instance number (driver_of()):
  // "mlx5", "rxe", "siw". A renamed device (rdma(8) dev set name) loses it,
  // which is why a row whose vendor id is the driver's own matches by that.
  std::string_view driver = {};
};

// ibv_device_attr.vendor_id of Soft-iWARP (siw), "bmt".
inline constexpr std::uint32_t kSiwVendorId = 0x626d74;

// One provider: which devices it is (each key field that is set must
// match) and what they can do.
struct ProviderRow {
  Transport transport = Transport::kInfiniband;
  std::uint32_t vendor_id = 0;   // 0: any
  std::string_view driver = {};  // empty: any
  ProviderProfile profile;
};

// What every iWARP device is (the generic iWARP row), and siw: that, plus
// libsiw's mmap key guard.
inline constexpr ProviderProfile kIwarpProfile = {.name = "iwarp",
                                                  .transport = "iwarp",
                                                  .send_imm = false,
                                                  .rnr = false,
                                                  .last_wqe = false,
                                                  .drain_after_error = false,
                                                  .active_sends_first = true,
                                                  .error_closes_stream = true,
                                                  .listen_takes_tcp_port = true};
constexpr ProviderProfile siw_profile() {
  ProviderProfile p = kIwarpProfile;
  p.name = "siw";
  p.mmap_key_guard = true;
  return p;
}

// The providers, first match wins: a driver's row above the generic row of
// its transport, which comes last and matches every device of it.
inline constexpr ProviderRow kProviderRows[] = {
    {.transport = Transport::kIwarp, .vendor_id = kSiwVendorId, .profile = siw_profile()},
    {.transport = Transport::kIwarp, .profile = kIwarpProfile},
    {.transport = Transport::kInfiniband, .profile = {}},
};

constexpr bool matches(const ProviderRow& row, const DeviceIdentity& d) {
  return row.transport == d.transport && (row.vendor_id == 0 || row.vendor_id == d.vendor_id) &&
         (row.driver.empty() || row.driver == d.driver);
}

// The profile of the first row `d` matches; every transport has a last,
// generic row, so there is always one.
constexpr const ProviderProfile& choose_provider(
    const DeviceIdentity& d, std::span<const ProviderRow> rows = kProviderRows) {
  for (const ProviderRow& row : rows) {
    if (matches(row, d))
      return row.profile;
  }
  return rows.back().profile;
}

// The driver part of a kernel device name (ibv_get_device_name(3)): the
// name less its trailing instance number and a '_' before it: "mlx5_0" ->
// "mlx5", "rxe0" -> "rxe".
constexpr std::string_view driver_of(std::string_view device_name) {
  std::size_t end = device_name.size();
  while (end > 0 && device_name[end - 1] >= '0' && device_name[end - 1] <= '9')
    --end;
  if (end == device_name.size())
    return device_name;
  if (end > 0 && device_name[end - 1] == '_')
    --end;
  return device_name.substr(0, end);
}

}  // namespace rcnet::rdma
