#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# /init of the rcnet lab's initramfs (built by tools/lab/rcnet-lab prepare).
# Mounts the host's / (read-only 9p) and the run's work share (read-write 9p),
# chroots into the host tree, loads the RDMA modules, runs the scenario and
# reports its exit code on the console and in the work share, then powers off.
# Runs under busybox only: nothing of the host is usable before the chroot.

/bin/busybox --install -s /bin
export PATH=/bin

EXIT_MARKER='RCNET-LAB-EXIT:'
START_MARKER='RCNET-LAB-SCENARIO-START'
WORK=/tmp/rcnet-lab
# 512 KiB msize: far fewer 9p round trips than the 8 KiB default, which
# matters under TCG when every binary and library is read over 9p.
P9OPTS=trans=virtio,version=9p2000.L,msize=524288

mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

halt_now() {
  sync
  poweroff -f
  sleep 5
}
fail() {
  echo "rcnet-lab init: $*"
  echo "$EXIT_MARKER 125 (lab init failed: $*)"
  halt_now
}
uptime_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
while read -r m; do
  insmod "/modules/$m" || fail "insmod $m"
done </modules.order

mount -t 9p -o "$P9OPTS,ro,cache=loose" hostroot /mnt || fail "mount host root over 9p"
mount -t proc proc /mnt/proc || fail "mount /mnt/proc"
mount -t sysfs sysfs /mnt/sys || fail "mount /mnt/sys"
mount -t devtmpfs devtmpfs /mnt/dev || fail "mount /mnt/dev"
mkdir -p /mnt/dev/pts /mnt/dev/shm
# devtmpfs has no /dev/fd: bash process substitution needs it.
ln -sf /proc/self/fd /mnt/dev/fd
ln -sf /proc/self/fd/0 /mnt/dev/stdin
ln -sf /proc/self/fd/1 /mnt/dev/stdout
ln -sf /proc/self/fd/2 /mnt/dev/stderr
mount -t devpts devpts /mnt/dev/pts
mount -t tmpfs tmpfs /mnt/dev/shm
# The guest gets its own /tmp and /run, which hides the host's. Keep a view
# of the host's so that a source or build tree living there (a CI clone in
# /tmp, say) can be put back at the same path below.
mkdir -p /hosttmp /hostrun
mount --bind /mnt/tmp /hosttmp || fail "bind the host's /tmp"
mount --bind /mnt/run /hostrun || fail "bind the host's /run"
mount -t tmpfs -o mode=1777 tmpfs /mnt/tmp || fail "mount /mnt/tmp"
mount -t tmpfs -o mode=0755 tmpfs /mnt/run || fail "mount /mnt/run"
mkdir -p /mnt$WORK
mount -t 9p -o "$P9OPTS" work /mnt$WORK || fail "mount the work share"
[ -f /mnt$WORK/.lab/env.sh ] || fail "no .lab/env.sh in the work share"
. /mnt$WORK/.lab/env.sh

# Trees the scenario needs that the guest's /tmp or /run would hide.
for p in "$RCNET_SRC" "$RCNET_BUILD_DIR" "$RCNET_LAB_MODTREE"; do
  case "$p" in
  /tmp/*) from=/hosttmp${p#/tmp} ;;
  /run/*) from=/hostrun${p#/run} ;;
  *) continue ;;
  esac
  [ -d "$from" ] || fail "$p is not visible to the guest ($from missing)"
  mkdir -p "/mnt$p" && mount --bind "$from" "/mnt$p" || fail "bind $p into the guest"
done

# The extracted kernel's modules, where plain modprobe looks for them too.
if [ -d /mnt/lib/modules ]; then
  mount --bind "/mnt$RCNET_LAB_MODTREE/lib/modules" /mnt/lib/modules ||
    echo "rcnet-lab init: cannot bind the module tree over /lib/modules"
fi
# One modprobe for all (each exec over 9p is slow under TCG); -a loads them
# in the order given, crc32_generic first.
# shellcheck disable=SC2086
chroot /mnt /sbin/modprobe -a -d "$RCNET_LAB_MODTREE" $RCNET_LAB_GUEST_MODULES ||
  fail "modprobe -a $RCNET_LAB_GUEST_MODULES"
for d in /mnt/dev/infiniband/rdma_cm /mnt/dev/net/tun; do
  [ -c "$d" ] || fail "$d missing after loading modules"
done

# The clock source the guest runs on (rcnet-lab boots with tsc=reliable
# clocksource=tsc, as real nodes read the TSC through the vDSO); recorded for
# the benchmark, which refuses to compare anything measured on another one.
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
echo "$clocksource" >/mnt$WORK/.lab/clocksource
echo "$START_MARKER nodes=$RCNET_LAB_NODES kernel=$RCNET_LAB_KVER clocksource=$clocksource uptime=$(cut -d" " -f1 /proc/uptime)s"
t0=$(uptime_ms)
chroot /mnt /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
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
echo "$secs" >/mnt$WORK/.lab/scenario-seconds
echo "$rc" >/mnt$WORK/.lab/exit-code
if [ "$rc" -eq 124 ]; then
  echo "rcnet-lab init: scenario killed by its in-guest timeout (${RCNET_LAB_TIMEOUT}s)"
fi
echo "$EXIT_MARKER $rc (scenario wall time ${secs}s)"
sync
umount -l /mnt$WORK
halt_now
