#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The steps of tools/test.sh that need CPU but not the lab, run in the
# background while the lab tests run (a lab test leaves about one of the two
# cores idle: 45% busy over lab-daemon-mesh3, measured from /proc/stat):
#   1. the Debian package (tests/package/ensure-deb.sh into BUILD/deb), which
#      the package test and lab-systemd then reuse instead of building it
#      inside their own run (they wait on its lock if it is not done);
#   2. the clang build (ASan + UBSan, -Werror) of the unit suite and the
#      fuzzers, at -O0 (RCNET_FUZZ_OPTIMIZATION=0): it compiles in less than
#      half the CPU time of -O2 (Catch2's runner 46 -> 20 s, the manager's
#      unit tests 24 -> 9 s), and this step was the one the suite waited for;
#   3. the unit suite from that build (any sanitizer report fails it),
#      without its corpus replays when step 4 replays the same corpora;
#   4. each fuzzer for FUZZ_SECONDS on its in-tree corpus, two at a time;
#   5. Debian 13 (tools/trixie.sh), in a cached trixie root: the package
#      built by trixie's g++ 14 with -Werror (nocheck: the unit suite runs
#      in step 3, with Catch2 v3), lintian on trixie; and steps 2-4 there,
#      with trixie's clang 19, instead of on this host. TRIXIE(0|1).
#      Steps 2-4 run on the host (Debian 12's clang 14) only with TRIXIE 0:
#      both places would cost the suite a second clang build, about 440
#      CPU-seconds, and the suite is CPU-bound (docs/design.md "The suite's
#      45 minutes on 2 cores").
#
#   tools/test-extra.sh SRC BUILD SAN_BUILD LOGDIR DEB(0|1) SANITIZE(0|1) FUZZ_SECONDS [TRIXIE(0|1)]
#
# It lowers its own CPU weight first, so that the lab's QEMU keeps the cores
# whenever it wants them. The first choice is a CPU cgroup of its own with
# cpu.idle set (cgroup v1's cpu controller or cgroup v2; Linux 5.15 and
# later, else the lowest weight), which holds every process it starts. The
# weights of a session alone do not: with autogroups on (Debian's default),
# each session is a scheduling group of its own at nice 0, and meson test,
# setsid and dh_auto_test start one for every test they run; such a process
# takes a full share beside QEMU, SCHED_IDLE or not (docs/lab.md "The
# suite's background and the lab"). Without a writable cgroup it falls back to
# what is left: autogroup nice 19 (its own session, setsid by the caller),
# SCHED_IDLE, and nice 19 where autogroups are off.
# Writes LOGDIR/{deb,clang,asan,fuzz,trixie}.log, LOGDIR/cpu (how it
# lowered its weight, one line) and LOGDIR/status (one line per step:
# "<step> <rc> <seconds>"); exits 0. trixie.log is tools/trixie.sh's
# summary; its steps' whole logs stay in its cache.
set -uo pipefail
src=$1 build=$2 san=$3 logdir=$4 want_deb=$5 want_san=$6 fuzz_seconds=$7 want_trixie=${8:-0}

# Both steps that use the clang build dir must agree on its options, or
# the second would reconfigure and rebuild it.
export RCNET_FUZZ_OPTIMIZATION=${RCNET_FUZZ_OPTIMIZATION:-0}

# idle_cgroup DIR: makes DIR/rcnet-background (DIR is a cgroup v1 cpu
# hierarchy or the cgroup v2 root), idle or at the lowest weight, moves this
# process into it and sets cpu_cg (the cgroup) and cpu_how (what it did).
cpu_cg="" cpu_how=""
idle_cgroup() {
  local root=$1 cg=$1/rcnet-background how
  [ -f "$root/cgroup.procs" ] || return 1
  if [ -f "$root/cgroup.controllers" ]; then # v2: the cpu controller for children
    grep -qw cpu "$root/cgroup.controllers" || return 1
    grep -qw cpu "$root/cgroup.subtree_control" ||
      echo +cpu >"$root/cgroup.subtree_control" 2>/dev/null || return 1
  fi
  mkdir -p "$cg" 2>/dev/null || return 1
  if echo 1 >"$cg/cpu.idle" 2>/dev/null; then
    how="cpu.idle 1"
  elif echo 2 >"$cg/cpu.shares" 2>/dev/null; then
    how="cpu.shares 2"
  elif echo 1 >"$cg/cpu.weight" 2>/dev/null; then
    how="cpu.weight 1"
  else
    return 1
  fi
  echo $$ >"$cg/cgroup.procs" 2>/dev/null || return 1
  cpu_cg=$cg cpu_how="cgroup $cg, $how"
}
idle_cgroup /sys/fs/cgroup/cpu || idle_cgroup /sys/fs/cgroup
# Also the session's weights: they are all there is without the cgroup.
[ -w /proc/self/autogroup ] && echo 19 >/proc/self/autogroup 2>/dev/null
chrt -i -p 0 $$ >/dev/null 2>&1
renice -n 19 -p $$ >/dev/null 2>&1
echo "${cpu_how:-no writable CPU cgroup: autogroup nice 19 and SCHED_IDLE (a process that starts a session of its own is at full weight)}" >"$logdir/cpu"

status=$logdir/status
: >"$status"
step() {  # step NAME CMD...: runs CMD with its output in LOGDIR/NAME.log
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" >"$logdir/$name.log" 2>&1 || rc=$?
  echo "$name $rc $((SECONDS - t0))" >>"$status"
  return "$rc"
}

if [ "$want_deb" = 1 ]; then
  step deb "$src/tests/package/ensure-deb.sh" "$src" "$build/deb"
fi
if [ "$want_trixie" = 1 ]; then
  # Steps 2-4 in the trixie root (clang 19), after its package.
  tsteps=(package)
  { [ "$want_san" = 1 ] || [ "$fuzz_seconds" != 0 ]; } && tsteps+=(clang)
  [ "$want_san" = 1 ] && tsteps+=(asan)
  [ "$fuzz_seconds" != 0 ] && tsteps+=(fuzz)
  step trixie env RCNET_FUZZ_SECONDS="$fuzz_seconds" "$src/tools/trixie.sh" "${tsteps[@]}"
elif [ "$want_san" = 1 ] || [ "$fuzz_seconds" != 0 ]; then
  if step clang env RCNET_FUZZ_BUILD_DIR="$san" "$src/tools/fuzz.sh" --build-all --build-only; then
    if [ "$want_san" = 1 ]; then
      # When step 4 runs, it replays each fuzzer's whole corpus under this
      # same build before mutating: the unit suite's corpus replays
      # (fuzz-corpus-NAME) would only do that work twice (the manager's
      # 878 inputs take about a minute under ASan at -O0).
      skip=()
      [ "$fuzz_seconds" = 0 ] || skip=(--no-suite fuzz-corpus)
      (
        . "$src/tools/sanitizer-options.sh"
        step asan meson test -C "$san" --no-rebuild --print-errorlogs --num-processes 1 --suite unit "${skip[@]}"
      )
    fi
    if [ "$fuzz_seconds" != 0 ]; then
      # Two at a time: the lab is usually over by now and both cores are free.
      step fuzz env RCNET_FUZZ_BUILD_DIR="$san" "$src/tools/fuzz.sh" --seconds "$fuzz_seconds" \
        --jobs 2
    fi
  fi
fi
# Out of the cgroup, and it goes once no other process is left in it.
if [ -n "$cpu_cg" ]; then
  echo $$ >"${cpu_cg%/*}/cgroup.procs" 2>/dev/null && rmdir "$cpu_cg" 2>/dev/null
fi
exit 0
