// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The overlay as an IP link (daemon/tun_path.hpp): routes via a peer, ICMP
// errors written back into the TUN, the source check on receive, and the
// ICMP rate limit and next-hop cache on their own.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <vector>
#include "catch2_compat.hpp"

#include "../wire/gso_packets.hpp"
#include "fake_port.hpp"
#include "fib.hpp"
#include "icmp_limit.hpp"
#include "make_loop.hpp"
#include "private_netns.hpp"
#include "test_helpers.hpp"
#include "tun.hpp"
#include "tun_path.hpp"
#include "unique_fd.hpp"
#include "wire/ip_packet.hpp"

namespace daemon_overlay_test {
using namespace rcnet;
using namespace rcnet::daemon;
using rcnet::daemon::test::make_loop;
using rcnet::unit::ip;

namespace {

std::vector<std::byte> ipv4(const IpAddr& src, const IpAddr& dst, std::size_t len = 60) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x45};
  p[2] = std::byte(len >> 8);
  p[3] = std::byte(len & 0xff);
  p[6] = std::byte{0x40};  // DF
  p[8] = std::byte{64};
  p[9] = std::byte{17};
  for (int i = 0; i < 4; ++i) {
    p[12 + i] = std::byte{src.bytes[i]};
    p[16 + i] = std::byte{dst.bytes[i]};
  }
  return p;
}

// A UDP packet over IPv6 (RFC 8200 header, then 8 bytes of UDP and zeros);
// `next` replaces UDP as the next header (58: ICMPv6, 0: hop-by-hop).
std::vector<std::byte> ipv6(const IpAddr& src, const IpAddr& dst, std::size_t len = 80,
                            std::uint8_t next = 17) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x60};
  p[4] = std::byte((len - 40) >> 8);
  p[5] = std::byte((len - 40) & 0xff);
  p[6] = std::byte{next};
  p[7] = std::byte{64};
  for (int i = 0; i < 16; ++i) {
    p[8 + i] = std::byte{src.bytes[i]};
    p[24 + i] = std::byte{dst.bytes[i]};
  }
  return p;
}

// Either family, by the addresses'.
std::vector<std::byte> packet(const IpAddr& src, const IpAddr& dst) {
  return dst.is_v4() ? ipv4(src, dst) : ipv6(src, dst);
}

unsigned b(const std::vector<std::byte>& p, std::size_t i) {
  return std::to_integer<unsigned>(p[i]);
}

// Our overlay has both families, 10.100.0.1/24 and fd00:100::1/120 (as
// tun.address = ["10.100.0.1/24", "fd00:100::1/120"]). Peer N (N != 99)
// owns 10.100.0.N and fd00:100::N, both mapped to its one underlay address,
// 10.99.0.N or, on an IPv6 underlay, fd99::N; the node id of peer N is N.
// The "FIB" routes 192.168.5.0/24 via 10.100.0.7 and fd00:5::/64 via
// fd00:100::7.
enum class Underlay { kV4, kV6 };

IpAddr underlay_of(Underlay u, std::uint8_t n) {
  return u == Underlay::kV4 ? IpAddr::v4((10u << 24) | (99u << 16) | n)
                            : ip(("fd99::" + std::to_string(n)).c_str());
}

struct OverlayFixture {
  EventLoop loop = make_loop();
  UniqueFd tun_end, world_end;
  std::vector<std::pair<Endpoint, std::size_t>> sent;
  std::map<IpAddr, std::uint32_t> mtu;  // by underlay
  int fib_calls = 0;
  int overlay_calls = 0;
  std::uint32_t overlay_shift = 0;  // node N owns 10.100.0.(N + shift)
  rcnet::test::FakePort port;
  std::unique_ptr<TunPath> path;

