// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The active side's proof: the payload of a SEND with immediate kImmAuth
// (wire/immediate.hpp), its first SEND on a connection whose REP carried
// the passive side's proof (kCapAuth, wire/private_data.hpp; docs/design.md
// "Trust"). Part of the wire protocol. kAuthMsgSize bytes:
//   offset size field
//        0    1 version      (kAuthMsgVersion)
//        1    1 type         (1: proof)
//        2    1 key id       (the REQ's)
//        3    1 reserved     (sent as 0, ignored)
//        4    8 overlay tag  (auth::overlay_tag of the sender's overlay id)
//       12   32 proof        (auth::make_proof, Role::kActive)
// Longer payloads are a later version's: the first kAuthMsgSize bytes are
// read and the rest ignored. A message that cannot be decoded is a bad proof.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wire/frame_header.hpp"
#include "wire/immediate.hpp"
#include "wire/private_data.hpp"

namespace rcnet::wire {

inline constexpr std::uint8_t kAuthMsgVersion = 1;
inline constexpr std::uint8_t kAuthMsgProof = 1;
inline constexpr std::size_t kAuthMsgSize = 4 + kOverlayTagLen + kProofLen;

struct AuthMsg {
  std::uint8_t key_id = 0;
  std::array<std::uint8_t, kOverlayTagLen> overlay_tag{};
  std::array<std::uint8_t, kProofLen> proof{};
  bool operator==(const AuthMsg&) const = default;
};

inline std::array<std::byte, kAuthMsgSize> encode_auth_msg(const AuthMsg& m) {
  std::array<std::byte, kAuthMsgSize> out{};
  out[0] = std::byte{kAuthMsgVersion};
  out[1] = std::byte{kAuthMsgProof};
  out[2] = std::byte{m.key_id};
  for (std::size_t i = 0; i < kOverlayTagLen; ++i)
    out[4 + i] = std::byte{m.overlay_tag[i]};
  for (std::size_t i = 0; i < kProofLen; ++i)
    out[4 + kOverlayTagLen + i] = std::byte{m.proof[i]};
  return out;
}

// A proof message as a SEND of its own carries it: behind a frame header
// (wire/frame_header.hpp, imm kImmAuth) where the SEND has no immediate
// (iWARP), else bare, the immediate kImmAuth saying what it is. For
// clients outside the data path (the benchmark's, the lab's hostile one);
// rcnetd frames it in DataPath::post_auth_message.
inline std::vector<std::byte> auth_send_payload(const AuthMsg& m, bool header) {
  const std::size_t at = header ? kFrameHeaderLen : 0;
  std::vector<std::byte> out(at + kAuthMsgSize);
  if (header)
    put_frame_header({kImmAuth, 0},
                     std::span<std::byte, kFrameHeaderLen>(out.data(), kFrameHeaderLen));
  const auto msg = encode_auth_msg(m);
  for (std::size_t i = 0; i < kAuthMsgSize; ++i)
    out[at + i] = msg[i];
  return out;
}

// nullopt: shorter than kAuthMsgSize, another version or type, key id 0.
inline std::optional<AuthMsg> decode_auth_msg(std::span<const std::byte> b) {
  if (b.size() < kAuthMsgSize || std::to_integer<std::uint8_t>(b[0]) != kAuthMsgVersion ||
      std::to_integer<std::uint8_t>(b[1]) != kAuthMsgProof || b[2] == std::byte{0})
    return std::nullopt;
  AuthMsg m;
  m.key_id = std::to_integer<std::uint8_t>(b[2]);
  for (std::size_t i = 0; i < kOverlayTagLen; ++i)
    m.overlay_tag[i] = std::to_integer<std::uint8_t>(b[4 + i]);
  for (std::size_t i = 0; i < kProofLen; ++i)
    m.proof[i] = std::to_integer<std::uint8_t>(b[4 + kOverlayTagLen + i]);
  return m;
}

}  // namespace rcnet::wire
