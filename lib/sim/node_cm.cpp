// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The simulated rdma_cm of one node: ids, address/route resolution, and the
// IB CM exchange (REQ, REP, RTU, REJ, DREQ, DREP) between nodes.
#include <fmt/format.h>

#include <algorithm>

#include "sim/internal.hpp"

namespace rcnet::sim {

namespace {
// rdma_cm private data limits on IB/RoCE (docs/lab.md; IBTA vol. 1 12.6): what the
// sender may pass, and what the receiver always sees (zero-padded).
constexpr std::size_t kReqPd = 56, kRepPd = 196, kRejPd = 148;
// IB CM reject reasons as rdma_cm reports them in event->status.
constexpr int kRejInvalidServiceId = 8;  // nobody listens on that port
constexpr int kRejConsumer = 28;         // rdma_reject() by the peer
constexpr int kTimedOut = -ETIMEDOUT;

std::vector<std::uint8_t> padded(std::span<const std::uint8_t> pd, std::size_t size) {
  std::vector<std::uint8_t> out(size, 0);
  std::copy(pd.begin(), pd.end(), out.begin());
  return out;
}
}  // namespace

std::string_view to_string(IdState s) {
  switch (s) {
    case IdState::kIdle:
      return "IDLE";
    case IdState::kListening:
      return "LISTENING";
    case IdState::kAddrQuery:
      return "ADDR_QUERY";
    case IdState::kAddrResolved:
      return "ADDR_RESOLVED";
    case IdState::kRouteQuery:
      return "ROUTE_QUERY";
    case IdState::kRouteResolved:
      return "ROUTE_RESOLVED";
    case IdState::kConnecting:
      return "CONNECTING";
    case IdState::kReqReceived:
      return "REQ_RECEIVED";
    case IdState::kRepSent:
      return "REP_SENT";
    case IdState::kConnected:
      return "CONNECTED";
    case IdState::kDisconnecting:
      return "DISCONNECTING";
    case IdState::kDisconnected:
      return "DISCONNECTED";
    case IdState::kRejected:
      return "REJECTED";
    case IdState::kAborted:
      return "ABORTED";
    case IdState::kFailed:
      return "FAILED";
  }
  return "?";
}

Result<rdma::DeviceInfo> SimNode::Impl::open(const Endpoint& local, const rdma::DeviceConfig& c) {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, "sim open: node crashed");
  }
  if (device_removed)
    return Error::from_errno(ENODEV, "sim rdma_bind_addr: no device owns the address");
  if (local.addr != addr)
    return Error::from_errno(EADDRNOTAVAIL, "sim rdma_bind_addr");
  if (opened)
    return Error::from_errno(EADDRINUSE, "sim rdma_bind_addr: already open");
  rdma::DeviceInfo info;
  info.name = fmt::format("sim{}-{}", dev->index, caps().name);
  info.port = port_num;
  info.max_qp = max_qp;
  info.max_qp_wr = caps().max_qp_wr;
  info.max_srq_wr = caps().max_srq_wr;
  info.max_cqe = caps().max_cqe;
  info.profile = provider();
  if (c.cq_size == 0 || c.cq_size > info.max_cqe)
    return fail(EINVAL, "ibv_create_cq: cq_size");
  if (c.srq_size > info.max_srq_wr)
    return fail(EINVAL, "ibv_create_srq: srq_size");
  if (dev->lost && dev->open_ports > 0)
    return Error::from_errno(EBUSY, "sim open: another port still holds the lost device");
  if (dev->open_ports > 0 && dev->has_srq != (c.srq_size > 0))
    return fail(EINVAL, "open: another port of the device opened it with(out) an SRQ");
  if (dev->open_ports++ == 0) {
    // The first port: the device's PD and SRQ (the others share them).
    dev->pd = true;
    ++dev->stats.pd_allocs;
    dev->has_srq = c.srq_size > 0;
    dev->srq_size = c.srq_size;
    if (dev->has_srq)
      ++dev->stats.srq_creates;
  }
  opened = true;
  cfg = c;
  local_ep = local;
  listener = next_handle++;
  CmId l;
  l.handle = listener;
  l.state = IdState::kListening;
  l.local = local;
  ids.emplace(listener, l);
  return info;
}

Result<rdma::CmIdHandle> SimNode::Impl::create_id() {
  if (!up) {
    ++stats.on_crashed_node;
    return Error::from_errno(ENODEV, "sim rdma_create_id: node crashed");
  }
  if (device_removed)
    return Error::from_errno(ENODEV, "sim rdma_create_id: device removed");
  if (!opened)
    return fail(EINVAL, "rdma_create_id before open");
  const rdma::CmIdHandle h = next_handle++;
  CmId id;
  id.handle = h;
  ids.emplace(h, id);
  return h;
}

