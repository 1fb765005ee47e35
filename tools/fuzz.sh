#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs rcnet's libFuzzer fuzzers (tests/fuzz), one process at a time.
#
#   tools/fuzz.sh [--runs N | --seconds S] [--jobs J] [--merge] [--build-all] [--build-only] [NAME...]
#
# NAME: wire, ctl, config, manager, rails (default: all). Each fuzzer starts from its
# in-tree corpus (tests/fuzz/corpus/NAME), copied to a temporary working
# corpus so the tree is not modified; --merge minimises what it found back
# into the in-tree corpus (libFuzzer -merge=1). Default budget: --seconds 60.
# Inputs under tests/fuzz/regressions/NAME reproduce bugs found earlier; each
# is run once and reported (they are pinned by unit tests, see their README).
#
# Builds the fuzzers first, with clang, ASan and UBSan, in their own build
# dir (RCNET_FUZZ_BUILD_DIR, default ./build-fuzz; RCNET_FUZZ_CXX picks the
# compiler, default clang++-14 (Debian 12), clang++-19 (Debian 13) or
# clang++). --build-all builds the whole tree there too (the clang -Werror check, and the unit suite under ASan + UBSan
# that tools/test.sh runs from this same dir), not only the fuzzers;
# --build-only stops after building. RCNET_FUZZ_OPTIMIZATION sets the
# build's -O level (meson's optimization: 0, 1, 2, 3, g or s; default 2, for
# long runs); tools/test.sh builds the same dir at 0, which compiles in less
# than half the time (the CI build is mostly compiling; its fuzz runs are
# 60 s smoke runs).
#
# --jobs J runs up to J fuzzers at once (default 1), each a single process
# on one core; the budget is per fuzzer either way.
#
# Prints per fuzzer: execs, cov and ft (libFuzzer's final stats line),
# crashes, exec/s; then "fuzz: N passed, N failed". Exits 1 if any fuzzer
# crashed or did not run; crash inputs are kept in RCNET_FUZZ_ARTIFACTS
# (default ./build-fuzz/artifacts/NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${RCNET_FUZZ_BUILD_DIR:-$src/build-fuzz}
artifacts=${RCNET_FUZZ_ARTIFACTS:-$build/artifacts}

runs=""
seconds=60
jobs=1
merge=0
build_all=0
build_only=0
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; seconds=""; shift 2 ;;
    --seconds) seconds=$2; runs=""; shift 2 ;;
    --merge) merge=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-all) build_all=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
all=(wire ctl config manager rails)
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for n in "${names[@]}"; do
  case " ${all[*]} " in *" $n "*) ;; *) echo "fuzz.sh: no fuzzer named $n (${all[*]})" >&2; exit 2 ;; esac
done

