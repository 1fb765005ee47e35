// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The data path of the connection manager (docs/design.md "Data path"; not
// part of the contract: include cm/manager.hpp). One IP packet per RC SEND
// with immediate (wire/immediate.hpp); send slots shared by every QP, with
// selective signalling and the reclaim SEND; doorbell batching; SRQ (or per-QP RQ)
// receive buffers and their reposts; completions classified by wr_id; and
// the one back-pressure channel, PacketSink::send_capacity().
//
// Offload (ManagerConfig::offload; why software GSO for old peers: wire/gso.hpp):
// frames are a virtio_net_hdr + IP packet. To a peer that negotiated kCapGso
// the frame is one SEND, header included, and arrives in the peer's TUN as
// the same GSO super-packet; to any other peer it goes as plain packets: a
// super-packet cut into segments of at most the peer's MTU, a packet whose
// checksum the kernel left to the device (NEEDS_CSUM) completed. A UDP
// super-packet goes whole only to a peer that also advertised kCapUso; a
// kCapGso peer without it gets the segments, each as a frame behind a
// zeroed header (uso_segmented). A frame
// that cannot be cut is dropped and counted (drops_gso_to_legacy_peer):
// unsupported GSO type, headers that disagree, or more segments than an SQ
// or the send slots can ever hold; a legacy peer never receives more than
// its MTU. On receipt, a frame from a capable peer is delivered as it came;
// a plain packet gets a zeroed header (no flags: the receiving kernel
// verifies its checksum as for any packet) written into the buffer's
// headroom in front of it.
//
// Ownership: DataPath owns the registered send slots and the bookkeeping
// around them (which conn holds each send slot, the lent buffer, the
// unposted chains, the blocked peers, the SRQ's reposts). The SRQ buffers
// and their count and limit (SrqBuffers) it shares with the data paths of
// the other rails on ports of the same device (rdma::Seam::device_share),
// the last one to stop releases them; alone on its device it is their only
// owner, as before. It
// writes the data-path fields of Conn (sends, unsignaled_run, rq, rq_posted,
// tx and rx figures) and Peer (queue, blocked); the conns and peers
// themselves belong to the ConnTable. It borrows the config, counters, seam,
// timer service, sink, table and hooks given to its constructor: they must
// outlive it. It reads the config at every use, so a live reconfigure
// (signal_every, peer_queue_depth) applies at once; only cfg.local is read
// once, by the constructor (our own node id, never a destination).
//
// Thread: the loop's, like every Manager call; nothing here blocks.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "cm/buffer_pool.hpp"
#include "cm/conn_table.hpp"
#include "cm/manager.hpp"
#include "rdma/provider.hpp"
#include "util/log.hpp"
#include "wire/frame_header.hpp"
#include "wire/vnet_hdr.hpp"

