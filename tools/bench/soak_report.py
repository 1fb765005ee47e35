#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The report of the soak benchmark (tests/lab/soak/soak.sh, docs/lab.md
"The soak benchmark").

    soak_report.py RESULTS             the tables, RESULTS/soak.json
    soak_report.py --settled RESULTS   exit 0 when the last sample's counts
                                       (fds, QPs, MRs, CQs) equal the
                                       baseline's on every node, else 1;
                                       one line says which differ

RESULTS holds what soak.sh wrote:
  soak-params.txt   "key value" lines: grace_ms, pre_ms, minutes, ...
  soak-samples.txt  one block per sample of every rcnetd:
                      S T0_MS LABEL        the sample's start and its label
                                           (periodic, baseline, after F3, end)
                      K qp|mr|cq JSON      `rdma -j res show qp|mr|cq` (all
                                           processes; counted here by pid)
                      N NODE PID RSS_KIB ANON_KIB FDS STATUS_JSON
                                           /proc/PID/status VmRSS and RssAnon,
                                           entries of /proc/PID/fd, and
                                           `rcnetctl -j status` ("-": none;
                                           its daemon.heap: glibc's heap)
                      A NODE NAME=KIB ...  the process's anonymous memory by
                                           mapping (/proc/PID/smaps): [heap],
                                           [stack], a file's name, anon@START
                      E T1_MS              the sample's end
  soak-faults.txt   "F ID CYCLE KIND NODE START_MS END_MS RECOVERED DETAIL":
                    one fault window each; RECOVERED 0 when the scenario did
                    not see the fault's end within its bound
  ping-I-J.K.ping   `ping -D -O` of the stream node I -> node J, segment K (a
                    ping restarted when it ended, e.g. when a restarted
                    rcnetd made rc0 anew)
  soak-iperf.txt    "R START_MS END_MS EXIT BYTES": one iperf3 run each

What it says, per node and metric: the baseline (the sample labelled
"baseline", taken before the first fault), the value after each fault cycle
(the last quiet sample after the cycle's last fault), and the least-squares
slope per minute over the quiet samples after each process's first fault
cycle. A sample is quiet when its span meets no fault window padded by
pre_ms before and grace_ms after. The slope is fitted within each process
(a node's samples grouped by pid: a restarted rcnetd starts a new series,
whose level may differ from the old one's; one common slope, each series
its own intercept), and each process's first cycle is its warm-up: for
the processes of the start, the first fault cycle; for one that a fault
restarted, the cycle it started in (a new rcnetd's RSS rises by a few
hundred KiB while its connections come up, then stays flat: the 30-minute
soak's node1 99,312 KiB at its restart, 99,844 two minutes later, 99,848
twelve minutes after that). A note gives the RSS's and the heap's slope
fitted later still, once each process had met every kind of fault it
meets: faults that rotate over the nodes bring a node its first flood, say,
in cycle 1 to 4, and a kind's first time sizes some container once (a step
that a slope from cycle 1 on counts as growth). For fds, QPs, MRs and CQs: whether some quiet
sample between a fault and the next one equals the baseline, for every
fault. Then the pings lost outside the padded windows: a lost ping is
placed at the time of ping's "no answer yet" line for it (-O: one interval
after it was sent), else between the replies around it. Goals: RSS slope <= 1 KiB/min; fds,
QPs, MRs and CQs back to the baseline after every fault; no ping lost
outside the windows. A goal missed is reported, never an error: the exit
status says only whether the report could be made.
"""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "lab", "rails"))
import bench_table  # noqa: E402  (beside this file: the table layout)
import pinglog  # noqa: E402  (tests/lab/rails: ping -D -O logs)

# One row per metric: key, what it is, unit, goal ("slope": the slope's
# goal; "base": back to the baseline after every fault; None: reported).
METRICS = [
    ("rss_kib", "RSS (VmRSS)", "KiB", "slope"),
    ("rss_anon_kib", "RssAnon (heap + other private memory)", "KiB", None),
    ("heap_in_use_kib", "heap in use (mallinfo2, rcnetctl status)", "KiB", None),
    ("heap_held_kib", "heap the allocator holds (mallinfo2)", "KiB", None),
    ("anon_heap_kib", "anonymous in [heap] (smaps)", "KiB", None),
    ("anon_mmap_kib", "anonymous in unnamed mappings (smaps)", "KiB", None),
    ("anon_stack_kib", "anonymous in [stack] (smaps)", "KiB", None),
    ("anon_file_kib", "anonymous in file mappings (smaps)", "KiB", None),
    ("fds", "open fds (/proc/PID/fd)", "fds", "base"),
    ("qps_kernel", "QPs (rdma res show qp, by pid)", "QPs", "base"),
    ("qps_ctl", "QPs (rcnetctl status)", "QPs", "base"),
    ("mrs", "MRs (rdma res show mr, by pid)", "MRs", "base"),
    ("cqs", "CQs (rdma res show cq, by pid)", "CQs", "base"),
    ("srq_posted", "SRQ receives posted (rcnetctl status)", "WRs", None),
]
BASE_METRICS = [m[0] for m in METRICS if m[3] == "base"]
RSS_SLOPE_GOAL = "<= 1"  # KiB per minute
# Also fitted after each process had met every kind of fault (a note).
KINDS_SLOPE_METRICS = ("rss_kib", "heap_in_use_kib")
NOT_EXPOSED = ("timers: rcnetctl does not expose rcnetd's timers (sd-event sources); not sampled",)
NO_ANSWER = re.compile(r"no answer yet for icmp_seq=(\d+)")


# --- reading ---------------------------------------------------------------------------

def load_params(res):
    p = {}
    try:
        with open(os.path.join(res, "soak-params.txt")) as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                if k:
                    p[k] = v
    except FileNotFoundError:
        pass
    return p


def _json(text):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _int(text):
    try:
        return int(text)
    except (ValueError, TypeError):
        return None


def parse_samples(lines):
    """The samples of soak-samples.txt's lines, in order: dicts with t0, t1,
    label, kernel {kind: list or None} and nodes {node: raw fields}. A block
    without its E line is left out: cut short by the end of the run, or
    still being written while soak.sh asks --settled."""
    samples, cur = [], None
    for line in lines:
        tag, _, rest = line.rstrip("\n").partition(" ")
        if tag == "S":
            t, _, label = rest.partition(" ")
            cur = {"t0": float(t), "t1": float(t), "label": label, "kernel": {}, "nodes": {},
                   "complete": False}
            samples.append(cur)
        elif cur is None:
            continue
        elif tag == "K":
            kind, _, js = rest.partition(" ")
            v = _json(js)
            cur["kernel"][kind] = v if isinstance(v, list) else None
        elif tag == "N":
            f = rest.split(" ", 5) + [""] * 6
            st = _json(f[5])
            cur["nodes"][int(f[0])] = {"pid": _int(f[1]), "rss_kib": _int(f[2]),
                                       "rss_anon_kib": _int(f[3]), "fds": _int(f[4]),
                                       "status": st if isinstance(st, dict) else None}
        elif tag == "A":
            node, _, maps = rest.partition(" ")
            by = {}
            for kv in maps.split():
                k, _, v = kv.rpartition("=")
                if k and _int(v) is not None:
                    by[k] = _int(v)
            if int(node) in cur["nodes"]:
                cur["nodes"][int(node)]["anon_by_mapping"] = by
        elif tag == "E":
            cur["t1"] = float(rest)
            cur["complete"] = True
    return [s for s in samples if s["complete"]]


def node_metrics(sample, node):
    """{metric: value or None, "pid": pid} of one node in one sample."""
    raw = sample["nodes"].get(node) or {}
    pid = raw.get("pid")
    m = {"pid": pid}
    for key in ("rss_kib", "rss_anon_kib", "fds"):
        m[key] = raw.get(key)
    for kind, key in (("qp", "qps_kernel"), ("mr", "mrs"), ("cq", "cqs")):
        lst = sample["kernel"].get(kind)
        alive = m["fds"] is not None
        m[key] = (sum(1 for e in lst if isinstance(e, dict) and e.get("pid") == pid)
                  if lst is not None and pid is not None and alive else None)
    by = raw.get("anon_by_mapping")
    for key, kind in (("anon_heap_kib", "heap"), ("anon_mmap_kib", "mmap"),
                      ("anon_stack_kib", "stack"), ("anon_file_kib", "file")):
        m[key] = (sum(v for k, v in by.items() if mapping_kind(k) == kind)
                  if by is not None else None)
    st = raw.get("status") or {}
    m["qps_ctl"] = st.get("qps")
    m["srq_posted"] = (st.get("srq") or {}).get("posted")
    heap = (st.get("daemon") or {}).get("heap") or {}
    for field, key in (("in_use_bytes", "heap_in_use_kib"), ("arena_bytes", "heap_held_kib")):
        v = heap.get(field)
        m[key] = v / 1024 if isinstance(v, (int, float)) else None
    return m


def mapping_kind(name):
    """heap, stack, mmap (unnamed) or file: the kind of a mapping's name in
    an A line."""
    if name == "[heap]":
        return "heap"
    if name.startswith("[stack"):
        return "stack"
    if name.startswith("anon@") or name.startswith("["):
        return "mmap"
    return "file"


def mapping_growth(node, first, last, top=6):
    """The mappings of one process whose anonymous KiB changed the most
    from sample `first` to `last`: [(name, before, after)]."""
    a = (first["nodes"].get(node) or {}).get("anon_by_mapping")
    b = (last["nodes"].get(node) or {}).get("anon_by_mapping")
    if a is None or b is None:
        return []
    d = [(k, a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0)]
    return sorted(d, key=lambda x: -abs(x[2] - x[1]))[:top]


def parse_faults(lines):
    """soak-faults.txt's windows, in order of their start."""
    out = []
    for line in lines:
        f = line.split(None, 8)
        if len(f) < 8 or f[0] != "F":
            continue
        out.append({"id": f[1], "cycle": int(f[2]), "kind": f[3], "node": int(f[4]),
                    "start": float(f[5]), "end": float(f[6]), "recovered": f[7] == "1",
                    "detail": f[8].strip() if len(f) > 8 else ""})
    return sorted(out, key=lambda w: w["start"])


