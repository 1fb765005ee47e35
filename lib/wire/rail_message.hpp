// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A rail message: the payload of a SEND with immediate kImmRail
// (wire/immediate.hpp) on a connection whose peer advertised kCapRails
// (wire/private_data.hpp). Part of the wire protocol. Four bytes:
//   offset size field
//        0    1 version  (kRailMsgVersion)
//        1    1 type     (RailMsgType)
//        2    1 rail     (the sender's rail index the message is about)
//        3    1 cause    (why, for the log: a RailCause; 0 for a probe)
// Longer payloads are a later version's: the first four bytes are read and
// the rest ignored. A receiver drops (and counts) a message it cannot decode.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace rcnet::wire {

inline constexpr std::uint8_t kRailMsgVersion = 1;
inline constexpr std::size_t kRailMsgSize = 4;

enum class RailMsgType : std::uint8_t {
  kDown = 1,   // my rail `rail` is down: stop sending to me on it
  kUp = 2,     // my rail `rail` carries traffic again (informational)
  kProbe = 3,  // keeps a standby link alive and proves its path
};

struct RailMsg {
  RailMsgType type = RailMsgType::kProbe;
  std::uint8_t rail = 0;
  std::uint8_t cause = 0;
  bool operator==(const RailMsg&) const = default;
};

inline std::array<std::byte, kRailMsgSize> encode_rail_msg(const RailMsg& m) {
  return {std::byte{kRailMsgVersion}, std::byte{static_cast<std::uint8_t>(m.type)},
          std::byte{m.rail}, std::byte{m.cause}};
}

// nullopt: shorter than kRailMsgSize, another version, or an unknown type.
inline std::optional<RailMsg> decode_rail_msg(std::span<const std::byte> b) {
  if (b.size() < kRailMsgSize || std::to_integer<std::uint8_t>(b[0]) != kRailMsgVersion)
    return std::nullopt;
  const auto type = std::to_integer<std::uint8_t>(b[1]);
  if (type < 1 || type > 3)
    return std::nullopt;
  return RailMsg{static_cast<RailMsgType>(type), std::to_integer<std::uint8_t>(b[2]),
                 std::to_integer<std::uint8_t>(b[3])};
}

}  // namespace rcnet::wire
