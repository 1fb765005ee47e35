#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet beside rdma-core's own tools, in one boot of the lab
# (1 + ceil(CONNECTIONS / 250) nodes: 5 for the default 1000).
# Raw figures go to $RCNET_RESULTS/bench-raw.txt ("key value" lines) and the
# perftest anchors to $RCNET_RESULTS/anchors.json; tools/bench/rcnet-bench
# turns them into the ratio table. Absolute times under TCG mean nothing;
# ratios within this one run do.
#   ARGS: [CONNECTIONS [RCNETD [PHASES]]] (default 1000, at most 250 per
#   client node; RCNETD: path of the rcnetd binary, "" or absent for
#   $RCNET_BUILD_DIR's; PHASES "all" (default) or "setup": only the setup
#   rate and idle-scale phases, to find how many connections one guest holds)
# Node 1 is the hub (rcnetd, or the ucmatose server); nodes 2.. connect to it
# from secondary underlay addresses 10.99.1K.x / 10.99.2K.x (one per
# connection, since an rcnet node id is its address). Throughput, latency
# and teardown run between nodes 1 and 2.
#
# Why 250 addresses per client node: each IPv4 address adds one RoCE v2 GID
# to its rxe port. The port's GID table has 1024 entries, but a GID at index
# 256 or above cannot be the source of an rdma_cm connection: rdma_connect
# fails with EINVAL for exactly those addresses (a kretprobe shows
# ib_send_cm_req returning -EINVAL; most likely because an AH's sgid_index
# is 8 bits wide). Entries 0 and 1 are the port's own (default GID, primary
# address), so 254 secondary addresses work per device; measured in the lab
# with tests/lab/bench/gid_probe.sh (300 addresses: the first 254 connect,
# the other 46 get EINVAL on every attempt; 1100: the table stops at 1024
# with ENOSPC in dmesg).
set -u -o pipefail
. "$RCNET_LAB_LIB"

