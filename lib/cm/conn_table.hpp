// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The connection manager's tables (not part of the contract: include
// cm/manager.hpp). A Conn is one QP and its rdma_cm id, from the first
// resolve (or the REQ) to DESTROYED; a Peer is a node we talk to, with at most
// one Conn in service and its queue of packets waiting for ESTABLISHED.
// ConnTable owns both and keeps every index (by conn id, QPN, rdma_cm id, node),
// every deadline and the reaper's two lists (idle, reclaim) in one place, so no
// other file touches a map or a list.
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cm/buffer_pool.hpp"
#include "cm/conn_state.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/time.hpp"
#include "wire/auth_message.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

// A posted send-queue WR not yet known complete (SQ order).
struct SendEntry {
  std::uint64_t wr_id;
  bool signaled;
  std::uint32_t len = 0;  // bytes of its send slot the WR carries (kTagSend)
  bool data = false;      // an IP packet or frame (not a rail message): resent on failover
};

struct Conn;

// Where a connection stands with the peer proof (docs/design.md "Trust").
enum class AuthState : std::uint8_t {
  kOff,       // no proof on this connection: auth.mode off
  kAwaiting,  // passive: the REP carried our proof, the peer's is due
  kProven,    // the peer's proof verified (auth_key_id)
  kUnproven,  // admitted without a proof (auth.mode optional)
};
std::string_view to_string(AuthState s);  // "off", "awaiting", "proven", "unproven"

// What one handshake's proofs are made over (auth::Handshake), kept from
// the REQ until the peer's proof verified, then freed.
struct AuthPending {
  wire::PrivateData req, rep;
  IpAddr active_underlay, passive_underlay;
  // Active, the REP's proof verified: our proof message, posted as the
  // first SEND at ESTABLISHED (wire/auth_message.hpp).
  std::array<std::byte, wire::kAuthMsgSize> msg{};
  bool msg_due = false;
};

// Conn::tx_credits of a connection whose peer grants no credits.
inline constexpr std::uint32_t kNoCreditLimit = 1u << 30;

// Links of a Conn in one of ConnTable's intrusive lists (no allocation, O(1)
// unlink). Owned and changed by ConnTable only.
struct ConnLink {
  Conn* prev = nullptr;
  Conn* next = nullptr;
  bool linked = false;
};

struct Conn {
  std::uint64_t id = 0;  // never reused
  NodeId peer = 0;
  Endpoint peer_addr;
  rdma::CmIdHandle cm_id = rdma::kNoCmId;
  rdma::Qpn qpn = 0;  // 0 until the QP exists (QPN 0 is never an RC QP)
  rdma::Qpn remote_qpn = 0;
  ConnState state = ConnState::kResolvingAddr;
  bool active = false;      // we sent the REQ
  bool in_service = false;  // its Peer's connection (Peer::conn == id)
  // Event memory the state cannot hold: Last WQE Reached may come in
  // DISCONNECTING or ERROR, DISCONNECTED before our own DREQ went out.
  bool last_wqe_seen = false;
  bool disconnected_seen = false;
  bool cq_sweep = false;  // DRAINING without a drain WR (lifecycle.hpp kCqSweep)
  TimePoint created{}, state_since{};
  // Last packet sent or received (or ESTABLISHED). Written by
  // ConnTable::touch() only, which keeps the idle list in its order.
  TimePoint last_activity{};
  // Last time the peer proved alive: a receive completion of any kind on
  // this QP, or ESTABLISHED (its REP or RTU came in). A neighbour FAILED
  // older than this is not believed (Manager::peer_failed).
  TimePoint last_heard{};
  TimePoint deadline = TimePoint::max();  // mirrored in ConnTable's deadline set
  ConnLink idle_link;                     // ConnTable's idle list
  ConnLink reclaim_link;                  // ConnTable's reclaim list
  TimePoint unsignaled_since{};  // while on the reclaim list: when the SQ tail became unsignaled
  std::uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  std::string teardown_reason;
  TimePoint teardown_since{};  // when teardown began (the teardown_time histogram)
  std::deque<SendEntry> sends;
  std::uint32_t unsignaled_run = 0;
  std::unique_ptr<BufferPool> rq;  // without SRQ: this QP's own receive buffers
  std::uint32_t rq_posted = 0;
  std::uint32_t peer_mtu = wire::kMaxMtu;
  bool gso = false;                  // both ends advertised kCapGso (set from the REQ/REP)
  bool peer_uso = false;             // gso, and the peer advertised kCapUso
  bool recv_error_logged = false;    // a receive completion error of this QP was logged
  bool rails = false;                // the peer advertised kCapRails: it takes rail messages
  std::uint8_t peer_rail_count = 0;  // the rails the peer said it has (0: not said)
  bool cm_deferred = false;  // a deadline was put off for queued rdma_cm events (counted once)
  // Framing and credits (cm/datapath.hpp; docs/design.md "Framing", "Receive
  // credits"), decided from the REQ/REP.
  bool header = false;           // SENDs carry wire::FrameHeader, no immediate
  std::uint16_t peer_grant = 0;  // credits the peer granted; 0 = no credit flow to it
  // SENDs the peer can still take; kNoCreditLimit without credit flow, so
  // that the check costs connections with RNR no branch.
  std::uint32_t tx_credits = kNoCreditLimit;
  std::uint16_t grant = 0;            // credits we granted; 0 = we return none
  std::uint32_t credits_pending = 0;  // receives consumed, their buffers not reposted yet
  std::uint32_t credits_owed = 0;     // reposted, not yet returned to the peer
  bool credit_listed = false;         // on DataPath's list of conns with credits pending
  bool control_due = false;           // a hello or credit update waits for a slot or credit
  bool peer_spoke = false;            // a SEND of the peer arrived on this QP
  bool sent_any = false;              // a SEND of ours was posted on this QP
  bool hold_first = false;  // passive, ESTABLISHED: waits for the active side's first SEND
  // The peer proof: its state, the key it was proven with (0: none), the
  // handshake while a proof is due, and whether packets wait for it
  // (passive, awaiting: nothing is sent before the peer proved the key).
  AuthState auth = AuthState::kOff;
  std::uint8_t auth_key_id = 0;
  bool hold_auth = false;
  std::unique_ptr<AuthPending> auth_pending;