def ping_losses(path, tail_ms=2000.0):
    """(lost, answered, sent) of one ping -D -O segment: lost is [(t_ms, seq)].
    A sequence number is lost when no reply came for it and either a later
    one was answered, or ping said "no answer yet" for it more than tail_ms
    before the segment's last line (so the one in flight when ping was
    stopped is not a loss). Its time is that line's (one interval after the
    send), else interpolated between the replies around it."""
    replies, _, sent = pinglog.parse(path)
    answered = {s for _, s in replies}
    noans, last_t = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            m = pinglog.LINE.match(line.strip())
            if not m:
                continue
            t = float(m.group(1)) * 1000.0
            last_t = t
            n = NO_ANSWER.search(m.group(2))
            if n:
                noans.setdefault(int(n.group(1)), t)
    by_seq = sorted((s, t) for t, s in replies)
    top = by_seq[-1][0] if by_seq else 0
    lost = []
    for k in range(1, sent + 1):
        if k in answered:
            continue
        if k in noans:
            t = noans[k]
            if k > top and t > last_t - tail_ms:
                continue
        elif k < top:
            t = _interpolate(by_seq, k)
        else:
            continue
        lost.append((t, k))
    return lost, len(answered), sent


def _interpolate(by_seq, k):
    prev = None
    for s, t in by_seq:
        if s > k:
            if prev is None:
                return t
            s0, t0 = prev
            return t0 + (t - t0) * (k - s0) / (s - s0)
        prev = (s, t)
    return prev[1]


