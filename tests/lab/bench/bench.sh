#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnet beside rdma-core's own tools, in one boot of the lab
# (1 + ceil(CONNECTIONS / 250) nodes: 5 for the default 1000).
# Raw figures go to $RCNET_RESULTS/bench-raw.txt ("key value" lines) and the
# perftest anchors to $RCNET_RESULTS/anchors.json; tools/bench/rcnet-bench
# turns them into the ratio table. Absolute times under TCG mean nothing;
# ratios within this one run do.
#   ARGS: [CONNECTIONS [RCNETD [PHASES [PROFILE [POLL_US [RCNETD_B [SETUP_REPEAT]]]]]]]
#   (CONNECTIONS: default 1000, at most 250 per
#   client node; RCNETD: path of the rcnetd binary, "" or absent for
#   $RCNET_BUILD_DIR's; PHASES "all" (default), "setup": only the setup
#   rate and idle-scale phases, to find how many connections one guest holds,
#   "data": only anchors, throughput, latency, syscalls, teardown, or
#   "latency": only anchors, latency and syscalls (rc0 at MTU 65520 with
#   offload; the underlay's ping and UDP RR, without its iperf3), a quick
#   A/B of a latency change such as transport.poll_us, or "udp": only
#   anchors and the UDP stream with and without GSO at MTU 1500 (USO on
#   Linux 6.2+ against 6.1: run once per kernel, compare with
#   bench_table.py --compare);
#   PROFILE "hub": perf record the hub during the N-connection connect phase,
#   flat profile in $RCNET_RESULTS/hub-profile.txt; "storms": perf record -a
#   (the whole guest) over the ucmatose storm and over the symmetric rcnet
#   storm of one more pair run after the measured ones (sampling slows the
#   guest: its times are not in the rows), reports in
#   $RCNET_RESULTS/storm-{ucmatose,rcnet}-{profile,comm,children}.txt; POLL_US: transport.poll_us;
#   RCNETD_B: a second rcnetd for an A/B of the symmetric setup storm in
#   this boot, run A, B, A; SETUP_REPEAT: pairs of setup storms, ucmatose
#   and symmetric rcnet, default 1)
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

# The daemon helpers every rcnetd scenario uses (rcd_start, rcd_kill,
# rcd_wait_exit, rcd_ping, rcd_qps, rcd_wait_qps, rcd_stop_all, rcd_now_ms).
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

N=${1:-1000}
# ARG 2: an rcnetd from another build tree (the guest sees no other variable).
RCD_BIN=${2:-$RCD_BIN}
PHASES=${3:-all}
PROFILE=${4:-}
# ARG 5: transport.poll_us for every rcnetd bench_config writes (0: off).
POLL_US=${5:-0}
# ARG 6: a second rcnetd binary: the symmetric setup storm also runs with it
# (A, B, A in this boot), an A/B of a change to the hub's setup path.
RCD_BIN_B=${6:-}
# ARG 7: pairs of setup storms (ucmatose, symmetric rcnet) to run (default 1).
SETUP_REPEAT=${7:-1}
[[ $SETUP_REPEAT =~ ^[1-9][0-9]*$ ]] || lab_die "SETUP_REPEAT must be a positive integer, got $SETUP_REPEAT"
LOAD=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-load
# The setup-rate storm shaped like ucmatose's client (one process per client
# node, one rdma_cm event channel, a small QP per connection): the setup row
# then compares the two hubs only. rcnet-bench-load (a whole cm::Manager per
# address) still makes the connections of the idle-scale phase, and its
# setup figure stays in the table beside the new one, labelled.
SYMLOAD=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-symload
# The clients' RC retry count: 7 (infinite on rxe), so that a hub slow to ACK
# under TCG does not make them reap healthy connections (see load_gen.cpp).
LOAD_RETRY=${RCNET_BENCH_LOAD_RETRY:-7}
RAW=$RCNET_RESULTS/bench-raw.txt
: >"$RAW"
raw() { echo "$1 $2" >>"$RAW"; }
raw poll_us "$POLL_US"
# softnet_drops: packets the guest dropped because a CPU's input backlog was
# full (net.core.netdev_max_backlog), summed over CPUs (/proc/net/softnet_stat
# column 2, hex). A veth hands every frame to that backlog: a burst over it is
# lost there, and rxe logs "Failed sending" for its own sends that hit it.
softnet_drops() {
  local s=0 _p d _r
  while read -r _p d _r; do s=$((s + 16#$d)); done </proc/net/softnet_stat
  echo "$s"
}
rxe_send_failures() { dmesg | grep -c 'rdma_rxe: Failed sending' || true; }
# hub_counter TAG NAME: the hub device's counter NAME in `rdma statistic
# show` from netsnap TAG (nothing when the device has no such counter).
HUB_DEV=$(lab_node_rdma_dev 1)
hub_counter() {
  awk -v d="$HUB_DEV/1" -v n="$2" '$1 == "link" && $2 == d { for (i = 3; i < NF; i++) if ($i == n) print $(i + 1) }' \
    "$RCNET_RESULTS/net-$1.txt"
}
# hub_counter_delta BEFORE AFTER NAME: how much it rose from netsnap BEFORE
# to AFTER; "-" when the device has no such counter (siw has neither RNR
# nor rxe's counters), never an arithmetic error.
hub_counter_delta() {
  local a b
  a=$(hub_counter "$1" "$3")
  b=$(hub_counter "$2" "$3")
  if [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]]; then echo $((b - a)); else echo -; fi
}
# netsnap TAG: the hub's network view into $RCNET_RESULTS/net-TAG.txt: rxe's
# per-device counters, node 1's ARP cache statistics and neighbour count,
# and every node's underlay link counters (drops, errors).
netsnap() {
  {
    echo "softnet_drops $(softnet_drops)"
    echo "--- rdma statistic"; rdma statistic show 2>&1
    echo "--- node1 arp_cache"; ip netns exec node1 cat /proc/net/stat/arp_cache 2>&1
    echo "--- node1 neighbours $(ip -n node1 neigh show | wc -l)"
    for ((k = 1; k <= NCLIENT + 1; k++)); do
      echo "--- v_$k"; ip -n "node$k" -s link show "v_$k" 2>&1
    done
  } >"$RCNET_RESULTS/net-$1.txt"
}
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
if [[ $PHASES != setup ]]; then
  lab_perf_anchors 2 1 "$RCNET_RESULTS/anchors.json" || lab_log "some anchors missing"
fi

# --- rcnetd configuration (rcd_config has no [tun] mtu; benchmarks vary it) ---
# On siw (no RNR) rcnetd admits srq.size / transport.credits - 1 peers
# (docs/design.md "Receive credits"): 31 at the defaults. A hub that takes
# N connections there is configured for them, as an operator of an iWARP
# cluster of N nodes must: the least credits (4) and an SRQ of 4 (N + 1)
# WRs, rounded up to a power of two (4,096 for 1,000).
SIW_HUB=""
if [[ ${RCNET_LAB_PROVIDER:-rxe} == siw ]]; then
  siw_srq=1
  while ((siw_srq < 4 * (N + 1))); do siw_srq=$((siw_srq * 2)); done
  SIW_HUB=$'credits = 4\n[srq]\n'"size = $siw_srq"
fi
bench_config() { # I MTU IDLE [OFFLOAD]
  local siw=""
  [[ $1 == 1 ]] && siw=$SIW_HUB
  cat >"$RCNET_RESULTS/node-$1.toml" <<EOF
[node]
address = "10.99.0.$1"
[tun]
address = "10.100.0.$1/24"
netns = "node$1"
mtu = $2
[peers]
underlay_prefix = "10.99.0.0/24"
[transport]
offload = ${4:-true}
poll_us = $POLL_US
$siw
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

# --- helpers of the data phases ------------------------------------------
RCTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
# counters I NAME...: the values of NAME... (manager and data path counters
# from `rcnetctl stats`), one per line, in the order asked; "" if absent.
counters() {
  local n=$1 f=$RCNET_RESULTS/.stats-$1.json
  shift
  "$RCTL" -s "/run/rcnet/node$n.sock" -j stats >"$f" 2>/dev/null || : >"$f"
  jq -r --args '.counters as $c | $ARGS.positional[] as $k | ($c[] | select(.name == $k) | .value) // ""' \
    "$@" <"$f" 2>/dev/null
}
# reaps I: idle_reaps + dead_peer_reaps of node I so far.
# "?" when the counters could not be read (no ctl socket, no such counter).
reaps() {
  local v
  mapfile -t v < <(counters "$1" idle_reaps dead_peer_reaps)
  if [[ ${v[0]:-} =~ ^[0-9]+$ && ${v[1]:-} =~ ^[0-9]+$ ]]; then
    echo $((v[0] + v[1]))
  else
    echo "?"
  fi
}
REAPS_BEFORE=()
measure_begin() { REAPS_BEFORE=("$(reaps 1)" "$(reaps 2)"); }
# measure_end WHAT: no connection may have been reaped (idle timer, dead
# peer) while WHAT ran: a reap inside a measurement adds a reconnect to it.
measure_end() {
  local r1 r2
  r1=$(reaps 1)
  r2=$(reaps 2)
  if [[ "$r1$r2${REAPS_BEFORE[*]}" == *"?"* ]]; then
    lab_fail "$1: reap counters unreadable (rcnetctl stats: before ${REAPS_BEFORE[*]}, after $r1 $r2)"
    raw "reaped_during_$2" unknown
  elif ((r1 != REAPS_BEFORE[0] || r2 != REAPS_BEFORE[1])); then
    lab_fail "$1: connections reaped during the measurement (node1 $((r1 - REAPS_BEFORE[0])), node2 $((r2 - REAPS_BEFORE[1])))"
    raw "reaped_during_$2" 1
  else
    raw "reaped_during_$2" 0
  fi
}
# rtt_stats FILE: "median min count" of the per-packet RTTs (ms) of ping's
# per-line output (not its summary mean).
rtt_stats() {
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^time=/) { sub(/^time=/, "", $i); print $i } }' "$1" |
    sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.4f %.4f %d\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], NR }'
}
# The UDP request/response script, the same over rc0 and over the underlay
# (so that python3's own cost cancels out of the difference).
UDP_RR=$RCNET_RESULTS/udp_rr.py
cat >"$UDP_RR" <<'PYEOF'
import socket, statistics, sys, time
if sys.argv[1] == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[2], 9999))
    s.settimeout(30)
    try:
        for _ in range(220):
            d, a = s.recvfrom(2048); s.sendto(d, a)
    except socket.timeout:
        pass
    sys.exit(0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[2], 0)); s.settimeout(2)
