#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Startup errors on a real machine: a malformed config exits 2 naming key and
# line; an address on an interface with no RDMA device, and a missing TUN
# namespace exit 1 with one clear line, and leave no TUN, QP or rdma_cm id
# behind. An address no interface holds yet is waited for (rcnetd(8)
# "STARTUP"): rcnetd says so once, starts when the address appears, and a
# SIGTERM during the wait exits 0.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

lab_setup_nodes 2 || lab_die "node setup"
run() { # expected-exit pattern config-file
  local want=$1 pattern=$2 f=$3 rc=0 out
  out=$("$RCD_BIN" -c "$f" 2>&1) || rc=$?
  echo "$out" >"$f.out"
  if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" <<<"$out"; then
    lab_pass "$(basename "$f"): exit $rc, '$(head -1 <<<"$out")'"
  else
    lab_fail "$(basename "$f"): exit $rc (want $want), output '$out' lacks '$pattern'"
  fi
}
# Until "$@" succeeds, bounded by SECS of wall time.
wait_for() {
  local deadline
  deadline=$(($(rcd_now_ms) + $1 * 1000))
  shift
  until "$@"; do
    (($(rcd_now_ms) > deadline)) && return 1
    sleep 0.1
  done
}
rcd_config 1
cp "$RCNET_RESULTS/node-1.toml" "$RCNET_RESULTS/bad-mtu.toml"
printf '[srq]\nsize = "many"\n' >>"$RCNET_RESULTS/bad-mtu.toml"
run 2 ':[0-9]*: srq.size' "$RCNET_RESULTS/bad-mtu.toml"

printf '[node]\naddress = "10.99.0.1"\n[tun\n' >"$RCNET_RESULTS/syntax.toml"
run 2 'syntax.toml' "$RCNET_RESULTS/syntax.toml"

# node.address and tun.address moved together: the prefix rule maps them to
# each other, which --check-config demands (rcnetd.toml(5)).
sed 's/10.99.0.1"/10.99.0.77"/; s#10.100.0.1/24"#10.100.0.77/24"#' "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/no-owner.toml"
# SIGTERM while waiting: exit 0, nothing created.
"$RCD_BIN" -c "$RCNET_RESULTS/no-owner.toml" >"$RCNET_RESULTS/no-owner-term.out" 2>&1 &
pid=$!
waiting() { grep -q 'node.address 10.99.0.77 is on no interface yet: waiting for it' "$1"; }
wait_for 20 waiting "$RCNET_RESULTS/no-owner-term.out"
lab_expect "address on no interface yet: rcnetd waits, saying so: '$(head -1 "$RCNET_RESULTS/no-owner-term.out")'" \
  waiting "$RCNET_RESULTS/no-owner-term.out"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
lab_expect "SIGTERM during the wait: exit $rc (want 0)" [ "$rc" -eq 0 ]
lab_expect "no TUN while waiting" [ -z "$(ip -n node1 -o link show rc0 2>/dev/null)" ]
# The address appears later: rcnetd starts on it.
cp "$RCNET_RESULTS/no-owner.toml" "$RCNET_RESULTS/node-9.toml"
rm -f "$RCNET_RESULTS/rcnetd-9.log"
"$RCD_BIN" -c "$RCNET_RESULTS/node-9.toml" >"$RCNET_RESULTS/rcnetd-9.log" 2>&1 &
RCD_PID[9]=$!
wait_for 20 waiting "$RCNET_RESULTS/rcnetd-9.log"
ip addr add 10.99.0.77/24 dev "$(lab_node_dev 1)" || lab_fail "cannot add 10.99.0.77 to $(lab_node_dev 1)"
if line=$(rcd_wait_log 9 'TUN rc0 up' 30); then
  lab_pass "started once 10.99.0.77 appeared: $(grep -m1 'underlay address present' "$RCNET_RESULTS/rcnetd-9.log")"
else
  lab_fail "not started 30 s after 10.99.0.77 appeared: $(tail -3 "$RCNET_RESULTS/rcnetd-9.log" | tr '\n' ' ')"
fi
rcd_kill 9 TERM
rcd_wait_exit 9 30
lab_expect "the late starter exits 0 on SIGTERM (${RCD_EXIT[9]})" [ "${RCD_EXIT[9]}" = 0 ]
ip addr del 10.99.0.77/24 dev "$(lab_node_dev 1)"

# A veth (its module is loaded; the kernel cannot autoload others from the
# guest's chroot) that holds the address but has no rxe device on it.
ip link add rcnorxe0 type veth peer name rcnorxe1 && ip addr add 10.98.0.1/24 dev rcnorxe0 &&
  ip link set rcnorxe0 up && ip link set rcnorxe1 up || lab_fail "cannot create the veth rcnorxe0"
sed 's/10.99.0.1"/10.98.0.1"/; s|"10.99.0.0/24"|"10.98.0.0/24"|' "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/no-rxe.toml"
run 1 'cannot listen on 10.98.0.1:[0-9]* (RDMA device)' "$RCNET_RESULTS/no-rxe.toml"
lab_expect "one error line for the missing device" [ "$(wc -l <"$RCNET_RESULTS/no-rxe.toml.out")" -eq 1 ]
# A failure after rc0 exists (created here, then moved): the namespace is
# missing. The daemon has a listener by then; all of it must go.
sed 's/^netns = .*/netns = "rcnosuchns"/' "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/no-netns.toml"
run 1 'cannot create TUN rc0 in tun.netns "rcnosuchns": open /run/netns/rcnosuchns' "$RCNET_RESULTS/no-netns.toml"
lab_expect "no TUN left behind (root netns or node1's)" \
  [ -z "$(ip -o link show rc0 2>/dev/null)" -a -z "$(ip -n node1 -o link show rc0 2>/dev/null)" ]
lab_expect "no rdma_cm id left listening on 10.99.0.1" \
  [ -z "$(rdma res show cm_id 2>/dev/null | grep 'src-addr 10.99.0.1:')" ]
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
