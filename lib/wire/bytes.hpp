// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Fixed-width integers read from and written to byte buffers at an offset,
// in network (big-endian) order for IP headers and rcnet's private data, and
// in little-endian order for the virtio-net header (virtio spec 1.x: its
// fields are little-endian whatever the host). The buffers are spans of
// std::byte (packets) or std::uint8_t (rdma_cm private data). No alignment
// is needed. The caller guarantees off + sizeof(T) <= size (no bounds check,
// as span::operator[]).
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace rcnet::wire {

template <class B>
concept Octet =
    std::same_as<std::remove_cv_t<B>, std::byte> || std::same_as<std::remove_cv_t<B>, std::uint8_t>;

template <Octet B, std::size_t N>
constexpr std::uint8_t u8(std::span<B, N> in, std::size_t off) {
  return static_cast<std::uint8_t>(in[off]);
}

template <std::unsigned_integral T, Octet B, std::size_t N>
constexpr T get_be(std::span<B, N> in, std::size_t off) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v = static_cast<T>((v << 8) | static_cast<std::uint8_t>(in[off + i]));
  return v;
}

template <std::unsigned_integral T, Octet B, std::size_t N>
requires(!std::is_const_v<B>) constexpr void put_be(std::span<B, N> out, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[off + sizeof(T) - 1 - i] = static_cast<B>(v & 0xffu);
    v = static_cast<T>(v >> 8);
  }
}

template <std::unsigned_integral T, Octet B, std::size_t N>
constexpr T get_le(std::span<B, N> in, std::size_t off) {
  T v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;)
    v = static_cast<T>((v << 8) | static_cast<std::uint8_t>(in[off + i]));
  return v;
}

template <std::unsigned_integral T, Octet B, std::size_t N>
requires(!std::is_const_v<B>) constexpr void put_le(std::span<B, N> out, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[off + i] = static_cast<B>(v & 0xffu);
    v = static_cast<T>(v >> 8);
  }
}

// The widths the packet code uses, by name.
template <Octet B, std::size_t N>
constexpr std::uint16_t be16(std::span<B, N> in, std::size_t off) {
  return get_be<std::uint16_t>(in, off);
}
template <Octet B, std::size_t N>
constexpr std::uint32_t be32(std::span<B, N> in, std::size_t off) {
  return get_be<std::uint32_t>(in, off);
}
template <Octet B, std::size_t N>
constexpr void put_be16(std::span<B, N> out, std::size_t off, std::uint16_t v) {
  put_be<std::uint16_t>(out, off, v);
}
template <Octet B, std::size_t N>
constexpr void put_be32(std::span<B, N> out, std::size_t off, std::uint32_t v) {
  put_be<std::uint32_t>(out, off, v);
}
template <Octet B, std::size_t N>
constexpr std::uint16_t le16(std::span<B, N> in, std::size_t off) {
  return get_le<std::uint16_t>(in, off);
}
template <Octet B, std::size_t N>
constexpr void put_le16(std::span<B, N> out, std::size_t off, std::uint16_t v) {
  put_le<std::uint16_t>(out, off, v);
}

}  // namespace rcnet::wire