rtt = []
for i in range(220):
    t = time.perf_counter(); s.sendto(b"x" * 32, (sys.argv[3], 9999))
    try:
        s.recvfrom(2048)
    except socket.timeout:
        continue
    if i >= 20: rtt.append((time.perf_counter() - t) * 1e6)
print("%.1f %.1f %d" % (statistics.median(rtt), min(rtt), len(rtt)))
PYEOF
# udp_rr KEY LOCAL REMOTE: the script between nodes 1 (client) and 2.
udp_rr() {
  local key=$1 out pid
  lab_in_node 2 timeout 90 python3 "$UDP_RR" server "$3" &
  pid=$!
  sleep 2
  out=$(lab_in_node 1 timeout 90 python3 "$UDP_RR" client "$2" "$3")
  wait "$pid" 2>/dev/null
  read -r med mn cnt <<<"$out"
  raw "udp_rr_${key}_median_us" "${med:-}"
  raw "udp_rr_${key}_min_us" "${mn:-}"
  raw "udp_rr_${key}_count" "${cnt:-0}"
}
# iperf3_run KEY SERVER_ADDR CLIENT_ADDR: 8 s of TCP from node 1 to node 2
# (both in their netns), received MB/s into raw iperf3_KEY_MBps.
iperf3_run() {
  local key=$1 srv w bps
  lab_in_node 2 iperf3 -s -1 -B "$2" >"$RCNET_RESULTS/iperf3-server-$key.txt" 2>&1 &
  srv=$!
  # The server listens in node2's netns: lab_wait_tcp_listen looks in the
  # root namespace and would always wait its full 20 s.
  for ((w = 0; w < 200; w++)); do
    [[ -n $(lab_in_node 2 ss -Hltn 'sport = :5201' 2>/dev/null) ]] && break
    sleep 0.1
  done
  lab_in_node 1 timeout 60 iperf3 -c "$2" -B "$3" -t 8 -J >"$RCNET_RESULTS/iperf3-$key.json" 2>&1
  wait "$srv" 2>/dev/null
  bps=$(jq -r '.end.sum_received.bits_per_second // 0' "$RCNET_RESULTS/iperf3-$key.json" 2>/dev/null)
  raw "iperf3_${key}_MBps" "$(awk -v b="${bps:-0}" 'BEGIN { printf "%.2f", b / 8e6 }')"
}
# udp_stream KEY SEGMENTS: 5 s of UDP from node 1 to node 2 over rc0, as
# fast as node 1's socket takes it, each send SEGMENTS datagrams of 1,400
# bytes (a UDP GSO super-packet when > 1: rcnet-bench-udp). Received MB/s
# into raw udp_KEY_MBps; datagrams sent/received, node 1's GSO counters
# (sent whole/segmented) and its TUN reads beside it.
udp_stream() {
  local key=$1 rpid
  lab_in_node 2 "$UDPB" recv 5301 --idle-ms 3000 >"$RCNET_RESULTS/udp-recv-$key.json" 2>&1 &
  rpid=$!
  sleep 0.5
  mapfile -t g0 < <(counters 1 gso_sent gso_segmented tun_rx_packets)
  lab_in_node 1 timeout 60 "$UDPB" send 10.100.0.2 5301 --seconds 5 --segments "$2" --payload 1400 \
    >"$RCNET_RESULTS/udp-send-$key.json" 2>&1
  wait "$rpid" 2>/dev/null
  mapfile -t g1 < <(counters 1 gso_sent gso_segmented tun_rx_packets)
  raw "udp_${key}_MBps" "$(jq -r '.MBps // 0' "$RCNET_RESULTS/udp-recv-$key.json" 2>/dev/null)"
  raw "udp_${key}_sent_received" "$(jq -r .datagrams "$RCNET_RESULTS/udp-send-$key.json" 2>/dev/null)/$(jq -r .datagrams "$RCNET_RESULTS/udp-recv-$key.json" 2>/dev/null)"
  raw "udp_${key}_gso_sent_segmented_tun_reads" "$((${g1[0]:-0} - ${g0[0]:-0}))/$((${g1[1]:-0} - ${g0[1]:-0}))/$((${g1[2]:-0} - ${g0[2]:-0}))"
}
UDPB=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-udp
# start_pair MTU OFFLOAD IDLE: both rcnetd (nodes 1, 2), connected by a ping.
start_pair() {
  bench_config 1 "$1" "$3" "$2"
  bench_config 2 "$1" "$3" "$2"
  if ! { rcd_start 1 && rcd_start 2; }; then
    lab_fail "rcnetd at mtu $1 offload $2"
    rcd_stop_all
    return 1
  fi
  rcd_ping 1 2 -c 3 -W 5 >/dev/null 2>&1 || lab_fail "ping over rc0 at mtu $1 offload $2"
  lab_log "mtu $1 offload $2 idle $3: both rcnetd up, connected"
}
# A measurement must not be cut by an idle reap: idle 120 s in the data
# phases (the bench config's 3 s expired between iperf3 and the ping under
# TCG); the SIGKILL teardown phase keeps its own 3 s.
MEASURE_IDLE=120s

