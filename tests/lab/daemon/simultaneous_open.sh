#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two nodes send to each other at the same instant: both REQs cross, the
# collision is merged, and each side ends with exactly one QP.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 2 || lab_die "node setup"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" "idle = \"60s\""
  rcd_start "$i" || lab_die "start node$i"
done

# Python starts slowly under TCG, so both senders wait for one shared
# deadline and then send one UDP datagram each: the two REQs leave within
# about a millisecond of each other.
at=$(($(date +%s%N) + 4000000000))
send_at='import socket,sys,time
t=int(sys.argv[1])/1e9
while time.time()<t: pass
socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b"x",(sys.argv[2],9))'
lab_in_node 1 python3 -c "$send_at" "$at" 10.100.0.2 &
lab_in_node 2 python3 -c "$send_at" "$at" 10.100.0.1 &
wait
out1=$(rcd_ping 1 2 -c 3 -W 5 2>&1) && lab_pass "ping node1 -> node2 after the collision" ||
  lab_fail "ping node1 -> node2: $(tr '\n' ' ' <<<"$out1")"
out2=$(rcd_ping 2 1 -c 3 -W 5 2>&1) && lab_pass "ping node2 -> node1 after the collision" ||
  lab_fail "ping node2 -> node1: $(tr '\n' ' ' <<<"$out2")"

# The losing attempt is torn down (REJ collision) within connect_timeout.
ms1=$(rcd_wait_qps 1 1 15) && ms2=$(rcd_wait_qps 2 1 15)
lab_collect simopen
lab_expect "exactly one QP on each side (rxe_1: $(rcd_qps 1), rxe_2: $(rcd_qps 2))" \
  [ "$(rcd_qps 1)" -eq 1 -a "$(rcd_qps 2)" -eq 1 ]
merged=$(grep -c "simultaneous open with" "$RCNET_RESULTS"/rcnetd-*.log)
rejected=$(grep -c "collision" "$RCNET_RESULTS"/rcnetd-*.log)
lab_log "collision log lines: merged=$merged collision=$rejected (waits ${ms1:-?}/${ms2:-?} ms)"
lab_expect "the REQs crossed and were merged (log: 'simultaneous open with')" [ "$merged" -ge 1 ]
rcd_stop_all
lab_expect "no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
