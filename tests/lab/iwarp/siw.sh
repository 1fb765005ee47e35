#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet on Soft-iWARP (run with RCNET_LAB_PROVIDER=siw; docs/lab.md
# "Soft-iWARP", docs/design.md "Providers"): four rcnetd nodes on siw
# devices, one boot, one section per behaviour, each with its own checks:
#   1. mesh: every ordered pair pings over rc0; one QP per peer pair;
#   2. iperf3 TCP node1 -> node2 and node2 -> node1 over rc0, its bytes
#      received on the peer's veth (the wire, not lo);
#   3. fan-in: iperf3 -P 8 from nodes 2, 3 and 4 into node1 at once, with
#      no connection terminated (iWARP has no RNR: a SEND that finds no
#      receive buffer ends the connection) and node1's QPs unchanged;
#   4. idle reap: node3 and node4 (idle cut to 3 s by SIGHUP) reap their
#      connections, and the next ping connects again on demand;
#   5. simultaneous open: node3 and node4 send to each other at once; they
#      end with one connection and the pings pass;
#   6. SIGKILL of node4 and a restart: node1 replaces the old connection at
#      the new incarnation's REQ and pings node4 again;
#   7. `rdma link delete siw_2` under a ping stream returns within 2 s, and
#      node2's rcnetd keeps running;
#   8. SIGTERM: every daemon exits 0 and no QP is left.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
OUT=$RCNET_RESULTS

[[ ${RCNET_LAB_PROVIDER:-rxe} == siw ]] || lab_die "run with RCNET_LAB_PROVIDER=siw (rcnet-lab run --provider siw)"
lab_setup_nodes 4 || lab_die "node setup"
lab_log "devices: $(rdma link show | awk '{ print $2 }' | tr '\n' ' '); transport: $(ibv_devinfo -d siw_1 2>/dev/null | awk '/transport:/ { print $2 }')"
# Idle 600 s until section 4 cuts node3's and node4's to 3 s (a live key,
# by SIGHUP): a shorter idle from the start would reap their connections
# while the mesh and the fan-in still count them.
for i in 1 2 3 4; do
  rcd_config "$i" "[timeouts]" 'idle = "600s"' 'reaper_interval = "500ms"'
  rcd_start "$i" || lab_die "start node$i"
done
rcnetctl_j() { "$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl" -s "/run/rcnet/node$1.sock" -j "${@:2}"; }
qpns() { rcnetctl_j "$1" qps | jq -c '[.qps[].qpn] | sort' 2>/dev/null; }

# --- 1. mesh -------------------------------------------------------------------------------------
for a in 1 2 3 4; do
  for b in 1 2 3 4; do
    ((a == b)) && continue
    out=$(rcd_ping "$a" "$b" -c 2 -W 5 2>&1)
    if [[ $out == *" 0% packet loss"* ]]; then
      lab_pass "ping node$a -> node$b over rc0 on siw"
    else
      lab_fail "ping node$a -> node$b on siw: $(tr '\n' ' ' <<<"$out" | tail -c 200)"
    fi
  done
done
lab_expect "one QP per peer pair: 3 on each node ($(rcd_qps 1) $(rcd_qps 2) $(rcd_qps 3) $(rcd_qps 4))" \
  [ "$(rcd_qps 1)" -eq 3 -a "$(rcd_qps 2)" -eq 3 -a "$(rcd_qps 3)" -eq 3 -a "$(rcd_qps 4)" -eq 3 ]

