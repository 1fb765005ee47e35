#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Both IP families on one rc0 (tun.address = ["10.100.0.i/24",
# "fd00:100::i/120"]), three nodes, one boot, two daemon configurations:
#   v4u  IPv4 underlay (10.99.0.i, underlay_prefix 10.99.0.0/24)
#   v6u  IPv6 underlay (fd99::i, underlay_prefix fd99::/64)
# the second started after the first's daemons stopped. In each: every node
# pings every other in both families; then node1 -> node2 runs iperf3 TCP in
# IPv4 and in IPv6 at the same time while node3 pings node1 in both; and
# then: one QP per peer pair (2 on each rxe device, 6 in all: both families
# share each peer's connection), rcnetctl peers naming both overlay
# addresses of each peer, no IPv6 link-local address on rc0 (addr_gen_mode
# none: no router solicitation), the kernel's own link-scope multicast
# counted as link_scope_multicast (its count printed: 0 when nothing got
# past addr_gen_mode none; link-scope pings to ff02::1 and 224.0.0.1 must
# add to it), drops_unmapped 0 on every node, and after SIGTERM no QP left.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
ROOT=$RCNET_RESULTS
NODES=(1 2 3)
# Under TCG every exec of a host binary costs a good part of a second:
# sleep with the shell's builtin.
exec {NAP_FD}<> <(:)
nap() { read -rt "$1" -u "$NAP_FD" || :; }

lab_setup_nodes 3 --ipv6 || lab_die "node setup"

o4() { echo "10.100.0.$1"; }
o6() { echo "fd00:100::$1"; }
sock() { echo "/run/rcnet/node$1.sock"; }

# cfg I UNDERLAY PREFIX: node I's config in $OUT (small SRQ and send pool:
# registering rcnetd's default 48 MiB takes seconds under TCG).
cfg() {
  local i=$1 u=$2 p=$3
  cat >"$OUT/node-$i.toml" <<EOF
[node]
address = "$u"
[tun]
address = ["$(o4 "$i")/24", "$(o6 "$i")/120"]
netns = "$(lab_node_netns "$i")"
mtu = 1500
[srq]
size = 128
[limits]
send_slots = 64
[timeouts]
idle = "120s"
[log]
level = "info"
target = "stderr"
[ctl]
socket = "$(sock "$i")"
group = "root"
[peers]
underlay_prefix = "$p"
EOF
}

# All three daemons at once (rcd_start waits for one at a time).
start_all() {
  local tag=$1 i k up
  mkdir -p /run/rcnet
  for i in "${NODES[@]}"; do
    "$RCD_BIN" -c "$OUT/node-$i.toml" >"$OUT/rcnetd-$i.log" 2>&1 &
    RCD_PID[$i]=$!
  done
  for i in "${NODES[@]}"; do
    up=0
    for ((k = 0; k < 300; k++)); do
      grep -q "TUN rc0 up" "$OUT/rcnetd-$i.log" 2>/dev/null && up=1 && break
      kill -0 "${RCD_PID[$i]}" 2>/dev/null || break
      nap 0.1
    done
    ((up)) || lab_die "$tag: rcnetd node$i not up: $(tail -3 "$OUT/rcnetd-$i.log" | tr '\n' ' ')"
  done
  lab_pass "$tag: rcnetd up on 3 nodes, $(grep -o 'TUN rc0 up: [^,]*' "$OUT/rcnetd-1.log")"
}

# SIGTERM to every daemon; each must exit 0 within 30 s.
stop_all() {
  local tag=$1 i rc wd
  kill -TERM "${RCD_PID[@]}"
  (
    nap 30
    kill -KILL "${RCD_PID[@]}" 2>/dev/null
  ) &
  wd=$!
  for i in "${NODES[@]}"; do
    rc=0
    wait "${RCD_PID[$i]}" 2>/dev/null || rc=$?
    lab_expect "$tag: rcnetd node$i exited 0 on SIGTERM (exit $rc)" [ "$rc" -eq 0 ]
  done
  kill "$wd" 2>/dev/null
  wait "$wd" 2>/dev/null
}

# NAME's value in node I's rcnetctl stats (0 when absent).
counter() {
  "$CTL" -s "$(sock "$1")" -j stats |
    jq -r --arg n "$2" '[.counters[] | select(.name == $n) | .value] | (.[0] // 0)'
}

# ping FROM -> ADDR (either family), 2 packets; PASS/FAIL.
oping() {
  local tag=$1 from=$2 addr=$3 out
  out=$(lab_in_node "$from" ping -n -q -i 0.2 -c 2 -W 5 "$addr" 2>&1)
  if [[ $out == *" 0% packet loss"* ]]; then
    lab_pass "$tag: ping node$from -> $addr: 2/2, $(grep -o 'rtt.*' <<<"$out")"
  else
    lab_fail "$tag: ping node$from -> $addr: $(tr '\n' ' ' <<<"$out")"
  fi
}

