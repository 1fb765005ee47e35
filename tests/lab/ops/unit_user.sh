#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnetd run the way the shipped rcnetd.service runs it, on Soft-RoCE: as
# user and group rcnet (created from systemd/rcnet.sysusers), capability
# bounding, inheritable and ambient sets CAP_NET_ADMIN CAP_IPC_LOCK only,
# no_new_privs, LimitMEMLOCK=infinity, UMask=0077, RuntimeDirectory /run/rcnet
# owned by rcnet 0755, and the template unit's --ctl-socket. Its peer is a
# root-run rcnetd. There is no systemd in the guest: setpriv(1) and prlimit(1)
# apply those settings; the unit's mount, device-cgroup and seccomp sandbox is
# not reproduced here (systemd-analyze scores it).
#
#   A  base unit, TUN in the root namespace (no tun.netns): starts, ping both
#      ways, ctl socket rcnet:rcnet 0660 at the --ctl-socket path, root and a
#      group-rcnet member use it, audit over RDMA netlink, uptime, SIGHUP
#      keeps the --ctl-socket, SIGTERM exits 0 with no QP left
#   A' base unit with tun.netns: must fail at once naming tun.netns (setns(2)
#      needs CAP_SYS_ADMIN) and leave nothing behind
#   B  base unit + rcnetd-netns.conf (CAP_SYS_ADMIN too), tun.netns: works
set -u -o pipefail
. "$RCNET_LAB_LIB"
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
OUT=$RCNET_RESULTS
S1=/run/rcnet/node1.sock
LOG1=$OUT/rcnetd-1.log

lab_setup_nodes 2 || lab_die "node setup"

# --- user and group rcnet ----------------------------------------------------------
# The guest's / is the host's, read-only. An overlay on /etc (upper on the
# guest's tmpfs) makes it writable for this boot only, so the shipped
# sysusers.d file itself creates the account.
how=
modprobe ${RCNET_LAB_MODTREE:+-d "$RCNET_LAB_MODTREE"} overlay 2>/dev/null
mkdir -p /tmp/etc-up /tmp/etc-work
if mount -t overlay overlay -o lowerdir=/etc,upperdir=/tmp/etc-up,workdir=/tmp/etc-work /etc &&
  systemd-sysusers "$RCNET_SRC/systemd/rcnet.sysusers"; then
  how="systemd-sysusers systemd/rcnet.sysusers on an overlay /etc"
else
  # Fallback: copies of passwd and group bind-mounted over the originals.
  umount /etc 2>/dev/null
  cp /etc/passwd /tmp/passwd && cp /etc/group /tmp/group &&
    echo 'rcnet:x:990:990:rcnet daemon (rcnetd):/nonexistent:/usr/sbin/nologin' >>/tmp/passwd &&
    echo 'rcnet:x:990:' >>/tmp/group &&
    mount --bind /tmp/passwd /etc/passwd && mount --bind /tmp/group /etc/group &&
    how="passwd/group copies bind-mounted over /etc (overlay or systemd-sysusers failed)"
fi
echo "rcnet account: ${how:-none}: $(getent passwd rcnet) / $(getent group rcnet)"
lab_expect "user and group rcnet exist (${how:-no way found})" \
  [ -n "$(getent passwd rcnet)" -a -n "$(getent group rcnet)" ]
RCNET_GID=$(getent group rcnet | cut -d: -f3)

