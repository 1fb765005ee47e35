// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "config/config.hpp"

#include <sodium.h>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <algorithm>

#include "config/checks.hpp"
#include "config/key_kinds.hpp"
#include "config/keys.hpp"
#include "config/reader.hpp"

namespace rcnet::config {

namespace {

using namespace detail;

// Rail `k`'s prefix rule and own address. Rail 0's are the fields the
// one-rail code reads (and a Config built by hand may set only those).
// Callers check k < rail_count() first, except for rail 0.
const std::optional<IpPrefix>& rail_prefix(const Config& c, std::size_t k) {
  return k == 0 || k >= c.rails.size() ? c.underlay_prefix : c.rails[k].underlay_prefix;
}

const IpAddr& rail_address(const Config& c, std::size_t k) {
  return k == 0 || k >= c.rails.size() ? c.manager.local.addr : c.rails[k].local.addr;
}

// A static peer's underlay on `rail`; nullopt when it has no link there.
std::optional<IpAddr> static_underlay(const StaticPeer& sp, std::size_t rail) {
  if (rail == 0)
    return sp.underlay;
  if (rail < sp.rail_underlays.size())
    return sp.rail_underlays[rail];
  return std::nullopt;
}

// The key that gave rail `k`'s address: node.address, or node.interface.
std::string rail_key(const Reader& r, const Config& c, std::size_t k) {
  return key_of(r, c.rail_interfaces.empty() ? "node.address" : "node.interface", k);
}

// node.address's entries: one family, no two equal.
void check_rails(Reader& r, const Config& c) {
  const IpAddr& self = c.manager.local.addr;
  for (std::size_t k = 1; k < c.rails.size(); ++k) {
    const IpAddr& a = c.rails[k].local.addr;
    const std::string key = rail_key(r, c, k);
    if (a.family != self.family) {
      return r.fail_key(key, "is " + family_name(a) + " but " + rail_key(r, c, 0) + " is " +
                                 family_name(self) + ": all rails in one family");
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (rail_address(c, j) == a) {
        return r.fail_key(key, "duplicate: " + a.to_string() + " is already " + rail_key(r, c, j));
      }
    }
  }
}

// No two rails on one subnet: no two addresses inside one rail's prefix
// rule (without rules, only equal addresses are known to share one). Two
// links to a peer over one subnet would fail together.
void check_rail_subnets(Reader& r, const Config& c) {
  for (std::size_t k = 1; k < c.rails.size() && !r.failed(); ++k) {
    for (std::size_t j = 0; j < k; ++j) {
      for (std::size_t p = 0; p < c.rails.size(); ++p) {
        const std::optional<IpPrefix>& rule = rail_prefix(c, p);
        if (rule && rule->contains(rail_address(c, j)) && rule->contains(rail_address(c, k))) {
          return r.fail_key(rail_key(r, c, k),
                            rail_address(c, k).to_string() + " is on the subnet of " +
                                rail_key(r, c, j) + " (" + key_of(r, "peers.underlay_prefix", p) +
                                " " + rule->to_string() + "): each rail needs a subnet of its own");
        }
      }
    }
  }
}

// peers.static[i]'s underlays: at most one per rail, each in node.address's
// family, none of ours, no two equal.
void check_static_underlays(Reader& r, const Config& c, std::size_t i) {
  const StaticPeer& sp = c.static_peers[i];
  const std::string key = "peers.static[" + std::to_string(i) + "].underlay";
  const IpAddr& self = c.manager.local.addr;
  if (sp.rail_underlays.size() > c.rails.size()) {
    return r.fail_key(
        key, "has " + detail::counted(sp.rail_underlays.size(), "address", "addresses") +
                 " for node.address's " + detail::counted(c.rails.size(), "address", "addresses") +
                 ": at most one per rail");
  }
  const std::size_t n = std::max<std::size_t>(sp.rail_underlays.size(), 1);
  for (std::size_t k = 0; k < n; ++k) {
    const IpAddr u = *static_underlay(sp, k);
    const std::string name = key_of(r, key, k);
    if (u.family != self.family) {
      return r.fail_key(name, "is " + family_name(u) + " but node.address is " + family_name(self));
    }
    for (std::size_t o = 0; o < c.rails.size(); ++o) {
      if (rail_address(c, o) == u)
        return r.fail_key(name, "is this node's own address");
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (*static_underlay(sp, j) == u)
        return r.fail_key(name, "duplicate: " + u.to_string() + " is already " + key_of(r, key, j));
    }
  }
}

// peers.static[i]'s overlay: one address per family of tun.address, each
// inside its entry and not our own.
void check_static_overlays(Reader& r, const Config& c, std::size_t i) {
  const StaticPeer& sp = c.static_peers[i];
  const std::string key = "peers.static[" + std::to_string(i) + "].overlay";
  const std::size_t given = sp.overlay6.empty() ? 1 : 2;
  const std::size_t want = c.tun_address6 ? 2 : 1;
  if (given != want) {
    return r.fail_key(key, "has " + detail::counted(given, "address", "addresses") + " for " +
                               detail::counted(want, "prefix", "prefixes") +
                               " of tun.address: one per family of tun.address");
  }
  for (const IpAddr& a : {sp.overlay, sp.overlay6}) {
    if (a.empty())
      continue;
    const IpPrefix* tun = c.overlay_prefix_for(a);
    if (tun == nullptr || !tun->contains(a)) {
      const IpPrefix& in = tun != nullptr ? *tun : c.tun_address;
      return r.fail_key(key,
                        a.to_string() + " is outside " + tun_key(r, c, in) + " " + in.to_string());
    }
    if (a == tun->addr) {
      const std::string tkey = tun_key(r, c, *tun);
      return r.fail_key(key, a.to_string() + " is this node's own " + tkey + " (line " +
                                 std::to_string(r.line_of(tkey)) + ")");
    }
  }
}

// Checks that involve more than one key. Each names the key to fix.
void cross_check(Reader& r, Config& c) {
  const cm::ManagerConfig& m = c.manager;
  if (r.failed())
    return;
  if ((c.tun_address.addr.is_v6() || c.tun_address6) && m.mtu < 1280) {
    return r.fail_key("tun.mtu", "an IPv6 overlay needs at least 1280 (RFC 8200)");
  }
  if (m.srq_limit >= m.srq_size) {
    return r.fail_key("srq.limit", "must be below srq.size (" + std::to_string(m.srq_size) + ")");
  }
  if (m.idle_timeout <= m.reaper_interval) {
    return r.fail_key("timeouts.idle", "must be longer than timeouts.reaper_interval");
  }
  if (c.auth.mode != AuthMode::kOff && c.auth.keys.empty()) {
    return r.fail_key(
        r.present("auth.keys") ? "auth.keys" : "auth.mode",
        "auth.mode " + std::string(auth::to_string(c.auth.mode)) +
            " needs a key: auth.keys = [{id = 1, file = \"/etc/rcnet/cluster.key\"}]");
  }
  // The checks below need this node's addresses: they run once node.interface
  // has them (the daemon's load at start, --check-config on the node).
  if (!c.unresolved.empty())
    return;
  const IpAddr& self = m.local.addr;
  check_rails(r, c);
  if (r.failed())
    return;
  for (std::size_t k = 0; k < c.rails.size(); ++k) {
    const std::optional<IpPrefix>& rule = rail_prefix(c, k);
    if (!rule)
      continue;
    const IpPrefix& up = *rule;
    const std::string key = key_of(r, "peers.underlay_prefix", k);
    if (up.addr.family != self.family) {
      return r.fail_key(key,
                        "is " + family_name(up.addr) + " but node.address is " + family_name(self));
    }
    for (const IpPrefix& tun : c.overlay_prefixes()) {
      const std::size_t overlay_host = bit_width_of(tun.addr) - tun.length;
      const std::size_t underlay_host = bit_width_of(up.addr) - up.length;
      if (underlay_host < overlay_host) {
        return r.fail_key(key, "has " + std::to_string(underlay_host) +
                                   " host bits, fewer than the " + std::to_string(overlay_host) +
                                   " of " + tun_key(r, c, tun) +
                                   (c.tun_address6 ? " " + tun.to_string() : ""));
      }
    }
    for (std::size_t j = 0; j < k; ++j) {
      const std::optional<IpPrefix>& other = rail_prefix(c, j);
      if (other && (other->contains(up.addr) || up.contains(other->addr))) {
        return r.fail_key(key, "overlaps " + key_of(r, "peers.underlay_prefix", j) + " (" +
                                   other->to_string() + "): each rail needs a subnet of its own");
      }
    }
  }
  check_rail_subnets(r, c);
  for (std::size_t i = 0; i < m.allowed_peers.size(); ++i) {
    if (m.allowed_peers[i].addr.family != self.family) {
      return r.fail_key("peers.allowed[" + std::to_string(i) + "]",
                        "is " + family_name(m.allowed_peers[i].addr) + " but node.address is " +
                            family_name(self));
    }
  }
  for (std::size_t i = 0; i < c.static_peers.size(); ++i) {
    const StaticPeer& sp = c.static_peers[i];
    const std::string sec = "peers.static[" + std::to_string(i) + "]";
    check_static_overlays(r, c, i);
    if (r.failed())
      return;
    check_static_underlays(r, c, i);
    if (r.failed())
      return;
    for (std::size_t j = 0; j < i; ++j) {
      const StaticPeer& o = c.static_peers[j];
      for (const IpAddr& a : {sp.overlay, sp.overlay6}) {
        if (a.empty() || (a != o.overlay && a != o.overlay6))
          continue;
        return r.fail_key(
            sec + ".overlay",
            "duplicate: " + a.to_string() + " is already peers.static[" + std::to_string(j) +
                "] (line " +
                std::to_string(r.line_of("peers.static[" + std::to_string(j) + "].overlay")) + ")");
      }
    }
  }
}

}  // namespace

cm::ManagerConfig Config::default_manager() {
  cm::ManagerConfig m;
  m.local.port = kDefaultPort;
  m.offload = true;  // transport.offload: lib/cm's default is plain packets
  // timeouts.idle: lib/cm's 10 s would tear down and rebuild a connection
  // between every two beats of a periodic heartbeat or scrape (15 s..60 s).
  // 5 min outlasts those and keeps a quiet peer's QP (cheap with the SRQ:
  // no receive buffers of its own) about as long as IPoIB-CM does (its
  // receive side reaps after IPOIB_CM_RX_TIMEOUT, 512 s); rcnetd.toml(5).
  m.idle_timeout = std::chrono::minutes(5);
  return m;
}

std::string_view to_string(RailsMode m) {
  const auto i = static_cast<std::size_t>(m);
  return i < kRailsModeNames.size() ? kRailsModeNames[i] : "?";
}

cm::ManagerConfig Config::manager_for_rail(std::size_t rail) const {
  cm::ManagerConfig out = manager;
  if (rail != 0 && rail < rails.size())
    out.local = rails[rail].local;
  out.rail_count = static_cast<std::uint8_t>(std::max<std::size_t>(rails.size(), 1));
  out.auth_mode = auth.mode;
  out.auth_overlay = auth.overlay;
  return out;
}

namespace {

// The host bits of tun.address's prefix, or nullopt when `overlay` is not a
// peer's address under it: outside the prefix, or all-zero host bits (the
// subnet) or, for IPv4, all-ones (broadcast).
std::optional<std::size_t> overlay_host_bits(const IpPrefix& tun, const IpAddr& overlay) {
  if (tun.addr.empty() || !tun.contains(overlay))
    return std::nullopt;
  const std::size_t width = bit_width_of(overlay);
  const std::size_t host_bits = width - tun.length;
  bool any_zero = false;
  bool any_one = false;
  for (std::size_t i = width - host_bits; i < width; ++i) {
    (get_bit(overlay, i) ? any_one : any_zero) = true;
  }
  if (host_bits > 0 && !any_one)
    return std::nullopt;
  if (overlay.is_v4() && host_bits > 1 && !any_zero)
    return std::nullopt;
  return host_bits;
}

}  // namespace

std::optional<IpAddr> Config::underlay_for(const IpAddr& overlay) const {
  return underlay_for(overlay, 0);
}

std::vector<IpPrefix> Config::overlay_prefixes() const {
  std::vector<IpPrefix> out = {tun_address};
  if (tun_address6)
    out.push_back(*tun_address6);
  return out;
}

const IpPrefix* Config::overlay_prefix_for(const IpAddr& a) const {
  if (!tun_address.addr.empty() && tun_address.addr.family == a.family)
    return &tun_address;
  if (tun_address6 && tun_address6->addr.family == a.family)
    return &*tun_address6;
  return nullptr;
}

std::optional<IpAddr> Config::underlay_for(const IpAddr& overlay, std::size_t rail) const {
  if (rail != 0 && rail >= rails.size())
    return std::nullopt;
  for (const StaticPeer& sp : static_peers) {
    if (sp.overlay == overlay || (!sp.overlay6.empty() && sp.overlay6 == overlay))
      return static_underlay(sp, rail);
  }
  const std::optional<IpPrefix>& rule = rail_prefix(*this, rail);
  const IpPrefix* tun = overlay_prefix_for(overlay);
  const auto host_bits = tun != nullptr ? overlay_host_bits(*tun, overlay) : std::nullopt;
  if (!rule || !host_bits)
    return std::nullopt;
  const std::size_t width = bit_width_of(overlay);
  const IpPrefix& up = *rule;
  const std::size_t uwidth = bit_width_of(up.addr);
  if (uwidth - up.length < *host_bits)
    return std::nullopt;  // validated by parse()
  IpAddr out = up.addr;
  for (std::size_t i = up.length; i < uwidth; ++i)
    set_bit(out, i, false);
  for (std::size_t k = 0; k < *host_bits; ++k) {
    set_bit(out, uwidth - 1 - k, get_bit(overlay, width - 1 - k));
  }
  return out;
}

std::optional<Endpoint> Config::peer_endpoint_for(const IpAddr& overlay) const {
  return peer_endpoint_for(overlay, 0);
}

std::optional<Endpoint> Config::peer_endpoint_for(const IpAddr& overlay, std::size_t rail) const {
  auto u = underlay_for(overlay, rail);
  if (!u)
    return std::nullopt;
  return Endpoint{*u, manager.local.port};
}

std::optional<IpAddr> Config::overlay_for(const IpAddr& underlay, std::size_t rail) const {
  return overlay_for(underlay, rail, tun_address.addr.family);
}

std::optional<IpAddr> Config::overlay_for(const IpAddr& underlay, std::size_t rail,
                                          std::uint8_t family) const {
  IpAddr of_family;
  of_family.family = family;
  const IpPrefix* tun = family == 0 ? nullptr : overlay_prefix_for(of_family);
  if ((rail != 0 && rail >= rails.size()) || underlay.empty() || tun == nullptr)
    return std::nullopt;
  std::optional<IpAddr> out;
  bool listed = false;
  for (const StaticPeer& sp : static_peers) {
    if (static_underlay(sp, rail) == underlay) {
      listed = true;
      if (sp.overlay.family == family)
        out = sp.overlay;
      else if (!sp.overlay6.empty() && sp.overlay6.family == family)
        out = sp.overlay6;
      break;
    }
  }
  if (!out && !listed)
    out = detail::overlay_by_rule(*this, underlay, rail, *tun);
  // Both ways agree, or there is no such peer: a static entry overrides the
  // rule for its overlay, and the subnet and broadcast map to nothing.
  if (!out || *out == tun->addr || underlay_for(*out, rail) != underlay)
    return std::nullopt;
  return out;
}

std::optional<IpAddr> Config::primary_overlay(const IpAddr& overlay) const {
  if (overlay.family == tun_address.addr.family)
    return overlay;
  if (!tun_address6 || overlay.family != tun_address6->addr.family)
    return std::nullopt;
  for (const StaticPeer& sp : static_peers) {
    if (!sp.overlay6.empty() && sp.overlay6 == overlay)
      return sp.overlay;
  }
  for (std::size_t k = 0; k < std::max<std::size_t>(rails.size(), 1); ++k) {
    if (const auto u = underlay_for(overlay, k))
      return overlay_for(*u, k, tun_address.addr.family);
  }
  return std::nullopt;
}

namespace detail {

std::string tun_key(const Reader& r, const Config& c, const IpPrefix& p) {
  const bool six = c.tun_address6 && p == *c.tun_address6;
  const std::size_t k = six ? c.tun_address6_index : 1 - c.tun_address6_index;
  return key_of(r, "tun.address", c.tun_address6 ? k : 0);
}

std::optional<IpAddr> overlay_by_rule(const Config& c, const IpAddr& underlay, std::size_t rail) {
  return overlay_by_rule(c, underlay, rail, c.tun_address);
}

std::optional<IpAddr> overlay_by_rule(const Config& c, const IpAddr& underlay, std::size_t rail,
                                      const IpPrefix& tun) {
  const std::optional<IpPrefix>& rule = rail_prefix(c, rail);
  if (!rule || tun.addr.empty() || !rule->contains(underlay))
    return std::nullopt;
  // The overlay's host bits are the bottom of the underlay. (The rule
  // writes zeros above them inside the prefix; an underlay with ones
  // there does not map back, which overlay_for() checks.)
  const std::size_t width = bit_width_of(tun.addr);
  const std::size_t host_bits = width - tun.length;
  const std::size_t uwidth = bit_width_of(rule->addr);
  if (uwidth - rule->length < host_bits)
    return std::nullopt;  // validated by parse()
  IpAddr o = tun.addr;
  for (std::size_t k = 0; k < host_bits; ++k)
    set_bit(o, width - 1 - k, get_bit(underlay, uwidth - 1 - k));
  return o;
}

}  // namespace detail

namespace {
// toml++ quotes the byte it stopped at, which may be a newline or another
// control character; an error is one line in the journal and on stderr.
std::string one_line(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      out += ch == '\n' ? std::string("\\n") : fmt::format("\\x{:02x}", u);
    else
      out += ch;
  }
  return out;
}
}  // namespace

