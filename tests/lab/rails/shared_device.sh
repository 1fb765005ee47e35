#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two rails on one RDMA device (issue 21): each node's rail 1 is a second
# address (10.98.0.i/24, another subnet) on its rail-0 netdev v_i, so both
# rails bind to one rxe device: one ibv_context, one async fd, one PD and
# SRQ shared by the rails (rdma/verbs_device.hpp; on a real HCA, two ports
# of one device reach librdmacm's one context the same way). Stripe mode,
# so that both rails carry data and receive through the one SRQ.
#   1. both nodes start; each rail is up on rxe_i, rail 1 logs that it
#      shares the device's PD, SRQ and receive buffers (and warns that the
#      rails do not protect against the device itself); each rail has a link
#      to the peer;
#   2. iperf3 -P 8 node1 -> node2 runs to its end, both of node2's rails
#      receive a real share of the data; rcnetctl audit is ok on both nodes
#      (the kernel's QPs of one device split between its rails) and the
#      kernel's RC QPs are rcnetctl qps;
#   3. `rdma link delete rxe_1` returns within 2 s while both of node1's
#      rails hold it; rcnetd keeps running; both rails are removed;
#   4. `rdma link add rxe_1`: both rails adopt the device again (one shares
#      it with the other again), node1 reaches node2 over rc0, and every
#      node's kernel RC QPs are its rcnetctl qps at the end.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
OUT=$RCNET_RESULTS
delete_bound_ms=2000
secs=8

lab_setup_nodes 2 || lab_die "node setup"
for i in 1 2; do
  j=$((3 - i))
  ip addr add "$(lab_node_addr "$i" 1)/24" dev "$(lab_node_dev "$i" 0)" ||
    lab_die "rail 1's address on $(lab_node_dev "$i" 0)"
  # The node's policy table (lab_setup_nodes: oif v_i) routes rail 1's
  # subnet out of the same netdev.
  ip route replace "$(lab_node_addr "$j" 1)/32" dev "$(lab_node_dev "$i" 0)" \
    src "$(lab_node_addr "$i" 1)" table "$(_lab_rail_table "$i" 0)" ||
    lab_die "route to $(lab_node_addr "$j" 1) in node$i's table"
done
RAILS_MODE=stripe
rails_start_nodes 2 || lab_die "two rails on one device"

# --- 1. one device, two rails ---------------------------------------------------------------
for i in 1 2; do
  devs=$(rails_json "$i" | jq -r '[.rails[] | "\(.state):\(.device)"] | join(" ")')
  lab_expect "node$i: both rails up on $(lab_node_rdma_dev "$i" 0) ($devs)" \
    [ "$devs" = "up:$(lab_node_rdma_dev "$i" 0) up:$(lab_node_rdma_dev "$i" 0)" ]
  lab_expect "node$i: rail 1 shares the device's PD and SRQ (rcnetd log)" \
    grep -q "PD and SRQ shared with another rail" "$OUT/rcnetd-$i.log"
  lab_expect "node$i: rail 1 shares the SRQ's receive buffers (rcnetd log)" \
    grep -q "sharing the device's SRQ" "$OUT/rcnetd-$i.log"
  lab_expect "node$i: rcnetd warns that rail 1 gives no redundancy against the device" \
    grep -q "rail 1: on RDMA device $(lab_node_rdma_dev "$i" 0) with another rail" "$OUT/rcnetd-$i.log"
done
for r in 0 1; do
  ms=$(rails_wait_state 1 "$r" up 10)
  lab_expect "node1's rail $r has a link to node2 ($(rails_json 1 | jq -c --argjson r $r '.rails[$r].links'))" \
    [ "$(rails_json 1 | jq --argjson r $r '.rails[$r].links')" -ge 1 ]
done