namespace rcnet::cm {

// wr_id layout: tag in the top 8 bits; the rest says which buffer or QP.
// Completions are classified by wr_id only, never by opcode (Soft-RoCE
// reports flushed receives as SEND with byte_len 0).
enum WrTag : std::uint64_t {
  kTagSrqRecv = 1,  // low 32 bits: SRQ buffer index
  kTagQpRecv = 2,   // bits 20..55: conn id, low 20 bits: RQ buffer index
  kTagSend = 3,     // low 32 bits: send slot index
  kTagReclaim = 4,  // low 56 bits: conn id (zero-length signaled control SEND)
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

// With offload, receive buffers keep this much headroom: a plain packet from
// a peer without offload gets a zeroed virtio_net_hdr written in front of it
// and goes to the sink without a copy (datapath_recv.cpp receive()).
inline constexpr std::uint32_t kReceiveHeadroom = wire::kVnetHdrLen;

// Credits a sender keeps for a SEND that returns credits (docs/design.md
// "Receive credits"): data and rail messages never take the last one, so
// two ends that each owe the other can always say so.
inline constexpr std::uint32_t kCreditReserve = 1;

// What the data path needs from the rest of the connection manager
// (Manager::Impl implements it). Called from inside DataPath's calls, on the
// loop's thread; a hook that tears a conn down may erase it, and DataPath
// does not touch that conn afterwards.
class DataPathHooks {
 public:
  virtual ~DataPathHooks() = default;
  // false while shutting down or with the underlay link down: send() then
  // refuses (drops_shutting_down) and nothing is posted without a copy.
  virtual bool sends_allowed() const = 0;
  // A packet was queued for `p`, which has no connection and no retry
  // pending: start one (it may fail and drop the queue).
  virtual void start_connect(Peer& p) = 0;
  // A send completion on `c` failed (`wc`), neither a flush nor in
  // teardown: tear `c` down (may erase it).
  virtual void send_failed(Conn& c, const rdma::WorkCompletion& wc) = 0;
  // A rail message arrived on `c` (kImmRail; `msg` valid during the call).
  virtual void rail_message(Conn& c, std::span<const std::byte> msg) = 0;
  // The active side's proof arrived on `c` (kImmAuth; `msg` valid during
  // the call): verify it; may tear `c` down (and erase it).
  virtual void auth_message(Conn& c, std::span<const std::byte> msg) = 0;
  // A data SEND (or rail message) arrived on `c` before the peer's proof
  // verified: it was dropped (drops_unproven); refuse `c` (may erase it).
  virtual void unproven_data(Conn& c) = 0;
  // The drain WR of `c` (DRAINING) completed: destroy its QP; erases `c`.
  virtual void destroy_qp(Conn& c, std::string_view why) = 0;
  // `c` waits in AWAIT_LAST_WQE and its own RQ has no WR left: post the
  // drain (may erase `c`).
  virtual void post_drain(Conn& c) = 0;
  // The journal fields of a log line about `c`.
  virtual log::Fields fields(const Conn& c) const = 0;
};

class DataPath {
 public:
  DataPath(const ManagerConfig& cfg, Counters& ctr, rdma::Seam& seam, TimerService& timers,
           PacketSink& sink, ConnTable& table, DataPathHooks& hooks);
  DataPath(const DataPath&) = delete;
  DataPath& operator=(const DataPath&) = delete;
  // Manager::set_sink.
  void set_sink(PacketSink& sink) { sink_ = &sink; }

  // --- the device's profile (rdma/provider.hpp) -----------------------------------------
  // After Seam::open, before start(): the device's profile with
  // cfg.framing's override applied. Errors: EINVAL when the device needs
  // credits (no RNR) and cfg leaves fewer than 4 per connection, or an SRQ
  // too small for two connections' windows.
  Result<void> set_profile(const rdma::ProviderProfile& device);
  const rdma::ProviderProfile& profile() const { return profile_; }
  // What REQ and REP advertise: kCapHeader, and the credits granted (0 =
  // none: the device has RNR).
  bool wants_header() const { return !profile_.send_imm || !profile_.rnr; }
  std::uint16_t grant() const { return grant_; }
  // Connections the SRQ's credits can hold (srq_size / credits - 1: one
  // window kept for a connection still in teardown), split evenly between
  // the rails that share the SRQ; no limit without credits or without SRQ.
  std::uint32_t credit_conn_cap() const;
  // Framing and credits of `c` from the peer's REQ or REP.
  void negotiated(Conn& c, const wire::PrivateData& peer);
  // `c` (its peer `p`) is ESTABLISHED: the active side of a header-framed
  // connection sends its first SEND at once (a control SEND); a passive
  // side whose device wants the active side first holds `p`'s queue until
  // that SEND arrived; otherwise the queue goes out (flush_queue).
  void established(Peer& p, Conn& c);
  // ESTABLISHED and allowed to send (not holding for the active side).
  static bool may_send(const Conn& c) {
    return c.state == ConnState::kEstablished && !c.hold_first && !c.hold_auth;
  }