  explicit OverlayFixture(std::size_t vnet = 0, Underlay under = Underlay::kV4) {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    tun_end.reset(sv[0]);
    world_end.reset(sv[1]);
    // As Config::peer_endpoint_for: either family of peer N's to its one
    // endpoint.
    port.on_route = [under](const IpAddr& d) -> std::optional<Endpoint> {
      std::uint8_t n = 0;
      if (IpPrefix{ip("10.100.0.0"), 24}.contains(d))
        n = d.bytes[3];
      else if (IpPrefix{ip("fd00:100::"), 120}.contains(d))
        n = d.bytes[15];
      if (n == 0 || n == 99 || n == 255)
        return std::nullopt;
      return Endpoint{underlay_of(under, n), 7471};
    };
    // As cm::Manager::send: kOversize for a plain packet larger than the
    // peer's MTU; a super-packet is taken whole.
    port.on_send = [this, vnet](const Endpoint& ep, std::span<const std::byte> p) {
      const auto hdr = wire::parse_vnet_hdr(p);
      const bool gso = vnet != 0 && hdr && hdr->is_gso();
      if (auto it = mtu.find(ep.addr); it != mtu.end() && !gso && p.size() - vnet > it->second)
        return cm::SendResult::kOversize;
      sent.emplace_back(ep, p.size());
      return cm::SendResult::kSent;
    };
    port.on_peer_mtu = [this](const Endpoint& ep) -> std::optional<std::uint32_t> {
      auto it = mtu.find(ep.addr);
      if (it == mtu.end())
        return std::nullopt;
      return it->second;
    };
    port.on_peer_overlays = [this](NodeId n) -> std::optional<cm::PeerOverlays> {
      ++overlay_calls;
      if (n == 0 || n + overlay_shift > 254)
        return std::nullopt;
      const auto host = static_cast<std::uint32_t>(n + overlay_shift);
      return cm::PeerOverlays{IpAddr::v4((10u << 24) | (100u << 16) | host),
                              ip(("fd00:100::" + std::to_string(host)).c_str())};
    };
    auto next_hop = [this](const IpAddr& d) -> std::optional<IpAddr> {
      ++fib_calls;
      if (IpPrefix{ip("192.168.5.0"), 24}.contains(d))
        return ip("10.100.0.7");
      if (IpPrefix{ip("fd00:5::"), 64}.contains(d))
        return ip("fd00:100::7");
      return std::nullopt;
    };
    path = std::make_unique<TunPath>(loop, port, vnet,
                                     TunPath::Overlay{.address = {ip("10.100.0.1"), 24},
                                                      .address6 = IpPrefix{ip("fd00:100::1"), 120},
                                                      .source_check = true},
                                     next_hop);
    REQUIRE(path->attach(tun_end.get()).ok());
  }
  void inject(const std::vector<std::byte>& p) {
    REQUIRE(::send(world_end.get(), p.data(), p.size(), 0) == static_cast<ssize_t>(p.size()));
  }
  void spin_all() {
    for (int i = 0; i < 50; ++i)
      REQUIRE(loop.run_once(Duration::zero()).ok());
  }
  // Every packet the path wrote into the TUN.
  std::vector<std::vector<std::byte>> written() {
    std::vector<std::vector<std::byte>> out;
    for (;;) {
      std::vector<std::byte> buf(70000);
      const ssize_t n = ::recv(world_end.get(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n < 0)
        return out;
      buf.resize(static_cast<std::size_t>(n));
      out.push_back(std::move(buf));
    }
  }
};

}  // namespace

TEST_CASE("overlay: a destination routed via a peer goes to that peer; the overlay needs no lookup",
          "[daemon][overlay]") {
  OverlayFixture f;
  f.inject(ipv4(ip("10.100.0.1"), ip("192.168.5.9")));
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.2")));
  f.spin_all();
  REQUIRE(f.sent.size() == 2);
  CHECK(f.sent[0].first == Endpoint{ip("10.99.0.7"), 7471});  // the gateway's peer
  CHECK(f.sent[1].first == Endpoint{ip("10.99.0.2"), 7471});
  CHECK(f.fib_calls == 1);  // only for the destination outside the prefix
  CHECK(f.path->counters().tx_via_gateway == 1);
  CHECK(f.path->counters().drops_unmapped == 0);
  CHECK(f.written().empty());
}

