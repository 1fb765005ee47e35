// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "catch2_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "wire/private_data.hpp"
#include "wire/rail_message.hpp"

namespace wire_private_data_test {
using namespace rcnet;
using namespace rcnet::wire;

namespace {

PrivateData sample(Kind kind) {
  PrivateData pd;
  pd.kind = kind;
  pd.node_id = 0x0A630001;
  pd.incarnation = 0x0123456789ABCDEFull;
  pd.mtu = 65520;
  pd.srq = true;
  pd.overlay = *IpAddr::parse("10.100.0.1");
  pd.reason = kind == Kind::kRej ? RejectReason::kCollision : RejectReason::kNone;
  pd.rail_count = kind == Kind::kRej ? 0 : 2;
  return pd;
}

std::vector<std::uint8_t> bytes_of(const PrivateData& pd) {
  const auto a = encode(pd);
  return {a.begin(), a.end()};
}

DecodeError error_of(const std::vector<std::uint8_t>& b, Kind k) {
  const Decoded d = decode(b, k);
  REQUIRE_FALSE(d.ok);
  return d.error;
}

std::size_t limit_of(Kind k) {
  return k == Kind::kReq ? kMaxReqSize : k == Kind::kRep ? kMaxRepSize : kMaxRejSize;
}

}  // namespace

TEST_CASE("wire: round trip of every field", "[wire]") {
  for (Kind kind : {Kind::kReq, Kind::kRep, Kind::kRej}) {
    for (const char* overlay : {"10.100.0.7", "fd00:1234::7", ""}) {
      for (bool srq : {true, false}) {
        for (std::uint32_t mtu : {kMinMtu, 2044u, kMaxMtu}) {
          PrivateData pd = sample(kind);
          pd.overlay = *overlay ? *IpAddr::parse(overlay) : IpAddr{};
          pd.srq = srq;
          pd.mtu = mtu;
          pd.node_id = node_id_for(*IpAddr::parse("fe80::99"));  // top bit set
          pd.incarnation = ~0ull;
          const auto b = bytes_of(pd);
          REQUIRE(b.size() == kEncodedSize);
          const Decoded d = decode(b, kind);
          INFO("kind " << int(kind) << " overlay " << overlay << " srq " << srq << " mtu " << mtu);
          REQUIRE(d.ok);
          CHECK(d.data == pd);
        }
      }
    }
  }
}

TEST_CASE("wire: every reject reason round-trips and has a name", "[wire]") {
  for (int r = 1; r <= static_cast<int>(kMaxRejectReason); ++r) {
    PrivateData pd = sample(Kind::kRej);
    pd.reason = static_cast<RejectReason>(r);
    const Decoded d = decode(bytes_of(pd), Kind::kRej);
    REQUIRE(d.ok);
    CHECK(d.data.reason == pd.reason);
    CHECK(to_string(pd.reason) != "unknown");
  }
  CHECK(to_string(RejectReason::kNotAllowed) == "not_allowed");
  CHECK(to_string(RejectReason::kShuttingDown) == "shutting_down");
}

TEST_CASE("wire: layout is big-endian at the documented offsets", "[wire]") {
  PrivateData pd = sample(Kind::kReq);
  pd.node_id = 0x0102030405060708ull;
  pd.incarnation = 0x1112131415161718ull;
  pd.mtu = 0x0000FFF0;
  const auto b = encode(pd);
  CHECK(b[0] == kVersion);
  CHECK(b[1] == 1);
  CHECK(b[2] == 'R');
  CHECK(b[3] == 'C');
  CHECK(b[4] == 0x01);
  CHECK(b[11] == 0x08);
  CHECK(b[12] == 0x11);
  CHECK(b[19] == 0x18);
  CHECK(b[22] == 0xFF);
  CHECK(b[23] == 0xF0);
  CHECK(b[24] == 1);
  CHECK(b[25] == 4);
  CHECK(b[26] == 10);
  CHECK(b[29] == 1);
  CHECK(b[42] == 0);
}

TEST_CASE("wire: a 56-byte zero-padded REQ decodes", "[wire]") {
  auto b = bytes_of(sample(Kind::kReq));
  b.resize(kMaxReqSize, 0);
  const Decoded d = decode(b, Kind::kReq);
  REQUIRE(d.ok);
  CHECK(d.data == sample(Kind::kReq));
}

TEST_CASE("wire: short and oversized inputs", "[wire]") {
  const auto full = bytes_of(sample(Kind::kReq));
  CHECK(error_of({}, Kind::kReq) == DecodeError::kShort);
  for (std::size_t n = 1; n < kBaseSize; ++n) {
    std::vector<std::uint8_t> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    INFO("length " << n);
    CHECK(error_of(b, Kind::kReq) == DecodeError::kShort);
  }
  for (Kind kind : {Kind::kReq, Kind::kRep, Kind::kRej}) {
    auto b = bytes_of(sample(kind));
    b.resize(limit_of(kind), 0);
    CHECK(decode(b, kind).ok);
    b.push_back(0);
    INFO("kind " << int(kind));
    CHECK(error_of(b, kind) == DecodeError::kOversized);
  }
}

TEST_CASE("wire: each header field is validated", "[wire]") {
  const auto good = bytes_of(sample(Kind::kReq));
  auto b = good;

  b[0] = 2;
  CHECK(error_of(b, Kind::kReq) == DecodeError::kBadVersion);
  // A different version is recognised even when it is short.
  CHECK(error_of({2, 1}, Kind::kReq) == DecodeError::kBadVersion);

  b = good;
  b[1] = 9;
  CHECK(error_of(b, Kind::kReq) == DecodeError::kBadKind);
  CHECK(error_of(good, Kind::kRep) == DecodeError::kBadKind);

  b = good;
  b[2] = 'X';
  CHECK(error_of(b, Kind::kReq) == DecodeError::kBadMagic);
  b = good;
  b[3] = 0;
  CHECK(error_of(b, Kind::kReq) == DecodeError::kBadMagic);

  PrivateData pd = sample(Kind::kReq);
  pd.node_id = 0;
  CHECK(error_of(bytes_of(pd), Kind::kReq) == DecodeError::kZeroNodeId);
  pd = sample(Kind::kReq);
  pd.incarnation = 0;
  CHECK(error_of(bytes_of(pd), Kind::kReq) == DecodeError::kZeroIncarnation);
  pd = sample(Kind::kReq);
  pd.mtu = kMinMtu - 1;
  CHECK(error_of(bytes_of(pd), Kind::kReq) == DecodeError::kBadMtu);
  pd.mtu = kMaxMtu + 1;
  CHECK(error_of(bytes_of(pd), Kind::kReq) == DecodeError::kBadMtu);
  pd.mtu = 0;
  CHECK(error_of(bytes_of(pd), Kind::kReq) == DecodeError::kBadMtu);

  for (int bit = 1; bit < 8; ++bit) {
    b = good;
    b[24] = static_cast<std::uint8_t>(b[24] | (1u << bit));
    INFO("flag bit " << bit);
    CHECK(error_of(b, Kind::kReq) == DecodeError::kBadFlags);
  }
}

TEST_CASE("wire: overlay family and address bytes", "[wire]") {
  const auto good = bytes_of(sample(Kind::kReq));
  for (std::uint8_t fam : {1, 2, 5, 10, 255}) {
    auto b = good;
    b[25] = fam;
    INFO("family " << int(fam));
    CHECK(error_of(b, Kind::kReq) == DecodeError::kBadFamily);
  }
  for (std::size_t i = 30; i < 42; ++i) {
    auto b = good;
    b[i] = 1;
    INFO("IPv4 tail byte " << i);
    CHECK(error_of(b, Kind::kReq) == DecodeError::kBadFamily);
  }
  PrivateData none = sample(Kind::kReq);
  none.overlay = IpAddr{};
  auto b = bytes_of(none);
  REQUIRE(decode(b, Kind::kReq).ok);
  b[26] = 10;
  CHECK(error_of(b, Kind::kReq) == DecodeError::kBadFamily);
}

TEST_CASE("wire: reject reasons belong to REJ only", "[wire]") {
  PrivateData rej = sample(Kind::kRej);
  rej.reason = RejectReason::kNone;
  CHECK(error_of(bytes_of(rej), Kind::kRej) == DecodeError::kBadReason);
  rej.reason = static_cast<RejectReason>(static_cast<int>(kMaxRejectReason) + 1);
  CHECK(error_of(bytes_of(rej), Kind::kRej) == DecodeError::kBadReason);
  rej.reason = static_cast<RejectReason>(255);
  CHECK(error_of(bytes_of(rej), Kind::kRej) == DecodeError::kBadReason);

  for (Kind kind : {Kind::kReq, Kind::kRep}) {
    PrivateData pd = sample(kind);
    pd.reason = RejectReason::kFull;
    CHECK(error_of(bytes_of(pd), kind) == DecodeError::kBadReason);
  }
}

TEST_CASE("wire: every decode error has a distinct name", "[wire]") {
  std::vector<std::string_view> names;
  for (int e = 0; e <= static_cast<int>(DecodeError::kBadReason); ++e) {
    const auto n = to_string(static_cast<DecodeError>(e));
    CHECK(n != "unknown");
    CHECK(std::find(names.begin(), names.end(), n) == names.end());
    names.push_back(n);
  }
}

TEST_CASE("wire: random bytes never crash and only valid encodings decode", "[wire]") {
  std::mt19937_64 rng(0x5243);  // fixed seed: the test is deterministic
  std::size_t accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    const Kind kind = static_cast<Kind>(1 + rng() % 3);
    std::vector<std::uint8_t> b;
    if (i % 2 == 0) {
      // Pure noise, any length up to past the largest limit.
      b.resize(rng() % (kMaxRepSize + 8));
      for (auto& x : b)
        x = static_cast<std::uint8_t>(rng());
    } else {
      // A valid encoding with a few bytes flipped: reaches the later checks.
      PrivateData pd = sample(kind);
      pd.reason =
          kind == Kind::kRej ? static_cast<RejectReason>(1 + rng() % 7) : RejectReason::kNone;
      b = bytes_of(pd);
      b.resize(kEncodedSize + rng() % 20, 0);
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f)
        b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
    }
    const Decoded d = decode(b, kind);
    if (!d.ok)
      continue;
    ++accepted;
    // Accepted: must be a canonical encoding of what it decoded to.
    REQUIRE(b.size() >= kBaseSize);
    REQUIRE(b.size() <= limit_of(kind));
    // Every byte up to the capabilities is interpreted exactly; in the
    // capabilities byte, only the bits this version knows.
    const auto again = encode(d.data);
    REQUIRE(std::equal(again.begin(), again.begin() + kBaseSize, b.begin()));
    if (b.size() > kBaseSize)
      REQUIRE(again[kBaseSize] ==
              (b[kBaseSize] & kKnownCaps & (kind == Kind::kRej ? ~kCapAuth : 0xff)));
    if (d.data.auth) {  // the proof's fields come back byte for byte
      REQUIRE(again.size() <= b.size());
      REQUIRE(std::equal(again.begin() + kEncodedSize, again.end(), b.begin() + kEncodedSize));
    }
    REQUIRE(d.data.node_id != 0);
    REQUIRE(d.data.incarnation != 0);
    REQUIRE(d.data.mtu >= kMinMtu);
    REQUIRE(d.data.mtu <= kMaxMtu);
  }
  // Flips that land in the padding or keep a field valid are accepted: some
  // inputs must get through, or the loop tested nothing beyond the first checks.
  CHECK(accepted > 0);
}

