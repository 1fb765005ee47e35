// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/manager.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <set>
#include <unordered_map>
#include <utility>

#include "cm/buffer_pool.hpp"
#include "util/log.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

namespace {

// wr_id layout: tag in the top 8 bits; the rest says which buffer or QP.
// Completions are classified by wr_id only, never by opcode (LAB.md: rxe
// reports flushed receives as SEND with byte_len 0).
enum Tag : std::uint64_t {
  kTagSrqRecv = 1,  // low 32 bits: SRQ buffer index
  kTagQpRecv = 2,   // bits 20..55: conn id, low 20 bits: RQ buffer index
  kTagSend = 3,     // low 32 bits: send slot index
  kTagFence = 4,    // low 56 bits: conn id (zero-length signaled control SEND)
  kTagDrain = 5,    // low 56 bits: conn id
};
constexpr std::uint64_t kLow56 = (1ull << 56) - 1;
constexpr std::uint64_t make_wr(Tag t, std::uint64_t low) {
  return (std::uint64_t{t} << 56) | low;
}
constexpr Tag wr_tag(std::uint64_t wr) {
  return static_cast<Tag>(wr >> 56);
}
constexpr std::uint64_t wr_low(std::uint64_t wr) {
  return wr & kLow56;
}

// The immediate says what a SEND carries (DESIGN.md "Data path").
constexpr std::uint32_t kImmData = 0x52430001;     // one IP packet
constexpr std::uint32_t kImmControl = 0x52430002;  // zero-length fence, ignored by the receiver

constexpr Duration kCollisionBackoff = 50ms;  // wait for the winning REQ before retrying

enum class TeardownKind : std::uint8_t {
  kGraceful,  // we send DREQ and wait (bounded) for DISCONNECTED
  kRemote,    // DREQ received: answer it and go on
  kHard,      // the peer is gone or must not be waited for
};

// Legal transitions of the one QP state machine (STYLE.md item 4).
constexpr std::uint16_t bit(QpState s) {
  return static_cast<std::uint16_t>(1u << static_cast<int>(s));
}
constexpr std::uint16_t kLegal[kQpStateCount] = {
    /* RESOLVING_ADDR  */ bit(QpState::kResolvingRoute) | bit(QpState::kDestroyed),
    /* RESOLVING_ROUTE */ bit(QpState::kConnecting) | bit(QpState::kError) |
        bit(QpState::kDestroyed),
    /* CONNECTING      */ bit(QpState::kEstablished) | bit(QpState::kError),
    /* ACCEPTING       */ bit(QpState::kEstablished) | bit(QpState::kError) |
        bit(QpState::kDestroyed),
    /* ESTABLISHED     */ bit(QpState::kDisconnecting) | bit(QpState::kError),
    /* DISCONNECTING   */ bit(QpState::kError),
    /* ERROR           */ bit(QpState::kAwaitLastWqe) | bit(QpState::kDraining) |
        bit(QpState::kDestroyed),
    /* AWAIT_LAST_WQE  */ bit(QpState::kDraining) | bit(QpState::kDestroyed),
    /* DRAINING        */ bit(QpState::kDestroyed),
    /* DESTROYED       */ 0,
};

}  // namespace

bool is_legal_transition(QpState from, QpState to) {
  return (kLegal[static_cast<int>(from)] & bit(to)) != 0;
}

struct SendEntry {
  std::uint64_t wr_id;
  bool signaled;
};

struct Conn {
  std::uint64_t id = 0;
  NodeId peer = 0;
  Endpoint peer_addr;
  rdma::CmIdHandle cm_id = rdma::kNoCmId;
  rdma::Qpn qpn = 0;
  rdma::Qpn remote_qpn = 0;
  QpState state = QpState::kResolvingAddr;
  bool active = false;
  bool in_service = false;
  bool qp_created = false;
  bool qp_destroyed = false;
  bool last_wqe_seen = false;
  bool disconnected_seen = false;
  TimePoint created{}, state_since{}, last_activity{};
  TimePoint deadline = TimePoint::max();
  std::uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  std::string teardown_reason;
  std::deque<SendEntry> sends;  // posted, not yet known complete, in SQ order
  std::uint32_t unsignaled_run = 0;
  std::unique_ptr<BufferPool> rq;  // non-SRQ: this QP's own receive ring
  std::uint32_t rq_posted = 0;
  std::uint32_t peer_mtu = wire::kMaxMtu;
};

struct Peer {
  NodeId node = 0;
  Endpoint underlay;
  IpAddr overlay;
  std::uint64_t incarnation = 0;
  std::uint64_t conn = 0;  // in-service conn id, 0 = none
  std::deque<std::vector<std::byte>> queue;
  std::uint32_t attempts = 0;  // failed attempts since the last ESTABLISHED
  TimePoint retry_at = TimePoint::max();
  bool blocked = false;  // in blocked_ (waiting for send slots)
};

class Manager::Impl {
 public:
  Impl(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink)
      : cfg_(std::move(cfg)), seam_(seam), timers_(timers), sink_(sink) {
    self_ = node_id_for(cfg_.local.addr);
    if (cfg_.max_connections == 0)
      cfg_.max_connections = cfg_.use_srq ? 4096 : 128;
    if (cfg_.srq_limit == 0)
      cfg_.srq_limit = std::max<std::uint32_t>(1, cfg_.srq_size / 8);
    if (cfg_.signal_every == 0)
      cfg_.signal_every = 1;
  }

  ~Impl() {
    // Best effort: destroy what is left without the spec sequence. A clean
    // stop goes through shutdown() first and leaves nothing here.
    for (auto& [id, c] : conns_) {
      if (c->qp_created && !c->qp_destroyed)
        (void)seam_.destroy_qp(c->cm_id);
      if (c->cm_id != rdma::kNoCmId)
        (void)seam_.destroy_id(c->cm_id);
    }
    for (auto id : pending_id_destroy_)
      (void)seam_.destroy_id(id);
  }

