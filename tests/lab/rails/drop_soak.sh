#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Many silent drops in one boot (issue 32; docs/lab.md "When the guest
# kernel faults"): two rcnetd nodes on two rails, ping -i 0.01 node1 ->
# node2 over rc0 throughout, and EVENTS times: rail 0 drops node1's RoCE
# traffic at its bridge port b_1, node1 carries node2 on rail 1, the drop
# ends, rail 0 carries it again. A kernel fault stops the run at once
# (rcnet-lab, exit 123); the scenario checks every failover and fail-back,
# and reports the pings lost.
#
#   drop_soak.sh [EVENTS] [MECH] [TRAFFIC]
# EVENTS  drop events (default 100)
# MECH    how the drop is made and ended:
#   filters  the lab's way (rcd_block_roce/rcd_unblock_roce): u32 drop
#            filters added and deleted under a clsact qdisc that stays, with
#            the ingress/egress static keys held on by lab_setup_nodes
#   qdisc    the old way, kept to show the fault: the keys let go, and the
#            clsact qdisc added and deleted with its filters per event (each
#            add and delete flips the kernel's ingress and egress static
#            keys, i.e. patches the text of __netif_receive_skb_core and
#            __dev_queue_xmit on a live, 2-vCPU TCG guest)
#   toggle   a control: nothing dropped, the keys let go, the clsact qdisc
#            added and deleted on b_1 per event (0.2 s apart) while the
#            traffic flows
# TRAFFIC rcnet (default): as above; plain (toggle only): no rcnetd, no
#         RDMA: the ping and an iperf3 TCP stream node1 -> node2 over the
#         underlay veths (through b_1)
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"
OUT=$RCNET_RESULTS
EVENTS=${1:-100}
MECH=${2:-filters}
TRAFFIC=${3:-rcnet}
case $MECH in filters | qdisc | toggle) ;; *) lab_die "MECH must be filters, qdisc or toggle, not $MECH" ;; esac
case $TRAFFIC in rcnet | plain) ;; *) lab_die "TRAFFIC must be rcnet or plain, not $TRAFFIC" ;; esac
[[ $TRAFFIC == plain && $MECH != toggle ]] && lab_die "plain traffic has no failover: toggle only"
: "${RAILS_HOLDDOWN:=1s}"

lab_setup_nodes 2 --rails 2 || lab_die "node setup"
rcd_block_roce_prepare 1 || lab_die "tc clsact on b_1"
if [[ $MECH != filters ]]; then
  # The static keys flip again with every clsact add and delete.
  lab_release_static_keys || lab_die "cannot let go of the static keys"
  tc qdisc del dev b_1 clsact || lab_die "tc qdisc del dev b_1 clsact"
fi
lab_log "drop soak: $EVENTS events, mechanism $MECH, traffic $TRAFFIC, kernel $(uname -r)"

if [[ $TRAFFIC == rcnet ]]; then
  rails_start_nodes 2 || lab_die "two-rail nodes"
  rails_ping_start 1 2 soak 0.01
else
  lab_rail_ping 1 2 >/dev/null || lab_die "underlay ping node1 -> node2"
  rails_ping_start 1 "$(lab_node_addr 2)" soak 0.01
  iperf3 -s -B "$(lab_node_addr 2)" -D -1 --logfile "$OUT/iperf-server.txt" || lab_die "iperf3 server"
  sleep 0.5
  iperf3 -c "$(lab_node_addr 2)" -B "$(lab_node_addr 1)" -t 3600 -b 50M -J >"$OUT/iperf.json" 2>&1 &
  IPERF=$!
fi
sleep 1

t_start=$(rcd_now_ms)
windows=() over=() back=() misses=0
for ((k = 1; k <= EVENTS; k++)); do
  t0=$(rcd_now_ms)
  case $MECH in
    toggle)
      tc qdisc add dev b_1 clsact || lab_die "toggle $k: tc qdisc add"
      sleep 0.2
      tc qdisc del dev b_1 clsact || lab_die "toggle $k: tc qdisc del"
      sleep 0.2
      ((k % 20)) || lab_log "drop soak: $k of $EVENTS toggles done, $((($(rcd_now_ms) - t_start) / 1000)) s"
      continue
      ;;
    filters) rcd_block_roce 1 || lab_die "drop $k: rcd_block_roce" ;;
    qdisc)
      tc qdisc add dev b_1 clsact && rcd_block_roce 1 || lab_die "drop $k: tc qdisc add + filters"
      ;;
  esac
  if w=$(rails_wait_carrier 1 2 1 20); then
    over+=("$w")
  else
    lab_fail "drop $k: node1 -> node2 not on rail 1 within 20 s"
    misses=$((misses + 1))
  fi
  t1=$(rcd_now_ms)
  case $MECH in
    filters) rcd_unblock_roce 1 >/dev/null || lab_die "drop $k: rcd_unblock_roce" ;;
    qdisc) tc qdisc del dev b_1 clsact || lab_die "drop $k: tc qdisc del" ;;
  esac
  if w=$(rails_wait_carrier 1 2 0 60); then
    back+=("$w")
  else
    lab_fail "drop $k: no fail-back to rail 0 within 60 s of the drop's end"
    misses=$((misses + 1))
  fi
  windows+=("$t0:$t1" "$t1:$(rcd_now_ms)")
  ((k % 20)) || lab_log "drop soak: $k of $EVENTS events done, $((($(rcd_now_ms) - t_start) / 1000)) s"
done
t_end=$(rcd_now_ms)
sleep 1
rails_ping_stop soak
lab_log "drop soak: $EVENTS events of $MECH in $(((t_end - t_start) / 1000)) s, no kernel fault (rcnet-lab stops the run at the first)"

whole=$(rails_ping_report soak "$t_start:$t_end" | tail -n 1)
lab_log "measured: ping over the whole set: $whole"
if [[ $TRAFFIC == plain ]]; then
  kill "$IPERF" 2>/dev/null
  wait "$IPERF" 2>/dev/null
  lab_log "measured: iperf3 over the underlay: $(jq -r '.end.sum_received.bytes // "no result"' "$OUT/iperf.json" 2>/dev/null) bytes"
  lab_finish
  exit
fi
if ((${#over[@]})); then
  rails_ping_report soak --events "${windows[@]}" >"$OUT/soak.events"
  # One line per window in soak.events; the summary (its last line) here.
  tail -n 1 "$OUT/soak.events" | sed 's/^/  soak /'
  grep ' lost=[1-9]' "$OUT/soak.events" | grep -v '^all ' | sed 's/^/  soak window with a loss: /'
  lab_log "measured: failover seen by rcnetctl after (ms, polled): p50 $(printf '%s\n' "${over[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'), fail-back p50 $(printf '%s\n' "${back[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
fi
lab_expect "every drop failed over and back ($misses misses in $EVENTS events)" [ "$misses" -eq 0 ]
lab_expect "ping node1 -> node2 answered throughout ($(rails_ping_field "$whole" replies) replies)" \
  [ "$(rails_ping_field "$whole" replies)" -gt 0 ]
rails_end 2
lab_finish