Result<void> SimNode::Impl::resolve_addr(rdma::CmIdHandle h, const Endpoint& dst,
                                         Duration timeout) {
  auto id = lookup(h, "rdma_resolve_addr");
  if (!id)
    return id.error();
  if ((*id)->state != IdState::kIdle)
    return fail(EINVAL, "rdma_resolve_addr: id not idle");
  (*id)->state = IdState::kAddrQuery;
  (*id)->remote = dst;
  (*id)->local = Endpoint{addr, next_port++};
  // A crashed host still resolves (its neighbour entry is cached); only an
  // address no node ever had fails, at the timeout, as a cold ARP miss does.
  const bool known = fab.by_addr.contains(dst.addr);
  later(known ? fab.timing.resolve : timeout, [this, h, known] {
    auto it = ids.find(h);
    if (it == ids.end() || it->second.state != IdState::kAddrQuery)
      return;
    it->second.state = known ? IdState::kAddrResolved : IdState::kFailed;
    rdma::CmEvent ev;
    ev.type = known ? rdma::CmEventType::kAddrResolved : rdma::CmEventType::kAddrError;
    ev.id = h;
    ev.status = known ? 0 : kTimedOut;
    emit_cm(0ns, std::move(ev));
  });
  return {};
}

Result<void> SimNode::Impl::resolve_route(rdma::CmIdHandle h, Duration /*timeout*/) {
  auto id = lookup(h, "rdma_resolve_route");
  if (!id)
    return id.error();
  if ((*id)->state != IdState::kAddrResolved)
    return fail(EINVAL, "rdma_resolve_route: state");
  (*id)->state = IdState::kRouteQuery;
  later(fab.timing.resolve, [this, h] {
    auto it = ids.find(h);
    if (it == ids.end() || it->second.state != IdState::kRouteQuery)
      return;
    it->second.state = IdState::kRouteResolved;
    rdma::CmEvent ev;
    ev.type = rdma::CmEventType::kRouteResolved;
    ev.id = h;
    emit_cm(0ns, std::move(ev));
  });
  return {};
}

Result<void> SimNode::Impl::connect(rdma::CmIdHandle h, const rdma::ConnParams& p) {
  auto idr = lookup(h, "rdma_connect");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  if (p.private_data.size() > kReqPd)
    return fail(EINVAL, "rdma_connect: private data > 56");
  if (id.state != IdState::kRouteResolved)
    return fail(EINVAL, "rdma_connect: route not resolved");
  if (!id.qpn || !qps.contains(*id.qpn))
    return fail(EINVAL, "rdma_connect: no QP");
  SimQp& qp = qps.at(*id.qpn);
  qp.retry_count = p.retry_count;
  qp.rnr_retry_count = p.rnr_retry_count;
  qp.ack_timeout = cfg.ack_timeout;
  id.state = IdState::kConnecting;
  PeerRef me{this, life, h, qp.qpn};
  const Endpoint src = id.local, dst = id.remote;
  // Without a REP or REJ in time (peer crashed, REQ dropped, peer never
  // answers) rdma_cm gives up after its REQ retries.
  later(fab.timing.unreachable, [this, h] {
    auto it = ids.find(h);
    if (it == ids.end() || it->second.state != IdState::kConnecting)
      return;
    it->second.state = IdState::kFailed;
    rdma::CmEvent ev;
    ev.type = rdma::CmEventType::kUnreachable;
    ev.id = h;
    ev.status = kTimedOut;
    emit_cm(0ns, std::move(ev));
  });
  SimNode* dst_sim = fabric.node(dst.addr);
  SimNode::Impl* dst_node = dst_sim != nullptr ? &dst_sim->impl() : nullptr;
  later(cm_hop(dst_node), [this, me, src, dst, pd = padded(p.private_data, kReqPd)]() mutable {
    SimNode* r = fabric.node(dst.addr);
    if (r != nullptr && r->impl().up && link_up(&r->impl()))
      r->impl().on_req(me, src, dst, std::move(pd));
  });
  return {};
}

