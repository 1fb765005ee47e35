#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# idle_timeout 2 s, reaper tick 0.5 s: once traffic stops, the connection is
# torn down gracefully within idle + one tick, its QPs are destroyed within the
# teardown bounds (rxe never sends Last WQE Reached, so last_wqe_timeout is
# always spent), and the next ping reconnects on demand. Two rounds.
# Times come from the daemons' own log timestamps (shell polling of `rdma`
# under TCG takes a good part of idle_timeout per call).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

idle_ms=2000
tick_ms=500
disc_ms=500
lwqe_ms=200
drain_ms=500
lab_setup_nodes 2 || lab_die "node setup"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" "idle = \"$((idle_ms / 1000))s\"" "reaper_interval = \"${tick_ms}ms\"" \
    "last_wqe = \"${lwqe_ms}ms\"" "drain = \"${drain_ms}ms\"" "disconnect = \"${disc_ms}ms\""
  rcd_start "$i" || lab_die "start node$i"
done

for round in 1 2; do
  declare -A from=()
  for i in 1 2; do from[$i]=$(($(wc -l <"$RCNET_RESULTS/rcnetd-$i.log") + 1)); done
  rcd_ping 1 2 -c 2 -W 5 >/dev/null 2>&1 && lab_pass "round $round: ping node1 -> node2" ||
    lab_fail "round $round: ping node1 -> node2"
  t_last=$(rcd_now_ms)
  # Whichever side's timer fires first sends the DREQ; the other follows on it.
  first="" t_first=0
  for i in 1 2; do
    down=$(rcd_wait_log "$i" "tearing down QPN [0-9]+ to" 15 "${from[$i]}") || {
      lab_fail "round $round: node$i never tore its QP down"
      continue
    }
    qpn=$(grep -o 'QPN [0-9]*' <<<"$down" | head -1 | cut -d' ' -f2)
    gone=$(rcd_wait_log "$i" "QPN $qpn .*-> DESTROYED" 10 "${from[$i]}") || {
      lab_fail "round $round: node$i's QPN $qpn was never destroyed"
      continue
    }
    t_down=$(rcd_log_ms "$down")
    t_gone=$(rcd_log_ms "$gone")
    why=${down#*: }
    lab_log "round $round: node$i QPN $qpn: teardown at +$((t_down - t_last)) ms after the last ping ($why), destroyed $((t_gone - t_down)) ms later"
    lab_expect "round $round: node$i: QPN $qpn destroyed within disconnect + last_wqe + drain = $((disc_ms + lwqe_ms + drain_ms)) ms of its teardown ($((t_gone - t_down)) ms)" \
      [ $((t_gone - t_down)) -le $((disc_ms + lwqe_ms + drain_ms)) ]
    if [[ $why == idle* ]] && [[ -z $first || $t_down -lt $t_first ]]; then
      first=$i t_first=$t_down first_why=$why
    fi
  done
  if [ -z "$first" ]; then
    lab_fail "round $round: no node reaped the connection for idleness"
    continue
  fi
  idle=$(grep -o '^idle for [0-9]*' <<<"$first_why" | grep -o '[0-9]*$')
  # The daemon measures idleness itself: at least idle_timeout (the connection
  # was kept while in use), at most one reaper tick more.
  lab_expect "round $round: node$first reaped after ${idle} ms idle: >= idle_timeout ${idle_ms} ms, <= idle + one tick $((idle_ms + tick_ms)) ms" \
    [ "$idle" -ge "$idle_ms" -a "$idle" -le $((idle_ms + tick_ms)) ]
  lab_expect "round $round: reap began within idle + one tick of the last ping ($((t_first - t_last)) ms)" \
    [ $((t_first - t_last)) -le $((idle_ms + tick_ms)) ]
done
lab_expect "no QP left on either node after the rounds" [ "$(lab_qp_count)" -eq 0 ]
lab_collect idle-reap
rcd_stop_all
total=0
for i in 1 2; do
  grep -h "counters at exit" "$RCNET_RESULTS/rcnetd-$i.log" | sed "s/^/node$i /"
  total=$((total + $(rcd_counter "$i" idle_reaps)))
done
lab_expect "idle reaps counted, at least one per round ($total)" [ "$total" -ge 2 ]
lab_expect "both rounds connected on demand (connects_started on node1: $(rcd_counter 1 connects_started))" \
  [ "$(rcd_counter 1 connects_started)" -eq 2 ]
lab_finish
