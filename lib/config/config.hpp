// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's configuration file (TOML v1.0, parsed with toml++), validated into
// plain values. No I/O except load(), which reads one file.
//
// Schema (lib/config/rcnetd.example.toml is the commented reference; every key
// is optional unless marked required, and defaults are those of an IPoIB-CM
// node on an HPC fabric):
//
// [node]
//   address          required. Underlay IPv4/IPv6 address rcnetd binds its
//                    rdma_cm listener to; it selects the RDMA device, and the
//                    node id is derived from it (rcnet::node_id_for).
//   port             rdma_cm port, 1..65535. Default 7471. Every node of a
//                    fabric listens on the same port.
// [tun]
//   name             TUN interface name, 1..15 characters (IFNAMSIZ - 1), no
//                    '/', ':', '%' or whitespace. Default "rc0".
//   address          required. Overlay address and prefix length,
//                    "10.100.0.1/24" or "fd00:100::1/64".
//   mtu              bytes of IP packet, wire::kMinMtu..wire::kMaxMtu (576..
//                    65520); at least 1280 with an IPv6 overlay. Default 65520
//                    (IPoIB-CM's connected-mode MTU). Each SRQ receive buffer
//                    and send slot is this size.
//   netns            named network namespace (/run/netns/NAME) to move the TUN
//                    into after creating it; "" (default) keeps it where
//                    rcnetd runs.
// [peers]
//   underlay_prefix  optional prefix rule: the peer for an overlay address
//                    keeps the address's host bits (those beyond the
//                    tun.address prefix length) inside this underlay prefix.
//                    Must have at least as many host bits as the overlay
//                    prefix, and node.address's family.
//   allowed          list of underlay prefixes whose REQs are accepted (others
//                    get REJ `not_allowed`); [] (default) accepts any.
//   [[peers.static]] explicit table, consulted before the prefix rule:
//                    overlay = address inside tun.address's prefix (unique),
//                    underlay = that peer's node.address.
// [srq]
//   enabled          one shared receive queue for every QP. Default true.
//   size             receive WRs on the SRQ, 1..1048576 (rxe's max_srq_wr).
//                    Default: cm::ManagerConfig's.
//   limit            SRQ low watermark (IBV_SRQ_LIMIT, ibv_modify_srq(3)),
//                    0 = size / 8 (default); must be below size.
//   rq_depth         receive WRs per QP when enabled = false, 1..65536.
//                    Default 64.
// [limits]
//   max_connections  connections in service before the least recently used
//                    one is evicted; 0 (default) = 128 without SRQ, 4096 with
//                    (IPoIB-CM's limits). 0..1048560.
//   send_slots       registered send buffers shared by all QPs, 1..1048576.
//                    Default: cm::ManagerConfig's.
//   peer_queue_depth packets held per peer until its connection is
//                    ESTABLISHED (oldest dropped), 1..65536. Default 64.
// [timeouts]         durations: "10s", "500ms", "2m", "1h", "1.5s", or a
//                    number of seconds; each 1 ms..24 h.
//   idle             no traffic either way → graceful teardown (DREQ).
//                    Default 10s; must exceed reaper_interval.
//   last_wqe         bound of AWAIT_LAST_WQE before the drain WR is posted
//                    anyway. Default 1s.
//   drain            bound of DRAINING before the QP is destroyed anyway.
//                    Default 1s.
//   disconnect       bound of DISCONNECTING. Default 1s.
//   resolve          rdma_resolve_addr / rdma_resolve_route. Default 2s.
//   connect          REQ/REP sent → ESTABLISHED. Default 5s.
//   reaper_interval  granularity of idle checks. Default 1s.
// [transport]
//   retry_count      RC transport retries, 0..7. Default 3. 7 means infinite
//                    on Soft-RoCE: sends to a dead peer then never complete
//                    and the peer is never reaped by retry exceeded.
//   rnr_retry_count  RNR retries, 0..7 (7 = infinite). Default 7.
//   connect_retries  further connect attempts after a failed one, 0..100.
//                    Default 2.
// [log]
//   level            trace, debug, info (default), warn, error, critical, off.
//   target           auto (default: journal when JOURNAL_STREAM is set,
//                    else stderr), journal, stderr.
// [ctl]
//   socket           absolute path of the ctl Unix socket, shorter than
//                    sun_path (108 bytes). Default "/run/rcnet/rcnetd.sock".
//   group            group whose members may run read-only ctl commands.
//                    Default "rcnet".
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
#include "util/address.hpp"
#include "util/result.hpp"

namespace rcnet::config {

inline constexpr std::uint16_t kDefaultPort = 7471;

// spdlog's levels, by the names operators type.
enum class LogLevel : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
std::string_view to_string(LogLevel l);
std::optional<LogLevel> parse_log_level(std::string_view name);

enum class LogTarget : std::uint8_t { kAuto, kJournal, kStderr };
std::string_view to_string(LogTarget t);

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

// Dotted keys whose values differ between `running` and `next` and that cannot
// be applied to a running daemon (node.*, tun.*, srq.*, limits.send_slots,
// log.target, ctl.*). Everything else (timeouts.*, limits.max_connections,
// limits.peer_queue_depth, transport.*, peers.*, log.level) applies live via
// cm::Manager::reconfigure(). Empty = a reload can apply `next` completely.
std::vector<std::string> restart_required(const Config& running, const Config& next);

}  // namespace rcnet::config
