// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The RDMA seam: the narrow set of operations the connection manager needs,
// and the events it is handed. Two implementations:
//   - rdma::VerbsSeam (lib/rdma/verbs_seam.*): libibverbs + librdmacm;
//   - sim::SimNode::seam() (lib/sim/fabric.hpp): a simulated HCA, one per node
//     of a deterministic sim::Fabric.
// The manager names rdma_cm ids by CmIdHandle and QPs by the cm id they were
// created on (rdma_create_qp(3): one QP per id). Handles are never reused
// within one seam, so a late event naming a destroyed id is recognisable.
//
// Threading: every call and every event happens on the loop's thread.
//
// Event delivery: the seam reads events (rdma_get_cm_event, ibv_get_async_event,
// ibv_poll_cq), copies them into the value types below, ACKNOWLEDGES THEM AT
// ONCE (rdma_ack_cm_event, ibv_ack_async_event) and then hands them to the
// EventSink. Acknowledging before dispatch is what guarantees the docs/design.md
// rule "every async event is acknowledged before the QP it names is destroyed"
// (ibv_destroy_qp(3) and rdma_destroy_id(3) block on unacknowledged events).
// A sink may call back into the seam from inside a handler, but must not
// destroy the cm id the event names from inside that handler (defer it).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdma/provider.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::rdma {

using CmIdHandle = std::uint64_t;
inline constexpr CmIdHandle kNoCmId = 0;
using Qpn = std::uint32_t;

// --- Events ------------------------------------------------------------------

// rdma_cm events (rdma_get_cm_event(3)), the subset rcnet acts on; anything
// else arrives as kOther and is counted.
enum class CmEventType : std::uint8_t {
  kAddrResolved,
  kAddrError,
  kRouteResolved,
  kRouteError,
  kConnectRequest,  // passive side: `id` is a NEW id, `listen_id` the listener
  kConnectError,
  kUnreachable,
  kRejected,  // `status` is the CM reject reason (28 = consumer reject)
  kEstablished,
  kDisconnected,
  kDeviceRemoval,
  kTimewaitExit,
  kAddrChange,
  kOther,
};
std::string_view to_string(CmEventType t);

struct CmEvent {
  CmEventType type = CmEventType::kOther;
  CmIdHandle id = kNoCmId;
  CmIdHandle listen_id = kNoCmId;  // set for kConnectRequest
  int status = 0;                  // event->status
  // REQ private data on kConnectRequest (the receiver sees 56 bytes on IB/RoCE,
  // zero-padded), REP on kEstablished (active side), REJ on kRejected.
  std::vector<std::uint8_t> private_data;
  Endpoint src;        // kConnectRequest: the peer's underlay address
  Endpoint dst;        // kConnectRequest: our address it connected to
  Qpn remote_qpn = 0;  // kConnectRequest / kEstablished when known
};

// Affiliated and unaffiliated asynchronous events (ibv_get_async_event(3)).
enum class AsyncEventType : std::uint8_t {
  kQpFatal,          // IBV_EVENT_QP_FATAL
  kQpReqErr,         // IBV_EVENT_QP_REQ_ERR
  kQpAccessErr,      // IBV_EVENT_QP_ACCESS_ERR
  kCommEstablished,  // IBV_EVENT_COMM_EST
  kSqDrained,        // IBV_EVENT_SQ_DRAINED
  kPathMigrated,     // IBV_EVENT_PATH_MIG
  kLastWqeReached,   // IBV_EVENT_QP_LAST_WQE_REACHED (IB spec 10.3.1, 11.6.3)
  kSrqLimitReached,  // IBV_EVENT_SRQ_LIMIT_REACHED
  kSrqErr,           // IBV_EVENT_SRQ_ERR
  kCqErr,            // IBV_EVENT_CQ_ERR
  kPortActive,       // IBV_EVENT_PORT_ACTIVE
  kPortError,        // IBV_EVENT_PORT_ERR
  kDeviceFatal,      // IBV_EVENT_DEVICE_FATAL
  kOther,
};
std::string_view to_string(AsyncEventType t);

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::kOther;
  Qpn qpn = 0;  // for QP-affiliated events; 0 otherwise
  // For port events (PORT_ACTIVE, PORT_ERR): ibv_async_event.element.port_num,
  // the port of the device it is about; 0 otherwise or unknown. Two rails on
  // two ports of one device each see both ports' events.
  std::uint8_t port = 0;
};

