// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tun_path.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "wire/ip_packet.hpp"

namespace rcnet::daemon {

TunPath::TunPath(EventLoop& loop, Hooks hooks, std::size_t vnet_hdr_len)
    : loop_(loop), hooks_(std::move(hooks)), vnet_hdr_len_(vnet_hdr_len), buf_(kBufferSize) {}

TunPath::~TunPath() = default;

Result<void> TunPath::attach(int fd) {
  auto src = loop_.add_io(fd, EPOLLIN, "tun", [this](std::uint32_t) { on_readable(); });
  if (!src)
    return src.error();
  source_ = std::move(*src);
  fd_ = fd;
  if (stopped_)
    (void)source_.set_enabled(SD_EVENT_OFF);
  return {};
}

void TunPath::detach() {
  source_.reset();
  fd_ = -1;
}

void TunPath::stop_reading() {
  stopped_ = true;
  if (source_.valid())
    (void)source_.set_enabled(SD_EVENT_OFF);
}

void TunPath::send_capacity(bool available) {
  if (!source_.valid())
    return;
  const bool want = available && !stopped_;
  if (want == source_.enabled())
    return;
  if (!want && !stopped_)
    ++counters_.read_pauses;
  if (auto r = source_.set_enabled(want ? SD_EVENT_ON : SD_EVENT_OFF); !r) {
    spdlog::error("TUN: cannot {} reading: {}", want ? "resume" : "pause", r.error().message());
  }
}

void TunPath::on_readable() {
  if (hooks_.batch_begin)
    hooks_.batch_begin();
  read_packets();
  if (hooks_.batch_end)
    hooks_.batch_end();
}

void TunPath::read_packets() {
  // reading() turns false inside hooks_.send() when the manager signals
  // send_capacity(false): the packet just handed over is held, the rest wait
  // in the kernel's queue.
  //
  // The io source is level-triggered, so a pass may stop before EAGAIN: what
  // is left wakes the loop again at once. The budget adapts (read_budget_):
  // a pass that found the queue empty (EAGAIN) puts it back to one read per
  // wakeup, so that at low load a packet costs one read(2) and rarely a
  // failed one; kGrowAfter passes in a row that used their whole budget
  // double it, up to kReadBatch, so that under load a wakeup (one
  // epoll_wait) serves many packets.
  int i = 0;
  for (; i < read_budget_ && reading(); ++i) {
    // Into a lent send buffer when the manager has one (the packet then
    // goes out from there), else into our own.
    std::span<std::byte> into = hooks_.lend ? hooks_.lend() : std::span<std::byte>{};
    const bool lent = !into.empty();
    if (!lent)
      into = buf_;
    auto give_back = [&] {
      if (lent)
        hooks_.return_lent();
    };
    ssize_t n = 0;
    do {
      n = ::read(fd_, into.data(), into.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      give_back();
      if (errno != EAGAIN)
        spdlog::warn("TUN: read failed: {}", std::generic_category().message(errno));
      ++counters_.read_empty;
      read_budget_ = 1;
      full_passes_ = 0;
      return;
    }
    const std::span<const std::byte> pkt(into.data(), static_cast<std::size_t>(n));
    ++counters_.tun_rx_packets;
    counters_.tun_rx_bytes += pkt.size();
    if (lent && pkt.size() == into.size()) {
      // A lent buffer is larger than any packet the manager accepts: one
      // that fills it may be cut short, and is oversize either way.
      give_back();
      ++counters_.drops_refused;
      continue;
    }

    const auto dst = pkt.size() < vnet_hdr_len_ ? std::nullopt
                                                : wire::ip_destination(pkt.subspan(vnet_hdr_len_));
    if (!dst) {
      give_back();
      ++counters_.drops_not_ip;
      continue;
    }
    const auto peer = hooks_.route(*dst);
    if (!peer) {
      give_back();
      ++counters_.drops_unmapped;
      spdlog::debug("TUN: no peer for {}, dropped", dst->to_string());
      continue;
    }
    switch (lent ? hooks_.send_lent(*peer, pkt.size()) : hooks_.send(*peer, pkt)) {
      case cm::SendResult::kSent:
      case cm::SendResult::kQueued:
      case cm::SendResult::kDroppedOldest:
        break;
      case cm::SendResult::kOversize:
      case cm::SendResult::kRefused:
        ++counters_.drops_refused;
        break;
    }
  }
  if (i < read_budget_)
    return;  // paused by the manager: says nothing about the load
  if (++full_passes_ >= kGrowAfter) {
    read_budget_ = std::min(kReadBatch, read_budget_ * 2);
    full_passes_ = 0;
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
