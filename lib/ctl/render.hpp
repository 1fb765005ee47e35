// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetctl's human output: a reply's "data" (protocol.hpp) as aligned text
// tables in the style of iproute2 and ss. `-j` prints the JSON instead.
//
// Renderers read JSON that came over a socket, so they never trust it: a
// missing or mistyped field prints as "-", and nothing throws.

#include <cstdint>
#include <string>

#include "ctl/protocol.hpp"

namespace rcnet::ctl {

// Human durations from milliseconds: "350ms", "1.2s", "3m04s", "2h05m",
// "3d04h". Negative or non-finite → "-".
std::string format_duration_ms(double ms);
// Human sizes in IEC units: "512B", "1.5KiB", "1.5MiB", "2.0GiB", "1.0TiB".
std::string format_bytes(std::uint64_t bytes);

// One renderer per command, named by its row in kCommands (commands.hpp);
// each returns '\n'-terminated lines.
// status: a first line "rcnetd VERSION  pid N  up UPTIME  tun NAME ADDR
// (netns NS)  log LEVEL [STOPPING]" when `data` has the daemon's "daemon"
// object (the ctl server adds it), then the manager's counts, and a line
// "rails: 0 up, 1 down  mode MODE  peers without a redundant link N" when
// it has "rails".
std::string render_status(const json& data);
// rails: "mode MODE", then columns RAIL ADDRESS (addr:port) DEVICE/PORT STATE
// LINKS CARRYING TX RX (bytes) CHANGED (time since the last change) CAUSE,
// then "peers without a redundant link: N".
std::string render_rails(const json& data);
// Columns: NODE RAIL UNDERLAY OVERLAY INCARNATION STATE QUEUED CONN LAST-TRY
// RESULT RETRY CARRIES; one row per peer per rail. LAST-TRY is how long ago
// the last connection attempt started, RESULT how it ended (and how long
// ago), RETRY when the next attempt goes out; CARRIES "*" on the rail whose
// link carries the peer's traffic now, blank otherwise.
std::string render_peers(const json& data);
// route get: "ADDR via peer NODE overlay O rail R underlay U state S", a line
// with how the rail was chosen, and on a node with rails one line per rail;
// or "ADDR: no route: REASON".
std::string render_route(const json& data);
// reload: "reload applied: KEY..." or "reload applied: no key changed".
std::string render_reload(const json& data);
// Columns: PEER RAIL ADDR OVERLAY QPN RQPN STATE GSO IN-STATE AGE IDLE TX RX,
// TX and RX as "packets/bytes".
std::string render_connections(const json& data);
// Columns: PEER RAIL ADDR QPN RQPN STATE GSO IN-STATE AGE IDLE TX RX REASON.
std::string render_qps(const json& data);
std::string render_srq(const json& data);
// "name value help", one counter per line.
std::string render_stats(const json& data);
// The Prometheus text exposition format (version 0.0.4) of a "stats" reply
// and a "status" reply: every counter as rcnet_<name>_total with its help
// text as HELP, except the failovers_<cause> counters, which are one metric
// rcnet_failovers_total{cause="<cause>"}; gauges: rcnet_qps{state="..."}
// (QPs by state, teardown stages included), rcnet_connections, rcnet_peers,
// rcnet_srq_{size,posted,limit}, rcnet_send_slots{kind="total"|"free"},
// rcnet_up, and from the status' rails: rcnet_rail_up{rail,device} (1 when
// the rail's state is up), rcnet_rail_state{rail,device,state} (1 for its
// state, 0 for the others), rcnet_rail_links and rcnet_rail_carrying
// {rail,device}, rcnet_peers_without_redundancy; the rails' traffic as
// counters rcnet_rail_{tx,rx}_{packets,bytes}_total{rail,device}. Lines end
// in '\n'; the output is what node-exporter's textfile collector reads.
std::string render_prometheus(const json& stats, const json& status);
// audit: "audit ok|MISMATCH: daemon N QPs, kernel M QPs[, seam K QPs]", then
// one line per non-empty list: kernel_only, daemon_only, and the daemon's
// seam_only / manager_only (seam against manager).
std::string render_audit(const json& data);
// The running config as rcnetd.toml text, one "section.key = value" line
// per key in the key table's order (config::keys(), then keys this rcnetctl
// does not know), each with a comment: the unit, and "live" or "needs a
// restart" (what a reload does with a change). An unset key is a comment
// line, so the whole output parses as a config file.
std::string render_config(const json& data);
// disconnect, reap, log-level: one line saying what happened
// ("disconnecting peer N", "reaped N connections", "log level A -> B").
std::string render_disconnect(const json& data);
std::string render_reap(const json& data);
std::string render_log_level(const json& data);
// monitor's ok reply: "monitoring rcnetd's connection events".
std::string render_monitor(const json& data);

// monitor: one line per pushed event (protocol.hpp event_json), local time:
//   "12:00:01.234 QPN 17 peer 10.99.0.2 ESTABLISHED -> DISCONNECTING (DREQ sent)"
//   "12:00:01.234 QPN 17 peer 10.99.0.2 teardown from ESTABLISHED: idle ... [reaped_idle]"
//   "12:00:01.234 peer 10.99.0.5 REJ collision (detail)"
//   "12:00:01.234 QPN 17 peer 10.99.0.2 EVICTED (evicted: least recently used ...)"
//   "12:00:01.234 rail 1 down (IBV_EVENT_PORT_ERR)"
//   "12:00:01.234 failover peer 10.99.0.2 rail 0 -> 1 (carrier lost)"
//   "12:00:01.234 failback peer 10.99.0.2 rail 1 -> 0 (...)"
// A QP not created yet shows "conn ID" instead of "QPN N". A connection's
// event on a rail other than 0 says so after the peer: "peer 10.99.1.2 rail 1".
std::string render_event(const json& event);
// The last line of a monitor: "monitor ended: MESSAGE" (the daemon's end line,
// or "rcnetd closed the connection" when `message` is empty).
std::string render_end(const std::string& message);

// The renderer of `c`'s row; for a value that is no enumerator, the JSON.
std::string render(Command c, const json& data);

}  // namespace rcnet::ctl