enum class WcStatus : std::uint8_t {
  kSuccess,
  kFlushErr,          // IBV_WC_WR_FLUSH_ERR
  kRetryExceeded,     // IBV_WC_RETRY_EXC_ERR
  kRnrRetryExceeded,  // IBV_WC_RNR_RETRY_EXC_ERR
  kRemoteAccessErr,
  kRemoteOpErr,
  kLocalLengthErr,  // IBV_WC_LOC_LEN_ERR: receive buffer too small
  kLocalProtErr,
  kOther,
};
std::string_view to_string(WcStatus s);

enum class WcOpcode : std::uint8_t { kSend, kRecv, kOther };

// One work completion (ibv_poll_cq(3)). On error only wr_id, status and qpn
// are meaningful: classify by wr_id, never by opcode (docs/lab.md: rxe reports
// flushed receives as SEND with byte_len 0).
struct WorkCompletion {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kOther;
  std::uint32_t byte_len = 0;
  bool has_imm = false;
  std::uint32_t imm = 0;  // host order
  Qpn qpn = 0;
  // On error, for the log: the provider's own status (enum ibv_wc_status,
  // with ibv_wc_status_str(3)'s text; a static string or nullptr) and its
  // vendor_err (ibv_poll_cq(3): a vendor's syndrome, which is what a
  // vendor's support asks for). `status` keeps only what rcnet acts on
  // (kOther for the rest). Zero and nullptr from the simulated HCA.
  std::uint32_t raw_status = 0;
  const char* raw_status_text = nullptr;
  std::uint32_t vendor_err = 0;
};
// An error completion's status for the log: "RETRY_EXC_ERR", or with what
// the provider said beyond it, e.g. "OTHER (ibv_wc_status 13: general error,
// vendor_err 0x32)".
std::string describe_status(const WorkCompletion& wc);

// The manager implements this; the seam calls it.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_cm_event(const CmEvent& ev) = 0;
  virtual void on_async_event(const AsyncEvent& ev) = 0;
  // A batch polled from the shared CQ, in CQ order.
  virtual void on_completions(std::span<const WorkCompletion> wcs) = 0;
};

// --- Operations --------------------------------------------------------------

struct DeviceConfig {
  std::uint32_t cq_size = 8192;   // CQEs of the one shared CQ (send + recv of every QP)
  std::uint32_t srq_size = 4096;  // receive WRs of the SRQ; 0 = no SRQ (per-QP RQ)
  int listen_backlog = 1024;
  // RDMA_OPTION_ID_ACK_TIMEOUT (rdma_set_option(3)) for every id: 4.096 us *
  // 2^ack_timeout per transport retry, 0..31 (rdma/ib_timers.hpp; 0 = no
  // timer, a dead peer is never reported). 14 → RETRY_EXC_ERR after ~0.27 s
  // with retry_count 3 on rxe (docs/lab.md); rdma_cm's default 19 takes ~9 s.
  std::uint8_t ack_timeout = 14;
  // min_rnr_timer of every QP (ibv_modify_qp(3) IBV_QP_MIN_RNR_TIMER): the
  // RNR NAK timer code our QP sends when a SEND finds no receive WR, i.e. how
  // long the peer waits before retrying; 0..31 (rdma/ib_timers.hpp: 12 =
  // 0.64 ms, 14 = 1.28 ms, 0 = 655.36 ms). The kernel's CM puts 0 into the
  // INIT→RTR attributes rdma_accept and the REP handling apply, and rdma_cm
  // has no option for it, so the seam changes it RTS→RTS once the QP is RTS:
  // after rdma_accept (passive) and at ESTABLISHED (active). Until then the
  // QP NAKs with 0. 12 is what rdma-core's rc_pingpong uses.
  std::uint8_t min_rnr_timer = 12;
};

struct DeviceInfo {
  std::string name;       // "rxe0", "mlx5_0", "sim3"
  std::uint8_t port = 0;  // the listener's port (rdma_cm_id.port_num once bound); 0 unknown
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;
  std::uint32_t max_srq_wr = 0;
  std::uint32_t max_cqe = 0;
  std::uint32_t vendor_id = 0;  // ibv_device_attr.vendor_id (siw: 0x626d74, "bmt")
  // What the device can do: its provider row (rdma/provider.hpp), chosen
  // once at open by transport, vendor id and driver.
  ProviderProfile profile;
};

