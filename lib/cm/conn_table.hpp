// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The connection manager's tables (not part of the contract: include
// cm/manager.hpp). A Conn is one QP and its rdma_cm id, from the first
// resolve (or the REQ) to DESTROYED; a Peer is a node we talk to, with at most
// one Conn in service and its queue of packets waiting for ESTABLISHED.
// ConnTable owns both and keeps every index (by conn id, QPN, rdma_cm id, node)
// and every deadline in one place, so no other file touches a map.
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cm/buffer_pool.hpp"
#include "cm/qp_state.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/time.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

// A posted send-queue WR not yet known complete (SQ order).
struct SendEntry {
  std::uint64_t wr_id;
  bool signaled;
};

struct Conn {
  std::uint64_t id = 0;  // never reused
  NodeId peer = 0;
  Endpoint peer_addr;
  rdma::CmIdHandle cm_id = rdma::kNoCmId;
  rdma::Qpn qpn = 0;  // 0 until the QP exists (QPN 0 is never an RC QP)
  rdma::Qpn remote_qpn = 0;
  QpState state = QpState::kResolvingAddr;
  bool active = false;      // we sent the REQ
  bool in_service = false;  // its Peer's connection (Peer::conn == id)
  // Event memory the state cannot hold: Last WQE Reached may come in
  // DISCONNECTING or ERROR, DISCONNECTED before our own DREQ went out.
  bool last_wqe_seen = false;
  bool disconnected_seen = false;
  TimePoint created{}, state_since{}, last_activity{};
  TimePoint deadline = TimePoint::max();  // mirrored in ConnTable's deadline set
  std::uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  std::string teardown_reason;
  std::deque<SendEntry> sends;
  std::uint32_t unsignaled_run = 0;
  std::unique_ptr<BufferPool> rq;  // without SRQ: this QP's own receive buffers
  std::uint32_t rq_posted = 0;
  std::uint32_t peer_mtu = wire::kMaxMtu;
  bool gso = false;  // both ends advertised kCapGso (set from the REQ/REP)

  bool has_qp() const { return qpn != 0; }
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
  bool blocked = false;  // waiting for send slots (in the data path's blocked list)
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
  std::vector<Conn*> established();
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, c] : conns_)
      f(*c);
  }

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
};

}  // namespace rcnet::cm
