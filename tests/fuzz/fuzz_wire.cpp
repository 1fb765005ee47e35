// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fuzzer `wire`: connection private data (lib/wire) from both ends.
//
// Input: byte 0 picks the kind the receiver expects (REQ, REP, REJ); the rest
// is the private data as rdma_cm hands it over.
//
// Decode side, for every accepted input (the canonical-form property):
//   - its length is kBaseSize..the kind's limit, and its kind is the one expected;
//   - encode(decode(in)) reproduces its first kBaseSize bytes exactly, and the
//     capabilities byte (when present) masked to the bits this version knows
//     (reserved bits are ignored on receipt, private_data.hpp): every
//     interpreted byte has one meaning, so no input is accepted that encode
//     could not have produced. Bytes past kEncodedSize are rdma_cm's zero
//     padding and, as private_data.hpp documents, not interpreted: the same
//     prefix padded with zeros to the kind's limit decodes to the same value;
//   - decode(encode(decode(in))) == decode(in).
// The same input after byte 0 as the active side's proof message
// (wire/auth_message.hpp): an accepted one re-encodes to itself.
// Encode side: the same bytes read as fields build a PrivateData x; if x is
// valid by the header's rules, decode(encode(x)) == x; if not, decode refuses
// encode(x) (encode never produces accepted bytes for an invalid value).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "wire/auth_message.hpp"
#include "wire/private_data.hpp"

using namespace rcnet;
using namespace rcnet::wire;

