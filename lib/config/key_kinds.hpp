// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Internal to lib/config: the kinds of value a row of the key table
// (keys.cpp) can have, one per TOML type, and the validators rows name.
// A kind gives a row its get(), read() and copy() for one field of Config,
// named as a path of member pointers from Config (&Config::manager,
// &cm::ManagerConfig::mtu); keys.cpp's key() adds the dotted name, the
// reload flag and the help line. The values' parsing and messages live in
// key_kinds.cpp, validators.cpp and duration.cpp; the templates here only
// store what those return.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config/keys.hpp"
#include "config/reader.hpp"

namespace rcnet::config::detail {

// IPv6 link-local, fe80::/10 (RFC 4291 2.5.6). rdma_cm binds or resolves one
// only with a scope id (sin6_scope_id, the kernel's cma_check_linklocal:
// EINVAL without), and a configured address carries none (validators.cpp).
bool link_local_v6(const IpAddr& a);

// --- Validators (validators.cpp): nullptr when the value is fine, else the message ---

// node.address: rdma_bind_addr would fail on a wildcard, broadcast or
// multicast address, but only when rcnetd starts.
const char* own_address(const IpAddr& a);
// A static peer's underlay: an RC connection has exactly one peer, so
// rdma_resolve_addr to a broadcast or multicast address could never succeed.
const char* peer_address(const IpAddr& a);
const char* ifname(const std::string& s);       // tun.name: a Linux interface name
const char* netns_name(const std::string& s);   // tun.netns: a name under /run/netns
const char* socket_path(const std::string& s);  // ctl.socket: fits sockaddr_un
const char* group_name(const std::string& s);   // ctl.group: not empty
const char* overlay_id(const std::string& s);   // auth.overlay: printable ASCII, at most 64

// "10s", "500ms", "2m", "1h", "1.5s" → Duration (duration.cpp). nullopt for
// anything else, including negative values; the caller checks the range.
std::optional<Duration> parse_duration(std::string_view s);

// "1 address", "2 addresses": `n` and the word for it.
std::string counted(std::size_t n, std::string_view one, std::string_view many);

// The entries of a key that takes one value per rail: the value itself,
// named `full`, or a list of 1..kMaxRails (rail 0 first) whose elements are
// named full[k], their origins recorded. Empty after recording an error;
// `what` names one entry in that error ("address").
std::vector<std::pair<const toml::node*, std::string>> per_rail(Reader& r, const toml::node& n,
                                                                const std::string& full,
                                                                std::string_view what);

// --- Values of one TOML type (key_kinds.cpp) ----------------------------------------
// Each returns the value of `f`, or nullopt after recording the error
// (file, line, key, message) in f.r.

std::optional<bool> boolean_from(Field& f);
std::optional<std::int64_t> integer_from(Field& f);  // within f.key.min..f.key.max
std::optional<Duration> duration_from(Field& f);     // "10s" or a number of seconds; 1ms..24h
// The same within `min`..`max` inclusive.
std::optional<Duration> duration_from(Field& f, Duration min, Duration max);
std::optional<std::string> string_from(Field& f);
// The index of the string in `names`.
std::optional<std::size_t> enum_from(Field& f, std::span<const std::string_view> names);
std::optional<IpAddr> address_from(Field& f);
std::optional<IpPrefix> prefix_from(Field& f);  // "address/length"
// A list of prefixes; an element may be a bare address (a /32 or /128).
std::optional<std::vector<IpPrefix>> prefix_list_from(Field& f);

// tun.address: a prefix, or a list of two, one IPv4 and one IPv6 (both
// families on the TUN); sets c.tun_address (the IPv4 one of two),
// c.tun_address6 and c.tun_address6_index.
void read_tun_addresses(Field& f, Config& c);
Value get_tun_addresses(const Config& c);

// [[peers.static]]: tables of overlay and underlay, both required; overlay
// is an address or a list of two, one per family (overlay, overlay6);
// underlay is an address or a list of 1..kMaxRails (rail 0 first).
void read_static_peers(Field& f, Config& c);
Value get_static_peers(const Config& c);
void read_auth_keys(Field& f, Config& c);  // auth.keys: [{id, file}, ...]
Value get_auth_keys(const Config& c);

// node.address: an address or a list of 1..kMaxRails (rail 0 first), each
// through own_address; sets c.rails (one per entry, node.port filled in by
// parse()) and c.manager.local.addr (rail 0's).
void read_rail_addresses(Field& f, Config& c);
Value get_rail_addresses(const Config& c);
void copy_rail_addresses(const Config& from, Config& to);

// node.interface (interfaces.cpp): an interface name or a list of
// 1..kMaxRails; sets c.rail_interfaces and as many rails, their addresses
// unset until resolve_interfaces(). An error when node.address is set too.
void read_rail_interfaces(Field& f, Config& c);
Value get_rail_interfaces(const Config& c);

// peers.underlay_prefix: a prefix (rail 0's) or a list of exactly one per
// rail, in node.address's order; node.address must have been read (its
// section comes first). Sets c.underlay_prefix and each rail's.
void read_rail_prefixes(Field& f, Config& c);
Value get_rail_prefixes(const Config& c);
void copy_rail_prefixes(const Config& from, Config& to);

// --- Kinds: get, read and copy of one field --------------------------------------------

// at<Path...>(c) is c.manager.mtu for Path = &Config::manager,
// &cm::ManagerConfig::mtu; const when c is.
template <auto... Path, class C>
constexpr auto& at(C& c) {
  return (c.*....*Path);
}

template <auto... Path>
void copy_field(const Config& from, Config& to) {
  at<Path...>(to) = at<Path...>(from);
}

// Converts to the field's own type (an enum, a narrower integer).
template <auto... Path, class V>
void store(Config& c, const V& v) {
  at<Path...>(c) = static_cast<std::remove_cvref_t<decltype(at<Path...>(c))>>(v);
}

template <auto... Path>
void read_boolean(Field& f, Config& c) {
  if (auto v = boolean_from(f))
    store<Path...>(c, *v);
}

template <auto... Path>
Value get_boolean(const Config& c) {
  return static_cast<bool>(at<Path...>(c));
}

template <auto... Path>
void read_integer(Field& f, Config& c) {
  if (auto v = integer_from(f))
    store<Path...>(c, *v);
}

template <auto... Path>
Value get_integer(const Config& c) {
  return static_cast<std::int64_t>(at<Path...>(c));
}

template <auto... Path>
void read_duration(Field& f, Config& c) {
  if (auto v = duration_from(f))
    at<Path...>(c) = *v;
}

template <auto... Path>
Value get_duration(const Config& c) {
  return format_duration(at<Path...>(c));
}

// `Range` is a std::pair<Duration, Duration>: the accepted values, inclusive.
template <const auto& Range, auto... Path>
void read_duration_in(Field& f, Config& c) {
  if (auto v = duration_from(f, Range.first, Range.second))
    at<Path...>(c) = *v;
}

template <auto Check, auto... Path>
void read_string(Field& f, Config& c) {
  if (auto v = string_from(f)) {
    at<Path...>(c) = std::move(*v);
    if (const char* msg = Check(at<Path...>(c)))
      f.fail(msg);
  }
}

template <auto... Path>
Value get_string(const Config& c) {
  return std::string(at<Path...>(c));
}

// One of `Names`, stored as the enum whose value is the name's index.
template <const auto& Names, auto... Path>
void read_enum(Field& f, Config& c) {
  if (auto i = enum_from(f, Names))
    store<Path...>(c, *i);
}

template <const auto& Names, auto... Path>
Value get_enum(const Config& c) {
  const auto i = static_cast<std::size_t>(at<Path...>(c));
  return std::string(i < Names.size() ? Names[i] : "?");
}

template <auto Check, auto... Path>
void read_address(Field& f, Config& c) {
  if (auto a = address_from(f)) {
    at<Path...>(c) = *a;
    if (const char* msg = Check(*a))
      f.fail(msg);
  }
}

template <auto... Path>
Value get_address(const Config& c) {
  return at<Path...>(c).to_string();
}

// The field is an IpPrefix or an optional one.
template <auto... Path>
void read_prefix(Field& f, Config& c) {
  if (auto p = prefix_from(f))
    at<Path...>(c) = *p;
}

template <auto... Path>
Value get_prefix(const Config& c) {
  const auto& v = at<Path...>(c);
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, IpPrefix>) {
    return v.to_string();
  } else {
    return v ? Value(v->to_string()) : Value();
  }
}