# ADDRS (ip -o addr's, space-separated) holds A4 and A6 and no link-local one.
has_addrs() { [[ " $1" == *" $2 "* && " $1" == *" $3 "* && $1 != *fe80:* ]]; }
# An iperf3 client that exited RC and received BYTES got through.
got_bytes() { (($1 == 0)) && [[ $2 =~ ^[0-9]+$ ]] && (($2 > 0)); }
ends_with() { [[ $1 == *"$2" ]]; }

# iperf3 result FILE: "Mbit/s bytes" of what was received.
iperf_result() {
  jq -r '.end | "\(.sum_received.bits_per_second / 1e6 | floor) \(.sum_received.bytes)"' \
    "$1" 2>/dev/null
}

phase() {
  local tag=$1 prefix=$2 i j
  shift 2
  local -a under=("" "$@")  # under[i]: node i's underlay address
  OUT=$ROOT/$tag RCNET_RESULTS=$ROOT/$tag
  mkdir -p "$OUT"
  lab_log "== $tag: underlay ${under[1]} ${under[2]} ${under[3]} ($prefix), overlay 10.100.0.0/24 + fd00:100::/120"
  for i in "${NODES[@]}"; do cfg "$i" "${under[$i]}" "$prefix"; done
  start_all "$tag"

  # rc0 before any traffic: both addresses, no link-local one.
  local a
  for i in "${NODES[@]}"; do
    a=$(lab_in_node "$i" ip -o addr show dev rc0 2>&1 | awk '{ print $4 }' | tr '\n' ' ')
    lab_expect "$tag: node$i rc0 has $(o4 "$i")/24 and $(o6 "$i")/120, no fe80:: ($a)" \
      has_addrs "$a" "$(o4 "$i")/24" "$(o6 "$i")/120"
  done

  # Every pair, both families.
  for i in "${NODES[@]}"; do
    for j in "${NODES[@]}"; do
      ((i == j)) && continue
      oping "$tag" "$i" "$(o4 "$j")"
      oping "$tag" "$i" "$(o6 "$j")"
    done
  done

  # Both families at once over one connection: iperf3 node1 -> node2 in
  # IPv4 and IPv6 together, node3 pinging node1 in both meanwhile.
  lab_in_node 2 timeout -k 5 90 iperf3 -s -1 -B "$(o4 2)" -p 5201 >"$OUT/iperf3-server-v4.txt" 2>&1 &
  local s4=$!
  lab_in_node 2 timeout -k 5 90 iperf3 -s -1 -B "$(o6 2)" -p 5202 >"$OUT/iperf3-server-v6.txt" 2>&1 &
  local s6=$!
  rcd_wait_tcp_listen 2 5201 20 || lab_fail "$tag: iperf3 IPv4 server not listening in node2"
  rcd_wait_tcp_listen 2 5202 20 || lab_fail "$tag: iperf3 IPv6 server not listening in node2"
  local c4 c6 p4 p6 r4=0 r6=0 rp4=0 rp6=0
  lab_timeout 60 ip netns exec node1 iperf3 -c "$(o4 2)" -B "$(o4 1)" -p 5201 -t 3 -J \
    >"$OUT/iperf3-v4.json" 2>&1 &
  c4=$!
  lab_timeout 60 ip netns exec node1 iperf3 -c "$(o6 2)" -B "$(o6 1)" -p 5202 -t 3 -J \
    >"$OUT/iperf3-v6.json" 2>&1 &
  c6=$!
  lab_in_node 3 ping -n -q -c 5 -i 0.5 -W 5 "$(o4 1)" >"$OUT/ping-during-v4.txt" 2>&1 &
  p4=$!
  lab_in_node 3 ping -n -q -c 5 -i 0.5 -W 5 "$(o6 1)" >"$OUT/ping-during-v6.txt" 2>&1 &
  p6=$!
  wait "$c4" || r4=$?
  wait "$c6" || r6=$?
  wait "$p4" || rp4=$?
  wait "$p6" || rp6=$?
  wait "$s4" "$s6" 2>/dev/null
  local m4 b4 m6 b6
  read -r m4 b4 <<<"$(iperf_result "$OUT/iperf3-v4.json")"
  read -r m6 b6 <<<"$(iperf_result "$OUT/iperf3-v6.json")"
  lab_expect "$tag: iperf3 TCP over IPv4 node1 -> node2 at the same time as IPv6: ${m4:-?} Mbit/s, ${b4:-0} bytes (exit $r4)" \
    got_bytes "$r4" "${b4:-0}"
  lab_expect "$tag: iperf3 TCP over IPv6 node1 -> node2 at the same time as IPv4: ${m6:-?} Mbit/s, ${b6:-0} bytes (exit $r6)" \
    got_bytes "$r6" "${b6:-0}"
  lab_expect "$tag: node3 pinged node1 in both families meanwhile (exit $rp4, $rp6)" \
    [ "$rp4" -eq 0 -a "$rp6" -eq 0 ]

  # One QP per peer pair: 2 on each node's device, 6 in all, whatever the
  # families (a QP per family would make 12).
  for i in "${NODES[@]}"; do
    lab_expect "$tag: node$i has one QP per peer, both families on it ($(rcd_qps "$i") on $(lab_node_rdma_dev "$i"))" \
      [ "$(rcd_qps "$i")" -eq 2 ]
  done
  lab_expect "$tag: 6 QPs in all for 3 peer pairs ($(lab_qp_count))" [ "$(lab_qp_count)" -eq 6 ]
  "$CTL" -s "$(sock 1)" peers >"$OUT/peers-1.txt" 2>&1
  "$CTL" -s "$(sock 1)" connections >"$OUT/connections-1.txt" 2>&1
  sed "s/^/$tag node1 /" "$OUT/peers-1.txt" "$OUT/connections-1.txt"
  local shown
  shown=$("$CTL" -s "$(sock 1)" -j peers | jq -r '[.peers[] | .overlays | join(",")] | sort | join(" ")')
  lab_expect "$tag: rcnetctl peers on node1 names both addresses of each peer ($shown)" \
    [ "$shown" = "$(o4 2),$(o6 2) $(o4 3),$(o6 3)" ]
  shown=$("$CTL" -s "$(sock 1)" -j connections | jq -r '[.connections[] | .overlays | join(",")] | sort | join(" ")')
  lab_expect "$tag: rcnetctl connections on node1: one per peer, both addresses ($shown)" \
    [ "$shown" = "$(o4 2),$(o6 2) $(o4 3),$(o6 3)" ]
  shown=$("$CTL" -s "$(sock 1)" -j route get "$(o6 3)" | jq -r '"\(.node) \(.overlays | join(","))"')
  lab_expect "$tag: rcnetctl route get $(o6 3) on node1: node3, both its addresses ($shown)" \
    ends_with "$shown" " $(o4 3),$(o6 3)"

  # The kernel's own link-scope multicast: counted, not dropped. What
  # addr_gen_mode none leaves (MLD, IGMP) is printed; link-scope pings
  # must add to it without a drop.
  local k0 k1 d
  for i in "${NODES[@]}"; do
    k0=$(counter "$i" link_scope_multicast)
    lab_log "$tag: node$i: link_scope_multicast $k0 before the link-scope pings (0 when addr_gen_mode none stopped all of it)"
  done
  k0=$(counter 1 link_scope_multicast)
  lab_in_node 1 ping -6 -n -q -c 2 -i 0.2 -W 1 -I rc0 ff02::1 >"$OUT/ping-ff02.txt" 2>&1
  lab_in_node 1 ping -4 -n -q -c 2 -i 0.2 -W 1 -I rc0 224.0.0.1 >"$OUT/ping-224.txt" 2>&1
  k1=$(counter 1 link_scope_multicast)
  # ping's own exit says nothing here (rc0 delivers no multicast back).
  lab_expect "$tag: node1 counted the link-scope pings it sent (link_scope_multicast $k0 -> $k1, 2 to ff02::1 and 2 to 224.0.0.1)" \
    [ "$k1" -ge $((k0 + 2)) ]
  for i in "${NODES[@]}"; do
    d=$(counter "$i" drops_unmapped)
    lab_expect "$tag: node$i: drops_unmapped $d" [ "$d" -eq 0 ]
  done

  stop_all "$tag"
  lab_expect "$tag: no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
  for i in "${NODES[@]}"; do
    d=$(rcd_counter "$i" drops_unmapped)
    lab_expect "$tag: node$i at exit: drops_unmapped ${d:-0}, link_scope_multicast $(rcd_counter "$i" link_scope_multicast)" \
      [ "${d:-0}" -eq 0 ]
  done
}

phase v4u 10.99.0.0/24 "$(lab_node_addr 1)" "$(lab_node_addr 2)" "$(lab_node_addr 3)"
phase v6u fd99::/64 "$(lab_node_addr6 1)" "$(lab_node_addr6 2)" "$(lab_node_addr6 3)"
lab_finish
