#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The host side of the lab-soak benchmark (meson test --benchmark lab-soak;
# docs/lab.md "The soak benchmark"): boots soak.sh on four nodes with a
# wall-time limit of RCNET_SOAK_MINUTES (default 30) x 60 s + MARGIN_S. The
# guest sees no host environment but what rcnet-lab writes for it, so every
# RCNET_SOAK_* variable set here goes to the scenario as an argument
# NAME=VALUE.
#
#   run_soak.sh RCNET_LAB SOAK_SH RESULTS
set -euo pipefail
# Besides the soak's minutes: the boot and the two-rail setup of four nodes
# (about 2 min under TCG), the baseline (up to 90 s), one fault cycle that
# starts just before the quiet tail and whose bounded waits all run out
# (about 8 min), and the end (traffic stopped, daemons stopped, the report);
# and the warm-up cycle, which always runs and makes 18 faults (17.5 min on
# a quiet host on 2026-12-02): a short run is mostly the warm-up.
MARGIN_S=2400
(($# == 3)) || {
  echo "usage: run_soak.sh RCNET_LAB SOAK_SH RESULTS" >&2
  exit 2
}
lab=$1 scenario=$2 results=$3
minutes=${RCNET_SOAK_MINUTES:-30}
if ! [[ $minutes =~ ^[0-9]+$ ]] || ((10#$minutes < 1)); then
  echo "run_soak.sh: RCNET_SOAK_MINUTES must be a whole number of minutes >= 1, not '$minutes'" >&2
  exit 2
fi
minutes=$((10#$minutes))
args=()
for v in $(compgen -e); do
  [[ $v == RCNET_SOAK_* ]] && args+=("$v=${!v}")
done
echo "run_soak.sh: $minutes min of soak, wall-time limit $((minutes * 60 + MARGIN_S)) s; scenario arguments: ${args[*]:-none}"
exec "$lab" run "$scenario" --nodes 4 --timeout $((minutes * 60 + MARGIN_S)) --results "$results" \
  -- "${args[@]}"