namespace detail {

Result<Config> parse_table(const toml::table& root, std::string_view source_name,
                           const InterfaceLookup& lookup) {
  Config c;
  Reader r(root, source_name);
  read_keys(r, c);
  if (!r.failed())
    resolve_interfaces(r, c, lookup);
  // node.port comes after node.address, and every rail listens on it.
  for (RailConfig& rail : c.rails)
    rail.local.port = c.manager.local.port;
  c.rails.front().local = c.manager.local;
  c.rails.front().underlay_prefix = c.underlay_prefix;
  if (!r.failed())
    derive_overlay(r, c);
  // The manager sends our overlay address in private data.
  c.manager.overlay = c.tun_address.addr;
  cross_check(r, c);
  if (!r.failed())
    sanity_check(r, c);
  if (r.failed())
    return r.take_error();
  c.origins = r.origins();
  return c;
}

Result<toml::table> parse_toml(std::string_view text, std::string_view source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Error::invalid(std::string(source_name) + ":" + std::to_string(b.line) + ":" +
                          std::to_string(b.column) +
                          ": TOML syntax error: " + one_line(e.description()));
  } catch (const std::exception& e) {
    return Error::invalid(std::string(source_name) + ": " + e.what());
  }
}

}  // namespace detail

Result<Config> parse(std::string_view toml_text, std::string_view source_name,
                     const InterfaceLookup& lookup) {
  auto root = detail::parse_toml(toml_text, source_name);
  if (!root)
    return root.error();
  return detail::parse_table(*root, source_name, lookup);
}

