#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs every test of rcnet (unit + Soft-RoCE lab) on Debian 12, as root:
# installs what it needs, builds warning-clean into ./build, runs meson test
# (unit, lab, package) and, in the background while it runs
# (tools/test-extra.sh, in an idle CPU cgroup: a lab test leaves about one
# core idle), more steps:
#   - the Debian package, built once into ./build/deb for the package test
#     and lab-systemd (they wait for it rather than build it themselves);
#   - Debian 13, in a cached trixie root (tools/trixie.sh; RCNET_TRIXIE=0
#     skips it): the package built warning-clean by g++ 14 and checked by
#     lintian; then
#   - sanitizers: the unit suite again, built by clang with ASan + UBSan
#     (any sanitizer report aborts its test: a failure; in the trixie root
#     this is Debian 13's unit run, with Catch2 v3), and
#   - fuzz: tools/fuzz.sh --seconds 30, each fuzzer on its in-tree corpus,
#     from that same build dir: both in the trixie root with clang 19, or
#     on this host with clang 14 into ./build-fuzz when RCNET_TRIXIE=0;
# then prints their logs and ends with meson's summary and a plain
# "N passed, N failed, N skipped" line counting meson's tests and the
# background steps: on this host each sanitizer-built test and each fuzzer,
# in the trixie root each step (one result each).
#
# Environment: RCNET_BUILD_DIR (default ./build), RCNET_TEST_SUITES (e.g.
# "unit" to run one suite; default all). The lab tests fail with the reason
# when the lab cannot boot; only RCNET_LAB_SKIP=1 turns them into skips.
# RCNET_FUZZ_BUILD_DIR (default ./build-fuzz); RCNET_SANITIZE=0 skips the
# sanitizer step; RCNET_FUZZ_SECONDS (default 30) per fuzzer, 0 skips the
# fuzz step. With RCNET_TEST_SUITES set, the extra steps run only when it
# names them: "asan" (or "unit"), "fuzz", and the package build for "lab"
# or "package".
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${RCNET_BUILD_DIR:-$src/build}

"$src/tools/install-deps.sh"

# -g1 (line tables only: backtraces and sanitizer reports keep file:line):
# at -O2, full -g costs 40% more compile time (the manager's unit tests 13.5
# -> 19.2 s), and the build is on the suite's critical path.
# -Dunity=on (twelve files of a target compiled as one unit, the project's
# unity_size): 280 s against 351 s with four and 413 s one at a time, from
# clean on an idle 2-core machine (docs/design.md "The suite's
# 45 minutes on 2 cores"), as are the package's, the clang build's and
# tools/trixie.sh's.
opts=(-Dwerror=true -Dlab_tests=true -Dunity=on -Dcpp_args=-g1)
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "${opts[@]}"
else
  meson configure "$build" "${opts[@]}"
fi
ninja -C "$build"

suites=()
for s in ${RCNET_TEST_SUITES:-}; do suites+=(--suite "$s"); done
rc=0

# Which steps RCNET_TEST_SUITES asks for: all when it is empty; "asan" (or
# "unit") the sanitizer step, "fuzz" the fuzz step, "lab" or "package" the
# package build.
wants() {
  [ -z "${RCNET_TEST_SUITES:-}" ] && return 0
  for s in $RCNET_TEST_SUITES; do
    for w in "$@"; do [ "$s" = "$w" ] && return 0; done
  done
  return 1
}
wants asan unit || export RCNET_SANITIZE=0
wants fuzz || export RCNET_FUZZ_SECONDS=0
wants trixie unit || export RCNET_TRIXIE=0
want_trixie=${RCNET_TRIXIE:-1}
export RCNET_TRIXIE=$want_trixie
want_deb=0
wants lab package && want_deb=1
want_san=1
[ "${RCNET_SANITIZE:-1}" != 0 ] || want_san=0
fuzz_seconds=${RCNET_FUZZ_SECONDS:-30}
export RCNET_FUZZ_SECONDS=$fuzz_seconds # the summary below reads it: one default

# --- in the background, while the lab runs: package, clang build, ASan, fuzz ---
# tools/test-extra.sh: the package that lab-systemd and the package test
# reuse, then one clang build dir (ASan + UBSan, -fno-sanitize-recover=all so
# that a UBSan report aborts, -Werror: the clang warning gate beside g++'s)
# for the unit suite under sanitizers and for the fuzzers: in the trixie root
# (clang 19) with the Debian 13 steps, or here (clang 14) when those are
# skipped. At the lowest CPU weight it only takes the cycles the lab's QEMU
# leaves idle.
san=${RCNET_FUZZ_BUILD_DIR:-$src/build-fuzz}
# The sanitizer and fuzz steps on this host: only without the trixie root.
host_san=0 host_fuzz=0
if [ "$want_trixie" != 1 ]; then
  host_san=$want_san
  [ "$fuzz_seconds" = 0 ] || host_fuzz=1