def ping_streams(res):
    """{stream: [segment paths in order]} of RESULTS/ping-I-J.K.ping."""
    pat = re.compile(r"^(ping-\d+-\d+)\.(\d+)\.ping$")
    streams = {}
    for name in os.listdir(res):
        m = pat.match(name)
        if m:
            streams.setdefault(m.group(1), []).append((int(m.group(2)), os.path.join(res, name)))
    return {k: [p for _, p in sorted(v)] for k, v in sorted(streams.items())}


# --- the analysis ----------------------------------------------------------------------

def padded(faults, pre_ms, grace_ms):
    """The fault windows, each from pre_ms before its start to grace_ms after
    its end, overlapping ones merged: [(a, b)] in order."""
    spans = sorted((w["start"] - pre_ms, w["end"] + grace_ms) for w in faults)
    out = []
    for a, b in spans:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def inside(t, spans):
    return any(a <= t <= b for a, b in spans)


def meets(t0, t1, spans):
    """The span [t0, t1] meets one of spans."""
    return any(t0 <= b and a <= t1 for a, b in spans)


def slope_per_min(points):
    """Least-squares slope per minute of [(t_ms, value, series)]: one slope
    common to every series, each series with its own intercept (the pooled
    within-series fit). None when no series has two distinct times."""
    series = {}
    for t, v, s in points:
        if v is not None:
            series.setdefault(s, []).append((t / 60000.0, float(v)))
    num = den = 0.0
    for pts in series.values():
        if len(pts) < 2:
            continue
        mt = sum(t for t, _ in pts) / len(pts)
        mv = sum(v for _, v in pts) / len(pts)
        num += sum((t - mt) * (v - mv) for t, v in pts)
        den += sum((t - mt) ** 2 for t, _ in pts)
    return num / den if den > 0 else None


