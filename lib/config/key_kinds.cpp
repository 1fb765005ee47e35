// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The values of the key table's kinds (key_kinds.hpp): TOML type, range and
// syntax checks, each failure one message naming file, line and key.
#include "config/key_kinds.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "config/checks.hpp"

namespace rcnet::config::detail {

namespace {

constexpr Duration kMinDuration = 1ms;
constexpr Duration kMaxDuration = 24h;
constexpr const char* kDurationHint = "expected a duration such as \"10s\" or \"500ms\"";
constexpr const char* kAddressHint = "expected an IPv4 or IPv6 address such as \"10.99.0.1\"";
constexpr const char* kPrefixHint =
    "expected an address/prefix such as \"10.99.0.0/24\" or \"fd00::/64\"";

// `require_length`: the text must carry "/len" (an interface address or the
// prefix rule), not only an address. The error is at the node's own line.
std::optional<IpPrefix> prefix_at(Reader& r, const toml::node& n, const std::string& full,
                                  bool require_length) {
  std::optional<IpPrefix> p;
  if (n.is_string()) {
    const std::string& s = n.as_string()->get();
    if (!require_length || s.find('/') != std::string::npos)
      p = IpPrefix::parse(s);
  }
  if (!p)
    r.fail(r.origin_of(n), full, kPrefixHint);
  return p;
}

// The error is at the line recorded for `full`.
std::optional<IpAddr> address_at(Reader& r, const toml::node& n, const std::string& full) {
  std::optional<IpAddr> a;
  if (n.is_string())
    a = IpAddr::parse(n.as_string()->get());
  if (!a)
    r.fail_key(full, kAddressHint);
  return a;
}

}  // namespace

// The entries of a key that takes one value per rail: the value itself,
// named `full`, or a list of 1..kMaxRails (rail 0 first) whose elements are
// named full[k], their lines recorded. Empty after recording an error.
std::vector<std::pair<const toml::node*, std::string>> per_rail(Reader& r, const toml::node& n,
                                                                const std::string& full,
                                                                std::string_view what) {
  std::vector<std::pair<const toml::node*, std::string>> out;
  const toml::array* arr = n.as_array();
  if (arr == nullptr) {
    out.emplace_back(&n, full);
    return out;
  }
  if (arr->empty() || arr->size() > kMaxRails) {
    r.fail_key(full, "expected one " + std::string(what) + " or a list of 1.." +
                         std::to_string(kMaxRails) + ", one per rail");
    return out;
  }
  for (std::size_t i = 0; i < arr->size(); ++i) {
    std::string name = full + "[" + std::to_string(i) + "]";
    r.record(name, r.origin_of((*arr)[i]));
    out.emplace_back(&(*arr)[i], std::move(name));
  }
  return out;
}

std::string counted(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::optional<bool> boolean_from(Field& f) {
  if (!f.node.is_boolean()) {
    f.fail("expected true or false");
    return std::nullopt;
  }
  return f.node.as_boolean()->get();
}

std::optional<std::int64_t> integer_from(Field& f) {
  const std::string range = std::to_string(f.key.min) + ".." + std::to_string(f.key.max);
  if (!f.node.is_integer()) {
    f.fail("expected an integer in " + range);
    return std::nullopt;
  }
  const std::int64_t v = f.node.as_integer()->get();
  if (v < f.key.min || v > f.key.max) {
    f.fail(std::to_string(v) + " is out of range " + range);
    return std::nullopt;
  }
  return v;
}

std::optional<Duration> duration_from(Field& f) {
  return duration_from(f, kMinDuration, kMaxDuration);
}

std::optional<Duration> duration_from(Field& f, Duration min, Duration max) {
  std::optional<Duration> d;
  if (f.node.is_string()) {
    d = parse_duration(f.node.as_string()->get());
  } else if (f.node.is_integer()) {
    const std::int64_t v = f.node.as_integer()->get();
    if (v >= 0 && v <= 1000000)
      d = std::chrono::seconds(v);
  } else if (f.node.is_floating_point()) {
    const double v = f.node.as_floating_point()->get();
    if (std::isfinite(v) && v >= 0 && v <= 1e6)
      d = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
  }
  if (!d) {
    f.fail(kDurationHint);
    return std::nullopt;
  }
  if (*d < min || *d > max) {
    f.fail("must be between " + format_duration(min) + " and " + format_duration(max));
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> string_from(Field& f) {
  if (!f.node.is_string()) {
    f.fail("expected a string");
    return std::nullopt;
  }
  return f.node.as_string()->get();
}

std::optional<std::size_t> enum_from(Field& f, std::span<const std::string_view> names) {
  if (!f.node.is_string()) {
    f.fail("expected a string");
    return std::nullopt;
  }
  const auto it = std::find(names.begin(), names.end(), f.node.as_string()->get());
  if (it == names.end()) {
    std::string msg = "expected one of ";
    for (std::size_t i = 0; i < names.size(); ++i)
      msg += (i == 0 ? "" : ", ") + std::string(names[i]);
    f.fail(msg);
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - names.begin());
}

std::optional<IpAddr> address_from(Field& f) {
  return address_at(f.r, f.node, f.full);
}

std::optional<IpPrefix> prefix_from(Field& f) {
  return prefix_at(f.r, f.node, f.full, true);
}

std::optional<std::vector<IpPrefix>> prefix_list_from(Field& f) {
  const toml::array* arr = f.node.as_array();
  if (arr == nullptr) {
    f.fail("expected a list of prefixes such as [\"10.99.0.0/24\"]");
    return std::nullopt;
  }
  std::vector<IpPrefix> out;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string full = f.full + "[" + std::to_string(i) + "]";
    auto p = prefix_at(f.r, (*arr)[i], full, false);
    if (!p)
      return std::nullopt;
    f.r.record(full, f.r.origin_of((*arr)[i]));
    out.push_back(*p);
  }
  return out;
}

namespace {

// A static peer's overlay: an address, or a list of two, one per family
// (tun.address with both); the IPv6 one of two goes to overlay6.
void read_static_overlays(Reader& r, const toml::node& n, const std::string& full, StaticPeer& sp) {
  const toml::array* arr = n.as_array();
  if (arr == nullptr) {
    if (auto a = address_at(r, n, full))
      sp.overlay = *a;
    return;
  }
  if (arr->empty() || arr->size() > 2) {
    return r.fail_key(full,
                      "expected an address or a list of two, one IPv4 and one IPv6, such as "
                      "[\"10.100.0.7\", \"fd00:100::7\"]");
  }
  std::vector<IpAddr> got;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string name = full + "[" + std::to_string(i) + "]";
    r.record(name, r.origin_of((*arr)[i]));
    auto a = address_at(r, (*arr)[i], name);
    if (!a)
      return;
    got.push_back(*a);
  }
  if (got.size() == 2 && got[0].family == got[1].family) {
    return r.fail_key(full + "[1]", "is " + family_name(got[1]) + " like " + full +
                                        "[0]: at most one address per family (one IPv4, one IPv6)");
  }
  sp.overlay = got[0];
  if (got.size() == 2) {
    sp.overlay = got[0].is_v4() ? got[0] : got[1];
    sp.overlay6 = got[0].is_v4() ? got[1] : got[0];
  }
}

}  // namespace

void read_tun_addresses(Field& f, Config& c) {
  const toml::array* arr = f.node.as_array();
  std::vector<std::pair<const toml::node*, std::string>> entries;
  if (arr == nullptr) {
    entries.emplace_back(&f.node, f.full);
  } else {
    if (arr->empty() || arr->size() > 2) {
      return f.fail(
          "expected one prefix or a list of two, one IPv4 and one IPv6, such as "
          "[\"10.100.0.1/24\", \"fd00:100::1/64\"]");
    }
    for (std::size_t i = 0; i < arr->size(); ++i) {
      std::string name = f.full + "[" + std::to_string(i) + "]";
      f.r.record(name, f.r.origin_of((*arr)[i]));
      entries.emplace_back(&(*arr)[i], std::move(name));
    }
  }
  std::vector<IpPrefix> got;
  for (const auto& [node, name] : entries) {
    auto p = prefix_at(f.r, *node, name, true);
    if (!p)
      return;
    got.push_back(*p);
  }
  if (got.size() == 2 && got[0].addr.family == got[1].addr.family) {
    return f.r.fail_key(entries[1].second,
                        "is " + family_name(got[1].addr) + " like " + entries[0].second +
                            ": at most one prefix per family (one IPv4, one IPv6)");
  }
  c.tun_address = got[0];
  c.tun_address6.reset();
  c.tun_address6_index = 1;
  if (got.size() == 2) {
    const std::uint8_t v6 = got[0].addr.is_v6() ? 0 : 1;
    c.tun_address = got[1 - v6];
    c.tun_address6 = got[v6];
    c.tun_address6_index = v6;
  }
}

Value get_tun_addresses(const Config& c) {
  if (!c.tun_address6)
    return c.tun_address.to_string();
  std::vector<std::string> out = {c.tun_address.to_string()};
  out.insert(out.begin() + c.tun_address6_index, c.tun_address6->to_string());
  return out;
}

void read_static_peers(Field& f, Config& c) {
  const toml::array* arr = f.node.as_array();
  if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables()))
    return f.fail("expected [[peers.static]] tables with overlay and underlay");
  static constexpr std::array<std::string_view, 2> kFields = {"overlay", "underlay"};
  for (std::size_t i = 0; i < arr->size() && !f.r.failed(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    const std::string sec = f.full + "[" + std::to_string(i) + "]";
    f.r.only_keys(*t, sec, kFields);
    StaticPeer sp;
    const std::string overlay = sec + ".overlay";
    if (const toml::node* n = f.r.find(t, overlay, "overlay"))
      read_static_overlays(f.r, *n, overlay, sp);
    const std::string underlay = sec + ".underlay";
    if (const toml::node* n = f.r.find(t, underlay, "underlay")) {
      for (const auto& [node, name] : per_rail(f.r, *n, underlay, "address")) {
        auto a = address_at(f.r, *node, name);
        if (!a)
          break;
        if (const char* msg = peer_address(*a)) {
          f.r.fail_key(name, msg);
          break;
        }
        sp.rail_underlays.push_back(*a);
      }
      if (!sp.rail_underlays.empty())
        sp.underlay = sp.rail_underlays.front();
    }
    for (std::string_view name : kFields)
      f.r.require(sec + "." + std::string(name), t);
    c.static_peers.push_back(sp);
  }
}

Value get_static_peers(const Config& c) {
  std::vector<InlineTable> out;
  for (const StaticPeer& sp : c.static_peers) {
    InlineValue underlay(sp.underlay.to_string());
    if (sp.rail_underlays.size() > 1) {
      std::vector<std::string> list;
      for (const IpAddr& a : sp.rail_underlays)
        list.push_back(a.to_string());
      underlay = InlineValue(std::move(list));
    }
    InlineValue overlay(sp.overlay.to_string());
    if (!sp.overlay6.empty())
      overlay =
          InlineValue(std::vector<std::string>{sp.overlay.to_string(), sp.overlay6.to_string()});
    out.push_back({{"overlay", std::move(overlay)}, {"underlay", std::move(underlay)}});
  }
  return out;
}

void read_auth_keys(Field& f, Config& c) {
  const toml::array* arr = f.node.as_array();
  if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables()))
    return f.fail("expected a list of tables {id = 1..255, file = \"PATH\"}");
  static constexpr std::array<std::string_view, 2> kFields = {"id", "file"};
  c.auth.keys.clear();
  for (std::size_t i = 0; i < arr->size() && !f.r.failed(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    const std::string sec = f.full + "[" + std::to_string(i) + "]";
    f.r.only_keys(*t, sec, kFields);
    AuthKeyRef k;
    const std::string id = sec + ".id";
    if (const toml::node* n = f.r.find(t, id, "id")) {
      const auto v = n->value<std::int64_t>();
      if (!v || *v < 1 || *v > 255)
        return f.r.fail_key(id, "expected an integer 1..255");
      k.id = static_cast<std::uint8_t>(*v);
      for (const AuthKeyRef& before : c.auth.keys) {
        if (before.id == k.id)
          return f.r.fail_key(id, "key id " + std::to_string(*v) + " listed twice");
      }
    }
    const std::string file = sec + ".file";
    if (const toml::node* n = f.r.find(t, file, "file")) {
      const auto v = n->value<std::string>();
      if (!v || v->empty())
        return f.r.fail_key(file, "expected the key file's path (or a credential's name)");
      k.file = *v;
    }
    for (std::string_view name : kFields)
      f.r.require(sec + "." + std::string(name), t);
    c.auth.keys.push_back(std::move(k));
  }
}

