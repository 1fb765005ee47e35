// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The TUN data path over a SOCK_SEQPACKET pair, which keeps packet boundaries
// exactly as a TUN fd opened with IFF_NO_PI does.
#include "tun_path.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <vector>
#include "catch2_compat.hpp"

#include "../wire/gso_packets.hpp"
#include "fake_port.hpp"
#include "make_loop.hpp"
#include "unique_fd.hpp"
#include "wire/vnet_hdr.hpp"

namespace daemon_tun_path_test {
using namespace rcnet;
using namespace rcnet::daemon;
using rcnet::daemon::test::make_loop;

namespace {

std::vector<std::byte> ipv4_to(const IpAddr& dst, std::size_t len = 40) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x45};
  for (int i = 0; i < 4; ++i)
    p[16 + i] = std::byte{dst.bytes[i]};
  return p;
}

struct TunFixture {
  EventLoop loop = make_loop();
  UniqueFd tun_end, world_end;  // tun_end plays the TUN fd
  std::vector<std::pair<Endpoint, std::size_t>> sent;
  cm::SendResult next_result = cm::SendResult::kSent;
  bool capacity = true;
  std::size_t pause_after = 0;  // signal the pause at this many sent (0 = never)
  int batch_open = 0;           // begin_send_batch minus end_send_batch
  int batches = 0;
  std::vector<int> open_at_send;  // batch_open when each packet was sent
  rcnet::test::FakePort port;
  std::unique_ptr<TunPath> path;

  explicit TunFixture(std::size_t vnet_hdr_len = 0) {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    tun_end.reset(sv[0]);
    world_end.reset(sv[1]);
    // 10.100.0.N → 10.99.0.N:7471; nothing else is mapped.
    port.on_route = [](const IpAddr& d) -> std::optional<Endpoint> {
      if (!d.is_v4() || d.bytes[0] != 10 || d.bytes[1] != 100)
        return std::nullopt;
      IpAddr u = d;
      u.bytes[1] = 99;
      return Endpoint{u, 7471};
    };
    // A stand-in for cm::Manager::send: it holds the packet and signals the
    // pause when out of slots, as the manager does through
    // cm::PacketSink::send_capacity().
    port.on_send = [this](const Endpoint& ep, std::span<const std::byte> p) {
      sent.emplace_back(ep, p.size());
      open_at_send.push_back(batch_open);
      if (!capacity || sent.size() == pause_after) {
        path->send_capacity(false);
        return cm::SendResult::kQueued;
      }
      return next_result;
    };
    port.on_begin_batch = [this] {
      ++batch_open;
      ++batches;
    };
    port.on_end_batch = [this] { --batch_open; };
    path = std::make_unique<TunPath>(loop, port, vnet_hdr_len);
    REQUIRE(path->attach(tun_end.get()).ok());
  }
  void inject(const std::vector<std::byte>& p) {
    REQUIRE(::send(world_end.get(), p.data(), p.size(), 0) == static_cast<ssize_t>(p.size()));
  }
  void spin() { REQUIRE(loop.run_once(Duration::zero()).ok()); }
  // Enough loop iterations to read whatever was injected (a wakeup reads at
  // most its budget).
  void spin_all() {
    for (int i = 0; i < 200; ++i)
      spin();
  }
};

}  // namespace

TEST_CASE("TUN packets go to the peer their destination maps to", "[daemon][tun]") {
  TunFixture f;
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.2"), 100));
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.3"), 200));
  f.inject(ipv4_to(*IpAddr::parse("192.168.1.1")));       // unmapped
  f.inject(std::vector<std::byte>(30, std::byte{0x10}));  // not IP
  f.spin_all();
  REQUIRE(f.sent.size() == 2);
  CHECK(f.sent[0].first == Endpoint{*IpAddr::parse("10.99.0.2"), 7471});
  CHECK(f.sent[0].second == 100);
  CHECK(f.sent[1].first == Endpoint{*IpAddr::parse("10.99.0.3"), 7471});
  CHECK(f.sent[1].second == 200);
  const auto& c = f.path->counters();
  CHECK(c.tun_rx_packets == 4);
  CHECK(c.drops_unmapped == 1);
  CHECK(c.drops_not_ip == 1);
  CHECK(c.tun_rx_bytes == 100 + 200 + 40 + 30);
}