# PHASES "data" skips everything from here to the end of the setup/scale
# phase (not indented: it holds a heredoc and the helpers used later).
if [[ $PHASES != data && $PHASES != latency && $PHASES != udp ]]; then
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
# siw's GIDs hold the port's MAC, one per port, not one per address: no wait.
for k in "${CLIENT_NODES[@]}"; do
  [[ ${RCNET_LAB_PROVIDER:-rxe} == rxe ]] || break
  for ((w = 0; w < 60; w++)); do
    (($(gids_nonzero "rxe_$k") >= COUNT[k] + 2)) && break
    sleep 0.5
  done
  raw "gids_rxe_$k" "$(gids_nonzero "rxe_$k")"
done
lab_log "secondary addresses: ${COUNT[*]} on nodes ${CLIENT_NODES[*]}"

# storm_perf_start TAG / storm_perf_stop TAG (PROFILE "storms"): perf record
# -a -g of the whole guest (every process and the kernel: rxe and the CM run
# in kernel threads and softirqs) from the storm's launch to its last
# connection. Reports: storm-TAG-profile.txt, flat (self time) by process,
# DSO and symbol, highest first; storm-TAG-comm.txt, by process (pid:comm,
# so the ucmatose server stands apart from its clients); and
# storm-TAG-children.txt, time including callees by process and symbol
# (which system calls and kernel paths the time is under: the flat profile
# of a guest under TCG is mostly the points where interrupts are enabled).
# perf reports in the guest, against its own kernel's symbols
# (/proc/kallsyms): the guest runs the host's userland, so perf is the
# host's linux-perf, whose version is recorded beside the guest's kernel.
STORM_PERF_PID=""
storm_perf_start() {
  STORM_PERF_PID=""
  [[ $PROFILE == storms ]] || return 0
  if ! command -v perf >/dev/null; then
    lab_log "PROFILE storms: no perf in the guest (Debian: linux-perf)"
    return 0
  fi
  perf record -a -g -F 499 -e cpu-clock -o "$RCNET_RESULTS/storm-$1.perf" \
    >"$RCNET_RESULTS/storm-$1-perf-record.txt" 2>&1 &
  STORM_PERF_PID=$!
  sleep 1 # perf opens its events on every CPU before the storm starts
}
storm_perf_stop() {
  [[ -n $STORM_PERF_PID ]] || return 0
  kill -INT "$STORM_PERF_PID" 2>/dev/null
  wait "$STORM_PERF_PID"
  STORM_PERF_PID=""
  raw profile_guest_kernel "$(uname -r)"
  raw profile_perf_version "$(perf --version 2>&1 | awk '{ print $NF }')"
  local f=$RCNET_RESULTS/storm-$1.perf
  perf report -i "$f" --stdio --no-children -g none --sort comm,dso,symbol --percent-limit 0.3 2>&1 |
    awk '/^#/ || NF == 0 { print; next } { $1 = $1; sub(/ - -$/, ""); print }' \
      >"$RCNET_RESULTS/storm-$1-profile.txt"
  perf report -i "$f" --stdio --no-children -g none --sort pid >"$RCNET_RESULTS/storm-$1-comm.txt" 2>&1
  perf report -i "$f" --stdio --children -g none --sort comm,symbol --percent-limit 1 2>&1 |
    awk '/^#/ || NF == 0 { print; next } { $1 = $1; sub(/ - -$/, ""); print }' \
      >"$RCNET_RESULTS/storm-$1-children.txt"
  lab_log "whole-guest profile of the $1 storm: $RCNET_RESULTS/storm-$1-profile.txt"
}

# --- setup rate: ucmatose, N connections from the same client nodes ---------
# One server on node 1 accepting N; one client per node with its share (from
# its primary address: ucmatose needs no node id per connection), all
# started together. Output lines are timestamped. With -C 0 the server prints
# "disconnecting" once all N connections are established on its side (then
# it disconnects them): that line ends the connect phase. The clients print
# no such line ("connecting" ... "test complete" includes the teardown).
stamp() { while IFS= read -r line; do echo "$(rcd_now_ms) $line"; done; }
# stamp_until FIFO: stamp, and write a line into FIFO at the server's
# "disconnecting" (all connected), so that the profiled run can stop perf
# there without polling the output (a grep every 100 ms is a fork and an
# exec that takes CPU from the storm in a 2-vCPU guest).
stamp_until() {
  while IFS= read -r line; do
    echo "$(rcd_now_ms) $line"
    if [[ $line == *disconnecting* ]]; then echo "done" >"$1"; fi
  done
}
# The FIFOs live in the guest's own file system: the results folder is a 9p
# share, where mkfifo fails (ENXIO).
FIFO_DIR=$(mktemp -d /run/rcnet-bench.XXXXXX) || lab_die "mktemp -d /run/rcnet-bench.XXXXXX"
# ucm_storm KEY [PROFILE_TAG]: one ucmatose storm; raw keys KEY_*, output
# files ucm-*.txt (KEY ucmatose) or KEY-*.txt; perf record -a over it as
# PROFILE_TAG when PROFILE is "storms".
ucm_storm() {
  local key=$1 tag=${2:-} pre=$1 srv done_fifo done_fd t0 t1 rc k p conn_end ucm_start
  local -a ucm_pids=()
  [[ $key == ucmatose ]] && pre=ucm
  done_fifo=$FIFO_DIR/$key-done
  rm -f "$done_fifo"
  if ! mkfifo "$done_fifo"; then
    lab_fail "mkfifo $done_fifo"
    return 1
  fi
  exec {done_fd}<>"$done_fifo"
  ("${LAB_TOOL_ENV[@]}" timeout -k 5 300 stdbuf -oL ucmatose -b 10.99.0.1 -c "$N" -C 0 2>&1 | stamp_until "$done_fifo" >"$RCNET_RESULTS/$pre-server.txt") &
  srv=$!
  if ! lab_wait_listen 10.99.0.1 7471 30 >>"$RCNET_RESULTS/$pre-wait.txt"; then
    lab_fail "ucmatose server ($key) did not listen"
    kill "$srv" 2>/dev/null
    exec {done_fd}>&-
    return 1
  fi
  netsnap "$pre-before"
  [[ -n $tag ]] && storm_perf_start "$tag"
  t0=$(rcd_now_ms)
  for k in "${CLIENT_NODES[@]}"; do
    ("${LAB_TOOL_ENV[@]}" timeout -k 5 300 stdbuf -oL ucmatose -s 10.99.0.1 -b "10.99.0.$k" -c "${COUNT[k]}" -C 0 2>&1 |
      stamp >"$RCNET_RESULTS/$pre-client-$k.txt") &
    ucm_pids+=($!)
  done
  if [[ -n $tag && -n $STORM_PERF_PID ]]; then
    # The profile covers the connect phase only: until the server has them all.
    read -r -t 300 -u "$done_fd" _ || lab_log "ucmatose server ($key) never printed 'disconnecting'"
    storm_perf_stop "$tag"
  fi
  rc=0
  for p in "${ucm_pids[@]}"; do wait "$p" || rc=1; done
  t1=$(rcd_now_ms)
  wait "$srv" || rc=1
  exec {done_fd}>&-
  conn_end=$(awk '/disconnecting/ { print $1; exit }' "$RCNET_RESULTS/$pre-server.txt")
  raw "${key}_total_ms" $((t1 - t0))
  # Start: the first client's "connecting" line (its ids exist; it resolves
  # and connects from here; the other clients may still be starting). The
  # symmetric rcnet storm starts its clock at the same point of its clients.
  # From launch (exec, device open) is kept too.
  ucm_start=$(cat "$RCNET_RESULTS/$pre"-client-*.txt | awk '/connecting/ && (m == "" || $1 < m) { m = $1 } END { print m }')
  raw "${key}_connect_start_spread_ms" "$(cat "$RCNET_RESULTS/$pre"-client-*.txt | awk '/connecting/ { if (m == "" || $1 < m) m = $1; if ($1 > x) x = $1 } END { print x - m }')"
  if [[ $conn_end =~ ^[0-9]+$ ]]; then
    raw "${key}_connect_from_launch_ms" $((conn_end - t0))
    [[ $ucm_start =~ ^[0-9]+$ ]] && raw "${key}_connect_ms" $((conn_end - ucm_start))
  fi
  netsnap "$pre-after"
  raw "${key}_connect_hub_rnr_naks_sent" "$(hub_counter_delta "$pre-before" "$pre-after" send_rnr_err)"
  raw "${key}_connect_softnet_drops" $(($(softnet_drops) - $(awk '/^softnet_drops/ { print $2 }' "$RCNET_RESULTS/net-$pre-before.txt")))
  lab_expect "ucmatose ($key) $N connections from ${#CLIENT_NODES[@]} nodes (exit ok)" [ "$rc" -eq 0 ]
  raw "${key}_ok" $((rc == 0))
  lab_log "ucmatose ($key) done"
}
ucm_storm ucmatose

