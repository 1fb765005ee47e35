#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# SIGKILL one daemon: the survivors reap its QPs within idle_timeout + 1 s,
# taking the counted Last WQE fallback (rxe never delivers the event).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 3 || lab_die "node setup"
for i in 1 2 3; do
  rcd_config "$i" "[timeouts]" 'idle = "3s"' 'reaper_interval = "500ms"' 'last_wqe = "200ms"' \
    'drain = "300ms"' 'disconnect = "300ms"'
  rcd_start "$i" || lab_die "start node$i"
done
rcd_ping 1 3 -c 2 -W 5 >/dev/null 2>&1 || lab_fail "ping node1 -> node3"
rcd_ping 2 3 -c 2 -W 5 >/dev/null 2>&1 || lab_fail "ping node2 -> node3"
lab_expect "node3 has a QP to each survivor" [ "$(rcd_qps 3)" -eq 2 ]
lab_collect peer-kill-before
rcd_kill 3 KILL
t0=$(rcd_now_ms)
wait "${RCD_PID[3]}" 2>/dev/null
ms1=$(rcd_wait_qps 1 0 20)
ms2=$(rcd_wait_qps 2 0 20)
total=$(($(rcd_now_ms) - t0))
lab_log "survivors' QPs to the killed node gone after ${total} ms"
lab_expect "survivors reaped within idle + 1 s = 4000 ms (took ${total} ms)" [ "$total" -le 4000 ]
lab_collect peer-kill-after
rcd_stop_all
for i in 1 2; do
  c=$(grep "counters at exit" "$RCNET_RESULTS/rcnetd-$i.log")
  echo "node$i $c"
  n=$(grep -o 'last_wqe_timeouts=[0-9]*' <<<"$c" | cut -d= -f2)
  lab_expect "node$i counted the Last WQE fallback (${n:-0})" [ "${n:-0}" -ge 1 ]
done
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