template <auto... Path>
void read_prefix_list(Field& f, Config& c) {
  if (auto l = prefix_list_from(f))
    at<Path...>(c) = std::move(*l);
}

template <auto... Path>
Value get_prefix_list(const Config& c) {
  std::vector<std::string> out;
  for (const IpPrefix& p : at<Path...>(c))
    out.push_back(p.to_string());
  return out;
}

// --- Row builders: what a kind gives its row ---------------------------------------------

inline constexpr bool kRequired = true;
inline constexpr bool kOptional = false;

// What a kind gives its row: how to get, read and copy the field, and
// whether it is required, its range and unit (integers only).
struct Kind {
  Value (*get)(const Config& c);
  void (*read)(Field& f, Config& c);
  void (*copy)(const Config& from, Config& to);
  bool required = kOptional;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::string_view unit = "";
};

template <auto... Path>
constexpr Kind boolean() {
  return {&get_boolean<Path...>, &read_boolean<Path...>, &copy_field<Path...>};
}

// `min`..`max` inclusive, in `unit` ("" if none).
template <auto... Path>
constexpr Kind integer(std::int64_t min, std::int64_t max, std::string_view unit) {
  Kind k = {&get_integer<Path...>, &read_integer<Path...>, &copy_field<Path...>};
  k.min = min;
  k.max = max;
  k.unit = unit;
  return k;
}

