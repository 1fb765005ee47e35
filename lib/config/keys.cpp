// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The key table of rcnetd.toml (config/keys.hpp says what a row drives).
// A row: key(dotted name, reload flag, kind<field>(range, unit), help).
// The kinds and validators: key_kinds.hpp.
#include "config/keys.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "config/key_kinds.hpp"
#include "wire/private_data.hpp"

namespace rcnet::config {

namespace {

using namespace detail;  // the kinds and validators (key_kinds.hpp)

constexpr auto kLevelNames = log_level_names();
// rails.holddown: 0 (take a recovered rail back at once) to 10 minutes.
constexpr std::pair<Duration, Duration> kHolddownRange = {Duration(0), std::chrono::minutes(10)};

// transport.framing, indexed by cm::Framing.
constexpr std::array<std::string_view, 3> kFramingNames = {"auto", "immediate", "header"};
static_assert(static_cast<std::size_t>(cm::Framing::kHeader) + 1 == kFramingNames.size());
constexpr Apply kLive = Apply::kLive;
constexpr Apply kRestart = Apply::kRestart;
using M = cm::ManagerConfig;
constexpr auto kM = &Config::manager;
constexpr auto kLocal = &M::local;

// Order: the file's sections, each key in the order the man page documents
// it. kLive keys are those config::reload() copies into the running config
// and the daemon's reload applies (daemon/daemon.cpp Daemon::reload:
// cm::Manager::reconfigure, the log level, the peer table); a kRestart key
// sizes or names something created once at start (the device, the TUN, the
// SRQ, the pools, the ctl socket, the log sink) or is fixed when the device
// is opened (the transport timers of rdma::DeviceConfig, which every QP of a
// run shares).
constexpr Key kKeys[] = {
    key("node.address", kRestart, rail_addresses(),
        "underlay address of the rdma_cm listener, or a list of one per rail (rail 0 first, "
        "at most 8); rail 0's selects the node id"),
    key("node.interface", kRestart, rail_interfaces(),
        "instead of node.address: the interface holding it, or a list of one per rail; its first "
        "address inside peers.underlay_prefix (without one: its first IPv4 address)"),
    key("node.port", kRestart, integer<kM, kLocal, &Endpoint::port>(1, 65535, ""),
        "rdma_cm port; every node of a fabric listens on the same one"),

    key("tun.name", kRestart, string<ifname, &Config::tun_name>(), "TUN interface name"),
    key("tun.address", kRestart, tun_addresses(),
        "overlay address and prefix length of the TUN interface, or a list of two, one IPv4 "
        "and one IPv6: both families on one TUN, over each peer's one connection"),
    key("tun.address_from_underlay", kRestart, boolean<&Config::tun_address_from_underlay>(),
        "tun.address gives the overlay prefix (each of two); the host bits come from rail 0's "
        "underlay address (the reverse of peers.underlay_prefix)"),
    key("tun.mtu", kRestart, integer<kM, &M::mtu>(wire::kMinMtu, wire::kMaxMtu, "bytes"),
        "largest IP packet; without transport.offload, the size of each SRQ receive "
        "buffer and send slot"),
    key("tun.netns", kRestart, string<netns_name, &Config::tun_netns>(),
        "named network namespace to move the TUN into; \"\" keeps rcnetd's"),
    key("tun.source_check", kLive, boolean<&Config::tun_source_check>(),
        "drop a received packet whose source is neither the sending peer's overlay address "
        "nor routed via that peer"),

    key("peers.underlay_prefix", kLive, rail_prefixes(),
        "prefix rule: a peer's underlay address keeps the overlay address's host bits; "
        "a list: one prefix per rail, in node.address's order"),
    key("peers.allowed", kLive, prefix_list<kM, &M::allowed_peers>(),
        "underlay prefixes whose REQs are accepted (others: REJ not_allowed); [] = any"),
    key("peers.static", kLive, static_peers(),
        "explicit peers {overlay, underlay}, consulted before the prefix rule; overlay lists "
        "one address per family of tun.address, underlay may list one address per rail"),

    key("rails.mode", kRestart, enumeration<kRailsModeNames, &Config::rails_mode>(),
        "active-backup (one link per peer carries the traffic) or stripe (flows spread over "
        "the links that are up)"),
    key("rails.holddown", kLive, duration_in<kHolddownRange, &Config::rails_holddown>(),
        "a rail that recovered carries traffic again only after it was up this long; grows "
        "with repeated failures"),

    key("srq.enabled", kRestart, boolean<kM, &M::use_srq>(),
        "one shared receive queue for every QP"),
    key("srq.size", kRestart, integer<kM, &M::srq_size>(1, 1048576, "receive WRs"),
        "receive WRs on the SRQ, each a buffer of 64 KiB + 20 bytes with transport.offload, "
        "tun.mtu bytes without"),
    key("srq.limit", kRestart, integer<kM, &M::srq_limit>(0, 1048576, "receive WRs"),
        "SRQ low watermark (IBV_SRQ_LIMIT); 0 = size / 8; below srq.size"),
    key("srq.rq_depth", kRestart, integer<kM, &M::rq_depth>(1, 65536, "receive WRs"),
        "receive WRs per QP when srq.enabled = false"),

    key("limits.max_connections", kLive,
        integer<kM, &M::max_connections>(0, 1048560, "connections"),
        "connections in service before the least recently used is evicted; "
        "0 = 128 without SRQ, 4096 with"),
    key("limits.max_pending_setups", kLive, integer<kM, &M::max_pending_setups>(0, 65536, "setups"),
        "connection setups in progress at a time, each way: a REQ beyond them gets REJ busy "
        "with a retry-after, our own connects wait in order; 0 = no limit"),
    key("limits.send_slots", kRestart, integer<kM, &M::send_slots>(1, 1048576, "send buffers"),
        "registered send buffers shared by all QPs, each 64 KiB + 20 bytes with transport.offload, "
        "tun.mtu bytes without"),
    key("limits.qp_send_depth", kRestart, integer<kM, &M::qp_send_depth>(4, 16383, "send WRs"),
        "outstanding send WRs per QP (max_send_wr); "
        "2^k - 1 fills the power-of-two SQ providers allocate"),
    key("limits.peer_queue_depth", kLive, integer<kM, &M::peer_queue_depth>(1, 65536, "packets"),
        "packets held per peer until its connection is ESTABLISHED (oldest dropped)"),

    key("timeouts.idle", kLive, duration<kM, &M::idle_timeout>(),
        "no traffic either way for this long: graceful teardown (DREQ); above reaper_interval"),
    key("timeouts.last_wqe", kLive, duration<kM, &M::last_wqe_timeout>(),
        "bound of AWAIT_LAST_WQE before the drain WR is posted anyway"),
    key("timeouts.drain", kLive, duration<kM, &M::drain_timeout>(),
        "bound of DRAINING before the QP is destroyed anyway"),
    key("timeouts.disconnect", kLive, duration<kM, &M::disconnect_timeout>(),
        "bound of DISCONNECTING (DREP / DISCONNECTED)"),
    key("timeouts.resolve", kLive, duration<kM, &M::resolve_timeout>(),
        "rdma_resolve_addr and rdma_resolve_route"),
    key("timeouts.connect", kLive, duration<kM, &M::connect_timeout>(),
        "REQ or REP sent until ESTABLISHED"),
    key("timeouts.reaper_interval", kLive, duration<kM, &M::reaper_interval>(),
        "granularity of idle reaping and reclaim SENDs (not a period)"),

    key("transport.retry_count", kLive, integer<kM, &M::retry_count>(0, 7, "retries"),
        "RC transport retries; 7 is infinite on Soft-RoCE (a dead peer is then never reaped)"),
    key("transport.ack_timeout", kRestart,
        integer<kM, &M::ack_timeout>(0, 31, "4.096 us * 2^value"),
        "RDMA_OPTION_ID_ACK_TIMEOUT: each transport retry waits 4.096 us * 2^value (14 = 67 ms); "
        "a dead peer is reaped after (retry_count + 1) of them"),
    key("transport.rnr_retry_count", kLive, integer<kM, &M::rnr_retry_count>(0, 7, "retries"),
        "receiver-not-ready retries; 7 = forever"),
    key("transport.rnr_timer", kRestart, integer<kM, &M::min_rnr_timer>(0, 31, "IB RNR timer code"),
        "min_rnr_timer of our QPs: how long a peer waits after our RNR NAK; IB code, "
        "12 = 0.64 ms, 14 = 1.28 ms, 18 = 5.12 ms, 31 = 491.52 ms, 0 = 655.36 ms"),
    key("transport.connect_retries", kLive, integer<kM, &M::connect_retries>(0, 100, "attempts"),
        "further connect attempts after a failed one before queued packets are dropped"),
    key("transport.framing", kRestart, enumeration<kFramingNames, kM, &M::framing>(),
        "how a SEND says what it carries: auto (the device's transport: the immediate on "
        "InfiniBand and RoCE, an in-band header on iWARP), immediate, or header (for a provider "
        "that misreports itself); a connection uses the header when either end asks for it"),
    key("transport.credits", kRestart, integer<kM, &M::credits>(4, 32768, "receive WRs"),
        "on a device without RNR retry (iWARP): SRQ receive buffers reserved per connection "
        "and granted to its peer; max_connections becomes at most srq.size / credits - 1"),
    key("transport.offload", kRestart, boolean<kM, &M::offload>(),
        "TUN with IFF_VNET_HDR, TSO and checksum offload; GSO super-packets up to 64 KiB travel "
        "as one SEND to peers that negotiate it; receive buffers and send slots become 64 KiB"),
    key("transport.poll_us", kRestart, integer<&Config::poll_us>(0, 100000, "microseconds"),
        "busy-poll: after handling events, keep polling (TUN, CQ, every source) this long "
        "before sleeping; trades a core's time for wakeup latency; 0 = off"),

    key("auth.mode", kLive, enumeration<kAuthModeNames, &Config::auth, &AuthConfig::mode>(),
        "peer proofs: off, optional (a peer that offers no proof is admitted, counted and "
        "logged; a wrong proof is refused) or required (no packet without a good proof)"),
    key("auth.overlay", kRestart, string<overlay_id, &Config::auth, &AuthConfig::overlay>(),
        "the overlay id every proof binds: nodes of another overlay are refused (reason "
        "overlay) even with the same key"),
    key("auth.keys", kLive, auth_keys(),
        "cluster keys {id = 1..255, file = PATH}: the first proves, all are accepted; a file "
        "without '/' is a systemd credential ($CREDENTIALS_DIRECTORY); a reload re-reads them "
        "and tears down connections proven with a key no longer listed"),

    key("log.level", kLive, enumeration<kLevelNames, &Config::log_level>(),
        "log level; rcnetctl log-level changes it until the next reload"),
    key("log.target", kRestart, enumeration<kLogTargets, &Config::log_target>(),
        "auto (journal when JOURNAL_STREAM is set, else stderr), journal, stderr"),

    key("ctl.socket", kRestart, string<socket_path, &Config::ctl_socket>(),
        "absolute path of the ctl Unix socket"),
    key("ctl.group", kRestart, string<group_name, &Config::ctl_group>(),
        "group whose members may run read-only rcnetctl commands"),
};

}  // namespace

namespace detail {

void read_keys(Reader& r, Config& c) {
  std::vector<std::string_view> sections;
  for (const Key& k : kKeys) {
    if (std::find(sections.begin(), sections.end(), k.section()) == sections.end())
      sections.push_back(k.section());
  }
  r.only_keys(r.root(), "", sections);
  for (std::string_view sec : sections) {
    const toml::table* tbl = r.section(sec);
    std::vector<std::string_view> names;
    for (const Key& k : kKeys) {
      if (k.section() == sec)
        names.push_back(k.name());
    }
    if (tbl != nullptr)
      r.only_keys(*tbl, sec, names);
    for (const Key& k : kKeys) {
      if (k.section() != sec)
        continue;
      const std::string full(k.dotted);
      if (const toml::node* n = r.find(tbl, full, k.name())) {
        Field f{r, *n, full, k};
        k.read(f, c);
      }
    }
    for (const Key& k : kKeys) {
      if (k.section() != sec || !k.required)
        continue;
      if (k.dotted == "node.address") {
        // node.interface stands in for it.
        if (!r.present("node.address") && !r.present("node.interface")) {
          r.fail(tbl != nullptr ? r.origin_of(*tbl) : r.nowhere(), "node.address",
                 "required key is missing: set this node's underlay address, or node.interface "
                 "= \"ib0\", the interface that holds it");
        }
        continue;
      }
      r.require(std::string(k.dotted), tbl);
    }
  }
}

}  // namespace detail

Value Key::default_value() const {
  return required ? Value() : get(Config());
}

std::span<const Key> keys() {
  return kKeys;
}

const Key* find_key(std::string_view dotted) {
  for (const Key& k : kKeys) {
    if (k.dotted == dotted)
      return &k;
  }
  return nullptr;
}

}  // namespace rcnet::config