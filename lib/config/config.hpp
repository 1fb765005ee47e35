// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's configuration file (TOML v1.0, parsed with toml++), validated into
// plain values. No I/O except load(), which reads one file.
//
// The keys, their types, ranges, units and whether a reload applies them:
// one row each in lib/config/keys.cpp (config/keys.hpp says what a row
// drives). Their documentation: man/rcnetd.toml.5.scd, and
// lib/config/rcnetd.example.toml, which lists every key with its default.
// Defaults are the member initialisers below and those of cm::ManagerConfig
// (node.port: kDefaultPort).
//
// Checks that involve several keys run after the rows: tun.mtu >= 1280 with
// an IPv6 overlay; srq.limit < srq.size; timeouts.idle > reaper_interval;
// peers.underlay_prefix in node.address's family with at least as many host
// bits as tun.address; peers.allowed and peers.static in node.address's
// family; static overlays inside tun.address, unique, not our own.
//
// Errors: Error::invalid() whose context is one line naming the source, the
// line (when the key is present in the file) and the dotted key, e.g.
//   rcnetd.toml:12: timeouts.idle: expected a duration such as "10s" or "500ms"
// TOML syntax errors report toml++'s line and column. Unknown tables and keys
// are errors. Only the first error is reported.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cm/manager.hpp"
#include "config/log_level.hpp"
#include "util/address.hpp"
#include "util/result.hpp"

namespace rcnet::config {

inline constexpr std::uint16_t kDefaultPort = 7471;

struct StaticPeer {
  IpAddr overlay;
  IpAddr underlay;
  bool operator==(const StaticPeer&) const = default;
};

struct Config {
  // node.address/port → local; tun.address → overlay; tun.mtu → mtu; srq.*,
  // limits.*, timeouts.*, transport.*, peers.allowed → their fields.
  // incarnation stays 0: the daemon draws it at each start.
  cm::ManagerConfig manager = default_manager();

  // transport.poll_us: after an event loop iteration that dispatched
  // anything, keep polling every source without sleeping for this long
  // (microseconds) before blocking in epoll_wait; 0 = never (the default).
  std::uint32_t poll_us = 0;

  std::string tun_name = "rc0";
  IpPrefix tun_address;  // our overlay address with the overlay prefix length
  std::string tun_netns;

  std::optional<IpPrefix> underlay_prefix;
  std::vector<StaticPeer> static_peers;

  LogLevel log_level = LogLevel::kInfo;
  LogTarget log_target = LogTarget::kAuto;

  std::string ctl_socket = "/run/rcnet/rcnetd.sock";
  std::string ctl_group = "rcnet";

  // The underlay address of the peer owning `overlay`: the static table
  // first, then the underlay_prefix rule. nullopt when neither applies, when
  // `overlay` is outside tun.address's prefix, or when its host part is all
  // zeros (the subnet) or, for IPv4, all ones (broadcast).
  std::optional<IpAddr> underlay_for(const IpAddr& overlay) const;
  // underlay_for() with the fabric's port (node.port: every node listens on it).
  std::optional<Endpoint> peer_endpoint_for(const IpAddr& overlay) const;

  static cm::ManagerConfig default_manager();
};

// Parses and validates `toml_text`; `source_name` prefixes every error
// ("rcnetd.toml", "/etc/rcnet/rcnetd.toml").
Result<Config> parse(std::string_view toml_text, std::string_view source_name);
// Reads and parses the file at `path`. Errors: the errno of open/read with the
// path as context, or any parse() error.
Result<Config> load(const std::string& path);

// Dotted keys, in table order, whose values differ between `running` and
// `next` and whose row says Apply::kRestart (a reload cannot apply them).
// Empty = a reload can apply `next` completely: the other keys apply live
// via cm::Manager::reconfigure() and the daemon's reload.
std::vector<std::string> restart_required(const Config& running, const Config& next);

// A reload of `next` (SIGHUP, daemon/daemon.cpp Daemon::reload): when
// restart_required(running, next) is empty, sets every key whose row says
// Apply::kLive to its value in `next` (the rows' copy()) and returns an empty
// list; the daemon then hands running.manager to cm::Manager::reconfigure().
// Otherwise returns restart_required()'s keys and leaves `running` as it is.
// Fields no key names (manager.incarnation, manager.signal_every) keep
// their running values.
std::vector<std::string> reload(Config& running, const Config& next);

}  // namespace rcnet::config
