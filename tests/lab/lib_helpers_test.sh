#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The lab library's process-free helpers (tests/lab/lib.sh "processes under
# TCG"), on the host, no boot: sleep sleeps without a process, grep runs
# busybox's where its options allow and GNU grep otherwise, with the same
# answers, and lab_wait_line finds a line written in two pieces, honours
# FROM, and gives up after SECS; lab_error_counters picks the devices'
# error counters out of `rdma statistic show`; _lab_names names nodes as
# the lab_node_* functions do. Exits 1 on the first wrong answer.
# shellcheck disable=SC2317 # the stand-ins below are called through grep()
set -u -o pipefail
RCNET_RESULTS=$(mktemp -d)
trap 'rm -rf "$RCNET_RESULTS"' EXIT
# shellcheck source=tests/lab/lib.sh
. "$(dirname "$0")/lib.sh"
fails=0
check() { # DESC WANT GOT
  if [[ $2 == "$3" ]]; then
    echo "ok: $1"
  else
    echo "FAIL: $1: want '$2', got '$3'"
    fails=$((fails + 1))
  fi
}
us() { echo "${EPOCHREALTIME/[.,]/}"; }

t0=$(us)
sleep 0.3
d=$((($(us) - t0) / 1000))
check "sleep 0.3 waits at least 300 ms ($d ms)" yes "$( ((d >= 300)) && echo yes || echo no)"
n=$(
  sleep 0.1 &
  wait $!
  echo $?
)
check "sleep in the background ends with 0" 0 "$n"

f=$RCNET_RESULTS/g.txt
printf 'alpha\nfoo bar 12\n-x-\nFOO\n' >"$f"
if command -v busybox >/dev/null; then
  check "grep is busybox's for -q" busybox "$(
    busybox() { echo busybox; }
    _lab_busybox=busybox grep -q foo "$f"
  )"
  check "grep -P goes to GNU grep" gnu "$(
    command() { echo gnu; }
    grep -qP 'fo{2}' "$f"
  )"
  check "grep --count goes to GNU grep" gnu "$(
    command() { echo gnu; }
    grep --count foo "$f"
  )"
fi
for args in "-c foo" "-c -- -x-" "-o [0-9][0-9]*" "-m1 -i foo" "-E ^(alpha|FOO)$" "-vc a" "-A 1 alpha" "-e bar -e alpha" "-qP fo{2}"; do
  # shellcheck disable=SC2086 # the options and patterns split as written
  check "grep $args answers as GNU grep" "$(command grep $args "$f"; echo "rc $?")" "$(grep $args "$f"; echo "rc $?")"
done

log=$RCNET_RESULTS/w.log
(
  sleep 0.2
  printf 'one\ntwo MODE-' >>"$log"
  sleep 0.3
  printf 'DONE x\nthree\n' >>"$log"
) &
check "lab_wait_line: a line written in two pieces" "two MODE-DONE x" "$(lab_wait_line "$log" 'MODE-DONE' 5)"
wait
check "lab_wait_line FROM: from line 3 on" three "$(lab_wait_line "$log" '^t' 1 3)"
check "lab_wait_line FROM: from line 1 on" "two MODE-DONE x" "$(lab_wait_line "$log" '^t' 1)"
t0=$(us)
lab_wait_line "$log" '^never' 1
rc=$?
d=$((($(us) - t0) / 1000))
check "lab_wait_line gives up after SECS with 1 ($d ms)" "1 yes" "$rc $( ((d >= 1000)) && echo yes || echo no)"
check "lab_wait_line on a file that never appears" 1 "$(lab_wait_line "$RCNET_RESULTS/none" x 1 >/dev/null; echo $?)"

# lab_error_counters: only a device's nonzero error, retry, sequence and
# duplicate counters (ack_deferred is none of them), as rxe's `rdma
# statistic show` prints them.
st=$RCNET_RESULTS/statistic.txt
printf '%s\n' 'link rxe_1/1 sent_pkts 90 rcvd_pkts 80 duplicate_request 4 out_of_seq_request 0 rcvd_seq_err 0 ack_deferred 3 completer_retry_err 2 send_err 0' \
  'link rxe_2/1 sent_pkts 12 rcvd_pkts 10 duplicate_request 0 ack_deferred 1 send_err 0' >"$st"
check "lab_error_counters: the nonzero ones of each device" \
  "rxe_1/1 duplicate_request=4 rxe_1/1 completer_retry_err=2 " "$(lab_error_counters "$st")"
printf '%s\n' 'link rxe_2/1 sent_pkts 12 ack_deferred 1 send_err 0' >"$st"
check "lab_error_counters: none" "" "$(lab_error_counters "$st")"

# _lab_names (lab_setup_nodes's names without a fork) names what the public
# functions print, on both rails and both providers.
for prov in rxe siw; do
  for r in 0 1; do
    for i in 1 2 10 17 32; do
      got=$(
        RCNET_LAB_PROVIDER=$prov
        _lab_names "$i" "$r"
        echo "$_LN_ADDR $_LN_ADDR6 $_LN_DEV $_LN_PORT $_LN_RDMA $_LN_MAC $_LN_TABLE $_LN_PREF $_LN_BRIDGE"
      )
      want=$(
        RCNET_LAB_PROVIDER=$prov
        echo "$(lab_node_addr "$i" "$r") $(lab_node_addr6 "$i" "$r") $(lab_node_dev "$i" "$r")" \
          "$(lab_node_port "$i" "$r") $(lab_node_rdma_dev "$i" "$r") $(_lab_node_mac "$i" "$r")" \
          "$(_lab_rail_table "$i" "$r") $(_lab_rail_pref "$i" "$r") $(_lab_rail_bridge "$r")"
      )
      check "_lab_names $i $r ($prov) as the lab_node_* functions" "$want" "$got"
    done
  done
done

((fails == 0)) || {
  echo "$fails failed"
  exit 1
}
echo "all passed"
