// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "util/address.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace rcnet {

IpAddr IpAddr::v4(std::uint32_t host_order) {
  IpAddr a;
  a.family = AF_INET;
  const std::uint32_t n = htonl(host_order);
  std::memcpy(a.bytes.data(), &n, 4);
  return a;
}

std::optional<IpAddr> IpAddr::parse(std::string_view text) {
  std::string s(text);
  IpAddr a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET6;
    return a;
  }
  return std::nullopt;
}

std::optional<IpAddr> IpAddr::from_sockaddr(const sockaddr* sa) {
  if (sa == nullptr)
    return std::nullopt;
  IpAddr a;
  if (sa->sa_family == AF_INET) {
    a.family = AF_INET;
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return a;
  }
  if (sa->sa_family == AF_INET6) {
    a.family = AF_INET6;
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return a;
  }
  return std::nullopt;
}

std::string IpAddr::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family != AF_INET && family != AF_INET6)
    return "-";
  if (inet_ntop(family, bytes.data(), buf, sizeof buf) == nullptr)
    return "?";
  return buf;
}

std::uint32_t IpAddr::v4_host_order() const {
  std::uint32_t n = 0;
  std::memcpy(&n, bytes.data(), 4);
  return ntohl(n);
}

std::optional<IpPrefix> IpPrefix::parse(std::string_view text) {
  const auto slash = text.find('/');
  auto addr = IpAddr::parse(text.substr(0, slash));
  if (!addr)
    return std::nullopt;
  const unsigned max = addr->is_v4() ? 32 : 128;
  unsigned len = max;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3)
      return std::nullopt;
    len = 0;
    for (char c : digits) {
      if (c < '0' || c > '9')
        return std::nullopt;
      len = len * 10 + static_cast<unsigned>(c - '0');
    }
    if (len > max)
      return std::nullopt;
  }
  return IpPrefix{*addr, static_cast<std::uint8_t>(len)};
}

bool IpPrefix::contains(const IpAddr& a) const {
  if (a.family != addr.family)
    return false;
  unsigned bits = length;
  for (std::size_t i = 0; bits > 0; ++i) {
    const unsigned take = bits >= 8 ? 8 : bits;
    const auto mask = static_cast<std::uint8_t>(0xFFu << (8 - take));
    if ((a.bytes[i] & mask) != (addr.bytes[i] & mask))
      return false;
    bits -= take;
  }
  return true;
}

std::string IpPrefix::to_string() const {
  return addr.to_string() + "/" + std::to_string(length);
}

socklen_t Endpoint::to_sockaddr(sockaddr_storage& out) const {
  std::memset(&out, 0, sizeof out);
  if (addr.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, addr.bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  std::memcpy(&sin6->sin6_addr, addr.bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

std::string Endpoint::to_string() const {
  if (addr.is_v6())
    return "[" + addr.to_string() + "]:" + std::to_string(port);
  return addr.to_string() + ":" + std::to_string(port);
}

NodeId node_id_for(const IpAddr& underlay) {
  if (underlay.is_v4())
    return underlay.v4_host_order();
  if (!underlay.is_v6())
    return 0;
  std::uint64_t h = 1469598103934665603ull;
  for (auto b : underlay.bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h | (1ull << 63);
}

}  // namespace rcnet

std::size_t std::hash<rcnet::IpAddr>::operator()(const rcnet::IpAddr& a) const noexcept {
  return static_cast<std::size_t>(rcnet::node_id_for(a));
}
