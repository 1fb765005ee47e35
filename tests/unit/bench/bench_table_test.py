#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""tools/bench/bench_table.py on a small saved results directory (fixture/).

    bench_table_test.py BENCH_TABLE_PY FIXTURE_DIR

The fixture holds what tests/lab/bench/bench.sh and rcnet-bench-sim would
have left (bench-raw.txt, anchors.json, sim.json, one iperf3 JSON) and the
table rows expected from it (expected-table.txt). The figures are chosen so
that each ratio and goal can be checked by hand below.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPT, FIXTURE = sys.argv[1], sys.argv[2]
SYM = "setup rate, 1000 connections from 4 nodes (symmetric client)"
OLD = "setup rate, 1000 connections from 4 nodes (old: a cm::Manager per address)"
MEDIANS = "setup rate, 1000 connections from 4 nodes (symmetric client, median of 3 pairs' ratios)"


def anchor_txt(bond_p50, rcnet_p50, bond_lost=40, rcnet_lost=0):
    """bond_anchor.sh's summary lines for one boot's carrier sets."""
    return (f"bond down: windows=10 gap_p50_ms={bond_p50} gap_p99_ms=90 gap_max_ms=95 "
            f"lost_total={bond_lost} lost_p50=4 lost_max=6 dups_total=0\n"
            "bond up: windows=10 gap_p50_ms=40 gap_p99_ms=50 gap_max_ms=51 lost_total=0\n"
            f"rcnet down: windows=10 gap_p50_ms={rcnet_p50} gap_p99_ms=60 gap_max_ms=61 "
            f"lost_total={rcnet_lost} lost_p50=0 lost_max=0 dups_total=12\n"
            "rcnet all: replies=3000 sent=3000 lost=0\n")


def run_table(edit_raw=None, drop=(), extra="", dirs=None, files=None):
    """Runs the script on a copy of the fixture, its bench-raw.txt filtered by
    edit_raw and `extra` appended, plus `files` ({file: text}) and `dirs`
    ({folder: {file: text}});
    returns (stdout, rows by metric, dir)."""
    res = tempfile.mkdtemp(prefix="bench-table-")
    for name in os.listdir(FIXTURE):
        if name != "expected-table.txt" and name not in drop:
            shutil.copy(os.path.join(FIXTURE, name), res)
    for name, text in (files or {}).items():
        with open(os.path.join(res, name), "w") as f:
            f.write(text)
    for d, in_dir in (dirs or {}).items():
        os.makedirs(os.path.join(res, d))
        for name, text in in_dir.items():
            with open(os.path.join(res, d, name), "w") as f:
                f.write(text)
    if edit_raw or extra:
        path = os.path.join(res, "bench-raw.txt")
        with open(path) as f:
            lines = [l for l in f if not edit_raw or edit_raw(l)]
        with open(path, "w") as f:
            f.writelines(lines + [extra])
    out = subprocess.run([sys.executable, SCRIPT, res], check=True, capture_output=True,
                         text=True).stdout
    with open(os.path.join(res, "bench.json")) as f:
        rows = {r["metric"]: r for r in json.load(f)}
    return out, rows, res


class BenchTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out, cls.rows, cls.res = run_table()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.res)

    def row(self, metric):
        self.assertIn(metric, self.rows)
        return self.rows[metric]

    def test_rows_say_their_provider_and_kernel(self):
        # No RESULTS/provider (a run from before it): rxe's.
        self.assertEqual({r["provider"] for r in self.rows.values()}, {"rxe"})
        self.assertIn("provider: rxe", self.out)
        # The kernel is the anchors' (uname -r in the same boot).
        self.assertEqual({r["kernel"] for r in self.rows.values()}, {"6.1.0-56-amd64"})
        self.assertIn("kernel: 6.1.0-56-amd64", self.out)
        # rcnet-bench --provider siw writes RESULTS/provider: every row says so.
        out, rows, res = run_table(files={"provider": "siw\n"})
        shutil.rmtree(res)
        self.assertEqual({r["provider"] for r in rows.values()}, {"siw"})
        self.assertIn("provider: siw", out)

    def test_table_as_expected(self):
        got = [l for l in self.out.splitlines() if l.startswith("|")]
        with open(os.path.join(FIXTURE, "expected-table.txt")) as f:
            want = f.read().splitlines()
        self.assertEqual(got, want)

    def test_latency_against_the_event_mode_anchor(self):
        # ping -A median 0.120 ms RTT -> 60 us one way; ib_send_lat -e typical 40 us.
        r = self.row("ping -A over rc0, median RTT/2")
        self.assertAlmostEqual(r["rcnet"], 60.0)
        self.assertEqual(r["anchor"], 40.0)
        self.assertAlmostEqual(r["ratio"], 1.5)
        self.assertIs(r["met"], True)  # <= 2.0
        # UDP RR: (150 - 50) / 2 = 50 us against 40: 1.25.
        r = self.row("UDP RR (python3), rc0 minus underlay, median RTT/2")
        self.assertAlmostEqual(r["rcnet"], 50.0)
        self.assertAlmostEqual(r["ratio"], 1.25)
        self.assertIs(r["met"], True)
        # A row without a goal says nothing about it.
        self.assertIsNone(self.row("ping -A over rc0, min RTT/2")["met"])

    def test_goals_on_absolute_figures(self):
        # No anchor: the goal applies to the figure itself.
        r = self.row("syscalls per forwarded packet, rcnetd node1, ping sender")
        self.assertAlmostEqual(r["rcnet"], 5.0)  # 1000 / 200
        self.assertIsNone(r["ratio"])
        self.assertIs(r["met"], True)  # <= 6
        r = self.row("RSS per idle connection (1000 QPs in rdma res)")
        self.assertAlmostEqual(r["rcnet"], 20.0)  # (30000 - 10000) KiB / 1000
        self.assertIs(r["met"], False)  # <= 16
        r = self.row("reaper work per tick at 16K connections (sim)")
        self.assertAlmostEqual(r["rcnet"], 0.5)  # 0.15 s * 1000 / 300 ticks
        self.assertIs(r["met"], True)

    def test_throughput_and_setup_ratios(self):
        r = self.row("TCP iperf3 over rc0, MTU 1500, offload on")
        self.assertAlmostEqual(r["ratio"], 0.7)  # 560 / 800, exactly at the goal
        self.assertIs(r["met"], True)
        self.assertIn("20.0 KiB of TCP payload per data SEND", self.out)  # 40 MiB / 2048
        # The goal row is the symmetric client's: 1000 in 3.125 s against
        # ucmatose's 1000 in 2.5 s.
        r = self.row(SYM)
        self.assertAlmostEqual(r["rcnet"], 320.0)
        self.assertAlmostEqual(r["anchor"], 400.0)
        self.assertAlmostEqual(r["ratio"], 0.8)
        self.assertIs(r["met"], False)  # >= 0.9
        # The old figure (a cm::Manager per address) beside it, without a goal.
        r = self.row(OLD)
        self.assertAlmostEqual(r["rcnet"], 500.0)  # 1000 in 2 s
        self.assertAlmostEqual(r["anchor"], 400.0)
        self.assertAlmostEqual(r["ratio"], 1.25)
        self.assertIsNone(r["goal"])
        self.assertIsNone(r["met"])
        r = self.row("teardown peer SIGKILL -> QP gone from rdma res")
        self.assertAlmostEqual(r["ratio"], 4200 / 4100)  # bound 3000 + 500 + 600
        self.assertIs(r["met"], False)

    def test_notes_and_chart(self):
        self.assertIn("anchor ib_send_lat -e: typical 40.0 us is 4.0x its min 10.0 us", self.out)
        self.assertIn("reaped_during_latency: HAD REAPS", self.out)
        with open(os.path.join(self.res, "bench-chart.dat")) as f:
            chart = f.read().splitlines()
        goals = [r for r in self.rows.values() if r["goal"] is not None]
        self.assertEqual(len(chart), len(goals))
        # value over threshold: 1.5 / 2.0 for the first goal row, met.
        self.assertEqual(chart[0].split('"')[2].split(), ["0.75", "1"])

    def test_udp_stream_against_the_same_sender_without_gso(self):
        udp = ("UDP stream over rc0, MTU 1500, GSO (rc0's gso_max_segs datagrams of 1,400 bytes "
               "per send)")
        self.assertNotIn(udp, self.rows)  # the fixture's run had no UDP stream
        extra = ("udp_rc0_uso 1\nudp_rc0_gso_segments 29\nudp_rc0_gso_MBps 90.5\n"
                 "udp_rc0_plain_MBps 36.2\nudp_rc0_gso_sent_received 290000/284200\n"
                 "udp_rc0_gso_gso_sent_segmented_tun_reads 10000/0/10000\n")
        out, rows, res = run_table(extra=extra)
        shutil.rmtree(res)
        r = rows[udp]
        self.assertAlmostEqual(r["ratio"], 2.5)  # 90.5 / 36.2
        self.assertEqual(r["anchor_name"], "the same stream, one datagram per send")
        self.assertIsNone(r["goal"])
        self.assertIn("rc0 with USO, 29 datagrams per send", out)
        self.assertIn("GSO 290000/284200", out)
        self.assertIn("GSO 10000/0/10000, plain ?", out)

    def test_a_goal_row_not_measured_did_not_meet_it(self):
        out, rows, res = run_table(edit_raw=lambda l: not l.startswith("rcnet_sym_connect_ms "),
                                   drop=("sim.json",))
        try:
            r = rows[SYM]
            self.assertIsNone(r["rcnet"])
            self.assertIsNone(r["ratio"])
            self.assertIs(r["met"], False)
            self.assertAlmostEqual(rows[OLD]["rcnet"], 500.0)
            self.assertFalse(any("(sim)" in m for m in rows))
        finally:
            shutil.rmtree(res)

    def test_a_failed_connect_leaves_no_setup_rate(self):
        # Every connection made but one attempt failed on the way (not retried):
        # no rate, so the goal is not met.
        out, rows, res = run_table(
            edit_raw=lambda l: not l.startswith("rcnet_sym_connect_failures "),
            extra="rcnet_sym_connect_failures 1\n")
        try:
            self.assertIsNone(rows[SYM]["rcnet"])
            self.assertIs(rows[SYM]["met"], False)
        finally:
            shutil.rmtree(res)

    def test_repeated_pairs_take_the_medians(self):
        # bench.sh ARG 7 = 3: two more pairs. rcnet 1000 in 3.125, 2.0 and
        # 4.0 s (320, 500, 250 conn/s: median 320); ucmatose 1000 in 2.5,
        # 2.0 and 5.0 s (400, 500, 200: median 400). The goal moves to the
        # medians' row, whose ratio is the median of the pairs' ratios (0.8,
        # 1.0, 1.25: 1.0, met), not the ratio of the medians (0.8): a pair
        # shares the host's load of its moment.
        extra = "".join(
            f"rcnet_sym_r{r}_established 1000\nrcnet_sym_r{r}_connect_failures 0\n"
            f"rcnet_sym_r{r}_connect_ms {rms}\nucmatose_r{r}_connect_ms {ums}\n"
            for r, rms, ums in ((2, 2000, 2000), (3, 4000, 5000)))
        out, rows, res = run_table(extra=extra)
        try:
            r = rows[MEDIANS]
            self.assertAlmostEqual(r["rcnet"], 320.0)
            self.assertAlmostEqual(r["anchor"], 400.0)
            self.assertAlmostEqual(r["ratio"], 1.0)
            self.assertIs(r["met"], True)
            self.assertIn("(spread 0.800-1.25 (n 3))", out)
            self.assertIn("rcnet conn/s spread 250-500 (n 3), ucmatose 200-500 (n 3)", out)
            self.assertIsNone(rows[SYM]["goal"])  # the single run keeps no goal
            self.assertIn("500/500 = 1.00", out)  # the second pair
        finally:
            shutil.rmtree(res)
        # One repeated run that failed an attempt: no median, goal not met.
        out, rows, res = run_table(extra=extra.replace("r3_connect_failures 0",
                                                       "r3_connect_failures 2"))
        try:
            r = rows[MEDIANS]
            self.assertIsNone(r["rcnet"])
            self.assertIs(r["met"], False)
        finally:
            shutil.rmtree(res)

    def test_auth_storms_against_the_same_without_and_ucmatose(self):
        # Triples: the fixture's first (sym 1000 in 3.125 s, ucmatose 2.5 s)
        # with an auth storm whose hub ended at 3.0 s but whose last proof
        # SEND completed at 3.2 s (the later counts: 312.5/s), and two more.
        # Auth/sym ratios 0.977, 1.0, 0.8: median 0.977 (met); auth/ucmatose
        # 0.781, 1.0, 0.8: median 0.8 (not met).
        def auth(key, ms, end, proven=1000, fails=0):
            return (f"rcnet_{key}_established 1000\nrcnet_{key}_connect_failures {fails}\n"
                    f"rcnet_{key}_connect_ms {ms}\nrcnet_{key}_proof_client_end_ms {end}\n"
                    f"rcnet_{key}_hub_auth_proven {proven}\n")
        extra = auth("sym_auth", 3000, 3200) + "".join(
            f"rcnet_sym_r{r}_established 1000\nrcnet_sym_r{r}_connect_failures 0\n"
            f"rcnet_sym_r{r}_connect_ms {rms}\nucmatose_r{r}_connect_ms {ums}\n" +
            auth(f"sym_auth_r{r}", ams, ams - 100)
            for r, rms, ums, ams in ((2, 2000, 2000, 2000), (3, 4000, 4000, 5000)))
        row = "setup rate, 1000 connections from 4 nodes (symmetric client, auth required, "
        out, rows, res = run_table(extra=extra)
        try:
            r = rows[row + "median of 3)"]
            self.assertAlmostEqual(r["rcnet"], 312.5)  # 312.5, 500, 200
            self.assertAlmostEqual(r["anchor"], 320.0)  # 320, 500, 250
            self.assertAlmostEqual(r["ratio"], 312.5 / 320)
            self.assertIs(r["met"], True)
            r = rows[row + "against ucmatose, median of 3)"]
            self.assertAlmostEqual(r["anchor"], 400.0)  # 400, 500, 250
            self.assertAlmostEqual(r["ratio"], 0.8)
            self.assertIs(r["met"], False)
            self.assertIn("proofs counted by the hub per auth storm: 1000, 1000, 1000", out)
        finally:
            shutil.rmtree(res)
        # A proof the hub did not count leaves that storm, and the medians,
        # without a rate.
        out, rows, res = run_table(extra=extra.replace(
            "rcnet_sym_auth_r3_hub_auth_proven 1000", "rcnet_sym_auth_r3_hub_auth_proven 999"))
        try:
            self.assertIsNone(rows[row + "median of 3)"]["rcnet"])
            self.assertIs(rows[row + "median of 3)"]["met"], False)
        finally:
            shutil.rmtree(res)

    def test_same_clients_into_ucmatose_server(self):
        # The symmetric clients into ucmatose's server: 1000 in 2.0 s (500/s)
        # against rcnet's 1000 in 3.125 s (320/s): 0.64, no goal.
        out, rows, res = run_table(extra="ucmatose_symclient_established 1000\n"
                                   "ucmatose_symclient_connect_failures 0\n"
                                   "ucmatose_symclient_connect_ms 2000\n")
        try:
            r = rows["setup rate, 1000 connections from 4 nodes (symmetric client into each hub)"]
            self.assertAlmostEqual(r["anchor"], 500.0)
            self.assertAlmostEqual(r["ratio"], 0.64)
            self.assertIsNone(r["met"])
        finally:
            shutil.rmtree(res)
        # A failed attempt on ucmatose's side leaves it without a rate.
        out, rows, res = run_table(extra="ucmatose_symclient_established 1000\n"
                                   "ucmatose_symclient_connect_failures 3\n"
                                   "ucmatose_symclient_connect_ms 2000\n")
        try:
            r = rows["setup rate, 1000 connections from 4 nodes (symmetric client into each hub)"]
            self.assertIsNone(r["anchor"])
            self.assertIsNone(r["ratio"])
        finally:
            shutil.rmtree(res)

    def test_a_b_a_rows_of_a_second_rcnetd(self):
        # bench.sh ARG 6: the storm with rcnetd B (1000 in 2.5 s) and with A
        # again (1000 in 3.2 s) beside the first A run, without goals.
        out, rows, res = run_table(extra="".join(
            f"rcnet_{k}_{f} {v}\n" for k, ms in (("sym_b", 2500), ("sym_a2", 3200))
            for f, v in (("established", 1000), ("in_service", 1000),
                         ("connect_failures", 0), ("connect_ms", ms), ("rcnetd", "/x/rcnetd"))))
        try:
            b = rows["setup rate, 1000 connections from 4 nodes (symmetric client, rcnetd B)"]
            self.assertAlmostEqual(b["ratio"], 1.0)  # 400 against 400
            self.assertIsNone(b["met"])
            a2 = rows["setup rate, 1000 connections from 4 nodes (symmetric client, rcnetd A again)"]
            self.assertAlmostEqual(a2["rcnet"], 312.5)
            self.assertIs(rows[SYM]["met"], False)  # the goal stays on the first run
            self.assertIn("rcnet-bench-symload (/x/rcnetd)", out)
        finally:
            shutil.rmtree(res)

    def test_results_from_before_the_symmetric_client(self):
        # A results directory from before rcnet-bench-symload: the old row as
        # it was, the symmetric goal row present and not met.
        out, rows, res = run_table(edit_raw=lambda l: not l.startswith("rcnet_sym_"))
        try:
            self.assertAlmostEqual(rows[OLD]["ratio"], 1.25)
            self.assertIsNone(rows[SYM]["rcnet"])
            self.assertIs(rows[SYM]["met"], False)
        finally:
            shutil.rmtree(res)


