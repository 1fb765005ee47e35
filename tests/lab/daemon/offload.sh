#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# GSO/TSO over RC (transport.offload), three rcnetd nodes at rc0 MTU 1500:
# node1 and node2 with offload (the default), node3 with offload = false,
# standing in for a peer without the capability.
#   - node1 <-> node2 negotiate offload (rcnetctl connections: offload true);
#     iperf3 node1 -> node2 sends TCP super-packets whole (gso_sent > 0) and
#     the receiving kernel takes them (no drops_tun_write: tun_get_user
#     accepted every vnet header);
#   - node1 <-> node3 do not; iperf3 node1 -> node3 works through node1's
#     software GSO (gso_segmented > 0), nothing larger than the MTU reaches
#     node3, nothing dropped (drops_gso_to_legacy_peer 0);
#   - ping -s 60000 both ways; no drop counter moves on any node;
#   - a UDP GSO stream (rcnet-bench-udp) to each: with USO (Linux 6.2+)
#     whole to node2 and cut by node1 for node3; without it (6.1) cut by
#     the kernel before rc0; every datagram arrives.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
OUT=$RCNET_RESULTS
MTU=1500

lab_setup_nodes 3 || lab_die "node setup"
for n in 1 2 3; do
  if ((n == 3)); then
    rcd_config "$n" "[timeouts]" "idle = \"120s\"" "[transport]" "offload = false"
  else
    rcd_config "$n" "[timeouts]" "idle = \"120s\""
  fi
  # rcd_config has written [tun] already: the MTU goes into that table.
  sed -i "/^\[tun\]\$/a mtu = $MTU" "$OUT/node-$n.toml"
done
# rcd_start's locals expand the caller's $i: start each with i set to it.
for i in 1 2 3; do
  rcd_start "$i" || lab_die "start node$i"
done

for i in 1 2 3; do
  line=$(grep -m1 "TUN rc0 up" "$OUT/rcnetd-$i.log")
  echo "node$i: $line"
  echo "node$i: $(grep -m1 'rcnet manager up' "$OUT/rcnetd-$i.log")"
done
lab_expect "node1: rc0 has TSO and checksum offload" \
  [ -n "$(grep -m1 'TUN rc0 up' "$OUT/rcnetd-1.log" | grep 'offloads: csum tso4 tso6')" ]
lab_expect "node3: rc0 without offloads (transport.offload = false)" \
  [ -n "$(grep -m1 'TUN rc0 up' "$OUT/rcnetd-3.log" | grep 'offloads: none')" ]
# 65,560 bytes: docs/design.md "Offloads", "Cost" (4 of them the room of the
# frame header of header-framed, iWARP, connections).
lab_expect "node1: start-up line states the registered receive memory" \
  [ -n "$(grep -m1 'rcnet manager up' "$OUT/rcnetd-1.log" | grep 'x 65560 bytes (32.0 MiB registered)')" ]
lab_expect "node1: rc0 MTU is $MTU" \
  [ -n "$(lab_in_node 1 ip -o link show rc0 | grep "mtu $MTU ")" ]

sock() { echo "/run/rcnet/node$1.sock"; }
# JSON of node A's in-service connection to node B.
conn_json() {
  "$CTL" -s "$(sock "$1")" -j connections |
    jq -c --arg p "$(lab_node_addr "$2"):" '[.connections[] | select(.peer_addr | startswith($p))][0]'
}

ping_big() {
  local out
  out=$(rcd_ping "$1" "$2" -c 3 -W 5 -s 60000 2>&1)
  if [[ $out == *" 0% packet loss"* ]]; then
    lab_pass "ping -s 60000 node$1 -> node$2 at mtu $MTU: $(grep -o 'rtt.*' <<<"$out")"
  else
    lab_fail "ping -s 60000 node$1 -> node$2: $(tr '\n' ' ' <<<"$out")"
  fi
}