TEST_CASE("overlay: both families to a peer go to its one endpoint, on either underlay",
          "[daemon][overlay][dual]") {
  for (const Underlay under : {Underlay::kV4, Underlay::kV6}) {
    INFO((under == Underlay::kV4 ? "IPv4 underlay" : "IPv6 underlay"));
    OverlayFixture f(0, under);
    f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.2")));
    f.inject(ipv6(ip("fd00:100::1"), ip("fd00:100::2")));
    f.inject(ipv4(ip("10.100.0.1"), ip("192.168.5.9")));  // via 10.100.0.7
    f.inject(ipv6(ip("fd00:100::1"), ip("fd00:5::9")));   // via fd00:100::7
    f.spin_all();
    REQUIRE(f.sent.size() == 4);
    const Endpoint two{underlay_of(under, 2), 7471}, seven{underlay_of(under, 7), 7471};
    CHECK(f.sent[0].first == two);
    CHECK(f.sent[1].first == two);  // the same peer, the same connection
    CHECK(f.sent[2].first == seven);
    CHECK(f.sent[3].first == seven);
    CHECK(f.path->counters().tx_via_gateway == 2);
    CHECK(f.fib_calls == 2);  // neither overlay prefix needs a lookup
    CHECK(f.path->counters().drops_unmapped == 0);
    CHECK(f.written().empty());
  }
}

TEST_CASE("overlay: an ICMP error comes from our address in the packet's family",
          "[daemon][overlay][dual][icmp]") {
  OverlayFixture f;
  f.inject(ipv6(ip("fd00:100::1"), ip("fd00:100::63")));  // host 99: no peer
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.99")));
  f.inject(ipv6(ip("fd00:100::1"), ip("fd00:200::1")));  // not routed via a peer
  f.spin_all();
  CHECK(f.sent.empty());
  CHECK(f.path->counters().drops_unmapped == 3);
  const auto w = f.written();
  REQUIRE(w.size() == 3);
  CHECK(*wire::ip_source(w[0]) == ip("fd00:100::1"));
  CHECK(*wire::ip_destination(w[0]) == ip("fd00:100::1"));
  CHECK(b(w[0], 6) == 58);  // ICMPv6
  CHECK(b(w[0], 40) == 1);  // destination unreachable
  CHECK(b(w[0], 41) == 3);  // address unreachable
  CHECK(*wire::ip_source(w[1]) == ip("10.100.0.1"));
  CHECK(b(w[1], 9) == 1);  // ICMP
  CHECK(*wire::ip_source(w[2]) == ip("fd00:100::1"));
  CHECK(f.path->counters().icmp_unreachable_sent == 3);
}

TEST_CASE("overlay: the kernel's own link-scope multicast is counted, neither sent nor a drop",
          "[daemon][overlay][dual]") {
  OverlayFixture f;
  const IpAddr none = ip("::");
  f.inject(ipv6(ip("fe80::1"), ip("ff02::2"), 56, 58));  // router solicitation
  f.inject(ipv6(none, ip("ff02::16"), 96, 0));           // MLDv2 report (hop-by-hop)
  f.inject(ipv6(none, ip("ff02::1:ff00:1"), 72, 58));    // DAD neighbour solicitation
  f.inject(ipv4(ip("10.100.0.1"), ip("224.0.0.22")));    // IGMPv3 report
  f.inject(ipv6(ip("fd00:100::1"), ip("ff0e::1")));      // global multicast: a drop
  f.inject(ipv4(ip("10.100.0.1"), ip("239.1.1.1")));     // so is this
  f.spin_all();
  CHECK(f.sent.empty());
  const auto& c = f.path->counters();
  CHECK(c.link_scope_multicast == 4);
  CHECK(c.drops_unmapped == 2);
  CHECK(c.icmp_unreachable_sent == 0);  // never for multicast
  CHECK(f.written().empty());
}

