#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Startup errors on a real machine: a malformed config exits 2 naming key and
# line; an address no interface holds, and an address on an interface with no
# RDMA device, exit 1 with one clear line, and leave no TUN behind.
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
rcd_config 1
cp "$RCNET_RESULTS/node-1.toml" "$RCNET_RESULTS/bad-mtu.toml"
printf '[srq]\nsize = "many"\n' >>"$RCNET_RESULTS/bad-mtu.toml"
run 2 ':[0-9]*: srq.size' "$RCNET_RESULTS/bad-mtu.toml"

printf '[node]\naddress = "10.99.0.1"\n[tun\n' >"$RCNET_RESULTS/syntax.toml"
run 2 'syntax.toml' "$RCNET_RESULTS/syntax.toml"

sed 's/10.99.0.1"/10.99.7.7"/' "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/no-owner.toml"
run 1 'no interface holds address 10.99.7.7' "$RCNET_RESULTS/no-owner.toml"

ip link add rcdummy0 type dummy && ip addr add 10.98.0.1/24 dev rcdummy0 && ip link set rcdummy0 up
sed 's/10.99.0.1"/10.98.0.1"/' "$RCNET_RESULTS/node-1.toml" >"$RCNET_RESULTS/no-rxe.toml"
run 1 '10.98.0.1' "$RCNET_RESULTS/no-rxe.toml"
lab_expect "one error line for the missing device" [ "$(wc -l <"$RCNET_RESULTS/no-rxe.toml.out")" -eq 1 ]
lab_expect "no TUN left behind in node1's netns" [ -z "$(ip -n node1 -o link show rc0 2>/dev/null)" ]
lab_expect "no QP left" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
