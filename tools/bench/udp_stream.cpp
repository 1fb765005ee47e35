// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-udp: a UDP stream whose sender can hand the kernel super-packets
// (UDP GSO: the UDP_SEGMENT socket option, udp(7), Linux 4.18 and later), for
// the lab's USO test and benchmark row. iperf3 of Debian 12 has no GSO option.
//
//   rcnet-bench-udp recv PORT [--seconds S] [--idle-ms MS] [--wait-s W]
//     Binds [::]:PORT (IPv4 too) with an 8 MiB receive buffer, counts the
//     datagrams and bytes it receives until S seconds have passed since the
//     first one, or no datagram came for MS milliseconds after it (default
//     1000), or none came within W seconds of the start (default 30), or
//     SIGTERM/SIGINT. Prints {"datagrams", "bytes", "largest",
//     "seconds" (first to last datagram), "MBps"}.
//   rcnet-bench-udp send ADDR PORT [--seconds S] [--payload B] [--segments N]
//                   [--count C] [--gap-us U]
//     Sends to ADDR (IPv4 or IPv6) for S seconds (default 5), or C calls:
//     each call one datagram of B bytes (default 1400) when N is 1, else one
//     super-packet of N x B bytes that the kernel (or rc0's TUN, with USO)
//     cuts into N datagrams of B bytes. U microseconds between calls
//     (default 0: as fast as the socket takes them). ENOBUFS, EAGAIN and
//     ECONNREFUSED (the receiver not bound yet) are counted as "enobufs"
//     and the call retried after 50 us, not fatal. Prints {"calls",
//     "datagrams", "bytes", "seconds", "MBps", "enobufs"}.
// Exit status: 0, 1 when a socket call failed, 2 on bad arguments.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h, Linux 4.18
#endif

namespace {

using Clock = std::chrono::steady_clock;
volatile sig_atomic_t g_stop = 0;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int fail(const char* what) {
  std::fprintf(stderr, "rcnet-bench-udp: %s: %s\n", what, std::strerror(errno));
  return 1;
}

int receive(std::uint16_t port, double limit_s, int idle_ms, double wait_s) {
  const int fd = ::socket(AF_INET6, SOCK_DGRAM, 0);
  if (fd < 0)
    return fail("socket");
  const int off = 0, buf = 8 << 20;
  (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  // SO_RCVBUFFORCE passes net.core.rmem_max as root; SO_RCVBUF otherwise.
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return fail("bind");
  std::vector<char> data(65536);
  std::uint64_t n = 0, bytes = 0, largest = 0;
  Clock::time_point first{}, last{};
  const auto started = Clock::now();
  while (!g_stop) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, n == 0 ? 200 : idle_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return fail("poll");
    if (r == 0) {
      if (n > 0 || seconds(Clock::now() - started) >= wait_s)
        break;  // idle after the stream, or no stream at all
      continue;
    }
    for (;;) {
      const ssize_t got = ::recv(fd, data.data(), data.size(), MSG_DONTWAIT);
      if (got < 0)
        break;
      last = Clock::now();
      if (n++ == 0)
        first = last;
      bytes += static_cast<std::uint64_t>(got);
      largest = std::max<std::uint64_t>(largest, static_cast<std::uint64_t>(got));
    }
    if (n > 0 && seconds(last - first) >= limit_s)
      break;
  }
  const double s = seconds(last - first);
  nlohmann::json j = {{"datagrams", n},
                      {"bytes", bytes},
                      {"largest", largest},
                      {"seconds", s},
                      {"MBps", s > 0 ? static_cast<double>(bytes) / s / 1e6 : 0.0}};
  std::printf("%s\n", j.dump().c_str());
  ::close(fd);
  return 0;
}

int send_stream(const std::string& addr, std::uint16_t port, double limit_s, int payload,
                int segments, std::uint64_t count, int gap_us) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* ai = nullptr;
  if (const int r = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &ai);
      r != 0) {
    std::fprintf(stderr, "rcnet-bench-udp: %s: %s\n", addr.c_str(), ::gai_strerror(r));
    return 2;
  }
  const int fd = ::socket(ai->ai_family, SOCK_DGRAM, 0);
  if (fd < 0)
    return fail("socket");
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
    return fail("connect");
  ::freeaddrinfo(ai);
  if (segments > 1 && ::setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &payload, sizeof payload) != 0)
    return fail("setsockopt UDP_SEGMENT");
  const std::vector<char> data(
      static_cast<std::size_t>(payload) * static_cast<std::size_t>(segments), 'u');
  std::uint64_t calls = 0, enobufs = 0;
  const auto t0 = Clock::now();
  while (!g_stop && (count == 0 || calls < count) &&
         (count != 0 || seconds(Clock::now() - t0) < limit_s)) {
    if (::send(fd, data.data(), data.size(), 0) < 0) {
      if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED) {
        ++enobufs;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      return fail("send");
    }
    ++calls;
    if (gap_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  const double s = seconds(Clock::now() - t0);
  const std::uint64_t bytes = calls * data.size();
  nlohmann::json j = {{"calls", calls},
                      {"datagrams", calls * static_cast<std::uint64_t>(segments)},
                      {"bytes", bytes},
                      {"seconds", s},
                      {"MBps", s > 0 ? static_cast<double>(bytes) / s / 1e6 : 0.0},
                      {"enobufs", enobufs}};
  std::printf("%s\n", j.dump().c_str());
  ::close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rcnet-bench-udp: a UDP stream, with UDP GSO super-packets"};
  app.require_subcommand(1);
  std::uint16_t port = 0;
  double limit_s = 5;
  int idle_ms = 1000, payload = 1400, segments = 1, gap_us = 0;
  double wait_s = 30;
  std::uint64_t count = 0;
  std::string addr;
  auto* recv = app.add_subcommand("recv", "count what arrives on PORT");
  recv->add_option("port", port, "UDP port")->required();
  recv->add_option("--seconds", limit_s, "stop this long after the first datagram")
      ->check(CLI::PositiveNumber);
  recv->add_option("--idle-ms", idle_ms, "stop when nothing came for this long")
      ->check(CLI::Range(1, 600000));
  recv->add_option("--wait-s", wait_s, "stop when nothing came this long after the start")
      ->check(CLI::PositiveNumber);
  auto* send = app.add_subcommand("send", "send a stream to ADDR PORT");
  send->add_option("addr", addr, "numeric IPv4 or IPv6 address")->required();
  send->add_option("port", port, "UDP port")->required();
  send->add_option("--seconds", limit_s, "how long to send")->check(CLI::PositiveNumber);
  send->add_option("--payload", payload, "bytes of each datagram")->check(CLI::Range(1, 65000));
  send->add_option("--segments", segments, "datagrams per call (UDP GSO when > 1)")
      ->check(CLI::Range(1, 64));
  send->add_option("--count", count, "calls to make (instead of --seconds)");
  send->add_option("--gap-us", gap_us, "microseconds between calls")->check(CLI::Range(0, 1000000));
  CLI11_PARSE(app, argc, argv);
  if (static_cast<long>(payload) * segments > 65507) {
    std::fprintf(stderr,
                 "rcnet-bench-udp: --payload x --segments must fit one UDP datagram "
                 "(65,507 bytes)\n");
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  if (*recv)
    return receive(port, limit_s, idle_ms, wait_s);
  return send_stream(addr, port, limit_s, payload, segments, count, gap_us);
}
