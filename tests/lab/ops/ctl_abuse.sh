#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ctl socket abuse against a live rcnetd (tests/lab/ops/ctl_abuse.py): random
# bytes, a 10 MB request, a half request then silence, 200 concurrent clients,
# deeply nested JSON, unprivileged clients asking for changes, and a read-only
# member holding many idle connections. rcnetd keeps its pid and its pair keeps
# pinging.
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

S1=/run/rcnet/node1.sock
lab_setup_nodes 2 || lab_die "node setup"
# The guest's /etc is the host's, read-only: use Debian's stock group "users"
# as the read-only ctl group and uid 65534 (nobody) as the client.
gid=$(getent group users | cut -d: -f3)
[[ -n $gid ]] || lab_die "no group 'users' on this system"
for i in 1 2; do
  rcd_config "$i" "[timeouts]" 'idle = "120s"'
  sed -i 's/^group = "root"/group = "users"/' "$RCNET_RESULTS/node-$i.toml"
done
i=1
rcd_start 1 || lab_die "start node1"
i=2
rcd_start 2 || lab_die "start node2"
pid1=${RCD_PID[1]}
lab_expect "ping node1 -> node2 over rc0 before" rcd_ping 1 2 -c 2 -W 5
chmod 0777 /run/rcnet 2>/dev/null || true
chmod 0666 "$S1" 2>/dev/null || true

lab_timeout 240 python3 "$RCNET_SRC/tests/lab/ops/ctl_abuse.py" "$S1" 65534 "$gid" \
  >"$RCNET_RESULTS/ctl_abuse.txt" 2>&1
while read -r verdict rest; do
  case $verdict in
    PASS) lab_pass "$rest" ;;
    FAIL) lab_fail "$rest" ;;
  esac
done <"$RCNET_RESULTS/ctl_abuse.txt"
grep -q "ctl abuse: " "$RCNET_RESULTS/ctl_abuse.txt" || lab_fail "ctl_abuse.py did not finish: $(tail -3 "$RCNET_RESULTS/ctl_abuse.txt" | tr '\n' ' ')"

lab_expect "rcnetd node1 kept its pid ($pid1)" kill -0 "$pid1"
lab_expect "ping node1 -> node2 over rc0 after" rcd_ping 1 2 -c 2 -W 5
rcd_stop_all
lab_finish
