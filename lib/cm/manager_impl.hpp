// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Manager::Impl, shared by the files of lib/cm (not part of the contract:
// include cm/manager.hpp). One room per concern:
//   manager.cpp    the facade, start, the timer and event dispatch, the one
//                  state-changing function, views
//   establish.cpp  resolve, REQ/REP/REJ, simultaneous-open merge, restarts
//   teardown.cpp   DREQ -> ERROR -> AWAIT_LAST_WQE -> DRAINING -> DESTROYED,
//                  the fallbacks, cm id release, shutdown
//   datapath.cpp   send slots, SRQ/RQ reposts, completions, back-pressure
//   limits.cpp     the reaper, LRU eviction, link and neighbour events,
//                  operator actions, live reconfiguration
//   conn_table.*   Conn, Peer and every index and deadline
//
// Entry points (the Manager's public calls) end in settle(), called once by
// the facade; nothing inside reschedules on its own.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/buffer_pool.hpp"
#include "cm/conn_table.hpp"
#include "cm/manager.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"
#include "wire/vnet_hdr.hpp"

namespace rcnet::cm {

// wr_id layout: tag in the top 8 bits; the rest says which buffer or QP.
// Completions are classified by wr_id only, never by opcode (Soft-RoCE
// reports flushed receives as SEND with byte_len 0).
enum WrTag : std::uint64_t {
  kTagSrqRecv = 1,  // low 32 bits: SRQ buffer index
  kTagQpRecv = 2,   // bits 20..55: conn id, low 20 bits: RQ buffer index
  kTagSend = 3,     // low 32 bits: send slot index
  kTagFence = 4,    // low 56 bits: conn id (zero-length signaled control SEND)
  kTagDrain = 5,    // low 56 bits: conn id
};
inline constexpr std::uint64_t kWrLow56 = (1ull << 56) - 1;
constexpr std::uint64_t make_wr(WrTag t, std::uint64_t low) {
  return (std::uint64_t{t} << 56) | low;
}
constexpr WrTag wr_tag(std::uint64_t wr) {
  return static_cast<WrTag>(wr >> 56);
}
constexpr std::uint64_t wr_low(std::uint64_t wr) {
  return wr & kWrLow56;
}

// The immediate says what a SEND carries (DESIGN.md "Data path").
inline constexpr std::uint32_t kImmData = 0x52430001;     // one IP packet
inline constexpr std::uint32_t kImmControl = 0x52430002;  // zero-length fence, ignored
// A virtio_net_hdr + IP packet (a frame), sent only on a connection that
// negotiated kCapGso. The receiver frames by the immediate, not by its own
// record of the negotiation: the active side learns the peer's capability
// from the REP, in its ESTABLISHED event, and the passive side may already
// send once the RTU arrives, so the first frames can complete on the shared
// CQ before that event is read (found by the manager fuzzer).
inline constexpr std::uint32_t kImmFrame = 0x52430003;

// With offload, receive buffers keep this much headroom: a plain packet from
// a peer without offload gets a zeroed virtio_net_hdr written in front of it
// and goes to the sink without a copy (datapath.cpp receive()).
inline constexpr std::uint32_t kReceiveHeadroom = wire::kVnetHdrLen;

// A connection ESTABLISHED less than this long ago is not evicted at
// max_connections. Without it, more peers with traffic than max_connections
// churn at the handshake's rate: each REQ evicts a connection a moment old,
// whose peer reconnects at once for its queued packets, and QPs in teardown
// pile up beyond any limit (found by the manager fuzzer: 1,806 QPs on a
// node at max_connections 2). With it, each slot changes hands at most once
// per kEvictMinAge, and the peers take turns: an age, not an idle time, so
// that busy connections cannot shut a peer out for good.
inline constexpr Duration kEvictMinAge = 1s;

// Wait for the winning REQ this long before retrying after REJ collision.
inline constexpr Duration kCollisionBackoff = 50ms;
// A failed attempt is retried after kRetryBase * 2^(attempt-1), capped at
// kRetryCap, each scaled by a random factor in [0.5, 1.5): N nodes whose
// attempts failed together (a hub restart, a link flap) do not retry in
// lockstep.
inline constexpr Duration kRetryBase = 100ms;
inline constexpr Duration kRetryCap = 5s;

// A deadline put off for rdma_cm events queued on the channel is looked at
// again this much later (kCmBacklogGrace, manager.hpp).
inline constexpr Duration kCmBacklogRecheck = 100ms;

enum class TeardownKind : std::uint8_t {
  kGraceful,  // we send DREQ and wait (bounded) for DISCONNECTED
  kRemote,    // DREQ received: answer it and go on
  kHard,      // the peer is gone or must not be waited for
};

class Manager::Impl {
 public:
  Impl(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink);
  ~Impl();

