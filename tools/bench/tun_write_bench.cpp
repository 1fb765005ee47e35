// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-tun-write: what a received packet costs to hand to the kernel
// through the TUN device, one write(2) each (what rcnetd does today,
// daemon/tun_path.cpp TunPath::deliver) against io_uring writes submitted in
// batches. It exists to decide rcnet issue 10 ("measure, then keep or drop
// io_uring for batched TUN writes") with a figure, not an opinion.
//
//   sudo rcnet-bench-tun-write [--packets N] [--repeats R] [--json FILE] [--nonblock]
//
// Must run as root (CAP_SYS_ADMIN for unshare(2), CAP_NET_ADMIN for the
// device). It touches nothing on the host: it moves itself into a new network
// namespace, brings lo up, creates a TUN device (IFF_TUN|IFF_NO_PI) with MTU
// 65520 and 10.77.0.1/24, and binds a UDP socket to 10.77.0.1:9 that is never
// read. The namespace, device and socket vanish when the process exits.
//
// What one packet goes through: a write to a TUN device is received
// synchronously in the writer's context (drivers/net/tun.c tun_get_user ->
// tun_rx_batched -> netif_receive_skb with BHs off, rx-frames 0 by default):
// skb allocation and copy, ip_rcv, the route lookup, udp_rcv, the socket
// lookup and the socket's receive-buffer check. The socket's buffer is filled
// before the first timed cell and never drained, so in every timed cell each
// packet ends as a receive-buffer drop (Udp RcvbufErrors): all cells see the
// same state and the cost is the write path, not a growing queue. A socket
// is bound, rather than letting packets go to a closed port, so that no ICMP
// port unreachable is built per packet (rate limited to 1000/s, but still
// work that would vary with the rate). Any ICMP that is sent anyway goes out
// through the TUN device, whose queue nobody reads: it drops there, so
// nothing can stall. After each cell the namespace's /proc/net/snmp is read
// to check that every packet written reached UDP.
//
// The fd is blocking by default. That does not change the write path: a TUN
// write never sleeps here (the device's socket has sk_sndbuf INT_MAX, and
// delivery is synchronous), and io_uring makes its first, inline attempt
// with IOCB_NOWAIT whatever the fd's flags, on a file that supports it
// (FMODE_NOWAIT; one that does not goes to an io-wq worker every time).
// Where the fd differs is what io_uring does when that attempt returns
// EAGAIN: a blocking fd has it retry in an io-wq worker thread, an
// O_NONBLOCK fd (--nonblock, like rcnetd's) has it complete the request with
// -EAGAIN, counted here as failed. Either way it shows in the output: the
// "other thr" column is CPU spent in threads other than the main one (io-wq
// workers, RUSAGE_SELF - RUSAGE_THREAD), and "workers" is the number of
// extra entries in /proc/self/task after each cell (an idle worker lives
// about 5 s). Both 0 mean every write completed inline, in the submitting
// io_uring_enter(2).
//
// Modes, per packet size (1500, 9000 and 65000 bytes, IPv4/UDP from
// 10.77.0.2 to 10.77.0.1:9):
//   write     one write(2) per packet: the anchor, what rcnetd does;
//   uring-8   8 IORING_OP_WRITE SQEs per io_uring_submit_and_wait(8), i.e.
//             one io_uring_enter(2) per 8 packets, then the 8 CQEs reaped
//             and each res checked against the packet size;
//   uring-32  the same with 32.
// Each cell writes a fixed number of packets (--packets at 1500 bytes, fewer
// for the larger sizes) from 32 distinct buffers in turn, in every mode
// alike. The whole set is repeated R times with the modes interleaved
// (write, uring-8, uring-32, write, ...) so that noise from other load hits
// every mode alike; each figure printed is the median over the repeats. Wall
// time is CLOCK_MONOTONIC; CPU is getrusage(RUSAGE_SELF) user + sys, which
// includes the stack's receive work since it runs in the writer's context
// (a softirq run from local_bh_enable may be accounted as softirq time
// instead, when the kernel has CONFIG_IRQ_TIME_ACCOUNTING). The ratios are
// against the write anchor of the same size in the same run: pkt/s ratio
// above 1 and CPU ratio above 1 both mean io_uring is better. CPU per packet
// is the steadier figure when the machine is shared; wall time also counts
// time the process was not running.
//
// What it does NOT model:
//   - the rest of the receive path: the SRQ buffer must be reposted after
//     the packet left it, and with io_uring the packet has to stay in its
//     registered receive buffer until its write completes (more buffers in
//     flight, a repost deferred to the CQE, one more event source);
//   - TCP and GRO: a real stream's segments go through tcp_v4_rcv, ACKs and
//     the socket's wakeups, not a UDP receive-buffer drop;
//   - IFF_VNET_HDR frames (transport.offload), registered files or buffers
//     (IOSQE_FIXED_FILE, write_fixed) and ring flags such as
//     IORING_SETUP_DEFER_TASKRUN: the plain form of each is measured;
//   - cache effects of packets that arrive by DMA: the 32 buffers are warm.
// Exit status 0 when every packet was written in full, 1 on any error.
#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/args.hpp"
#include "common/clock.hpp"
#include "common/report.hpp"
#include "common/stats.hpp"
#include "unique_fd.hpp"
#include "wire/gso.hpp"

