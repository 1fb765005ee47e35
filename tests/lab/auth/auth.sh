#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Peer proofs against the real kernel RDMA stack (docs/design.md "Trust").
# node1 and node2 are members of overlay "prod" (auth.mode required, key 1).
# node3 comes and goes as each kind of outsider:
#   - no key (auth off: what any host on the underlay prefix is);
#   - another key under key id 1, a key id the members do not hold, the
#     right key with another overlay id;
#   - a recorded REQ sent twice, and a recorded proof message on a fresh
#     REQ (rcnet-hostile-client auth-replay, auth-proof);
# each refused with its reason counted and 0 packets on the members' rc0
# (the TUN's own counters: rcnetd writes nothing there for them). Then
# node3 joins with key 2, node1's reload removes key 2 (revoked within
# 5 s) while the node1<->node2 connection, proven with key 1, stays up
# without a reconnect. Last, a second overlay on the same devices (a second
# rcnetd per node: port 7481, rc1, its own key and overlay id): iperf3 in
# both at once, and traffic in one moves 0 packets on the other's TUN.
#
# ARG 1 "refusals": the outsiders and the revocation only (the siw row: the
# second overlay's part is rxe's, as the issue asks).
set -u -o pipefail
PARTS=${1:-all}
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
HOSTILE=$RCNET_BUILD_DIR/tests/lab/hostile/rcnet-hostile-client
OUT=$RCNET_RESULTS
N1=$(lab_node_addr 1)
N3=$(lab_node_addr 3)
KEYS=/run/rcnet/keys
mkdir -p "$KEYS"
chmod 700 "$KEYS"
mkkey() { (umask 077 && head -c 32 /dev/urandom | base64 >"$KEYS/$1"); }
for k in k1 k2 kx kb; do mkkey "$k"; done

# auth_config I MODE OVERLAY KEYS [TOML...]: node I's config with [auth];
# KEYS is the TOML list's inside ('{id = 1, file = "..."}, ...').
auth_config() {
  local i=$1 mode=$2 overlay=$3 keys=$4
  shift 4
  rcd_config "$i" "[timeouts]" 'connect = "2s"' 'idle = "120s"' \
    "[auth]" "mode = \"$mode\"" "overlay = \"$overlay\"" "keys = [$keys]" "$@"
}
key() { echo "{id = $1, file = \"$KEYS/$2\"}"; }
# TUN packets node I's rcnetd delivered (rc0's rx, or TUN's).
rc_rx() { lab_in_node "$1" cat "/sys/class/net/${2:-rc0}/statistics/rx_packets"; }
# Whether TEXT lacks NEEDLE (a key's bytes in an answer or a log).
lacks() { ! grep -qF -- "$2" <<<"$1"; }

lab_setup_nodes 3 || lab_die "node setup"
auth_config 1 required prod "$(key 1 k1)"
auth_config 2 required prod "$(key 1 k1)"
rcd_start 1 || lab_die "start node1"
rcd_start 2 || lab_die "start node2"
lab_expect "members ping over rc0" rcd_ping 1 2 -c 3 -W 5
conn=$("$CTL" -s /run/rcnet/node1.sock -j connections | jq -r '.connections[0] | "\(.auth):\(.key_id)"')
lab_expect "node1's connection to node2 is proven with key 1 ($conn)" test "$conn" = "proven:1"
lab_expect "the key is not in node1's config answer" \
  lacks "$("$CTL" -s /run/rcnet/node1.sock -j config)" "$(cat "$KEYS/k1")"

# --- outsiders ---------------------------------------------------------------------
rx1=$(rc_rx 1) rx2=$(rc_rx 2)
# outsider NAME DIALLER REASON: node3 (as configured) starts; member DIALLER
# (1 or 2) pings it first, or with DIALLER 0 node3 pings node1; then node3
# pings the other member. REASON must be counted by the refusing member
# (the dialler, or node1). A member that refused a dial holds node3 down
# for a few seconds, so the two dialling cases use different members.
outsider() {
  local name=$1 m=$2 reason=$3 counted other before after
  counted=$((m == 0 ? 1 : m))
  other=$((m == 2 ? 1 : 2))
  before=$(rcd_stat "$counted" "auth_refused_$reason")
  rcd_start 3 || return 1
  # One echo each way, 2 s: the refusal is decided within the handshake.
  if ((m > 0)); then
    rcd_ping "$m" 3 -c 1 -W 2 >/dev/null
  else
    rcd_ping 3 1 -c 1 -W 2 >/dev/null
  fi
  rcd_ping 3 "$other" -c 1 -W 2 >/dev/null
  after=$(rcd_stat "$counted" "auth_refused_$reason")
  lab_expect "$name: refused, counted by node$counted as $reason (+$((after - before)))" \
    test "$after" -gt "$before"
  rcd_kill 3 TERM
  rcd_wait_exit 3 30
}
rcd_config 3
outsider "no key (auth off)" 0 no_proof
auth_config 3 required prod "$(key 1 kx)"
outsider "another key under id 1" 1 bad_proof
auth_config 3 required prod "$(key 7 k1)"
outsider "a key id the members do not hold" 0 unknown_key
auth_config 3 required staging "$(key 1 k1)"
outsider "the right key, another overlay id" 2 overlay

