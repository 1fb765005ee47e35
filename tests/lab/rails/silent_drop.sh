#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two rails, a path that drops silently (issue 21): two rcnetd nodes with two
# rails each (active-backup, holddown 2 s); ping -i 0.01 and an iperf3 TCP
# stream node1 -> node2 over rc0 throughout.
#   1. rail 0 drops node1's RoCE traffic (UDP 4791) both ways at its bridge
#      port b_1 (tc, rcd_block_roce); every port stays up, no carrier or port
#      event: the send WRs on rail 0 end in retry exceeded, and both nodes
#      carry each other on rail 1 (failovers_retry_exceeded); the ping is
#      answered meanwhile;
#   2. the drop ends: rail 0 carries node1 <-> node2 again (fail-back);
#   3. the iperf3 connection lasts to its end; every node's kernel RC QPs
#      are its rcnetctl qps.
# Reported, never asserted: ping gaps and losses around each change.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
OUT=$RCNET_RESULTS

lab_setup_nodes 2 --rails 2 || lab_die "node setup"
rails_start_nodes 2 || lab_die "two-rail nodes"
rails_monitor_start 1
rcd_block_roce_prepare 1 || lab_die "tc clsact on b_1"
rails_ping_start 1 2 p12 0.01
rails_iperf_start 1 2 30 iperf
sleep 2
rx0=$(($(rcd_stat 1 failovers_retry_exceeded) + $(rcd_stat 2 failovers_retry_exceeded)))

# --- 1. rail 0 drops node1's RoCE packets ------------------------------------------------------
t_block=$(rcd_now_ms)
rcd_block_roce 1 || lab_die "tc drop of UDP 4791 on b_1"
rails_expect_carrier 1 2 1 30 "node1 carries node2 on rail 1 under the silent drop"
t_over=$(rcd_now_ms)
rails_wait_carrier 2 1 1 30 >/dev/null
lab_expect "node2 carries node1 on rail 1 ($(rails_carrier 2 1))" [ "$(rails_carrier 2 1)" = 1 ]
rx1=$(($(rcd_stat 1 failovers_retry_exceeded) + $(rcd_stat 2 failovers_retry_exceeded)))
lab_expect "retry exceeded failovers counted ($rx0 -> $rx1, both nodes)" [ "$rx1" -gt "$rx0" ]
lab_expect "no carrier failover counted ($(rcd_stat 1 failovers_carrier))" [ "$(rcd_stat 1 failovers_carrier)" -eq 0 ]
lab_log "node1 rails under the drop: $(rails_json 1 | jq -c '[.rails[] | {rail, state, cause}]')"
sleep 3

# --- 2. the drop ends -----------------------------------------------------------------------------
t_unblock=$(rcd_now_ms)
dropped=$(rcd_unblock_roce 1)
lab_log "tc dropped $dropped RoCE packets on b_1"
lab_expect "the filter dropped RoCE packets ($dropped)" [ "${dropped:-0}" -gt 0 ]
rails_expect_carrier 1 2 0 60 "node1 carries node2 on rail 0 again after the drop ended"
t_back=$(rcd_now_ms)
rails_wait_carrier 2 1 0 30 >/dev/null
lab_expect "node2 carries node1 on rail 0 again ($(rails_carrier 2 1))" [ "$(rails_carrier 2 1)" = 0 ]
sleep 1
t_end=$(rcd_now_ms)

# --- 3. traffic ---------------------------------------------------------------------------------
rails_iperf_check iperf 60
rails_ping_stop p12
rails_ping_report p12 "$t_block:$t_over" "$t_over:$t_unblock" "$t_unblock:$t_back" "$t_back:$t_end" >"$OUT/p12.report"
sed 's/^/  p12 /' "$OUT/p12.report"
mapfile -t rep <"$OUT/p12.report"
lab_log "measured: p12 failover window: gap $(rails_ping_field "${rep[1]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[1]}" lost); fail-back window: gap $(rails_ping_field "${rep[3]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[3]}" lost)"
lab_expect "ping node1 -> node2 answered on rail 1 under the drop ($(rails_ping_field "${rep[2]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[2]}" replies)" -gt 0 ]
lab_expect "ping node1 -> node2 answered after the fail-back ($(rails_ping_field "${rep[4]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[4]}" replies)" -gt 0 ]
rails_end 2
lab_finish