void SimNode::Impl::on_req(const PeerRef& from, const Endpoint& src, const Endpoint& dst,
                           std::vector<std::uint8_t> pd) {
  if (!opened || listener == rdma::kNoCmId || dst.port != local_ep.port) {
    // The peer's CM answers "invalid service id".
    SimNode::Impl* a = from.node;
    later(cm_hop(a), [this, a, from] {
      if (can_reach(from))
        a->on_rej(from.id, kRejInvalidServiceId, {});
    });
    return;
  }
  // Counting the unanswered REQs walks every id: only worth it once there
  // are enough ids to reach the backlog. (A churn of connections can hold
  // hundreds of ids in teardown, and the fuzzer paid for the walk per REQ.)
  std::ptrdiff_t unanswered = 0;
  if (ids.size() >= static_cast<std::size_t>(cfg.listen_backlog)) {
    unanswered = std::count_if(ids.begin(), ids.end(), [](const auto& kv) {
      return kv.second.state == IdState::kReqReceived;
    });
  }
  if (unanswered >= cfg.listen_backlog) {
    // The CM drops the REQ; the active side's retries run out.
    ++stats.reqs_over_backlog;
    return;
  }
  const rdma::CmIdHandle h = next_handle++;
  CmId id;
  id.handle = h;
  id.state = IdState::kReqReceived;
  id.local = local_ep;
  id.remote = src;
  id.peer = from;
  ids.emplace(h, id);
  rdma::CmEvent ev;
  ev.type = rdma::CmEventType::kConnectRequest;
  ev.id = h;
  ev.listen_id = listener;
  ev.private_data = std::move(pd);
  ev.src = src;
  ev.dst = dst;
  ev.remote_qpn = from.qpn;
  emit_cm(0ns, std::move(ev));
}

Result<void> SimNode::Impl::accept(rdma::CmIdHandle h, const rdma::ConnParams& p) {
  auto idr = lookup(h, "rdma_accept");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  if (id.state != IdState::kReqReceived)
    return fail(EINVAL, "rdma_accept: no pending REQ");
  if (!id.qpn || !qps.contains(*id.qpn))
    return fail(EINVAL, "rdma_accept: no QP");
  SimQp& qp = qps.at(*id.qpn);
  if (p.private_data.size() > kRepPd) {
    // The kernel moves the QP to ERR and rejects the connection itself.
    qp_to_error(qp);
    id.state = IdState::kRejected;
    SimNode::Impl* a = id.peer.node;
    const PeerRef peer = id.peer;
    later(cm_hop(a), [this, a, peer] {
      if (can_reach(peer))
        a->on_rej(peer.id, kRejConsumer, {});
    });
    return fail(EINVAL, "rdma_accept: private data > 196");
  }
  qp.retry_count = p.retry_count;
  qp.rnr_retry_count = p.rnr_retry_count;
  qp.ack_timeout = cfg.ack_timeout;
  qp.peer = id.peer;
  qp.peer.id = id.peer.id;
  qp.passive = true;
  if (qp.state == QpStateSim::kInit)
    qp.state = QpStateSim::kRtr;
  id.state = IdState::kRepSent;
  const PeerRef me{this, life, h, qp.qpn};
  const PeerRef peer = id.peer;
  SimNode::Impl* a = peer.node;
  // REP retries exhausted without an RTU (peer gone, link cut, RTU lost).
  later(fab.timing.unreachable, [this, h] {
    auto it = ids.find(h);
    if (it == ids.end() || it->second.state != IdState::kRepSent)
      return;
    it->second.state = IdState::kFailed;
    rdma::CmEvent ev;
    ev.type = rdma::CmEventType::kConnectError;
    ev.id = h;
    ev.status = kTimedOut;
    emit_cm(0ns, std::move(ev));
  });
  later(cm_hop(a), [this, a, me, peer, pd = padded(p.private_data, kRepPd)]() mutable {
    if (can_reach(peer))
      a->on_rep(peer.id, me, std::move(pd));
  });
  return {};
}

