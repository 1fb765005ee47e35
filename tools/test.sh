#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs every test of rcnet (unit + Soft-RoCE lab) on Debian 12, as root:
# installs what it needs, builds warning-clean into ./build, runs meson test,
# then two more steps:
#   - sanitizers: the unit suite again, built by clang with ASan + UBSan
#     into ./build-fuzz (any sanitizer report aborts its test: a failure);
#   - fuzz: tools/fuzz.sh --seconds 30, each fuzzer on its in-tree corpus,
#     from that same build dir;
# and ends with meson's summary and a plain "N passed, N failed, N skipped"
# line counting all three steps (each sanitizer-built test and each fuzzer
# is one result).
#
# Environment: RCNET_BUILD_DIR (default ./build), RCNET_TEST_SUITES (e.g.
# "unit" to run one suite; default all). The lab tests fail with the reason
# when the lab cannot boot; only RCNET_LAB_SKIP=1 turns them into skips.
# RCNET_FUZZ_BUILD_DIR (default ./build-fuzz); RCNET_SANITIZE=0 skips the
# sanitizer step; RCNET_FUZZ_SECONDS (default 30) per fuzzer, 0 skips the
# fuzz step. With RCNET_TEST_SUITES set, the extra steps run only when it
# names them: "asan" (or "unit"), "fuzz".
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

# --- sanitizers: the unit suite under ASan + UBSan -------------------------------
# One clang build dir serves this step and the fuzz step (tools/fuzz.sh sets
# it up: ASan + UBSan, -fno-sanitize-recover=all so that a UBSan report
# aborts, -Werror: the clang warning gate beside g++'s). Building the whole
# tree there once costs less than a g++ sanitizer build plus a clang fuzz
# build (measured: 467 s against 577 s + the fuzzers' own librcnet).
san=${RCNET_FUZZ_BUILD_DIR:-$src/build-fuzz}
export RCNET_FUZZ_BUILD_DIR=$san
san_build_failed=0
# Which of the extra steps RCNET_TEST_SUITES asks for: all when it is empty;
# "asan" (or "unit") the sanitizer step, "fuzz" the fuzz step.
wants() {
  [ -z "${RCNET_TEST_SUITES:-}" ] && return 0
  for s in $RCNET_TEST_SUITES; do
    for w in "$@"; do [ "$s" = "$w" ] && return 0; done
  done
  return 1
}
wants asan unit || export RCNET_SANITIZE=0
wants fuzz || export RCNET_FUZZ_SECONDS=0
if [ "${RCNET_SANITIZE:-1}" != 0 ] || [ "${RCNET_FUZZ_SECONDS:-30}" != 0 ]; then
  t0=$SECONDS
  "$src/tools/fuzz.sh" --build-all --build-only || san_build_failed=1
  echo "clang build (ASan + UBSan, unit suite and fuzzers): $((SECONDS - t0)) s"
fi
if [ "${RCNET_SANITIZE:-1}" != 0 ]; then
  t1=$SECONDS
  if [ "$san_build_failed" = 0 ]; then
    ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      meson test -C "$san" --no-rebuild --print-errorlogs --num-processes 1 --suite unit || rc=1
  else
    echo "test.sh: the clang build (ASan + UBSan) failed" >&2
    rc=1
  fi
  echo "sanitizers: run $((SECONDS - t1)) s"
fi

# --- fuzz: every fuzzer for a bounded time on its corpus ---------------------------
fuzz_log=$(mktemp /tmp/rcnet-test-fuzz.XXXXXX)
trap 'rm -f "$fuzz_log"' EXIT
if [ "${RCNET_FUZZ_SECONDS:-30}" != 0 ] && [ "$san_build_failed" = 0 ]; then
  t0=$SECONDS
  "$src/tools/fuzz.sh" --seconds "${RCNET_FUZZ_SECONDS:-30}" 2>&1 | tee "$fuzz_log" || rc=1
  echo "fuzz: $((SECONDS - t0)) s"
fi

# A plain closing line any reader understands.
python3 - "$build/meson-logs/testlog.json" "$san/meson-logs/testlog.json" \
  "$san_build_failed" "$fuzz_log" <<'PY' || true
import json, os, re, sys
ok = fail = skip = 0
def count(path):
    global ok, fail, skip
    for line in open(path):
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): ok += 1
        elif r == "SKIP": skip += 1
        else: fail += 1
count(sys.argv[1])
if os.environ.get("RCNET_SANITIZE", "1") != "0":
    if sys.argv[3] == "1" or not os.path.exists(sys.argv[2]):
        fail += 1  # the sanitizer build itself
    else:
        count(sys.argv[2])
if os.environ.get("RCNET_FUZZ_SECONDS", "30") != "0":
    m = None
    for line in open(sys.argv[4]):
        m = re.match(r"fuzz: (\d+) passed, (\d+) failed", line) or m
    if m:
        ok += int(m.group(1)); fail += int(m.group(2))
    else:
        fail += 1  # fuzz.sh did not get as far as running them
print(f"{ok} passed, {fail} failed, {skip} skipped")
PY
exit "$rc"