Value get_auth_keys(const Config& c) {
  std::vector<InlineTable> out;
  for (const AuthKeyRef& k : c.auth.keys)
    out.push_back({{"id", std::to_string(k.id)}, {"file", k.file}});
  return out;
}

void read_rail_addresses(Field& f, Config& c) {
  std::vector<RailConfig> rails;
  for (const auto& [node, name] : per_rail(f.r, f.node, f.full, "address")) {
    auto a = address_at(f.r, *node, name);
    if (!a)
      return;
    if (const char* msg = own_address(*a))
      return f.r.fail_key(name, msg);
    rails.push_back(RailConfig{Endpoint{*a, c.manager.local.port}, std::nullopt});
  }
  if (rails.empty())
    return;  // per_rail() recorded why
  c.manager.local.addr = rails.front().local.addr;
  c.rails = std::move(rails);
}

Value get_rail_addresses(const Config& c) {
  if (c.manager.local.addr.empty())
    return Value();  // node.interface not resolved yet
  if (c.rails.size() <= 1)
    return c.manager.local.addr.to_string();
  std::vector<std::string> out = {c.manager.local.addr.to_string()};
  for (std::size_t k = 1; k < c.rails.size(); ++k)
    out.push_back(c.rails[k].local.addr.to_string());
  return out;
}