# --- 2. iperf3 both ways ------------------------------------------------------------------------
iperf_pair() { # FROM TO SECS NAME [ARGS...]: iperf3 over rc0; prints Mbit/s
  local from=$1 to=$2 secs=$3 name=$4 port=$((5200 + $1 * 10 + $2)) spid rc
  shift 4
  lab_in_node "$to" iperf3 -s -1 -p "$port" -B "10.100.0.$to" >"$OUT/$name-server.txt" 2>&1 &
  spid=$!
  rcd_wait_tcp_listen "$to" "$port" 20 || { lab_fail "$name: iperf3 server not listening"; return 1; }
  lab_timeout $((secs + 60)) ip netns exec "node$from" iperf3 -c "10.100.0.$to" -p "$port" \
    -B "10.100.0.$from" -t "$secs" -J "$@" >"$OUT/$name.json" 2>&1
  rc=$?
  wait "$spid"
  ((rc == 0)) || { lab_fail "$name: iperf3 exit $rc: $(tail -c 200 "$OUT/$name.json")"; return 1; }
  jq -r '.end.sum_received.bits_per_second / 1e6 | floor' "$OUT/$name.json"
}
# The bytes must cross the bridge: siw's TCP sockets name no device, and
# without the lab's rules by source they went over lo (tests/lab/lib.sh).
rx_bytes() { local v; read -r v <"/sys/class/net/$(lab_node_dev "$1")/statistics/rx_bytes"; echo "$v"; }
for p in "1 2" "2 1"; do
  set -- $p
  rx0=$(rx_bytes "$2")
  if mbps=$(iperf_pair "$1" "$2" 5 "iperf-$1-$2"); then
    lab_pass "iperf3 TCP node$1 -> node$2 over rc0 on siw: $mbps Mbit/s"
    rx=$(($(rx_bytes "$2") - rx0))
    lab_expect "iperf3 node$1 -> node$2 crossed the wire: $rx bytes received on $(lab_node_dev "$2") (iperf3 moved $((mbps * 5 / 8)) MB)" \
      [ "$rx" -ge $((mbps * 5 * 1000000 / 8 / 2)) ]
  fi
done

# --- 3. fan-in ------------------------------------------------------------------------------------
before=$(qpns 1)
est0=$(rcd_stat 1 connects_established)
pids=()
for s in 2 3 4; do
  (mbps=$(iperf_pair "$s" 1 10 "fanin-$s" -P 8) && echo "$mbps" >"$OUT/fanin-$s.mbps") &
  pids+=($!)
done
wait "${pids[@]}"
for s in 2 3 4; do
  lab_expect "fan-in: iperf3 -P 8 node$s -> node1 ran to its end ($(cat "$OUT/fanin-$s.mbps" 2>/dev/null || echo failed) Mbit/s)" \
    [ -s "$OUT/fanin-$s.mbps" ]
done
after=$(qpns 1)
lab_expect "fan-in: node1's QPs are the same ones before and after ($before vs $after): no connection ended" \
  [ -n "$before" -a "$before" = "$after" ]
lab_expect "fan-in: node1 made no new connection ($est0 -> $(rcd_stat 1 connects_established))" \
  [ "$(rcd_stat 1 connects_established)" -eq "$est0" ]
lab_log "node1 counters after the fan-in: $(rcnetctl_j 1 stats | jq -c '[.counters[] | select(.value != 0) | "\(.name)=\(.value)"] | join(" ")')"

# --- 4. idle reap (node3 and node4, idle cut to 3 s) ---------------------------------------------
rcd_ping 3 4 -c 1 -W 5 >/dev/null 2>&1
reaps0=$(($(rcd_stat 3 idle_reaps) + $(rcd_stat 4 idle_reaps)))
for i in 3 4; do
  from=$(($(wc -l <"$OUT/rcnetd-$i.log") + 1))
  sed -i 's/^idle = .*/idle = "3s"/' "$OUT/node-$i.toml"
  rcd_kill "$i" HUP
  rcd_wait_log "$i" "reload applied" 10 "$from" >/dev/null || lab_fail "idle reap: node$i did not apply the reload"