  // ---------------------------------------------------------------- start
  Result<void> start() {
    rdma::DeviceConfig dc;
    dc.srq_size = cfg_.use_srq ? cfg_.srq_size : 0;
    const std::uint64_t cqes =
        std::uint64_t{cfg_.use_srq ? cfg_.srq_size : 0} +
        std::uint64_t{cfg_.use_srq ? 0 : cfg_.rq_depth} * cfg_.max_connections + cfg_.send_slots +
        2ull * cfg_.max_connections + 1024;
    dc.cq_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(cqes, 1u << 22));
    auto info = seam_.open(cfg_.local, dc);
    if (!info)
      return info.error();
    device_ = *info;
    buf_size_ = cfg_.mtu;
    if (auto r = send_pool_.init(seam_, cfg_.send_slots, buf_size_); !r)
      return r;
    slot_owner_.assign(cfg_.send_slots, 0);
    if (cfg_.use_srq) {
      if (auto r = srq_pool_.init(seam_, cfg_.srq_size, buf_size_); !r)
        return r;
      std::vector<std::uint64_t> ids;
      std::vector<rdma::Sge> sges;
      while (auto i = srq_pool_.take()) {
        ids.push_back(make_wr(kTagSrqRecv, *i));
        sges.push_back(srq_pool_.sge(*i));
      }
      if (auto r = seam_.post_srq_recv(ids, sges); !r)
        return r;
      srq_posted_ = static_cast<std::uint32_t>(ids.size());
      arm_srq_limit();
    }
    started_ = true;
    spdlog::info(
        "rcnet manager up: node {:#x} incarnation {:#x} on {} ({}), {} mtu {}, max {} connections",
        self_, cfg_.incarnation, cfg_.local.to_string(), device_.name,
        cfg_.use_srq ? fmt::format("SRQ of {}", cfg_.srq_size)
                     : fmt::format("per-QP RQ of {}", cfg_.rq_depth),
        cfg_.mtu, cfg_.max_connections);
    reschedule();
    return {};
  }

  // ---------------------------------------------------------------- data path
  SendResult send(const Endpoint& dst, std::span<const std::byte> packet) {
    if (packet.size() > cfg_.mtu) {
      ++ctr_.drops_oversize;
      return SendResult::kOversize;
    }
    if (!started_ || shutting_down_ || !link_up_) {
      ++ctr_.drops_shutting_down;
      return SendResult::kRefused;
    }
    const NodeId node = node_id_for(dst.addr);
    if (node == 0 || node == self_)
      return SendResult::kRefused;
    Peer& p = peer_for(node, dst);
    Conn* c = p.conn != 0 ? find(p.conn) : nullptr;
    if (c != nullptr && c->state == QpState::kEstablished) {
      if (packet.size() > c->peer_mtu) {
        ++ctr_.drops_oversize;
        return SendResult::kOversize;
      }
      if (p.queue.empty() && post_packet(*c, packet)) {
        reschedule();
        return SendResult::kSent;
      }
      // No send slot or the SQ is full: hold it in the peer's queue until
      // completions free room, and ask the daemon to stop reading TUN.
      const bool dropped = enqueue(p, packet);
      mark_blocked(p);
      return dropped ? SendResult::kDroppedOldest : SendResult::kQueued;
    }
    const bool dropped = enqueue(p, packet);
    if (c == nullptr && p.retry_at == TimePoint::max())
      start_connect(p);
    reschedule();
    return dropped ? SendResult::kDroppedOldest : SendResult::kQueued;
  }

  // ---------------------------------------------------------------- cm events
  void on_cm_event(const rdma::CmEvent& ev) {
    if (ev.type == rdma::CmEventType::kConnectRequest) {
      handle_req(ev);
      reschedule();
      return;
    }
    auto it = by_cm_id_.find(ev.id);
    if (it == by_cm_id_.end()) {
      if (ev.type == rdma::CmEventType::kDeviceRemoval) {
        device_lost("RDMA device removed");
      } else if (ev.type != rdma::CmEventType::kTimewaitExit) {
        ++ctr_.cm_events_ignored;
        spdlog::debug("ignored rdma_cm event {} for unknown id {}", rdma::to_string(ev.type),
                      ev.id);
      }
      reschedule();
      return;
    }
    Conn& c = *find(it->second);
    using T = rdma::CmEventType;
    switch (ev.type) {
      case T::kAddrResolved:
        if (c.state != QpState::kResolvingAddr)
          return ignore_cm(c, ev);
        if (auto r = seam_.resolve_route(c.cm_id, cfg_.resolve_timeout); !r) {
          attempt_failed(c, "rdma_resolve_route: " + r.error().message());
          break;
        }
        set_state(c, QpState::kResolvingRoute, "address resolved");
        set_deadline(c, now() + cfg_.resolve_timeout * 2);
        break;
      case T::kRouteResolved:
        if (c.state != QpState::kResolvingRoute)
          return ignore_cm(c, ev);
        send_req(c);
        break;
      case T::kAddrError:
      case T::kRouteError:
      case T::kUnreachable:
      case T::kConnectError:
        if (is_teardown(c.state))
          break;  // normal during teardown of an attempt
        if (c.state == QpState::kEstablished) {
          teardown(c, TeardownKind::kHard,
                   fmt::format("{} (status {})", rdma::to_string(ev.type), ev.status));
        } else {
          attempt_failed(c, fmt::format("{} (status {})", rdma::to_string(ev.type), ev.status));
        }
        break;
      case T::kRejected:
        if (c.state != QpState::kConnecting)
          return ignore_cm(c, ev);
        handle_rej(c, ev);
        break;
      case T::kEstablished:
        if (c.state == QpState::kConnecting) {
          handle_rep(c, ev);
        } else if (c.state == QpState::kAccepting) {
          if (ev.remote_qpn != 0)
            c.remote_qpn = ev.remote_qpn;
          established(c);
        } else {
          return ignore_cm(c, ev);
        }
        break;
      case T::kDisconnected:
        c.disconnected_seen = true;
        if (c.state == QpState::kEstablished) {
          teardown(c, TeardownKind::kRemote, "DREQ received");
        } else if (c.state == QpState::kDisconnecting) {
          to_error(c);
        } else if (c.state == QpState::kConnecting || c.state == QpState::kAccepting) {
          attempt_failed(c, "DISCONNECTED before ESTABLISHED");
        }
        break;
      case T::kTimewaitExit:
        break;
      case T::kDeviceRemoval:
        device_lost("RDMA device removed");
        break;
      default:
        return ignore_cm(c, ev);
    }
    reschedule();
  }

  // ---------------------------------------------------------------- async events
  void on_async_event(const rdma::AsyncEvent& ev) {
    using T = rdma::AsyncEventType;
    switch (ev.type) {
      case T::kSrqLimitReached:
        ++ctr_.srq_limit_events;
        ++srq_limit_events_;
        srq_limit_armed_ = false;
        spdlog::warn("SRQ limit reached: {} of {} receive WRs posted (limit {})", srq_posted_,
                     cfg_.srq_size, cfg_.srq_limit);
        break;
      case T::kLastWqeReached:
        on_last_wqe(ev.qpn);
        break;
      case T::kQpFatal:
      case T::kQpReqErr:
      case T::kQpAccessErr: {
        ++ctr_.qp_fatal_events;
        Conn* c = by_qpn(ev.qpn);
        if (c == nullptr) {
          ++ctr_.async_events_ignored;
          break;
        }
        if (!is_teardown(c->state)) {
          teardown(*c, TeardownKind::kHard, std::string(rdma::to_string(ev.type)));
        } else {
          ++ctr_.async_events_ignored;  // already in the one teardown
        }
        break;
      }
      case T::kPortError:
        spdlog::error("RDMA port error: tearing every connection down");
        link_changed(false);
        break;
      case T::kPortActive:
        if (!link_up_)
          link_changed(true);
        break;
      case T::kCqErr:
      case T::kSrqErr:
      case T::kDeviceFatal:
        device_lost(std::string(rdma::to_string(ev.type)));
        break;
      case T::kCommEstablished:
      case T::kSqDrained:
      case T::kPathMigrated:
      case T::kOther:
        ++ctr_.async_events_ignored;
        break;
    }
    reschedule();
  }

  // ---------------------------------------------------------------- completions
  void on_completions(std::span<const rdma::WorkCompletion> wcs) {
    for (const auto& wc : wcs)
      on_wc(wc);
    flush_srq_reposts();
    if (!blocked_.empty() || !capacity_)
      unblock();
    reschedule();
  }

  // ---------------------------------------------------------------- timer
  void on_timer() {
    const TimePoint t = now();
    scheduled_ = TimePoint::max();  // that wakeup is used up
    forget_idle_peers();
    // Deferred rdma_cm id destruction (never inside the id's own callback).
    auto ids = std::move(pending_id_destroy_);
    pending_id_destroy_.clear();
    for (auto id : ids)
      destroy_id_now(id);

    while (!deadlines_.empty() && deadlines_.begin()->first <= t) {
      const auto id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      Conn* c = find(id);
      if (c == nullptr)
        continue;
      c->deadline = TimePoint::max();
      on_deadline(*c);
    }
    while (!peer_retry_.empty() && peer_retry_.begin()->first <= t) {
      const NodeId node = peer_retry_.begin()->second;
      peer_retry_.erase(peer_retry_.begin());
      auto pit = peers_.find(node);
      if (pit == peers_.end())
        continue;
      Peer& p = pit->second;
      p.retry_at = TimePoint::max();
      if (p.conn == 0 && !p.queue.empty() && !shutting_down_ && link_up_)
        start_connect(p);
    }
    if (next_reap_ <= t) {
      next_reap_ = TimePoint::max();
      reap_tick(t);
    }
    reschedule();
  }

  // ---------------------------------------------------------------- notifications
  void peer_failed(const IpAddr& addr, std::string_view why) {
    auto pit = peers_.find(node_id_for(addr));
    if (pit == peers_.end())
      return;
    Peer& p = pit->second;
    drop_queue(p, ctr_.drops_connect_failed);
    if (Conn* c = p.conn ? find(p.conn) : nullptr) {
      ++ctr_.dead_peer_reaps;
      teardown(*c, TeardownKind::kHard, std::string(why), log::kMsgReapedDead);
    }
    reschedule();
  }

  void link_changed(bool up) {
    if (up == link_up_)
      return;
    link_up_ = up;
    if (!up) {
      spdlog::warn("underlay link down: tearing down {} connections, refusing new ones",
                   in_service_count());
      for (auto& [node, p] : peers_) {
        drop_queue(p, ctr_.drops_shutting_down);
        if (Conn* c = p.conn ? find(p.conn) : nullptr) {
          ++ctr_.link_down_teardowns;
          teardown(*c, TeardownKind::kHard, "underlay link down");
        }
      }
    } else {
      spdlog::info("underlay link up: accepting connections again");
    }
    reschedule();
  }

  bool disconnect_peer(NodeId node, std::string_view why) {
    auto pit = peers_.find(node);
    if (pit == peers_.end())
      return false;
    Conn* c = pit->second.conn ? find(pit->second.conn) : nullptr;
    if (c == nullptr)
      return false;
    teardown(*c, c->state == QpState::kEstablished ? TeardownKind::kGraceful : TeardownKind::kHard,
             std::string(why));
    reschedule();
    return true;
  }

  std::size_t reap_idle(Duration idle) {
    std::size_t n = 0;
    const TimePoint t = now();
    for (auto* c : established_conns()) {
      if (t - c->last_activity >= idle) {
        ++ctr_.idle_reaps;
        teardown(*c, TeardownKind::kGraceful,
                 fmt::format("idle {:.0f} ms (reap request)", to_ms(t - c->last_activity)),
                 log::kMsgReapedIdle);
        ++n;
      }
    }
    reschedule();
    return n;
  }

  void reconfigure(const ManagerConfig& n) {
    cfg_.idle_timeout = n.idle_timeout;
    cfg_.last_wqe_timeout = n.last_wqe_timeout;
    cfg_.drain_timeout = n.drain_timeout;
    cfg_.disconnect_timeout = n.disconnect_timeout;
    cfg_.resolve_timeout = n.resolve_timeout;
    cfg_.connect_timeout = n.connect_timeout;
    cfg_.connect_retries = n.connect_retries;
    cfg_.reaper_interval = n.reaper_interval;
    cfg_.retry_count = n.retry_count;
    cfg_.rnr_retry_count = n.rnr_retry_count;
    cfg_.peer_queue_depth = n.peer_queue_depth;
    cfg_.signal_every = std::max<std::uint32_t>(1, n.signal_every);
    cfg_.allowed_peers = n.allowed_peers;
    cfg_.max_connections = n.max_connections != 0 ? n.max_connections : (cfg_.use_srq ? 4096 : 128);
    next_reap_ = TimePoint::max();
    reschedule();
  }

  void shutdown() {
    if (shutting_down_)
      return;
    shutting_down_ = true;
    spdlog::info("shutting down: {} connections, {} QPs", in_service_count(), conns_.size());
    for (auto& [node, p] : peers_)
      drop_queue(p, ctr_.drops_shutting_down);
    std::vector<Conn*> all;
    for (auto& [id, c] : conns_)
      all.push_back(c.get());
    for (Conn* c : all) {
      if (is_teardown(c->state))
        continue;
      teardown(*c,
               c->state == QpState::kEstablished ? TeardownKind::kGraceful : TeardownKind::kHard,
               "shutting down");
    }
    reschedule();
  }

  bool stopped() const { return shutting_down_ && conns_.empty() && pending_id_destroy_.empty(); }

  // ---------------------------------------------------------------- views
  Snapshot snapshot() const {
    Snapshot s;
    const TimePoint t = now();
    s.node = self_;
    s.incarnation = cfg_.incarnation;
    s.local = cfg_.local;
    s.device = device_.name;
    s.mtu = cfg_.mtu;
    s.send_slots_total = send_pool_.count();
    s.send_slots_free = send_pool_.free_count();
    for (const auto& [node, p] : peers_) {
      s.peers.push_back(PeerSnapshot{p.node, p.underlay, p.overlay, p.incarnation,
                                     static_cast<std::uint32_t>(p.queue.size()), p.conn});
    }
    std::sort(s.peers.begin(), s.peers.end(), [](auto& a, auto& b) { return a.node < b.node; });
    for (const auto& [id, cp] : conns_) {
      const Conn& c = *cp;
      QpSnapshot q;
      q.id = c.id;
      q.peer_node = c.peer;
      q.peer_addr = c.peer_addr;
      q.qpn = c.qpn;
      q.remote_qpn = c.remote_qpn;
      q.state = c.state;
      q.active = c.active;
      q.in_service = c.in_service;
      q.time_in_state = t - c.state_since;
      q.age = t - c.created;
      q.idle = t - c.last_activity;
      q.tx_packets = c.tx_packets;
      q.tx_bytes = c.tx_bytes;
      q.rx_packets = c.rx_packets;
      q.rx_bytes = c.rx_bytes;
      q.teardown_reason = c.teardown_reason;
      s.qps.push_back(std::move(q));
    }
    std::sort(s.qps.begin(), s.qps.end(), [](auto& a, auto& b) { return a.id < b.id; });
    s.srq.enabled = cfg_.use_srq;
    s.srq.size = cfg_.use_srq ? cfg_.srq_size : 0;
    s.srq.posted = srq_posted_;
    s.srq.limit = cfg_.use_srq ? cfg_.srq_limit : 0;
    s.srq.limit_events = srq_limit_events_;
    s.counters = ctr_;
    return s;
  }

  const Counters& counters() const { return ctr_; }
  const ManagerConfig& config() const { return cfg_; }
  NodeId node_id() const { return self_; }

  std::vector<rdma::Qpn> live_qpns() const {
    std::vector<rdma::Qpn> v;
    for (const auto& [id, c] : conns_) {
      if (c->qp_created && !c->qp_destroyed)
        v.push_back(c->qpn);
    }
    std::sort(v.begin(), v.end());
    return v;
  }

  std::size_t live_cm_ids() const {
    std::size_t n = pending_id_destroy_.size();
    for (const auto& [id, c] : conns_)
      n += c->cm_id != rdma::kNoCmId ? 1 : 0;
    return n;
  }

 private:
  // ================================================================ helpers
  TimePoint now() const { return timers_.now(); }

  Conn* find(std::uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second.get();
  }
  Conn* by_qpn(rdma::Qpn qpn) {
    auto it = qpn_to_conn_.find(qpn);
    return it == qpn_to_conn_.end() ? nullptr : find(it->second);
  }

  Peer& peer_for(NodeId node, const Endpoint& underlay) {
    auto [it, inserted] = peers_.try_emplace(node);
    if (inserted) {
      it->second.node = node;
      it->second.underlay = underlay;
    }
    return it->second;
  }

  log::Fields fields(const Conn& c) const {
    log::Fields f;
    f.peer_node = c.peer;
    f.peer_addr = c.peer_addr.to_string();
    f.qpn = c.qpn;
    f.remote_qpn = c.remote_qpn;
    f.conn_state = to_string(c.state);
    if (is_teardown(c.state))
      f.teardown_stage = to_string(c.state);
    f.reason = c.teardown_reason;
    return f;
  }

  std::size_t in_service_count() const { return in_service_; }

  std::vector<Conn*> established_conns() {
    std::vector<Conn*> v;
    for (auto& [id, c] : conns_) {
      if (c->state == QpState::kEstablished)
        v.push_back(c.get());
    }
    return v;
  }

  // The one state-changing function (STYLE.md item 4).
  void set_state(Conn& c, QpState to, std::string_view why) {
    const QpState from = c.state;
    if (!is_legal_transition(from, to)) {
      auto f = fields(c);
      log::event(spdlog::level::critical, f,
                 "BUG: illegal QP transition {} -> {} ({}) for QPN {} peer {}", to_string(from),
                 to_string(to), why, c.qpn, c.peer_addr.to_string());
      return;
    }
    const TimePoint t = now();
    const Duration spent = t - c.state_since;
    if (from == QpState::kEstablished)
      --established_;
    if (to == QpState::kEstablished)
      ++established_;
    c.state = to;
    c.state_since = t;
    auto f = fields(c);
    log::event(
        is_teardown(to) || to == QpState::kEstablished ? spdlog::level::info : spdlog::level::debug,
        f, "QPN {} peer {}: {} -> {} after {:.1f} ms ({})", c.qpn, c.peer_addr.to_string(),
        to_string(from), to_string(to), to_ms(spent), why);
  }

  void set_deadline(Conn& c, TimePoint when) {
    if (c.deadline != TimePoint::max())
      deadlines_.erase({c.deadline, c.id});
    c.deadline = when;
    if (when != TimePoint::max())
      deadlines_.insert({when, c.id});
  }

  void reschedule() {
    TimePoint next = TimePoint::max();
    if (!pending_id_destroy_.empty())
      next = now();
    if (!deadlines_.empty())
      next = std::min(next, deadlines_.begin()->first);
    if (!peer_retry_.empty())
      next = std::min(next, peer_retry_.begin()->first);
    if (next_reap_ == TimePoint::max() && established_ > 0)
      next_reap_ = now() + cfg_.reaper_interval;
    next = std::min(next, next_reap_);
    if (next != scheduled_) {
      scheduled_ = next;
      timers_.schedule(next);
    }
  }

  Conn& new_conn(Peer& p, bool active) {
    auto c = std::make_unique<Conn>();
    c->id = next_conn_id_++;
    c->peer = p.node;
    c->peer_addr = p.underlay;
    c->active = active;
    c->created = c->state_since = c->last_activity = now();
    c->state = active ? QpState::kResolvingAddr : QpState::kAccepting;
    Conn& ref = *c;
    conns_.emplace(ref.id, std::move(c));
    return ref;
  }

  void make_in_service(Peer& p, Conn& c) {
    p.conn = c.id;
    c.in_service = true;
    ++in_service_;
  }

  void leave_service(Conn& c) {
    if (!c.in_service)
      return;
    c.in_service = false;
    --in_service_;
    auto pit = peers_.find(c.peer);
    if (pit != peers_.end() && pit->second.conn == c.id)
      pit->second.conn = 0;
  }

  // Returns true when the oldest packet had to be dropped.
  bool enqueue(Peer& p, std::span<const std::byte> packet) {
    bool dropped = false;
    if (cfg_.peer_queue_depth == 0) {
      ++ctr_.drops_queue_full;
      return true;
    }
    if (p.queue.size() >= cfg_.peer_queue_depth) {
      p.queue.pop_front();
      ++ctr_.drops_queue_full;
      dropped = true;
    }
    p.queue.emplace_back(packet.begin(), packet.end());
    return dropped;
  }

  void drop_queue(Peer& p, std::uint64_t& counter) {
    counter += p.queue.size();
    p.queue.clear();
  }

  // Makes room for one more connection: evicts the least recently used
  // ESTABLISHED connection. False when nothing can be evicted.
  bool make_room() {
    if (in_service_count() < cfg_.max_connections)
      return true;
    Conn* lru = nullptr;
    for (auto& [id, c] : conns_) {
      if (c->in_service && c->state == QpState::kEstablished &&
          (lru == nullptr || c->last_activity < lru->last_activity)) {
        lru = c.get();
      }
    }
    if (lru == nullptr)
      return false;
    ++ctr_.evictions;
    teardown(
        *lru, TeardownKind::kGraceful,
        fmt::format("evicted: least recently used at max_connections {}", cfg_.max_connections));
    return true;
  }

  // ================================================================ establishment
  void start_connect(Peer& p) {
    if (!make_room()) {
      spdlog::warn("cannot connect to {}: {} connections in setup, none evictable",
                   p.underlay.to_string(), cfg_.max_connections);
      drop_queue(p, ctr_.drops_connect_failed);
      return;
    }
    auto id = seam_.create_id();
    if (!id) {
      spdlog::error("rdma_create_id for {}: {}", p.underlay.to_string(), id.error().message());
      drop_queue(p, ctr_.drops_connect_failed);
      return;
    }
    ++ctr_.cm_ids_created;
    ++ctr_.connects_started;
    Conn& c = new_conn(p, true);
    c.cm_id = *id;
    by_cm_id_[c.cm_id] = c.id;
    make_in_service(p, c);
    if (auto r = seam_.resolve_addr(c.cm_id, p.underlay, cfg_.resolve_timeout); !r) {
      attempt_failed(c, "rdma_resolve_addr: " + r.error().message());
      return;
    }
    set_deadline(c, now() + cfg_.resolve_timeout * 2);
    auto f = fields(c);
    log::event(spdlog::level::debug, f, "connecting to peer {} (node {:#x})",
               p.underlay.to_string(), p.node);
  }

  Result<void> create_qp(Conn& c) {
    rdma::QpCaps caps;
    caps.use_srq = cfg_.use_srq;
    caps.max_send_wr = cfg_.qp_send_depth;
    caps.max_recv_wr = cfg_.use_srq ? 0 : cfg_.rq_depth;
    auto qpn = seam_.create_qp(c.cm_id, caps);
    if (!qpn)
      return qpn.error();
    c.qpn = *qpn;
    c.qp_created = true;
    ++ctr_.qps_created;
    qpn_to_conn_[c.qpn] = c.id;
    if (!cfg_.use_srq) {
      c.rq = std::make_unique<BufferPool>();
      if (auto r = c.rq->init(seam_, cfg_.rq_depth, buf_size_); !r)
        return r;
      std::vector<std::uint64_t> ids;
      std::vector<rdma::Sge> sges;
      while (auto i = c.rq->take()) {
        ids.push_back(make_wr(kTagQpRecv, (c.id << 20) | *i));
        sges.push_back(c.rq->sge(*i));
      }
      if (auto r = seam_.post_qp_recv(c.cm_id, ids, sges); !r)
        return r;
      c.rq_posted = static_cast<std::uint32_t>(ids.size());
    }
    return {};
  }

  wire::PrivateData my_pd(wire::Kind kind,
                          wire::RejectReason reason = wire::RejectReason::kNone) const {
    wire::PrivateData pd;
    pd.kind = kind;
    pd.node_id = self_;
    pd.incarnation = cfg_.incarnation;
    pd.mtu = cfg_.mtu;
    pd.srq = cfg_.use_srq;
    pd.overlay = cfg_.overlay;
    pd.reason = reason;
    return pd;
  }

  rdma::ConnParams params(std::span<const std::uint8_t> pd) const {
    rdma::ConnParams p;
    p.private_data = pd;
    p.retry_count = cfg_.retry_count;
    p.rnr_retry_count = cfg_.rnr_retry_count;
    return p;
  }

  void send_req(Conn& c) {
    if (auto r = create_qp(c); !r) {
      attempt_failed(c, "create QP: " + r.error().message());
      return;
    }
    const auto pd = wire::encode(my_pd(wire::Kind::kReq));
    if (auto r = seam_.connect(c.cm_id, params(pd)); !r) {
      attempt_failed(c, "rdma_connect: " + r.error().message());
      return;
    }
    set_state(c, QpState::kConnecting, "REQ sent");
    set_deadline(c, now() + cfg_.connect_timeout);
  }

  void handle_rep(Conn& c, const rdma::CmEvent& ev) {
    const auto d = wire::decode(ev.private_data, wire::Kind::kRep);
    if (!d.ok || d.data.node_id != c.peer) {
      ++ctr_.malformed_private_data;
      attempt_failed(c, d.ok ? "REP from an unexpected node id"
                             : fmt::format("malformed REP: {}", wire::to_string(d.error)));
      return;
    }
    if (ev.remote_qpn != 0)
      c.remote_qpn = ev.remote_qpn;
    c.peer_mtu = d.data.mtu;
    if (auto pit = peers_.find(c.peer); pit != peers_.end()) {
      pit->second.incarnation = d.data.incarnation;
      pit->second.overlay = d.data.overlay;
    }
    established(c);
  }

  void established(Conn& c) {
    set_state(c, QpState::kEstablished, c.active ? "REP received" : "RTU received");
    set_deadline(c, TimePoint::max());
    c.last_activity = now();
    ++ctr_.connects_established;
    auto f = fields(c);
    f.message_id = log::kMsgPeerConnected;
    log::event(spdlog::level::info, f, "connected to peer {} (node {:#x}) QPN {} <-> {}",
               c.peer_addr.to_string(), c.peer, c.qpn, c.remote_qpn);
    auto pit = peers_.find(c.peer);
    if (pit == peers_.end())
      return;
    Peer& p = pit->second;
    p.attempts = 0;
    if (!c.in_service) {
      // An abandoned attempt that got through anyway (REP crossed our REJ): not needed.
      teardown(c, TeardownKind::kGraceful, "superseded attempt");
      return;
    }
    flush_queue(p, c);
  }

  void attempt_failed(Conn& c, std::string reason) {
    ++ctr_.connect_failures;
    const bool was_in_service = c.in_service;
    auto pit = peers_.find(c.peer);
    auto f = fields(c);
    log::event(spdlog::level::warn, f, "connection attempt to {} failed: {}",
               c.peer_addr.to_string(), reason);
    teardown(c, TeardownKind::kHard, std::move(reason));
    if (!was_in_service || pit == peers_.end())
      return;
    Peer& p = pit->second;
    if (p.queue.empty() || shutting_down_ || !link_up_)
      return;
    if (++p.attempts <= cfg_.connect_retries) {
      start_connect(p);
    } else {
      p.attempts = 0;
      drop_queue(p, ctr_.drops_connect_failed);
    }
  }

  void retry_later(Peer& p, Duration after) {
    if (p.retry_at != TimePoint::max())
      peer_retry_.erase({p.retry_at, p.node});
    p.retry_at = now() + after;
    peer_retry_.insert({p.retry_at, p.node});
  }

  void handle_rej(Conn& c, const rdma::CmEvent& ev) {
    ++ctr_.rejects_received;
    const auto d = wire::decode(ev.private_data, wire::Kind::kRej);
    std::string why;
    wire::RejectReason reason = wire::RejectReason::kNone;
    if (d.ok) {
      reason = d.data.reason;
      why = fmt::format("REJ {}", wire::to_string(reason));
    } else {
      why = fmt::format("REJ status {} without rcnet private data", ev.status);
    }
    if (!c.in_service) {  // an attempt we already abandoned
      teardown(c, TeardownKind::kHard, why);
      return;
    }
    auto pit = peers_.find(c.peer);
    if (reason == wire::RejectReason::kCollision || reason == wire::RejectReason::kDuplicate) {
      // The peer's own attempt wins (or it still holds a connection to us):
      // keep the queue; its REQ is on its way. If it never comes, retry.
      teardown(c, TeardownKind::kHard, why);
      if (pit != peers_.end() && ++pit->second.attempts <= cfg_.connect_retries + 1) {
        retry_later(pit->second, reason == wire::RejectReason::kCollision ? kCollisionBackoff
                                                                          : cfg_.reaper_interval);
      } else if (pit != peers_.end()) {
        drop_queue(pit->second, ctr_.drops_connect_failed);
      }
      return;
    }
    ++ctr_.connect_failures;
    auto f = fields(c);
    log::event(spdlog::level::warn, f, "peer {} rejected our REQ: {}", c.peer_addr.to_string(),
               why);
    teardown(c, TeardownKind::kHard, why);
    if (pit != peers_.end())
      drop_queue(pit->second, ctr_.drops_connect_failed);
  }

  void reject(rdma::CmIdHandle id, wire::RejectReason reason, const Endpoint& from,
              std::string_view detail) {
    const auto pd = wire::encode(my_pd(wire::Kind::kRej, reason));
    (void)seam_.reject(id, pd);
    switch (reason) {
      case wire::RejectReason::kCollision:
        ++ctr_.rejects_sent_collision;
        break;
      case wire::RejectReason::kDuplicate:
        ++ctr_.rejects_sent_duplicate;
        break;
      case wire::RejectReason::kFull:
        ++ctr_.rejects_sent_full;
        break;
      case wire::RejectReason::kVersion:
        ++ctr_.rejects_sent_version;
        break;
      case wire::RejectReason::kNotAllowed:
        ++ctr_.rejects_sent_not_allowed;
        break;
      case wire::RejectReason::kShuttingDown:
        ++ctr_.rejects_sent_shutting_down;
        break;
      case wire::RejectReason::kMalformed:
        ++ctr_.rejects_sent_malformed;
        break;
      case wire::RejectReason::kNone:
        break;
    }
    log::Fields f;
    f.peer_addr = from.to_string();
    f.reason = std::string(wire::to_string(reason));
    log::event(reason == wire::RejectReason::kMalformed ? spdlog::level::warn : spdlog::level::info,
               f, "REJ {} to REQ from {}: {}", wire::to_string(reason), from.to_string(), detail);
    defer_destroy_id(id);
  }

  bool allowed(const IpAddr& a) const {
    if (cfg_.allowed_peers.empty())
      return true;
    return std::any_of(cfg_.allowed_peers.begin(), cfg_.allowed_peers.end(),
                       [&](const IpPrefix& p) { return p.contains(a); });
  }

  void handle_req(const rdma::CmEvent& ev) {
    ++ctr_.cm_ids_created;  // the passive id is ours from now on
    const auto d = wire::decode(ev.private_data, wire::Kind::kReq);
    if (!d.ok) {
      ++ctr_.malformed_private_data;
      reject(ev.id,
             d.error == wire::DecodeError::kBadVersion ? wire::RejectReason::kVersion
                                                       : wire::RejectReason::kMalformed,
             ev.src, fmt::format("malformed REQ private data: {}", wire::to_string(d.error)));
      return;
    }
    if (shutting_down_ || !link_up_) {
      reject(ev.id, wire::RejectReason::kShuttingDown, ev.src,
             shutting_down_ ? "shutting down" : "underlay link down");
      return;
    }
    if (!allowed(ev.src.addr)) {
      reject(ev.id, wire::RejectReason::kNotAllowed, ev.src,
             "source outside the allowed peer subnets");
      return;
    }
    const NodeId node = d.data.node_id;
    if (node != node_id_for(ev.src.addr) || node == self_) {
      ++ctr_.malformed_private_data;
      reject(ev.id, wire::RejectReason::kMalformed, ev.src,
             fmt::format("node id {:#x} does not match source address", node));
      return;
    }
    Peer& p = peer_for(node, Endpoint{ev.src.addr, cfg_.local.port});
    if (Conn* cur = p.conn ? find(p.conn) : nullptr) {
      if (cur->state == QpState::kEstablished || cur->state == QpState::kAccepting) {
        if (p.incarnation == d.data.incarnation) {
          reject(ev.id, wire::RejectReason::kDuplicate, ev.src,
                 "already connected to this incarnation");
          return;
        }
        ++ctr_.restarts_detected;
        auto f = fields(*cur);
        f.message_id = log::kMsgRestartDetected;
        f.reason = "peer restarted";
        log::event(spdlog::level::warn, f,
                   "peer {} restarted (incarnation {:#x} -> {:#x}): reaping QPN {} now",
                   p.underlay.to_string(), p.incarnation, d.data.incarnation, cur->qpn);
        teardown(*cur, TeardownKind::kHard, "peer restarted", log::kMsgRestartDetected);
      } else {
        // Simultaneous open: both sides have an attempt pending. The attempt
        // made by the lower node id wins (DESIGN.md).
        if (self_ < node) {
          reject(ev.id, wire::RejectReason::kCollision, ev.src,
                 "simultaneous open: our attempt wins");
          return;
        }
        ++ctr_.collisions_merged;
        auto f = fields(*cur);
        f.message_id = log::kMsgCollisionMerged;
        log::event(spdlog::level::info, f,
                   "simultaneous open with {}: accepting its REQ, abandoning ours",
                   p.underlay.to_string());
        leave_service(*cur);
        if (cur->state == QpState::kResolvingAddr || cur->state == QpState::kResolvingRoute) {
          teardown(*cur, TeardownKind::kHard, "collision: peer's attempt wins");
        }
        // A CONNECTING attempt waits for the peer's REJ collision (bounded by connect_timeout).
      }
    }
    if (p.retry_at != TimePoint::max()) {
      peer_retry_.erase({p.retry_at, p.node});
      p.retry_at = TimePoint::max();
    }
    if (!make_room()) {
      reject(ev.id, wire::RejectReason::kFull, ev.src,
             "max_connections reached, nothing evictable");
      return;
    }
    p.incarnation = d.data.incarnation;
    p.overlay = d.data.overlay;
    Conn& c = new_conn(p, false);
    c.cm_id = ev.id;
    c.remote_qpn = ev.remote_qpn;
    c.peer_mtu = d.data.mtu;
    by_cm_id_[c.cm_id] = c.id;
    make_in_service(p, c);
    ++ctr_.accepts;
    if (auto r = create_qp(c); !r) {
      attempt_failed(c, "create QP: " + r.error().message());
      return;
    }
    const auto pd = wire::encode(my_pd(wire::Kind::kRep));
    if (auto r = seam_.accept(c.cm_id, params(pd)); !r) {
      attempt_failed(c, "rdma_accept: " + r.error().message());
      return;
    }
    // A passive conn is born in ACCEPTING (there is no earlier state to leave).
    auto f = fields(c);
    log::event(spdlog::level::debug, f, "QPN {} peer {}: REQ accepted, REP sent", c.qpn,
               c.peer_addr.to_string());
    set_deadline(c, now() + cfg_.connect_timeout);
  }

  void ignore_cm(Conn& c, const rdma::CmEvent& ev) {
    ++ctr_.cm_events_ignored;
    spdlog::debug("ignored rdma_cm event {} for QPN {} in {}", rdma::to_string(ev.type), c.qpn,
                  to_string(c.state));
    reschedule();
  }

  // ================================================================ teardown
  void teardown(Conn& c, TeardownKind kind, std::string reason, std::string_view msg_id = {}) {
    if (is_teardown(c.state))
      return;  // one teardown per QP
    leave_service(c);
    c.teardown_reason = std::move(reason);
    auto f = fields(c);
    f.message_id = !msg_id.empty()                    ? msg_id
                   : c.state == QpState::kEstablished ? log::kMsgPeerDisconnected
                                                      : std::string_view{};
    log::event(spdlog::level::info, f, "tearing down QPN {} to {}: {}", c.qpn,
               c.peer_addr.to_string(), c.teardown_reason);
    if (!c.qp_created) {
      // Never got a QP (still resolving): only the id to release.
      set_deadline(c, TimePoint::max());
      set_state(c, QpState::kDestroyed, "no QP");
      finish(c);
      return;
    }
    const bool was_established = c.state == QpState::kEstablished;
    if (was_established && kind != TeardownKind::kHard) {
      (void)seam_.disconnect(c.cm_id);  // DREQ (or DREP when the peer sent DREQ)
      set_state(c, QpState::kDisconnecting,
                kind == TeardownKind::kRemote ? "DREQ received, DREP sent" : "DREQ sent");
      if (kind == TeardownKind::kRemote || c.disconnected_seen) {
        to_error(c);
      } else {
        set_deadline(c, now() + cfg_.disconnect_timeout);
      }
      return;
    }
    if (was_established)
      (void)seam_.disconnect(c.cm_id);  // tell a live peer; harmless for a dead one
    to_error(c);
  }

  // IB spec 10.3.1 step 1: move the QP to Error, then wait for Last WQE Reached
  // (SRQ) or for every receive WR to flush (own RQ).
  void to_error(Conn& c) {
    set_deadline(c, TimePoint::max());
    if (auto r = seam_.modify_qp_to_error(c.cm_id); !r) {
      auto f = fields(c);
      log::event(spdlog::level::err, f, "ibv_modify_qp(ERR) QPN {}: {}", c.qpn,
                 r.error().message());
    }
    set_state(c, QpState::kError, "modified to IBV_QPS_ERR");
    if (c.last_wqe_seen || (!cfg_.use_srq && c.rq_posted == 0)) {
      post_drain(c);
      return;
    }
    set_state(c, QpState::kAwaitLastWqe,
              cfg_.use_srq ? "waiting for Last WQE Reached" : "waiting for RQ flush");
    set_deadline(c, now() + cfg_.last_wqe_timeout);
  }

  void on_last_wqe(rdma::Qpn qpn) {
    Conn* c = by_qpn(qpn);
    if (c == nullptr) {
      ++ctr_.async_events_ignored;
      return;
    }
    if (c->last_wqe_seen) {
      ++ctr_.async_events_ignored;  // duplicate
      return;
    }
    c->last_wqe_seen = true;
    ++ctr_.last_wqe_received;
    if (c->state == QpState::kAwaitLastWqe) {
      post_drain(*c);
    } else if (!is_teardown(c->state)) {
      // The QP went to Error on its own (FATAL, retry exceeded on some
      // devices): the same single teardown, with Last WQE already seen.
      teardown(*c, TeardownKind::kHard, "Last WQE Reached on a live QP");
    } else if (c->state == QpState::kDraining || c->state == QpState::kDestroyed) {
      ++ctr_.async_events_ignored;  // late
    }
    // kDisconnecting / kError: remembered; to_error() goes straight to the drain.
  }

  // IB spec 10.3.1 step 3: the drain WR completes after every earlier WR.
  void post_drain(Conn& c) {
    if (auto r = seam_.post_drain(c.cm_id, make_wr(kTagDrain, c.id)); !r) {
      auto f = fields(c);
      log::event(spdlog::level::err, f,
                 "posting the drain WR on QPN {} failed: {}: destroying it now", c.qpn,
                 r.error().message());
      ++ctr_.forced_destroys;
      destroy_qp(c, "drain WR could not be posted");
      return;
    }
    set_state(c, QpState::kDraining, "drain WR posted");
    set_deadline(c, now() + cfg_.drain_timeout);
  }

  void on_deadline(Conn& c) {
    switch (c.state) {
      case QpState::kResolvingAddr:
      case QpState::kResolvingRoute:
        attempt_failed(c, "address/route resolution timed out");
        break;
      case QpState::kConnecting:
      case QpState::kAccepting:
        attempt_failed(c, "connect_timeout: not ESTABLISHED in time");
        break;
      case QpState::kDisconnecting:
        to_error(c);
        break;
      case QpState::kAwaitLastWqe: {
        ++ctr_.last_wqe_timeouts;
        auto f = fields(c);
        f.message_id = log::kMsgLastWqeTimeout;
        log::event(spdlog::level::info, f,
                   "QPN {}: no Last WQE Reached within last_wqe_timeout {:.0f} ms: posting the "
                   "drain WR anyway",
                   c.qpn, to_ms(cfg_.last_wqe_timeout));
        post_drain(c);
        break;
      }
      case QpState::kDraining: {
        ++ctr_.drain_timeouts;
        ++ctr_.forced_destroys;
        auto f = fields(c);
        f.message_id = log::kMsgForcedDestroy;
        log::event(spdlog::level::err, f,
                   "QPN {}: drain WR did not complete within drain_timeout {:.0f} ms: destroying "
                   "the QP anyway",
                   c.qpn, to_ms(cfg_.drain_timeout));
        destroy_qp(c, "drain_timeout");
        break;
      }
      default:
        break;
    }
  }

  void destroy_qp(Conn& c, std::string_view why) {
    set_deadline(c, TimePoint::max());
    // Sends not known complete: their slots are ours again (stale completions
    // are recognised by QPN and ignored).
    for (const auto& e : c.sends) {
      if (wr_tag(e.wr_id) == kTagSend)
        free_slot(static_cast<std::uint32_t>(wr_low(e.wr_id)));
    }
    c.sends.clear();
    if (auto r = seam_.destroy_qp(c.cm_id); !r) {
      auto f = fields(c);
      log::event(spdlog::level::err, f, "rdma_destroy_qp QPN {}: {}", c.qpn, r.error().message());
    }
    c.qp_destroyed = true;
    ++ctr_.qps_destroyed;
    qpn_to_conn_.erase(c.qpn);
    c.rq.reset();
    set_state(c, QpState::kDestroyed, why);
    finish(c);
  }

  // QP gone: release the id (deferred) and forget the conn.
  void finish(Conn& c) {
    if (c.cm_id != rdma::kNoCmId) {
      by_cm_id_.erase(c.cm_id);
      defer_destroy_id(c.cm_id);
      c.cm_id = rdma::kNoCmId;
    }
    set_deadline(c, TimePoint::max());
    forget_candidates_.push_back(c.peer);
    conns_.erase(c.id);  // `c` is dangling from here on
  }

  void defer_destroy_id(rdma::CmIdHandle id) { pending_id_destroy_.push_back(id); }

  // A peer with no connection, nothing queued and no retry pending is
  // forgotten, so a node that talked to many peers over time does not keep
  // them all. Runs from on_timer() only: no caller holds a Peer& there.
  void forget_idle_peers() {
    for (const NodeId node : forget_candidates_) {
      auto it = peers_.find(node);
      if (it == peers_.end())
        continue;
      const Peer& p = it->second;
      if (p.conn == 0 && p.queue.empty() && p.retry_at == TimePoint::max() && !p.blocked) {
        peers_.erase(it);
      }
    }
    forget_candidates_.clear();
  }

  void destroy_id_now(rdma::CmIdHandle id) {
    if (auto r = seam_.destroy_id(id); !r) {
      spdlog::error("rdma_destroy_id {}: {}", id, r.error().message());
    }
    ++ctr_.cm_ids_destroyed;
  }

  void device_lost(const std::string& why) {
    spdlog::critical("RDMA device failure ({}): tearing every connection down", why);
    std::vector<Conn*> all;
    for (auto& [id, c] : conns_)
      all.push_back(c.get());
    for (Conn* c : all) {
      if (!is_teardown(c->state))
        teardown(*c, TeardownKind::kHard, why);
    }
  }

  // ================================================================ data path
  void arm_srq_limit() {
    if (auto r = seam_.arm_srq_limit(cfg_.srq_limit); !r) {
      spdlog::warn("arming the SRQ limit: {}", r.error().message());
      return;
    }
    srq_limit_armed_ = true;
  }

  void free_slot(std::uint32_t slot) {
    slot_owner_[slot] = 0;
    send_pool_.give(slot);
  }

  bool post_packet(Conn& c, std::span<const std::byte> packet) {
    if (c.sends.size() + 2 >= cfg_.qp_send_depth)
      return false;  // room for fence + drain
    auto slot = send_pool_.take();
    if (!slot)
      return false;
    std::memcpy(send_pool_.data(*slot), packet.data(), packet.size());
    const bool scarce = send_pool_.free_count() < send_pool_.count() / 4;
    const bool signaled = scarce || ++c.unsignaled_run >= cfg_.signal_every;
    if (signaled)
      c.unsignaled_run = 0;
    const std::uint64_t wr = make_wr(kTagSend, *slot);
    if (auto r = seam_.post_send(c.cm_id, wr,
                                 send_pool_.sge(*slot, static_cast<std::uint32_t>(packet.size())),
                                 kImmData, signaled);
        !r) {
      send_pool_.give(*slot);
      ++ctr_.send_errors;
      auto f = fields(c);
      log::event(spdlog::level::warn, f, "ibv_post_send QPN {}: {}", c.qpn, r.error().message());
      return true;  // consumed (dropped); do not retry this packet
    }
    slot_owner_[*slot] = c.id;
    c.sends.push_back({wr, signaled});
    ++c.tx_packets;
    c.tx_bytes += packet.size();
    ++ctr_.packets_tx;
    ctr_.bytes_tx += packet.size();
    c.last_activity = now();
    return true;
  }

  // A zero-length signaled control SEND: completes the unsignaled tail of an
  // idle QP so its send slots come back.
  void post_fence(Conn& c) {
    const std::uint64_t wr = make_wr(kTagFence, c.id);
    if (!seam_.post_send(c.cm_id, wr, send_pool_.sge(0, 0), kImmControl, true))
      return;
    c.sends.push_back({wr, true});
    c.unsignaled_run = 0;
  }

  void flush_queue(Peer& p, Conn& c) {
    while (!p.queue.empty()) {
      const auto& pkt = p.queue.front();
      if (pkt.size() > c.peer_mtu) {
        ++ctr_.drops_oversize;
        p.queue.pop_front();
        continue;
      }
      if (!post_packet(c, pkt)) {
        mark_blocked(p);
        return;
      }
      p.queue.pop_front();
    }
  }

  void mark_blocked(Peer& p) {
    if (!p.blocked) {
      p.blocked = true;
      blocked_.push_back(p.node);
    }
    if (capacity_) {
      capacity_ = false;
      sink_.send_capacity(false);
    }
  }

  void unblock() {
    // Each blocked peer gets one turn; one whose QP's SQ is still full goes
    // to the back and waits for the next batch of completions.
    for (std::size_t turns = blocked_.size();
         turns > 0 && !blocked_.empty() && send_pool_.free_count() > 0; --turns) {
      const NodeId node = blocked_.front();
      auto pit = peers_.find(node);
      if (pit == peers_.end()) {
        blocked_.pop_front();
        continue;
      }
      Peer& p = pit->second;
      Conn* c = p.conn ? find(p.conn) : nullptr;
      if (c == nullptr || c->state != QpState::kEstablished) {
        p.blocked = false;
        blocked_.pop_front();
        continue;
      }
      p.blocked = false;
      blocked_.pop_front();
      flush_queue(p, *c);  // may re-block it at the back
    }
    if (blocked_.empty() && !capacity_ && send_pool_.free_count() > 0) {
      capacity_ = true;
      sink_.send_capacity(true);
    }
  }

  // Signaled completion `wr` on conn `c`: it and every WR before it are done.
  void complete_sends(Conn& c, std::uint64_t wr) {
    auto it = std::find_if(c.sends.begin(), c.sends.end(),
                           [&](const SendEntry& e) { return e.wr_id == wr; });
    if (it == c.sends.end())
      return;
    ++it;
    for (auto i = c.sends.begin(); i != it; ++i) {
      if (wr_tag(i->wr_id) == kTagSend)
        free_slot(static_cast<std::uint32_t>(wr_low(i->wr_id)));
    }
    c.sends.erase(c.sends.begin(), it);
  }

  void on_send_error(Conn& c, const rdma::WorkCompletion& wc) {
    if (wc.status == rdma::WcStatus::kFlushErr || is_teardown(c.state))
      return;
    if (wc.status == rdma::WcStatus::kRetryExceeded ||
        wc.status == rdma::WcStatus::kRnrRetryExceeded) {
      ++ctr_.dead_peer_reaps;
      auto pit = peers_.find(c.peer);
      if (pit != peers_.end())
        drop_queue(pit->second, ctr_.drops_connect_failed);
      teardown(c, TeardownKind::kHard,
               fmt::format("send completion {}: peer unreachable", rdma::to_string(wc.status)),
               log::kMsgReapedDead);
      return;
    }
    ++ctr_.send_errors;
    teardown(c, TeardownKind::kHard, fmt::format("send completion {}", rdma::to_string(wc.status)));
  }

  void on_wc(const rdma::WorkCompletion& wc) {
    const std::uint64_t low = wr_low(wc.wr_id);
    switch (wr_tag(wc.wr_id)) {
      case kTagSrqRecv: {
        const auto idx = static_cast<std::uint32_t>(low);
        if (idx >= srq_pool_.count()) {
          ++ctr_.completions_ignored;
          return;
        }
        --srq_posted_;
        if (wc.status == rdma::WcStatus::kSuccess) {
          receive(by_qpn(wc.qpn), wc, srq_pool_.data(idx));
        } else if (wc.status != rdma::WcStatus::kFlushErr) {
          ++ctr_.recv_errors;
        }
        srq_reposts_.push_back(idx);
        return;
      }
      case kTagQpRecv: {
        Conn* c = find(low >> 20);
        if (c == nullptr || c->rq == nullptr || c->qpn != wc.qpn) {
          ++ctr_.completions_ignored;
          return;
        }
        const auto idx = static_cast<std::uint32_t>(low & 0xFFFFF);
        --c->rq_posted;
        if (wc.status == rdma::WcStatus::kSuccess) {
          receive(c, wc, c->rq->data(idx));
          if (!is_teardown(c->state)) {
            const std::uint64_t id = make_wr(kTagQpRecv, (c->id << 20) | idx);
            const rdma::Sge sge = c->rq->sge(idx);
            if (seam_.post_qp_recv(c->cm_id, std::span(&id, 1), std::span(&sge, 1)))
              ++c->rq_posted;
          }
        } else {
          if (wc.status == rdma::WcStatus::kFlushErr) {
            ++ctr_.flushed_recvs_counted;
          } else {
            ++ctr_.recv_errors;
          }
        }
        if (c->state == QpState::kAwaitLastWqe && c->rq_posted == 0)
          post_drain(*c);
        return;
      }
      case kTagSend: {
        const auto slot = static_cast<std::uint32_t>(low);
        if (slot >= slot_owner_.size()) {
          ++ctr_.completions_ignored;
          return;
        }
        Conn* c = find(slot_owner_[slot]);
        if (c == nullptr || c->qpn != wc.qpn) {
          ++ctr_.completions_ignored;  // stale: its QP is gone and the slot reclaimed
          return;
        }
        complete_sends(*c, wc.wr_id);
        if (wc.status != rdma::WcStatus::kSuccess)
          on_send_error(*c, wc);
        return;
      }
      case kTagFence: {
        Conn* c = find(low);
        if (c == nullptr || c->qpn != wc.qpn) {
          ++ctr_.completions_ignored;
          return;
        }
        complete_sends(*c, wc.wr_id);
        if (wc.status != rdma::WcStatus::kSuccess)
          on_send_error(*c, wc);
        return;
      }
      case kTagDrain: {
        Conn* c = find(low);
        if (c == nullptr || c->state != QpState::kDraining) {
          ++ctr_.completions_ignored;
          return;
        }
        ++ctr_.drains_completed;
        destroy_qp(*c, fmt::format("drain WR completed ({})", rdma::to_string(wc.status)));
        return;
      }
      default:
        ++ctr_.completions_ignored;
        return;
    }
  }

  void receive(Conn* c, const rdma::WorkCompletion& wc, const std::byte* data) {
    if (!wc.has_imm || wc.imm != kImmData)
      return;  // control (fence) or foreign
    if (wc.byte_len == 0 || wc.byte_len > buf_size_) {
      ++ctr_.recv_errors;
      return;
    }
    ++ctr_.packets_rx;
    ctr_.bytes_rx += wc.byte_len;
    NodeId from = 0;
    if (c != nullptr) {
      ++c->rx_packets;
      c->rx_bytes += wc.byte_len;
      c->last_activity = now();
      from = c->peer;
    }
    sink_.deliver(from, std::span<const std::byte>(data, wc.byte_len));
  }

  void flush_srq_reposts() {
    if (srq_reposts_.empty())
      return;
    auto& ids = repost_ids_;  // reused: no allocation per batch
    auto& sges = repost_sges_;
    ids.clear();
    sges.clear();
    for (auto idx : srq_reposts_) {
      ids.push_back(make_wr(kTagSrqRecv, idx));
      sges.push_back(srq_pool_.sge(idx));
    }
    if (auto r = seam_.post_srq_recv(ids, sges); !r) {
      spdlog::error("ibv_post_srq_recv of {} buffers: {}", ids.size(), r.error().message());
    } else {
      srq_posted_ += static_cast<std::uint32_t>(ids.size());
    }
    srq_reposts_.clear();
    if (!srq_limit_armed_ && srq_posted_ >= cfg_.srq_limit)
      arm_srq_limit();
  }

  void reap_tick(TimePoint t) {
    for (Conn* c : established_conns()) {
      if (t - c->last_activity >= cfg_.idle_timeout) {
        ++ctr_.idle_reaps;
        teardown(*c, TeardownKind::kGraceful,
                 fmt::format("idle for {:.0f} ms (idle_timeout {:.0f} ms)",
                             to_ms(t - c->last_activity), to_ms(cfg_.idle_timeout)),
                 log::kMsgReapedIdle);
      } else if (!c->sends.empty() && !c->sends.back().signaled) {
        post_fence(*c);
      }
    }
  }

  // ================================================================ state
  ManagerConfig cfg_;
  rdma::Seam& seam_;
  TimerService& timers_;
  PacketSink& sink_;
  NodeId self_ = 0;
  rdma::DeviceInfo device_;
  std::uint32_t buf_size_ = 0;
  bool started_ = false;
  bool shutting_down_ = false;
  bool link_up_ = true;
  bool capacity_ = true;

  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<rdma::CmIdHandle, std::uint64_t> by_cm_id_;
  std::unordered_map<rdma::Qpn, std::uint64_t> qpn_to_conn_;
  std::unordered_map<NodeId, Peer> peers_;
  std::set<std::pair<TimePoint, std::uint64_t>> deadlines_;
  std::set<std::pair<TimePoint, NodeId>> peer_retry_;
  std::vector<rdma::CmIdHandle> pending_id_destroy_;
  std::deque<NodeId> blocked_;
  std::uint64_t next_conn_id_ = 1;
  std::size_t in_service_ = 0;   // conns that are their peer's connection
  std::size_t established_ = 0;  // conns in ESTABLISHED
  TimePoint next_reap_ = TimePoint::max();
  TimePoint scheduled_ = TimePoint::max();

  BufferPool send_pool_;
  std::vector<std::uint64_t> slot_owner_;  // send slot → conn id (0 = free)
  BufferPool srq_pool_;
  std::vector<std::uint32_t> srq_reposts_;
  std::vector<std::uint64_t> repost_ids_;
  std::vector<rdma::Sge> repost_sges_;
  std::vector<NodeId> forget_candidates_;  // peers whose conn ended
  std::uint32_t srq_posted_ = 0;
  bool srq_limit_armed_ = false;
  std::uint64_t srq_limit_events_ = 0;

  Counters ctr_;
};

