// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The "data" of the ctl replies (protocol.hpp): the manager's snapshot, the
// running config and connection events as JSON, in the conventions of
// protocol.hpp (durations in ms under keys ending "_ms", node ids as
// numbers, incarnations as 16-digit hex strings). Pure; nothing throws but
// allocation.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cm/events.hpp"
#include "cm/snapshot.hpp"
#include "config/config.hpp"
#include "ctl/protocol.hpp"
#include "rdma/seam.hpp"

namespace rcnet::ctl {

// --- The read commands -----------------------------------------------------------------
// status: node, incarnation, local, device, mtu, peer and QP counts, QPs by
// state name (every state, zeros included), send slots, SRQ summary, and
// the rails as the rails command has them ("rails_mode",
// "peers_without_redundancy", "rails"), which the Prometheus export reads.
// "peers" counts peers (distinct node ids), not the per-rail entries of
// Snapshot::peers; "connections" counts links (one per peer per rail).
json status_json(const cm::Snapshot& s);
// The rails of `s`: s.rails, or, when it is empty (a bare Manager's
// snapshot), the one rail the snapshot itself describes: rail 0 on s.local
// and s.device, port 1, "removed" while s.device_removed and "up" otherwise,
// its links the in-service QPs (all carrying), its traffic the manager's
// counters packets_tx, bytes_tx, packets_rx and bytes_rx; no cause, no flaps.
std::vector<cm::RailSnapshot> rails_of(const cm::Snapshot& s);
// One rail: {"rail", "address" (the IP, no port), "port", "device" ("" while
// removed), "device_port", "state" (cm::to_string(RailState)), "cause" (of
// the last change, "" if none), "since_change_ms", "holddown_ms", "flaps",
// "links", "carrying", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes"}.
json rail_json(const cm::RailSnapshot& r);
// rails: {"mode", "peers_without_redundancy", "rails":[rail_json...]} over
// rails_of(s). The one-rail fallback's "since_change_ms" is null (unknown).
json rails_json(const cm::Snapshot& s);
// peers: {"peers":[{node, rail, underlay, overlay, incarnation, queue_depth,
// conn_id, state, carries, attempts, last_attempt_ms, last_result,
// last_result_ms, next_retry_ms}]}, one entry per peer per rail; the last
// four are null when there is none (the _ms ones: how long ago, or for
// next_retry_ms how long until); state is the
// in-service QP's state name (that rail's QP with id conn_id), or null;
// carries says whether that rail's link carries the peer's traffic now
// (without s.rails: whether the entry has a connection in service);
// overlays lists the peer's overlay addresses, one per family of
// tun.address: the one its private data said (overlay), and with `c` and
// both families on the TUN the other one by c's mapping
// (Config::overlay_for); [] when none is known.
json peers_json(const cm::Snapshot& s, const config::Config* c = nullptr);
// One QP: every field of cm::QpSnapshot, state by cm::to_string(ConnState).
json qp_json(const cm::QpSnapshot& q);
// qps: {"qps":[qp_json...]}, every QP in service and in teardown.
json qps_json(const cm::Snapshot& s);
// connections: {"connections":[qp_json + "overlay" + "overlays" (as
// peers_json's)]}, in-service QPs only.
json connections_json(const cm::Snapshot& s, const config::Config* c = nullptr);
// srq: enabled, size, posted, limit, limit_events.
json srq_json(const cm::SrqSnapshot& s);

// A set of counters as [{name, value, help}], in declaration order: any type
// whose for_each(f) calls f(name, value, help) once per counter (cm::Counters
// and the daemon's TunCounters and CtlCounters, each from its X-macro).
template <class Counters>
json counters_json(const Counters& c) {
  json arr = json::array();
  c.for_each([&](std::string_view name, std::uint64_t value, std::string_view help) {
    arr.push_back({{"name", name}, {"value", value}, {"help", help}});
  });
  return arr;
}
// stats: {"counters": counters_json(c)}; the daemon appends its own.
json stats_json(const cm::Counters& c);
// A histogram: {"bounds_s": upper bounds in seconds, "le": cumulative counts
// per bound, "count", "sum_s"}.
json histogram_json(const cm::Histogram& h);
// stats of a snapshot: stats_json(s.counters) and "histograms":
// {"connect_time", "teardown_time"} (histogram_json each).
json stats_json(const cm::Snapshot& s);

// config: the running configuration, one member per row of config::keys(),
// named by the TOML dotted key ("timeouts.idle") and valued as rcnetd.toml
// writes it (config::Value): durations are duration strings ("10s", "1500ms",
// config::format_duration), not milliseconds, so that a value read here can
// be pasted into the file and a key looked up in rcnetd.toml(5) as shown;
// an unset optional key (peers.underlay_prefix) is null; peers.static is a
// list of {"overlay", "underlay"}.
json config_json(const config::Config& c);

// audit: the daemon's QPNs against the kernel's (daemon/rdma_audit.hpp
// compares them; QPN 0 and 1, the special QPs, are left out on the kernel
// side).
struct AuditResult {
  std::vector<rdma::Qpn> kernel_only;  // leaked or unknown to the daemon (sorted)
  std::vector<rdma::Qpn> daemon_only;  // daemon thinks alive, kernel has none (sorted)
  std::size_t daemon_count = 0;
  std::size_t kernel_count = 0;
  bool ok() const { return kernel_only.empty() && daemon_only.empty(); }
};
// {"ok", "daemon_qps", "kernel_qps", "kernel_only":[...], "daemon_only":[...]}
json audit_json(const AuditResult& a);

// route get: where a packet for `dst` would go, from the running config's
// mapping (peers.static, peers.underlay_prefix; Config::peer_endpoint_for
// per rail) and the peers in `s`, for `dst` in either family of tun.address:
// {"address", "node", "overlay" (dst), "overlays" (the peer's address in each
// family of tun.address), "rail" (the
// rail whose link carries the peer's traffic, else the lowest up rail that
// maps it), "underlay" (address:port on that rail), "state" (of its
// connection in service, null for none), "reason" (why there is no route
// when "node" is null; otherwise how far the connection is, null when it
// carries traffic), "rails": [{"rail", "underlay", "state", "carries"}]}.
json route_json(const IpAddr& dst, const config::Config& c, const cm::Snapshot& s);

// --- The mutating commands' results ----------------------------------------------------
json disconnect_json(NodeId node);
// reload: {"applied": [dotted keys whose running value changed]}.
json reload_json(const std::vector<std::string>& applied);
json reap_json(std::size_t reaped);
json log_level_json(config::LogLevel previous, config::LogLevel now);

// --- Monitor ---------------------------------------------------------------------------
// A connection's event:
// {"kind":"state"|"teardown"|"reject"|"evict", "time_ms": wall clock (Unix
// epoch ms), "rail", "conn", "peer_node", "peer_addr" (as in qp_json), "qpn",
// "remote_qpn", "from" (state events only), "to" (the state after the event),
// "reason", "detail" (reject only), "cause" (teardown: the name of its
// journal MESSAGE_ID in log::kMessageIdNames, e.g. "reaped_idle", "other"
// for an id without one, "" for none)}
// A rail's change of state:
// {"kind":"rail", "time_ms", "rail", "state" (the new one, as rails_json
// names it), "cause"}
// A peer's traffic moved to another rail:
// {"kind":"failover", "time_ms", "peer_node", "peer_addr", "from_rail",
// "rail" (the one it moved to), "reason" ("failover" or "failback"), "cause"}
json event_json(const cm::Event& e, std::int64_t wall_ms);

// "0123456789abcdef"
std::string hex64(std::uint64_t v);

}  // namespace rcnet::ctl
