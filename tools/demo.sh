#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet's demo, as root on a fresh Debian 12: installs the dependencies,
# builds rcnetd (and rcnetctl) warning-clean into ./build, boots the Soft-RoCE
# lab with three nodes and runs tests/lab/daemon/demo.sh in it: rcnetd on each
# node, ping between every pair over rc0, iperf3 over the overlay, each
# daemon's connections, `rdma res show qp`, and SIGTERM leaving no QP.
# Ends with a PASS or FAIL line; exit 0 on PASS.
#
# Environment: RCNET_BUILD_DIR (default ./build). The full results (console,
# daemon logs, configs, QP tables) go to <build>/lab-results/demo.
set -uo pipefail

src=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build=${RCNET_BUILD_DIR:-$src/build}
results=$build/lab-results/demo
step() { printf '\n=== %s\n' "$*"; }
fail() {
  printf '\nDEMO RESULT: FAIL: %s\n' "$*"
  exit 1
}

[[ $(id -u) -eq 0 ]] || fail "run as root (installs packages, boots QEMU with the lab)"

step "dependencies (tools/install-deps.sh)"
"$src/tools/install-deps.sh" || fail "tools/install-deps.sh"

step "build: $build (-Dwerror=true)"
if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" "$src" -Dwerror=true >"$build.setup.log" 2>&1 ||
    { tail -20 "$build.setup.log"; fail "meson setup (log: $build.setup.log)"; }
  rm -f "$build.setup.log"
fi
# Only what the demo runs: the daemon, and rcnetctl when the tree has it.
targets=(daemon/rcnetd)
ninja -C "$build" -t targets all 2>/dev/null | grep -q '^tools/rcnetctl/rcnetctl:' &&
  targets+=(tools/rcnetctl/rcnetctl)
ninja -C "$build" "${targets[@]}" || fail "ninja ${targets[*]}"

step "Soft-RoCE lab (QEMU/TCG, rdma_rxe): 3 nodes running rcnetd"
echo "(booting a Debian kernel under QEMU takes about half a minute; the first"
echo " run downloads it once into /var/cache/rcnet-lab)"
rc=0
# The guest's console, minus the firmware's screen control codes and the
# lab's internal markers.
RCNET_BUILD_DIR=$build "$src/tools/lab/rcnet-lab" run "$src/tests/lab/daemon/demo.sh" \
  --nodes 3 --timeout 420 --results "$results" 2>&1 |
  sed -u -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' |
  grep --line-buffered -v -E '^(SeaBIOS|Booting from|RCNET-LAB-|\[ *[0-9]+\.[0-9]+\] reboot)'
rc=${PIPESTATUS[0]}
if ((rc == 0)); then
  printf '\nDEMO RESULT: PASS (full logs in %s)\n' "$results"
  exit 0
fi
fail "the lab scenario exited with $rc (see $results/console.log and $results/rcnetd-*.log)"
