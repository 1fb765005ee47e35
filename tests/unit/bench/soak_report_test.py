#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""tools/bench/soak_report.py without the lab: the slope, the fault windows
and what they exclude, back to the baseline, lost pings placed in time.

    soak_report_test.py SOAK_REPORT_PY

Each test writes the files tests/lab/soak/soak.sh would have left into a
temporary folder, with figures chosen so the expected result can be worked
out by hand beside it.
"""
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

SCRIPT = sys.argv[1]
spec = importlib.util.spec_from_file_location("soak_report", SCRIPT)
sr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sr)

T0 = 1_764_000_000_000  # epoch ms of the run's start
MIN = 60_000


def status(qps, posted=448, rss=None):
    """`rcnetctl -j status`; with rss (KiB), a daemon object whose heap has
    a quarter of it in use and holds half of it."""
    st = {"qps": qps, "srq": {"size": 512, "posted": posted}}
    if rss is not None:
        st["daemon"] = {"heap": {"in_use_bytes": rss * 256, "arena_bytes": rss * 512}}
    return json.dumps(st)


def kernel(counts):
    """rdma -j output: counts {pid: n} as that many entries of the pid, plus
    one kernel-owned entry (no pid) that must never be counted."""
    out = [{"ifname": "rxe_1", "lqpn": 1}]
    for pid, n in counts.items():
        out += [{"ifname": "rxe_1", "pid": pid, "lqpn": 100 + k} for k in range(n)]
    return json.dumps(out)


def sample(t, label, nodes):
    """One block of soak-samples.txt. nodes: {node: (pid, rss, fds, qps, mrs,
    cqs)}; pid None: the daemon is not running (its fields are "-"). Of a
    running one's RSS, an eighth is in [heap] and half in one unnamed
    mapping (the A line); its stack and libc's data hold still."""
    lines = [f"S {t} {label}"]
    for kind, idx in (("qp", 3), ("mr", 4), ("cq", 5)):
        lines.append(f"K {kind} " + kernel({v[0]: v[idx] for v in nodes.values() if v[0]}))
    for n, v in nodes.items():
        if v[0] is None:
            lines.append(f"N {n} 999 - - - -")
        else:
            lines.append(f"N {n} {v[0]} {v[1]} {v[1] // 2} {v[2]} {status(v[3], rss=v[1])}")
            lines.append(f"A {n} [heap]={v[1] // 8} [stack]=40 anon@7f0000={v[1] // 2} "
                         f"libc.so.6=24 ")
    lines.append(f"E {t + 2000}")
    return "\n".join(lines) + "\n"


def ping_log(start, n, interval, lost=(), late=()):
    """ping -D -O output: n echo requests from `start` (ms) every `interval`
    ms; `lost` never answered, `late` answered one interval late. A lost or
    late one gets ping's "no answer yet" line when the next one is sent."""
    ev = []
    for k in range(1, n + 1):
        t = start + (k - 1) * interval
        if k in lost or k in late:
            ev.append((t + interval, f"no answer yet for icmp_seq={k}"))
        if k not in lost:
            rt = t + 1.5 + (interval * 1.2 if k in late else 0)
            ev.append((rt, f"64 bytes from 10.100.0.2: icmp_seq={k} ttl=64 time=1.50 ms"))
    ev.sort()
    return "".join(f"[{t / 1000:.6f}] {what}\n" for t, what in ev)


