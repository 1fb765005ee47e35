#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The soak benchmark (issue 33; docs/lab.md "The soak benchmark"): four
# rcnetd nodes on two rails for RCNET_SOAK_MINUTES (default 30) under
# traffic, while a schedule of faults cycles; every RCNET_SOAK_SAMPLE_S
# (10) s each daemon's resources are sampled. The faults of one cycle, in
# this order, each on the next node (cycle c, fault f: node (c - 1 + f) mod
# 4 + 1, so every node takes some fault in every cycle), except in cycle 1,
# the warm-up, where each fault is made on every node in turn: a node's
# first flood, flap or failover sizes some containers once (the heap in use
# steps by 3-10 KiB, and RSS with it, then holds), and the slope, fitted
# after cycle 1, is to show growth that repeats, not that step. With the
# rotation alone a node met its first flood in cycle 1 to 4, and the
# 30-minute soak of 2026-12-02 fitted those steps as slopes of 1.4 and
# 3.1 KiB/min on two nodes whose RSS was flat (0.000) once each had met
# every kind of fault:
#   kill      SIGKILL of the node's rcnetd and a restart; ends when the node
#             and every other node ping each other again. With
#             RCNET_SOAK_KILL_NODE=I always node I's: the other nodes' first
#             processes then live the whole soak and meet every other fault
#             again and again, which a slope needs (a process's first cycle
#             is its warm-up; with the kill in turn a process lives about 4
#             cycles)
#   flap      its bridge-side port down for 3 s and up (rail 0's b_I in odd
#             cycles: carrier failover and fail-back; rail 1's c_I in even
#             ones: the standby links; both, one after the other, in the
#             warm-up); ends when the rail is up again and
#             rail 0 carries every peer (docs/lab.md "Several nodes in one
#             guest": the node-side veth would flush the lab's routes)
#   failover  rail 0 drops the node's RoCE traffic silently (rcd_block_roce:
#             retry exceeded), every peer moves to rail 1; the drop ends and
#             every peer comes back to rail 0
#   delete    `rdma link delete` of the node's rail-0 device (every peer on
#             rail 1), `rdma link add` again, every peer back on rail 0;
#             always node 4's (N's) device: an rcnetd that has lost a
#             device keeps librdmacm's contexts of every other device of
#             the kernel (rcnetd(8) DEVICE REMOVAL), and rxe, which cannot
#             disassociate a context, then holds another node's `rdma link
#             delete` until that rcnetd exits: in this guest every node
#             shares one kernel, on a cluster each rcnetd has its own
#   reload    `rcnetctl reload` of the node and SIGHUP of the next one, each
#             after changing a live key (timeouts.idle 600 s <-> 601 s)
#   flood     RCNET_SOAK_CTL_FLOOD (200) rcnetctl calls at once from 8
#             clients (status, peers, qps, stats, audit, route get, ...),
#             two `rcnetctl -j monitor` open meanwhile
# Traffic: `ping -D -O -i 0.2` over rc0 for each of the 6 pairs (node I ->
# node J, I < J; one file per ping process: a ping restarted when it ended,
# as a restarted rcnetd makes rc0 anew, starts the next), and iperf3 TCP
# node1 -> node3 at RCNET_SOAK_IPERF_RATE (10M) in runs of 30 s.
# A fault's window runs from just before it is made to the moment the
# scenario saw it end (bounded waits; a wait that runs out is recorded, not
# fatal). After each, once its grace (RCNET_SOAK_GRACE_S, 5 s) has passed,
# the scenario samples until every node's fds, QPs, MRs and CQs equal the
# baseline's, at most RCNET_SOAK_SETTLE_S (30) s after its end. Cycles start
# while one more fits before the last sixth of the time (at least 3
# samples' worth), which stays quiet; at least one cycle always runs.
# tools/bench/soak_report.py prints the table at the end.
#
# The exit status says only whether the run itself broke: a daemon died
# that was not killed on purpose, a restart or `rdma link add` failed, a
# device delete hung, a daemon did not stop on SIGTERM (rcnet-lab stops a
# run whose guest kernel faults, exit 123). A figure that misses its goal is
# reported, never a failure.
#
#   soak.sh [RCNET_SOAK_NAME=VALUE ...]   (run_soak.sh passes the host's
#                                         RCNET_SOAK_* variables so)
# RCNET_SOAK_FAULTS: the cycle's faults, in order (default all six above).
# shellcheck disable=SC2016,SC2317 # jq programs; fault_KIND is called by name
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"
. "$RCNET_SRC/tests/lab/rails/rails_lib.sh"

