#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Churn on Soft-RoCE: 4 rcnetd nodes ping each other over rc0 while a
# random schedule seeded by SEED injects FAULTS faults, one at a time
# (churn.sh [FAULTS [SEED]], default 26 faults and seed 10; the scenario's
# arguments come after rcnet-lab's "--"). A count, not a time: the same
# seed makes the same faults on the same nodes however fast the host is
# (seed 10's first 8: two of each kind, every node hit):
#   kill      kill -9 a daemon, restart it
#   flap      the bridge-side port b_I down for 2 s, then up (flapping v_I
#             itself flushes node I's policy route: docs/lab.md "Several
#             nodes in one guest")
#   roce      drop node I's RoCEv2 traffic (tc on b_I) for 3 s
#   disconnect `rcnetctl disconnect` of a random peer
# After each fault every pair involving the node must ping again; the time
# from the fault's end to that is its reconvergence time (the worst one is
# printed). At the end every directed pair pings within idle + 2 reaper ticks
# of the last fault (plus the guest's exec slack, stated), `rcnetctl audit` is
# clean on every node, and each daemon's QP list equals the kernel's
# (`rdma res show qp` for its pid).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

N=4
FAULTS=${1:-26}
SEED=${2:-10}
IDLE_MS=5000
TICK_MS=500
SLACK_MS=3000 # a ping exec in a netns takes up to ~1 s under TCG
CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
OUT=$RCNET_RESULTS
RANDOM=$SEED

lab_setup_nodes "$N" || lab_die "node setup"
for ((i = 1; i <= N; i++)); do
  rcd_config "$i" "[timeouts]" "idle = \"$((IDLE_MS / 1000))s\"" "reaper_interval = \"${TICK_MS}ms\"" \
    'last_wqe = "200ms"' 'drain = "300ms"' 'disconnect = "300ms"' 'connect = "2s"'
done
for ((i = 1; i <= N; i++)); do rcd_start "$i" || lab_die "start node$i"; done
for ((i = 1; i <= N; i++)); do rcd_block_roce_prepare "$i" >/dev/null 2>&1; done

# Background traffic: one pinger per directed pair, restarted when it ends
# (a restarted daemon recreates rc0, which ends a running ping).
touch "$OUT/traffic.on"
for ((i = 1; i <= N; i++)); do
  for ((j = 1; j <= N; j++)); do
    ((i == j)) && continue
    (while [[ -e $OUT/traffic.on ]]; do
      lab_in_node "$i" ping -n -q -i 0.5 -W 1 -w 15 "10.100.0.$j" >/dev/null 2>&1
      sleep 0.5
    done) &
  done
done

# Waits until node I pings every other node; prints the ms it took.
reconverge() {
  local i=$1 t0=$2 limit_ms=$3 j left
  left=" $(seq -s ' ' 1 "$N") "
  left=${left/ $i / }
  while [[ -n ${left// /} ]]; do
    for j in $left; do
      if lab_in_node "$i" ping -n -q -c 1 -W 1 "10.100.0.$j" >/dev/null 2>&1 &&
        lab_in_node "$j" ping -n -q -c 1 -W 1 "10.100.0.$i" >/dev/null 2>&1; then
        left=${left/ $j / }
        left=" ${left# } "
      fi
    done
    if (($(rcd_now_ms) - t0 > limit_ms)); then
      echo "-1"
      return 1
    fi
  done
  echo $(($(rcd_now_ms) - t0))
}

declare -A nfaults=()
worst=0 worst_what=none failed=0
t_start=$(rcd_now_ms)
for ((fault = 1; fault <= FAULTS; fault++)); do
  i=$((RANDOM % N + 1))
  kinds=(kill flap roce disconnect)
  kind=${kinds[RANDOM % 4]}
  case $kind in
    kill)
      rcd_kill "$i" KILL
      rcd_wait_exit "$i" 30 || lab_fail "node$i's killed rcnetd did not exit within 30 s"
      rcd_start "$i" >/dev/null || lab_fail "restart node$i"
      ;;
    flap)
      ip link set "b_$i" down
      sleep 2
      ip link set "b_$i" up
      ;;
    roce)
      rcd_block_roce "$i" >/dev/null
      sleep 3
      rcd_unblock_roce "$i" >/dev/null
      ;;
    disconnect)
      j=$((i % N + 1))
      "$CTL" -s "/run/rcnet/node$i.sock" disconnect "$(lab_node_addr "$j")" >/dev/null 2>&1
      ;;
  esac
  nfaults[$kind]=$((${nfaults[$kind]:-0} + 1))
  t_end=$(rcd_now_ms)
  ms=$(reconverge "$i" "$t_end" 60000) || {
    lab_fail "after $kind on node$i: not every pair pings again within 60 s"
    failed=$((failed + 1))
  }
  echo "$(date +%T) fault $kind node$i: reconverged in $ms ms" >>"$OUT/churn.log"
  if ((ms > worst)); then
    worst=$ms
    worst_what="$kind on node$i"
  fi
  sleep 1