namespace {

using rcnet::daemon::UniqueFd;

constexpr const char* kProg = "rcnet-bench-tun-write";
constexpr const char* kTunName = "rcbench0";
constexpr std::uint32_t kLocal = 0x0a4d0001;  // 10.77.0.1, the device's address
constexpr std::uint32_t kPeer = 0x0a4d0002;   // 10.77.0.2, the packets' source
constexpr std::uint16_t kPort = 9;            // discard
constexpr int kMtu = 65520;
// Requested with SO_RCVBUFFORCE (the kernel doubles it): "large", though in
// the timed cells it is always full anyway.
constexpr int kRcvbuf = 16 << 20;
constexpr std::size_t kSlots = 32;  // distinct buffers written in turn
constexpr unsigned kRingEntries = 32;

struct Size {
  std::size_t bytes;
  unsigned divisor;  // packets per cell = --packets / divisor
};
constexpr std::array<Size, 3> kSizes{{{1500, 1}, {9000, 2}, {65000, 4}}};

struct Mode {
  const char* name;
  unsigned batch;  // 0: one write(2) per packet
};
constexpr std::array<Mode, 3> kModes{{{"write", 0}, {"uring-8", 8}, {"uring-32", 32}}};

[[noreturn]] void fail(const std::string& call, int err) {
  std::fprintf(stderr, "%s: %s: %s\n", kProg, call.c_str(), std::strerror(err));
  std::exit(1);
}

class Ring {
 public:
  Ring() {
    if (const int r = io_uring_queue_init(kRingEntries, &ring_, 0); r < 0)
      fail("io_uring_queue_init", -r);
  }
  ~Ring() { io_uring_queue_exit(&ring_); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
};

ifreq make_ifreq(const char* name) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  return ifr;
}

void set_up(int sock, const char* name) {
  ifreq ifr = make_ifreq(name);
  if (::ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
    fail(std::string("ioctl(SIOCGIFFLAGS ") + name + ")", errno);
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)
    fail(std::string("ioctl(SIOCSIFFLAGS ") + name + " up)", errno);
}

void set_v4(int sock, unsigned long request, const char* what, std::uint32_t host_order) {
  ifreq ifr = make_ifreq(kTunName);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(host_order);
  std::memcpy(&ifr.ifr_addr, &sin, sizeof sin);
  if (::ioctl(sock, request, &ifr) < 0)
    fail(std::string("ioctl(") + what + " " + kTunName + ")", errno);
}

// The TUN device, configured and up. The fd is the device: closing it (at
// exit) removes the device.
int open_tun(bool nonblock, int sock) {
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
  if (fd < 0)
    fail("open(/dev/net/tun)", errno);
  ifreq ifr = make_ifreq(kTunName);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (::ioctl(fd, TUNSETIFF, &ifr) < 0)
    fail(std::string("ioctl(TUNSETIFF ") + kTunName + ")", errno);
  ifreq mtu = make_ifreq(kTunName);
  mtu.ifr_mtu = kMtu;
  if (::ioctl(sock, SIOCSIFMTU, &mtu) < 0)
    fail(std::string("ioctl(SIOCSIFMTU ") + kTunName + ")", errno);
  set_v4(sock, SIOCSIFADDR, "SIOCSIFADDR", kLocal);
  set_v4(sock, SIOCSIFNETMASK, "SIOCSIFNETMASK", 0xffffff00u);
  set_up(sock, kTunName);
  return fd;
}

// One IPv4/UDP datagram of `total` bytes from 10.77.0.2:12345 to
// 10.77.0.1:9, DF set, header checksum correct, UDP checksum 0 (none, which
// IPv4 allows: RFC 768).
std::vector<std::byte> udp_packet(std::size_t total, std::uint16_t ip_id) {
  constexpr std::size_t kHeaders = 28;  // IPv4 20 + UDP 8
  std::array<std::uint8_t, kHeaders> h{};
  auto put16 = [&](std::size_t at, std::uint32_t v) {
    h[at] = static_cast<std::uint8_t>(v >> 8);
    h[at + 1] = static_cast<std::uint8_t>(v);
  };
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    put16(at, v >> 16);
    put16(at + 2, v & 0xffff);
  };
  h[0] = 0x45;
  put16(2, static_cast<std::uint32_t>(total));
  put16(4, ip_id);
  put16(6, 0x4000);  // DF
  h[8] = 64;         // TTL
  h[9] = 17;         // UDP
  put32(12, kPeer);
  put32(16, kLocal);
  put16(10, rcnet::wire::fold_checksum(
                rcnet::wire::checksum_add(std::as_bytes(std::span(h).first(20)))));
  put16(20, 12345);
  put16(22, kPort);
  put16(24, static_cast<std::uint32_t>(total - 20));
  std::vector<std::byte> out(std::max(total, kHeaders));
  std::memcpy(out.data(), h.data(), kHeaders);
  for (std::size_t i = kHeaders; i < out.size(); ++i)
    out[i] = static_cast<std::byte>(i);
  return out;
}