# RuntimeDirectory=rcnet, RuntimeDirectoryMode=0755, owned by User=/Group=.
mkdir -p /run/rcnet
chown rcnet:rcnet /run/rcnet
chmod 0755 /run/rcnet
echo "devices the unit's DeviceAllow= names (modes as devtmpfs made them):"
ls -l /dev/net/tun /dev/infiniband/
# uverbsN and rdma_cm are 0666 from the kernel itself. /dev/net/tun is 0600
# from devtmpfs; udev makes it 0666 on every systemd host
# (50-udev-default.rules: KERNEL=="tun", MODE="0666"), and CAP_NET_ADMIN does
# not bypass file permissions. No udev in the guest: apply its rule.
as_rcnet_open_tun() {
  setpriv --reuid=rcnet --regid=rcnet --init-groups --inh-caps=-all,+net_admin \
    --ambient-caps=-all,+net_admin -- bash -c 'exec 3<>/dev/net/tun' 2>&1
}
msg=$(as_rcnet_open_tun)
echo "user rcnet opens /dev/net/tun at $(stat -c %a /dev/net/tun): ${msg:-ok}"
chmod 0666 /dev/net/tun
msg=$(as_rcnet_open_tun)
lab_expect "user rcnet opens /dev/net/tun once it is 0666 as udev makes it (${msg:-ok})" [ -z "$msg" ]

# --- node 2: root, as the other lab scenarios ------------------------------------
rcd_config 2 "[timeouts]" "idle = \"120s\"" "last_wqe = \"1s\""
# rcd_start's `local i=$1 log=...-$i.log` expands $i before i is local: it
# takes the caller's i (unbound here under set -u). Give it the same value.
i=2
rcd_start 2 || lab_die "start node2 (root)"

# Node 1's config: ctl.socket in the file is NOT where the socket must go;
# --ctl-socket (as rcnetd@.service passes it) decides.
node1_config() {
  local netns=$1
  rcd_config 1 "[timeouts]" "idle = \"120s\"" "last_wqe = \"1s\""
  sed -i -e "s|^socket = .*|socket = \"/run/rcnet/from-file.sock\"|" \
    -e 's|^group = .*|group = "rcnet"|' "$OUT/node-1.toml"
  [ -n "$netns" ] || sed -i '/^netns = /d' "$OUT/node-1.toml"
}