class Run:
    """A results folder: write the parts, run the analysis."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="soak-report-")
        self.write("soak-params.txt", "grace_ms 5000\npre_ms 1000\nminutes 3\n")

    def write(self, name, text, mode="w"):
        with open(os.path.join(self.dir, name), mode) as f:
            f.write(text)

    def read(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return f.read()

    def analyse(self):
        return sr.analyse(*sr.load(self.dir))

    def edit_samples(self, prefix, edit):
        """Rewrites each line of soak-samples.txt that starts with prefix:
        edit(fields, t) changes its fields in place (t: its sample's ms
        after T0)."""
        out, t = [], None
        for line in self.read("soak-samples.txt").splitlines(True):
            f = line.split(" ")
            if f[0] == "S":
                t = int(f[1]) - T0
            elif line.startswith(prefix):
                edit(f, t)
                line = " ".join(f)
            out.append(line)
        self.write("soak-samples.txt", "".join(out))

    def close(self):
        shutil.rmtree(self.dir)


def row(a, node, metric):
    return next(r for r in a["rows"] if r["node"] == node and r["metric"] == metric)


class Mappings(unittest.TestCase):
    def test_kinds(self):
        self.assertEqual(sr.mapping_kind("[heap]"), "heap")
        self.assertEqual(sr.mapping_kind("[stack]"), "stack")
        self.assertEqual(sr.mapping_kind("anon@7fbd51619000"), "mmap")
        self.assertEqual(sr.mapping_kind("[anon:glibc: malloc]"), "mmap")
        self.assertEqual(sr.mapping_kind("libnl-3.so.200.26.0"), "file")

    def test_an_a_line_without_its_n_line_is_ignored(self):
        s = sr.parse_samples(["S 1 periodic\n", "A 3 [heap]=8\n", "E 2\n"])
        self.assertEqual(s[0]["nodes"], {})


class Slope(unittest.TestCase):
    def test_a_line(self):
        # 2 KiB every 30 s is 4 KiB per minute.
        pts = [(T0 + k * 30_000, 1000 + 2 * k, 1) for k in range(10)]
        self.assertAlmostEqual(sr.slope_per_min(pts), 4.0)

    def test_flat_with_noise_is_near_zero(self):
        pts = [(T0 + k * 10_000, 1000 + (4 if k % 2 else 0), 1) for k in range(60)]
        self.assertLess(abs(sr.slope_per_min(pts)), 0.05)

    def test_a_restart_is_not_a_slope(self):
        # A daemon at 30000 KiB, restarted at 20000 KiB, both flat: a line
        # through all the points would fall by ~10 MiB; within each process
        # nothing moves.
        pts = [(T0 + k * 10_000, 30000, 100) for k in range(6)]
        pts += [(T0 + k * 10_000, 20000, 200) for k in range(6, 12)]
        self.assertAlmostEqual(sr.slope_per_min(pts), 0.0)

    def test_one_slope_over_two_processes(self):
        # 1 KiB per minute in each, at different levels.
        pts = [(T0 + k * MIN, 100 + k, 1) for k in range(5)]
        pts += [(T0 + k * MIN, 50 + k, 2) for k in range(5, 9)]
        self.assertAlmostEqual(sr.slope_per_min(pts), 1.0)

    def test_not_enough_points(self):
        self.assertIsNone(sr.slope_per_min([]))
        self.assertIsNone(sr.slope_per_min([(T0, 5, 1), (T0 + 1, 6, 2)]))  # one per process
        self.assertIsNone(sr.slope_per_min([(T0, None, 1), (T0 + 1, None, 1)]))


class Windows(unittest.TestCase):
    def test_padding_and_merging(self):
        f = [{"start": 10_000, "end": 20_000}, {"start": 24_000, "end": 30_000},
             {"start": 60_000, "end": 61_000}]
        # 20 s + 5 s grace reaches past 24 s - 1 s: the first two merge.
        self.assertEqual(sr.padded(f, 1000, 5000), [(9000, 35000), (59000, 66000)])
        self.assertTrue(sr.inside(34_999, sr.padded(f, 1000, 5000)))
        self.assertFalse(sr.inside(36_000, sr.padded(f, 1000, 5000)))
        # A sample spanning the edge of a window meets it.
        self.assertTrue(sr.meets(57_000, 59_500, sr.padded(f, 1000, 5000)))
        self.assertFalse(sr.meets(36_000, 58_000, sr.padded(f, 1000, 5000)))


class Pings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="soak-ping-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def log(self, text):
        p = os.path.join(self.dir, "ping-1-2.1.ping")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_lost_and_late(self):
        # 50 pings every 200 ms; 10 and 11 lost, 20 late (answered after its
        # "no answer yet"): two losses, placed one interval after their sends.
        p = self.log(ping_log(T0, 50, 200, lost=(10, 11), late=(20,)))
        lost, answered, sent = sr.ping_losses(p)
        self.assertEqual([s for _, s in lost], [10, 11])
        self.assertAlmostEqual(lost[0][0], T0 + 9 * 200 + 200, delta=1)
        self.assertEqual((answered, sent), (48, 50))

    def test_the_one_in_flight_at_the_end_is_not_lost(self):
        # The last one unanswered when ping stopped (its "no answer yet"
        # line is within the last 2 s) is not a loss; one unanswered 3 s
        # before the end of a ping that then kept failing is.
        p = self.log(ping_log(T0, 30, 200, lost=(30,)))
        self.assertEqual(sr.ping_losses(p)[0], [])
        p = self.log(ping_log(T0, 30, 200, lost=tuple(range(10, 31))))
        lost = [s for _, s in sr.ping_losses(p)[0]]
        self.assertEqual(lost[0], 10)
        self.assertNotIn(30, lost)  # its line is the log's last: in flight

    def test_without_no_answer_lines_losses_are_interpolated(self):
        text = "".join(l for l in ping_log(T0, 20, 100, lost=(5, 6, 7)).splitlines(True)
                       if "no answer" not in l)
        lost = sr.ping_losses(self.log(text))[0]
        self.assertEqual([s for _, s in lost], [5, 6, 7])
        # between the replies of 4 (T0 + 301.5) and 8 (T0 + 701.5)
        self.assertAlmostEqual(lost[0][0], T0 + 401.5, delta=0.01)


def two_node_run(leak_fds_after_f2=False, restart_rss=None):
    """A run of two nodes: a baseline, two cycles of two faults each, a
    quiet tail; samples every 10 s outside the windows plus one after each
    fault. Node 2 is SIGKILLed in F1 (new pid 202). Node 1's RSS grows
    0.5 KiB/min; node 2's is flat. With leak_fds_after_f2, node 1 keeps one
    more fd from F2 on (and never gives it back)."""
    r = Run()
    faults = [  # id cycle kind node start end recovered
        ("F1", 1, "kill", 2, T0 + 60_000, T0 + 70_000, 1),
        ("F2", 1, "flood", 1, T0 + 90_000, T0 + 95_000, 1),
        ("F3", 2, "flap", 1, T0 + 120_000, T0 + 130_000, 1),
        ("F4", 2, "reload", 2, T0 + 150_000, T0 + 152_000, 0),
    ]
    r.write("soak-faults.txt", "".join(
        f"F {i} {c} {k} {n} {a} {b} {ok} detail of {i}\n" for i, c, k, n, a, b, ok in faults))
    text = ""
    for t in range(0, 300_000, 10_000):
        ts = T0 + t
        label = "baseline" if t == 40_000 else "periodic"
        pid2 = 201 if t < 60_000 else 202
        fds1 = 20 + (1 if leak_fds_after_f2 and t >= 90_000 else 0)
        rss1 = 10000 + (t // 1000) // 120  # 0.5 KiB per minute
        rss2 = 12000 if pid2 == 201 else (restart_rss or 12000)
        nodes = {1: (101, rss1, fds1, 6, 4, 2), 2: (pid2, rss2, 21, 6, 4, 2)}
        if 60_000 <= t < 70_000:
            nodes[2] = (None,) * 6  # killed, not restarted yet
            nodes[1] = (101, rss1, fds1, 4, 4, 2)  # its links to node 2 gone
        text += sample(ts, label, nodes)
    r.write("soak-samples.txt", text)
    return r


class Analysis(unittest.TestCase):
    def test_back_to_baseline_and_slopes(self):
        r = two_node_run()
        try:
            a = r.analyse()
            self.assertEqual(a["cycles"], 2)
            for n in (1, 2):
                for m in sr.BASE_METRICS:
                    self.assertIs(row(a, n, m)["met"], True, (n, m))
            q = row(a, 1, "qps_kernel")
            self.assertEqual(q["baseline"], 6)
            self.assertEqual((q["faults_back"], q["faults"]), (4, 4))
            # RSS: node 1 grows 0.5 KiB/min, under the goal; the samples of
            # the slope are the quiet ones after cycle 1 (95 s + 5 s grace).
            # (1 KiB more every 120 s, read every 10 s: a staircase whose
            # fitted slope over 100..290 s is near, not at, 0.5)
            rss = row(a, 1, "rss_kib")
            self.assertAlmostEqual(rss["slope_per_min"], 0.5, delta=0.2)
            self.assertIs(rss["met"], True)
            self.assertIs(row(a, 2, "rss_kib")["met"], True)
            # The heap rows, from the status' daemon.heap (bytes, reported in
            # KiB): node 1's in-use heap a quarter of its RSS, so a quarter
            # of its slope; reported, no goal.
            heap = row(a, 1, "heap_in_use_kib")
            self.assertAlmostEqual(heap["slope_per_min"], rss["slope_per_min"] / 4, delta=0.01)
            self.assertEqual(heap["baseline"], (10000 + 40 // 120) / 4)
            self.assertIsNone(heap["met"])
            self.assertEqual(row(a, 2, "heap_held_kib")["baseline"], 12000 / 2)
            # smaps by kind of mapping: where node 1's growth is.
            self.assertEqual(row(a, 1, "anon_heap_kib")["baseline"], 10000 // 8)
            self.assertEqual(row(a, 1, "anon_mmap_kib")["baseline"], 10000 // 2)
            self.assertEqual(row(a, 1, "anon_stack_kib")["slope_per_min"], 0)
            self.assertEqual(row(a, 1, "anon_file_kib")["baseline"], 24)
            self.assertGreater(row(a, 1, "anon_mmap_kib")["slope_per_min"], 0.1)
            grew = [n for n in a["notes"] if "anonymous KiB by mapping" in n]
            self.assertEqual(len(grew), 1, grew)  # node 2's process is flat
            self.assertTrue(grew[0].startswith("node1 "), grew)
            self.assertIn("anon@7f0000", grew[0])
            self.assertNotIn("[stack]", grew[0])
            # after c1: the last quiet sample before cycle 2 (119 s): t = 110 s.
            self.assertEqual(row(a, 1, "fds")["after_cycles"], [20, 20])
            # F4 was not seen to end: said, not fatal.
            fails = next(c for c in a["checks"] if c["check"].startswith("faults whose end"))
            self.assertEqual(fails["value"], 1)
            self.assertTrue(any("F4 (reload node2)" in n for n in a["notes"]))
        finally:
            r.close()

    def test_a_leak_never_comes_back(self):
        r = two_node_run(leak_fds_after_f2=True)
        try:
            a = r.analyse()
            fds = row(a, 1, "fds")
            self.assertIs(fds["met"], False)
            # F1 came back (before the leak), F2..F4 did not.
            self.assertEqual((fds["faults_back"], fds["faults"]), (1, 4))
            self.assertEqual(fds["after_cycles"], [21, 21])
            self.assertTrue(any(n.startswith("node1 fds: not back to 20 after F2") for n in a["notes"]))
            self.assertIs(row(a, 2, "fds")["met"], True)
        finally:
            r.close()

    def test_a_restart_at_another_level_is_back_when_counts_match(self):
        # Node 2's new process sits 3 MiB higher: no slope (a level, not a
        # trend), and its counts are the baseline's.
        r = two_node_run(restart_rss=15000)
        try:
            a = r.analyse()
            rss = row(a, 2, "rss_kib")
            self.assertAlmostEqual(rss["slope_per_min"], 0.0)
            self.assertEqual(rss["after_cycles"], [15000, 15000])
            self.assertIs(row(a, 2, "fds")["met"], True)
        finally:
            r.close()

    def test_a_restarted_process_warms_up_in_its_first_cycle(self):
        # F3 (cycle 2) kills node 2 instead: its new process (pid 203) reads
        # 12,000 KiB in its one quiet sample of cycle 2 (140 s) and 12,300
        # from cycle 2's end on (157 s), flat. That rise is its warm-up:
        # fitted from 140 s on, it would be a slope of over 1 KiB/min.
        r = two_node_run()
        try:
            r.write("soak-faults.txt",
                    r.read("soak-faults.txt").replace("F F3 2 flap 1 ", "F F3 2 kill 2 "))
            def restart(f, t):
                if t >= 130_000:
                    f[2], f[3] = "203", "12000" if t < 150_000 else "12300"
            r.edit_samples("N 2 202 ", restart)
            a = r.analyse()
            rss = row(a, 2, "rss_kib")
            self.assertAlmostEqual(rss["slope_per_min"], 0.0)
            self.assertIs(rss["met"], True)
            # pid 202's quiet sample at 110 s, pid 203's from 160 s to 290 s.
            self.assertEqual(rss["slope_samples"], 1 + 14)
        finally:
            r.close()

    def test_a_kinds_first_time_is_a_step_not_a_slope(self):
        # Node 1 meets its first flap in cycle 2 (F3, 120-130 s), and its RSS
        # steps 30 KiB there: after cycle 1 that is a slope over the goal;
        # once node 1 had met both its kinds (cycle 2's end, 152 s + 5 s of
        # grace) it is flat.
        r = two_node_run()
        try:
            def step(f, t):
                f[3] = str(10000 + (30 if t >= 125_000 else 0))
            r.edit_samples("N 1 101 ", step)
            a = r.analyse()
            rss = row(a, 1, "rss_kib")
            self.assertGreater(rss["slope_per_min"], 1)
            self.assertIs(rss["met"], False)
            self.assertEqual(rss["slope_after_kinds"], 0)
            note = next(n for n in a["notes"] if n.startswith("RSS (VmRSS), slope once"))
            self.assertIn("node1 0.000 KiB/min (14 samples)", note)  # 160..290 s
        finally:
            r.close()

    def test_rss_growth_misses_its_goal(self):
        r = two_node_run()
        try:
            # node 2's RSS grows 6 KiB per 10 s sample after the restart
            # (70 s on): 36 KiB/min
            def grow(f, t):
                f[3] = str(12000 + 6 * ((t - 70_000) // 10_000))
            r.edit_samples("N 2 202 ", grow)
            a = r.analyse()
            rss = row(a, 2, "rss_kib")
            self.assertAlmostEqual(rss["slope_per_min"], 36.0, delta=0.5)
            self.assertIs(rss["met"], False)
        finally:
            r.close()

    def test_pings_outside_and_inside_the_windows(self):
        r = two_node_run()
        try:
            # 0.2 s pings from T0 for 280 s: seq k leaves at T0 + (k-1)*200.
            # Lost: 326 (its "no answer yet" at 65.2 s: in F1's window), 526
            # (105.2 s: quiet, 10.2 s after F2's end), 616 (123.2 s: in F3).
            r.write("ping-1-2.1.ping", ping_log(T0, 1400, 200, lost=(326, 526, 616)))
            # A second segment of another stream, after a ping restart: 10
            # lost at 142.2..144 s, 12.2 s after F3's end (outside: grace 5).
            r.write("ping-2-1.1.ping", ping_log(T0, 700, 200))
            r.write("ping-2-1.2.ping", ping_log(T0 + 140_000, 100, 200, lost=tuple(range(11, 21))))
            a = r.analyse()
            out = next(c for c in a["checks"] if c["check"].startswith("pings lost outside"))
            ins = next(c for c in a["checks"] if c["check"].startswith("pings lost inside"))
            self.assertEqual(out["value"], 11)
            self.assertIs(out["met"], False)
            self.assertEqual(ins["value"], 2)
            self.assertIn("padded 1 s before, 5 s after", out["check"])
            note = next(n for n in a["notes"] if n.startswith("pings lost outside"))
            self.assertIn("ping-1-2 seq 526 of ping-1-2.1.ping", note)
        finally:
            r.close()

    def test_no_loss_meets_the_goal(self):
        r = two_node_run()
        try:
            r.write("ping-1-2.1.ping", ping_log(T0, 1400, 200, lost=(326,)))
            a = r.analyse()
            out = next(c for c in a["checks"] if c["check"].startswith("pings lost outside"))
            self.assertEqual(out["value"], 0)
            self.assertIs(out["met"], True)
        finally:
            r.close()

    def test_iperf_runs(self):
        r = two_node_run()
        try:
            r.write("soak-iperf.txt", f"R {T0} {T0 + 30_000} 0 1000\n"  # ok
                    f"R {T0 + 55_000} {T0 + 85_000} 1 0\n"  # failed in F1: expected
                    f"R {T0 + 200_000} {T0 + 230_000} 1 500\n")  # failed, quiet
            a = r.analyse()
            c = next(c for c in a["checks"] if c["check"].startswith("iperf3"))
            self.assertEqual(c["value"], "2 / 3 (1)")
        finally:
            r.close()

    def test_no_quiet_sample_after_a_fault_is_not_back(self):
        # The samples stop at 150 s (cut short): F4 has none after it.
        r = two_node_run()
        try:
            text = r.read("soak-samples.txt")
            r.write("soak-samples.txt", text.split(f"S {T0 + 150_000} ")[0])
            a = r.analyse()
            fds = row(a, 1, "fds")
            self.assertIs(fds["met"], False)
            self.assertEqual(fds["faults_back"], 3)
            self.assertTrue(any("F4 (reload node2: no quiet sample)" in n for n in a["notes"]))
        finally:
            r.close()

    def test_a_block_cut_short_and_bad_json(self):
        # rdma -j said something that is not JSON: those counts are
        # unknown, not zero. A block without its E line (the run ended, or
        # the sampler is still writing it) is left out.
        r = two_node_run()
        try:
            r.write("soak-samples.txt", f"S {T0 + 400_000} periodic\nK qp rdma: error\n"
                    f"N 1 101 1000 500 20 -\nE {T0 + 401_000}\n", mode="a")
            samples = sr.load(r.dir)[1]
            m = sr.node_metrics(samples[-1], 1)
            self.assertIsNone(m["qps_kernel"])
            self.assertIsNone(m["qps_ctl"])
            self.assertEqual(m["fds"], 20)
            n = len(samples)
            r.write("soak-samples.txt", f"S {T0 + 410_000} periodic\nK qp []\nN 1 101 1", mode="a")
            samples = sr.load(r.dir)[1]
            self.assertEqual(len(samples), n)
            self.assertEqual(samples[-1]["t0"], T0 + 400_000)
            r.analyse()
        finally:
            r.close()


class Cli(unittest.TestCase):
    def test_report_and_settled(self):
        r = two_node_run()
        try:
            out = subprocess.run([sys.executable, SCRIPT, r.dir], check=True,
                                 capture_output=True, text=True).stdout
            lines = [l for l in out.splitlines() if l.startswith("|")]
            # 2 nodes x 8 metrics + header and rule; then 5 checks + 2.
            self.assertEqual(len(lines), 2 * len(sr.METRICS) + 2 + 5 + 2)
            self.assertIn("| node1 | RSS (VmRSS)", out)
            self.assertIn("after c2", lines[0])
            self.assertIn("timers: rcnetctl does not expose", out)
            with open(os.path.join(r.dir, "soak.json")) as f:
                self.assertEqual(len(json.load(f)["rows"]), 2 * len(sr.METRICS))
            ok = subprocess.run([sys.executable, SCRIPT, "--settled", r.dir],
                                capture_output=True, text=True)
            self.assertEqual(ok.returncode, 0, ok.stdout)
            # One more sample with a QP too many on node 1: not settled.
            r.write("soak-samples.txt", sample(T0 + 400_000, "after F4",
                                               {1: (101, 1, 20, 7, 4, 2), 2: (202, 1, 21, 6, 4, 2)}),
                    mode="a")
            no = subprocess.run([sys.executable, SCRIPT, "--settled", r.dir],
                                capture_output=True, text=True)
            self.assertEqual(no.returncode, 1)
            self.assertIn("node1 qps_kernel 7 (baseline 6)", no.stdout)
            self.assertIn("node1 qps_ctl 7 (baseline 6)", no.stdout)
            # The periodic sampler has begun its next block: --settled
            # still reads the last whole one.
            r.write("soak-samples.txt", f"S {T0 + 402_000} periodic\nK qp []\n", mode="a")
            no = subprocess.run([sys.executable, SCRIPT, "--settled", r.dir],
                                capture_output=True, text=True)
            self.assertIn("node1 qps_ctl 7 (baseline 6)", no.stdout)
        finally:
            r.close()

    def test_an_empty_folder_still_reports(self):
        d = tempfile.mkdtemp(prefix="soak-empty-")
        try:
            buf = io.StringIO()
            with redirect_stdout(buf):
                self.assertEqual(sr.main(["soak_report.py", d]), 0)
            self.assertIn("0 fault cycles", buf.getvalue())
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
