#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cluster boot (issue 23): every node's rcnetd starts at the same moment,
# then every node pings every other at once (N x (N - 1) directed pairs,
# 240 for 16 nodes). Reports the time from the last daemon up until every
# pair has answered, the connect failures and the REJs by reason, from each
# daemon's counters. Absolute times under TCG mean nothing beside another
# boot's; the figure to compare is this one's between builds on one machine.
# Under TCG the 240 ping processes (each an exec through `ip netns exec`)
# take most of it: the first run, 16 nodes, had every pair answered 58 s
# after the last daemon was up, 0 connect failures, one REJ collision.
#   ARGS: [NODES] (default: the lab's node count)
# Raw figures: $RCNET_RESULTS/cluster-boot.txt ("key value" lines).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

N=${1:-$RCNET_LAB_NODES}
RCTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
RAW=$RCNET_RESULTS/cluster-boot.txt
: >"$RAW"
lab_setup_nodes "$N" || lab_die "node setup"
for ((i = 1; i <= N; i++)); do
  # Small daemons: N of them share the guest's memory (offload off: buffers
  # of tun.mtu, 64 KiB, instead of 64 KiB frames; 64 + 64 of them, 8 MiB).
  rcd_config "$i" "[timeouts]" "idle = \"600s\"" "[transport]" "offload = false" \
    "[srq]" "size = 64" "[limits]" "send_slots = 64"
done
# All at once: rcd_start waits for each, so start them in the background and
# wait for all.
for ((i = 1; i <= N; i++)); do rcd_start "$i" >"$RCNET_RESULTS/start-$i.txt" 2>&1 & done
wait
up=$(rcd_now_ms)
for ((i = 1; i <= N; i++)); do
  grep -q PASS "$RCNET_RESULTS/start-$i.txt" || lab_die "rcnetd node$i did not start"
  RCD_PID[$i]=$(pgrep -f "rcnetd -c $RCNET_RESULTS/node-$i.toml" | head -1)
done
# Every node pings every other at once; each ping retries for 60 s.
pids=()
for ((i = 1; i <= N; i++)); do
  for ((j = 1; j <= N; j++)); do
    ((i == j)) && continue
    (rcd_ping "$i" "$j" -c 1 -w 60 >/dev/null 2>&1 && rcd_now_ms >"$RCNET_RESULTS/pair-$i-$j") &
    pids+=($!)
  done
done
wait "${pids[@]}"
answered=0 last=0
for f in "$RCNET_RESULTS"/pair-*; do
  [[ -f $f ]] || continue
  answered=$((answered + 1))
  t=$(cat "$f")
  ((t > last)) && last=$t
done
pairs=$((N * (N - 1)))
{
  echo "nodes $N"
  echo "pairs $pairs"
  echo "pairs_answered $answered"
  ((last > 0)) && echo "all_answered_ms_after_last_start $((last - up))"
} >>"$RAW"
sum() { # counter summed over every daemon
  local s=0 i v
  for ((i = 1; i <= N; i++)); do
    v=$("$RCTL" -s "/run/rcnet/node$i.sock" -j stats 2>/dev/null | python3 -c \
      "import json,sys; print(next((c['value'] for c in json.load(sys.stdin)['counters'] if c['name'] == '$1'), 0))" 2>/dev/null)
    s=$((s + ${v:-0}))
  done
  echo "$s"
}
for c in connect_failures connects_established collisions_merged rejects_sent_collision \
  rejects_sent_busy rejects_sent_full rejects_received_busy connects_paced; do
  echo "$c $(sum "$c")" >>"$RAW"
done
lab_log "cluster boot: $(tr '\n' ';' <"$RAW")"
lab_expect "cluster boot: all $pairs pairs answered ($answered)" [ "$answered" -eq "$pairs" ]
# The daemons are children of the subshells that started them: stopped by
# signal and polled (rcd_stop_all waits for its own children only).
for ((i = 1; i <= N; i++)); do kill -TERM "${RCD_PID[$i]}" 2>/dev/null; done
for ((k = 0; k < 300; k++)); do
  alive=0
  for ((i = 1; i <= N; i++)); do kill -0 "${RCD_PID[$i]}" 2>/dev/null && alive=$((alive + 1)); done
  ((alive == 0)) && break
  sleep 0.1
done
lab_expect "cluster boot: every rcnetd stopped on SIGTERM ($alive left)" [ "$alive" -eq 0 ]
lab_expect "cluster boot: no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
