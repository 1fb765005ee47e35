#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# IPv6 end to end, two nodes on a lab with IPv6 links (lab_setup_nodes
# --ipv6), three daemon configurations in one boot:
#   v6u-v4o  IPv6 underlay (node.address fd99::i, static peers), IPv4 overlay
#   v4u-v6o  IPv4 underlay, IPv6 overlay (fd00:100::i/120, prefix rule)
#   v6u-v6o  IPv6 underlay and overlay (fd99::/64 <- fd00:100::/64, prefix rule)
# Each at rc0 MTU 1500: ping both ways, an iperf3 TCP stream node1 -> node2
# whose TSO super-packets (TSO6 with the IPv6 overlay) go whole, one SEND each
# (gso_sent), rcnetctl's connections naming the peer's underlay address,
# rcnetctl qps == the kernel's QPs of rcnetd's pid, and after SIGTERM no QP
# left. The RoCEv2 packets' outer header follows the underlay's family (IPv6
# packets received on v_2; TCP on siw). v6u-v6o starts with both nodes sending at once
# (simultaneous open), and at its end reaps the idle connection (idle cut to
# 2 s by SIGHUP) and reconnects on demand. "full" as the scenario's argument (rcnet-lab run ...
# -- full) adds rping over the IPv6 underlay and an IPv4-only run first, for
# iperf3 figures of both families in one boot.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
# Each configuration's files (configs, daemon logs, rcnetctl output) go to
# its own directory: RCNET_RESULTS/OUT point there while it runs.
ROOT=$RCNET_RESULTS
OUT=$ROOT
mkdir -p "$ROOT"/v6u-v4o "$ROOT"/v4u-v6o "$ROOT"/v6u-v6o
# Under TCG every exec of a host binary (over 9p) costs a good part of a
# second when the host is busy: polling and parsing here stay in the shell's
# builtins where they can. nap SECS sleeps without an exec.
exec {NAP_FD}<> <(:)
nap() { read -rt "$1" -u "$NAP_FD" || :; }
FULL=0
[[ ${1:-} == full ]] && FULL=1
idle_ms=2000
tick_ms=500
# What carries the fabric's packets: RoCEv2 (UDP) on rxe, TCP on siw.
WIRE=RoCEv2
[[ ${RCNET_LAB_PROVIDER:-rxe} == siw ]] && WIRE="iWARP (TCP)"

lab_setup_nodes 2 --ipv6 || lab_die "node setup"