# A recorded REQ, sent twice; a recorded proof message on a fresh REQ.
r1=$(lab_timeout 20 "$HOSTILE" "$N3" "$N1" 7471 auth-replay 2>&1)
r2=$(lab_timeout 20 "$HOSTILE" "$N3" "$N1" 7471 auth-replay 2>&1)
lab_log "auth-replay: $r1 / $r2"
lab_expect "a recorded REQ again: REJ replay ($r2)" grep -q "rejected reason=replay " <<<"$r2"
bp=$(rcd_stat 1 auth_refused_bad_proof)
r3=$(lab_timeout 20 "$HOSTILE" "$N3" "$N1" 7471 auth-proof prod 2>&1)
lab_log "auth-proof: $(tr '\n' ' ' <<<"$r3")"
lab_expect "a recorded proof message: node1 disconnects ($r3)" grep -q "disconnected" <<<"$r3"
lab_expect "a recorded proof message: counted as bad_proof" test "$(rcd_stat 1 auth_refused_bad_proof)" -gt "$bp"
lab_expect "replay counted" test "$(rcd_stat 1 auth_refused_replay)" -ge 1

d1=$(($(rc_rx 1) - rx1)) d2=$(($(rc_rx 2) - rx2))
lab_log "members' rc0 during the outsiders: node1 rx +$d1, node2 rx +$d2; drops_unproven $(rcd_stat 1 drops_unproven), $(rcd_stat 2 drops_unproven)"
lab_expect "0 packets of any outsider on node1's rc0 (rx +$d1)" test "$d1" -eq 0
lab_expect "0 packets of any outsider on node2's rc0 (rx +$d2)" test "$d2" -eq 0

# --- rotation and revocation -------------------------------------------------------
auth_config 1 required prod "$(key 1 k1), $(key 2 k2)"
rcd_kill 1 HUP
rcd_wait_log 1 "reload applied" 10 >/dev/null || lab_fail "node1 reload (add key 2)"
auth_config 3 required prod "$(key 2 k2)"
rcd_start 3 || lab_die "start node3"
lab_expect "node3 with key 2 pings node1" rcd_ping 3 1 -c 3 -W 5
k3=$("$CTL" -s /run/rcnet/node1.sock -j peers | jq -r --arg a "$N3" '.peers[] | select(.underlay | startswith($a)) | .key_id')
lab_expect "node1 holds node3 proven with key 2 ($k3)" test "$k3" = 2
rv=$(rcd_stat 1 auth_refused_revoked)
est=$(rcd_stat 1 connects_established)
q12() { "$CTL" -s /run/rcnet/node1.sock -j connections |
  jq -r --arg a "$(lab_node_addr 2)" '.connections[] | select(.peer_addr | startswith($a)) | .qpn'; }
qpn12=$(q12)
auth_config 1 required prod "$(key 1 k1)"
t0=$(rcd_now_ms)
rcd_kill 1 HUP
gone=""
for ((k = 0; k < 100; k++)); do
  n=$("$CTL" -s /run/rcnet/node1.sock -j connections |
    jq --arg a "$N3" '[.connections[] | select(.peer_addr | startswith($a))] | length')
  if [[ $n == 0 ]]; then
    gone=$(($(rcd_now_ms) - t0))
    break
  fi
  sleep 0.05
done
lab_log "revocation: node3's connection gone ${gone:-never} ms after SIGHUP"
lab_expect "the connection proven with the removed key is gone within 5 s (${gone:-never} ms)" \
  test -n "$gone" -a "${gone:-99999}" -le 5000
lab_expect "counted as revoked" test "$(rcd_stat 1 auth_refused_revoked)" -gt "$rv"
lab_expect "node1 <-> node2 (key 1) still up after the reloads" rcd_ping 1 2 -c 3 -W 5
lab_expect "... on the same QP, without a reconnect (QPN $qpn12 -> $(q12), connects_established $est -> $(rcd_stat 1 connects_established))" \
  test "$(q12)" = "$qpn12" -a "$(rcd_stat 1 connects_established)" -eq "$est"
rcd_kill 3 TERM
rcd_wait_exit 3 30

if [[ $PARTS == refusals ]]; then
  rcd_stop_all
  lab_finish
fi

