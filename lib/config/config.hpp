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
// an IPv6 overlay; tun.address's two entries (a list) in two families; srq.limit < srq.size;
// timeouts.idle > reaper_interval; the rails (node.address's entries) in one family, unique, each
// on its own subnet (no two inside one rail's peers.underlay_prefix, no two rails' prefixes
// overlapping); each rail's peers.underlay_prefix in node.address's family with at least as many
// host bits as each entry of tun.address; peers.allowed and peers.static in node.address's family;
// static overlays one per family of tun.address, each inside its entry, unique, not our own; a
// static peer's underlays none of ours, at most one per rail, no two equal.
//
// Checks that refuse a config that cannot work (sanity.cpp): tun.address of
// /0 or a single address (/32, /128), the subnet or (IPv4) broadcast address
// as our own overlay, the overlay prefix overlapping an underlay prefix or
// holding an underlay address, a loopback underlay; on a rail with a
// peers.underlay_prefix, our overlay address (tun.address) that the rule
// does not map to the rail's own address (so our underlay address maps to
// another overlay address, the overlay's subnet or broadcast, or none),
// checked for each entry of tun.address.
//
// One file for the whole cluster (interfaces.cpp): node.interface names the
// interface holding each rail's underlay address instead of node.address,
// and tun.address_from_underlay = true takes the overlay's host bits from
// rail 0's underlay address, the reverse of peers.underlay_prefix's rule
// (for each entry of tun.address).
//
// Errors: Error::invalid() whose context is one line naming the file (the
// config or the drop-in that set the key), the line (when the key is set in
// a file) and the dotted key, e.g.
//   rcnetd.toml:12: timeouts.idle: expected a duration such as "10s" or "500ms"
// TOML syntax errors report toml++'s line and column. Unknown tables and keys
// are errors. Only the first error is reported.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/proof.hpp"
#include "cm/manager.hpp"
#include "config/log_level.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

namespace rcnet::config {

inline constexpr std::uint16_t kDefaultPort = 7471;

// node.address takes at most this many rails (addresses).
inline constexpr std::size_t kMaxRails = 8;

// rails.mode: how a peer's traffic uses its links (one per rail), see
// rcnetd.toml(5) "[rails]".
enum class RailsMode : std::uint8_t {
  kActiveBackup,  // one link carries everything; another takes over when it fails
  kStripe,        // flows spread over the links that are up, by flow hash
};
// The names rails.mode takes, indexed by RailsMode.
inline constexpr std::array<std::string_view, 2> kRailsModeNames = {"active-backup", "stripe"};
static_assert(static_cast<std::size_t>(RailsMode::kStripe) + 1 == kRailsModeNames.size(),
              "kRailsModeNames: one name per RailsMode, in order");
// "active-backup", "stripe"; "?" for a value outside the enum.
std::string_view to_string(RailsMode m);

// One rail: an underlay address of this node (on one RDMA device port) and
// the prefix rule that maps overlays to peers' addresses on that rail.
struct RailConfig {
  Endpoint local;                           // node.address[k], with node.port
  std::optional<IpPrefix> underlay_prefix;  // peers.underlay_prefix[k]; nullopt: static peers only
  bool operator==(const RailConfig&) const = default;
};

// A [[peers.static]] entry.
struct StaticPeer {
  IpAddr overlay;                        // in tun_address's family
  IpAddr underlay;                       // rail 0's (as before rails existed)
  std::vector<IpAddr> rail_underlays{};  // one per rail given; rail_underlays[0] == underlay.
                                         // Fewer than the rails: no link on the later ones.
  // In tun_address6's family when tun.address has both families; else empty.
  IpAddr overlay6{};
  bool operator==(const StaticPeer&) const = default;
};

// [auth] (docs/design.md "Trust"): auth.mode, the overlay id and the key
// files. The keys' bytes are not here: the daemon reads the files
// (config::read_auth_keys) at start and at each reload.
using AuthMode = auth::Mode;
// The names auth.mode takes, indexed by AuthMode.
inline constexpr std::array<std::string_view, 3> kAuthModeNames = {"off", "optional", "required"};
static_assert(static_cast<std::size_t>(AuthMode::kRequired) + 1 == kAuthModeNames.size(),
              "kAuthModeNames: one name per AuthMode, in order");
// One auth.keys entry: a key's id (1..255) and its file (auth/key_file.hpp).
struct AuthKeyRef {
  std::uint8_t id = 0;
  std::string file;
  bool operator==(const AuthKeyRef&) const = default;
};
struct AuthConfig {
  AuthMode mode = AuthMode::kOff;  // auth.mode (live)
  std::string overlay;             // auth.overlay (restart): the overlay id
  std::vector<AuthKeyRef> keys;    // auth.keys (live): the first proves, all are accepted
  bool operator==(const AuthConfig&) const = default;
};

// Where a key's value came from: the file (the config or a drop-in) and the
// line; line 0 with an empty file: the default.
struct Origin {
  std::string file;
  std::uint32_t line = 0;
  bool operator==(const Origin&) const = default;
};

// The addresses of the interface named `ifname`, in the kernel's order (for
// IPv4 the primary address first); nullopt when there is no such interface.
// load() reads the system's (getifaddrs(3)); tests pass their own.
using InterfaceLookup =
    std::function<std::optional<std::vector<IpAddr>>(const std::string& ifname)>;
// getifaddrs(3): the addresses of `ifname` in this network namespace.
std::optional<std::vector<IpAddr>> system_interface_addresses(const std::string& ifname);
// true when any interface of this network namespace holds `a`.
bool system_has_address(const IpAddr& a);

struct Config {
  // node.address (rail 0's)/port → local; tun.address → overlay; tun.mtu → mtu; srq.*,
  // limits.*, timeouts.*, transport.*, peers.allowed → their fields.
  // incarnation stays 0: the daemon draws it at each start.
  cm::ManagerConfig manager = default_manager();