class FailoverRows(unittest.TestCase):
    FAIL = "carrier failover, ping gap p50 (median of {} of {} boots)"

    def test_the_median_of_the_boots_ratios(self):
        # Three boots: rcnet/bonding 20/50 = 0.4, 30/50 = 0.6, 10/40 = 0.25:
        # median 0.4, met (<= 0.5); the medians of the figures themselves
        # (20 and 50) are what the row shows beside it.
        dirs = {"failover-1": {"bond-anchor.txt": anchor_txt(50, 20)},
                "failover-2": {"bond-anchor.txt": anchor_txt(50, 30)},
                "failover-3": {"bond-anchor.txt": anchor_txt(40, 10)}}
        out, rows, res = run_table(dirs=dirs)
        try:
            r = rows[self.FAIL.format(3, 3)]
            self.assertAlmostEqual(r["ratio"], 0.4)
            self.assertAlmostEqual(r["rcnet"], 20.0)
            self.assertAlmostEqual(r["anchor"], 50.0)
            self.assertIs(r["met"], True)
            self.assertIn("(spread 0.250-0.600 (n 3))", out)
        finally:
            shutil.rmtree(res)

    def test_a_boot_without_figures_leaves_no_ratio(self):
        dirs = {"failover-1": {"bond-anchor.txt": anchor_txt(50, 20)},
                "failover-2": {"bond-anchor.txt": "rcnet: skipped\n"}}
        out, rows, res = run_table(dirs=dirs)
        try:
            r = rows[self.FAIL.format(1, 2)]
            self.assertIsNone(r["ratio"])
            self.assertIs(r["met"], False)
        finally:
            shutil.rmtree(res)

    def test_compare_puts_runs_side_by_side(self):
        # Two runs: this fixture's (rxe) and one with the provider file and
        # one row fewer (siw): one column each, headed provider + kernel.
        _, rows, rxe = run_table()
        _, _, siw = run_table(files={"provider": "siw\n"}, edit_raw=lambda l: not l.startswith("strace_"))
        try:
            out = subprocess.run([sys.executable, SCRIPT, "--compare", rxe, siw], check=True,
                                 capture_output=True, text=True).stdout
        finally:
            shutil.rmtree(rxe)
            shutil.rmtree(siw)
        lines = out.splitlines()
        head = next(l for l in lines if l.startswith("| metric"))
        self.assertEqual([c.strip() for c in head.strip("|").split("|")][3:],
                         ["rxe 6.1.0-56-amd64", "siw 6.1.0-56-amd64"])

        def cells(metric):
            line = next(l for l in lines if l.startswith(f"| {metric} "))
            return [c.strip() for c in line.strip("|").split("|")]
        # A ratio row: each run's ratio to its own anchor, with its verdict.
        r = rows["ping -A over rc0, median RTT/2"]
        c = cells("ping -A over rc0, median RTT/2")
        self.assertEqual(c[1], "x ib_send_lat -e typical")
        self.assertEqual(c[3], c[4])
        self.assertTrue(c[3].startswith(str(r["ratio"])[:4]))
        self.assertTrue(c[3].endswith(" NO" if r["met"] is False else " ok"))
        # A row the second run lacks says so instead of a figure.
        syscall = next(m for m in rows if m.startswith("syscalls per forwarded packet"))
        c = cells(syscall)
        self.assertEqual(c[1], "calls/pkt")
        self.assertNotEqual(c[3], "(not run)")
        self.assertEqual(c[4], "(not run)")

    def test_no_failover_boots_no_row(self):
        out, rows, res = run_table()
        try:
            self.assertFalse([m for m in rows if m.startswith("carrier failover")])
        finally:
            shutil.rmtree(res)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
