#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# /init of the rcnet lab's initramfs (built by tools/lab/rcnet-lab prepare).
# Mounts the host's / (read-only 9p) and the run's work share (read-write 9p)
# and builds the guest's root from them, loads the RDMA modules, then, by
# RCNET_LAB_INIT in the work share's .lab/env.sh:
#   busybox (default)  chroots into the host tree, runs the scenario, reports
#                      its exit code on the console and in the work share,
#                      and powers off;
#   systemd            the root is an overlay (the host tree read-only below a
#                      tmpfs: nothing reaches the host), into which this
#                      script installs rcnet-lab.target and the service
#                      rcnet-lab-scenario.service (which runs
#                      .lab/systemd-runner.sh: the same scenario, markers and
#                      result files as busybox mode, then powers off), masks
#                      what slows or hangs a disk-less boot, and hands over
#                      to /lib/systemd/systemd with switch_root.
# Runs under busybox only: nothing of the host is usable before the chroot.

/bin/busybox --install -s /bin
export PATH=/bin

EXIT_MARKER='RCNET-LAB-EXIT:'
START_MARKER='RCNET-LAB-SCENARIO-START'
STAGE_MARKER='RCNET-LAB-BOOT:'
WORK=/tmp/rcnet-lab
# Where this initramfs mounts the work share before the guest's root exists
# (the 9p tag "work"); bound to $WORK inside that root below.
SHARE=/share
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
# One console line per boot stage, with the kernel's uptime: rcnet-lab names
# the last one when a boot stalls (docs/lab.md "When a boot stalls"). Shell
# builtins only (read, echo): no exec. rcnet_lab_stall=STAGE on the kernel
# command line (the kernel passes unknown NAME=VALUE arguments to /init as
# environment variables) makes the boot hang at that stage, to check the
# stall detector; no lab run sets it.
stage() {
  read -r up _ </proc/uptime
  echo "$STAGE_MARKER ${up}s $1: $2"
  if [ "${rcnet_lab_stall:-}" = "$1" ]; then
    echo "rcnet-lab init: rcnet_lab_stall=$1 given: hanging here"
    while :; do sleep 3600; done
  fi
}

