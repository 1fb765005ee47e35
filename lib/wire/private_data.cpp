// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/private_data.hpp"

#include <algorithm>

#include "wire/bytes.hpp"

namespace rcnet::wire {

namespace {

// Field offsets of layout v1 (see the header).
constexpr std::size_t kOffVersion = 0;
constexpr std::size_t kOffKind = 1;
constexpr std::size_t kOffMagic = 2;
constexpr std::size_t kOffNodeId = 4;
constexpr std::size_t kOffIncarnation = 12;
constexpr std::size_t kOffMtu = 20;
constexpr std::size_t kOffFlags = 24;
constexpr std::size_t kOffFamily = 25;
constexpr std::size_t kOffOverlay = 26;
constexpr std::size_t kOffReason = 42;
constexpr std::size_t kOffCaps = 43;
constexpr std::size_t kOffRetryAfter = 44;
constexpr std::size_t kOffRailCount = 46;
constexpr std::size_t kOffCredits = 47;
static_assert(kOffReason + 1 == kBaseSize);
static_assert(kOffRetryAfter + 2 == kOffRailCount);
static_assert(kOffRailCount + 1 == kOffCredits);
static_assert(kOffCredits + 2 == kEncodedSize);
static_assert(kEncodedSize <= kMaxReqSize);
// With kCapAuth (REQ and REP).
constexpr std::size_t kOffKeyId = kEncodedSize;
constexpr std::size_t kOffReqNonce = kOffKeyId + 1;
constexpr std::size_t kOffRepTag = kOffKeyId + 1;
constexpr std::size_t kOffRepNonce = kOffRepTag + kOverlayTagLen;
constexpr std::size_t kOffRepProof = kOffRepNonce + kRepNonceLen;
static_assert(kOffReqNonce + kReqNonceLen == kAuthReqSize);
static_assert(kOffRepProof + kProofLen == kAuthRepSize);

constexpr std::uint8_t kMagic0 = 0x52;  // 'R'
constexpr std::uint8_t kMagic1 = 0x43;  // 'C'
constexpr std::uint8_t kFlagSrq = 0x01;
constexpr std::uint8_t kFamilyNone = 0;
constexpr std::uint8_t kFamilyV4 = 4;
constexpr std::uint8_t kFamilyV6 = 6;

std::size_t limit_for(Kind k) {
  switch (k) {
    case Kind::kReq:
      return kMaxReqSize;
    case Kind::kRep:
      return kMaxRepSize;
    case Kind::kRej:
      return kMaxRejSize;
  }
  return kEncodedSize;
}

Decoded fail(DecodeError e) {
  Decoded d;
  d.ok = false;
  d.error = e;
  return d;
}

}  // namespace

std::string_view to_string(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
#define RCNET_X(ctx, enumerator, code, name, help) \
  case RejectReason::enumerator:                   \
    return #name;
      RCNET_REJECT_REASONS(RCNET_X, )
#undef RCNET_X
  }
  return "unknown";
}

std::string_view to_string(DecodeError e) {
  switch (e) {
    case DecodeError::kShort:
      return "short";
    case DecodeError::kOversized:
      return "oversized";
    case DecodeError::kBadVersion:
      return "bad_version";
    case DecodeError::kBadKind:
      return "bad_kind";
    case DecodeError::kBadMagic:
      return "bad_magic";
    case DecodeError::kZeroNodeId:
      return "zero_node_id";
    case DecodeError::kZeroIncarnation:
      return "zero_incarnation";
    case DecodeError::kBadMtu:
      return "bad_mtu";
    case DecodeError::kBadFlags:
      return "bad_flags";
    case DecodeError::kBadFamily:
      return "bad_family";
    case DecodeError::kBadReason:
      return "bad_reason";
    case DecodeError::kShortAuth:
      return "short_auth";
  }
  return "unknown";
}

