// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "config/config.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "config/keys.hpp"
#include "config/reader.hpp"

namespace rcnet::config {

namespace {

using detail::Reader;

std::size_t bit_width_of(const IpAddr& a) {
  return a.is_v4() ? 32 : a.is_v6() ? 128 : 0;
}

bool get_bit(const IpAddr& a, std::size_t i) {
  return (a.bytes[i / 8] >> (7 - i % 8)) & 1u;
}

void set_bit(IpAddr& a, std::size_t i, bool v) {
  const auto m = static_cast<std::uint8_t>(1u << (7 - i % 8));
  a.bytes[i / 8] = static_cast<std::uint8_t>(v ? (a.bytes[i / 8] | m) : (a.bytes[i / 8] & ~m));
}

std::string family_name(const IpAddr& a) {
  return a.is_v4() ? "IPv4" : "IPv6";
}

// Checks that involve more than one key. Each names the key to fix.
void cross_check(Reader& r, Config& c) {
  const cm::ManagerConfig& m = c.manager;
  if (r.failed())
    return;
  if (c.tun_address.addr.is_v6() && m.mtu < 1280) {
    return r.fail_key("tun.mtu", "an IPv6 overlay needs at least 1280 (RFC 8200)");
  }
  if (m.srq_limit >= m.srq_size) {
    return r.fail_key("srq.limit", "must be below srq.size (" + std::to_string(m.srq_size) + ")");
  }
  if (m.idle_timeout <= m.reaper_interval) {
    return r.fail_key("timeouts.idle", "must be longer than timeouts.reaper_interval");
  }
  const IpAddr& self = m.local.addr;
  if (c.underlay_prefix) {
    const IpPrefix& up = *c.underlay_prefix;
    if (up.addr.family != self.family) {
      return r.fail_key("peers.underlay_prefix",
                        "is " + family_name(up.addr) + " but node.address is " + family_name(self));
    }
    const std::size_t overlay_host = bit_width_of(c.tun_address.addr) - c.tun_address.length;
    const std::size_t underlay_host = bit_width_of(up.addr) - up.length;
    if (underlay_host < overlay_host) {
      return r.fail_key("peers.underlay_prefix",
                        "has " + std::to_string(underlay_host) + " host bits, fewer than the " +
                            std::to_string(overlay_host) + " of tun.address");
    }
  }
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
    if (!c.tun_address.contains(sp.overlay)) {
      return r.fail_key(sec + ".overlay", sp.overlay.to_string() + " is outside tun.address " +
                                              c.tun_address.to_string());
    }
    if (sp.overlay == c.tun_address.addr) {
      return r.fail_key(sec + ".overlay", "is this node's own tun.address");
    }
    if (sp.underlay.family != self.family) {
      return r.fail_key(sec + ".underlay", "is " + family_name(sp.underlay) +
                                               " but node.address is " + family_name(self));
    }
    if (sp.underlay == self)
      return r.fail_key(sec + ".underlay", "is this node's own address");
    for (std::size_t j = 0; j < i; ++j) {
      if (c.static_peers[j].overlay == sp.overlay) {
        return r.fail_key(
            sec + ".overlay",
            "duplicate: " + sp.overlay.to_string() + " is already peers.static[" +
                std::to_string(j) + "] (line " +
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
  return m;
}

std::optional<IpAddr> Config::underlay_for(const IpAddr& overlay) const {
  for (const StaticPeer& sp : static_peers) {
    if (sp.overlay == overlay)
      return sp.underlay;
  }
  if (!underlay_prefix || tun_address.addr.empty() || !tun_address.contains(overlay)) {
    return std::nullopt;
  }
  const std::size_t width = bit_width_of(overlay);
  const std::size_t host_bits = width - tun_address.length;
  bool any_zero = false;
  bool any_one = false;
  for (std::size_t i = width - host_bits; i < width; ++i) {
    (get_bit(overlay, i) ? any_one : any_zero) = true;
  }
  if (host_bits > 0 && !any_one)
    return std::nullopt;
  if (overlay.is_v4() && host_bits > 1 && !any_zero)
    return std::nullopt;

  const IpPrefix& up = *underlay_prefix;
  const std::size_t uwidth = bit_width_of(up.addr);
  if (uwidth - up.length < host_bits)
    return std::nullopt;  // validated by parse()
  IpAddr out = up.addr;
  for (std::size_t i = up.length; i < uwidth; ++i)
    set_bit(out, i, false);
  for (std::size_t k = 0; k < host_bits; ++k) {
    set_bit(out, uwidth - 1 - k, get_bit(overlay, width - 1 - k));
  }
  return out;
}

std::optional<Endpoint> Config::peer_endpoint_for(const IpAddr& overlay) const {
  auto u = underlay_for(overlay);
  if (!u)
    return std::nullopt;
  return Endpoint{*u, manager.local.port};
}

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

Result<Config> parse(std::string_view toml_text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Error::invalid(std::string(source_name) + ":" + std::to_string(b.line) + ":" +
                          std::to_string(b.column) +
                          ": TOML syntax error: " + one_line(e.description()));
  } catch (const std::exception& e) {
    return Error::invalid(std::string(source_name) + ": " + e.what());
  }
  Config c;
  Reader r(root, source_name);
  detail::read_keys(r, c);
  // The manager sends our overlay address in private data.
  c.manager.overlay = c.tun_address.addr;
  cross_check(r, c);
  if (r.failed())
    return r.take_error();
  return c;
}

Result<Config> load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::from_errno(errno != 0 ? errno : ENOENT, "open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error::from_errno(errno != 0 ? errno : EIO, "read " + path);
  return parse(text.str(), path);
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

}  // namespace rcnet::config