template <auto... Path>
constexpr Kind duration() {
  Kind k = {&get_duration<Path...>, &read_duration<Path...>, &copy_field<Path...>};
  k.unit = "duration";
  return k;
}

// A duration within `Range` (a std::pair<Duration, Duration>) instead of
// the timeouts' 1ms..24h.
template <const auto& Range, auto... Path>
constexpr Kind duration_in() {
  Kind k = {&get_duration<Path...>, &read_duration_in<Range, Path...>, &copy_field<Path...>};
  k.unit = "duration";
  return k;
}

template <auto Check, auto... Path>
constexpr Kind string() {
  return {&get_string<Path...>, &read_string<Check, Path...>, &copy_field<Path...>};
}

template <const auto& Names, auto... Path>
constexpr Kind enumeration() {
  return {&get_enum<Names, Path...>, &read_enum<Names, Path...>, &copy_field<Path...>};
}

template <auto Check, auto... Path>
constexpr Kind address(bool required) {
  return {&get_address<Path...>, &read_address<Check, Path...>, &copy_field<Path...>, required};
}

template <auto... Path>
constexpr Kind prefix(bool required) {
  return {&get_prefix<Path...>, &read_prefix<Path...>, &copy_field<Path...>, required};
}

template <auto... Path>
constexpr Kind prefix_list() {
  return {&get_prefix_list<Path...>, &read_prefix_list<Path...>, &copy_field<Path...>};
}

constexpr Kind tun_addresses() {
  return {&get_tun_addresses, &read_tun_addresses, nullptr, kRequired};
}

constexpr Kind auth_keys() {
  return {&get_auth_keys, &read_auth_keys, &copy_field<&Config::auth, &AuthConfig::keys>};
}

constexpr Kind static_peers() {
  return {&get_static_peers, &read_static_peers, &copy_field<&Config::static_peers>};
}

constexpr Kind rail_addresses() {
  return {&get_rail_addresses, &read_rail_addresses, &copy_rail_addresses, kRequired};
}

constexpr Kind rail_interfaces() {
  return {&get_rail_interfaces, &read_rail_interfaces, &copy_field<&Config::rail_interfaces>};
}

constexpr Kind rail_prefixes() {
  return {&get_rail_prefixes, &read_rail_prefixes, &copy_rail_prefixes};
}

// A row: `dotted` ("timeouts.idle") of kind `k`; only an Apply::kLive row
// gets the kind's copy() (the reload's, config::reload()).
constexpr Key key(std::string_view dotted, Apply a, Kind k, std::string_view help) {
  Key row{dotted, a, k.required, k.min, k.max, k.unit, help, k.get, k.read, nullptr};
  if (a == Apply::kLive)
    row.copy = k.copy;
  return row;
}

}  // namespace rcnet::config::detail
