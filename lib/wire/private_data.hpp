// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Connection private data: what rcnet puts in REQ, REP and REJ (rdma_connect(3),
// rdma_accept(3), rdma_reject(3)). Pure encode/decode, no I/O.
//
// Limits measured on Soft-RoCE (docs/lab.md) and given by the IB CM (IBTA vol. 1,
// 12.6.5 REQ, 12.6.8 REP, 12.6.7 REJ, less rdma_cm's own header): REQ 56 bytes,
// REP 196, REJ 148. A REQ's receiver always sees 56 bytes, zero-padded, so
// decoding accepts trailing bytes up to the kind's limit.
//
// Layout v1, all integers big-endian (network order):
//   off len field
//     0   1 version          (kVersion; decided first, so later versions can change the rest)
//     1   1 kind             (1 REQ, 2 REP, 3 REJ)
//     2   2 magic            ("RC" = 0x52 0x43)
//     4   8 node id          (nonzero; see rcnet::node_id_for)
//    12   8 incarnation      (nonzero, random per daemon start)
//    20   4 mtu              (bytes of IP packet, kMinMtu..kMaxMtu)
//    24   1 flags            (bit 0: sender uses an SRQ; other bits must be 0)
//    25   1 overlay family   (0 none, 4 IPv4, 6 IPv6)
//    26  16 overlay address  (IPv4 in the first 4 bytes, rest zero)
//    42   1 reject reason    (REJ: a RejectReason; REQ/REP: 0)
//    43     = kBaseSize: the first rcnet's encoding ends here
//    43   1 capabilities     (bit 1 kCapGso, bit 2 kCapRails, bit 3 kCapBusy, bit 4
//                            kCapHeader, bit 5 kCapHeaderOk, bit 6 kCapUso; bit 0
//                            retired, see kCapGso; other bits reserved: sent as
//                            0, ignored on receipt; absent = 0)
//    44   2 retry after      (REJ busy only: milliseconds the sender asks the
//                            active side to wait before its next REQ, 0 = not
//                            said; sent as 0 and not interpreted in anything
//                            else; absent = 0)
//    46   1 rail count       (REQ/REP: how many rails, underlay addresses
//                            paired by index, the sender has: 1..255 as
//                            said, 0 = not said (an older peer); sent as 0
//                            in a REJ; absent = 0)
//    47   2 credits          (REQ/REP: receive buffers the sender reserves for
//                            this connection, i.e. SENDs it can take before it
//                            returns credits (wire/frame_header.hpp); 0 = no
//                            credit flow: its device has RNR retry and the
//                            peer may send freely. Sent as 0 in a REJ;
//                            absent = 0)
//    49     = kEncodedSize: without kCapAuth, encode() ends here
//
// With kCapAuth (docs/design.md "Trust"; cm/auth.hpp makes and checks the
// proofs), REQ and REP go on:
//   REQ  49   1 key id         (1..255: the key the sender proves with)
//        50   6 nonce          (the active side's, random per REQ)
//        56     = kAuthReqSize (kMaxReqSize: the REQ is full)
//   REP  49   1 key id         (the REQ's, echoed)
//        50   8 overlay tag    (auth::overlay_tag of the sender's overlay id)
//        58  16 nonce          (the passive side's, random per REP)
//        74  32 proof          (HMAC-SHA-256, auth::passive_proof)
//       106     = kAuthRepSize
// A receiver that does not know kCapAuth (bit 7, reserved before it) ignores
// the bit and every byte past kEncodedSize; one that knows it refuses a REQ
// or REP that sets it and is too short for the fields (kShortAuth).
//
// iWARP carries private data in the MPA request and reply (siw adds 4
// bytes of its own: 49 sent, 53 received, within kMaxReqSize). A REQ with
// kCapAuth (56 bytes) decodes on siw too: lab-siw-auth's handshakes.
//
// Capabilities sit in a byte of their own because v1 receivers refuse any
// unknown bit in the flags byte (kBadFlags, REJ malformed), while they do not
// interpret anything past kBaseSize (rdma_cm's zero padding to them): an old
// peer ignores byte 43, and an old peer's 43-byte private data (or its 56
// zero-padded bytes of a REQ) reads as "no capabilities" here. A capability
// is used on a connection when both ends advertise it.
//
// REJ busy (admission control, docs/design.md "Admission control") is a
// reason a first-version receiver refuses (kBadReason: to it a REJ without
// rcnet private data). It is sent only to a peer whose REQ advertised
// kCapBusy; any other peer gets REJ full for the same refusal, which it
// already retries with backoff, keeping its queued packets.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "util/address.hpp"

