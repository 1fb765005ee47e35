#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Storms on the real stack (rxe), two scenarios in one boot of 5 nodes:
#  (a) a hub rcnetd takes STORM_N (320) connections at once from 4 nodes,
#      one per secondary underlay address (an rcnet node id is its
#      address), made by rcnet-bench-load as the benchmark does
#      (tests/lab/bench/bench.sh explains the 250-per-device GID limit). The
#      hub runs limits.max_pending_setups = 64, so admission control answers
#      part of the storm with REJ busy (docs/design.md "Admission control"):
#      every connection ends in service, no connect failure on either side,
#      and no QP is left anywhere once the clients have gone.
#  (b) limits.max_connections = 2 on the hub with 4 peers that have traffic:
#      LRU eviction on rxe. The hub pings the peers in turn, several rounds:
#      every ping is answered, the hub never has more than 2 connections in
#      service, the kernel's QP count (rdma res) never more than those 2
#      plus the evicted ones still in their bounded teardown (rxe never
#      reports Last WQE Reached, so each takes timeouts.last_wqe), and
#      evictions stay at one per peer switch at most (no churn).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

STORM_N=${STORM_N:-320}
# ARG 1: the hub's max_pending_setups (default 64; 0 to see the storm without admission).
PENDING=${1:-64}
LOAD=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-load
RCTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
CLIENTS=(2 3 4 5)
lab_setup_nodes 5 || lab_die "node setup"
stat_of() { # NODE NAME: a counter from rcnetctl stats
  "$RCTL" -s "/run/rcnet/node$1.sock" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(next((c['value'] for c in json.load(sys.stdin)['counters'] if c['name'] == '$2'), -1))" 2>/dev/null || echo -1
}