std::vector<std::uint8_t> encode(const PrivateData& pd) {
  const bool auth = pd.auth && pd.kind != Kind::kRej;
  std::vector<std::uint8_t> out(!auth                   ? kEncodedSize
                                : pd.kind == Kind::kReq ? kAuthReqSize
                                                        : kAuthRepSize);
  out[kOffVersion] = kVersion;
  out[kOffKind] = static_cast<std::uint8_t>(pd.kind);
  out[kOffMagic] = kMagic0;
  out[kOffMagic + 1] = kMagic1;
  put_be<std::uint64_t>(std::span(out), kOffNodeId, pd.node_id);
  put_be<std::uint64_t>(std::span(out), kOffIncarnation, pd.incarnation);
  put_be<std::uint32_t>(std::span(out), kOffMtu, pd.mtu);
  out[kOffFlags] = pd.srq ? kFlagSrq : 0;
  if (pd.overlay.is_v4()) {
    out[kOffFamily] = kFamilyV4;
    std::copy_n(pd.overlay.bytes.begin(), 4, &out[kOffOverlay]);
  } else if (pd.overlay.is_v6()) {
    out[kOffFamily] = kFamilyV6;
    std::copy_n(pd.overlay.bytes.begin(), 16, &out[kOffOverlay]);
  } else {
    out[kOffFamily] = kFamilyNone;
  }
  out[kOffReason] = static_cast<std::uint8_t>(pd.reason);
  out[kOffCaps] = static_cast<std::uint8_t>(
      (pd.gso ? kCapGso : 0) | (pd.rails ? kCapRails : 0) | (pd.busy ? kCapBusy : 0) |
      (pd.header ? kCapHeader : 0) | (pd.header_ok ? kCapHeaderOk : 0));
  if (pd.uso)
    out[kOffCaps] = static_cast<std::uint8_t>(out[kOffCaps] | kCapUso);
  if (auth) {
    out[kOffCaps] = static_cast<std::uint8_t>(out[kOffCaps] | kCapAuth);
    out[kOffKeyId] = pd.key_id;
    if (pd.kind == Kind::kReq) {
      std::copy_n(pd.nonce.begin(), kReqNonceLen, &out[kOffReqNonce]);
    } else {
      std::copy(pd.overlay_tag.begin(), pd.overlay_tag.end(), &out[kOffRepTag]);
      std::copy(pd.nonce.begin(), pd.nonce.end(), &out[kOffRepNonce]);
      std::copy(pd.proof.begin(), pd.proof.end(), &out[kOffRepProof]);
    }
  }
  if (pd.kind == Kind::kRej && pd.reason == RejectReason::kBusy)
    put_be<std::uint16_t>(std::span(out), kOffRetryAfter, pd.retry_after_ms);
  if (pd.kind != Kind::kRej) {
    out[kOffRailCount] = pd.rail_count;
    put_be<std::uint16_t>(std::span(out), kOffCredits, pd.credits);
  }
  return out;
}

