// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Peer proofs on the simulated fabric (lib/cm/peer_auth.cpp, auth_link.cpp;
// docs/design.md "Trust"): both ends prove one key before a packet is
// delivered, every refusal reason with nothing delivered, the modes side by
// side, rotation and revocation by reconfigure().
#include "catch2_compat.hpp"

#include <string>
#include <vector>

#include "auth/proof.hpp"
#include "cm/manager.hpp"
#include "harness.hpp"
#include "raw_client.hpp"
#include "wire/private_data.hpp"

namespace cm_auth_test {
using namespace rcnet;
using namespace rcnet::test;
using auth::Mode;
using sim::Profile;

auth::Key key(std::uint8_t id, std::uint8_t fill) {
  auth::KeyBytes b{};
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<std::uint8_t>(fill + i);
  return auth::Key(id, b);
}

// A Cluster::add tweak: `mode`, `keys`, overlay id `overlay`.
Cluster::Tweak with_auth(Mode mode, std::vector<auth::Key> keys, std::string overlay = "") {
  return [=](cm::ManagerConfig& m) {
    m.auth_mode = mode;
    m.auth_keys = keys;
    m.auth_overlay = overlay;
  };
}

// `n`'s connection to `peer` as its snapshot says it (nullptr: none).
const cm::QpSnapshot* link_of(const cm::Snapshot& s, const Node& peer) {
  for (const auto& q : s.qps) {
    if (q.peer_node == node_id_for(peer.addr) && q.in_service)
      return &q;
  }
  return nullptr;
}

std::uint64_t refusals(Node& n) {
  const auto& c = n.ctr();
  return c.auth_refused_no_proof + c.auth_refused_bad_proof + c.auth_refused_unknown_key +
         c.auth_refused_replay + c.auth_refused_overlay + c.auth_refused_revoked;
}

// Profiles whose handshakes differ: immediates (mlx), rxe, iWARP (the
// active side sends first; header framing and credits).
Profile auth_profile() {
  return GENERATE(Profile::kMlx, Profile::kRxe, Profile::kIwarp);
}

// Seqs of the packets `n` received, in order.
std::vector<std::uint32_t> seqs(const Node& n) {
  std::vector<std::uint32_t> out;
  for (const auto& p : n.sink.packets)
    out.push_back(seq_of(p.bytes));
  return out;
}

TEST_CASE("auth: two nodes with one key prove it both ways, then packets flow", "[cm][auth]") {
  Cluster c(auth_profile());
  auto& a = c.add(1, with_auth(Mode::kRequired, {key(1, 0x11)}, "prod"));
  auto& b = c.add(2, with_auth(Mode::kRequired, {key(1, 0x11)}, "prod"));
  Cluster::send_range(a, b, 0, 4);
  c.run(20ms);
  require_in_order(b, 4);  // queued behind the handshake, none lost
  b.mgr->send(a.ep(), packet(7));
  c.run(10ms);
  CHECK(seqs(a) == std::vector<std::uint32_t>{7});
  CHECK(a.ctr().auth_proven == 1);  // the REP's proof
  CHECK(b.ctr().auth_proven == 1);  // the active side's proof message
  CHECK(refusals(a) + refusals(b) == 0);
  for (Node* n : {&a, &b}) {
    const auto s = n->mgr->snapshot();
    const auto* q = link_of(s, n == &a ? b : a);
    REQUIRE(q != nullptr);
    CHECK(q->auth == "proven");
    CHECK(q->auth_key_id == 1);
  }
}

TEST_CASE("auth: a node without the key is refused; nothing of it is delivered", "[cm][auth]") {
  Cluster c(auth_profile());
  // Who lacks the key: a node that offers no proof (auth off, or a release
  // before proofs), a node with another key under the same id, a node with
  // a key id the other does not know, a node of another overlay id.
  struct Case {
    const char* what;
    Cluster::Tweak intruder;
    std::uint64_t cm::Counters::*counter;  // where the refusal is counted
    bool counted_by_intruder_dialled;      // counted by the member when the intruder dials it
  };
  const auto k = key(1, 0x11);
  const Case cases[] = {
      {"no proof", with_auth(Mode::kOff, {}), &cm::Counters::auth_refused_no_proof, true},
      {"wrong key", with_auth(Mode::kRequired, {key(1, 0x77)}),
       &cm::Counters::auth_refused_bad_proof, false},
      {"unknown key id", with_auth(Mode::kRequired, {key(9, 0x11)}),
       &cm::Counters::auth_refused_unknown_key, true},
      {"other overlay", with_auth(Mode::kRequired, {k}, "other"),
       &cm::Counters::auth_refused_overlay, false},
  };
  const auto i = GENERATE(0, 1, 2, 3);
  const Case& cs = cases[i];
  INFO(cs.what);
  auto& member = c.add(1, with_auth(Mode::kRequired, {k}));
  auto& intruder = c.add(2, cs.intruder);
  // The intruder dials the member, then the member dials the intruder.
  // Where the intruder refuses the member's REP, the member's side waits
  // for a proof that never comes (timeouts.connect, then no_proof), and
  // holds the intruder down (its next connect one kRetryCap later).
  Cluster::send_range(intruder, member, 0, 9);
  c.run(50ms);
  CHECK(member.sink.packets.empty());
  CHECK(member.ctr().packets_rx == 0);
  const Node& counter_a = cs.counted_by_intruder_dialled ? member : intruder;
  CHECK(counter_a.ctr().*cs.counter == 1);
  c.run(member.mgr->config().connect_timeout + 500ms);
  Cluster::send_range(member, intruder, 20, 29);
  c.run(10s);
  CHECK(intruder.sink.packets.empty());
  CHECK(member.sink.packets.empty());
  // Dialling out, the member itself checks the REP (no proof, bad proof,
  // other overlay) or gets REJ unknown_key from a node that cannot read
  // its key id: counted there.
  const std::uint64_t by_member = member.ctr().*cs.counter;
  const std::uint64_t by_intruder = intruder.ctr().*cs.counter;
  CHECK(by_member + by_intruder >= 2);
  CHECK(in_service(member) == 0);
  require_clean(member);
}

TEST_CASE("auth: no room for the proof message is a failed attempt, retried after its backoff",
          "[cm][auth]") {
  Cluster c(Profile::kMlx);
  // An SQ of 2 WRs keeps room for the reclaim SEND and the drain WR only:
  // the active side's proof message never finds room.
  auto& a = c.add(1, [](cm::ManagerConfig& m) {
    with_auth(Mode::kRequired, {key(1, 0x11)})(m);
    m.qp_send_depth = 2;
  });
  auto& b = c.add(2, with_auth(Mode::kRequired, {key(1, 0x11)}));
  a.mgr->send(b.ep(), packet(1));
  c.run(3s);
  // The first attempt and connect_retries (2) more, each after its
  // backoff; then the packet is dropped, counted. Once, each attempt's
  // failure started the next at once: thousands of connections a second.
  CHECK(a.ctr().connects_started == 3);
  CHECK(a.ctr().drops_connect_failed == 1);
  CHECK(b.sink.packets.empty());
  c.run(2s);
  CHECK(a.ctr().connects_started == 3);  // nothing queued: no new attempt
}

TEST_CASE("auth: a replayed REQ is refused as a replay; a handshake without a proof times out",
          "[cm][auth]") {
  Cluster c(Profile::kRxe);
  auto& member = c.add(1, with_auth(Mode::kRequired, {key(1, 0x11)}));
  // A REQ as a member would send it (key id 1, a nonce), recorded.
  wire::PrivateData req = raw_req(node_addr(9));
  req.busy = true;
  req.auth = true;
  req.key_id = 1;
  req.nonce = {1, 2, 3, 4, 5, 6};
  const auto bytes = wire::encode(req);
  RawClient first;
  first.attach(c.fabric, node_addr(9), Profile::kRxe);
  first.connect(member.ep(), bytes);
  c.run(5ms);
  REQUIRE(first.rejected() == nullptr);  // REP with the member's proof
  // The same REQ again, from the same address: the nonce was seen.
  first.connect(member.ep(), bytes);
  c.run(5ms);
  const rdma::CmEvent* rej = first.rejected();
  REQUIRE(rej != nullptr);
  const auto d = wire::decode(rej->private_data, wire::Kind::kRej);
  REQUIRE(d.ok);
  CHECK(d.data.reason == wire::RejectReason::kReplay);
  CHECK(member.ctr().auth_refused_replay == 1);
  CHECK(member.ctr().rejects_sent_replay == 1);
  // The first client never sends its proof: refused at timeouts.connect.
  CHECK(member.ctr().auth_refused_no_proof == 0);
  c.run(member.mgr->config().connect_timeout + 500ms);
  CHECK(member.ctr().auth_refused_no_proof == 1);
  CHECK(member.sink.packets.empty());
}

TEST_CASE("auth: optional admits a peer that offers no proof, counted; proofs still run",
          "[cm][auth]") {
  Cluster c(auth_profile());
  const auto k = key(1, 0x11);
  auto& opt = c.add(1, with_auth(Mode::kOptional, {k}));
  auto& off = c.add(2, with_auth(Mode::kOff, {}));
  auto& req = c.add(3, with_auth(Mode::kRequired, {k}));
  c.connect(off, opt, 1);  // passive optional, active offers nothing
  c.connect(opt, req, 2);  // optional offers its proof to a required node
  c.connect(opt, off, 3);  // active optional, the REP has no proof
  CHECK(seqs(opt) == std::vector<std::uint32_t>{1});
  CHECK(seqs(req) == std::vector<std::uint32_t>{2});
  CHECK(seqs(off) == std::vector<std::uint32_t>{3});
  CHECK(opt.ctr().auth_unproven == 1);  // one connection with `off`, counted once
  CHECK(opt.ctr().auth_proven == 1);
  CHECK(req.ctr().auth_proven == 1);
  CHECK(refusals(opt) + refusals(req) + refusals(off) == 0);
  const auto s = opt.mgr->snapshot();
  REQUIRE(link_of(s, off) != nullptr);
  CHECK(link_of(s, off)->auth == "unproven");
  CHECK(link_of(s, req)->auth == "proven");
  // Required now: the unproven connection goes, the proven one stays.
  auto cfg = opt.mgr->config();
  cfg.auth_mode = Mode::kRequired;
  opt.mgr->reconfigure(cfg);
  c.run(50ms);
  CHECK(opt.ctr().auth_refused_no_proof == 1);
  const auto after = opt.mgr->snapshot();
  CHECK(link_of(after, off) == nullptr);
  CHECK(link_of(after, req) != nullptr);
}

TEST_CASE("auth: rotation keeps proven connections; removing a key revokes its connections",
          "[cm][auth]") {
  Cluster c(auth_profile());
  const auto k1 = key(1, 0x11);
  const auto k2 = key(2, 0x22);
  auto& a = c.add(1, with_auth(Mode::kRequired, {k1}));
  auto& b = c.add(2, with_auth(Mode::kRequired, {k1}));
  c.connect(a, b, 1);
  REQUIRE(in_service(a) == 1);
  const auto set_keys = [&](Node& n, std::vector<auth::Key> keys) {
    auto cfg = n.mgr->config();
    cfg.auth_keys = std::move(keys);
    n.mgr->reconfigure(cfg);
  };
  // 1. the new key accepted everywhere; 2. it proves; nothing reconnects.
  set_keys(a, {k1, k2});
  set_keys(b, {k1, k2});
  c.run(20ms);
  set_keys(a, {k2, k1});
  set_keys(b, {k2, k1});
  c.run(20ms);
  CHECK(a.ctr().connects_established == 1);
  CHECK(refusals(a) + refusals(b) == 0);
  c.connect(a, b, 2);
  CHECK(seqs(b) == std::vector<std::uint32_t>{1, 2});
  // 3. the old key removed: the connection proven with it goes at once,
  // and the next packet connects again, proven with key 2.
  const bool changed_bytes = GENERATE(false, true);
  INFO((changed_bytes ? "key 1's file now holds other bytes" : "key 1 removed"));
  set_keys(a, changed_bytes ? std::vector<auth::Key>{k2, key(1, 0x99)} : std::vector{k2});
  c.run(20ms);
  CHECK(a.ctr().auth_refused_revoked == 1);
  CHECK(in_service(a) == 0);
  set_keys(b, {k2});
  c.connect(a, b, 3);
  CHECK(seqs(b) == std::vector<std::uint32_t>{1, 2, 3});
  const auto s = a.mgr->snapshot();
  REQUIRE(link_of(s, b) != nullptr);
  CHECK(link_of(s, b)->auth_key_id == 2);
}

TEST_CASE("auth: proofs bind every field of the handshake", "[auth]") {
  const auth::Key k = key(1, 0x11);
  const auth::OverlayHash ov = auth::overlay_hash("prod");
  wire::PrivateData req;
  req.kind = wire::Kind::kReq;
  req.node_id = 1;
  req.incarnation = 2;
  req.overlay = *IpAddr::parse("10.0.0.1");
  req.auth = true;
  req.key_id = 1;
  req.nonce = {1, 2, 3, 4, 5, 6};
  wire::PrivateData rep = req;
  rep.kind = wire::Kind::kRep;
  rep.node_id = 3;
  rep.overlay = *IpAddr::parse("10.0.0.3");
  rep.nonce = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  auth::Handshake h{&ov, &req, &rep, *IpAddr::parse("192.168.0.1"), *IpAddr::parse("192.168.0.3")};
  const auth::Proof p = auth::make_proof(k, auth::Role::kPassive, h);
  CHECK(auth::check_proof(k, auth::Role::kPassive, h, p));
  CHECK_FALSE(auth::check_proof(k, auth::Role::kActive, h, p));
  CHECK_FALSE(auth::check_proof(key(1, 0x12), auth::Role::kPassive, h, p));
  rep.proof = {0xff};  // the REP's own proof field is not in the transcript
  CHECK(auth::check_proof(k, auth::Role::kPassive, h, p));
  const auto changed = [&](auto change) {
    wire::PrivateData q = req, r = rep;
    auth::OverlayHash o = ov;
    auth::Handshake x{&o, &q, &r, h.active_underlay, h.passive_underlay};
    change(q, r, o, x);
    return !auth::check_proof(k, auth::Role::kPassive, x, p);
  };
  CHECK(changed([](auto& q, auto&, auto&, auto&) { q.nonce[0] ^= 1; }));
  CHECK(changed([](auto&, auto& r, auto&, auto&) { r.nonce[15] ^= 1; }));
  CHECK(changed([](auto& q, auto&, auto&, auto&) { q.incarnation = 5; }));
  CHECK(changed([](auto&, auto& r, auto&, auto&) { r.overlay = *IpAddr::parse("10.0.0.4"); }));
  CHECK(changed([](auto& q, auto&, auto&, auto&) { q.gso = true; }));
  CHECK(changed([](auto&, auto& r, auto&, auto&) { r.credits = 16; }));
  CHECK(changed([](auto&, auto&, auto& o, auto&) { o = auth::overlay_hash("test"); }));
  CHECK(changed(
      [](auto&, auto&, auto&, auto& x) { x.active_underlay = *IpAddr::parse("192.168.0.9"); }));
  CHECK(changed(
      [](auto&, auto&, auto&, auto& x) { x.passive_underlay = *IpAddr::parse("192.168.0.9"); }));
}

}  // namespace cm_auth_test
