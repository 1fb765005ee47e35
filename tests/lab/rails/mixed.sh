#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A two-rail node and a one-rail node (issue 21): node1 runs with two rails,
# node2 with its single rail (node.address a string, as every config before
# rails); ping -i 0.01 node1 -> node2 over rc0 for a while.
#   1. they talk over rail 0, both ways; node1 carries node2 on rail 0;
#   2. node1 finds no second link toward node2: node2 says in its REQ/REP
#      that it has one rail, so node1 never dials 10.98.0.2 (an older peer
#      that says nothing is dialled with backoff: tests/unit/cm/rails_test);
#      peers_without_redundancy counts node2, over the observation window
#      node1 started no connection, and the ping was answered all along;
#   3. node2 shows one rail; every node's kernel RC QPs are its rcnetctl qps.
# (Two rails on one RDMA device: shared_device.sh.)
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
watch_s=20
# node2's rail count keeps node1 off rail 1 altogether (a failure loop
# would be hundreds in 20 s, a backed-off retry a handful).
max_attempts=0

lab_setup_nodes 2 --rails 2 || lab_die "node setup"
rails_config 1 "[timeouts]" 'idle = "600s"'
rcd_config 2 "[timeouts]" 'idle = "600s"'
rcd_start 1 || lab_die "start node1 (two rails)"
rcd_start 2 || lab_die "start node2 (one rail)"
ok=
for ((k = 0; k < 20; k++)); do
  rcd_ping 1 2 -c 1 -W 1 >/dev/null 2>&1 && ok=1 && break
done
lab_expect "ping node1 -> node2 over rc0" [ -n "$ok" ]
lab_check "ping node2 -> node1 over rc0" ip netns exec node2 ping -n -q -c 3 -W 2 10.100.0.1
rails_wait_carrier 1 2 0 20 >/dev/null
lab_expect "node1 carries node2 on rail 0 ($(rails_carrier 1 2))" [ "$(rails_carrier 1 2)" = 0 ]
lab_expect "node2 has one rail ($(rails_json 2 | jq -c '[.rails[].address]'))" \
  [ "$(rails_json 2 | jq '.rails | length')" -eq 1 ]

# Let node1 try rail 1 toward node2 for a moment, then watch.
sleep 3
c0=$(rcd_stat 1 connects_started)
f0=$(rcd_stat 1 connect_failures)
t0=$(rcd_now_ms)
rails_ping_start 1 2 p12 0.01
sleep "$watch_s"
rails_ping_stop p12
t1=$(rcd_now_ms)
c1=$(rcd_stat 1 connects_started)
f1=$(rcd_stat 1 connect_failures)
lab_log "node1 over $(((t1 - t0) / 1000)) s: connects_started $c0 -> $c1, connect_failures $f0 -> $f1; rejects_received $(rcd_stat 1 rejects_received)"
lab_expect "node1's connection attempts stay bounded ($((c1 - c0)) in ${watch_s} s, at most $max_attempts)" \
  [ $((c1 - c0)) -le "$max_attempts" ]
lab_expect "node1 counts node2 without redundancy ($(rails_json 1 | jq .peers_without_redundancy))" \
  [ "$(rails_json 1 | jq .peers_without_redundancy)" -eq 1 ]
lab_expect "node1 still carries node2 on rail 0 ($(rails_carrier 1 2))" [ "$(rails_carrier 1 2)" = 0 ]
lab_expect "node1's rail 1 itself is up ($(rails_state 1 1))" [ "$(rails_state 1 1)" = up ]
r=$(rails_ping_report p12 | head -1)
lab_log "p12 over the window: $r"
lab_expect "ping node1 -> node2 answered throughout ($(rails_ping_field "$r" lost) lost of $(rails_ping_field "$r" sent))" \
  [ "$(rails_ping_field "$r" replies)" -gt 0 -a "$(rails_ping_field "$r" lost)" -le 1 ]
rails_end 2
lab_finish
