#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# SIGTERM with live connections: every daemon exits 0 and no QP of any
# rcnetd is left in the kernel. node3 runs with busy-poll
# (transport.poll_us): it forwards, sleeps when idle, and stops the same way.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 3 || lab_die "node setup"
for i in 1 2 3; do
  if ((i == 3)); then
    rcd_config "$i" "[timeouts]" 'idle = "60s"' "[transport]" "poll_us = 500"
  else
    rcd_config "$i" "[timeouts]" 'idle = "60s"'
  fi
  rcd_start "$i" || lab_die "start node$i"
done
lab_expect "node3 runs with busy-poll" rcd_wait_log 3 "busy-poll: 500 us" 10
rcd_ping 1 2 -c 1 -W 5 >/dev/null 2>&1 || lab_fail "ping node1 -> node2"
rcd_ping 1 3 -c 1 -W 5 >/dev/null 2>&1 || lab_fail "ping node1 -> node3"
rcd_ping 2 3 -c 1 -W 5 >/dev/null 2>&1 || lab_fail "ping node2 -> node3"
lab_expect "6 QPs live before SIGTERM ($(lab_qp_count))" [ "$(lab_qp_count)" -eq 6 ]
lab_collect sigterm-before
# SIGHUP: a live key applies; a key that needs a restart is named and
# nothing changes.
sed -i 's/idle = "60s"/idle = "50s"/' "$RCNET_RESULTS/node-2.toml"
from=$(($(wc -l <"$RCNET_RESULTS/rcnetd-2.log") + 1))
rcd_kill 2 HUP
lab_expect "SIGHUP applied a live change" rcd_wait_log 2 "reload applied" 20 "$from"
sed -i 's/^\[tun\]$/[tun]\nmtu = 9000/' "$RCNET_RESULTS/node-2.toml"
from=$(($(wc -l <"$RCNET_RESULTS/rcnetd-2.log") + 1))
rcd_kill 2 HUP
lab_expect "SIGHUP named tun.mtu as needing a restart" \
  rcd_wait_log 2 "tun.mtu needs a restart" 20 "$from"
lab_expect "node2 still running after the refused reload" kill -0 "${RCD_PID[2]}"
lab_expect "node2 kept its connections through both reloads" \
  [ -z "$(tail -n +"$from" "$RCNET_RESULTS/rcnetd-2.log" | grep 'tearing down')" ]
# Stop node1 alone first (its peers stay up), then the rest together.
t0=$(rcd_now_ms)
rcd_kill 1 TERM
rcd_wait_exit 1 10
rc=${RCD_EXIT[1]}
lab_log "node1 stopped in $(($(rcd_now_ms) - t0)) ms: $(grep 'stopped:' "$RCNET_RESULTS/rcnetd-1.log")"
lab_expect "node1 exits 0 on SIGTERM (exit $rc)" [ "$rc" = 0 ]
lab_expect "no QP left on rxe_1" [ "$(rcd_qps 1)" -eq 0 ]
# node1's DREQs reached its peers: they drop their QP to node1 and keep the
# one between them.
ms2=$(rcd_wait_qps 2 1 10)
ms3=$(rcd_wait_qps 3 1 10)
lab_log "node2/node3 down to one QP after ${ms2}/${ms3} ms of polling"
lab_expect "node2 and node3 keep only their QP to each other ($(rcd_qps 2), $(rcd_qps 3))" \
  [ "$(rcd_qps 2)" -eq 1 -a "$(rcd_qps 3)" -eq 1 ]
for i in 2 3; do
  lab_expect "node$i tore its QP to node1 down on node1's DREQ" \
    grep -q "tearing down QPN [0-9]* to 10.99.0.1:[0-9]*: DREQ received" "$RCNET_RESULTS/rcnetd-$i.log"
done
rcd_kill 2 TERM
rcd_kill 3 TERM
rcd_wait_exit 2 10
rcd_wait_exit 3 10
rc2=${RCD_EXIT[2]} rc3=${RCD_EXIT[3]}
lab_expect "node2 and node3 exit 0 (exit $rc2, $rc3)" [ "$rc2" = 0 -a "$rc3" = 0 ]
# Busy-poll on the real stack: node3 polled without sleeping after its
# bursts (loop_empty_polls) and still slept when idle (loop_sleeps), and
# it forwarded (the pings above).
exit3=$(grep "counters at exit" "$RCNET_RESULTS/rcnetd-3.log" | tail -n 1)
lab_log "node3 (poll_us 500): loop_sleeps=$(grep -o 'loop_sleeps=[0-9]*' <<<"$exit3" | cut -d= -f2) loop_empty_polls=$(grep -o 'loop_empty_polls=[0-9]*' <<<"$exit3" | cut -d= -f2)"
lab_expect "node3 busy-polled (loop_empty_polls > 0)" grep -q "loop_empty_polls=[1-9]" <<<"$exit3"
lab_expect "node3 slept when idle (loop_sleeps > 0)" grep -q "loop_sleeps=[1-9]" <<<"$exit3"
lab_collect sigterm-after
lab_expect "no QP of any rcnetd left ($(lab_qp_count))" [ "$(lab_qp_count)" -eq 0 ]
grep -h "STOPP\|stopped\|stopping" "$RCNET_RESULTS"/rcnetd-*.log
lab_finish
