#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cluster boot (issue 23): every node's rcnetd starts at the same moment,
# then every node pings every other at once (N x (N - 1) directed pairs, 240
# for 16 nodes). Checks that every pair answered, that no daemon counted a
# connect failure, that every rcnetd exits 0 on SIGTERM and that no QP is
# left. Prints (never asserts: no timed assertions) the time from the last
# daemon's "TUN rc0 up" until every pair answered, the same from the
# daemons' own logs (every "connected to peer"), and the REJs by reason.
# The pings come from one process (cluster_probe.py: a raw ICMP socket per
# netns), not one `ping` exec per pair, whose cost under TCG dominated the
# first measurement (58 s for 16 nodes).
#   ARGS: [NODES] (default: the lab's node count)
# Raw figures: $RCNET_RESULTS/cluster-boot.txt ("key value" lines), per
# pair: $RCNET_RESULTS/cluster-pairs.txt (see cluster_probe.py).
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

N=${1:-$RCNET_LAB_NODES}
PROBE=$RCNET_SRC/tests/lab/daemon/cluster_probe.py
RAW=$RCNET_RESULTS/cluster-boot.txt
# Neighbour entries written, not warmed by N x (N - 1) ping execs.
lab_setup_nodes "$N" --static-arp || lab_die "node setup"
for ((i = 1; i <= N; i++)); do
  # Small daemons: N of them share the guest's memory (offload off: buffers
  # of tun.mtu, 64 KiB, instead of 64 KiB frames; 64 + 64 of them, 8 MiB).
  # SIGTERM to every daemon at once tears down N x (N - 1) QPs on the
  # guest's 2 CPUs; rxe never reports Last WQE Reached (each QP waits
  # timeouts.last_wqe) and each rdma_destroy_qp takes 0.1-0.4 s of the
  # event loop, so 32 daemons outlast the 5 s stop bound (disconnect +
  # last_wqe + drain + 2 s slack); rcnetd extends it while QPs go (up to
  # 25 s), and every daemon must exit 0.
  # The transport and connect timeouts are sized for hardware: with N
  # daemons on 2 emulated CPUs a setup took up to 7.4 s (32 nodes; 5.1 s
  # with 16 on a loaded host) against timeouts.connect 5 s, and an rxe
  # responder starved for ~0.3 s (ack_timeout 14 = 67 ms, retry_count 3)
  # killed ESTABLISHED QPs with RETRY_EXC_ERR: failures of the guest's CPU,
  # not of the handshake this scenario checks (18 = 1.07 s per retry).
  rcd_config "$i" "[timeouts]" "idle = \"600s\"" "connect = \"30s\"" \
    "[transport]" "offload = false" "ack_timeout = 18" \
    "[srq]" "size = 64" "[limits]" "send_slots = 64"
done
mkdir -p /run/rcnet
# The prober opens its sockets first and says "ready"; it then waits for
# every daemon's "TUN rc0 up" and sends to every pair at once.
PLOG=$RCNET_RESULTS/prober.txt
python3 "$PROBE" probe "$N" "$RCNET_RESULTS" 120 >"$PLOG" 2>&1 &
prober=$!
for ((k = 0; k < 600; k++)); do
  grep -q '^ready' "$PLOG" 2>/dev/null && break
  kill -0 "$prober" 2>/dev/null || break
  sleep 0.05
done
grep -q '^ready' "$PLOG" || lab_die "prober not ready: $(tr '\n' ' ' <"$PLOG")"
t_spawn=$(rcd_now_ms)
for ((i = 1; i <= N; i++)); do
  "$RCD_BIN" -c "$RCNET_RESULTS/node-$i.toml" >>"$RCNET_RESULTS/rcnetd-$i.log" 2>&1 &
  RCD_PID[$i]=$!
done
echo "$t_spawn" >"$RCNET_RESULTS/cluster-spawn-ms"
lab_log "cluster boot: $N rcnetd spawned in $(($(rcd_now_ms) - t_spawn)) ms"
wait "$prober"
lab_log "prober: $(tr '\n' ';' <"$PLOG")"
lab_expect "cluster boot: every rcnetd still running" \
  bash -c "for p in ${RCD_PID[*]}; do kill -0 \$p || exit 1; done"
rcd_stop_all
lab_expect "cluster boot: no QP left" [ "$(lab_qp_count)" -eq 0 ]
python3 "$PROBE" report "$N" "$RCNET_RESULTS" >"$RAW"
lab_log "cluster boot: $(tr '\n' ';' <"$RAW")"
val() { awk -v k="$1" '$1 == k { print $2 }' "$RAW"; }
pairs=$((N * (N - 1)))
lab_expect "cluster boot: all $pairs pairs answered ($(val pairs_answered))" [ "$(val pairs_answered)" = "$pairs" ]
lab_expect "cluster boot: every daemon logged all $pairs connections up ($(val daemon_pairs_established))" \
  [ "$(val daemon_pairs_established)" = "$pairs" ]
lab_expect "cluster boot: 0 connect failures ($(val connect_failures))" [ "$(val connect_failures)" = 0 ]
lab_finish
