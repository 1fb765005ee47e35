// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Fuzzer `config`: config::parse (lib/config) on arbitrary TOML text.
//   - never crashes, never throws;
//   - every rejection starts with the source name and names
//     a line ("src:12: ...", or toml++'s "src:12:5: TOML syntax error") or,
//     when the key is not in the file, a key of the schema ("src: tun.address:
//     required key is missing");
//   - every accepted config has each value inside the range config.hpp
//     documents, and passes the cross-key rules written there.
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "ctl/views.hpp"
#include "fuzz_check.hpp"
#include "wire/private_data.hpp"

using namespace rcnet;

namespace {

constexpr std::string_view kSource = "fuzz.toml";

// The dotted keys config.hpp documents, sections included; list indices
// ("peers.static[3].overlay") are written [N] here.
bool schema_key(const std::string& key) {
  static const std::set<std::string> kKeys = {
      "node",
      "node.address",
      "node.port",
      "tun",
      "tun.name",
      "tun.address",
      "tun.mtu",
      "tun.netns",
      "peers",
      "peers.underlay_prefix",
      "peers.allowed",
      "peers.allowed[N]",
      "peers.static",
      "peers.static[N]",
      "peers.static[N].overlay",
      "peers.static[N].underlay",
      "srq",
      "srq.enabled",
      "srq.size",
      "srq.limit",
      "srq.rq_depth",
      "limits",
      "limits.max_connections",
      "limits.send_slots",
      "limits.peer_queue_depth",
      "timeouts",
      "timeouts.idle",
      "timeouts.last_wqe",
      "timeouts.drain",
      "timeouts.disconnect",
      "timeouts.resolve",
      "timeouts.connect",
      "timeouts.reaper_interval",
      "transport",
      "transport.retry_count",
      "transport.rnr_retry_count",
      "transport.connect_retries",
      "log",
      "log.level",
      "log.target",
      "ctl",
      "ctl.socket",
      "ctl.group",
  };
  std::string k;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '[') {
      const std::size_t close = key.find(']', i);
      if (close == std::string::npos || close == i + 1)
        return false;
      for (std::size_t j = i + 1; j < close; ++j) {
        if (key[j] < '0' || key[j] > '9')
          return false;
      }
      k += "[N]";
      i = close;
    } else {
      k += key[i];
    }
  }
  return kKeys.count(k) == 1;
}

void check_rejection(const Error& e) {
  const std::string& m = e.context;
  // config.hpp promises one line (toml++'s descriptions quote the byte they
  // stopped at, newline included; config.cpp escapes it).
  FUZZ_CHECK_MSG(m.find('\n') == std::string::npos, m);
  FUZZ_CHECK_MSG(m.compare(0, kSource.size(), kSource) == 0, m);
  const std::string rest = m.substr(kSource.size());
  // ":LINE: " or ":LINE:COLUMN: ", LINE from 1.
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9')
      ++i;
    return i > from;
  };
  if (rest.size() > 1 && rest[0] == ':' && rest[1] != '0' && (++i, digits())) {
    if (i < rest.size() && rest[i] == ':' && i + 1 < rest.size() && rest[i + 1] != ' ') {
      ++i;
      FUZZ_CHECK_MSG(digits(), m);
    }
    FUZZ_CHECK_MSG(rest.compare(i, 2, ": ") == 0 && rest.size() > i + 2, m);
    return;
  }
  // No line: "fuzz.toml: KEY: message" with KEY from the schema.
  FUZZ_CHECK_MSG(rest.compare(0, 2, ": ") == 0, m);
  const auto colon = rest.find(": ", 2);
  FUZZ_CHECK_MSG(colon != std::string::npos, m);
  FUZZ_CHECK_MSG(schema_key(rest.substr(2, colon - 2)), m);
}

std::size_t bits(const IpAddr& a) {
  return a.is_v4() ? 32 : a.is_v6() ? 128 : 0;
}

bool valid_ifname(const std::string& s) {
  if (s.empty() || s.size() > 15 || s == "." || s == "..")
    return false;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == ':' || c == '%' || c == ' ' || u < 0x20 || u == 0x7f)
      return false;
  }
  return true;
}

bool in(Duration d, Duration lo, Duration hi) {
  return d >= lo && d <= hi;
}

