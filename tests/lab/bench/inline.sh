#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Inline (IBV_SEND_INLINE) against non-inline sends on rdma_rxe, event mode:
# rcnet-bench-inline's echo server on node 2, its client on node 1, once per
# run given as arguments: SIZE or SIZE,BLOCKS,PER_BLOCK (default 96).
. "$RCNET_LAB_LIB"
set -u
BIN=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-inline
R=$RCNET_RESULTS
A=$(lab_node_addr 1)
B=$(lab_node_addr 2)
PORT=7475
[ -x "$BIN" ] || lab_die "missing $BIN (build the project first)"
lab_setup_nodes 2 || lab_die "lab setup failed"
lab_log "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"

SIZES="$*"
[[ -n ${SIZES// /} ]] || SIZES=96
for run in $SIZES; do
  IFS=, read -r size blocks per_block <<<"$run"
  tag=${run//,/-}
  lab_log "size $size, ${blocks:-40} blocks x ${per_block:-250}"
  "$BIN" --server --bind "$B" --port "$PORT" >"$R/server-$tag.log" 2>&1 &
  srv=$!
  lab_wait_listen "$B" "$PORT" 10 || lab_die "server did not listen"
  timeout 240 "$BIN" --client --bind "$A" --connect "$B" --port "$PORT" --size "$size" --blocks "${blocks:-40}" --per-block "${per_block:-250}" \
    --json "$R/inline-$tag.json" >"$R/client-$tag.log" 2>&1
  rc=$?
  cat "$R/client-$tag.log"
  lab_expect "client, size $size, exited 0 (rc $rc)" [ "$rc" -eq 0 ]
  for ((i = 0; i < 50; i++)); do
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$srv" 2>/dev/null; then
    lab_log "server, size $size, still running: killed"
    kill -TERM "$srv"
  fi
  wait "$srv"
  rc=$?
  cat "$R/server-$tag.log"
  lab_expect "server, size $size, exited 0 (rc $rc)" [ "$rc" -eq 0 ]
  lab_expect "no QP left after size $size" [ "$(lab_qp_count)" -eq 0 ]
done
lab_finish
