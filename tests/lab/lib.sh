# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# tests/lab/lib.sh: the scenario library of the rcnet Soft-RoCE lab.
# Sourced by every scenario inside the guest booted by tools/lab/rcnet-lab:
#
#   . "$RCNET_LAB_LIB"        # (the driver sets it to this file's path)
#
# The names below are a stable API: scenarios in tests/lab/{real,daemon,bench}
# call them. Add to it; do not rename or change the meaning of what is here.
#
# Topology (LAB.md "Several nodes in one guest": rxe does not work across
# network namespaces, so all rxe devices share the root namespace and policy
# routing makes each node's traffic leave through its own veth):
#   lab_setup_nodes [N]       N (2..32, default $RCNET_LAB_NODES) nodes: bridge
#                             rcbr0; per node i veth v_i (10.99.0.i/24, rxe
#                             device rxe_i) <-> b_i (on the bridge); sysctls,
#                             policy routing, warm ARP; a netns "node<i>" (lo
#                             up) for the node's IP-level interfaces (rcnet
#                             TUN). Returns non-zero, with a message, on failure.
#   lab_node_addr I           10.99.0.I (the node's underlay/rdma_cm address)
#   lab_node_dev I            v_I (the node's underlay netdev)
#   lab_node_rdma_dev I       rxe_I (the node's RDMA device)
#   lab_node_netns I          node<I> (the node's network namespace)
#   lab_in_node I CMD...      run CMD inside node I's namespace
#
# Checks and reporting (every check prints one "LAB PASS:"/"LAB FAIL:" line):
#   lab_log MSG...            timestamped progress line
#   lab_fail MSG...           report a failure and count it; returns 1
#   lab_die MSG...            report a failure, collect state, exit 1
#   lab_check DESC CMD...     run CMD under lab_timeout $LAB_CMD_TIMEOUT;
#                             PASS/FAIL line with DESC; returns CMD's status
#   lab_expect DESC COND...   like lab_check for a test expression, e.g.
#                             lab_expect "3 QPs" [ "$n" -eq 3 ]
#   lab_finish                print the summary and exit 0 (all passed) or 1
#   lab_timeout SECS CMD...   run CMD, killed after SECS (then SIGKILL 5 s
#                             later); reports which command timed out; 124
#
# RDMA helpers:
#   lab_wait_listen ADDR PORT [SECS]   wait until an rdma_cm id listens on
#                             ADDR:PORT (from `rdma res show cm_id`)
#   lab_rping FROM TO [COUNT] [PORT]   rping server bound on node TO, client
#                             on node FROM bound with -I; COUNT verified
#                             iterations (default 5). Output in
#                             $RCNET_RESULTS/rping-FROM-TO.{client,server}.txt
#   lab_collect NAME          `rdma res show qp` (text and -j), `rdma res show
#                             cm_id`, `rdma link` into $RCNET_RESULTS/NAME-*.txt
#   lab_qp_count [DEV]        number of QPs (excluding QP0/QP1) the kernel
#                             reports, for DEV or all devices
#   lab_perf_anchors FROM TO [OUT]     rdma-core/perftest reference figures
#                             between two nodes, written as JSON to OUT
#                             (default $RCNET_RESULTS/anchors.json); see below
#
# Environment set by the driver: RCNET_LAB_NODES, RCNET_RESULTS (writable,
# copied back to the host), RCNET_SRC (source tree, read-only), RCNET_BUILD_DIR
# (when the caller set it), RCNET_LAB_MODTREE (kernel module tree for
# modprobe -d), RCNET_LAB_LIB (this file).
#
# Every rdma_cm user must bind its source address (rping -I, ucmatose -b,
# perftest --source_ip): an unbound connect loops back on the local device.

: "${RCNET_RESULTS:=/tmp}"
: "${RCNET_LAB_NODES:=2}"
: "${LAB_CMD_TIMEOUT:=60}"
LAB_BRIDGE=rcbr0
LAB_FAILURES=0
LAB_CHECKS=0
LAB_FAILED_LIST=()
LAB_T0=$(date +%s%N)

lab_log() {
  local d=$(($(date +%s%N) - LAB_T0))
  printf '[lab %4d.%03d] %s\n' $((d / 1000000000)) $((d % 1000000000 / 1000000)) "$*"
}

lab_fail() {
  LAB_FAILURES=$((LAB_FAILURES + 1))
  LAB_CHECKS=$((LAB_CHECKS + 1))
  LAB_FAILED_LIST+=("$*")
  echo "LAB FAIL: $*"
  return 1
}

