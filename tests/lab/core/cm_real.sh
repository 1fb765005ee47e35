#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The connection manager on the real kernel RDMA stack (rdma_rxe), between two
# lab nodes, checked against the kernel's own QP table (`rdma res show qp`):
#   1. 1,000 connect/disconnect cycles with traffic: no QP left; the Last WQE
#      fallback is counted (rxe never delivers Last WQE Reached);
#   2. simultaneous open: exactly one QP per side, both bursts echoed;
#   3. a peer killed with SIGKILL: the survivor's QP is reaped within
#      idle_timeout + 1 s, and nothing is left.
. "$RCNET_LAB_LIB"
set -u
LAB_CMD_TIMEOUT=300
BIN=$RCNET_BUILD_DIR/tests/lab/core/rcnet-cm-lab
R=$RCNET_RESULTS
A=$(lab_node_addr 1)
B=$(lab_node_addr 2)
[ -x "$BIN" ] || lab_die "missing $BIN (build the project first)"
lab_setup_nodes 2 || lab_die "lab setup failed"

ours() { rdma res show qp 2>/dev/null | grep -c 'comm rcnet-cm-lab' || true; }
wait_line() { lab_wait_line "$1" "$2" "$3" >/dev/null; } # FILE PATTERN SECS
# jq, not python3: half the CPU to start under TCG (docs/lab.md "Time in the lab").
counter() { jq -r --arg k "$2" '.counters[$k]' "$1"; }
field() { jq -r --arg k "$2" '.[$k]' "$1"; }

