#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two rails, carrier loss (issue 21): three rcnetd nodes with two rails each
# (active-backup, holddown 2 s); ping -i 0.01 node1 -> node2, slower pings
# node1 -> node3 and node2 -> node3, and an iperf3 TCP stream node1 -> node2
# over rc0 throughout.
#   1. the bridge-side port b_1 of node1's rail-0 veth goes down (v_1 loses
#      its carrier; the routes stay: docs/lab.md): node1 carries node2 and
#      node3 on rail 1, node2 and node3 carry node1 on rail 1, node2 <->
#      node3 stays on rail 0; node1's rail 0 is down; failovers_carrier or
#      failovers_port_error (rxe's IBV_EVENT_PORT_ERR on the carrier loss,
#      whichever rcnetd sees first) and the rail notices count it; the ping
#      keeps being answered on rail 1;
#   2. b_1 comes back: rail 0 goes through holddown before node1 fails back
#      to it (failbacks counted), and node2 fails back too;
#   3. the iperf3 connection lasts to its end; every node's kernel RC QPs
#      are its rcnetctl qps.
# Reported, never asserted: the longest gap between ping replies and the
# sequence numbers lost around each change (TCG: absolute times mean
# nothing, docs/lab.md "Time in the lab").
# shellcheck disable=SC2016 # jq programs: $re is jq's variable
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"

lab_setup_nodes 3 --rails 2 || lab_die "node setup"
rails_start_nodes 3 || lab_die "two-rail nodes"
rails_monitor_start 1
rails_monitor_start 2
rails_ctl 1 rails >"$RCNET_RESULTS/rails-start-1.txt" 2>&1

rails_ping_start 1 2 p12 0.01
rails_ping_start 1 3 p13 0.05
rails_ping_start 2 3 p23 0.05
rails_iperf_start 1 2 25 iperf
sleep 2
# rxe raises IBV_EVENT_PORT_ERR when its netdev loses carrier, and rcnetd's
# netlink monitor sees the carrier go: whichever comes first names the cause.
link_failovers() { echo $(($(rcd_stat "$1" failovers_carrier) + $(rcd_stat "$1" failovers_port_error))); }
fc0=$(link_failovers 1)
ns0=$(rcd_stat 1 rail_notices_sent)
nr0=$(rcd_stat 2 rail_notices_received)

# --- 1. carrier loss on node1's rail 0 ---------------------------------------------------
t_down=$(rcd_now_ms)
rails_link b_1 down
rails_expect_carrier 1 2 1 15 "node1 carries node2 on rail 1 after b_1 down"
t_over=$(rcd_now_ms)
for p in "1 3" "2 1" "3 1"; do
  read -r a b <<<"$p"
  rails_wait_carrier "$a" "$b" 1 15 >/dev/null
  lab_expect "node$a carries node$b on rail 1" [ "$(rails_carrier "$a" "$b")" = 1 ]
done
lab_expect "node2 still carries node3 on rail 0 ($(rails_carrier 2 3))" [ "$(rails_carrier 2 3)" = 0 ]
lab_expect "node1's rail 0 is down ($(rails_state 1 0))" [ "$(rails_state 1 0)" = down ]
lab_log "node1 rail 0: $(rails_json 1 | jq -c '.rails[0]')"
lab_log "node1: failovers_carrier=$(rcd_stat 1 failovers_carrier) failovers_port_error=$(rcd_stat 1 failovers_port_error)"
lab_expect "node1 counted the failover (carrier or port error: $fc0 -> $(link_failovers 1))" \
  [ "$(link_failovers 1)" -gt "$fc0" ]
lab_expect "node1 told its peers ($ns0 -> $(rcd_stat 1 rail_notices_sent) rail notices sent)" \
  [ "$(rcd_stat 1 rail_notices_sent)" -gt "$ns0" ]
lab_expect "node2 heard it ($nr0 -> $(rcd_stat 2 rail_notices_received) rail notices received)" \
  [ "$(rcd_stat 2 rail_notices_received)" -gt "$nr0" ]