lab_pass() {
  LAB_CHECKS=$((LAB_CHECKS + 1))
  echo "LAB PASS: $*"
}

lab_die() {
  lab_fail "$@"
  lab_collect failure >/dev/null 2>&1
  lab_finish
}

lab_timeout() {
  local secs=$1 rc=0
  shift
  timeout -k 5 "$secs" "$@" || rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "LAB TIMEOUT: after ${secs}s: $*"
    return 124
  fi
  return "$rc"
}

lab_check() {
  local desc=$1 rc=0
  shift
  lab_timeout "$LAB_CMD_TIMEOUT" "$@" || rc=$?
  if ((rc == 0)); then
    lab_pass "$desc"
  else
    lab_fail "$desc (exit $rc: $*)"
  fi
  return "$rc"
}

lab_expect() {
  local desc=$1
  shift
  if "$@"; then
    lab_pass "$desc"
  else
    lab_fail "$desc (false: $*)"
  fi
}

lab_finish() {
  local d=$(($(date +%s%N) - LAB_T0)) f
  if ((LAB_FAILURES == 0 && LAB_CHECKS > 0)); then
    echo "LAB RESULT: PASS ($LAB_CHECKS checks, $((d / 1000000)) ms)"
    exit 0
  fi
  if ((LAB_CHECKS == 0)); then
    echo "LAB RESULT: FAIL (the scenario checked nothing)"
    exit 1
  fi
  echo "LAB RESULT: FAIL ($LAB_FAILURES of $LAB_CHECKS checks failed)"
  for f in "${LAB_FAILED_LIST[@]}"; do
    echo "  - $f"
  done
  exit 1
}

# --- topology ----------------------------------------------------------------

lab_node_addr() { echo "10.99.0.$1"; }
lab_node_dev() { echo "v_$1"; }
lab_node_rdma_dev() { echo "rxe_$1"; }
lab_node_netns() { echo "node$1"; }
lab_in_node() {
  local i=$1
  shift
  ip netns exec "node$i" "$@"
}

_lab_sysctl() { sysctl -q -w "$1=$2" >/dev/null || lab_fail "sysctl $1=$2"; }

