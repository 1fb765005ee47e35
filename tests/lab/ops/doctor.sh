#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnetctl doctor on a lab node (rcnetctl(8) DOCTOR): on a good node every
# check passes (exit 0, no FAIL; iwpmd may WARN on siw); then each fault in
# turn, with doctor naming the check and its advice, and doctor clean again
# once the fault is undone:
#   - rdma_ucm unloaded (rmmod; skipped when something holds it);
#   - the rail's address removed from v_1;
#   - v_1 without carrier (b_1 down): rxe's port is not ACTIVE, siw's is
#     but doctor sees the carrier;
#   - RLIMIT_MEMLOCK small (ulimit -l 1024 in doctor's shell: no systemd in
#     the guest, so doctor reads the process's limit);
#   - /dev/net/tun 0600 (devtmpfs' own mode; udev makes it 0666);
#   - rp_filter strict on v_1 (every node's veth is in 10.99.0.0/24: a
#     multi-homed node);
#   - the listen port held by rcnetd itself, then by an rdma_cm listener
#     (rping), and on siw by a TCP socket;
#   - a blackhole route inside the overlay in tun.netns;
#   - v_1's MTU at 576 (rxe's path MTU drops to 256: a WARN; siw has no
#     path MTU to check).
# Doctor's time on the good node is printed (3 runs), not asserted: the
# guest runs under TCG.
# Outputs: doctor-LABEL.{txt,json} per run.
# Helpers below run through lab_expect (SC2317).
# jq programs name their own $variables (SC2016).
# shellcheck disable=SC2317,SC2016
set -u -o pipefail
# shellcheck source=tests/lab/lib.sh
. "$RCNET_LAB_LIB"
# shellcheck source=tests/lab/daemon/rcnetd_lib.sh
. "$RCNET_SRC/tests/lab/daemon/rcnetd_lib.sh"

CTL=$RCNET_BUILD_DIR/tools/rcnetctl/rcnetctl
OUT=$RCNET_RESULTS
PROVIDER=${RCNET_LAB_PROVIDER:-rxe}
ADDR=$(lab_node_addr 1)
DEV=$(lab_node_dev 1)
CFG=$OUT/node-1.toml

lab_setup_nodes 2 || lab_die "node setup"
# No udev in the guest: /dev/net/tun keeps devtmpfs' 0600; udev's default
# on every systemd host is 0666 (tests/lab/ops/unit_user.sh), as rcnetd's
# unit user needs.
chmod 0666 /dev/net/tun
for i in 1 2; do
  rcd_config "$i"
done
i=1

# Runs doctor as `PREFIX... rcnetctl -j doctor -c CFG` (PREFIX: a command
# that runs the rest, e.g. a shell with a small ulimit), then the text form;
# sets DOC_RC and DOC_MS (the JSON run's wall time), prints the text.
doc() {
  local label=$1 t0
  shift
  t0=$(rcd_now_ms)
  "$@" "$CTL" -j doctor -c "$CFG" >"$OUT/doctor-$label.json" 2>"$OUT/doctor-$label.err"
  DOC_RC=$?
  DOC_MS=$(($(rcd_now_ms) - t0))
  "$@" "$CTL" doctor -c "$CFG" >"$OUT/doctor-$label.txt" 2>&1
  echo "== rcnetctl doctor ($label): exit $DOC_RC, $DOC_MS ms"
  cat "$OUT/doctor-$label.txt" "$OUT/doctor-$label.err"
}

# After doc LABEL: doctor exited 1 for a FAIL (0 for a WARN), check CHECK
# has status STATUS (fail, warn), and its advice holds ADVICE.
doc_expect() {
  local label=$1 check=$2 status=$3 advice=$4 want=0 line
  [[ $status == fail ]] && want=1
  line=$(jq -r --arg c "$check" --arg s "$status" \
    '.checks[] | select(.check == $c and .status == $s) | "\(.found); fix: \(.advice)"' \
    "$OUT/doctor-$label.json" 2>/dev/null | head -1)
  lab_expect "$label: doctor exits $want (got $DOC_RC), $check ${status^^}: ${line:-none}" \
    [ "$DOC_RC" = "$want" -a -n "$line" ]
  lab_expect "$label: $check's advice says '$advice'" grep -qF -- "$advice" <<<"$line"
}