  // --- set-up ------------------------------------------------------------------------
  // After Seam::open: sizes the buffers from cfg (mtu, offload), registers
  // the send slots and, with use_srq, fills the SRQ and arms its limit.
  // Sending is refused until it succeeded. Errors: BufferPool::init's, the
  // seam's (ibv_post_srq_recv).
  Result<void> start();
  // The device is gone (Manager::device_present): unregisters the send
  // slots and (unless another rail on the device still uses them) the SRQ
  // buffers, forgets what was posted; sending is refused until start()
  // succeeds again. Every QP must be gone already. The memory stays: the
  // next start() registers the same pages again (BufferPool::unregister).
  void stop() {
    started_ = false;
    lent_slot_.reset();
    chains_used_ = 0;
    send_pool_.unregister();
    slot_owner_.clear();
    drop_srq(true);
    srq_reposts_.clear();
  }
  ~DataPath() { drop_srq(false); }
  // Bytes of every receive buffer and send slot; 0 before start().
  std::uint32_t buffer_size() const { return buf_size_; }
  // Without SRQ, once `c`'s QP exists: registers its own receive ring
  // (cfg.rq_depth buffers) and posts all of it. Errors: BufferPool::init's,
  // the seam's (ibv_post_recv).
  Result<void> fill_rq(Conn& c);

  // --- sending (the calls of Manager's contract, cm/manager.hpp) ----------------------
  SendResult send(const Endpoint& dst, std::span<const std::byte> packet);
  std::span<std::byte> lend_send_buffer();
  SendResult send_lent(const Endpoint& dst, std::size_t len);
  void return_lent() {
    if (lent_slot_)
      send_pool_.give(*lent_slot_);
    lent_slot_.reset();
  }
  // Doorbell batching: between begin_batch() and the matching end_batch()
  // (nestable), data SENDs are chained per connection and each chain is
  // posted with one ibv_post_send. A chain's WRs are accounted as posted
  // when appended (slot owner, c.sends, counters), so room and selective
  // signalling see them. Anything else that touches a QP's SQ or state
  // (reclaim SEND, disconnect, Error, drain, destroy) calls flush_sends() first, so
  // the SQ order is c.sends' order.
  void begin_batch() { ++batch_depth_; }
  void end_batch() {
    if (--batch_depth_ == 0)
      flush_sends();
  }
  void flush_sends();
  struct BatchScope {
    explicit BatchScope(DataPath& d) : d_(d) { d_.begin_batch(); }
    ~BatchScope() { d_.end_batch(); }
    BatchScope(const BatchScope&) = delete;
    BatchScope& operator=(const BatchScope&) = delete;

   private:
    DataPath& d_;
  };
  // Posts `p`'s queue on `c` (ESTABLISHED, p's conn) as one chain, until
  // slots or SQ room run short; then `p` waits, blocked, for completions.
  void flush_queue(Peer& p, Conn& c);
  // Flushes the queues of released_'s conns that may send now.
  void release_held();
  // After every entry point of the Manager: while back-pressure is on, gives
  // the blocked peers the room that came back, and sends the true edge once
  // none waits.
  void settle() {
    if (!capacity_)
      unblock();
    if (!control_due_.empty())
      post_due_controls();
  }

  // --- per connection -----------------------------------------------------------------
  // `c`'s QP is going: every send not known complete gives its slot back
  // (their completions, if any come, are stale and ignored).
  void free_sends(Conn& c) { forget_sends(c, c.sends.end()); }
  // A zero-length signaled control SEND (kImmControl): completes the
  // unsignaled tail of an idle QP so its send slots come back (the reaper,
  // docs/design.md "Selective signalling"). Not traffic: last_activity stays.
  void post_reclaim(Conn& c);
  // A rail message (wire/rail_message.hpp) as one SEND with immediate
  // kImmRail on ESTABLISHED `c`, through a send slot like a packet (not
  // traffic for failover: take_unsent() skips it). false when not started,
  // not ESTABLISHED, or no slot or SQ room (the caller tries again later).
  bool post_rail_message(Conn& c, std::span<const std::byte> msg);
  // The active side's proof (kImmAuth, wire/auth_message.hpp) on `c`,
  // ESTABLISHED: its first SEND, before the queued packets that
  // established() then sends (RC keeps the order). false as for
  // post_rail_message.
  bool post_auth_message(Conn& c, std::span<const std::byte> msg);
  // The passive side's `c` has the peer's proof: its queue may go (at the
  // end of the completions being handled, or at once outside them).
  void auth_released(Conn& c);
  // Failover (cm/rails.hpp): appends to `out`, in SQ order, a copy of every
  // data SEND of `c` not known complete (flushed, failed, or still in
  // flight on a QP about to be destroyed), in send()'s format (a frame
  // with offload). Some may have reached the peer already: a resend is a
  // harmless duplicate to IP. Leaves c.sends as it is (free_sends() follows).
  void take_unsent(Conn& c, std::vector<std::vector<std::byte>>& out);

