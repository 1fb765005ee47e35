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

# jq expression over one summary line; prints PASS/FAIL through lab_expect.
json_check() { # DESC FILE JQ-EXPR
  local desc=$1 file=$2 expr=$3
  lab_expect "$desc" jq -e "$expr" "$file" >/dev/null
}

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
  for side in client server; do
    json_check "probe $name $side: $MESSAGES messages verified" "$out.$side.json" \
      ".messages_ok == $MESSAGES and .messages_bad == 0"
    json_check "probe $name $side: drain WR flushed" "$out.$side.json" \
      '.drain_completed and .drain_status == "WR_FLUSH_ERR"'
    json_check "probe $name $side: nothing completed after the drain WR" "$out.$side.json" \
      '.completions_after_drain == 0'
    json_check "probe $name $side: kernel saw our QP before destroy, none after" \
      "$out.$side.json" '.kernel_qps_before_destroy == 1 and .kernel_qps_left == 0'
    json_check "probe $name $side: seam holds no QPN" "$out.$side.json" '.seam_qpns_left == 0'
    lab_log "probe $name $side: last_wqe_seen=$(jq -c .last_wqe_seen "$out.$side.json")" \
      "last_wqe_wait_ms=$(jq -c .last_wqe_wait_ms "$out.$side.json")" \
      "drain_ms=$(jq -c .drain_ms "$out.$side.json")" \
      "destroy_qp_ms=$(jq -c .destroy_qp_ms "$out.$side.json")" \
      "cm_events=$(jq -c '[.cm_events[].type]' "$out.$side.json")" \
      "async_events=$(jq -c '[.async_events[].type]' "$out.$side.json")"
  done
  json_check "probe $name: REP private data echoed" "$out.client.json" '.rep_private_data_ok'
  json_check "probe $name: QPNs agree across the connection" "$out.client.json" \
    ".remote_qpn == $(jq .qpn "$out.server.json") and .qpn == $(jq .remote_qpn "$out.server.json")"
}

run_pair srq 7471
run_pair nosrq 7472 --no-srq

lab_collect probe
lab_expect "no QP left in the kernel after both probes (rdma res show qp)" \
  [ "$(lab_qp_count)" -eq 0 ]
lab_finish