Decoded decode(std::span<const std::uint8_t> bytes, Kind expected) {
  // The version is judged before the length: a later version may be shorter,
  // and the receiver must still be able to answer it with REJ `version`.
  if (bytes.empty())
    return fail(DecodeError::kShort);
  if (bytes[kOffVersion] != kVersion)
    return fail(DecodeError::kBadVersion);
  if (bytes.size() < kBaseSize)
    return fail(DecodeError::kShort);
  if (bytes[kOffKind] != static_cast<std::uint8_t>(expected))
    return fail(DecodeError::kBadKind);
  if (bytes.size() > limit_for(expected))
    return fail(DecodeError::kOversized);
  if (bytes[kOffMagic] != kMagic0 || bytes[kOffMagic + 1] != kMagic1) {
    return fail(DecodeError::kBadMagic);
  }

  Decoded d;
  PrivateData& pd = d.data;
  pd.kind = expected;
  pd.node_id = get_be<std::uint64_t>(bytes, kOffNodeId);
  if (pd.node_id == 0)
    return fail(DecodeError::kZeroNodeId);
  pd.incarnation = get_be<std::uint64_t>(bytes, kOffIncarnation);
  if (pd.incarnation == 0)
    return fail(DecodeError::kZeroIncarnation);
  pd.mtu = get_be<std::uint32_t>(bytes, kOffMtu);
  if (pd.mtu < kMinMtu || pd.mtu > kMaxMtu)
    return fail(DecodeError::kBadMtu);
  const std::uint8_t flags = bytes[kOffFlags];
  if ((flags & ~kFlagSrq) != 0)
    return fail(DecodeError::kBadFlags);
  pd.srq = (flags & kFlagSrq) != 0;

  // Bytes of the overlay field that the family leaves unused must be zero, so
  // that every accepted input has exactly one meaning (and re-encodes to itself).
  const auto overlay = bytes.subspan(kOffOverlay, 16);
  const auto zero_from = [&](std::size_t n) {
    return std::all_of(overlay.begin() + static_cast<std::ptrdiff_t>(n), overlay.end(),
                       [](std::uint8_t b) { return b == 0; });
  };
  switch (bytes[kOffFamily]) {
    case kFamilyNone:
      if (!zero_from(0))
        return fail(DecodeError::kBadFamily);
      pd.overlay = IpAddr{};
      break;
    case kFamilyV4:
      if (!zero_from(4))
        return fail(DecodeError::kBadFamily);
      pd.overlay.family = AF_INET;
      std::copy_n(overlay.begin(), 4, pd.overlay.bytes.begin());
      break;
    case kFamilyV6:
      pd.overlay.family = AF_INET6;
      std::copy_n(overlay.begin(), 16, pd.overlay.bytes.begin());
      break;
    default:
      return fail(DecodeError::kBadFamily);
  }

  const std::uint8_t reason = bytes[kOffReason];
  if (expected == Kind::kRej) {
    if (reason == static_cast<std::uint8_t>(RejectReason::kNone) ||
        reason > static_cast<std::uint8_t>(kMaxRejectReason)) {
      return fail(DecodeError::kBadReason);
    }
  } else if (reason != 0) {
    return fail(DecodeError::kBadReason);
  }
  pd.reason = static_cast<RejectReason>(reason);
  // Capabilities: absent in a first-version peer's private data; reserved
  // bits are a later version's and mean nothing here.
  const std::uint8_t caps = bytes.size() > kOffCaps ? bytes[kOffCaps] : 0;
  pd.uso = (caps & kCapUso) != 0;
  pd.gso = (caps & kCapGso) != 0;
  pd.rails = (caps & kCapRails) != 0;
  pd.busy = (caps & kCapBusy) != 0;
  pd.header = (caps & kCapHeader) != 0;
  pd.header_ok = (caps & kCapHeaderOk) != 0;
  // The retry-after means something in a REJ busy only. Bytes missing from
  // a shorter private data read as the zeros rdma_cm pads with.
  const auto at = [&](std::size_t off) -> unsigned { return off < bytes.size() ? bytes[off] : 0; };
  if (pd.kind == Kind::kRej && pd.reason == RejectReason::kBusy) {
    pd.retry_after_ms =
        static_cast<std::uint16_t>(at(kOffRetryAfter) << 8 | at(kOffRetryAfter + 1));
  }
  // The rail count means something in a REQ or REP only.
  if (pd.kind != Kind::kRej)
    pd.rail_count = static_cast<std::uint8_t>(at(kOffRailCount));
  // So is the credit grant; a peer from before the field grants none (its
  // private data is zero-padded there), and a private data cut inside the
  // field reads the missing byte as that padding too, so that the same
  // prefix padded with zeros decodes to the same value.
  if (pd.kind != Kind::kRej)
    pd.credits = static_cast<std::uint16_t>(at(kOffCredits) << 8 | at(kOffCredits + 1));
  // The proof's fields: all of them, or the REQ/REP is refused (a receiver
  // that asks for proofs must not read a cut one as zeros).
  if ((caps & kCapAuth) != 0 && pd.kind != Kind::kRej) {
    const std::size_t need = pd.kind == Kind::kReq ? kAuthReqSize : kAuthRepSize;
    if (bytes.size() < need || bytes[kOffKeyId] == 0)
      return fail(DecodeError::kShortAuth);
    pd.auth = true;
    pd.key_id = bytes[kOffKeyId];
    if (pd.kind == Kind::kReq) {
      std::copy_n(&bytes[kOffReqNonce], kReqNonceLen, pd.nonce.begin());
    } else {
      std::copy_n(&bytes[kOffRepTag], kOverlayTagLen, pd.overlay_tag.begin());
      std::copy_n(&bytes[kOffRepNonce], kRepNonceLen, pd.nonce.begin());
      std::copy_n(&bytes[kOffRepProof], kProofLen, pd.proof.begin());
    }
  }
  d.ok = true;
  return d;
}

}  // namespace rcnet::wire