# ---------------------------------------------------------------- (a) storm
per=$((STORM_N / ${#CLIENTS[@]}))
for k in "${CLIENTS[@]}"; do
  mac=$(cat "/sys/class/net/v_$k/address")
  : >"$RCNET_RESULTS/addrs-$k.txt"
  {
    echo "route add 10.99.$((10 + k)).0/24 dev v_1 src 10.99.0.1 table 101"
    for ((j = 1; j <= per; j++)); do
      a=10.99.$((10 + k)).$j
      echo "$a" >>"$RCNET_RESULTS/addrs-$k.txt"
      echo "addr add $a/32 dev v_$k"
      echo "neigh replace $a lladdr $mac dev v_1 nud permanent"
    done
  } >"$RCNET_RESULTS/addrs-$k.ip"
  ip -batch "$RCNET_RESULTS/addrs-$k.ip" || lab_fail "secondary addresses on node$k"
done
# The kernel adds the RoCE GIDs of new addresses from a workqueue.
gids_nonzero() {
  local g n=0
  for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
    read -r g <"$g" 2>/dev/null || continue
    [[ $g == 0000:0000:0000:0000:0000:0000:0000:0000 ]] || n=$((n + 1))
  done
  echo "$n"
}
for k in "${CLIENTS[@]}"; do
  for ((w = 0; w < 120; w++)); do
    (($(gids_nonzero "rxe_$k") >= per + 2)) && break
    sleep 0.25
  done
done

rcd_config 1 "[timeouts]" "idle = \"600s\"" "[limits]" "max_pending_setups = $PENDING"
rcd_start 1 || lab_die "hub rcnetd"
rm -f "$RCNET_RESULTS/go"
load_pids=()
for k in "${CLIENTS[@]}"; do
  "$LOAD" --peer 10.99.0.1 --addr-file "$RCNET_RESULTS/addrs-$k.txt" \
    --go-file "$RCNET_RESULTS/go" --connect-limit-s 60 \
    --summary "$RCNET_RESULTS/load-$k.json" >"$RCNET_RESULTS/load-$k.txt" 2>&1 &
  load_pids+=($!)
done
for k in "${CLIENTS[@]}"; do
  for ((w = 0; w < 600; w++)); do
    grep -q '^READY' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
    sleep 0.1
  done
done
t0=$(rcd_now_ms)
touch "$RCNET_RESULTS/go"
for k in "${CLIENTS[@]}"; do
  for ((w = 0; w < 700; w++)); do
    grep -q '^ESTABLISHED' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
    sleep 0.1
  done
done
est=0 ins=0
for k in "${CLIENTS[@]}"; do
  read -r n s < <(awk '/^ESTABLISHED/ { print $2, $13 }' "$RCNET_RESULTS/load-$k.txt")
  est=$((est + ${n:-0})) ins=$((ins + ${s:-0}))
done
lab_log "storm: $est of $STORM_N ESTABLISHED in $(($(rcd_now_ms) - t0)) ms (wall, TCG); hub REJ busy" \
  "$(stat_of 1 rejects_sent_busy), accepts $(stat_of 1 accepts)"
lab_expect "storm: all $STORM_N connections ESTABLISHED ($est)" [ "$est" -eq "$STORM_N" ]
lab_expect "storm: all $STORM_N still in service ($ins)" [ "$ins" -eq "$STORM_N" ]
hub_qps=$(rcd_qps 1)
lab_expect "storm: the hub holds $STORM_N QPs ($hub_qps)" [ "$hub_qps" -eq "$STORM_N" ]
lab_expect "storm: no connect failure on the hub" [ "$(stat_of 1 connect_failures)" = 0 ]
"$RCTL" -s /run/rcnet/node1.sock -j stats >"$RCNET_RESULTS/storm-hub-stats.json" 2>&1
for p in "${load_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${load_pids[@]}"; do wait "$p"; done
for k in "${CLIENTS[@]}"; do
  f=$(python3 -c "import json; c=json.load(open('$RCNET_RESULTS/load-$k.json'))['counters']; \
print(c['connect_failures'], c['drops_connect_failed'], c.get('rejects_received_busy', 0))" 2>/dev/null)
  read -r cf dr busy <<<"${f:-x x x}"
  lab_expect "storm: node$k's clients: no connect failure, no packet dropped ($cf, $dr; $busy REJ busy)" \
    [ "$cf" = 0 -a "$dr" = 0 ]
done
ms=$(rcd_wait_qps 1 0 60) || lab_fail "storm: hub QPs not all gone after the clients' DREQs"
lab_log "storm: hub QPs gone ${ms} ms after the clients stopped"
for k in "${CLIENTS[@]}"; do
  lab_expect "storm: no QP left on rxe_$k" [ "$(rcd_qps "$k")" -eq 0 ]
done
"$RCTL" -s /run/rcnet/node1.sock -j audit >"$RCNET_RESULTS/storm-hub-audit.json" 2>&1 ||
  lab_fail "storm: rcnetctl audit"
rcd_kill 1 TERM
rcd_wait_exit 1 30
lab_expect "storm: hub rcnetd exited 0" [ "${RCD_EXIT[1]}" = 0 ]
unset 'RCD_PID[1]'
for k in "${CLIENTS[@]}"; do
  sed 's/^addr add/addr del/; /^neigh/d; /^route/d' "$RCNET_RESULTS/addrs-$k.ip" |
    ip -batch - >/dev/null 2>&1
done

# ------------------------------------------------- (b) max_connections on rxe
LIMIT=2
mv "$RCNET_RESULTS/rcnetd-1.log" "$RCNET_RESULTS/rcnetd-1-storm.log"
rcd_config 1 "[timeouts]" "idle = \"600s\"" "[limits]" "max_connections = $LIMIT"
rcd_start 1 || lab_die "hub rcnetd (eviction)"
for k in "${CLIENTS[@]}"; do
  rcd_config "$k" "[timeouts]" "idle = \"600s\""
  rcd_start "$k" || lab_die "rcnetd node$k"
done
# Sampler: the kernel's QPs on rxe_1 and the hub's QPs by state, as often as
# TCG allows (each rdma or rcnetctl exec takes a good part of a second).
sample_stop=$RCNET_RESULTS/sample-stop
rm -f "$sample_stop"
(
  while [[ ! -f $sample_stop ]]; do
    q=$(rcd_qps 1)
    s=$("$RCTL" -s /run/rcnet/node1.sock -j qps 2>/dev/null | python3 -c '
import json, sys
qs = json.load(sys.stdin)["qps"]
print(sum(1 for q in qs if q["in_service"] and q["state"] == "ESTABLISHED"),
      sum(1 for q in qs if not q["in_service"]))' 2>/dev/null)
    echo "$q ${s:-x x}"
  done >"$RCNET_RESULTS/evict-samples.txt"
) &
sampler=$!
ROUNDS=2
unreached=0
for ((r = 1; r <= ROUNDS; r++)); do
  for k in "${CLIENTS[@]}"; do
    # 1.2 s per peer: each switch finds the LRU connection older than the
    # 1 s a connection is protected from eviction, so it evicts at once.
    rcd_ping 1 "$k" -c 4 -i 0.3 -w 10 >"$RCNET_RESULTS/evict-ping-$r-$k.txt" 2>&1 ||
      unreached=$((unreached + 1))
  done
done
touch "$sample_stop"
wait "$sampler"
lab_expect "eviction: every peer answered in each of $ROUNDS rounds ($unreached failed)" [ "$unreached" = 0 ]
read -r max_k max_in max_td < <(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {
  if ($1 > k) k = $1; if ($2 > s) s = $2; if ($3 > t) t = $3 } END { print k + 0, s + 0, t + 0 }' \
  "$RCNET_RESULTS/evict-samples.txt")
nsamples=$(grep -c '^[0-9]' "$RCNET_RESULTS/evict-samples.txt")
ev=$(stat_of 1 evictions)
lab_log "eviction: $nsamples samples; peak kernel QPs $max_k, in service $max_in, in teardown $max_td;" \
  "evictions $ev, refused $(stat_of 1 evictions_refused), QPs created $(stat_of 1 qps_created)"
lab_expect "eviction: sampled at least 5 times ($nsamples)" [ "$nsamples" -ge 5 ]
lab_expect "eviction: never more than $LIMIT connections in service ($max_in)" [ "$max_in" -le "$LIMIT" ]
# Evicted QPs wait timeouts.last_wqe (1 s) on rxe before their drain; one
# switch per 1.2 s leaves at most 2 of them at a time.
lab_expect "eviction: kernel QPs never above $LIMIT + 2 in teardown ($max_k)" [ "$max_k" -le $((LIMIT + 2)) ]
# One eviction per switch to a peer not in service: at most ROUNDS x 4.
lab_expect "eviction: no churn ($ev evictions for $((ROUNDS * 4)) peer switches)" \
  [ "$ev" -ge 1 -a "$ev" -le $((ROUNDS * 4)) ]
lab_expect "eviction: no connect failure on the hub" [ "$(stat_of 1 connect_failures)" = 0 ]
rcd_stop_all
for i in 1 2 3 4 5; do
  lab_expect "no QP left on rxe_$i" [ "$(rcd_qps "$i")" -eq 0 ]
done
lab_finish
