// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Both IP families on one TUN, on the simulated fabric: three nodes whose
// config (tun.address = [IPv4, IPv6], the prefix rule) maps each peer's
// two overlay addresses to its one underlay address, on an IPv4 and on an
// IPv6 underlay. Packets of both families to a peer share one connection:
// one QP per peer pair, every packet delivered, nothing dropped.
#include "catch2_compat.hpp"

#include <string>
#include <vector>
#include "test_helpers.hpp"

#include "config/config.hpp"
#include "harness.hpp"
#include "wire/ip_packet.hpp"

namespace cm_dual_stack_test {
using namespace rcnet;
using namespace rcnet::test;
using rcnet::unit::ip;

namespace {

// A minimal IP packet of `dst`'s family from `src` (header only, then zeros).
std::vector<std::byte> ip_packet(const IpAddr& src, const IpAddr& dst) {
  const std::size_t len = dst.is_v4() ? 60 : 80;
  std::vector<std::byte> p(len);
  if (dst.is_v4()) {
    p[0] = std::byte{0x45};
    p[3] = std::byte(len);
    p[8] = std::byte{64};
    p[9] = std::byte{17};
    for (int i = 0; i < 4; ++i) {
      p[12 + i] = std::byte{src.bytes[i]};
      p[16 + i] = std::byte{dst.bytes[i]};
    }
  } else {
    p[0] = std::byte{0x60};
    p[5] = std::byte(len - 40);
    p[6] = std::byte{17};
    p[7] = std::byte{64};
    for (int i = 0; i < 16; ++i) {
      p[8 + i] = std::byte{src.bytes[i]};
      p[24 + i] = std::byte{dst.bytes[i]};
    }
  }
  return p;
}

struct UnderlayCase {
  const char* name;
  std::string prefix;              // peers.underlay_prefix
  std::string (*underlay)(int n);  // node n's node.address
};

std::string v4_underlay(int n) {
  return "10.99.0." + std::to_string(n);
}
std::string v6_underlay(int n) {
  return "fd99::" + std::to_string(n);
}

const UnderlayCase kFabrics[] = {
    {"IPv4 underlay", "10.99.0.0/24", &v4_underlay},
    {"IPv6 underlay", "fd99::/64", &v6_underlay},
};

config::Config node_config(const UnderlayCase& f, int n) {
  const std::string text = "[node]\naddress = \"" + f.underlay(n) +
                           "\"\n[tun]\naddress = [\"10.100.0." + std::to_string(n) +
                           "/24\", \"fd00:100::" + std::to_string(n) +
                           "/120\"]\n[peers]\nunderlay_prefix = \"" + f.prefix + "\"\n";
  auto c = config::parse(text, "rcnetd.toml");
  INFO(text);
  if (!c)
    FAIL(c.error().context);
  return std::move(c).value();
}

}  // namespace

TEST_CASE("dual stack: both families to a peer share its one connection, on either underlay",
          "[cm][dual]") {
  for (const UnderlayCase& f : kFabrics) {
    INFO(f.name);
    test::Cluster c(sim::Profile::kMlx);
    std::vector<config::Config> cfg;
    std::vector<Node*> nodes;
    for (int n = 1; n <= 3; ++n) {
      cfg.push_back(node_config(f, n));
      Node& node = c.add_node<Node>(ip(f.underlay(n)));
      cm::ManagerConfig mc = test_config(node.addr, 0x1000 + static_cast<std::uint64_t>(n));
      mc.overlay = cfg.back().manager.overlay;  // what private data carries
      REQUIRE(c.start(node, mc).ok());
      nodes.push_back(&node);
    }
    // Every node sends one packet of each family to every other, at once
    // (the daemon's route: Config::peer_endpoint_for, either family).
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        if (i == j)
          continue;
        for (const IpPrefix& p : cfg[j].overlay_prefixes()) {
          const IpAddr dst = p.addr;
          const auto ep = cfg[i].peer_endpoint_for(dst);
          REQUIRE(ep);
          CHECK(ep->addr == nodes[j]->addr);  // both families: the same endpoint
          const IpPrefix* src = cfg[i].overlay_prefix_for(dst);
          REQUIRE(src != nullptr);
          nodes[i]->mgr->send(Endpoint{ep->addr, kPort}, ip_packet(src->addr, dst));
        }
      }
    }
    c.run(500ms);
    std::size_t in_service = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      // Two peers, one packet of each family from each.
      const auto& got = nodes[j]->sink.packets;
      REQUIRE(got.size() == 4);
      int v4 = 0, v6 = 0;
      for (const auto& pkt : got) {
        const auto dst = wire::ip_destination(pkt.bytes);
        REQUIRE(dst);
        CHECK(cfg[j].overlay_prefix_for(*dst)->addr == *dst);  // ours, in its family
        (dst->is_v4() ? v4 : v6)++;
        // The source check's question: the sender's address in that family.
        const auto src = wire::ip_source(pkt.bytes);
        const auto from = nodes[j]->mgr->peer_underlay(pkt.from);
        REQUIRE(from);
        CHECK(cfg[j].overlay_for(from->addr, 0, src->family) == *src);
      }
      CHECK(v4 == 2);
      CHECK(v6 == 2);
      const auto snap = nodes[j]->mgr->snapshot();
      std::size_t mine = 0;
      for (const auto& q : snap.qps)
        mine += q.in_service ? 1 : 0;
      CHECK(mine == 2);  // one per peer, not one per peer and family
      in_service += mine;
      // The peers' private data named their first family's address.
      for (const auto& peer : snap.peers)
        CHECK(peer.overlay.is_v4());
      CHECK(snap.counters.drops_queue_full == 0);
    }
    CHECK(in_service == 6);  // three pairs, one connection each, seen from both ends
  }
}

}  // namespace cm_dual_stack_test
