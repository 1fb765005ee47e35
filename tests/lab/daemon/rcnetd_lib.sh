# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# Helpers for the rcnetd lab scenarios; sourced after $RCNET_LAB_LIB.
#   rcd_config I [TOML...]   write node I's config to $RCNET_RESULTS/node-I.toml;
#                            extra TOML lines are appended (e.g. "[timeouts]" "idle = \"2s\"")
#   rcd_start I              start rcnetd for node I; waits for its TUN and listener
#   rcd_kill I SIG           signal node I's rcnetd
#   rcd_wait_exit I SECS     wait for it; its exit code goes to RCD_EXIT[I]
#                            ("timeout" and status 1 if it is still running)
#   rcd_stop_all             SIGTERM every running daemon; a check each: exit 0
#   rcd_ping FROM TO [ARGS]  ping TO's overlay address from node FROM's netns
#                            (every 0.2 s unless ARGS give -i, -A or -f)
#   rcd_qps I                QPs the kernel reports on rxe_I
#   rcd_wait_tcp_listen I PORT SECS  wait until a TCP socket listens on PORT
#                            in node I's netns (bounded by time, not tries)
#   rcd_wait_qps I N SECS    wait until rxe_I has N QPs; prints elapsed ms; 1 on timeout
#   rcd_now_ms               wall clock in ms (no fork: $EPOCHREALTIME), the
#                            clock of the daemons' log timestamps
#   rcd_log_ms LINE          epoch ms of a daemon log line's timestamp
#   rcd_wait_log I RE SECS [FROM]  wait until node I's log has a line matching
#                            the extended regex RE (from line FROM on, default
#                            1); prints the first such line; 1 on timeout
#   rcd_counter I NAME       NAME's value in node I's last "counters at exit"
#   rcd_block_roce I         drop node I's RoCEv2 traffic (UDP 4791) both ways
#                            (on siw: its iWARP traffic, TCP to or from port 7471)
#                            on its bridge port b_I: a crash whose DREQ is lost
#                            (rcd_block_roce_prepare I: its clsact qdisc,
#                            added once and kept)
#   rcd_unblock_roce I       delete those filters (the qdisc stays); prints
#                            how many packets they dropped
#   rcd_link_delete DEV      `rdma link delete DEV` in the background (its
#                            output in $RCNET_RESULTS/link-delete.txt), timed:
#                            sets RCD_DELETE_T0 (its start, rcd_now_ms),
#                            RCD_DELETE_MS and RCD_DELETE_RC; one that has not
#                            returned in 30 s (state D: rxe waits for every
#                            uverbs object of the device) ends the scenario
: "${RCNET_BUILD_DIR:?RCNET_BUILD_DIR must point at the build tree}"
# rcnetd as rcnetd.service runs it: with the unit's Environment= (glibc's
# thread cache off), set on rcnetd alone, not on the tools and anchors a
# scenario runs beside it, by a wrapper that execs it (the pid stays the
# one the scenario started).
# Written with the shell's own read and echo, no mktemp or sed: each exec
# is 0.1 s or more under TCG, paid by every scenario that sources this.
RCD_BIN=${TMPDIR:-/tmp}/rcnetd.$$.$RANDOM
{
  echo '#!/bin/sh'
  while IFS= read -r _rcd_line; do
    [[ $_rcd_line == Environment=* ]] && echo "export ${_rcd_line#Environment=}"
  done <"${RCNET_SRC:-$(dirname "${BASH_SOURCE[0]}")/../../..}/systemd/rcnetd.service.in"
  echo "exec '$RCNET_BUILD_DIR/daemon/rcnetd' \"\$@\""
} >"$RCD_BIN"
chmod 0755 "$RCD_BIN" # lab-ops-unit-user runs it as user rcnet
declare -A RCD_PID=()

rcd_link_delete() {
  local dev=$1 del
  RCD_DELETE_MS='' RCD_DELETE_RC=''
  RCD_DELETE_T0=$(rcd_now_ms)
  rdma link delete "$dev" >"$RCNET_RESULTS/link-delete.txt" 2>&1 &
  del=$!
  while (($(rcd_now_ms) - RCD_DELETE_T0 < 30000)); do
    if ! kill -0 "$del" 2>/dev/null; then
      RCD_DELETE_MS=$(($(rcd_now_ms) - RCD_DELETE_T0))
      break
    fi
    sleep 0.02
  done
  if [ -z "$RCD_DELETE_MS" ]; then
    # Nothing ends it; say so and stop before anything else hangs.
    lab_log "rdma link delete state: $(ps -o stat=,wchan= -p "$del" 2>/dev/null)"
    lab_collect device-removal-hung
    lab_die "rdma link delete $dev did not return within 30 s while rcnetd runs (device objects kept)"
  fi
  wait "$del"
  # shellcheck disable=SC2034 # for the scenario that sourced this
  RCD_DELETE_RC=$?
}