fi
export RCNET_HOST_SAN=$host_san RCNET_HOST_FUZZ=$host_fuzz # the summary below reads them
extra_logs=$(mktemp -d /tmp/rcnet-test-extra.XXXXXX)
bg=""
cleanup() {
  [ -z "$bg" ] || kill -- -"$bg" 2>/dev/null || true
  rm -rf "$extra_logs"
}
trap cleanup EXIT
if [ "$want_deb" = 1 ] || [ "$want_san" = 1 ] || [ "$fuzz_seconds" != 0 ] || [ "$want_trixie" = 1 ]; then
  setsid "$src/tools/test-extra.sh" "$src" "$build" "$san" "$extra_logs" \
    "$want_deb" "$want_san" "$fuzz_seconds" "$want_trixie" </dev/null &
  bg=$!
fi

t0=$SECONDS
meson test -C "$build" --print-errorlogs --num-processes 1 "${suites[@]}" || rc=$?
echo "meson test: $((SECONDS - t0)) s"

if [ -n "$bg" ]; then
  t0=$SECONDS
  wait "$bg" || true
  bg=""
  echo "background steps: waited $((SECONDS - t0)) s after meson test; their CPU weight: $(cat "$extra_logs/cpu" 2>/dev/null)"
fi
step_rc() { awk -v n="$1" '$1 == n { print $2 }' "$extra_logs/status" 2>/dev/null; }
step_s() { awk -v n="$1" '$1 == n { print $3 }' "$extra_logs/status" 2>/dev/null; }
san_build_failed=0
if [ "$host_san" = 1 ] || [ "$host_fuzz" = 1 ]; then
  if [ "$(step_rc clang)" != 0 ]; then
    san_build_failed=1
    tail -n 60 "$extra_logs/clang.log" 2>/dev/null || true
    echo "test.sh: the clang build (ASan + UBSan) failed" >&2
    rc=1
  fi
  echo "clang build (ASan + UBSan, unit suite and fuzzers): $(step_s clang) s"
fi
if [ "$want_deb" = 1 ]; then
  echo "package build: $(step_s deb) s (rc $(step_rc deb); its tests report it)"
fi
if [ "$host_san" = 1 ] && [ "$san_build_failed" = 0 ]; then
  echo "--- sanitizers: the unit suite under ASan + UBSan ($san)"
  cat "$extra_logs/asan.log" 2>/dev/null || true
  [ "$(step_rc asan)" = 0 ] || rc=1
  echo "sanitizers: run $(step_s asan) s"
fi
fuzz_log=$extra_logs/fuzz.log
if [ "$host_fuzz" = 1 ] && [ "$san_build_failed" = 0 ]; then
  echo "--- fuzz: each fuzzer ${fuzz_seconds} s on its corpus"
  cat "$fuzz_log" 2>/dev/null || true
  [ "$(step_rc fuzz)" = 0 ] || rc=1
  echo "fuzz: $(step_s fuzz) s"
fi

if [ "$want_trixie" = 1 ]; then
  echo "--- Debian 13 (tools/trixie.sh: the package; with clang 19, the sanitizers and fuzzers as asked)"
  cat "$extra_logs/trixie.log" 2>/dev/null || true
  [ "$(step_rc trixie)" = 0 ] || rc=1
  echo "trixie: $(step_s trixie) s"
fi

# A plain closing line any reader understands.
python3 - "$build/meson-logs/testlog.json" "$san/meson-logs/testlog.json" \
  "$san_build_failed" "$fuzz_log" "$extra_logs/trixie.log" <<'PY' || true
import json, os, re, sys
ok = fail = skip = 0
why = []
def count(path):
    global ok, fail, skip
    for line in open(path):
        t = json.loads(line)
        r = t.get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): ok += 1
        elif r == "SKIP": skip += 1
        else:
            fail += 1
            # The failed checks of each failed test, repeated at the very end
            # (the only part of a long log some CI views keep).
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            lines = [l.strip() for l in out.splitlines()
                     if "LAB FAIL" in l or "FAILED:" in l or l.startswith("rcnet-lab: FAIL")]
            why.append(f"{t.get('name', '?')}: {r}")
            why.extend("    " + l[-300:] for l in lines[:12])
count(sys.argv[1])
if os.environ["RCNET_HOST_SAN"] == "1":
    if sys.argv[3] == "1" or not os.path.exists(sys.argv[2]):
        fail += 1  # the sanitizer build itself
    else:
        count(sys.argv[2])
if os.environ["RCNET_HOST_FUZZ"] == "1":
    m = None
    for line in (open(sys.argv[4]) if os.path.exists(sys.argv[4]) else []):
        m = re.match(r"fuzz: (\d+) passed, (\d+) failed", line) or m
    if m:
        ok += int(m.group(1)); fail += int(m.group(2))
    else:
        fail += 1  # fuzz.sh did not get as far as running them
if os.environ.get("RCNET_TRIXIE", "1") != "0":
    # One result per step tools/trixie.sh ran ("trixie: STEP ok|FAIL (N s)").
    steps = [l for l in (open(sys.argv[5]) if os.path.exists(sys.argv[5]) else [])
             if re.match(r"trixie: \w+ (ok|FAIL) ", l)]
    for l in steps:
        if " ok " in l: ok += 1
        else:
            fail += 1
            why.append(l.strip())
    if not steps:
        fail += 1  # trixie.sh did not get as far as a step
        why.append("trixie: no step ran (see its log above)")
if why:
    print("--- failed tests, their failed checks")
    print("\n".join(why))
print(f"{ok} passed, {fail} failed, {skip} skipped")
PY
exit "$rc"