TEST_CASE("wire: the GSO capability round-trips in byte 43", "[wire][gso]") {
  for (Kind kind : {Kind::kReq, Kind::kRep}) {
    for (bool gso : {false, true}) {
      PrivateData pd = sample(kind);
      pd.gso = gso;
      const auto b = bytes_of(pd);
      REQUIRE(b.size() == kEncodedSize);
      CHECK(b[kBaseSize] == (gso ? kCapGso : 0));
      CHECK(b[24] == 1);  // the flags byte keeps only the SRQ bit
      const Decoded d = decode(b, kind);
      REQUIRE(d.ok);
      CHECK(d.data.gso == gso);
      CHECK(d.data == pd);
      // The same in a REQ's 56 zero-padded bytes and a REP's 196.
      auto padded = b;
      padded.resize(limit_of(kind), 0);
      const Decoded p = decode(padded, kind);
      REQUIRE(p.ok);
      CHECK(p.data.gso == gso);
    }
  }
}

TEST_CASE("wire: a first-version peer without capabilities is understood both ways",
          "[wire][gso]") {
  PrivateData pd = sample(Kind::kRep);
  pd.gso = true;
  auto ours = bytes_of(pd);

  // What an old peer sends: 43 bytes (iWARP passes the length through), or
  // zero-padded to the IB CM's size. Both read as "no capabilities".
  std::vector<std::uint8_t> old(ours.begin(), ours.begin() + kBaseSize);
  const Decoded d = decode(old, Kind::kRep);
  REQUIRE(d.ok);
  CHECK_FALSE(d.data.gso);
  old.resize(kMaxRepSize, 0);
  CHECK_FALSE(decode(old, Kind::kRep).data.gso);

  // What an old peer's decoder does with ours: it checks the first kBaseSize
  // bytes (the flags byte among them) and treats the rest as padding. Our
  // flags byte must therefore never carry the capability.
  CHECK((ours[24] & ~0x01) == 0);
  // Past the capabilities, a REP carries its rail count and its credit
  // grant (a REJ busy's retry-after is not written).
  CHECK(ours[kBaseSize + 1] == 0);
  CHECK(ours[kBaseSize + 2] == 0);
  CHECK(ours[kBaseSize + 3] == pd.rail_count);
  CHECK(ours[kBaseSize + 4] == 0);  // credits: none granted
  CHECK(ours[kBaseSize + 5] == 0);
  CHECK(ours.size() == kBaseSize + 6);
}

