#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Makes OUTDIR hold the Debian package of SRCDIR's git HEAD, built once:
# tools/build-deb.sh runs only when OUTDIR does not already hold a package
# built from the same commit with the same DEB_BUILD_OPTIONS and
# DEB_CXXFLAGS_APPEND (default -g1; stamp file OUTDIR/.stamp). Prints the
# .deb's path on the last line of its output.
#
#   tests/package/ensure-deb.sh SRCDIR OUTDIR
#
# The package test (check-deb.sh with RCNET_DEB_CACHE) and the lab test that
# installs the package under systemd (lab-systemd) share <build>/deb this
# way, so that a test run builds the package (minutes) once, whichever of
# the two runs first. DEB_BUILD_OPTIONS defaults to "nocheck noautodbgsym
# parallel=NPROC": the unit suite already ran in the main build, and neither
# test installs the debug symbols package (building it, compressing its
# 14 MB and running lintian over it cost minutes of background CPU).
set -euo pipefail

src=${1:?usage: ensure-deb.sh SRCDIR OUTDIR}
out=${2:?usage: ensure-deb.sh SRCDIR OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec {lock}>"$out/.lock"
flock "$lock"

head=$(git -C "$src" rev-parse HEAD)
opts=${DEB_BUILD_OPTIONS:-"nocheck noautodbgsym parallel=$(nproc)"}
# Line tables only (-g1 after dpkg-buildflags' -g): the debug info is
# stripped from this package anyway (noautodbgsym), and full -g at -O2
# costs 40% more compile time.
cxxflags=${DEB_CXXFLAGS_APPEND:--g1}
stamp="$head $opts $cxxflags"
debs=("$out"/rcnet_*.deb)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && [ -f "${debs[0]}" ]; then
  echo "ensure-deb.sh: reusing the package of $(git -C "$src" rev-parse --short HEAD) in $out"
else
  rm -f "$out/.stamp" "$out"/rcnet_* "$out"/rcnet-dbgsym_*
  start=$SECONDS
  DEB_CXXFLAGS_APPEND=$cxxflags DEB_BUILD_OPTIONS=$opts "$src/tools/build-deb.sh" "$out"
  echo "$stamp" >"$out/.stamp"
  echo "ensure-deb.sh: package built in $((SECONDS - start)) s"
  debs=("$out"/rcnet_*.deb)
fi
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "ensure-deb.sh: no single rcnet_*.deb in $out" >&2
  exit 1
fi
echo "${debs[0]}"
