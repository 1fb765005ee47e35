#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Benchmark (prints numbers, asserts no speed): a rail's carrier loss under
# Linux bonding against rcnet's rails, in one boot (docs/lab.md "Time in the
# lab": only figures of the same boot compare).
#
#   bond_anchor.sh [EVENTS] [HOLDDOWN] [SETS]   (default 20 events per event
#                               set; rcnet's rails.holddown, default "0s";
#                               SETS: which of rcnet's sets run, default
#                               "carrier silent removal"; rcnet-bench repeats
#                               "carrier" over several boots)
#
# Three failures of rail 0, EVENTS times each, one after the other in the
# same boot: carrier loss (below), a silent drop (every RoCEv2 packet on
# node 1's bridge port b_1 dropped both ways by tc, ports up: only RC's own
# retries can see it, and bonding's MII monitor never does, so it has no
# bond row) and device removal (`rdma link delete rxe_1`, timed, then
# `rdma link add`: bonding has no RDMA device to lose, so no bond row).
#
# Anchor: in the netns of node 1 and node 2, bond0 (mode active-backup,
# miimon 100, primary bs0) over two veths bs0/bs1 whose other ends bd0_i and
# bd1_i are ports of two bridges rcbd0 and rcbd1, built like the lab's two
# rails; plain IP, 10.97.0.i/24 on bond0. The two bridges are joined by a
# veth (isl0 <-> isl1), as the two switches of a bonded pair must be: when
# node 1's bond moves to bs1, node 2's frames still leave through its own
# bs0 and reach node 1 across that link. rcnet's rails are two separate
# fabrics and need no such link.
#
# One event: the active slave's bridge-side port bd0_1 goes down (bonding
# sees the carrier loss by MII polling and moves to bs1), stays down 1.5 s,
# comes back (bonding returns to its primary bs0), and traffic settles 1.5 s.
# `ping -i 0.01` runs from node 1 to node 2 throughout; per event set (all
# the "down" windows, all the "up" windows) pinglog.py gives the longest gap
# between replies (p50, p99 nearest rank, max) and the sequence numbers lost.
#
# rcnet: the same on rail 0 of rcnetd with two rails (b_1 down, failover to
# rail 1, b_1 up, fail-back) with `ping -i 0.01` over rc0; the next event
# waits for the fail-back. The holddown is 0 by default, as bonding's
# primary comes back at once (no updelay): with 2 s, which grows with flaps
# up to 32 s here, 20 events took 12 minutes. Skipped, with a line saying
# so, when rcnetd refuses a two-rail config.
# A gap, and what it lost, counts for the event set in whose window it
# began (pinglog.py), never for two.
# Results: $RCNET_RESULTS/bond-anchor.txt (the summary lines below).
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"

EVENTS=${1:-20}
RAILS_HOLDDOWN=${2:-0s}
SETS=" ${3:-carrier silent removal} "
HOLD_DOWN=1.5
HOLD_UP=1.5
OUT=$RCNET_RESULTS
SUMMARY=$OUT/bond-anchor.txt
: >"$SUMMARY"
say() {
  echo "$*" | tee -a "$SUMMARY"
}

lab_setup_nodes 2 --rails 2 || lab_die "node setup"
modprobe ${RCNET_LAB_MODTREE:+-d "$RCNET_LAB_MODTREE"} bonding max_bonds=0 ||
  lab_die "modprobe bonding"

