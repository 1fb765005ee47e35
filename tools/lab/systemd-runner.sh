#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ExecStart= of rcnet-lab-scenario.service in a lab guest booted with systemd
# as init (rcnet-lab run --systemd; tools/lab/init.sh installs the unit).
# rcnet-lab copies it into the work share as .lab/systemd-runner.sh. It does
# what the busybox /init does after its chroot: the start marker, the
# scenario under the in-guest timeout with the same clean environment, the
# result files (.lab/scenario-seconds, .lab/exit-code), the exit marker.
# It exits with the scenario's status; the unit's SuccessAction= and
# FailureAction= then power the guest off at once.
#
# The two markers go straight to /dev/console: the host-side driver reads
# them there, and the exit marker must be out before the immediate poweroff,
# which does not wait for journald to forward anything. The scenario's own
# output reaches the console through the journal (StandardOutput=journal+console).
set -u -o pipefail

readonly WORK=/tmp/rcnet-lab
readonly EXIT_MARKER='RCNET-LAB-EXIT:'
readonly START_MARKER='RCNET-LAB-SCENARIO-START'

console() { printf '%s\n' "$*" >/dev/console; }
uptime_ms() {
  local up _
  read -r up _ </proc/uptime
  echo $((10#${up/./} * 10))
}
lab_failed() {
  console "rcnet-lab runner: $*"
  console "$EXIT_MARKER 125 (lab init failed: $*)"
  exit 125
}

# shellcheck source=/dev/null
. "$WORK/.lab/env.sh" || lab_failed "cannot read $WORK/.lab/env.sh"
for d in /dev/infiniband/rdma_cm /dev/net/tun; do
  [[ -c $d ]] || lab_failed "$d missing (the initramfs loads the RDMA modules)"
done

clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
read -r up _ </proc/uptime
console "$START_MARKER nodes=$RCNET_LAB_NODES kernel=$RCNET_LAB_KVER clocksource=$clocksource init=systemd uptime=${up}s"
t0=$(uptime_ms)
# The environment of busybox mode: nothing of the unit's (JOURNAL_STREAM
# would send a directly started rcnetd's log to the journal, not its file).
# shellcheck disable=SC2016 # expanded by the inner shell
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp TERM=dumb LANG=C.UTF-8 /bin/bash -c '
  set -a
  . '"$WORK"'/.lab/env.sh
  set +a
  cd "$RCNET_RESULTS"
  exec timeout -k 5 "$RCNET_LAB_TIMEOUT" /bin/bash "$RCNET_RESULTS/.lab/scenario.sh" "$@"
  '
rc=$?
t1=$(uptime_ms)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
echo "$secs" >"$WORK/.lab/scenario-seconds"
echo "$rc" >"$WORK/.lab/exit-code"
if ((rc == 124)); then
  console "rcnet-lab runner: scenario killed by its in-guest timeout (${RCNET_LAB_TIMEOUT}s)"
fi
# journald has forwarded every line the scenario wrote once it answers.
journalctl --sync 2>/dev/null
console "$EXIT_MARKER $rc (scenario wall time ${secs}s)"
sync
exit "$rc"
