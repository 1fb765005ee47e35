#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Lab scenario: rcnet-verbs-probe between two Soft-RoCE nodes, with the SRQ
# and with per-QP receive queues. Each run: connect, N SENDs with immediate
# both ways (payload verified), spec teardown on both sides (DREQ, ERR,
# bounded wait for Last WQE Reached, drain WR, destroy QP, destroy id). Checks
# that no QP is left, by the probe's own audit and by `rdma res show qp`.
set -u -o pipefail
. "$RCNET_LAB_LIB"

PROBE=${RCNET_BUILD_DIR:-}/tests/lab/real/rcnet-verbs-probe
MESSAGES=${PROBE_MESSAGES:-200}
SIZE=${PROBE_SIZE:-4096}

lab_setup_nodes 2 || lab_die "node setup"
[[ -x $PROBE ]] || lab_die "probe binary missing: $PROBE (set RCNET_BUILD_DIR)"

SERVER=$(lab_node_addr 1)
CLIENT=$(lab_node_addr 2)

run_pair() { # NAME PORT [probe args...]
  local name=$1 port=$2 spid rc=0 src=0 side
  shift 2
  local out=$RCNET_RESULTS/probe-$name
  lab_log "probe $name: server $SERVER:$port, client $CLIENT, $MESSAGES x $SIZE bytes $*"
  lab_timeout 90 "$PROBE" --listen "$SERVER" --port "$port" --size "$SIZE" "$@" \
    >"$out.server.json" 2>"$out.server.log" &
  spid=$!
  if ! lab_wait_listen "$SERVER" "$port" 20 >>"$out.server.log"; then
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    lab_fail "probe $name: server did not listen"
    return 1
  fi
  lab_timeout 90 "$PROBE" --connect "$SERVER" --bind "$CLIENT" --port "$port" \
    --messages "$MESSAGES" --size "$SIZE" "$@" >"$out.client.json" 2>"$out.client.log" || rc=$?
  wait "$spid" || src=$?
  for side in client server; do
    echo "probe $name $side: $(cat "$out.$side.json")"
    sed "s/^/    $side log: /" "$out.$side.log" | tail -5
  done
  lab_expect "probe $name: client exit 0" [ "$rc" -eq 0 ]
  lab_expect "probe $name: server exit 0" [ "$src" -eq 0 ]
  # No /dev/fd in the lab guest: here-strings, not process substitution.
  local m="" d="" a="" k="" q="" lw="" lwms="" dms="" dqp="" cme="" ase=""
  for side in client server; do
    # One jq per side (each start costs ~1 s under TCG). The summary is the
    # probe's last stdout line; a missing one leaves every field empty → FAIL.
    IFS=$'\t' read -r m d a k q lw lwms dms dqp cme ase <<<"$(tail -n 1 "$out.$side.json" |
      jq -r "[(.messages_ok == $MESSAGES and .messages_bad == 0),
              (.drain_completed and .drain_status == \"WR_FLUSH_ERR\"),
              (.completions_after_drain == 0),
              (.kernel_qps_before_destroy == 1 and .kernel_qps_left == 0),
              (.seam_qpns_left == 0), .last_wqe_seen, .last_wqe_wait_ms, .drain_ms,
              .destroy_qp_ms, ([.cm_events[].type] | join(\",\")),
              ([.async_events[].type] | join(\",\") | if . == \"\" then \"none\" else . end)]
             | map(tostring) | @tsv" 2>/dev/null)"
    lab_expect "probe $name $side: $MESSAGES messages verified" [ "$m" = true ]
    lab_expect "probe $name $side: drain WR completed with WR_FLUSH_ERR" [ "$d" = true ]
    lab_expect "probe $name $side: nothing of this QP completed after its drain WR" [ "$a" = true ]
    lab_expect "probe $name $side: kernel listed our QP before destroy, none after" [ "$k" = true ]
    lab_expect "probe $name $side: the seam holds no QPN" [ "$q" = true ]
    lab_log "probe $name $side: last_wqe_seen=$lw last_wqe_wait_ms=$lwms drain_ms=$dms" \
      "destroy_qp_ms=$dqp cm_events=$cme async_events=$ase"
  done
  local rep="" cq="" cr="" sq="" sr=""
  IFS=$'\t' read -r rep cq cr <<<"$(tail -n 1 "$out.client.json" |
    jq -r '[.rep_private_data_ok, .qpn, .remote_qpn] | map(tostring) | @tsv' 2>/dev/null)"
  IFS=$'\t' read -r sq sr <<<"$(tail -n 1 "$out.server.json" |
    jq -r '[.qpn, .remote_qpn] | map(tostring) | @tsv' 2>/dev/null)"
  lab_expect "probe $name: REP private data echoed the REQ" [ "$rep" = true ]
  local agree=false
  [[ -n $cq && $cq == "$sr" && $sq == "$cr" ]] && agree=true
  lab_expect "probe $name: QPNs agree across the connection ($cq<->$sq)" [ "$agree" = true ]
}

# A peer process that dies mid-transfer (the server _exits after 20 messages,
# without rdma_disconnect). Seen on rxe: the dead process's kernel cm id still
# sends a DREQ, so the client gets DISCONNECTED (not RETRY_EXC_ERR) and must
# tear its QP down cleanly either way.
run_crash() { # PORT
  local port=$1 spid rc=0 src=0 out=$RCNET_RESULTS/probe-crash
  lab_log "probe crash: server $SERVER:$port _exits after 20 messages (no rdma_disconnect)"
  lab_timeout 90 "$PROBE" --listen "$SERVER" --port "$port" --size "$SIZE" --crash-after 20 \
    >"$out.server.json" 2>"$out.server.log" &
  spid=$!
  if ! lab_wait_listen "$SERVER" "$port" 20 >>"$out.server.log"; then
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    lab_fail "probe crash: server did not listen"
    return 1
  fi
  lab_timeout 90 "$PROBE" --connect "$SERVER" --bind "$CLIENT" --port "$port" \
    --messages "$MESSAGES" --size "$SIZE" --expect-peer-crash \
    >"$out.client.json" 2>"$out.client.log" || rc=$?
  wait "$spid" || src=$?
  echo "probe crash client: $(cat "$out.client.json")"
  local st="" after="" k="" q="" d=""
  IFS=$'\t' read -r st after k q d <<<"$(tail -n 1 "$out.client.json" |
    jq -r '[.peer_gone_by, .first_error_after_ms,
            (.kernel_qps_before_destroy == 1 and .kernel_qps_left == 0), (.seam_qpns_left == 0),
            (.drain_completed and .drain_status == "WR_FLUSH_ERR")] | map(tostring) | @tsv' \
      2>/dev/null)"
  lab_expect "probe crash: server died as asked (exit 3)" [ "$src" -eq 3 ]
  lab_expect "probe crash: client exit 0" [ "$rc" -eq 0 ]
  lab_expect "probe crash: client noticed the dead peer ($st)" \
    [ "$st" = RETRY_EXC_ERR -o "$st" = DISCONNECTED ]
  lab_expect "probe crash: client drained its QP" [ "$d" = true ]
  lab_expect "probe crash: kernel listed the QP before destroy, none after" [ "$k" = true ]
  lab_expect "probe crash: the seam holds no QPN" [ "$q" = true ]
  lab_log "probe crash: peer gone by $st (first error ${after} ms after the last good completion)"
}

run_pair srq 7471
run_pair nosrq 7472 --no-srq
run_crash 7473

lab_collect probe
lab_expect "no QP left in the kernel after both probes (rdma res show qp)" \
  [ "$(lab_qp_count)" -eq 0 ]
lab_finish