# --- 2. traffic through the one SRQ -----------------------------------------------------------
rx() { rails_json 2 | jq -r --argjson r "$1" '.rails[] | select(.rail == $r) | .rx_bytes'; }
a0=$(rx 0)
a1=$(rx 1)
ip netns exec node2 iperf3 -s -1 -B 10.100.0.2 >"$OUT/iperf-server.txt" 2>&1 &
srv=$!
rcd_wait_tcp_listen 2 5201 20 || lab_fail "iperf3 server not listening in node2"
rc=0
ip netns exec node1 iperf3 -c 10.100.0.2 -B 10.100.0.1 -P 8 -t "$secs" -b 2500K -J \
  >"$OUT/iperf.json" 2>&1 || rc=$?
wait "$srv" 2>/dev/null
err=$(jq -r '.error // ""' "$OUT/iperf.json" 2>/dev/null)
lab_expect "iperf3 -P 8 over both rails of one device ran to its end (exit $rc${err:+, $err})" \
  [ "$rc" -eq 0 -a -z "$err" ]
b0=$(($(rx 0) - a0))
b1=$(($(rx 1) - a1))
lab_log "node2 received: rail 0 $b0 B, rail 1 $b1 B; $(jq '(.end.sum_received.bits_per_second // 0) / 1e6 | floor' "$OUT/iperf.json") Mbit/s, retransmits $(jq '.end.sum_sent.retransmits // -1' "$OUT/iperf.json")"
lab_expect "node2's rails both received a real share ($b0 B and $b1 B, each over 10% of the sum)" \
  [ $((b0 * 10)) -gt $((b0 + b1)) -a $((b1 * 10)) -gt $((b0 + b1)) ]
for i in 1 2; do
  ok=$(rails_ctl "$i" -j audit 2>/dev/null | jq -c '[.ok, [.rails[] | .ok]]')
  lab_expect "node$i: rcnetctl audit ok on both rails of one device ($ok)" [ "$ok" = "[true,[true,true]]" ]
  rails_qp_audit "$i"
done

# --- 3. the device goes while both rails hold it --------------------------------------------------
rl0=$(rcd_stat 1 device_readopts)
rcd_link_delete rxe_1
took=$RCD_DELETE_MS rc=$RCD_DELETE_RC
lab_expect "rdma link delete rxe_1 succeeded ($rc: $(tr '\n' ' ' <"$OUT/link-delete.txt"))" [ "$rc" -eq 0 ]
lab_expect "rdma link delete rxe_1 returned within ${delete_bound_ms} ms with two rails on it ($took ms)" \
  [ "$took" -le "$delete_bound_ms" ]
for r in 0 1; do
  rails_wait_state 1 "$r" removed 10 >/dev/null
  lab_expect "node1's rail $r is removed ($(rails_state 1 "$r"))" [ "$(rails_state 1 "$r")" = removed ]
done
lab_expect "rcnetd node1 still runs after the delete" kill -0 "${RCD_PID[1]}"
sleep 1

# --- 4. the device comes back --------------------------------------------------------------------
rdma link add rxe_1 type rxe netdev v_1 || lab_die "rdma link add rxe_1 type rxe netdev v_1"
for r in 0 1; do
  ms=$(rails_wait_state 1 "$r" up 40)
  lab_expect "node1's rail $r is up on rxe_1 again after $ms ms ($(rails_json 1 | jq -c --argjson r $r '.rails[$r] | [.state, .device]'))" \
    [ "$(rails_json 1 | jq -r --argjson r $r '.rails[$r] | "\(.state) \(.device)"')" = "up rxe_1" ]
done
lab_expect "node1 counted both rails' re-adopts ($rl0 -> $(rcd_stat 1 device_readopts))" \
  [ "$(rcd_stat 1 device_readopts)" -ge $((rl0 + 2)) ]
lab_expect "node1: the re-adopted rails share the device again (rcnetd log)" \
  [ "$(grep -c "PD and SRQ shared with another rail" "$OUT/rcnetd-1.log")" -ge 2 ]
ok=
for ((k = 0; k < 20; k++)); do
  rcd_ping 1 2 -c 1 -W 1 >/dev/null 2>&1 && ok=1 && break
done
lab_expect "ping node1 -> node2 over rc0 after the device came back" [ -n "$ok" ]
sleep 2
rails_end 2
lab_finish
