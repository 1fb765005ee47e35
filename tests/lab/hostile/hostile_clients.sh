#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Hostile rdma_cm clients against a live rcnetd, on Soft-RoCE. node1 and
# node2 run rcnetd and ping over rc0; from node3's underlay address come:
#   - rdma-core's own clients, which know nothing of rcnet's private data
#     (rping, ucmatose, cmtime): rejected `version` (their REQ carries none);
#   - rcnet-hostile-client with crafted private data: truncated, oversized,
#     wrong version, wrong magic, a spoofed node id, a zero incarnation,
#     garbage: each rejected with its reason;
#   - clients that send a valid REQ and vanish before the RTU.
# rcnetd must keep its pid, node1<->node2 must keep pinging, every rejection
# is counted under its reason, and no QP is left behind (rcnetctl's QP list
# equals the kernel's for rcnetd's pid; audit passes).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
HOSTILE=$RCNET_BUILD_DIR/tests/lab/hostile/rcnet-hostile-client
S1=/run/rcnet/node1.sock
N1=$(lab_node_addr 1)
N3=$(lab_node_addr 3)
PORT=7471
OUT=$RCNET_RESULTS

lab_setup_nodes 3 || lab_die "node setup"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" 'idle = "120s"' 'connect = "2s"'
done
i=1
rcd_start 1 || lab_die "start node1"
i=2
rcd_start 2 || lab_die "start node2"
pid1=${RCD_PID[1]}
lab_expect "ping node1 -> node2 over rc0 before" rcd_ping 1 2 -c 3 -W 5

declare -A before=()
for c in rejects_sent_version rejects_sent_malformed malformed_private_data accepts \
  connect_failures qps_created qps_destroyed; do
  before[$c]=$(rcd_stat 1 "$c")
done

# --- rdma-core's clients: no rcnet private data ------------------------------
lab_timeout 20 rping -c -a "$N1" -p "$PORT" -I "$N3" -C 1 -v >"$OUT/rping.txt" 2>&1
lab_expect "rping (no rcnet private data) was rejected" grep -q "RDMA_CM_EVENT_REJECTED" "$OUT/rping.txt"
lab_timeout 20 ucmatose -s "$N1" -p "$PORT" -b "$N3" -c 1 -C 1 >"$OUT/ucmatose.txt" 2>&1
lab_expect "ucmatose was rejected" grep -q "RDMA_CM_EVENT_REJECTED" "$OUT/ucmatose.txt"
lab_timeout 30 cmtime -s "$N1" -p "$PORT" -b "$N3" -c 4 >"$OUT/cmtime.txt" 2>&1
cmtime_rej=$(grep -c "RDMA_CM_EVENT_REJECTED" "$OUT/cmtime.txt")
lab_expect "cmtime's 4 connections were all rejected ($cmtime_rej)" test "$cmtime_rej" -eq 4
foreign=$((2 + cmtime_rej)) # rping + ucmatose + cmtime: their REQs carry no rcnet private data

# --- crafted private data ------------------------------------------------------
declare -A want=(
  [truncated]=malformed [oversized]=version [wrong-version]=version [wrong-magic]=malformed
  [spoofed-node]=malformed [zero-incarnation]=malformed [garbage]=version
)
crafted_version=0 crafted_malformed=0
for kind in truncated oversized wrong-version wrong-magic spoofed-node zero-incarnation garbage; do
  got=$(lab_timeout 20 "$HOSTILE" "$N3" "$N1" "$PORT" "$kind" 2>&1)
  echo "$got" >>"$OUT/hostile.txt"
  lab_expect "$kind: REJ ${want[$kind]} ($got)" grep -q "rejected reason=${want[$kind]} " <<<"$got"
  if [[ ${want[$kind]} == version ]]; then
    crafted_version=$((crafted_version + 1))
  else
    crafted_malformed=$((crafted_malformed + 1))
  fi
done

# --- valid REQs that vanish before the RTU -------------------------------------
for k in 1 2 3; do
  got=$(lab_timeout 20 "$HOSTILE" "$N3" "$N1" "$PORT" vanish 2>&1)
  echo "$got" >>"$OUT/hostile.txt"
done
sleep 4  # > connect = 2s: every half-open attempt must be gone by now

d_version=$(($(rcd_stat 1 rejects_sent_version) - before[rejects_sent_version]))
d_malformed=$(($(rcd_stat 1 rejects_sent_malformed) - before[rejects_sent_malformed]))
lab_log "rejections: version +$d_version (crafted $crafted_version + foreign), malformed +$d_malformed (crafted $crafted_malformed)"
lab_log "cmtime: $(tr '\n' ' ' <"$OUT/cmtime.txt" | head -c 300)"
lab_expect "every version rejection counted (+$d_version == $crafted_version crafted + $foreign foreign)" \
  test "$d_version" -eq $((crafted_version + foreign))
lab_expect "every crafted malformed REQ counted (+$d_malformed == $crafted_malformed)" \
  test "$d_malformed" -eq "$crafted_malformed"
lab_expect "malformed_private_data counted too" \
  test $(($(rcd_stat 1 malformed_private_data) - before[malformed_private_data])) -ge $((d_version + d_malformed))
d_acc=$(($(rcd_stat 1 accepts) - before[accepts]))
lab_log "vanishing clients: accepts +$d_acc, QPs created +$(($(rcd_stat 1 qps_created) - before[qps_created])), destroyed +$(($(rcd_stat 1 qps_destroyed) - before[qps_destroyed]))"
lab_expect "the vanished attempts' QPs were destroyed" \
  test $(($(rcd_stat 1 qps_created) - before[qps_created])) -eq $(($(rcd_stat 1 qps_destroyed) - before[qps_destroyed]))

# --- the daemon and the pair are unharmed --------------------------------------
lab_expect "rcnetd node1 kept its pid ($pid1)" kill -0 "$pid1"
lab_expect "rcnetd node1 is the same process" test "${RCD_PID[1]}" = "$pid1"
lab_expect "ping node1 -> node2 over rc0 after" rcd_ping 1 2 -c 3 -W 5
mine=$("$CTL" -s "$S1" -j qps | jq -c '[.qps[].qpn] | sort')
kernel=$(rdma -j res show qp | jq -c --argjson p "$pid1" '[.[] | select(.pid == $p) | .lqpn] | sort')
lab_log "node1 QPs: rcnetctl $mine, kernel $kernel"
lab_expect "node1's QPs per rcnetctl equal the kernel's ($mine)" test "$mine" = "$kernel"
lab_expect "node1 holds exactly one QP (to node2)" test "$(jq length <<<"$mine")" -eq 1
lab_check "rcnetctl audit on node1" "$CTL" -s "$S1" audit
"$CTL" -s "$S1" stats >"$OUT/stats-node1.txt" 2>&1

rcd_stop_all
lab_finish