// The namespace's UDP counters (/proc/self/net is the caller's namespace).
struct UdpCounters {
  std::uint64_t reached = 0;  // InDatagrams + NoPorts + InErrors: every datagram udp_rcv judged
  std::uint64_t rcvbuf_errors = 0;
};

UdpCounters read_udp() {
  std::ifstream f("/proc/self/net/snmp");
  if (!f)
    fail("open(/proc/self/net/snmp)", errno ? errno : EIO);
  std::string names, values;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("Udp: ", 0) != 0)
      continue;
    if (names.empty())
      names = line;
    else
      values = line;
  }
  if (values.empty())
    fail("parse /proc/self/net/snmp (no Udp lines)", EINVAL);
  std::vector<std::string> n, v;
  auto split = [](const std::string& s, std::vector<std::string>& out) {
    std::size_t pos = 5;  // after "Udp: "
    while (pos < s.size()) {
      const auto sp = s.find(' ', pos);
      out.push_back(s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos));
      pos = sp == std::string::npos ? s.size() : sp + 1;
    }
  };
  split(names, n);
  split(values, v);
  UdpCounters c;
  for (std::size_t i = 0; i < n.size() && i < v.size(); ++i) {
    const std::uint64_t x = std::strtoull(v[i].c_str(), nullptr, 10);
    if (n[i] == "InDatagrams" || n[i] == "NoPorts" || n[i] == "InErrors")
      c.reached += x;
    else if (n[i] == "RcvbufErrors")
      c.rcvbuf_errors = x;
  }
  return c;
}

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