TEST_CASE("at low load a wakeup reads one packet and no empty read follows", "[daemon][tun]") {
  TunFixture f;
  const auto dst = *IpAddr::parse("10.100.0.2");
  // Packets one at a time, as ping -A sends them: each wakeup reads exactly
  // one; the budget grows after kGrowAfter full passes, and the one empty
  // read that follows puts it back to one.
  const int packets = 100;
  for (int i = 0; i < packets; ++i) {
    f.inject(ipv4_to(dst));
    f.path->on_readable();
    CHECK(f.sent.size() == static_cast<std::size_t>(i + 1));
  }
  const auto empty = f.path->counters().read_empty;
  CHECK(empty == packets / (TunPath::kGrowAfter + 1));  // was one per packet (drain to EAGAIN)
  CHECK(f.path->read_budget() <= 2);
}

TEST_CASE("under load the read budget doubles up to one batch per wakeup", "[daemon][tun]") {
  TunFixture f;
  // Keep a batch queued before every pass, as a sender faster than us does.
  std::size_t injected = 0;
  auto top_up = [&] {
    for (; injected - f.sent.size() < static_cast<std::size_t>(TunPath::kReadBatch); ++injected)
      f.inject(ipv4_to(*IpAddr::parse("10.100.0.2")));
  };
  std::vector<std::size_t> per_pass;
  for (int pass = 0; pass < 40; ++pass) {
    top_up();
    const auto before = f.sent.size();
    f.path->on_readable();
    per_pass.push_back(f.sent.size() - before);
  }
  // 1, 1, 1, 1, 2, 2, 2, 2, 4, ... then 64 per pass: never more than a batch.
  CHECK(per_pass.front() == 1);
  CHECK(per_pass[TunPath::kGrowAfter] == 2);
  CHECK(per_pass[2 * TunPath::kGrowAfter] == 4);
  CHECK(per_pass.back() == static_cast<std::size_t>(TunPath::kReadBatch));
  for (auto n : per_pass)
    CHECK(n <= static_cast<std::size_t>(TunPath::kReadBatch));
  CHECK(f.path->counters().read_empty == 0);  // no pass found the queue empty
  // The queue runs dry: the pass that finds it empty puts the budget back.
  f.path->on_readable();
  CHECK(f.sent.size() == injected);
  CHECK(f.path->counters().read_empty == 1);
  CHECK(f.path->read_budget() == 1);
}

TEST_CASE("the packets of one wakeup are sent inside one send batch", "[daemon][tun]") {
  TunFixture f;
  for (int i = 0; i < 3; ++i)
    f.inject(ipv4_to(*IpAddr::parse(i == 1 ? "10.100.0.3" : "10.100.0.2")));
  f.inject(ipv4_to(*IpAddr::parse("192.0.2.1")));  // unmapped: dropped inside the batch
  for (int pass = 0; pass < 6; ++pass) {
    f.path->on_readable();
    CHECK(f.batch_open == 0);  // ended before the pass returns, on every path
  }
  CHECK(f.batches == 6);
  REQUIRE(f.sent.size() == 3);
  for (int open : f.open_at_send)
    CHECK(open == 1);
  CHECK(f.path->counters().drops_unmapped == 1);
}

TEST_CASE("no send slot stops reading until capacity returns", "[daemon][tun]") {
  TunFixture f;
  const auto dst = *IpAddr::parse("10.100.0.2");
  f.capacity = false;  // the manager holds the next packet and signals the pause
  f.inject(ipv4_to(dst));
  f.inject(ipv4_to(dst));
  f.spin();
  CHECK(f.sent.size() == 1);  // the held one; the second was not even read
  CHECK_FALSE(f.path->reading());
  CHECK(f.path->counters().read_pauses == 1);
  CHECK(f.path->counters().drops_refused == 0);  // held, not dropped
  f.spin();
  CHECK(f.sent.size() == 1);  // the packet waits in the TUN queue

  f.capacity = true;
  f.path->send_capacity(true);
  CHECK(f.path->reading());
  f.spin_all();
  CHECK(f.sent.size() == 2);
}