# systemd mode, once the overlay root $R is complete and the RDMA modules are
# loaded: boots rcnet-lab.target, i.e. basic.target (journald, udevd,
# tmpfiles, dbus.socket, ...) plus rcnet-lab-scenario.service, and not
# multi-user.target with whatever services the host has enabled. Written
# into the overlay's /etc, never into the host's.
boot_systemd() {
  u=$R/etc/systemd/system
  mkdir -p "$u" "$R/etc/tmpfiles.d"
  cat >"$u/rcnet-lab.target" <<EOF
[Unit]
Description=rcnet lab scenario boot
Requires=basic.target
After=basic.target
Wants=rcnet-lab-scenario.service
AllowIsolate=yes
EOF
  # .lab/systemd-runner.sh writes the markers and result files and exits
  # with the scenario's status; either way the guest then powers off at once
  # (nothing of it is kept: the overlay's upper layer is a tmpfs).
  # Type=exec, not oneshot: its start job ends once it runs, so the boot
  # finishes and the scenario sees a "running" system (systemd-analyze
  # time, is-system-running) as an operator would.
  cat >"$u/rcnet-lab-scenario.service" <<EOF
[Unit]
Description=rcnet lab scenario ${RCNET_LAB_SCENARIO##*/}
After=basic.target
SuccessAction=poweroff-immediate
FailureAction=poweroff-immediate

[Service]
Type=exec
ExecStart=/bin/bash $WORK/.lab/systemd-runner.sh
StandardOutput=journal+console
StandardError=journal+console
SyslogIdentifier=rcnet-lab
EOF
  ln -sf rcnet-lab.target "$u/default.target"
  # Nothing to wait for or to do on a guest without disks, network or
  # terminals: login prompts, time sync, network-online waits, and the
  # ConditionNeedsUpdate= jobs (the overlay's /etc has no .updated stamp, so
  # they would rebuild the hwdb and the ld.so cache on every boot); the
  # host's timers (man-db, apt, fstrim would fire: Persistent=).
  for m in getty@tty1.service serial-getty@ttyS0.service console-getty.service \
    systemd-timesyncd.service systemd-pstore.service systemd-firstboot.service \
    ldconfig.service systemd-hwdb-update.service systemd-journal-catalog-update.service \
    systemd-update-done.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
    systemd-networkd-wait-online.service NetworkManager-wait-online.service \
    ifupdown-wait-online.service; do
    ln -sf /dev/null "$u/$m"
  done
  for t in "$u"/timers.target.wants/*.timer; do
    [ -L "$t" ] || [ -e "$t" ] || continue
    ln -sf /dev/null "$u/${t##*/}"
  done
  # No mounts from the host's fstab: the root is this overlay.
  echo "# rcnet lab guest: / is an overlay made by the initramfs" >"$R/etc/fstab"
  # systemd-tmpfiles empties /tmp at boot (tmp.conf: D /tmp): keep it, it
  # holds the work share and the trees bound from the host's /tmp.
  printf '%s\n' "# rcnet lab: /tmp holds the work share; create it, never empty it" \
    "d /tmp 1777 root root -" >"$R/etc/tmpfiles.d/tmp.conf"
  stage systemd "switch_root to systemd on the overlay root"
  # switch_root must be PID 1 itself; a failed exec ends this shell (and
  # the guest: panic=-1), which the driver reports as a failed boot.
  # shellcheck disable=SC2093
  exec switch_root "$R" /lib/systemd/systemd
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
stage modules "insmod the 9p modules of /modules.order"
while read -r m; do
  insmod "/modules/$m" || fail "insmod $m"
done </modules.order

stage 9p "mount the host root and the work share over 9p"
mount -t 9p -o "$P9OPTS,ro,cache=loose" hostroot /mnt || fail "mount host root over 9p"
mkdir -p $SHARE
mount -t 9p -o "$P9OPTS" work $SHARE || fail "mount the work share"
[ -f $SHARE/.lab/env.sh ] || fail "no .lab/env.sh in the work share"
. $SHARE/.lab/env.sh

stage root "mount the guest's root (${RCNET_LAB_INIT:-busybox} mode)"
# R: the guest's root. busybox mode: the host tree itself (read-only).
# systemd mode: an overlay whose lower layer is that tree and whose upper
# layer is a tmpfs, so systemd, dpkg and the scenario can write anywhere and
# the host stays untouched.
R=/mnt
case "${RCNET_LAB_INIT:-busybox}" in
busybox) ;;
systemd)
  mkdir -p /overlay /newroot
  mount -t tmpfs -o mode=0755 tmpfs /overlay || fail "mount the overlay's tmpfs"
  mkdir -p /overlay/upper /overlay/work
  mount -t overlay -o lowerdir=/mnt,upperdir=/overlay/upper,workdir=/overlay/work \
    overlay /newroot || fail "mount the overlay root (overlay module loaded?)"
  R=/newroot
  ;;
*) fail "unknown RCNET_LAB_INIT '$RCNET_LAB_INIT' (busybox or systemd)" ;;
esac

mount -t proc proc $R/proc || fail "mount $R/proc"
mount -t sysfs sysfs $R/sys || fail "mount $R/sys"
mount -t devtmpfs devtmpfs $R/dev || fail "mount $R/dev"
mkdir -p $R/dev/pts $R/dev/shm
# devtmpfs has no /dev/fd: bash process substitution needs it.
ln -sf /proc/self/fd $R/dev/fd
ln -sf /proc/self/fd/0 $R/dev/stdin
ln -sf /proc/self/fd/1 $R/dev/stdout
ln -sf /proc/self/fd/2 $R/dev/stderr
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
# The guest gets its own /tmp and /run, which hides the host's. Keep a view
# of the host's so that a source or build tree living there (a CI clone in
# /tmp, say) can be put back at the same path below.
mkdir -p /hosttmp /hostrun
mount --bind /mnt/tmp /hosttmp || fail "bind the host's /tmp"
mount --bind /mnt/run /hostrun || fail "bind the host's /run"
mount -t tmpfs -o mode=1777 tmpfs $R/tmp || fail "mount $R/tmp"
mount -t tmpfs -o mode=0755 tmpfs $R/run || fail "mount $R/run"
mkdir -p $R$WORK
mount --bind $SHARE $R$WORK || fail "bind the work share to $WORK"