TEST_CASE("wire: reserved capability bits are ignored, not refused", "[wire][gso]") {
  auto b = bytes_of(sample(Kind::kReq));
  // A later version's bits, without ours (kCapAuth asks for its fields).
  b[kBaseSize] = static_cast<std::uint8_t>(~(kCapGso | kCapAuth));
  Decoded d = decode(b, Kind::kReq);
  REQUIRE(d.ok);
  CHECK_FALSE(d.data.gso);
  // The retired bit 0 (GSO frames without the immediate marking) alone: a
  // peer that sets it gets plain packets.
  b[kBaseSize] = 0x01;
  d = decode(b, Kind::kReq);
  REQUIRE(d.ok);
  CHECK_FALSE(d.data.gso);
  // Every bit: kCapAuth asks for its fields, which a 49-byte REQ lacks.
  b[kBaseSize] = 0xFF;
  d = decode(b, Kind::kReq);
  REQUIRE_FALSE(d.ok);
  CHECK(d.error == DecodeError::kShortAuth);
  b.resize(kAuthReqSize, 0);
  b[kEncodedSize] = 1;  // key id 1
  d = decode(b, Kind::kReq);
  REQUIRE(d.ok);
  CHECK(d.data.gso);
  CHECK(d.data.rails);
  CHECK(d.data.auth);
  CHECK(encode(d.data)[kBaseSize] == kKnownCaps);
}