  // transport.poll_us: after an event loop iteration that dispatched
  // anything, keep polling every source without sleeping for this long
  // (microseconds) before blocking in epoll_wait; 0 = never (the default).
  std::uint32_t poll_us = 0;

  std::string tun_name = "rc0";
  // tun.address: our overlay address with the overlay prefix length. With
  // one entry, that entry; with two (one IPv4, one IPv6: both families on
  // one TUN), the IPv4 one, and tun_address6 holds the IPv6 one. tun_address
  // is the family sent in private data (cm::ManagerConfig::overlay) and the
  // key a peer's traffic of both families goes by (Config::primary_overlay).
  IpPrefix tun_address;
  std::optional<IpPrefix> tun_address6;
  // Where tun_address6 stands in the file's list (0 or 1), for messages and
  // the listing: the file's order is kept, the fields are by family.
  std::uint8_t tun_address6_index = 1;
  std::string tun_netns;
  // tun.address_from_underlay: tun.address names only the overlay prefix;
  // our overlay address is its network with rail 0's underlay host bits.
  bool tun_address_from_underlay = false;

  // node.interface: per rail, the interface whose address is the rail's
  // underlay address (instead of node.address). Empty: node.address gives them.
  std::vector<std::string> rail_interfaces;
  // Non-empty when node.interface could not be resolved yet: which interface
  // has no usable address, e.g. "ib0 has no address". The rails' addresses,
  // a derived tun.address and the checks on them are then unset; the daemon
  // waits and loads the file again (rcnetd(8) "STARTUP").
  std::string unresolved;
  // Each key read from a file (dotted, list entries as key[k]): where.
  // Keys absent from it have their defaults.
  std::map<std::string, Origin, std::less<>> origins;
  // tun.source_check (live): drop a received packet whose inner source is
  // neither the peer's overlay address nor routed via it (rcnetd(8)).
  bool tun_source_check = true;

  // Rail 0's peers.underlay_prefix (rails[0].underlay_prefix): the field
  // that existed before rails, read by the one-rail code.
  std::optional<IpPrefix> underlay_prefix;
  std::vector<StaticPeer> static_peers;

  // node.address's entries in order, with peers.underlay_prefix's; at least
  // one. parse() keeps rails[0].local == manager.local and
  // rails[0].underlay_prefix == underlay_prefix; the functions below read
  // rail 0 from those two fields, so code that sets only them still works.
  std::vector<RailConfig> rails = {RailConfig{default_manager().local, std::nullopt}};
  RailsMode rails_mode = RailsMode::kActiveBackup;  // rails.mode (restart)
  // rails.holddown (live): a rail that recovered carries traffic again only
  // after it has been up this long; the rails' code grows it with repeated
  // failures. 0..10 min.
  Duration rails_holddown = std::chrono::seconds(5);

  LogLevel log_level = LogLevel::kInfo;
  LogTarget log_target = LogTarget::kAuto;

  AuthConfig auth;

  std::string ctl_socket = "/run/rcnet/rcnetd.sock";
  std::string ctl_group = "rcnet";

  // tun.address's entries: tun_address, then tun_address6 when set (1 or 2).
  std::vector<IpPrefix> overlay_prefixes() const;
  // tun.address's entry in `a`'s family, or nullptr when it has none.
  const IpPrefix* overlay_prefix_for(const IpAddr& a) const;

