#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs a lab scenario that installs the Debian package, on the host:
# makes DEBDIR hold the package of SRCDIR's git HEAD (tests/package/
# ensure-deb.sh builds it unless the package test or an earlier run already
# did), then runs `RCNET-LAB ARGS... -- DEB`: the scenario gets the .deb's
# path as its first argument (the guest's root is the host's, so the path is
# the same there).
#
#   tests/lab/ops/with-deb.sh SRCDIR DEBDIR RCNET-LAB ARGS...
set -u -o pipefail

src=${1:?usage: with-deb.sh SRCDIR DEBDIR RCNET-LAB ARGS...}
debdir=${2:?usage: with-deb.sh SRCDIR DEBDIR RCNET-LAB ARGS...}
lab=${3:?usage: with-deb.sh SRCDIR DEBDIR RCNET-LAB ARGS...}
shift 3
start=$SECONDS
if ! out=$("$src/tests/package/ensure-deb.sh" "$src" "$debdir" 2>&1); then
  printf '%s\n' "$out"
  echo "with-deb.sh: building the package failed; the lab did not run" >&2
  exit 1
fi
printf '%s\n' "$out" | grep -v '^  ' # lintian's full report stays in DEBDIR
deb=$(printf '%s\n' "$out" | tail -n 1)
echo "with-deb.sh: package ready after $((SECONDS - start)) s: $deb"
exec "$lab" "$@" -- "$deb"