# Until no rdma_cm id listens on ADDR:7471 (a listener can outlive its
# process for a moment).
wait_no_listener() {
  local k
  for ((k = 0; k < 100; k++)); do
    rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*$ADDR:7471 " || return 0
    sleep 0.1
  done
  return 1
}

# doctor is clean again (no FAIL, exit 0) once LABEL's fault is undone.
doc_clean() {
  doc "$1-restored"
  lab_expect "$1 undone: doctor exits 0 (got $DOC_RC), no FAIL" \
    jq -e '.ok == true and .summary.fail == 0' "$OUT/doctor-$1-restored.json"
}

# --- a good node -------------------------------------------------------------------
ms=()
for k in 1 2 3; do
  doc "good-$k"
  ms+=("$DOC_MS")
done
lab_log "rcnetctl doctor on a good node: ${ms[*]} ms (3 runs; TCG, not asserted)"
lab_expect "good node: doctor exits 0 (got $DOC_RC), no FAIL" \
  jq -e '.ok == true and .summary.fail == 0' "$OUT/doctor-good-3.json"
for c in module address device port gid mtu listen-port sysctl memlock dev-node route; do
  lab_expect "good node: check $c PASSes" \
    jq -e --arg c "$c" '[.checks[] | select(.check == $c and .status == "pass")] | length > 0' \
    "$OUT/doctor-good-3.json"
done
if [[ $PROVIDER == siw ]]; then
  lab_expect "good node (siw): the TCP port is checked too" \
    jq -e '[.checks[] | select(.check == "tcp-port" and .status == "pass")] | length == 1' \
    "$OUT/doctor-good-3.json"
fi

# --- rdma_ucm unloaded -------------------------------------------------------------
if rmmod rdma_ucm 2>"$OUT/rmmod.txt"; then
  doc no-rdma-ucm
  doc_expect no-rdma-ucm module fail "modprobe rdma_ucm"
  modprobe ${RCNET_LAB_MODTREE:+-d "$RCNET_LAB_MODTREE"} rdma_ucm ||
    lab_die "modprobe rdma_ucm did not load it back"
  for ((k = 0; k < 50; k++)); do [ -c /dev/infiniband/rdma_cm ] && break; sleep 0.1; done
  doc_clean no-rdma-ucm
else
  lab_log "rdma_ucm cannot be unloaded here ($(cat "$OUT/rmmod.txt")): module fault skipped"
fi

# --- the rail's address gone -----------------------------------------------------------
ip addr del "$ADDR/24" dev "$DEV"
doc no-address
doc_expect no-address address fail "ip addr add $ADDR/LEN dev NETDEV"
ip addr add "$ADDR/24" dev "$DEV"
lab_rail_routes 1 # the kernel dropped the node's routes with their source address
if [[ $PROVIDER == rxe ]]; then
  # rxe's GID table follows the address from a work queue: wait for it.
  for ((k = 0; k < 50; k++)); do
    lab_gid_index "$(lab_node_rdma_dev 1)" "$ADDR" >/dev/null && break
    sleep 0.1
  done
fi
doc_clean no-address

# --- the port without carrier ------------------------------------------------------------
# b_1, the bridge side of v_1, goes down: v_1 keeps its address and is up,
# but has no carrier. rxe's port leaves ACTIVE; siw's stays ACTIVE (it
# follows only the netdev's up and down), and doctor reads the carrier.
# The word after "state" ("physical_state" is another field).
port_state() { rdma link show "$(lab_node_rdma_dev 1)/1" 2>/dev/null | awk '{ for (k = 1; k < NF; k++) if ($k == "state") { print $(k + 1); exit } }'; }
carrier() { cat "/sys/class/net/$DEV/carrier" 2>/dev/null; }
ip link set "$(lab_node_port 1)" down
for ((k = 0; k < 50; k++)); do [[ $(carrier) == 0 ]] && break; sleep 0.1; done
if [[ $PROVIDER == rxe ]]; then
  for ((k = 0; k < 50; k++)); do [[ $(port_state) == ACTIVE ]] || break; sleep 0.1; done
  lab_log "port-down: $(lab_node_rdma_dev 1) port $(port_state), carrier $(carrier)"
  doc port-down
  doc_expect port-down port fail "ip link set $DEV up"