# --- the fabric: rxe's GIDs (and, with "full", rping) over IPv6 -----------------
for i in 1 2; do
  dev=$(lab_node_rdma_dev "$i")
  echo "== $dev GIDs (index gid type)"
  for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
    read -r g <"$f" 2>/dev/null || continue
    [[ $g == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
    read -r ty <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null
    echo "  ${f##*/} $g ${ty:-}"
  done
  # iWARP (siw) has no RoCE GIDs: its connections are TCP over the address.
  [[ ${RCNET_LAB_PROVIDER:-rxe} == siw ]] && continue
  gi=$(lab_gid_index "$dev" "$(lab_node_addr6 "$i")")
  lab_expect "$dev has a RoCE v2 GID for $(lab_node_addr6 "$i") (index ${gi:-none})" [ -n "$gi" ]
done

# rdma_cm alone over the IPv6 underlay: the reference for what follows.
rping6() {
  local a1 a2 spid rc=0 n
  a1=$(lab_node_addr6 1)
  a2=$(lab_node_addr6 2)
  timeout -k 5 30 rping -s -a "$a2" -p 7174 -C 3 -V >"$OUT/rping6.server.txt" 2>&1 &
  spid=$!
  # rdma res show cm_id writes an IPv6 address without brackets.
  if lab_wait_listen "$a2" 7174 20 >>"$OUT/rping6.server.txt"; then
    lab_timeout 30 rping -c -a "$a2" -I "$a1" -p 7174 -C 3 -v -V >"$OUT/rping6.client.txt" 2>&1 || rc=$?
    n=$(grep -c 'ping data: ' "$OUT/rping6.client.txt")
    lab_expect "rping $a1 -> $a2 (rdma_cm over IPv6): $n/3 verified (client exit $rc)" [ "$n" -eq 3 ]
  else
    lab_fail "rping server did not listen on $a2: $(tail -2 "$OUT/rping6.server.txt" | tr '\n' ' ')"
  fi
  wait "$spid" 2>/dev/null
}
((FULL)) && rping6

# --- helpers ----------------------------------------------------------------------
# cfg I UNDERLAY TUN_ADDRESS [PEERS_LINE...]: node I's config (as rcd_config's,
# in the given families). Small SRQ and send pool: registering rcnetd's
# default 48 MiB takes seconds under TCG.
cfg() {
  local i=$1 u=$2 t=$3 line
  shift 3
  {
    echo '[node]'
    echo "address = \"$u\""
    echo '[tun]'
    echo "address = \"$t\""
    echo "netns = \"$(lab_node_netns "$i")\""
    echo 'mtu = 1500'
    echo '[srq]'
    echo 'size = 128'
    echo '[limits]'
    echo 'send_slots = 64'
    echo '[timeouts]'
    echo 'idle = "60s"'
    echo "reaper_interval = \"${tick_ms}ms\""
    echo 'last_wqe = "200ms"'
    echo 'drain = "300ms"'
    echo 'disconnect = "300ms"'
    echo '[log]'
    echo 'level = "info"'
    echo 'target = "stderr"'
    echo '[ctl]'
    echo "socket = \"/run/rcnet/node$i.sock\""
    echo 'group = "root"'
    echo '[peers]'
    for line in "$@"; do echo "$line"; done
  } >"$OUT/node-$i.toml"
}
sock() { echo "/run/rcnet/node$1.sock"; }
# rcnetctl -j stats of node I: "gso_sent packets_tx"
gso_counts() {
  "$CTL" -s "$(sock "$1")" -j stats |
    jq -r '[.counters[] | {(.name): .value}] | add | "\(.gso_sent // 0) \(.packets_tx // 0)"'
}
ip6_in() {
  local k v
  while read -r k v; do
    [[ $k == Ip6InReceives ]] && echo "$v" && return
  done <"/proc/net/dev_snmp6/$1"
}

# FILE's text, read by the shell.
text_of() {
  local l
  mapfile -t l <"$1" 2>/dev/null
  printf '%s\n' "${l[@]}"
}
matches() { [[ $1 =~ $2 ]]; }
has_line() {
  local l
  mapfile -t l <"$1" 2>/dev/null
  [[ $'\n'"${l[*]/%/$'\n'}" == *"$2"* ]]
}

# Both daemons at once (rcd_start waits for one at a time: seconds each).
start_both() {
  local tag=$1 i k up
  mkdir -p /run/rcnet
  for i in 1 2; do
    "$RCD_BIN" -c "$OUT/node-$i.toml" >"$OUT/rcnetd-$i.log" 2>&1 &
    RCD_PID[$i]=$!
  done
  for i in 1 2; do
    up=0
    for ((k = 0; k < 300; k++)); do
      has_line "$OUT/rcnetd-$i.log" "TUN rc0 up" && up=1 && break
      kill -0 "${RCD_PID[$i]}" 2>/dev/null || break
      nap 0.1
    done
    ((up)) || lab_die "$tag: rcnetd node$i not up: $(tail -3 "$OUT/rcnetd-$i.log" | tr '\n' ' ')"
  done
  lab_pass "$tag: rcnetd up on both nodes"
}

# SIGTERM to both daemons; each must exit 0 within 30 s (they are this
# shell's children: `wait` needs no polling; a watchdog bounds it).
stop_both() {
  local tag=$1 i rc wd
  kill -TERM "${RCD_PID[1]}" "${RCD_PID[2]}"
  (
    nap 30
    kill -KILL "${RCD_PID[1]}" "${RCD_PID[2]}" 2>/dev/null
  ) &
  wd=$!
  for i in 1 2; do
    rc=0
    wait "${RCD_PID[$i]}" 2>/dev/null || rc=$?
    lab_expect "$tag: rcnetd node$i exited 0 on SIGTERM (exit $rc)" [ "$rc" -eq 0 ]
  done
  kill "$wd" 2>/dev/null
  wait "$wd" 2>/dev/null
}

# EXIT_CTR[name] from node I's "counters at exit" line, parsed in the shell.
declare -A EXIT_CTR=()
exit_counters() {
  local l line w
  EXIT_CTR=()
  mapfile -t l <"$OUT/rcnetd-$1.log"
  for line in "${l[@]}"; do
    [[ $line == *"counters at exit:"* ]] || continue
    EXIT_CTR=()
    for w in ${line#*counters at exit:}; do
      [[ $w == *=* ]] && EXIT_CTR[${w%%=*}]=${w#*=}
    done
  done
}

# ping FROM -> TO's overlay address OADDR; PASS/FAIL.
oping() {
  local tag=$1 from=$2 to=$3 oaddr=$4 out
  out=$(lab_in_node "$from" ping -n -q -i 0.2 -c 2 -W 5 "$oaddr" 2>&1)
  if [[ $out == *" 0% packet loss"* ]]; then
    lab_pass "$tag: ping node$from -> node$to ($oaddr): 2/2, $(grep -o 'rtt.*' <<<"$out")"
  else
    lab_fail "$tag: ping node$from -> node$to ($oaddr): $(tr '\n' ' ' <<<"$out")"
  fi
}

# The iperf3 server in node2, started ahead (it starts slowly under TCG);
# bounded, as a server whose client never came would wait forever.
iperf_server() {
  lab_in_node 2 timeout -k 5 90 iperf3 -s -1 -B "$1" >"$OUT/iperf3-server.txt" 2>&1 &
  IPERF_SPID=$!
}

# iperf3 TCP, 3 s, node1 -> node2 over the overlay; sets IPERF_MBPS.
iperf() {
  local tag=$1 src=$2 dst=$3 rc=0 res mbps bytes retr
  IPERF_MBPS=0
  rcd_wait_tcp_listen 2 5201 20 || lab_fail "$tag: iperf3 server not listening in node2 after 20 s"
  lab_timeout 60 ip netns exec node1 iperf3 -c "$dst" -B "$src" -t 3 -J \
    >"$OUT/iperf3.json" 2>&1 || rc=$?
  wait "$IPERF_SPID"
  res=$(jq -r '.end | "\(.sum_received.bits_per_second / 1e6 | floor) \(.sum_received.bytes) \(.sum_sent.retransmits // 0)"' \
    "$OUT/iperf3.json" 2>/dev/null)
  read -r mbps bytes retr <<<"$res"
  if ((rc == 0)) && [[ ${bytes:-0} =~ ^[0-9]+$ ]] && ((bytes > 0)); then
    IPERF_MBPS=$mbps
    lab_pass "$tag: iperf3 TCP 3 s node1 ($src) -> node2 ($dst): $mbps Mbit/s, $bytes bytes, retransmits $retr"
  else
    lab_fail "$tag: iperf3 node1 -> node2 (exit $rc): $(tail -c 300 "$OUT/iperf3.json" | tr '\n' ' ')"
  fi
}

# rcnetctl qps against the kernel's QPs of rcnetd's pid, on both nodes.
qps_match() {
  local tag=$1 i ours kern
  local -a r
  # One jq for both: "<node1 rcnetctl> <node1 kernel> <node2 ...> <...>".
  mapfile -t r < <(jq -nc --argjson k "$(rdma -j res show qp)" \
    --argjson q1 "$("$CTL" -s "$(sock 1)" -j qps)" --argjson q2 "$("$CTL" -s "$(sock 2)" -j qps)" \
    --argjson p1 "${RCD_PID[1]}" --argjson p2 "${RCD_PID[2]}" '
      ($q1.qps | map(.qpn) | sort), ($k | map(select(.pid == $p1) | .lqpn) | sort),
      ($q2.qps | map(.qpn) | sort), ($k | map(select(.pid == $p2) | .lqpn) | sort)')
  for i in 1 2; do
    ours=${r[2 * i - 2]:-none}
    kern=${r[2 * i - 1]:-none}
    lab_expect "$tag: node$i: rcnetctl qps == rdma res show qp of rcnetd ($ours, kernel $kern)" \
      [ "$ours" = "$kern" -a "$ours" != "[]" -a "$ours" != none ]
  done
}

declare -A MBPS=()
# phase TAG OVERLAY1 OVERLAY2 CFG1_ARGS... -- CFG2_ARGS... (cfg's arguments
# from the underlay on). Starts both daemons, checks, stops them; their logs,
# configs and rcnetctl output are kept in $RCNET_RESULTS/TAG.
phase() {
  local tag=$1 o1=$2 o2=$3
  shift 3
  local args1=() args2=() i u2
  while (($#)) && [[ $1 != -- ]]; do
    args1+=("$1")
    shift
  done
  shift
  args2=("$@")
  u2=${args2[0]}
  lab_log "== $tag: node2's underlay $u2, overlay $o2"
  RCNET_RESULTS=$ROOT/$tag OUT=$ROOT/$tag
  cfg 1 "${args1[@]}"
  cfg 2 "${args2[@]}"
  start_both "$tag"
  local in0 g0 p0 g1 p1 sent pkts in6 peer
  in0=$(ip6_in v_2)
  iperf_server "$o2"
  first_pings "$tag" "$o1" "$o2"
  read -r g0 p0 <<<"$(gso_counts 1)"
  iperf "$tag" "$o1" "$o2"
  MBPS[$tag]=$IPERF_MBPS
  read -r g1 p1 <<<"$(gso_counts 1)"
  sent=$((g1 - g0))
  pkts=$((p1 - p0))
  in6=$(($(ip6_in v_2) - in0))
  lab_expect "$tag: TCP went as TSO super-packets, one SEND each (gso_sent +$sent of $pkts SENDs)" \
    [ "$sent" -gt 0 ]
  if [[ $u2 == *:* ]]; then
    lab_expect "$tag: $WIRE over IPv6: $in6 IPv6 packets received on v_2" [ "$in6" -gt 1000 ]
  else
    lab_expect "$tag: $WIRE over IPv4: $in6 IPv6 packets received on v_2" [ "$in6" -lt 100 ]
  fi
  "$CTL" -s "$(sock 1)" connections >"$OUT/connections-1.txt" 2>&1
  "$CTL" -s "$(sock 1)" peers >"$OUT/peers-1.txt" 2>&1
  local conns peers re
  conns=$(text_of "$OUT/connections-1.txt")
  peers=$(text_of "$OUT/peers-1.txt")
  local -a lines
  mapfile -t lines <<<"$conns"$'\n'"$peers"
  printf "$tag node1 %s\n" "${lines[@]}"
  # An IPv6 endpoint is written [address]:port.
  peer=$u2:7471
  [[ $u2 == *:* ]] && peer="[$u2]:7471"
  re=" ${peer//[.[\]]/\\&} +${o2//./\\.} "
  lab_expect "$tag: rcnetctl connections: ESTABLISHED to $peer, overlay $o2" \
    matches "$conns" "${re}[^"$'\n'"]* ESTABLISHED "
  lab_expect "$tag: rcnetctl peers: $peer, overlay $o2" matches "$peers" "$re"
  qps_match "$tag"
  [[ -n ${PHASE_HOOK:-} ]] && "$PHASE_HOOK" "$tag" "$o1" "$o2"
  stop_both "$tag"
  lab_expect "$tag: no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
  local c bad
  for i in 1 2; do
    exit_counters "$i"
    bad=
    for c in drops_tun_write drops_refused recv_errors send_errors; do
      ((${EXIT_CTR[$c]:-0} == 0)) || bad+=" $c=${EXIT_CTR[$c]}"
    done
    lab_expect "$tag: node$i: at exit ${#EXIT_CTR[@]} counters, no drop or error among drops_tun_write drops_refused recv_errors send_errors${bad:+ ($bad)}" \
      [ ${#EXIT_CTR[@]} -gt 0 -a -z "$bad" ]
  done
}

# v6u-v6o only, before the SIGTERM: idle reap (idle cut to 2 s by SIGHUP;
# timeouts are live), then a ping reconnects on demand.
reap_and_reconnect() {
  local tag=$1 o1=$2 o2=$3 i from down="" qpn gone
  declare -A from0=()
  # The connection has been idle for longer than 2 s already: the first
  # reaper tick after the reload tears it down, on either node.
  for i in 1 2; do from0[$i]=$(($(wc -l <"$OUT/rcnetd-$i.log") + 1)); done
  for i in 1 2; do
    sed -i "s/^idle = .*/idle = \"$((idle_ms / 1000))s\"/" "$OUT/node-$i.toml"
    rcd_kill "$i" HUP
  done
  for i in 1 2; do
    rcd_wait_log "$i" "reload applied" 10 "${from0[$i]}" >/dev/null || lab_fail "$tag: node$i did not apply the reload"
  done
  for i in 1 2; do
    down=$(rcd_wait_log "$i" "tearing down QPN [0-9]+ to .*: idle for" 5 "${from0[$i]}") && break
  done
  lab_expect "$tag: node$i reaped the idle connection (${down#*info })" [ -n "$down" ]
  qpn=$(grep -o 'QPN [0-9]*' <<<"$down" | head -1 | cut -d' ' -f2)
  gone=$(rcd_wait_log "$i" "QPN ${qpn:-x} .*-> DESTROYED" 10 "${from0[$i]}")
  lab_expect "$tag: node$i's QPN ${qpn:-?} destroyed after the reap" [ -n "$gone" ]
  rcd_wait_qps 1 0 10 >/dev/null
  rcd_wait_qps 2 0 10 >/dev/null
  lab_expect "$tag: no QP on either node once reaped" [ "$(lab_qp_count)" -eq 0 ]
  from=$(($(wc -l <"$OUT/rcnetd-1.log") + 1))
  oping "$tag reconnect" 1 2 "$o2"
  lab_expect "$tag: the ping reconnected (a new QP ESTABLISHED)" \
    rcd_wait_log 1 "QPN [0-9]+ .*-> ESTABLISHED" 1 "$from" >/dev/null
}

# The first packets of a phase, both ways. With SIMOPEN=1 both nodes send at
# once: whether the two REQs cross depends on the guest's scheduling
# (simultaneous_open.sh proves the merge itself); either way both
# pings must pass and exactly one connection remain.
first_pings() {
  local tag=$1 o1=$2 o2=$3 p1 p2 r1=0 r2=0
  if ((${SIMOPEN:-0} == 0)); then
    oping "$tag" 1 2 "$o2"
    oping "$tag" 2 1 "$o1"
    return
  fi
  lab_in_node 1 ping -n -q -c 2 -W 5 "$o2" >"$OUT/simopen-1.txt" 2>&1 &
  p1=$!
  lab_in_node 2 ping -n -q -c 2 -W 5 "$o1" >"$OUT/simopen-2.txt" 2>&1 &
  p2=$!
  wait "$p1" || r1=$?
  wait "$p2" || r2=$?
  lab_expect "$tag: both nodes pinged each other at once (exit $r1, $r2)" [ "$r1" -eq 0 -a "$r2" -eq 0 ]
  rcd_wait_qps 1 1 10 >/dev/null
  rcd_wait_qps 2 1 10 >/dev/null
  lab_expect "$tag: one QP on each side after the simultaneous sends ($(lab_node_rdma_dev 1) $(rcd_qps 1), $(lab_node_rdma_dev 2) $(rcd_qps 2))" \
    [ "$(rcd_qps 1)" -eq 1 -a "$(rcd_qps 2)" -eq 1 ]
  if grep -q "REJ collision to REQ\|simultaneous open with" "$OUT"/rcnetd-[12].log; then
    lab_log "$tag: the REQs crossed: $(grep -h "REJ collision to REQ\|simultaneous open with" "$OUT"/rcnetd-[12].log | head -2 | tr '\n' ' ')"
  else
    lab_log "$tag: the REQs did not cross (one arrived before the other left)"
  fi
}

u6=("$(lab_node_addr6 1)" "$(lab_node_addr6 2)")
u4=("$(lab_node_addr 1)" "$(lab_node_addr 2)")

if ((FULL)); then
  mkdir -p "$ROOT"/v4u-v4o
  phase v4u-v4o 10.100.0.1 10.100.0.2 \
    "${u4[0]}" 10.100.0.1/24 'underlay_prefix = "10.99.0.0/24"' -- \
    "${u4[1]}" 10.100.0.2/24 'underlay_prefix = "10.99.0.0/24"'
fi

# Static peers with IPv6 underlay addresses.
phase v6u-v4o 10.100.0.1 10.100.0.2 \
  "${u6[0]}" 10.100.0.1/24 '[[peers.static]]' 'overlay = "10.100.0.2"' "underlay = \"${u6[1]}\"" -- \
  "${u6[1]}" 10.100.0.2/24 '[[peers.static]]' 'overlay = "10.100.0.1"' "underlay = \"${u6[0]}\""

# The prefix rule from an IPv6 overlay (8 host bits) into an IPv4 underlay.
phase v4u-v6o fd00:100::1 fd00:100::2 \
  "${u4[0]}" fd00:100::1/120 'underlay_prefix = "10.99.0.0/24"' -- \
  "${u4[1]}" fd00:100::2/120 'underlay_prefix = "10.99.0.0/24"'

# The prefix rule with 64 host bits on both sides.
PHASE_HOOK=reap_and_reconnect SIMOPEN=1
phase v6u-v6o fd00:100::1 fd00:100::2 \
  "${u6[0]}" fd00:100::1/64 'underlay_prefix = "fd99::/64"' -- \
  "${u6[1]}" fd00:100::2/64 'underlay_prefix = "fd99::/64"'
PHASE_HOOK='' SIMOPEN=0

lab_log "iperf3 TCP node1 -> node2, same boot:${MBPS[v4u-v4o]:+ v4u-v4o ${MBPS[v4u-v4o]} Mbit/s,} v6u-v4o ${MBPS[v6u-v4o]} Mbit/s, v4u-v6o ${MBPS[v4u-v6o]} Mbit/s, v6u-v6o ${MBPS[v6u-v6o]} Mbit/s"
lab_finish