  // --- completions and events ---------------------------------------------------------
  // A batch polled from the shared CQ, in CQ order; SRQ reposts go as one
  // ibv_post_srq_recv at the end. Freed slots reach blocked peers in settle().
  void on_completions(std::span<const rdma::WorkCompletion> wcs);
  // IBV_EVENT_SRQ_LIMIT_REACHED: counted and logged; re-armed once the
  // reposts brought the SRQ back to its limit.
  void srq_limit_reached();
  // Fills the send-slot and SRQ figures of `s`.
  void snapshot(Snapshot& s) const;
  // Send slots free and in all (Snapshot::send_slots_free, _total).
  std::uint32_t send_slots_free() const { return send_pool_.free_count(); }
  std::uint32_t send_slots_total() const { return send_pool_.count(); }

 private:
  // Fills the SRQ, or takes the buffers another rail on the device filled
  // it with (their geometry must be ours: EINVAL otherwise).
  Result<void> fill_srq();
  // Lets go of the SRQ buffers; the last user unregisters them through its
  // own seam (the first user's may be gone) and, with `keep`, keeps their
  // memory for its next fill_srq().
  void drop_srq(bool keep) {
    if (srq_ && srq_.use_count() == 1) {
      srq_->pool.rebind(seam_);
      if (keep) {
        srq_->pool.unregister();
        kept_srq_ = std::move(srq_);
      } else {
        srq_->pool.release();
      }
    }
    srq_.reset();
  }
  void arm_srq_limit();
  // Returns true when the oldest packet had to be dropped.
  bool enqueue(Peer& p, std::span<const std::byte> packet);
  // The connection a lent buffer can be posted on as it is, or nullptr
  // (then send_lent() copies and goes through send()).
  Conn* direct_target(const Endpoint& dst, std::span<const std::byte> frame);
  void free_slot(std::uint32_t slot) {
    slot_owner_[slot] = 0;
    send_pool_.give(slot);
  }
  // Gives back the send slots of c.sends [begin, end) and forgets those WRs.
  void forget_sends(Conn& c, std::deque<SendEntry>::iterator end);
  // Room for `n` more SENDs on `c` (send slots and SQ, keeping room for
  // reclaim SEND and drain; and the peer's credits, keeping kCreditReserve).
  bool room_for(const Conn& c, std::uint32_t n) const {
    return c.sends.size() + 2 + n <= cfg_.qp_send_depth && send_pool_.free_count() >= n &&
           credit_for(c, n);
  }
  static bool credit_for(const Conn& c, std::uint32_t n) {
    return c.tx_credits >= n + kCreditReserve;
  }
  // Where a send slot's payload starts: kFrameHeaderLen bytes in, so that a
  // header-framed SEND puts its header in front without a copy.
  std::byte* payload(std::uint32_t slot) const {
    return send_pool_.data(slot) + wire::kFrameHeaderLen;
  }
  std::size_t payload_room() const { return send_pool_.buffer_size() - wire::kFrameHeaderLen; }
  // A control SEND on header-framed `c` (the first SEND of the active side,
  // a credit update, or the reclaim SEND): no payload, signaled, carrying
  // the credits owed. May take the last credit only when it returns some.
  // false when no slot, SQ room or credit (the caller retries).
  bool post_control(Conn& c);
  void post_due_controls();
  // After a batch's reposts: credits of the buffers reposted become owed,
  // and a connection owing half its grant sends a credit update.
  void return_credits();
  void maybe_update_credits(Conn& c);
  // A header-framed SEND arrived on `c` carrying `credits` returned.
  void header_received(Conn& c, std::uint16_t credits);
  // A frame `c`'s peer can never take whole or in segments.
  bool too_big_for(const Conn& c, std::span<const std::byte> frame) const;
  // Posts `frame` (a plain packet, or with offload a vnet header + packet)
  // in the form `c` negotiated. true when consumed (posted, or dropped and
  // counted); false when send slots or SQ room are short.
  bool post_packet(Conn& c, std::span<const std::byte> frame);
  bool post_segments(Conn& c, const wire::VnetHdr& h, std::span<const std::byte> packet);
  // A frame with header `h` goes to `c` whole: c negotiated GSO, and a UDP
  // super-packet only to a peer whose TUN takes it (kCapUso).
  static bool goes_whole(const Conn& c, const wire::VnetHdr& h);
  // Posts the first `len` bytes of send slot `slot` as one data SEND; inside
  // a batch, appends it to c's chain instead (posted by flush_sends()).
  // `imm` says what it carries (wire/immediate.hpp), as the immediate or,
  // on a header-framed `c`, in the frame header written in front of the
  // payload. Data SENDs count as traffic; control and rail SENDs do not.
  // Each SEND takes one of the peer's credits (with credit flow).
  void post_slot(Conn& c, std::uint32_t slot, std::size_t len, std::uint32_t imm = wire::kImmData,
                 bool force_signal = false);
  // Undoes the accounting of c's WRs [posted, n) of a chain that
  // ibv_post_send did not take (they are c.sends' tail).
  void unpost_tail(Conn& c, std::span<const rdma::SendWr> wrs, std::size_t posted,
                   const Error& why);
  void mark_blocked(Peer& p);
  void unblock();
  // Signaled completion `wr` on `c`: it and every WR before it are done.
  void complete_sends(Conn& c, std::uint64_t wr);
  // Error completion `wr` on `c`: every WR before it is done, not it.
  void forget_before(Conn& c, std::uint64_t wr);
  void on_wc(const rdma::WorkCompletion& wc);
  void on_qp_recv(const rdma::WorkCompletion& wc);
  // `buf` is the receive buffer's first byte (before its headroom).
  void receive(Conn* c, const rdma::WorkCompletion& wc, std::byte* buf);
  // A receive WR completed in error (not flushed): counted, and its status
  // logged once per connection (a peer's bad SEND repeats).
  void recv_error(Conn* c, const rdma::WorkCompletion& wc);
  void flush_srq_reposts();

