// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The real TUN device, in a private network namespace.
#include "tun.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>
#include <vector>
#include "catch2_compat.hpp"

#include "config/config.hpp"
#include "fd_store.hpp"
#include "nl.hpp"
#include "private_netns.hpp"
#include "wire/ip_packet.hpp"
#include "wire/vnet_hdr.hpp"

namespace daemon_tun_test {
using namespace rcnet;
using namespace rcnet::daemon;
using rcnet::wire::ip_destination;

namespace {
std::uint16_t ip_checksum(const std::uint8_t* p, std::size_t n) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2)
    sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

// An IPv4/UDP packet (UDP checksum 0 = none, RFC 768).
std::vector<std::byte> udp_packet(const IpAddr& src, const IpAddr& dst, std::uint16_t port,
                                  const std::string& payload) {
  std::array<std::uint8_t, 1500> p{};
  const std::size_t size = 28 + payload.size();
  p[0] = 0x45;
  p[2] = static_cast<std::uint8_t>(size >> 8);
  p[3] = static_cast<std::uint8_t>(size);
  p[8] = 64;
  p[9] = IPPROTO_UDP;
  std::memcpy(&p[12], src.bytes.data(), 4);
  std::memcpy(&p[16], dst.bytes.data(), 4);
  const auto cs = ip_checksum(p.data(), 20);
  p[10] = static_cast<std::uint8_t>(cs >> 8);
  p[11] = static_cast<std::uint8_t>(cs);
  p[20] = 0x30;  // source port 12345
  p[21] = 0x39;
  p[22] = static_cast<std::uint8_t>(port >> 8);
  p[23] = static_cast<std::uint8_t>(port);
  const auto ulen = 8 + payload.size();
  p[24] = static_cast<std::uint8_t>(ulen >> 8);
  p[25] = static_cast<std::uint8_t>(ulen);
  std::memcpy(&p[28], payload.data(), payload.size());
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), p.data(), size);
  return out;
}

// The ifindex of `name` in the current namespace, or -1.
int ifindex_of(const std::string& name) {
  auto sock = open_request_socket(NETLINK_ROUTE);
  rtnl_link* raw = nullptr;
  if (!sock || rtnl_link_get_kernel(sock->get(), 0, name.c_str(), &raw) != 0)
    return -1;
  RtnlLinkPtr link(raw);
  return rtnl_link_get_ifindex(link.get());
}
}  // namespace