def baseline_sample(samples, faults):
    """The last sample labelled "baseline", else the last one that ended
    before the first fault."""
    marked = [s for s in samples if s["label"] == "baseline"]
    if marked:
        return marked[-1]
    first = faults[0]["start"] if faults else float("inf")
    before = [s for s in samples if s["t1"] < first]
    return before[-1] if before else None


def quiet_between(samples, spans, after, before):
    """The quiet samples that start after `after` and end before `before`."""
    return [s for s in samples if s["t0"] > after and s["t1"] < before
            and not meets(s["t0"], s["t1"], spans)]


def back_to_baseline(samples, faults, spans, node, metric, base, grace_ms, pre_ms):
    """Per fault: {"id", "back" (True, False, or None: no quiet sample
    after it), "after" (the last quiet sample's value), "settle_ms" (from
    the fault's end to the first quiet sample at the baseline)}."""
    out = []
    for k, w in enumerate(faults):
        nxt = faults[k + 1]["start"] - pre_ms if k + 1 < len(faults) else float("inf")
        q = quiet_between(samples, spans, w["end"] + grace_ms, nxt)
        vals = [(s["t0"], node_metrics(s, node)[metric]) for s in q]
        vals = [(t, v) for t, v in vals if v is not None]
        hit = next((t for t, v in vals if base is not None and v == base), None)
        out.append({"id": w["id"], "kind": w["kind"], "node": w["node"],
                    "back": None if not vals or base is None else hit is not None,
                    "after": vals[-1][1] if vals else None,
                    "settle_ms": hit - w["end"] if hit is not None else None})
    return out


def cycles_of(faults):
    """[(cycle, start of its first fault, end of its last)] in order."""
    c = {}
    for w in faults:
        a, b = c.get(w["cycle"], (w["start"], w["end"]))
        c[w["cycle"]] = (min(a, w["start"]), max(b, w["end"]))
    return [(k, a, b) for k, (a, b) in sorted(c.items())]


def lifetimes(samples, nodes):
    """{(node, pid): (its first sample's t0, its last one's)}."""
    out = {}
    for s in samples:
        for n in nodes:
            pid = node_metrics(s, n)["pid"]
            if pid is not None:
                out[(n, pid)] = (out.get((n, pid), (s["t0"],))[0], s["t0"])
    return out