void SimNode::Impl::on_rep(rdma::CmIdHandle h, const PeerRef& from, std::vector<std::uint8_t> pd) {
  auto it = ids.find(h);
  SimNode::Impl* p = from.node;
  if (it == ids.end() || it->second.state != IdState::kConnecting) {
    // Our attempt is gone or abandoned: the CM answers the REP with a REJ,
    // and an abandoned (disconnected) id learns that its attempt failed.
    if (it != ids.end() && it->second.state == IdState::kAborted) {
      it->second.state = IdState::kFailed;
      rdma::CmEvent ev;
      ev.type = rdma::CmEventType::kConnectError;
      ev.id = h;
      ev.status = -ECONNABORTED;
      emit_cm(0ns, std::move(ev));
    }
    later(cm_hop(p), [this, p, from] {
      if (can_reach(from))
        p->on_rej(from.id, kRejConsumer, {});
    });
    return;
  }
  CmId& id = it->second;
  id.state = IdState::kConnected;
  id.peer = from;
  if (id.qpn && qps.contains(*id.qpn)) {
    SimQp& qp = qps.at(*id.qpn);
    qp.peer = from;
    if (qp.state == QpStateSim::kInit || qp.state == QpStateSim::kRtr)
      qp.state = QpStateSim::kRts;
  }
  rdma::CmEvent ev;
  ev.type = rdma::CmEventType::kEstablished;
  ev.id = h;
  ev.private_data = std::move(pd);
  ev.remote_qpn = from.qpn;
  ev.src = id.remote;
  ev.dst = id.local;
  emit_cm(0ns, std::move(ev));
  later(cm_hop(p), [this, p, from] {
    if (can_reach(from) && !fabric.faults().take_rtu_loss(p->addr))
      p->on_rtu(from.id);
  });
}

Result<void> SimNode::Impl::notify_established(rdma::CmIdHandle h) {
  auto idr = lookup(h, "rdma_notify");
  if (!idr)
    return idr.error();
  // The kernel CM takes COMM_EST only while it waits for the RTU; it then
  // completes the connection as the RTU would.
  if ((*idr)->state != IdState::kRepSent)
    return Error::from_errno(EINVAL, "sim rdma_notify: not waiting for an RTU");
  on_rtu(h);
  return {};
}

void SimNode::Impl::on_rtu(rdma::CmIdHandle h) {
  auto it = ids.find(h);
  if (it == ids.end())
    return;
  CmId& id = it->second;
  if (id.state == IdState::kAborted) {
    // Disconnected while the REP was out: now that the connection exists on
    // the other side, the CM completes the disconnect there.
    id.state = IdState::kDisconnected;
    id.disconnected_reported = true;
    send_dreq(id);
    return;
  }
  if (id.state != IdState::kRepSent)
    return;
  id.state = IdState::kConnected;
  if (id.qpn && qps.contains(*id.qpn)) {
    SimQp& qp = qps.at(*id.qpn);
    if (qp.state == QpStateSim::kRtr)
      qp.state = QpStateSim::kRts;
  }
  rdma::CmEvent ev;
  ev.type = rdma::CmEventType::kEstablished;
  ev.id = h;
  ev.remote_qpn = id.peer.qpn;
  ev.src = id.remote;
  ev.dst = id.local;
  emit_cm(0ns, std::move(ev));
}

Result<void> SimNode::Impl::reject(rdma::CmIdHandle h, std::span<const std::uint8_t> pd) {
  auto idr = lookup(h, "rdma_reject");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  if (pd.size() > kRejPd)
    return fail(EINVAL, "rdma_reject: private data > 148");
  if (id.state != IdState::kReqReceived)
    return fail(EINVAL, "rdma_reject: no pending REQ");
  id.state = IdState::kRejected;
  SimNode::Impl* a = id.peer.node;
  const PeerRef peer = id.peer;
  later(cm_hop(a), [this, a, peer, data = padded(pd, kRejPd)]() mutable {
    if (can_reach(peer))
      a->on_rej(peer.id, kRejConsumer, std::move(data));
  });
  return {};
}

void SimNode::Impl::on_rej(rdma::CmIdHandle h, int status, std::vector<std::uint8_t> pd) {
  auto it = ids.find(h);
  if (it == ids.end())
    return;
  CmId& id = it->second;
  if (id.state != IdState::kConnecting && id.state != IdState::kRepSent)
    return;
  id.state = IdState::kRejected;
  rdma::CmEvent ev;
  ev.type = rdma::CmEventType::kRejected;
  ev.id = h;
  ev.status = status;
  ev.private_data = pd.empty() ? std::vector<std::uint8_t>(kRejPd, 0) : std::move(pd);
  emit_cm(0ns, std::move(ev));
}

void SimNode::Impl::report_disconnected(CmId& id) {
  if (id.disconnected_reported)
    return;
  id.disconnected_reported = true;
  rdma::CmEvent ev;
  ev.type = rdma::CmEventType::kDisconnected;
  ev.id = id.handle;
  emit_cm(0ns, std::move(ev));
}

