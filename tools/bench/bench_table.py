#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The ratio table of a saved rcnet-bench results directory.

    bench_table.py RESULTS

Reads RESULTS/bench-raw.txt ("key value" lines from tests/lab/bench/bench.sh),
RESULTS/anchors.json (the perftest anchors), RESULTS/sim.json (rcnet-bench-sim,
when it ran) and the iperf3-*.json files beside them; prints the table
(metric | unit | rcnet | anchor (name) | ratio | goal | met) and its notes, and
writes RESULTS/bench.json (the rows), RESULTS/bench-raw.json (raw figures,
anchors, notes) and RESULTS/bench-chart.dat (one line per goal row, for the
chart). A goal applies to the ratio when the row has an anchor, else to the
rcnet figure; a goal row that was not measured did not meet its goal.
"""
import json
import os
import sys


def load_raw(res):
    raw = {}
    try:
        for line in open(os.path.join(res, "bench-raw.txt")):
            k, _, v = line.strip().partition(" ")
            if k:
                raw[k] = v
    except FileNotFoundError:
        pass
    return raw


def load(res, name):
    try:
        return json.load(open(os.path.join(res, name)))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else None


def spread(values):
    """'min-max (n N)' of the values that were measured, for the notes."""
    v = sorted(x for x in values if x is not None)
    return f"{fmt(v[0])}-{fmt(v[-1])} (n {len(v)})" if v else "- (n 0)"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def half(v, scale=1.0):
    return v * scale / 2 if v is not None else None


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 1 else f"{v:.3f}"


def met(goal, value):
    if goal is None:
        return None
    if value is None:
        return False  # a goal row that was not measured did not meet it
    op, g = goal.split()
    return value >= float(g) if op == ">=" else value <= float(g)


class Table:
    """The rows in order, and the notes printed under them."""

    def __init__(self):
        self.rows, self.notes = [], []

    def row(self, metric, unit, rcnet, anchor=None, anchor_name=None, goal=None, note=None,
            r=...):
        """The goal applies to the ratio when the row has an anchor, else to rcnet.
        r: the row's ratio when it is not rcnet / anchor (a median of
        same-boot or same-pair ratios, say; None: not measured)."""
        if r is ...:
            r = ratio(rcnet, anchor) if anchor_name else None
        self.rows.append({"metric": metric, "unit": unit, "rcnet": rcnet, "anchor": anchor,
                          "anchor_name": anchor_name, "ratio": r, "goal": goal,
                          "met": met(goal, r if anchor_name else rcnet)})
        if note:
            self.notes.append(f"{metric}: {note}")


E_TYP, E_MIN = "ib_send_lat -e typical", "ib_send_lat -e min"


def latency_rows(t, raw, anchors):
    lat_e = anchors.get("ib_send_lat_e_us") or {}
    lat_p = anchors.get("ib_send_lat_us") or {}
    if "ping_rc0_A_median_ms" not in raw and "ping_underlay_A_median_ms" not in raw:
        return
    ping_a = num(raw.get("ping_rc0_A_median_ms"))
    t.row("ping -A over rc0, median RTT/2", "us", half(ping_a, 1000), lat_e.get("typical"), E_TYP,
        "<= 2.0", f"{raw.get('ping_rc0_A_count', '?')} per-packet RTTs (ping's per-line output); "
        "one way = RTT/2; 4 wakeups per round trip against ib_send_lat -e's 2")
    t.row("ping -A over rc0, min RTT/2", "us", half(num(raw.get("ping_rc0_A_min_ms")), 1000),
        lat_e.get("min"), E_MIN)
    t.row("ping -A over rc0, median RTT/2 (vs polling)", "us", half(ping_a, 1000),
        lat_p.get("typical"), "ib_send_lat typical (polling)")
    t.row("ping -i 0.2 over rc0 (cold), median RTT/2", "us",
        half(num(raw.get("ping_rc0_cold_median_ms")), 1000), lat_e.get("typical"), E_TYP,
        note="both vCPUs idle between packets: cold wakeups, reference only "
        f"({raw.get('ping_rc0_cold_count', '?')} RTTs)")
    t.row("ping -i 0.2 over rc0 (cold), min RTT/2", "us",
        half(num(raw.get("ping_rc0_cold_min_ms")), 1000), lat_e.get("min"), E_MIN)
    t.row("ping -A over the underlay veth, median RTT/2", "us",
        half(num(raw.get("ping_underlay_A_median_ms")), 1000), lat_e.get("typical"), E_TYP,
        note="netns node1 -> node2 over veth ul_i + bridge rcbr0 (10.98.0.i), no rcnetd; "
        f"{raw.get('ping_underlay_A_count', '?')} RTTs")
    t.row("ping -A over the underlay veth, min RTT/2", "us",
        half(num(raw.get("ping_underlay_A_min_ms")), 1000), lat_e.get("min"), E_MIN)
    u_rc, u_ul = num(raw.get("udp_rr_rc0_median_us")), num(raw.get("udp_rr_underlay_median_us"))
    t.row("UDP RR (python3), rc0 minus underlay, median RTT/2", "us",
        (u_rc - u_ul) / 2 if u_rc is not None and u_ul is not None else None,
        lat_e.get("typical"), E_TYP, "<= 2.0",
        f"the same script over rc0 ({raw.get('udp_rr_rc0_count', '?')} RTTs) and over the "
        f"underlay veth ({raw.get('udp_rr_underlay_count', '?')}), 32-byte datagrams; median "
        f"RTTs {u_rc} and {u_ul} us; min {raw.get('udp_rr_rc0_min_us')} and "
        f"{raw.get('udp_rr_underlay_min_us')} us")
    t.row("UDP RR (python3) over rc0, median RTT/2", "us", half(u_rc), half(u_ul),
        "same script over the underlay veth")


def syscall_rows(t, raw):
    for n, role in ((1, "node1, ping sender"), (2, "node2, echo side")):
        if f"strace_node{n}_syscalls" not in raw:
            continue
        calls = num(raw.get(f"strace_node{n}_syscalls"))
        pk = num(raw.get(f"strace_node{n}_tun_packets"))
        t.row(f"syscalls per forwarded packet, rcnetd {role}", "calls/pkt", ratio(calls, pk),
            goal="<= 6", note=f"strace -f -c during ping -A -c 200: "
            f"{raw.get(f'strace_node{n}_syscalls', '?')} syscalls / "
            f"{raw.get(f'strace_node{n}_tun_packets', '?')} TUN packets (read + written, from its "
            f"counters); the window includes the timer wakeups; top by count: "
            f"{raw.get(f'strace_node{n}_top', '?')}")


def throughput_rows(t, res, raw, anchors):
    bw64 = anchors.get("ib_send_bw_64k_MBps")
    bw_at = anchors.get("ib_send_bw_MBps") or {}
    for mtu in (1500, 9000, 65520):
        for off in ("true", "false"):
            key = f"mtu{mtu}_offload_{off}"
            if f"iperf3_{key}_MBps" not in raw:
                continue
            v = num(raw.get(f"iperf3_{key}_MBps"))
            on = off == "true"
            # Bytes per data SEND of the sender's rcnetd: TCP's super-packets
            # (or MTU-sized packets without offload) as they reached the QP.
            sent = (load(res, f"iperf3-{key}.json").get("end") or {}).get("sum_sent") or {}
            sends = num((raw.get(f"doorbells_{key}_sends_calls") or "").partition("/")[0])
            per_send = ratio(num(sent.get("bytes")), sends)
            t.row(f"TCP iperf3 over rc0, MTU {mtu}, offload {'on' if on else 'off'}", "MB/s", v,
                bw64, "ib_send_bw 64 KiB", ">= 0.7" if on else None,
                f"vs ib_send_bw -s {mtu} ({fmt(bw_at.get(str(mtu)))} MB/s): "
                f"{fmt(ratio(v, bw_at.get(str(mtu))))}; "
                f"{'-' if per_send is None else f'{per_send / 1024:.1f}'} KiB of TCP payload per "
                f"data SEND; softnet drops/rxe send failures/RC retransmissions "
                f"{raw.get(f'loss_{key}_softnet_drops_rxe_send_failures_retries', '?')}; "
                f"GSO sent/segmented on node1 "
                f"{raw.get(f'gso_{key}_sent_segmented', '?')}; rcnetd CPU ticks sender/receiver "
                f"{raw.get(f'cpu_{key}_rcnetd_sender_receiver_ticks', '?')}, guest "
                f"user/sys/idle/irq {raw.get(f'cpu_{key}_guest_user_sys_idle_irq', '?')}")
    rkey = "mtu1500_offload_true_min_tso_segs_44"
    if f"iperf3_{rkey}_MBps" in raw:
        v = num(raw.get(f"iperf3_{rkey}_MBps"))
        sent = (load(res, f"iperf3-{rkey}.json").get("end") or {}).get("sum_sent") or {}
        sends = num((raw.get(f"doorbells_{rkey}_sends_calls") or "").partition("/")[0])
        per_send = ratio(num(sent.get("bytes")), sends)
        t.row("TCP iperf3 over rc0, MTU 1500, offload on, sender tcp_min_tso_segs 44 (reference)",
            "MB/s", v, bw64, "ib_send_bw 64 KiB",
            note="not a default and not the goal row: the same run with the sender's TCP made to "
            "build super-packets of at least 44 segments (net.ipv4.tcp_min_tso_segs, default 2); "
            f"{'-' if per_send is None else f'{per_send / 1024:.1f}'} KiB of TCP payload per data "
            "SEND")
    for mtu in (1500, 9000, 65520):
        if f"iperf3_mtu{mtu}_offload_true_MBps" in raw:
            t.row(f"TCP iperf3 over rc0, MTU {mtu}, offload on (vs SEND of MTU size)", "MB/s",
                num(raw.get(f"iperf3_mtu{mtu}_offload_true_MBps")), bw_at.get(str(mtu)),
                f"ib_send_bw -s {mtu}")
    if "iperf3_underlay_MBps" in raw:
        t.row("TCP iperf3 over the underlay veth", "MB/s", num(raw.get("iperf3_underlay_MBps")),
            bw64, "ib_send_bw 64 KiB",
            note="netns node1 -> node2 over veth + bridge, MTU 1500, kernel TSO/GRO; reference")


def udp_rows(t, raw):
    """The UDP stream of bench.sh (udp_stream): UDP GSO super-packets over
    rc0 against the same sender sending one datagram per call, same
    connection, same boot. Where rc0 has USO (Linux 6.2+) the super-packet
    reaches rcnetd whole; on 6.1 the kernel cuts it first. No goal here: the
    goal compares kernels (bench_table.py --compare of a run on each)."""
    if "udp_rc0_gso_MBps" not in raw:
        return
    uso = raw.get("udp_rc0_uso") == "1"
    t.row("UDP stream over rc0, MTU 1500, GSO (rc0's gso_max_segs datagrams of 1,400 bytes per "
        "send)", "MB/s", num(raw.get("udp_rc0_gso_MBps")), num(raw.get("udp_rc0_plain_MBps")),
        "the same stream, one datagram per send",
        note=f"rc0 {'with' if uso else 'without'} USO, "
        f"{raw.get('udp_rc0_gso_segments', '?')} datagrams per send; datagrams sent/received: GSO "
        f"{raw.get('udp_rc0_gso_sent_received', '?')}, plain "
        f"{raw.get('udp_rc0_plain_sent_received', '?')}; node1's GSO sent whole/segmented/TUN "
        f"reads: GSO {raw.get('udp_rc0_gso_gso_sent_segmented_tun_reads', '?')}, plain "
        f"{raw.get('udp_rc0_plain_gso_sent_segmented_tun_reads', '?')}")


def storm_rate(raw, key, req, auth=False):
    """conn/s of the rcnet storm KEY (raw keys rcnet_KEY_*): only when every
    requested connection was made and no attempt failed. auth: a storm with
    peer proofs ends at the later of the hub's last ESTABLISHED and the
    clients' last proof SEND completed, and has a rate only if the hub
    counted every proof."""
    n = num(raw.get(f"rcnet_{key}_established"))
    ms = num(raw.get(f"rcnet_{key}_connect_ms"))
    fails = num(raw.get(f"rcnet_{key}_connect_failures"))
    if auth:
        end = num(raw.get(f"rcnet_{key}_proof_client_end_ms"))
        if num(raw.get(f"rcnet_{key}_hub_auth_proven")) != req or end is None or ms is None:
            return None
        ms = max(ms, end)
    return n / ms * 1000 if n and ms and n == req and not fails else None


def ucm_rate(raw, key, req):
    """conn/s of the ucmatose storm KEY (raw key KEY_connect_ms)."""
    ms = num(raw.get(f"{key}_connect_ms"))
    return req / ms * 1000 if req and ms else None


def setup_rows(t, raw):
    """The setup rate against ucmatose: the symmetric storm (the goal row) and
    the old rcnet-bench-load figure beside it."""
    req = num(raw.get("connections_requested"))
    nodes = int(num(raw.get("client_nodes")) or 0)
    uc_ms = num(raw.get("ucmatose_connect_ms"))
    uc_note = "ucmatose: first client's 'connecting' -> server's 'disconnecting' (all accepted)"
    if uc_ms is None:
        uc_ms = num(raw.get("ucmatose_total_ms"))
        uc_note = "ucmatose: whole client run (connect + disconnect)"
    if raw.get("ucmatose_connect_start_spread_ms"):
        uc_note += (f" (its clients' 'connecting' lines spread over "
                    f"{raw['ucmatose_connect_start_spread_ms']} ms)")
    if raw.get("ucmatose_ok") == "0":
        uc_note += "; ucmatose exited non-zero"
    if raw.get("profile_guest_kernel"):
        uc_note += ("; perf record -a profiled one more pair after these (storm-*.txt; its "
                    "times, *_prof_* in bench-raw, are not in the rows)")
    uc_rate = req / uc_ms * 1000 if req and uc_ms else None
    what = f"{int(req or 0)} connections from {nodes} nodes"
    # Repeated pairs (bench.sh ARG 7): the goal moves to the medians.
    reps = sorted(int(k[len("rcnet_sym_r"):-len("_established")]) for k in raw
                  if k.startswith("rcnet_sym_r") and k.endswith("_established")
                  and k[len("rcnet_sym_r"):-len("_established")].isdigit())
    if reps:
        pairs = [(storm_rate(raw, "sym", req), ucm_rate(raw, "ucmatose", req))] + [
            (storm_rate(raw, f"sym_r{r}", req), ucm_rate(raw, f"ucmatose_r{r}", req))
            for r in reps]
        rc_all = [p[0] for p in pairs]
        uc_all = [p[1] for p in pairs]
        ratios = [ratio(a, b) for a, b in pairs]
        rc_med = median(rc_all) if None not in rc_all else None
        uc_med = median(uc_all) if None not in uc_all else None
        r_med = median(ratios) if None not in ratios else None
        t.row(f"setup rate, {what} (symmetric client, median of {len(pairs)} pairs' ratios)",
            "conn/s", rc_med, uc_med, f"ucmatose, median of {len(pairs)}", ">= 0.9",
            "pairs of storms in one boot, alternating which goes first; the ratio is the median "
            f"of the pairs' ratios (spread {spread(ratios)}); rcnet conn/s spread "
            f"{spread(rc_all)}, ucmatose {spread(uc_all)}; per pair rcnet/ucmatose conn/s and "
            "ratio: " + "; ".join(
                f"{fmt(a)}/{fmt(b)} = {fmt(ratio(a, b))}" for a, b in pairs) +
            "; a run with a connection not made or a failed attempt has no rate, and then the "
            "median is not taken", r=r_med)
    auth_rows(t, raw, req, what, reps)
    # The symmetric storm (the goal row unless repeated); with a second
    # rcnetd (bench.sh ARG 6) also its run and the first one's again (A, B,
    # A), no goal.
    for key, label, goal in (("sym", "symmetric client", None if reps else ">= 0.9"),
                             ("sym_b", "symmetric client, rcnetd B", None),
                             ("sym_a2", "symmetric client, rcnetd A again", None),
                             ("sym_log9p", "symmetric client, hub log on the 9p share", None)):
        if key != "sym" and f"rcnet_{key}_established" not in raw:
            continue
        n = num(raw.get(f"rcnet_{key}_established"))
        rate = storm_rate(raw, key, req)
        binary = f" ({raw[f'rcnet_{key}_rcnetd']})" if raw.get(f"rcnet_{key}_rcnetd") else ""
        t.row(f"setup rate, {what} ({label})", "conn/s", rate, uc_rate,
            "ucmatose, same count and nodes", goal,
            f"rcnet-bench-symload{binary}, one process per client node, timed as ucmatose's: "
            "go (every client has made its ids) -> the hub's last ESTABLISHED (RTU "
            f"read; the clients' last REP read at {raw.get(f'rcnet_{key}_connect_client_end_ms', '?')}"
            f" ms), {int(n or 0)} of {int(req or 0)} made, "
            f"{raw.get(f'rcnet_{key}_in_service', '?')} in service, "
            f"{raw.get(f'rcnet_{key}_connect_failures', '?')} connect failures "
            f"({raw.get(f'rcnet_{key}_failures') or 'none'}), hub CPU "
            f"{raw.get(f'rcnet_{key}_hub_cpu_s', '?')} s; " + uc_note)
    # The same symmetric clients into ucmatose's server (only the hub differs).
    if "ucmatose_symclient_connect_ms" in raw or "ucmatose_symclient_established" in raw:
        rate = storm_rate(raw, "sym", req)
        un = num(raw.get("ucmatose_symclient_established"))
        ums = num(raw.get("ucmatose_symclient_connect_ms"))
        ufails = num(raw.get("ucmatose_symclient_connect_failures"))
        urate = un / ums * 1000 if un and ums and un == req and not ufails else None
        t.row(f"setup rate, {what} (symmetric client into each hub)", "conn/s", rate, urate,
            "ucmatose server, same clients and addresses",
            note="rcnet-bench-symload from the same 1000 addresses into rcnetd (the first "
            "symmetric run) and into ucmatose's server (--any-rep), both go -> the hub has them "
            f"all; ucmatose's server: {int(un or 0)} made, "
            f"{raw.get('ucmatose_symclient_connect_failures', '?')} failed")
    if "rcnet_established" not in raw:
        return
    n = num(raw.get("rcnet_established"))
    rc_ms = num(raw.get("rcnet_connect_ms"))
    rc_rate = n / rc_ms * 1000 if n and rc_ms and n == req else None
    t.row(f"setup rate, {what} (old: a cm::Manager per address)", "conn/s", rc_rate, uc_rate,
        "ucmatose, same count and nodes",
        note="rcnet-bench-load, one cm::Manager (PD, CQ, SRQ, buffer pools, event channel) per "
        f"address: go (managers up) -> last ESTABLISHED, {int(n or 0)} of {int(req or 0)} made, "
        f"{raw.get('rcnet_in_service', '?')} still in service, client retry_count "
        f"{raw.get('load_retry_count', '?')}; the figure before the symmetric client, kept beside "
        "it")


def auth_rows(t, raw, req, what, reps):
    """Peer proofs' cost at setup (bench.sh sym_storm *_auth*): the same
    symmetric storm into a hub with auth.mode "required", every client
    proving the key, against the storm without auth and against ucmatose,
    run as triples in one boot. A proven storm ends at the later of the
    hub's last ESTABLISHED and the clients' last proof SEND completed; it
    has a rate only when every connection was made and the hub counted
    every proof."""
    if "rcnet_sym_auth_established" not in raw:
        return

    keys = [("sym_auth", "sym", "ucmatose")] + [
        (f"sym_auth_r{r}", f"sym_r{r}", f"ucmatose_r{r}") for r in reps
        if f"rcnet_sym_auth_r{r}_established" in raw]
    triples = [(storm_rate(raw, a, req, auth=True), storm_rate(raw, s, req), ucm_rate(raw, u, req))
               for a, s, u in keys]
    au = [x[0] for x in triples]
    sy = [x[1] for x in triples]
    uc = [x[2] for x in triples]
    r_sym = [ratio(a, b) for a, b, _ in triples]
    r_ucm = [ratio(a, c) for a, _, c in triples]

    def med(v):
        return median(v) if None not in v else None

    k = len(triples)
    per = "; ".join(f"{fmt(a)}/{fmt(b)}/{fmt(c)}" for a, b, c in triples)
    proofs = ", ".join(f"{raw.get(f'rcnet_{a}_hub_auth_proven', '?')}" for a, _, _ in keys)
    common = (f"storms in one boot, each taking each place in turn; per storm auth/no auth/ucmatose "
              f"conn/s: {per}; proofs counted by the hub per auth storm: {proofs}; an auth storm "
              "ends at the later of the hub's last ESTABLISHED and the clients' last proof SEND "
              "completed (the hub verifies that message after it); a storm with a connection not "
              "made, a failed attempt or a proof not counted has no rate, and then no median")
    t.row(f"setup rate, {what} (symmetric client, auth required, median of {k})", "conn/s",
        med(au), med(sy), f"the same without auth, median of {k}", ">= 0.9",
        f"the ratio is the median of the same triple's ratios (spread {spread(r_sym)}); auth "
        f"conn/s spread {spread(au)}, without {spread(sy)}; " + common, r=med(r_sym))
    t.row(f"setup rate, {what} (symmetric client, auth required, against ucmatose, median of "
        f"{k})", "conn/s", med(au), med(uc), f"ucmatose, median of {k}", ">= 0.9",
        f"the ratio is the median of the same triple's ratios (spread {spread(r_ucm)}); "
        f"ucmatose conn/s spread {spread(uc)}", r=med(r_ucm))


def anchor_sets(path):
    """bond_anchor.sh's summary lines "NAME KIND: key=value ..." as
    {(NAME, KIND): {key: float}}."""
    sets = {}
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return sets
    for line in lines:
        head, _, rest = line.partition(": ")
        parts = head.split()
        if len(parts) != 2 or "=" not in rest:
            continue
        sets[tuple(parts)] = {k: num(v) for k, _, v in
                              (f.partition("=") for f in rest.split()) if num(v) is not None}
    return sets


def failover_rows(t, res):
    """Carrier failover against Linux bonding, one figure per boot
    (rcnet-bench --failover-boots: RESULTS/failover-K/bond-anchor.txt)."""
    boots = sorted((d for d in os.listdir(res) if d.startswith("failover-")
                    and d[len("failover-"):].isdigit()), key=lambda d: int(d[len("failover-"):]))
    if not boots:
        return
    per = []  # (rcnet p50, bond p50, rcnet lost, bond lost) per boot
    for d in boots:
        sets = anchor_sets(os.path.join(res, d, "bond-anchor.txt"))
        rc, bd = sets.get(("rcnet", "down"), {}), sets.get(("bond", "down"), {})
        per.append((rc.get("gap_p50_ms"), bd.get("gap_p50_ms"), rc.get("lost_total"),
                    bd.get("lost_total")))
    ratios = [ratio(a, b) for a, b, _, _ in per]
    measured = [x for x in ratios if x is not None]
    t.row(f"carrier failover, ping gap p50 (median of {len(measured)} of {len(per)} boots)",
        "ms", median([p[0] for p in per if p[0] is not None]),
        median([p[1] for p in per if p[1] is not None]),
        "Linux bonding (active-backup, miimon 100), same boots", "<= 0.5",
        "one boot per figure (tests/lab/rails/bond_anchor.sh, carrier sets only): bonding's "
        "events, then rcnet's, ping -i 0.01; the ratio is the median of the boots' ratios of "
        f"their gap medians (spread {spread(ratios)}); rcnet gap p50 spread "
        f"{spread([p[0] for p in per])}, bonding {spread([p[1] for p in per])}; per boot "
        "rcnet/bonding ms (lost pings): " + "; ".join(
            f"{fmt(a)}/{fmt(b)} ({fmt(c)}/{fmt(e)})" for a, b, c, e in per),
        r=median(measured) if len(measured) == len(per) else None)


def scale_rows(t, raw):
    """Setup rate, memory and idle CPU of the N-connection phases."""
    if "rcnet_established" not in raw and "rcnet_sym_established" not in raw:
        return
    setup_rows(t, raw)
    if "rcnet_established" not in raw:
        return
    r0, r1 = num(raw.get("hub_vmrss_kib_idle0")), num(raw.get("hub_vmrss_kib_idle30"))
    live = num(raw.get("hub_qps_idle30"))
    per = (r1 - r0) / live if r0 is not None and r1 is not None and live else None
    t.row(f"RSS per idle connection ({int(live or 0)} QPs in rdma res)", "KiB", per, goal="<= 16",
        note="(VmRSS after 30 s idle - VmRSS before any connection) / QPs alive on the hub "
        "(rdma res show qp); one SRQ")
    def rss_parts(key):
        out = {}
        for part in (raw.get(key) or "").split(","):
            k, _, v = part.partition(":=")
            if num(v) is not None:
                out[k] = num(v)
        return out
    p0, p1 = rss_parts("hub_rss_parts_idle0"), rss_parts("hub_rss_parts_idle30")
    for k, what in (("RssAnon", "heap and other private memory"),
                    ("RssFile", "file-backed maps: rxe queues mmapped from the uverbs device")):
        if k in p0 and k in p1 and live:
            t.row(f"{k} per idle connection", "KiB", (p1[k] - p0[k]) / live, note=what)
    t.row(f"idle rcnetd CPU over 30 s, {int(live or 0)} connections", "s",
        num(raw.get("hub_idle_cpu_s_per_30s")), goal="<= 0.05",
        note="utime+stime from /proc/PID/stat")
    reg = num(raw.get("hub_registered_bytes"))
    t.row("registered memory (rdma res show mr)", "MiB", reg / 2**20 if reg is not None else None)


def teardown_rows(t, raw):
    """Teardown times, against the configured bounds (reference)."""
    bound = num(raw.get("teardown_bound_ms"))
    if bound is None:
        return
    for path, label in (("dreq", "DREQ received"), ("kill", "peer SIGKILL (idle reap 3 s)")):
        t.row(f"teardown {label}, DISCONNECTING..DESTROYED, path "
            f"{raw.get(f'teardown_{path}_path', '?')}", "ms",
            num(raw.get(f"teardown_{path}_total_ms")), bound,
            "configured bound disconnect+last_wqe+drain", "<= 1.0",
            raw.get(f"teardown_{path}_stages_ms", ""))
    b = 3000 + 500 + bound
    t.row("teardown peer SIGKILL -> QP gone from rdma res", "ms",
        num(raw.get("teardown_sigkill_to_destroyed_ms")), b, "idle 3 s + reaper 0.5 s + bound",
        "<= 1.0")


def sim_rows(t, sim):
    """rcnet-bench-sim (on the host, not under TCG)."""
    if not sim:
        return
    try:
        idle = sim["phases"]["idle"]
        ticks = idle.get("hub_timer_wakeups")
        wall = idle["parts"]["hub_manager"].get("wall_s")
        per_tick = wall * 1000 / ticks if wall is not None and ticks else None
        why = "" if wall is not None else " (no hub wall time in sim.json: run with --time-split)"
        t.row(f"reaper work per tick at {sim['connections'] // 1000}K connections (sim)", "ms",
            per_tick, goal="<= 1",
            note=f"hub manager wall time in the idle phase / its timer wakeups: {wall} s / "
            f"{ticks} wakeups over {idle.get('virtual_s')} virtual s, measured on the host "
            f"(rcnet-bench-sim --time-split){why}")
        d = sim["derived"]
        t.row(f"sim: manager heap per connection, {sim['connections']} connections", "KiB",
            d["hub_heap_bytes_per_connection"] / 1024,
            note="operator new bytes of the hub manager only")
    except (KeyError, TypeError, ZeroDivisionError) as e:
        t.notes.append(f"sim.json present but unreadable: {e!r}")


def closing_notes(t, raw, anchors):
    lat_e = anchors.get("ib_send_lat_e_us") or {}
    lat_p = anchors.get("ib_send_lat_us") or {}
    # An anchor whose typical is far from its min is itself bimodal (vCPU
    # wakeups under TCG on a busy host): the rows against it say less.
    for name, lat in (("ib_send_lat -e", lat_e), ("ib_send_lat", lat_p)):
        typ, mn = num(lat.get("typical")), num(lat.get("min"))
        if typ and mn and typ / mn > 3:
            t.notes.append(f"anchor {name}: typical {typ} us is {typ / mn:.1f}x its min {mn} us "
                           "(bimodal); "
                         "read the min rows beside the median ones")
    reaps = {k: v for k, v in raw.items() if k.startswith("reaped_during_")}
    bad = [k for k, v in reaps.items() if v not in ("0", "")]
    t.notes.append("reaps inside measurements (idle_reaps + dead_peer_reaps deltas, from the "
                 "counters): " + (", ".join(bad) + ": HAD REAPS" if bad
                                  else f"none in {len(reaps)} checked windows"))


def render(rows, notes):
    """The table and its notes on stdout."""
    cols = [("metric", "metric"), ("unit", "unit"), ("rcnet", "rcnet"), ("anchor", "anchor (name)"),
            ("ratio", "ratio"), ("goal", "goal"), ("met", "met")]
    def cell(r, k):
        if k == "anchor":
            return "-" if not r["anchor_name"] else f"{fmt(r['anchor'])} ({r['anchor_name']})"
        if k == "met":
            return "-" if r["met"] is None else "yes" if r["met"] else "NO"
        return fmt(r[k]) if k in ("rcnet", "ratio") else (r[k] or "-")
    render_table([h for _, h in cols], [[cell(r, k) for k, _ in cols] for r in rows], (2, 4))
    print()
    for note in notes:
        print(f"  {note}")


def render_table(headers, table, right=()):
    """One table of text cells on stdout, in this tool's layout: columns as
    wide as their widest cell, the columns numbered in `right` aligned right
    (figures). tools/bench/soak_report.py prints its tables with it too."""
    w = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(headers)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for t in table:
        print("| " + " | ".join(c.rjust(w[i]) if i in right else c.ljust(w[i])
                                 for i, c in enumerate(t)) + " |")


def provider_of(res):
    """The lab's RDMA provider of the run (rcnet-bench writes RESULTS/provider;
    a run from before the file is rxe's)."""
    try:
        return open(os.path.join(res, "provider")).read().strip() or "rxe"
    except OSError:
        return "rxe"