KNOWN="MINUTES SAMPLE_S GRACE_S SETTLE_S CTL_FLOOD IPERF_RATE IPERF_SECS PING_INTERVAL FAULTS KILL_NODE"
for a in "$@"; do
  name=${a%%=*}
  [[ $a == RCNET_SOAK_*=* && " $KNOWN " == *" ${name#RCNET_SOAK_} "* ]] ||
    lab_die "unknown argument '$a' (RCNET_SOAK_NAME=VALUE, NAME one of: $KNOWN)"
  printf -v "$name" '%s' "${a#*=}"
done
N=4
OUT=$RCNET_RESULTS
MINUTES=${RCNET_SOAK_MINUTES:-30}
SAMPLE_S=${RCNET_SOAK_SAMPLE_S:-10}
GRACE_S=${RCNET_SOAK_GRACE_S:-5}
SETTLE_S=${RCNET_SOAK_SETTLE_S:-30}
FLOOD=${RCNET_SOAK_CTL_FLOOD:-200}
IPERF_RATE=${RCNET_SOAK_IPERF_RATE:-10M}
IPERF_SECS=${RCNET_SOAK_IPERF_SECS:-30}
PING_IV=${RCNET_SOAK_PING_INTERVAL:-0.2}
read -ra FAULTS <<<"${RCNET_SOAK_FAULTS:-kill flap failover delete reload flood}"
KILL_NODE=${RCNET_SOAK_KILL_NODE:-}
PRE_MS=1000 # a window also covers the ping sent just before it (interval + RTT)
for v in MINUTES SAMPLE_S GRACE_S SETTLE_S FLOOD IPERF_SECS; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || lab_die "RCNET_SOAK_$v must be a whole number >= 1, not '${!v}'"
done
for f in "${FAULTS[@]}"; do
  case $f in kill | flap | failover | delete | reload | flood) ;; *) lab_die "unknown fault '$f' in RCNET_SOAK_FAULTS" ;; esac
