#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two rails, stripe mode (issue 21): two rcnetd nodes with two rails each.
#   1. the baseline in the same boot: active-backup, iperf3 -P 16 node1 ->
#      node2 over rc0 (16 flows of 2.5 Mbit/s): rail 0 carries the data,
#      rail 1 (the standby) only its probes;
#   2. the same nodes restarted with rails.mode = "stripe", the same
#      iperf3 -P 16: the flows are hashed over both rails, so both carry a
#      real share of the data, every stream runs to its end, and the peers
#      table shows both links in service;
#   3. every node's kernel RC QPs are its rcnetctl qps.
# Reported, never asserted: each run's throughput and TCP retransmits (a
# flow stays on one link, so striping should not reorder within a flow;
# TCP's retransmit counter is the witness, side by side with the baseline).
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
OUT=$RCNET_RESULTS
secs=8

# iperf3 -P 16 node1 -> node2 for $secs s into $OUT/$1.json; 0 when it ran
# to its end without error.
iperf_p8() {
  local name=$1 srv rc=0
  ip netns exec node2 iperf3 -s -1 -B 10.100.0.2 >"$OUT/$name-server.txt" 2>&1 &
  srv=$!
  rcd_wait_tcp_listen 2 5201 20 || lab_fail "iperf3 server not listening in node2"
  ip netns exec node1 iperf3 -c 10.100.0.2 -B 10.100.0.1 -P 16 -t "$secs" -b 2500K -J \
    >"$OUT/$name.json" 2>&1 || rc=$?
  wait "$srv" 2>/dev/null
  return "$rc"
}

# node1's tx bytes on rail R.
rail_tx() { rails_json 1 | jq -r --argjson r "$2" '.rails[] | select(.rail == $r) | .tx_bytes'; }

lab_setup_nodes 2 --rails 2 || lab_die "node setup"

# --- 1. baseline: active-backup -----------------------------------------------------------
RAILS_MODE=active-backup
rails_start_nodes 2 || lab_die "two-rail nodes (active-backup)"
a0=$(rail_tx 1 0)
a1=$(rail_tx 1 1)
iperf_p8 base
lab_expect "active-backup: iperf3 -P 16 ran to its end" [ $? -eq 0 ]
b0=$(($(rail_tx 1 0) - a0))
b1=$(($(rail_tx 1 1) - a1))
b_retr=$(jq '.end.sum_sent.retransmits // -1' "$OUT/base.json")
b_mbps=$(jq '(.end.sum_received.bits_per_second // 0) / 1e6 | floor' "$OUT/base.json")
lab_log "active-backup: rail 0 tx $b0 B, rail 1 tx $b1 B, $b_mbps Mbit/s, retransmits $b_retr"
lab_expect "active-backup: rail 0 carried the data ($b0 B vs rail 1 $b1 B)" [ "$b0" -gt $((b1 * 10)) ]
rails_end 2

# --- 2. stripe ------------------------------------------------------------------------------
RAILS_MODE=stripe
rails_start_nodes 2 || lab_die "two-rail nodes (stripe)"
lab_expect "node1 runs in stripe mode ($(rails_json 1 | jq -r .mode))" \
  [ "$(rails_json 1 | jq -r .mode)" = stripe ]
# Both links in service before the streams start, so that the hash has two
# to choose from (the standby is made as soon as the peer has traffic).
for ((k = 0; k < 50; k++)); do
  [[ $(rails_json 1 | jq '[.rails[] | select(.links > 0)] | length') == 2 ]] && break
  rcd_ping 1 2 -c 1 -W 1 >/dev/null 2>&1
  sleep 0.2
done
lab_expect "both of node1's rails have a link to node2 ($(rails_json 1 | jq -c '[.rails[].links]'))" \
  [ "$(rails_json 1 | jq '[.rails[] | select(.links > 0)] | length')" -eq 2 ]
a0=$(rail_tx 1 0)
a1=$(rail_tx 1 1)
iperf_p8 stripe
lab_expect "stripe: iperf3 -P 16 ran to its end (every stream)" [ $? -eq 0 ]
s0=$(($(rail_tx 1 0) - a0))
s1=$(($(rail_tx 1 1) - a1))
s_retr=$(jq '.end.sum_sent.retransmits // -1' "$OUT/stripe.json")
s_mbps=$(jq '(.end.sum_received.bits_per_second // 0) / 1e6 | floor' "$OUT/stripe.json")
streams=$(jq '[.end.streams[]?] | length' "$OUT/stripe.json")
lab_log "stripe: rail 0 tx $s0 B, rail 1 tx $s1 B, $s_mbps Mbit/s, retransmits $s_retr ($streams streams)"
lab_expect "stripe: 16 streams reported ($streams)" [ "$streams" -eq 16 ]
total=$((s0 + s1))
# 16 flows (random source ports) hashed over 2 links: each link carries at
# least one unless all 16 hash alike (probability 2^-15); one flow of 16 is
# 6.25 % of the data, and the bound is 2.5 %.
lab_expect "stripe: rail 0 carried a share ($s0 of $total B)" [ "$s0" -gt $((total / 40)) ]
lab_expect "stripe: rail 1 carried a share ($s1 of $total B)" [ "$s1" -gt $((total / 40)) ]
lab_log "measured: retransmits active-backup $b_retr vs stripe $s_retr; Mbit/s $b_mbps vs $s_mbps"
rails_end 2
lab_finish