TEST_CASE("overlay: the source check takes a peer's own address in either family",
          "[daemon][overlay][dual][source]") {
  OverlayFixture f;
  auto deliver = [&](NodeId from, const char* src) {
    const IpAddr s = ip(src);
    f.path->deliver(from, packet(s, s.is_v4() ? ip("10.100.0.1") : ip("fd00:100::1")));
  };
  deliver(2, "fd00:100::2");  // its own IPv6 address: written
  deliver(2, "10.100.0.2");   // its own IPv4 address: written
  deliver(2, "fd00:100::9");  // another node's: dropped
  deliver(7, "fd00:5::9");    // routed via fd00:100::7: written
  deliver(2, "fd00:5::9");    // routed via another peer: dropped
  CHECK(f.path->counters().drops_source == 2);
  CHECK(f.path->counters().tun_tx_packets == 3);
  CHECK(f.overlay_calls == 2);  // one answer per peer, both families
}

TEST_CASE("overlay: no peer for a destination: host unreachable from our address",
          "[daemon][overlay][icmp]") {
  OverlayFixture f;
  const auto orig = ipv4(ip("10.100.0.1"), ip("10.100.0.99"), 84);
  f.inject(orig);
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.255")));  // broadcast: no error
  f.inject(ipv4(ip("10.100.0.1"), ip("172.16.0.1")));    // no route via a peer
  f.spin_all();
  CHECK(f.sent.empty());
  CHECK(f.path->counters().drops_unmapped == 3);
  const auto w = f.written();
  REQUIRE(w.size() == 2);
  CHECK(*wire::ip_source(w[0]) == ip("10.100.0.1"));
  CHECK(*wire::ip_destination(w[0]) == ip("10.100.0.1"));
  CHECK(b(w[0], 9) == 1);
  CHECK(b(w[0], 20) == 3);  // destination unreachable
  CHECK(b(w[0], 21) == 1);  // host unreachable
  CHECK(w[0].size() == 28 + orig.size());
  CHECK(std::equal(orig.begin(), orig.end(), w[0].begin() + 28));
  CHECK(f.path->counters().icmp_unreachable_sent == 2);
  CHECK(f.path->counters().tun_tx_packets == 0);  // delivered packets only
}

TEST_CASE("overlay: host unreachable is rate-limited per destination", "[daemon][overlay][icmp]") {
  OverlayFixture f;
  const int n = 20;
  for (int i = 0; i < n; ++i)
    f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.99")));
  f.spin_all();
  const auto& c = f.path->counters();
  CHECK(c.drops_unmapped == n);
  // The burst (6), plus at most one per second the test took.
  CHECK(c.icmp_unreachable_sent >= IcmpLimiter::kDestinationBurst);
  CHECK(c.icmp_unreachable_sent < static_cast<std::uint64_t>(n));
  CHECK(c.icmp_unreachable_sent + c.icmp_rate_limited == n);
  CHECK(f.written().size() == c.icmp_unreachable_sent);
}

TEST_CASE("overlay: larger than the peer's MTU: fragmentation needed with that MTU",
          "[daemon][overlay][icmp]") {
  OverlayFixture f;
  f.mtu[ip("10.99.0.3")] = 1400;
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.3"), 1500));
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.3"), 1400));  // fits exactly
  f.inject(ipv4(ip("10.100.0.1"), ip("10.100.0.2"), 1500));  // MTU not known yet: sent
  f.spin_all();
  REQUIRE(f.sent.size() == 2);
  CHECK(f.sent[0].second == 1400);
  CHECK(f.sent[1].second == 1500);
  CHECK(f.path->counters().drops_too_big == 1);
  const auto w = f.written();
  REQUIRE(w.size() == 1);
  CHECK(b(w[0], 20) == 3);
  CHECK(b(w[0], 21) == 4);
  CHECK(((b(w[0], 26) << 8) | b(w[0], 27)) == 1400);
  CHECK(w[0].size() == wire::kIcmp4ErrorMax);
  CHECK(f.path->counters().icmp_too_big_sent == 1);
}