  bool has_qp() const { return qpn != 0; }
};

// An intrusive doubly linked list of Conns through the link `L`: O(1)
// push_back, erase and front; never owns or allocates.
template <ConnLink Conn::*L>
class ConnList {
 public:
  Conn* front() const { return head_; }
  Conn* back() const { return tail_; }
  std::size_t size() const { return size_; }
  bool contains(const Conn& c) const { return (c.*L).linked; }
  void push_back(Conn& c) {
    ConnLink& l = c.*L;
    l = ConnLink{tail_, nullptr, true};
    (tail_ != nullptr ? (tail_->*L).next : head_) = &c;
    tail_ = &c;
    ++size_;
  }
  // Inserts `c` after the last conn whose `key` is <= c's (from the back:
  // O(1) when `c` is the newest, which is the case on every caller's path).
  template <class Key>
  void insert_sorted(Conn& c, Key key) {
    Conn* after = tail_;
    while (after != nullptr && key(*after) > key(c))
      after = (after->*L).prev;
    if (after == tail_)
      return push_back(c);
    Conn* before = after != nullptr ? (after->*L).next : head_;
    c.*L = ConnLink{after, before, true};
    (after != nullptr ? (after->*L).next : head_) = &c;
    (before->*L).prev = &c;
    ++size_;
  }
  void erase(Conn& c) {
    ConnLink& l = c.*L;
    if (!l.linked)
      return;
    (l.prev != nullptr ? (l.prev->*L).next : head_) = l.next;
    (l.next != nullptr ? (l.next->*L).prev : tail_) = l.prev;
    l = ConnLink{};
    --size_;
  }
  void move_to_back(Conn& c) {
    if (tail_ == &c)
      return;
    erase(c);
    push_back(c);
  }

 private:
  Conn* head_ = nullptr;
  Conn* tail_ = nullptr;
  std::size_t size_ = 0;
};

struct Peer {
  NodeId node = 0;
  Endpoint underlay;
  IpAddr overlay;                 // from its private data
  std::uint64_t incarnation = 0;  // 0 until known
  std::uint64_t conn = 0;         // in-service conn id, 0 = none
  std::deque<std::vector<std::byte>> queue;
  std::uint32_t attempts = 0;  // failed attempts since the last ESTABLISHED
  TimePoint retry_at = TimePoint::max();
  // The last attempt and how it ended, for rcnetctl peers (PeerSnapshot).
  TimePoint last_attempt = TimePoint::min();  // min: none yet
  TimePoint last_result_at = TimePoint::min();
  std::string last_result;
  bool blocked = false;  // waiting for send slots (in the data path's blocked list)
  // Waiting for one of our max_pending_setups to start its connect
  // (cm/admission.cpp keeps the queue).
  bool admission_wait = false;
};

