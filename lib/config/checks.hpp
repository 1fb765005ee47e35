// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Internal to lib/config: the steps of parse() after the key table's rows
// (config.cpp runs them in this order), and the bit arithmetic they share.

#include <toml++/toml.h>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "config/reader.hpp"

namespace rcnet::config::detail {

inline std::size_t bit_width_of(const IpAddr& a) {
  return a.is_v4() ? 32 : a.is_v6() ? 128 : 0;
}

inline bool get_bit(const IpAddr& a, std::size_t i) {
  return (a.bytes[i / 8] >> (7 - i % 8)) & 1u;
}

inline void set_bit(IpAddr& a, std::size_t i, bool v) {
  const auto m = static_cast<std::uint8_t>(1u << (7 - i % 8));
  a.bytes[i / 8] = static_cast<std::uint8_t>(v ? (a.bytes[i / 8] | m) : (a.bytes[i / 8] & ~m));
}

inline std::string family_name(const IpAddr& a) {
  return a.is_v4() ? "IPv4" : "IPv6";
}

// The name an error gives entry `k` of a key that takes one value per rail:
// `base[k]` when the file wrote a list (the reader recorded it), else `base`.
inline std::string key_of(const Reader& r, const std::string& base, std::size_t k) {
  std::string indexed = base + "[" + std::to_string(k) + "]";
  return r.present(indexed) ? indexed : base;
}

// The host part of `a` under a prefix of `length` bits: "zero" (the subnet),
// "ones" (every bit set) or "" (neither, or no host bits).
std::string_view host_part(const IpAddr& a, std::size_t length);

// node.interface → each rail's address through `lookup` (interfaces.cpp).
// Leaves c.unresolved set when an interface is missing or has no usable
// address yet; records an error for an address that can never be ours.
void resolve_interfaces(Reader& r, Config& c, const InterfaceLookup& lookup);
// tun.address_from_underlay: checks tun.address names a prefix and, once
// rail 0's address is known, sets our overlay address from its host bits.
void derive_overlay(Reader& r, Config& c);
// The prefix rule of rail `rail` (< c.rail_count()) read backwards: the
// overlay address whose host bits (beyond tun.address's prefix length) are
// the bottom bits of `underlay`. nullopt when the rail has no rule or
// `underlay` is outside it. Whether the rule maps the result forward to
// `underlay` again, and whether it is a node's address at all, is the
// caller's to check (Config::overlay_for() does both).
std::optional<IpAddr> overlay_by_rule(const Config& c, const IpAddr& underlay, std::size_t rail);
// The same under `tun` (tun.address's entry of one family) instead of
// c.tun_address.
std::optional<IpAddr> overlay_by_rule(const Config& c, const IpAddr& underlay, std::size_t rail,
                                      const IpPrefix& tun);
// The name an error gives tun.address's entry `p` (c.tun_address or
// *c.tun_address6): "tun.address[k]" when the file wrote a list, else
// "tun.address".
std::string tun_key(const Reader& r, const Config& c, const IpPrefix& p);
// The configs that cannot work (sanity.cpp; config.hpp lists them).
void sanity_check(Reader& r, const Config& c);

// toml::parse, its syntax error as one line "SOURCE:LINE:COLUMN: TOML syntax
// error: ..." (invalid_argument).
Result<toml::table> parse_toml(std::string_view text, std::string_view source_name);

// parse() of a TOML document already read (and merged with the drop-ins);
// `source_name` is the main file's.
Result<Config> parse_table(const toml::table& root, std::string_view source_name,
                           const InterfaceLookup& lookup);

}  // namespace rcnet::config::detail
