#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The lab's second rail (lab_setup_nodes --rails 2, docs/lab.md "Several
# nodes in one guest"), without rcnetd:
#   1. ICMP echo over each rail's wire between every pair of 3 nodes;
#   2. rping over the 10.98 addresses, and its packets counted by the rail-1
#      rxe devices (hw_counters) and not by the rail-0 ones; rping over rail
#      0 still works beside it;
#   3. a flap of the node-side veth w_1 flushes node 1's rail-1 policy routes
#      (table 201) and lab_rail_routes puts them back: rping over rail 1
#      works again; a flap of the bridge-side c_1 leaves them alone.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

lab_setup_nodes 3 --rails 2 || lab_die "node setup"
lab_expect "rail-1 rxe device rxe_1_r1 on w_1" bash -c "rdma link show rxe_1_r1/1 | grep -q \"netdev w_1\""
for r in 0 1; do
  for i in 1 2 3; do
    for j in 1 2 3; do
      ((i == j)) || lab_rail_ping "$i" "$j" "$r" 4
    done
  done
done

hw() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts" 2>/dev/null || echo -1; }
r0_before=$(($(hw rxe_1) + $(hw rxe_2)))
r1_before=$(($(hw rxe_1_r1) + $(hw rxe_2_r1)))
lab_rping 1 2 5 7174 1
lab_rping 3 1 5 7174 1
r0_after=$(($(hw rxe_1) + $(hw rxe_2)))
r1_after=$(($(hw rxe_1_r1) + $(hw rxe_2_r1)))
lab_log "sent_pkts during the rail-1 rpings: rxe_1+rxe_2 $r0_before -> $r0_after, rxe_1_r1+rxe_2_r1 $r1_before -> $r1_after"
lab_expect "the rail-1 rpings went through rxe_1_r1/rxe_2_r1 ($r1_before -> $r1_after)" [ "$r1_after" -gt "$r1_before" ]
lab_expect "and not through rxe_1/rxe_2 ($r0_before -> $r0_after)" [ "$r0_after" -eq "$r0_before" ]
lab_rping 1 2 5 7174 0

routes() { ip route show table "$1" | grep -c "dev $2 "; }
lab_expect "table 201 holds node 1's two rail-1 routes" [ "$(routes 201 w_1)" -eq 2 ]
ip link set c_1 down && sleep 1 && ip link set c_1 up
lab_expect "a flap of c_1 keeps table 201 ($(routes 201 w_1) routes)" [ "$(routes 201 w_1)" -eq 2 ]
ip link set w_1 down && sleep 1 && ip link set w_1 up
lab_expect "a flap of w_1 flushes table 201 ($(routes 201 w_1) routes left)" [ "$(routes 201 w_1)" -eq 0 ]
lab_rail_routes 1 1
lab_expect "lab_rail_routes 1 1 puts them back ($(routes 201 w_1) routes)" [ "$(routes 201 w_1)" -eq 2 ]
lab_expect "table 101 untouched by the rail-1 flaps" [ "$(routes 101 v_1)" -eq 2 ]
# The veth's carrier takes a moment to come back after `link set up`.
for ((k = 0; k < 50; k++)); do
  [[ $(cat /sys/class/net/w_1/operstate) == up ]] && break
  sleep 0.1
done
lab_rping 1 2 5 7174 1
lab_rping 2 1 5 7174 1
lab_collect topology
lab_expect "no QP left after rping exits" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