struct Sample {
  double wall_s = 0;
  double cpu_s = 0;        // RUSAGE_SELF: every thread of the process
  double other_cpu_s = 0;  // RUSAGE_SELF - RUSAGE_THREAD: threads other than this one
  std::size_t other_threads = 0;
  std::uint64_t packets = 0;
  std::uint64_t at_udp = 0;  // packets udp_rcv saw
  Outcome outcome;
};

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

std::uint64_t cell_packets(std::uint64_t packets_1500, const Size& sz) {
  return std::max<std::uint64_t>(1, packets_1500 / sz.divisor);
}

struct Args {
  std::uint64_t packets = 250000;  // per cell at 1500 bytes
  unsigned repeats = 5;
  std::string json;
  bool nonblock = false;
};

void add_options(CLI::App& app, Args& a) {
  app.add_option("--packets", a.packets,
                 "packets per cell at 1500 bytes (default 250000; 1/2 of it at 9000, 1/4 at 65000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeats", a.repeats, "interleaved repeats, the median is reported (default 5)")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--json", a.json, "also write the rows as a JSON list of objects");
  app.add_flag("--nonblock", a.nonblock, "open the TUN fd O_NONBLOCK, as rcnetd does");
  app.footer("Runs as root, in a network namespace of its own.");
}

// The network namespace of this process, with lo up, the TUN device and the
// sink socket: all of it vanishes when the process exits.
struct Sandbox {
  UniqueFd ctl;    // AF_INET socket for the interface ioctls
  UniqueFd tun;    // the device
  UniqueFd sink;   // bound to 10.77.0.1:9, never read
  int rcvbuf = 0;  // the sink's SO_RCVBUF as granted
};