void copy_rail_addresses(const Config& from, Config& to) {
  to.manager.local.addr = from.manager.local.addr;
  to.rails.resize(from.rails.size());
  for (std::size_t k = 0; k < from.rails.size(); ++k)
    to.rails[k].local = from.rails[k].local;
}

void read_rail_prefixes(Field& f, Config& c) {
  const auto entries = per_rail(f.r, f.node, f.full, "prefix");
  if (entries.empty())
    return;
  if (f.node.is_array() && entries.size() != c.rails.size()) {
    return f.fail("has " + counted(entries.size(), "prefix", "prefixes") + " for node.address's " +
                  counted(c.rails.size(), "address", "addresses") +
                  ": one per rail, in the same order");
  }
  std::vector<IpPrefix> prefixes;
  for (const auto& [node, name] : entries) {
    auto p = prefix_at(f.r, *node, name, true);
    if (!p)
      return;
    prefixes.push_back(*p);
  }
  c.underlay_prefix = prefixes.front();
  for (std::size_t k = 0; k < prefixes.size() && k < c.rails.size(); ++k)
    c.rails[k].underlay_prefix = prefixes[k];
}

Value get_rail_prefixes(const Config& c) {
  bool later = false;
  for (std::size_t k = 1; k < c.rails.size(); ++k)
    later = later || c.rails[k].underlay_prefix.has_value();
  if (!later)
    return c.underlay_prefix ? Value(c.underlay_prefix->to_string()) : Value();
  // Only a list sets a later rail's, and a list sets every rail's.
  std::vector<std::string> out = {c.underlay_prefix ? c.underlay_prefix->to_string() : ""};
  for (std::size_t k = 1; k < c.rails.size(); ++k) {
    const auto& p = c.rails[k].underlay_prefix;
    out.push_back(p ? p->to_string() : "");
  }
  return out;
}

void copy_rail_prefixes(const Config& from, Config& to) {
  to.underlay_prefix = from.underlay_prefix;
  // node.address needs a restart, so a reload that gets here has as many
  // rails in both.
  for (std::size_t k = 0; k < to.rails.size(); ++k) {
    to.rails[k].underlay_prefix =
        k == 0 ? from.underlay_prefix
               : (k < from.rails.size() ? from.rails[k].underlay_prefix : std::nullopt);
  }
}

}  // namespace rcnet::config::detail