  // The underlay address of the peer owning `overlay` (in either family of
  // tun.address): the static table first, then the underlay_prefix rule
  // (the overlay's host bits under its own family's prefix). nullopt when
  // neither applies, when `overlay` is outside tun.address's prefix of its
  // family, or when its host part is all zeros (the subnet) or, for IPv4,
  // all ones (broadcast).
  std::optional<IpAddr> underlay_for(const IpAddr& overlay) const;
  // underlay_for() with the fabric's port (node.port: every node listens on it).
  std::optional<Endpoint> peer_endpoint_for(const IpAddr& overlay) const;

  // The rails (1..kMaxRails after parse()).
  std::size_t rail_count() const { return rails.size(); }
  // `manager` with local = rail `rail`'s address and node.port and
  // rail_count = rail_count(): what a cm::Manager of that rail binds to. `rail` < rail_count(); a
  // larger one gets `manager` unchanged (rail 0's).
  cm::ManagerConfig manager_for_rail(std::size_t rail) const;
  // underlay_for() on rail `rail`: a static peer's rail_underlays[rail] (a
  // static peer with fewer entries has no link on that rail: nullopt, the
  // prefix rule is not consulted for it), then rails[rail].underlay_prefix's
  // rule. Rail 0 is exactly underlay_for(overlay). nullopt for a rail >=
  // rail_count().
  std::optional<IpAddr> underlay_for(const IpAddr& overlay, std::size_t rail) const;
  // underlay_for(overlay, rail) with node.port.
  std::optional<Endpoint> peer_endpoint_for(const IpAddr& overlay, std::size_t rail) const;
  // The inverse: the overlay address of the peer whose rail-`rail` underlay
  // address is `underlay` (a REQ's source): the static table first, then the
  // prefix rule (the underlay's host bits inside tun.address's prefix).
  // nullopt when neither applies, when the result is the subnet, broadcast or
  // our own overlay, or when underlay_for(result, rail) is not `underlay`
  // (a static entry overrides the rule for its overlay, and a static peer
  // without an underlay on `rail` has no link there).
  std::optional<IpAddr> overlay_for(const IpAddr& underlay, std::size_t rail) const;
  // overlay_for() in tun.address's entry of `family` (AF_INET, AF_INET6):
  // the peer's overlay address in that family; nullopt as overlay_for(), or
  // when tun.address has no entry of that family.
  std::optional<IpAddr> overlay_for(const IpAddr& underlay, std::size_t rail,
                                    std::uint8_t family) const;
  // The peer that owns `overlay` (either family) named by its address in
  // tun_address's family: `overlay` itself when it is in that family, else
  // the same peer's (the static entry's overlay, or by the rule through
  // the rail-0 underlay). Both families of a peer then go by one key (one
  // connection per peer and rail). nullopt when no peer owns `overlay`.
  std::optional<IpAddr> primary_overlay(const IpAddr& overlay) const;

  static cm::ManagerConfig default_manager();
};

// Parses and validates `toml_text`; `source_name` prefixes every error
// ("rcnetd.toml", "/etc/rcnet/rcnetd.toml"). node.interface is resolved
// through `lookup`; without one, no interface exists (Config::unresolved).
Result<Config> parse(std::string_view toml_text, std::string_view source_name,
                     const InterfaceLookup& lookup = {});
// Reads the file at `path`, merges the drop-ins PATH.d/*.toml into it in
// lexical order of their names (a later file's key replaces the earlier
// value whole, lists included, as systemd's drop-ins do), and parses the
// result as parse() does; errors name the file that set the key. Errors: a
// directory as `path` (invalid_argument), the errno of open/read with the
// path as context, or any parse() error.
Result<Config> load(const std::string& path,
                    const InterfaceLookup& lookup = system_interface_addresses);
// PATH.d/*.toml of load(path), in the order load() merges them.
std::vector<std::string> drop_ins(const std::string& path);

// The merged configuration as TOML that parse() reads back (on the same
// machine) to the same values: every key of the table, each followed by a
// comment saying where its value came from ("# rcnetd.toml:12",
// "# default"); what node.interface and tun.address_from_underlay made of
// them (this node's addresses) as comment lines. What rcnetd
// --check-config prints.
std::string show(const Config& c);

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

// The keys of cfg.auth.keys, read from their files (auth::read_key_file),
// in the file's order: the first proves. Empty with auth.mode off. Errors:
// the first file that cannot be read or is not a key, named with its
// auth.keys entry.
Result<std::vector<auth::Key>> read_auth_keys(const Config& cfg);

}  // namespace rcnet::config