// A registered memory region (ibv_reg_mr(3)) over memory the caller owns and
// keeps alive until unregister_memory().
struct MemoryRegion {
  std::uint32_t handle = 0;  // seam's own handle
  std::uint32_t lkey = 0;
};

struct QpCaps {
  std::uint32_t max_send_wr = 256;  // includes room for the drain WR
  std::uint32_t max_recv_wr = 0;    // per-QP RQ depth when not on the SRQ
  bool use_srq = true;
};

// rdma_conn_param(3) fields the manager sets.
struct ConnParams {
  std::span<const std::uint8_t> private_data;
  std::uint8_t retry_count = 3;      // 7 is infinite on rxe (docs/lab.md)
  std::uint8_t rnr_retry_count = 7;  // 7 = infinite RNR retries
};

// One scatter element.
struct Sge {
  std::uint64_t addr = 0;  // virtual address inside a registered region
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

// One SEND of a chain (Seam::post_sends): with immediate (IBV_WR_SEND_WITH_IMM)
// when `imm` is nonzero, a plain IBV_WR_SEND when it is 0 (every rcnet
// immediate is nonzero, wire/immediate.hpp; a device without immediate data,
// ProviderProfile::send_imm false, gets only plain SENDs).
struct SendWr {
  std::uint64_t wr_id = 0;
  Sge sge;
  std::uint32_t imm = 0;  // host order; 0 = no immediate
  bool signaled = false;
};

// What Seam::post_sends did: WRs [0, posted) are on the SQ; on error (the
// provider's, or the seam's own when the id has no QP) the rest are not.
struct PostSendsResult {
  std::size_t posted = 0;
  std::optional<Error> error;
};

// What the seam's user keeps once per device rather than once per seam
// (Seam::device_share; cm::SrqBuffers).
class DeviceShare {
 public:
  virtual ~DeviceShare() = default;
};

class Seam {
 public:
  virtual ~Seam() = default;

  // Binds `local` (which selects the device), listens, and creates the
  // device-wide objects: PD, completion channel, the shared CQ, the SRQ when
  // cfg.srq_size > 0 (where ports of one device share them, below, the PD
  // and SRQ are the first seam's). Errors: EADDRNOTAVAIL (no device owns
  // the address), ENODEV, and whatever rdma_bind_addr/ibv_create_* report.
  virtual Result<DeviceInfo> open(const Endpoint& local, const DeviceConfig& cfg) = 0;

  virtual Result<MemoryRegion> register_memory(std::span<std::byte> mem) = 0;
  virtual void unregister_memory(const MemoryRegion& mr) = 0;

  // --- rdma_cm ---------------------------------------------------------------
  // A new active id (rdma_create_id(3), RDMA_PS_TCP).
  virtual Result<CmIdHandle> create_id() = 0;
  // rdma_resolve_addr(3) with our bound source address; result arrives as
  // kAddrResolved / kAddrError.
  virtual Result<void> resolve_addr(CmIdHandle id, const Endpoint& dst, Duration timeout) = 0;
  virtual Result<void> resolve_route(CmIdHandle id, Duration timeout) = 0;
  // rdma_create_qp(3) on the id: RC, send CQ = recv CQ = the shared CQ,
  // attached to the SRQ when caps.use_srq. Returns the QPN.
  virtual Result<Qpn> create_qp(CmIdHandle id, const QpCaps& caps) = 0;
  virtual Result<void> connect(CmIdHandle id, const ConnParams& p) = 0;
  virtual Result<void> accept(CmIdHandle id, const ConnParams& p) = 0;
  virtual Result<void> reject(CmIdHandle id, std::span<const std::uint8_t> private_data) = 0;
  // rdma_disconnect(3): sends DREQ (or DREP); also moves our QP to ERR on
  // IB/RoCE providers. Idempotent from the manager's view.
  virtual Result<void> disconnect(CmIdHandle id) = 0;
  // rdma_notify(3) with IBV_EVENT_COMM_EST: a passive side whose QP received
  // data before the RTU tells the CM that the connection is established; the
  // CM then reports kEstablished as if the RTU had come (a lost RTU would
  // otherwise leave the id waiting until the REP times out). Errors: those of
  // rdma_notify (-1 and errno; EINVAL when the id is not waiting for an RTU).
  virtual Result<void> notify_established(CmIdHandle id) = 0;
  // ibv_destroy_qp(3) via rdma_destroy_qp(3). Completions already generated
  // stay in the CQ with the dead QPN.
  virtual Result<void> destroy_qp(CmIdHandle id) = 0;
  // rdma_destroy_id(3). Never from inside that id's own event handler.
  virtual Result<void> destroy_id(CmIdHandle id) = 0;