std::vector<std::string> restart_required(const Config& running, const Config& next) {
  std::vector<std::string> out;
  for (const Key& k : keys()) {
    if (k.apply == Apply::kRestart && k.get(running) != k.get(next))
      out.emplace_back(k.dotted);
  }
  return out;
}

std::vector<std::string> reload(Config& running, const Config& next) {
  auto keys_to_restart = restart_required(running, next);
  if (!keys_to_restart.empty())
    return keys_to_restart;
  for (const Key& k : keys()) {
    if (k.apply == Apply::kLive)
      k.copy(next, running);
  }
  return {};
}

Result<std::vector<auth::Key>> read_auth_keys(const Config& cfg) {
  std::vector<auth::Key> out;
  if (cfg.auth.mode == AuthMode::kOff)
    return out;
  for (std::size_t i = 0; i < cfg.auth.keys.size(); ++i) {
    const AuthKeyRef& k = cfg.auth.keys[i];
    auto bytes = auth::read_key_file(k.file);
    if (!bytes) {
      return Error{bytes.error().code, "auth.keys[" + std::to_string(i) + "] (id " +
                                           std::to_string(k.id) + "): " + bytes.error().context};
    }
    out.emplace_back(k.id, *bytes);
    sodium_memzero(bytes->data(), bytes->size());
  }
  return out;
}

}  // namespace rcnet::config
