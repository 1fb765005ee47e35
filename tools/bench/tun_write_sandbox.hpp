// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnet-bench-tun-write's sandbox (tun_write_bench.cpp): a network namespace
// of its own with lo up, the TUN device and a UDP sink that is never read,
// the packets written to it, and the namespace's UDP counters that say
// whether they arrived.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "unique_fd.hpp"

namespace rcnet::bench::tun_write {

inline constexpr const char* kTunName = "rcbench0";

// The network namespace of this process, with lo up, the TUN device and the
// sink socket: all of it vanishes when the process exits.
struct Sandbox {
  daemon::UniqueFd ctl;   // AF_INET socket for the interface ioctls
  daemon::UniqueFd tun;   // the device
  daemon::UniqueFd sink;  // bound to 10.77.0.1:9, never read
  int rcvbuf = 0;         // the sink's SO_RCVBUF as granted
};

// Moves this process into a new network namespace (must run as root) and
// builds the sandbox there; the TUN fd O_NONBLOCK with `nonblock`. Exits
// through fail() on any error.
Sandbox enter_sandbox(bool nonblock);

// One IPv4/UDP datagram of `total` bytes from 10.77.0.2:12345 to
// 10.77.0.1:9, DF set, header checksum correct, UDP checksum 0 (none, which
// IPv4 allows: RFC 768).
std::vector<std::byte> udp_packet(std::size_t total, std::uint16_t ip_id);

// The namespace's UDP counters (/proc/self/net is the caller's namespace).
struct UdpCounters {
  std::uint64_t reached = 0;  // InDatagrams + NoPorts + InErrors: every datagram udp_rcv judged
  std::uint64_t rcvbuf_errors = 0;
};

UdpCounters read_udp();

}  // namespace rcnet::bench::tun_write
