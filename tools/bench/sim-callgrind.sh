#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Instruction counts of the connection manager on the simulated fabric, from
# callgrind (valgrind --tool=callgrind --collect-atstart=no): rcnet-bench-sim
# toggles collection so that each run counts only the parts named by
# --measure, and dumps once per phase (init, setup, idle, data, teardown).
#
#   sim-callgrind.sh [--build DIR] [--out DIR] [--connections N] [--packets N]
#                    [--measures "hub clients all"] [--parse-only]
# --parse-only: only tabulate the dumps already in --out.
#
# Prints a table and writes $OUT/callgrind.json:
#   Ir/connection   setup and teardown instructions / connections
#   Ir/event        instructions / calls into that part (CM event, WC batch,
#                   timer expiry, send: the manager's unit of work)
#   Ir/packet       data-phase instructions / packets (hub = send side:
#                   Manager::send + its send completions; clients = receive
#                   side: receive completions, delivery, SRQ repost; all =
#                   everything in the process, simulator included)
#   Ir/tick/conn    idle-phase instructions / hub timer wakeups / connections
# Instruction counts are deterministic for a given binary and arguments (the
# fabric is seeded); wall time is not, which is why they are used here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${RCNET_BUILD_DIR:-$here/../../build}
out=${TMPDIR:-/tmp}/rcnet-bench-callgrind
connections=16000
packets=100000
measures="hub clients all"
parse_only=0
while (($#)); do
  case $1 in
  --build) build=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --connections) connections=$2; shift 2 ;;
  --packets) packets=$2; shift 2 ;;
  --measures) measures=$2; shift 2 ;;
  --parse-only) parse_only=1; shift ;;
  -h | --help) sed -n '3,20p' "$0"; exit 0 ;;
  *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
prog=$build/tools/bench/rcnet-bench-sim
[[ -x $prog ]] || { echo "no $prog (ninja -C $build tools/bench/rcnet-bench-sim)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 2; }
mkdir -p "$out"
for m in $measures; do
  ((parse_only)) && break
  rm -rf "${out:?}/$m"
  mkdir -p "$out/$m"
  echo "callgrind: --measure $m, $connections connections, $packets packets" >&2
  valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/$m/cg.out" \
    "$prog" --connections "$connections" --packets "$packets" --measure "$m" \
    --json "$out/$m/bench.json" >/dev/null 2>"$out/$m/valgrind.txt" || {
    echo "rcnet-bench-sim under callgrind failed (see $out/$m/valgrind.txt)" >&2
    exit 1
  }
done
python3 - "$out" "$measures" <<'EOF'
import glob, json, re, sys
out, measures = sys.argv[1], sys.argv[2].split()
part_of = {"hub": ["hub_manager"], "clients": ["client_managers"], "all": None,
           "managers": ["hub_manager", "client_managers"], "sim": ["sim"]}
res = {}
for m in measures:
    bench = json.load(open(f"{out}/{m}/bench.json"))
    n = bench["connections"]
    ir = {}
    for f in glob.glob(f"{out}/{m}/cg.out.*"):
        text = open(f).read()
        trig = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        tot = re.search(r"^totals: (\d+)", text, re.M) or re.search(r"^summary: (\d+)", text, re.M)
        if trig and tot:
            ir[trig.group(1)] = int(tot.group(1))
    r = {"connections": n, "ok": bench["ok"], "ir": ir}
    ph = bench["phases"]
    parts = part_of.get(m)
    def entries(phase):
        names = parts if parts else list(ph[phase]["parts"].keys())
        return sum(ph[phase]["parts"][p]["entries"] for p in names)
    for phase in ("setup", "teardown"):
        if phase in ir:
            r[f"{phase}_ir_per_connection"] = ir[phase] / n
            e = entries(phase)
            r[f"{phase}_ir_per_event"] = ir[phase] / e if e else None
            r[f"{phase}_events"] = e
    if "data" in ir:
        p = ph["data"]["packets"]
        r["data_ir_per_packet"] = ir["data"] / p if p else None
        e = entries("data")
        r["data_ir_per_event"] = ir["data"] / e if e else None
        r["data_events"] = e
    if "idle" in ir:
        ticks = ph["idle"]["hub_timer_wakeups"]
        r["idle_ir"] = ir["idle"]
        r["idle_hub_timer_wakeups"] = ticks
        if ticks and m == "hub":
            r["idle_ir_per_hub_tick_per_connection"] = ir["idle"] / ticks / n
    res[m] = r
json.dump(res, open(f"{out}/callgrind.json", "w"), indent=2)
def f(v):
    return "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.2f}"
print(f"{'measured part':<16}{'setup Ir/conn':>15}{'setup Ir/event':>16}{'data Ir/packet':>16}"
      f"{'data Ir/event':>15}{'teardown Ir/conn':>18}{'idle Ir/tick/conn':>19}")
for m, r in res.items():
    print(f"{m:<16}{f(r.get('setup_ir_per_connection')):>15}{f(r.get('setup_ir_per_event')):>16}"
          f"{f(r.get('data_ir_per_packet')):>16}{f(r.get('data_ir_per_event')):>15}"
          f"{f(r.get('teardown_ir_per_connection')):>18}"
          f"{f(r.get('idle_ir_per_hub_tick_per_connection')):>19}")
print(f"(callgrind Ir = instructions executed; {res[measures[0]]['connections']} connections;"
      f" json: {out}/callgrind.json)")
EOF