def kernel_of(anchors):
    """The guest kernel the anchors (and rcnet, same boot) ran on, as
    lab_perf_anchors records it (uname -r); None when unknown."""
    return (anchors or {}).get("kernel")


def write_outputs(res, t, raw, anchors, sim):
    provider, kernel = provider_of(res), kernel_of(anchors)
    for r in t.rows:
        r["provider"] = provider
        r["kernel"] = kernel
    json.dump(t.rows, open(os.path.join(res, "bench.json"), "w"), indent=2)
    json.dump({"raw": raw, "anchors": anchors, "notes": t.notes,
               "sim_derived": sim.get("derived") if sim else None},
              open(os.path.join(res, "bench-raw.json"), "w"), indent=2)
    # Chart data: one bar per goal row, its value (the ratio, or the absolute
    # figure when the row has no anchor) over the goal's threshold, so the goal
    # is the line at 1: ">=" rows must reach it, "<=" rows must stay left of it.
    with open(os.path.join(res, "bench-chart.dat"), "w") as f:
        k = 0
        for r in t.rows:
            if r["goal"] is None:
                continue
            v = r["ratio"] if r["anchor_name"] else r["rcnet"]
            g = float(r["goal"].split()[1])
            x = v / g if v is not None and g else None
            label = f"{r['metric']}  [{r['goal']}]".replace('"', "'")
            f.write(f'{k} "{label}" {x if x is not None and x > 0 else "NaN"} '
                    f'{1 if r["met"] else 0} "{fmt(v)}"\n')
            k += 1
    print(f"\n(json: {os.path.join(res, 'bench.json')}, "
          f"raw: {os.path.join(res, 'bench-raw.json')})")


