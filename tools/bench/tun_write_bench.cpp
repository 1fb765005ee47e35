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
//
// This file runs the cells and prints the table; the sandbox is in
// tun_write_sandbox.cpp, the write modes and one measured cell in
// tun_write_modes.cpp.
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/args.hpp"
#include "common/report.hpp"
#include "common/stats.hpp"
#include "tun_write_bench.hpp"
#include "tun_write_modes.hpp"
#include "tun_write_sandbox.hpp"

namespace rcnet::bench::tun_write {

void fail(const std::string& call, int err) {
  std::fprintf(stderr, "%s: %s: %s\n", kProg, call.c_str(), std::strerror(err));
  std::exit(1);
}

namespace {

constexpr std::size_t kSlots = 32;  // distinct buffers written in turn

struct Size {
  std::size_t bytes;
  unsigned divisor;  // packets per cell = --packets / divisor
};
constexpr std::array<Size, 3> kSizes{{{1500, 1}, {9000, 2}, {65000, 4}}};

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

}  // namespace rcnet::bench::tun_write

int main(int argc, char** argv) {
  using namespace rcnet::bench::tun_write;
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
