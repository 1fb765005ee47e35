#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet's demo, as root on a fresh Debian 12: installs the dependencies,
# builds the project into ./build, boots the Soft-RoCE lab with two nodes and
# runs tools/lab/scenarios/demo.sh in it. Ends with a PASS or FAIL line.
# Results (console log, rping output, QP tables) go to ./build/lab-results/demo.
set -uo pipefail

src=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build=$src/build
step() { printf '\n=== %s\n' "$*"; }
fail() {
  printf '\nFAIL: %s\n' "$*"
  exit 1
}

[[ $(id -u) -eq 0 ]] || fail "run as root (installs packages, boots QEMU with the lab)"

step "dependencies (tools/install-deps.sh)"
"$src/tools/install-deps.sh" || fail "tools/install-deps.sh"

step "build ($build)"
if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" "$src" || fail "meson setup"
fi
meson compile -C "$build" || fail "meson compile"

step "Soft-RoCE lab: 2 nodes, rping both ways"
rc=0
RCNET_BUILD_DIR=$build "$src/tools/lab/rcnet-lab" run "$src/tools/lab/scenarios/demo.sh" \
  --nodes 2 --timeout 300 --results "$build/lab-results/demo" || rc=$?
if ((rc == 0)); then
  printf '\nPASS: rcnet demo (results in %s)\n' "$build/lab-results/demo"
else
  fail "lab scenario exited with $rc (see $build/lab-results/demo/console.log)"
fi