TEST_CASE("overlay: a GSO super-packet is too big only when its segments are",
          "[daemon][overlay][icmp][gso]") {
  OverlayFixture f(wire::kVnetHdrLen);
  f.mtu[ip("10.99.0.2")] = 1400;
  // 20 kB of TCP to 10.100.0.2 in segments of 40 + 1300 bytes: fits.
  const auto super = rcnet::test::tcp_super_packet(false, 20000);
  f.inject(rcnet::test::frame_of(rcnet::test::tso_hdr(false, 1300), super));
  // The same with segments of 40 + 1448: too big.
  f.inject(rcnet::test::frame_of(rcnet::test::tso_hdr(false, 1448), super));
  f.spin_all();
  REQUIRE(f.sent.size() == 1);
  CHECK(f.sent[0].second == wire::kVnetHdrLen + super.size());
  CHECK(f.path->counters().drops_too_big == 1);
  const auto w = f.written();
  REQUIRE(w.size() == 1);
  // A zeroed vnet header, then the error with the peer's MTU.
  for (std::size_t i = 0; i < wire::kVnetHdrLen; ++i)
    CHECK(b(w[0], i) == 0);
  const std::vector<std::byte> icmp(w[0].begin() + wire::kVnetHdrLen, w[0].end());
  CHECK(b(icmp, 20) == 3);
  CHECK(b(icmp, 21) == 4);
  CHECK(((b(icmp, 26) << 8) | b(icmp, 27)) == 1400);
  CHECK(rcnet::test::ref_sum(icmp, 0, 20) == 0xffff);            // IP header
  CHECK(rcnet::test::ref_sum(icmp, 20, icmp.size()) == 0xffff);  // ICMP, no pseudo-header
}

TEST_CASE("overlay: the source check takes a peer's own address and what is routed via it",
          "[daemon][overlay][source]") {
  OverlayFixture f;
  auto deliver = [&](NodeId from, const char* src) {
    const auto p = ipv4(ip(src), ip("10.100.0.1"));
    f.path->deliver(from, p);
  };
  deliver(2, "10.100.0.2");   // its own: written
  deliver(2, "10.100.0.9");   // another node's overlay address: dropped
  deliver(7, "192.168.5.9");  // routed via 10.100.0.7: written
  deliver(2, "192.168.5.9");  // routed via another peer: dropped
  deliver(2, "172.16.0.1");   // not routed via the TUN at all: dropped
  deliver(0, "10.100.0.2");   // from no known connection: dropped
  CHECK(f.path->counters().drops_source == 4);
  CHECK(f.path->counters().tun_tx_packets == 2);
  CHECK(f.written().size() == 2);

  f.path->set_source_check(false);  // tun.source_check = false
  deliver(2, "10.100.0.9");
  CHECK(f.path->counters().drops_source == 4);
  CHECK(f.path->counters().tun_tx_packets == 3);
}

TEST_CASE("overlay: a peer's overlay address is asked once, and again after a reload",
          "[daemon][overlay][source]") {
  OverlayFixture f;
  auto deliver = [&](NodeId from, const char* src) {
    f.path->deliver(from, ipv4(ip(src), ip("10.100.0.1")));
  };
  for (int i = 0; i < 5; ++i)
    deliver(2, "10.100.0.2");
  CHECK(f.overlay_calls == 1);
  CHECK(f.path->counters().tun_tx_packets == 5);
  // The peer table changes: node 2 now owns 10.100.0.3. Until the reload
  // (which calls set_source_check) the old answer holds.
  f.overlay_shift = 1;
  deliver(2, "10.100.0.3");
  CHECK(f.path->counters().drops_source == 1);
  f.path->set_source_check(true);
  deliver(2, "10.100.0.3");
  CHECK(f.path->counters().tun_tx_packets == 6);
  CHECK(f.overlay_calls == 2);
}