TEST_CASE("TUN device: configured by netlink, packets flow both ways", "[daemon][tun][netns]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rct%d");
  REQUIRE(tun.ok());
  CHECK(tun->name().rfind("rct", 0) == 0);
  const auto prefix = *IpPrefix::parse("10.100.0.1/24");
  auto cfg = tun->configure(prefix, 9000);
  INFO((cfg.ok() ? "" : cfg.error().message()));
  REQUIRE(cfg.ok());
  // Configuring again is idempotent (address already present).
  REQUIRE(tun->configure(prefix, 9000).ok());

  auto sock = open_request_socket(NETLINK_ROUTE);
  REQUIRE(sock.ok());
  rtnl_link* raw = nullptr;
  REQUIRE(rtnl_link_get_kernel(sock->get(), 0, tun->name().c_str(), &raw) == 0);
  RtnlLinkPtr link(raw);
  CHECK(rtnl_link_get_mtu(link.get()) == 9000);
  CHECK((rtnl_link_get_flags(link.get()) & IFF_UP) != 0);

  // Kernel → TUN: a datagram routed to the TUN's subnet is read from the fd.
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  REQUIRE(udp.valid());
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  inet_pton(AF_INET, "10.100.0.2", &to.sin_addr);
  REQUIRE(::sendto(udp.get(), "ping", 4, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 4);
  // The kernel may also send its own packets out of a fresh link (IPv6 router
  // solicitations, MLD): look for ours among what is queued.
  std::vector<std::byte> buf(65536);
  std::optional<IpAddr> dst;
  std::size_t len = 0;
  for (int i = 0; i < 16; ++i) {
    auto n = tun->read(buf);
    if (!n) {
      CHECK(n.error().code == std::errc::resource_unavailable_try_again);
      break;
    }
    auto d = ip_destination(std::span(buf).first(*n));
    if (d && d->is_v4()) {
      dst = d;
      len = *n;
      break;
    }
  }
  REQUIRE(dst.has_value());
  CHECK(*dst == *IpAddr::parse("10.100.0.2"));
  CHECK(len == 20 + 8 + 4);

  // TUN → kernel: a packet written to the fd reaches a local socket.
  UniqueFd rx(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  bind_to.sin_port = htons(5555);
  inet_pton(AF_INET, "10.100.0.1", &bind_to.sin_addr);
  REQUIRE(::bind(rx.get(), reinterpret_cast<sockaddr*>(&bind_to), sizeof bind_to) == 0);
  REQUIRE(tun->write(udp_packet(*IpAddr::parse("10.100.0.2"), *IpAddr::parse("10.100.0.1"), 5555,
                                "hello over rc0"))
              .ok());
  char got[64] = {};
  const ssize_t r = ::recv(rx.get(), got, sizeof got, 0);
  REQUIRE(r == 14);
  CHECK(std::string(got, 14) == "hello over rc0");
}

TEST_CASE("TUN in a named netns: created there, never in the daemon's own namespace",
          "[daemon][tun][netns]") {
  // Daemons of one host, one per node namespace, all name their device rc0.
  // Creating it in the shared namespace and moving it let two starting at
  // once collide (TUNSETIFF: EBUSY, seen under systemd in the lab).
  daemon::test::PrivateNetns home;
  REQUIRE(home.entered());
  const std::string tag = std::to_string(::getpid());
  daemon::test::NamedNetns a("rcnet-unit-" + tag + "-a");
  daemon::test::NamedNetns b("rcnet-unit-" + tag + "-b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto ta = TunDevice::open("rcs0", false, "rcnet-unit-" + tag + "-a");
  INFO((ta.ok() ? "" : ta.error().message()));
  REQUIRE(ta.ok());
  // The name is still free here, while the first device exists.
  auto tb = TunDevice::open("rcs0", true, "rcnet-unit-" + tag + "-b");
  INFO((tb.ok() ? "" : tb.error().message()));
  REQUIRE(tb.ok());
  CHECK(ta->netns() == "rcnet-unit-" + tag + "-a");
  CHECK(tb->vnet_hdr_len() == 10);
  REQUIRE(ta->configure(*IpPrefix::parse("10.100.0.1/24"), 1500).ok());
  REQUIRE(tb->configure(*IpPrefix::parse("10.100.0.2/24"), 1500).ok());

  auto sock = open_request_socket(NETLINK_ROUTE);
  REQUIRE(sock.ok());
  rtnl_link* raw = nullptr;
  CHECK(rtnl_link_get_kernel(sock->get(), 0, "rcs0", &raw) < 0);
  RtnlLinkPtr none(raw);
  // A namespace that does not exist: the error names it.
  auto missing = TunDevice::open("rcs1", false, "rcnet-unit-" + tag + "-none");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("rcnet-unit-" + tag + "-none") != std::string::npos);
}

TEST_CASE("TUN names are validated before any syscall", "[daemon][tun]") {
  CHECK_FALSE(TunDevice::open("").ok());
  CHECK_FALSE(TunDevice::open("a-name-that-is-too-long").ok());
}

TEST_CASE("TUN with offload: vnet headers both ways, the kernel takes NEEDS_CSUM as verified",
          "[daemon][tun][netns][gso]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rcg%d", true);
  INFO((tun.ok() ? "" : tun.error().message()));
  REQUIRE(tun.ok());
  CHECK(tun->vnet_hdr_len() == 10);
  CHECK(tun->offloads().rfind("csum tso4 tso6 tso_ecn", 0) == 0);
  REQUIRE(tun->configure(*IpPrefix::parse("10.100.0.1/24"), 1500).ok());

  // Kernel → TUN: a UDP datagram leaves with a 10-byte header. With
  // TUN_F_CSUM the kernel leaves the UDP checksum to the device:
  // NEEDS_CSUM at the UDP header (csum_start 20, csum_offset 6).
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  REQUIRE(udp.valid());
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  inet_pton(AF_INET, "10.100.0.2", &to.sin_addr);
  REQUIRE(::sendto(udp.get(), "ping", 4, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 4);
  std::vector<std::byte> buf(70000);
  std::optional<wire::VnetHdr> hdr;
  for (int i = 0; i < 16 && !hdr; ++i) {
    auto n = tun->read(buf);
    REQUIRE(n.ok());
    REQUIRE(*n >= 10);
    const auto frame = std::span(buf).first(*n);
    const auto d = ip_destination(frame.subspan(10));
    if (d && d->is_v4()) {
      hdr = wire::parse_vnet_hdr(frame);
      CHECK(*n == 10 + 20 + 8 + 4);
    }
  }
  REQUIRE(hdr.has_value());
  CHECK(hdr->needs_csum());
  CHECK(hdr->csum_start == 20);
  CHECK(hdr->csum_offset == 6);
  CHECK_FALSE(hdr->is_gso());

  // TUN → kernel: a UDP packet whose checksum field holds only the
  // pseudo-header sum, written with NEEDS_CSUM, reaches the socket (the
  // stack takes CHECKSUM_PARTIAL as verified); without the flag it would be
  // dropped as a bad checksum.
  UniqueFd rx(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  bind_to.sin_port = htons(5555);
  inet_pton(AF_INET, "10.100.0.1", &bind_to.sin_addr);
  REQUIRE(::bind(rx.get(), reinterpret_cast<sockaddr*>(&bind_to), sizeof bind_to) == 0);
  auto pkt = udp_packet(*IpAddr::parse("10.100.0.2"), *IpAddr::parse("10.100.0.1"), 5555,
                        "partial checksum");
  // Pseudo-header sum: addresses, protocol, UDP length; folded, not inverted.
  std::uint32_t ps = 17 + static_cast<std::uint32_t>(pkt.size() - 20);
  for (std::size_t i = 12; i < 20; i += 2)
    ps += std::to_integer<std::uint32_t>(pkt[i]) << 8 | std::to_integer<std::uint32_t>(pkt[i + 1]);
  while (ps >> 16)
    ps = (ps & 0xffff) + (ps >> 16);
  pkt[26] = static_cast<std::byte>(ps >> 8);
  pkt[27] = static_cast<std::byte>(ps & 0xff);
  wire::VnetHdr partial;
  partial.flags = wire::kNeedsCsum;
  partial.csum_start = 20;
  partial.csum_offset = 6;
  auto frame = wire::build_vnet_hdr(partial);
  std::vector<std::byte> out(frame.begin(), frame.end());
  out.insert(out.end(), pkt.begin(), pkt.end());
  REQUIRE(tun->write(out).ok());
  char got[64] = {};
  REQUIRE(::recv(rx.get(), got, sizeof got, 0) == 16);
  CHECK(std::string(got, 16) == "partial checksum");

  // A header the kernel refuses (GSO with gso_size 0) fails the write.
  wire::VnetHdr bad;
  bad.gso_type = wire::kGsoTcpV4;
  frame = wire::build_vnet_hdr(bad);
  std::copy(frame.begin(), frame.end(), out.begin());
  CHECK_FALSE(tun->write(out).ok());
}

TEST_CASE("TUN device: both families on one TUN, and no link-local address to send RS from",
          "[daemon][tun][netns][dual]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rct%d");
  REQUIRE(tun.ok());
  const std::vector<IpPrefix> both = {*IpPrefix::parse("10.100.0.1/24"),
                                      *IpPrefix::parse("fd00:100::1/120")};
  auto cfg = tun->configure(both, 9000);
  INFO((cfg.ok() ? "" : cfg.error().message()));
  REQUIRE(cfg.ok());
  const auto addrs = config::system_interface_addresses(tun->name());
  REQUIRE(addrs);
  bool v4 = false, v6 = false, link_local = false;
  for (const IpAddr& a : *addrs) {
    v4 = v4 || a == *IpAddr::parse("10.100.0.1");
    v6 = v6 || a == *IpAddr::parse("fd00:100::1");
    link_local = link_local || (a.is_v6() && a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80);
  }
  CHECK(v4);
  CHECK(v6);
  // addr_gen_mode none before IFF_UP: the kernel made no fe80:: address,
  // and sends no router solicitation without one.
  CHECK_FALSE(link_local);
}

// What rcnetd finds after a restart under systemd: the device made by the
// last process, held only by the fd store's copy of its fd.
TEST_CASE("TUN kept across a restart: adopt() keeps the device and what tun.address still says",
          "[daemon][tun][netns][fdstore]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  UniqueFd kept;
  std::string name;
  {
    auto tun = TunDevice::open("rct%d");
    REQUIRE(tun.ok());
    name = tun->name();
    const std::vector<IpPrefix> both = {*IpPrefix::parse("10.100.0.1/24"),
                                        *IpPrefix::parse("fd00:100::1/120")};
    REQUIRE(tun->configure(both, 9000).ok());
    kept = UniqueFd(::fcntl(tun->fd(), F_DUPFD_CLOEXEC, 0));  // systemd's copy
    REQUIRE(kept.valid());
  }  // the first process's fd closed: the copy keeps the device
  const int ifindex = ifindex_of(name);
  REQUIRE(ifindex > 0);

  // The kernel routes to the device while no process reads it: the packet
  // waits in the TUN's queue.
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  inet_pton(AF_INET, "10.100.0.2", &to.sin_addr);
  REQUIRE(::sendto(udp.get(), "queued", 6, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 6);

  SECTION("a mismatch is refused, naming what differs") {
    UniqueFd copy(::fcntl(kept.get(), F_DUPFD_CLOEXEC, 0));
    auto other = TunDevice::adopt(std::move(copy), "rcother0", false);
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().context.find("tun.name is rcother0") != std::string::npos);
    copy = UniqueFd(::fcntl(kept.get(), F_DUPFD_CLOEXEC, 0));
    auto offload = TunDevice::adopt(std::move(copy), name, true);
    REQUIRE_FALSE(offload.ok());
    CHECK(offload.error().context.find("transport.offload = false") != std::string::npos);
    auto not_tun = TunDevice::adopt(UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC)), name, false);
    CHECK_FALSE(not_tun.ok());
  }

  auto tun = TunDevice::adopt(std::move(kept), name, false);
  REQUIRE(tun.ok());
  CHECK(tun->adopted());
  CHECK(tun->name() == name);
  // tun.address changed meanwhile: the new one is added, the old ones go.
  auto cfg = tun->configure(*IpPrefix::parse("10.100.0.3/24"), 9000);
  INFO((cfg.ok() ? "" : cfg.error().message()));
  REQUIRE(cfg.ok());
  CHECK(ifindex_of(name) == ifindex);
  const auto addrs = config::system_interface_addresses(name);
  REQUIRE(addrs);
  std::vector<std::string> shown;
  for (const IpAddr& a : *addrs)
    shown.push_back(a.to_string());
  CHECK(shown == std::vector<std::string>{"10.100.0.3"});

  std::vector<std::byte> buf(65536);
  bool found = false;
  for (int i = 0; i < 16 && !found; ++i) {
    auto n = tun->read(buf);
    if (!n)
      break;
    auto d = ip_destination(std::span(buf).first(*n));
    found = d && *d == *IpAddr::parse("10.100.0.2") && *n == 20 + 8 + 6;
  }
  CHECK(found);
}

