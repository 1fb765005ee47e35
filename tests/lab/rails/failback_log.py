#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Fail-back times of a bond_anchor.sh event set as rcnetd itself logged them.

    failback_log.py RESULTS SET [NODE]

RESULTS/SET-down.windows holds one "T0:T1 ..." line per event (pinglog.py's
windows; T1 is the guest's CLOCK_REALTIME in ms just before the command that
heals: `ip link set up`, the tc filter's removal, `rdma link add`), and
RESULTS/rcnetd-NODE.log (default 1) the daemon's log with its ISO timestamps
(UTC, ms). Prints the times from each T1 to the first "traffic back on rail
0" line after it, in ms, sorted: the fail-back without the 0.3-0.6 s a
polling `rcnetctl` call costs under TCG.
"""
import datetime
import re
import sys


def log_ms(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


def main():
    results, name = sys.argv[1], sys.argv[2]
    node = sys.argv[3] if len(sys.argv) > 3 else "1"
    heals = []
    with open(f"{results}/{name}-down.windows") as f:
        for line in f:
            m = re.match(r"(\d+):(\d+) ", line)
            if m:
                heals.append(int(m.group(2)))
    backs = []
    with open(f"{results}/rcnetd-{node}.log") as f:
        for line in f:
            m = re.match(r"(\S+) \[rcnetd\] \w+ .*traffic back on rail 0", line)
            if m:
                backs.append(log_ms(m.group(1)))
    out = []
    for t in heals:
        after = [b for b in backs if b > t]
        out.append(str(min(after) - t) if after else "none")
    out.sort(key=lambda x: (x == "none", int(x) if x != "none" else 0))
    print(" ".join(out))


if __name__ == "__main__":
    main()
