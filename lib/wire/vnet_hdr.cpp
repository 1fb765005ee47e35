// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/vnet_hdr.hpp"

#include "wire/bytes.hpp"

namespace rcnet::wire {

std::optional<VnetHdr> parse_vnet_hdr(std::span<const std::byte> frame) {
  if (frame.size() < kVnetHdrLen)
    return std::nullopt;
  VnetHdr h;
  h.flags = std::to_integer<std::uint8_t>(frame[0]);
  h.gso_type = std::to_integer<std::uint8_t>(frame[1]);
  h.hdr_len = le16(frame, 2);
  h.gso_size = le16(frame, 4);
  h.csum_start = le16(frame, 6);
  h.csum_offset = le16(frame, 8);
  return h;
}

void put_vnet_hdr(const VnetHdr& h, std::span<std::byte> out) {
  out[0] = static_cast<std::byte>(h.flags);
  out[1] = static_cast<std::byte>(h.gso_type);
  put_le16(out, 2, h.hdr_len);
  put_le16(out, 4, h.gso_size);
  put_le16(out, 6, h.csum_start);
  put_le16(out, 8, h.csum_offset);
}

std::array<std::byte, kVnetHdrLen> build_vnet_hdr(const VnetHdr& h) {
  std::array<std::byte, kVnetHdrLen> out{};
  put_vnet_hdr(h, out);
  return out;
}

}  // namespace rcnet::wire
