#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rcnetd's command line and config errors, without any device: exit codes
# (0 ok, 2 usage/config) and messages that name the key and line.
set -u
rcnetd=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect() { # desc want-exit pattern cmd...
  local desc=$1 want=$2 pattern=$3 rc=0 out
  shift 3
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" <<<"$out"; then
    echo "ok: $desc"
  else
    echo "FAIL: $desc: exit $rc (want $want), output: $out"
    fail=1
  fi
}
printf '[node]\naddress = "10.99.0.1"\n[tun]\naddress = "10.100.0.1/24"\n' >"$dir/good.toml"
printf '[node]\naddress = "10.99.0.1"\n[tun]\naddress = "10.100.0.1/24"\nmtu = 100\n' >"$dir/mtu.toml"
printf '[node]\naddress = "10.99.0.1"\n[tun]\naddress = "10.100.0.1/24"\n[timeouts]\nidle = "soon"\n' >"$dir/idle.toml"
printf '[node]\n[tun]\naddress = "10.100.0.1/24"\n' >"$dir/noaddr.toml"

expect "--version" 0 "rcnetd [0-9]" "$rcnetd" --version
expect "unknown option is a usage error" 2 "bogus" "$rcnetd" --bogus
expect "--check-config accepts a valid file" 0 "configuration OK" "$rcnetd" -c "$dir/good.toml" --check-config
expect "bad mtu names key and line" 2 "mtu.toml:5: tun.mtu" "$rcnetd" -c "$dir/mtu.toml" --check-config
expect "bad duration names key and line" 2 "idle.toml:6: timeouts.idle" "$rcnetd" -c "$dir/idle.toml" --check-config
expect "missing required key" 2 "node.address" "$rcnetd" -c "$dir/noaddr.toml" --check-config
expect "missing file names the path and errno" 2 "$dir/none.toml: No such file" "$rcnetd" -c "$dir/none.toml"
expect "config errors exit before any device (not --check-config)" 2 "tun.mtu" "$rcnetd" -c "$dir/mtu.toml"
expect "bad --log-level" 2 "log-level" "$rcnetd" -c "$dir/good.toml" --log-level loud
expect "bad --log-target" 2 "log-target" "$rcnetd" -c "$dir/good.toml" --log-target syslog
exit $fail