def warmup_ends(life, cycles, grace_ms):
    """{(node, pid): the end of that process's first fault cycle, plus
    grace_ms}: the first cycle that ends after its first sample (life:
    lifetimes()). Infinite for a process that no cycle ends after (it has
    no settled samples)."""
    return {k: next((end + grace_ms for _, _, end in cycles if end >= t), float("inf"))
            for k, (t, _) in life.items()}


def kinds_warmup_ends(life, warm, faults, cycles, grace_ms):
    """{(node, pid): its warm-up end (warm: warmup_ends()), or later: the
    end of the cycle in which that process met the last of the kinds of
    fault it meets for the first time, plus grace_ms. A kind's first time
    sizes a container once (a high-water mark, not a leak), and faults that
    rotate over the nodes give a node its first flood, say, in cycle 1 to 4."""
    ends = {c: end for c, _, end in cycles}
    out = dict(warm)
    for (n, pid), (t0, t1) in life.items():
        first = {}
        for w in faults:
            if w["node"] == n and t0 <= w["start"] <= t1:
                first.setdefault(w["kind"], w["cycle"])
        if first:
            out[(n, pid)] = max(out[(n, pid)], ends[max(first.values())] + grace_ms)
    return out


def analyse(params, samples, faults, streams, iperf_runs):
    grace = float(params.get("grace_ms", 5000))
    pre = float(params.get("pre_ms", 1000))
    spans = padded(faults, pre, grace)
    nodes = sorted({n for s in samples for n in s["nodes"]})
    base_s = baseline_sample(samples, faults)
    cycles = cycles_of(faults)
    first_end = cycles[0][2] + grace if cycles else None
    after_cycle = []  # the sample after each cycle, None when none was quiet
    for k, (_, _, end) in enumerate(cycles):
        nxt = cycles[k + 1][1] - pre if k + 1 < len(cycles) else float("inf")
        q = quiet_between(samples, spans, end + grace, nxt)
        after_cycle.append(q[-1] if q else None)
    slope_samples = ([s for s in samples if s["t0"] > first_end and not meets(s["t0"], s["t1"], spans)]
                     if first_end is not None else [])
    life = lifetimes(samples, nodes)
    warm = warmup_ends(life, cycles, grace)
    warm_kinds = kinds_warmup_ends(life, warm, faults, cycles, grace)
    rows, notes, per_fault = [], [], {}
    for n in nodes:
        base_m = node_metrics(base_s, n) if base_s else {}
        for key, what, unit, goal in METRICS:
            base = base_m.get(key)
            after = [node_metrics(s, n)[key] if s else None for s in after_cycle]
            pts, later = [], []  # later: after the process met each kind of fault
            for s in slope_samples:
                m = node_metrics(s, n)
                if s["t0"] > warm.get((n, m["pid"]), float("inf")):
                    pts.append((s["t0"], m[key], m["pid"]))
                    if s["t0"] > warm_kinds.get((n, m["pid"]), float("inf")):
                        later.append(pts[-1])
            slope = slope_per_min(pts)
            row = {"node": n, "metric": key, "what": what, "unit": unit, "baseline": base,
                   "after_cycles": after, "slope_per_min": slope,
                   "slope_samples": sum(1 for p in pts if p[1] is not None),
                   "goal": None, "met": None}
            if key in KINDS_SLOPE_METRICS:
                row["slope_after_kinds"] = slope_per_min(later)
                row["samples_after_kinds"] = sum(1 for p in later if p[1] is not None)
            if goal == "slope":
                row["goal"] = f"slope {RSS_SLOPE_GOAL} {unit}/min"
                row["met"] = bench_table.met(RSS_SLOPE_GOAL, slope)
            elif goal == "base":
                bb = back_to_baseline(samples, faults, spans, n, key, base, grace, pre)
                per_fault[(n, key)] = bb
                row["goal"] = "= baseline after every fault"
                row["met"] = bool(faults) and all(b["back"] for b in bb)
                row["faults_back"] = sum(1 for b in bb if b["back"])
                row["faults"] = len(bb)
                missed = [b for b in bb if not b["back"]]
                if missed:
                    notes.append(f"node{n} {key}: not back to {fmt(base)} after " + ", ".join(
                        f"{b['id']} ({b['kind']} node{b['node']}: "
                        f"{'no quiet sample' if b['back'] is None else fmt(b['after'])})"
                        for b in missed))
            rows.append(row)

    # Pings.
    lost_out, lost_in, answered, sent, where = 0, 0, 0, 0, []
    for name, paths in streams.items():
        for p in paths:
            lost, a, s = ping_losses(p)
            answered += a
            sent += s
            for t, seq in lost:
                if inside(t, spans):
                    lost_in += 1
                else:
                    lost_out += 1
                    where.append((t, f"{name} seq {seq} of {os.path.basename(p)}"))
    if where:
        where.sort()
        notes.append("pings lost outside the windows: " + "; ".join(
            f"{w} at {clock(t)}" for t, w in where[:20]) + (" ..." if len(where) > 20 else ""))
    failed = [r for r in iperf_runs if r["exit"] != 0 or r["bytes"] <= 0]
    failed_out = [r for r in failed if not meets(r["start"], r["end"], spans)]
    checks = [
        {"check": f"pings lost outside the fault windows (each padded {pre / 1000:g} s before, "
                  f"{grace / 1000:g} s after)", "value": lost_out if streams else None,
         "goal": "<= 0", "met": bench_table.met("<= 0", lost_out if streams else None)},
        {"check": "pings lost inside the fault windows", "value": lost_in if streams else None,
         "goal": None, "met": None},
        {"check": "pings answered / sent (all streams)",
         "value": f"{answered} / {sent}" if streams else None, "goal": None, "met": None},
        {"check": "faults whose end the scenario did not see within its bound",
         "value": sum(1 for w in faults if not w["recovered"]), "goal": None, "met": None},
        {"check": "iperf3 runs failed / run (failed outside the windows)",
         "value": f"{len(failed)} / {len(iperf_runs)} ({len(failed_out)})" if iperf_runs else None,
         "goal": None, "met": None},
    ]
    for w in faults:
        if not w["recovered"]:
            notes.append(f"{w['id']} ({w['kind']} node{w['node']}): its end not seen within "
                         f"the bound: {w['detail']}")
    kinds = {}
    for w in faults:
        kinds[w["kind"]] = kinds.get(w["kind"], 0) + 1
    notes.insert(0, f"{len(cycles)} fault cycles, {len(faults)} faults (" + ", ".join(
        f"{k} {v}" for k, v in kinds.items()) + f"); {len(samples)} samples, "
        f"{len(slope_samples)} quiet after the first cycle (a restarted process's slope "
        f"starts after the cycle it started in); baseline "
        f"sample at {clock(base_s['t0']) + ' UTC' if base_s else '-'} "
        f"({base_s['label'] if base_s else 'none'})")
    for key in KINDS_SLOPE_METRICS:
        got = [r for r in rows if r["metric"] == key]
        if got:
            notes.append(f"{got[0]['what']}, slope once each process had met every kind of fault "
                         f"it meets (a kind's first time sizes things once; the row above starts "
                         f"after the first cycle): " + ", ".join(
                             f"node{r['node']} {fmt(r['slope_after_kinds'])} KiB/min "
                             f"({r['samples_after_kinds']} samples)" for r in got))
    # Which mappings grew: from each node's sample after the first cycle to
    # its last quiet one, when both are of the same process.
    ended = [s for s in after_cycle if s]
    for n in nodes if ended else []:
        a, b = ended[0], ended[-1]
        if node_metrics(a, n)["pid"] != node_metrics(b, n)["pid"]:
            continue
        g = mapping_growth(n, a, b)
        if g:
            notes.append(f"node{n} anonymous KiB by mapping, after c1 -> last: " + ", ".join(
                f"{k} {x:,} -> {y:,} ({y - x:+,})" for k, x, y in g))
    notes.extend(NOT_EXPOSED)
    return {"params": params, "rows": rows, "checks": checks, "notes": notes,
            "faults": faults, "cycles": len(cycles),
            "per_fault": {f"node{n} {k}": v for (n, k), v in per_fault.items()}}


