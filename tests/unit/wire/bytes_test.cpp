// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// wire/bytes.hpp: byte order and placement at an offset, on both buffer types.
#include "wire/bytes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include "catch2_compat.hpp"

namespace wire_bytes_test {
using namespace rcnet::wire;

TEST_CASE("big-endian fields are written most significant byte first", "[wire][bytes]") {
  std::array<std::uint8_t, 16> b{};
  put_be<std::uint64_t>(std::span(b), 1, 0x0102030405060708ULL);
  put_be32(std::span(b), 10, 0xa1b2c3d4u);
  put_be16(std::span(b), 14, 0xbeefu);
  const std::array<std::uint8_t, 16> want = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                             0x08, 0x00, 0xa1, 0xb2, 0xc3, 0xd4, 0xbe, 0xef};
  CHECK(b == want);
  const std::span<const std::uint8_t> in(b);
  CHECK(get_be<std::uint64_t>(in, 1) == 0x0102030405060708ULL);
  CHECK(be32(in, 10) == 0xa1b2c3d4u);
  CHECK(be16(in, 14) == 0xbeefu);
  CHECK(be16(in, 0) == 0x0001u);  // straddles the untouched byte 0
  CHECK(u8(in, 13) == 0xd4u);
}

TEST_CASE("little-endian fields are written least significant byte first", "[wire][bytes]") {
  std::array<std::byte, 6> b{};
  put_le16(std::span(b), 1, 0x1234u);
  put_le<std::uint16_t>(std::span(b), 3, 0xff01u);
  CHECK(b[0] == std::byte{0x00});
  CHECK(b[1] == std::byte{0x34});
  CHECK(b[2] == std::byte{0x12});
  CHECK(b[3] == std::byte{0x01});
  CHECK(b[4] == std::byte{0xff});
  CHECK(b[5] == std::byte{0x00});
  const std::span<const std::byte> in(b);
  CHECK(le16(in, 1) == 0x1234u);
  CHECK(get_le<std::uint32_t>(in, 1) == 0xff01'1234u);
  CHECK(be16(in, 1) == 0x3412u);  // the same bytes read the other way
}

}  // namespace wire_bytes_test