fo=$(rails_wait_event 1 '.kind == "failover" and .reason == "failover" and .from_rail == 0 and .rail == 1 and (.peer_addr | test($re))' 5 2 "$t_down")
lab_expect "monitor: node1's failover event for node2 (${fo:-none})" [ -n "$fo" ]
sleep 3

# --- 2. carrier back: holddown, then fail-back ----------------------------------------------
t_up=$(rcd_now_ms)
rails_link b_1 up
rails_expect_carrier 1 2 0 30 "node1 fails node2 back to rail 0 after b_1 up"
t_back=$(rcd_now_ms)
rails_wait_carrier 2 1 0 30 >/dev/null
lab_expect "node2 fails node1 back to rail 0 ($(rails_carrier 2 1))" [ "$(rails_carrier 2 1)" = 0 ]
rails_wait_carrier 1 3 0 30 >/dev/null
lab_expect "node1 fails node3 back to rail 0 ($(rails_carrier 1 3))" [ "$(rails_carrier 1 3)" = 0 ]
lab_expect "node1's rail 0 is up ($(rails_state 1 0))" [ "$(rails_state 1 0)" = up ]
lab_expect "node1 counted fail-backs ($(rcd_stat 1 failbacks))" [ "$(rcd_stat 1 failbacks)" -gt 0 ]
hd=$(rails_wait_event 1 '.kind == "rail" and .rail == 0 and .state == "holddown"' 5 0 "$t_up")
fb=$(rails_wait_event 1 '.kind == "failover" and .reason == "failback" and .rail == 0 and (.peer_addr | test($re))' 5 2 "$t_up")
lab_expect "monitor: rail 0 entered holddown (${hd:-none})" [ -n "$hd" ]
lab_expect "monitor: node1's fail-back event for node2 (${fb:-none})" [ -n "$fb" ]
if [[ -n $hd && -n $fb ]]; then
  hd_ms=$(jq -r .time_ms <<<"$hd")
  fb_ms=$(jq -r .time_ms <<<"$fb")
  lab_log "holddown began $((hd_ms - t_up)) ms after b_1 up; fail-back $((fb_ms - hd_ms)) ms after it (holddown 2 s)"
  lab_expect "the fail-back came after the holddown began ($hd_ms <= $fb_ms)" [ "$hd_ms" -le "$fb_ms" ]
fi
sleep 1
t_end=$(rcd_now_ms)

# --- 3. traffic -------------------------------------------------------------------------------
rails_iperf_check iperf 60
for p in p12 p13 p23; do rails_ping_stop "$p"; done
rails_ping_report p12 "$t_down:$t_over" "$t_over:$t_up" "$t_up:$t_back" "$t_back:$t_end" >"$RCNET_RESULTS/p12.report"
sed 's/^/  p12 /' "$RCNET_RESULTS/p12.report"
mapfile -t rep <"$RCNET_RESULTS/p12.report"
lab_log "measured p12: failover (b_1 down -> rail 1 seen): gap $(rails_ping_field "${rep[1]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[1]}" lost); fail-back window: gap $(rails_ping_field "${rep[3]}" max_gap_ms) ms, lost $(rails_ping_field "${rep[3]}" lost)"
lab_expect "ping node1 -> node2 answered on rail 1 while b_1 was down ($(rails_ping_field "${rep[2]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[2]}" replies)" -gt 0 ]
lab_expect "ping node1 -> node2 answered after the fail-back ($(rails_ping_field "${rep[4]}" replies) replies)" \
  [ "$(rails_ping_field "${rep[4]}" replies)" -gt 0 ]
for p in p13 p23; do
  r=$(rails_ping_report "$p" "$t_over:$t_end" | tail -1)
  lab_log "$p from the failover on: $r"
  lab_expect "$p answered from the failover on ($(rails_ping_field "$r" replies) replies)" \
    [ "$(rails_ping_field "$r" replies)" -gt 0 ]
done
rails_end 3
lab_finish
