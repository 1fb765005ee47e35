#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two rails, both down (issue 21): two rcnetd nodes with two rails each
# (active-backup, holddown 2 s); ping -i 0.01 and an iperf3 TCP stream
# node1 -> node2 over rc0 throughout.
#   1. both bridge-side ports of node1 (b_1, c_1) go down: both of node1's
#      rails are down and the ping goes unanswered (no link to carry it);
#   2. c_1 comes back: traffic resumes on rail 1 (both nodes carry each
#      other there) while rail 0 is still down;
#   3. b_1 comes back: fail-back to rail 0;
#   4. the iperf3 connection outlives the outage (TCP retransmits; it never
#      resets); every node's kernel RC QPs are its rcnetctl qps.
# Reported, never asserted: ping gaps and losses around each change.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
OUT=$RCNET_RESULTS

lab_setup_nodes 2 --rails 2 || lab_die "node setup"
rails_start_nodes 2 || lab_die "two-rail nodes"
rails_ping_start 1 2 p12 0.01
rails_iperf_start 1 2 40 iperf
sleep 2

# --- 1. both rails of node1 down -----------------------------------------------------------------
t_down=$(rcd_now_ms)
rails_link b_1 down
rails_link c_1 down
rails_wait_state 1 0 down 15 >/dev/null
rails_wait_state 1 1 down 15 >/dev/null
lab_expect "node1's rail 0 is down ($(rails_state 1 0))" [ "$(rails_state 1 0)" = down ]
lab_expect "node1's rail 1 is down ($(rails_state 1 1))" [ "$(rails_state 1 1)" = down ]
lab_log "node1 carries node2 on: $(rails_carrier 1 2); rails: $(rails_json 1 | jq -c '[.rails[] | {rail, state, cause}]')"
sleep 3

# --- 2. rail 1 back -------------------------------------------------------------------------------
t_r1=$(rcd_now_ms)
rails_link c_1 up
rails_expect_carrier 1 2 1 30 "node1 carries node2 on rail 1 once c_1 is back"
t_resumed=$(rcd_now_ms)
rails_wait_carrier 2 1 1 30 >/dev/null
lab_expect "node2 carries node1 on rail 1 ($(rails_carrier 2 1))" [ "$(rails_carrier 2 1)" = 1 ]
lab_expect "node1's rail 0 is still down ($(rails_state 1 0))" [ "$(rails_state 1 0)" = down ]
sleep 3

# --- 3. rail 0 back ---------------------------------------------------------------------------------
t_r0=$(rcd_now_ms)
rails_link b_1 up
rails_expect_carrier 1 2 0 30 "node1 fails node2 back to rail 0 once b_1 is back"
t_back=$(rcd_now_ms)
rails_wait_carrier 2 1 0 30 >/dev/null
lab_expect "node2 fails node1 back to rail 0 ($(rails_carrier 2 1))" [ "$(rails_carrier 2 1)" = 0 ]
sleep 1
t_end=$(rcd_now_ms)

# --- 4. traffic ---------------------------------------------------------------------------------
rails_iperf_check iperf 90
rails_ping_stop p12
rails_ping_report p12 "$t_down:$t_r1" "$t_r1:$t_resumed" "$t_resumed:$t_r0" "$t_r0:$t_back" "$t_back:$t_end" \
  >"$OUT/p12.report"
sed 's/^/  p12 /' "$OUT/p12.report"
mapfile -t rep <"$OUT/p12.report"
lab_log "measured: p12 outage: gap $(rails_ping_field "${rep[1]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[1]}" lost); first reply $(rails_ping_field "${rep[2]}" first_ms) ms after c_1 up; fail-back window: gap $(rails_ping_field "${rep[4]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[4]}" lost)"
# A reply or two may still arrive just after the ports went down (in flight).
lab_expect "ping node1 -> node2 went unanswered while both rails were down ($(rails_ping_field "${rep[1]}" lost) lost)" \
  [ "$(rails_ping_field "${rep[1]}" lost)" -gt 0 ]
lab_expect "ping node1 -> node2 answered on rail 1 ($(rails_ping_field "${rep[3]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[3]}" replies)" -gt 0 ]
lab_expect "ping node1 -> node2 answered after the fail-back ($(rails_ping_field "${rep[5]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[5]}" replies)" -gt 0 ]
lab_log "node1 dropped for want of a link: failover_no_link=$(rcd_stat 1 failover_no_link)"
rails_end 2
lab_finish
