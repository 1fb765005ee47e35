#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Several scenarios in one boot (the folded rows of tests/lab/*/meson.build):
#
#   parts.sh SETUP... -- PART:SECS...
#
# SETUP are lab_setup_nodes's arguments (e.g. `2 --rails 2`): the runner
# sets the topology up once, and each part's own lab_setup_nodes with the
# same arguments finds it up (LAB_NODES_UP, tests/lab/lib.sh). Each PART is
# a scenario's path under tests/lab (e.g. daemon/peer_restart.sh) and SECS
# its own wall-time limit, the one it had alone in its own boot (the
# driver's limit less 15 s). The parts run in turn, each a process of its
# own, with their results in RESULTS/NAME/ (NAME: the script's name without
# .sh); each makes and prints every check it made alone. Between parts the
# runner stops whatever a part left running (its process group) and waits
# until the kernel holds no RC QP and no rdma_cm id, as a fresh boot gives
# the next part. One check per part names it ("part NAME passed", or
# "part NAME failed (exit N)" with that part's failed checks), and the
# summary lists the parts with their times. Under TCG a boot with its
# topology took 9-12 s before the scenario's first check (2026-12-07), which
# each part after the first no longer pays.
#
# Run one part alone: tools/lab/rcnet-lab run tests/lab/daemon/peer_restart.sh
# --nodes 2, as before, or this runner with that one part.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

setup=()
while (($#)) && [[ $1 != -- ]]; do
  setup+=("$1")
  shift
done
(($#)) && shift
(($#)) || lab_die "parts.sh: no parts given (parts.sh SETUP... -- PART:SECS...)"

lab_setup_nodes "${setup[@]}" || lab_die "node setup (${setup[*]})"

# Every RC QP and rdma_cm id gone (a part's daemons can still be tearing
# down after it exited, and a listener's cm_id can outlive its process for
# a moment): "" once clean, else what is left after SECS.
_parts_left() { # secs
  local t0=${EPOCHREALTIME/[.,]/} n=0 qps ids
  local deadline=$((t0 + $1 * 1000000))
  while :; do
    qps=$(lab_qp_count)
    ids=$(rdma res show cm_id 2>/dev/null | grep -c '^link')
    if ((qps == 0 && ids == 0)); then
      ((n == 0)) || lab_log "the kernel's RC QPs and rdma_cm ids gone $(((${EPOCHREALTIME/[.,]/} - t0) / 1000)) ms after the part" >&2
      return 0
    fi
    n=$((n + 1))
    if ((${EPOCHREALTIME/[.,]/} > deadline)); then
      echo "$qps RC QPs, $ids rdma_cm ids"
      return 1
    fi
    sleep 0.2
  done
}

declare -a summary=()
set -m # each part in a process group of its own, to stop what it leaves
for p in "$@"; do
  script=${p%:*} secs=${p##*:} name=$(basename "${p%:*}" .sh)
  [[ $p == *:* && $secs =~ ^[0-9]+$ ]] || lab_die "parts.sh: '$p' is not PART:SECS"
  [[ -f $RCNET_SRC/tests/lab/$script ]] || lab_die "parts.sh: no scenario tests/lab/$script"
  dir=$RCNET_RESULTS/$name
  mkdir -p "$dir"
  lab_log "=== part $name ($script, limit ${secs} s)"
  t0=${EPOCHREALTIME/[.,]/}
  # The job's process group is its first process, this subshell; timeout
  # --foreground keeps the part (and what it starts) in it, and kills the
  # part alone at its limit: the group is stopped below either way.
  (
    echo "$BASHPID" >"$dir/.pgid"
    cd "$dir" || exit 125
    rc=0
    RCNET_RESULTS=$dir timeout --foreground -k 5 "$secs" bash "$RCNET_SRC/tests/lab/$script" || rc=$?
    echo "$rc" >"$dir/.exit"
  ) </dev/null 2>&1 | tee "$dir/output.txt"
  ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
  rc=$(cat "$dir/.exit" 2>/dev/null) || rc=125
  pgid=$(cat "$dir/.pgid" 2>/dev/null)
  rm -f "$dir/.exit" "$dir/.pgid"
  if [[ -n $pgid ]] && kill -TERM -- "-$pgid" 2>/dev/null; then
    lab_log "part $name left processes running: SIGTERM to its process group"
    sleep 2
    kill -KILL -- "-$pgid" 2>/dev/null
  fi
  if ((rc == 0)); then
    lab_pass "part $name passed ($((ms / 1000)).$((ms % 1000 / 100)) s)"
    summary+=("$name: PASS, $((ms / 1000)) s")
  else
    why="exit $rc"
    ((rc == 124)) && why="killed by its ${secs} s limit"
    lab_fail "part $name failed ($why): $(sed -n 's/^LAB FAIL: //p' "$dir/output.txt" | head -n 5 | paste -sd ';' -)"
    summary+=("$name: FAIL ($why), $((ms / 1000)) s")
  fi
  if ! left=$(_parts_left 30); then
    lab_collect "after-$name"
    lab_fail "after part $name: the kernel still holds $left 30 s later"
  fi
done
set +m
lab_log "parts: $(printf '%s; ' "${summary[@]}")"
lab_finish