else
  lab_log "port-down: $(lab_node_rdma_dev 1) port $(port_state) (siw), carrier $(carrier)"
  doc port-down
  doc_expect port-down port fail "NO-CARRIER"
fi
ip link set "$(lab_node_port 1)" up
for ((k = 0; k < 100; k++)); do [[ $(carrier) == 1 && $(port_state) == ACTIVE ]] && break; sleep 0.1; done
doc_clean port-down

# --- locked memory ---------------------------------------------------------------------
doc memlock bash -c 'ulimit -l 1024 && exec "$@"' doctor-memlock
doc_expect memlock memlock fail "LimitMEMLOCK=infinity"
lab_expect "memlock: doctor says the limit is the shell's (no systemd)" \
  grep -q "this shell's ulimit -l" "$OUT/doctor-memlock.txt"
doc_clean memlock

# --- /dev/net/tun ----------------------------------------------------------------------
chmod 0600 /dev/net/tun
doc tun-mode
doc_expect tun-mode dev-node fail "chmod 0666 /dev/net/tun"
chmod 0666 /dev/net/tun
doc_clean tun-mode

# --- strict rp_filter on a multi-homed node ------------------------------------------
rp_old=$(cat "/proc/sys/net/ipv4/conf/$DEV/rp_filter")
echo 1 >"/proc/sys/net/ipv4/conf/$DEV/rp_filter"
doc rp-filter
doc_expect rp-filter sysctl fail "net.ipv4.conf.$DEV.rp_filter=2"
echo "$rp_old" >"/proc/sys/net/ipv4/conf/$DEV/rp_filter"
doc_clean rp-filter

# --- the listen port: rcnetd itself --------------------------------------------------
rcd_start 1 || lab_die "start node1"
doc port-rcnetd
doc_expect port-rcnetd listen-port fail "rcnetctl status"
rcd_stop_all
wait_no_listener
doc_clean port-rcnetd

# --- the listen port: another rdma_cm listener ------------------------------------------
timeout -k 5 120 rping -s -a "$ADDR" -p 7471 >"$OUT/rping-server.txt" 2>&1 &
rping_pid=$!
if lab_wait_listen "$ADDR" 7471 20; then
  doc port-rping
  doc_expect port-rping listen-port fail "rdma res show cm_id"
else
  lab_fail "rping did not listen on $ADDR:7471"
fi
kill "$rping_pid" 2>/dev/null
wait "$rping_pid" 2>/dev/null
wait_no_listener
doc_clean port-rping

# --- the TCP port (iWARP) ------------------------------------------------------------------
if [[ $PROVIDER == siw ]]; then
  python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7471))
s.listen()
time.sleep(120)' "$ADDR" &
  tcp_pid=$!
  if lab_wait_tcp_listen 7471 20; then
    doc port-tcp
    doc_expect port-tcp tcp-port fail "ss -ltnp 'sport = :7471'"
  else
    lab_fail "the TCP listener did not come up on $ADDR:7471"
  fi
  kill "$tcp_pid" 2>/dev/null
  wait "$tcp_pid" 2>/dev/null
  doc_clean port-tcp
fi

# --- a route inside the overlay in tun.netns ---------------------------------------------
lab_in_node 1 ip route add blackhole 10.100.0.0/25
doc route
doc_expect route route fail "ip -n node1 route del blackhole 10.100.0.0/25"
lab_in_node 1 ip route del blackhole 10.100.0.0/25
doc_clean route

# --- a small netdev MTU ------------------------------------------------------------------------
if [[ $PROVIDER == rxe ]]; then
  mtu_old=$(cat "/sys/class/net/$DEV/mtu")
  ip link set "$DEV" mtu 576
  doc mtu
  doc_expect mtu mtu warn "ip link set $DEV mtu 1500"
  ip link set "$DEV" mtu "$mtu_old"
  doc_clean mtu
else
  lab_log "siw: iWARP has no path MTU to check; MTU fault skipped"
fi

lab_finish
