#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs every test of rcnet (unit + Soft-RoCE lab) on Debian 12, as root:
# installs what it needs, builds warning-clean into ./build, runs meson test,
# and ends with meson's summary and a plain "N passed, N failed" line.
#
# Environment: RCNET_BUILD_DIR (default ./build), RCNET_TEST_SUITES (e.g.
# "unit" to run one suite; default all). The lab tests fail with the reason
# when the lab cannot boot; only RCNET_LAB_SKIP=1 turns them into skips.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${RCNET_BUILD_DIR:-$src/build}

"$src/tools/install-deps.sh"

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true -Dlab_tests=true
else
  meson configure "$build" -Dwerror=true -Dlab_tests=true
fi
ninja -C "$build"

suites=()
for s in ${RCNET_TEST_SUITES:-}; do suites+=(--suite "$s"); done
rc=0
meson test -C "$build" --print-errorlogs --num-processes 1 "${suites[@]}" || rc=$?

# A plain closing line any reader understands.
python3 - "$build/meson-logs/testlog.json" <<'PY' || true
import json, sys
ok = fail = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result", "")
    if r in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r == "SKIP": skip += 1
    else: fail += 1
print(f"{ok} passed, {fail} failed, {skip} skipped")
PY
exit "$rc"
