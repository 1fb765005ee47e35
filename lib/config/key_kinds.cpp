// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The values of the key table's kinds (key_kinds.hpp): TOML type, range and
// syntax checks, each failure one message naming file, line and key.
#include "config/key_kinds.hpp"

#include <algorithm>
#include <array>
#include <cmath>

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
    r.fail(n.source().begin.line, full, kPrefixHint);
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
  if (*d < kMinDuration || *d > kMaxDuration) {
    f.fail("must be between 1ms and 24h");
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
    f.r.record(full, (*arr)[i].source().begin.line);
    out.push_back(*p);
  }
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
    for (std::string_view name : kFields) {
      const std::string full = sec + "." + std::string(name);
      if (const toml::node* n = f.r.find(t, full, name)) {
        if (auto a = address_at(f.r, *n, full)) {
          (name == "overlay" ? sp.overlay : sp.underlay) = *a;
          if (const char* msg = name == "underlay" ? peer_address(*a) : nullptr)
            f.r.fail_key(full, msg);
        }
      }
    }
    for (std::string_view name : kFields)
      f.r.require(sec + "." + std::string(name), t);
    c.static_peers.push_back(sp);
  }
}

Value get_static_peers(const Config& c) {
  std::vector<InlineTable> out;
  for (const StaticPeer& sp : c.static_peers)
    out.push_back({{"overlay", sp.overlay.to_string()}, {"underlay", sp.underlay.to_string()}});
  return out;
}

}  // namespace rcnet::config::detail