def fmt(v):
    """Counts as they are, other figures as bench_table prints them."""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return bench_table.fmt(v)


def clock(t_ms):
    """Epoch ms as UTC time of day, the clock of the run's logs."""
    return time.strftime("%H:%M:%S", time.gmtime(t_ms / 1000)) + f".{int(t_ms) % 1000:03d}"


def yes(v):
    return "-" if v is None else "yes" if v else "NO"


def render(a):
    ncyc = max((len(r["after_cycles"]) for r in a["rows"]), default=0)
    headers = (["node", "metric", "unit", "baseline"] + [f"after c{k + 1}" for k in range(ncyc)]
               + ["slope/min", "goal", "met"])
    table = []
    for r in a["rows"]:
        met = yes(r["met"])
        if r.get("faults"):
            met += f" ({r['faults_back']}/{r['faults']})"
        table.append([f"node{r['node']}", r["what"], r["unit"], fmt(r["baseline"])]
                     + [fmt(v) for v in r["after_cycles"]]
                     + [fmt(r["slope_per_min"]), r["goal"] or "-", met])
    bench_table.render_table(headers, table, tuple(range(3, 4 + ncyc + 1)))
    print()
    bench_table.render_table(["check", "value", "goal", "met"],
                             [[c["check"], fmt(c["value"]), c["goal"] or "-", yes(c["met"])]
                              for c in a["checks"]], (1,))
    print()
    for note in a["notes"]:
        print(f"  {note}")