# --- the bond ------------------------------------------------------------------------
{
  for b in 0 1; do
    echo "link add rcbd$b type bridge forward_delay 0 stp_state 0"
    echo "link set rcbd$b up"
  done
  echo "link add isl0 type veth peer name isl1"
  echo "link set isl0 master rcbd0"
  echo "link set isl1 master rcbd1"
  echo "link set isl0 up"
  echo "link set isl1 up"
  for i in 1 2; do
    for b in 0 1; do
      echo "link add bd${b}_$i type veth peer name bs$b netns node$i"
      echo "link set bd${b}_$i master rcbd$b"
      echo "link set bd${b}_$i up"
    done
  done
} >"$OUT/.bond-root.ip"
ip -batch "$OUT/.bond-root.ip" || lab_die "bond topology (ip -batch $OUT/.bond-root.ip)"
for i in 1 2; do
  {
    echo "link add bond0 type bond mode active-backup miimon 100"
    echo "link set bs0 master bond0"
    echo "link set bs1 master bond0"
    echo "link set bond0 type bond primary bs0"
    echo "addr add 10.97.0.$i/24 dev bond0"
    echo "link set bond0 up"
  } >"$OUT/.bond-node$i.ip"
  ip -n "node$i" -batch "$OUT/.bond-node$i.ip" || lab_die "bond in node$i (ip -batch $OUT/.bond-node$i.ip)"
done
active() { lab_in_node "$1" cat /sys/class/net/bond0/bonding/active_slave 2>/dev/null; }
for ((k = 0; k < 50; k++)); do
  lab_in_node 1 ping -n -q -c 1 -W 1 10.97.0.2 >/dev/null 2>&1 && break
done
lab_check "ping node1 -> node2 over the bond" ip netns exec node1 ping -n -q -c 3 -W 2 10.97.0.2
lab_expect "node1's bond is active on bs0 ($(active 1))" [ "$(active 1)" = bs0 ]

# EVENTS times down/up of bd0_1; the windows go to the arrays DOWN_W and
# UP_W (START_MS:END_MS).
DOWN_W=() UP_W=()
flap_bond() {
  local k t0 t1
  for ((k = 1; k <= EVENTS; k++)); do
    t0=$(rcd_now_ms)
    ip link set bd0_1 down
    sleep "$HOLD_DOWN"
    t1=$(rcd_now_ms)
    ip link set bd0_1 up
    DOWN_W+=("$t0:$t1")
    sleep "$HOLD_UP"
    UP_W+=("$t1:$(rcd_now_ms)")
  done
}

report() {
  local name=$1 kind=$2 line
  shift 2
  rails_ping_report "$name" --events "$@" >"$OUT/$name-$kind.windows" 2>&1
  line=$(tail -1 "$OUT/$name-$kind.windows")
  say "$name $kind: ${line#events }"
}

rails_ping_start 1 10.97.0.2 bond 0.01
sleep 1
lab_log "bond: $EVENTS events (bd0_1 down ${HOLD_DOWN} s, up ${HOLD_UP} s)"
flap_bond
sleep 0.5
rails_ping_stop bond
lab_expect "bond: node1's bond is back on bs0 ($(active 1))" [ "$(active 1)" = bs0 ]
report bond down "${DOWN_W[@]}"
report bond up "${UP_W[@]}"
say "bond all: $(python3 "$RAILS_PINGLOG" "$OUT/bond.ping" | head -1)"

# --- rcnet -----------------------------------------------------------------------------
for i in 1 2; do
  rails_config "$i" "[timeouts]" 'idle = "600s"'
done
if ! "$RCD_BIN" --check-config -c "$OUT/node-1.toml" >"$OUT/check-config.txt" 2>&1; then
  say "rcnet: skipped (this rcnetd refuses a two-rail config: $(head -1 "$OUT/check-config.txt"))"
  lab_finish
fi
for i in 1 2; do
  rcd_start "$i" || lab_die "start node$i"
done
for ((k = 0; k < 50; k++)); do
  rcd_ping 1 2 -c 1 -W 1 >/dev/null 2>&1 && break