Sandbox enter_sandbox(bool nonblock) {
  Sandbox box;
  if (::unshare(CLONE_NEWNET) != 0)
    fail("unshare(CLONE_NEWNET) (must run as root)", errno);
  const int sock_fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock_fd < 0)
    fail("socket(AF_INET, SOCK_DGRAM)", errno);
  box.ctl = UniqueFd(sock_fd);
  set_up(box.ctl.get(), "lo");
  box.tun = UniqueFd(open_tun(nonblock, box.ctl.get()));

  // The sink: bound, never read. Its buffer is filled by fill_sink().
  const int udp_fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (udp_fd < 0)
    fail("socket(AF_INET, SOCK_DGRAM) for the sink", errno);
  box.sink = UniqueFd(udp_fd);
  if (::setsockopt(box.sink.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kRcvbuf, sizeof kRcvbuf) != 0)
    fail("setsockopt(SO_RCVBUFFORCE)", errno);
  socklen_t len = sizeof box.rcvbuf;
  if (::getsockopt(box.sink.get(), SOL_SOCKET, SO_RCVBUF, &box.rcvbuf, &len) != 0)
    fail("getsockopt(SO_RCVBUF)", errno);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(kLocal);
  local.sin_port = htons(kPort);
  if (::bind(box.sink.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    fail("bind(10.77.0.1:9)", errno);
  return box;
}

using Buffers = std::vector<std::vector<std::vector<std::byte>>>;  // [size][slot]

Buffers make_buffers() {
  Buffers bufs;
  for (const auto& sz : kSizes) {
    auto& slots = bufs.emplace_back();
    for (std::size_t i = 0; i < kSlots; ++i)
      slots.push_back(udp_packet(sz.bytes, static_cast<std::uint16_t>(i)));
  }
  return bufs;
}

// Fills the sink's buffer: from here on every packet is a receive-buffer
// drop, in every cell alike. False (printed) when it never fills or a write
// fails.
bool fill_sink(int tun, std::span<const std::vector<std::byte>> bufs) {
  const UdpCounters before = read_udp();
  Outcome o;
  std::uint64_t written = 0;
  while (read_udp().rcvbuf_errors == before.rcvbuf_errors) {
    if (written >= 10000000) {
      std::fprintf(stderr, "%s: the sink's receive buffer never filled (%llu packets)\n", kProg,
                   static_cast<unsigned long long>(written));
      return false;
    }
    write_each(tun, bufs, 1000, o);
    written += 1000;
    if (o.failed + o.short_writes > 0) {
      std::fprintf(stderr, "%s: write(2) to %s while filling: %s\n", kProg, kTunName,
                   o.first_errno ? std::strerror(o.first_errno) : "short write");
      return false;
    }
  }
  return true;
}

void print_header(const Args& a, int rcvbuf) {
  utsname un{};
  if (::uname(&un) != 0)
    fail("uname", errno);
  std::printf(
      "%s: kernel %s, %ld CPUs online, liburing %s, TUN fd %s, sink SO_RCVBUF %d bytes (full)\n"
      "%u repeats, modes interleaved, medians shown; packets per cell:",
      kProg, un.release, ::sysconf(_SC_NPROCESSORS_ONLN), RCNET_LIBURING_VERSION,
      a.nonblock ? "O_NONBLOCK" : "blocking", rcvbuf, a.repeats);
  for (const auto& sz : kSizes)
    std::printf(" %zu B: %llu", sz.bytes,
                static_cast<unsigned long long>(cell_packets(a.packets, sz)));
  std::printf("\n");
  std::fflush(stdout);
}

using Samples = std::vector<std::vector<std::vector<Sample>>>;  // [size][mode][repeat]

// One untimed pass of each cell: page faults, first use of the ring.
void warm_up(Ring& ring, int tun, const Buffers& bufs) {
  for (std::size_t s = 0; s < kSizes.size(); ++s)
    for (const auto& m : kModes)
      (void)measure(m, ring, tun, bufs[s], 2000 / kSizes[s].divisor);
}

// --repeats passes over every cell, the modes interleaved.
Samples run_cells(const Args& a, Ring& ring, int tun, const Buffers& bufs) {
  Samples samples(kSizes.size(), std::vector<std::vector<Sample>>(kModes.size()));
  for (unsigned r = 0; r < a.repeats; ++r)
    for (std::size_t s = 0; s < kSizes.size(); ++s)
      for (std::size_t m = 0; m < kModes.size(); ++m)
        samples[s][m].push_back(
            measure(kModes[m], ring, tun, bufs[s], cell_packets(a.packets, kSizes[s])));
  return samples;
}

// What the table's rows add up to: the verdict.
struct Totals {
  std::uint64_t bad = 0;  // packets failed or cut short
  std::uint64_t written = 0, at_udp = 0;
};

// The table on stdout and its rows as JSON objects.
Totals print_table(const Samples& samples, nlohmann::json& rows) {
  std::printf("\n%6s %-9s %11s %6s %11s %6s %11s %7s %7s %7s\n", "size", "mode", "pkt/s", "ratio",
              "cpu ns/pkt", "cpu x", "other thr", "workers", "failed", "short");
  std::printf("%6s %-9s %11s %6s %11s %6s %11s %7s %7s %7s\n", "bytes", "", "(wall)", "pkt/s",
              "(all thr)", "anchor", "ns/pkt", "max", "", "");
  Totals t;
  for (std::size_t s = 0; s < kSizes.size(); ++s) {
    double anchor_pps = 0, anchor_cpu = 0;
    for (std::size_t m = 0; m < kModes.size(); ++m) {
      const auto& cell = samples[s][m];
      std::vector<double> pps, cpu_ns, other_ns;
      std::size_t workers = 0;
      Outcome o;
      for (const auto& x : cell) {
        const double n = static_cast<double>(x.packets);
        pps.push_back(n / x.wall_s);
        cpu_ns.push_back(x.cpu_s * 1e9 / n);
        other_ns.push_back(x.other_cpu_s * 1e9 / n);
        workers = std::max(workers, x.other_threads);
        o.failed += x.outcome.failed;
        o.short_writes += x.outcome.short_writes;
        if (o.first_errno == 0)
          o.first_errno = x.outcome.first_errno;
        t.written += x.packets - x.outcome.failed;
        t.at_udp += x.at_udp;
      }
      t.bad += o.failed + o.short_writes;
      using rcnet::bench::median;
      const double p = median(pps), c = median(cpu_ns), oc = median(other_ns);
      if (m == 0)
        anchor_pps = p, anchor_cpu = c;
      std::printf("%6zu %-9s %11.0f %6.2f %11.0f %6.2f %11.0f %7zu %7llu %7llu%s%s\n",
                  kSizes[s].bytes, kModes[m].name, p, p / anchor_pps, c, anchor_cpu / c, oc,
                  workers, static_cast<unsigned long long>(o.failed),
                  static_cast<unsigned long long>(o.short_writes), o.first_errno ? "  " : "",
                  o.first_errno ? std::strerror(o.first_errno) : "");
      rows.push_back({
          {"size_bytes", kSizes[s].bytes},
          {"mode", kModes[m].name},
          {"batch", kModes[m].batch},
          {"packets_per_cell", cell.front().packets},
          {"repeats", cell.size()},
          {"packets_per_s", p},
          {"ratio_to_write", p / anchor_pps},
          {"cpu_ns_per_packet", c},
          {"cpu_ratio_write_over_mode", anchor_cpu / c},
          {"other_thread_cpu_ns_per_packet", oc},
          {"max_other_threads", workers},
          {"failed", o.failed},
          {"short", o.short_writes},
          {"first_error", o.first_errno ? std::strerror(o.first_errno) : ""},
          {"samples_packets_per_s", pps},
          {"samples_cpu_ns_per_packet", cpu_ns},
      });
    }
  }
  std::printf(
      "\nratio: pkt/s over the write anchor of the same size; cpu x: anchor's CPU per packet\n"
      "over this mode's (above 1: cheaper); other thr: CPU in threads other than the main one\n"
      "(io-wq workers); workers: most extra threads seen after a cell.\n"
      "UDP saw %llu of the %llu packets written in the timed cells.\n",
      static_cast<unsigned long long>(t.at_udp), static_cast<unsigned long long>(t.written));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "rcnet-bench-tun-write: one write(2) per packet against batched io_uring writes "
      "to a TUN device",
      kProg};
  add_options(app, a);
  if (const int rc = rcnet::bench::parse_args(app, argc, argv); rc >= 0)
    return rc;

  const Sandbox box = enter_sandbox(a.nonblock);
  const Buffers bufs = make_buffers();
  Ring ring;
  if (!fill_sink(box.tun.get(), bufs[0]))
    return 1;
  warm_up(ring, box.tun.get(), bufs);
  print_header(a, box.rcvbuf);
  const Samples samples = run_cells(a, ring, box.tun.get(), bufs);
  nlohmann::json rows = nlohmann::json::array();
  const Totals t = print_table(samples, rows);

  if (!a.json.empty() && !rcnet::bench::write_file(a.json, rows.dump(2) + "\n"))
    fail("write(" + a.json + ")", errno);
  if (t.bad > 0) {
    std::fprintf(stderr, "%s: %llu packets failed or were cut short (see the table)\n", kProg,
                 static_cast<unsigned long long>(t.bad));
    return 1;
  }
  if (t.at_udp != t.written) {
    std::fprintf(stderr, "%s: UDP saw %llu packets, %llu were written\n", kProg,
                 static_cast<unsigned long long>(t.at_udp),
                 static_cast<unsigned long long>(t.written));
    return 1;
  }
  return 0;
}
