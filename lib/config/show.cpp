// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// config::show(): the merged configuration as TOML, each value with where
// it came from (rcnetd --check-config).
#include <fmt/format.h>

#include "config/config.hpp"
#include "config/keys.hpp"

namespace rcnet::config {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : ", ") + items[i];
  return out + "]";
}

std::string toml_of(const InlineValue& v) {
  if (const auto* s = std::get_if<std::string>(&v.v))
    return quoted(*s);
  std::vector<std::string> items;
  for (const std::string& s : std::get<std::vector<std::string>>(v.v))
    items.push_back(quoted(s));
  return list(items);
}

// `v` as the file writes it; "" for an unset value.
std::string toml_of(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quoted(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::vector<std::string> items;
          for (const std::string& s : x)
            items.push_back(quoted(s));
          return list(items);
        } else {
          std::vector<std::string> items;
          for (const InlineTable& t : x) {
            std::string one = "{";
            for (std::size_t i = 0; i < t.size(); ++i)
              one += (i == 0 ? " " : ", ") + t[i].first + " = " + toml_of(t[i].second);
            items.push_back(one + " }");
          }
          return list(items);
        }
      },
      v);
}

std::string where(const Config& c, std::string_view dotted) {
  const auto it = c.origins.find(dotted);
  if (it == c.origins.end())
    return "default";
  return it->second.file + (it->second.line > 0 ? ":" + std::to_string(it->second.line) : "");
}

}  // namespace

std::string show(const Config& c) {
  std::string out;
  std::string_view section;
  for (const Key& k : keys()) {
    if (k.section() != section) {
      section = k.section();
      out += fmt::format("{}[{}]\n", out.empty() ? "" : "\n", section);
    }
    std::string value = toml_of(k.get(c));
    const std::string origin = where(c, k.dotted);
    // What node.interface and tun.address_from_underlay made is shown as a
    // comment: the listing stays a file that reads back to this config.
    if (k.dotted == "node.address" && !c.rail_interfaces.empty()) {
      if (value.empty())
        out += fmt::format("# address: not yet ({})\n", c.unresolved);
      else
        out += fmt::format("# address = {}  # from node.interface\n", value);
      continue;
    }
    if (k.dotted == "tun.address" && c.tun_address_from_underlay) {
      // In the file's order; each entry's network (host bits zero).
      std::vector<IpPrefix> order = {c.tun_address};
      if (c.tun_address6)
        order.insert(order.begin() + c.tun_address6_index, *c.tun_address6);
      std::string nets, ours;
      for (const IpPrefix& p : order) {
        IpPrefix prefix = p;
        for (std::size_t i = prefix.length; i < prefix.addr.size() * 8; ++i)
          prefix.addr.bytes[i / 8] =
              static_cast<std::uint8_t>(prefix.addr.bytes[i / 8] & ~(1u << (7 - i % 8)));
        nets += fmt::format("{}\"{}\"", nets.empty() ? "" : ", ", prefix.to_string());
        ours += (ours.empty() ? "" : ", ") + p.to_string();
      }
      out +=
          fmt::format("address = {}  # {}\n", order.size() == 1 ? nets : "[" + nets + "]", origin);
      if (c.unresolved.empty())
        out += fmt::format("# this node: {} (host bits from the underlay address)\n", ours);
      else
        out += fmt::format("# this node: not yet ({})\n", c.unresolved);
      continue;
    }
    if (value.empty()) {
      out += fmt::format("# {} (not set)\n", k.name());
      continue;
    }
    out += fmt::format("{} = {}  # {}\n", k.name(), value, origin);
  }
  return out;
}

}  // namespace rcnet::config
