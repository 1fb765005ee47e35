// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A host of the simulated fabric whose manager is metered (meter.hpp): every
// call from the manager into the simulated HCA or its timer is charged to the
// simulator, every event or timer expiry the fabric hands the manager to the
// host's part, so that a part's heap is its managers' own and not the
// simulator's. rcnet-bench-sim (sim_scale.cpp) and the heap plateau test
// (tests/unit/cm/heap_test.cpp) are built on it; a program that includes it
// links meter.cpp, which replaces the global operator new.
//
// Single-threaded, like the fabric.
#include <memory>
#include <optional>
#include <span>

#include "cm/manager.hpp"
#include "meter.hpp"
#include "rdma/seam.hpp"
#include "sim/cluster.hpp"
#include "util/timer_service.hpp"

namespace rcnet::bench {

// Every call, the device's loss and sharing included, forwarded to `inner`
// in Scope(Part::kSim).
class MeteredSeam final : public rdma::Seam {
 public:
  explicit MeteredSeam(rdma::Seam& inner) : in_(inner) {}
  Result<rdma::DeviceInfo> open(const Endpoint& l, const rdma::DeviceConfig& c) override {
    Scope s(Part::kSim);
    return in_.open(l, c);
  }
  Result<rdma::MemoryRegion> register_memory(std::span<std::byte> m) override {
    Scope s(Part::kSim);
    return in_.register_memory(m);
  }
  void unregister_memory(const rdma::MemoryRegion& mr) override {
    Scope s(Part::kSim);
    in_.unregister_memory(mr);
  }
  Result<rdma::CmIdHandle> create_id() override {
    Scope s(Part::kSim);
    return in_.create_id();
  }
  Result<void> resolve_addr(rdma::CmIdHandle id, const Endpoint& d, Duration t) override {
    Scope s(Part::kSim);
    return in_.resolve_addr(id, d, t);
  }
  Result<void> resolve_route(rdma::CmIdHandle id, Duration t) override {
    Scope s(Part::kSim);
    return in_.resolve_route(id, t);
  }
  Result<rdma::Qpn> create_qp(rdma::CmIdHandle id, const rdma::QpCaps& c) override {
    Scope s(Part::kSim);
    return in_.create_qp(id, c);
  }
  Result<void> connect(rdma::CmIdHandle id, const rdma::ConnParams& p) override {
    Scope s(Part::kSim);
    return in_.connect(id, p);
  }
  Result<void> accept(rdma::CmIdHandle id, const rdma::ConnParams& p) override {
    Scope s(Part::kSim);
    return in_.accept(id, p);
  }
  Result<void> reject(rdma::CmIdHandle id, std::span<const std::uint8_t> pd) override {
    Scope s(Part::kSim);
    return in_.reject(id, pd);
  }
  Result<void> disconnect(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.disconnect(id);
  }
  Result<void> notify_established(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.notify_established(id);
  }
  Result<void> destroy_qp(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.destroy_qp(id);
  }
  Result<void> destroy_id(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.destroy_id(id);
  }
  Result<void> modify_qp_to_error(rdma::CmIdHandle id) override {
    Scope s(Part::kSim);
    return in_.modify_qp_to_error(id);
  }
  Result<void> post_send(rdma::CmIdHandle id, std::uint64_t wr_id, const rdma::Sge& sge,
                         std::uint32_t imm, bool signaled) override {
    Scope s(Part::kSim);
    return in_.post_send(id, wr_id, sge, imm, signaled);
  }
  rdma::PostSendsResult post_sends(rdma::CmIdHandle id,
                                   std::span<const rdma::SendWr> wrs) override {
    Scope s(Part::kSim);
    return in_.post_sends(id, wrs);
  }
  Result<void> post_drain(rdma::CmIdHandle id, std::uint64_t wr_id) override {
    Scope s(Part::kSim);
    return in_.post_drain(id, wr_id);
  }
  Result<void> post_srq_recv(std::span<const std::uint64_t> w,
                             std::span<const rdma::Sge> g) override {
    Scope s(Part::kSim);
    return in_.post_srq_recv(w, g);
  }
  Result<void> post_qp_recv(rdma::CmIdHandle id, std::span<const std::uint64_t> w,
                            std::span<const rdma::Sge> g) override {
    Scope s(Part::kSim);
    return in_.post_qp_recv(id, w, g);
  }
  Result<void> arm_srq_limit(std::uint32_t limit) override {
    Scope s(Part::kSim);
    return in_.arm_srq_limit(limit);
  }
  bool cm_events_queued() override {
    Scope s(Part::kSim);
    return in_.cm_events_queued();
  }
  void close_device() override {
    Scope s(Part::kSim);
    in_.close_device();
  }
  // The slot of the inner seam's device: the rails on ports of one
  // simulated HCA share it as they do unmetered.
  std::weak_ptr<rdma::DeviceShare>& device_share() override { return in_.device_share(); }

 private:
  rdma::Seam& in_;
};

class MeteredTimers final : public TimerService {
 public:
  explicit MeteredTimers(TimerService& inner) : in_(inner) {}
  // Not metered: a read of the fabric's clock, and called so often that a
  // Scope here would dominate the manager's own figures.
  TimePoint now() const override { return in_.now(); }
  void schedule(TimePoint d) override {
    Scope s(Part::kSim);
    in_.schedule(d);
  }

 private:
  TimerService& in_;
};

// Every event the fabric hands a node is charged to that node's manager.
class MeteredEvents final : public rdma::EventSink {
 public:
  MeteredEvents(cm::Manager& m, Part part) : mgr_(m), part_(part) {}
  void on_cm_event(const rdma::CmEvent& ev) override {
    Scope s(part_);
    mgr_.on_cm_event(ev);
  }
  void on_async_event(const rdma::AsyncEvent& ev) override {
    Scope s(part_);
    mgr_.on_async_event(ev);
  }
  void on_completions(std::span<const rdma::WorkCompletion> wcs) override {
    Scope s(part_);
    mgr_.on_completions(wcs);
  }

 private:
  cm::Manager& mgr_;
  Part part_;
};

// A host whose manager runs on the metered seam and timers, and whose every
// event or timer expiry is charged to `part`. Start it with
// sim::Cluster::start inside Scope(part): the manager, and the meter's own
// objects made there, are then charged to it. A subclass gives the packet
// sink.
class MeteredNode : public sim::ClusterNode {
 public:
  explicit MeteredNode(Part p) : part(p) {}
  const Part part;

  rdma::Seam& seam() override {
    if (!seam_)
      seam_.emplace(sim->seam());
    return *seam_;
  }
  TimerService& timers() override {
    if (!timers_)
      timers_.emplace(sim->timers());
    return *timers_;
  }
  rdma::EventSink& events() override {
    events_ = std::make_unique<MeteredEvents>(*mgr, part);
    return *events_;
  }
  void on_timer() override {
    Scope s(part);
    mgr->on_timer();
  }

 private:
  std::optional<MeteredSeam> seam_;
  std::optional<MeteredTimers> timers_;
  std::unique_ptr<MeteredEvents> events_;
};

}  // namespace rcnet::bench
