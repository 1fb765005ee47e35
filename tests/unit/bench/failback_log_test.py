#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""tests/lab/rails/failback_log.py without the lab: fail-backs and the
device mode (--device) on a log and windows written by the test itself.

    failback_log_test.py FAILBACK_LOG_PY

The log lines are rcnetd's own wording (lib/cm/teardown.cpp, the rails'
fail-back line in lib/cm/rails.cpp); every expected figure is the difference of two times
written beside it.
"""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = sys.argv[1]
T0 = 1_764_000_000_000  # epoch ms of 2025-11-24T16:00:00.000Z


def stamp(ms):
    """rcnetd's log time (UTC, ms) of epoch ms."""
    s, m = divmod(ms - T0, 1000)
    hh, rest = divmod(16 * 3600 + s, 3600)
    mm, ss = divmod(rest, 60)
    return f"2025-11-24T{hh:02d}:{mm:02d}:{ss:02d}.{m:03d}"


def lost(ms, by):
    return (f"{stamp(ms)} [rcnetd] critical RDMA device lost (RDMA device removed, noticed by {by}): "
            "releasing every QP, cm id, MR, SRQ, CQ and PD of it; retrying 10.99.0.1:7471 until a "
            "device owns it again")


def adopted(ms, by, setup=None):
    """The line of lib/cm/teardown.cpp; without setup, as before it said the
    setup's time."""
    took = f", set up in {setup} ms" if setup is not None else ""
    return (f"{stamp(ms)} [rcnetd] warning RDMA device rxe_1 adopted again on 10.99.0.1:7471 "
            f"(noticed by {by}, 812 ms after its loss{took}): accepting connections")


def back(ms):
    return f"{stamp(ms)} [rcnetd] info peer 10.100.0.2: traffic back on rail 0 from rail 1"


def moved(ms, cause):
    return (f"{stamp(ms)} [rcnetd] warning peer 10.100.0.2: traffic moved from rail 0 to rail 1 "
            f"({cause})")


class FailbackLog(unittest.TestCase):
    def run_script(self, log, files, *args):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "rcnetd-1.log"), "w") as f:
                f.write("\n".join(log) + "\n")
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            out = subprocess.run([sys.executable, SCRIPT, d, *args], capture_output=True,
                                 text=True, check=True)
            return out.stdout.strip()

    def test_failback_from_each_heal(self):
        # Heals at +1000 and +5000; traffic back at +1250 and +5400; a line
        # before the first heal counts for none.
        log = [back(T0 + 10), back(T0 + 1250), back(T0 + 5400)]
        win = f"{T0}:{T0 + 1000} replies=1\n{T0 + 4000}:{T0 + 5000} replies=1\nall replies=2\n"
        self.assertEqual(self.run_script(log, {"rcnet-down.windows": win}, "rcnet"), "250 400")

    def test_failover_from_each_fault(self):
        # Faults at +0 and +4000; moved at +30 (carrier) and +4012
        # (port_error); a fail-back line and a move before the first fault
        # count for none; the third fault, at +8000, saw no move.
        log = [moved(T0 - 5, "carrier"), moved(T0 + 30, "carrier"), back(T0 + 1250),
               moved(T0 + 4012, "port_error")]
        win = (f"{T0}:{T0 + 1000} r\n{T0 + 4000}:{T0 + 5000} r\n{T0 + 8000}:{T0 + 9000} r\n"
               "all replies=3\n")
        self.assertEqual(
            self.run_script(log, {"rcnet-down.windows": win}, "rcnet", "--failover"),
            "failover after the breaking command started (ms, sorted): 12 30 none; noticed by: "
            "carrier x1, port_error x1")

    def test_device_release_and_adoption(self):
        # Event 1: delete at +0, lost at +300 (async event); add from +2000
        # to +2600, adopted at +2650 (monitor). Event 2: delete at +5000,
        # lost at +5100 (monitor); add from +7000 to +7900, adopted at
        # +7800: before the add returned (-100).
        log = [lost(T0 + 300, "async event"), adopted(T0 + 2650, "netlink monitor"),
               lost(T0 + 5100, "netlink monitor"), adopted(T0 + 7800, "netlink monitor")]
        files = {
            "removal-down.windows": f"{T0}:{T0 + 2000} r\n{T0 + 5000}:{T0 + 7000} r\nall\n",
            "removal-add.windows": f"{T0 + 2000}:{T0 + 2600}\n{T0 + 7000}:{T0 + 7900}\n",
        }
        self.assertEqual(
            self.run_script(log, files, "removal", "1", "--device"),
            "device released after the delete's start (ms, sorted): 100 300; noticed by: "
            "async event x1, netlink monitor x1; adopted again after the add returned (ms, "
            "sorted): -100 50; noticed by: netlink monitor x2")

    def test_device_setup_apart_from_the_notice(self):
        # Add returned at +2600 and +7900; adopted at +2650 after a 250 ms
        # setup (began -200: before the add returned) and at +8300 after
        # 100 ms (began +300).
        log = [lost(T0 + 300, "async event"), adopted(T0 + 2650, "netlink monitor", 250),
               lost(T0 + 5100, "async event"), adopted(T0 + 8300, "poll", 100)]
        files = {
            "removal-down.windows": f"{T0}:{T0 + 2000} r\n{T0 + 5000}:{T0 + 7000} r\n",
            "removal-add.windows": f"{T0 + 2000}:{T0 + 2600}\n{T0 + 7000}:{T0 + 7900}\n",
        }
        self.assertTrue(
            self.run_script(log, files, "removal", "1", "--device").endswith(
                "adopted again after the add returned (ms, sorted): 50 400; noticed by: "
                "netlink monitor x1, poll x1; began after the add returned (ms, sorted): -200 300; "
                "set up in (ms, sorted): 100 250"))

    def test_device_never_adopted(self):
        log = [lost(T0 + 300, "async event")]
        files = {"removal-down.windows": f"{T0}:{T0 + 2000} r\n",
                 "removal-add.windows": f"{T0 + 2000}:{T0 + 2600}\n"}
        self.assertIn("adopted again after the add returned (ms, sorted): none; noticed by: nothing",
                      self.run_script(log, files, "removal", "1", "--device"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
