// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The configs that parse but cannot work, refused with the key to fix
// (config.hpp lists them). Runs after the cross-field checks.
#include <optional>
#include <string>
#include <string_view>

#include "config/checks.hpp"

namespace rcnet::config::detail {

namespace {

bool overlap(const IpPrefix& a, const IpPrefix& b) {
  return a.addr.family == b.addr.family && (a.contains(b.addr) || b.contains(a.addr));
}

bool loopback_prefix(const IpPrefix& p) {
  if (p.addr.is_v4())
    return p.addr.bytes[0] == 127;
  return p.addr.is_v6() && p.contains(*IpAddr::parse("::1"));
}

// The overlay prefix `tun` (an entry of tun.address) and this node's place
// in it.
void check_overlay(Reader& r, const Config& c, const IpPrefix& tun) {
  const std::size_t width = bit_width_of(tun.addr);
  const std::string key = tun_key(r, c, tun);
  if (tun.length == 0) {
    return r.fail_key(key, "a /0 overlay takes every " + family_name(tun.addr) +
                               " address: give the overlay's subnet, e.g. 10.100.0.1/24");
  }
  if (tun.length == width) {
    return r.fail_key(key, "a /" + std::to_string(width) +
                               " overlay has room for no peer: give the overlay's subnet "
                               "length, e.g. 10.100.0.1/24");
  }
  // /31 (RFC 3021) and /127 (RFC 6164): two nodes, no subnet address.
  if (std::size_t{tun.length} + 1 == width || c.tun_address_from_underlay)
    return;  // a derived address was checked when it was made
  const std::string_view part = host_part(tun.addr, tun.length);
  if (part == "zero" || (part == "ones" && tun.addr.is_v4())) {
    return r.fail_key(key, tun.addr.to_string() + " is the " +
                               (part == "zero" ? "subnet" : "broadcast") + " address of " +
                               IpPrefix{tun.addr, tun.length}.to_string() +
                               ", not a node's: give this node's own address in it "
                               "(or set tun.address_from_underlay = true)");
  }
}

// The overlay and the underlay on separate subnets: an underlay address
// inside the overlay prefix is routed into the TUN, so the RC connections
// that carry the overlay would try to go through it.
void check_separate(Reader& r, const Config& c, const IpPrefix& tun) {
  const std::string tkey = tun_key(r, c, tun);
  const std::string why = ": the overlay and the underlay need subnets of their own";
  for (std::size_t k = 0; k < c.rails.size(); ++k) {
    const std::optional<IpPrefix>& rule = k == 0 ? c.underlay_prefix : c.rails[k].underlay_prefix;
    const std::string pkey = key_of(r, "peers.underlay_prefix", k);
    if (rule && loopback_prefix(*rule)) {
      return r.fail_key(pkey, rule->to_string() +
                                  " is a loopback prefix: give the prefix of the RDMA "
                                  "devices' subnet");
    }
    if (rule && overlap(*rule, tun)) {
      return r.fail_key(pkey,
                        rule->to_string() + " overlaps " + tkey + " " + tun.to_string() + why);
    }
    const IpAddr& a = k == 0 ? c.manager.local.addr : c.rails[k].local.addr;
    if (!a.empty() && tun.contains(a)) {
      const std::string akey =
          key_of(r, c.rail_interfaces.empty() ? "node.address" : "node.interface", k);
      return r.fail_key(akey, a.to_string() + " is inside " + tkey + " " + tun.to_string() + why);
    }
  }
  for (std::size_t i = 0; i < c.static_peers.size(); ++i) {
    for (std::size_t k = 0; k < c.static_peers[i].rail_underlays.size(); ++k) {
      const IpAddr& u = c.static_peers[i].rail_underlays[k];
      if (tun.contains(u)) {
        return r.fail_key(key_of(r, "peers.static[" + std::to_string(i) + "].underlay", k),
                          u.to_string() + " is inside " + tkey + " " + tun.to_string() + why);
      }
    }
  }
}

// Where `key` was written, for a message headed by `head`: "line 12", or
// "FILE:12" when a drop-in set one of them.
std::string at(const Reader& r, const std::string& key, std::string_view head) {
  const Origin o = r.where(key);
  if (o.file == r.where(head).file)
    return "line " + std::to_string(o.line);
  return o.file + ":" + std::to_string(o.line);
}

// This node as its peers see it: on each rail with a prefix rule, a peer
// sends our overlay address to the underlay address the rule gives it, and
// takes what our underlay address sends for the overlay address the rule
// gives back (tun.source_check drops the rest, rcnetd(8)). Both must be
// ours, or the node reaches no one and nothing says why. A derived
// tun.address was checked on rail 0 when it was made (interfaces.cpp); a
// static peer with our overlay was refused before (config.cpp), so the
// rule is what underlay_for() reads here.
//
// With both families (tun.address a list of two) each entry is checked: a
// peer reaches us in each family by the same rule.
void check_own_mapping(Reader& r, const Config& c, const IpPrefix& tun) {
  if (!c.unresolved.empty())
    return;
  const std::string tkey = tun_key(r, c, tun);
  for (std::size_t k = 0; k < c.rails.size(); ++k) {
    const std::optional<IpPrefix>& rule = k == 0 ? c.underlay_prefix : c.rails[k].underlay_prefix;
    const IpAddr& self = k == 0 ? c.manager.local.addr : c.rails[k].local.addr;
    const std::optional<IpAddr> there = c.underlay_for(tun.addr, k);
    if (!rule || self.empty() || there == self)
      continue;
    const std::string pkey = key_of(r, "peers.underlay_prefix", k);
    const std::string akey =
        key_of(r, c.rail_interfaces.empty() ? "node.address" : "node.interface", k);
    const std::string ours = c.rail_interfaces.empty()
                                 ? akey + " " + self.to_string() + " (" + at(r, akey, tkey) + ")"
                                 : c.rail_interfaces[k] + "'s address " + self.to_string() + " (" +
                                       akey + ", " + at(r, akey, tkey) + ")";
    // What the rule makes of each: our overlay's underlay, our underlay's
    // overlay (none when no overlay maps forward to it).
    const std::string fwd =
        tun.addr.to_string() + " to " + (there ? there->to_string() : "no underlay address");
    std::string back = "no overlay address to " + self.to_string();
    if (const auto o = overlay_by_rule(c, self, k, tun)) {
      const std::string_view part = host_part(*o, tun.length);
      const std::size_t host_bits = bit_width_of(*o) - tun.length;
      if (part == "zero")
        back = self.to_string() + " to " + o->to_string() + ", the overlay's subnet address";
      else if (part == "ones" && o->is_v4() && host_bits > 1)
        back = self.to_string() + " to " + o->to_string() + ", the overlay's broadcast address";
      else if (c.underlay_for(*o, k) == self)
        back = self.to_string() + " to " + o->to_string();
    }
    const std::string effect = there
                                   ? "peers would send this node's packets to " + there->to_string()
                                   : "peers could not send this node any packet";
    return r.fail_key(tkey, tun.addr.to_string() + " and " + ours + " disagree under " + pkey +
                                " " + rule->to_string() + " (" + at(r, pkey, tkey) + "): it maps " +
                                fwd + " and " + back + ": " + effect +
                                " and drop the ones it sends");
  }
}

}  // namespace

void sanity_check(Reader& r, const Config& c) {
  for (const IpPrefix& tun : c.overlay_prefixes()) {
    if (!r.failed())
      check_overlay(r, c, tun);
    if (!r.failed())
      check_separate(r, c, tun);
    if (!r.failed())
      check_own_mapping(r, c, tun);
  }
}

}  // namespace rcnet::config::detail