TEST_CASE("wire: kCapAuth's fields round-trip and fit the REQ; a v1 reader sees the same REQ",
          "[wire][auth]") {
  for (const Kind kind : {Kind::kReq, Kind::kRep}) {
    PrivateData pd = sample(kind);
    pd.auth = true;
    pd.key_id = 7;
    for (std::size_t i = 0; i < pd.nonce.size(); ++i)
      pd.nonce[i] = static_cast<std::uint8_t>(0xa0 + i);
    if (kind == Kind::kReq) {
      for (std::size_t i = kReqNonceLen; i < pd.nonce.size(); ++i)
        pd.nonce[i] = 0;  // a REQ carries the first kReqNonceLen bytes only
    } else {
      pd.overlay_tag = {1, 2, 3, 4, 5, 6, 7, 8};
      pd.proof.fill(0x5a);
    }
    const auto b = encode(pd);
    CHECK(b.size() == (kind == Kind::kReq ? kAuthReqSize : kAuthRepSize));
    CHECK(b.size() <= limit_of(kind));
    CHECK((b[kBaseSize] & kCapAuth) != 0);
    const Decoded d = decode(b, kind);
    REQUIRE(d.ok);
    CHECK(d.data == pd);
    // What a release before kCapAuth reads: the first kEncodedSize bytes,
    // bit 7 unknown to it: the same REQ/REP without the proof.
    PrivateData v1 = pd;
    v1.auth = false;
    const auto without = encode(v1);
    CHECK(without[kBaseSize] == (b[kBaseSize] & ~kCapAuth));
    CHECK(std::equal(without.begin(), without.begin() + kBaseSize, b.begin()));
    CHECK(std::equal(without.begin() + kBaseSize + 1, without.end(), b.begin() + kBaseSize + 1));
    // Cut short: refused, never read as zeros.
    for (std::size_t n = kEncodedSize; n < b.size(); ++n) {
      const Decoded cut = decode(std::span(b.data(), n), kind);
      REQUIRE_FALSE(cut.ok);
      CHECK(cut.error == DecodeError::kShortAuth);
    }
  }
}