  // --- manager.cpp ------------------------------------------------------------------
  // `c` with its "0 = default" fields resolved, at construction and at
  // reconfigure(): max_connections (128 without SRQ, 4096 with: IPoIB-CM's),
  // srq_limit (srq_size / 8, at least 1), signal_every (1).
  static ManagerConfig with_defaults(ManagerConfig c);
  Result<void> start();
  // After every entry point: one wakeup request for the earliest deadline, and
  // the true edge of back-pressure when room came back.
  void settle();
  void on_timer();
  void on_async_event(const rdma::AsyncEvent& ev);
  Snapshot snapshot() const;
  std::vector<rdma::Qpn> live_qpns() const;
  std::size_t live_cm_ids() const;
  bool stopped() const;

  // --- establish.cpp ----------------------------------------------------------------
  void on_cm_event(const rdma::CmEvent& ev);

  // --- datapath.cpp -----------------------------------------------------------------
  SendResult send(const Endpoint& dst, std::span<const std::byte> packet);
  std::span<std::byte> lend_send_buffer();
  SendResult send_lent(const Endpoint& dst, std::size_t len);
  void begin_batch() { ++batch_depth_; }
  void end_batch() {
    if (--batch_depth_ == 0)
      flush_sends();
  }
  void return_lent();
  // The connection a lent buffer can be posted on as it is, or nullptr
  // (then send_lent() copies and goes through send()).
  Conn* direct_target(const Endpoint& dst, std::span<const std::byte> frame);
  void on_completions(std::span<const rdma::WorkCompletion> wcs);

  // --- limits.cpp -------------------------------------------------------------------
  void peer_failed(const IpAddr& addr, std::string_view why);
  void link_changed(bool up);
  bool disconnect_peer(NodeId node, std::string_view why);
  std::size_t reap_idle(Duration idle);
  void reconfigure(const ManagerConfig& n);

  // --- teardown.cpp -----------------------------------------------------------------
  void shutdown();

  ManagerConfig cfg_;
  Counters ctr_;
  NodeId self_ = 0;
  EventObserver observer_;  // cm/events.hpp; may be empty

 private:
  // --- manager.cpp: shared helpers ----------------------------------------------------
  TimePoint now() const { return timers_.now(); }
  // Per-packet stamps: no clock read (TimerService::coarse_now).
  TimePoint coarse_now() const { return timers_.coarse_now(); }
  log::Fields fields(const Conn& c) const;
  // The one state-changing function (STYLE.md item 4): checks the legality
  // table, logs `old -> new` with the QP's journal fields. false on an
  // illegal transition, which is a bug: the caller must then abandon(c) at
  // once and not touch `c` again.
  [[nodiscard]] bool set_state(Conn& c, QpState to, std::string_view why);
  // Reports `kind` about `c` to the observer, if any (cm/events.hpp).
  void emit(EventKind kind, const Conn& c, std::string_view reason, QpState from,
            std::string_view message_id = {});
  void reschedule();
  void on_deadline(Conn& c);
  // `c` waits for an rdma_cm event and its deadline (`bound` after it
  // entered its state) ran out: true when rdma_cm events are queued unread
  // on the channel, in which case its deadline is put off by
  // kCmBacklogRecheck (never past bound + kCmBacklogGrace) instead.
  bool defer_for_cm_backlog(Conn& c, Duration bound);

