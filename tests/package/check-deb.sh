#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds the Debian package with tools/build-deb.sh into a temporary folder
# and checks it: the files an operator needs are in it at their real paths,
# the configuration is a conffile, lintian reports no error, the maintainer
# scripts create user rcnet and enable or start nothing.
#
#   tests/package/check-deb.sh SRCDIR
#
# RCNET_DEB_DIR=DIR checks the output of an earlier `tools/build-deb.sh DIR`
# instead of building (the .deb and .lintian report in DIR).
# RCNET_DEB_CACHE=DIR builds into DIR with ensure-deb.sh, which reuses a
# package already built there from the same commit (the meson test passes
# <build>/deb, shared with the lab test lab-systemd).
set -euo pipefail

src=${1:?usage: check-deb.sh SRCDIR}
out=$(mktemp -d "${TMPDIR:-/tmp}/rcnet-check-deb.XXXXXX")
trap 'rm -rf "$out"' EXIT
start=$SECONDS
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if [ -n "${RCNET_DEB_CACHE:-}" ]; then
  "$src/tests/package/ensure-deb.sh" "$src" "$RCNET_DEB_CACHE"
  RCNET_DEB_DIR=$RCNET_DEB_CACHE
fi
if [ -n "${RCNET_DEB_DIR:-}" ]; then
  cp "$RCNET_DEB_DIR"/rcnet_*.deb "$RCNET_DEB_DIR"/rcnet_*.lintian "$out/"
else
  # Built into the empty $out with ensure-deb.sh's DEB_BUILD_OPTIONS default
  # (the unit suite already ran in the main build: here only what packaging
  # adds is checked).
  "$src/tests/package/ensure-deb.sh" "$src" "$out"
fi

debs=("$out"/rcnet_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL: no single rcnet_*.deb in $out"; exit 1; }
deb=${debs[0]}
echo "checking $deb"

# Contents, at the paths the units, the man pages and the daemon use.
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for path in \
    ./usr/sbin/rcnetd \
    ./usr/bin/rcnetctl \
    ./lib/systemd/system/rcnetd.service \
    ./lib/systemd/system/rcnetd@.service \
    ./usr/lib/sysusers.d/rcnet.conf \
    ./usr/lib/systemd/catalog/rcnet.catalog \
    ./usr/share/man/man8/rcnetd.8.gz \
    ./usr/share/man/man8/rcnetctl.8.gz \
    ./usr/share/man/man5/rcnetd.toml.5.gz \
    ./usr/share/man/man7/rcnet-alerts.7.gz \
    ./usr/share/rcnet/prometheus/rcnet-alerts.yml \
    ./usr/share/bash-completion/completions/rcnetctl \
    ./usr/share/doc/rcnet/rcnetd-netns.conf \
    ./usr/share/doc/rcnet/rcnetd-auth.conf \
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
grep -q 'ExecStart=/usr/sbin/rcnetd -c /etc/rcnet/rcnetd.toml$' "$root/lib/systemd/system/rcnetd.service" ||
  fail "rcnetd.service does not run /usr/sbin/rcnetd -c /etc/rcnet/rcnetd.toml"
grep -q 'ExecStart=/usr/sbin/rcnetd -c /etc/rcnet/%i.toml ' "$root/lib/systemd/system/rcnetd@.service" ||
  fail "rcnetd@.service does not run /usr/sbin/rcnetd -c /etc/rcnet/%i.toml"

# User rcnet: declared by the sysusers file.
grep -Eq '^u[[:space:]]+rcnet[[:space:]]' "$root/usr/lib/sysusers.d/rcnet.conf" ||
  fail "the sysusers file does not declare user rcnet"

# The maintainer scripts, run against stubs that log their calls instead of
# acting (dpkg --root is not reliable for this): installing creates user
# rcnet and enables or starts nothing; an upgrade neither stops nor restarts
# a running rcnetd. On upgrade, deb-systemd-helper may re-create the
# symlinks of a unit the admin had enabled ("was-enabled"): the stub says
# none was, so any enable seen here is one the package would do by itself.
stubs=$out/stubs
mkdir "$stubs"
for cmd in deb-systemd-helper deb-systemd-invoke systemctl systemd-sysusers invoke-rc.d update-rc.d; do
  cat >"$stubs/$cmd" <<STUB
#!/bin/sh
echo "$cmd \$*" >>"$out/calls"
case "$cmd \$1 \$2" in
  "deb-systemd-helper debian-installed "*) [ -n "\${STUB_INSTALLED:-}" ] ;;
  "deb-systemd-helper --quiet was-enabled") exit 1 ;;
  "deb-systemd-helper was-enabled "*) exit 1 ;;
esac
STUB
  chmod +x "$stubs/$cmd"
done
run_script() { # label env script args...
  local label=$1 env=$2 script=$3
  shift 3
  : >"$out/calls"
  [ -f "$ctrl/$script" ] || return 0
  if ! env PATH="$stubs:$PATH" $env sh -e "$ctrl/$script" "$@" >"$out/script.log" 2>&1; then
    cat "$out/script.log"
    fail "$label: $script $* failed"
  fi
  sed "s/^/  $label: /" "$out/calls"
}
unit_action='(deb-systemd-helper|systemctl)( [^ ]*)* (enable|reenable|start|restart|try-restart|reload-or-restart)( |$)|deb-systemd-invoke( [^ ]*)* (start|restart|try-restart|stop)( |$)'
run_script "install" "STUB_INSTALLED=" postinst configure
grep -Eq '^systemd-sysusers( .*)? rcnet\.conf$' "$out/calls" ||
  fail "install: postinst does not run systemd-sysusers rcnet.conf"
if grep -E "$unit_action" "$out/calls"; then
  fail "install: postinst enables or starts a unit (calls above)"
fi
# Removal stops the daemon and its instances; it only happens where
# systemd runs (/run/systemd/system), so this part is read, not run.
grep -Eq "^[^#]*deb-systemd-invoke stop rcnetd\.service 'rcnetd@\*\.service'" "$ctrl/prerm" 2>/dev/null ||
  fail "prerm does not stop rcnetd.service and rcnetd@*.service on removal"
run_script "upgrade" "STUB_INSTALLED=1" prerm upgrade 0.1.0
if grep -E "$unit_action" "$out/calls"; then
  fail "upgrade: prerm stops or starts a unit (calls above)"
fi
run_script "upgrade" "STUB_INSTALLED=1" preinst upgrade 0.0.0
if grep -E "$unit_action" "$out/calls"; then
  fail "upgrade: preinst stops or starts a unit (calls above)"
fi
run_script "upgrade" "STUB_INSTALLED=1" postinst configure 0.0.0
if grep -E "$unit_action" "$out/calls"; then
  fail "upgrade: postinst enables, starts or restarts a unit (calls above)"
fi

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
