# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# Helpers for the two-rail lab scenarios; sourced after $RCNET_LAB_LIB and
# tests/lab/daemon/rcnetd_lib.sh, on a lab set up with
# `lab_setup_nodes N --rails 2` (rail 0 10.99.0.i on rxe_i, rail 1 10.98.0.i
# on rxe_i_r1).
#
# rcnetd on two rails:
#   rails_config I [TOML...]   node I's config with both rails (node.address
#                            and peers.underlay_prefix as arrays, rail 0
#                            first; [rails] mode $RAILS_MODE (active-backup)
#                            and holddown $RAILS_HOLDDOWN ("2s"), plus the
#                            lines of the array RAILS_TOML in [rails]); extra
#                            lines are appended as with rcd_config. A
#                            one-rail node: rcd_config.
#   rails_ctl I ARGS...      rcnetctl on node I's socket
#   rails_json I             `rcnetctl -j rails` of node I
#   rails_state I R          state of node I's rail R (up, down, holddown,
#                            removed; "?" when rcnetctl did not answer)
#   rails_carrier I J        the rail whose link carries node I's traffic to
#                            node J now ("none" if no link does)
#   rails_wait_carrier I J R SECS   wait until that is rail R; prints the
#                            ms waited; 1 on timeout
#   rails_wait_state I R STATE SECS  wait until node I's rail R is STATE
#   rails_stats_line I       every nonzero rail counter of node I, one line
#   rails_qp_audit I         check: the kernel's RC QPs on node I's rxe
#                            devices are exactly `rcnetctl qps` (device:QPN)
#   rails_start_nodes N [TOML...]  rails_config + rcd_start for nodes 1..N
#                            (idle timeout 600 s unless TOML sets [timeouts]),
#                            then a ping over rc0 between every pair until
#                            it answers, and a check that node 1 carries
#                            every peer on rail 0
#   rails_monitor_start I    `rcnetctl -j monitor` of node I in the
#                            background into $RCNET_RESULTS/monitor-I.jsonl
#   rails_events I JQ [J [SINCE_MS]]  node I's monitor events matching the
#                            jq condition JQ, one JSON line each; in JQ, $re
#                            is rails_peer_re J; only events at or after
#                            SINCE_MS (rcd_now_ms's clock; default all), so
#                            that a step finds its own event, not an earlier
#                            one of the same kind
#   rails_wait_event I JQ SECS [J [SINCE_MS]]  wait until there is one;
#                            prints it
#   rails_peer_re J          jq regex of node J's underlay address, either
#                            rail (for peer_addr/underlay fields)
#   rails_end N              every node's rails and counters into the log,
#                            rails_qp_audit on nodes 1..N, rcd_stop_all and
#                            no RC QP left in the kernel after it,
#                            the kernel log into $RCNET_RESULTS/dmesg.txt
#   rails_link PORT up|down  `ip link set PORT up|down`, timed: logs how long
#                            it took; when over 1 s, the kernel stacks of the
#                            command, of every rcnetd thread and of every task
#                            in state D go to $RCNET_RESULTS/stall-PORT-*.txt
#
# Traffic over rc0 while a rail fails:
#   rails_ping_start FROM TO NAME [INTERVAL]  ping -D -O -i INTERVAL (0.01)
#                            from node FROM's netns to node TO's rc0 address
#                            (or to TO itself when it is an address), in the
#                            background, into $RCNET_RESULTS/NAME.ping
#   rails_ping_stop NAME     SIGINT it (ping prints its summary), wait
#   rails_ping_report NAME [--events] [START_MS:END_MS...]  pinglog.py's
#                            lines (longest gap between replies, sequence
#                            numbers lost; --events: percentiles over the
#                            windows)
#   rails_ping_field LINE KEY  KEY's value in one of those lines
#   rails_iperf_start FROM TO SECS NAME  iperf3 TCP FROM -> TO over rc0 for
#                            SECS s (-b $RAILS_IPERF_RATE, default 20M: the
#                            guest's two vCPUs also run 2-3 daemons and the
#                            ping), JSON into $RCNET_RESULTS/NAME.json
#   rails_iperf_check NAME SECS  waits for it; a check: exit 0, no error,
#                            bytes received (the TCP connection never reset)
: "${RAILS_MODE:=active-backup}"
: "${RAILS_HOLDDOWN:=2s}"
: "${RAILS_IPERF_RATE:=20M}"
RAILS_TOML=()
RAILS_CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
RAILS_PINGLOG=$RCNET_SRC/tests/lab/rails/pinglog.py
declare -A RAILS_PING_PID=() RAILS_IPERF_PID=() RAILS_IPERF_SRV=()

