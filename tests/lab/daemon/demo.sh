#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The demo run by tools/demo.sh: three Soft-RoCE nodes, each running rcnetd
# (underlay 10.99.0.i, TUN rc0 in netns node<i> with 10.100.0.i/24). Every
# node pings every other over rc0, iperf3 runs over the overlay, each
# daemon's connections and the kernel's QP table are shown, and SIGTERM
# leaves no QP behind. Ends with "LAB RESULT: PASS|FAIL".
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

nodes=3
section() { printf '\n==== %s\n' "$*"; }
# rcnetctl is optional (another part of the tree); the daemon's log tells the
# same story when it or the daemon's ctl socket is missing.
ctl=""
for c in "$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl" "$RCNET_BUILD_DIR/tools/rcnetctl"; do
  [[ -f $c && -x $c ]] && ctl=$c && break
done
# The kernel's QP table without the two special QPs (QP0/QP1) of each device.
show_qps() {
  rdma res show qp | awk '{ for (k = 1; k < NF; k++) if ($k == "lqpn" && $(k + 1) > 1) { print; next } }'
}

section "Soft-RoCE lab: $nodes nodes (rdma_rxe on veth, one bridge)"
lab_setup_nodes "$nodes" || lab_die "node setup"
rdma link show | sed 's/^/  /'

section "starting rcnetd on each node"
for ((i = 1; i <= nodes; i++)); do
  rcd_config "$i" "[timeouts]" 'idle = "600s"'
  rcd_start "$i" || lab_die "start node$i"
  grep -h "info listening on\|TUN rc0 up\|ctl: listening" "$RCNET_RESULTS/rcnetd-$i.log" |
    sed -e 's/^[^ ]* \[rcnetd\] [a-z]* //' -e "s/^/  node$i: /"
done

section "ping over rc0: every node to every other"
for ((a = 1; a <= nodes; a++)); do
  for ((b = 1; b <= nodes; b++)); do
    ((a == b)) && continue
    out=$(rcd_ping "$a" "$b" -c 3 -W 5 2>&1)
    loss=$(grep -o '[0-9.]*% packet loss' <<<"$out")
    rtt=$(grep -o 'rtt.*' <<<"$out")
    if [[ $loss == "0% packet loss" ]]; then
      lab_pass "node$a (10.100.0.$a) -> node$b (10.100.0.$b): 3/3 replies, ${rtt:-no rtt}"
    else
      lab_fail "node$a -> node$b: ${loss:-no reply} $(tr '\n' ' ' <<<"$out")"
    fi
  done
done

section "iperf3 TCP, 10 s, node1 -> node2 over rc0"
lab_in_node 2 iperf3 -s -1 -B 10.100.0.2 >"$RCNET_RESULTS/iperf3-server.txt" 2>&1 &
spid=$!
rcd_wait_tcp_listen 2 5201 20 || lab_fail "iperf3 server not listening in node2 after 20 s"
rc=0
lab_timeout 90 ip netns exec node1 iperf3 -c 10.100.0.2 -B 10.100.0.1 -t 10 -f m \
  >"$RCNET_RESULTS/iperf3-client.txt" 2>&1 || rc=$?
wait "$spid"
grep -E '^\[ *ID\]|sender|receiver' "$RCNET_RESULTS/iperf3-client.txt" | sed 's/^/  /'
rate=$(awk '/receiver/ { for (k = 1; k < NF; k++) if ($(k + 1) == "Mbits/sec") print $k }' \
  "$RCNET_RESULTS/iperf3-client.txt")
if ((rc == 0)) && [[ -n $rate ]]; then
  lab_pass "iperf3 over rc0: $rate Mbit/s received"
else
  lab_fail "iperf3 over rc0 (exit $rc): $(tail -3 "$RCNET_RESULTS/iperf3-client.txt" | tr '\n' ' ')"
fi
echo "  note: the ping RTTs and iperf3 rate above are emulated (QEMU TCG, Soft-RoCE): compare them only as ratios within this run, never as absolute figures"

section "each daemon's connections"
for ((i = 1; i <= nodes; i++)); do
  sock=/run/rcnet/node$i.sock
  echo "  node$i:"
  if [[ -n $ctl && -S $sock ]] && "$ctl" -s "$sock" connections >"$RCNET_RESULTS/ctl-$i.txt" 2>&1; then
    sed 's/^/    /' "$RCNET_RESULTS/ctl-$i.txt"
  else
    # From the daemon's log: the connections it made or accepted.
    grep -h -- "-> ESTABLISHED" "$RCNET_RESULTS/rcnetd-$i.log" |
      sed 's/^[^ ]* \[rcnetd\] [a-z]* /    /'
  fi
done
lab_expect "one connection per node pair: $((nodes - 1)) QPs on each device" \
  [ "$(rcd_qps 1)" -eq $((nodes - 1)) -a "$(rcd_qps 2)" -eq $((nodes - 1)) -a "$(rcd_qps 3)" -eq $((nodes - 1)) ]

section "rdma res show qp (the kernel's view)"
show_qps | sed 's/^/  /'

section "SIGTERM: every daemon tears its QPs down (DREQ, Error, drain WR, destroy)"
for ((i = 1; i <= nodes; i++)); do rcd_kill "$i" TERM; done
for ((i = 1; i <= nodes; i++)); do
  rcd_wait_exit "$i" 20
  line=$(grep -h "stopped:" "$RCNET_RESULTS/rcnetd-$i.log" | tail -1)
  lab_expect "node$i exited ${RCD_EXIT[$i]}: ${line#*info }" [ "${RCD_EXIT[$i]}" = 0 ]
done
echo "  rdma res show qp now:"
show_qps | sed 's/^/  /'
left=$(lab_qp_count)
lab_expect "no QP left in the kernel ($left)" [ "$left" -eq 0 ]
echo
lab_finish
