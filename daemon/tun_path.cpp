// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tun_path.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "ip_packet.hpp"

namespace rcnet::daemon {

TunPath::TunPath(EventLoop& loop, Hooks hooks)
    : loop_(loop), hooks_(std::move(hooks)), buf_(kBufferSize) {}

TunPath::~TunPath() = default;

Result<void> TunPath::attach(int fd) {
  auto src = loop_.add_io(fd, EPOLLIN, "tun", [this](std::uint32_t) { on_readable(); });
  if (!src)
    return src.error();
  auto post = loop_.add_post("tun-capacity", [this] {
    if (!capacity_ && hooks_.has_capacity && hooks_.has_capacity())
      send_capacity(true);
  });
  if (!post)
    return post.error();
  source_ = std::move(*src);
  recheck_ = std::move(*post);
  fd_ = fd;
  update_reading();
  return {};
}

void TunPath::detach() {
  source_.reset();
  recheck_.reset();
  fd_ = -1;
}

void TunPath::stop_reading() {
  stopped_ = true;
  update_reading();
}

void TunPath::update_reading() {
  if (!source_.valid())
    return;
  if (recheck_.valid() && recheck_.enabled() == capacity_) {
    (void)recheck_.set_enabled(capacity_ ? SD_EVENT_OFF : SD_EVENT_ON);
  }
  const bool want = capacity_ && !stopped_;
  if (want == source_.enabled())
    return;
  if (auto r = source_.set_enabled(want ? SD_EVENT_ON : SD_EVENT_OFF); !r) {
    spdlog::error("TUN: cannot {} reading: {}", want ? "resume" : "pause", r.error().message());
  }
}

void TunPath::send_capacity(bool available) {
  if (!available && capacity_)
    ++counters_.read_pauses;
  capacity_ = available;
  update_reading();
}

void TunPath::on_readable() {
  for (int i = 0; i < kReadBatch && capacity_ && !stopped_; ++i) {
    if (hooks_.has_capacity && !hooks_.has_capacity()) {
      send_capacity(false);
      return;
    }
    const ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN)
        spdlog::warn("TUN: read failed: {}", std::generic_category().message(errno));
      return;
    }
    const std::span<const std::byte> pkt(buf_.data(), static_cast<std::size_t>(n));
    ++counters_.tun_rx_packets;
    counters_.tun_rx_bytes += pkt.size();

    const auto dst = ip_destination(pkt);
    if (!dst) {
      ++counters_.drops_not_ip;
      continue;
    }
    const auto peer = hooks_.route(*dst);
    if (!peer) {
      ++counters_.drops_unmapped;
      spdlog::debug("TUN: no peer for {}, dropped", dst->to_string());
      continue;
    }
    switch (hooks_.send(*peer, pkt)) {
      case cm::SendResult::kSent:
      case cm::SendResult::kQueued:
      case cm::SendResult::kDroppedOldest:
        break;
      case cm::SendResult::kNoSlot:
        ++counters_.drops_refused;
        send_capacity(false);
        return;
      case cm::SendResult::kOversize:
      case cm::SendResult::kRefused:
        ++counters_.drops_refused;
        break;
    }
  }
}

void TunPath::deliver(NodeId, std::span<const std::byte> packet) {
  if (fd_ < 0) {
    ++counters_.drops_not_attached;
    return;
  }
  for (;;) {
    const ssize_t n = ::write(fd_, packet.data(), packet.size());
    if (n >= 0)
      break;
    if (errno == EINTR)
      continue;
    // EAGAIN/ENOBUFS: the TUN queue toward the stack is full; EIO: the
    // device is down. Either way the packet is lost, as on a NIC.
    ++counters_.drops_tun_write;
    return;
  }
  ++counters_.tun_tx_packets;
  counters_.tun_tx_bytes += packet.size();
}

}  // namespace rcnet::daemon