// The notify protocol's side of the fd store: what systemd receives
// (sd_notify(3) FDSTORE=1, one fd in SCM_RIGHTS) and what it passes back
// (sd_listen_fds(3): fds from 3, LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES).
TEST_CASE("fd store: the TUN fd goes to NOTIFY_SOCKET by name, and comes back by name",
          "[daemon][fdstore]") {
  SECTION("store: FDSTORE=1 and FDNAME=tun with the fd") {
    UniqueFd sink(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    REQUIRE(sink.valid());
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    const std::string path = "/tmp/rcnet-fdstore-test-" + std::to_string(::getpid());
    ::unlink(path.c_str());
    std::memcpy(sun.sun_path, path.c_str(), path.size());
    REQUIRE(::bind(sink.get(), reinterpret_cast<sockaddr*>(&sun), sizeof sun) == 0);
    UniqueFd pipe_r, pipe_w;
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    pipe_r.reset(p[0]);
    pipe_w.reset(p[1]);
    REQUIRE(::setenv("NOTIFY_SOCKET", path.c_str(), 1) == 0);
    const bool sent = FdStore::store(pipe_w.get(), kTunFdName);
    ::unsetenv("NOTIFY_SOCKET");
    REQUIRE(sent);
    char text[256] = {};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{text, sizeof text - 1};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    REQUIRE(::recvmsg(sink.get(), &m, MSG_CMSG_CLOEXEC) > 0);
    CHECK(std::string(text) == "FDSTORE=1\nFDNAME=tun");
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    REQUIRE(c != nullptr);
    REQUIRE(c->cmsg_type == SCM_RIGHTS);
    int got = -1;
    std::memcpy(&got, CMSG_DATA(c), sizeof got);
    UniqueFd copy(got);
    // The copy is the same pipe: a byte written to it comes out of ours.
    REQUIRE(::write(copy.get(), "x", 1) == 1);
    char x = 0;
    CHECK(::read(pipe_r.get(), &x, 1) == 1);
    CHECK(x == 'x');
    ::unlink(path.c_str());
    // Outside systemd: nothing sent.
    CHECK_FALSE(FdStore::store(pipe_w.get(), kTunFdName));
  }
  SECTION("from_environment: the fd named tun, the environment unset") {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    // Above 3, which may be free here (then the pipe took it).
    UniqueFd pipe_r(::fcntl(p[0], F_DUPFD_CLOEXEC, 10)), pipe_w(::fcntl(p[1], F_DUPFD_CLOEXEC, 10));
    ::close(p[0]);
    ::close(p[1]);
    // sd_listen_fds passes fds from 3: put the pipe's write end there.
    UniqueFd saved(::fcntl(3, F_DUPFD_CLOEXEC, 10));
    REQUIRE(::dup2(pipe_w.get(), 3) == 3);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "1", 1);
    ::setenv("LISTEN_FDNAMES", "tun", 1);
    FdStore passed = FdStore::from_environment();
    CHECK(passed.passed() == 1);
    CHECK(std::getenv("LISTEN_FDS") == nullptr);
    CHECK_FALSE(passed.take("other").valid());
    UniqueFd tun = passed.take(kTunFdName);
    REQUIRE(tun.get() == 3);
    CHECK((::fcntl(3, F_GETFD) & FD_CLOEXEC) != 0);
    REQUIRE(::write(tun.get(), "y", 1) == 1);
    char y = 0;
    CHECK(::read(pipe_r.get(), &y, 1) == 1);
    CHECK(y == 'y');
    tun.release();
    if (saved.valid())
      ::dup2(saved.get(), 3);
    else
      ::close(3);
  }
}

}  // namespace daemon_tun_test