  // --- establish.cpp ----------------------------------------------------------------
  void start_connect(Peer& p);
  Result<void> create_qp(Conn& c);
  wire::PrivateData my_pd(wire::Kind kind,
                          wire::RejectReason reason = wire::RejectReason::kNone) const;
  rdma::ConnParams params(std::span<const std::uint8_t> pd) const;
  void addr_resolved(Conn& c);
  void send_req(Conn& c);
  void handle_rep(Conn& c, const rdma::CmEvent& ev);
  void established(Conn& c);
  void attempt_failed(Conn& c, std::string reason);
  void retry_later(Peer& p, Duration after);
  // `d` scaled by a factor in [0.5, 1.5) (splitmix64 seeded from the
  // incarnation, so the simulated fabric stays deterministic).
  Duration jitter(Duration d);
  // The jittered wait before attempt `attempts` + 1: kRetryBase * 2^(attempts-1)
  // capped at kRetryCap, times [0.5, 1.5).
  Duration backoff(unsigned attempts);
  void handle_rej(Conn& c, const rdma::CmEvent& ev);
  void reject(rdma::CmIdHandle id, wire::RejectReason reason, const Endpoint& from,
              std::string_view detail);
  bool allowed(const IpAddr& a) const;
  void handle_req(const rdma::CmEvent& ev);
  void ignore_cm(const Conn& c, const rdma::CmEvent& ev);
  void comm_established(rdma::Qpn qpn);

  // --- teardown.cpp -----------------------------------------------------------------
  void teardown(Conn& c, TeardownKind kind, std::string reason, std::string_view msg_id = {});
  void to_error(Conn& c);
  void on_last_wqe(rdma::Qpn qpn);
  void post_drain(Conn& c);
  void last_wqe_timed_out(Conn& c);
  void drain_timed_out(Conn& c);
  void destroy_qp(Conn& c, std::string_view why);
  // The way out of any state when the machine itself went wrong: destroys
  // the QP and releases the id without the spec sequence, counted. `c`
  // dangles afterwards.
  void abandon(Conn& c, std::string_view why);
  void release_qp(Conn& c);
  void finish(Conn& c);
  void defer_destroy_id(rdma::CmIdHandle id) { pending_id_destroy_.push_back(id); }
  void destroy_id_now(rdma::CmIdHandle id);
  void forget_idle_peers();
  void device_lost(const std::string& why);

  // --- datapath.cpp -----------------------------------------------------------------
  Result<void> fill_srq();
  bool enqueue(Peer& p, std::span<const std::byte> packet);
  void drop_queue(Peer& p, std::uint64_t& counter);
  void arm_srq_limit();
  void free_slot(std::uint32_t slot);
  void free_sends(Conn& c);
  // Room for `n` more SENDs on `c` (send slots and SQ, keeping room for
  // fence and drain).
  bool room_for(const Conn& c, std::uint32_t n) const;
  // A frame `c`'s peer can never take whole or in segments.
  bool too_big_for(const Conn& c, std::span<const std::byte> frame) const;
  // Posts `frame` (a plain packet, or with offload a vnet header + packet)
  // in the form `c` negotiated. true when consumed (posted, or dropped and
  // counted); false when send slots or SQ room are short.
  bool post_packet(Conn& c, std::span<const std::byte> frame);
  bool post_segments(Conn& c, const wire::VnetHdr& h, std::span<const std::byte> packet);
  // Posts the first `len` bytes of send slot `slot` as one data SEND; inside
  // a send batch, appends it to c's chain instead (posted by flush_sends()).
  void post_slot(Conn& c, std::uint32_t slot, std::size_t len);
  // Doorbell batching (DESIGN.md "Data path"): between begin_batch() and the
  // matching end_batch() (nestable), data SENDs are chained per connection
  // and each chain is posted with one ibv_post_send. A chain's WRs are
  // accounted as posted when appended (slot owner, c.sends, counters), so
  // room_for() and selective signalling see them. Anything else that touches
  // a QP's SQ or state (fence, disconnect, Error, drain, destroy) calls
  // flush_sends() first, so the SQ order is c.sends' order.
  void flush_sends();
  struct BatchScope {
    explicit BatchScope(Impl& m) : m_(m) { m_.begin_batch(); }
    ~BatchScope() { m_.end_batch(); }
    BatchScope(const BatchScope&) = delete;
    BatchScope& operator=(const BatchScope&) = delete;

