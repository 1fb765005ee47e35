#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Cluster-boot prober and report (issue 23), one process for the whole lab.

  cluster_probe.py probe N RESULTS TIMEOUT_S
      Opens a raw ICMP socket in every node's netns (setns(2) into
      /run/netns/node<i>, socket(2), back), prints "ready", then waits until
      every rcnetd-<i>.log in RESULTS has its "TUN rc0 up" line and sends an
      ICMP echo from every node to every other node's overlay address
      (10.100.0.<j>) at once: N x (N - 1) directed pairs. An unanswered pair
      is sent again every RESEND_S; a failed sendto(2) is retried at the next
      tick. Writes RESULTS/cluster-pairs.txt, one line per pair:
        FROM TO answered(0/1) sends send_errors first_send_ms answer_ms rtt_ms
        echo  (the attempt whose reply came first: 0 = the first echo, held
        while the connection was set up, not lost; -1 = none)
      (times in epoch ms, the clock of the daemons' log timestamps).
      One process instead of one `ping` per pair: under TCG each exec
      through `ip netns exec` costs a good part of a second, and 240 of
      them measured the exec's, not rcnet's.
  cluster_probe.py report N RESULTS
      Reads cluster-pairs.txt and the daemons' logs and prints "key value"
      lines: the probe's figures from the last daemon's "TUN rc0 up", the
      daemons' own (every "connected to peer" line, i.e. ESTABLISHED on
      both sides), the setup times they logged, and the counters at exit
      summed over every daemon (connect failures, REJs by reason).
"""
import ctypes
import datetime
import os
import re
import select
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
RESEND_S = 1.0  # as ping(8)
TICK_S = 0.05
ECHO_ID_BASE = 0x5200  # ICMP id: ECHO_ID_BASE + FROM node


def log_ms(line):
    """Epoch ms of a daemon log line ("2026-11-26T12:13:28.116 [rcnetd] ...")."""
    ts = line.split(" ", 1)[0]
    d = datetime.datetime.fromisoformat(ts)
    return int(time.mktime(d.timetuple()) * 1000) + d.microsecond // 1000


def now_ms():
    return time.time_ns() // 1_000_000


def in_netns(name, fn):
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        try:
            return fn()
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(home)
        os.close(target)


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def echo(ident, seq):
    payload = struct.pack("!Q", time.time_ns())
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(hdr + payload), ident, seq) + payload


def cpu_snapshot():
    """CPU seconds so far: the whole guest busy (/proc/stat), this prober,
    and every rcnetd (utime + stime of each /proc/PID/stat whose comm is
    rcnetd): where the guest's CPU went while probing."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = (sum(v[:8]) - v[3] - v[4]) / hz  # all but idle and iowait
    t = os.times()
    daemons = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if st[st.index("(") + 1 : st.rindex(")")] == "rcnetd":
            rest = st[st.rindex(")") + 2 :].split()
            daemons += (int(rest[11]) + int(rest[12])) / hz
    return time.monotonic(), busy, t.user + t.system, daemons


def rc0_up_ms(results, i):
    try:
        with open(f"{results}/rcnetd-{i}.log", errors="replace") as f:
            for line in f:
                if "TUN rc0 up" in line:
                    return log_ms(line)
    except OSError:
        pass
    return None