void SimNode::Impl::send_dreq(CmId& id) {
  const PeerRef peer = id.peer;
  const PeerRef me{this, life, id.handle, id.qpn.value_or(0)};
  SimNode::Impl* p = peer.node;
  // Without a DREP (peer gone, link cut) the CM reports DISCONNECTED after
  // its DREQ timeout; on_drep() reports once.
  later(fab.timing.dreq_timeout, [this, h = me.id] { on_drep(h); });
  later(cm_hop(p), [this, p, peer, me] {
    if (can_reach(peer))
      p->on_dreq(peer.id, me);
  });
}

void SimNode::Impl::on_dreq(rdma::CmIdHandle h, const PeerRef& from) {
  auto it = ids.find(h);
  if (it != ids.end()) {
    CmId& id = it->second;
    if (id.state == IdState::kConnected || id.state == IdState::kDisconnecting ||
        id.state == IdState::kRepSent) {
      if (id.state != IdState::kDisconnecting)
        id.state = IdState::kDisconnected;
      // docs/lab.md: on rxe nothing moves the passive QP to ERR; IB providers do.
      if (caps().disconnected_errors_qp && id.qpn && qps.contains(*id.qpn)) {
        qp_to_error(qps.at(*id.qpn));
      }
      report_disconnected(id);
    }
  }
  SimNode::Impl* p = from.node;
  later(cm_hop(p), [this, p, from] {
    if (can_reach(from))
      p->on_drep(from.id);
  });
}

void SimNode::Impl::on_drep(rdma::CmIdHandle h) {
  auto it = ids.find(h);
  if (it == ids.end())
    return;
  CmId& id = it->second;
  if (id.state == IdState::kDisconnecting)
    id.state = IdState::kDisconnected;
  if (id.state == IdState::kDisconnected)
    report_disconnected(id);
}

Result<void> SimNode::Impl::disconnect(rdma::CmIdHandle h) {
  auto idr = lookup(h, "rdma_disconnect");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  switch (id.state) {
    case IdState::kConnected:
    case IdState::kConnecting:
    case IdState::kReqReceived:
    case IdState::kRepSent:
    case IdState::kDisconnecting:
    case IdState::kDisconnected:
      break;
    default:
      return fail(EINVAL, fmt::format("rdma_disconnect in {}", to_string(id.state)));
  }
  // librdmacm moves an IB QP to ERR before it sends the DREQ; an iWARP
  // QP goes to SQD (its owner moves it to ERR later).
  if (id.qpn && qps.contains(*id.qpn) && !provider().error_closes_stream)
    qp_to_error(qps.at(*id.qpn));
  switch (id.state) {
    case IdState::kConnected:
      id.state = IdState::kDisconnecting;
      send_dreq(id);
      break;
    case IdState::kConnecting:
    case IdState::kRepSent:
      id.state = IdState::kAborted;
      break;
    case IdState::kReqReceived:
      // Never answered: the active side's REQ times out.
      id.state = IdState::kAborted;
      break;
    default:
      break;  // a second disconnect is harmless
  }
  return {};
}

Result<void> SimNode::Impl::destroy_id(rdma::CmIdHandle h) {
  auto idr = lookup(h, "rdma_destroy_id");
  if (!idr)
    return idr.error();
  CmId& id = **idr;
  if (h == dispatching || h == dispatching_listen) {
    count_misuse(&SimStats::destroy_id_in_dispatch,
                 fmt::format("rdma_destroy_id({:#x}) inside its own event: deadlock", h));
    return Error::from_errno(EDEADLK, "sim rdma_destroy_id inside its own event");
  }
  if (id.qpn && qps.contains(*id.qpn)) {
    count_misuse(&SimStats::destroy_id_with_qp,
                 fmt::format("rdma_destroy_id({:#x}) while QP {:#x} exists: leak", h, *id.qpn));
    return Error::from_errno(EBUSY, "sim rdma_destroy_id: QP still exists");
  }
  // What ib_destroy_cm_id sends for the state the id is in.
  const PeerRef peer = id.peer;
  SimNode::Impl* p = peer.node;
  switch (id.state) {
    case IdState::kConnected:
      later(cm_hop(p), [this, p, peer] {
        if (can_reach(peer)) {
          auto it = p->ids.find(peer.id);
          if (it != p->ids.end() && it->second.state == IdState::kConnected) {
            p->on_dreq(peer.id, PeerRef{});
          }
        }
      });
      break;
    case IdState::kReqReceived:
    case IdState::kRepSent:
      later(cm_hop(p), [this, p, peer] {
        if (can_reach(peer))
          p->on_rej(peer.id, kRejConsumer, {});
      });
      break;
    default:
      break;
  }
  if (h == listener)
    listener = rdma::kNoCmId;
  ids.erase(h);
  return {};
}

}  // namespace rcnet::sim