TEST_CASE("ICMP limiter: a burst of 6 per destination, then one per second",
          "[daemon][overlay][icmp]") {
  IcmpLimiter l;
  const TimePoint t0{std::chrono::seconds(100)};
  const auto a = ip("10.100.0.1"), other = ip("10.100.0.2");
  int allowed = 0;
  for (int i = 0; i < 10; ++i)
    allowed += l.allow(a, t0) ? 1 : 0;
  CHECK(allowed == 6);
  CHECK(l.allow(other, t0));  // its own bucket
  CHECK_FALSE(l.allow(a, t0 + std::chrono::milliseconds(999)));
  CHECK(l.allow(a, t0 + std::chrono::milliseconds(1000)));
  CHECK_FALSE(l.allow(a, t0 + std::chrono::milliseconds(1500)));
  // Idle long enough, the burst is back, and no more than the burst.
  allowed = 0;
  for (int i = 0; i < 10; ++i)
    allowed += l.allow(a, t0 + std::chrono::seconds(60)) ? 1 : 0;
  CHECK(allowed == 6);
}

TEST_CASE("ICMP limiter: the host's bucket caps many destinations at once",
          "[daemon][overlay][icmp]") {
  IcmpLimiter l;
  const TimePoint t0{std::chrono::seconds(100)};
  int allowed = 0;
  for (std::uint32_t i = 1; i <= 200; ++i)
    allowed += l.allow(IpAddr::v4(0x0a640000u + i), t0) ? 1 : 0;
  CHECK(allowed == static_cast<int>(IcmpLimiter::kHostBurst));
  // 10 ms later: 10 more tokens (1000 per second).
  allowed = 0;
  for (std::uint32_t i = 201; i <= 400; ++i)
    allowed += l.allow(IpAddr::v4(0x0a640000u + i), t0 + std::chrono::milliseconds(10)) ? 1 : 0;
  CHECK(allowed == 10);
  CHECK(l.destinations() <= IcmpLimiter::kMaxDestinations);
}

TEST_CASE("next-hop cache: bounded, and a full cache starts over", "[daemon][overlay]") {
  NextHopCache c;
  for (std::uint32_t i = 0; i < NextHopCache::kMaxEntries; ++i)
    c.insert(IpAddr::v4(0xc0a80000u + i), std::nullopt);
  CHECK(c.size() == NextHopCache::kMaxEntries);
  c.insert(IpAddr::v4(0xc0a80000u), ip("10.100.0.7"));  // present: replaced in place
  CHECK(c.size() == NextHopCache::kMaxEntries);
  REQUIRE(c.find(IpAddr::v4(0xc0a80000u)) != nullptr);
  CHECK(*c.find(IpAddr::v4(0xc0a80000u)) == ip("10.100.0.7"));
  c.insert(ip("172.16.0.1"), ip("10.100.0.3"));  // one more: emptied first
  CHECK(c.size() == 1);
  CHECK(c.find(IpAddr::v4(0xc0a80001u)) == nullptr);
  REQUIRE(c.find(ip("172.16.0.1")) != nullptr);
  CHECK(*c.find(ip("172.16.0.1")) == ip("10.100.0.3"));
}

// --- with the kernel: a TUN in a private network namespace ------------------

