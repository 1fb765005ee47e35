#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Diagnosis for the benchmark's load generator (not part of the benchmark):
# how many GIDs an rxe port holds, how many a secondary IPv4 address adds,
# and which kernel function returns the error when many rdma_connect calls
# from secondary addresses fail (kretprobes on the rdma_cm/ib_cm path).
#   ARGS: [PER_NODE [CLIENT_NODES [EXTRA]]] (default 300 addresses on each of
#   nodes 2..CLIENT_NODES+1, hub node 1; EXTRA addresses added afterwards on
#   node 2 to find where its GID table stops growing)
set -u -o pipefail
. "$RCNET_LAB_LIB"

PER=${1:-300}
NCLIENT=${2:-2}
EXTRA=${3:-800}
LOAD=$RCNET_BUILD_DIR/tools/bench/rcnet-bench-load
RCD_BIN=$RCNET_BUILD_DIR/daemon/rcnetd
NODES=$((NCLIENT + 1))
lab_setup_nodes "$NODES" || lab_die "node setup"

gid_count() { # DEV -> "entries nonzero roce_v2"
  local d=/sys/class/infiniband/$1/ports/1 e=0 nz=0 v2=0 i g t
  for g in "$d"/gids/*; do
    e=$((e + 1))
    i=${g##*/}
    read -r g <"$g" 2>/dev/null || continue
    [[ $g == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
    nz=$((nz + 1))
    read -r t <"$d/gid_attrs/types/$i" 2>/dev/null && [[ $t == "RoCE v2" ]] && v2=$((v2 + 1))
  done
  echo "$e $nz $v2"
}
wait_gids() { # DEV SECS: until the port's GID count is the same 1 s apart
  local k c prev=""
  for ((k = 0; k < $2; k++)); do
    c=$(gid_count "$1")
    [[ $c == "$prev" ]] && break
    prev=$c
    sleep 1
  done
  echo "$c"
}

for ((k = 2; k <= NODES; k++)); do
  lab_log "rxe_$k before secondary addresses (entries nonzero v2): $(gid_count "rxe_$k")"
done

# kretprobes: the first function on the connect path that returns an error.
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" 2>/dev/null
probes=()
if [[ -w $T/kprobe_events ]]; then
  for f in ucma_connect rdma_connect_ece rdma_connect_locked cma_connect_ib ib_send_cm_req \
    cm_init_av_by_path ib_init_ah_attr_from_path roce_resolve_route_from_path \
    ib_post_send_mad cma_resolve_iboe_route rdma_resolve_route rdma_resolve_addr; do
    grep -qP " \\Q$f\\E(\\s|$)" /proc/kallsyms || continue
    echo "r:rc_$f $f ret=\$retval:s32" >>"$T/kprobe_events" 2>/dev/null || continue
    echo 'ret != 0' >"$T/events/kprobes/rc_$f/filter"
    probes+=("$f")
  done
  ((${#probes[@]})) && echo 1 >"$T/events/kprobes/enable"
  echo 8192 >"$T/buffer_size_kb"
  lab_log "kretprobes on: ${probes[*]}"
else
  lab_log "no tracefs kprobe_events"
fi

# Secondary addresses, as the benchmark adds them (one /32 per connection).
for ((k = 2; k <= NODES; k++)); do
  mac=$(cat "/sys/class/net/v_$k/address")
  : >"$RCNET_RESULTS/addrs-$k.txt"
  {
    echo "route add 10.99.$((10 + k)).0/24 dev v_1 src 10.99.0.1 table 101"
    echo "route add 10.99.$((20 + k)).0/24 dev v_1 src 10.99.0.1 table 101"
    for ((j = 1; j <= PER; j++)); do
      a=10.99.$((10 + k)).$j
      ((j > 250)) && a=10.99.$((20 + k)).$((j - 250))
      echo "$a" >>"$RCNET_RESULTS/addrs-$k.txt"
      echo "addr add $a/32 dev v_$k"
      echo "neigh replace $a lladdr $mac dev v_1 nud permanent"
    done
  } >"$RCNET_RESULTS/addrs-$k.ip"
  t0=${EPOCHREALTIME/[.,]/}000
  ip -batch "$RCNET_RESULTS/addrs-$k.ip" || lab_fail "secondary addresses on node$k"
  lab_log "rxe_$k after $PER addresses: $(wait_gids "rxe_$k" 20) ($(((${EPOCHREALTIME/[.,]/}000 - t0) / 1000000)) ms)"
done

cat >"$RCNET_RESULTS/node-1.toml" <<EOF
[node]
address = "10.99.0.1"
[tun]
address = "10.100.0.1/24"
netns = "node1"
mtu = 65520
[peers]
underlay_prefix = "10.99.0.0/24"
[timeouts]
idle = "600s"
[log]
level = "info"
target = "stderr"
[ctl]
socket = "/run/rcnet/node1.sock"
group = "root"
EOF
mkdir -p /run/rcnet
"$RCD_BIN" -c "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/rcnetd-1.log" 2>&1 &
hub=$!
for ((w = 0; w < 300; w++)); do
  grep -q "TUN rc0 up" "$RCNET_RESULTS/rcnetd-1.log" && break
  sleep 0.1
done
rm -f "$RCNET_RESULTS/go"
pids=()
for ((k = 2; k <= NODES; k++)); do
  "$LOAD" --peer 10.99.0.1 --addr-file "$RCNET_RESULTS/addrs-$k.txt" --go-file "$RCNET_RESULTS/go" \
    --connect-limit-s 90 --log-level info --summary "$RCNET_RESULTS/load-$k.json" \
    >"$RCNET_RESULTS/load-$k.txt" 2>&1 &
  pids+=($!)
done
for ((k = 2; k <= NODES; k++)); do
  for ((w = 0; w < 1200; w++)); do
    grep -q '^READY' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
    sleep 0.25
  done
done
touch "$RCNET_RESULTS/go"
for ((k = 2; k <= NODES; k++)); do
  for ((w = 0; w < 1200; w++)); do
    grep -q '^NEVER' "$RCNET_RESULTS/load-$k.txt" 2>/dev/null && break
    sleep 0.1
  done
  grep -E '^(READY|ESTABLISHED|STATES|NEVER)' "$RCNET_RESULTS/load-$k.txt"
done
lab_log "hub QPs: $(lab_qp_count rxe_1)"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${pids[@]}"; do wait "$p"; done
kill -TERM "$hub"
wait "$hub"
if ((${#probes[@]})); then
  echo 0 >"$T/events/kprobes/enable"
  cp "$T/trace" "$RCNET_RESULTS/kretprobes.txt"
  lab_log "kretprobe hits (ret != 0) by function and value:"
  grep -o 'rc_[a-z_]*: ([^)]*) ret=-\?[0-9]*' "$RCNET_RESULTS/kretprobes.txt" |
    sed 's/: ([^)]*)//' | sort | uniq -c
fi
for ((k = 2; k <= NODES; k++)); do
  sed 's/^\[[^]]*\] //; s/[0-9]\{1,3\}\.[0-9]\{1,3\}\.[0-9]\{1,3\}\.[0-9]\{1,3\}/IP/g; s/[0-9][0-9]*/N/g' \
    "$RCNET_RESULTS/load-$k.txt" | sort | uniq -c | sort -rn | head -25
done

# Table size: keep adding addresses on node 2 until the GID count stops.
if ((EXTRA > 0)); then
  {
    for ((j = 1; j <= EXTRA; j++)); do
      echo "addr add 10.98.$((j / 250)).$((j % 250 + 1))/32 dev v_2"
    done
  } >"$RCNET_RESULTS/extra.ip"
  ip -batch "$RCNET_RESULTS/extra.ip" || lab_fail "extra addresses"
  lab_log "rxe_2 after $((PER + EXTRA)) addresses: $(wait_gids rxe_2 30)"
  dmesg | grep -iE 'gid|rxe|infiniband' | tail -20
fi
lab_expect "probe ran" true
lab_finish
