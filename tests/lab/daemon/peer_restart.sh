#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# node2's daemon crashes so that its DREQ is lost, restarts, and pings at
# once: node1 must tear the old QP down when the new incarnation's REQ
# arrives (docs/design.md "Simultaneous open and restarts"), long before its idle
# timer (60 s here).
#
# On SIGKILL the kernel sends a DREQ for the dead process's connections, and
# node1 would tear down on that instead. So node2's RoCEv2 traffic is dropped
# on its bridge port (b_2) while it dies, and let through again before the
# restart; the filter's drop count shows the DREQ went nowhere.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

idle_ms=60000
lab_setup_nodes 2 || lab_die "node setup"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" "idle = \"$((idle_ms / 1000))s\"" 'last_wqe = "200ms"'
  rcd_start "$i" || lab_die "start node$i"
done
rcd_ping 1 2 -c 2 -W 5 >/dev/null 2>&1 && lab_pass "ping node1 -> node2 (first incarnation)" ||
  lab_fail "ping node1 -> node2"
old=$(rcd_wait_log 1 "connected to peer 10.99.0.2" 5) || lab_die "node1 never connected to node2"
old_qpn=$(grep -o 'QPN [0-9]*' <<<"$old" | head -1 | cut -d' ' -f2)
lab_expect "one QP on node1 (QPN $old_qpn)" [ "$(rcd_qps 1)" -eq 1 ]
lab_collect restart-before

rcd_block_roce 2 || lab_die "cannot drop RoCE traffic on b_2 (tc clsact/u32)"
from1=$(($(wc -l <"$RCNET_RESULTS/rcnetd-1.log") + 1))
t_kill=$(rcd_now_ms)
rcd_kill 2 KILL
rcd_wait_exit 2 30 || lab_die "node2's killed rcnetd did not exit within 30 s (stuck in the kernel?)"
dropped=$(rcd_unblock_roce 2)
lab_log "node2 killed; RoCE packets dropped on b_2 meanwhile: $dropped"
lab_expect "the dead node's DREQ was lost (RoCE packets dropped on b_2: $dropped)" [ "$dropped" -ge 1 ]

rcd_start 2 || lab_die "restart node2"
out=$(rcd_ping 2 1 -c 3 -W 5 2>&1) && lab_pass "ping node2 -> node1 from the new incarnation" ||
  lab_fail "ping node2 -> node1 after restart: $(tr '\n' ' ' <<<"$out")"
t_ok=$(rcd_now_ms)
rcd_wait_qps 1 1 10 >/dev/null
lab_collect restart-after
lab_expect "node1 has exactly one QP (the new one): $(rcd_qps 1)" [ "$(rcd_qps 1)" -eq 1 ]

echo "--- node1 after the kill:"
tail -n +"$from1" "$RCNET_RESULTS/rcnetd-1.log"
restart=$(rcd_wait_log 1 "restarted \(incarnation" 5 "$from1")
lab_expect "node1 detected the restart at the new REQ: ${restart#* info }" [ -n "$restart" ]
down=$(rcd_wait_log 1 "tearing down QPN $old_qpn to" 1 "$from1")
lab_expect "old QPN $old_qpn torn down because the peer restarted: ${down#* info }" \
  grep -q "peer restarted" <<<"$down"
lab_expect "node1 never saw the dead incarnation's DREQ" \
  [ -z "$(tail -n +"$from1" "$RCNET_RESULTS/rcnetd-1.log" | grep 'DREQ received')" ]
gone=$(rcd_wait_log 1 "QPN $old_qpn .*-> DESTROYED" 5 "$from1")
lab_expect "old QPN $old_qpn destroyed: ${gone#* info }" [ -n "$gone" ]
if [ -n "$restart" ] && [ -n "$gone" ]; then
  t_restart=$(rcd_log_ms "$restart")
  t_gone=$(rcd_log_ms "$gone")
  lab_log "kill -> restart detected $((t_restart - t_kill)) ms; -> old QP destroyed $((t_gone - t_kill)) ms; kill -> ping ok $((t_ok - t_kill)) ms"
  lab_expect "old QP reaped at the REQ, well before idle_timeout ($((t_gone - t_kill)) ms < ${idle_ms} ms)" \
    [ $((t_gone - t_kill)) -lt "$idle_ms" ]
fi
rcd_stop_all
lab_expect "node1 counted restarts_detected=1 ($(rcd_counter 1 restarts_detected))" \
  [ "$(rcd_counter 1 restarts_detected)" -eq 1 ]
lab_expect "node1 reaped nothing for idleness (idle_reaps=$(rcd_counter 1 idle_reaps))" \
  [ "$(rcd_counter 1 idle_reaps)" -eq 0 ]
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