   private:
    Impl& m_;
  };
  // Undoes the accounting of c's WRs [posted, n) of a chain that
  // ibv_post_send did not take (they are c.sends' tail).
  void unpost_tail(Conn& c, std::span<const rdma::SendWr> wrs, std::size_t posted,
                   const Error& why);
  void post_fence(Conn& c);
  void flush_queue(Peer& p, Conn& c);
  void mark_blocked(Peer& p);
  void unblock();
  void complete_sends(Conn& c, std::uint64_t wr);
  void on_send_error(Conn& c, const rdma::WorkCompletion& wc);
  void on_wc(const rdma::WorkCompletion& wc);
  void on_qp_recv(const rdma::WorkCompletion& wc);
  // `buf` is the receive buffer's first byte (before its headroom).
  void receive(Conn* c, const rdma::WorkCompletion& wc, std::byte* buf);
  void flush_srq_reposts();

  // --- limits.cpp -------------------------------------------------------------------
  bool make_room();
  void reap_tick(TimePoint t);
  // When the reaper must next run: the idle front's expiry rounded up to the
  // reaper grid, or the first grid point after the fence front's tail became
  // unsignaled, whichever is earlier; TimePoint::max() when both lists are
  // empty (no wakeup at all).
  TimePoint reaper_due() const;
  // The reaper grid: multiples of reaper_interval since the clock's epoch.
  // grid_ceil(t) is the first grid point >= t, grid_floor(t) the last <= t.
  TimePoint grid_ceil(TimePoint t) const;
  TimePoint grid_floor(TimePoint t) const;

  // --- state ---------------------------------------------------------------------
  rdma::Seam& seam_;
  TimerService& timers_;
  PacketSink& sink_;
  rdma::DeviceInfo device_;
  std::uint32_t buf_size_ = 0;  // bytes per receive buffer and send slot
  std::uint32_t headroom_ = 0;  // of each receive buffer (kReceiveHeadroom with offload)
  bool started_ = false;
  bool shutting_down_ = false;
  bool link_up_ = true;

  ConnTable table_;
  std::vector<rdma::CmIdHandle> pending_id_destroy_;
  std::vector<NodeId> forget_candidates_;  // peers whose conn ended
  // The reaper's requested wakeup: never later than reaper_due() (see
  // reschedule()); TimePoint::max() when it has nothing to watch.
  TimePoint next_reap_ = TimePoint::max();
  bool reap_watch_idle_ = false;   // the idle list was non-empty at the last reschedule()
  bool reap_watch_fence_ = false;  // the fence list was

  TimePoint scheduled_ = TimePoint::max();
  // Seam::cm_events_queued() as asked once per on_timer() (one poll(2), not
  // one per expired deadline); nullopt until asked.
  std::optional<bool> cm_backlog_;
  std::uint64_t rng_ = 0;  // jitter state

  // Data path.
  bool capacity_ = true;  // the last edge told to sink_.send_capacity()
  std::deque<NodeId> blocked_;
  BufferPool send_pool_;
  std::optional<std::uint32_t> lent_slot_;  // send slot lent by lend_send_buffer()
  std::vector<std::byte> lent_copy_;        // send_lent() fallback, reused
  std::vector<std::uint64_t> slot_owner_;   // send slot -> conn id (0 = free)
  BufferPool srq_pool_;
  std::vector<std::uint32_t> srq_reposts_;
  std::vector<std::uint64_t> repost_ids_;  // reused: no allocation per batch
  std::vector<rdma::Sge> repost_sges_;
  // Send batching: chains_[0, chains_used_) hold the unposted WRs of one
  // connection each (kept, with their capacity, across batches).
  struct Chain {
    std::uint64_t conn = 0;
    std::vector<rdma::SendWr> wrs;
  };
  std::uint32_t batch_depth_ = 0;
  std::vector<Chain> chains_;
  std::size_t chains_used_ = 0;
  std::uint32_t srq_posted_ = 0;
  bool srq_limit_armed_ = false;
  std::uint64_t srq_limit_events_ = 0;
};

}  // namespace rcnet::cm