# Trees the scenario needs that the guest's /tmp or /run would hide.
for p in "$RCNET_SRC" "$RCNET_BUILD_DIR" "$RCNET_LAB_MODTREE"; do
  case "$p" in
  /tmp/*) from=/hosttmp${p#/tmp} ;;
  /run/*) from=/hostrun${p#/run} ;;
  *) continue ;;
  esac
  [ -d "$from" ] || fail "$p is not visible to the guest ($from missing)"
  mkdir -p "$R$p" && mount --bind "$from" "$R$p" || fail "bind $p into the guest"
done

# The extracted kernel's modules, where plain modprobe looks for them too.
if [ -d $R/lib/modules ]; then
  mount --bind "/mnt$RCNET_LAB_MODTREE/lib/modules" $R/lib/modules ||
    echo "rcnet-lab init: cannot bind the module tree over /lib/modules"
fi
stage modprobe "insmod $RCNET_LAB_GUEST_MODULES and their dependencies"
# From this initramfs (rcnet-lab put them in guest-modules.order, in
# modprobe's load order, crc32_generic first): no module read over 9p and no
# modprobe, a dynamic program that reads the module tree's indexes over 9p
# (2.2-2.8 s of the stage under TCG beside a build, 2026-12-07).
while read -r m; do
  insmod "/modules/$m" || fail "insmod $m"
done </guest-modules.order
for d in $R/dev/infiniband/rdma_cm $R/dev/net/tun; do
  [ -c "$d" ] || fail "$d missing after loading modules"
done
# Hold on, for the whole boot and before any traffic, the static keys that
# the lab's own commands would otherwise flip under traffic: the ingress
# and egress keys (a clsact qdisc on lo: every later clsact add or delete,
# the lab's silent drops in tests/lab/daemon/rcnetd_lib.sh, then only counts
# a reference) and the receive timestamp key (a socket with SO_TIMESTAMP:
# every ping process that starts or ends would flip it). Flipping a static
# key patches the kernel's text (__netif_receive_skb_core, __dev_queue_xmit)
# while the other vCPU runs it, and under TCG that faulted the guest kernel
# (docs/lab.md "When the guest kernel faults").
chroot $R /sbin/tc qdisc add dev lo clsact || fail "tc qdisc add dev lo clsact"
chroot $R /usr/bin/python3 -c '
import socket, signal
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_TIMESTAMP, 1)
signal.pause()' </dev/null >/dev/null 2>&1 &

stage start "record the clock source, start the scenario"
# rcnet-lab boots with loglevel=5, so that the kernel's warnings show where a
# boot stalls, and keeps it for the scenario: at quiet's level (4) a soft
# lockup, an RCU stall or an oops prints its header but not its registers
# and stack (KERN_DEFAULT), and rcnet-lab stops a run at the first such
# header (docs/lab.md "When the guest kernel faults"). A soft lockup also
# backtraces every CPU: the other vCPU is often the one holding the lock.
echo 5 >/proc/sys/kernel/printk
echo 1 >/proc/sys/kernel/softlockup_all_cpu_backtrace 2>/dev/null || true
# Once per kernel (rcnet-lab asks while its cache has none): the kernel's
# symbols, with which rcnet-lab names the functions of a stalled boot's vCPU
# addresses (the guest boots with nokaslr, so they are the same every boot).
if [ "${RCNET_LAB_SAVE_KALLSYMS:-0}" = 1 ]; then
  cat /proc/kallsyms >$SHARE/.lab/kallsyms
fi
# The clock source the guest runs on (rcnet-lab boots with tsc=reliable
# clocksource=tsc, as real nodes read the TSC through the vDSO); recorded for
# the benchmark, which refuses to compare anything measured on another one.
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
echo "$clocksource" >$SHARE/.lab/clocksource

[ "${RCNET_LAB_INIT:-busybox}" = systemd ] && boot_systemd
echo "$START_MARKER nodes=$RCNET_LAB_NODES kernel=$RCNET_LAB_KVER clocksource=$clocksource uptime=$(cut -d" " -f1 /proc/uptime)s"
t0=$(uptime_ms)
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
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
echo "$secs" >$SHARE/.lab/scenario-seconds
echo "$rc" >$SHARE/.lab/exit-code
if [ "$rc" -eq 124 ]; then
  echo "rcnet-lab init: scenario killed by its in-guest timeout (${RCNET_LAB_TIMEOUT}s)"
fi
echo "$EXIT_MARKER $rc (scenario wall time ${secs}s)"
sync
umount -l $R$WORK
umount -l $SHARE
halt_now
