// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The TUN data path over a SOCK_SEQPACKET pair, which keeps packet boundaries
// exactly as a TUN fd opened with IFF_NO_PI does.
#include "tun_path.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <vector>

#include "unique_fd.hpp"

using namespace rcnet;
using namespace rcnet::daemon;

namespace {

std::vector<std::byte> ipv4_to(const IpAddr& dst, std::size_t len = 40) {
  std::vector<std::byte> p(len);
  p[0] = std::byte{0x45};
  for (int i = 0; i < 4; ++i)
    p[16 + i] = std::byte{dst.bytes[i]};
  return p;
}

EventLoop make_loop() {
  auto l = EventLoop::create();
  REQUIRE(l.ok());
  return std::move(*l);
}

struct TunFixture {
  EventLoop loop = make_loop();
  UniqueFd tun_end, world_end;  // tun_end plays the TUN fd
  std::vector<std::pair<Endpoint, std::size_t>> sent;
  cm::SendResult next_result = cm::SendResult::kSent;
  bool capacity = true;
  std::unique_ptr<TunPath> path;

  TunFixture() {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    tun_end.reset(sv[0]);
    world_end.reset(sv[1]);
    path = std::make_unique<TunPath>(
        loop, TunPath::Hooks{
                  // 10.100.0.N → 10.99.0.N:7471; nothing else is mapped.
                  .route = [](const IpAddr& d) -> std::optional<Endpoint> {
                    if (!d.is_v4() || d.bytes[0] != 10 || d.bytes[1] != 100)
                      return std::nullopt;
                    IpAddr u = d;
                    u.bytes[1] = 99;
                    return Endpoint{u, 7471};
                  },
                  .send =
                      [this](const Endpoint& ep, std::span<const std::byte> p) {
                        sent.emplace_back(ep, p.size());
                        return next_result;
                      },
                  .has_capacity = [this] { return capacity; },
              });
    REQUIRE(path->attach(tun_end.get()).ok());
  }
  void inject(const std::vector<std::byte>& p) {
    REQUIRE(::send(world_end.get(), p.data(), p.size(), 0) == static_cast<ssize_t>(p.size()));
  }
  void spin() { REQUIRE(loop.run_once(Duration::zero()).ok()); }
};

}  // namespace

TEST_CASE("TUN packets go to the peer their destination maps to", "[daemon][tun]") {
  TunFixture f;
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.2"), 100));
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.3"), 200));
  f.inject(ipv4_to(*IpAddr::parse("192.168.1.1")));       // unmapped
  f.inject(std::vector<std::byte>(30, std::byte{0x10}));  // not IP
  f.spin();
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

TEST_CASE("one wakeup reads at most one batch", "[daemon][tun]") {
  TunFixture f;
  const int total = TunPath::kReadBatch + 10;
  for (int i = 0; i < total; ++i)
    f.inject(ipv4_to(*IpAddr::parse("10.100.0.2")));
  f.path->on_readable();
  CHECK(f.sent.size() == static_cast<std::size_t>(TunPath::kReadBatch));
  f.spin();
  CHECK(f.sent.size() == static_cast<std::size_t>(total));
}

TEST_CASE("no send slot stops reading until capacity returns", "[daemon][tun]") {
  TunFixture f;
  const auto dst = *IpAddr::parse("10.100.0.2");
  f.next_result = cm::SendResult::kNoSlot;
  f.capacity = false;  // the manager is out of slots from now on
  f.inject(ipv4_to(dst));
  f.inject(ipv4_to(dst));
  f.spin();
  CHECK(f.sent.size() == 0);  // has_capacity() false: not even read
  CHECK_FALSE(f.path->reading());
  CHECK(f.path->counters().read_pauses == 1);
  f.spin();
  CHECK(f.sent.empty());  // the packets wait in the TUN queue

  f.next_result = cm::SendResult::kSent;
  f.capacity = true;
  f.path->send_capacity(true);
  CHECK(f.path->reading());
  f.spin();
  CHECK(f.sent.size() == 2);
}

TEST_CASE("kNoSlot from send pauses; a later iteration resumes when slots are back",
          "[daemon][tun]") {
  TunFixture f;
  const auto dst = *IpAddr::parse("10.100.0.2");
  f.next_result = cm::SendResult::kNoSlot;
  f.inject(ipv4_to(dst));
  f.inject(ipv4_to(dst));
  f.spin();
  CHECK(f.sent.size() == 1);  // the refused one
  CHECK(f.path->counters().drops_refused == 1);
  CHECK_FALSE(f.path->reading());
  // Slots come back with a send completion, but the manager never says so:
  // the check after that iteration must resume reading by itself.
  f.next_result = cm::SendResult::kSent;
  auto completion = f.loop.add_defer("cq", [] {});
  REQUIRE(completion.ok());
  REQUIRE(completion->set_enabled(SD_EVENT_ONESHOT).ok());
  for (int i = 0; i < 3 && f.sent.size() < 2; ++i)
    f.spin();
  CHECK(f.path->reading());
  CHECK(f.sent.size() == 2);
}

TEST_CASE("stop_reading keeps the TUN unread even with capacity", "[daemon][tun]") {
  TunFixture f;
  f.path->stop_reading();
  f.inject(ipv4_to(*IpAddr::parse("10.100.0.2")));
  f.spin();
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