done
((${#FAULTS[@]})) || lab_die "RCNET_SOAK_FAULTS names no fault"
[[ -z $KILL_NODE || ($KILL_NODE =~ ^[1-9]$ && KILL_NODE -le N) ]] ||
  lab_die "RCNET_SOAK_KILL_NODE must be a node, 1 to $N, not '$KILL_NODE'"
REPORT=$RCNET_SRC/tools/bench/soak_report.py
SOAK_ON=$OUT/.soak-on
BUDGET_MS=$((MINUTES * 60000))
TAIL_MS=$((BUDGET_MS / 6))
((TAIL_MS >= 3 * SAMPLE_S * 1000)) || TAIL_MS=$((3 * SAMPLE_S * 1000))
BROKEN=
FAULT_NO=0

{
  echo "minutes $MINUTES"
  echo "sample_s $SAMPLE_S"
  echo "grace_ms $((GRACE_S * 1000))"
  echo "pre_ms $PRE_MS"
  echo "settle_s $SETTLE_S"
  echo "nodes $N"
  echo "ping_interval_s $PING_IV"
  echo "iperf_rate $IPERF_RATE"
  echo "ctl_flood $FLOOD"
  echo "faults ${FAULTS[*]}"
  echo "kill_node ${KILL_NODE:-each in turn}"
  echo "kernel $(uname -r)"
  echo "provider ${RCNET_LAB_PROVIDER:-rxe}"
} >"$OUT/soak-params.txt"

# --- helpers -----------------------------------------------------------------------------

soak_sleep_ms() {
  local d=$1
  ((d > 0)) || return 0
  sleep "$((d / 1000)).$(printf '%03d' $((d % 1000)))"
}

# Sleeps until epoch ms T (or the traffic stops), checking every daemon
# about once a second.
soak_sleep_until() {
  local t=$1 d
  while d=$((t - $(rcd_now_ms))); ((d > 0)); do
    ((d > 1000)) && d=1000
    soak_sleep_ms "$d"
    [[ -n $BROKEN ]] || soak_alive || return 1
  done
}

# Every daemon runs (a fault that kills one waits for its restart before
# this is asked). A daemon that died unasked breaks the run.
soak_alive() {
  local i rc
  for ((i = 1; i <= N; i++)); do
    kill -0 "${RCD_PID[$i]}" 2>/dev/null && continue
    rc=0
    wait "${RCD_PID[$i]}" 2>/dev/null || rc=$?
    lab_fail "rcnetd node$i (pid ${RCD_PID[$i]}) died unasked (wait status $rc): $(tail -n 3 "$OUT/rcnetd-$i.log" | tr '\n' ' ')"
    BROKEN="rcnetd node$i died"
    return 1
  done
}

soak_write_pid() { echo "${RCD_PID[$1]}" >"$OUT/.pid-$1"; }

# One sample of every daemon into soak-samples.txt (the format is
# soak_report.py's). Under a lock, so that the periodic sampler and the
# samples after a fault never interleave, and so that no other rcnetctl
# call of this script holds a ctl connection (an fd) of a daemon while its
# fds are counted. The fds and RSS are read before rcnetctl's own call.
soak_sample() {
  local label=$1 lk i pid k v rest rss anon fds st qp mr cq
  local -a fdl
  exec {lk}>>"$OUT/.soak-sample.lock"
  flock -w 60 "$lk" || lab_log "sample $label: the sample lock was held for 60 s; sampling anyway"
  local t0
  t0=$(rcd_now_ms)
  qp=$(rdma -j res show qp 2>/dev/null)
  mr=$(rdma -j res show mr 2>/dev/null)
  cq=$(rdma -j res show cq 2>/dev/null)
  {
    echo "S $t0 $label"
    echo "K qp ${qp//$'\n'/ }"
    echo "K mr ${mr//$'\n'/ }"
    echo "K cq ${cq//$'\n'/ }"
    for ((i = 1; i <= N; i++)); do
      read -r pid <"$OUT/.pid-$i" 2>/dev/null || pid=0
      rss=- anon=- fds=- st=-
      if [[ -r /proc/$pid/status ]]; then
        while read -r k v rest; do
          case $k in
            VmRSS:) rss=$v ;;
            RssAnon:) anon=$v ;;
          esac
        done <"/proc/$pid/status"
        fdl=(/proc/"$pid"/fd/*)
        fds=${#fdl[@]}
        [[ ${fdl[0]} == "/proc/$pid/fd/*" ]] && fds=-
        st=$(rails_ctl "$i" -j status 2>/dev/null)
        st=${st//$'\n'/ }
        [[ -n $st ]] || st=-
      fi
      echo "N $i $pid $rss $anon $fds $st"
      echo "A $i $(soak_anon_by_mapping "$pid")"
    done
    echo "E $(rcd_now_ms)"
  } >>"$OUT/soak-samples.txt"
  exec {lk}>&-
}

# The anonymous memory of process PID by mapping (/proc/PID/smaps
# "Anonymous:"), in KiB, as "NAME=KIB ..." for each mapping that has some:
# [heap], [stack], a file mapping by its file's name (a library's data
# written to), an unnamed one as anon@START. Tells the heap's growth from
# the stack's and the libraries'.
soak_anon_by_mapping() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / {
         split($1, r, "-"); n = $6
         if (n == "") n = "anon@" r[1]
         else if (n !~ /^\[/) sub(".*/", "", n)
         next
       }
       /^Anonymous:/ { a[n] += $2 }
       END { for (k in a) if (a[k] > 0) printf "%s=%d ", k, a[k] }' "/proc/$1/smaps" 2>/dev/null
}

soak_sampler() {
  local next
  next=$(rcd_now_ms)
  while [[ -e $SOAK_ON ]]; do
    soak_sample periodic
    next=$((next + SAMPLE_S * 1000))
    while [[ -e $SOAK_ON ]] && (($(rcd_now_ms) < next)); do sleep 0.5; done
  done
}

# ping node I -> node J over rc0 for the whole soak; a ping that ends (rc0
# gone with a restarted daemon, or its 3000 s deadline: its icmp_seq stays
# below 16 bits) is followed by the next, into the next file.
soak_pinger() {
  local i=$1 j=$2 k=0 pid
  while [[ -e $SOAK_ON ]]; do
    k=$((k + 1))
    # Not through lab_in_node: $! must be ping's pid (ip netns exec execs it).
    ip netns exec "node$i" ping -n -D -O -i "$PING_IV" -W 1 -w 3000 "10.100.0.$j" \
      >"$OUT/ping-$i-$j.$k.ping" 2>&1 &
    pid=$!
    echo "$pid" >"$OUT/.ping-$i-$j.pid"
    wait "$pid"
    [[ -e $SOAK_ON ]] && sleep 0.5
  done
}

# iperf3 TCP node FROM -> node TO over rc0, runs of IPERF_SECS one after
# another, each with a server of its own (-1); one "R START END EXIT BYTES"
# line per run in soak-iperf.txt.
soak_iperf() {
  local from=$1 to=$2 k=0 srv t0 rc bytes
  while [[ -e $SOAK_ON ]]; do
    k=$((k + 1))
    ip netns exec "node$to" iperf3 -s -1 >"$OUT/iperf-$k-server.txt" 2>&1 &
    srv=$!
    if rcd_wait_tcp_listen "$to" 5201 10; then
      t0=$(rcd_now_ms)
      rc=0
      timeout -k 5 $((IPERF_SECS + 30)) ip netns exec "node$from" iperf3 -c "10.100.0.$to" \
        -B "10.100.0.$from" -t "$IPERF_SECS" -b "$IPERF_RATE" -J >"$OUT/iperf-$k.json" 2>&1 || rc=$?
      bytes=$(jq -r '.end.sum_received.bytes // 0 | floor' "$OUT/iperf-$k.json" 2>/dev/null)
      echo "R $t0 $(rcd_now_ms) $rc ${bytes:-0}" >>"$OUT/soak-iperf.txt"
    fi
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    [[ -e $SOAK_ON ]] && sleep 1
  done
}

# Node I and every other node ping each other over rc0 (one each way per
# pair until each answered), within SECS; prints the ms it took; 1 if not.
soak_reach() {
  local i=$1 secs=$2 t0 j left
  t0=$(rcd_now_ms)
  left=" $(seq -s ' ' 1 "$N") "
  left=${left/ $i / }
  while [[ -n ${left// /} ]]; do
    for j in $left; do
      if rcd_ping "$i" "$j" -c 1 -W 1 >/dev/null 2>&1 && rcd_ping "$j" "$i" -c 1 -W 1 >/dev/null 2>&1; then
        left=${left/ $j / }
        left=" ${left# } "
      fi
    done
    if (($(rcd_now_ms) - t0 > secs * 1000)); then
      echo "-1 (still unanswered: ${left// /,})"
      return 1
    fi
  done
  echo $(($(rcd_now_ms) - t0))
}

# Every peer of node I carried on rail R within SECS each; prints "J:ms".
soak_carriers() {
  local i=$1 r=$2 secs=$3 j ms ok=0 out=()
  for ((j = 1; j <= N; j++)); do
    ((j == i)) && continue
    ms=$(rails_wait_carrier "$i" "$j" "$r" "$secs") || {
      ok=1
      ms="none($(rails_carrier "$i" "$j"))"
    }
    out+=("node$j:$ms")
  done
  echo "${out[*]}"
  return "$ok"
}

# timeouts.idle of node I's config between 600 s and 601 s (a live key).
soak_toggle_idle() {
  local f=$OUT/node-$1.toml
  if grep -q '^idle = "600s"' "$f"; then
    sed -i 's/^idle = "600s"/idle = "601s"/' "$f"
  else
    sed -i 's/^idle = "601s"/idle = "600s"/' "$f"
  fi
}

# --- the faults: each sets REC (1: its end was seen) and DETAIL ------------------------------

fault_kill() {
  local i=$1 ms
  rcd_kill "$i" KILL
  if ! rcd_wait_exit "$i" 30; then
    lab_fail "node$i's SIGKILLed rcnetd did not exit within 30 s"
    BROKEN="a SIGKILLed rcnetd did not exit"
    return 1
  fi
  DETAIL="exit ${RCD_EXIT[$i]}"
  if ! rcd_start "$i"; then
    BROKEN="restart of node$i failed"
    return 1
  fi
  soak_write_pid "$i"
  ms=$(soak_reach "$i" 60) || REC=0
  DETAIL+=", restarted as pid ${RCD_PID[$i]}, node$i <-> every node pinged after $ms ms"
}

fault_flap() {
  local i=$1 r rails=$(((CYCLE - 1) % 2)) port ms mid
  ((CYCLE == 1)) && rails="0 1" # the warm-up: both rails
  DETAIL=
  for r in $rails; do
    port=$(lab_node_port "$i" "$r")
    rails_link "$port" down
    sleep 3
    mid=$(rails_state "$i" "$r")
    rails_link "$port" up
    ms=$(rails_wait_state "$i" "$r" up 60) || REC=0
    DETAIL+="${DETAIL:+; }$port (rail $r) down 3 s: rail $mid; up again after $ms ms"
    ms=$(soak_carriers "$i" 0 60) || REC=0
    DETAIL+=", rail 0 carries $ms"
  done
}

fault_failover() {
  local i=$1 ms n
  rcd_block_roce "$i" >/dev/null || lab_log "rcd_block_roce $i failed"
  ms=$(soak_carriers "$i" 1 20) || REC=0
  DETAIL="silent drop on b_$i: rail 1 carries $ms"
  n=$(rcd_unblock_roce "$i") || {
    lab_fail "rcd_unblock_roce $i failed: node$i's rail 0 stays cut"
    BROKEN="the silent drop could not be ended"
    return 1
  }
  ms=$(soak_carriers "$i" 0 60) || REC=0
  DETAIL+="; $n packets dropped; back on rail 0: $ms"
}

fault_delete() {
  local i=$1 dev ms
  dev=$(lab_node_rdma_dev "$i" 0)
  # Ends the scenario (lab_die) if the delete has not returned in 30 s.
  rcd_link_delete "$dev"
  DETAIL="rdma link delete $dev: exit $RCD_DELETE_RC after $RCD_DELETE_MS ms"
  if ((RCD_DELETE_RC != 0)); then
    REC=0
    DETAIL+=" ($(tr '\n' ' ' <"$OUT/link-delete.txt"))"
    return 0
  fi
  ms=$(soak_carriers "$i" 1 20) || REC=0
  DETAIL+=", rail 1 carries $ms"
  if ! rdma link add "$dev" type "${RCNET_LAB_PROVIDER:-rxe}" netdev "$(lab_node_dev "$i" 0)"; then
    lab_fail "rdma link add $dev failed: node$i has no rail-0 device from now on"
    BROKEN="rdma link add $dev failed"
    return 1
  fi
  ms=$(rails_wait_state "$i" 0 up 60) || REC=0
  DETAIL+="; re-added, rail 0 up after $ms ms"
  ms=$(soak_carriers "$i" 0 60) || REC=0
  DETAIL+=", carries $ms"
}

fault_reload() {
  local i=$1 nx=$(($1 % N + 1)) out from line
  soak_toggle_idle "$i"
  out=$(rails_ctl "$i" reload 2>&1) || REC=0
  DETAIL="node$i rcnetctl reload: ${out//$'\n'/ }"
  soak_toggle_idle "$nx"
  from=$(($(wc -l <"$OUT/rcnetd-$nx.log") + 1))
  rcd_kill "$nx" HUP
  line=$(rcd_wait_log "$nx" 'reload applied|reload: ' 10 "$from") || REC=0
  DETAIL+="; node$nx SIGHUP: ${line:-no reload line within 10 s}"
}

fault_flood() {
  local i=$1 w k mon=() wp=() ok=0 bad=0 a b workers=8 per
  local cmds=(status peers connections qps srq stats rails config audit "route get 10.100.0.$((i % N + 1))")
  local -a argv
  per=$(((FLOOD + workers - 1) / workers))
  for k in 1 2; do
    "$RAILS_CTL" -s "/run/rcnet/node$i.sock" -j monitor >/dev/null 2>&1 &
    mon+=($!)
  done
  for ((w = 0; w < workers; w++)); do
    (
      a=0 b=0
      for ((k = 0; k < per; k++)); do
        read -ra argv <<<"${cmds[(w + k) % ${#cmds[@]}]}"
        if rails_ctl "$i" "${argv[@]}" >/dev/null 2>&1; then a=$((a + 1)); else b=$((b + 1)); fi
      done
      echo "$a $b" >"$OUT/.flood-$w"
    ) &
    wp+=($!)
  done
  wait "${wp[@]}"
  # Background commands start with SIGINT ignored: SIGTERM ends a monitor.
  kill -TERM "${mon[@]}" 2>/dev/null
  wait "${mon[@]}" 2>/dev/null
  for ((w = 0; w < workers; w++)); do
    read -r a b <"$OUT/.flood-$w" 2>/dev/null || continue
    ok=$((ok + a)) bad=$((bad + b))
  done
  DETAIL="$((workers * per)) rcnetctl calls from $workers clients + 2 monitors: $ok exit 0, $bad not (refusals, audit mismatches)"
}

# Runs fault KIND on node I as window F<n> of cycle CYCLE, then waits for
# the counts to come back (soak_settle).
soak_fault() {
  local kind=$1 i=$2 t0 t1 id
  FAULT_NO=$((FAULT_NO + 1))
  id=F$FAULT_NO
  REC=1 DETAIL=
  lab_log "$id (cycle $CYCLE): $kind on node$i"
  t0=$(rcd_now_ms)
  "fault_$kind" "$i"
  t1=$(rcd_now_ms)
  echo "F $id $CYCLE $kind $i $t0 $t1 $REC ${DETAIL:--}" >>"$OUT/soak-faults.txt"
  lab_log "$id: $((t1 - t0)) ms$( ((REC)) || echo ", its end NOT seen within the bound"): $DETAIL"
  [[ -z $BROKEN ]] || return 1
  soak_alive || return 1
  soak_settle "$id" "$t1"
}

# After fault ID ended at END_MS: past the grace, sample until every
# node's counts are the baseline's (soak_report.py --settled), at most
# SETTLE_S after the end. Either way the soak goes on, PRE_MS later: the
# next window, padded, must not reach back over the last sample, or the
# report would not count it as quiet.
soak_settle() {
  local id=$1 end=$2 why
  soak_sleep_until $((end + GRACE_S * 1000)) || return 1
  while true; do
    soak_sample "after $id"
    if why=$(python3 "$REPORT" --settled "$OUT"); then
      lab_log "$id: counts at the baseline $(($(rcd_now_ms) - end)) ms after its end"
      soak_sleep_ms $((PRE_MS + 100))
      return 0
    fi
    if (($(rcd_now_ms) - end > SETTLE_S * 1000)); then
      lab_log "$id: $why, ${SETTLE_S} s after its end (reported; the soak goes on)"
      soak_sleep_ms $((PRE_MS + 100))
      return 0
    fi
    soak_sleep_ms 2000
    soak_alive || return 1
  done
}

# Stops the traffic and the sampler, keeps the end state, stops the
# daemons, prints the report. Runs once: at the end, or on the way out of
# a broken run (lab_die).
soak_end() {
  [[ -z ${SOAK_ENDED:-} ]] || return 0
  SOAK_ENDED=1
  local i k pid rc f
  rm -f "$SOAK_ON"
  # Twice: a ping that a loop started just before the flag went is in its
  # pid file by the second pass.
  for k in 1 2; do
    for f in "$OUT"/.ping-*.pid; do
      [[ -e $f ]] || continue
      read -r pid <"$f" && kill -INT "$pid" 2>/dev/null
    done
    sleep 1
  done
  for pid in "${LOOPS[@]}"; do
    for ((k = 0; k < (IPERF_SECS + 60) * 2; k++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  for ((i = 1; i <= N; i++)); do
    { [[ -n ${RCD_PID[$i]:-} ]] && kill -0 "${RCD_PID[$i]}" 2>/dev/null; } || continue
    rails_ctl "$i" -j stats >"$OUT/stats-end-$i.json" 2>&1
    rails_ctl "$i" qps >"$OUT/qps-end-$i.txt" 2>&1
    rails_ctl "$i" rails >"$OUT/rails-end-$i.txt" 2>&1
    rc=0
    rails_ctl "$i" audit >"$OUT/audit-end-$i.txt" 2>&1 || rc=$?
    lab_log "node$i audit at the end: exit $rc ($(tail -n 1 "$OUT/audit-end-$i.txt"))"
  done
  lab_collect end >/dev/null
  for ((i = 1; i <= N; i++)); do
    { [[ -n ${RCD_PID[$i]:-} ]] && kill -TERM "${RCD_PID[$i]}" 2>/dev/null; } || continue
    rcd_wait_exit "$i" 30
    case ${RCD_EXIT[$i]} in
      0) lab_pass "rcnetd node$i exited 0 on SIGTERM" ;;
      timeout) lab_fail "rcnetd node$i still runs 30 s after SIGTERM" ;;
      1) lab_log "rcnetd node$i exited 1 on SIGTERM (its graceful stop ran out of time; rcnetd-$i.log)" ;;
      *) lab_fail "rcnetd node$i on SIGTERM: exit ${RCD_EXIT[$i]}" ;;
    esac
  done
  dmesg >"$OUT/dmesg.txt" 2>&1
  lab_log "soak report (tools/bench/soak_report.py $OUT):"
  python3 "$REPORT" "$OUT" 2>&1 | tee "$OUT/soak-report.txt"
}

# --- the run -----------------------------------------------------------------------------

lab_setup_nodes "$N" --rails 2 || lab_die "node setup"
for ((i = 1; i <= N; i++)); do rcd_block_roce_prepare "$i" || lab_die "tc clsact on b_$i"; done
rails_start_nodes "$N" || lab_die "two-rail nodes"
for ((i = 1; i <= N; i++)); do soak_write_pid "$i"; done
lab_log "soak: $N nodes, two rails, $MINUTES min, faults per cycle: ${FAULTS[*]}; kernel $(uname -r)"

LOOPS=()
trap soak_end EXIT
touch "$SOAK_ON"
for ((i = 1; i <= N; i++)); do
  for ((j = i + 1; j <= N; j++)); do
    soak_pinger "$i" "$j" &
    LOOPS+=($!)
  done
done
soak_iperf 1 3 &
LOOPS+=($!)
t_soak0=$(rcd_now_ms)
soak_sampler &
LOOPS+=($!)

# The baseline: once the links on both rails are made (each node's QP
# count and nothing in teardown, the same three polls in a row, within
# 60 s) and two periodic samples later.
prev='' same=0 steady=0
for ((k = 0; k < 60; k++)); do
  now='' steady=1
  for ((i = 1; i <= N; i++)); do
    v=$(rails_ctl "$i" -j status 2>/dev/null | jq -r '"\(.qps)/\(.in_teardown)"' 2>/dev/null)
    [[ $v =~ ^[0-9]+/0$ ]] || steady=0
    now+=" ${v:-?}"
  done
  if ((steady)) && [[ $now == "$prev" ]]; then
    same=$((same + 1))
    ((same >= 2)) && break
  else
    same=0
  fi
  prev=$now
  sleep 1
done
lab_log "steady before the baseline (QPs/in teardown per node):$now$( ((same >= 2)) || echo " (not steady after 60 polls; the baseline is taken anyway)")"
soak_sleep_until $(($(rcd_now_ms) + 2 * SAMPLE_S * 1000)) || lab_die "$BROKEN"
soak_sample baseline
python3 "$REPORT" --settled "$OUT" >/dev/null # parses the samples once: a broken format shows here
lab_log "baseline taken; $(((BUDGET_MS - ($(rcd_now_ms) - t_soak0)) / 1000)) s of the soak left, the last $((TAIL_MS / 1000)) s quiet"

CYCLE=0
est=0 made=0
while [[ -z $BROKEN ]]; do
  now=$(rcd_now_ms)
  ((CYCLE > 0 && now - t_soak0 + est > BUDGET_MS - TAIL_MS)) && break
  CYCLE=$((CYCLE + 1))
  for ((f = 0; f < ${#FAULTS[@]}; f++)); do
    nodes=$(((CYCLE - 1 + f) % N + 1))
    # The warm-up: in cycle 1, every node.
    ((CYCLE == 1)) && nodes=$(seq 1 "$N")
    # Every device delete is node N's own (see "delete" above).
    [[ ${FAULTS[f]} == delete ]] && nodes=$N
    [[ ${FAULTS[f]} == kill && -n $KILL_NODE ]] && nodes=$KILL_NODE
    for node in $nodes; do
      soak_fault "${FAULTS[f]}" "$node" || break 3
      made=$((made + 1))
    done
  done
  est=$(($(rcd_now_ms) - now))
  lab_log "cycle $CYCLE done in $((est / 1000)) s ($made faults); $((($(rcd_now_ms) - t_soak0) / 1000)) of $((BUDGET_MS / 1000)) s"
  # The next cycle's time, for the check above: the warm-up made more
  # faults than a cycle after it does.
  est=$((est * ${#FAULTS[@]} / made))
  made=0
done
if [[ -z $BROKEN ]]; then
  end=$((t_soak0 + BUDGET_MS))
  (($(rcd_now_ms) + 3 * SAMPLE_S * 1000 > end)) && end=$(($(rcd_now_ms) + 3 * SAMPLE_S * 1000))
  lab_log "quiet tail until $(((end - t_soak0) / 1000)) s"
  soak_sleep_until "$end"
fi
[[ -n $BROKEN ]] || soak_alive
[[ -n $BROKEN ]] || soak_sample end
lab_expect "the soak ran $CYCLE fault cycle(s) without breaking${BROKEN:+ (broken: $BROKEN)}" [ -z "$BROKEN" ]
soak_end
lab_finish