lab_setup_nodes() {
  local n=${1:-$RCNET_LAB_NODES} i j key
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 2 || n > 32)); then
    lab_fail "lab_setup_nodes: node count must be 2..32, got '$n'"
    return 1
  fi
  lab_log "setting up $n nodes"
  # No IPv6 on lab links: DAD and MLD chatter only slows TCG down.
  _lab_sysctl net.ipv6.conf.default.disable_ipv6 1
  for key in accept_local=1 rp_filter=0 arp_ignore=1 arp_announce=2; do
    _lab_sysctl "net.ipv4.conf.all.${key%=*}" "${key#*=}"
    _lab_sysctl "net.ipv4.conf.default.${key%=*}" "${key#*=}"
  done
  ip link add "$LAB_BRIDGE" type bridge forward_delay 0 stp_state 0 || {
    lab_fail "cannot create bridge $LAB_BRIDGE"
    return 1
  }
  ip link set "$LAB_BRIDGE" up
  for ((i = 1; i <= n; i++)); do
    ip link add "v_$i" type veth peer name "b_$i" &&
      ip link set "b_$i" master "$LAB_BRIDGE" &&
      ip link set "b_$i" up &&
      ip addr add "10.99.0.$i/24" dev "v_$i" &&
      ip link set "v_$i" up || {
      lab_fail "cannot create veth pair v_$i/b_$i"
      return 1
    }
    for key in accept_local=1 rp_filter=0 arp_ignore=1 arp_announce=2; do
      _lab_sysctl "net.ipv4.conf.v_$i.${key%=*}" "${key#*=}"
    done
  done
  # The local table must come after the per-node rules, or every packet to a
  # lab address would be delivered locally instead of crossing the bridge.
  if ip rule show pref 0 | grep -q 'lookup local'; then
    ip rule add pref 100 lookup local &&
      ip rule del pref 0 lookup local || {
      lab_fail "cannot move the local rule to pref 100"
      return 1
    }
  fi
  for ((i = 1; i <= n; i++)); do
    ip rule add pref $((10 + i)) oif "v_$i" lookup $((100 + i)) || {
      lab_fail "ip rule for v_$i"
      return 1
    }
    for ((j = 1; j <= n; j++)); do
      ((i == j)) && continue
      ip route add "10.99.0.$j/32" dev "v_$i" src "10.99.0.$i" table $((100 + i)) || {
        lab_fail "route 10.99.0.$j via v_$i"
        return 1
      }
    done
  done
  for ((i = 1; i <= n; i++)); do
    rdma link add "rxe_$i" type rxe netdev "v_$i" || {
      lab_fail "rdma link add rxe_$i netdev v_$i"
      return 1
    }
  done
  # Warm ARP: with a cold entry the first rdma_resolve_addr only finishes at
  # its timeout. Only the neighbour entry matters here, not the echo reply.
  for ((i = 1; i <= n; i++)); do
    for ((j = 1; j <= n; j++)); do
      ((i == j)) || timeout 5 ping -q -n -c 1 -W 2 -I "v_$i" "10.99.0.$j" >/dev/null 2>&1 &
    done
  done
  wait
  local missing=()
  for ((i = 1; i <= n; i++)); do
    for ((j = 1; j <= n; j++)); do
      ((i == j)) && continue
      ip neigh show dev "v_$i" "10.99.0.$j" | grep -Eq 'REACHABLE|STALE|DELAY|PERMANENT' ||
        missing+=("v_$i->10.99.0.$j")
    done
  done
  if ((${#missing[@]})); then
    lab_fail "ARP not resolved: ${missing[*]}"
    return 1
  fi
  for ((i = 1; i <= n; i++)); do
    ip netns add "node$i" && ip -n "node$i" link set lo up || {
      lab_fail "cannot create netns node$i"
      return 1
    }
  done
  local devs
  devs=$(ls /dev/infiniband/ 2>/dev/null | tr '\n' ' ')
  if [[ $devs != *uverbs* || ! -c /dev/net/tun ]]; then
    lab_fail "device nodes missing: /dev/infiniband has '$devs'; /dev/net/tun $([[ -c /dev/net/tun ]] && echo present || echo missing)"
    return 1
  fi
  LAB_NODES_UP=$n
  lab_log "$n nodes up: $(rdma link show | awk '{ print $2 "/" $NF }' | tr '\n' ' ')"
}

# --- RDMA helpers ------------------------------------------------------------

lab_wait_listen() {
  local addr=$1 port=$2 secs=${3:-20} i
  for ((i = 0; i < secs * 10; i++)); do
    rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*src-addr $addr:$port " && return 0
    sleep 0.1
  done
  echo "no rdma_cm listener on $addr:$port after ${secs}s"
  return 1
}

lab_rping() {
  local from=$1 to=$2 count=${3:-5} port=${4:-7174}
  local saddr daddr out spid rc=0 src=0 n
  saddr=$(lab_node_addr "$from")
  daddr=$(lab_node_addr "$to")
  out=$RCNET_RESULTS/rping-$from-$to
  timeout -k 5 "$LAB_CMD_TIMEOUT" rping -s -a "$daddr" -p "$port" -C "$count" -V \
    >"$out.server.txt" 2>&1 &
  spid=$!
  if ! lab_wait_listen "$daddr" "$port" 20 >>"$out.server.txt"; then
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    lab_fail "rping node$from -> node$to: server did not listen on $daddr:$port"
    return 1
  fi
  lab_timeout "$LAB_CMD_TIMEOUT" rping -c -a "$daddr" -I "$saddr" -p "$port" -C "$count" -v -V \
    >"$out.client.txt" 2>&1 || rc=$?
  wait "$spid" || src=$?
  n=$(grep -c 'ping data: ' "$out.client.txt")
  if ((rc == 0 && src == 0 && n == count)); then
    lab_pass "rping node$from ($saddr) -> node$to ($daddr): $n/$count verified"
    return 0
  fi
  lab_fail "rping node$from ($saddr) -> node$to ($daddr): client exit $rc, server exit $src, $n/$count iterations"
  sed 's/^/    client: /' "$out.client.txt" | tail -5
  sed 's/^/    server: /' "$out.server.txt" | tail -5
  return 1
}

lab_collect() {
  local name=$1 base=$RCNET_RESULTS/$1
  rdma res show qp >"$base-qp.txt" 2>&1
  rdma -j res show qp >"$base-qp.json" 2>&1
  rdma res show cm_id >"$base-cm_id.txt" 2>&1
  rdma link >"$base-link.txt" 2>&1
  echo "collected $name: $(wc -l <"$base-qp.txt") QP lines in $base-qp.txt"
}

lab_qp_count() {
  local dev=${1:-}
  rdma res show qp ${dev:+link "$dev"} 2>/dev/null | awk '$1 == "link" { for (k = 1; k < NF; k++) if ($k == "lqpn" && $(k + 1) > 1) n++ } END { print n + 0 }'
}
