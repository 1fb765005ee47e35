#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds the Debian package with tools/build-deb.sh into a temporary folder
# and checks it: the files an operator needs are in it at their real paths,
# the configuration is a conffile, lintian reports no error, the maintainer
# scripts create user rcnet and enable or start nothing.
#
#   tests/package/check-deb.sh SRCDIR
set -euo pipefail

src=${1:?usage: check-deb.sh SRCDIR}
out=$(mktemp -d "${TMPDIR:-/tmp}/rcnet-check-deb.XXXXXX")
trap 'rm -rf "$out"' EXIT
start=$SECONDS
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$src/tools/build-deb.sh" "$out"

debs=("$out"/rcnet_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL: no single rcnet_*.deb in $out"; exit 1; }
deb=${debs[0]}
echo "checking $deb"

# Contents, at the paths the units, the man pages and the daemon use.
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for path in \
    ./usr/sbin/rcnetd \
    ./usr/bin/rcnetctl \
    ./usr/lib/systemd/system/rcnetd.service \
    ./usr/lib/systemd/system/rcnetd@.service \
    ./usr/lib/sysusers.d/rcnet.conf \
    ./usr/lib/systemd/catalog/rcnet.catalog \
    ./usr/share/man/man8/rcnetd.8.gz \
    ./usr/share/man/man8/rcnetctl.8.gz \
    ./usr/share/man/man5/rcnetd.toml.5.gz \
    ./usr/share/bash-completion/completions/rcnetctl \
    ./usr/share/doc/rcnet/rcnetd-netns.conf \
    ./usr/share/doc/rcnet/rcnetd.example.toml \
    ./usr/share/doc/rcnet/copyright \
    ./etc/rcnet/rcnetd.toml; do
  grep -qxF "$path" <<<"$contents" || fail "$path not in the package"
done

# The units read exactly the file the package ships as conffile.
ctrl=$out/control
dpkg-deb -e "$deb" "$ctrl"
grep -qxF /etc/rcnet/rcnetd.toml "$ctrl/conffiles" 2>/dev/null ||
  fail "/etc/rcnet/rcnetd.toml is not a conffile"
root=$out/root
mkdir "$root"
dpkg-deb -x "$deb" "$root"
grep -q 'ExecStart=/usr/sbin/rcnetd -c /etc/rcnet/rcnetd.toml$' "$root/usr/lib/systemd/system/rcnetd.service" ||
  fail "rcnetd.service does not run /usr/sbin/rcnetd -c /etc/rcnet/rcnetd.toml"
grep -q 'ExecStart=/usr/sbin/rcnetd -c /etc/rcnet/%i.toml ' "$root/usr/lib/systemd/system/rcnetd@.service" ||
  fail "rcnetd@.service does not run /usr/sbin/rcnetd -c /etc/rcnet/%i.toml"

# User rcnet: declared by the sysusers file, created by postinst.
grep -Eq '^u[[:space:]]+rcnet[[:space:]]' "$root/usr/lib/sysusers.d/rcnet.conf" ||
  fail "the sysusers file does not declare user rcnet"
grep -Eq '^[[:space:]]*systemd-sysusers.*rcnet\.conf' "$ctrl/postinst" 2>/dev/null ||
  fail "postinst does not run systemd-sysusers rcnet.conf"

# Nothing enabled or started by installing (or upgrading) the package.
for script in preinst postinst; do
  [ -f "$ctrl/$script" ] || continue
  if grep -nE 'deb-systemd-helper[^#]*[[:space:]](enable|reenable)|deb-systemd-invoke[^#]*[[:space:]](start|restart|try-restart|reload)|systemctl[^#]*[[:space:]](enable|start|restart|try-restart)' "$ctrl/$script"; then
    fail "$script enables or starts a unit (lines above)"
  fi
done

# lintian: no error.
report=("$out"/rcnet_*.lintian)
[ -f "${report[0]}" ] || fail "no lintian report"
if grep -n '^E: ' "${report[0]}"; then
  fail "lintian reported errors (lines above)"
fi

echo "package test took $((SECONDS - start)) s"
if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all package checks passed"
