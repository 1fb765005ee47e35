// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// One file for the whole cluster: node.interface (each rail's underlay
// address read from an interface) and tun.address_from_underlay (our
// overlay address from rail 0's underlay host bits).
#include <ifaddrs.h>
#include <net/if.h>

#include <memory>

#include "config/checks.hpp"
#include "config/key_kinds.hpp"

namespace rcnet::config {

std::optional<std::vector<IpAddr>> system_interface_addresses(const std::string& ifname) {
  if (::if_nametoindex(ifname.c_str()) == 0)
    return std::nullopt;
  std::vector<IpAddr> out;
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0)
    return out;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, &::freeifaddrs);
  for (const ifaddrs* i = raw; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || ifname != i->ifa_name)
      continue;
    if (auto a = IpAddr::from_sockaddr(i->ifa_addr))
      out.push_back(*a);
  }
  return out;
}

bool system_has_address(const IpAddr& want) {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0)
    return false;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, &::freeifaddrs);
  for (const ifaddrs* i = raw; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr)
      continue;
    if (auto a = IpAddr::from_sockaddr(i->ifa_addr); a && *a == want)
      return true;
  }
  return false;
}

namespace detail {

namespace {

// The address of rail `k` among the interface's `addrs`: the first inside
// the rail's peers.underlay_prefix when it has one (so that peers find us
// by the rule), else the first IPv4 address, else the first IPv6 address
// that is not link-local (rdma_cm would need its scope). nullopt: none.
std::optional<IpAddr> pick(const std::vector<IpAddr>& addrs, const std::optional<IpPrefix>& rule) {
  for (const IpAddr& a : addrs) {
    if (rule ? rule->contains(a) : a.is_v4())
      return a;
  }
  if (rule)
    return std::nullopt;
  for (const IpAddr& a : addrs) {
    if (a.is_v6() && !link_local_v6(a))
      return a;
  }
  return std::nullopt;
}

// Where rail 0's address came from, for a message: "node.address" or
// "ib0's address".
std::string rail_source(const Reader& r, const Config& c) {
  return c.rail_interfaces.empty() ? key_of(r, "node.address", 0)
                                   : c.rail_interfaces.front() + "'s address";
}

// tun.address_from_underlay for one entry of tun.address (`tun`, in `c`).
void derive_one(Reader& r, Config& c, IpPrefix& tun) {
  const std::string key = "tun.address_from_underlay";
  if (host_part(tun.addr, tun.length) != "zero") {
    return r.fail_key(tun_key(r, c, tun),
                      "with tun.address_from_underlay = true, give the overlay "
                      "prefix (host bits zero, e.g. 10.100.0.0/24): the host "
                      "bits come from the underlay address");
  }
  if (!c.unresolved.empty())
    return;
  const IpAddr& u = c.manager.local.addr;
  const std::size_t host_bits = bit_width_of(tun.addr) - tun.length;
  if (host_bits > bit_width_of(u)) {
    return r.fail_key(key, tun_key(r, c, tun) + " has " + std::to_string(host_bits) +
                               " host bits, more than an " + family_name(u) + " address has");
  }
  IpAddr o = tun.addr;
  for (std::size_t i = 0; i < host_bits; ++i)
    set_bit(o, bit_width_of(o) - 1 - i, get_bit(u, bit_width_of(u) - 1 - i));
  const std::string what = rail_source(r, c) + " " + u.to_string() + " gives " + o.to_string();
  const std::string_view part = host_part(o, tun.length);
  if (part == "zero" || (part == "ones" && o.is_v4() && host_bits > 1)) {
    return r.fail_key(key, what + ", the " + (part == "zero" ? "subnet" : "broadcast") +
                               " address of " + tun.to_string() + ": no node's address");
  }
  tun.addr = o;
  // Peers find us by the prefix rule: it must map our overlay back to us.
  if (c.underlay_prefix && c.underlay_for(o) != u) {
    const auto back = c.underlay_for(o);
    tun.addr = IpAddr{};
    return r.fail_key(key, what + ", which peers.underlay_prefix " +
                               c.underlay_prefix->to_string() + " maps to " +
                               (back ? back->to_string() : std::string("no address")) +
                               ", not to this node");
  }
}

}  // namespace

std::string_view host_part(const IpAddr& a, std::size_t length) {
  const std::size_t width = bit_width_of(a);
  if (length >= width)
    return "";
  bool any_zero = false;
  bool any_one = false;
  for (std::size_t i = length; i < width; ++i)
    (get_bit(a, i) ? any_one : any_zero) = true;
  return !any_one ? "zero" : !any_zero ? "ones" : "";
}

void read_rail_interfaces(Field& f, Config& c) {
  if (f.r.present("node.address"))
    return f.fail("set node.address or node.interface, not both");
  std::vector<std::string> names;
  for (const auto& [node, name] : per_rail(f.r, f.node, f.full, "interface name")) {
    if (!node->is_string())
      return f.r.fail_key(name, "expected an interface name such as \"ib0\"");
    const std::string& s = node->as_string()->get();
    if (const char* msg = ifname(s))
      return f.r.fail_key(name, msg);
    names.push_back(s);
  }
  if (names.empty())
    return;  // per_rail() recorded why
  c.rails.assign(names.size(), RailConfig{Endpoint{IpAddr{}, c.manager.local.port}, std::nullopt});
  c.rail_interfaces = std::move(names);
}

Value get_rail_interfaces(const Config& c) {
  if (c.rail_interfaces.empty())
    return Value();
  if (c.rail_interfaces.size() == 1)
    return c.rail_interfaces.front();
  return c.rail_interfaces;
}

void resolve_interfaces(Reader& r, Config& c, const InterfaceLookup& lookup) {
  for (std::size_t k = 0; k < c.rail_interfaces.size() && k < c.rails.size(); ++k) {
    const std::string& ifname = c.rail_interfaces[k];
    const std::optional<IpPrefix>& rule = k == 0 ? c.underlay_prefix : c.rails[k].underlay_prefix;
    const auto addrs = lookup ? lookup(ifname) : std::nullopt;
    if (!addrs) {
      c.unresolved = "no interface " + ifname;
      return;
    }
    const auto a = pick(*addrs, rule);
    if (!a) {
      c.unresolved = ifname + " has no " +
                     (rule ? "address inside peers.underlay_prefix " + rule->to_string()
                           : std::string("IPv4 address nor global IPv6 address"));
      return;
    }
    if (const char* msg = own_address(*a)) {
      return r.fail_key(key_of(r, "node.interface", k),
                        ifname + "'s address " + a->to_string() + " " + msg);
    }
    c.rails[k].local.addr = *a;
    if (k == 0)
      c.manager.local.addr = *a;
  }
}

void derive_overlay(Reader& r, Config& c) {
  if (!c.tun_address_from_underlay)
    return;
  derive_one(r, c, c.tun_address);
  if (c.tun_address6 && !r.failed())
    derive_one(r, c, *c.tun_address6);
}

}  // namespace detail
}  // namespace rcnet::config