iperf() {
  local from=$1 to=$2 rc spid mbps
  lab_in_node "$to" iperf3 -s -1 -B "10.100.0.$to" >"$OUT/iperf3-server-$to.txt" 2>&1 &
  spid=$!
  rcd_wait_tcp_listen "$to" 5201 20 || lab_fail "iperf3 server not listening in node$to after 20 s"
  rc=0
  lab_timeout 60 ip netns exec "node$from" iperf3 -c "10.100.0.$to" -B "10.100.0.$from" -t 3 -J \
    >"$OUT/iperf3-$from-$to.json" 2>&1 || rc=$?
  wait "$spid"
  mbps=$(jq -r '.end | "\(.sum_received.bits_per_second / 1e6 | floor) \(.sum_received.bytes) \(.sum_sent.retransmits // 0)"' \
    "$OUT/iperf3-$from-$to.json" 2>/dev/null)
  if ((rc == 0)) && [ -n "$mbps" ] && [ "${mbps%% *}" != null ]; then
    read -r IPERF_MBPS IPERF_BYTES IPERF_RETR <<<"$mbps"
    lab_pass "iperf3 TCP 3 s node$from -> node$to over rc0 (mtu $MTU): $IPERF_MBPS Mbit/s, $IPERF_BYTES bytes, retransmits $IPERF_RETR"
  else
    IPERF_BYTES=0
    lab_fail "iperf3 node$from -> node$to (exit $rc): $(tail -c 300 "$OUT/iperf3-$from-$to.json")"
  fi
}

# --- node1 <-> node2: both capable -------------------------------------------------
ping_big 1 2
ping_big 2 1
c12=$(conn_json 1 2)
c21=$(conn_json 2 1)
echo "node1 -> node2 connection: $c12"
lab_expect "node1's connection to node2 negotiated offload" [ "$(jq .offload <<<"$c12")" = true ]
lab_expect "node2's connection to node1 negotiated offload" [ "$(jq .offload <<<"$c21")" = true ]
sent0=$(rcd_stat 1 gso_sent)
zc0=$(rcd_stat 1 sends_zero_copy)
tx0=$(jq .tx_bytes <<<"$c12")
iperf 1 2
c12=$(conn_json 1 2)
moved=$(($(jq .tx_bytes <<<"$c12") - tx0))
sent=$(($(rcd_stat 1 gso_sent) - sent0))
echo "node1 -> node2 during iperf3: $moved bytes on the QP, $sent GSO super-packets sent whole"
lab_expect "node1 -> node2: the QP moved at least what iperf3 received ($moved >= $IPERF_BYTES)" \
  [ "$moved" -ge "$IPERF_BYTES" -a "$IPERF_BYTES" -gt 0 ]
lab_expect "node1 -> node2: TCP went as GSO super-packets, one SEND each (gso_sent +$sent)" \
  [ "$sent" -gt 0 ]
zc=$(($(rcd_stat 1 sends_zero_copy) - zc0))
lab_expect "node1 -> node2: packets posted from the buffer the TUN read them into (sends_zero_copy +$zc)" \
  [ "$zc" -gt 0 ]
lab_expect "node2 wrote every frame into its TUN (drops_tun_write 0)" \
  [ "$("$CTL" -s "$(sock 2)" -j stats | jq '[.counters[] | select(.name == "drops_tun_write")][0].value // 0')" -eq 0 ]

# --- node1 <-> node3: node3 without offload ----------------------------------------
ping_big 1 3
ping_big 3 1
c13=$(conn_json 1 3)
c31=$(conn_json 3 1)
echo "node1 -> node3 connection: $c13"
lab_expect "node1's connection to node3 did not negotiate offload" [ "$(jq .offload <<<"$c13")" = false ]
lab_expect "node3's connection to node1 did not negotiate offload" [ "$(jq .offload <<<"$c31")" = false ]
seg0=$(rcd_stat 1 gso_segmented)
pk0=$(rcd_stat 1 packets_tx)
bell0=$(rcd_stat 1 send_doorbells)
tx0=$(jq .tx_bytes <<<"$c13")
rx0=$(jq .rx_bytes <<<"$c31")
iperf 1 3
c13=$(conn_json 1 3)
c31=$(conn_json 3 1)
moved=$(($(jq .tx_bytes <<<"$c13") - tx0))
got=$(($(jq .rx_bytes <<<"$c31") - rx0))
seg=$(($(rcd_stat 1 gso_segmented) - seg0))
pkts=$(jq .rx_packets <<<"$c31")
echo "node1 -> node3 during iperf3: $moved bytes sent, $got received, $seg super-packets cut in software"
lab_expect "node1 -> node3: bytes moved ($moved sent, $got received, iperf3 $IPERF_BYTES)" \
  [ "$moved" -ge "$IPERF_BYTES" -a "$got" -ge "$IPERF_BYTES" -a "$IPERF_BYTES" -gt 0 ]
