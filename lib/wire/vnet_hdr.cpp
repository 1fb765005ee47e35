// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wire/vnet_hdr.hpp"

namespace rcnet::wire {

namespace {

std::uint16_t get_le16(std::span<const std::byte> in, std::size_t off) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(in[off]) |
                                    (std::to_integer<unsigned>(in[off + 1]) << 8));
}

void put_le16(std::span<std::byte> out, std::size_t off, std::uint16_t v) {
  out[off] = static_cast<std::byte>(v & 0xffu);
  out[off + 1] = static_cast<std::byte>(v >> 8);
}

}  // namespace

std::optional<VnetHdr> parse_vnet_hdr(std::span<const std::byte> frame) {
  if (frame.size() < kVnetHdrLen)
    return std::nullopt;
  VnetHdr h;
  h.flags = std::to_integer<std::uint8_t>(frame[0]);
  h.gso_type = std::to_integer<std::uint8_t>(frame[1]);
  h.hdr_len = get_le16(frame, 2);
  h.gso_size = get_le16(frame, 4);
  h.csum_start = get_le16(frame, 6);
  h.csum_offset = get_le16(frame, 8);
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