done
lab_check "ping node1 -> node2 over rc0" ip netns exec node1 ping -n -q -c 3 -W 2 10.100.0.2
w=$(rails_wait_carrier 1 2 0 20) || lab_fail "node1 -> node2 not carried on rail 0 after 20 s"
DOWN_W=() UP_W=()
rails_ping_start 1 2 rcnet 0.01
sleep 1
lab_log "rcnet: $EVENTS events (b_1 down, failover, ${HOLD_DOWN} s, b_1 up, fail-back)"
# As bonding's events: nothing but ping runs while rail 0 fails over and
# back. An `rcnetctl peers` poll every 100 ms (each a process start under
# TCG) shared the two vCPUs with rcnetd and rxe in the very window measured,
# which the anchor's events never paid. Where the traffic is is checked once
# each window has passed, and when it moved is read from rcnetd's own lines
# (failback_log.py).
for ((k = 1; k <= EVENTS; k++)); do
  t0=$(rcd_now_ms)
  ip link set b_1 down
  sleep "$HOLD_DOWN"
  w=$(rails_carrier 1 2)
  [[ $w == 1 ]] || lab_fail "rcnet event $k: node1 -> node2 on rail '$w', not 1, ${HOLD_DOWN} s after b_1 down"
  t1=$(rcd_now_ms)
  ip link set b_1 up
  DOWN_W+=("$t0:$t1")
  sleep "$HOLD_UP"
  rails_wait_carrier 1 2 0 120 >/dev/null ||
    lab_fail "rcnet event $k: no fail-back to rail 0 within 120 s of b_1 up + ${HOLD_UP} s"
  UP_W+=("$t1:$(rcd_now_ms)")
done
rails_ping_stop rcnet
report rcnet down "${DOWN_W[@]}"
report rcnet up "${UP_W[@]}"
say "rcnet all: $(python3 "$RAILS_PINGLOG" "$OUT/rcnet.ping" | head -1)"
say "rcnet: rails.holddown $RAILS_HOLDDOWN"

# Silent drop: the same cycle with tc dropping RoCEv2 on b_1 instead of
# b_1 down. Bound: transport.ack_timeout x retries (docs/design.md "Rails").
if [[ $SETS == *" silent "* ]]; then
rcd_block_roce_prepare 1 || lab_die "tc clsact on b_1"
DOWN_W=() UP_W=() ms_failover=() ms_failback=()
rails_ping_start 1 2 silent 0.01
sleep 1
lab_log "rcnet: $EVENTS silent drops (tc on b_1, failover, ${HOLD_DOWN} s, filter removed, fail-back)"
for ((k = 1; k <= EVENTS; k++)); do
  t0=$(rcd_now_ms)
  rcd_block_roce 1 || lab_die "tc drop of UDP 4791 on b_1"
  if w=$(rails_wait_carrier 1 2 1 20); then
    ms_failover+=("$w")
  else
    lab_fail "silent drop $k: node1 -> node2 not on rail 1 within 20 s"
  fi
  sleep "$HOLD_DOWN"
  t1=$(rcd_now_ms)
  rcd_unblock_roce 1 >/dev/null
  DOWN_W+=("$t0:$t1")
  if w=$(rails_wait_carrier 1 2 0 120); then
    ms_failback+=("$w")
  else
    lab_fail "silent drop $k: no fail-back to rail 0 within 120 s of the filter's removal"
  fi
  sleep 0.5
  UP_W+=("$t1:$(rcd_now_ms)")
done
rails_ping_stop silent
report silent down "${DOWN_W[@]}"
report silent up "${UP_W[@]}"
say "silent: failover seen by rcnetctl after (ms, polled): ${ms_failover[*]}"
say "silent: fail-back seen by rcnetctl after (ms, polled): ${ms_failback[*]}"
say "silent: bonding (miimon) cannot see a drop with the carrier up: no bond row"

fi