namespace {

std::size_t limit_of(Kind k) {
  switch (k) {
    case Kind::kReq:
      return kMaxReqSize;
    case Kind::kRep:
      return kMaxRepSize;
    case Kind::kRej:
      return kMaxRejSize;
  }
  return 0;
}

Kind kind_from(std::uint8_t b) {
  return static_cast<Kind>(1 + b % 3);
}

void decode_side(Kind expected, std::span<const std::uint8_t> in) {
  const Decoded d = decode(in, expected);
  FUZZ_CHECK(to_string(d.error) != "unknown");
  if (!d.ok)
    return;
  FUZZ_CHECK(in.size() >= kBaseSize);
  FUZZ_CHECK(in.size() <= limit_of(expected));
  FUZZ_CHECK(d.data.kind == expected);
  FUZZ_CHECK(to_string(d.data.reason) != "unknown");

  const auto enc = encode(d.data);
  FUZZ_CHECK(std::memcmp(enc.data(), in.data(), kBaseSize) == 0);
  const std::uint8_t caps = in.size() > kBaseSize ? in[kBaseSize] : 0;
  // kCapAuth means nothing in a REJ (its fields are a REQ's and a REP's).
  const std::uint8_t known = expected == Kind::kRej ? kKnownCaps & ~kCapAuth : kKnownCaps;
  FUZZ_CHECK(enc[kBaseSize] == (caps & known));
  // With kCapAuth the proof's fields follow, byte for byte.
  FUZZ_CHECK(d.data.auth == ((caps & known & kCapAuth) != 0));
  if (d.data.auth) {
    FUZZ_CHECK(enc.size() <= in.size());
    FUZZ_CHECK(d.data.key_id != 0);
    FUZZ_CHECK(std::memcmp(enc.data() + kEncodedSize, in.data() + kEncodedSize,
                           enc.size() - kEncodedSize) == 0);
  }
  // The retry-after (bytes kBaseSize + 1, + 2) is interpreted in a REJ busy
  // only, the rail count (kBaseSize + 3) and the credits granted (kBaseSize
  // + 4, + 5) in a REQ or REP only; missing bytes read as rdma_cm's zero
  // padding.
  for (std::size_t i = kBaseSize + 1; i < kEncodedSize; ++i) {
    const bool busy = expected == Kind::kRej && d.data.reason == RejectReason::kBusy;
    const bool kept = i >= kBaseSize + 3 ? expected != Kind::kRej : busy;
    FUZZ_CHECK(enc[i] == (kept && i < in.size() ? in[i] : 0));
  }

  const Decoded again = decode(enc, expected);
  FUZZ_CHECK(again.ok);
  FUZZ_CHECK(again.data == d.data);

  std::vector<std::uint8_t> padded(limit_of(expected), 0);
  std::memcpy(padded.data(), in.data(), std::min(in.size(), enc.size()));
  const Decoded pad = decode(padded, expected);
  FUZZ_CHECK(pad.ok);
  FUZZ_CHECK(pad.data == d.data);
}

// Reads fields from the input, wrapping around (never out of bounds).
struct Bytes {
  std::span<const std::uint8_t> in;
  std::size_t pos = 0;
  std::uint8_t u8() { return in.empty() ? 0 : in[pos++ % in.size()]; }
  template <class T>
  T get() {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      v = static_cast<T>((v << 8) | u8());
    return v;
  }
};

void encode_side(std::span<const std::uint8_t> in) {
  Bytes b{in};
  PrivateData x;
  x.kind = kind_from(b.u8());
  // Small values often, so the zero and range edges are hit.
  const std::uint8_t shape = b.u8();
  x.node_id = (shape & 1) ? b.get<std::uint8_t>() : b.get<std::uint64_t>();
  x.incarnation = (shape & 2) ? b.get<std::uint8_t>() : b.get<std::uint64_t>();
  x.mtu = (shape & 4)
              ? kMinMtu - 2 + b.get<std::uint8_t>() % 4
              : ((shape & 8) ? kMaxMtu - 2 + b.get<std::uint8_t>() % 4 : b.get<std::uint32_t>());
  const std::uint8_t bits = b.u8();
  x.srq = (bits & 1) != 0;
  x.gso = (bits & 2) != 0;
  x.rails = (bits & 4) != 0;
  x.busy = (bits & 8) != 0;
  switch (b.u8() % 3) {
    case 0:
      x.overlay = IpAddr{};
      break;
    case 1:
      x.overlay = IpAddr::v4(b.get<std::uint32_t>());
      break;
    default:
      x.overlay.family = AF_INET6;
      for (auto& byte : x.overlay.bytes)
        byte = b.u8();
      break;
  }
  x.reason = static_cast<RejectReason>(b.u8() % 10);
  // A retry-after exists in a REJ busy only (encode writes it nowhere else).
  if (x.kind == Kind::kRej && x.reason == RejectReason::kBusy)
    x.retry_after_ms = b.get<std::uint16_t>();
  // A rail count exists in a REQ or REP only.
  if (x.kind != Kind::kRej)
    x.rail_count = b.u8();
  // So do the proof's fields (a REQ's nonce is its first kReqNonceLen bytes,
  // its tag and proof zero).
  if (x.kind != Kind::kRej && (bits & 16) != 0) {
    x.auth = true;
    x.key_id = b.u8();
    const std::size_t nonce_len = x.kind == Kind::kReq ? kReqNonceLen : kRepNonceLen;
    for (std::size_t i = 0; i < nonce_len; ++i)
      x.nonce[i] = b.u8();
    if (x.kind == Kind::kRep) {
      for (auto& t : x.overlay_tag)
        t = b.u8();
      for (auto& p : x.proof)
        p = b.u8();
    }
  }

  const bool valid_reason = x.kind == Kind::kRej
                                ? (x.reason != RejectReason::kNone && x.reason <= kMaxRejectReason)
                                : x.reason == RejectReason::kNone;
  const bool valid = x.node_id != 0 && x.incarnation != 0 && x.mtu >= kMinMtu && x.mtu <= kMaxMtu &&
                     valid_reason && (!x.auth || x.key_id != 0);

  const auto enc = encode(x);
  const Decoded d = decode(enc, x.kind);
  if (valid) {
    FUZZ_CHECK(d.ok);
    FUZZ_CHECK(d.data == x);
  } else {
    FUZZ_CHECK(!d.ok);
  }
  // A receiver expecting another kind refuses it (kind_from(k) is the kind after k).
  const Decoded wrong = decode(enc, kind_from(static_cast<std::uint8_t>(x.kind)));
  FUZZ_CHECK(!wrong.ok && wrong.error == DecodeError::kBadKind);
}

}  // namespace

// The active side's proof message (wire/auth_message.hpp): an accepted one
// is re-encoded to the same bytes, but for the reserved byte 3.
void auth_msg_side(std::span<const std::uint8_t> in) {
  const auto b = std::as_bytes(in);
  const auto m = decode_auth_msg(b);
  if (!m)
    return;
  FUZZ_CHECK(in.size() >= kAuthMsgSize);
  FUZZ_CHECK(m->key_id != 0);
  const auto enc = encode_auth_msg(*m);
  FUZZ_CHECK(std::memcmp(enc.data(), b.data(), 3) == 0);
  FUZZ_CHECK(std::memcmp(enc.data() + 4, b.data() + 4, kAuthMsgSize - 4) == 0);
  FUZZ_CHECK(decode_auth_msg(enc) == m);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::span<const std::uint8_t> all(data, size);
  decode_side(kind_from(data[0]), all.subspan(1));
  encode_side(all);
  auth_msg_side(all.subspan(1));
  return 0;
}
