// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fault injection: the rules of Faults, the faults injected directly into a
// node, and how a matching rule changes the delivery of one CM or async
// event (drop, duplicate, delay, reorder).
#include <algorithm>
#include <utility>

#include "sim/internal.hpp"

namespace rcnet::sim {

// --- Faults -------------------------------------------------------------------

void Faults::cm(FaultAction action, rdma::CmEventType type, std::uint32_t count,
                std::optional<IpAddr> node, Duration delay) {
  rules_.push_back(Rule{true, action, static_cast<std::uint8_t>(type), node, count, delay});
}

void Faults::async(FaultAction action, rdma::AsyncEventType type, std::uint32_t count,
                   std::optional<IpAddr> node, Duration delay) {
  rules_.push_back(Rule{false, action, static_cast<std::uint8_t>(type), node, count, delay});
}

void Faults::clear() {
  rules_.clear();
  rtu_losses_.clear();
}

void Faults::lose_rtu(const IpAddr& passive, std::uint32_t count) {
  rtu_losses_.emplace_back(passive, count);
}

bool Faults::take_rtu_loss(const IpAddr& passive) {
  for (auto it = rtu_losses_.begin(); it != rtu_losses_.end(); ++it) {
    if (it->first == passive && it->second > 0) {
      if (--it->second == 0)
        rtu_losses_.erase(it);
      return true;
    }
  }
  return false;
}

const Faults::Rule* Faults::match(bool cm, std::uint8_t type, const IpAddr& node) {
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->cm != cm || it->type != type || it->remaining == 0)
      continue;
    if (it->node && *it->node != node)
      continue;
    last_ = *it;
    if (--it->remaining == 0)
      rules_.erase(it);
    return &last_;
  }
  return nullptr;
}

SimNode::Impl* Faults::live(const IpAddr& a) {
  SimNode* n = fabric_.node(a);
  if (n == nullptr || !n->impl().up)
    return nullptr;
  return &n->impl();
}

bool Faults::inject_qp_fatal(const IpAddr& node, rdma::Qpn qpn) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || !n->qps.contains(qpn))
    return false;
  n->qp_to_error(n->qps.at(qpn));
  // An injected fault is reported on every profile, rxe included.
  n->emit_async(n->fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kQpFatal, qpn});
  return true;
}

bool Faults::inject_device_fatal(const IpAddr& node) {
  SimNode::Impl* n = live(node);
  if (n == nullptr)
    return false;
  // The device's: every port's QPs die and every port hears it (librdmacm
  // gives the ports one context, one async fd).
  n->dev->lost = n->dev->open_ports > 0;
  for (SimNode::Impl* p : n->dev->ports) {
    p->fab.trace(p->addr, "DEVICE FATAL");
    for (auto& [qpn, qp] : p->qps)
      p->qp_to_error(qp);
    p->emit_async(p->fab.timing.async, rdma::AsyncEvent{rdma::AsyncEventType::kDeviceFatal, 0});
  }
  return true;
}

bool Faults::inject_send_error(const IpAddr& node, rdma::Qpn qpn, rdma::WcStatus status) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || !n->qps.contains(qpn))
    return false;
  SimQp& qp = n->qps.at(qpn);
  if (qp.state == QpStateSim::kErr)
    return true;
  if (!qp.sq.empty()) {
    n->fail_head(qp, status);
  } else {
    qp.fail_next_send = status;
  }
  return true;
}

bool Faults::inject_last_wqe(const IpAddr& node, rdma::Qpn qpn) {
  SimNode::Impl* n = live(node);
  if (n == nullptr)
    return false;
  n->later(n->fab.timing.async, [n, qpn] {
    n->deliver_async(rdma::AsyncEvent{rdma::AsyncEventType::kLastWqeReached, qpn});
  });
  return true;
}

void Faults::starve_receives(const IpAddr& node, bool on) {
  if (SimNode* n = fabric_.node(node))
    n->impl().starved = on;
}

void Faults::hold_cm_channel(const IpAddr& node, bool on) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || n->cm_channel_held == on)
    return;
  n->cm_channel_held = on;
  if (!on && !n->cm_backlog.empty() && n->fab.timing.cm_event_cost > 0ns) {
    n->read_cm_later();  // read at the owner's pace
  } else if (!on && !n->cm_backlog.empty()) {
    n->later(0ns, [n] {
      // Delivered one by one; an event the sink causes is queued behind.
      while (!n->cm_backlog.empty() && !n->cm_channel_held) {
        auto [ev, injected] = std::move(n->cm_backlog.front());
        n->cm_backlog.pop_front();
        n->deliver_cm(ev, injected);
      }
    });
  }
}

void Faults::partition(const IpAddr& a, const IpAddr& b, bool cut) {
  auto key = std::minmax(a, b);
  if (cut)
    fabric_.impl().cut.insert(key);
  else
    fabric_.impl().cut.erase(key);
}

void Faults::isolate(const IpAddr& node, bool cut) {
  if (cut)
    fabric_.impl().isolated.insert(node);
  else
    fabric_.impl().isolated.erase(node);
}

