#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# SIGKILL node2's daemon, restart it and ping at once: node1 must drop the old
# QP when the new incarnation's REQ arrives, long before its idle timer.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 2 || lab_die "node setup"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" 'idle = "60s"' 'last_wqe = "200ms"'
  rcd_start "$i" || lab_die "start node$i"
done
rcd_ping 1 2 -c 2 -W 5 >/dev/null 2>&1 || lab_fail "ping node1 -> node2"
lab_expect "one QP on node1" [ "$(rcd_qps 1)" -eq 1 ]
lab_collect restart-before
t0=$(rcd_now_ms)
rcd_kill 2 KILL
wait "${RCD_PID[2]}" 2>/dev/null
rcd_start 2 || lab_die "restart node2"
out=$(rcd_ping 2 1 -c 3 -W 5 2>&1) && lab_pass "ping node2 -> node1 from the new incarnation" ||
  lab_fail "ping node2 -> node1 after restart: $(tr '\n' ' ' <<<"$out")"
ms=$(($(rcd_now_ms) - t0))
rcd_wait_qps 1 1 10 >/dev/null
lab_collect restart-after
lab_expect "node1 has exactly one QP (the new one)" [ "$(rcd_qps 1)" -eq 1 ]
restart=$(grep -c "restarted (incarnation" "$RCNET_RESULTS/rcnetd-1.log")
disc=$(grep -c "tearing down QPN" "$RCNET_RESULTS/rcnetd-1.log")
grep -E "restarted|tearing down" "$RCNET_RESULTS/rcnetd-1.log"
lab_log "kill to ping success: ${ms} ms; restart detected: $restart; teardowns: $disc"
lab_expect "node1 detected the restart at the new REQ" [ "$restart" -ge 1 ]
lab_expect "the old QP was not reaped by the idle timer" \
  [ "$(grep -c 'idle' "$RCNET_RESULTS/rcnetd-1.log")" -eq 0 ]
rcd_stop_all
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
