#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The overlay behaves like an IP link (rcnetd(8) "THE OVERLAY AS AN IP
# LINK"), two nodes: node1 knows only node2 (peers.static, no prefix rule),
# rc0 MTU 65520; node2 has tun.mtu 1500 and an address 192.168.5.1 behind
# its rc0 (on its netns' lo).
#   - routing through a peer: node1 routes 192.168.5.0/24 via node2's
#     overlay address on rc0 and pings 192.168.5.1 (the reply's source
#     passes node1's source check because the route to it goes via node2);
#   - ICMP host unreachable: node1 pings 10.100.0.99, which no peer owns,
#     and ping shows "Destination Host Unreachable" from node1's own address;
#   - fragmentation needed: ping -M do -s 3000 node1 -> node2 gets "Frag
#     needed ... mtu = 1500" from node1's address, and the kernel's path
#     MTU to node2 becomes 1500; with that flushed, tracepath learns pmtu
#     1500 from node1's address too;
#   - source check: node2 sends two packets with forged sources into its
#     rc0; node1 drops and counts both (drops_source 2), and nothing else.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
OUT=$RCNET_RESULTS

lab_setup_nodes 2 || lab_die "node setup"
rcd_config 1 "[[peers.static]]" 'overlay = "10.100.0.2"' "underlay = \"$(lab_node_addr 2)\""
sed -i '/^underlay_prefix/d' "$OUT/node-1.toml"
rcd_config 2
sed -i '/^\[tun\]$/a mtu = 1500' "$OUT/node-2.toml"
for i in 1 2; do
  rcd_start "$i" || lab_die "start node$i"
done


# The connection first, so that node1 knows node2's MTU.
rcd_ping 1 2 -c 1 -W 10 >/dev/null 2>&1 && lab_pass "ping node1 -> node2" ||
  lab_fail "ping node1 -> node2"

# --- routing through a peer
lab_in_node 2 ip addr add 192.168.5.1/32 dev lo
lab_in_node 2 ip link set lo up
lab_in_node 1 ip route add 192.168.5.0/24 via 10.100.0.2 dev rc0
out=$(lab_in_node 1 ping -n -c 3 -W 5 192.168.5.1 2>&1)
if [[ $out == *" 0% packet loss"* ]]; then
  lab_pass "ping 192.168.5.1 via 10.100.0.2 dev rc0: $(grep -o 'rtt.*' <<<"$out")"
else
  lab_fail "ping 192.168.5.1 via 10.100.0.2 dev rc0: $(tr '\n' ' ' <<<"$out")"
fi
lab_expect "node1 sent to the route's gateway (tx_via_gateway $(rcd_stat 1 tx_via_gateway))" \
  [ "$(rcd_stat 1 tx_via_gateway)" -ge 3 ]

# --- ICMP host unreachable
out=$(lab_in_node 1 ping -n -c 2 -i 0.5 -W 2 10.100.0.99 2>&1)
echo "$out"
lab_expect "ping 10.100.0.99: Destination Host Unreachable from 10.100.0.1" \
  grep -q "From 10.100.0.1 icmp_seq=[0-9]* Destination Host Unreachable" <<<"$out"
lab_expect "rcnetd set accept_local on node1's rc0 (the stack takes errors from our own address)" \
  [ "$(lab_in_node 1 cat /proc/sys/net/ipv4/conf/rc0/accept_local)" = 1 ]
lab_expect "node1 counted it (icmp_unreachable_sent $(rcd_stat 1 icmp_unreachable_sent), drops_unmapped $(rcd_stat 1 drops_unmapped))" \
  [ "$(rcd_stat 1 icmp_unreachable_sent)" -ge 1 ] && [ "$(rcd_stat 1 drops_unmapped)" -ge 2 ]

# --- fragmentation needed: node2's MTU is 1500, node1's rc0 65520
out=$(lab_in_node 1 ping -n -c 2 -i 0.5 -W 2 -M "do" -s 3000 10.100.0.2 2>&1)
echo "$out"
lab_expect "ping -M do -s 3000: Frag needed (mtu = 1500) from 10.100.0.1" \
  grep -q "From 10.100.0.1 icmp_seq=[0-9]* Frag needed and DF set (mtu = 1500)" <<<"$out"
route=$(lab_in_node 1 ip route get 10.100.0.2)
echo "$route"
lab_expect "node1's path MTU to node2 is 1500" grep -q "mtu 1500" <<<"$route"
lab_expect "node1 counted it (icmp_too_big_sent $(rcd_stat 1 icmp_too_big_sent), drops_too_big $(rcd_stat 1 drops_too_big))" \
  [ "$(rcd_stat 1 icmp_too_big_sent)" -ge 1 ] && [ "$(rcd_stat 1 drops_too_big)" -ge 1 ]
out=$(lab_in_node 1 ping -n -c 2 -i 0.5 -W 5 -s 3000 10.100.0.2 2>&1)
lab_expect "ping -s 3000 node1 -> node2 without DF: fragmented to the path MTU, answered" \
  grep -q " 0% packet loss" <<<"$out"
# tracepath with the learnt path MTU flushed: it starts at rc0's 65520 and
# must learn 1500 from rcnetd's ICMP, sent from node1's overlay address.
lab_in_node 1 ip route flush cache
out=$(lab_in_node 1 timeout 30 tracepath -n -m 2 10.100.0.2 2>&1)
echo "$out"
lab_expect "tracepath node1 -> node2 learns pmtu 1500 from 10.100.0.1 (rcnetd's frag needed)" \
  grep -Eq "10\.100\.0\.1 .*pmtu 1500" <<<"$out"

# --- source check: forged sources from node2, one inside the overlay
# prefix, one outside (node1 routes nothing to it via node2)
lab_expect "node1 dropped nothing for its source so far" [ "$(rcd_stat 1 drops_source)" -eq 0 ]
# The system's python3 itself: a version manager's shim on $PATH costs
# seconds of execs under TCG.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
lab_timeout 60 ip netns exec node2 "$PY" - <<'EOF_PY'
import socket, struct
def csum(b):
    s = sum(struct.unpack("!10H", b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for src in ("10.100.0.77", "192.168.77.1"):
    udp = struct.pack("!HHHH", 40000, 9, 8 + 6, 0) + b"forged"
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                      socket.inet_aton(src), socket.inet_aton("10.100.0.1"))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    s.sendto(hdr + udp, ("10.100.0.1", 0))
EOF_PY
# Bounded by time, not tries: each rcnetctl + jq costs a good part of a
# second under TCG.
deadline=$(($(rcd_now_ms) + 10000))
until [ "$(rcd_stat 1 drops_source)" -ge 2 ] || (($(rcd_now_ms) > deadline)); do
  sleep 0.2
done
rcd_ping 2 1 -c 2 -W 5 >/dev/null 2>&1 && lab_pass "ping node2 -> node1 after the forged packets" ||
  lab_fail "ping node2 -> node1 after the forged packets"
lab_expect "node1 dropped exactly the two forged packets (drops_source $(rcd_stat 1 drops_source))" \
  [ "$(rcd_stat 1 drops_source)" -eq 2 ]
"$CTL" -s /run/rcnet/node1.sock stats >"$OUT/rcnetctl-stats-1.txt" 2>&1

rcd_stop_all
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