def probe(n, results, timeout_s):
    socks = {}
    for i in range(1, n + 1):
        socks[i] = in_netns(
            f"node{i}",
            lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        )
        socks[i].setblocking(False)
    print("ready", flush=True)
    # Wait for every daemon's TUN (its listener is up before it).
    up = {}
    deadline = time.monotonic() + timeout_s
    while len(up) < n and time.monotonic() < deadline:
        for i in range(1, n + 1):
            if i not in up:
                t = rc0_up_ms(results, i)
                if t is not None:
                    up[i] = t
        if len(up) < n:
            time.sleep(0.02)
    if len(up) < n:
        print(f"not every rc0 came up: {sorted(set(range(1, n + 1)) - set(up))}", flush=True)
    print(f"all up, probing (last rc0 up {max(up.values(), default=0)})", flush=True)
    pairs = [(i, j) for i in range(1, n + 1) for j in range(1, n + 1) if i != j]
    st = {p: {"sends": 0, "errs": 0, "first": 0, "answer": 0, "rtt": 0.0, "next": 0.0, "idx": -1} for p in pairs}
    left = set(pairs)
    cpu0 = cpu_snapshot()
    by_fd = {s.fileno(): i for i, s in socks.items()}
    poller = select.poll()
    for s in socks.values():
        poller.register(s, select.POLLIN)
    deadline = time.monotonic() + timeout_s
    while left and time.monotonic() < deadline:
        mono = time.monotonic()
        for p in sorted(left):
            e = st[p]
            if e["next"] > mono:
                continue
            i, j = p
            seq = ((e["sends"] + e["errs"]) & 0x3FF) << 6 | j
            try:
                socks[i].sendto(echo(ECHO_ID_BASE + i, seq), (f"10.100.0.{j}", 0))
                e["sends"] += 1
                if not e["first"]:
                    e["first"] = now_ms()
                e["next"] = mono + RESEND_S
            except OSError:
                e["errs"] += 1
                e["next"] = mono + TICK_S
        for fd, _ in poller.poll(TICK_S * 1000):
            i = by_fd[fd]
            while True:
                try:
                    pkt = socks[i].recv(2048)
                except (BlockingIOError, InterruptedError):
                    break
                ihl = (pkt[0] & 0x0F) * 4
                if len(pkt) < ihl + 16:
                    continue
                typ, _, _, ident, seq, sent_ns = struct.unpack_from("!BBHHHQ", pkt, ihl)
                if typ != 0 or ident != ECHO_ID_BASE + i:
                    continue
                p = (i, seq & 0x3F)
                if p in left:
                    left.discard(p)
                    st[p]["answer"] = now_ms()
                    st[p]["rtt"] = (time.time_ns() - sent_ns) / 1e6
                    st[p]["idx"] = seq >> 6
    cpu1 = cpu_snapshot()
    with open(f"{results}/cluster-cpu.txt", "w") as f:
        f.write(f"probe_window_ms {int((cpu1[0] - cpu0[0]) * 1000)}\n")
        f.write(f"probe_window_cpus {os.cpu_count()}\n")
        f.write(f"probe_window_cpu_busy_s {cpu1[1] - cpu0[1]:.2f}\n")
        f.write(f"probe_window_cpu_prober_s {cpu1[2] - cpu0[2]:.2f}\n")
        f.write(f"probe_window_cpu_rcnetd_s {cpu1[3] - cpu0[3]:.2f}\n")
    with open(f"{results}/cluster-pairs.txt", "w") as f:
        for p in pairs:
            e = st[p]
            f.write(
                f"{p[0]} {p[1]} {int(e['answer'] > 0)} {e['sends']} {e['errs']} "
                f"{e['first']} {e['answer']} {e['rtt']:.1f} {e['idx']}\n"
            )
    print(f"probe done: {len(pairs) - len(left)} of {len(pairs)} answered", flush=True)
    return 0 if not left else 1


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0