# rcnetd as the unit starts it. CAPS: the unit's set, e.g. net_admin,ipc_lock.
# The subshell's umask and limits are inherited through both execs, so
# RCD_PID[1] is rcnetd's own pid.
unit_start() {
  local caps=$1 c inh=-all
  for c in ${caps//,/ }; do inh+=",+$c"; done
  : >"$LOG1"
  (
    umask 0077
    exec prlimit --memlock=unlimited:unlimited -- \
      setpriv --reuid=rcnet --regid=rcnet --init-groups --no-new-privs \
      --inh-caps="$inh" --ambient-caps="$inh" --bounding-set="$inh" -- \
      "$RCD_BIN" -c "$OUT/node-1.toml" --ctl-socket "$S1"
  ) >>"$LOG1" 2>&1 &
  RCD_PID[1]=$!
}

# 0 once "TUN rc0 up" is logged, 1 when rcnetd exited first or after 30 s.
unit_wait_up() {
  local k
  for ((k = 0; k < 300; k++)); do
    grep -q "TUN rc0 up" "$LOG1" && return 0
    kill -0 "${RCD_PID[1]}" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# ================================ A: the base unit ================================
node1_config ""
t_launch=$(rcd_now_ms)
unit_start net_admin,ipc_lock
if unit_wait_up; then
  lab_pass "A: rcnetd as rcnet with CAP_NET_ADMIN CAP_IPC_LOCK started (pid ${RCD_PID[1]})"
else
  lab_fail "A: rcnetd as rcnet did not start: $(tail -5 "$LOG1" | tr '\n' ' ')"
  lab_collect unit-a-failed
  rcd_stop_all
  lab_finish
fi
pid=${RCD_PID[1]}
grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' "/proc/$pid/status" |
  tee "$OUT/unit-a-status.txt"
grep -i "locked memory" "/proc/$pid/limits"
lab_expect "A: runs as uid/gid rcnet" \
  [ "$(awk '/^Uid:/ {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$(id -u rcnet)$(id -u rcnet)$(id -u rcnet)$(id -u rcnet)" \
  -a "$(awk '/^Gid:/ {print $2}' "/proc/$pid/status")" = "$RCNET_GID" ]
lab_expect "A: effective and ambient capabilities are exactly CAP_NET_ADMIN|CAP_IPC_LOCK (0x5000)" \
  [ "$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")" = 0000000000005000 \
  -a "$(awk '/^CapAmb:/ {print $2}' "/proc/$pid/status")" = 0000000000005000 \
  -a "$(awk '/^CapBnd:/ {print $2}' "/proc/$pid/status")" = 0000000000005000 ]
lab_expect "A: no_new_privs set" [ "$(awk '/^NoNewPrivs:/ {print $2}' "/proc/$pid/status")" = 1 ]

# --- ctl socket: --ctl-socket wins over the file, rcnet:rcnet 0660 ---------------
for ((k = 0; k < 100; k++)); do [ -S "$S1" ] && break; sleep 0.1; done
sock=$(stat -c '%U:%G %a' "$S1" 2>&1)
echo "ctl socket $S1: $sock; from-file.sock: $(ls /run/rcnet/from-file.sock 2>&1)"
lab_expect "A: ctl socket at the --ctl-socket path, rcnet:rcnet 0660 ($sock)" \
  [ "$sock" = "rcnet:rcnet 660" ]
lab_expect "A: nothing at the config file's ctl.socket" [ ! -e /run/rcnet/from-file.sock ]

# --- traffic with the root-run peer ------------------------------------------------
out=$(ping -n -q -c 5 -W 5 10.100.0.2 2>&1)
echo "$out" | tail -2
lab_expect "A: ping 10.100.0.1 (rcnet-run node1, root netns) -> 10.100.0.2 (root-run node2)" \
  [ -n "$(grep ' 0% packet loss' <<<"$out")" ]
out=$(rcd_ping 2 1 -c 5 -W 5 2>&1)
echo "$out" | tail -2
lab_expect "A: ping node2 -> node1" [ -n "$(grep ' 0% packet loss' <<<"$out")" ]

# --- rcnetctl against the unprivileged daemon ----------------------------------------
q0=$(rcd_now_ms)
"$CTL" -s "$S1" status >"$OUT/unit-a-rcnetctl-status.txt" 2>&1
rc=$?
up=$("$CTL" -s "$S1" -j status | jq '.daemon.uptime_ms | floor')
q1=$(rcd_now_ms)
echo "== rcnetctl status (node1, run as rcnet), exit $rc"
cat "$OUT/unit-a-rcnetctl-status.txt"
lab_expect "A: root: rcnetctl status exits 0" [ "$rc" -eq 0 ]
lab_expect "A: status shows the daemon line with rcnetd's pid" \
  [ -n "$(grep "^rcnetd .* pid $pid " "$OUT/unit-a-rcnetctl-status.txt")" ]
# The Daemon is constructed before "listening on" is logged, and after the
# launch: its uptime lies between the two.
listen_ms=$(rcd_log_ms "$(grep -m1 'listening on' "$LOG1")")
lo=$((q0 - listen_ms))
hi=$((q1 - t_launch))
echo "uptime_ms $up; since 'listening on' >= $lo; since launch <= $hi"
lab_expect "A: status uptime counts from the daemon's start ($lo <= $up <= $hi ms)" \
  [ "$up" -ge "$lo" -a "$up" -le "$hi" ]
member() { setpriv --reuid=65534 --regid=65534 --groups="$RCNET_GID" "$@"; }
lab_check "A: a member of group rcnet (nobody + rcnet): status allowed" \
  setpriv --reuid=65534 --regid=65534 --groups="$RCNET_GID" "$CTL" -s "$S1" status
msg=$(member "$CTL" -s "$S1" reap --idle 0 2>&1)
lab_expect "A: a member of group rcnet: reap refused ($msg)" [ -n "$(grep 'needs root' <<<"$msg")" ]
msg=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" -s "$S1" status 2>&1)
lab_expect "A: nobody outside group rcnet cannot connect (exit $?)" \
  [ -n "$(grep -i 'permission denied' <<<"$msg")" ]
"$CTL" -s "$S1" audit >"$OUT/unit-a-audit.txt" 2>&1
rc=$?
cat "$OUT/unit-a-audit.txt"
lab_expect "A: rcnetctl audit exits 0: RDMA netlink QP dump works for the rcnet-run daemon" \
  [ "$rc" -eq 0 -a -n "$(grep '^audit ok' "$OUT/unit-a-audit.txt")" ]
ours=$("$CTL" -s "$S1" -j qps | jq -c '[.qps[].qpn] | sort')
kern=$(rdma -j res show qp | jq -c --argjson p "$pid" '[.[] | select(.pid == $p) | .lqpn] | sort')
lab_expect "A: rcnetctl qps == rdma res show qp for pid $pid ($ours / $kern)" \
  [ "$ours" = "$kern" -a "$ours" != "[]" ]

# --- SIGHUP keeps --ctl-socket (the file's ctl.socket differs) -----------------------
n=$(wc -l <"$LOG1")
kill -HUP "$pid"
line=$(rcd_wait_log 1 "reload applied|not applied" 20 "$((n + 1))")
echo "after SIGHUP: $line"
lab_expect "A: SIGHUP applies the file although its ctl.socket differs from --ctl-socket" \
  [ -n "$(grep 'reload applied' <<<"$line")" ]
lab_check "A: ctl socket still answers after the reload" "$CTL" -s "$S1" status

# --- SIGTERM -------------------------------------------------------------------------
kill -TERM "$pid"
rcd_wait_exit 1 30
lab_expect "A: SIGTERM: exit 0 (got ${RCD_EXIT[1]})" [ "${RCD_EXIT[1]}" = 0 ]
lab_expect "A: no QP left on rxe_1" [ "$(rcd_qps 1)" -eq 0 ]
lab_expect "A: ctl socket removed" [ ! -e "$S1" ]
unset 'RCD_PID[1]'

# ====================== A': base unit with tun.netns: must fail clearly ======================
node1_config node1
unit_start net_admin,ipc_lock
rcd_wait_exit 1 30
echo "A': exit ${RCD_EXIT[1]}: $(tail -2 "$LOG1" | tr '\n' ' ')"
# The TUN moves into the namespace (CAP_NET_ADMIN is enough for that);
# configuring it there needs setns(2), which fails. The message names the
# namespace and EPERM, not the key tun.netns (daemon's setup_tun wraps only
# the move).
lab_expect "A': tun.netns without CAP_SYS_ADMIN: exit 1, setns into node1 refused (EPERM)" \
  [ "${RCD_EXIT[1]}" = 1 -a -n "$(grep -E 'setns into network namespace node1: Operation not permitted|tun.netns' "$LOG1")" ]
lab_expect "A': no QP and no ctl socket left" [ "$(rcd_qps 1)" -eq 0 -a ! -e "$S1" ]
unset 'RCD_PID[1]'

# ============ B: base unit + rcnetd-netns.conf (CAP_SYS_ADMIN), tun.netns ============
unit_start net_admin,ipc_lock,sys_admin
if unit_wait_up; then
  lab_pass "B: rcnetd as rcnet with the netns drop-in's caps started, TUN in netns node1"
  out=$(rcd_ping 1 2 -c 5 -W 5 2>&1)
  lab_expect "B: ping node1 -> node2 from netns node1" [ -n "$(grep ' 0% packet loss' <<<"$out")" ]
  out=$(rcd_ping 2 1 -c 5 -W 5 2>&1)
  lab_expect "B: ping node2 -> node1" [ -n "$(grep ' 0% packet loss' <<<"$out")" ]
  "$CTL" -s "$S1" status
  lab_check "B: rcnetctl audit exits 0" "$CTL" -s "$S1" audit
else
  lab_fail "B: did not start: $(tail -5 "$LOG1" | tr '\n' ' ')"
fi

lab_collect unit-user-end
rcd_stop_all
lab_expect "no QP left after SIGTERM" [ "$(lab_qp_count)" -eq 0 ]
lab_finish