TEST_CASE("a pause signalled inside a batch ends the batch at once", "[daemon][tun]") {
  TunFixture f;
  const auto dst = *IpAddr::parse("10.100.0.2");
  // Full passes grow the budget to 4: kGrowAfter passes of 1, then of 2.
  for (int per_pass = 1; per_pass <= 2; per_pass *= 2) {
    for (int i = 0; i < TunPath::kGrowAfter; ++i) {
      for (int k = 0; k < per_pass; ++k)
        f.inject(ipv4_to(dst));
      f.path->on_readable();
    }
  }
  REQUIRE(f.path->read_budget() == 4);
  f.sent.clear();
  for (int i = 0; i < 5; ++i)
    f.inject(ipv4_to(dst));
  f.pause_after = 2;  // the manager runs out of slots on the second packet
  f.path->on_readable();
  CHECK(f.sent.size() == 2);
  CHECK_FALSE(f.path->reading());
  CHECK(f.path->counters().read_pauses == 1);
  f.path->send_capacity(false);  // a repeated edge is not a second pause
  CHECK(f.path->counters().read_pauses == 1);
  f.path->send_capacity(true);
  f.spin_all();
  CHECK(f.sent.size() == 5);
}

TEST_CASE("stop_reading keeps the TUN unread even with capacity", "[daemon][tun]") {
  TunFixture f;
  f.path->stop_reading();
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.2")));
  f.spin_all();
  CHECK(f.sent.empty());
  f.path->send_capacity(true);
  CHECK_FALSE(f.path->reading());
}

TEST_CASE("delivered packets are written whole to the TUN fd", "[daemon][tun]") {
  TunFixture f;
  auto p = ipv4_to(*IpAddr::parse("10.100.0.1"), 1500);
  for (std::size_t i = 20; i < p.size(); ++i)
    p[i] = std::byte(i & 0xff);
  f.path->deliver(0x0a630002, p);
  std::vector<std::byte> got(4096);
  const ssize_t n = ::recv(f.world_end.get(), got.data(), got.size(), 0);
  REQUIRE(n == static_cast<ssize_t>(p.size()));
  got.resize(static_cast<std::size_t>(n));
  CHECK(got == p);
  CHECK(f.path->counters().tun_tx_packets == 1);
  CHECK(f.path->counters().tun_tx_bytes == 1500);

  f.path->detach();
  f.path->deliver(1, p);
  CHECK(f.path->counters().drops_not_attached == 1);
}

TEST_CASE("with IFF_VNET_HDR frames are routed by the IP header after the vnet header",
          "[daemon][tun][gso]") {
  TunFixture f(10);
  // A 10-byte header whose bytes would read as IPv4 to 192.168.x if routing
  // looked at them, then the packet.
  std::vector<std::byte> frame(10, std::byte{0x45});
  const auto ip = ipv4_to(*IpAddr::parse("10.100.0.2"), 60000);
  frame.insert(frame.end(), ip.begin(), ip.end());
  f.inject(frame);
  f.inject(std::vector<std::byte>(9, std::byte{0x45}));  // shorter than the header
  auto hdr_only = std::vector<std::byte>(10);
  f.inject(hdr_only);  // a header and no packet
  f.spin_all();
  REQUIRE(f.sent.size() == 1);
  CHECK(f.sent[0].first == Endpoint{*IpAddr::parse("10.99.0.2"), 7471});
  CHECK(f.sent[0].second == 60010);  // the whole frame goes to the manager
  CHECK(f.path->counters().drops_not_ip == 2);
}

TEST_CASE("a UDP super-packet for a TUN without USO is written as its datagrams",
          "[daemon][tun][gso][uso]") {
  TunFixture f(wire::kVnetHdrLen);
  const bool v6 = GENERATE(false, true);
  const std::size_t l4 = v6 ? 40 : 20;
  const auto sp = rcnet::test::udp_super_packet(v6, 2 * 1200 + 300);
  const auto frame = rcnet::test::frame_of(rcnet::test::uso_super_hdr(v6, 1200), sp);
  const auto recv_one = [&] {
    std::vector<std::byte> got(70000);
    const ssize_t n = ::recv(f.world_end.get(), got.data(), got.size(), 0);
    REQUIRE(n > 0);
    got.resize(static_cast<std::size_t>(n));
    return got;
  };

  // A TUN with USO (the default): the frame as it came.
  f.path->deliver(1, frame);
  CHECK(recv_one() == frame);

  // Without USO (Linux before 6.2): three datagrams, each behind a zeroed
  // header, with their own lengths and checksums.
  f.path->set_uso(false);
  f.path->deliver(1, frame);
  std::vector<std::byte> joined;
  for (std::size_t i = 0; i < 3; ++i) {
    auto got = recv_one();
    INFO("datagram " << i);
    REQUIRE(got.size() > wire::kVnetHdrLen);
    CHECK(std::all_of(got.begin(), got.begin() + wire::kVnetHdrLen,
                      [](std::byte b) { return b == std::byte{0}; }));
    got.erase(got.begin(), got.begin() + wire::kVnetHdrLen);
    CHECK(got.size() == l4 + 8 + (i < 2 ? 1200 : 300));
    CHECK(rcnet::test::checksums_ok(got));
    joined.insert(joined.end(), got.begin() + static_cast<std::ptrdiff_t>(l4 + 8), got.end());
  }
  CHECK(std::equal(joined.begin(), joined.end(), sp.begin() + static_cast<std::ptrdiff_t>(l4 + 8),
                   sp.end()));
  CHECK(f.path->counters().rx_uso_segmented == 1);
  CHECK(f.path->counters().tun_tx_packets == 1 + 3);

  // TCP super-packets are the TUN's to take (TSO works since long before).
  const auto tso = rcnet::test::frame_of(rcnet::test::tso_hdr(v6, 1448),
                                         rcnet::test::tcp_super_packet(v6, 5000));
  f.path->deliver(1, tso);
  CHECK(recv_one() == tso);
}