namespace rcnet::wire {

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kBaseSize = 43;     // v1 without capabilities (the minimum)
inline constexpr std::size_t kEncodedSize = 49;  // what encode() writes
inline constexpr std::size_t kMaxReqSize = 56;
inline constexpr std::size_t kMaxRepSize = 196;
inline constexpr std::size_t kMaxRejSize = 148;
inline constexpr std::uint32_t kMinMtu = 576;
inline constexpr std::uint32_t kMaxMtu = 65520;  // IPoIB-CM's connected-mode maximum

enum class Kind : std::uint8_t { kReq = 1, kRep = 2, kRej = 3 };

// Capability bits (byte 43).
// kCapGso: the sender's receive buffers hold GSO frames (kVnetHdrLen +
// kGsoMaxPacket) and, on a connection where both ends advertise it, its data
// SENDs may carry one: a virtio_net_hdr (wire/vnet_hdr.hpp, little-endian,
// 10 bytes) followed by one IP packet of at most kGsoMaxPacket bytes, maybe a
// GSO super-packet, marked by its immediate (kImmFrame, wire/immediate.hpp;
// a plain packet keeps kImmData). Bit 0 meant the same without the marking (the
// receiver framed by the negotiation alone, which loses the first frames when
// they complete before the active side's ESTABLISHED): builds that set it are
// not understood on this point, so it is never sent and ignored on receipt,
// and such a peer gets plain packets.
inline constexpr std::uint8_t kCapGso = 0x02;
// kCapUso (bit 6; with kCapGso): the sender's TUN takes UDP GSO frames
// (VIRTIO_NET_HDR_GSO_UDP_L4): its kernel granted TUN_F_USO4|TUN_F_USO6
// (Linux 6.2 and later). A TUN without USO refuses such a frame on write
// (virtio_net_hdr_to_skb before 6.2 knows no UDP_L4), so a peer with kCapGso
// alone gets UDP super-packets cut in software, and TCP ones whole
// (docs/design.md "Offloads").
inline constexpr std::uint8_t kCapUso = 0x40;
// kCapRails: the sender understands rail messages (kImmRail,
// wire/rail_message.hpp): it switches its direction of a connection to
// another rail when told that ours went down. Without it a peer still works
// over rails; it finds a dead link by its own RC retries instead.
inline constexpr std::uint8_t kCapRails = 0x04;
// kCapBusy: the sender understands REJ busy and its retry-after (bytes
// 44..45): it waits that long, plus jitter, instead of its ordinary backoff.
inline constexpr std::uint8_t kCapBusy = 0x08;
// kCapHeader: the sender's device cannot carry (or the sender grants
// credits and needs back) what the immediate says: every SEND to it starts
// with a frame header (wire/frame_header.hpp) and carries no immediate. A
// connection uses the immediate only when neither end sets it, so
// InfiniBand and RoCE keep it and pay nothing.
inline constexpr std::uint8_t kCapHeader = 0x10;
// kCapHeaderOk: the sender frames a receive without an immediate by its
// frame header (every build that knows kCapHeader sets it). A peer without
// it drops such SENDs, so a node that would use the header only by choice
// (transport.framing = header on a device with immediates) uses the
// immediate toward it.
inline constexpr std::uint8_t kCapHeaderOk = 0x20;
// kCapAuth: the sender proves a cluster key (docs/design.md "Trust"): a
// REQ carries its key id and nonce, a REP the passive side's proof, and the
// active side's first SEND on the connection is its proof (kImmAuth,
// wire/auth_message.hpp). A peer without it offers no proof.
inline constexpr std::uint8_t kCapAuth = 0x80;
inline constexpr std::uint8_t kKnownCaps =
    kCapGso | kCapRails | kCapBusy | kCapHeader | kCapHeaderOk | kCapUso | kCapAuth;

inline constexpr std::size_t kReqNonceLen = 6;
inline constexpr std::size_t kRepNonceLen = 16;
inline constexpr std::size_t kOverlayTagLen = 8;
inline constexpr std::size_t kProofLen = 32;  // HMAC-SHA-256
inline constexpr std::size_t kAuthReqSize = kEncodedSize + 1 + kReqNonceLen;
inline constexpr std::size_t kAuthRepSize =
    kEncodedSize + 1 + kOverlayTagLen + kRepNonceLen + kProofLen;
static_assert(kAuthReqSize <= kMaxReqSize && kAuthRepSize <= kMaxRepSize);

// Why a connection request was refused, carried in REJ private data: one
// row per reason, X(ctx, enumerator, code, name, help). code is the byte on
// the wire (dense from 1: decode() refuses the others, and the counter table
// cm::kRejectsSent is indexed by it); name is what to_string() gives (logs,
// the monitor, the counter rejects_sent_<name> and its series
// rcnet_rejs_sent_total{reason="<name>"}, cm/snapshot.hpp); help is that
// counter's help. A new reason is one row here plus the code that sends it.
// ctx goes to X untouched (cm/snapshot.hpp passes its counter table's X).
#define RCNET_REJECT_REASONS(X, ctx)                                                      \
  /* simultaneous open: the other attempt wins */                                         \
  X(ctx, kCollision, 1, collision, "REJ sent: collision")                                 \
  /* already ESTABLISHED with this incarnation */                                         \
  X(ctx, kDuplicate, 2, duplicate, "REJ sent: duplicate")                                 \
  /* max_connections reached and nothing evictable */                                     \
  X(ctx, kFull, 3, full, "REJ sent: full")                                                \
  /* unknown private-data version */                                                      \
  X(ctx, kVersion, 4, version, "REJ sent: version")                                       \
  /* peer outside allowed subnets */                                                      \
  X(ctx, kNotAllowed, 5, not_allowed, "REJ sent: not_allowed")                            \
  /* daemon stopping or underlay link down */                                             \
  X(ctx, kShuttingDown, 6, shutting_down, "REJ sent: shutting_down")                      \
  /* private data failed validation */                                                    \
  X(ctx, kMalformed, 7, malformed, "REJ sent: malformed")                                 \
  /* limits.max_pending_setups setups in progress: retry after retry_after_ms */          \
  X(ctx, kBusy, 8, busy, "REJ sent: busy (max_pending_setups; as full to an older peer)") \
  /* kCapAuth only: the REQ's key id is not among auth.keys */                            \
  X(ctx, kUnknownKey, 9, unknown_key, "REJ sent: unknown_key (auth)")                     \
  /* kCapAuth only: the REQ's nonce was seen before (a replayed REQ) */                   \
  X(ctx, kReplay, 10, replay, "REJ sent: replay (auth)")

enum class RejectReason : std::uint8_t {
  kNone = 0,
#define RCNET_X(ctx, enumerator, code, name, help) enumerator = code,
  RCNET_REJECT_REASONS(RCNET_X, )
#undef RCNET_X
};
namespace detail {
inline constexpr std::uint8_t kRejectCodes[] = {
#define RCNET_X(ctx, enumerator, code, name, help) code,
    RCNET_REJECT_REASONS(RCNET_X, )
#undef RCNET_X
};
constexpr bool reject_codes_dense() {
  for (std::size_t i = 0; i < std::size(kRejectCodes); ++i) {
    if (kRejectCodes[i] != i + 1)
      return false;
  }
  return true;
}
static_assert(reject_codes_dense(), "RCNET_REJECT_REASONS: codes 1, 2, ... in row order");
}  // namespace detail
inline constexpr RejectReason kMaxRejectReason =
    static_cast<RejectReason>(std::size(detail::kRejectCodes));
std::string_view to_string(RejectReason r);  // "collision", "duplicate", ...

struct PrivateData {
  Kind kind = Kind::kReq;
  NodeId node_id = 0;
  std::uint64_t incarnation = 0;
  std::uint32_t mtu = kMaxMtu;
  bool srq = true;
  IpAddr overlay;  // AF_UNSPEC = none
  RejectReason reason = RejectReason::kNone;
  bool uso = false;    // kCapUso (meaningful in REQ and REP, with gso)
  bool gso = false;    // kCapGso (meaningful in REQ and REP)
  bool rails = false;  // kCapRails (meaningful in REQ and REP)
  bool busy = false;   // kCapBusy (meaningful in REQ and REP)
  // REJ busy only (0 in anything else): how long the active side should wait
  // before its next REQ, in milliseconds; 0 = not said.
  std::uint16_t retry_after_ms = 0;
  // REQ/REP: the sender's rail count (docs/design.md "Rails"): its rail k
  // exists for k below it, so a link on a higher rail cannot be made and
  // is not dialled. 0 = not said (a peer from before the field). Not
  // checked against any maximum: a receiver with fewer rails ignores the
  // rest.
  std::uint8_t rail_count = 0;
  bool header = false;     // kCapHeader (meaningful in REQ and REP)
  bool header_ok = false;  // kCapHeaderOk (meaningful in REQ and REP)
  // REQ/REP: receive credits granted (bytes 47..48); 0 = no credit flow.
  std::uint16_t credits = 0;
  // REQ/REP: kCapAuth and its fields (meaningless without it). A REQ's
  // nonce is its first kReqNonceLen bytes; overlay_tag and proof are a REP's.
  bool auth = false;
  std::uint8_t key_id = 0;
  std::array<std::uint8_t, kRepNonceLen> nonce{};
  std::array<std::uint8_t, kOverlayTagLen> overlay_tag{};
  std::array<std::uint8_t, kProofLen> proof{};
  bool operator==(const PrivateData&) const = default;
};

enum class DecodeError : std::uint8_t {
  kShort,       // fewer than kBaseSize bytes
  kOversized,   // more than the kind's limit
  kBadVersion,  // first byte is not kVersion
  kBadKind,
  kBadMagic,
  kZeroNodeId,
  kZeroIncarnation,
  kBadMtu,     // outside kMinMtu..kMaxMtu
  kBadFlags,   // unknown flag bits set
  kBadFamily,  // overlay family not 0/4/6, or unused overlay bytes nonzero
               // (IPv4: bytes 4..15; none: all 16)
  kBadReason,  // REJ with kNone or unknown reason; REQ/REP with a reason
  kShortAuth,  // REQ/REP with kCapAuth, too short for its fields (or key id 0)
};
std::string_view to_string(DecodeError e);

// Encodes `pd`: kEncodedSize bytes, or with pd.auth (REQ, REP) kAuthReqSize
// or kAuthRepSize (always within the kind's limit). retry_after_ms is
// written only for a REJ busy (zeros otherwise); a REJ carries no auth
// fields.
std::vector<std::uint8_t> encode(const PrivateData& pd);

struct Decoded {
  bool ok = false;
  PrivateData data;
  DecodeError error = DecodeError::kShort;
};
// Validates everything; never reads past `bytes`. `expected` is the kind the
// caller is waiting for (a REP where a REQ was expected is kBadKind).
// Checks run in this order, so the first failing one is reported: empty →
// kShort; version (judged before the length, so a receiver can answer any
// other version with REJ `version`); fewer than kBaseSize → kShort; kind;
// the kind's size limit; then the fields in layout order. The capabilities
// byte is read when present (unknown bits ignored); bytes after kEncodedSize (rdma_cm's zero
// padding) are not interpreted.
Decoded decode(std::span<const std::uint8_t> bytes, Kind expected);

}  // namespace rcnet::wire
