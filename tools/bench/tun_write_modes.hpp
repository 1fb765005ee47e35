// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnet-bench-tun-write's write modes (tun_write_bench.cpp): one write(2)
// per packet, or batches of io_uring writes, and one measured cell of
// either: wall time, CPU of every thread and what reached UDP.
#include <liburing.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rcnet::bench::tun_write {

constexpr unsigned kRingEntries = 32;

struct Mode {
  const char* name;
  unsigned batch;  // 0: one write(2) per packet
};
constexpr std::array<Mode, 3> kModes{{{"write", 0}, {"uring-8", 8}, {"uring-32", 32}}};

// An io_uring of kRingEntries entries, no flags (the plain form is measured).
class Ring {
 public:
  Ring();  // exits through fail() when io_uring_queue_init fails
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
};

struct Outcome {
  std::uint64_t failed = 0;  // write(2) -1 or CQE res < 0
  std::uint64_t short_writes = 0;
  int first_errno = 0;
  void count(long res, std::size_t want) {
    if (res < 0) {
      ++failed;
      if (first_errno == 0)
        first_errno = static_cast<int>(-res);
    } else if (static_cast<std::size_t>(res) != want) {
      ++short_writes;
    }
  }
};

// One write(2) per packet, `packets` of them from `bufs` in turn.
void write_each(int fd, std::span<const std::vector<std::byte>> bufs, std::uint64_t packets,
                Outcome& out);
// `batch` IORING_OP_WRITE SQEs per io_uring_submit_and_wait, then their
// CQEs reaped and each res checked against the packet's size.
void write_uring(Ring& ring, int fd, std::span<const std::vector<std::byte>> bufs,
                 std::uint64_t packets, unsigned batch, Outcome& out);

struct Sample {
  double wall_s = 0;
  double cpu_s = 0;        // RUSAGE_SELF: every thread of the process
  double other_cpu_s = 0;  // RUSAGE_SELF - RUSAGE_THREAD: threads other than this one
  std::size_t other_threads = 0;
  std::uint64_t packets = 0;
  std::uint64_t at_udp = 0;  // packets udp_rcv saw
  Outcome outcome;
};

// One timed cell: `packets` packets from `bufs` written in `mode`.
Sample measure(const Mode& mode, Ring& ring, int fd, std::span<const std::vector<std::byte>> bufs,
               std::uint64_t packets);

}  // namespace rcnet::bench::tun_write
