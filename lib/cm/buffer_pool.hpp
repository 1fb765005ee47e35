// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A registered pool of equal-sized buffers: the SRQ's receive buffers, a
// non-SRQ QP's own receive ring, or the shared send slots. One allocation, one
// memory region (ibv_reg_mr(3)), indices handed out from a LIFO free list so
// the most recently used (cache-warm) buffer is reused first.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rdma/seam.hpp"
#include "util/result.hpp"

namespace rcnet::cm {

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Allocates count × size bytes (page aligned) and registers them through
  // `seam`, which must outlive the pool. The first `headroom` bytes of each
  // buffer are left out of its SGEs: a receive lands after them, so a header
  // can be put in front of what arrived without a copy. Errors: ENOMEM, or
  // the seam's.
  // A pool already initialised is unregistered first. Memory the pool holds
  // (from before, or kept by unregister()) of exactly count × size bytes is
  // registered again instead of allocated: its pages are already there
  // (contents are whatever they were: nothing reads a buffer before a
  // receive or a send wrote it); memory of another size is freed.
  Result<void> init(rdma::Seam& seam, std::uint32_t count, std::uint32_t size,
                    std::uint32_t headroom = 0);
  // Unregisters the memory (through the seam given to init, or to rebind)
  // and frees it; the pool is empty afterwards. Idempotent.
  void release();
  // Unregisters the memory and keeps it for the next init() of the same
  // size: the device is gone, and when it comes back its re-adoption
  // registers these pages again rather than new ones, which the kernel
  // would fault in and zero one by one inside ibv_reg_mr(3) (docs/design.md
  // "Device loss and return"). The pool is empty (no buffer to take) until
  // then. Idempotent.
  void unregister();
  // Unregisters through `seam` from now on: another seam of the device the
  // memory was registered on (rdma::Seam::device_share), which must outlive
  // the pool; for a pool whose registering seam may go first.
  void rebind(rdma::Seam& seam) { seam_ = &seam; }

  std::uint32_t count() const { return count_; }
  std::uint32_t buffer_size() const { return size_; }
  std::uint32_t free_count() const { return static_cast<std::uint32_t>(free_.size()); }
  std::uint32_t headroom() const { return headroom_; }
  // The buffer's first byte (its headroom's, if any).
  std::byte* data(std::uint32_t index) const { return mem_.get() + std::size_t{index} * size_; }
  // `length` bytes after the headroom.
  rdma::Sge sge(std::uint32_t index, std::uint32_t length) const;
  // Everything after the headroom.
  rdma::Sge sge(std::uint32_t index) const { return sge(index, size_ - headroom_); }

  std::optional<std::uint32_t> take();
  void give(std::uint32_t index);

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const noexcept;
  };
  rdma::Seam* seam_ = nullptr;
  std::unique_ptr<std::byte[], AlignedDelete> mem_;
  std::size_t mem_bytes_ = 0;  // of mem_
  rdma::MemoryRegion mr_{};
  bool registered_ = false;
  std::uint32_t count_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t headroom_ = 0;
  std::vector<std::uint32_t> free_;
  std::vector<bool> in_free_;
};

// The SRQ's receive buffers and what is known of them, kept once per
// device (rdma::Seam::device_share): rails that are ports of one device
// share its SRQ, so a receive WR one rail's data path posted may complete
// on the other's CQ, which must find the buffer its wr_id names. Shared by
// the data paths of those rails (cm/datapath.hpp); the last one to let go
// unregisters it.
struct SrqBuffers final : rdma::DeviceShare {
  BufferPool pool;
  std::uint32_t posted = 0;  // receive WRs on the SRQ now
  bool limit_armed = false;  // IBV_SRQ_LIMIT armed, its one event not seen yet
  std::uint64_t limit_events = 0;
};

}  // namespace rcnet::cm
