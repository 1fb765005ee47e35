// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The fabric: the event queue on its virtual clock, Fabric::run_*, and the
// registry of nodes by underlay address.
#include <algorithm>
#include <utility>

#include "sim/internal.hpp"

namespace rcnet::sim {

// --- Fabric::Impl -------------------------------------------------------------

void Fabric::Impl::at(TimePoint t, std::function<void()> fn, bool is_timer,
                      const SimNode::Impl* owner, std::uint64_t life) {
  if (t < now)
    t = now;
  std::uint32_t slot = 0;
  if (free_slots.empty()) {
    slot = static_cast<std::uint32_t>(items.size());
    items.emplace_back();
  } else {
    slot = free_slots.back();
    free_slots.pop_back();
  }
  items[slot] = Item{is_timer, owner, life, std::move(fn)};
  queue.push_back(Key{t, seq++, slot});
  std::push_heap(queue.begin(), queue.end(), Later{});
  if (!is_timer)
    ++pending_events;
}

bool Fabric::Impl::step() {
  if (queue.empty())
    return false;
  std::pop_heap(queue.begin(), queue.end(), Later{});
  const Key key = queue.back();
  queue.pop_back();
  // Moved out first: fn may schedule more, which may reuse the slot.
  Item item = std::move(items[key.slot]);
  free_slots.push_back(key.slot);
  now = key.t;
  if (!item.is_timer)
    --pending_events;
  ++processed;
  if (item.owner == nullptr || (item.owner->up && item.owner->life == item.life))
    item.fn();
  return true;
}

// --- Fabric -------------------------------------------------------------------

Fabric::Fabric(std::uint64_t seed) : impl_(std::make_unique<Impl>(seed)) {
  impl_->faults.reset(new Faults(*this));
}
Fabric::~Fabric() = default;

TimePoint Fabric::now() const {
  return impl_->now;
}
Fabric::Impl& Fabric::impl() {
  return *impl_;
}
Faults& Fabric::faults() {
  return *impl_->faults;
}
Timing& Fabric::timing() {
  return impl_->timing;
}
std::uint64_t Fabric::events_processed() const {
  return impl_->processed;
}
void Fabric::set_tracer(std::function<void(const std::string&)> tracer) {
  impl_->tracer = std::move(tracer);
}

SimNode& Fabric::add_node(const IpAddr& underlay, Profile profile) {
  if (auto* n = node(underlay))
    return *n;
  impl_->nodes.push_back(std::unique_ptr<SimNode>(
      new SimNode(*this, underlay, profile, impl_->nodes.size(), nullptr)));
  SimNode* n = impl_->nodes.back().get();
  impl_->by_addr[underlay] = n;
  return *n;
}

SimNode& Fabric::add_port(const IpAddr& device, const IpAddr& underlay) {
  if (auto* n = node(underlay))
    return *n;
  // No such node: the new port is the first of its HCA (a caller's slip
  // that the tests of sharing would see in device_ports()).
  SimNode* d = node(device);
  if (d == nullptr)
    return add_node(underlay, Profile::kMlx);
  impl_->nodes.push_back(std::unique_ptr<SimNode>(
      new SimNode(*this, underlay, d->profile(), impl_->nodes.size(), d->impl().dev)));
  SimNode* n = impl_->nodes.back().get();
  impl_->by_addr[underlay] = n;
  return *n;
}

SimNode* Fabric::node(const IpAddr& underlay) {
  auto it = impl_->by_addr.find(underlay);
  return it == impl_->by_addr.end() ? nullptr : it->second;
}

std::vector<SimNode*> Fabric::nodes() {
  std::vector<SimNode*> out;
  for (auto& n : impl_->nodes)
    out.push_back(n.get());
  return out;
}

void Fabric::run_until(TimePoint t) {
  while (!impl_->queue.empty() && impl_->next_due() <= t)
    impl_->step();
  if (impl_->now < t)
    impl_->now = t;
}

void Fabric::run_for(Duration d) {
  run_until(impl_->now + d);
}

bool Fabric::run_until_idle(Duration limit) {
  const TimePoint deadline = impl_->now + limit;
  for (;;) {
    if (impl_->queue.empty())
      return true;
    if (impl_->next_due() > deadline) {
      if (impl_->pending_events == 0)
        return true;
      impl_->now = deadline;
      return false;
    }
    impl_->step();
  }
}

}  // namespace rcnet::sim
