// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-tun-write's sandbox (tun_write_sandbox.hpp): the namespace,
// the TUN device and the sink, set up with ioctls as ip(8) would.
#include "tun_write_sandbox.hpp"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>

#include "tun_write_bench.hpp"
#include "wire/gso.hpp"

namespace rcnet::bench::tun_write {

namespace {

using daemon::UniqueFd;

constexpr std::uint32_t kLocal = 0x0a4d0001;  // 10.77.0.1, the device's address
constexpr std::uint32_t kPeer = 0x0a4d0002;   // 10.77.0.2, the packets' source
constexpr std::uint16_t kPort = 9;            // discard
constexpr int kMtu = 65520;
// Requested with SO_RCVBUFFORCE (the kernel doubles it): "large", though in
// the timed cells it is always full anyway.
constexpr int kRcvbuf = 16 << 20;

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

}  // namespace

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

}  // namespace rcnet::bench::tun_write
