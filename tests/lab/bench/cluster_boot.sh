#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cluster boot benchmark (issue 23): the CI scenario
# tests/lab/daemon/cluster_boot.sh (lab-daemon-cluster-boot, 16 nodes) at
# another node count; its figures are in $RCNET_RESULTS/cluster-boot.txt.
# Absolute times under TCG mean nothing beside another boot's; compare this
# one's between builds on one machine.
#   ARGS: [NODES] (default: the lab's node count)
exec bash "$RCNET_SRC/tests/lab/daemon/cluster_boot.sh" "$@"