bool Faults::port_down(const IpAddr& node, bool down, std::uint8_t port) {
  SimNode::Impl* n = live(node);
  if (n == nullptr)
    return false;
  const bool several = n->dev->ports.size() > 1;
  if (several)
    port = n->port_num;
  n->fab.trace(n->addr, "PORT {} {}", port, down ? "DOWN" : "UP");
  // Port 1 is the host's own port; another number is the event a second
  // port of the same HCA would raise: no effect on this host's traffic.
  // A port of a device of several is the node itself.
  if (port == 1 || several)
    isolate(node, down);
  rdma::AsyncEvent ev{down ? rdma::AsyncEventType::kPortError : rdma::AsyncEventType::kPortActive,
                      0};
  ev.port = port;
  for (SimNode::Impl* p : n->dev->ports) {
    if (p->up)
      p->emit_async(p->fab.timing.async, ev);
  }
  return true;
}

void Faults::crash(const IpAddr& node) {
  if (SimNode* n = fabric_.node(node))
    n->crash();
}

void Faults::remove_device(const IpAddr& node) {
  SimNode::Impl* n = live(node);
  if (n == nullptr || n->device_removed)
    return;
  // The device goes with every port of it.
  n->dev->lost = n->dev->open_ports > 0;
  for (SimNode::Impl* p : n->dev->ports) {
    p->fab.trace(p->addr, "DEVICE REMOVED");
    p->device_removed = true;
    for (auto& [qpn, qp] : p->qps)
      p->qp_to_error(qp);
    for (const auto& [h, id] : p->ids) {
      rdma::CmEvent ev;
      ev.type = rdma::CmEventType::kDeviceRemoval;
      ev.id = h;
      p->emit_cm(0ns, ev);
    }
  }
}

void Faults::restore_device(const IpAddr& node) {
  if (SimNode::Impl* n = live(node)) {
    for (SimNode::Impl* p : n->dev->ports) {
      p->fab.trace(p->addr, "DEVICE RESTORED");
      p->device_removed = false;
    }
  }
}

void Faults::cq_overflow(const IpAddr& node) {
  if (SimNode::Impl* n = live(node))
    n->overflow_cq();
}

void Faults::drop_drain_completion(const IpAddr& node, rdma::Qpn qpn) {
  if (SimNode* n = fabric_.node(node))
    n->impl().drop_drain.insert(qpn);
}

// --- Delivery-time fault rules --------------------------------------------------

// One fault rule applied to one event; the same for CM and async events.
// `deliver(injected)` hands the event to the sink; injected copies (the
// duplicate, the delayed or reordered one) are never matched by a rule again.
void SimNode::Impl::apply_fault(const Faults::Rule& r, Duration d, bool cm,
                                std::function<void(bool injected)> deliver, FaultCounters n) {
  switch (r.action) {
    case FaultAction::kDrop:
      ++*n.dropped;
      return;
    case FaultAction::kDuplicate:
      ++*n.duplicated;
      later(d, [deliver] { deliver(false); });
      later(d, [deliver] { deliver(true); });
      return;
    case FaultAction::kDelay:
      ++*n.delayed;
      later(d + r.delay, [deliver] { deliver(true); });
      return;
    case FaultAction::kReorder: {
      ++*n.reordered;
      const std::uint64_t token = next_token++;
      later(d, [this, token, cm, deliver] {
        held.push_back(Held{token, cm, [deliver] { deliver(true); }});
        later(fab.timing.reorder_hold, [this, token] {
          auto it = std::find_if(held.begin(), held.end(),
                                 [token](const Held& h) { return h.token == token; });
          if (it == held.end())
            return;
          auto fn = std::move(it->deliver);
          held.erase(it);
          fn();
        });
      });
      return;
    }
  }
}

void SimNode::Impl::emit_cm(Duration d, rdma::CmEvent ev) {
  const Faults::Rule* r = fab.faults->match(true, static_cast<std::uint8_t>(ev.type), addr);
  auto deliver = [this, ev = std::move(ev)](bool injected) { deliver_cm(ev, injected); };
  if (r == nullptr) {
    later(d, [deliver] { deliver(false); });
    return;
  }
  apply_fault(*r, d, true, deliver,
              {&stats.cm_events_dropped, &stats.cm_events_duplicated, &stats.cm_events_delayed,
               &stats.cm_events_reordered});
}

void SimNode::Impl::emit_async(Duration d, rdma::AsyncEvent ev) {
  const Faults::Rule* r = fab.faults->match(false, static_cast<std::uint8_t>(ev.type), addr);
  auto deliver = [this, ev](bool) { deliver_async(ev); };
  if (r == nullptr) {
    later(d, [deliver] { deliver(false); });
    return;
  }
  apply_fault(*r, d, false, deliver,
              {&stats.async_events_dropped, &stats.async_events_duplicated,
               &stats.async_events_delayed, &stats.async_events_reordered});
}

// The node just delivered an event of this class: the reordered ones held
// for it go out now, behind it.
void SimNode::Impl::release_held(bool is_cm) {
  std::vector<std::function<void()>> out;
  for (auto it = held.begin(); it != held.end();) {
    if (it->cm == is_cm) {
      out.push_back(std::move(it->deliver));
      it = held.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : out)
    later(0ns, std::move(fn));
}

}  // namespace rcnet::sim