done
rm -f "$OUT/traffic.on"
total=0
for k in "${!nfaults[@]}"; do total=$((total + nfaults[$k])); done
lab_log "churn: $total faults in $(( ($(rcd_now_ms) - t_start) / 1000 )) s (kill ${nfaults[kill]:-0}, flap ${nfaults[flap]:-0}, roce ${nfaults[roce]:-0}, disconnect ${nfaults[disconnect]:-0}), seed $SEED"
lab_log "churn: worst reconvergence $worst ms ($worst_what)"
lab_expect "every fault reconverged ($failed did not)" test "$failed" -eq 0

# --- the end state -----------------------------------------------------------------
t_last=$(rcd_now_ms)
declare -A ok_at=()
deadline=$((t_last + IDLE_MS + 2 * TICK_MS + SLACK_MS + 20000))
pending=1
# Each round pings every pair not yet through at once, each ping recording
# when it succeeded: pinging them one after another would add every earlier
# ping's exec time (up to ~1 s each under TCG) to the later pairs' figures.
rm -f "$OUT"/endping.*
while ((pending)) && (($(rcd_now_ms) < deadline)); do
  pending=0
  pids=()
  for ((i = 1; i <= N; i++)); do
    for ((j = 1; j <= N; j++)); do
      ((i == j)) && continue
      [[ -n ${ok_at[$i.$j]:-} ]] && continue
      (lab_in_node "$i" ping -n -q -c 1 -W 1 "10.100.0.$j" >/dev/null 2>&1 &&
        echo $(($(rcd_now_ms) - t_last)) >"$OUT/endping.$i.$j") &
      pids+=($!)
    done
  done
  # Not a bare `wait`: the daemons and the background pingers are children too.
  wait "${pids[@]}"
  for ((i = 1; i <= N; i++)); do
    for ((j = 1; j <= N; j++)); do
      ((i == j)) && continue
      [[ -n ${ok_at[$i.$j]:-} ]] && continue
      if [[ -f $OUT/endping.$i.$j ]]; then
        ok_at[$i.$j]=$(cat "$OUT/endping.$i.$j")
      else
        pending=1
      fi
    done
  done
done
last=0
for k in "${!ok_at[@]}"; do ((ok_at[$k] > last)) && last=${ok_at[$k]}; done
lab_log "end state: all ${#ok_at[@]} of $((N * (N - 1))) directed pairs pinged, the last $last ms after the last fault"
lab_expect "every directed pair pings at the end (${#ok_at[@]}/$((N * (N - 1))))" test "${#ok_at[@]}" -eq $((N * (N - 1)))
lab_expect "within idle + 2 ticks + exec slack ($last <= $((IDLE_MS + 2 * TICK_MS + SLACK_MS)) ms)" \
  test "$last" -le $((IDLE_MS + 2 * TICK_MS + SLACK_MS))
for ((i = 1; i <= N; i++)); do
  lab_check "rcnetctl audit on node$i" "$CTL" -s "/run/rcnet/node$i.sock" audit
  # A QP in teardown may be destroyed between the two reads: retry a while.
  for ((k = 0; k < 10; k++)); do
    mine=$("$CTL" -s "/run/rcnet/node$i.sock" -j qps | jq -c '[.qps[].qpn] | sort')
    kernel=$(rdma -j res show qp | jq -c --argjson p "${RCD_PID[$i]}" '[.[] | select(.pid == $p) | .lqpn] | sort')
    [[ $mine == "$kernel" ]] && break
    sleep 0.5
  done
  lab_log "node$i QPs: rcnetctl $mine, kernel $kernel"
  lab_expect "node$i: rcnetctl's QPs equal rdma res show qp ($mine)" test "$mine" = "$kernel"
done
wait_traffic() { sleep 2; }
wait_traffic
rcd_stop_all
lab_finish
