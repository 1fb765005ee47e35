#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Reads a `ping -D -O` log and says how an outage looked from the ping.

    pinglog.py [--events] LOG [START_MS:END_MS ...]

LOG is iputils ping's output with -D (each line starts with the epoch time
in seconds, "[1764140000.123456]") and -O ("no answer yet for icmp_seq=N"
when the next echo request leaves before a reply). Prints one line for the
whole log, then one per window START_MS:END_MS (epoch milliseconds, the
clock of rcd_now_ms and of rcnetd's log), as key=value pairs:

    replies   distinct sequence numbers answered
    sent      highest sequence number seen (ping counts from 1)
    lost      sequence numbers never answered, below the last answered one
              (the tail still in flight when ping stopped is not a loss)
    dups      duplicate replies ("DUP!": a packet posted again after a
              failover can arrive twice)
    max_gap_ms the longest time between two consecutive replies
    gap_at_ms  when that gap began (epoch ms)
    first_ms   (windows only) ms from the window's start to its first reply,
               -1 if none: how long after a change traffic flowed again

A gap, and the sequence numbers lost in it, belong to the window in which
the gap begins (the time of the last reply before it), so adjacent windows
never count one outage twice; in a window, sent is replies + lost.

With --events, a last line sums the windows up (one window per event of a
kind): windows, gap_p50_ms, gap_p99_ms, gap_max_ms (nearest-rank percentiles
of the windows' max_gap_ms), lost_total, lost_p50, lost_max, dups_total.
"""
import re
import sys

LINE = re.compile(r"^\[(\d+\.\d+)\] (.*)$")
SEQ = re.compile(r"icmp_seq=(\d+)")


def parse(path):
    replies = []  # (time_ms, seq), in arrival order
    dups = []  # time_ms of duplicate replies
    seen = set()
    sent = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            t = float(m.group(1)) * 1000.0
            rest = m.group(2)
            s = SEQ.search(rest)
            if not s:
                continue
            seq = int(s.group(1))
            sent = max(sent, seq)
            if "bytes from" not in rest:
                continue
            if "DUP!" in rest or seq in seen:
                dups.append(t)
                continue
            seen.add(seq)
            replies.append((t, seq))
    return replies, dups, sent


def pct(values, p):
    """Nearest-rank percentile p (0..100) of values; 0 when empty."""
    if not values:
        return 0
    v = sorted(values)
    k = max(1, -(-len(v) * p // 100))  # ceil(n * p / 100), at least 1
    return v[int(k) - 1]


def window(replies, dups, start, end):
    """(max_gap_ms, gap_at_ms, lost, dups, replies, sent, first_ms) of one
    window. A gap, and the sequence numbers lost in it, belong to the window
    in which it begins (its last reply before the silence), so that adjacent
    windows never count one outage twice."""
    gap, gap_at = 0.0, 0.0
    for (t0, _), (t1, _) in zip(replies, replies[1:]):
        if start <= t0 < end and t1 - t0 > gap:
            gap, gap_at = t1 - t0, t0
    by_seq = sorted(replies, key=lambda r: r[1])
    lost = 0
    for (t0, s0), (_, s1) in zip(by_seq, by_seq[1:]):
        if start <= t0 < end:
            lost += s1 - s0 - 1
    inside = [r for r in replies if start <= r[0] < end]
    nd = sum(1 for t in dups if start <= t < end)
    first = inside[0][0] - start if inside else -1
    return gap, gap_at, lost, nd, len(inside), len(inside) + lost, first


def summary(replies, dups, sent, start=None, end=None):
    if start is None:
        gap, gap_at, lost, nd, n, _, _ = window(replies, dups, float("-inf"), float("inf"))
        # Before the first reply: the sequence numbers nothing answered yet.
        lost += min((q for _, q in replies), default=1) - 1
        tail = ""
    else:
        gap, gap_at, lost, nd, n, sent, first = window(replies, dups, start, end)
        tail = " first_ms=%.0f" % first
    return "replies=%d sent=%d lost=%d dups=%d max_gap_ms=%.0f gap_at_ms=%.0f%s" % (
        n,
        sent,
        lost,
        nd,
        gap,
        gap_at,
        tail,
    )


def main(argv):
    events = len(argv) > 1 and argv[1] == "--events"
    if events:
        argv = argv[:1] + argv[2:]
    if len(argv) < 2:
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    replies, dups, sent = parse(argv[1])
    replies.sort()
    print("all " + summary(replies, dups, sent))
    gaps, losts, ndups = [], [], 0
    for w in argv[2:]:
        a, b = (float(x) for x in w.split(":"))
        print("%s %s" % (w, summary(replies, dups, sent, a, b)))
        gap, _, lost, nd, _, _, _ = window(replies, dups, a, b)
        gaps.append(gap)
        losts.append(lost)
        ndups += nd
    if events:
        print(
            "events windows=%d gap_p50_ms=%.0f gap_p99_ms=%.0f gap_max_ms=%.0f "
            "lost_total=%d lost_p50=%d lost_max=%d dups_total=%d"
            % (
                len(gaps),
                pct(gaps, 50),
                pct(gaps, 99),
                max(gaps, default=0),
                sum(losts),
                pct(losts, 50),
                max(losts, default=0),
                ndups,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