def main(res):
    raw = load_raw(res)
    anchors, sim = load(res, "anchors.json"), load(res, "sim.json")
    t = Table()
    latency_rows(t, raw, anchors)
    syscall_rows(t, raw)
    throughput_rows(t, res, raw, anchors)
    udp_rows(t, raw)
    scale_rows(t, raw)
    teardown_rows(t, raw)
    failover_rows(t, res)
    sim_rows(t, sim)
    closing_notes(t, raw, anchors)
    print(f"provider: {provider_of(res)}, kernel: {kernel_of(anchors) or 'unknown'} "
          "(rcnet and its anchors on the same devices, same boot)")
    render(t.rows, t.notes)
    write_outputs(res, t, raw, anchors, sim)


def compare(dirs):
    """Runs side by side (bench_table.py --compare RESULTS...): each run's
    bench.json as written by main(), one column per run headed by its
    provider and kernel, each cell the row's ratio to that run's own anchor
    (or its absolute figure when the row has no anchor) and, for a goal row,
    whether that run met it. A ratio never compares across boots; the
    columns put side by side what each boot measured against itself."""
    runs = []
    for d in dirs:
        with open(os.path.join(d, "bench.json")) as f:
            rows = json.load(f)
        first = rows[0] if rows else {}
        runs.append((f"{first.get('provider') or 'rxe'} {first.get('kernel') or '?'}",
                     {r["metric"]: r for r in rows}))
    metrics = []
    for _, rows in runs:
        metrics += [m for m in rows if m not in metrics]

    def cell(r):
        if r is None:
            return "(not run)"
        v = r["ratio"] if r["anchor_name"] else r["rcnet"]
        mark = "" if r["met"] is None else " ok" if r["met"] else " NO"
        return fmt(v) + mark

    table = []
    for m in metrics:
        some = next(rows[m] for _, rows in runs if m in rows)
        kind = f"x {some['anchor_name']}" if some["anchor_name"] else some["unit"]
        table.append([m, kind, some["goal"] or "-"] + [cell(rows.get(m)) for _, rows in runs])
    print("each cell: the ratio to that run's own anchor (or the figure, when the row has none); "
          "ok/NO: that run met the goal")
    render_table(["metric", "ratio to / unit", "goal"] + [name for name, _ in runs], table,
                 range(3, 3 + len(runs)))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--compare":
        compare(sys.argv[2:])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: bench_table.py RESULTS | bench_table.py --compare RESULTS...")
