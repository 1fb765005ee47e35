#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Reference figures of rdma-core's own tools between two Soft-RoCE nodes
# (ucmatose, cmtime, ib_send_bw 64 KiB, ib_send_lat), written to
# $RCNET_RESULTS/anchors.json. Benchmarks call lab_perf_anchors themselves
# to compare rcnet with these figures within one run.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

lab_setup_nodes 2 || lab_die "node setup"
lab_perf_anchors 1 2 "$RCNET_RESULTS/anchors.json"
echo "anchors.json:"
cat "$RCNET_RESULTS/anchors.json"
lab_expect "anchors.json has every figure" bash -c '! grep -q null "$1"' _ "$RCNET_RESULTS/anchors.json"
lab_collect perf-anchors
lab_finish
