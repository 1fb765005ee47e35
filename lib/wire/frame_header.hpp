// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The in-band frame header: what a SEND carries in its first bytes on a
// connection that does not use the immediate (docs/design.md "Framing"). A
// device without immediate data on SEND (iWARP; rdma/provider.hpp) cannot
// say what a SEND is any other way, and a receiver that grants credits
// (no RNR) gets them back here. Part of the wire protocol, like the
// immediates (wire/immediate.hpp) and the private data
// (wire/private_data.hpp, kCapHeader and the credit grant).
//
// Layout, 4 bytes, then the payload (an IP packet, a frame, a rail message,
// or nothing):
//   off len field
//     0   1 kind      (kind_of(imm): 1 data, 2 control, 3 frame, 4 rail, 5 auth;
//                     the low byte of the immediate that would say the same)
//     1   1 reserved  (sent as 0, ignored on receipt)
//     2   2 credits   (big-endian: receive buffers the sender reposted for
//                     this connection since it last said so; 0 = none)
//
// A receiver frames each completion by what it says: IBV_WC_WITH_IMM set,
// the immediate; not set, this header. Both are decided per SEND, so a
// completion that arrives before ESTABLISHED is read (see kImmFrame) is
// framed right either way.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "wire/immediate.hpp"

namespace rcnet::wire {

inline constexpr std::size_t kFrameHeaderLen = 4;

struct FrameHeader {
  std::uint32_t imm = kImmData;  // what the SEND carries, as its immediate would say
  std::uint16_t credits = 0;
};

// The header's kind byte of an immediate (kImmData ... kImmAuth).
constexpr std::uint8_t kind_of(std::uint32_t imm) {
  return static_cast<std::uint8_t>(imm & 0xff);
}

inline void put_frame_header(const FrameHeader& h, std::span<std::byte, kFrameHeaderLen> out) {
  out[0] = std::byte{kind_of(h.imm)};
  out[1] = std::byte{0};
  out[2] = std::byte{static_cast<std::uint8_t>(h.credits >> 8)};
  out[3] = std::byte{static_cast<std::uint8_t>(h.credits & 0xff)};
}

// nullopt when shorter than the header or of an unknown kind.
inline std::optional<FrameHeader> parse_frame_header(std::span<const std::byte> in) {
  if (in.size() < kFrameHeaderLen)
    return std::nullopt;
  const auto kind = std::to_integer<std::uint8_t>(in[0]);
  if (kind < kind_of(kImmData) || kind > kind_of(kImmAuth))
    return std::nullopt;
  FrameHeader h;
  h.imm = (kImmData & 0xffffff00u) | kind;
  h.credits = static_cast<std::uint16_t>(std::to_integer<unsigned>(in[2]) << 8 |
                                         std::to_integer<unsigned>(in[3]));
  return h;
}

}  // namespace rcnet::wire