def report(n, results):
    out = []
    up = {i: rc0_up_ms(results, i) for i in range(1, n + 1)}
    last_up = max((t for t in up.values() if t), default=0)
    first_up = min((t for t in up.values() if t), default=0)
    out.append(("nodes", n))
    out.append(("pairs", n * (n - 1)))
    out.append(("rc0_up_spread_ms", last_up - first_up))
    try:
        with open(f"{results}/cluster-spawn-ms") as f:
            # From the first rcnetd's fork until the last one's TUN is up:
            # each daemon's own start (device, SRQ and buffer registration).
            spawn = int(f.read())
            out.append(("spawn_to_last_rc0_up_ms", last_up - spawn))
    except (OSError, ValueError):
        spawn = 0
    pairs = []
    try:
        with open(f"{results}/cluster-pairs.txt") as f:
            for line in f:
                a = line.split()
                pairs.append([int(x) for x in a[:7]] + [float(a[7]), int(a[8])])
    except OSError:
        pass
    ans = [p for p in pairs if p[2]]
    out.append(("pairs_answered", len(ans)))
    if ans:
        first_send = min(p[5] for p in pairs if p[5])
        after = [p[6] - last_up for p in ans]
        out.append(("probe_first_send_ms_after_last_start", first_send - last_up))
        out.append(("all_answered_ms_after_last_start", max(after)))
        if spawn:
            out.append(("all_answered_ms_after_spawn", max(p[6] for p in ans) - spawn))
        out.append(("answered_ms_after_last_start_p50", pct(after, 0.5)))
        out.append(("answered_ms_after_last_start_p90", pct(after, 0.9)))
        out.append(("answered_by_first_echo", sum(1 for p in ans if p[8] == 0)))
        out.append(("echoes_sent", sum(p[3] for p in pairs)))
        out.append(("echo_send_errors", sum(p[4] for p in pairs)))
        out.append(("rtt_ms_p50", round(pct([p[7] for p in ans], 0.5), 1)))
    # The daemons' view: when each node logged each peer ESTABLISHED (first
    # time), and the CONNECTING -> ESTABLISHED times they logged.
    est = {}
    setup = []
    retry_exc = 0
    addr_re = re.compile(r"connected to peer 10\.99\.0\.(\d+):")
    setup_re = re.compile(r"-> ESTABLISHED after ([0-9.]+) ms")
    for i in range(1, n + 1):
        try:
            with open(f"{results}/rcnetd-{i}.log", errors="replace") as f:
                for line in f:
                    if "SIGTERM: stopping" in line:
                        break
                    if "send completion RETRY_EXC_ERR" in line:
                        retry_exc += 1
                    m = addr_re.search(line)
                    if m:
                        est.setdefault((i, int(m.group(1))), log_ms(line))
                    m = setup_re.search(line)
                    if m:
                        setup.append(float(m.group(1)))
        except OSError:
            pass
    out.append(("daemon_pairs_established", len(est)))
    # ESTABLISHED QPs torn down before the stop because the transport gave
    # up (no ACK within ack_timeout x retries): each is set up again.
    out.append(("retry_exc_teardowns", retry_exc))
    if est:
        after = [t - last_up for t in est.values()]
        out.append(("daemon_all_established_ms_after_last_start", max(after)))
        out.append(("daemon_established_ms_after_last_start_p50", pct(after, 0.5)))
    # The probe's own share: from the later of the two daemons' ESTABLISHED
    # for a pair until its echo was answered (TUN, queue flush, ICMP reply,
    # the prober's poll loop).
    lag = [p[6] - max(est[(p[0], p[1])], est[(p[1], p[0])]) for p in ans
           if (p[0], p[1]) in est and (p[1], p[0]) in est]
    if lag:
        out.append(("answer_ms_after_both_established_p50", pct(lag, 0.5)))
        out.append(("answer_ms_after_both_established_max", max(lag)))
    if setup:
        out.append(("setup_ms_p50", round(pct(setup, 0.5), 1)))
        out.append(("setup_ms_max", round(max(setup), 1)))
    try:
        with open(f"{results}/cluster-cpu.txt") as f:
            out.extend(tuple(l.split()) for l in f if l.strip())
    except OSError:
        pass
    counters = {}
    for i in range(1, n + 1):
        try:
            with open(f"{results}/rcnetd-{i}.log", errors="replace") as f:
                lines = [l for l in f if "counters at exit" in l]
        except OSError:
            lines = []
        if lines:
            for k, v in re.findall(r"\b(\w+)=(\d+)", lines[-1]):
                counters[k] = counters.get(k, 0) + int(v)
    for c in (
        "connects_started",
        "connects_established",
        "connect_failures",
        "collisions_merged",
        "rejects_received",
        "rejects_received_busy",
        "connects_paced",
        "slow_destroys",
    ):
        out.append((c, counters.get(c, 0)))
    for k in sorted(counters):
        if k.startswith("rejects_sent_"):
            out.append((k, counters[k]))
    for k, v in out:
        print(f"{k} {v}")
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "probe":
        return probe(int(argv[2]), argv[3], float(argv[4]))
    if len(argv) >= 4 and argv[1] == "report":
        return report(int(argv[2]), argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