  const ManagerConfig& cfg_;
  Counters& ctr_;
  rdma::Seam& seam_;
  TimerService& timers_;
  PacketSink* sink_;  // never null (set_sink)
  ConnTable& table_;
  DataPathHooks& hooks_;
  const NodeId self_;                        // node_id_for(cfg.local.addr): never a destination
  rdma::ProviderProfile profile_;            // set_profile()
  std::uint16_t grant_ = 0;                  // credits granted per connection; 0 = none
  std::vector<std::uint64_t> credit_conns_;  // conns with credits_pending (credit_listed)
  std::vector<std::uint64_t> control_due_;   // conns with control_due
  std::vector<std::uint64_t> released_;      // passive conns whose active side spoke
  bool in_completions_ = false;              // inside on_completions()' loop

  bool started_ = false;
  std::uint32_t buf_size_ = 0;  // bytes per receive buffer and send slot
  std::uint32_t headroom_ = 0;  // of each receive buffer (kReceiveHeadroom with offload)
  BufferPool send_pool_;
  std::vector<std::uint64_t> slot_owner_;   // send slot -> conn id (0 = free)
  std::optional<std::uint32_t> lent_slot_;  // send slot lent by lend_send_buffer()
  std::vector<std::byte> lent_copy_;        // send_lent() fallback, sized by start()
  // Send batching: chains_[0, chains_used_) hold the unposted WRs of one
  // connection each (kept, with their capacity, across batches).
  struct Chain {
    std::uint64_t conn = 0;
    std::vector<rdma::SendWr> wrs;
  };
  std::uint32_t batch_depth_ = 0;
  std::vector<Chain> chains_;
  std::size_t chains_used_ = 0;
  bool capacity_ = true;  // the last edge told to sink_->send_capacity()
  std::deque<NodeId> blocked_;
  std::shared_ptr<SrqBuffers> srq_;  // with use_srq, from start() to stop()
  // From stop() to the next fill_srq(): the SRQ buffers' memory, unregistered
  // (this rail was their last user when the device went).
  std::shared_ptr<SrqBuffers> kept_srq_;
  std::vector<std::uint32_t> srq_reposts_;
  std::vector<std::uint64_t> repost_ids_;  // reused: no allocation per batch
  std::vector<rdma::Sge> repost_sges_;
};

}  // namespace rcnet::cm