void check_accepted(const config::Config& c) {
  const cm::ManagerConfig& m = c.manager;
  // [node]
  FUZZ_CHECK(m.local.addr.is_v4() || m.local.addr.is_v6());
  FUZZ_CHECK(m.local.addr != IpAddr::v4(0) && m.local.addr != IpAddr::parse("::"));
  FUZZ_CHECK(m.local.port >= 1);
  FUZZ_CHECK(node_id_for(m.local.addr) != 0);
  FUZZ_CHECK(m.incarnation == 0);
  // [tun]
  FUZZ_CHECK_MSG(valid_ifname(c.tun_name), c.tun_name);
  FUZZ_CHECK(c.tun_address.addr.is_v4() || c.tun_address.addr.is_v6());
  FUZZ_CHECK(c.tun_address.length <= bits(c.tun_address.addr));
  FUZZ_CHECK(m.overlay == c.tun_address.addr);
  FUZZ_CHECK(m.mtu >= wire::kMinMtu && m.mtu <= wire::kMaxMtu);
  FUZZ_CHECK(!c.tun_address.addr.is_v6() || m.mtu >= 1280);
  FUZZ_CHECK(c.tun_netns.size() <= 255 && c.tun_netns.find('/') == std::string::npos);
  FUZZ_CHECK(c.tun_netns != "." && c.tun_netns != "..");
  // [peers]
  if (c.underlay_prefix) {
    const IpPrefix& up = *c.underlay_prefix;
    FUZZ_CHECK(up.addr.family == m.local.addr.family);
    FUZZ_CHECK(up.length <= bits(up.addr));
    FUZZ_CHECK(bits(up.addr) - up.length >= bits(c.tun_address.addr) - c.tun_address.length);
    // Peers find this node by the rule (lib/config/sanity.cpp).
    if (c.unresolved.empty())
      FUZZ_CHECK(c.underlay_for(c.tun_address.addr) == m.local.addr);
  }
  for (const IpPrefix& p : m.allowed_peers) {
    FUZZ_CHECK(p.addr.family == m.local.addr.family);
    FUZZ_CHECK(p.length <= bits(p.addr));
  }
  for (std::size_t i = 0; i < c.static_peers.size(); ++i) {
    const config::StaticPeer& sp = c.static_peers[i];
    FUZZ_CHECK(c.tun_address.contains(sp.overlay));
    FUZZ_CHECK(sp.overlay != c.tun_address.addr);
    FUZZ_CHECK(sp.underlay.family == m.local.addr.family);
    FUZZ_CHECK(sp.underlay != m.local.addr);
    for (std::size_t j = 0; j < i; ++j)
      FUZZ_CHECK(c.static_peers[j].overlay != sp.overlay);
    // The static table is consulted first.
    FUZZ_CHECK(c.underlay_for(sp.overlay) == sp.underlay);
  }
  // [srq]
  FUZZ_CHECK(m.srq_size >= 1 && m.srq_size <= 1048576);
  FUZZ_CHECK(m.srq_limit < m.srq_size);
  FUZZ_CHECK(m.rq_depth >= 1 && m.rq_depth <= 65536);
  // [limits]
  FUZZ_CHECK(m.max_connections <= 1048560);
  FUZZ_CHECK(m.send_slots >= 1 && m.send_slots <= 1048576);
  FUZZ_CHECK(m.peer_queue_depth >= 1 && m.peer_queue_depth <= 65536);
  // [timeouts]
  for (const Duration d :
       {m.idle_timeout, m.last_wqe_timeout, m.drain_timeout, m.disconnect_timeout,
        m.resolve_timeout, m.connect_timeout, m.reaper_interval}) {
    FUZZ_CHECK(in(d, 1ms, 24h));
  }
  FUZZ_CHECK(m.idle_timeout > m.reaper_interval);
  // [transport]
  FUZZ_CHECK(m.retry_count <= 7 && m.rnr_retry_count <= 7);
  FUZZ_CHECK(m.connect_retries <= 100);
  // [log]
  FUZZ_CHECK(config::to_string(c.log_level) != "?");
  FUZZ_CHECK(config::to_string(c.log_target) != "?");
  // [ctl]
  FUZZ_CHECK(!c.ctl_socket.empty() && c.ctl_socket.front() == '/');
  FUZZ_CHECK(c.ctl_socket.size() < sizeof(sockaddr_un::sun_path));
  FUZZ_CHECK(!c.ctl_group.empty());

  // What the daemon does with an accepted config next must not fail either.
  FUZZ_CHECK(config::restart_required(c, c).empty());
  (void)ctl::config_json(c).dump(-1, ' ', false, ctl::json::error_handler_t::replace);
  (void)c.peer_endpoint_for(c.tun_address.addr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<config::Config> r = config::parse(text, kSource);
  if (r)
    check_accepted(*r);
  else
    check_rejection(r.error());
  return 0;
}