namespace {

// A UDP socket connected to `to`:9 with IP_RECVERR, so that an ICMP error
// about what it sent shows as the socket's error.
UniqueFd udp_to(const char* to) {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  REQUIRE(s.valid());
  const int on = 1;
  REQUIRE(::setsockopt(s.get(), SOL_IP, IP_RECVERR, &on, sizeof on) == 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(9);
  inet_pton(AF_INET, to, &a.sin_addr);
  REQUIRE(::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

// The next IPv4 packet the TUN hands over (skipping the kernel's own IPv6
// chatter on a fresh link).
std::vector<std::byte> read_v4(TunDevice& tun) {
  std::vector<std::byte> buf(65536);
  for (int i = 0; i < 16; ++i) {
    auto n = tun.read(buf);
    REQUIRE(n.ok());
    if (*n >= 20 && (b(buf, 0) >> 4) == 4) {
      buf.resize(*n);
      return buf;
    }
  }
  FAIL("no IPv4 packet on the TUN");
  return {};
}

}  // namespace

TEST_CASE("overlay: the stack takes our ICMP errors (accept_local) and path MTU follows",
          "[daemon][overlay][icmp][netns]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rct%d");
  REQUIRE(tun.ok());
  REQUIRE(tun->configure(*IpPrefix::parse("10.100.0.1/24"), 9000).ok());
  const IpAddr ours = ip("10.100.0.1");
  std::vector<std::byte> out(wire::kIcmpErrorMax);

  // Host unreachable from our own address: the sender's socket hears it.
  // Without accept_local the kernel drops it as a martian and recv() would
  // find nothing (EAGAIN).
  auto s = udp_to("10.100.0.99");
  REQUIRE(::send(s.get(), "x", 1, 0) == 1);
  const auto pkt = read_v4(*tun);
  out.resize(wire::build_icmp_error(wire::IcmpError::kUnreachable, pkt, ours, 0, out));
  REQUIRE(!out.empty());
  REQUIRE(tun->write(out).ok());
  char c;
  CHECK(::recv(s.get(), &c, 1, 0) < 0);
  CHECK(errno == EHOSTUNREACH);

  // Fragmentation needed: the route's path MTU drops to what it said.
  auto big = udp_to("10.100.0.5");
  const int pmtu = IP_PMTUDISC_DO;
  REQUIRE(::setsockopt(big.get(), SOL_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) == 0);
  std::vector<char> payload(4000, 'a');
  REQUIRE(::send(big.get(), payload.data(), payload.size(), 0) ==
          static_cast<ssize_t>(payload.size()));
  const auto pkt2 = read_v4(*tun);
  CHECK(pkt2.size() == 4028);
  out.resize(wire::kIcmpErrorMax);
  out.resize(wire::build_icmp_error(wire::IcmpError::kTooBig, pkt2, ours, 1500, out));
  REQUIRE(tun->write(out).ok());
  int mtu = 0;
  socklen_t len = sizeof mtu;
  REQUIRE(::getsockopt(big.get(), SOL_IP, IP_MTU, &mtu, &len) == 0);
  CHECK(mtu == 1500);
  CHECK(::send(big.get(), payload.data(), payload.size(), 0) < 0);
  CHECK(errno == EMSGSIZE);
}

TEST_CASE("overlay: FibNextHop asks the kernel once per destination and follows route changes",
          "[daemon][overlay][netns]") {
  daemon::test::PrivateNetns ns;
  REQUIRE(ns.entered());
  auto tun = TunDevice::open("rct%d");
  REQUIRE(tun.ok());
  REQUIRE(tun->configure(*IpPrefix::parse("10.100.0.1/24"), 9000).ok());
  EventLoop loop = make_loop();
  auto fib = FibNextHop::create(loop, "", tun->name());
  INFO((fib.ok() ? "" : fib.error().message()));
  REQUIRE(fib.ok());
  auto& f = **fib;
  const std::string dev = tun->name();
  REQUIRE(std::system(("ip route add 192.168.5.0/24 via 10.100.0.7 dev " + dev).c_str()) == 0);
  REQUIRE(loop.run_once(Duration::zero()).ok());  // the route's notification

  CHECK(f.gateway(ip("192.168.5.9")) == ip("10.100.0.7"));
  CHECK(f.gateway(ip("10.100.0.3")) == std::nullopt);  // on-link: no gateway
  CHECK(f.gateway(ip("172.16.0.1")) == std::nullopt);  // no route at all
  CHECK(f.queries() == 3);
  CHECK(f.gateway(ip("192.168.5.9")) == ip("10.100.0.7"));
  CHECK(f.gateway(ip("172.16.0.1")) == std::nullopt);
  CHECK(f.queries() == 3);  // both from the cache

  REQUIRE(std::system(("ip route replace 192.168.5.0/24 via 10.100.0.8 dev " + dev).c_str()) == 0);
  REQUIRE(loop.run_once(Duration::zero()).ok());
  CHECK(f.flushes() == 1);
  const auto gw = f.gateway(ip("192.168.5.9"));
  INFO((gw ? gw->to_string() : "none") << " queries " << f.queries());
  CHECK(gw == ip("10.100.0.8"));
  CHECK(f.queries() == 4);
}

}  // namespace daemon_overlay_test