# Device removal: rdma link delete rxe_1 (timed), failover, add it back,
# fail-back once the rail is re-adopted.
if [[ $SETS == *" removal "* ]]; then
DOWN_W=() UP_W=() ms_failover=() ms_failback=() ms_delete=() ms_add=()
: >"$OUT/removal-add.windows"
rails_ping_start 1 2 removal 0.01
sleep 1
lab_log "rcnet: $EVENTS device removals (rdma link delete rxe_1, failover, ${HOLD_DOWN} s, rdma link add, fail-back)"
for ((k = 1; k <= EVENTS; k++)); do
  t0=$(rcd_now_ms)
  rdma link delete rxe_1 >"$OUT/link-delete.txt" 2>&1 &
  del=$!
  took=
  while (($(rcd_now_ms) - t0 < 30000)); do
    kill -0 "$del" 2>/dev/null || {
      took=$(($(rcd_now_ms) - t0))
      break
    }
    sleep 0.02
  done
  [[ -n $took ]] || lab_die "removal $k: rdma link delete rxe_1 did not return within 30 s"
  wait "$del" || lab_die "removal $k: rdma link delete rxe_1 failed: $(cat "$OUT/link-delete.txt")"
  ms_delete+=("$took")
  if w=$(rails_wait_carrier 1 2 1 20); then
    ms_failover+=("$w")
  else
    lab_fail "removal $k: node1 -> node2 not on rail 1 within 20 s"
  fi
  sleep "$HOLD_DOWN"
  t1=$(rcd_now_ms)
  rdma link add rxe_1 type rxe netdev v_1 || lab_die "removal $k: rdma link add rxe_1"
  # When the command returned: the device is registered by then, and the
  # re-adoption is timed from here (failback_log.py --device).
  t2=$(rcd_now_ms)
  ms_add+=($((t2 - t1)))
  echo "$t1:$t2" >>"$OUT/removal-add.windows"
  DOWN_W+=("$t0:$t1")
  if w=$(rails_wait_carrier 1 2 0 120); then
    ms_failback+=("$w")
  else
    lab_fail "removal $k: no fail-back to rail 0 within 120 s of rdma link add"
  fi
  sleep 0.5
  UP_W+=("$t1:$(rcd_now_ms)")
done
rails_ping_stop removal
report removal down "${DOWN_W[@]}"
report removal up "${UP_W[@]}"
sorted=$(printf '%s\n' "${ms_delete[@]}" | sort -n | tr '\n' ' ')
say "removal: rdma link delete took (ms, sorted): $sorted"
say "removal: failover seen by rcnetctl after (ms, polled): ${ms_failover[*]}"
say "removal: fail-back seen by rcnetctl after (ms, polled, re-adopt included): ${ms_failback[*]}"
say "removal: rdma link add took (ms, sorted): $(printf '%s\n' "${ms_add[@]}" | sort -n | tr '\n' ' ')"
say "removal: $(python3 "$RCNET_SRC/tests/lab/rails/failback_log.py" "$OUT" removal 1 --device)"
fi
lab_expect "rcnetd node1 still runs after $EVENTS device removals" kill -0 "${RCD_PID[1]}"
say "rcnet node1 counters: $(rails_stats_line 1)"
# The same fail-backs from the daemon's own log line, without rcnetctl's
# polling cost (failback_log.py).
for set in rcnet $([[ $SETS != *" silent "* ]] || echo silent) $([[ $SETS != *" removal "* ]] || echo removal); do
  say "$set: $(python3 "$RCNET_SRC/tests/lab/rails/failback_log.py" "$OUT" "$set" --failover)"
  say "$set: fail-back in rcnetd's log after (ms, sorted, from just before the heal): $(python3 "$RCNET_SRC/tests/lab/rails/failback_log.py" "$OUT" "$set")"
done
say "rcnet node1 rail 0 now: $(rails_json 1 | jq -c '.rails[0] | {state, holddown_ms, flaps}')"
rails_qp_audit 1
rails_qp_audit 2
rcd_stop_all
say "note: emulated (QEMU TCG, Soft-RoCE, veth): compare bond and rcnet within this run only"
lab_finish
