// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-tun-write's write modes and their measurement
// (tun_write_modes.hpp).
#include "tun_write_modes.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/clock.hpp"
#include "common/stats.hpp"
#include "tun_write_bench.hpp"
#include "tun_write_sandbox.hpp"

namespace rcnet::bench::tun_write {

namespace {

double cpu_s(int who) {
  const auto s = rcnet::bench::cpu_s(who);
  if (!s)
    fail(who == RUSAGE_SELF ? "getrusage(RUSAGE_SELF)" : "getrusage(RUSAGE_THREAD)", errno);
  return *s;
}

// Threads of this process besides the main one: io-wq workers (iou-wrk-*).
std::size_t other_threads() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr)
    fail("opendir(/proc/self/task)", errno);
  std::size_t n = 0;
  errno = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.')
      ++n;
  const int err = errno;
  ::closedir(d);
  if (err != 0)
    fail("readdir(/proc/self/task)", err);
  return n > 0 ? n - 1 : 0;
}

}  // namespace

Ring::Ring() {
  if (const int r = io_uring_queue_init(kRingEntries, &ring_, 0); r < 0)
    fail("io_uring_queue_init", -r);
}

Ring::~Ring() {
  io_uring_queue_exit(&ring_);
}

void write_each(int fd, std::span<const std::vector<std::byte>> bufs, std::uint64_t packets,
                Outcome& out) {
  for (std::uint64_t i = 0; i < packets; ++i) {
    const auto& b = bufs[i % bufs.size()];
    ssize_t n = 0;
    do {
      n = ::write(fd, b.data(), b.size());
    } while (n < 0 && errno == EINTR);
    out.count(n < 0 ? -errno : n, b.size());
  }
}

void write_uring(Ring& ring, int fd, std::span<const std::vector<std::byte>> bufs,
                 std::uint64_t packets, unsigned batch, Outcome& out) {
  io_uring* r = ring.get();
  std::array<io_uring_cqe*, kRingEntries> cqes{};
  for (std::uint64_t done = 0; done < packets;) {
    const auto k = static_cast<unsigned>(std::min<std::uint64_t>(batch, packets - done));
    for (unsigned j = 0; j < k; ++j) {
      const auto& b = bufs[(done + j) % bufs.size()];
      io_uring_sqe* sqe = io_uring_get_sqe(r);
      if (sqe == nullptr)
        fail("io_uring_get_sqe (SQ ring full)", EBUSY);
      // Offset 0: a TUN fd is a stream, the offset is not used.
      io_uring_prep_write(sqe, fd, b.data(), static_cast<unsigned>(b.size()), 0);
      sqe->user_data = b.size();
    }
    int submitted = 0;
    do {
      submitted = io_uring_submit_and_wait(r, k);
    } while (submitted == -EINTR);
    if (submitted < 0)
      fail("io_uring_submit_and_wait", -submitted);
    if (static_cast<unsigned>(submitted) != k) {
      std::fprintf(stderr, "%s: io_uring_submit_and_wait: %d of %u SQEs submitted\n", kProg,
                   submitted, k);
      std::exit(1);
    }
    for (unsigned reaped = 0; reaped < k;) {
      unsigned got = io_uring_peek_batch_cqe(r, cqes.data(), k - reaped);
      if (got == 0) {
        // Only after an interrupted wait: the CQEs are still to come.
        io_uring_cqe* cqe = nullptr;
        if (const int w = io_uring_wait_cqe(r, &cqe); w < 0 && w != -EINTR)
          fail("io_uring_wait_cqe", -w);
        continue;
      }
      for (unsigned j = 0; j < got; ++j)
        out.count(cqes[j]->res, static_cast<std::size_t>(cqes[j]->user_data));
      io_uring_cq_advance(r, got);
      reaped += got;
    }
    done += k;
  }
}

Sample measure(const Mode& mode, Ring& ring, int fd, std::span<const std::vector<std::byte>> bufs,
               std::uint64_t packets) {
  Sample s;
  s.packets = packets;
  const UdpCounters u0 = read_udp();
  const double self0 = cpu_s(RUSAGE_SELF);
  const double thread0 = cpu_s(RUSAGE_THREAD);
  const double t0 = rcnet::bench::monotonic_s();
  if (mode.batch == 0)
    write_each(fd, bufs, packets, s.outcome);
  else
    write_uring(ring, fd, bufs, packets, mode.batch, s.outcome);
  const double t1 = rcnet::bench::monotonic_s();
  const double self1 = cpu_s(RUSAGE_SELF);
  const double thread1 = cpu_s(RUSAGE_THREAD);
  s.wall_s = t1 - t0;
  s.cpu_s = self1 - self0;
  s.other_cpu_s = std::max(0.0, (self1 - thread1) - (self0 - thread0));
  s.other_threads = other_threads();
  s.at_udp = read_udp().reached - u0.reached;
  return s;
}

}  // namespace rcnet::bench::tun_write