// ================================================================ Manager
Manager::Manager(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink)
    : impl_(std::make_unique<Impl>(std::move(cfg), seam, timers, sink)) {}
Manager::~Manager() = default;
Result<void> Manager::start() {
  return impl_->start();
}
SendResult Manager::send(const Endpoint& peer, std::span<const std::byte> packet) {
  return impl_->send(peer, packet);
}
void Manager::on_cm_event(const rdma::CmEvent& ev) {
  impl_->on_cm_event(ev);
}
void Manager::on_async_event(const rdma::AsyncEvent& ev) {
  impl_->on_async_event(ev);
}
void Manager::on_completions(std::span<const rdma::WorkCompletion> wcs) {
  impl_->on_completions(wcs);
}
void Manager::on_timer() {
  impl_->on_timer();
}
void Manager::peer_failed(const IpAddr& peer, std::string_view why) {
  impl_->peer_failed(peer, why);
}
void Manager::link_changed(bool up) {
  impl_->link_changed(up);
}
bool Manager::disconnect_peer(NodeId node, std::string_view why) {
  return impl_->disconnect_peer(node, why);
}
std::size_t Manager::reap_idle(Duration idle) {
  return impl_->reap_idle(idle);
}
void Manager::reconfigure(const ManagerConfig& cfg) {
  impl_->reconfigure(cfg);
}
void Manager::shutdown() {
  impl_->shutdown();
}
bool Manager::stopped() const {
  return impl_->stopped();
}
Snapshot Manager::snapshot() const {
  return impl_->snapshot();
}
const Counters& Manager::counters() const {
  return impl_->counters();
}
const ManagerConfig& Manager::config() const {
  return impl_->config();
}
NodeId Manager::node_id() const {
  return impl_->node_id();
}
std::vector<rdma::Qpn> Manager::live_qpns() const {
  return impl_->live_qpns();
}
std::size_t Manager::live_cm_ids() const {
  return impl_->live_cm_ids();
}

}  // namespace rcnet::cm
