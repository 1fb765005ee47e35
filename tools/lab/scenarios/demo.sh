#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The demo run by tools/demo.sh: two Soft-RoCE nodes, rping both ways with
# its output shown, the kernel's QP table while a connection is up.
# Extend it here (e.g. start $RCNET_BUILD_DIR/daemon/rcnetd on each node).
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

lab_setup_nodes 2 || lab_die "node setup"
rdma link show

for pair in "1 2" "2 1"; do
  read -r a b <<<"$pair"
  echo "--- rping node$a ($(lab_node_addr "$a")) -> node$b ($(lab_node_addr "$b"))"
  lab_rping "$a" "$b" 5
  cat "$RCNET_RESULTS/rping-$a-$b.client.txt"
done

echo "--- rdma res show qp, with an rping connection up"
timeout -k 5 60 rping -s -a 10.99.0.2 -p 7300 -C 400 >/dev/null 2>&1 &
spid=$!
lab_wait_listen 10.99.0.2 7300 20
timeout -k 5 60 rping -c -a 10.99.0.2 -I 10.99.0.1 -p 7300 -C 400 >/dev/null 2>&1 &
cpid=$!
for ((k = 0; k < 100; k++)); do
  (($(lab_qp_count) >= 2)) && break
  sleep 0.1
done
rdma res show qp
lab_expect "QPs of the live connection visible in rdma res show qp" [ "$(lab_qp_count)" -ge 2 ]
wait "$cpid" "$spid"
lab_collect demo
lab_finish
