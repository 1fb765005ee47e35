#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Every directed pair of N nodes (default 4: 12 pairs) reaches the other with
# rping, payload verified; each pair uses its own port so a stuck listener
# of one pair cannot make the next pass.
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"

n=${RCNET_LAB_NODES:-4}
lab_setup_nodes "$n" || lab_die "node setup"
pairs=0
for ((i = 1; i <= n; i++)); do
  for ((j = 1; j <= n; j++)); do
    ((i == j)) && continue
    lab_rping "$i" "$j" 3 $((7200 + i * 32 + j))
    pairs=$((pairs + 1))
  done
done
lab_expect "$pairs directed pairs tried" [ "$pairs" -eq $((n * (n - 1))) ]
lab_collect mesh
lab_expect "no QP left after rping exits" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