# --- build -------------------------------------------------------------------
cxx=${RCNET_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++-14 clang++-19 clang++; do
    if command -v "$c" >/dev/null; then cxx=$c; break; fi
  done
fi
[ -n "$cxx" ] || { echo "fuzz.sh: no clang++ found (tools/install-deps.sh --test installs the release's clang)" >&2; exit 1; }
cc=${cxx/clang++/clang}
# -fno-sanitize-recover=all: UBSan aborts instead of printing and going on,
# in every target (the fuzzers add it themselves; the unit suite needs it here).
# -fsanitize=fuzzer-no-link on every target: librcnet is compiled once, with
# the coverage the fuzzers need, and serves the unit suite too (the ASan
# runtime provides the coverage callbacks outside libFuzzer);
# tests/fuzz/coverage-ignorelist.txt keeps the simulator and the logging
# libraries out of the coverage instrumentation.
# -Dbench=false: the benchmark programs run in no sanitized test, and under
# ASan at -O0 they took a tenth of CI's clang build (194 of 1,907 s).
# -Dunity=on: meson compiles twelve files of a target as one unit (the
# project's unity_size), so each header is parsed a twelfth as often (docs/design.md "The suite's 45
# minutes on 2 cores").
opts=(-Dfuzz=true -Dlab_tests=false -Dbench=false -Dwerror=true -Dunity=on -Db_sanitize=address,undefined
  -Db_lundef=false -Dman=disabled "-Doptimization=${RCNET_FUZZ_OPTIMIZATION:-2}"
  "-Dcpp_args=['-fno-sanitize-recover=all','-fsanitize=fuzzer-no-link','-fsanitize-coverage-ignorelist=$src/tests/fuzz/coverage-ignorelist.txt']")
# meson configure regenerates the build files even when nothing changed: it
# runs only when the options differ from the last configuration's.
opts_stamp=$build/.rcnet-fuzz-options
if [ ! -f "$build/build.ninja" ]; then
  CXX=$cxx CC=$cc meson setup "$build" "${opts[@]}" >/dev/null
elif [ "$(cat "$opts_stamp" 2>/dev/null)" != "${opts[*]}" ]; then
  meson configure "$build" "${opts[@]}" >/dev/null
fi
echo "${opts[*]}" >"$opts_stamp"
if [ "$build_all" = 1 ]; then
  ninja -C "$build"
else
  ninja -C "$build" fuzzers
fi
[ "$build_only" = 0 ] || exit 0

# --- run ---------------------------------------------------------------------
# Sanitizer reports are crashes: abort at the first one, with a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
work=$(mktemp -d /tmp/rcnet-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One fuzzer: its report goes to $work/NAME.report, its summary line (which
# ends in "FAILED (exit N)" when it failed) to $work/NAME.line.
run_one() {
  local n=$1 bin corpus log rc=0 stats cov ft execs eps crashes line r
  bin=$build/tests/fuzz/fuzz-$n
  corpus=$work/$n
  mkdir -p "$corpus" "$artifacts/$n"
  cp "$src/tests/fuzz/corpus/$n/"* "$corpus/" 2>/dev/null || true
  local budget=(-max_total_time="${seconds:-0}")
  [ -n "$runs" ] && budget=(-runs="$runs")
  log=$work/$n.log
  # -fork is not used: one process per fuzzer, one core each (--jobs).
  "$bin" "${budget[@]}" -print_final_stats=1 -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$n/" "$corpus" >"$log" 2>&1 || rc=$?
  stats=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$stats")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$stats")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  crashes=$(find "$artifacts/$n" -newer "$corpus" -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  line=$(printf '%-8s execs %-10s cov %-6s ft %-7s crashes %-3s exec/s %s' "$n" "${execs:-?}" \
    "${cov:-?}" "${ft:-?}" "$crashes" "${eps:-?}")
  {
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ] || [ -z "$execs" ]; then
      line+="  FAILED (exit $rc)"
      echo "--- fuzz-$n: last lines of its log ---"
      grep -v '^#[0-9]' "$log" | tail -40
      ls "$artifacts/$n"/* 2>/dev/null | sed 's/^/artifact: /' | tail -5
    fi
    echo "$line"
    if [ "$merge" = 1 ]; then
      "$bin" -merge=1 "$src/tests/fuzz/corpus/$n" "$corpus" >"$work/$n.merge.log" 2>&1 ||
        echo "fuzz.sh: merge of $n failed (see $work/$n.merge.log)" >&2
    fi
    local regs=$src/tests/fuzz/regressions/$n
    if [ -d "$regs" ]; then
      for r in "$regs"/*; do
        case "$r" in *.md|*.txt) continue ;; esac
        [ -f "$r" ] || continue
        if RCNET_FUZZ_KNOWN_BUGS=1 "$bin" "$r" >"$work/$n.regression.log" 2>&1; then
          echo "  regression $(basename "$r"): passes now (fixed? see its README)"
        else
          echo "  regression $(basename "$r"): still reproduces (known bug, see its README)"
        fi
      done
    fi
  } >"$work/$n.report" 2>&1
  echo "$line" >"$work/$n.line"
}

running=0
for n in "${names[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$n" &
  running=$((running + 1))
done
wait || true

passed=0
failed=0
summary=()
for n in "${names[@]}"; do
  cat "$work/$n.report" 2>/dev/null || true
  line=$(cat "$work/$n.line" 2>/dev/null || echo "$n  FAILED (no result)")
  case "$line" in
    *FAILED*) failed=$((failed + 1)) ;;
    *) passed=$((passed + 1)) ;;
  esac
  summary+=("$line")
done

echo "--- fuzz summary (${runs:+$runs runs}${seconds:+$seconds s} per fuzzer) ---"
printf '%s\n' "${summary[@]}"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