rcd_now_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  echo $((10#$t / 1000))
}

rcd_log_ms() {
  local ts=${1%% *}
  date -d "${ts/T/ }" +%s%3N
}

rcd_wait_log() {
  lab_wait_line "$RCNET_RESULTS/rcnetd-$1.log" "$2" "$3" "${4:-1}"
}

# rcd_stat I NAME: counter NAME of node I's running rcnetd (`rcnetctl stats
# NAME`), 0 when it has none by that name or does not answer.
rcd_stat() {
  "$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl" -s "/run/rcnet/node$1.sock" stats "$2" 2>/dev/null | grep . || echo 0
}

# rcd_counter I NAME: counter NAME from node I's "counters at exit" line.
rcd_counter() {
  grep "counters at exit" "$RCNET_RESULTS/rcnetd-$1.log" | tail -1 |
    grep -o "\b$2=[0-9]*" | cut -d= -f2 | grep . || echo 0
}

# On the bridge side of the node's veth, not on v_I itself: a packet dropped
# at v_I's egress fails rxe's transmit, the kernel's DREQ MAD then never
# completes, and the killed process hangs in rdma_destroy_id
# ("cm_destroy_id_wait_timeout"). Dropped on b_I, it was sent as far as the
# node can tell, as on a real fabric.
# The clsact qdisc is added once and stays; a drop adds and deletes only its
# filters. Adding or deleting a clsact qdisc flips the kernel's ingress and
# egress static keys unless something else holds them (the lab's init holds
# them with a clsact on lo), and flipping them under traffic faulted the
# guest kernel (docs/lab.md "When the guest kernel faults").
rcd_block_roce_prepare() {
  local dev=b_$1
  tc qdisc show dev "$dev" | grep -q clsact || tc qdisc add dev "$dev" clsact
}

rcd_block_roce() {
  local dev=b_$1 f=/tmp/rcd-block-$1.tc
  rcd_block_roce_prepare "$1" || return 1
  {
    if [[ ${RCNET_LAB_PROVIDER:-rxe} == siw ]]; then
      # iWARP runs over TCP: rcnetd's connections, either end on its port.
      local d k
      for d in ingress egress; do
        for k in sport dport; do
          echo "filter add dev $dev $d protocol ip u32 match ip protocol 6 0xff match ip $k 7471 0xffff action drop"
        done
      done
    else
      echo "filter add dev $dev ingress protocol ip u32 match ip protocol 17 0xff match ip dport 4791 0xffff action drop"
      echo "filter add dev $dev egress protocol ip u32 match ip protocol 17 0xff match ip dport 4791 0xffff action drop"
    fi
  } >"$f"
  # One exec (a few hundred ms under TCG), so the block follows a ping at once.
  tc -batch "$f"
}

rcd_unblock_roce() {
  local dev=b_$1 n f=/tmp/rcd-unblock-$1.tc
  n=$( (tc -s filter show dev "$dev" ingress; tc -s filter show dev "$dev" egress) |
    awk '/Sent .* pkt/ { n += $4 } END { print n + 0 }')
  printf 'filter del dev %s %s\n' "$dev" ingress "$dev" egress >"$f"
  tc -batch "$f" || return 1
  echo "$n"
}

rcd_config() {
  local i=$1
  shift
  local f=$RCNET_RESULTS/node-$i.toml
  {
    echo '[node]'
    echo "address = \"$(lab_node_addr "$i")\""
    echo '[tun]'
    echo "address = \"10.100.0.$i/24\""
    echo "netns = \"$(lab_node_netns "$i")\""
    echo '[peers]'
    echo 'underlay_prefix = "10.99.0.0/24"'
    echo '[log]'
    echo 'level = "info"'
    echo 'target = "stderr"'
    echo '[ctl]'
    echo "socket = \"/run/rcnet/node$i.sock\""
    echo 'group = "root"'
    local line
    for line in "$@"; do echo "$line"; done
  } >"$f"
}

rcd_start() {
  local i=$1
  local log=$RCNET_RESULTS/rcnetd-$i.log k skip
  mkdir -p /run/rcnet
  # A restart appends to the same log: only look at this start's lines.
  skip=1
  [[ -f $log ]] && skip=$(($(wc -l <"$log") + 1))
  "$RCD_BIN" -c "$RCNET_RESULTS/node-$i.toml" >>"$log" 2>&1 &
  RCD_PID[$i]=$!
  # lab_wait_line reads the log without a process per poll (a `tail | grep`
  # every 0.1 s was two execs each, the guest's CPU taken from the daemon
  # that was starting); one second at a time, to notice an exit.
  for ((k = 0; k < 30; k++)); do
    if lab_wait_line "$log" "TUN rc0 up" 1 "$skip" >/dev/null; then
      lab_pass "rcnetd node$i started (pid ${RCD_PID[$i]})"
      return 0
    fi
    if ! kill -0 "${RCD_PID[$i]}" 2>/dev/null; then
      # Its last lines, written as it exited.
      lab_wait_line "$log" "TUN rc0 up" 0 "$skip" >/dev/null && {
        lab_pass "rcnetd node$i started (pid ${RCD_PID[$i]})"
        return 0
      }
      lab_fail "rcnetd node$i exited during start: $(tail -n +"$skip" "$log" | tail -3 | tr '\n' ' ')"
      return 1
    fi
  done
  lab_fail "rcnetd node$i not up after 30 s: $(tail -3 "$log" | tr '\n' ' ')"
  return 1
}

rcd_kill() { kill -"$2" "${RCD_PID[$1]}"; }

declare -A RCD_EXIT=()
# Not for $(...): a subshell cannot wait for the daemon (not its child).
rcd_wait_exit() {
  local i=$1 secs=$2 k rc=0
  for ((k = 0; k < secs * 10; k++)); do
    kill -0 "${RCD_PID[$i]}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${RCD_PID[$i]}" 2>/dev/null; then
    RCD_EXIT[$i]=timeout
    return 1
  fi
  # 2>/dev/null also silences bash's "Killed" notice for a SIGKILLed daemon.
  wait "${RCD_PID[$i]}" 2>/dev/null || rc=$?
  RCD_EXIT[$i]=$rc
}

rcd_ping() {
  local from=$1 to=$2 a interval=(-i 0.2)
  shift 2
  # 0.2 s between echoes unless ARGS choose (-i, -A, -f): ping's default
  # 1 s made every -c N check wait N - 1 s, and the scenarios make hundreds.
  # An echo sent before the connection is ESTABLISHED waits in rcnetd's
  # queue, so a shorter interval loses nothing.
  for a in "$@"; do [[ $a == -i* || $a == -A || $a == -f ]] && interval=(); done
  lab_in_node "$from" ping -n -q "${interval[@]}" "$@" "10.100.0.$to"
}

rcd_wait_tcp_listen() {
  local i=$1 port=$2 deadline
  deadline=$(($(rcd_now_ms) + $3 * 1000))
  until [[ -n $(lab_in_node "$i" ss -Hltn "sport = :$port" 2>/dev/null) ]]; do
    (($(rcd_now_ms) > deadline)) && return 1
    sleep 0.2
  done
}

rcd_qps() { lab_qp_count "$(lab_node_rdma_dev "$1")"; }

rcd_wait_qps() {
  local i=$1 want=$2 secs=$3 t0
  t0=$(rcd_now_ms)
  # Bounded by time: each `rdma` exec alone can take a good part of a second
  # under TCG.
  until [ "$(rcd_qps "$i")" -eq "$want" ]; do
    if (($(rcd_now_ms) - t0 > secs * 1000)); then
      echo $(($(rcd_now_ms) - t0))
      return 1
    fi
    sleep 0.05
  done
  echo $(($(rcd_now_ms) - t0))
}

# SIGTERM to every daemon still running; each must exit 0 within 30 s.
rcd_stop_all() {
  local i rc live=()
  for i in "${!RCD_PID[@]}"; do
    kill -TERM "${RCD_PID[$i]}" 2>/dev/null && live+=("$i")
  done
  for i in "${live[@]}"; do
    rcd_wait_exit "$i" 30
    if [ "${RCD_EXIT[$i]}" = 0 ]; then
      lab_pass "rcnetd node$i exited 0 on SIGTERM"
    else
      lab_fail "rcnetd node$i on SIGTERM: exit ${RCD_EXIT[$i]}"
    fi
  done
}
