#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Probe, not in the test suite (it records a kernel behaviour, it does not
# test rcnet): does the 6.1 rxe CM still connect between two nodes after a
# link flap taken while an RC connection was up? Plain rping, no rcnetd.
# Flaps the bridge-side port b_1 first (what the churn test does), then the
# node's own veth v_1 (docs/lab.md "Several nodes in one guest": first seen as
# a flap that "leaves the rxe CM stuck in both directions").
# For each: rping 1->2 and 2->1 before, a long rping 1->2 running across the
# flap, then rping 1->2 and 2->1 again, each bounded; plus node 1's policy
# routes before and after, since a device going down flushes its routes.
#   tools/lab/rcnet-lab run tests/lab/real/veth_flap_probe.sh --nodes 2
# Result on 6.1.0-56 (2026-11-23): rping connects in both directions after
# either flap (b_1 and v_1, 2 s down), so the rxe CM itself is not stuck;
# what the v_1 flap does break is node 1's policy route in table 101
# ("10.99.0.2 dev v_1 src 10.99.0.1"), flushed on link down and not back on
# link up. Anything that relies on the lab's per-node source routing loses
# its path to the peer until the route is re-added.
set -u -o pipefail
. "$RCNET_LAB_LIB"

lab_setup_nodes 2 || lab_die "node setup"
N1=$(lab_node_addr 1)
N2=$(lab_node_addr 2)
port=7600

# rping_once SERVER CLIENT: one 2-round rping, server bound to SERVER, client
# from CLIENT; prints "ok" or "fail" and how long the client took.
rping_once() {
  port=$((port + 1))
  lab_timeout 30 rping -s -a "$1" -p "$port" -C 2 >/dev/null 2>&1 &
  local s=$! t0 r=fail
  sleep 1
  t0=${EPOCHREALTIME/[.,]/}000
  lab_timeout 15 rping -c -a "$1" -p "$port" -I "$2" -C 2 >/dev/null 2>&1 && r=ok
  echo "$r $(((${EPOCHREALTIME/[.,]/}000 - t0) / 1000000)) ms"
  kill "$s" 2>/dev/null
  wait "$s" 2>/dev/null
}

probe() {
  local dev=$1 srv cli
  echo "=== flap $dev with an RC connection up"
  echo "before: 1->2 $(rping_once "$N2" "$N1"); 2->1 $(rping_once "$N1" "$N2")"
  ip route show table 101 >"$RCNET_RESULTS/routes-$dev-before.txt"
  port=$((port + 1))
  lab_timeout 120 rping -s -P -a "$N2" -p "$port" >/dev/null 2>&1 &
  srv=$!
  sleep 1
  rping -c -a "$N2" -p "$port" -I "$N1" -C 1000000 >"$RCNET_RESULTS/long-$dev.txt" 2>&1 &
  cli=$!
  sleep 3
  ip link set "$dev" down
  sleep 2
  ip link set "$dev" up
  sleep 3
  kill "$cli" "$srv" 2>/dev/null
  wait "$cli" "$srv" 2>/dev/null
  ip route show table 101 >"$RCNET_RESULTS/routes-$dev-after.txt"
  if cmp -s "$RCNET_RESULTS/routes-$dev-before.txt" "$RCNET_RESULTS/routes-$dev-after.txt"; then
    echo "node1 policy routes (table 101): unchanged by the flap"
  else
    echo "node1 policy routes (table 101) changed by the flap:"
    diff "$RCNET_RESULTS/routes-$dev-before.txt" "$RCNET_RESULTS/routes-$dev-after.txt"
  fi
  echo "after:  1->2 $(rping_once "$N2" "$N1"); 2->1 $(rping_once "$N1" "$N2")"
  echo "QPs left on rxe_1: $(lab_qp_count "$(lab_node_rdma_dev 1)")"
}

probe b_1
probe v_1
lab_pass "probe ran (its lines above are the result)"
lab_finish