done
# Every connection of node3 and node4 is idle now: all of them go.
ms=$(rcd_wait_qps 4 0 20)
lab_log "node4 QPs after idle: $(rcd_qps 4) ($ms ms)"
reaps1=$(($(rcd_stat 3 idle_reaps) + $(rcd_stat 4 idle_reaps)))
lab_expect "idle reap: node3 and node4 reaped idle connections ($reaps0 -> $reaps1)" [ "$reaps1" -gt "$reaps0" ]
out=$(rcd_ping 3 4 -c 2 -W 5 2>&1) && lab_pass "idle reap: ping node3 -> node4 connects again on demand" ||
  lab_fail "idle reap: ping node3 -> node4 after the reap: $(tr '\n' ' ' <<<"$out" | tail -c 200)"

# --- 5. simultaneous open (node3 <-> node4) -----------------------------------------------------
rcd_wait_qps 3 0 20 >/dev/null || lab_log "node3 still has $(rcd_qps 3) QPs"
coll0=$(($(rcd_stat 3 collisions_merged) + $(rcd_stat 4 collisions_merged)))
lab_in_node 3 ping -n -q -c 3 -W 5 10.100.0.4 >"$OUT/simopen-3.txt" 2>&1 &
p3=$!
lab_in_node 4 ping -n -q -c 3 -W 5 10.100.0.3 >"$OUT/simopen-4.txt" 2>&1 &
p4=$!
wait "$p3"
r3=$?
wait "$p4"
r4=$?
lab_expect "simultaneous open: both pings answered (exit $r3, $r4)" [ "$r3" -eq 0 -a "$r4" -eq 0 ]
sleep 1
lab_expect "simultaneous open: one QP between node3 and node4 on each side ($(rcd_qps 3), $(rcd_qps 4) with node4's others)" \
  [ "$(rcd_qps 3)" -eq 1 ]
lab_log "simultaneous open: collisions merged $coll0 -> $(($(rcd_stat 3 collisions_merged) + $(rcd_stat 4 collisions_merged))) (0: the REQs did not cross this time)"

# --- 6. SIGKILL and restart of node4 ---------------------------------------------------------------
rcd_ping 1 4 -c 1 -W 5 >/dev/null 2>&1 || lab_fail "ping node1 -> node4 before the kill"
restarts0=$(rcd_stat 1 restarts_detected)
rcd_kill 4 KILL
rcd_wait_exit 4 30 || lab_die "node4's killed rcnetd did not exit within 30 s"
rcd_start 4 || lab_die "restart node4"
out=$(rcd_ping 4 1 -c 3 -W 5 2>&1) && lab_pass "restart: ping node4 -> node1 from the new incarnation" ||
  lab_fail "restart: ping node4 -> node1: $(tr '\n' ' ' <<<"$out" | tail -c 200)"
lab_log "restart: node1 restarts_detected $restarts0 -> $(rcd_stat 1 restarts_detected), QPs $(rcd_qps 1)"
lab_expect "restart: node1 has one QP to each peer ($(rcd_qps 1))" [ "$(rcd_qps 1)" -le 3 ]

# --- 7. rdma link delete under traffic -----------------------------------------------------------
lab_in_node 1 ping -n -q -i 0.05 -w 20 10.100.0.2 >"$OUT/delete-ping.txt" 2>&1 &
pp=$!
sleep 2
rcd_link_delete siw_2
lab_log "rdma link delete siw_2: ${RCD_DELETE_MS} ms, exit ${RCD_DELETE_RC}"
lab_expect "rdma link delete siw_2 under traffic returned within 2 s (${RCD_DELETE_MS} ms)" \
  [ "$RCD_DELETE_MS" -le 2000 -a "$RCD_DELETE_RC" -eq 0 ]
sleep 1
lab_expect "node2's rcnetd still runs after its device went away" kill -0 "${RCD_PID[2]}"
kill "$pp" 2>/dev/null
wait "$pp" 2>/dev/null

# --- 8. SIGTERM ---------------------------------------------------------------------------------
lab_collect siw-end
rcd_stop_all
for i in 1 2 3 4; do grep -h "counters at exit" "$OUT/rcnetd-$i.log" | sed "s/^/node$i /"; done
lab_expect "no QP left after SIGTERM ($(lab_qp_count))" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