lab_expect "node1 -> node3: super-packets were segmented in software for the peer without offload ($seg)" \
  [ "$seg" -gt 0 ]
# The segments of one super-packet are one chain: one ibv_post_send each.
pk=$(($(rcd_stat 1 packets_tx) - pk0))
bells=$(($(rcd_stat 1 send_doorbells) - bell0))
lab_expect "node1: chained SENDs, fewer doorbells than SENDs ($pk SENDs, $bells ibv_post_send calls)" \
  [ "$bells" -gt 0 -a "$bells" -lt "$pk" ]
# Every SEND node3 received was one plain packet of at most the MTU: its
# receive buffers are exactly MTU bytes (offload off), so a larger SEND
# would have failed as a receive error (recv_errors) and broken the QP.
lab_expect "node3: no receive errors over $pkts packets (nothing above its MTU arrived)" \
  [ "$(rcd_stat 3 recv_errors)" -eq 0 -a "$(jq .state <<<"$c31")" = '"ESTABLISHED"' ]

# --- UDP GSO (USO): super-packets whole where the kernel grants USO ----------------
# A UDP GSO sender (UDP_SEGMENT) to a capable peer (node2) and to one without
# offload (node3). Each super-packet holds as many datagrams of 1,400 bytes
# as rc0's gso_max_segs allows: rcnetd sets it to limits.qp_send_depth - 2
# (29 by default) so that a peer without offload can take a super-packet's
# segments at once, and the kernel cuts a larger UDP super-packet before
# rc0 (TCP sizes its own to it). Where the TUN has USO (Linux 6.2+: 6.12
# here) a super-packet reaches rcnetd whole and crosses as one SEND to
# node2, and node1 cuts it in software for node3, as TCP's; on 6.1 the
# kernel cuts it before rc0. Every datagram must arrive at 1,400 bytes.
UDPB=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-udp
USO=false
grep -m1 'TUN rc0 up' "$OUT/rcnetd-1.log" | grep -q 'uso4 uso6' && USO=true
SEGS=$(lab_in_node 1 ip -d link show rc0 | grep -o 'gso_max_segs [0-9]*' | awk '{ print $2 }')
lab_log "node1: rc0 has USO: $USO, gso_max_segs ${SEGS:-?} ($(uname -r))"
lab_expect "node1: rc0's gso_max_segs is limits.qp_send_depth - 2 (${SEGS:-none})" [ "${SEGS:-0}" -eq 29 ]
SEGS=${SEGS:-20}
UDP_SUPER=100 # super-packets per stream
# 100 super-packets 20 ms apart: about 1,450 datagrams a second, well
# within what rcnetd reads one by one under TCG when the kernel cuts them
# (about 7,300 frames a second idle). 200 of 44 datagrams 5 ms apart lost
# 12-22% on 6.1 in a fresh clone's run beside the background builds: the
# cut datagrams outran rcnetd and rc0's queue dropped them.
udp() { # FROM TO: UDP_SUPER super-packets, 20 ms apart; sets UDP_SENT UDP_GOT UDP_LARGEST
  local from=$1 to=$2 rpid
  lab_in_node "$to" "$UDPB" recv 5300 --idle-ms 3000 >"$OUT/udp-recv-$from-$to.json" 2>&1 &
  rpid=$!
  sleep 0.5
  lab_timeout 60 ip netns exec "node$from" "$UDPB" send "10.100.0.$to" 5300 --count "$UDP_SUPER" \
    --segments "$SEGS" --payload 1400 --gap-us 20000 >"$OUT/udp-send-$from-$to.json" 2>&1 ||
    lab_fail "rcnet-bench-udp send node$from -> node$to: $(cat "$OUT/udp-send-$from-$to.json")"
  wait "$rpid"
  UDP_SENT=$(jq .datagrams "$OUT/udp-send-$from-$to.json" 2>/dev/null || echo 0)
  UDP_GOT=$(jq .datagrams "$OUT/udp-recv-$from-$to.json" 2>/dev/null || echo 0)
  UDP_LARGEST=$(jq .largest "$OUT/udp-recv-$from-$to.json" 2>/dev/null || echo 0)
  echo "UDP node$from -> node$to: sent $UDP_SENT datagrams in $UDP_SUPER super-packets of $SEGS, received $UDP_GOT (largest $UDP_LARGEST bytes)"
}
# udp_case TO COUNTER WHAT: the stream to node TO; with USO node1's COUNTER
# moves by one per super-packet (WHAT says where they went), without it by
# none.
udp_case() {
  local to=$1 ctr=$2 c0 d r0 reads
  c0=$(rcd_stat 1 "$ctr")
  r0=$(rcd_stat 1 tun_rx_packets)
  udp 1 "$to"
  d=$(($(rcd_stat 1 "$ctr") - c0))
  reads=$(($(rcd_stat 1 tun_rx_packets) - r0))
  lab_log "UDP GSO node1 -> node$to: node1's rcnetd read $reads frames from rc0 for $UDP_SUPER super-packets of $SEGS datagrams ($ctr +$d)"
  # Datagrams are not retransmitted: most, not all, must arrive (TCG's
  # sender and receiver can fall behind their socket buffers); rcnetd's own
  # drop counters are held to 0 below.
  lab_expect "UDP GSO node1 -> node$to: $UDP_GOT of $UDP_SENT datagrams of 1,400 bytes arrived" \
    [ "$UDP_SENT" -eq $((UDP_SUPER * SEGS)) -a "$UDP_GOT" -ge $((UDP_SENT * 9 / 10)) -a "$UDP_LARGEST" -eq 1400 ]
  if [[ $USO == true ]]; then
    lab_expect "UDP GSO node1 -> node$to with USO: $3 ($ctr +$d of $UDP_SUPER, $reads reads)" \
      [ "$d" -ge $((UDP_SUPER * 9 / 10)) -a "$reads" -le $((UDP_SUPER * 2)) ]
  else
    lab_expect "UDP GSO node1 -> node$to without USO: the kernel cut them before rc0 ($ctr +$d, $reads reads)" \
      [ "$d" -eq 0 -a "$reads" -ge $((UDP_SENT * 9 / 10)) ]
  fi
}
if [[ ! -x $UDPB ]]; then
  lab_fail "no $UDPB (a build with -Dbench=true makes it)"
else
  udp_case 2 gso_sent "super-packets crossed whole, one SEND each"
  udp_case 3 gso_segmented "cut in software by node1 for the peer without offload"
fi

for i in 1 2 3; do
  "$CTL" -s "$(sock "$i")" qps >"$OUT/rcnetctl-qps-$i.txt" 2>&1
  echo "== rcnetctl qps (node$i)"
  cat "$OUT/rcnetctl-qps-$i.txt"
done
lab_collect offload-end
rcd_stop_all

# --- no drops anywhere -------------------------------------------------------------
for i in 1 2 3; do grep "counters at exit" "$OUT/rcnetd-$i.log"; done
for i in 1 2 3; do
  for c in drops_gso_to_legacy_peer drops_oversize drops_queue_full drops_tun_write drops_refused \
    drops_no_slot recv_errors send_errors; do
    v=$(rcd_counter "$i" "$c")
    lab_expect "node$i: $c = 0 ($v)" [ "$v" -eq 0 ]
  done
done
lab_expect "no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