# Own daemon helpers (the same idea as tests/lab/daemon/rcnetd_lib.sh, kept
# here so that a benchmark run does not depend on that file's edits).
RCD_BIN=$RCNET_BUILD_DIR/daemon/rcnetd
declare -A RCD_PID=()
rcd_now_ms() { echo $(($(date +%s%N) / 1000000)); }
rcd_start() {
  local n=$1 log=$RCNET_RESULTS/rcnetd-$1.log k skip=1
  mkdir -p /run/rcnet
  [[ -f $log ]] && skip=$(($(wc -l <"$log") + 1))
  "$RCD_BIN" -c "$RCNET_RESULTS/node-$n.toml" >>"$log" 2>&1 &
  RCD_PID[$n]=$!
  for ((k = 0; k < 300; k++)); do
    tail -n +"$skip" "$log" | grep -q "TUN rc0 up" && return 0
    kill -0 "${RCD_PID[$n]}" 2>/dev/null || break
    sleep 0.1
  done
  lab_fail "rcnetd node$n did not start: $(tail -n +"$skip" "$log" | tail -3 | tr '\n' ' ')"
  return 1
}
rcd_kill() { kill -"$2" "${RCD_PID[$1]}"; }
rcd_wait_exit() {
  local k
  for ((k = 0; k < $2 * 10; k++)); do
    kill -0 "${RCD_PID[$1]}" 2>/dev/null || break
    sleep 0.1
  done
  wait "${RCD_PID[$1]}" 2>/dev/null
}
rcd_ping() {
  local from=$1 to=$2
  shift 2
  lab_in_node "$from" ping -n -q "$@" "10.100.0.$to"
}
rcd_qps() { lab_qp_count "rxe_$1"; }
rcd_wait_qps() {
  local k
  for ((k = 0; k < $3 * 20; k++)); do
    [ "$(rcd_qps "$1")" -eq "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
rcd_stop_all() {
  local n
  for n in "${!RCD_PID[@]}"; do kill -TERM "${RCD_PID[$n]}" 2>/dev/null; done
  for n in "${!RCD_PID[@]}"; do wait "${RCD_PID[$n]}" 2>/dev/null; done
  RCD_PID=()
}

N=${1:-1000}
# ARG 2: an rcnetd from another build tree (the guest sees no other variable).
RCD_BIN=${2:-$RCD_BIN}
PHASES=${3:-all}
LOAD=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-load
# The clients' RC retry count: 7 (infinite on rxe), so that a hub slow to ACK
# under TCG does not make them reap healthy connections (see load_gen.cpp).
LOAD_RETRY=${RCNET_BENCH_LOAD_RETRY:-7}
RAW=$RCNET_RESULTS/bench-raw.txt
: >"$RAW"
raw() { echo "$1 $2" >>"$RAW"; }
PER_NODE_MAX=250
NCLIENT=$(((N + PER_NODE_MAX - 1) / PER_NODE_MAX))
((NCLIENT >= 1 && NCLIENT <= 31)) || lab_die "CONNECTIONS must be 1..$((31 * PER_NODE_MAX)), got $N"
CLIENT_NODES=()
for ((k = 2; k <= NCLIENT + 1; k++)); do CLIENT_NODES+=("$k"); done
HZ=$(getconf CLK_TCK)

lab_setup_nodes "$((NCLIENT + 1))" || lab_die "node setup"
raw connections_requested "$N"
raw client_nodes "${#CLIENT_NODES[@]}"
raw load_retry_count "$LOAD_RETRY"

# --- anchors: ucmatose/cmtime 100, ib_send_bw 64 KiB, ib_send_lat ----------
if [[ $PHASES == all ]]; then
  lab_perf_anchors 2 1 "$RCNET_RESULTS/anchors.json" || lab_log "some anchors missing"
fi

# --- secondary underlay addresses: node k holds 10.99.(10+k).1..m (m <= 250) ---
per=$(((N + ${#CLIENT_NODES[@]} - 1) / ${#CLIENT_NODES[@]}))
left=$N
for k in "${CLIENT_NODES[@]}"; do
  m=$((left < per ? left : per))
  left=$((left - m))
  COUNT[k]=$m
  mac=$(cat "/sys/class/net/v_$k/address")
  : >"$RCNET_RESULTS/addrs-$k.txt"
  {
    echo "route add 10.99.$((10 + k)).0/24 dev v_1 src 10.99.0.1 table 101"
    for ((j = 1; j <= m; j++)); do
      a=10.99.$((10 + k)).$j
      echo "$a" >>"$RCNET_RESULTS/addrs-$k.txt"
      echo "addr add $a/32 dev v_$k"
      echo "neigh replace $a lladdr $mac dev v_1 nud permanent"
    done
  } >"$RCNET_RESULTS/addrs-$k.ip"
  ip -batch "$RCNET_RESULTS/addrs-$k.ip" || lab_fail "secondary addresses on node$k"
done
# The kernel adds the RoCE GIDs of new addresses from a workqueue: wait until
# every client port holds its share (2 own entries + one per address).
gids_nonzero() {
  local g n=0
  for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
    read -r g <"$g" 2>/dev/null || continue
    [[ $g == 0000:0000:0000:0000:0000:0000:0000:0000 ]] || n=$((n + 1))
  done
  echo "$n"
}
for k in "${CLIENT_NODES[@]}"; do
  for ((w = 0; w < 60; w++)); do
    (($(gids_nonzero "rxe_$k") >= COUNT[k] + 2)) && break
    sleep 0.5
  done
  raw "gids_rxe_$k" "$(gids_nonzero "rxe_$k")"
done
lab_log "secondary addresses: ${COUNT[*]} on nodes ${CLIENT_NODES[*]}"

# --- setup rate: ucmatose, N connections from the same client nodes ---------
# One server on node 1 accepting N; one client per node with its share (from
# its primary address: ucmatose needs no node id per connection), all
# started together. Output lines are timestamped. With -C 0 the server prints
# "disconnecting" once all N connections are established on its side (then
# it disconnects them): that line ends the connect phase. The clients print
# no such line ("connecting" ... "test complete" includes the teardown).
stamp() { while IFS= read -r line; do echo "$(rcd_now_ms) $line"; done; }
(timeout -k 5 300 stdbuf -oL ucmatose -b 10.99.0.1 -c "$N" -C 0 2>&1 | stamp >"$RCNET_RESULTS/ucm-server.txt") &
ucm_srv=$!
if lab_wait_listen 10.99.0.1 7471 30 >>"$RCNET_RESULTS/ucm-wait.txt"; then
  ucm_pids=()
  t0=$(rcd_now_ms)
  for k in "${CLIENT_NODES[@]}"; do
    (timeout -k 5 300 stdbuf -oL ucmatose -s 10.99.0.1 -b "10.99.0.$k" -c "${COUNT[k]}" -C 0 2>&1 |
      stamp >"$RCNET_RESULTS/ucm-client-$k.txt") &
    ucm_pids+=($!)
  done
  rc=0
  for p in "${ucm_pids[@]}"; do wait "$p" || rc=1; done
  t1=$(rcd_now_ms)
  wait "$ucm_srv" || rc=1
  conn_end=$(awk '/disconnecting/ { print $1; exit }' "$RCNET_RESULTS/ucm-server.txt")
  raw ucmatose_total_ms $((t1 - t0))
  # Start: the first client's "connecting" line (its device is open; it
  # resolves and connects from here), as rcnet's clock starts at "go" with
  # its managers already up. From launch (exec, device open) is kept too.
  ucm_start=$(cat "$RCNET_RESULTS"/ucm-client-*.txt | awk '/connecting/ && (m == "" || $1 < m) { m = $1 } END { print m }')
  if [[ $conn_end =~ ^[0-9]+$ ]]; then
    raw ucmatose_connect_from_launch_ms $((conn_end - t0))
    [[ $ucm_start =~ ^[0-9]+$ ]] && raw ucmatose_connect_ms $((conn_end - ucm_start))
  fi
  lab_expect "ucmatose $N connections from ${#CLIENT_NODES[@]} nodes (exit ok)" [ "$rc" -eq 0 ]
  raw ucmatose_ok $((rc == 0))
  lab_log "ucmatose done"
else
  lab_fail "ucmatose server did not listen"
  kill "$ucm_srv" 2>/dev/null
fi

# --- rcnetd configuration (rcd_config has no [tun] mtu; benchmarks vary it) ---
bench_config() { # I MTU IDLE
  cat >"$RCNET_RESULTS/node-$1.toml" <<EOF
[node]
address = "10.99.0.$1"
[tun]
address = "10.100.0.$1/24"
netns = "node$1"
mtu = $2
[peers]
underlay_prefix = "10.99.0.0/24"
[timeouts]
idle = "$3"
reaper_interval = "500ms"
[log]
level = "info"
target = "stderr"
[ctl]
socket = "/run/rcnet/node$1.sock"
group = "root"
EOF
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
vmrss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# RssAnon/RssFile/RssShmem in KiB: rxe's queues are kernel buffers mmapped
# into the process, so they show up outside the heap.
# Rss (KiB) and count of the mappings of /dev/infiniband/uverbs*: where the
# RssFile growth per connection lives.
uverbs_rss() { awk '/^[0-9a-f]+-[0-9a-f]+ / { m = ($6 ~ /uverbs/); n += m } m && /^Rss:/ { s += $2 } END { printf "%d/%d", s, n }' "/proc/$1/smaps"; }
rss_parts() { awk '/^Rss(Anon|File|Shmem):/ { printf "%s%s=%s", sep, $1, $2; sep = "," }' "/proc/$1/status"; }

# --- setup rate + scale: N rcnet connections into one rcnetd ---------------
bench_config 1 65520 600s
if rcd_start 1; then
  hub=${RCD_PID[1]}
  raw hub_vmrss_kib_idle0 "$(vmrss_kib "$hub")"
  raw hub_rss_parts_idle0 "$(rss_parts "$hub")"
  raw hub_uverbs_rss_kib_maps_idle0 "$(uverbs_rss "$hub")"
  rm -f "$RCNET_RESULTS/go"
  load_pids=()
  for k in "${CLIENT_NODES[@]}"; do
    "$LOAD" --peer 10.99.0.1 --addr-file "$RCNET_RESULTS/addrs-$k.txt" \
      --go-file "$RCNET_RESULTS/go" --connect-limit-s 240 --retry-count "$LOAD_RETRY" \
      --summary "$RCNET_RESULTS/load-$k.json" >"$RCNET_RESULTS/load-$k.txt" 2>&1 &
    load_pids+=($!)
  done
  for k in "${CLIENT_NODES[@]}"; do
    for ((w = 0; w < 1200; w++)); do
      grep -q '^READY' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
      sleep 0.25
    done
  done
  lab_log "load generators ready: $(grep -h '^READY' "$RCNET_RESULTS"/load-*.txt | tr '\n' ';')"
  touch "$RCNET_RESULTS/go"
  for k in "${CLIENT_NODES[@]}"; do
    for ((w = 0; w < 2400; w++)); do
      grep -q '^ESTABLISHED' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
      sleep 0.1
    done
  done
  # "ESTABLISHED n of m in X ms go_realtime_ms G last_realtime_ms L in_service S":
  # G and L are epoch ms (13 digits); only shell arithmetic is used on them
  # (awk's printf %d clamps at 2^31 - 1, which made a negative rate before).
  est=0 ins=0 end=0 start=0
  for k in "${CLIENT_NODES[@]}"; do
    read -r n go last s < <(awk '/^ESTABLISHED/ { print $2, $9, $11, $13 }' "$RCNET_RESULTS/load-$k.txt")
    [[ ${n:-} =~ ^[0-9]+$ && ${go:-} =~ ^[0-9]+$ && ${last:-} =~ ^[0-9]+$ && ${s:-} =~ ^[0-9]+$ ]] || {
      lab_fail "load generator on node$k printed no ESTABLISHED line"
      continue
    }
    est=$((est + n))
    ins=$((ins + s))
    ((last > end)) && end=$last
    ((start == 0 || go < start)) && start=$go
  done
  raw rcnet_established "$est"
  raw rcnet_in_service "$ins"
  ((end > 0 && start > 0)) && raw rcnet_connect_ms $((end - start))
  lab_expect "rcnet: $est of $N connections ESTABLISHED" [ "$est" -eq "$N" ]
  lab_expect "rcnet: $ins of $N connections still in service after the connect phase" [ "$ins" -eq "$N" ]
  lab_log "rcnet connect phase done: $est established, $ins in service"
  hub_qps=$(rcd_qps 1)
  raw hub_qps "$hub_qps"
  raw hub_vmrss_kib_connected "$(vmrss_kib "$hub")"
  # Idle: N connections, no traffic; no busy polling means ~0 CPU.
  c0=$(cpu_ticks "$hub")
  sleep 30
  c1=$(cpu_ticks "$hub")
  lab_log "idle 30 s done"
  raw hub_idle_cpu_s_per_30s "$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN { printf "%.3f", (b - a) / hz }')"
  raw hub_vmrss_kib_idle30 "$(vmrss_kib "$hub")"
  raw hub_rss_parts_idle30 "$(rss_parts "$hub")"
  raw hub_uverbs_rss_kib_maps_idle30 "$(uverbs_rss "$hub")"
  raw hub_qps_idle30 "$(rcd_qps 1)"
  rdma res show mr dev rxe_1 >"$RCNET_RESULTS/hub-mr.txt" 2>&1
  raw hub_registered_bytes "$(awk '{ for (i = 1; i < NF; i++) if ($i == "mrlen") s += $(i + 1) } END { print s + 0 }' "$RCNET_RESULTS/hub-mr.txt")"
  # Teardown of all N from the clients' side (DREQ each), timed by them.
  t0=$(rcd_now_ms)
  for p in "${load_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${load_pids[@]}"; do wait "$p"; done
  rcd_wait_qps 1 0 120 || lab_fail "hub QPs not all destroyed after the clients' DREQs"
  raw rcnet_teardown_all_ms $(($(rcd_now_ms) - t0))
  raw hub_vmrss_kib_after_teardown "$(vmrss_kib "$hub")"
  rcd_kill 1 TERM
  rcd_wait_exit 1 30
  unset 'RCD_PID[1]'
else
  lab_fail "hub rcnetd did not start"
fi
for k in "${CLIENT_NODES[@]}"; do
  sed 's/^addr add/addr del/; /^neigh/d; /^route/d' "$RCNET_RESULTS/addrs-$k.ip" >"$RCNET_RESULTS/addrs-del-$k.ip"
  ip -batch "$RCNET_RESULTS/addrs-del-$k.ip" >/dev/null 2>&1
done

# --- throughput (iperf3 TCP over rc0) and latency, per TUN MTU --------------
LOG1=$RCNET_RESULTS/rcnetd-1.log
MTUS=(1500 9000 65520)
[[ $PHASES == all ]] || MTUS=()
for mtu in "${MTUS[@]}"; do
  bench_config 1 "$mtu" 3s
  bench_config 2 "$mtu" 3s
  if ! { rcd_start 1 && rcd_start 2; }; then
    lab_fail "rcnetd at mtu $mtu"
    rcd_stop_all
    continue
  fi
  lab_log "mtu $mtu: both rcnetd up"
  rcd_ping 1 2 -c 3 -W 5 >/dev/null 2>&1 || lab_fail "ping over rc0 at mtu $mtu"
  lab_in_node 2 iperf3 -s -1 -B 10.100.0.2 >"$RCNET_RESULTS/iperf3-server-$mtu.txt" 2>&1 &
  srv=$!
  # The server listens in node2's netns: lab_wait_tcp_listen looks in the
  # root namespace and would always wait its full 20 s.
  for ((w = 0; w < 200; w++)); do
    [[ -n $(lab_in_node 2 ss -Hltn 'sport = :5201' 2>/dev/null) ]] && break
    sleep 0.1
  done
  lab_log "mtu $mtu: ping done, iperf3 server listening"
  s0=$(awk '/^cpu / { print $2 + $3, $4, $5, $7 + $8 }' /proc/stat)
  r0=$(cpu_ticks "${RCD_PID[1]}")
  r20=$(cpu_ticks "${RCD_PID[2]}")
  lab_in_node 1 timeout 60 iperf3 -c 10.100.0.2 -B 10.100.0.1 -t 8 -J >"$RCNET_RESULTS/iperf3-$mtu.json" 2>&1
  r1=$(cpu_ticks "${RCD_PID[1]}")
  r21=$(cpu_ticks "${RCD_PID[2]}")
  s1=$(awk '/^cpu / { print $2 + $3, $4, $5, $7 + $8 }' /proc/stat)
  wait "$srv" 2>/dev/null
  bps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"])' \
    "$RCNET_RESULTS/iperf3-$mtu.json" 2>/dev/null)
  raw "iperf3_mtu${mtu}_MBps" "$(awk -v b="${bps:-0}" 'BEGIN { printf "%.2f", b / 8e6 }')"
  # top-style CPU split over the run: user, system, idle, irq+softirq (ticks)
  # of the guest, and each rcnetd's own utime+stime.
  raw "cpu_mtu${mtu}_guest_user_sys_idle_irq" "$(paste -d' ' <(echo "$s0") <(echo "$s1") | awk '{ printf "%d/%d/%d/%d", $5 - $1, $6 - $2, $7 - $3, $8 - $4 }')"
  raw "cpu_mtu${mtu}_rcnetd_sender_receiver_ticks" "$((r1 - r0))/$((r21 - r20))"
  lab_log "mtu $mtu: iperf3 done"
  if [ "$mtu" = 65520 ]; then
    out=$(rcd_ping 1 2 -c 50 -i 0.05 -W 5 2>&1)
    raw ping_rtt_avg_ms "$(sed -n 's/.*= [0-9.]*\/\([0-9.]*\)\/.*/\1/p' <<<"$out")"
    raw ping_rtt_min_ms "$(sed -n 's/.*= \([0-9.]*\)\/.*/\1/p' <<<"$out")"
    # UDP request/response: a tiny python3 echo, 200 sequential round trips.
    lab_in_node 2 timeout 60 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.100.0.2", 9999))
for _ in range(220):
    d, a = s.recvfrom(2048); s.sendto(d, a)' &
    echo_pid=$!
    sleep 1
    udp=$(lab_in_node 1 timeout 60 python3 -c '
import socket, time, statistics
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.100.0.1", 0)); s.settimeout(2)
rtt = []
for i in range(220):
    t = time.perf_counter(); s.sendto(b"x" * 32, ("10.100.0.2", 9999))
    try:
        s.recvfrom(2048)
    except socket.timeout:
        continue
    if i >= 20: rtt.append((time.perf_counter() - t) * 1e6)
print("%.1f %.1f %d" % (statistics.median(rtt), min(rtt), len(rtt)))')
    wait "$echo_pid" 2>/dev/null
    raw udp_rr_median_us "$(awk '{ print $1 }' <<<"$udp")"
    raw udp_rr_min_us "$(awk '{ print $2 }' <<<"$udp")"

    # Teardown, DREQ path: node 2 stops gracefully (DREQ to node 1); node 1's
    # stage log gives the time from DISCONNECTING to DESTROYED.
    mark=$(wc -l <"$LOG1")
    rcd_ping 1 2 -c 1 -W 5 >/dev/null 2>&1
    rcd_kill 2 TERM
    rcd_wait_exit 2 30 >/dev/null
    rcd_wait_qps 1 0 30 >/dev/null || lab_fail "node1 QP after node2's DREQ"
    tail -n +"$((mark + 1))" "$LOG1" >"$RCNET_RESULTS/teardown-dreq.log"
    # Teardown, SIGKILL path: no DREQ; node 1 reaps by its idle timer (3 s).
    rcd_start 2 || lab_fail "restart node2"
    rcd_ping 1 2 -c 2 -W 5 >/dev/null 2>&1
    mark=$(wc -l <"$LOG1")
    rcd_kill 2 KILL
    t0=$(rcd_now_ms)
    wait "${RCD_PID[2]}" 2>/dev/null
    rcd_wait_qps 1 0 30 >/dev/null || lab_fail "node1 QP after node2's SIGKILL"
    raw teardown_sigkill_to_destroyed_ms $(($(rcd_now_ms) - t0))
    tail -n +"$((mark + 1))" "$LOG1" >"$RCNET_RESULTS/teardown-kill.log"
    for f in dreq kill; do
      # Sum of the teardown stages' durations of the QP torn down, and the path.
      awk -v f="$f" '
        / -> / && /QPN/ {
          for (i = 1; i <= NF; i++) if ($i == "->") { from = $(i - 1); to = $(i + 1); ms = $(i + 3) }
          if (from ~ /^(DISCONNECTING|ERROR|AWAIT_LAST_WQE|DRAINING)$/) { tot += ms; st[from] += ms }
        }
        /no Last WQE Reached/ { fb = 1 }
        END { printf "teardown_%s_total_ms %.1f\nteardown_%s_path %s\n", f, tot, f, fb ? "fallback" : "last_wqe"
              printf "teardown_%s_stages_ms DISCONNECTING=%.1f,ERROR=%.1f,AWAIT_LAST_WQE=%.1f,DRAINING=%.1f\n", f, st["DISCONNECTING"], st["ERROR"], st["AWAIT_LAST_WQE"], st["DRAINING"] }' \
        "$RCNET_RESULTS/teardown-$f.log" >>"$RAW"
    done
    raw teardown_bound_ms 3000
  fi
  rcd_stop_all
done
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
echo "bench-raw.txt:"
cat "$RAW"
lab_finish