# --- setup rate, symmetric: rcnet-bench-symload into a fresh rcnetd --------
# Timed as ucmatose is, so that only the hub differs: one process per client
# node with its share of the addresses. They start resolving together on a
# go file once every one has made its ids: launched without it, the first
# client's clock ran while the others were still being loaded (a 7 MB
# binary with debug info, read over the lab's 9p root: 1.3 s from the first
# client's ids to the last's in one boot, where ucmatose's took 0.3 s), a
# cost of the client, not of the hub. Start: the go (ucmatose: the
# first client's "connecting", printed at the same point of cmatose.c, after
# its ids are made; its other clients start within
# ucmatose_connect_start_spread_ms). End: the hub's last ACCEPTING ->
# ESTABLISHED (its RTU read; ucmatose: the server's "disconnecting", once it
# has read every ESTABLISHED). The clients' own last ESTABLISHED (the REP
# read, one RTU earlier) is kept as rcnet_KEY_connect_client_end_ms. A
# failed attempt is not retried, as ucmatose's are not.
# sym_storm KEY BIN [PROFILE_TAG]: one storm into a fresh hub running the
# rcnetd BIN; raw keys rcnet_KEY_*; perf record -a over it as PROFILE_TAG
# when PROFILE is "storms".
# KEY *_auth*: the hub has [auth] mode "required" and every client proves
# the key (rcnet-bench-symload --auth-key-file), the rest as without.
sym_storm() {
  local key=$1 tag=${3:-} hub k n go last s f w est=0 ins=0 end=0 start=0 fails=0 hubcpu0 sym_done_fd
  local mark hub_est hub_end log proven=0 pend=0 p pl
  local -a sym_pids=() auth_args=() hubp=()
  # Each client writes a line here after its connect phase: the script
  # blocks in read, as it blocks in wait for ucmatose's clients.
  local done_fifo=$FIFO_DIR/$key-done
  rm -f "$done_fifo"
  if ! mkfifo "$done_fifo"; then
    lab_fail "mkfifo $done_fifo"
    return 1
  fi
  bench_config 1 65520 600s
  if [[ $key == *_auth* ]]; then
    printf '[auth]\nmode = "required"\noverlay = "bench"\nkeys = [{id = 1, file = "%s"}]\n' \
      "$AUTH_KEY" >>"$RCNET_RESULTS/node-1.toml"
    auth_args=(--auth-key-file "$AUTH_KEY" --auth-key-id 1 --auth-overlay bench)
  fi
  # The hub's log (info: a line per connection ESTABLISHED) goes to the
  # guest's own file system during the storm and is copied into the results
  # after it: on the 9p results share each line was a round trip to QEMU on
  # the hub's event loop, which ucmatose's server (a few lines in all) does
  # not pay, and which no log target of a real host costs.
  log=$FIFO_DIR/rcnetd-$key.log
  # KEY *_log9p: the log on the share as before, to measure what it cost.
  [[ $key == *_log9p ]] && log=$RCNET_RESULTS/rcnetd-$key.log
  mark=0
  if ! sym_hub_start "$2" "$log"; then
    lab_fail "hub rcnetd ($key storm, $2) did not start: $(tail -3 "$log" | tr '\n' ' ')"
    cat "$log" >>"$RCNET_RESULTS/rcnetd-1.log" 2>/dev/null
    return 1
  fi
  hub=${RCD_PID[1]}
  exec {sym_done_fd}<>"$done_fifo"
  rm -f "$RCNET_RESULTS/go-$key"
  for k in "${CLIENT_NODES[@]}"; do
    "${LAB_TOOL_ENV[@]}" timeout -k 5 300 "$SYMLOAD" --peer 10.99.0.1 --addr-file "$RCNET_RESULTS/addrs-$k.txt" \
      --go-file "$RCNET_RESULTS/go-$key" --connect-limit-s 240 --retry-count "$LOAD_RETRY" \
      --done-fifo "$done_fifo" "${auth_args[@]}" \
      --summary "$RCNET_RESULTS/$key-$k.json" >"$RCNET_RESULTS/$key-$k.txt" 2>&1 &
    sym_pids+=($!)
  done
  for k in "${CLIENT_NODES[@]}"; do
    for ((w = 0; w < 1200; w++)); do
      grep -q '^READY' "$RCNET_RESULTS/$key-$k.txt" 2>/dev/null && break
      sleep 0.25
    done
  done
  netsnap "$key-before"
  [[ -n $tag ]] && storm_perf_start "$tag"
  hubcpu0=$(cpu_ticks "$hub")
  touch "$RCNET_RESULTS/go-$key"
  for k in "${CLIENT_NODES[@]}"; do
    read -r -t 260 -u "$sym_done_fd" _ || { lab_log "a $key client never finished its connect phase"; break; }
  done
  # The hub reads the last RTUs after the clients read their REPs.
  for ((w = 0; w < 300; w++)); do
    hub_est=$(tail -n +"$((mark + 1))" "$log" | grep -c -- '-> ESTABLISHED')
    ((hub_est >= N)) && break
    sleep 0.2
  done
  [[ -n $tag ]] && storm_perf_stop "$tag"
  exec {sym_done_fd}>&-
  hub_end=$(tail -n +"$((mark + 1))" "$log" | grep -- '-> ESTABLISHED' | tail -1 | cut -d' ' -f1)
  for k in "${CLIENT_NODES[@]}"; do
    read -r n go last s < <(awk '/^ESTABLISHED/ { print $2, $9, $11, $13 }' "$RCNET_RESULTS/$key-$k.txt")
    f=$(awk '/^FAILURES/ { print $2 }' "$RCNET_RESULTS/$key-$k.txt")
    [[ ${n:-} =~ ^[0-9]+$ && ${go:-} =~ ^[0-9]+$ && ${last:-} =~ ^[0-9]+$ && ${s:-} =~ ^[0-9]+$ && ${f:-} =~ ^[0-9]+$ ]] || {
      lab_fail "rcnet-bench-symload ($key) on node$k printed no ESTABLISHED/FAILURES line"
      continue
    }
    est=$((est + n))
    ins=$((ins + s))
    fails=$((fails + f))
    ((last > end)) && end=$last
    ((start == 0 || go < start)) && start=$go
    if ((${#auth_args[@]})); then
      read -r p pl < <(awk '/^PROVEN/ { print $2, $4 }' "$RCNET_RESULTS/$key-$k.txt")
      proven=$((proven + ${p:-0}))
      ((${pl:-0} > pend)) && pend=$pl
    fi
  done
  netsnap "$key-after"
  if ((${#auth_args[@]})); then
    # The clients' proofs were acknowledged by the hub's HCA; the hub
    # verifies each in its loop: wait (10 s at most) for its counter.
    for ((w = 0; w < 50; w++)); do
      mapfile -t hubp < <(counters 1 auth_proven auth_unproven)
      [[ ${hubp[0]:-} =~ ^[0-9]+$ ]] && ((hubp[0] >= N)) && break
      sleep 0.2
    done
    raw "rcnet_${key}_clients_proven" "$proven"
    raw "rcnet_${key}_hub_auth_proven" "${hubp[0]:-?}"
    raw "rcnet_${key}_hub_auth_unproven" "${hubp[1]:-?}"
    ((pend > 0 && start > 0)) && raw "rcnet_${key}_proof_client_end_ms" $((pend - start))
    lab_expect "rcnet $key storm: the hub proved ${hubp[0]:-?} of $N connections, $proven proofs sent" \
      test "${hubp[0]:-0}" = "$N" -a "$proven" = "$N"
  fi
  raw "rcnet_${key}_rcnetd" "$2"
  raw "rcnet_${key}_hub_rnr_naks_sent" "$(hub_counter_delta "$key-before" "$key-after" send_rnr_err)"
  raw "rcnet_${key}_hub_cpu_s" "$(awk -v a="$hubcpu0" -v b="$(cpu_ticks "$hub")" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')"
  raw "rcnet_${key}_established" "$est"
  raw "rcnet_${key}_hub_established" "$hub_est"
  raw "rcnet_${key}_in_service" "$ins"
  raw "rcnet_${key}_connect_failures" "$fails"
  ((end > 0 && start > 0)) && raw "rcnet_${key}_connect_client_end_ms" $((end - start))
  if [[ -n $hub_end ]] && ((start > 0 && hub_est >= N)); then
    raw "rcnet_${key}_connect_ms" $(($(rcd_log_ms "$hub_end") - start))
  fi
  raw "rcnet_${key}_failures" "$(cat "$RCNET_RESULTS/$key"-*.txt | awk '/^FAILURES/ { for (i = 3; i <= NF; i++) printf "%s%s", sep, $i; sep = "," }')"
  "$RCTL" -s /run/rcnet/node1.sock -j stats >"$RCNET_RESULTS/hub-stats-$key.json" 2>&1 || true
  raw "rcnet_${key}_hub_qps" "$(rcd_qps 1)"
  lab_expect "rcnet $key storm: $est of $N connections ESTABLISHED ($hub_est on the hub)" [ "$est" -eq "$N" ]
  lab_expect "rcnet $key storm: $ins of $N still in service" [ "$ins" -eq "$N" ]
  lab_expect "rcnet $key storm: $fails connect failures" [ "$fails" -eq 0 ]
  lab_log "rcnet $key storm done: $est established ($hub_est on the hub), $ins in service, $fails failed"
  for k in "${sym_pids[@]}"; do kill -TERM "$k" 2>/dev/null; done
  for k in "${sym_pids[@]}"; do wait "$k"; done
  rcd_wait_qps 1 0 120 >/dev/null || lab_fail "hub QPs not all destroyed after the $key clients' DREQs"
  rcd_kill 1 TERM
  rcd_wait_exit 1 30
  unset 'RCD_PID[1]'
  [[ $key == *_log9p ]] || cat "$log" >>"$RCNET_RESULTS/rcnetd-1.log"
}
# ucm_sym_storm KEY: the symmetric clients (rcnet-bench-symload --any-rep,
# the same addresses, go file and clock) into ucmatose's server instead of
# rcnetd: the storm rcnet's is compared with, with nothing but the hub
# changed (ucmatose's own clients use one address per node: 4 source GIDs
# where rcnet's peers use 1000). End: the server's "disconnecting".
ucm_sym_storm() {
  local key=$1 srv done_fifo done_fd srv_fd k w n go last s f start=0 est=0 fails=0 conn_end
  local -a pids=()
  done_fifo=$FIFO_DIR/$key-done
  rm -f "$done_fifo" "$done_fifo-srv"
  if ! mkfifo "$done_fifo" "$done_fifo-srv"; then
    lab_fail "mkfifo $done_fifo"
    return 1
  fi
  exec {done_fd}<>"$done_fifo"
  exec {srv_fd}<>"$done_fifo-srv"
  ("${LAB_TOOL_ENV[@]}" timeout -k 5 300 stdbuf -oL ucmatose -b 10.99.0.1 -c "$N" -C 0 2>&1 | stamp_until "$done_fifo-srv" >"$RCNET_RESULTS/$key-server.txt") &
  srv=$!
  if ! lab_wait_listen 10.99.0.1 7471 30 >>"$RCNET_RESULTS/$key-wait.txt"; then
    lab_fail "ucmatose server ($key) did not listen"
    kill "$srv" 2>/dev/null
    exec {done_fd}>&- {srv_fd}>&-
    return 1
  fi
  rm -f "$RCNET_RESULTS/go-$key"
  for k in "${CLIENT_NODES[@]}"; do
    "${LAB_TOOL_ENV[@]}" timeout -k 5 300 "$SYMLOAD" --peer 10.99.0.1 --addr-file "$RCNET_RESULTS/addrs-$k.txt" \
      --go-file "$RCNET_RESULTS/go-$key" --connect-limit-s 240 --retry-count "$LOAD_RETRY" \
      --done-fifo "$done_fifo" --any-rep \
      --summary "$RCNET_RESULTS/$key-$k.json" >"$RCNET_RESULTS/$key-$k.txt" 2>&1 &
    pids+=($!)
  done
  for k in "${CLIENT_NODES[@]}"; do
    for ((w = 0; w < 1200; w++)); do
      grep -q '^READY' "$RCNET_RESULTS/$key-$k.txt" 2>/dev/null && break
      sleep 0.25
    done
  done
  touch "$RCNET_RESULTS/go-$key"
  for k in "${CLIENT_NODES[@]}"; do
    read -r -t 260 -u "$done_fd" _ || { lab_log "a $key client never finished its connect phase"; break; }
  done
  read -r -t 120 -u "$srv_fd" _ || lab_log "ucmatose server ($key) never printed 'disconnecting'"
  # The server disconnects every connection after "disconnecting"; the
  # clients answer and then stop.
  for k in "${pids[@]}"; do kill -TERM "$k" 2>/dev/null; done
  for k in "${pids[@]}"; do wait "$k"; done
  wait "$srv"
  exec {done_fd}>&- {srv_fd}>&-
  for k in "${CLIENT_NODES[@]}"; do
    read -r n go last s < <(awk '/^ESTABLISHED/ { print $2, $9, $11, $13 }' "$RCNET_RESULTS/$key-$k.txt")
    f=$(awk '/^FAILURES/ { print $2 }' "$RCNET_RESULTS/$key-$k.txt")
    [[ ${n:-} =~ ^[0-9]+$ && ${go:-} =~ ^[0-9]+$ && ${f:-} =~ ^[0-9]+$ ]] || continue
    est=$((est + n))
    fails=$((fails + f))
    ((start == 0 || go < start)) && start=$go
  done
  conn_end=$(awk '/disconnecting/ { print $1; exit }' "$RCNET_RESULTS/$key-server.txt")
  raw "${key}_established" "$est"
  raw "${key}_connect_failures" "$fails"
  [[ $conn_end =~ ^[0-9]+$ ]] && ((start > 0)) && raw "${key}_connect_ms" $((conn_end - start))
  lab_expect "ucmatose server ($key): $est of $N from the symmetric clients, $fails failed" [ "$est" -eq "$N" ]
  lab_log "ucmatose server with the symmetric clients ($key) done: $est established, $fails failed"
}
# sym_hub_start BIN LOG: rcnetd BIN for node 1 (node-1.toml) with its
# stderr in LOG, as rcd_start does it with the results folder's log; waits
# for its TUN (30 s). Sets RCD_PID[1].
sym_hub_start() {
  local k
  mkdir -p /run/rcnet
  "$1" -c "$RCNET_RESULTS/node-1.toml" >"$2" 2>&1 &
  RCD_PID[1]=$!
  for ((k = 0; k < 300; k++)); do
    grep -q "TUN rc0 up" "$2" 2>/dev/null && return 0
    kill -0 "${RCD_PID[1]}" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
if [[ ! -x $SYMLOAD ]]; then
  lab_fail "no $SYMLOAD (ninja -C BUILD tools/bench/rcnet-bench-symload)"
else
  # The key every hub and client with peer proofs holds (sym_storm *_auth*).
  AUTH_KEY=$FIFO_DIR/bench.key
  (umask 077 && head -c 32 /dev/urandom | base64 >"$AUTH_KEY")
  sym_storm sym "$RCD_BIN"
  sym_storm sym_auth "$RCD_BIN"
  # SETUP_REPEAT (ARG 7) > 1: that many triples of storms in all, ucmatose,
  # rcnet and rcnet with peer proofs, each taking each place in turn, so
  # that the host's load on the guest (it varies by 2x from one storm to
  # the next) shows as the spread of the triples, and the table takes
  # medians.
  for ((r = 2; r <= SETUP_REPEAT; r++)); do
    case $((r % 3)) in
      0)
        sym_storm "sym_r$r" "$RCD_BIN"
        sym_storm "sym_auth_r$r" "$RCD_BIN"
        ucm_storm "ucmatose_r$r"
        ;;
      1)
        ucm_storm "ucmatose_r$r"
        sym_storm "sym_r$r" "$RCD_BIN"
        sym_storm "sym_auth_r$r" "$RCD_BIN"
        ;;
      *)
        sym_storm "sym_auth_r$r" "$RCD_BIN"
        ucm_storm "ucmatose_r$r"
        sym_storm "sym_r$r" "$RCD_BIN"
        ;;
    esac
  done
  # The same clients into ucmatose's server, beside the rcnet storm before.
  ucm_sym_storm ucmatose_symclient
  # With pairs repeated, one more rcnet storm with the hub's log on the 9p
  # results share (where every run logged before), for its cost.
  ((SETUP_REPEAT > 1)) && sym_storm sym_log9p "$RCD_BIN"
  # A second rcnetd (ARG 6): the same storm again with it, in this boot,
  # then the first once more (A B A), so that a drift of the guest over the
  # runs shows as a difference between the two A runs.
  if [[ -n $RCD_BIN_B ]]; then
    sym_storm sym_b "$RCD_BIN_B"
    sym_storm sym_a2 "$RCD_BIN"
  fi
  # PROFILE "storms": one more pair, profiled, after the measured ones
  # (sampling slows the guest: its times, raw keys *_prof_*, are not rows).
  if [[ $PROFILE == storms ]]; then
    ucm_storm ucmatose_prof ucmatose
    sym_storm sym_prof "$RCD_BIN" rcnet
  fi
fi

# --- setup rate + scale: N rcnet connections into one rcnetd ---------------
# rcnet-bench-load: one cm::Manager per address (the asymmetric figure kept
# beside the symmetric one), and the connections of the idle-scale phase.
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
  perf_pid=""
  if [[ $PROFILE == hub ]]; then
    if command -v perf >/dev/null; then
      perf record -F 499 -e cpu-clock -p "$hub" -o "$RCNET_RESULTS/hub.perf" \
        >"$RCNET_RESULTS/hub-perf-record.txt" 2>&1 &
      perf_pid=$!
    else
      lab_log "--profile-hub: no perf on this machine (Debian: linux-perf)"
    fi
  fi
  netsnap rcnet-before
  drops0=$(softnet_drops) rxefail0=$(rxe_send_failures)
  # Who is busy while the storm runs: the hub's and each load generator's
  # CPU time over the connect phase, beside its wall time.
  hubcpu0=$(cpu_ticks "$hub")
  loadcpu0=()
  for p in "${load_pids[@]}"; do loadcpu0+=("$(cpu_ticks "$p")"); done
  touch "$RCNET_RESULTS/go"
  for k in "${CLIENT_NODES[@]}"; do
    for ((w = 0; w < 2400; w++)); do
      grep -q '^ESTABLISHED' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
      sleep 0.1
    done
  done
  if [[ -n $perf_pid ]]; then
    kill -INT "$perf_pid" 2>/dev/null
    wait "$perf_pid"
    perf report -i "$RCNET_RESULTS/hub.perf" --stdio --no-children --sort dso,symbol \
      --percent-limit 0.5 >"$RCNET_RESULTS/hub-profile.txt" 2>&1
    lab_log "hub profile of the connect phase: $RCNET_RESULTS/hub-profile.txt"
  fi
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
  raw connect_softnet_drops $(($(softnet_drops) - drops0))
  netsnap rcnet-after
  raw connect_hub_rnr_naks_sent "$(hub_counter_delta rcnet-before rcnet-after send_rnr_err)"
  raw connect_hub_cpu_s "$(awk -v a="$hubcpu0" -v b="$(cpu_ticks "$hub")" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')"
  lc=""
  for i in "${!load_pids[@]}"; do
    c1=$(cpu_ticks "${load_pids[$i]}" 2>/dev/null || echo "${loadcpu0[$i]}")
    lc+="${lc:+,}$(awk -v a="${loadcpu0[$i]}" -v b="$c1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')"
  done
  raw connect_load_cpu_s "$lc"
  raw connect_rxe_send_failures $(($(rxe_send_failures) - rxefail0))
  "$RCTL" -s /run/rcnet/node1.sock -j stats >"$RCNET_RESULTS/hub-stats-connected.json" 2>&1 || true
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
  # idle 600 s: nothing may have been reaped while the idle figures ran.
  raw reaped_during_idle_scale "$(reaps 1)"
  lab_expect "hub: no connection reaped during the connect and idle phases ($(reaps 1))" [ "$(reaps 1)" = 0 ]
  rdma res show mr dev "$HUB_DEV" >"$RCNET_RESULTS/hub-mr.txt" 2>&1
  raw hub_registered_bytes "$(awk '{ for (i = 1; i < NF; i++) if ($i == "mrlen") s += $(i + 1) } END { print s + 0 }' "$RCNET_RESULTS/hub-mr.txt")"
  # Teardown of all N from the clients' side (DREQ each), timed by them.
  t0=$(rcd_now_ms)
  for p in "${load_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${load_pids[@]}"; do wait "$p"; done
  rcd_wait_qps 1 0 120 >/dev/null || lab_fail "hub QPs not all destroyed after the clients' DREQs"
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
fi # PHASES != data && PHASES != latency && PHASES != udp

# --- underlay reference: a veth pair per node netns on the same bridge ------
# The node addresses 10.99.0.i live in one namespace, where a reply to a
# local address is delivered over lo; these ul_i (10.98.0.i, in netns node<i>)
# cross veth + bridge in both directions, as rc0's traffic does under rxe.
if [[ $PHASES != setup && $PHASES != udp ]]; then
  for k in 1 2; do
    if ! { ip link add "ul_$k" type veth peer name "ulb_$k" &&
      ip link set "ulb_$k" master rcbr0 && ip link set "ulb_$k" up &&
      ip link set "ul_$k" netns "node$k" &&
      ip -n "node$k" addr add "10.98.0.$k/24" dev "ul_$k" &&
      ip -n "node$k" link set "ul_$k" up; }; then
      lab_fail "underlay reference veth ul_$k"
    fi
  done
  lab_in_node 1 ping -n -q -c 3 -W 5 10.98.0.2 >/dev/null 2>&1 || lab_fail "ping over the underlay reference veth"
  lab_in_node 1 ping -n -A -c 200 -W 5 10.98.0.2 >"$RCNET_RESULTS/ping-underlay-A.txt" 2>&1
  read -r med mn cnt < <(rtt_stats "$RCNET_RESULTS/ping-underlay-A.txt")
  raw ping_underlay_A_median_ms "${med:-}"
  raw ping_underlay_A_min_ms "${mn:-}"
  raw ping_underlay_A_count "${cnt:-0}"
  udp_rr underlay 10.98.0.1 10.98.0.2
  [[ $PHASES == latency ]] || iperf3_run underlay 10.98.0.2 10.98.0.1
  lab_log "underlay reference done (ping -A, UDP RR, iperf3)"
fi

# --- throughput (iperf3 TCP over rc0): MTU x offload ------------------------
LOG1=$RCNET_RESULTS/rcnetd-1.log
MTUS=(1500 9000 65520)
OFFLOADS=(true false)
[[ $PHASES != setup ]] || MTUS=()
if [[ $PHASES == latency ]]; then
  MTUS=(65520)
  OFFLOADS=(true)
fi
if [[ $PHASES == udp ]]; then
  MTUS=(1500)
  OFFLOADS=(true)
fi
for mtu in "${MTUS[@]}"; do
  for off in "${OFFLOADS[@]}"; do
    start_pair "$mtu" "$off" "$MEASURE_IDLE" || continue
    key=mtu${mtu}_offload_$off
    if [[ $mtu == 1500 && $off == true && $PHASES != latency ]]; then
      # --- a UDP stream with and without UDP GSO (USO: Linux 6.2+) --------
      # The same sender over the same connection, one datagram per send as
      # the anchor: where rc0 grants USO a super-packet crosses as one SEND.
      if [[ -x $UDPB ]]; then
        grep -m1 'TUN rc0 up' "$LOG1" | grep -q 'uso4 uso6' && raw udp_rc0_uso 1 || raw udp_rc0_uso 0
        # As many datagrams per send as rc0's gso_max_segs (rcnetd: the send
        # queue's depth - 2): the kernel cuts a larger super-packet itself.
        segs=$(lab_in_node 1 ip -d link show rc0 | grep -o 'gso_max_segs [0-9]*' | awk '{ print $2 }')
        segs=${segs:-20}
        ((segs <= 44)) || segs=44
        raw udp_rc0_gso_segments "$segs"
        measure_begin
        udp_stream rc0_gso "$segs"
        udp_stream rc0_plain 1
        measure_end "UDP stream over rc0, with and without GSO" udp
        lab_log "UDP over rc0: GSO ($segs per send) $(awk '$1 == "udp_rc0_gso_MBps" { print $2 }' "$RAW") MB/s, plain $(awk '$1 == "udp_rc0_plain_MBps" { print $2 }' "$RAW") MB/s"
      else
        lab_log "no $UDPB: no UDP rows"
      fi
    fi
    if [[ $PHASES != latency && $PHASES != udp ]]; then
      measure_begin
      s0=$(awk '/^cpu / { print $2 + $3, $4, $5, $7 + $8 }' /proc/stat)
      r0=$(cpu_ticks "${RCD_PID[1]}")
      r20=$(cpu_ticks "${RCD_PID[2]}")
      netsnap "iperf-$key-before"
      rf0=$(rxe_send_failures)
      mapfile -t b0 < <(counters 1 packets_tx send_doorbells)
      iperf3_run "$key" 10.100.0.2 10.100.0.1
      mapfile -t b1 < <(counters 1 packets_tx send_doorbells)
      netsnap "iperf-$key-after"
      # Losses under the run: frames the guest's input backlog dropped,
      # rxe's sends that failed on it, and the sender's RC retransmissions
      # (rxe's completer_retry_err: an ACK timeout ran out). A retry
      # exceeded reaps the peer (measure_end then fails the window).
      sd=$(($(awk '/^softnet_drops/ { print $2 }' "$RCNET_RESULTS/net-iperf-$key-after.txt") - $(awk '/^softnet_drops/ { print $2 }' "$RCNET_RESULTS/net-iperf-$key-before.txt")))
      cr=$(hub_counter_delta "iperf-$key-before" "iperf-$key-after" completer_retry_err)
      raw "loss_${key}_softnet_drops_rxe_send_failures_retries" "$sd/$(($(rxe_send_failures) - rf0))/$cr"
      r1=$(cpu_ticks "${RCD_PID[1]}")
      r21=$(cpu_ticks "${RCD_PID[2]}")
      s1=$(awk '/^cpu / { print $2 + $3, $4, $5, $7 + $8 }' /proc/stat)
      measure_end "iperf3 mtu $mtu offload $off" "iperf3_$key"
      # top-style CPU split over the run: user, system, idle, irq+softirq (ticks)
      # of the guest, and each rcnetd's own utime+stime.
      raw "cpu_${key}_guest_user_sys_idle_irq" "$(paste -d' ' <(echo "$s0") <(echo "$s1") | awk '{ printf "%d/%d/%d/%d", $5 - $1, $6 - $2, $7 - $3, $8 - $4 }')"
      raw "cpu_${key}_rcnetd_sender_receiver_ticks" "$((r1 - r0))/$((r21 - r20))"
      mapfile -t g < <(counters 1 gso_sent gso_segmented)
      raw "gso_${key}_sent_segmented" "${g[0]:-}/${g[1]:-}"
      # Doorbell batching: data SENDs and ibv_post_send calls of the iperf3
      # client's daemon over the run (one chain per peer per TUN wakeup).
      raw "doorbells_${key}_sends_calls" "$((${b1[0]:-0} - ${b0[0]:-0}))/$((${b1[1]:-0} - ${b0[1]:-0}))"
      lab_log "mtu $mtu offload $off: iperf3 $(awk -v k="iperf3_${key}_MBps" '$1 == k { print $2 }' "$RAW") MB/s"
      if [[ $mtu == 1500 && $off == true ]]; then
        # Reference, not a default: the sender's TCP sizes its super-packets
        # to about 1 ms at its pacing rate (tcp_tso_autosize), so at MTU 1500
        # a slow guest gets small ones and the row is per-SEND bound. The same
        # run with net.ipv4.tcp_min_tso_segs = 44 (64 KiB of 1448-byte
        # segments) in node1's netns shows how much of the gap that is.
        mins=$(lab_in_node 1 sysctl -n net.ipv4.tcp_min_tso_segs 2>/dev/null)
        if lab_in_node 1 sysctl -qw net.ipv4.tcp_min_tso_segs=44 2>/dev/null; then
          rkey=${key}_min_tso_segs_44
          measure_begin
          mapfile -t b0 < <(counters 1 packets_tx send_doorbells)
          iperf3_run "$rkey" 10.100.0.2 10.100.0.1
          mapfile -t b1 < <(counters 1 packets_tx send_doorbells)
          measure_end "iperf3 mtu $mtu offload $off tcp_min_tso_segs 44" "iperf3_$rkey"
          raw "doorbells_${rkey}_sends_calls" "$((${b1[0]:-0} - ${b0[0]:-0}))/$((${b1[1]:-0} - ${b0[1]:-0}))"
          lab_in_node 1 sysctl -qw "net.ipv4.tcp_min_tso_segs=${mins:-2}"
        else
          lab_log "net.ipv4.tcp_min_tso_segs not settable in node1's netns: no reference run"
        fi
      fi
    fi
    if [[ $mtu == 65520 && $off == true && $PHASES != udp ]]; then
      # --- latency over rc0: warm (ping -A, the goal row), cold (-i 0.2) ---
      measure_begin
      rcd_ping 1 2 -A -c 50 -W 5 >/dev/null 2>&1 # warm-up: the same load as measured
      lab_in_node 1 ping -n -A -c 200 -W 5 10.100.0.2 >"$RCNET_RESULTS/ping-rc0-A.txt" 2>&1
      read -r med mn cnt < <(rtt_stats "$RCNET_RESULTS/ping-rc0-A.txt")
      raw ping_rc0_A_median_ms "${med:-}"
      raw ping_rc0_A_min_ms "${mn:-}"
      raw ping_rc0_A_count "${cnt:-0}"
      lab_in_node 1 ping -n -i 0.2 -c 50 -W 5 10.100.0.2 >"$RCNET_RESULTS/ping-rc0-cold.txt" 2>&1
      read -r med mn cnt < <(rtt_stats "$RCNET_RESULTS/ping-rc0-cold.txt")
      raw ping_rc0_cold_median_ms "${med:-}"
      raw ping_rc0_cold_min_ms "${mn:-}"
      raw ping_rc0_cold_count "${cnt:-0}"
      udp_rr rc0 10.100.0.1 10.100.0.2
      measure_end "latency (ping -A, ping -i 0.2, UDP RR) over rc0" latency
      lab_log "latency over rc0 done"

      # --- syscalls per forwarded packet per daemon, low load -------------
      # strace -c on both daemons while ping -A -c 200 runs; packets are the
      # daemon's TUN reads + writes over the same window (its counters).
      measure_begin
      declare -A tun0=() spid=()
      for n in 1 2; do
        mapfile -t c < <(counters "$n" tun_rx_packets tun_tx_packets)
        tun0[$n]=$((${c[0]:-0} + ${c[1]:-0}))
        strace -f -c -p "${RCD_PID[$n]}" -o "$RCNET_RESULTS/strace-node$n.txt" 2>/dev/null &
        spid[$n]=$!
      done
      sleep 3 # strace attaches (slow under TCG) before the first packet
      lab_in_node 1 ping -n -q -A -c 200 -W 5 10.100.0.2 >"$RCNET_RESULTS/ping-strace.txt" 2>&1
      for n in 1 2; do kill -INT "${spid[$n]}" 2>/dev/null; done
      for n in 1 2; do wait "${spid[$n]}" 2>/dev/null; done
      for n in 1 2; do
        mapfile -t c < <(counters "$n" tun_rx_packets tun_tx_packets)
        pk=$((${c[0]:-0} + ${c[1]:-0} - tun0[$n]))
        calls=$(awk '$NF == "total" { print $4 }' "$RCNET_RESULTS/strace-node$n.txt")
        raw "strace_node${n}_syscalls" "${calls:-}"
        raw "strace_node${n}_tun_packets" "$pk"
        # top syscalls by count: "name:count,..."
        raw "strace_node${n}_top" "$(awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $4, $NF }' "$RCNET_RESULTS/strace-node$n.txt" |
          sort -rn | head -6 | awk '{ printf "%s%s:%s", sep, $2, $1; sep = "," }')"
      done
      measure_end "syscall count (strace, ping -A -c 200)" strace
      lab_log "syscall count done"
    fi
    rcd_stop_all
  done
done

# --- teardown (own config: idle 3 s, the SIGKILL path is an idle reap) -------
if [[ $PHASES != setup && $PHASES != latency && $PHASES != udp ]] && start_pair 65520 true 3s; then
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
    # Sum of the teardown stages' durations of the QP torn down, and the
    # path: last_wqe (Last WQE Reached came), fallback (last_wqe_timeout),
    # skipped (ERROR -> DRAINING: the device has no such event).
    awk -v f="$f" '
      / -> / && /QPN/ {
        for (i = 1; i <= NF; i++) if ($i == "->") { from = $(i - 1); to = $(i + 1); ms = $(i + 3) }
        if (from ~ /^(DISCONNECTING|ERROR|AWAIT_LAST_WQE|DRAINING)$/) { tot += ms; st[from] += ms }
      }
      /no Last WQE Reached/ { fb = 1 }
      / ERROR -> DRAINING / { sk = 1 }  # no wait at all (iWARP: no Last WQE Reached)
      END { printf "teardown_%s_total_ms %.1f\nteardown_%s_path %s\n", f, tot, f, fb ? "fallback" : sk ? "skipped" : "last_wqe"
            printf "teardown_%s_stages_ms DISCONNECTING=%.1f,ERROR=%.1f,AWAIT_LAST_WQE=%.1f,DRAINING=%.1f\n", f, st["DISCONNECTING"], st["ERROR"], st["AWAIT_LAST_WQE"], st["DRAINING"] }' \
      "$RCNET_RESULTS/teardown-$f.log" >>"$RAW"
  done
  raw teardown_bound_ms 3000
  rcd_stop_all
fi
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
echo "bench-raw.txt:"
cat "$RAW"
lab_finish