def load(res):
    params = load_params(res)
    try:
        with open(os.path.join(res, "soak-samples.txt"), errors="replace") as f:
            samples = parse_samples(f)
    except FileNotFoundError:
        samples = []
    try:
        with open(os.path.join(res, "soak-faults.txt")) as f:
            faults = parse_faults(f)
    except FileNotFoundError:
        faults = []
    runs = []
    try:
        with open(os.path.join(res, "soak-iperf.txt")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 5 and p[0] == "R":
                    runs.append({"start": float(p[1]), "end": float(p[2]),
                                 "exit": _int(p[3]) if _int(p[3]) is not None else -1,
                                 "bytes": _int(p[4]) or 0})
    except FileNotFoundError:
        pass
    return params, samples, faults, ping_streams(res), runs


def settled(res):
    """(True, "") when the last sample equals the baseline in every count on
    every node, else (False, what differs)."""
    params, samples, faults, _, _ = load(res)
    base = baseline_sample(samples, faults)
    if not samples or base is None:
        return False, "no baseline sample"
    last = samples[-1]
    diff = []
    for n in sorted(base["nodes"]):
        b, l = node_metrics(base, n), node_metrics(last, n)
        for k in BASE_METRICS:
            if l[k] != b[k]:
                diff.append(f"node{n} {k} {fmt(l[k])} (baseline {fmt(b[k])})")
    return not diff, "; ".join(diff)


def main(argv):
    if len(argv) == 3 and argv[1] == "--settled":
        ok, why = settled(argv[2])
        print("at the baseline" if ok else f"not at the baseline: {why}")
        return 0 if ok else 1
    if len(argv) != 2:
        print("usage: soak_report.py [--settled] RESULTS", file=sys.stderr)
        return 2
    res = argv[1]
    a = analyse(*load(res))
    render(a)
    with open(os.path.join(res, "soak.json"), "w") as f:
        json.dump(a, f, indent=2, default=str)
    print(f"\n(json: {os.path.join(res, 'soak.json')})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
