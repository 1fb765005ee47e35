// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/conn_table.hpp"

namespace rcnet::cm {

Conn& ConnTable::add(const Peer& p, bool active, TimePoint now) {
  auto c = std::make_unique<Conn>();
  c->id = next_id_++;
  c->peer = p.node;
  c->peer_addr = p.underlay;
  c->active = active;
  c->created = c->state_since = c->last_activity = now;
  c->state = active ? ConnState::kResolvingAddr : ConnState::kAccepting;
  Conn& ref = *c;
  conns_.emplace(ref.id, std::move(c));
  ++*setup_count(ref.state);
  return ref;
}

std::size_t* ConnTable::setup_count(ConnState state) {
  switch (state) {
    case ConnState::kResolvingAddr:
    case ConnState::kResolvingRoute:
    case ConnState::kConnecting:
      return &active_setups_;
    case ConnState::kAccepting:
      return &passive_setups_;
    case ConnState::kEstablished:
    case ConnState::kDisconnecting:
    case ConnState::kError:
    case ConnState::kAwaitLastWqe:
    case ConnState::kDraining:
    case ConnState::kDestroyed:
      break;
  }
  return nullptr;
}

void ConnTable::erase(Conn& c) {
  if (std::size_t* n = setup_count(c.state))
    --*n;
  leave_service(c);
  idle_.erase(c);
  reclaim_.erase(c);
  set_deadline(c, TimePoint::max());
  unindex_qpn(c);
  unindex_cm_id(c);
  conns_.erase(c.id);
}

Conn* ConnTable::find(std::uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

const Conn* ConnTable::find(std::uint64_t id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

Conn* ConnTable::by_qpn(rdma::Qpn qpn) {
  auto it = by_qpn_.find(qpn);
  return it == by_qpn_.end() ? nullptr : find(it->second);
}

Conn* ConnTable::by_cm_id(rdma::CmIdHandle id) {
  auto it = by_cm_id_.find(id);
  return it == by_cm_id_.end() ? nullptr : find(it->second);
}

void ConnTable::index_cm_id(Conn& c) {
  by_cm_id_[c.cm_id] = c.id;
}

void ConnTable::index_qpn(Conn& c) {
  by_qpn_[c.qpn] = c.id;
}

void ConnTable::unindex_qpn(Conn& c) {
  auto it = by_qpn_.find(c.qpn);
  if (it != by_qpn_.end() && it->second == c.id)
    by_qpn_.erase(it);
}

void ConnTable::unindex_cm_id(Conn& c) {
  auto it = by_cm_id_.find(c.cm_id);
  if (it != by_cm_id_.end() && it->second == c.id)
    by_cm_id_.erase(it);
}

std::vector<Conn*> ConnTable::all() {
  std::vector<Conn*> v;
  v.reserve(conns_.size());
  for (auto& [id, c] : conns_)
    v.push_back(c.get());
  return v;
}

void ConnTable::set_state(Conn& c, ConnState to, TimePoint now) {
  if (to == ConnState::kEstablished) {
    c.last_activity = now;
    c.last_heard = now;
  }
  if (std::size_t* n = setup_count(c.state))
    --*n;
  if (std::size_t* n = setup_count(to))
    ++*n;
  c.state = to;
  c.state_since = now;
  relist(c);
}

void ConnTable::relist(Conn& c) {
  const bool established = c.state == ConnState::kEstablished;
  if (!established)
    reclaim_.erase(c);
  if (established && c.in_service) {
    if (!idle_.contains(c))
      idle_.insert_sorted(c, [](const Conn& x) { return x.last_activity; });
  } else {
    idle_.erase(c);
  }
}

Conn* ConnTable::pop_idle(TimePoint now, Duration idle) {
  Conn* c = idle_.front();
  if (c == nullptr || now - c->last_activity < idle)
    return nullptr;
  idle_.erase(*c);
  return c;
}

Conn* ConnTable::pop_reclaim(TimePoint cutoff) {
  Conn* c = reclaim_.front();
  if (c == nullptr || c->unsignaled_since > cutoff)
    return nullptr;
  reclaim_.erase(*c);
  return c;
}

Peer& ConnTable::peer_for(NodeId node, const Endpoint& underlay) {
  auto [it, inserted] = peers_.try_emplace(node);
  if (inserted) {
    it->second.node = node;
    it->second.underlay = underlay;
  }
  return it->second;
}

Peer* ConnTable::find_peer(NodeId node) {
  auto it = peers_.find(node);
  return it == peers_.end() ? nullptr : &it->second;
}

Conn* ConnTable::conn_of(const Peer& p) {
  return p.conn != 0 ? find(p.conn) : nullptr;
}

void ConnTable::erase_peer(NodeId node) {
  auto it = peers_.find(node);
  if (it == peers_.end())
    return;
  cancel_retry(it->second);
  peers_.erase(it);
}

void ConnTable::make_in_service(Peer& p, Conn& c) {
  p.conn = c.id;
  c.in_service = true;
  ++in_service_;
  relist(c);
}

void ConnTable::leave_service(Conn& c) {
  if (!c.in_service)
    return;
  c.in_service = false;
  --in_service_;
  relist(c);
  if (Peer* p = find_peer(c.peer); p != nullptr && p->conn == c.id)
    p->conn = 0;
}

void ConnTable::set_deadline(Conn& c, TimePoint when) {
  if (c.deadline != TimePoint::max())
    deadlines_.erase({c.deadline, c.id});
  c.deadline = when;
  if (when != TimePoint::max())
    deadlines_.insert({when, c.id});
}

TimePoint ConnTable::next_deadline() const {
  return deadlines_.empty() ? TimePoint::max() : deadlines_.begin()->first;
}

Conn* ConnTable::pop_expired(TimePoint now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const auto id = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    if (Conn* c = find(id)) {
      c->deadline = TimePoint::max();
      return c;
    }
  }
  return nullptr;
}

void ConnTable::set_retry(Peer& p, TimePoint when) {
  cancel_retry(p);
  p.retry_at = when;
  retries_.insert({when, p.node});
}

void ConnTable::cancel_retry(Peer& p) {
  if (p.retry_at != TimePoint::max())
    retries_.erase({p.retry_at, p.node});
  p.retry_at = TimePoint::max();
}

TimePoint ConnTable::next_retry() const {
  return retries_.empty() ? TimePoint::max() : retries_.begin()->first;
}

Peer* ConnTable::pop_retry(TimePoint now) {
  while (!retries_.empty() && retries_.begin()->first <= now) {
    const NodeId node = retries_.begin()->second;
    retries_.erase(retries_.begin());
    if (Peer* p = find_peer(node)) {
      p->retry_at = TimePoint::max();
      return p;
    }
  }
  return nullptr;
}

}  // namespace rcnet::cm
