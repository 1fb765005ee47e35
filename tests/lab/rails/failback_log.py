#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Fail-back times of a bond_anchor.sh event set as rcnetd itself logged them.

    failback_log.py RESULTS SET [NODE]
    failback_log.py RESULTS SET [NODE] --failover
    failback_log.py RESULTS removal [NODE] --device

RESULTS/SET-down.windows holds one "T0:T1 ..." line per event (pinglog.py's
windows; T1 is the guest's CLOCK_REALTIME in ms just before the command that
heals: `ip link set up`, the tc filter's removal, `rdma link add`), and
RESULTS/rcnetd-NODE.log (default 1) the daemon's log with its ISO timestamps
(UTC, ms). Prints the times from each T1 to the first "traffic back on rail
0" line after it, in ms, sorted: the fail-back without the 0.3-0.6 s a
polling `rcnetctl` call costs under TCG.

--failover: the other way, from each T0 (just before the command that
breaks rail 0) to the first "traffic moved from rail 0" line after it, with
the causes the lines name counted: the failover as rcnetd made it, where
bond_anchor.sh's carrier set no longer polls `rcnetctl` (its bonding anchor
does not either). The command's own start is in it: under TCG `ip link set
down` takes effect 150-300 ms after T0 (ping's last reply before the gap).

--device (the removal set): when rcnetd released the device and when it
adopted it again, from its "RDMA device lost (..., noticed by P)" and "RDMA
device D adopted again on A (noticed by P, ..., set up in S ms)" lines: the loss from each
T0 (just before `rdma link delete`), the re-adoption from the moment `rdma
link add` returned (RESULTS/removal-add.windows, "T1:T2" per event: the
device is registered by then; negative when rcnetd adopted it before the
command returned), each with the path that noticed it (async event, netlink
monitor, poll) counted; and, from S, when the adoption began after the
add returned and how long the device's setup took.
"""
import datetime
import re
import sys


def log_ms(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


def windows(path):
    """(start, end) in ms of each "T0:T1" line."""
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r"(\d+):(\d+)", line)
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
    return out


def log_matches(path, pattern):
    """(ms, match) of each line of rcnetd's log whose message matches
    `pattern` (from its start; the match's groups are the pattern's)."""
    rx = re.compile(r"(\S+) \[rcnetd\] \w+ (?:" + pattern + ")")
    with open(path) as f:
        for line in f:
            m = rx.match(line)
            if m:
                yield log_ms(m.group(1)), m


def device_lines(path):
    """(ms, "lost" or "adopted", path that noticed it, setup ms or None) of
    each device line; the setup ("set up in N ms") only on adoptions."""
    out = []
    for ms, m in log_matches(path, r"RDMA device (lost|\S+ adopted again on)"
                                   r".*?\(.*?noticed by ([a-z ]+)"):
        setup = re.search(r"set up in (\d+) ms", m.string)
        out.append((ms, "lost" if m.group(2) == "lost" else "adopted", m.group(3),
                    int(setup.group(1)) if setup else None))
    return out


def first_after(lines, kind, t):
    return next((ln for ln in lines if ln[1] == kind and ln[0] >= t), None)


def sorted_times(label, found):
    """"LABEL (ms, sorted): a b c" of (ms, path) pairs ("none" when missing)."""
    got = sorted(f[0] for f in found if f)
    times = " ".join(str(ms) for ms in got) + (" none" * sum(1 for f in found if not f))
    return f"{label} (ms, sorted): {times.strip()}"


def summary(label, found):
    """sorted_times(), then "; noticed by: P xN ..." of the paths."""
    paths = {}
    for f in found:
        if f:
            paths[f[1]] = paths.get(f[1], 0) + 1
    by = ", ".join(f"{p} x{n}" for p, n in sorted(paths.items()))
    return f"{sorted_times(label, found)}; noticed by: {by or 'nothing'}"


def device_main(results, name, node):
    lines = device_lines(f"{results}/rcnetd-{node}.log")
    deletes = [t0 for t0, _ in windows(f"{results}/{name}-down.windows")]
    add_windows = windows(f"{results}/{name}-add.windows")
    adds = [t2 for _, t2 in add_windows]
    lost = [(f[0] - t, f[2]) if (f := first_after(lines, "lost", t)) else None for t in deletes]
    # An adoption can come before the add returned: search from the add's start.
    found = [first_after(lines, "adopted", t1) for t1, _ in add_windows]
    adopted = [(f[0] - t2, f[2]) if f else None for f, t2 in zip(found, adds)]
    out = (summary("device released after the delete's start", lost) + "; " +
           summary("adopted again after the add returned", adopted))
    if found and all(f and f[3] is not None for f in found):
        # The setup ends at the line: when the adoption began, and its cost.
        began = [(f[0] - f[3] - t2, f[2]) for f, t2 in zip(found, adds)]
        setups = " ".join(str(f[3]) for f in sorted(found, key=lambda f: f[3]))
        out += "; " + sorted_times("began after the add returned", began)
        out += f"; set up in (ms, sorted): {setups}"
    print(out)


def moved_lines(path):
    """(ms, "moved", cause) of each "traffic moved from rail 0" line."""
    return [(ms, "moved", m.group(2))
            for ms, m in log_matches(path, r".*traffic moved from rail 0 to rail \d+ \((\w+)\)")]


def failover_main(results, name, node):
    lines = moved_lines(f"{results}/rcnetd-{node}.log")
    breaks = [t0 for t0, _ in windows(f"{results}/{name}-down.windows")]
    found = [(f[0] - t, f[2]) if (f := first_after(lines, "moved", t)) else None for t in breaks]
    print(summary("failover after the breaking command started", found))


def main():
    results, name = sys.argv[1], sys.argv[2]
    node = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else "1"
    if "--device" in sys.argv[3:]:
        device_main(results, name, node)
        return
    if "--failover" in sys.argv[3:]:
        failover_main(results, name, node)
        return
    heals = [t1 for _, t1 in windows(f"{results}/{name}-down.windows")]
    backs = [ms for ms, _ in log_matches(f"{results}/rcnetd-{node}.log", r".*traffic back on rail 0")]
    out = []
    for t in heals:
        after = [b for b in backs if b > t]
        out.append(str(min(after) - t) if after else "none")
    out.sort(key=lambda x: (x == "none", int(x) if x != "none" else 0))
    print(" ".join(out))


if __name__ == "__main__":
    main()