TEST_CASE("with a lent send buffer a packet is read straight into it and sent from there",
          "[daemon][tun]") {
  EventLoop loop = make_loop();
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
  UniqueFd tun_end(sv[0]), world_end(sv[1]);
  // A stand-in for the manager's lending: one 200-byte buffer, larger than
  // any packet it accepts (so a read that fills it is oversize).
  std::vector<std::byte> lent_buf(200);
  bool lend_empty = false;
  int lends = 0, returns = 0;
  std::vector<std::pair<std::size_t, std::vector<std::byte>>> sent_lent;  // len, bytes
  std::vector<std::size_t> sent_copied;
  rcnet::test::FakePort port;
  port.on_route = [](const IpAddr&) -> std::optional<Endpoint> {
    return Endpoint{*IpAddr::parse("10.99.0.2"), 7471};
  };
  port.on_send = [&](const Endpoint&, std::span<const std::byte> p) {
    sent_copied.push_back(p.size());
    return cm::SendResult::kSent;
  };
  port.on_lend = [&]() -> std::span<std::byte> {
    if (lend_empty)
      return {};
    ++lends;
    return lent_buf;
  };
  port.on_send_lent = [&](const Endpoint&, std::size_t len) {
    sent_lent.emplace_back(
        len, std::vector<std::byte>(lent_buf.begin(),
                                    lent_buf.begin() + static_cast<std::ptrdiff_t>(len)));
    return cm::SendResult::kSent;
  };
  port.on_return_lent = [&] { ++returns; };
  TunPath path(loop, port);
  REQUIRE(path.attach(tun_end.get()).ok());
  auto inject = [&](const std::vector<std::byte>& p) {
    REQUIRE(::send(world_end.get(), p.data(), p.size(), 0) == static_cast<ssize_t>(p.size()));
  };
  const auto p1 = ipv4_to(*IpAddr::parse("10.100.0.2"), 100);
  inject(p1);
  path.on_readable();
  REQUIRE(sent_lent.size() == 1);
  CHECK(sent_lent[0].first == 100);
  CHECK(sent_lent[0].second == p1);  // the bytes were read into the lent buffer
  CHECK(sent_copied.empty());

  inject(std::vector<std::byte>(30, std::byte{0x10}));  // not IP: the buffer goes back
  path.on_readable();
  CHECK(path.counters().drops_not_ip == 1);
  CHECK(returns == 1);

  inject(ipv4_to(*IpAddr::parse("10.100.0.2"), 200));  // fills the buffer: oversize
  path.on_readable();
  CHECK(path.counters().drops_refused == 1);
  CHECK(returns == 2);
  CHECK(sent_lent.size() == 1);

  path.on_readable();  // nothing to read: EAGAIN gives the buffer back
  CHECK(path.counters().read_empty >= 1);
  CHECK(returns == 3);
  CHECK(lends == 4);

  lend_empty = true;  // none free: read into the path's own buffer, send() copies
  inject(ipv4_to(*IpAddr::parse("10.100.0.2"), 60));
  path.on_readable();
  CHECK(sent_copied == std::vector<std::size_t>{60});
  CHECK(sent_lent.size() == 1);
}

}  // namespace daemon_tun_path_test