class ConnTable {
 public:
  // --- conns ---------------------------------------------------------------------
  // A new conn of peer `p`, born in RESOLVING_ADDR (active) or ACCEPTING.
  Conn& add(const Peer& p, bool active, TimePoint now);
  // Drops `c` from every index and deadline and frees it: `c` dangles after.
  void erase(Conn& c);
  Conn* find(std::uint64_t id);
  const Conn* find(std::uint64_t id) const;
  Conn* by_qpn(rdma::Qpn qpn);
  Conn* by_cm_id(rdma::CmIdHandle id);
  void index_cm_id(Conn& c);  // after c.cm_id is set
  void index_qpn(Conn& c);    // after c.qpn is set
  void unindex_qpn(Conn& c);  // the QP is gone
  void unindex_cm_id(Conn& c);
  std::size_t size() const { return conns_.size(); }
  // A stable list, safe against erase() of any element while walking it.
  std::vector<Conn*> all();
  // The one place a conn's state is written (Manager::Impl::set_state checks
  // and logs the transition first): also keeps the idle and reclaim lists.
  // Entering ESTABLISHED counts as activity (last_activity = now).
  void set_state(Conn& c, ConnState to, TimePoint now);
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, c] : conns_)
      f(*c);
  }

  // Connections in setup (admission control, cm/admission.cpp): passive ones
  // in ACCEPTING, active ones resolving or CONNECTING, in service or not
  // (an abandoned attempt still occupies the CM until it ends). Kept by
  // add(), set_state() and erase().
  std::size_t setups(bool active) const { return active ? active_setups_ : passive_setups_; }

  // --- peers ---------------------------------------------------------------------
  Peer& peer_for(NodeId node, const Endpoint& underlay);
  Peer* find_peer(NodeId node);
  // The peer's conn in service, or nullptr.
  Conn* conn_of(const Peer& p);
  void erase_peer(NodeId node);
  template <class F>
  void for_each_peer(F&& f) {
    for (auto& [node, p] : peers_)
      f(p);
  }
  template <class F>
  void for_each_peer(F&& f) const {
    for (const auto& [node, p] : peers_)
      f(p);
  }

  // --- service -------------------------------------------------------------------
  void make_in_service(Peer& p, Conn& c);
  // `c` is no longer its peer's connection (teardown, or abandoned in a merge).
  void leave_service(Conn& c);
  std::size_t in_service() const { return in_service_; }

  // --- the idle list (the reaper's and LRU eviction's) ---------------------------
  // Every ESTABLISHED, in-service conn, least recently active first: the
  // reaper and make_room() look at the front only, so their cost is the
  // number of conns they act on, not the number that exist.
  // Traffic on `c` at `now` (per packet, sent or received): O(1), c moves to
  // the back. `now` never decreases (the TimerService's clock).
  // `now` may be the loop's cached time (TimerService::coarse_now), a little
  // older than a fresh read that stamped the list's newest conn: the stamp
  // is raised to that one's, so the list stays in order (off by less than
  // one loop iteration).
  void touch(Conn& c, TimePoint now) {
    if (idle_.contains(c)) {
      if (const Conn* newest = idle_.back(); newest != &c && newest->last_activity > now)
        now = newest->last_activity;
      c.last_activity = now;
      idle_.move_to_back(c);
    } else {
      c.last_activity = now;
    }
  }
  // The least recently active listed conn; nullptr when none.
  Conn* idle_front() const { return idle_.front(); }
  // The least recently active listed conn if it has been idle for at least
  // `idle` at `now`, taken off the list (the caller tears it down); nullptr
  // otherwise.
  Conn* pop_idle(TimePoint now, Duration idle);

  // --- the reclaim list ---------------------------------------------------------------
  // ESTABLISHED conns whose SQ tail is an unsignaled SEND, oldest first: the
  // reaper reclaims them (docs/design.md "Selective signalling").
  // After a SEND was posted on `c` at `now`: an unsignaled one lists `c` (if
  // not yet listed, since `now`), a signaled one (or the reclaim SEND) unlists it.
  void sq_tail_posted(Conn& c, bool signaled, TimePoint now) {
    if (signaled) {
      reclaim_.erase(c);
    } else if (!reclaim_.contains(c) && c.state == ConnState::kEstablished) {
      // In order even with a cached `now` (as touch()).
      if (const Conn* newest = reclaim_.back(); newest != nullptr && newest->unsignaled_since > now)
        now = newest->unsignaled_since;
      c.unsignaled_since = now;
      reclaim_.push_back(c);
    }
  }
  Conn* reclaim_front() const { return reclaim_.front(); }
  // The oldest listed conn if it is listed since <= `cutoff`, taken off the
  // list; nullptr otherwise.
  Conn* pop_reclaim(TimePoint cutoff);

  // --- deadlines (one per conn: the bound of its current state) ------------------
  void set_deadline(Conn& c, TimePoint when);  // TimePoint::max() clears it
  TimePoint next_deadline() const;
  // The conn whose deadline is earliest and <= now, its deadline cleared; nullptr
  // when none.
  Conn* pop_expired(TimePoint now);

  // --- connect retries (per peer) --------------------------------------------------
  void set_retry(Peer& p, TimePoint when);
  void cancel_retry(Peer& p);
  TimePoint next_retry() const;
  // The peer whose retry is due, its retry cleared; nullptr when none.
  Peer* pop_retry(TimePoint now);

 private:
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<rdma::CmIdHandle, std::uint64_t> by_cm_id_;
  std::unordered_map<rdma::Qpn, std::uint64_t> by_qpn_;
  std::unordered_map<NodeId, Peer> peers_;
  std::set<std::pair<TimePoint, std::uint64_t>> deadlines_;
  std::set<std::pair<TimePoint, NodeId>> retries_;
  std::uint64_t next_id_ = 1;
  std::size_t in_service_ = 0;
  std::size_t active_setups_ = 0, passive_setups_ = 0;
  ConnList<&Conn::idle_link> idle_;
  ConnList<&Conn::reclaim_link> reclaim_;

  // Lists or unlists `c` after a change of state or service.
  void relist(Conn& c);
  // The setup count `state` belongs to, nullptr when none.
  std::size_t* setup_count(ConnState state);
};

}  // namespace rcnet::cm
