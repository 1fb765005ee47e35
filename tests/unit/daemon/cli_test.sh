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
# The merged listing: a drop-in overrides a key, each value names its origin,
# the verdict is the last line.
mkdir -p "$dir/good.toml.d"
printf '[timeouts]\nidle = "42s"\n' >"$dir/good.toml.d/50-idle.toml"
expect "--check-config lists a drop-in's value with its file and line" 0 \
  "^idle = \"42s\"  # $dir/good.toml.d/50-idle.toml:2\$" "$rcnetd" -c "$dir/good.toml" --check-config
expect "--check-config lists a default as such" 0 '^port = 7471  # default$' \
  "$rcnetd" -c "$dir/good.toml" --check-config
out=$("$rcnetd" -c "$dir/good.toml" --check-config 2>&1 | tail -1)
if [ "$out" = "rcnetd: $dir/good.toml: configuration OK" ]; then echo "ok: verdict last"; else
  echo "FAIL: verdict last: '$out'"; fail=1; fi
printf '[srq]\nsize = 0\n' >"$dir/good.toml.d/60-bad.toml"
expect "an error in a drop-in names the drop-in" 2 "^rcnetd: $dir/good.toml.d/60-bad.toml:2: srq.size: 0 is out of range" \
  "$rcnetd" -c "$dir/good.toml" --check-config
rm -r "$dir/good.toml.d"
expect "a directory as the config file says so" 2 "rcnetd: $dir: is a directory, not a configuration file" \
  "$rcnetd" -c "$dir" --check-config
# node.interface on an interface this machine lacks: accepted, and said to be waited for.
printf '[node]\ninterface = "rcnone0"\n[tun]\naddress = "10.100.0.0/24"\naddress_from_underlay = true\n' >"$dir/iface.toml"
expect "node.interface not there yet: check passes, says so" 0 "# node.interface: no interface rcnone0 yet" \
  "$rcnetd" -c "$dir/iface.toml" --check-config
printf '[node]\ninterface = "lo"\n[tun]\naddress = "10.100.0.1/24"\n' >"$dir/lo.toml"
expect "node.interface on lo: a loopback underlay is refused" 2 "lo.toml:2: node.interface: lo's address 127.0.0.1 must be" \
  "$rcnetd" -c "$dir/lo.toml" --check-config
expect "bad --log-level" 2 "log-level" "$rcnetd" -c "$dir/good.toml" --log-level loud
expect "bad --log-target" 2 "log-target" "$rcnetd" -c "$dir/good.toml" --log-target syslog
exit $fail
