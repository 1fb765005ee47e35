// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The validators of the key table's rows (key_kinds.hpp): what a value of
// the right TOML type must also satisfy, and the message when it does not.
#include <sys/un.h>

#include <algorithm>

#include "config/key_kinds.hpp"

namespace rcnet::config::detail {

namespace {

enum class Cast : std::uint8_t { kUnicast, kBroadcast, kMulticast };

// IPv4 limited broadcast (RFC 919) and multicast 224.0.0.0/4 (RFC 5771); IPv6
// multicast ff00::/8 (RFC 4291 2.7). A subnet's directed broadcast depends on
// a prefix length the file does not give for underlay addresses.
Cast cast_of(const IpAddr& a) {
  if (a.is_v4()) {
    if (a == IpAddr::v4(0xffffffffU))
      return Cast::kBroadcast;
    return (a.bytes[0] & 0xf0U) == 0xe0U ? Cast::kMulticast : Cast::kUnicast;
  }
  return a.is_v6() && a.bytes[0] == 0xffU ? Cast::kMulticast : Cast::kUnicast;
}

// 127.0.0.0/8 (RFC 1122) and ::1: no RDMA device owns them.
bool loopback(const IpAddr& a) {
  if (a.is_v4())
    return a.bytes[0] == 127;
  return a.is_v6() && a == *IpAddr::parse("::1");
}

}  // namespace

bool link_local_v6(const IpAddr& a) {
  return a.is_v6() && a.bytes[0] == 0xfeU && (a.bytes[1] & 0xc0U) == 0x80U;
}

const char* own_address(const IpAddr& a) {
  // Binding the wildcard would let rdma_cm pick any device, and an unbound
  // connect loops back on the local device (docs/lab.md).
  if (a == IpAddr::v4(0) || a == IpAddr::parse("::"))
    return "must be this node's own underlay address, not a wildcard";
  if (loopback(a))
    return "must be this node's own underlay address (on the RDMA device's interface), not a "
           "loopback address";
  switch (cast_of(a)) {
    case Cast::kBroadcast:
      return "must be this node's own underlay address, not the broadcast address";
    case Cast::kMulticast:
      return "must be this node's own underlay address, not a multicast address";
    case Cast::kUnicast:
      break;
  }
  if (link_local_v6(a))
    return "must not be an IPv6 link-local address (fe80::/10): rdma_cm needs a scope id for one";
  return nullptr;
}

const char* peer_address(const IpAddr& a) {
  if (loopback(a))
    return "must be the peer's own underlay address, not a loopback address";
  switch (cast_of(a)) {
    case Cast::kBroadcast:
      return "must be the peer's own underlay address, not the broadcast address";
    case Cast::kMulticast:
      return "must be the peer's own underlay address, not a multicast address";
    case Cast::kUnicast:
      break;
  }
  if (link_local_v6(a))
    return "must not be an IPv6 link-local address (fe80::/10): rdma_cm needs a scope id for one";
  return nullptr;
}

const char* ifname(const std::string& s) {
  const bool bad_char = std::any_of(s.begin(), s.end(), [](char c) {
    return c == '/' || c == ':' || c == '%' || c == ' ' || c == '\t' || c == '\n' ||
           static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (s.empty() || s.size() > 15 || s == "." || s == ".." || bad_char)
    return "expected 1..15 characters without '/', ':', '%' or whitespace";
  return nullptr;
}

const char* netns_name(const std::string& s) {
  const bool bad_char = std::any_of(s.begin(), s.end(), [](char c) {
    return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (s.size() > 255 || s == "." || s == ".." || bad_char)
    return "expected a namespace name under /run/netns (no '/')";
  return nullptr;
}

const char* socket_path(const std::string& s) {
  if (s.empty() || s.front() != '/' || s.size() >= sizeof(sockaddr_un::sun_path))
    return "expected an absolute path shorter than 108 bytes";
  return nullptr;
}

const char* group_name(const std::string& s) {
  return s.empty() ? "expected a group name" : nullptr;
}

const char* overlay_id(const std::string& s) {
  if (s.size() > 64)
    return "expected an overlay id of at most 64 characters";
  for (const char ch : s) {
    if (ch < 0x21 || ch > 0x7e)
      return "expected an overlay id of printable ASCII characters without spaces";
  }
  return nullptr;
}

}  // namespace rcnet::config::detail