TEST_CASE("wire: kCapRails round-trips on its own bit, apart from kCapGso", "[wire][rails]") {
  PrivateData pd = sample(Kind::kRep);
  pd.gso = false;
  pd.rails = true;
  const auto b = encode(pd);
  CHECK(b[kBaseSize] == kCapRails);
  const Decoded d = decode(b, Kind::kRep);
  REQUIRE(d.ok);
  CHECK(d.data.rails);
  CHECK_FALSE(d.data.gso);
  // An old peer's private data (no capability byte) has no rails.
  auto old = std::vector<std::uint8_t>(b.begin(), b.begin() + kBaseSize);
  CHECK_FALSE(decode(old, Kind::kRep).data.rails);
}

TEST_CASE("wire: kCapUso is bit 6 of byte 43, beside kCapGso", "[wire][gso][uso]") {
  PrivateData pd = sample(Kind::kReq);
  pd.gso = true;
  pd.uso = true;
  pd.rails = false;
  pd.busy = false;
  const auto b = encode(pd);
  CHECK(b[kBaseSize] == (kCapGso | 0x40));
  const Decoded d = decode(b, Kind::kReq);
  REQUIRE(d.ok);
  CHECK(d.data.gso);
  CHECK(d.data.uso);
  // A peer from before kCapUso: GSO, and no USO.
  auto before = b;
  before[kBaseSize] = kCapGso;
  CHECK_FALSE(decode(before, Kind::kReq).data.uso);
  CHECK(decode(before, Kind::kReq).data.gso);
}

