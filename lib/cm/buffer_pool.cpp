// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/buffer_pool.hpp"

#include <new>

namespace rcnet::cm {

namespace {
constexpr std::size_t kAlign = 4096;
}

void BufferPool::AlignedDelete::operator()(std::byte* p) const noexcept {
  ::operator delete[](p, std::align_val_t{kAlign});
}

BufferPool::~BufferPool() {
  release();
}

void BufferPool::unregister() {
  if (registered_)
    seam_->unregister_memory(mr_);
  registered_ = false;
  mr_ = {};
  count_ = 0;
  free_.clear();
  in_free_.clear();
}

void BufferPool::release() {
  unregister();
  mem_.reset();
  mem_bytes_ = 0;
}

Result<void> BufferPool::init(rdma::Seam& seam, std::uint32_t count, std::uint32_t size,
                              std::uint32_t headroom) {
  unregister();
  seam_ = &seam;
  size_ = size;
  headroom_ = headroom < size ? headroom : 0;
  const std::size_t bytes = std::size_t{count} * size;
  if (!mem_ || mem_bytes_ != bytes) {
    release();
    auto* raw = static_cast<std::byte*>(
        ::operator new[](bytes == 0 ? 1 : bytes, std::align_val_t{kAlign}, std::nothrow));
    if (raw == nullptr)
      return Error::from_errno(ENOMEM, "buffer pool allocation");
    mem_.reset(raw);
    mem_bytes_ = bytes;
  }
  auto mr = seam.register_memory(std::span<std::byte>(mem_.get(), bytes));
  if (!mr)
    return mr.error();
  mr_ = *mr;
  registered_ = true;
  count_ = count;
  free_.clear();
  free_.reserve(count);
  for (std::uint32_t i = count; i > 0; --i)
    free_.push_back(i - 1);
  in_free_.assign(count, true);
  return {};
}

rdma::Sge BufferPool::sge(std::uint32_t index, std::uint32_t length) const {
  return rdma::Sge{reinterpret_cast<std::uint64_t>(data(index) + headroom_), length, mr_.lkey};
}

std::optional<std::uint32_t> BufferPool::take() {
  if (free_.empty())
    return std::nullopt;
  const auto i = free_.back();
  free_.pop_back();
  in_free_[i] = false;
  return i;
}

void BufferPool::give(std::uint32_t index) {
  if (index >= count_ || in_free_[index])
    return;  // double free is a caller bug; ignore it
  in_free_[index] = true;
  free_.push_back(index);
}

}  // namespace rcnet::cm
