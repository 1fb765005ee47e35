#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Three rcnetd nodes started from one identical file (rcnetd.toml(5): the
# underlay address from node.interface, the overlay's host bits from it,
# tun.address_from_underlay): every overlay pair pings, iperf3 TCP for 3 s
# over rc0, and a 60000-byte ping crosses as one RC SEND (MTU 65520).
# The lab's three nodes share the host's network namespace, so their
# underlay interfaces are v_1, v_2, v_3, not one name as on a cluster; each
# node's drop-in (node-I.toml.d/lab.toml) names its interface, its TUN
# namespace and its ctl socket, the lab's per-node facts.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 3 || lab_die "node setup"
cat >"$RCNET_RESULTS/cluster.toml" <<'EOF2'
[node]
interface = "ib0"
[tun]
address = "10.100.0.0/24"
address_from_underlay = true
[peers]
underlay_prefix = "10.99.0.0/24"
[timeouts]
idle = "60s"
[log]
target = "stderr"
[ctl]
group = "root"
EOF2
for i in 1 2 3; do
  cp "$RCNET_RESULTS/cluster.toml" "$RCNET_RESULTS/node-$i.toml"
  mkdir -p "$RCNET_RESULTS/node-$i.toml.d"
  printf '[node]\ninterface = "%s"\n[tun]\nnetns = "%s"\n[ctl]\nsocket = "/run/rcnet/node%s.sock"\n' \
    "$(lab_node_dev "$i")" "$(lab_node_netns "$i")" "$i" >"$RCNET_RESULTS/node-$i.toml.d/lab.toml"
done
identical() { cmp -s "$RCNET_RESULTS/node-1.toml" "$RCNET_RESULTS/node-2.toml" &&
  cmp -s "$RCNET_RESULTS/node-1.toml" "$RCNET_RESULTS/node-3.toml"; }
lab_expect "the three nodes' files are identical" identical
for i in 1 2 3; do
  "$RCD_BIN" --check-config -c "$RCNET_RESULTS/node-$i.toml" >"$RCNET_RESULTS/check-config-$i.txt" 2>&1 ||
    lab_fail "node$i: --check-config: $(tail -1 "$RCNET_RESULTS/check-config-$i.txt")"
  lab_expect "node$i: --check-config derives tun.address 10.100.0.$i/24 from $(lab_node_dev "$i")'s $(lab_node_addr "$i")" \
    grep -q "^# this node: 10.100.0.$i/24 (host bits from the underlay address)$" \
    "$RCNET_RESULTS/check-config-$i.txt"
  lab_expect "node$i: --check-config names the drop-in that set node.interface" \
    grep -q "^interface = \"$(lab_node_dev "$i")\"  # $RCNET_RESULTS/node-$i.toml.d/lab.toml:2$" \
    "$RCNET_RESULTS/check-config-$i.txt"
done
for i in 1 2 3; do
  rcd_start "$i" || lab_die "start node$i"
done

for a in 1 2 3; do
  for b in 1 2 3; do
    ((a == b)) && continue
    out=$(rcd_ping "$a" "$b" -c 3 -W 5 2>&1)
    if [[ $out == *" 0% packet loss"* ]]; then
      lab_pass "ping node$a -> node$b over rc0: $(grep -o 'rtt.*' <<<"$out")"
    else
      lab_fail "ping node$a -> node$b: $(tr '\n' ' ' <<<"$out")"
    fi
  done
done
lab_collect mesh3-after-ping
lab_expect "one QP per peer pair on each node (2 each)" \
  [ "$(rcd_qps 1)" -eq 2 -a "$(rcd_qps 2)" -eq 2 -a "$(rcd_qps 3)" -eq 2 ]

out=$(rcd_ping 1 2 -c 3 -W 5 -s 60000 2>&1)
if [[ $out == *" 0% packet loss"* ]]; then
  lab_pass "ping -s 60000 node1 -> node2: $(grep -o 'rtt.*' <<<"$out")"
else
  lab_fail "ping -s 60000 node1 -> node2: $(tr '\n' ' ' <<<"$out")"
fi

lab_in_node 2 iperf3 -s -1 -B 10.100.0.2 >"$RCNET_RESULTS/iperf3-server.txt" 2>&1 &
spid=$!
rcd_wait_tcp_listen 2 5201 20 || lab_fail "iperf3 server not listening in node2 after 20 s"
lab_timeout 60 ip netns exec node1 iperf3 -c 10.100.0.2 -B 10.100.0.1 -t 3 -J \
  >"$RCNET_RESULTS/iperf3.json" 2>&1
rc=$?
wait "$spid"
mbps=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["end"]; print("%.1f %d" % (e["sum_received"]["bits_per_second"]/1e6, e["sum_sent"].get("retransmits", 0)))' "$RCNET_RESULTS/iperf3.json" 2>/dev/null)
if ((rc == 0)) && [ -n "$mbps" ]; then
  lab_pass "iperf3 TCP 3 s node1 -> node2 over rc0: ${mbps% *} Mbit/s (retransmits ${mbps#* })"
else
  lab_fail "iperf3 node1 -> node2 (exit $rc): $(tail -c 300 "$RCNET_RESULTS/iperf3.json")"
fi

lab_collect mesh3-end
rcd_stop_all
for i in 1 2 3; do grep "counters at exit" "$RCNET_RESULTS/rcnetd-$i.log"; done
lab_expect "no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