  // --- verbs -----------------------------------------------------------------
  // ibv_modify_qp(3) to IBV_QPS_ERR (IB spec 10.3.1 step 1).
  virtual Result<void> modify_qp_to_error(CmIdHandle id) = 0;
  // One signaled-or-not SEND of one SGE: with immediate when `imm` is
  // nonzero, a plain SEND when it is 0 (as SendWr).
  virtual Result<void> post_send(CmIdHandle id, std::uint64_t wr_id, const Sge& sge,
                                 std::uint32_t imm, bool signaled) = 0;
  // `wrs` as one chain (ibv_send_wr::next) in one ibv_post_send(3): one
  // doorbell for all of them (on rxe one write(2) to the uverbs fd, on a
  // hardware HCA one MMIO doorbell). On failure ibv_post_send names the first
  // WR not posted (bad_wr); the ones before it are on the SQ and will
  // complete. The default posts them one by one with post_send().
  virtual PostSendsResult post_sends(CmIdHandle id, std::span<const SendWr> wrs);
  // The drain WR: a zero-length signaled SEND on a QP in ERR; it completes
  // with kFlushErr after every earlier WR of that QP (IB spec 10.3.1 step 3).
  virtual Result<void> post_drain(CmIdHandle id, std::uint64_t wr_id) = 0;
  // Receive WRs: on the SRQ (ibv_post_srq_recv(3)) or on a QP's own RQ.
  virtual Result<void> post_srq_recv(std::span<const std::uint64_t> wr_ids,
                                     std::span<const Sge> sges) = 0;
  virtual Result<void> post_qp_recv(CmIdHandle id, std::span<const std::uint64_t> wr_ids,
                                    std::span<const Sge> sges) = 0;
  // ibv_modify_srq(3) with IBV_SRQ_LIMIT: one kSrqLimitReached when fewer than
  // `limit` WRs remain posted; must be re-armed after each event.
  virtual Result<void> arm_srq_limit(std::uint32_t limit) = 0;

  // --- the event channel -----------------------------------------------------
  // Whether rdma_cm events are queued on our channel, read by nobody yet
  // (poll(2) on the rdma_event_channel fd with a zero timeout: ucma reports
  // POLLIN while its event list is not empty). A loop that reads a budget of
  // events per wakeup (rdma::SeamPump) leaves the rest queued; a connect
  // deadline that expires meanwhile must not beat an ESTABLISHED already
  // waiting there. false on error (the deadline then acts as before).
  virtual bool cm_events_queued() = 0;

  // --- device loss -------------------------------------------------------------
  // After rdma_cm's DEVICE_REMOVAL or IBV_EVENT_DEVICE_FATAL, once the caller
  // destroyed its QPs and ids and unregistered its memory: releases what
  // open() created (SRQ, CQ, completion channel, PD, listener) and anything
  // still left, so that the kernel can finish removing the device (a driver
  // without disassociate_ucontext, such as rxe, waits in `rdma link delete`
  // until every uverbs object of the device is closed; docs/lab.md). open()
  // may then be called again, and fails until a device owns the address
  // again. Idempotent. The default does nothing (seams with no device).
  virtual void close_device() {}

  // --- ports of one device -----------------------------------------------------
  // Seams on ports of one device (rails on two ports of one HCA: librdmacm
  // gives every cm id of a device the one ibv_context) may share its PD and
  // SRQ (docs/design.md "Rails"). Then the first open() creates them and the
  // next ones reuse them; an MR registered through any of the seams is valid
  // on all and may be unregistered through any; post_srq_recv and
  // arm_srq_limit of any reach the one SRQ, a receive WR completes on the CQ
  // of the QP that consumed it (each seam keeps its own CQ), and the SRQ
  // limit event goes to the seam that armed it last; the PD and the SRQ go
  // with the last seam's close_device(). The seams outlive every user.
  // This slot is where their users keep what they share in turn (the SRQ's
  // buffers: a wr_id one posted is completed to the other): the same slot
  // for every seam of one device and open, empty again after the device was
  // lost. It holds no reference: the users do. The default is a slot of this
  // seam alone: nothing is shared.
  virtual std::weak_ptr<DeviceShare>& device_share() { return own_share_; }

 private:
  std::weak_ptr<DeviceShare> own_share_;
};

}  // namespace rcnet::rdma