PARTS="$*"
[[ -n ${PARTS// /} ]] || PARTS="cycles simul kill"
want() { [[ " $PARTS " == *" $1 "* ]]; }

# --- 1. cycles -------------------------------------------------------------
if want cycles; then
lab_log "cycles: 1000 connect/disconnect cycles with traffic"
"$BIN" --local "$B" --mode echo --last-wqe-ms 20 --summary "$R/cycles-server.json" >"$R/cycles-server.log" 2>&1 &
srv=$!
lab_wait_listen "$B" 7471 10 || lab_die "server did not listen"
t0=${EPOCHREALTIME/[.,]/}000
"$BIN" --local "$A" --peer "$B" --mode cycles --count 1000 --last-wqe-ms 20 --linger 3 \
  --summary "$R/cycles-client.json" >"$R/cycles-client.log" 2>&1 &
cli=$!
if wait_line "$R/cycles-client.log" MODE-DONE 280; then
  t1=${EPOCHREALTIME/[.,]/}000
  cycles_ms=$(((t1 - t0) / 1000000))
  lab_log "cycles took $cycles_ms ms"
  sleep 1
  n=$(ours)
  rdma res show qp >"$R/cycles-rdma-res-qp.txt"
  lab_expect "after 1000 cycles the kernel holds no QP of either process (found $n)" [ "$n" -eq 0 ]
else
  lab_fail "cycles did not finish"
fi
wait "$cli"; rc=$?
lab_expect "cycles client exited 0" [ "$rc" -eq 0 ]
kill -TERM "$srv"; wait "$srv"; rc=$?
lab_expect "echo server stopped cleanly" [ "$rc" -eq 0 ]
if [ -f "$R/cycles-client.json" ]; then
  lab_expect "1000 cycles done" [ "$(field "$R/cycles-client.json" done)" -eq 1000 ]
  lab_expect "client: every QP created was destroyed" \
    [ "$(counter "$R/cycles-client.json" qps_created)" -eq "$(counter "$R/cycles-client.json" qps_destroyed)" ]
  lwt=$(counter "$R/cycles-client.json" last_wqe_timeouts)
  lwr=$(counter "$R/cycles-client.json" last_wqe_received)
  lab_log "client: last_wqe_timeouts=$lwt last_wqe_received=$lwr drains_completed=$(counter "$R/cycles-client.json" drains_completed) forced_destroys=$(counter "$R/cycles-client.json" forced_destroys) max_teardown_ms=$(field "$R/cycles-client.json" max_teardown_ms)"
  # Linux 6.1's rxe never delivers Last WQE Reached, 6.12's does (for a QP
  # on an SRQ moved to Error; docs/lab.md "Linux 6.1 and 6.12 side by
  # side"): each QP leaves its wait by one path or the other, counted once.
  lab_expect "every QP's Last WQE wait ended once: $lwr by the event, $lwt by the fallback (1000 QPs)" \
    [ $((lwt + lwr)) -eq 1000 ]
  lab_expect "one path for all of them on one kernel ($(lab_last_wqe_path "$lwr" "$lwt"))" \
    [ "$lwt" -eq 0 -o "$lwr" -eq 0 ]
  lab_expect "every drain WR completed (no forced destroy)" [ "$(counter "$R/cycles-client.json" forced_destroys)" -eq 0 ]
  lab_expect "server: every QP created was destroyed" \
    [ "$(counter "$R/cycles-server.json" qps_created)" -eq "$(counter "$R/cycles-server.json" qps_destroyed)" ]
fi

fi

# --- 2. simultaneous open ------------------------------------------------------
# Program start-up under TCG takes ~1 s (binaries over 9p): start both well
# before the agreed instant.
if want simul; then
lab_log "simultaneous open"
at=$((${EPOCHREALTIME/[.,]/} / 1000 + 6000))
"$BIN" --local "$A" --peer "$B" --mode burst --count 20 --start-at-ms "$at" --last-wqe-ms 20 --linger 8 \
  --summary "$R/simul-a.json" >"$R/simul-a.log" 2>&1 &
pa=$!
"$BIN" --local "$B" --peer "$A" --mode burst --count 20 --start-at-ms "$at" --last-wqe-ms 20 --linger 8 \
  --summary "$R/simul-b.json" >"$R/simul-b.log" 2>&1 &
pb=$!
wait_line "$R/simul-a.log" MODE-DONE 20 && wait_line "$R/simul-b.log" MODE-DONE 20
sleep 1
rdma res show qp >"$R/simul-rdma-res-qp.txt"
n=$(ours)
lab_expect "simultaneous open: exactly one QP per side (kernel shows $n)" [ "$n" -eq 2 ]
wait "$pa"; ra=$?
wait "$pb"; rb=$?
lab_expect "both bursts fully echoed and both stopped cleanly" [ "$ra" -eq 0 -a "$rb" -eq 0 ]
if [ -f "$R/simul-a.json" ] && [ -f "$R/simul-b.json" ]; then
  lab_log "simul: collisions_merged a=$(counter "$R/simul-a.json" collisions_merged) b=$(counter "$R/simul-b.json" collisions_merged) rejects_sent_collision a=$(counter "$R/simul-a.json" rejects_sent_collision) b=$(counter "$R/simul-b.json" rejects_sent_collision)"
fi
lab_expect "no QP left after both stopped" [ "$(ours)" -eq 0 ]
fi

# --- 3. peer SIGKILL --------------------------------------------------------------
# idle_timeout 6 s: long enough that the slow guest shell sees the QPs first.
if want kill; then
lab_log "peer SIGKILL"
"$BIN" --local "$B" --mode echo --idle-ms 6000 --last-wqe-ms 500 >"$R/kill-victim.log" 2>&1 &
victim=$!
lab_wait_listen "$B" 7471 10 || lab_die "victim did not listen"
"$BIN" --local "$A" --peer "$B" --mode burst --count 5 --linger 14 --idle-ms 6000 --last-wqe-ms 500 \
  --summary "$R/kill-survivor.json" >"$R/kill-survivor.log" 2>&1 &
surv=$!
wait_line "$R/kill-survivor.log" MODE-DONE 20 || lab_fail "survivor burst did not finish"
lab_expect "one QP per side before the kill" [ "$(ours)" -eq 2 ]
t0=${EPOCHREALTIME/[.,]/}000
kill -KILL "$victim"
wait "$victim" 2>/dev/null
gone=""
for ((i = 0; i < 100; i++)); do
  if [ "$(ours)" -eq 0 ]; then
    gone=$(((${EPOCHREALTIME/[.,]/}000 - t0) / 1000000))
    break
  fi
  sleep 0.1
done
rdma res show qp >"$R/kill-rdma-res-qp.txt"
lab_expect "survivor's QP reaped within idle_timeout + 1 s (${gone:-never} ms)" [ "${gone:-99999}" -le 7000 ]
wait "$surv"; rc=$?
lab_expect "survivor stopped cleanly" [ "$rc" -eq 0 ]
if [ -f "$R/kill-survivor.json" ]; then
  lab_log "survivor: idle_reaps=$(counter "$R/kill-survivor.json" idle_reaps) dead_peer_reaps=$(counter "$R/kill-survivor.json" dead_peer_reaps) last_wqe_timeouts=$(counter "$R/kill-survivor.json" last_wqe_timeouts)"
  lwt=$(counter "$R/kill-survivor.json" last_wqe_timeouts)
  lwr=$(counter "$R/kill-survivor.json" last_wqe_received)
  lab_expect "survivor counted its QP's Last WQE wait ($(lab_last_wqe_path "$lwr" "$lwt"))" \
    [ $((lwt + lwr)) -ge 1 ]
fi
fi
echo "{\"cycles_1000_ms\": ${cycles_ms:-null}, \"kill_reap_ms\": ${gone:-null}}" >"$R/core-real.json"
lab_collect final
lab_finish