TEST_CASE("wire: rail messages encode and decode; unknown versions and types are refused",
          "[wire][rails]") {
  const RailMsg m{RailMsgType::kDown, 1, 3};
  const auto b = encode_rail_msg(m);
  CHECK(decode_rail_msg(b) == m);
  auto bad = b;
  bad[0] = std::byte{2};  // another version
  CHECK_FALSE(decode_rail_msg(bad));
  bad = b;
  bad[1] = std::byte{9};  // unknown type
  CHECK_FALSE(decode_rail_msg(bad));
  CHECK_FALSE(decode_rail_msg(std::span(b).first(3)));  // short
  std::vector<std::byte> longer(b.begin(), b.end());
  longer.push_back(std::byte{0x77});  // a later version's tail: ignored
  CHECK(decode_rail_msg(longer) == m);
}

TEST_CASE("wire: REJ busy carries its retry-after; nothing else does", "[wire][admission]") {
  PrivateData pd = sample(Kind::kRej);
  pd.reason = RejectReason::kBusy;
  pd.retry_after_ms = 0x1234;
  auto b = encode(pd);
  CHECK(b[kBaseSize + 1] == 0x12);
  CHECK(b[kBaseSize + 2] == 0x34);
  Decoded d = decode(b, Kind::kRej);
  REQUIRE(d.ok);
  CHECK(d.data.reason == RejectReason::kBusy);
  CHECK(d.data.retry_after_ms == 0x1234);
  CHECK(to_string(d.data.reason) == "busy");
  // The same bytes in any other REJ mean nothing and are not written.
  pd.reason = RejectReason::kFull;
  b = encode(pd);
  CHECK(b[kBaseSize + 1] == 0);
  CHECK(b[kBaseSize + 2] == 0);
  auto full = std::vector<std::uint8_t>(b.begin(), b.end());
  full[kBaseSize + 1] = 0x55;
  d = decode(full, Kind::kRej);
  REQUIRE(d.ok);
  CHECK(d.data.retry_after_ms == 0);
  // A REJ busy cut short of the retry-after (iWARP passes lengths through)
  // reads as "not said".
  pd.reason = RejectReason::kBusy;
  b = encode(pd);
  d = decode(std::span(b).first(kBaseSize + 1), Kind::kRej);
  REQUIRE(d.ok);
  CHECK(d.data.retry_after_ms == 0);
  // kCapBusy round-trips on its own bit.
  PrivateData req = sample(Kind::kReq);
  req.gso = false;
  req.busy = true;
  const auto r = encode(req);
  CHECK(r[kBaseSize] == kCapBusy);
  CHECK(decode(r, Kind::kReq).data.busy);
  CHECK(decode(std::span(r).first(kBaseSize), Kind::kReq).data.busy == false);
}

TEST_CASE("wire: the rail count rides in REQ and REP byte 46; older and REJ read 0",
          "[wire][rails]") {
  for (Kind kind : {Kind::kReq, Kind::kRep}) {
    PrivateData pd = sample(kind);
    pd.rail_count = 3;
    const auto b = encode(pd);
    CHECK(b[kBaseSize + 3] == 3);
    Decoded d = decode(b, kind);
    REQUIRE(d.ok);
    CHECK(d.data.rail_count == 3);
    // A peer from before the field: its 46 bytes (or 43) say nothing.
    d = decode(std::span(b).first(kBaseSize + 3), kind);
    REQUIRE(d.ok);
    CHECK(d.data.rail_count == 0);
    // Any value is taken as said, none refused: a receiver with fewer rails
    // ignores the rest.
    auto many = std::vector<std::uint8_t>(b.begin(), b.end());
    many[kBaseSize + 3] = 200;
    d = decode(many, kind);
    REQUIRE(d.ok);
    CHECK(d.data.rail_count == 200);
  }
  // A REJ neither writes nor reads it.
  PrivateData rej = sample(Kind::kRej);
  rej.rail_count = 3;
  auto b = encode(rej);
  CHECK(b[kBaseSize + 3] == 0);
  auto set = std::vector<std::uint8_t>(b.begin(), b.end());
  set[kBaseSize + 3] = 4;
  const Decoded d = decode(set, Kind::kRej);
  REQUIRE(d.ok);
  CHECK(d.data.rail_count == 0);
}

}  // namespace wire_private_data_test