# --- a second overlay on the same devices ------------------------------------------
# A second rcnetd per node (what rcnetd@b would run): its own port, TUN,
# overlay prefix, key and overlay id.
for i in 1 2; do
  f=$OUT/node-$i-b.toml
  {
    echo '[node]'
    echo "address = \"$(lab_node_addr "$i")\""
    echo 'port = 7481'
    echo '[tun]'
    echo 'name = "rc1"'
    echo "address = \"10.101.0.$i/24\""
    echo "netns = \"$(lab_node_netns "$i")\""
    echo '[peers]'
    echo 'underlay_prefix = "10.99.0.0/24"'
    echo '[log]'
    echo 'target = "stderr"'
    echo '[ctl]'
    echo "socket = \"/run/rcnet/node$i-b.sock\""
    echo 'group = "root"'
    echo '[auth]'
    echo 'mode = "required"'
    echo 'overlay = "b"'
    echo "keys = [$(key 1 kb)]"
  } >"$f"
  "$RCD_BIN" -c "$f" >>"$OUT/rcnetd-$i-b.log" 2>&1 &
  BPID[i]=$!
done
for i in 1 2; do
  for ((k = 0; k < 300; k++)); do
    grep -q "TUN rc1 up" "$OUT/rcnetd-$i-b.log" 2>/dev/null && break
    sleep 0.1
  done
  lab_expect "overlay b's rcnetd on node$i is up" grep -q "TUN rc1 up" "$OUT/rcnetd-$i-b.log"
done
a_rx=$(rc_rx 2 rc0)
lab_expect "overlay b: ping over rc1" lab_in_node 1 ping -n -q -i 0.2 -c 10 -W 5 10.101.0.2
lab_expect "overlay b's pings moved 0 packets on overlay a's rc0 (+$(($(rc_rx 2 rc0) - a_rx)))" \
  test "$(rc_rx 2 rc0)" -eq "$a_rx"
b_rx=$(rc_rx 2 rc1)
lab_expect "overlay a: ping over rc0" rcd_ping 1 2 -c 10 -W 5
lab_expect "overlay a's pings moved 0 packets on overlay b's rc1 (+$(($(rc_rx 2 rc1) - b_rx)))" \
  test "$(rc_rx 2 rc1)" -eq "$b_rx"
# iperf3 in both overlays at once.
lab_in_node 2 iperf3 -s -D -B 10.100.0.2 -p 5201
lab_in_node 2 iperf3 -s -D -B 10.101.0.2 -p 5202
sleep 0.5
lab_in_node 1 iperf3 -c 10.100.0.2 -p 5201 -t 3 -J >"$OUT/iperf-a.json" 2>&1 &
ia=$!
lab_in_node 1 iperf3 -c 10.101.0.2 -p 5202 -t 3 -J >"$OUT/iperf-b.json" 2>&1 &
ib=$!
wait "$ia" "$ib"
ra=$(jq -r '.end.sum_received.bytes // 0' "$OUT/iperf-a.json")
rb=$(jq -r '.end.sum_received.bytes // 0' "$OUT/iperf-b.json")
lab_log "iperf3 at once: overlay a $ra bytes, overlay b $rb bytes"
lab_expect "iperf3 over overlay a moved data" test "$ra" -gt 0
lab_expect "iperf3 over overlay b moved data" test "$rb" -gt 0
n=0
for r in no_proof bad_proof unknown_key replay overlay revoked; do
  n=$((n + $("$CTL" -s /run/rcnet/node1-b.sock stats "auth_refused_$r")))
done
lab_expect "overlay b refused nothing: no connection of overlay a reached its port ($n)" test "$n" -eq 0
ports=$("$CTL" -s /run/rcnet/node1-b.sock -j connections | jq -r '[.connections[].peer_addr | split(":")[1]] | unique | join(",")')
lab_expect "overlay b's connections all go to overlay b's port ($ports)" test "$ports" = 7481
lab_in_node 2 pkill iperf3
for i in 1 2; do kill -TERM "${BPID[$i]}"; done
for i in 1 2; do wait "${BPID[$i]}" 2>/dev/null; done

"$CTL" -s /run/rcnet/node1.sock stats >"$OUT/stats-node1.txt" 2>&1
rcd_stop_all
# A daemon that logged its exit but is still there: what it waits on.
for i in 1 2; do
  if kill -0 "${RCD_PID[$i]}" 2>/dev/null; then
    lab_log "node$i rcnetd still present: $(grep -E '^(State|Threads)' "/proc/${RCD_PID[$i]}/status" | tr '\n' ' ')"
    lab_log "node$i kernel stack: $(tr '\n' ' ' <"/proc/${RCD_PID[$i]}/stack" 2>/dev/null | head -c 600)"
    for t in /proc/"${RCD_PID[$i]}"/task/*; do
      lab_log "node$i task ${t##*/}: $(grep State "$t/status") wchan $(cat "$t/wchan" 2>/dev/null)"
    done
  fi
done
for k in k1 k2 kx kb; do
  lab_expect "key $k is in no daemon's log" lacks "$(cat "$OUT"/rcnetd-*.log)" "$(cat "$KEYS/$k")"
done
lab_finish