rails_config() {
  local i=$1 line
  shift
  {
    echo '[node]'
    echo "address = [\"$(lab_node_addr "$i" 0)\", \"$(lab_node_addr "$i" 1)\"]"
    echo '[tun]'
    echo "address = \"10.100.0.$i/24\""
    echo "netns = \"$(lab_node_netns "$i")\""
    echo '[peers]'
    echo 'underlay_prefix = ["10.99.0.0/24", "10.98.0.0/24"]'
    echo '[rails]'
    echo "mode = \"$RAILS_MODE\""
    echo "holddown = \"$RAILS_HOLDDOWN\""
    for line in "${RAILS_TOML[@]}"; do echo "$line"; done
    echo '[log]'
    echo 'level = "info"'
    echo 'target = "stderr"'
    echo '[ctl]'
    echo "socket = \"/run/rcnet/node$i.sock\""
    echo 'group = "root"'
    for line in "$@"; do echo "$line"; done
  } >"$RCNET_RESULTS/node-$i.toml"
}

rails_peer_re() { echo "^10\.9[89]\.0\.$1(:|\$)"; }

rails_start_nodes() {
  local n=$1 i j k ok
  shift
  for ((i = 1; i <= n; i++)); do
    if (($#)); then
      rails_config "$i" "$@"
    else
      rails_config "$i" "[timeouts]" 'idle = "600s"'
    fi
  done
  for ((i = 1; i <= n; i++)); do
    rcd_start "$i" || return 1
  done
  for ((i = 1; i <= n; i++)); do
    for ((j = i + 1; j <= n; j++)); do
      ok=
      for ((k = 0; k < 20; k++)); do
        rcd_ping "$i" "$j" -c 1 -W 1 >/dev/null 2>&1 && ok=1 && break
      done
      [[ -n $ok ]] || {
        lab_fail "ping node$i -> node$j over rc0 (two rails) never answered"
        return 1
      }
    done
  done
  for ((j = 2; j <= n; j++)); do
    rails_wait_carrier 1 "$j" 0 20 >/dev/null ||
      lab_fail "node1 -> node$j carried on rail 0 after start (carrier: $(rails_carrier 1 "$j"))"
  done
  lab_pass "$n two-rail nodes up; node1 carries its peers on rail 0"
}

rails_monitor_start() {
  "$RAILS_CTL" -s "/run/rcnet/node$1.sock" -j monitor >"$RCNET_RESULTS/monitor-$1.jsonl" \
    2>"$RCNET_RESULTS/monitor-$1.err" &
}

rails_events() {
  jq -c --arg re "$(rails_peer_re "${3:-0}")" --argjson since "${4:-0}" \
    "select(.event != null) | .event | select(.time_ms >= \$since) | select($2)" \
    "$RCNET_RESULTS/monitor-$1.jsonl" 2>/dev/null
}

rails_wait_event() {
  local i=$1 cond=$2 secs=$3 peer=${4:-0} since=${5:-0} t0 line
  t0=$(rcd_now_ms)
  while true; do
    line=$(rails_events "$i" "$cond" "$peer" "$since" | head -1)
    [[ -n $line ]] && {
      echo "$line"
      return 0
    }
    (($(rcd_now_ms) - t0 > secs * 1000)) && return 1
    sleep 0.2
  done
}

rails_ctl() {
  local i=$1
  shift
  "$RAILS_CTL" -s "/run/rcnet/node$i.sock" "$@"
}

rails_json() { rails_ctl "$1" -j rails 2>/dev/null; }

rails_state() {
  local s
  s=$(rails_json "$1" | jq -r --argjson r "$2" '.rails[] | select(.rail == $r) | .state' 2>/dev/null)
  echo "${s:-?}"
}

# The peer entry of node J on either rail: its underlay address is 10.99.0.J
# or 10.98.0.J (with or without a port).
rails_carrier() {
  # From the peers table, not -j and jq: the wait loops call this over and
  # over, and under TCG a jq process costs 0.29 s, awk 0.12 s (docs/lab.md
  # "Time in the lab"). RAIL is the 2nd column, UNDERLAY the 3rd, CARRIES
  # ("*") the last.
  local r
  r=$(rails_ctl "$1" peers 2>/dev/null | awk -v j="$2" '
    NR > 1 && $NF == "*" && $3 ~ ("^10\\.9[89]\\.0\\." j "(:|$)") { print $2; exit }')
  echo "${r:-none}"
}

rails_wait_carrier() {
  local i=$1 j=$2 want=$3 secs=$4 t0
  t0=$(rcd_now_ms)
  until [[ $(rails_carrier "$i" "$j") == "$want" ]]; do
    if (($(rcd_now_ms) - t0 > secs * 1000)); then
      echo $(($(rcd_now_ms) - t0))
      return 1
    fi
    sleep 0.1
  done
  echo $(($(rcd_now_ms) - t0))
}

# Checks that node I comes to carry node J on RAIL within SECS s: WHAT,
# with the time the wait saw it. What the wait saw is the check: a read of
# the carrier after it could meet a later move (a new link's first SEND
# failing moves the peer off it again at once, and back after the
# holddown), which is no longer this step's outcome.
rails_expect_carrier() {
  local i=$1 j=$2 want=$3 secs=$4 what=$5 ms rc=0
  ms=$(rails_wait_carrier "$i" "$j" "$want" "$secs") || rc=$?
  if ((rc == 0)); then
    lab_expect "$what (seen after $ms ms)" true
  else
    lab_expect "$what (not within $secs s: on rail $(rails_carrier "$i" "$j"))" false
  fi
}

rails_wait_state() {
  local i=$1 r=$2 want=$3 secs=$4 t0
  t0=$(rcd_now_ms)
  until [[ $(rails_state "$i" "$r") == "$want" ]]; do
    if (($(rcd_now_ms) - t0 > secs * 1000)); then
      echo $(($(rcd_now_ms) - t0))
      return 1
    fi
    sleep 0.1
  done
  echo $(($(rcd_now_ms) - t0))
}

rails_stats_line() {
  rails_ctl "$1" -j stats 2>/dev/null | jq -r '[.counters[] |
    select((.name | test("^(failover|failback|rail_|connect_failures|connects_|neighbour_|dead_peer)")) and .value > 0) |
    "\(.name)=\(.value)"] | join(" ")' 2>/dev/null
}

rails_qp_audit() {
  local i=$1 kern ours devs
  devs=$(rails_json "$i" | jq -c '[.rails[] | {key: (.rail | tostring), value: .device}] | from_entries' 2>/dev/null)
  # A daemon without `rcnetctl rails` has one rail, on the node's first device.
  [[ -n $devs ]] || devs="{\"0\": \"$(lab_node_rdma_dev "$i" 0)\"}"
  kern=$(rdma -j res show qp 2>/dev/null | jq -c --arg a "$(lab_node_rdma_dev "$i" 0)" --arg b "$(lab_node_rdma_dev "$i" 1)" '
    [.[] | select(.type == "RC" and (.ifname == $a or .ifname == $b)) | "\(.ifname):\(.lqpn)"] | sort')
  ours=$(rails_ctl "$i" -j qps 2>/dev/null | jq -c --argjson d "$devs" '
    [.qps[] | "\($d[(.rail // 0) | tostring] // "?"):\(.qpn)"] | sort')
  lab_log "node$i: kernel RC QPs $kern, rcnetctl qps $ours"
  lab_expect "node$i: rdma res show qp (RC) matches rcnetctl qps ($kern vs $ours)" \
    [ -n "$kern" -a "$kern" = "$ours" ]
}

rails_ping_start() {
  local from=$1 to=$2 name=$3 iv=${4:-0.01}
  [[ $to == *.* ]] || to=10.100.0.$to
  # Not through the lab_in_node function: in the background that is a
  # subshell, which ignores SIGINT and is not ping. `ip netns exec` execs
  # ping in its own process, so $! is ping's pid.
  ip netns exec "node$from" ping -n -D -O -i "$iv" -W 1 "$to" >"$RCNET_RESULTS/$name.ping" 2>&1 &
  RAILS_PING_PID[$name]=$!
}

rails_ping_stop() {
  local pid=${RAILS_PING_PID[$1]:-} k
  [[ -n $pid ]] || return 0
  # ping installs its own SIGINT handler (the summary), although bash starts
  # background commands with SIGINT ignored.
  kill -INT "$pid" 2>/dev/null
  for ((k = 0; k < 50; k++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  unset "RAILS_PING_PID[$1]"
}

rails_ping_report() {
  local name=$1 ev=()
  shift
  [[ ${1:-} == --events ]] && ev=(--events) && shift
  python3 "$RAILS_PINGLOG" "${ev[@]}" "$RCNET_RESULTS/$name.ping" "$@"
}

rails_ping_field() {
  local re="(^| )$2=([^ ]*)"
  [[ $1 =~ $re ]] && echo "${BASH_REMATCH[2]}"
}

rails_iperf_start() {
  local from=$1 to=$2 secs=$3 name=$4
  ip netns exec "node$to" iperf3 -s -1 -B "10.100.0.$to" >"$RCNET_RESULTS/$name-server.txt" 2>&1 &
  RAILS_IPERF_SRV[$name]=$!
  rcd_wait_tcp_listen "$to" 5201 20 || lab_fail "iperf3 server not listening in node$to after 20 s"
  ip netns exec "node$from" iperf3 -c "10.100.0.$to" -B "10.100.0.$from" -t "$secs" -b "$RAILS_IPERF_RATE" -J \
    >"$RCNET_RESULTS/$name.json" 2>&1 &
  RAILS_IPERF_PID[$name]=$!
}

rails_iperf_check() {
  local name=$1 secs=$2 k rc=0 out
  out=$RCNET_RESULTS/$name.json
  for ((k = 0; k < secs * 10; k++)); do
    kill -0 "${RAILS_IPERF_PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${RAILS_IPERF_PID[$name]}" 2>/dev/null; then
    kill "${RAILS_IPERF_PID[$name]}" "${RAILS_IPERF_SRV[$name]}" 2>/dev/null
    lab_fail "iperf3 $name still running ${secs} s after its end"
    return 1
  fi
  wait "${RAILS_IPERF_PID[$name]}" 2>/dev/null || rc=$?
  kill "${RAILS_IPERF_SRV[$name]}" 2>/dev/null
  wait "${RAILS_IPERF_SRV[$name]}" 2>/dev/null
  local err bytes retr bps
  err=$(jq -r '.error // ""' "$out" 2>/dev/null)
  bytes=$(jq -r '.end.sum_received.bytes // 0' "$out" 2>/dev/null)
  retr=$(jq -r '.end.sum_sent.retransmits // 0' "$out" 2>/dev/null)
  bps=$(jq -r '.end.sum_received.bits_per_second // 0' "$out" 2>/dev/null)
  lab_log "iperf3 $name: exit $rc, ${bytes:-?} bytes received, ${retr:-?} retransmits, $(awk -v b="${bps:-0}" 'BEGIN { printf "%.1f", b / 1e6 }') Mbit/s${err:+, error: $err}"
  lab_expect "iperf3 $name: the TCP connection lasted to its end (exit $rc${err:+, $err})" \
    [ "$rc" -eq 0 -a -z "$err" -a "${bytes:-0}" -gt 0 ]
}

rails_end() {
  local n=$1 i t
  for ((i = 1; i <= n; i++)); do
    rails_ctl "$i" rails >"$RCNET_RESULTS/rails-end-$i.txt" 2>&1
    rails_ctl "$i" peers >"$RCNET_RESULTS/peers-end-$i.txt" 2>&1
    lab_log "node$i rails: $(rails_json "$i" | jq -c '[.rails[] | {rail, state, cause, links, carrying, flaps, holddown_ms}]')"
    lab_log "node$i counters: $(rails_stats_line "$i")"
    # Why each QP went: an unexpected reason (neighbour FAILED, a QP error)
    # is the first thing a failed run's reader needs.
    t=$(sed -n 's/.*tearing down QPN [0-9]* to [^ ]*: //p' "$RCNET_RESULTS/rcnetd-$i.log" |
      sort | uniq -c | awk '{ $1 = $1 "x"; print }' | paste -sd ';')
    lab_log "node$i teardowns: ${t:-none}"
  done
  # A QP of a failed link may still be in its teardown stages.
  sleep 1
  for ((i = 1; i <= n; i++)); do
    rails_qp_audit "$i"
  done
  lab_collect end >/dev/null
  lab_log "devices' error counters: $(lab_error_counters "$RCNET_RESULTS/end-statistic.txt")"
  rcd_stop_all
  lab_expect "no RC QP left after SIGTERM ($(lab_qp_count))" [ "$(lab_qp_count)" -eq 0 ]
  dmesg >"$RCNET_RESULTS/dmesg.txt" 2>&1
}

# The kernel stacks of PID, of every rcnetd thread and of every task in
# state D, into FILE (what a stalled `ip link set` or daemon waits on).
_rails_stacks() {
  local pid=$1 f=$2 p t
  {
    echo "== $pid $(cat "/proc/$pid/comm" 2>/dev/null) wchan $(cat "/proc/$pid/wchan" 2>/dev/null)"
    cat "/proc/$pid/stack" 2>/dev/null
    for p in "${RCD_PID[@]}"; do
      for t in /proc/"$p"/task/*; do
        echo "== rcnetd $p thread ${t##*/} $(cat "$t/comm" 2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
        cat "$t/stack" 2>/dev/null
      done
    done
    for p in $(ps -eo pid=,stat= | awk '$2 ~ /D/ { print $1 }'); do
      echo "== state D: $p $(cat "/proc/$p/comm" 2>/dev/null)"
      cat "/proc/$p/stack" 2>/dev/null
    done
  } >"$f" 2>&1
}

rails_link() {
  local port=$1 how=$2 t0 pid k took=
  t0=$(rcd_now_ms)
  ip link set "$port" "$how" &
  pid=$!
  for ((k = 0; k < 600; k++)); do
    kill -0 "$pid" 2>/dev/null || {
      took=$(($(rcd_now_ms) - t0))
      break
    }
    ((k == 10 || k == 100)) && _rails_stacks "$pid" "$RCNET_RESULTS/stall-$port-$how-$t0-$k.txt"
    sleep 0.1
  done
  wait "$pid"
  lab_log "ip link set $port $how returned after ${took:-over 60000} ms"
}
