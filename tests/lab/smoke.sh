#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Lab smoke test: two Soft-RoCE nodes reach each other with rping, both
# directions, every iteration's payload verified (-V).
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

lab_setup_nodes 2 || lab_die "node setup"
lab_rping 1 2 5
lab_rping 2 1 5
lab_collect smoke
lab_expect "no QP left after rping exits" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
